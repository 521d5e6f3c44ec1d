#!/usr/bin/env python3
"""Reference data for prepare's tests (tests/data/prepare/), made by DetLLM's own prepare.py.

DetLLM's source is not part of this repository: pass --detllm DIR, a folder holding the package
`detllm/` with `prepare.py` and `ops/rope.py` from the public repository rishabh135/idempotent_llm
(src/detllm; prepare.py at bf1020a3, ops/rope.py at 04597389), an empty `detllm/__init__.py` and
`detllm/ops/__init__.py`, and a `detllm/intmath.py` defining rshift_round (the only name rope.py
imports). Nothing of DetLLM's code is changed; this script only replaces its data sources:
  - WikiText2 (datasets.load_dataset) and the Hub tokenizer by the calibration ids of a JSON file
    (the ids are concatenated; DetLLM cuts chunk s as ids[s*L:(s+1)*L], so it sees exactly
    those sequences), and the Hub checkpoint by a local folder;
  - optionally DetLLM's calibration forward by given statistics (--stats): then only DetLLM's
    quantization step runs.

Cases (each a synthetic checkpoint from `detverify synth --format hf`, made tied -- embedding as
the head, lm_head.weight dropped -- because DetLLM's prepare asserts tied embeddings):
  qwen3-tiny-hd128: GQA 4/2, head_dim 128, outlier channels; calibration 8 x 128 ids from
    numpy's default_rng(2001). DetLLM's prepare with its float32 calibration forward, smoothing on
    (its statistics saved) and off (from the same statistics). Committed: calib_ids.json,
    detllm_stats.safetensors, expected.json (SHA-256 of each artifact file, every tensor's
    SHA-256, DetLLM's config.json).
  qwen3-0.6b (--with-06b, ~10 minutes): Qwen3-0.6B's shapes (RoPE table 40960 x 128, vocab
    151936). detverify's own statistics (built-in calibration, 4 x 128) through DetLLM's
    quantization; committed in expected.json: the statistics' SHA-256 and DetLLM's artifact's.

Usage (from the repository root, after scripts/build.sh; needs torch, transformers, safetensors
and numpy from PyPI, none of them a runtime dependency):
  python3 scripts/prepare/make_prepare_reference.py --detllm /tmp/detllm_py \
      --detverify build/cli/detverify --out tests/data/prepare [--with-06b | --only-06b]
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types

STAT_NAMES = ["k_chan_max", "q_chan_max", "v_max", "attn_in_max", "mlp_in_max", "down_in_max",
              "o_in_max"]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tied_copy(src, dst):
    """The checkpoint with its embedding as the head: tie_word_embeddings true, no lm_head."""
    from safetensors.torch import load_file, save_file
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    config["tie_word_embeddings"] = True
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tensors = load_file(os.path.join(src, "model.safetensors"))
    tensors.pop("lm_head.weight", None)
    save_file(tensors, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})


def run_detllm(detllm_dir, hf, out, seqs, stats=None, save_stats=None, smooth=True):
    """DetLLM's prepare() on `hf` with calibration `seqs` (or statistics `stats`)."""
    import torch
    import transformers
    from safetensors.torch import load_file, save_file
    sys.path.insert(0, detllm_dir)
    import detllm.prepare as P

    flat = [t for s in seqs for t in s]
    fake = types.ModuleType("datasets")
    fake.load_dataset = lambda *a, **k: {"text": ["(calibration ids given)"]}
    sys.modules["datasets"] = fake

    class Ids:
        def __call__(self, text, return_tensors=None):
            return types.SimpleNamespace(input_ids=torch.tensor([flat], dtype=torch.int64))

    transformers.AutoTokenizer.from_pretrained = staticmethod(lambda *a, **k: Ids())
    calibrate = P.calibrate_kv_ranges

    def calibration(model, tok, device, n, length):
        if stats:
            st = load_file(stats)
            result = tuple(st[name] for name in STAT_NAMES)
        else:
            result = calibrate(model, tok, device, n, length)
        if save_stats:
            save_file({name: t.contiguous() for name, t in zip(STAT_NAMES, result)}, save_stats)
        return result

    P.calibrate_kv_ranges = calibration
    P.prepare(out, calib_samples=len(seqs), calib_len=len(seqs[0]), device="cpu",
              smooth_o=smooth, smooth_acts=smooth, model_id=hf)
    P.calibrate_kv_ranges = calibrate


def describe_artifact(path):
    from safetensors import safe_open
    out = {"model_safetensors_sha256": sha256_file(os.path.join(path, "model.safetensors")),
           "config_json_sha256": sha256_file(os.path.join(path, "config.json"))}
    with open(os.path.join(path, "config.json")) as f:
        out["config"] = json.load(f)
    tensors = {}
    with safe_open(os.path.join(path, "model.safetensors"), "np") as f:
        for name in sorted(f.keys()):
            tensors[name] = hashlib.sha256(f.get_tensor(name).tobytes()).hexdigest()
    out["tensor_sha256"] = tensors
    return out


def versions():
    """torch's and transformers' versions, asked in a child (torch stays out of this process,
    which forks)."""
    text = subprocess.run([sys.executable, "-c", "import torch, transformers; "
                           "print(torch.__version__, transformers.__version__)"],
                          check=True, capture_output=True, text=True).stdout.split()
    return {"torch": text[0], "transformers": text[1]}


def in_child(fn, *args, **kwargs):
    """Runs fn in a fresh interpreter state (DetLLM's module patches stay out of the parent)."""
    pid = os.fork()
    if pid == 0:
        try:
            fn(*args, **kwargs)
            os._exit(0)
        except BaseException as e:  # noqa: BLE001
            print(f"failed: {e}", file=sys.stderr)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        sys.exit(f"{fn.__name__} failed")


def case_hd128(args, work):
    import numpy as np
    name = "qwen3-tiny-hd128"
    out = os.path.join(args.out, name + "-tied")
    os.makedirs(out, exist_ok=True)
    untied = os.path.join(work, "untied")
    subprocess.run([args.detverify, "synth", "--format", "hf", "--preset", name, "--out", untied],
                   check=True, stdout=subprocess.DEVNULL)
    hf = os.path.join(work, name)
    tied_copy(untied, hf)
    rng = np.random.default_rng(2001)
    seqs = rng.integers(0, 1024, size=(8, 128)).tolist()
    with open(os.path.join(out, "calib_ids.json"), "w") as f:
        json.dump({"generator": "numpy.random.default_rng(2001).integers(0, 1024, (8, 128))",
                   "ids": seqs}, f)
    stats = os.path.join(out, "detllm_stats.safetensors")
    in_child(run_detllm, args.detllm, hf, os.path.join(work, "smooth"), seqs, save_stats=stats)
    in_child(run_detllm, args.detllm, hf, os.path.join(work, "nosmooth"), seqs, stats=stats,
             smooth=False)
    expected = {
        "case": name,
        "checkpoint": f"detverify synth --format hf --preset {name} --seed 0, tied: "
                      "tie_word_embeddings true and lm_head.weight dropped",
        "untied_model_safetensors_sha256": sha256_file(os.path.join(untied, "model.safetensors")),
        "calibration": "calib_ids.json, 8 x 128, used in order, batch 1, no BOS",
        "generated_with": versions(),
        "smoothing": describe_artifact(os.path.join(work, "smooth")),
        "nosmooth": describe_artifact(os.path.join(work, "nosmooth")),
    }
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
    print(f"{name}: {expected['smoothing']['model_safetensors_sha256']} (smoothing), "
          f"{expected['nosmooth']['model_safetensors_sha256']} (nosmooth)")


def case_06b(args, work):
    name = "qwen3-0.6b"
    out = os.path.join(args.out, name + "-tied")
    os.makedirs(out, exist_ok=True)
    untied = os.path.join(work, "untied-06b")
    subprocess.run([args.detverify, "synth", "--format", "hf", "--preset", name, "--out", untied],
                   check=True, stdout=subprocess.DEVNULL)
    hf = os.path.join(work, name)
    tied_copy(untied, hf)
    shutil.rmtree(untied)
    ours = os.path.join(work, "ours-06b")
    stats = os.path.join(work, "stats-06b.safetensors")
    subprocess.run([args.detverify, "prepare", "--hf", hf, "--out", ours, "--model-id", name,
                    "--save-calib-stats", stats, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    detllm_out = os.path.join(work, "detllm-06b")
    # DetLLM's quantization of detverify's statistics (the calibration ids do not matter then).
    in_child(run_detllm, args.detllm, hf, detllm_out, [[0] * 128] * 4, stats=stats)
    described = describe_artifact(detllm_out)
    described.pop("config")
    expected = {
        "case": name,
        "checkpoint": f"detverify synth --format hf --preset {name} --seed 0, tied",
        "calibration": "detverify's built-in calibration (4 x 128 SplitMix64 ids), its float64 "
                       "forward's statistics fed to DetLLM's quantization",
        "generated_with": versions(),
        "statistics_sha256": sha256_file(stats),
        "detllm": described,
        "detverify_model_safetensors_sha256": sha256_file(os.path.join(ours, "model.safetensors")),
    }
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
    print(f"{name}: DetLLM {described['model_safetensors_sha256']}, detverify "
          f"{expected['detverify_model_safetensors_sha256']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--detllm", required=True, help="folder holding DetLLM's detllm/ package")
    ap.add_argument("--detverify", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--with-06b", action="store_true")
    ap.add_argument("--only-06b", action="store_true", help="regenerate the qwen3-0.6b case alone")
    args = ap.parse_args()
    args.detverify = os.path.abspath(args.detverify)
    with tempfile.TemporaryDirectory() as work:
        if not args.only_06b:
            case_hd128(args, work)
        if args.with_06b or args.only_06b:
            case_06b(args, work)


if __name__ == "__main__":
    main()
