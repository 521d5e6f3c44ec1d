#!/usr/bin/env python3
"""Reference data for the float engine's tests (tests/data/float/), from an independent float64
forward pass written here with numpy, and cross-checks against Hugging Face transformers.

For each case it synthesizes a checkpoint with `detverify synth --format hf` (a Hugging Face
Qwen3 folder) or `--format gguf` (a Llama GGUF file), then
  1. runs its own float64 forward (numpy only: safetensors parsed by hand, or the GGUF read by
     gguf-py's GGUFReader and gguf.quants.dequantize with q/k rows un-permuted here from
     llama.cpp's interleaved RoPE layout; every op in float64, RoPE angles pos * theta^(-2j/d)
     in float64; QK-Norm where the model has it) on a prompt and the float64 greedy
     continuation, teacher-forced: the logits of every position;
  2. loads the model with transformers.AutoModelForCausalLM.from_pretrained (the proof that a
     transformers user can load it; `gguf_file=` for a GGUF), in float32 and in bfloat16, runs
     the same sequence and greedy generation, and records how close transformers comes to the
     float64 logits;
  3. runs `detverify generate --engine float --dump-logits` (fp32 and bf16), opens the .npy files
     with numpy.load and records how close they come to float64 and to transformers.
Only the outputs are committed: <case>.json (ids, measurements) and, for the small cases,
<case>.logits.npy (float32 [positions, vocab], the float64 logits rounded to float32); for
qwen3-0.6b a sample of each position's logits (its top 64 and 192 fixed ids) in the JSON.

Usage (from the repository root, after scripts/build.sh):
  python3 scripts/float_engine/make_float_reference.py --detverify build/cli/detverify \
      --out tests/data/float [--with-06b] [--case NAME...]
Needs numpy, torch (CPU), transformers, accelerate and gguf from PyPI; none of them is a runtime
dependency.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

CASES = [
    # name, preset, seed, prompt length, greedy steps, store full logits, synth format
    ("qwen3-tiny", "qwen3-tiny", 0, 8, 16, True, "hf"),          # GQA 4/2, head_dim 32
    ("qwen3-tiny-hd128", "qwen3-tiny-hd128", 0, 8, 16, True, "hf"),  # GQA 4/2, head_dim 128
    ("llama-tiny-gguf", "llama-tiny", 0, 8, 16, True, "gguf"),   # Llama GGUF, GQA 4/2, no QK-Norm
]
CASE_06B = ("qwen3-0.6b", "qwen3-0.6b", 0, 8, 4, False, "hf")    # Qwen3-0.6B's shapes


# ---- safetensors by hand (no torch, no safetensors package) ---------------------------------

class Safetensors:
    """Tensors of one file, widened to float64 when looked up (not kept: a 0.6B model in
    float64 is 6 GB)."""

    def __init__(self, path):
        self.path = path
        self.data = np.memmap(path, dtype=np.uint8, mode="r")
        (n,) = struct.unpack("<Q", bytes(self.data[:8]))
        self.header = json.loads(bytes(self.data[8:8 + n]))
        self.base = 8 + n

    def __contains__(self, name):
        return name in self.header and name != "__metadata__"

    def __getitem__(self, name):
        t = self.header[name]
        b, e = t["data_offsets"]
        raw = self.data[self.base + b:self.base + e]
        if t["dtype"] == "BF16":
            u = raw.view("<u2").astype(np.uint32) << 16
            arr = u.view(np.float32).astype(np.float64)
        elif t["dtype"] == "F16":
            arr = raw.view("<f2").astype(np.float64)
        elif t["dtype"] == "F32":
            arr = raw.view("<f4").astype(np.float64)
        else:
            raise ValueError(f"{self.path}: {name} has dtype {t['dtype']}")
        return arr.reshape(t["shape"])


# ---- GGUF through gguf-py ---------------------------------------------------------------------

GGUF_LAYER = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
              "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
              "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
              "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}


def unpermute(w, n_head):
    """llama.cpp's LlamaModel.permute undone: within each head, rows (2i, 2i+1) go back to
    (i, i + head_dim/2)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def read_gguf(path):
    """(Hugging Face-named float64 tensors, a config dict in config.json's keys) of a Llama
    GGUF, read by gguf-py."""
    import gguf
    r = gguf.GGUFReader(path)

    def field(key):
        f = r.fields[key]
        v = f.parts[f.data[0]]
        return v.tobytes().decode() if f.types[0] == gguf.GGUFValueType.STRING else v[0].item()

    assert field("general.architecture") == "llama"
    cfg = {"hidden_size": field("llama.embedding_length"),
           "num_hidden_layers": field("llama.block_count"),
           "num_attention_heads": field("llama.attention.head_count"),
           "num_key_value_heads": field("llama.attention.head_count_kv"),
           "head_dim": field("llama.attention.key_length"),
           "rope_theta": field("llama.rope.freq_base"),
           "rms_norm_eps": field("llama.attention.layer_norm_rms_epsilon"),
           "vocab_size": field("llama.vocab_size")}
    w = {}
    for t in r.tensors:
        arr = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        arr = arr.reshape([int(d) for d in reversed(t.shape)])
        parts = t.name.split(".")
        if parts[0] == "blk":
            name = f"model.layers.{parts[1]}.{GGUF_LAYER[parts[2]]}.weight"
            if parts[2] == "attn_q":
                arr = unpermute(arr, cfg["num_attention_heads"])
            elif parts[2] == "attn_k":
                arr = unpermute(arr, cfg["num_key_value_heads"])
        else:
            name = {"token_embd.weight": "model.embed_tokens.weight",
                    "output_norm.weight": "model.norm.weight",
                    "output.weight": "lm_head.weight"}[t.name]
        w[name] = arr
    cfg["tie_word_embeddings"] = "lm_head.weight" not in w
    return w, cfg


# ---- float64 Qwen3 / Llama forward --------------------------------------------------------------------

def rms_norm(x, gamma, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def forward64(w, cfg, ids):
    """Teacher-forced logits [T, V] of `ids`, every op in float64."""
    T = len(ids)
    H, Q, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d, eps, theta = cfg["head_dim"], cfg["rms_norm_eps"], float(cfg["rope_theta"])
    group = Q // KV
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.cos(np.concatenate([ang, ang], axis=-1))
    sin = np.sin(np.concatenate([ang, ang], axis=-1))
    mask = np.triu(np.full((T, T), -np.inf), k=1)
    x = w["model.embed_tokens.weight"][ids]  # (rows of the widened matrix)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, Q, d)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, KV, d)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, KV, d)
        if p + "self_attn.q_norm.weight" in w:  # Qwen3's QK-Norm (a Llama has none)
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos[:, None, :] + rotate_half(q) * sin[:, None, :]
        k = k * cos[:, None, :] + rotate_half(k) * sin[:, None, :]
        ctx = np.empty((T, Q, d))
        for hq in range(Q):
            s = q[:, hq, :] @ k[:, hq // group, :].T / np.sqrt(d) + mask
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            ctx[:, hq, :] = (s / s.sum(axis=-1, keepdims=True)) @ v[:, hq // group, :]
        x = x + ctx.reshape(T, Q * d) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (g / (1.0 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return rms_norm(x, w["model.norm.weight"], eps) @ head.T


def greedy64(w, cfg, prompt, steps):
    ids = list(prompt)
    for _ in range(steps):
        ids.append(int(np.argmax(forward64(w, cfg, ids)[-1])))
    return ids[len(prompt):]


# ---- comparisons -------------------------------------------------------------------------------

def rel_err(a, ref):
    """Per position: max |a - ref| / max |ref|."""
    return (np.abs(a - ref).max(axis=-1) / np.abs(ref).max(axis=-1))


def top2_margin(ref):
    s = np.sort(ref, axis=-1)
    return s[:, -1] - s[:, -2]


def summary(a, ref):
    e = rel_err(a, ref)
    return {"max_rel_err": float(e.max()), "mean_rel_err": float(e.mean()),
            "argmax_agree": int((a.argmax(-1) == ref.argmax(-1)).sum()),
            "positions": int(ref.shape[0])}


def transformers_logits(folder, dtype, seq, prompt, steps, gguf_file=None):
    import torch
    from transformers import AutoModelForCausalLM
    extra = {"gguf_file": gguf_file} if gguf_file else {}
    m = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, **extra)
    m.eval()
    # Like detverify, generate exactly `steps` tokens: the synthetic eos id is not special.
    m.generation_config.eos_token_id = None
    with torch.no_grad():
        logits = m(torch.tensor([seq])).logits[0].float().double().numpy()
        gen = m.generate(torch.tensor([prompt]), max_new_tokens=steps,
                         do_sample=False)[0, len(prompt):].tolist()
    return logits, gen, type(m).__name__


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def make_case(case, args, workdir):
    name, preset, seed, n_prompt, steps, full, fmt = case
    folder = os.path.join(workdir, name)
    gguf_file = "model.gguf" if fmt == "gguf" else None
    out = run([args.detverify, "synth", "--preset", preset, "--seed", str(seed), "--format", fmt,
               "--out", os.path.join(folder, gguf_file) if gguf_file else folder])
    model_sha = out.split()[0]
    if gguf_file:
        w, cfg = read_gguf(os.path.join(folder, gguf_file))
        model_args = ["--gguf", os.path.join(folder, gguf_file)]
    else:
        with open(os.path.join(folder, "config.json")) as f:
            config_text = f.read()
        cfg = json.loads(config_text)
        assert json.dumps(cfg, indent=2, sort_keys=True) + "\n" == config_text, \
            "config.json is not in transformers' own layout"
        w = Safetensors(os.path.join(folder, "model.safetensors"))
        model_args = ["--hf", folder]
    rng = np.random.default_rng(1000 + seed)
    prompt = [int(v) for v in rng.integers(0, min(cfg["vocab_size"], 50000), n_prompt)]
    cont = greedy64(w, cfg, prompt, steps)
    seq = prompt + cont
    ref = forward64(w, cfg, seq)
    doc = {
        "generator": "scripts/float_engine/make_float_reference.py",
        "preset": preset, "seed": seed, "format": fmt, "model_sha256": model_sha,
        "prompt": prompt, "continuation": cont,
        "positions": len(seq), "vocab": cfg["vocab_size"],
        "float64": {"ref_norm_inf": np.abs(ref).max(-1).tolist(),
                    "top2_margin": top2_margin(ref).tolist()},
    }
    if full:
        doc["logits_file"] = name + ".logits.npy"
        np.save(os.path.join(args.out, doc["logits_file"]), ref.astype(np.float32))
    else:
        # A sample of every position: the float64 top 32 and 96 fixed ids (9 digits: float32's
        # precision, far below the tolerance).
        fixed = np.random.default_rng(7).choice(cfg["vocab_size"], 96, replace=False)
        sample_ids, sample_vals = [], []
        for t in range(ref.shape[0]):
            ids = np.unique(np.concatenate([np.argsort(ref[t])[-32:], fixed]))
            sample_ids.append([int(i) for i in ids])
            sample_vals.append([float("%.9g" % ref[t, i]) for i in ids])
        doc["sample"] = {"ids": sample_ids, "values": sample_vals}

    import torch
    import transformers
    tf = {"transformers_version": transformers.__version__, "torch_version": torch.__version__}
    for label, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        logits, gen, cls = transformers_logits(folder, dtype, seq, prompt, steps, gguf_file)
        tf["class"] = cls
        tf[label] = summary(logits, ref)
        tf[label]["greedy"] = gen
        tf[label]["greedy_equals_float64"] = gen == cont
        if label == "fp32":
            tf_fp32 = logits
        else:
            tf_bf16 = logits
    doc["transformers"] = tf

    ours = {}
    for dtype in ("fp32", "bf16"):
        npy = os.path.join(workdir, f"{name}-{dtype}.npy")
        gen = json.loads(run([args.detverify, "generate", *model_args, "--engine", "float",
                              "--dtype", dtype, "--prompt-ids", ",".join(map(str, prompt)),
                              "--max-new", str(steps), "--dump-logits", npy, "--json"]))
        dump = np.load(npy)
        assert dump.dtype == np.float32 and dump.shape == (steps, cfg["vocab_size"]), dump.shape
        tokens = gen["rows"][0]["tokens"]
        entry = {"numpy_load": f"{dump.dtype} {list(dump.shape)}", "greedy": tokens,
                 "greedy_equals_float64": tokens == cont}
        # Step j is position n_prompt-1+j of the same sequence while the tokens before it agree.
        same = next((j for j in range(steps) if tokens[j] != cont[j]), steps)
        n = min(steps, same + 1)
        entry["steps_compared"] = n
        at = slice(n_prompt - 1, n_prompt - 1 + n)
        entry["vs_float64"] = summary(dump[:n].astype(np.float64), ref[at])
        tf_same = tf_fp32 if dtype == "fp32" else tf_bf16
        entry["vs_transformers_" + dtype] = summary(dump[:n].astype(np.float64), tf_same[at])
        ours[dtype] = entry
    doc["detverify_float"] = ours
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{name}: fp32 transformers {tf['fp32']['max_rel_err']:.2e}, ours "
          f"{ours['fp32'].get('vs_float64', {}).get('max_rel_err', float('nan')):.2e}; bf16 "
          f"transformers {tf['bf16']['max_rel_err']:.2e}, ours "
          f"{ours['bf16'].get('vs_float64', {}).get('max_rel_err', float('nan')):.2e}")


def check_int_dump(args, workdir):
    """numpy opens the int8 engine's dump too: int32 [steps, vocab]."""
    npy = os.path.join(workdir, "int8.npy")
    run([args.detverify, "generate", "--preset", "qwen3-tiny", "--prompt-ids", "1,2,3,4",
         "--max-new", "5", "--dump-logits", npy])
    dump = np.load(npy)
    assert dump.dtype == np.int32 and dump.shape == (5, 1024), (dump.dtype, dump.shape)
    return f"{dump.dtype} {list(dump.shape)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--detverify", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--with-06b", action="store_true", help="also the qwen3-0.6b case (minutes)")
    ap.add_argument("--case", action="append", default=[],
                    help="only this case (repeatable; default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as workdir:
        for case in CASES + ([CASE_06B] if args.with_06b else []):
            if not args.case or case[0] in args.case:
                make_case(case, args, workdir)
        print("int8 dump opened by numpy:", check_int_dump(args, workdir))


if __name__ == "__main__":
    sys.exit(main())
