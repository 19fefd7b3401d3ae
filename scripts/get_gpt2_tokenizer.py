#!/usr/bin/env python3
"""Downloads GPT-2's tokenizer files (encoder.json, vocab.bpe) from OpenAI's public location (the
one tiktoken reads) into flextp's cache directory, where `train`, `flextp-tokenize` and
`flextp-sample --tokenizer gpt2` find them without --tokenizer-dir. Each file is checked against
the sha256 tiktoken checks before it is put in place; a file already there with the right hash is
kept. Python's standard library only.

usage: python3 scripts/get_gpt2_tokenizer.py [--dir DIR] [--base-url URL]
  --dir       where to put them (default: $XDG_CACHE_HOME/flextp/gpt2, else ~/.cache/flextp/gpt2)
  --base-url  where to fetch them from (default: OpenAI's; file:///some/dir works too)
"""
import argparse
import hashlib
import os
import sys
import tempfile
import urllib.request

BASE_URL = "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main"
SHA256 = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}


def cache_dir():
    # The same rule as data/tokenizer.cpp's gpt2_cache_dir().
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ.get("HOME") or ".", ".cache")
    return os.path.join(base, "flextp", "gpt2")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(name, base_url, out_dir):
    """Puts a verified copy of `name` in out_dir; returns a line saying what was done."""
    target = os.path.join(out_dir, name)
    if os.path.isfile(target) and sha256_of(target) == SHA256[name]:
        return f"{target}: already there (sha256 verified)"
    url = f"{base_url.rstrip('/')}/{name}"
    fd, partial = tempfile.mkstemp(prefix=f".{name}.", dir=out_dir)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
            while True:
                block = response.read(1 << 20)
                if not block:
                    break
                out.write(block)
        got = sha256_of(partial)
        if got != SHA256[name]:
            raise RuntimeError(f"{url} has sha256 {got}, not GPT-2's {SHA256[name]}: not installed "
                               "(a proxy page, a truncated download or another file)")
        os.chmod(partial, 0o644)
        os.replace(partial, target)
        partial = None
    finally:
        if partial is not None and os.path.exists(partial):
            os.remove(partial)
    return f"{target}: downloaded from {url} (sha256 verified)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=cache_dir())
    ap.add_argument("--base-url", default=BASE_URL)
    a = ap.parse_args()
    try:
        os.makedirs(a.dir, exist_ok=True)
        for name in SHA256:
            print(fetch(name, a.base_url, a.dir))
    except Exception as e:  # network, disk or hash: one line saying which
        print(f"get_gpt2_tokenizer: error: {e}", file=sys.stderr)
        if a.base_url == BASE_URL:
            print("Without access to that address, copy encoder.json and vocab.bpe from any GPT-2 tokenizer "
                  f"(with the sha256 listed in this script) into {a.dir}, or pass --tokenizer-dir DIR to flextp's programs.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
