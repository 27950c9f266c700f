#!/usr/bin/env python3
"""The conv family's PyTorch equivalents on the CPU, timed beside fusecal.

    bench/pytorch_conv_cpu.py [--fusecal BIN] [--threads N] [--max-time S] [PROBLEM...]

For each conv problem string (default: the conv_bn_relu target and one problem of
each conv pattern), times PyTorch (Debian's python3-torch, CPU, fp32) and, with
--fusecal, runs `fusecal run --device cpu` on the same problems, then prints the
unfused and fused latency of both and the ratio fusecal / PyTorch (best backend,
best PyTorch form). Run it on a quiet machine: samples are medians of batches, but
a loaded machine moves them.

PyTorch's forms, as fusecal defines the patterns (layout=nhwc: channels_last tensors;
groups: nn.Conv2d(groups=g), W [k, c/g, r, s]; depthwise: groups = c = k):
  unfused  eager, one call per op, each writing a tensor:
           F.conv2d(x, W, b) -> F.batch_norm(eval: running mean and var, γ, β)
           [-> + r] -> F.relu
  fused    the best of:
           eager folded   F.conv2d(x, W', b') [-> .add_(r)] -> .relu_()  (BN folded:
                          W' = W·γ/√(σ²+ε), b' = (b−μ)·γ/√(σ²+ε)+β; in-place tail)
           jit frozen     torch.jit.freeze + optimize_for_inference of
                          Conv2d -> BatchNorm2d [-> + r] -> ReLU (folds BN, and lets
                          oneDNN fuse the ReLU and the add where it can)
One OpenMP pool: torch.set_num_threads(N), N = fusecal's threads (all cores). glibc is
told to keep freed memory (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_), so that
eager PyTorch's per-call output tensors reuse pages instead of faulting them in.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PROBLEMS = [
    "conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,layout=nhwc",
    "dwconv_bn_relu:n=1,c=144,h=56,w=56,k=144,r=3,s=3,pad=1,layout=nhwc",
    "dwconv_bn_relu:n=1,c=576,h=14,w=14,k=576,r=3,s=3,stride=2,pad=1,layout=nhwc",
    "conv_bn_add_relu:n=1,c=64,h=56,w=56,k=256,r=1,s=1,layout=nhwc",
    "conv_bn_add_relu:n=1,c=512,h=7,w=7,k=2048,r=1,s=1,layout=nhwc",
    "conv_bn_relu:n=1,c=256,h=28,w=28,k=256,r=3,s=3,pad=1,g=32,layout=nhwc",
]
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}


def parse(problem):
    pat, _, rest = problem.partition(":")
    kv = dict(t.split("=") for t in rest.split(",") if t)
    d = {k: int(v) for k, v in kv.items() if k not in ("layout", "dtype")}
    d.setdefault("r", 3), d.setdefault("s", 3), d.setdefault("stride", 1), d.setdefault("pad", 0)
    d.setdefault("g", d["c"] if pat == "dwconv_bn_relu" else 1)
    return pat, d, kv.get("layout", "nhwc")


def median_ms(fn, max_time):
    """Median per-call time of batched samples (each at least ~2 ms)."""
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


def torch_forms(torch, pat, d, layout):
    """(unfused callable, {fused form name: callable}) for one problem."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(1)
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    n, c, h, w, k, r, s, G = d["n"], d["c"], d["h"], d["w"], d["k"], d["r"], d["s"], d["g"]
    st, pad = d["stride"], d["pad"]

    def rand(*shape, lo=-1.0, hi=1.0):
        return torch.rand(*shape, generator=g) * (hi - lo) + lo

    a = 1.5 / ((c // G) * r * s) ** 0.5
    x = rand(n, c, h, w).contiguous(memory_format=fmt)
    W = rand(k, c // G, r, s, lo=-a, hi=a).contiguous(memory_format=fmt)
    b, gam, beta = rand(k, lo=-0.25, hi=0.75), rand(k, lo=0.5, hi=1.5), rand(k, lo=-0.25, hi=0.75)
    mu, var = rand(k, lo=-0.2, hi=0.2), rand(k, lo=0.25, hi=1.25)
    p, q = (h + 2 * pad - r) // st + 1, (w + 2 * pad - s) // st + 1
    resid = pat == "conv_bn_add_relu"
    res = rand(n, k, p, q, lo=-0.5, hi=0.5).contiguous(memory_format=fmt) if resid else None
    inv = gam / torch.sqrt(var + 1e-5)
    Wf = (W * inv.view(-1, 1, 1, 1)).contiguous(memory_format=fmt)
    bf = (b - mu) * inv + beta

    def unfused():
        y = F.batch_norm(F.conv2d(x, W, b, st, pad, 1, G), mu, var, gam, beta, False, 0.0, 1e-5)
        return F.relu(y + res if resid else y)

    def folded():
        y = F.conv2d(x, Wf, bf, st, pad, 1, G)
        return (y.add_(res) if resid else y).relu_()

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(c, k, (r, s), st, pad, groups=G)
            self.bn = torch.nn.BatchNorm2d(k, eps=1e-5)
            with torch.no_grad():
                self.conv.weight.copy_(W)
                self.conv.bias.copy_(b)
                self.bn.weight.copy_(gam), self.bn.bias.copy_(beta)
                self.bn.running_mean.copy_(mu), self.bn.running_var.copy_(var)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))

    class BlockAdd(Block):
        def forward(self, x, res):
            return torch.relu(self.bn(self.conv(x)) + res)

    forms = {"eager folded": folded}
    try:
        m = torch.jit.freeze(torch.jit.script((BlockAdd if resid else Block)().eval().to(memory_format=fmt)))
        m = torch.jit.optimize_for_inference(m)
        forms["jit frozen"] = (lambda: m(x, res)) if resid else (lambda: m(x))
    except Exception as err:  # a form PyTorch cannot make here is left out, and said so
        print(f"  (jit frozen form unavailable: {err})", file=sys.stderr)
    ref = unfused()
    for name, fn in forms.items():
        err = float((fn() - ref).norm() / ref.norm())
        if err > 1e-4:
            raise SystemExit(f"{pat}: PyTorch's {name} form differs from its unfused chain by {err:.2g}")
    return unfused, forms


def run_fusecal(binary, problems, threads, max_time):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "conv.json")
        cmd = [binary, "run", "--device", "cpu", "--quiet", "--seed", "7", "--max-time", str(max_time),
               "--out", out] + (["--threads", str(threads)] if threads else [])
        for pr in problems:
            cmd += ["--shape", pr]
        print("$ " + " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True)
        with open(out) as f:
            return json.load(f)["records"]


def best(records, problem, variant):
    """fusecal's best median over backends for a problem (as the caller wrote it)."""
    pat, d, layout = parse(problem)
    found = []
    for rec in records:
        rpat, rd, rl = parse(rec["problem"])
        if rpat == pat and rl == layout and all(rd.get(kk) == v for kk, v in d.items()) and rec["status"] == "ok":
            found.append((rec["variants"][variant]["latency_ms"]["median"], rec["backend"]))
    return min(found) if found else (float("nan"), "-")


def main():
    if any(k not in os.environ for k in MALLOC_ENV):
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **MALLOC_ENV})
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problems", nargs="*", default=PROBLEMS)
    ap.add_argument("--fusecal", help="the fusecal binary (build/fusecal); without it, PyTorch alone")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--max-time", type=float, default=2.0, help="seconds of samples per form")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    records = run_fusecal(a.fusecal, a.problems, a.threads, a.max_time) if a.fusecal else []
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads; latencies in ms (medians)")
    print("| problem | PyTorch unfused | PyTorch fused (form) | fusecal unfused | fusecal fused (backend) "
          "| fused fusecal / PyTorch |")
    print("| --- | --- | --- | --- | --- | --- |")
    for pr in a.problems:
        pat, d, layout = parse(pr)
        with torch.no_grad():
            unfused, forms = torch_forms(torch, pat, d, layout)
            tu = median_ms(unfused, a.max_time)
            tf, form = min((median_ms(fn, a.max_time), name) for name, fn in forms.items())
        fu, _ = best(records, pr, "unfused")
        ff, bk = best(records, pr, "fused")
        print(f"| `{pr}` | {tu:.3f} | {tf:.3f} ({form}) | {fu:.3f} | {ff:.3f} ({bk}) | {ff / tf:.2f} |")


if __name__ == "__main__":
    main()
