#!/usr/bin/env python3
"""Independent check of the float rows' statistics of a `detverify run` (test-only; numpy).

Reads the step-0 logits of every float run straight from the result DB (table float_logits,
little-endian float32), the run table JSON that `detverify run --json` printed, and a
`detverify generate --dump-logits` .npy of the fp32-cpu-b1 path; checks that

  * the DB holds, bit for bit, the logits `generate` dumps for the same path (row 0 of the .npy),
  * the cushion detverify printed equals numpy's: the largest |a - b| over every pair of float
    rows and vocabulary entry (in float64, where float32 differences are exact), and the smallest
    top-1 minus top-2 logit of any row, with the rows and tokens they come from,
  * the token agreement and first token divergence equal those of the stored token chains.

Usage: float_cushion_check.py RESULTS.db TABLE.json FP32_B1.npy
Exit 0 when everything matches; otherwise prints the first mismatch and exits 1.
"""
import json
import sqlite3
import sys

import numpy as np


def main():
    db_path, table_path, npy_path = sys.argv[1:4]
    table = json.load(open(table_path))
    con = sqlite3.connect(db_path)
    rows = con.execute(
        "SELECT r.id, r.configuration, f.logits FROM runs r JOIN float_logits f ON f.run_id = r.id "
        "WHERE r.engine = 'float' AND r.status = 'ok' ORDER BY r.rowid").fetchall()
    order = [r["configuration"] for r in table["rows"]
             if r["engine"] == "float" and r["status"] == "ok"]
    by_name = {name: np.frombuffer(blob, dtype="<f4") for _, name, blob in rows}
    if sorted(by_name) != sorted(order):
        return fail(f"float rows in the DB {sorted(by_name)} vs the table {sorted(order)}")
    logits = [by_name[name] for name in order]

    dumped = np.load(npy_path)
    if dumped.dtype != np.float32 or not np.array_equal(
            dumped[0].view(np.uint32), by_name["fp32-cpu-b1"].view(np.uint32)):
        return fail("generate --dump-logits step 0 differs from the DB's fp32-cpu-b1 logits")

    best = (-1.0, None)
    for a in range(len(logits)):
        for b in range(a + 1, len(logits)):
            d = np.abs(logits[a].astype(np.float64) - logits[b].astype(np.float64))
            v = int(np.argmax(d))
            if d[v] > best[0]:
                best = (float(d[v]), (order[a], order[b], v))
    margins = []
    for name, x in zip(order, logits):
        top = np.argsort(-x.astype(np.float64), kind="stable")[:2]
        margins.append((float(x[top[0]]) - float(x[top[1]]), name, [int(top[0]), int(top[1])]))
    margin = min(margins, key=lambda m: m[0])

    got = table["verdict"]["float"]
    c = got["cushion"]
    checks = [
        ("max_abs_delta", c["max_abs_delta"], best[0]),
        ("delta_rows", c["delta_rows"], [best[1][0], best[1][1]]),
        ("delta_token", c["delta_token"], best[1][2]),
        ("min_margin", c["min_margin"], margin[0]),
        ("margin_row", c["margin_row"], margin[1]),
        ("margin_tokens", c["margin_tokens"], margin[2]),
    ]
    chains = {}
    for (name,) in con.execute("SELECT configuration FROM runs WHERE engine = 'float' "
                               "AND status = 'ok'"):
        chains[name] = [t for (t,) in con.execute(
            "SELECT s.token_chain FROM steps s JOIN runs r ON r.id = s.run_id "
            "WHERE r.configuration = ? ORDER BY s.step", (name,))]
    n = min(len(v) for v in chains.values())
    first = next((s for s in range(n) if len({v[s] for v in chains.values()}) > 1), None)
    checks.append(("first_token_divergence", got["first_token_divergence"], first))
    checks.append(("tokens_agree", got["tokens_agree"],
                   len({v[-1] for v in chains.values()}) == 1 and
                   len({len(v) for v in chains.values()}) == 1))
    for what, have, want in checks:
        if have != want:
            return fail(f"{what}: detverify says {have!r}, numpy {want!r}")
    print(f"ok: max |dlogit| {best[0]:.6g} ({best[1]}), margin {margin[0]:.6g} ({margin[1]}), "
          f"first token divergence {first}")
    return 0


def fail(message):
    print("mismatch: " + message)
    return 1


if __name__ == "__main__":
    sys.exit(main())
