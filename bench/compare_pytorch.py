#!/usr/bin/env python3
"""fusecal against PyTorch on the same GPU, same shapes, same definitions of the
unfused chain and the fused form (the GPU targets).

    bench/compare_pytorch.py FUSECAL [--out DIR] [--max-time S] [--set core|sites|all] [--only NAME[,NAME]]
                             [--kernel K]

Runs `FUSECAL run --device cuda` on the target problems (one JSON document,
DIR/targets.json), then times PyTorch eagerly on the same shapes with CUDA events:
warm-up, then samples of back-to-back calls (each sample at least ~2 ms, like
fusecal's eager samples), the median per-call time of at least 30 samples. Prints
fused and unfused latency of both, the ratio fusecal/PyTorch, each target and
whether it is met, and writes the table to DIR/compare.md (and DIR/compare.json).

Targets come in two sets (--set): core, the first targets (linear, conv_bn_relu,
attention, decode), and sites, the newer fusion sites (norms, rope, gated and GELU-
prologue linears, depthwise and residual convs) against PyTorch's fastest eager form
of each; the sites' memory-bound rows also give fusecal's fused form as a share of
its bandwidth ceiling (the record's pct_peak_bandwidth). Where two backends run a
problem (gelu_linear, linear_swiglu: cuda.cublas and cuda.custom's own GEMM),
the record with the fastest fused form stands for fusecal, and the row names it.

PyTorch's variants, as fusecal defines them:
  linear     unfused: x @ W.T, + b, relu (3 kernels)   fused: torch._addmm_activation
             (linear_bias: unfused mm + add, fused addmm)
  conv       unfused: conv2d(x, W, b) -> batch_norm (eval) [-> + r] -> relu
             fused: conv2d(x, W_folded, b_folded) [-> add_ r] -> relu_ (BN folded, the
             tail in place), channels_last; groups = c for the depthwise conv
  gated      unfused: x @ W.T -> silu(gate half) -> * up half
             fused: x @ W.T -> silu_ in place on the gate half -> mul
  prologue   unfused: gelu_tanh(x) -> @ W.T -> + b     fused: gelu_tanh(x) -> addmm
  norms      add_layernorm: add -> layer_norm (PyTorch has no fused form: both alike)
             add_rmsnorm: unfused add -> pow, mean, rsqrt, mul, mul; fused add ->
             F.rms_norm where this PyTorch has it, else the fewest eager passes
             qk_norm_rope: unfused rms norm -> q*cos + rotate_half(q)*sin; fused
             F.rms_norm (or the passes) -> the rotation on the halves in place
  attention  unfused: Q @ K^T -> * 1/sqrt(d) -> softmax -> @ V
             fused: F.scaled_dot_product_attention, timed as PyTorch dispatches it
             (the backend it chose is recorded: torch._fused_sdp_choice) and under
             torch.nn.attention.sdpa_kernel with each of CUDNN_ATTENTION,
             FLASH_ATTENTION and EFFICIENT_ATTENTION alone (a backend that refuses
             the problem is recorded with its reason). "SDPA" in the attention
             targets is the faster of cuDNN attention and FlashAttention, each timed
             on its own; the record keeps every time, so the comparison has one
             meaning whatever PyTorch's dispatch picks.
  Problems with grouped-query heads or a key/value length of their own (hkv, skv; the
  decode target below) compare against: unfused, K and V repeated over each group's
  query heads (repeat_interleave(h/hkv, dim=1)) as eager GQA code does, and the causal
  mask aligned at the end (query i sees keys j <= i + skv - s); fused, SDPA on K and V
  repeated once outside the timing (enable_gqa=True in PyTorch 2.5+ takes them as they
  are) and that mask as attn_mask where skv != s (is_causal aligns it at the start).
  A CPU comparison uses the same definitions on CPU tensors with
  torch.set_num_threads(fusecal's --threads); PyTorch 1.13 (Debian's) has no
  scaled_dot_product_attention, so there only the unfused chain (matmul -> softmax ->
  matmul, repeat_interleave for GQA) is compared.
fp32 runs with TF32 off in PyTorch (its default for matmul; set for cuDNN too), as
in fusecal's fp32. --kernel picks fusecal's fused attention kernel (run --kernel:
reference or flash2); the results name it.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGETS = [
    # name, fusecal problem, what the target compares, threshold
    ("linear_bf16_big", "linear_bias_relu:m=8192,k=4096,n=4096,dtype=bf16",
     "fused fusecal / torch._addmm_activation <= 1.0", 1.0),
    ("linear_fp32_small", "linear_bias:m=128,k=512,n=512,dtype=fp32",
     "fused fusecal / min(torch addmm, mm + add) <= 1.0", 1.0),
    ("conv_bn_relu_bf16_nhwc", "conv_bn_relu:n=32,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=bf16",
     "fused fusecal / torch folded conv + relu <= 1.0", 1.0),
    ("attention_bf16_4096", "attention:b=4,h=16,s=4096,d=128,dtype=bf16",
     "fused fusecal TFLOP/s >= 0.8 x torch SDPA", 0.8),
    ("attention_fp32_1024", "attention:b=8,h=16,s=1024,d=64,dtype=fp32",
     "fused fusecal / torch SDPA <= 1.0", 1.0),
    # decode, LLaMA-3-8B's heads against a 4096-token cache: cuda.custom's split-KV kernel
    ("attention_decode_bf16", "attention:b=4,h=32,hkv=8,s=1,skv=4096,d=128,dtype=bf16",
     "fused fusecal / torch SDPA <= 1.0", 1.0),
]

FASTEST = "fused fusecal / torch fastest eager form <= 1.0"
# the newer fusion sites at model shapes: LLaMA-3-8B (hidden 4096, 32 heads of 128, FFN
# 14336) at 2048-4096 tokens, BERT-base (768, FFN 3072) at 32 x 512 tokens, MobileNetV2's
# 144-channel depthwise layer and ResNet-50's first stage end at batch 32
SITES = [
    ("add_rmsnorm_bf16", "add_rmsnorm:m=4096,n=4096,dtype=bf16", FASTEST, 1.0),
    ("add_layernorm_bf16", "add_layernorm:m=16384,n=768,dtype=bf16", FASTEST, 1.0),
    ("qk_norm_rope_bf16", "qk_norm_rope:m=4096,h=32,d=128,dtype=bf16", FASTEST, 1.0),
    ("linear_swiglu_bf16", "linear_swiglu:m=2048,k=4096,n=14336,dtype=bf16", FASTEST, 1.0),
    ("gelu_linear_bf16", "gelu_linear:m=16384,k=3072,n=768,dtype=bf16", FASTEST, 1.0),
    ("dwconv_bn_relu_bf16", "dwconv_bn_relu:n=32,c=144,h=56,w=56,k=144,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=bf16",
     FASTEST, 1.0),
    ("conv_bn_add_relu_bf16", "conv_bn_add_relu:n=32,c=64,h=56,w=56,k=256,r=1,s=1,layout=nhwc,dtype=bf16", FASTEST,
     1.0),
]
SETS = {"core": TARGETS, "sites": SITES, "all": TARGETS + SITES}
MEMORY_BOUND = ("add_rmsnorm", "add_layernorm", "qk_norm_rope")


def parse_problem(s):
    pat, _, rest = s.partition(":")
    kv = dict(p.split("=") for p in rest.split(","))
    return pat, kv


def run_fusecal(binary, out, max_time, names, kernel, targets):
    cmd = [binary, "run", "--device", "cuda", "--out", str(out), "--quiet", "--seed", "11",
           "--max-time", str(max_time), "--min-time", "0.5", "--rounds", "2", "--kernel", kernel]
    for name, prob, _, _ in targets:
        if name in names:
            cmd += ["--shape", prob]
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.time()
    r = subprocess.run(cmd)
    print(f"fusecal run: exit {r.returncode}, {time.time() - t0:.1f} s", flush=True)
    if not out.exists():
        sys.exit(f"compare_pytorch: fusecal wrote no {out}")
    with open(out) as f:
        doc = json.load(f)
    # where two backends ran a problem (gelu_linear, linear_swiglu: cuda.cublas and cuda.custom), the
    # one whose fused form is fastest stands for fusecal, as a partitioner would pick it
    recs = {}
    for r in doc["records"]:
        prev = recs.get(r["problem"])
        if prev is None or (r["status"] == "ok" and (prev["status"] != "ok" or fused_ms(r) < fused_ms(prev))):
            recs[r["problem"]] = r
    return doc, recs


def fused_ms(r):
    return r["variants"]["fused"]["latency_ms"]["median"]


def find_record(recs, prob):
    pat, kv = parse_problem(prob)
    for r in recs.values():
        if r["pattern"] != pat or r["dtype"] != kv.get("dtype", "fp32"):
            continue
        dims = r["dims"]
        if all(str(int(dims[k])) == v for k, v in kv.items() if k in dims):
            if "layout" in kv and r["layout"] != kv["layout"]:
                continue
            return r
    return None


# ------------------------------------------------------------------ PyTorch

def torch_time(torch, fn, target_s=0.002, min_samples=30, max_s=3.0):
    """Median per-call ms over samples of back-to-back calls, timed with CUDA events."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    one = max(s.elapsed_time(e) * 1e-3, 1e-6)
    batch = max(1, min(100000, math.ceil(target_s / one)))
    for _ in range(batch):  # warm-up at the batch size
        fn()
    torch.cuda.synchronize()
    ms = []
    t0 = time.time()
    while len(ms) < min_samples or (time.time() - t0 < 0.5 and len(ms) < 1000):
        s.record()
        for _ in range(batch):
            fn()
        e.record()
        e.synchronize()
        ms.append(s.elapsed_time(e) / batch)
        if time.time() - t0 > max_s and len(ms) >= 10:
            break
    return statistics.median(ms)


def torch_linear(torch, kv, dt, relu):
    M, K, N = int(kv["m"]), int(kv["k"]), int(kv["n"])
    x = torch.rand(M, K, device="cuda", dtype=dt) * 2 - 1
    W = (torch.rand(N, K, device="cuda", dtype=dt) * 2 - 1) * (1.5 / math.sqrt(K))
    b = torch.rand(N, device="cuda", dtype=dt) - 0.25
    if relu:
        fused = lambda: torch._addmm_activation(b, x, W.t(), use_gelu=False)
        unfused = lambda: torch.relu(torch.add(torch.mm(x, W.t()), b))
        names = ("x @ W.T -> + b -> relu", "torch._addmm_activation")
    else:
        fused = lambda: torch.addmm(b, x, W.t())
        unfused = lambda: torch.add(torch.mm(x, W.t()), b)
        names = ("mm -> + b", "addmm")
    return torch_time(torch, unfused), torch_time(torch, fused), names, {}


def torch_conv(torch, kv, dt, pat="conv_bn_relu"):
    F = torch.nn.functional
    n, c, h, w, k = (int(kv[i]) for i in ("n", "c", "h", "w", "k"))
    r, s = int(kv.get("r", 3)), int(kv.get("s", 3))
    stride, pad = int(kv.get("stride", 1)), int(kv.get("pad", 0))
    g = int(kv.get("g", c if pat == "dwconv_bn_relu" else 1))
    cl = torch.channels_last if kv.get("layout", "nhwc") == "nhwc" else torch.contiguous_format
    x = (torch.rand(n, c, h, w, device="cuda", dtype=dt) * 2 - 1).to(memory_format=cl)
    W = ((torch.rand(k, c // g, r, s, device="cuda", dtype=dt) * 2 - 1)
         * (1.5 / math.sqrt(c // g * r * s))).to(memory_format=cl)
    b = torch.rand(k, device="cuda", dtype=dt) - 0.25
    gam = torch.rand(k, device="cuda", dtype=dt) + 0.5
    be = torch.rand(k, device="cuda", dtype=dt) - 0.25
    mu = (torch.rand(k, device="cuda", dtype=dt) - 0.5) * 0.4
    var = torch.rand(k, device="cuda", dtype=dt) + 0.25
    inv = (gam.float() / torch.sqrt(var.float() + 1e-5))
    Wf = (W.float() * inv.view(-1, 1, 1, 1)).to(dt).to(memory_format=cl)
    bf = ((b.float() - mu.float()) * inv + be.float()).to(dt)
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    res = ((torch.rand(n, k, p, q, device="cuda", dtype=dt) - 0.5).to(memory_format=cl)
           if pat == "conv_bn_add_relu" else None)

    def unfused():
        y = F.batch_norm(F.conv2d(x, W, b, stride=stride, padding=pad, groups=g), mu, var, gam, be, training=False,
                         eps=1e-5)
        return torch.relu(y + res if res is not None else y)

    def fused():
        y = F.conv2d(x, Wf, bf, stride=stride, padding=pad, groups=g)
        if res is not None:
            y.add_(res)
        return y.relu_()

    add = " -> + r" if res is not None else ""
    return torch_time(torch, unfused), torch_time(torch, fused), (f"conv2d -> batch_norm{add} -> relu",
                                                                   f"conv2d(BN folded){add.replace('+', 'add_')} "
                                                                   "-> relu_"), {}


def fastest(torch, forms):
    """The fastest of a problem's fused candidates {name: fn} that agree with the first
    (a form this PyTorch lacks raises and is left out): (ms, name)."""
    ref, best = None, None
    for name, fn in forms.items():
        try:
            out = fn()
        except Exception as ex:  # noqa: BLE001 (not in this PyTorch)
            print(f"  ({name} unavailable: {str(ex).splitlines()[0][:120] if str(ex) else type(ex).__name__})")
            continue
        out = (out[0] if isinstance(out, tuple) else out).float().clone()  # forms may share an output
        if ref is None:
            ref = out
        elif float((out - ref).norm() / max(float(ref.norm()), 1e-30)) > 3e-2:
            print(f"  ({name} left out: differs from the first form)")
            continue
        t = torch_time(torch, fn)
        if best is None or t < best[0]:
            best = (t, name)
    return best


def torch_gated(torch, kv, dt):
    F = torch.nn.functional
    M, K, N = int(kv["m"]), int(kv["k"]), int(kv["n"])
    x = torch.rand(M, K, device="cuda", dtype=dt) * 2 - 1
    W = (torch.rand(2 * N, K, device="cuda", dtype=dt) * 2 - 1) * (1.5 / math.sqrt(K))

    def unfused():
        t = x @ W.t()
        return F.silu(t[:, :N]) * t[:, N:]

    def inplace():
        t = x @ W.t()
        g = t[:, :N]
        return F.silu(g, inplace=True).mul_(t[:, N:])

    tf, name = fastest(torch, {"mm -> silu_ -> mul_": inplace, "mm -> silu -> mul": unfused})
    return torch_time(torch, unfused), tf, ("mm -> silu -> mul", name), {}


def torch_prologue(torch, kv, dt):
    F = torch.nn.functional
    M, K, N = int(kv["m"]), int(kv["k"]), int(kv["n"])
    x = torch.rand(M, K, device="cuda", dtype=dt) * 2 - 1
    W = (torch.rand(N, K, device="cuda", dtype=dt) * 2 - 1) * (1.5 / math.sqrt(K))
    b = torch.rand(N, device="cuda", dtype=dt) - 0.25
    unfused = lambda: F.gelu(x, approximate="tanh") @ W.t() + b
    tf, name = fastest(torch, {"gelu -> linear (addmm)": lambda: F.linear(F.gelu(x, approximate="tanh"), W, b),
                               "gelu -> mm -> + b": unfused})
    return torch_time(torch, unfused), tf, ("gelu -> mm -> + b", name), {}


def rms(torch, x, gam, eps, dt):
    """x's RMS norm over its last dim, times gam, as eager code writes it (the mean in fp32)."""
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(dt) * gam


def torch_norm(torch, pat, kv, dt):
    F = torch.nn.functional
    if pat == "qk_norm_rope":
        M, H, D = int(kv["m"]), int(kv["h"]), int(kv["d"])
        half, eps = D // 2, 1e-6
        q = torch.rand(M, H, D, device="cuda", dtype=dt) * 2 - 1
        gam = torch.rand(D, device="cuda", dtype=dt) + 0.5
        pos = torch.arange(M, device="cuda", dtype=torch.float64).view(M, 1)
        ang = pos * torch.pow(10000.0, -2.0 * torch.arange(half, device="cuda", dtype=torch.float64) / D)
        cos, sin = ang.cos().to(dt).view(M, 1, half), ang.sin().to(dt).view(M, 1, half)
        cosf, sinf = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
        y = torch.empty_like(q)

        def unfused():
            z = rms(torch, q, gam, eps, dt)
            return z * cosf + torch.cat([-z[..., half:], z[..., :half]], -1) * sinf

        def rotate(z):
            lo, hi = z[..., :half], z[..., half:]
            torch.mul(lo, cos, out=y[..., :half]).addcmul_(hi, sin, value=-1)
            torch.mul(hi, cos, out=y[..., half:]).addcmul_(lo, sin)
            return y

        forms = {"rms_norm -> rotation in place": lambda: rotate(F.rms_norm(q, (D,), gam, eps)),
                 "eager passes -> rotation in place": lambda: rotate(rms(torch, q, gam, eps, dt)),
                 "unfused": unfused}
        tf, name = fastest(torch, forms)
        return torch_time(torch, unfused), tf, ("rms norm -> q*cos + rotate_half(q)*sin", name), {}
    M, N = int(kv["m"]), int(kv["n"])
    x = torch.rand(M, N, device="cuda", dtype=dt) * 2 - 1
    r = torch.rand(M, N, device="cuda", dtype=dt) * 2 - 1
    gam = torch.rand(N, device="cuda", dtype=dt) + 0.5
    beta = torch.rand(N, device="cuda", dtype=dt) - 0.5
    if pat == "add_layernorm":
        ln = lambda: F.layer_norm(x + r, (N,), gam, beta, 1e-5)
        t = torch_time(torch, ln)
        return t, t, ("add -> layer_norm", "add -> layer_norm (no fused form)"), {}
    eps = 1e-6

    def unfused():
        h = x + r
        return rms(torch, h, gam, eps, dt), h

    def with_rms_norm():
        h = x + r
        return F.rms_norm(h, (N,), gam, eps), h

    tf, name = fastest(torch, {"add -> rms_norm": with_rms_norm, "add -> eager passes": unfused})
    return torch_time(torch, unfused), tf, ("add -> pow, mean, rsqrt, mul, mul", name), {}


SDPA_BACKENDS = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION")


def sdpa_choice(torch, q, k, v, causal):
    """The SDPA backend PyTorch's dispatch picks for these inputs, by name."""
    try:
        from torch.nn.attention import SDPBackend
        return SDPBackend(torch._fused_sdp_choice(q, k, v, None, 0.0, causal)).name
    except Exception as ex:  # noqa: BLE001 (a private API: say why it is unknown)
        return f"unknown ({type(ex).__name__}: {ex})"[:200]


def time_sdpa_backends(torch, fused):
    """Median ms of fused() under each SDPA backend alone, or why it did not run."""
    times, why = {}, {}
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as ex:
        return times, {b: f"torch.nn.attention.sdpa_kernel unavailable: {ex}" for b in SDPA_BACKENDS}
    for name in SDPA_BACKENDS:
        try:
            with sdpa_kernel(getattr(SDPBackend, name)):
                times[name] = torch_time(torch, fused)
        except Exception as ex:  # noqa: BLE001 (a backend refusing these inputs)
            why[name] = f"{type(ex).__name__}: {str(ex).splitlines()[0] if str(ex) else ''}"[:300]
    return times, why


def torch_attention(torch, kv, dt):
    F = torch.nn.functional
    B, H, S, D = (int(kv[i]) for i in ("b", "h", "s", "d"))
    HKV, SKV = int(kv.get("hkv", H)), int(kv.get("skv", S))
    causal = kv.get("causal", "0") == "1"
    g = H // HKV
    q = torch.rand(B, H, S, D, device="cuda", dtype=dt) * 4 - 2
    k = torch.rand(B, HKV, SKV, D, device="cuda", dtype=dt) * 4 - 2
    v = torch.rand(B, HKV, SKV, D, device="cuda", dtype=dt) * 2 - 1
    scale = 1.0 / math.sqrt(D)
    # True where masked: key j > query i + (skv - s)
    mask = torch.ones(S, SKV, device="cuda", dtype=torch.bool).triu(SKV - S + 1) if causal else None
    rep = (lambda t: t.repeat_interleave(g, dim=1)) if g > 1 else (lambda t: t)

    def unfused():
        s = torch.matmul(q, rep(k).transpose(-1, -2))
        s = s * scale
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        return torch.matmul(torch.softmax(s, dim=-1), rep(v))

    # SDPA on as many key/value heads as query heads (repeated once, outside the timing);
    # causal with skv != s as an explicit mask aligned at the end
    kr, vr = rep(k), rep(v)
    sdpa_mask = ~mask if causal and SKV != S else None
    is_causal = causal and SKV == S
    fused = lambda: F.scaled_dot_product_attention(q, kr, vr, attn_mask=sdpa_mask, is_causal=is_causal)
    extra = {"sdpa_dispatch": sdpa_choice(torch, q, kr, vr, causal), "sdpa_dispatch_ms": torch_time(torch, fused)}
    extra["sdpa_ms"], extra["sdpa_refused"] = time_sdpa_backends(torch, fused)
    best = [extra["sdpa_ms"][b] for b in ("CUDNN_ATTENTION", "FLASH_ATTENTION") if b in extra["sdpa_ms"]]
    # SDPA as the targets mean it: the faster of cuDNN attention and FlashAttention;
    # PyTorch's own dispatch where neither takes the problem (fp32)
    ref = min(best) if best else extra["sdpa_dispatch_ms"]
    extra["sdpa_reference"] = (min((b for b in ("CUDNN_ATTENTION", "FLASH_ATTENTION") if b in extra["sdpa_ms"]),
                                   key=lambda b: extra["sdpa_ms"][b]) if best else
                               f"dispatch ({extra['sdpa_dispatch']})")
    return torch_time(torch, unfused), ref, ("matmul -> scale -> softmax -> matmul",
                                             f"scaled_dot_product_attention [{extra['sdpa_reference']}]"), extra


def run_torch(prob):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    pat, kv = parse_problem(prob)
    dt = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[kv.get("dtype", "fp32")]
    if kv.get("dtype") == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    with torch.no_grad():
        if pat == "linear_swiglu":
            return torch_gated(torch, kv, dt)
        if pat == "gelu_linear":
            return torch_prologue(torch, kv, dt)
        if pat.startswith("linear"):
            return torch_linear(torch, kv, dt, relu=pat == "linear_bias_relu")
        if "conv" in pat:
            return torch_conv(torch, kv, dt, pat)
        if pat in MEMORY_BOUND:
            return torch_norm(torch, pat, kv, dt)
        return torch_attention(torch, kv, dt)


def attention_flops(kv):
    B, H, S, D = (int(kv[i]) for i in ("b", "h", "s", "d"))
    SKV = int(kv.get("skv", S))
    L = S * (SKV - S) + S * (S + 1) / 2 if kv.get("causal", "0") == "1" else S * SKV
    return 4.0 * B * H * L * D


def target_value(name, thr, ff, tu, tf, kv):
    """A target's value, whether it is met and what to add to its description; ff is
    fusecal's fused time, tu and tf PyTorch's unfused and fused (ms)."""
    if name == "linear_fp32_small":
        ratio = ff / min(tf, tu)
        return ratio, ratio <= thr, ""
    if name == "attention_bf16_4096":
        fl = attention_flops(kv)
        ratio = tf / ff  # throughput ratio fusecal / torch
        return ratio, ratio >= thr, f" (torch {fl / tf / 1e9:.0f} TFLOP/s, fusecal {fl / ff / 1e9:.0f} TFLOP/s)"
    ratio = ff / tf
    return ratio, ratio <= thr, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fusecal")
    ap.add_argument("--out", default="results/gpu")
    ap.add_argument("--max-time", type=float, default=2.0, help="fusecal's --max-time per variant (s)")
    ap.add_argument("--set", default="core", choices=sorted(SETS), help="which targets (default core)")
    ap.add_argument("--only", default="", help="comma-separated target names (of the set)")
    ap.add_argument("--kernel", default="reference", choices=("reference", "flash2"),
                    help="fusecal's fused attention kernel (run --kernel)")
    a = ap.parse_args()
    targets = SETS[a.set]
    names = set(a.only.split(",")) if a.only else {t[0] for t in targets}
    unknown = names - {t[0] for t in targets}
    if unknown:
        sys.exit(f"compare_pytorch: no target {', '.join(sorted(unknown))} in the set '{a.set}'")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    doc, recs = run_fusecal(a.fusecal, out / "targets.json", a.max_time, names, a.kernel, targets)
    gpu = doc.get("host", {}).get("devices", {}).get("cuda", {}).get("name", "?")
    try:
        import torch
        tv = f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()})"
    except Exception as ex:  # noqa: BLE001
        sys.exit(f"compare_pytorch: PyTorch is not importable here: {ex}")
    rows, results = [], []
    for name, prob, what, thr in targets:
        if name not in names:
            continue
        r = find_record(recs, prob)
        pat, kv = parse_problem(prob)
        try:
            tu, tf, tnames, extra = run_torch(prob)
        except Exception as ex:  # noqa: BLE001
            tu = tf = float("nan")
            tnames, extra = (f"failed: {ex}", ""), {}
        if r is None or r["status"] != "ok":
            why = "no record" if r is None else f"{r['status']}: {r.get('reason', '')}"
            fu = ff = fug = ffg = float("nan")
        else:
            why = ""
            v = r["variants"]
            fu, ff = v["unfused"]["latency_ms"]["median"], v["fused"]["latency_ms"]["median"]
            fug = v["unfused"].get("latency_graph_ms", {}).get("median", float("nan"))
            ffg = v["fused"].get("latency_graph_ms", {}).get("median", float("nan"))
        ratio, met, more = target_value(name, thr, ff, tu, tf, kv)
        what += more
        if not why:
            what += f" (fusecal: {r['backend']})"
        if pat in MEMORY_BOUND and not why:
            what += f" (fusecal fused {r['variants']['fused'].get('pct_peak_bandwidth', float('nan')):.0f} % of its " \
                    "bandwidth ceiling)"
        if extra:
            what += (f" [SDPA = {extra['sdpa_reference']}; dispatch picks {extra['sdpa_dispatch']}: "
                     f"{extra['sdpa_dispatch_ms']:.4g} ms; "
                     + ", ".join(f"{b} {t:.4g} ms" for b, t in extra["sdpa_ms"].items())
                     + "".join(f"; {b} refused" for b in extra["sdpa_refused"]) + "]")
        res = dict(name=name, problem=prob, fusecal_unfused_ms=fu, fusecal_fused_ms=ff, fusecal_unfused_graph_ms=fug,
                   fusecal_fused_graph_ms=ffg, torch_unfused_ms=tu, torch_fused_ms=tf, ratio_fused=ff / tf,
                   ratio_unfused=fu / tu, target=what, target_value=ratio, met=bool(met), torch_unfused=tnames[0],
                   torch_fused=tnames[1], note=why, torch_sdpa=extra or None,
                   fusecal_kernel=a.kernel if pat in ("attention", "qk_softmax") else None,
                   fusecal_fused_impl=r["variants"]["fused"]["impl"] if r and r["status"] == "ok" else "",
                   fusecal_backend=r["backend"] if r else None)
        results.append(res)
        rows.append(f"| {name} | {fu:.4g} | {ff:.4g} | {tu:.4g} | {tf:.4g} | {ff / tf:.3f} | {fu / tu:.3f} | "
                    f"{what}: {ratio:.3f} | {'yes' if met else 'NO'}{(' (' + why + ')') if why else ''} |")
    head = [f"# fusecal vs PyTorch on {gpu}", "",
            f"{tv}; fusecal {doc['tool']['version']} ({doc['tool']['git_revision']}), attention kernel {a.kernel}. "
            "Eager latencies, median ms per call; ratio = fusecal / PyTorch (lower is better). Attention's torch "
            "fused time is the faster of cuDNN attention and FlashAttention, each timed alone (sdpa_kernel); the "
            "target cell lists every SDPA backend's time and the one PyTorch's dispatch picks.", "",
            "| target | fusecal unfused | fusecal fused | torch unfused | torch fused | ratio fused | ratio unfused | "
            "target: value | met |",
            "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    text = "\n".join(head + rows) + "\n"
    print(text)
    (out / "compare.md").write_text(text)
    (out / "compare.json").write_text(json.dumps({"gpu": gpu, "torch": tv, "results": results}, indent=2,
                                                 default=lambda o: None) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
