#!/usr/bin/env python3
"""flextp against Hugging Face transformers, offline (ctest: hf_transformers). transformers makes
small GPT-2-shaped models at random init and saves them; flextp imports each (train
--init-from-hf, flextp-logits) and must give transformers' logits within f32 tolerance, and the
round trip export -> import -> export must be bitwise. A model on GPT-2's vocabulary is fine-tuned
for two steps and exported with its tokenizer, which transformers' GPT2Tokenizer must load and
use as flextp does.

Runs under $FLEXTP_TORCH_PYTHON when that is set (a Python with torch and transformers), else
under this interpreter; exits 77 (ctest: skipped) when transformers cannot be imported.

usage: tests/hf_transformers.py --build BUILD_DIR --gpt2-dir ../shared/gpt2
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def reexec_under_torch_python():
    wanted = os.environ.get("FLEXTP_TORCH_PYTHON")
    # Not realpath: a virtual environment's python is a link to the interpreter it was made from.
    if wanted and os.path.abspath(wanted) != os.path.abspath(sys.executable) and not os.environ.get("FLEXTP_REEXEC"):
        if not os.access(wanted, os.X_OK):
            print(f"skipped: FLEXTP_TORCH_PYTHON={wanted} is not an executable")
            sys.exit(SKIP)
        os.environ["FLEXTP_REEXEC"] = "1"
        os.execv(wanted, [wanted] + sys.argv)


def run(args, **kw):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)} exited {r.returncode}:\n{r.stdout}")
    return r.stdout


def main():
    reexec_under_torch_python()
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--gpt2-dir", required=True)
    ap.add_argument("--tolerance", type=float, default=1e-5)
    a = ap.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import torch
        from safetensors.torch import load_file
        from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer
    except ImportError as e:
        print(f"skipped: no transformers in {sys.executable} ({e}); set FLEXTP_TORCH_PYTHON to a Python that has it")
        return SKIP
    torch.set_num_threads(1)
    train, logits_tool = os.path.join(a.build, "train"), os.path.join(a.build, "flextp-logits")
    tokenize = os.path.join(a.build, "flextp-tokenize")
    work = tempfile.mkdtemp(prefix="flextp-hf-test-")
    failures = []

    def check(ok, what):
        print(("ok: " if ok else "FAIL: ") + what)
        if not ok:
            failures.append(what)

    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("".join(f"the quick brown fox {i % 17} jumps over the lazy dog. " for i in range(400)))

    def flextp_logits(load, rows):
        out = os.path.join(work, "logits.safetensors")
        run([logits_tool, "--load", load, "--ids", ";".join(",".join(map(str, r)) for r in rows), "--out", out])
        return load_file(out)["logits"].double()

    def hf_logits(model, rows):
        with torch.no_grad():
            return model(torch.tensor(rows)).logits.double()

    def same_bytes(x, y):
        with open(x, "rb") as f, open(y, "rb") as g:
            return f.read() == g.read()

    # --- a byte-vocabulary GPT-2 shape: logits, round trip, tensors ---
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=256, n_positions=32, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0, embd_pdrop=0,
                     attn_pdrop=0, bos_token_id=None, eos_token_id=None)
    hf = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # transformers' init leaves biases and layer norms at 0 and 1: give them values
        for name, p in hf.named_parameters():
            if "ln_" in name or name.endswith(".bias"):
                p.add_(torch.randn_like(p) * 0.1)
    src = os.path.join(work, "hf_random")
    hf.save_pretrained(src, safe_serialization=True)
    rows = [[(7 * i + 3 * j) % 256 for j in range(20)] for i in range(3)]
    diff = (flextp_logits(src, rows) - hf_logits(hf, rows)).abs().max().item()
    check(diff <= a.tolerance, f"imported transformers model: max |logit difference| {diff:.2e} <= {a.tolerance:g}")

    base = [train, "--data", corpus, "--seq-len", "16", "--batch", "2", "--log-every", "1000", "--eval-every", "0",
            "--steps", "0"]
    e1, e2 = os.path.join(work, "export1"), os.path.join(work, "export2")
    run(base + ["--init-from-hf", src, "--export-hf", e1])
    run(base + ["--init-from-hf", e1, "--export-hf", e2])
    check(same_bytes(os.path.join(e1, "model.safetensors"), os.path.join(e2, "model.safetensors")) and
          same_bytes(os.path.join(e1, "config.json"), os.path.join(e2, "config.json")),
          "export -> import -> export is bitwise (model.safetensors and config.json)")
    original = {k.removeprefix("transformer."): v for k, v in load_file(os.path.join(src, "model.safetensors")).items()}
    exported = load_file(os.path.join(e1, "model.safetensors"))
    check(all(torch.equal(exported[k], original[k]) for k in exported) and
          set(exported) == {k for k in original if not re.fullmatch(r"h\.\d+\.attn\.(bias|masked_bias)|lm_head\.weight", k)},
          f"the export holds transformers' {len(exported)} tensors, bitwise")
    back = GPT2LMHeadModel.from_pretrained(e1, local_files_only=True).eval()
    check(torch.equal(hf_logits(back, rows), hf_logits(hf, rows)), "transformers gives bitwise its logits from flextp's export")

    # --- GPT-2's vocabulary: fine-tune two steps, export with the tokenizer ---
    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=50257, n_positions=32, n_embd=32, n_layer=1, n_head=2, resid_pdrop=0, embd_pdrop=0,
                     attn_pdrop=0)
    hf = GPT2LMHeadModel(cfg).eval()
    src = os.path.join(work, "hf_gpt2_vocab")
    hf.save_pretrained(src, safe_serialization=True)
    tuned = os.path.join(work, "tuned")
    log = run(base[:-2] + ["--steps", "2", "--tokenizer", "gpt2", "--tokenizer-dir", a.gpt2_dir, "--init-from-hf", src,
                           "--export-hf", tuned, "--no-save"])
    check(all(os.path.isfile(os.path.join(tuned, f)) for f in ("vocab.json", "merges.txt", "tokenizer_config.json")),
          "the export of a GPT-2-vocabulary model has vocab.json, merges.txt and tokenizer_config.json")
    model = GPT2LMHeadModel.from_pretrained(tuned, local_files_only=True).eval()
    rows = [[(911 * i + 7919 * j) % 50257 for j in range(16)] for i in range(2)]
    diff = (flextp_logits(os.path.join(tuned, "model.safetensors"), rows) - hf_logits(model, rows)).abs().max().item()
    check(diff <= a.tolerance, f"fine-tuned export: max |logit difference| {diff:.2e} <= {a.tolerance:g}")
    moved = any(not torch.equal(p, q) for p, q in zip(model.state_dict().values(), hf.state_dict().values()))
    check(moved, "two fine-tuning steps changed the imported weights")
    tok = GPT2Tokenizer.from_pretrained(tuned, local_files_only=True)
    text = "Hello world, it's flextp's 2nd test: naïve café ünïcode, tabs\tand  spaces."
    with open(os.path.join(work, "t.txt"), "w") as f:
        f.write(text)
    shards = os.path.join(work, "shards")
    run([tokenize, "--tokenizer", "gpt2", "--tokenizer-dir", a.gpt2_dir, "--input", os.path.join(work, "t.txt"),
         "--val-fraction", "0", "--out", shards])
    with open(os.path.join(shards, "train_000000.bin"), "rb") as f:
        data = f.read()[256 * 4:]
    ids = [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)][1:]  # after the end-of-text
    check(tok.encode(text) == ids and tok.decode(ids) == text,
          f"transformers' GPT2Tokenizer from the export encodes as flextp does ({len(ids)} tokens)")
    check(tok.eos_token_id == 50256 and tok.model_max_length == 32, "its tokenizer config: <|endoftext|> = 50256, 32 positions")

    shutil.rmtree(work, ignore_errors=True)
    print("PASS" if not failures else f"FAIL: {len(failures)} check(s)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
