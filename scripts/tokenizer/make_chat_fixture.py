#!/usr/bin/env python3
"""Writes tests/tokenizer/data/qwen3_chat.jsonl, read by tests/tokenizer/chat_template_test.cc.

Each conversation is rendered by transformers' apply_chat_template with the official Jinja template
of tokenizer_config.json, for add_generation_prompt in {false, true} x enable_thinking in
{true, false}; "ids" is the rendered text encoded by `tokenizers` (what a prompt feeds the model).

    python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install tokenizers==0.23.3 \
        transformers==5.24.0 jinja2
    /tmp/tokvenv/bin/python scripts/tokenizer/make_chat_fixture.py \
        --model-dir ../shared/qwen3 --out tests/tokenizer/data/qwen3_chat.jsonl

Line format: {"messages": [{"role", "content"[, "reasoning_content"]}...],
"add_generation_prompt": b, "enable_thinking": b, "text": rendered, "ids": [...]}.
"""

import argparse
import json
from pathlib import Path

from tokenizers import Tokenizer
from transformers import AutoTokenizer, __version__ as transformers_version


def m(role, content, reasoning=None):
    message = {"role": role, "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return message


CONVERSATIONS = [
    [m("user", "Shall I compare thee to a summer's day?")],
    [m("system", "You are a helpful assistant."), m("user", "What is 2 + 2?")],
    [m("system", "Be brief."), m("user", "Hi"), m("assistant", "Hello!"), m("user", "Bye")],
    [m("user", "Why is the sky blue?"),
     m("assistant", "<think>\nRayleigh scattering.\n</think>\n\nBecause of Rayleigh scattering.")],
    [m("user", "Q1"), m("assistant", "<think>\nfirst thoughts\n</think>\n\nA1"), m("user", "Q2"),
     m("assistant", "<think>second thoughts</think>A2")],
    [m("user", "Q"), m("assistant", "Answer.", reasoning="Step 1.\nStep 2.")],
    [m("user", "Q"), m("assistant", "Answer with <think>kept</think> text", reasoning="")],
    [m("user", "Q"), m("assistant", "<think>\n\n\nspaced\n\n</think>\n\n\n\nbody\n\n")],
    [m("user", "Q"), m("assistant", "no think close <think> only open")],
    [m("user", "Q"), m("assistant", "a</think>b</think>c")],
    [m("user", "Q"), m("assistant", "pre<think>x<think>y</think>z")],
    [m("system", "S1"), m("user", "U"), m("system", "S2 in the middle"), m("user", "U2")],
    [m("system", "Only a system prompt.")],
    [m("assistant", "An assistant turn first.")],
    [m("user", "Call the tool"), m("assistant", "Calling."),
     m("user", "<tool_response>\n{\"temp\": 21}\n</tool_response>"),
     m("assistant", "<think>\ntool said 21\n</think>\n\nIt is 21 degrees.")],
    [m("user", "Weather?"), m("assistant", "Checking."), m("tool", "{\"temp\": 21}"),
     m("tool", "{\"wind\": 3}"), m("assistant", "21 degrees, light wind.")],
    [m("user", ""), m("assistant", "")],
    [m("user", "\u4f60\u597d\uff01\U0001f600 caf\u00e9 e\u0301 <|im_end|> inside"),
     m("assistant", "<think>\u601d\u8003</think>\u56de\u7b54")],
    [m("system", "sys"), m("user", "u1"), m("assistant", "a1"), m("user", "u2"),
     m("assistant", "a2", reasoning="r2"), m("user", "u3")],
    [m("user", "Write code"),
     m("assistant", "```python\nprint('hi')\n```\n", reasoning="\n\nthink\n\n")],
    [m("user", "multi\nline\n\nuser\r\nmessage\t")],
    [m("user", "<tool_response>only tool responses</tool_response>"), m("assistant", "ok")],
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", required=True, help="folder with tokenizer.json and "
                        "tokenizer_config.json (shared/qwen3)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    hf = AutoTokenizer.from_pretrained(args.model_dir, local_files_only=True)
    tokenizer = Tokenizer.from_file(str(Path(args.model_dir) / "tokenizer.json"))
    lines = [{"meta": {"generator": "scripts/tokenizer/make_chat_fixture.py",
                       "transformers_version": transformers_version}}]
    for messages in CONVERSATIONS:
        for add_generation_prompt in (False, True):
            for enable_thinking in (True, False):
                text = hf.apply_chat_template(messages, tokenize=False,
                                              add_generation_prompt=add_generation_prompt,
                                              enable_thinking=enable_thinking)
                lines.append({"messages": messages, "add_generation_prompt": add_generation_prompt,
                              "enable_thinking": enable_thinking, "text": text,
                              "ids": tokenizer.encode(text).ids})
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"{len(lines) - 1} rendered conversations")


if __name__ == "__main__":
    main()
