#!/usr/bin/env python3
"""Checks `train --export-hf`: trains two small models for a few steps (the default byte-level one,
and one with GPT-2's 50257-token vocabulary), exports each, loads the export offline with Hugging
Face transformers as GPT2LMHeadModel, and compares its logits on a fixed batch with flextp's
(build/flextp-logits). Passes when every logit agrees within 1e-4.

usage: scripts/check_hf_export.py [--build build] [--gpt2-dir ../shared/gpt2]
needs: pip install torch transformers   (run by hand or from bench; not part of make test)
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(here, "..", "build"))
    ap.add_argument("--gpt2-dir", default=os.path.join(here, "..", "..", "shared", "gpt2"))
    ap.add_argument("--tolerance", type=float, default=1e-4)
    a = ap.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from safetensors.torch import load_file
    from transformers import GPT2LMHeadModel

    torch.set_num_threads(2)
    work = tempfile.mkdtemp(prefix="flextp-hf-")
    cases = [("default model, byte vocabulary", []),
             ("2 layers, GPT-2 vocabulary", ["--tokenizer", "gpt2", "--tokenizer-dir", a.gpt2_dir, "--n-layer", "2",
                                             "--n-embd", "64", "--n-head", "2", "--seq-len", "64", "--batch", "4"])]
    worst = 0.0
    for name, flags in cases:
        out = os.path.join(work, name.split(",")[0].replace(" ", "_"))
        subprocess.run([os.path.join(a.build, "train"), "--steps", "20", "--eval-every", "0", "--log-every", "1000",
                        "--export-hf", out, "--no-save"] + flags, check=True, stdout=subprocess.DEVNULL)
        model = GPT2LMHeadModel.from_pretrained(out, local_files_only=True).eval()
        vocab, positions = model.config.vocab_size, model.config.n_positions
        rng = random.Random(7)
        rows = [[rng.randrange(vocab) for _ in range(min(32, positions))] for _ in range(3)]
        got = os.path.join(out, "flextp_logits.safetensors")
        subprocess.run([os.path.join(a.build, "flextp-logits"), "--load", os.path.join(out, "model.safetensors"),
                        "--ids", ";".join(",".join(map(str, r)) for r in rows), "--out", got],
                       check=True, stdout=subprocess.DEVNULL)
        flextp = load_file(got)["logits"].double()
        with torch.no_grad():
            hf = model(torch.tensor(rows)).logits.double()
        diff = (flextp - hf).abs().max().item()
        worst = max(worst, diff)
        print(f"{name}: transformers loads the export; max |logit difference| on a 3 x {len(rows[0])} batch: {diff:.2e}")
    ok = worst <= a.tolerance
    print(f"{'PASS' if ok else 'FAIL'}: worst difference {worst:.2e} (tolerance {a.tolerance:g})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
