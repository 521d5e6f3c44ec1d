#!/usr/bin/env python3
"""Writes the Qwen3 tokenizer parity fixtures read by tests/tokenizer/tokenizer_parity_test.cc.

Expected ids come from Hugging Face's own `tokenizers` library, so the C++ tests need no Python.
Deterministic: the same tokenizer.json, texts and `tokenizers` version give byte-identical files.

    python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install tokenizers==0.23.3
    /tmp/tokvenv/bin/python scripts/tokenizer/make_parity_fixture.py \
        --tokenizer ../shared/qwen3/tokenizer.json --texts ../shared/texts \
        --out tests/tokenizer/data

Outputs (JSON Lines, UTF-8, first line {"meta": {...}}):
  qwen3_encode.jsonl  {"text": s, "ids": [...]} or, for ill-formed UTF-8,
                      {"hex": bytes, "ids": [...]};
                      "decoded": HF's decode(ids) when it differs from the text (NFC changed it,
                      or U+FFFD replaced ill-formed bytes).
  qwen3_decode.jsonl  {"ids": [...], "keep": decode(ids, skip_special_tokens=False),
                       "skip": decode(ids, skip_special_tokens=True)}

Ill-formed UTF-8 rule: HF's Python API takes str, so bytes reach it as
bytes.decode("utf-8", errors="replace") (one U+FFFD per maximal ill-formed subpart); the C++
Encode(bytes) applies the same rule.

Unicode versions: `tokenizers` classifies characters with Unicode 16.0 (Oniguruma) but normalises
with older NFC tables; the C++ side is frozen at Unicode 15.0 (ICU). Strings where these could
disagree are left out: code points unassigned in Python's unicodedata, and strings whose NFC by
`tokenizers` differs from unicodedata's. The number left out is printed.
"""

import argparse
import hashlib
import json
import random
import unicodedata
from pathlib import Path

from tokenizers import Tokenizer, __version__ as tokenizers_version

SEED = 20250518
MIN_ENCODE_CASES = 2000

WORDS = """
the of and to in a is that for it as was with be by on not he I this are or his from at which but
have an they you were her she there would their we him been has when who will more no if out so
said what up its about into than them can only other new some time could these two may then do
first any my now such like our over man me even most made after also did many before must through
back years where much your way well down should because each just those people Mr how too little
state good very make world still own see men work long get here between both life being under
never day same another know while last might us great old year off come since against go came right
used take three morning river window garden letter winter summer evening mountain village harbour
question answer reason simple careful quiet bright heavy narrow ancient modern gentle sudden
""".split()

CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL",
                "'D", "'Re", "'rE", "'Ve", "'vE", "'Ll", "'lL", "'sT", "\u2019s", "'\u017f"]

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
            "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
            "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>",
            "<|video_pad|>",
            "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
            "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
            "<think>", "</think>"]
NEAR_SPECIALS = ["<|im_start", "<|im_start|", "im_start|>", "<think", "</think", "<think >",
                 "<THINK>", "< think>", "<|endoftext||>", "<<|im_end|>>", "<|im_end|><",
                 "<|", "|>", "<>", "</", "<tool_call", "<|im_sta rt|>"]

WHITESPACE = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r", "\r\n", "\r\n\r\n", "\n\r",
              "\u00a0", "\u3000", "\u2028", "\u2029", "\x0b", "\x0c", "\x85", "\u2009", "\u200a",
              "\u1680", "\u202f", "\u205f", " \n", "\n ", " \t\n", "\t \r\n  ", "\u200b"]

SCRIPT_SAMPLES = [
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u6563\u6b65"
    "\u5427\u3002",
    "\u6a5f\u68b0\u5b66\u7fd2\u306f\u697d\u3057\u3044\u3067\u3059\u3002\u30ab\u30bf\u30ab"
    "\u30ca\u3068"
    "\u3072\u3089\u304c\u306a\u3002",
    "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc744 \ud1a0\ud070\ud654\ud569\ub2c8\ub2e4.",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645! \u0643\u064a\u0641 "
    "\u062d\u0627\u0644\u0643\u061f",
    "\u0627\u0644\u0652\u0639\u064e\u0631\u064e\u0628\u0650\u064a\u0651\u064e\u0629\u064f",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd, \u05de\u05d4 "
    "\u05e9\u05dc\u05d5\u05de\u05da?",
    "\u05d1\u05bc\u05b0\u05e8\u05b5\u05d0\u05e9\u05b4\u05c1\u05d9\u05ea",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e, \u0915\u094d\u0937"
    "\u0924\u094d\u0930\u093f\u092f",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e22\u0e34\u0e19\u0e14\u0e35",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0401\u043b\u043a\u0430 \u0438 "
    "\u0439\u043e\u0434.",
    "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u thanh",
    "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0 "
    "\u0540\u0561\u0575\u0565\u0580\u0565\u0576",
    "\u1200\u120b\u121d \u13a0\u13c2\u13f4\u13eb \u1780\u17d2\u1798\u17c2\u179a",
    "\U0001f600\U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 "
    "\U0001f1eb\U0001f1f7\U0001f1ef\U0001f1f5 1\ufe0f\u20e3 \u2764\ufe0f \U0001f3f3\ufe0f\u200d"
    "\U0001f308",
    "\U0001f9d1\U0001f3ff\u200d\U0001f4bb and "
    "\U0001f469\U0001f3fc\u200d\u2764\ufe0f\u200d\U0001f48b"
    "\u200d\U0001f468\U0001f3fb",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f"
    "\u031e\u0320\u034da\u0300\u0301\u0316",
    "\u2160\u2161\u2162 \u00bd \u00b2\u00b3 \u0660\u0661\u0662 \uff11\uff12\uff13 \u0967\u0968",
    "\u2126 \u212a \u212b \uf900 \uf91b \u2000 \u1e9b\u0323 \u0344 \u0958",
    "\ufb01 \ufb00 \u2163 \u3392 \u00c5 A\u030a \u0041\u0308\u0304 \u1100\u1161\u11a8",
]

CODE_TEMPLATES = [
    "def {f}({a}, {b}={n}):\n    return {a} * {b} + {n}\n",
    "for (int {a} = 0; {a} < {n}; ++{a}) {{\n\t{f}({a}, {b}[{a}]);\n}}\n",
    "if ({a} != nullptr && {a}->{b} >= {n}) {{ return -{n}; }}",
    "{{\"{a}\": {n}, \"{b}\": [{n}, \"{f}\", null, true], \"x\": {{\"y\": -{n}.5e-3}}}}",
    "#include <{a}.h>\n#define {B}_MAX {n}\nstatic const char* {f} = \"{b}\\n\";\n",
    "SELECT {a}, COUNT(*) FROM {b} WHERE {f} > {n} GROUP BY {a};",
    "$ ./{f} --{a}={n} --{b} 2>&1 | grep -v '^#' > /tmp/{a}.log",
    "    {a} = [{b} ** 2 for {b} in range({n}) if {b} % 3 == 0]  # comment: {f}\n",
    "<div class=\"{a}\"><a href=\"https://example.com/{b}?q={n}&lang=en\">{f}</a></div>",
    "{a}_{b} := map[string]int{{\"{f}\": {n}}}\r\nfmt.Println({a}_{b})\r\n",
    "fn {f}<'a>({a}: &'a str) -> Option<&'a str> {{ {a}.get(..{n}) }}",
    "// TODO({a}): don't {b} until it's {f}'d; we've {n} left, they're fine\n",
    "x+=1;y-=2;z*=3;w/=4;v%=5;u<<=6;t>>=7;s&&t||!u",
    "    \t  {a}\t= {n}\t# mixed\t\tindent\n\t    {b} = '{f}'\n",
]

IDENTIFIERS = ["x", "idx", "value", "buffer_size", "tokenizer", "merge_rank", "kMaxLen", "userName",
               "HTTPServer", "__init__", "_tmp", "Vec3", "i", "j", "n_heads", "dataFrame"]


def english_sentence(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 18))]
    words[0] = words[0].capitalize()
    for k in range(len(words)):
        roll = rng.random()
        if roll < 0.06:
            words[k] += rng.choice(CONTRACTIONS[:7])
        elif roll < 0.10:
            words[k] += ","
        elif roll < 0.12:
            words[k] = str(rng.randint(0, 10 ** rng.randint(1, 6)))
        elif roll < 0.14:
            words[k] = '"' + words[k] + '"'
        elif roll < 0.15:
            words[k] = words[k].upper()
    return " ".join(words) + rng.choice([".", ".", ".", "?", "!", ";", ":", "...", " --"])


def english_paragraph(rng):
    return " ".join(english_sentence(rng) for _ in range(rng.randint(1, 6)))


def code_snippet(rng):
    template = rng.choice(CODE_TEMPLATES)
    a, b, f = rng.sample(IDENTIFIERS, 3)
    return template.format(a=a, b=b, f=f, B=b.upper(), n=rng.randint(0, 99999))


def number_string(rng):
    kind = rng.randrange(8)
    if kind == 0:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 60)))
    if kind == 1:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 9)}f}"
    if kind == 2:
        return f"{rng.randint(1900, 2099)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == 3:
        return f"+{rng.randint(1, 99)} ({rng.randint(100, 999)}) {rng.randint(100, 999)}-" \
               f"{rng.randint(1000, 9999)}"
    if kind == 4:
        return f"${rng.randint(0, 10**9):,}.{rng.randint(0, 99):02d} and {rng.randint(1, 99)}%"
    if kind == 5:
        return "".join(chr(rng.choice([0x660, 0x6F0, 0x966, 0xFF10, 0x1D7CE]) + rng.randrange(10))
                       for _ in range(rng.randint(1, 12)))
    if kind == 6:
        return f"{rng.random():.3e}x{rng.randint(0, 255):#04x} " \
               f"v{rng.randint(0, 9)}.{rng.randint(0, 99)}"
    return " ".join(str(rng.randint(0, 10 ** rng.randint(0, 12))) for _ in range(rng.randint(2, 8)))


def whitespace_mix(rng):
    parts = []
    for _ in range(rng.randint(2, 10)):
        roll = rng.random()
        if roll < 0.45:
            parts.append("".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 4))))
        elif roll < 0.75:
            parts.append(rng.choice(WORDS))
        elif roll < 0.85:
            parts.append(rng.choice(["!", "?!", "...", "--", "#", "(", ")", "'", '"', "@@", "::"]))
        else:
            parts.append(str(rng.randint(0, 999)))
    return "".join(parts)


# Blocks of assigned, commonly used code points; random picks inside are filtered by category.
CODE_POINT_RANGES = [
    (0x20, 0x7E), (0xA0, 0x24F), (0x250, 0x2FF), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
    (0x530, 0x58F), (0x590, 0x5FF), (0x600, 0x6FF), (0x900, 0x97F), (0x980, 0x9FF),
    (0xE00, 0xE7F), (0x10A0, 0x10FF), (0x1100, 0x11FF), (0x1E00, 0x1EFF), (0x2000, 0x206F),
    (0x2070, 0x209F), (0x20A0, 0x20CF), (0x2100, 0x214F), (0x2150, 0x218F), (0x2190, 0x23FF),
    (0x2500, 0x27BF), (0x3000, 0x30FF), (0x3130, 0x318F), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
    (0xE000, 0xE0FF), (0xF900, 0xFAFF), (0xFB00, 0xFB4F), (0xFE00, 0xFE6F), (0xFF00, 0xFFEF),
    (0x1D400, 0x1D7FF), (0x1F300, 0x1F64F), (0x1F900, 0x1F9FF), (0x20000, 0x2A6DF),
]


def random_code_point(rng):
    while True:
        low, high = rng.choice(CODE_POINT_RANGES)
        cp = rng.randint(low, high)
        if unicodedata.category(chr(cp)) not in ("Cn", "Cs"):
            return chr(cp)


def unicode_mix(rng):
    parts = []
    for _ in range(rng.randint(1, 12)):
        roll = rng.random()
        if roll < 0.4:
            parts.append("".join(random_code_point(rng) for _ in range(rng.randint(1, 6))))
        elif roll < 0.6:
            sample = rng.choice(SCRIPT_SAMPLES)
            start = rng.randrange(len(sample))
            parts.append(sample[start:start + rng.randint(1, 12)])
        elif roll < 0.75:
            parts.append(rng.choice(WHITESPACE))
        elif roll < 0.85:
            parts.append(unicodedata.normalize("NFD", rng.choice(SCRIPT_SAMPLES + WORDS)))
        else:
            parts.append(rng.choice(WORDS) + rng.choice(CONTRACTIONS))
    return "".join(parts)


def with_specials(rng, base):
    pieces = [base]
    for _ in range(rng.randint(1, 4)):
        text = pieces.pop()
        cut = rng.randint(0, len(text))
        token = rng.choice(SPECIALS + SPECIALS + NEAR_SPECIALS)
        pieces += [text[:cut], token, text[cut:]]
        pieces = ["".join(pieces)]
    return pieces[0]


def chat_like(rng):
    turns = []
    for role in rng.sample(["system", "user", "assistant", "user", "assistant"], rng.randint(1, 5)):
        body = english_paragraph(rng)
        if role == "assistant" and rng.random() < 0.5:
            body = "<think>\n" + english_sentence(rng) + "\n</think>\n\n" + body
        turns.append(f"<|im_start|>{role}\n{body}<|im_end|>\n")
    return "".join(turns) + rng.choice(["", "<|im_start|>assistant\n", "<|endoftext|>"])


def hand_cases():
    cases = ["", " ", "a", "\n", "\r\n", "\t", "  ", "   x", "x   ", "x   y", "x \n y", "x\n\n\ny",
             "x \r\n\r\n y", "x\r\ry", "x\n \ny", "\n\n\n", " \n \n ", "\t\n\t\n", "x\u00a0y",
             "x\u00a0\u00a0y", "x\u3000y", "x\u2028y", "x\u0085y", "x\x0b\x0cy", " !!", "  !!",
             "!!\n\n", "a!!\r\n", " ?\n", "!hello", "!!hello", " hello", "  hello", "\thello",
             "\nhello", "\u00a0hello", "1a", "a1", "12345678901234567890", "3.14159", "1,000,000",
             "he's", "He'S", "HE'LL", "we've", "We'VE", "i'm", "I'M", "they'd", "you're", "YOU'RE",
             "it'll", "don't", "DON'T", "'s", "'", "''", "'''s", "'sagt", "he'ſ", "'ſt",
             "rock'n'roll",
             "l'amour", "'tis", "'ll've", "ma'am", "O'Neil's", "y'all'd've", "x's't're've'm'll'd",
             "'S'T'RE'VE'M'LL'D", "\u2019s", "'\u0301s", "a'\ns", "<think>", "</think>",
             "<think></think>", "<think>\n\n</think>\n\n", "<|im_start|>user\nhi<|im_end|>",
             "<|im_start|><|im_end|>", "<|endoftext|><|endoftext|>", "<<think>>", "<think",
             "think>", "<|im_start", "<|im_start|", "x<|endoftext|>y", " <|im_end|> ",
             "<think>\u0301", "e<think>\u0301", "\u0301<think>", "<tool_call>{}</tool_call>",
             "e\u0301", "E\u0301\u0327", "\u1100\u1161\u11a8", "\u212b", "\u2126", "\uf900",
             "A\u030a\u0301", "\u0958\u093c", "\u0344", "\u1e9b\u0323", "\u00e9\u0301",
             "\U0001f600", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f1fa\U0001f1f8",
             "\ufffd", "\ufeff", "\ufeffhello", "\u200b\u200c\u200d", "\x00", "\x00\x01\x7f",
             "tab\there", "C:\\path\\to\\file.txt", "https://example.com/a?b=c&d=e#f",
             "user@example.com", "a" * 300, "ab" * 200, " " * 500, "\n" * 100, "-" * 120,
             "=" * 80 + "\n", "." * 50, "9" * 200, "\u4e00" * 100, "\U0001f600" * 30,
             "A\u0300" * 40, "\u0300" * 20, "x" + "\u0300" * 20]
    cases += SPECIALS + NEAR_SPECIALS + SCRIPT_SAMPLES + WHITESPACE
    cases += [unicodedata.normalize("NFD", s) for s in SCRIPT_SAMPLES]
    cases += [unicodedata.normalize("NFKD", s) for s in SCRIPT_SAMPLES]
    for c in CONTRACTIONS:
        cases += [c, "it" + c, "IT" + c + " ", "x" + c + "x", "x " + c, "x" + c + "'s"]
    return cases


def invalid_cases(rng):
    fixed = [b"\xff", b"\x80", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf",
             b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
             b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xfe\xff", b"a\xe2\x82", b"\xe2\x82a",
             b"\xe2\x82\xe2\x82\xac", b"\xf0\x9f\x98", b"\xf0\x9f\x98 x", b"<think>\xff</think>",
             b"<|im_\xffstart|>", b"\xc3", b"\xc3\xa9\xc3", b"hello\x80world", b"\xef\xbb\xbf\xff"]
    cases = list(fixed)
    for _ in range(150):
        roll = rng.random()
        if roll < 0.3:
            cases.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 24))))
        else:
            base = bytearray(rng.choice([english_sentence(rng), unicode_mix(rng),
                                         with_specials(rng, english_sentence(rng))]).encode())
            for _ in range(rng.randint(1, 4)):
                op = rng.randrange(3)
                pos = rng.randint(0, len(base))
                if op == 0:
                    base[pos:pos] = bytes([rng.randrange(0x80, 0x100)])
                elif op == 1 and len(base) > 0:
                    del base[min(pos, len(base) - 1)]
                else:
                    base[pos:pos] = rng.choice([b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90",
                                                b"\xe2\x82"])
            cases.append(bytes(base))
    return [c for c in cases if not is_valid_utf8(c)]


def is_valid_utf8(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def texts_from(folder):
    texts = []
    for path in sorted(Path(folder).glob("*.txt")):
        content = path.read_text(encoding="utf-8")
        texts.append(content)
        texts += [line for line in content.split("\n") if line]
        texts.append(content.replace("\n", "\r\n"))
    return texts


def build_cases(rng, texts_folder):
    cases = hand_cases() + texts_from(texts_folder)
    generators = [(english_paragraph, 450), (code_snippet, 250), (number_string, 150),
                  (whitespace_mix, 200), (unicode_mix, 450), (chat_like, 80)]
    for generate, count in generators:
        cases += [generate(rng) for _ in range(count)]
    for _ in range(250):
        base = rng.choice([english_sentence, code_snippet, unicode_mix, whitespace_mix])(rng)
        cases.append(with_specials(rng, base))
    return cases


def decode_cases(rng, tokenizer, encoded):
    vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
    special_ids = [tokenizer.token_to_id(s) for s in SPECIALS]
    cases = [[], [vocab_size], [vocab_size, 10**6], [151643, 151644, 151667, 151668]]
    for _ in range(150):
        cases.append([rng.randrange(vocab_size) for _ in range(rng.randint(1, 12))])
    for ids in rng.sample(encoded, 150):
        ids = list(ids)
        if len(ids) > 1 and rng.random() < 0.7:
            start = rng.randrange(len(ids))
            ids = ids[start:start + rng.randint(1, 6)]
        if rng.random() < 0.4:
            ids.insert(rng.randint(0, len(ids)), rng.choice(special_ids))
        cases.append(ids)
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokenizer", required=True, help="Qwen3 tokenizer.json")
    parser.add_argument("--texts", required=True, help="folder of .txt files (shared/texts)")
    parser.add_argument("--out", required=True, help="tests/tokenizer/data")
    args = parser.parse_args()

    tokenizer = Tokenizer.from_file(args.tokenizer)
    rng = random.Random(SEED)
    meta = {"generator": "scripts/tokenizer/make_parity_fixture.py", "seed": SEED,
            "tokenizers_version": tokenizers_version,
            "tokenizer_sha256": hashlib.sha256(Path(args.tokenizer).read_bytes()).hexdigest()}

    normalize = tokenizer.normalizer.normalize_str
    rows, encoded, seen, left_out = [], [], set(), 0
    for text in build_cases(rng, args.texts):
        if text in seen:
            continue
        seen.add(text)
        if any(unicodedata.category(c) == "Cn" for c in text) or \
                normalize(text) != unicodedata.normalize("NFC", text):
            left_out += 1
            continue
        ids = tokenizer.encode(text).ids
        decoded = tokenizer.decode(ids, skip_special_tokens=False)
        if decoded != unicodedata.normalize("NFC", text):
            raise SystemExit(f"round trip is not NFC for {text!r}: {decoded!r}")
        row = {"text": text, "ids": ids}
        if decoded != text:
            row["decoded"] = decoded
        rows.append(row)
        encoded.append(ids)
    for data in invalid_cases(rng):
        text = data.decode("utf-8", errors="replace")
        if normalize(text) != unicodedata.normalize("NFC", text):
            left_out += 1
            continue
        ids = tokenizer.encode(text).ids
        row = {"hex": data.hex(), "ids": ids}
        decoded = tokenizer.decode(ids, skip_special_tokens=False)
        row["decoded"] = decoded
        rows.append(row)
    if len(rows) < MIN_ENCODE_CASES:
        raise SystemExit(f"only {len(rows)} encode cases; need {MIN_ENCODE_CASES}")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def write(name, lines):
        with open(out / name, "w", encoding="utf-8", newline="\n") as f:
            f.write(json.dumps({"meta": meta}, ensure_ascii=False) + "\n")
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")

    write("qwen3_encode.jsonl", rows)
    decode_rows = [{"ids": ids, "keep": tokenizer.decode(ids, skip_special_tokens=False),
                    "skip": tokenizer.decode(ids, skip_special_tokens=True)}
                   for ids in decode_cases(rng, tokenizer, encoded)]
    write("qwen3_decode.jsonl", decode_rows)
    print(f"{len(rows)} encode cases ({left_out} left out for Unicode-version differences), "
          f"{len(decode_rows)} decode cases")


if __name__ == "__main__":
    main()
