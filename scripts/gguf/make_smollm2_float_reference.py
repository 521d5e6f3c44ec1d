#!/usr/bin/env python3
"""Reference logits of SmolLM2-135M-Instruct (the installed Q4_1 GGUF) from Hugging Face
transformers, for the float engine's GGUF test (tests/float_engine/gguf_float_test.cc).

transformers loads the GGUF itself (`from_pretrained(..., gguf_file=...)`: gguf-py's dequantizers
and its own undoing of llama.cpp's q/k row permutation -- code independent of detverify's), and
runs its Llama forward in float64 and in float32 on a prompt (the opening of Sonnet 18, tokenized
by transformers from the GGUF's vocabulary) followed by the float64 greedy continuation,
teacher-forced. Committed: tests/data/gguf/smollm2_float_reference.json with the ids, per position
the float64 top-1 and its margin over the second, a sample of the float64 logits (the top 16 and
48 fixed ids), and how far transformers' own float32 forward lies from float64 on that sample
(the scale of a correct fp32 forward's rounding error, from which the test's bound is set); and
the float64 perplexity of scenarios/texts/sonnet18.txt in non-overlapping windows of 32 tokens
(each scoring its 31 next-token predictions, DetLLM's protocol), for `detverify ppl --gguf`; and
a question rendered with the GGUF's chat template (transformers' apply_chat_template) and its
float64 greedy answer, for `detverify generate --gguf --chat`.

Usage (from the repository root, with the model installed: scripts/install_deps.sh --with-models):
  python3 scripts/gguf/make_smollm2_float_reference.py [--gguf PATH] \
      --out tests/data/gguf/smollm2_float_reference.json
Needs torch (CPU), transformers and gguf from PyPI; none of them is a runtime dependency.
"""
import argparse
import hashlib
import json
import os

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPT = ("Shall I compare thee to a summer's day?\nThou art more lovely and more temperate:\n"
          "Rough winds do shake the darling buds of May,\n")
GREEDY = 12
FIXED_IDS = [int(i) for i in np.linspace(0, 49151, 48).round()]


def main():
    ap = argparse.ArgumentParser()
    models = os.environ.get("DETVERIFY_MODELS",
                            os.path.expanduser("~/.cache/detverify/models"))
    ap.add_argument("--gguf", default=os.path.join(models, "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    folder, name = os.path.split(os.path.abspath(a.gguf))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    prompt = tok(PROMPT, add_special_tokens=False)["input_ids"]
    m64 = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name,
                                               dtype=torch.float32).double().eval()
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(GREEDY):
            ids.append(int(m64(torch.tensor([ids])).logits[0, -1].argmax()))
        l64 = m64(torch.tensor([ids])).logits[0].numpy()
        text = open("scenarios/texts/sonnet18.txt", encoding="utf-8").read()
        text_ids = tok(text, add_special_tokens=False)["input_ids"]
        ctx = 32
        nll, scored = 0.0, 0
        for begin in range(0, len(text_ids) - ctx + 1, ctx):
            window = text_ids[begin:begin + ctx]
            logp = torch.log_softmax(m64(torch.tensor([window])).logits[0], dim=-1)
            for t in range(1, ctx):
                nll -= float(logp[t - 1, window[t]])
                scored += 1
        question = "What is the capital of France?"
        chat_ids = tok.apply_chat_template([{"role": "user", "content": question}],
                                           add_generation_prompt=True, tokenize=True)
        if isinstance(chat_ids, dict) or hasattr(chat_ids, "keys"):
            chat_ids = chat_ids["input_ids"]
        chat_ids = [int(i) for i in chat_ids]
        answer = []
        for _ in range(8):
            answer.append(int(m64(torch.tensor([chat_ids + answer])).logits[0, -1].argmax()))
    del m64
    m32 = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name,
                                               dtype=torch.float32).eval()
    with torch.no_grad():
        l32 = m32(torch.tensor([ids])).logits[0].numpy().astype(np.float64)
    positions = []
    tf32_err = 0.0
    for p in range(len(ids)):
        row = l64[p]
        order = np.argsort(-row, kind="stable")
        sample = sorted(set(int(i) for i in order[:16]) | set(FIXED_IDS))
        tf32_err = max(tf32_err, float(np.max(np.abs(l32[p, sample] - row[sample]))))
        positions.append({
            "top1": int(order[0]),
            "margin": float(row[order[0]] - row[order[1]]),
            "ids": sample,
            "logits": [float(row[i]) for i in sample],
        })
    with open(a.gguf, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    out = {
        "source": "transformers " + __import__("transformers").__version__ + ", torch " +
                  torch.__version__ + ": from_pretrained(gguf_file=" + name + "), float64 "
                  "forward (and float32 for transformers_fp32_max_abs_err), teacher-forced",
        "generator": "scripts/gguf/make_smollm2_float_reference.py",
        "gguf_sha256": digest,
        "prompt_tokens": len(prompt),
        "ids": ids,
        "transformers_fp32_max_abs_err": tf32_err,
        "sonnet18_ppl": {"text": "scenarios/texts/sonnet18.txt", "tokens": len(text_ids),
                         "ctx": ctx, "scored": scored, "nll_mean": nll / scored,
                         "perplexity": float(np.exp(nll / scored))},
        "chat": {"question": question, "ids": chat_ids, "greedy": answer,
                 "text": tok.decode(answer)},
        "positions": positions,
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"{a.out}: {len(ids)} positions, transformers fp32 vs fp64 max |d| {tf32_err:.3g}")


if __name__ == "__main__":
    main()
