#!/usr/bin/env python3
"""Writes the SmolLM2 tokenizer fixtures (tests/tokenizer/data/smollm2_*.jsonl).

The tokenizer comes from the GGUF file's metadata, so the fixtures test the whole path the C++
takes (gguf/gguf_tokenizer.h): tokenizer.ggml.tokens / merges / token_type -> byte-level BPE.

The reference is Hugging Face `tokenizers` with SmolLM2's own tokenizer.json pipeline, rebuilt from
the GGUF vocabulary: no normalizer; pre-tokenizer Sequence[Digits(individual_digits=true),
ByteLevel(add_prefix_space=false, use_regex=true)] (what the GGUF's tokenizer.ggml.pre = "smollm"
names: llama.cpp gives "smollm" StarCoder's split, a single-\\p{N} pass before the GPT-2 regex);
the ByteLevel decoder; the 17 CONTROL tokens as special added tokens (normalized=false).
transformers' own GGUF loader rebuilds the same vocabulary but with a bare ByteLevel pre-tokenizer
(it has no entry for "smollm"); this script checks that its ids equal our bare-ByteLevel rebuild on
every case (so the vocabulary, merges and specials are read the same way) and records both: "ids"
(SmolLM2's pipeline) and, where they differ, "ids_gpt2" (transformers' GGUF tokenizer).

    pip install tokenizers==0.23.3 transformers==5.24.0 gguf==0.19.0 jinja2
    python3 scripts/tokenizer/make_smollm2_fixture.py \\
        --gguf ~/.cache/detverify/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --texts ../shared/texts --out tests/tokenizer/data

Outputs (JSON Lines, first line {"meta": {...}}):
  smollm2_pretokenize.jsonl  {"text", "digits_gpt2": [pieces], "gpt2": [pieces]}: the pieces of
                             HF's pre_tokenize_str (byte-level spelling) for both pipelines; needs
                             no vocabulary, so its test always runs
  smollm2_encode.jsonl       {"text"|"hex", "ids"[, "ids_gpt2"][, "decoded"]}
  smollm2_decode.jsonl       {"ids", "keep", "skip"}
  smollm2_chat.jsonl         {"messages", "add_generation_prompt", "text", "ids"}: the GGUF's
                             tokenizer.chat_template rendered by transformers' apply_chat_template
Strings come from make_parity_fixture.py's generators (same seed and kinds), with SmolLM2's special
tokens; strings with code points unassigned in Python's Unicode data are left out (Unicode-version
differences, as for Qwen3).
"""

import argparse
import hashlib
import json
import random
import sys
import tempfile
import unicodedata
from pathlib import Path

import gguf
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
from tokenizers import __version__ as tokenizers_version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_parity_fixture as mpf  # noqa: E402  (the Qwen3 fixture's string generators)
from make_chat_fixture import CONVERSATIONS  # noqa: E402

SEED = 20250602
MIN_ENCODE_CASES = 2000
CONTROL = 3
USER_DEFINED = 4

SMOLLM2_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>",
                    "<file_sep>", "<filename>", "<gh_stars>", "<issue_start>", "<issue_comment>",
                    "<issue_closed>", "<jupyter_start>", "<jupyter_text>", "<jupyter_code>",
                    "<jupyter_output>", "<jupyter_script>", "<empty_output>"]
NEAR_SPECIALS = ["<|im_start", "<|im_start|", "im_start|>", "<repo_name", "<filename >",
                 "<|endoftext||>", "<<|im_end|>>", "<|im_end|><", "<|", "|>", "<>", "</",
                 "<jupyter_", "<|im_sta rt|>", "<gh_stars>>"]
# Digits next to white space, where SmolLM2's Digits step and a bare GPT-2 split disagree.
DIGIT_CASES = ["a  1", "x \t 42", "1 2  3   4", "  7", "7  ", "\n 5", "v1.2.3", "a\u00a0 9",
               "12\u00bd x", "\u0661\u0662 \u0663", " 1", "1 ", "x 1y", "x\n\n9", "10 000 000",
               "pi = 3.14159", "  \u2163  \u2164"]
# Control bytes SmolLM2's vocabulary has no token for (0x04, 0x06, 0x13, 0x14, 0x16, 0x1d): the
# BPE drops them, and what is left around them merges as if they were absent.
MISSING_BYTE_CASES = ["a\x04b", "\x06", "x\x13\x14y", "!!\x16!!", "\x1d\x1d", "hello\x04world",
                      " \x06 ", "1\x042", "<|im_start|>\x04<|im_end|>", "::\x1d::"]


def gguf_vocabulary(path):
    reader = gguf.GGUFReader(path)

    def field(name):
        return reader.fields[name].contents()

    return {"tokens": field("tokenizer.ggml.tokens"), "types": field("tokenizer.ggml.token_type"),
            "merges": field("tokenizer.ggml.merges"), "pre": field("tokenizer.ggml.pre"),
            "model": field("tokenizer.ggml.model"), "template": field("tokenizer.chat_template")}


def build_tokenizer(vocab, digits):
    """SmolLM2's tokenizer.json pipeline (digits=True) or a bare ByteLevel one, from the GGUF."""
    bpe = models.BPE(vocab={t: i for i, t in enumerate(vocab["tokens"])},
                     merges=[tuple(m.split(" ")) for m in vocab["merges"]])
    tok = Tokenizer(bpe)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.pre_tokenizer = (pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                  byte_level]) if digits else byte_level)
    tok.decoder = decoders.ByteLevel()
    specials = [AddedToken(t, special=True, normalized=False)
                for t, kind in zip(vocab["tokens"], vocab["types"]) if kind == CONTROL]
    tok.add_special_tokens(specials)
    user = [AddedToken(t, special=False, normalized=False)
            for t, kind in zip(vocab["tokens"], vocab["types"]) if kind == USER_DEFINED]
    if user:
        tok.add_tokens(user)
    return tok


def transformers_tokenizer(gguf_path):
    from transformers import AutoTokenizer
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.gguf"
        path.symlink_to(Path(gguf_path).resolve())
        return AutoTokenizer.from_pretrained(tmp, gguf_file="model.gguf")


def has_unassigned(text):
    return any(unicodedata.category(c) == "Cn" for c in text)


def build_cases(rng, texts):
    mpf.SPECIALS = SMOLLM2_SPECIALS
    mpf.NEAR_SPECIALS = NEAR_SPECIALS
    return (DIGIT_CASES + MISSING_BYTE_CASES + SMOLLM2_SPECIALS + NEAR_SPECIALS +
            mpf.build_cases(rng, texts))


def pretokenize_rows(rng, cases):
    digits = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                      pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                               use_regex=True)])
    gpt2 = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    chosen = DIGIT_CASES + MISSING_BYTE_CASES + mpf.hand_cases() + rng.sample(cases, 500)
    rows, seen = [], set()
    for text in chosen:
        if text in seen or has_unassigned(text):
            continue
        seen.add(text)
        rows.append({"text": text,
                     "digits_gpt2": [p for p, _ in digits.pre_tokenize_str(text)],
                     "gpt2": [p for p, _ in gpt2.pre_tokenize_str(text)]})
    return rows


def chat_rows(hf, reference):
    rows = []
    conversations = [c for c in CONVERSATIONS if c] + [
        [{"role": "user", "content": "Shall I compare thee to a summer's day?"}],
        [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "2+2?"}],
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! 12 34"},
         {"role": "user", "content": "Bye  9"}],
    ]
    for messages in conversations:
        plain = [{"role": m["role"], "content": m["content"]} for m in messages]
        for add_generation_prompt in (False, True):
            text = hf.apply_chat_template(plain, tokenize=False,
                                          add_generation_prompt=add_generation_prompt)
            rows.append({"messages": plain, "add_generation_prompt": add_generation_prompt,
                         "text": text, "ids": reference.encode(text).ids})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gguf", required=True, help="SmolLM2-135M-Instruct.Q4_1.gguf")
    parser.add_argument("--texts", required=True, help="folder of .txt files (shared/texts)")
    parser.add_argument("--out", required=True, help="tests/tokenizer/data")
    args = parser.parse_args()
    import transformers

    vocab = gguf_vocabulary(args.gguf)
    if vocab["model"] != "gpt2" or vocab["pre"] != "smollm":
        raise SystemExit(f"expected a gpt2/smollm tokenizer, got {vocab['model']}/{vocab['pre']}")
    reference = build_tokenizer(vocab, digits=True)
    bare = build_tokenizer(vocab, digits=False)
    hf = transformers_tokenizer(args.gguf)
    rng = random.Random(SEED)
    meta = {"generator": "scripts/tokenizer/make_smollm2_fixture.py", "seed": SEED,
            "tokenizers_version": tokenizers_version,
            "transformers_version": transformers.__version__,
            "gguf_sha256": hashlib.sha256(Path(args.gguf).read_bytes()).hexdigest(),
            "pipeline": "Sequence[Digits(individual_digits=true), ByteLevel(use_regex=true)]"}

    cases = build_cases(rng, args.texts)
    rows, encoded, seen, left_out, differing = [], [], set(), 0, 0

    def add(row, text):
        nonlocal differing
        ids = reference.encode(text).ids
        gpt2_ids = hf(text, add_special_tokens=False)["input_ids"]
        if gpt2_ids != bare.encode(text).ids:
            raise SystemExit(f"transformers' GGUF tokenizer and the bare rebuild differ: {text!r}")
        row["ids"] = ids
        if gpt2_ids != ids:
            row["ids_gpt2"] = gpt2_ids
            differing += 1
        decoded = reference.decode(ids, skip_special_tokens=False)
        if decoded != text:
            row["decoded"] = decoded
        rows.append(row)
        encoded.append(ids)

    for text in cases:
        if text in seen:
            continue
        seen.add(text)
        if has_unassigned(text):
            left_out += 1
            continue
        add({"text": text}, text)
    for data in mpf.invalid_cases(rng):
        add({"hex": data.hex()}, data.decode("utf-8", errors="replace"))
    if len(rows) < MIN_ENCODE_CASES:
        raise SystemExit(f"only {len(rows)} encode cases; need {MIN_ENCODE_CASES}")

    # The Qwen3 fixture's decode cases (its fixed Qwen3 ids are out of range here, which is a case
    # too), with SmolLM2's special tokens.
    decode_cases = mpf.decode_cases(rng, reference, encoded)
    decode_rows = [{"ids": ids, "keep": reference.decode(ids, skip_special_tokens=False),
                    "skip": reference.decode(ids, skip_special_tokens=True)} for ids in decode_cases]

    if hf.chat_template != vocab["template"]:
        raise SystemExit("transformers did not take the GGUF's chat template")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def write(name, lines):
        with open(out / name, "w", encoding="utf-8", newline="\n") as f:
            f.write(json.dumps({"meta": meta}, ensure_ascii=False) + "\n")
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")

    write("smollm2_pretokenize.jsonl", pretokenize_rows(rng, cases))
    write("smollm2_encode.jsonl", rows)
    write("smollm2_decode.jsonl", decode_rows)
    chats = chat_rows(hf, reference)
    write("smollm2_chat.jsonl", chats)
    print(f"{len(rows)} encode cases ({left_out} left out for Unicode-version differences; "
          f"{differing} where transformers' GGUF tokenizer differs), {len(decode_rows)} decode "
          f"cases, {len(chats)} chats")


if __name__ == "__main__":
    main()
