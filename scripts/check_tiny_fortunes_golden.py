#!/usr/bin/python3
"""Writes data/llama/tiny-fortunes/golden.json: what torch computes with the trained model, for
the C++ test (src/models/tiny_fortunes_test.cc) to compare LlamaModel against.

Per prompt: the prompt ids ([BOS] + UTF-8 bytes, as ByteTokenizer::Encode), 32 greedy tokens
(argmax of the last position's logits, lowest index on ties, the whole sequence recomputed each
step; EOS does not stop it), the runner-up token and the gap between the two largest logits at
each greedy step (so the test can tell a near-tie), and the full-sequence logits of prompt + greedy tokens at a few
positions. Logits are written with 9 significant digits (exact fp32).
"""

import argparse
import hashlib
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_tiny_fortunes as tf  # noqa: E402

PROMPTS = [
    "The ",
    "Q: Why did the programmer",
    "A wise man once said",
    "Linux is",
]
NEW_TOKENS = 32


def encode(text):
    return [tf.BOS] + list(text.encode("utf-8"))


def decode(ids):
    return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


@torch.no_grad()
def greedy(model, ids, n):
    seq, out, seconds, gaps = list(ids), [], [], []
    for _ in range(n):
        logits = model(torch.tensor([seq]))[0, -1]
        top = torch.topk(logits, 2)
        token = int(torch.argmax(logits))  # first index of the maximum
        a, b = int(top.indices[0]), int(top.indices[1])
        out.append(token)
        seconds.append(b if a == token else a)
        gaps.append(float(top.values[0] - top.values[1]))
        seq.append(token)
    return out, seconds, gaps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="the tiny-fortunes directory")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = tf.load_model(args.model)
    with open(os.path.join(args.model, "model.safetensors"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()

    cases = []
    for prompt in PROMPTS:
        ids = encode(prompt)
        tokens, seconds, gaps = greedy(model, ids, NEW_TOKENS)
        seq = ids + tokens[:-1]  # every position whose logits chose a greedy token
        with torch.no_grad():
            logits = model(torch.tensor([seq]))[0]
        n = len(seq)
        positions = sorted(set([0, len(ids) - 1, n - 1] + list(range(3, n, 9))))
        cases.append({
            "prompt": prompt,
            "prompt_ids": ids,
            "greedy_tokens": tokens,
            "greedy_second_tokens": seconds,
            "greedy_top2_gap": [float(f"{g:.9g}") for g in gaps],
            "greedy_text": decode(tokens),
            "sequence": seq,
            "positions": positions,
            "logits": [[float(f"{x:.9g}") for x in logits[p].tolist()] for p in positions],
        })
        print(f"{prompt!r} -> {decode(tokens)!r}  (min top-2 gap {min(gaps):.3g})")

    out = {
        "what": "torch reference outputs of tiny-fortunes (scripts/check_tiny_fortunes_golden.py)",
        "torch_version": torch.__version__,
        "model_safetensors_sha256": digest,
        "new_tokens": NEW_TOKENS,
        "cases": cases,
    }
    path = os.path.join(args.model, "golden.json")
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
