#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/ (small, valid or nearly valid inputs of each
format) so that fuzzing starts past the first checks. Deterministic except for the DSSE
signatures' key, which is tests/fuzz/keys/fuzz.key (a key for fuzzing only). Regenerate with
    python3 tests/fuzz/make_seeds.py
Needs PyPI `cryptography` and `safetensors`, and ../shared (the Qwen3 tokenizer, DetLLM fixtures).
"""
import base64
import hashlib
import json
import os
import sqlite3
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(ROOT, "..", "shared")


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def safetensors_bytes(tensors, metadata=None):
    header, blob = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blob


def seeds_safetensors():
    write("safetensors", "i8.safetensors",
          safetensors_bytes({"w": ("I8", [2, 3], bytes([1, 2, 3, 255, 254, 128]))}))
    write("safetensors", "mixed.safetensors",
          safetensors_bytes({"a": ("I32", [2], struct.pack("<2i", -5, 7)),
                             "b": ("I16", [1, 2], struct.pack("<2h", 300, -300)),
                             "c": ("BF16", [2], b"\x80\x3f\x00\x40"),
                             "d": ("I64", [], struct.pack("<q", -1))}, {"format": "pt"}))
    write("safetensors", "empty.safetensors", safetensors_bytes({}))


def seeds_artifact():
    for name in ("tiny-a",):
        with open(os.path.join(SHARED, "detllm", "fixtures", name, "config.json"), "rb") as f:
            write("artifact", name + "-config.json", f.read())


def seeds_hf_config():
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512, "max_position_embeddings": 256,
           "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True,
           "torch_dtype": "bfloat16", "eos_token_id": 2, "bos_token_id": 1}
    write("hf_config", "qwen3-tiny.json", json.dumps(cfg, indent=2))
    cfg2 = dict(cfg, architectures=["LlamaForCausalLM"], model_type="llama")
    del cfg2["head_dim"]
    write("hf_config", "llama-tiny.json", json.dumps(cfg2))


def gguf_bytes(kv, tensors=()):
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, (vtype, payload) in kv:
        out += s(key) + struct.pack("<I", vtype) + payload
    for name, dims, ggml_type, offset in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ggml_type, offset)
    out += b"\0" * (-len(out) % 32)
    return out


def seeds_gguf():
    def gstr(x):
        b = x.encode()
        return (8, struct.pack("<Q", len(b)) + b)
    def garr_str(items):
        payload = struct.pack("<IQ", 8, len(items))
        for i in items:
            b = i.encode()
            payload += struct.pack("<Q", len(b)) + b
        return (9, payload)
    kv = [("general.architecture", gstr("llama")), ("general.alignment", (4, struct.pack("<I", 32))),
          ("llama.block_count", (4, struct.pack("<I", 1))),
          ("tokenizer.ggml.model", gstr("gpt2")), ("tokenizer.ggml.pre", gstr("smollm")),
          ("tokenizer.ggml.tokens", garr_str(["a", "b", "ab"])),
          ("tokenizer.ggml.merges", garr_str(["a b"]))]
    data = gguf_bytes(kv, [("token_embd.weight", [4, 3], 0, 0)]) + struct.pack("<12f", *range(12))
    write("gguf", "small.gguf", data)


def seeds_scenario():
    with open(os.path.join(ROOT, "scenarios", "quick.yaml"), "rb") as f:
        write("scenario", "quick.yaml", f.read())


def seeds_db():
    path = os.path.join(HERE, "corpus", "db", "schema.sqlite")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 512")
    with open(os.path.join(ROOT, "db", "migrations", "0001_init.sql")) as f:
        con.executescript(f.read())
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.execute("VACUUM")
    con.close()


def seeds_dsse():
    from cryptography.hazmat.primitives import serialization
    with open(os.path.join(HERE, "keys", "fuzz.key"), "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    statement = {"_type": "https://in-toto.io/Statement/v1",
                 "subject": [{"name": "model.safetensors", "digest": {"sha256": hashlib.sha256(b"m").hexdigest()}}],
                 "predicateType": "https://detverify.dev/run-results/v1",
                 "predicate": {"scenario": "quick", "runs": []}}
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    ptype = "application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype.encode(), len(payload), payload)
    sig = base64.b64encode(key.sign(pae)).decode()
    env = {"payloadType": ptype, "payload": base64.b64encode(payload).decode(),
           "signatures": [{"keyid": "", "sig": sig}]}
    write("dsse", "signed.json", json.dumps(env, indent=2) + "\n")


def seeds_tokenizer_json():
    with open(os.path.join(SHARED, "qwen3", "tokenizer.json")) as f:
        t = json.load(f)
    vocab = t["model"]["vocab"]
    # The 256 byte-level tokens, the first merges among them, a few added tokens.
    keep = {tok: i for tok, i in vocab.items() if len(tok) == 1}
    merges = []
    for a, b in t["model"]["merges"]:
        if a in keep and b in keep and len(merges) < 40:
            merges.append([a, b])
            keep.setdefault(a + b, vocab[a + b])
    ids = sorted(keep.items(), key=lambda kv: kv[1])
    t["model"]["vocab"] = {tok: n for n, (tok, _) in enumerate(ids)}
    t["model"]["merges"] = merges
    added = []
    for n, a in enumerate(t["added_tokens"][:4]):
        added.append(dict(a, id=len(ids) + n))
    t["added_tokens"] = added
    write("tokenizer_json", "qwen3-small.json", json.dumps(t, ensure_ascii=False))


def seeds_tokenizer_encode():
    write("tokenizer_encode", "hello.txt", "Hello, world! It's 2026: 1234567 <|im_start|>user\n")
    write("tokenizer_encode", "mixed.txt", "naïve café — 東京 🚀\r\n\t  x's 'll\u0301 e\u0301\n")
    write("tokenizer_encode", "bad-utf8.bin", b"\xff\xfe a \xc3 \xe2\x82 \xf0\x9f\x98 z \xed\xa0\x80")


def main():
    for f in (seeds_safetensors, seeds_artifact, seeds_hf_config, seeds_gguf, seeds_scenario,
              seeds_db, seeds_dsse, seeds_tokenizer_json, seeds_tokenizer_encode):
        f()
    return 0


if __name__ == "__main__":
    sys.exit(main())
