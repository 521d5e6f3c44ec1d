#!/usr/bin/env python3
"""Writes the GGUF reader's test data (tests/data/gguf/), read by tests/gguf/*.cc.

Every expected value comes from code this project did not write: files are written by gguf-py's
GGUFWriter, offsets read back by gguf-py's GGUFReader, dequantized values computed by gguf-py's
gguf.quants.dequantize, and Hugging Face-layout tensors loaded by transformers' GGUF loader
(AutoModelForCausalLM.from_pretrained(..., gguf_file=...)). Deterministic: the same package
versions give byte-identical files.

    pip install gguf==0.19.0 numpy transformers==5.24.0 torch accelerate safetensors
    python3 scripts/gguf/make_gguf_fixtures.py --out tests/data/gguf \
        [--model ~/.cache/detverify/models/SmolLM2-135M-Instruct.Q4_1.gguf]

Outputs:
  types.gguf          every metadata value type (scalars and arrays), and one tensor of each
                      dequantizable type (F32, F16, BF16, Q8_0, Q4_0, Q4_1: quantized from random
                      floats, and random bytes that hit subnormal, infinite and NaN scales), plus
                      tensors of types the reader must refuse (Q5_0, Q6_K, I32)
  aligned64_v2.gguf   general.alignment = 64 and the version field set to 2 (v2 and v3 share the
                      layout for little-endian files)
  llama_tiny.gguf     a 2-layer Llama (hidden 32, 4 query / 2 KV heads, head_dim 8, untied head)
                      converted as llama.cpp's convert_hf_to_gguf.py does it: q/k rows permuted
                      (LlamaModel.permute), tensors in all six types
  expected.json       per file: version, alignment, data offset, metadata (strings as hex, floats
                      as bit patterns), tensor infos and (types, aligned64_v2) the float32 bit
                      patterns gguf.quants.dequantize gives for every dequantizable tensor
  llama_tiny_hf.safetensors  transformers' state_dict of llama_tiny.gguf (float32), the expected
                      output of LlamaModel::Tensor for every tensor
  smollm2_expected.json  (with --model) transformers' config and the sha256 of every tensor of
                      SmolLM2-135M-Instruct in Hugging Face layout (float32 little-endian bytes)
"""

import argparse
import hashlib
import json
import shutil
import struct
import tempfile
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

SEED = 20250601


def f32_bits(values):
    return np.asarray(values, dtype="<f4").view("<u4").tolist()


def describe_metadata(reader):
    """The metadata as gguf-py reads it, in file order, with exact encodings."""
    out = []
    for field in reader.fields.values():
        if field.name.startswith("GGUF."):
            continue  # the header fields gguf-py lists as pseudo-keys
        vtype = field.types[0]
        entry = {"key": field.name, "type": vtype.name}
        if vtype == V.ARRAY:
            etype = field.types[1]
            entry["element_type"] = etype.name
            parts = [field.parts[i] for i in field.data]
        else:
            etype = vtype
            parts = [field.parts[-1]]
        if etype == V.STRING:
            entry["values"] = [bytes(p).hex() for p in parts]
        elif etype in (V.FLOAT32,):
            entry["values"] = [int(np.asarray(p).view("<u4")[0]) for p in parts]
        elif etype in (V.FLOAT64,):
            entry["values"] = [int(np.asarray(p).view("<u8")[0]) for p in parts]
        elif etype == V.BOOL:
            entry["values"] = [bool(p[0]) for p in parts]
        else:
            entry["values"] = [int(p[0]) for p in parts]
        out.append(entry)
    return out


def describe_file(path, with_values=True):
    reader = gguf.GGUFReader(path)
    tensors = []
    for t in reader.tensors:
        row = {"name": t.name, "type": t.tensor_type.name,
               "dims": [int(d) for d in t.shape],  # gguf-py lists dims in ggml order (ne0 first)
               "offset": int(t.data_offset) - int(reader.data_offset), "nbytes": int(t.n_bytes)}
        if with_values and t.tensor_type in (Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1):
            values = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
            row["bits"] = f32_bits(values.reshape(-1))
        tensors.append(row)
    version = int(reader.fields["GGUF.version"].parts[-1][0])
    return {"version": version, "alignment": int(reader.alignment),
            "data_offset": int(reader.data_offset), "metadata": describe_metadata(reader),
            "tensors": tensors}


def quantized(writer, name, rows, qtype):
    data = gguf.quants.quantize(rows.astype(np.float32), qtype)
    writer.add_tensor(name, data, raw_dtype=qtype)


def random_blocks(writer, name, rng, n_rows, row_len, qtype):
    block, size = gguf.constants.GGML_QUANT_SIZES[qtype]
    data = rng.integers(0, 256, size=(n_rows, row_len // block * size), dtype=np.uint8)
    writer.add_tensor(name, data, raw_dtype=qtype)


def write_types(path, rng):
    w = gguf.GGUFWriter(str(path), arch="fixture")
    w.add_uint8("test.uint8", 250)
    w.add_int8("test.int8", -100)
    w.add_uint16("test.uint16", 65000)
    w.add_int16("test.int16", -32000)
    w.add_uint32("test.uint32", 4000000000)
    w.add_int32("test.int32", -2000000000)
    w.add_float32("test.float32", 0.1)
    w.add_bool("test.bool_true", True)
    w.add_bool("test.bool_false", False)
    w.add_string("test.string", "h\u00e9llo, \u4e16\u754c \U0001f600")
    w.add_string("test.string_with_nul", "a\x00b")
    w.add_uint64("test.uint64", 2 ** 64 - 1)
    w.add_int64("test.int64", -(2 ** 63))
    w.add_float64("test.float64", -1.0 / 3.0)
    for vtype, values in [(V.UINT8, [0, 1, 255]), (V.INT8, [-128, 0, 127]),
                          (V.UINT16, [0, 65535]), (V.INT16, [-32768, 32767]),
                          (V.UINT32, [0, 2 ** 32 - 1]), (V.INT32, [-(2 ** 31), 2 ** 31 - 1]),
                          (V.FLOAT32, [1.5, -0.0, float("inf")]), (V.BOOL, [True, False, True]),
                          (V.STRING, ["", "x", "\u00fcber"]), (V.UINT64, [2 ** 63, 7]),
                          (V.INT64, [-1, 2 ** 62]), (V.FLOAT64, [1e300, -2.5])]:
        w.add_key_value(f"test.array.{vtype.name.lower()}", values, V.ARRAY, sub_type=vtype)

    w.add_tensor("f32", rng.standard_normal((2, 8)).astype(np.float32))
    specials = np.array([0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x7C00, 0xFC00,
                         0x7C01, 0x7E00, 0xFFFF, 0x8001, 0x3555, 0xC000, 0x5640], dtype=np.uint16)
    f16 = np.concatenate([specials, rng.integers(0, 65536, 48, dtype=np.uint16)]).view(np.float16)
    w.add_tensor("f16", f16.reshape(2, 32))
    bf16 = np.concatenate([specials, rng.integers(0, 65536, 48, dtype=np.uint16)])
    w.add_tensor("bf16", bf16.view(np.uint8).reshape(2, 64), raw_dtype=Q.BF16)
    floats = (rng.standard_normal((3, 64)) * np.array([[0.01], [1.0], [300.0]])).astype(np.float32)
    for qtype in (Q.Q8_0, Q.Q4_0, Q.Q4_1):
        quantized(w, qtype.name.lower(), floats, qtype)
        random_blocks(w, qtype.name.lower() + ".random_bytes", rng, 2, 64, qtype)
    quantized(w, "q5_0.unsupported", floats, Q.Q5_0)
    random_blocks(w, "q6_k.unsupported", rng, 1, 256, Q.Q6_K)
    w.add_tensor("i32.unsupported", np.arange(8, dtype=np.int32))
    w.add_tensor("f32.vector", np.array([1.0, -2.0, 3.5], dtype=np.float32))
    w.add_tensor("f32.3d", rng.standard_normal((2, 3, 4)).astype(np.float32))
    write_out(w)


def write_aligned(path, rng):
    w = gguf.GGUFWriter(str(path), arch="fixture")
    w.add_custom_alignment(64)
    w.add_string("test.note", "alignment 64, version field 2")
    w.add_tensor("a", rng.standard_normal(5).astype(np.float32))
    w.add_tensor("b", rng.standard_normal((3, 7)).astype(np.float16))
    quantized(w, "c", rng.standard_normal((1, 32)), Q.Q8_0)
    write_out(w)
    data = bytearray(path.read_bytes())
    data[4:8] = struct.pack("<I", 2)
    path.write_bytes(bytes(data))


def write_out(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# llama.cpp's convert_hf_to_gguf.py, LlamaModel.permute: Hugging Face q/k rows -> GGUF rows.
def llama_cpp_permute(weights, n_head, n_head_kv):
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


TINY = dict(hidden=32, layers=2, heads=4, kv_heads=2, head_dim=8, inter=64, vocab=40)


def write_llama_tiny(path, rng):
    c = TINY
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_name("llama-tiny fixture")
    w.add_block_count(c["layers"])
    w.add_context_length(128)
    w.add_embedding_length(c["hidden"])
    w.add_feed_forward_length(c["inter"])
    w.add_head_count(c["heads"])
    w.add_head_count_kv(c["kv_heads"])
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_dimension_count(c["head_dim"])
    w.add_vocab_size(c["vocab"])
    w.add_file_type(1)
    # A minimal byte-free vocabulary so that tokenizer-aware loaders accept the file.
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"<t{i}>" for i in range(c["vocab"])])
    w.add_token_types([1] * c["vocab"])
    w.add_token_merges(["<t 1>"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def normal(*shape, scale=0.2):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    h, hd = c["hidden"], c["head_dim"]
    store = {}  # GGUF name -> (HF-layout float32 tensor, stored type)
    store["token_embd.weight"] = (normal(c["vocab"], h), Q.Q8_0)
    for layer in range(c["layers"]):
        p = f"blk.{layer}."
        q = llama_cpp_permute(normal(c["heads"] * hd, h), c["heads"], c["heads"])
        k = llama_cpp_permute(normal(c["kv_heads"] * hd, h), c["heads"], c["kv_heads"])
        store[p + "attn_q.weight"] = (q, Q.F32 if layer == 0 else Q.Q4_1)
        store[p + "attn_k.weight"] = (k, Q.F32 if layer == 0 else Q.Q8_0)
        store[p + "attn_v.weight"] = (normal(c["kv_heads"] * hd, h), Q.F16)
        store[p + "attn_output.weight"] = (normal(h, c["heads"] * hd), Q.BF16)
        store[p + "ffn_gate.weight"] = (normal(c["inter"], h), Q.Q4_0)
        store[p + "ffn_up.weight"] = (normal(c["inter"], h), Q.Q4_1)
        store[p + "ffn_down.weight"] = (normal(h, c["inter"]), Q.Q8_0)
        store[p + "attn_norm.weight"] = (1.0 + normal(h, scale=0.1), Q.F32)
        store[p + "ffn_norm.weight"] = (1.0 + normal(h, scale=0.1), Q.F32)
    store["output_norm.weight"] = (1.0 + normal(h, scale=0.1), Q.F32)
    store["output.weight"] = (normal(c["vocab"], h), Q.Q8_0)
    for name, (tensor, qtype) in store.items():
        if qtype == Q.F32:
            w.add_tensor(name, tensor)
        elif qtype == Q.F16:
            w.add_tensor(name, tensor.astype(np.float16))
        else:
            quantized(w, name, tensor, qtype)
    write_out(w)
    return store


def transformers_state_dict(gguf_path):
    import torch
    from transformers import AutoModelForCausalLM
    folder = gguf_path.parent
    model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=gguf_path.name,
                                                 dtype=torch.float32)
    return model.config, {k: v.detach().numpy() for k, v in model.state_dict().items()}


def write_llama_tiny_expected(out, store):
    from safetensors.numpy import save_file
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "llama_tiny.gguf"
        shutil.copy(out / "llama_tiny.gguf", path)
        config, state = transformers_state_dict(path)
    for layer in range(TINY["layers"]):
        if layer != 0:
            continue
        # Layer 0 stores q/k as F32: transformers must give back the exact Hugging Face rows we
        # permuted, which proves it undoes llama.cpp's permute and is a valid reference.
        for proj, heads in (("q", TINY["heads"]), ("k", TINY["kv_heads"])):
            gguf_rows = store[f"blk.{layer}.attn_{proj}.weight"][0]
            hf = state[f"model.layers.{layer}.self_attn.{proj}_proj.weight"]
            again = llama_cpp_permute(hf, TINY["heads"], heads)
            if not np.array_equal(again.view(np.uint32), gguf_rows.view(np.uint32)):
                raise SystemExit(f"transformers did not undo the {proj} permutation")
    if config.tie_word_embeddings:
        raise SystemExit("llama_tiny must load untied")
    save_file({k: np.ascontiguousarray(v, dtype="<f4") for k, v in state.items()},
              str(out / "llama_tiny_hf.safetensors"))
    return len(state)


def smollm2_expected(model_path):
    config, state = transformers_state_dict(Path(model_path).resolve())
    tensors = {}
    for name, value in state.items():
        data = np.ascontiguousarray(value, dtype="<f4")
        tensors[name] = {"shape": list(data.shape),
                         "sha256": hashlib.sha256(data.tobytes()).hexdigest()}
    if config.tie_word_embeddings:
        if tensors["lm_head.weight"]["sha256"] != tensors["model.embed_tokens.weight"]["sha256"]:
            raise SystemExit("tied lm_head differs from the embedding")
        del tensors["lm_head.weight"]
    keys = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "intermediate_size", "vocab_size", "max_position_embeddings",
            "rms_norm_eps", "tie_word_embeddings", "bos_token_id", "eos_token_id"]
    cfg = {k: getattr(config, k) for k in keys}
    cfg["rope_theta"] = config.rope_parameters["rope_theta"] \
        if getattr(config, "rope_parameters", None) else config.rope_theta
    return {"model_sha256": hashlib.sha256(Path(model_path).read_bytes()).hexdigest(),
            "config": cfg, "tensors": tensors}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="tests/data/gguf")
    parser.add_argument("--model", help="SmolLM2-135M-Instruct.Q4_1.gguf (optional)")
    args = parser.parse_args()
    import transformers
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    write_types(out / "types.gguf", rng)
    write_aligned(out / "aligned64_v2.gguf", rng)
    store = write_llama_tiny(out / "llama_tiny.gguf", rng)
    n_hf = write_llama_tiny_expected(out, store)
    meta = {"generator": "scripts/gguf/make_gguf_fixtures.py", "seed": SEED,
            "gguf_py": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0",
            "numpy": np.__version__, "transformers": transformers.__version__}
    # llama_tiny's values are checked in Hugging Face layout through llama_tiny_hf.safetensors.
    expected = {"meta": meta, "files": {
        "types.gguf": describe_file(out / "types.gguf"),
        "aligned64_v2.gguf": describe_file(out / "aligned64_v2.gguf"),
        "llama_tiny.gguf": describe_file(out / "llama_tiny.gguf", with_values=False)}}
    with open(out / "expected.json", "w", encoding="utf-8", newline="\n") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote types.gguf, aligned64_v2.gguf, llama_tiny.gguf ({n_hf} HF tensors)")
    if args.model:
        result = {"meta": meta, **smollm2_expected(args.model)}
        with open(out / "smollm2_expected.json", "w", encoding="utf-8", newline="\n") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote smollm2_expected.json ({len(result['tensors'])} tensors)")


if __name__ == "__main__":
    main()
