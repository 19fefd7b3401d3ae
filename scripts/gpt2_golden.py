#!/usr/bin/env python3
"""Writes tests/data/gpt2_golden.json: GPT-2's token ids, by PyPI's tiktoken, for a set of hard
strings and for the default corpus, which tests/test_gpt2_tokenizer.cpp requires flextp to
reproduce exactly. tiktoken builds GPT-2's encoding from the two local files (nothing is
downloaded). Also prints tiktoken's encoding speed on the default corpus.

usage: scripts/gpt2_golden.py [--gpt2-dir ../shared/gpt2] [--out tests/data/gpt2_golden.json]
needs: pip install tiktoken
"""
import argparse
import hashlib
import json
import os
import time

import tiktoken
from tiktoken.load import data_gym_to_mergeable_bpe_ranks
from tiktoken_ext.openai_public import r50k_pat_str

HARD = [
    "", "a", " ", "  ", "\n", "\n\n", "\t", "Hello, world!", "Hello world\n\nBye",
    # contractions, and what is not one
    "I'm you'll they've we're it's don't he'd", "I'M YOU'LL IT'S", "it’s (curly)", "'s' 't '''",
    "rock 'n' roll", "o'clock's", "'ll've're",
    # white space runs
    "a  b   c    d", "trailing   ", "   leading", "tabs\t\tand\n\n\nnewlines \n \n", "\r\n\r\nwindows\r\n",
    "non\u00a0breaking\u3000ideographic\u2003em", "nel\u0085line\u2028sep\u2029para", " \t \n x",
    "zero\u200bwidth\ufeffbom", "mongolian\u180eseparator",
    # numbers
    "1234567890", "3.14159 2.718", "1,000,000 and 1_000", "٣٤٥ Arabic-Indic", "Ⅻ roman ½ ¼ ²³",
    "version 2.0.1-rc3", "0x1F600 0b1010 1e-9",
    # Unicode text
    "naïve café résumé", "nai\u0308ve decomposed", "日本語のテキストです。", "中文文本，标点符号！",
    "Ελληνικά κείμενα", "Кириллица и пунктуация.", "العربية نص", "हिन्दी पाठ", "한국어 텍스트",
    "ภาษาไทย", "עברית", "Ǆǅǆ titlecase", "ﬁ ligature",
    # emoji
    "emoji 😀😃😄 done", "👍🏽 skin tone", "👨‍👩‍👧‍👦 family", "🇫🇷🇯🇵 flags", "❤️ heart", "⭐️✨🔥",
    # code
    "def f(x):\n    return x ** 2  # square\n", "for (int i = 0; i < n; ++i) { a[i] += b[i]; }",
    '{"key": [1, 2.5, null, true], "s": "q\\"uote"}', "<html><body class=\"x\">&amp;</body></html>",
    "SELECT * FROM t WHERE a >= 10 AND b <> 'x';", "$ git commit -m \"fix: bug\" && make -j8",
    "<|endoftext|>", "text<|endoftext|>more",
    # odd ones
    "\x00\x01\x7f control", "a" * 300, "ab" * 150, "!!!???...,,,;;;", "~`@#$%^&*()_+-=[]{}|\\:;\"'<>,.?/",
    "mixed日本English123العربية😀",
]


def default_corpus(directory="/usr/share/games/fortunes"):
    """The text flextp trains on by default (data/token_files.cpp: default_corpus_text)."""
    names = sorted(n for n in os.listdir(directory)
                   if os.path.isfile(os.path.join(directory, n)) and not os.path.islink(os.path.join(directory, n))
                   and not n.endswith((".dat", ".u8")))
    return b"".join(open(os.path.join(directory, n), "rb").read() for n in names)


def fnv1a64(ids):
    h = 0xcbf29ce484222325
    for i in ids:
        for b in int(i).to_bytes(4, "little", signed=True):
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--gpt2-dir", default=os.path.join(here, "..", "..", "shared", "gpt2"))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", "gpt2_golden.json"))
    a = ap.parse_args()
    ranks = data_gym_to_mergeable_bpe_ranks(os.path.join(a.gpt2_dir, "vocab.bpe"), os.path.join(a.gpt2_dir, "encoder.json"))
    enc = tiktoken.Encoding("gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256})
    strings = [{"text": s, "ids": enc.encode_ordinary(s)} for s in HARD]
    corpus = default_corpus()
    text = corpus.decode("utf-8")
    start = time.perf_counter()
    ids = enc.encode_ordinary(text)
    seconds = time.perf_counter() - start
    golden = {
        "made_by": f"scripts/gpt2_golden.py with tiktoken {tiktoken.__version__}",
        "strings": strings,
        "corpus": {"sha256": hashlib.sha256(corpus).hexdigest(), "bytes": len(corpus), "tokens": len(ids),
                   "fnv1a64": f"{fnv1a64(ids):016x}", "first": ids[:2000]},
    }
    with open(a.out, "w") as f:
        json.dump(golden, f, ensure_ascii=False, indent=0)
    print(f"wrote {a.out}: {len(strings)} strings, default corpus {len(corpus)} bytes -> {len(ids)} tokens")
    print(f"tiktoken {tiktoken.__version__}: {len(corpus) / 1e6 / seconds:.1f} MB/s (one thread, encode_ordinary)")


if __name__ == "__main__":
    main()
