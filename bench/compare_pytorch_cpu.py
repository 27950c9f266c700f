#!/usr/bin/env python3
"""fusecal against PyTorch on the CPU: the same shapes, side by side in one run.

    /usr/bin/python3 bench/compare_pytorch_cpu.py --fusecal build/fusecal \\
        [--quick] [--dtype fp32|bf16] [--threads N] [--rounds R] [--max-time S] \\
        [--from FILE [--from FILE...] | --ceilings-beside] [--out DIR] [PROBLEM...]

For the record, on a quiet machine (nothing else running), from the build tree:

    /usr/bin/python3 bench/compare_pytorch_cpu.py --fusecal build/fusecal --out results/<machine>/pytorch-cpu
    /usr/bin/python3 bench/compare_pytorch_cpu.py --fusecal build/fusecal --dtype bf16 \
        --out results/<machine>/pytorch-cpu-bf16

(Debian's python3-torch is /usr/bin/python3's; a pyenv python3 on PATH lacks it.)

Measures each problem in rounds (default 3): in each, `fusecal run --device cpu` on
the problem (every backend; the round's calibration document, DIR/fusecal-<round>.json,
or the one the round's --from names) and PyTorch eagerly on the same shape, back to
back, fusecal first in odd rounds and PyTorch first in even ones. A shared host's
speed drifts by tens of percent over minutes; measured minutes apart, fusecal and
PyTorch on the same library call came out 0.86x and 1.09x of each other in two runs.
Side by side, each round's ratio compares the two in the same minute. Prints, per
problem, from the round whose ratio is the median of the rounds': PyTorch unfused,
PyTorch fused (its fastest form, named), fusecal unfused and fused (each the best
backend, named), the ratio fusecal fused / PyTorch fused with the range of the
rounds' ratios, and both fused forms as a percentage of the ceiling that bounds the
problem (GEMM GFLOP/s for a compute-bound fused form, of the FLOPs fusecal's
algorithm performs where that differs from the problem's count, as its records say;
bandwidth for a memory-bound one: `bw-beside`, the stream rate at the fused form's
working set that `fusecal run` measured beside its record's rounds (the record's
`bandwidth_beside_gbs`), or where the record has none `bw`, the rate at that working
set of the ceilings `fusecal run` measures, as `fusecal info` does, kept in the
document). The ceilings are peaks, the best of repeated runs at one
minute; on a shared host whose memory bandwidth moves by half between minutes (44-89
GB/s on the 2-core Zen 4 VM within an hour), a memory-bound form measured in a slow
minute shows a low percentage of a fast minute's ceiling, which `bw-beside` avoids
and --ceilings-beside narrows for every ceiling. --ceilings-beside measures
them again beside each problem's round (`fusecal info --device cpu`, which renews the
ceilings `fusecal run` then uses: DIR/info-<round>-<n>.json) and gives each problem's
round a document of its own (DIR/fusecal-<round>-<n>.json, n the problem's place), so
that a row's percentages are of the ceilings of the minute it ran in; each row then
names its bandwidth ceiling, and each round's percentage and ceiling are listed under
the table. The table goes to stdout and, with --out, to DIR/compare.md and
DIR/compare.json. Problems no usable CPU backend of this fusecal computes in the dtype (`fusecal list
backends`) are left out, and said so.

PyTorch 1.13 (no SDPA), one OpenMP pool (torch.set_num_threads = fusecal's
threads), outputs preallocated and written with out= where the op has it (glibc told
to keep freed memory where it has not, so that a per-call tensor reuses pages),
warm-up, then batched samples (each ~2 ms or one call), the median of at least 15
per round.
Each fused form is checked against PyTorch's unfused chain before it is timed.
  linear     unfused: mm -> add b [-> add r] -> act (out= each)
             fused:   addmm [-> add_ r] -> act in place; _addmm_activation; a frozen
                      TorchScript Linear+act (optimize_for_inference)
             linear_swiglu: mm -> silu -> mul; fused: mm -> silu_ on the gate -> mul
             gelu_linear: gelu -> mm -> add; fused: gelu -> addmm
  conv       unfused: conv2d -> batch_norm (eval) [-> + r] -> relu, channels_last for
             nhwc (oneDNN through torch.backends.mkldnn)
             fused:   BN folded by hand, conv2d [-> add_ r] -> relu_; torch.fx's
                      fuse (conv+BN folding); jit.freeze + optimize_for_inference
  attention  unfused: [repeat_interleave K, V for GQA] -> matmul -> * 1/sqrt(d)
             [-> masked_fill causal] -> softmax -> matmul
             fused:   grouped-query views (no copy), baddbmm with alpha = 1/sqrt(d)
                      and the causal mask as its additive input -> softmax -> bmm
  norm       unfused: add -> layer_norm; add -> RMSNorm written out (pow, mean,
             rsqrt, mul, mul); per-head RMSNorm written out -> rope written out
             (rotate-half with a cos/sin table)
             fused:   the fewest passes eager code makes (in-place tails), and the
                      TorchScript NNC CPU fuser over the written-out chain where it
                      fuses (PyTorch 1.13 has no fused add+norm or rope kernel)
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

PROBLEMS = [
    # linear: the target shapes, BERT and LLaMA projections
    "linear_bias:m=128,k=512,n=512",
    "linear_bias_relu:m=512,k=1024,n=1024",
    "linear_bias_gelu:m=1024,k=784,n=2048",
    "linear_residual_relu:m=512,k=1024,n=1024",
    "linear_swiglu:m=128,k=1024,n=2816",
    "gelu_linear:m=512,k=768,n=768",
    # conv: the conv_bn_relu target, MobileNetV2 depthwise, a ResNet-50 stage end
    "conv_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,layout=nhwc",
    "conv_bn:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,layout=nhwc",
    "conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,layout=nhwc",
    "dwconv_bn_relu:n=1,c=144,h=56,w=56,k=144,r=3,s=3,pad=1,layout=nhwc",
    "conv_bn_add_relu:n=1,c=64,h=56,w=56,k=256,r=1,s=1,layout=nhwc",
    # attention: the s = 1024 target, causal, GQA decode (its batch raised past
    # the LLC by beyond_llc, as the norms' rows are)
    "qk_scale:b=8,h=16,s=512,d=64",
    "qk_softmax:b=4,h=12,s=512,d=64,causal=1",
    "attention:b=8,h=16,s=1024,d=64",
    "attention:b=1,h=32,hkv=8,s=1,skv=4096,d=128",
    # norm: BERT and LLaMA hidden sizes, LLaMA heads; prefills of 4096 and 1024 tokens at
    # least, more where the tensors would fit in the last-level cache (beyond_llc: the
    # bandwidth ceiling is DRAM's, and a warm problem that fits in cache runs above it)
    "add_layernorm:m=4096,n=768",
    "add_rmsnorm:m=1024,n=4096",
    "qk_norm_rope:m=1024,h=32,d=128",
]
QUICK = [
    "linear_bias_relu:m=256,k=512,n=512",
    "conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,layout=nhwc",
    "attention:b=2,h=8,s=256,d=64,causal=1",
    "add_rmsnorm:m=1024,n=4096",
]
# tensors a norm pattern reads and writes whole: add_layernorm x, r -> y; add_rmsnorm
# x, r -> y and x + r; qk_norm_rope q -> q'
NORM_TENSORS = {"add_layernorm": 3, "add_rmsnorm": 4, "qk_norm_rope": 2}


def llc_bytes():
    """The largest CPU cache (sysfs), or 32 MiB when it cannot be read."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    for d in os.listdir(base) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, d, "size")) as fh:
                t = fh.read().strip()
        except OSError:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
        try:
            best = max(best, int(t.rstrip("KMG")) * mult)
        except ValueError:
            pass
    return best or 32 << 20


def beyond_llc(problem, llc):
    """A norm problem with its rows m raised (in steps of 256), a decode attention
    problem (s = 1) with its batch b raised, until the tensors it moves are at least
    4x the LLC, as the bandwidth ceiling's arrays are; others as they are."""
    pat, dims, _, dtype = parse(problem)
    esize = 2 if dtype == "bf16" else 4
    if pat == "attention" and dims.get("s") == 1 and "b" in dims:
        kv = 2 * dims.get("hkv", dims["h"]) * dims.get("skv", 1) * dims["d"] * esize  # K and V of one batch item
        b = dims["b"]
        while b * kv < 4 * llc:
            b += 1
        return problem.replace(f"b={dims['b']},", f"b={b},", 1)
    if pat not in NORM_TENSORS or "m" not in dims:
        return problem
    row = dims.get("n", dims.get("h", 1) * dims.get("d", 1)) * esize * NORM_TENSORS[pat]
    m = dims["m"]
    while m * row < 4 * llc:
        m += 256
    return problem.replace(f"m={dims['m']},", f"m={m},", 1)


MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}
CONV_DEFAULTS = {"r": 3, "s": 3, "stride": 1, "pad": 0, "g": 1}


def parse(problem):
    """(pattern, {dim: int}, layout, dtype) of a problem string."""
    pat, _, rest = problem.partition(":")
    kv = dict(t.split("=", 1) for t in rest.split(",") if t)
    dims = {k: int(v) for k, v in kv.items() if k not in ("layout", "dtype")}
    return pat, dims, kv.get("layout", "nhwc"), kv.get("dtype", "fp32")


# ---------------------------------------------------------------- timing


def median_ms(fn, max_time):
    """Median per-call time of batched samples (each at least ~2 ms or one call)."""
    for _ in range(3):
        fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    batch = max(1, int(0.002 / one))
    samples, end = [], time.perf_counter() + max_time
    while len(samples) < 15 or (time.perf_counter() < end and len(samples) < 1000):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - t0) / batch)
    return statistics.median(samples) * 1e3


def with_out(torch, op, out, *args, **kw):
    """A call of op writing `out` when op takes out=, else one returning a new tensor."""
    try:
        op(*args, **kw, out=out)
        return lambda: op(*args, **kw, out=out)
    except (TypeError, RuntimeError):
        return lambda: op(*args, **kw)


# ---------------------------------------------------------------- PyTorch forms


class Forms:
    """One problem's PyTorch forms: the unfused chain and the fused candidates."""

    def __init__(self, torch, dtype):
        self.torch, self.dt = torch, dtype
        self.g = torch.Generator().manual_seed(1)
        self.fused = {}
        self.unfused = None

    def rand(self, *shape, lo=-1.0, hi=1.0):
        return (self.torch.rand(*shape, generator=self.g) * (hi - lo) + lo).to(self.dt)

    def empty(self, *shape):
        return self.torch.empty(*shape, dtype=self.dt)

    def add(self, name, make):
        """A fused candidate, left out (and said so) where this PyTorch cannot make it."""
        try:
            self.fused[name] = make()
        except Exception as err:  # noqa: BLE001 — any failure means the form is not available
            print(f"  ({name} unavailable: {str(err).splitlines()[0][:120]})", file=sys.stderr)


def linear_forms(f, pat, d):
    torch, F = f.torch, f.torch.nn.functional
    m, k, n = d["m"], d["k"], d["n"]
    x, W, b = f.rand(m, k), f.rand(2 * n if pat == "linear_swiglu" else n, k, lo=-0.1, hi=0.1), f.rand(n)
    Wt = W.t()
    if pat == "linear_swiglu":
        t, s, y = f.empty(m, 2 * n), f.empty(m, n), f.empty(m, n)
        gate, up = t[:, :n], t[:, n:]
        silu = with_out(torch, torch._C._nn.silu, s, gate)

        def unfused():
            torch.mm(x, Wt, out=t)
            silu()
            return torch.mul(s, up, out=y)

        def silu_inplace():
            torch.mm(x, Wt, out=t)
            F.silu(gate, inplace=True)
            return torch.mul(gate, up, out=y)

        f.unfused = unfused
        f.add("mm -> silu_ -> mul", lambda: silu_inplace)
        return
    if pat == "gelu_linear":
        gx, t, y = f.empty(m, k), f.empty(m, n), f.empty(m, n)
        gelu = with_out(torch, torch._C._nn.gelu, gx, x, approximate="tanh")

        def unfused():
            gelu()
            torch.mm(gx, Wt, out=t)
            return torch.add(t, b, out=y)

        def gelu_addmm():
            gelu()
            return torch.addmm(b, gx, Wt, out=y)

        f.unfused = unfused
        f.add("gelu -> addmm", lambda: gelu_addmm)
        return
    act = {"linear_bias_relu": "relu", "linear_residual_relu": "relu", "linear_bias_gelu": "gelu"}.get(pat)
    resid = pat == "linear_residual_relu"
    r = f.rand(m, n) if resid else None
    t1, t2, t3, y = f.empty(m, n), f.empty(m, n), f.empty(m, n), f.empty(m, n)

    def act_out(src, dst):
        if act == "relu":
            return torch.clamp_min(src, 0, out=dst)
        if act == "gelu":
            return torch._C._nn.gelu(src, approximate="tanh", out=dst)
        return src

    def act_(z):
        if act == "relu":
            return z.relu_()
        if act == "gelu":
            return torch._C._nn.gelu_(z, approximate="tanh")
        return z

    def unfused():
        torch.mm(x, Wt, out=t1)
        cur = torch.add(t1, b, out=t2 if act or resid else y)
        if resid:
            cur = torch.add(cur, r, out=t3)
        return act_out(cur, y) if act else cur

    def addmm_inplace():
        torch.addmm(b, x, Wt, out=y)
        if resid:
            y.add_(r)
        return act_(y)

    f.unfused = unfused
    f.add("addmm" + (" -> add_ r" if resid else "") + (f" -> {act}_" if act else ""), lambda: addmm_inplace)
    if act and not resid:
        f.add("_addmm_activation",
              lambda: with_out(torch, torch._addmm_activation, y, b, x, Wt, use_gelu=act == "gelu"))

    class Block(torch.nn.Module):  # TorchScript takes the options as attributes, not closures
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(k, n).to(f.dt)
            self.act = act or ""
            with torch.no_grad():
                self.lin.weight.copy_(W), self.lin.bias.copy_(b)

        def forward(self, x):
            z = self.lin(x)
            if self.act == "relu":
                return torch.relu(z)
            if self.act == "gelu":
                return torch.nn.functional.gelu(z, approximate="tanh")
            return z

    class BlockAdd(Block):
        def forward(self, x, r):
            return torch.relu(self.lin(x) + r)

    def frozen():
        mod = torch.jit.script((BlockAdd if resid else Block)().eval())
        mod = torch.jit.optimize_for_inference(torch.jit.freeze(mod))
        return (lambda: mod(x, r)) if resid else (lambda: mod(x))

    f.add("jit frozen", frozen)


def conv_forms(f, pat, d, layout):
    torch, F = f.torch, f.torch.nn.functional
    d = {**CONV_DEFAULTS, **d}
    if pat == "dwconv_bn_relu" and "g" not in d:
        d["g"] = d["c"]
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    n, c, h, w, k, r, s, G = d["n"], d["c"], d["h"], d["w"], d["k"], d["r"], d["s"], d["g"]
    st, pad = d["stride"], d["pad"]
    bn, resid, relu = "_bn" in pat, pat == "conv_bn_add_relu", pat.endswith("relu")
    a = 1.5 / ((c // G) * r * s) ** 0.5
    x = f.rand(n, c, h, w).contiguous(memory_format=fmt)
    W = f.rand(k, c // G, r, s, lo=-a, hi=a).contiguous(memory_format=fmt)
    b, gam, beta = f.rand(k, lo=-0.25, hi=0.75), f.rand(k, lo=0.5, hi=1.5), f.rand(k, lo=-0.25, hi=0.75)
    mu, var = f.rand(k, lo=-0.2, hi=0.2), f.rand(k, lo=0.25, hi=1.25)
    p, q = (h + 2 * pad - r) // st + 1, (w + 2 * pad - s) // st + 1
    res = f.rand(n, k, p, q, lo=-0.5, hi=0.5).contiguous(memory_format=fmt) if resid else None
    inv = gam.float() / torch.sqrt(var.float() + 1e-5)
    Wf = (W.float() * inv.view(-1, 1, 1, 1)).to(f.dt).contiguous(memory_format=fmt) if bn else W
    bf = ((b.float() - mu.float()) * inv + beta.float()).to(f.dt) if bn else b

    def unfused():
        y = F.conv2d(x, W, b, st, pad, 1, G)
        if bn:
            y = F.batch_norm(y, mu, var, gam, beta, False, 0.0, 1e-5)
        if resid:
            y = y + res
        return F.relu(y) if relu else y

    def folded():
        y = F.conv2d(x, Wf, bf, st, pad, 1, G)
        if resid:
            y.add_(res)
        return y.relu_() if relu else y

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(c, k, (r, s), st, pad, groups=G).to(f.dt)
            self.bn = torch.nn.BatchNorm2d(k, eps=1e-5).to(f.dt)
            self.use_bn, self.use_relu = bn, relu
            with torch.no_grad():
                self.conv.weight.copy_(W), self.conv.bias.copy_(b)
                self.bn.weight.copy_(gam), self.bn.bias.copy_(beta)
                self.bn.running_mean.copy_(mu), self.bn.running_var.copy_(var)

        def forward(self, x):
            y = self.conv(x)
            if self.use_bn:
                y = self.bn(y)
            if self.use_relu:
                y = torch.relu(y)
            return y

    class BlockAdd(Block):
        def forward(self, x, res):
            return torch.relu(self.bn(self.conv(x)) + res)

    def module():
        return (BlockAdd if resid else Block)().eval().to(memory_format=fmt)

    def call(m):
        return (lambda: m(x, res)) if resid else (lambda: m(x))

    def fx_fused():
        from torch.fx.experimental.optimization import fuse

        return call(fuse(module()))

    def frozen():
        return call(torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(module()))))

    f.unfused = unfused
    f.add("BN folded, in-place tail" if bn else "conv2d, in-place tail", lambda: folded)
    if bn:
        f.add("torch.fx fuse", fx_fused)
    f.add("jit frozen", frozen)


def attention_forms(f, pat, d):
    torch = f.torch
    B, H, S, D = d["b"], d["h"], d["s"], d["d"]
    HKV, SKV = d.get("hkv", H), d.get("skv", S)
    causal = bool(d.get("causal", 0)) and pat != "qk_scale"
    grp, scale = H // HKV, 1.0 / math.sqrt(D)
    q, kk, v = f.rand(B, H, S, D), f.rand(B, HKV, SKV, D), f.rand(B, HKV, SKV, D)
    # query i sees keys j <= i + (skv - s): the queries are the last s positions
    mask = torch.ones(S, SKV, dtype=torch.bool).triu(SKV - S + 1) if causal else None
    bias = torch.zeros(S, SKV, dtype=f.dt).masked_fill(mask, float("-inf")) if causal else None
    s1, s2, o = f.empty(B, H, S, SKV), f.empty(B, H, S, SKV), f.empty(B, H, S, D)

    def softmax(src, dst):
        try:
            return torch._softmax(src, -1, False, out=dst)
        except (TypeError, RuntimeError):
            return torch.softmax(src, -1)

    def unfused():
        kr = kk.repeat_interleave(grp, dim=1) if grp > 1 else kk
        torch.matmul(q, kr.transpose(-1, -2), out=s1)
        cur = torch.mul(s1, scale, out=s2)
        if pat == "qk_scale":
            return cur
        if causal:
            cur.masked_fill_(mask, float("-inf"))
        p = softmax(cur, s1)
        if pat == "qk_softmax":
            return p
        vr = v.repeat_interleave(grp, dim=1) if grp > 1 else v
        return torch.matmul(p, vr, out=o)

    # grouped-query views: the g query heads of a KV head as one [g*s, d] block
    qg, kg, vg = q.view(B * HKV, grp * S, D), kk.view(B * HKV, SKV, D), v.view(B * HKV, SKV, D)
    sg, pg, og = s1.view(B * HKV, grp * S, SKV), s2.view(B * HKV, grp * S, SKV), o.view(B * HKV, grp * S, D)
    inp = bias.repeat(grp, 1).expand(B * HKV, grp * S, SKV) if causal else sg

    def fused():
        torch.baddbmm(inp, qg, kg.transpose(1, 2), beta=1.0 if causal else 0.0, alpha=scale, out=sg)
        if pat == "qk_scale":
            return s1
        p = softmax(sg, pg)
        if pat == "qk_softmax":
            return p.view(B, H, S, SKV)
        return torch.bmm(p, vg, out=og).view(B, H, S, D)

    f.unfused = unfused
    f.add("baddbmm(alpha" + (", mask)" if causal else ")") + (" -> softmax" if pat != "qk_scale" else "")
          + (" -> bmm" if pat == "attention" else "") + (" on grouped views" if grp > 1 else ""), lambda: fused)


def norm_forms(f, pat, d):
    torch, F = f.torch, f.torch.nn.functional
    eps = 1e-5 if pat == "add_layernorm" else 1e-6
    if pat == "qk_norm_rope":
        M, H, D = d["m"], d["h"], d["d"]
        half = D // 2
        q, gam = f.rand(M, H, D), f.rand(D, lo=0.5, hi=1.5)
        pos = torch.arange(M, dtype=torch.float64).view(M, 1)
        ang = pos * torch.pow(10000.0, -2.0 * torch.arange(half, dtype=torch.float64) / D)
        cos, sin = ang.cos().to(f.dt).view(M, 1, half), ang.sin().to(f.dt).view(M, 1, half)
        cosf, sinf = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
        y, qn, t = f.empty(M, H, D), f.empty(M, H, D), f.empty(M, H, 1)

        def rms(x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gam

        def rotate_half(x):
            return torch.cat([-x[..., half:], x[..., :half]], -1)

        def unfused():
            z = rms(q)
            return z * cosf + rotate_half(z) * sinf

        def rope_lean():
            torch.mean(q * q, -1, keepdim=True, out=t)
            t.add_(eps).rsqrt_()
            torch.mul(q, t, out=qn).mul_(gam)
            lo, hi = qn[..., :half], qn[..., half:]
            torch.mul(lo, cos, out=y[..., :half]).addcmul_(hi, sin, value=-1)
            torch.mul(hi, cos, out=y[..., half:]).addcmul_(lo, sin)
            return y

        def rope_written(qq, g, c, s, hf: int):
            z = qq * torch.rsqrt(qq.pow(2).mean(-1, keepdim=True) + 1e-6) * g
            return z * c + torch.cat([-z[..., hf:], z[..., :hf]], -1) * s

        f.unfused = unfused
        f.add("fewest eager passes", lambda: rope_lean)
        f.add("TorchScript, NNC CPU fuser on", lambda: nnc(torch, rope_written, (q, gam, cosf, sinf, half)))
        return
    M, N = d["m"], d["n"]
    x, r = f.rand(M, N), f.rand(M, N)
    gam, beta = f.rand(N, lo=0.5, hi=1.5), f.rand(N, lo=-0.5, hi=0.5)
    h, y, t, ms = f.empty(M, N), f.empty(M, N), f.empty(M, N), f.empty(M, 1)
    if pat == "add_layernorm":

        def unfused():
            torch.add(x, r, out=h)
            return F.layer_norm(h, (N,), gam, beta, eps)

        f.unfused = unfused
        f.add("add -> layer_norm (no fused form)", lambda: unfused)
        return

    def unfused():
        torch.add(x, r, out=h)
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * gam

    def rms_lean():
        torch.add(x, r, out=h)
        torch.mul(h, h, out=t)
        torch.mean(t, -1, keepdim=True, out=ms)
        ms.add_(eps).rsqrt_()
        return torch.mul(h, ms, out=y).mul_(gam)

    def rms_written(xx, rr, g):
        hh = xx + rr
        return hh * torch.rsqrt(hh.pow(2).mean(-1, keepdim=True) + 1e-6) * g, hh

    f.unfused = unfused
    f.add("fewest eager passes", lambda: rms_lean)
    f.add("TorchScript, NNC CPU fuser on",
          lambda: (lambda fn: lambda: fn()[0])(nnc(torch, rms_written, (x, r, gam))))


def nnc(torch, fn, args):
    """fn scripted with the TorchScript NNC fuser on for the CPU, warmed up past profiling
    (its fused plan made); the fuser's switches then set back as they were, so that the
    forms of later problems (a frozen TorchScript module) do not meet it: where NNC has
    no LLVM backend, they failed with the switches left on."""
    before = torch._C._jit_can_fuse_on_cpu(), torch._C._jit_texpr_fuser_enabled()
    torch._C._jit_override_can_fuse_on_cpu(True)
    torch._C._jit_set_texpr_fuser_enabled(True)
    try:
        sfn = torch.jit.script(fn)
        for _ in range(3):
            sfn(*args)
    finally:
        torch._C._jit_override_can_fuse_on_cpu(before[0])
        torch._C._jit_set_texpr_fuser_enabled(before[1])
    return lambda: sfn(*args)


def torch_forms(torch, problem):
    pat, d, layout, dtype = parse(problem)
    f = Forms(torch, torch.bfloat16 if dtype == "bf16" else torch.float32)
    fam = {"add_layernorm": "norm", "add_rmsnorm": "norm", "qk_norm_rope": "norm", "qk_scale": "attention",
           "qk_softmax": "attention", "attention": "attention"}.get(pat, "conv" if "conv" in pat else "linear")
    if fam == "linear":
        linear_forms(f, pat, d)
    elif fam == "conv":
        conv_forms(f, pat, d, layout)
    elif fam == "attention":
        attention_forms(f, pat, d)
    else:
        norm_forms(f, pat, d)
    ref = f.unfused().float()
    tol = 3e-2 if dtype == "bf16" else 1e-4
    for name in list(f.fused):
        out = f.fused[name]()
        err = float((out.float() - ref).norm() / max(float(ref.norm()), 1e-30))
        if err > tol or out.shape != ref.shape:
            print(f"  ({name} left out: differs from the unfused chain by {err:.2g})", file=sys.stderr)
            del f.fused[name]
    if not f.fused:
        raise SystemExit(f"{problem}: no PyTorch fused form agrees with its unfused chain")
    return f


# ---------------------------------------------------------------- fusecal


def cpu_patterns(binary, dtype):
    """The patterns some usable CPU backend of this fusecal computes in dtype."""
    out = subprocess.run([binary, "list", "backends", "--format", "json"], check=True, capture_output=True, text=True)
    return {p for b in json.loads(out.stdout)["backends"] if b.get("device") == "cpu" and b.get("usable")
            for p in b["supports"][dtype]}


def run_fusecal(binary, problem, threads, max_time, doc):
    """One problem into a round's document: the round's first problem writes it,
    the others are appended (`fusecal run --append`, the same settings)."""
    cmd = [binary, "run", "--device", "cpu", "--quiet", "--seed", "7", "--max-time", str(max_time),
           "--threads", str(threads), "--shape", problem]
    cmd += ["--append", doc] if os.path.exists(doc) else ["--out", doc]
    print("$ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)


def load(doc):
    with open(doc) as fh:
        return json.load(fh)


def with_defaults(pat, d):
    """A problem's dims with the defaults a record may leave out filled in."""
    d = dict(d)
    if "conv" in pat:
        d = {**CONV_DEFAULTS, **d}
        if pat == "dwconv_bn_relu" and d["g"] == 1:
            d["g"] = d["c"]
    if "s" in d and "b" in d:
        d.setdefault("causal", 0), d.setdefault("hkv", d["h"]), d.setdefault("skv", d["s"])
    return d


def matches(rec, problem):
    pat, d, layout, dtype = parse(problem)
    rpat, rd, rlayout, rdtype = parse(rec["problem"])
    if rpat != pat or rdtype != dtype or ("layout=" in rec["problem"] and rlayout != layout):
        return False
    rd = with_defaults(rpat, rd)
    return all(rd.get(k) == v for k, v in with_defaults(pat, d).items())


def best(records, problem, variant):
    """(median ms, backend, record) of the fastest ok record of a variant."""
    found = [(r["variants"][variant]["latency_ms"]["median"], r["backend"], r) for r in records
             if r.get("status") == "ok" and matches(r, problem)]
    return min(found, key=lambda t: t[0]) if found else (float("nan"), "-", None)


def pct_ceiling(rec, ceilings, dtype, ms, performed=False):
    """% of the bounding ceiling at ms for a record's fused form, and which ceiling;
    performed: of the FLOPs fusecal's fused form performs (`flops_performed`, where its
    algorithm does other arithmetic than the problem's count: a Winograd convolution),
    else of the problem's (PyTorch's forms run direct convolutions)."""
    if rec is None or not ms == ms:
        return float("nan"), "-"
    fused = rec["variants"]["fused"]
    if fused.get("bound", "compute") == "memory":
        which = "bw-beside" if "bandwidth_beside_gbs" in fused else "bw"
        bw = ceiling_value(rec, ceilings, dtype, which)
        return 100 * rec["memory"]["bytes_fused"] / (ms * 1e-3) / 1e9 / bw, which
    peak = ceiling_value(rec, ceilings, dtype, "gemm")
    flops = fused.get("flops_performed", rec["flops"]) if performed else rec["flops"]
    return 100 * flops / (ms * 1e-3) / 1e9 / peak, "gemm"


def ceiling_value(rec, ceilings, dtype, which):
    """The ceiling a row's % cells divide by: GB/s for `bw`, GFLOP/s for `gemm`."""
    if rec is None:
        return float("nan")
    if which == "bw-beside":
        # the streaming rate at the fused form's working set measured beside its rounds
        return rec["variants"]["fused"]["bandwidth_beside_gbs"]
    if which == "bw":
        # the streaming rate at the fused form's working set (device memory's past the
        # caches); documents before it: device memory's
        return rec["variants"]["fused"].get("bandwidth_ceiling_gbs", ceilings["bandwidth_gbs"])
    return ceilings["gflops"].get(dtype) or ceilings["gflops"].get("fp32")


def pct_cell(p, which):
    """A % of ceiling cell; above 100 % it says so (OVER), never a bare number."""
    return f"{p:.0f}% {which}" + (" OVER" if p > 100 else "")


OVER_NOTE = ("OVER: above 100 % of the measured ceiling. `bw` is the streaming bandwidth fusecal measured at the "
             "fused form's working set (its record's `bandwidth_ceiling_gbs`: DRAM's copy bandwidth past the "
             "caches); `bw-beside` the same measured beside its record's rounds (`bandwidth_beside_gbs`); `gemm` is the best sgemm rate of OpenBLAS at 1024^3 and 2048^3 and oneDNN at 512^3 to 2048^3, a "
             "reference a blocked kernel (or a moment of this shared host's clock) can pass; the ceiling no kernel "
             "passes is the arithmetic peak, the ceilings' `peak_gflops`.")


PERFORMED_NOTE = ("*: of the FLOPs fusecal's fused form performs (its record's `flops_performed`: a Winograd "
                  "convolution does fewer than the problem's count); PyTorch's column is of the problem's count, "
                  "its convolutions direct.")


# ---------------------------------------------------------------- main


def fusecal_round(records, problem, ceilings, dtype):
    """A round's fusecal figures for a problem: best unfused and fused, % of ceiling,
    and every backend's fused form (ms, % of its ceiling, of the FLOPs it performs)."""
    fu, bu, _ = best(records, problem, "unfused")
    ff, bf, rec = best(records, problem, "fused")
    each = []
    for r in records:
        if r.get("status") == "ok" and matches(r, problem):
            ms = r["variants"]["fused"]["latency_ms"]["median"]
            pct, which = pct_ceiling(r, ceilings, dtype, ms, performed=True)
            each.append({"backend": r["backend"], "fused_ms": ms, "pct_ceiling": pct, "ceiling": which,
                         "of_flops_performed": "flops_performed" in r["variants"]["fused"],
                         "impl": r["variants"]["fused"]["impl"]})
    return {"fu": fu, "bu": bu, "ff": ff, "bf": bf, "rec": rec, "ceilings": ceilings, "each": each}


def torch_round(f, max_time):
    tu = median_ms(f.unfused, max_time)
    tf, form = min((median_ms(fn, max_time), name) for name, fn in f.fused.items())
    return {"tu": tu, "tf": tf, "form": form}


def main():
    if any(k not in os.environ for k in MALLOC_ENV):
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **MALLOC_ENV})
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problems", nargs="*", help="problem strings (default: the list above, or --quick's)")
    ap.add_argument("--fusecal", required=True, help="the fusecal binary (build/fusecal)")
    ap.add_argument("--from", dest="given", action="append",
                    help="a calibration document to read instead of running fusecal, one per round (repeatable)")
    ap.add_argument("--quick", action="store_true", help="one problem per family and short samples")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds per problem, fusecal and PyTorch back to back in each, their order alternating "
                    "(default 3; with --from, one per document)")
    ap.add_argument("--max-time", type=float, help="seconds of samples per form and round (default 0.5, --quick 0.2)")
    ap.add_argument("--ceilings-beside", action="store_true",
                    help="measure the ceilings again beside each problem's round, each in a document of its own")
    ap.add_argument("--out", help="a directory for fusecal-<round>.json, compare.md and compare.json")
    a = ap.parse_args()
    if a.ceilings_beside and a.given:
        ap.error("--ceilings-beside measures: it cannot read --from documents")
    max_time = a.max_time if a.max_time is not None else 0.2 if a.quick else 0.5
    rounds = len(a.given) if a.given else a.rounds
    if rounds < 1:
        ap.error("--rounds must be at least 1")
    problems = a.problems or (QUICK if a.quick else PROBLEMS)
    if a.dtype != "fp32":
        problems = [p if "dtype=" in p else p + f",dtype={a.dtype}" for p in problems]
    if not a.problems and not a.quick and not a.given:
        llc = llc_bytes()
        problems = [beyond_llc(p, llc) for p in problems]
    known = cpu_patterns(a.fusecal, a.dtype)
    for p in [p for p in problems if parse(p)[0] not in known]:
        print(f"left out: {p} (no CPU backend of this fusecal computes {parse(p)[0]} in {a.dtype} here)",
              file=sys.stderr)
    problems = [p for p in problems if parse(p)[0] in known]
    if not problems:
        print(f"nothing to compare in {a.dtype} here", file=sys.stderr)
        return 0
    try:
        import torch
    except ImportError:
        sys.exit(f"compare_pytorch_cpu.py: no PyTorch for {sys.executable} (Debian: apt-get install python3-torch)")

    torch.set_num_threads(a.threads)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        where = a.out or tmp
        if a.given:
            docs = [[d] * len(problems) for d in a.given]
        elif a.ceilings_beside:
            docs = [[os.path.join(where, f"fusecal-{i + 1}-{k + 1}.json") for k in range(len(problems))]
                    for i in range(rounds)]
        else:
            docs = [[os.path.join(where, f"fusecal-{i + 1}.json")] * len(problems) for i in range(rounds)]
        for d in {d for r in docs for d in r} if not a.given else []:
            if os.path.exists(d):
                os.remove(d)  # a round's document holds this run's records only
        return compare(a, torch, problems, docs, rounds, max_time)


def measure_ceilings(binary, threads, out):
    """`fusecal info --device cpu` afresh into out: the ceilings a `fusecal run` right
    after uses (they renew its cache of them)."""
    cmd = [binary, "info", "--device", "cpu", "--format", "json", "--threads", str(threads)]
    print("$ " + " ".join(cmd) + " > " + out, file=sys.stderr)
    with open(out, "w") as fh:
        subprocess.run(cmd, check=True, stdout=fh)


def compare(a, torch, problems, docs, rounds, max_time):
    """Each problem in rounds (docs[round][problem] its document), fusecal and PyTorch
    back to back (fusecal first in odd rounds, PyTorch first in even ones), so that a
    slow or fast minute of the host falls on both; a row is the round whose ratio is the
    median of the rounds'."""
    head = None
    lines = ["| problem | PyTorch unfused | PyTorch fused (form) | fusecal unfused (backend) | fusecal fused (backend) "
             "| fusecal / PyTorch fused (rounds' range) | fusecal % ceiling | PyTorch % ceiling |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    rows = []
    for k, pr in enumerate(problems):
        with torch.no_grad():
            f = torch_forms(torch, pr)
            got = []
            for i in range(rounds):
                first_torch = i % 2 == 1
                t = torch_round(f, max_time) if first_torch else None
                if a.ceilings_beside:
                    where, name = os.path.split(docs[i][k])
                    measure_ceilings(a.fusecal, a.threads, os.path.join(where, "info-" + name[len("fusecal-"):]))
                if not a.given:
                    run_fusecal(a.fusecal, pr, a.threads, max_time, docs[i][k])
                doc = load(docs[i][k])
                c = fusecal_round(doc["records"], pr, doc["ceilings"]["cpu"], a.dtype)
                c.update(t or torch_round(f, max_time))
                c["ratio"] = c["ff"] / c["tf"]
                got.append(c)
        if head is None:
            ceil = got[0]["ceilings"]
            ceils = ("ceilings measured beside each problem's round (the row's bandwidth ceiling in its % cells)"
                     if a.ceilings_beside else
                     f"ceilings {ceil['gflops'].get(a.dtype, float('nan')):.0f} GFLOP/s, {ceil['bandwidth_gbs']:.1f} GB/s")
            head = (f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, {a.dtype}; {ceils}; "
                    f"latencies in ms (medians); {rounds} round{'s' if rounds > 1 else ''} per problem, "
                    "the row from the round with the median ratio")
            print(head + "\n\n" + "\n".join(lines), flush=True)
        ratios = [c["ratio"] for c in got]
        known = sorted((c for c in got if c["ratio"] == c["ratio"]), key=lambda c: c["ratio"])
        c = known[(len(known) - 1) // 2] if known else got[0]
        pcts = [pct_ceiling(g["rec"], g["ceilings"], a.dtype, g["ff"], performed=True) for g in got]
        pf, which = pcts[got.index(c)]
        ceils = [ceiling_value(g["rec"], g["ceilings"], a.dtype, which) for g in got]
        pt, _ = pct_ceiling(c["rec"], c["ceilings"], a.dtype, c["tf"])
        lo, hi = (known[0]["ratio"], known[-1]["ratio"]) if known else (float("nan"),) * 2
        lost = [i + 1 for i, r in enumerate(got) if not r["ratio"] == r["ratio"]]
        if lost and known:  # a round without a fusecal record (skipped: its document says why)
            print(f"{pr}: no fusecal record in round{'s' if len(lost) > 1 else ''} "
                  f"{', '.join(map(str, lost))}; the row is of the other {len(known)}", file=sys.stderr)
        row = {"problem": pr, "pytorch_unfused_ms": c["tu"], "pytorch_fused_ms": c["tf"],
               "pytorch_fused_form": c["form"], "fusecal_unfused_ms": c["fu"], "fusecal_unfused_backend": c["bu"],
               "fusecal_fused_ms": c["ff"], "fusecal_fused_backend": c["bf"], "ratio": c["ratio"],
               "ratio_min": lo, "ratio_max": hi, "round": got.index(c) + 1, "round_ratios": ratios,
               "round_pcts": [p for p, _ in pcts],
               "round_ceilings": ceils,
               "rounds_without_fusecal": lost,
               "ceiling": which, "ceiling_value": ceils[got.index(c)],
               "fusecal_pct_ceiling": pf, "pytorch_pct_ceiling": pt,
               "over_ceiling": bool(pf > 100 or pt > 100 or any(e["pct_ceiling"] > 100 for e in c["each"])),
               "fusecal_fused_by_backend": c["each"]}
        rows.append(row)
        alg = which == "gemm" and "flops_performed" in c["rec"]["variants"]["fused"]
        row["fusecal_pct_of_flops_performed"] = alg
        of = f" of {row['ceiling_value']:.1f} GB/s" if (a.ceilings_beside and which == "bw") or which == "bw-beside" else ""
        line = (f"| `{pr}` | {c['tu']:.4g} | {c['tf']:.4g} ({c['form']}) | {c['fu']:.4g} ({c['bu']}) "
                f"| {c['ff']:.4g} ({c['bf']}) | {c['ratio']:.2f} ({lo:.2f}-{hi:.2f}"
                f"{f'; {len(known)} of {rounds} rounds' if lost and known else ''}) | {pct_cell(pf, which)}{of}"
                f"{' *' if alg else ''} | {pct_cell(pt, which)}{of} |")
        lines.append(line)
        print(line, flush=True)
    lines = [head, ""] + lines
    if a.ceilings_beside:
        unit = {"bw": "GB/s", "bw-beside": "GB/s", "gemm": "GFLOP/s"}
        per = ["Each round's fusecal fused form against the ceiling measured beside it (the rounds in order):"]
        per += [f"- `{r['problem']}`: " + ", ".join(f"{p:.0f} % of {v:.1f}" for p, v in
                                                     zip(r["round_pcts"], r["round_ceilings"]))
                + f" {unit.get(r['ceiling'], '')}" for r in rows]
        lines += [""] + per
        print("\n" + "\n".join(per), flush=True)
    if any(len(r["fusecal_fused_by_backend"]) > 1 for r in rows):
        per = ["Every fusecal backend's fused form, in the round of the row (ms; % of its ceiling, * of the FLOPs "
               "it performs):"]
        per += [f"- `{r['problem']}`: " + "; ".join(
            f"{e['backend']} {e['fused_ms']:.4g} ({pct_cell(e['pct_ceiling'], e['ceiling'])}"
            f"{' *' if e['of_flops_performed'] else ''})" for e in r["fusecal_fused_by_backend"]) for r in rows]
        lines += [""] + per
        print("\n" + "\n".join(per), flush=True)
    if any(r["over_ceiling"] for r in rows):
        lines += ["", OVER_NOTE]
        print("\n" + OVER_NOTE, flush=True)
    if any(r.get("fusecal_pct_of_flops_performed") for r in rows):
        lines += ["", PERFORMED_NOTE]
        print("\n" + PERFORMED_NOTE, flush=True)
    if a.out:
        with open(os.path.join(a.out, "compare.md"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
        with open(os.path.join(a.out, "compare.json"), "w") as fh:
            json.dump({"pytorch": torch.__version__, "threads": torch.get_num_threads(), "dtype": a.dtype,
                       "rounds": rounds, "ceilings": load(docs[0][0])["ceilings"]["cpu"],
                       "ceilings_beside": a.ceilings_beside, "argv": sys.argv,
                       "rows": rows}, fh, indent=1)
    missing = [r["problem"] for r in rows if not r["fusecal_fused_ms"] == r["fusecal_fused_ms"]]
    if missing:
        print(f"no fusecal record for: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
