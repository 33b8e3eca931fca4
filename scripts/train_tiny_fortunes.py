#!/usr/bin/python3
"""Trains tiny-fortunes: a small Llama-architecture byte model on Debian's `fortunes` texts.

The model is the architecture of src/models/llama.h, computed the same way:
  RMSNorm  y = w * (x / sqrt(mean(x^2) + eps)), eps = 1e-5
  RoPE     Hugging Face rotate_half: element i < D/2 of a head pairs with element i + D/2,
           angle = pos * inv_freq[i] as an fp32 product, inv_freq = theta^(-2i/D) computed in
           float64 and rounded to fp32 (as LlamaConfig::RopeInvFreq + llama.cc do)
  SwiGLU   down(silu(gate(x)) * up(x)); no biases anywhere
  GQA      query head h uses KV head h // (H / Hkv)
  causal softmax attention with scale 1 / sqrt(D); separate (untied) lm_head
Tokens are ByteTokenizer's (src/models/byte_tokenizer.h): bytes 0..255, BOS 256, EOS 257, PAD 258.
Every fortune becomes [BOS, bytes..., EOS]; they are concatenated (in a seeded shuffled order)
and the model learns next-token prediction on random windows of CONTEXT tokens.

Writes OUT_DIR/{config.json, model.safetensors (fp32, Hugging Face tensor names),
train_log.txt}. Deterministic for a given torch build and thread count (fixed seeds, fixed
step count). Run it through scripts/train-tiny-fortunes.sh.
"""

import argparse
import json
import math
import os
import random
import struct
import sys
import time

import torch
import torch.nn.functional as F

FORTUNES_DIR = "/usr/share/games/fortunes"
# ASCII-art collections teach layout, not text: left out.
SKIPPED_FILES = {"art", "ascii-art"}

VOCAB = 259
BOS, EOS, PAD = 256, 257, 258

CONFIG = {
    "hidden_size": 256,
    "intermediate_size": 768,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 4,
    "head_dim": 64,
    "vocab_size": VOCAB,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "bos_token_id": BOS,
    "eos_token_id": EOS,
}


def hf_config_json(cfg, name="tiny-fortunes"):
    """The config.json LlamaConfig::FromHfConfigJson reads (a Hugging Face LlamaConfig)."""
    out = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "_name_or_path": name,
        **cfg,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "rope_scaling": None,
        "torch_dtype": "float32",
    }
    return json.dumps(out, indent=2) + "\n"


# ---------------------------------------------------------------------------------------------
# Model


class RMSNorm(torch.nn.Module):
    def __init__(self, width, eps):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(width))

    def forward(self, x):
        inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * (x * inv)


def rope_tables(cfg, positions):
    """cos, sin of shape (T, D/2) for integer positions (T,)."""
    d = cfg["head_dim"]
    theta = cfg["rope_theta"]
    inv64 = [theta ** (-(2.0 * i) / d) for i in range(d // 2)]  # Python floats: float64
    inv = torch.tensor(inv64, dtype=torch.float64).to(torch.float32)
    angle = positions.to(torch.float32)[:, None] * inv[None, :]  # fp32 product
    return torch.cos(angle), torch.sin(angle)


def apply_rope(x, cos, sin):
    """x (B, heads, T, D), rotate_half convention."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Layer(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, hd = cfg["hidden_size"], cfg["head_dim"]
        self.h, self.hkv, self.hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], hd
        f = cfg["intermediate_size"]
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)  # noqa: E731
        self.input_layernorm = RMSNorm(d, cfg["rms_norm_eps"])
        self.q_proj, self.k_proj = lin(d, self.h * hd), lin(d, self.hkv * hd)
        self.v_proj, self.o_proj = lin(d, self.hkv * hd), lin(self.h * hd, d)
        self.post_attention_layernorm = RMSNorm(d, cfg["rms_norm_eps"])
        self.gate_proj, self.up_proj, self.down_proj = lin(d, f), lin(d, f), lin(f, d)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        a = self.input_layernorm(x)
        q = self.q_proj(a).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(a).view(b, t, self.hkv, self.hd).transpose(1, 2)
        v = self.v_proj(a).view(b, t, self.hkv, self.hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = self.h // self.hkv
        k = k.repeat_interleave(rep, dim=1)  # query head h -> KV head h // rep
        v = v.repeat_interleave(rep, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        s = s.masked_fill(mask, float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        x = x + self.o_proj(o.transpose(1, 2).reshape(b, t, self.h * self.hd))
        m = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))


class TinyLlama(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg["hidden_size"]
        self.embed_tokens = torch.nn.Embedding(cfg["vocab_size"], d)
        self.layers = torch.nn.ModuleList([Layer(cfg) for _ in range(cfg["num_hidden_layers"])])
        self.norm = RMSNorm(d, cfg["rms_norm_eps"])
        self.lm_head = torch.nn.Linear(d, cfg["vocab_size"], bias=False)

    def init_weights(self, std=0.02):
        for name, p in self.named_parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, mean=0.0, std=std)
                if name.endswith(("o_proj.weight", "down_proj.weight")):
                    p.data.mul_(1.0 / math.sqrt(2 * self.cfg["num_hidden_layers"]))

    def forward(self, tokens):
        """tokens (B, T) from position 0 -> logits (B, T, V)."""
        t = tokens.shape[1]
        cos, sin = rope_tables(self.cfg, torch.arange(t))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))

    def hf_tensors(self):
        """name -> fp32 tensor, with Hugging Face LlamaForCausalLM names."""
        out = {"model.embed_tokens.weight": self.embed_tokens.weight}
        for i, layer in enumerate(self.layers):
            p = f"model.layers.{i}."
            out[p + "input_layernorm.weight"] = layer.input_layernorm.weight
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                out[p + f"self_attn.{n}.weight"] = getattr(layer, n).weight
            out[p + "post_attention_layernorm.weight"] = layer.post_attention_layernorm.weight
            for n in ("gate_proj", "up_proj", "down_proj"):
                out[p + f"mlp.{n}.weight"] = getattr(layer, n).weight
        out["model.norm.weight"] = self.norm.weight
        out["lm_head.weight"] = self.lm_head.weight
        return {k: v.detach().to(torch.float32).contiguous() for k, v in out.items()}

    def load_hf_tensors(self, tensors):
        own = self.hf_tensors()
        missing = sorted(set(own) - set(tensors))
        if missing:
            raise ValueError(f"missing tensors: {missing[:5]}")
        by_name = {}
        by_name["model.embed_tokens.weight"] = self.embed_tokens.weight
        for i, layer in enumerate(self.layers):
            p = f"model.layers.{i}."
            by_name[p + "input_layernorm.weight"] = layer.input_layernorm.weight
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                by_name[p + f"self_attn.{n}.weight"] = getattr(layer, n).weight
            by_name[p + "post_attention_layernorm.weight"] = layer.post_attention_layernorm.weight
            for n in ("gate_proj", "up_proj", "down_proj"):
                by_name[p + f"mlp.{n}.weight"] = getattr(layer, n).weight
        by_name["model.norm.weight"] = self.norm.weight
        by_name["lm_head.weight"] = self.lm_head.weight
        with torch.no_grad():
            for name, param in by_name.items():
                src = tensors[name]
                if tuple(src.shape) != tuple(param.shape):
                    raise ValueError(f"{name}: shape {tuple(src.shape)}, want {tuple(param.shape)}")
                param.copy_(src)


# ---------------------------------------------------------------------------------------------
# safetensors (F32 only): 8-byte little-endian header size, JSON header, raw data.


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = tensors[name].numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            if info["dtype"] != "F32":
                raise ValueError(f"{name}: dtype {info['dtype']}, only F32 is read here")
            lo, hi = info["data_offsets"]
            f.seek(base + lo)
            buf = bytearray(f.read(hi - lo))
            out[name] = torch.frombuffer(buf, dtype=torch.float32).reshape(info["shape"]).clone()
        return out


def load_model(out_dir):
    with open(os.path.join(out_dir, "config.json")) as f:
        full = json.load(f)
    cfg = {k: full[k] for k in CONFIG}
    model = TinyLlama(cfg)
    model.load_hf_tensors(read_safetensors(os.path.join(out_dir, "model.safetensors")))
    model.eval()
    return model


# ---------------------------------------------------------------------------------------------
# Data


def read_fortunes(root=FORTUNES_DIR):
    """Every fortune (bytes, trailing newline kept), files in sorted order."""
    names = sorted(n for n in os.listdir(root)
                   if not n.endswith((".dat", ".u8")) and n not in SKIPPED_FILES
                   and os.path.isfile(os.path.join(root, n)))
    out = []
    for name in names:
        with open(os.path.join(root, name), "rb") as f:
            text = f.read()
        for part in text.split(b"\n%\n"):
            part = part.strip(b"%\n")
            if part.strip():
                out.append(part + b"\n")
    return names, out


def to_stream(fortunes):
    ids = []
    for text in fortunes:
        ids.append(BOS)
        ids.extend(text)
        ids.append(EOS)
    return torch.tensor(ids, dtype=torch.long)


def split(fortunes, seed):
    rng = random.Random(seed)
    order = list(range(len(fortunes)))
    rng.shuffle(order)
    n_val = max(1, len(order) // 20)  # 5% held out, whole fortunes
    val = [fortunes[i] for i in order[:n_val]]
    train = [fortunes[i] for i in order[n_val:]]
    return train, val


# ---------------------------------------------------------------------------------------------
# Training


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * p)))


@torch.no_grad()
def evaluate(model, stream, ctx, batch):
    """Mean next-token loss (nats/token) over consecutive non-overlapping windows."""
    model.eval()
    n = (len(stream) - 1) // ctx
    total, count = 0.0, 0
    for start in range(0, n, batch):
        rows = range(start, min(n, start + batch))
        x = torch.stack([stream[r * ctx:r * ctx + ctx] for r in rows])
        y = torch.stack([stream[r * ctx + 1:r * ctx + ctx + 1] for r in rows])
        logits = model(x)
        total += F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), reduction="sum").item()
        count += y.numel()
    model.train()
    return total / count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--steps", type=int, default=1400)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1234)
    # One thread: on the shared 2-core machine, 2 OpenMP threads spun against other jobs and
    # measured 1.5-10x slower per step than 1 thread (0.66 s vs 1.0 s passive / 6.4 s active,
    # batch 8 x 256).
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--eval-every", type=int, default=350)
    ap.add_argument("--bench", type=int, default=0, help="time this many steps and exit")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    ctx = CONFIG["max_position_embeddings"]
    t0 = time.time()

    files, fortunes = read_fortunes()
    train_f, val_f = split(fortunes, args.seed)
    random.Random(args.seed + 1).shuffle(train_f)
    train, val = to_stream(train_f), to_stream(val_f)
    val = val[: (len(val) - 1) // ctx * ctx + 1]

    model = TinyLlama(CONFIG)
    model.init_weights()
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(args.seed + 2)

    os.makedirs(args.out, exist_ok=True)
    log_lines = []

    def log(line):
        print(line, flush=True)
        log_lines.append(line)

    log(f"tiny-fortunes training log (scripts/train_tiny_fortunes.py)")
    log(f"torch {torch.__version__}, python {sys.version.split()[0]}, "
        f"threads {torch.get_num_threads()}, seed {args.seed}")
    log(f"corpus: {FORTUNES_DIR} ({len(files)} files: {' '.join(files)}); skipped: "
        f"{' '.join(sorted(SKIPPED_FILES))}")
    log(f"fortunes: {len(fortunes)} ({len(train_f)} train, {len(val_f)} validation, whole "
        f"fortunes held out); tokens: {len(train)} train, {len(val)} validation")
    log(f"config: {json.dumps(CONFIG, sort_keys=True)}")
    log(f"parameters: {n_params}")
    log(f"steps {args.steps}, batch {args.batch} x {ctx} tokens, AdamW lr {args.lr} "
        f"(warmup {args.warmup}, cosine to 10%), betas (0.9, 0.95), weight decay 0.1, "
        f"grad clip 1.0")

    steps = args.bench or args.steps
    model.train()
    window_loss, window_n = 0.0, 0
    t_train = time.time()
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, args.warmup)
        starts = torch.randint(0, len(train) - ctx - 1, (args.batch,), generator=gen)
        x = torch.stack([train[s:s + ctx] for s in starts.tolist()])
        y = torch.stack([train[s + 1:s + ctx + 1] for s in starts.tolist()])
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        window_loss += loss.item()
        window_n += 1
        if (step + 1) % args.log_every == 0 or step + 1 == steps:
            log(f"step {step + 1:5d}  train loss {window_loss / window_n:.4f} nats/token  "
                f"lr {opt.param_groups[0]['lr']:.2e}  {time.time() - t_train:.0f} s")
            window_loss, window_n = 0.0, 0
        if not args.bench and ((step + 1) % args.eval_every == 0 and step + 1 < steps):
            v = evaluate(model, val, ctx, 32)
            log(f"step {step + 1:5d}  val loss {v:.4f} nats/token ({v / math.log(2):.3f} bits/token)")
    if args.bench:
        print(f"bench: {(time.time() - t_train) / steps:.3f} s/step")
        return

    v = evaluate(model, val, ctx, 32)
    wall = time.time() - t0
    log(f"final: val loss {v:.4f} nats/token = {v / math.log(2):.4f} bits/byte (tokens are "
        f"bytes, plus one EOS per fortune), {steps} steps, "
        f"{steps * args.batch * ctx} training tokens")
    log(f"wall time {wall:.0f} s ({wall / 60:.1f} min) on {torch.get_num_threads()} threads")

    write_safetensors(os.path.join(args.out, "model.safetensors"), model.hf_tensors())
    with open(os.path.join(args.out, "config.json"), "w") as f:
        f.write(hf_config_json(CONFIG))
    with open(os.path.join(args.out, "train_log.txt"), "w") as f:
        f.write("\n".join(log_lines) + "\n")


if __name__ == "__main__":
    main()
