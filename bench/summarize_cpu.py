#!/usr/bin/env python3
"""Summarizes bench/cpu_benchmarks.sh's output against the CPU targets:
quick sweep time and run-to-run stability, fused conv_bn_relu on cpu.onednn,
fused linear_bias_relu against the sgemm ceiling, and fused vs unfused attention
on cpu.openblas by sequence length."""
import json
import statistics
import sys
from pathlib import Path


def load(p):
    with open(p) as f:
        return json.load(f)


def key(r):
    return (r["problem"], r["backend"])


def gemm_pct(r, v):
    """A variant's % of the GEMM rate: pct_gemm, or, in records written before the
    arithmetic peak was measured, pct_peak_flops (then of the GEMM rate)."""
    return v["pct_gemm"] if "pct_gemm" in v else v["pct_peak_flops"]


def peak_pct(r, v):
    """A variant's % of the arithmetic peak, '-' in records without one."""
    return f"{v['pct_peak_flops']:.1f}" if "peak_gflops" in r.get("roofline", {}) else "-"


def main():
    out = Path(sys.argv[1])
    q1, q2, t = load(out / "quick-1.json"), load(out / "quick-2.json"), load(out / "targets.json")
    cpu = q1["host"]["devices"]["cpu"]
    print(f"# CPU benchmarks: {cpu['model']}, {cpu['cores']} cores, {cpu.get('threads')} threads\n")
    libs = q1["host"]["libraries"]
    print(f"OpenBLAS `{libs['openblas']['config']}` ({libs['openblas']['parallel']}); "
          f"oneDNN {libs.get('onednn', {}).get('version', '-')} ({libs.get('onednn', {}).get('isa', '-')}); "
          f"fusecal {q1['tool']['version']} ({q1['tool']['git_revision']}).\n")
    ceil = t["ceilings"]["cpu"]
    peak = ceil.get("peak_gflops", {}).get("fp32")
    print(f"Measured ceilings (targets run): " + (f"arithmetic peak {peak:.1f} GFLOP/s, " if peak else "") +
          f"GEMM {ceil['gflops']['fp32']:.1f} GFLOP/s, memory {ceil['bandwidth_gbs']:.1f} GB/s ({ceil['method']}).\n")
    print("## Quick sweep, all patterns, twice\n")
    for name, d in (("quick-1", q1), ("quick-2", q2)):
        n = len(d["records"])
        ok = sum(r["status"] == "ok" for r in d["records"])
        print(f"- {name}: {n} records ({ok} ok), {d['elapsed_s']:.1f} s, complete={d['complete']}")
    a = {key(r): r for r in q1["records"] if r["status"] == "ok"}
    b = {key(r): r for r in q2["records"] if r["status"] == "ok"}
    diffs = []
    flips = 0
    for k in a.keys() & b.keys():
        s1, s2 = a[k]["speedup"]["ratio"], b[k]["speedup"]["ratio"]
        diffs.append(abs(s1 - s2) / ((s1 + s2) / 2))
        flips += a[k]["decision"] != b[k]["decision"]
    diffs.sort()
    print(f"- speedup difference between the runs over {len(diffs)} records: median {100 * statistics.median(diffs):.2f} %, "
          f"90th percentile {100 * diffs[int(0.9 * (len(diffs) - 1))]:.2f} %, max {100 * diffs[-1]:.2f} %; "
          f"{flips} decisions differ\n")
    print("## Targets, one run\n")
    print("| problem | backend | unfused ms | fused ms | speedup [95% CI] | fused GFLOP/s | % GEMM rate | % peak | fuse |")
    print("|---|---|---:|---:|---|---:|---:|---:|---|")
    for r in t["records"]:
        if r["status"] != "ok":
            print(f"| {r['problem']} | {r['backend']} | {r['status']}: {r.get('reason', '')} ||||||")
            continue
        u, f = r["variants"]["unfused"], r["variants"]["fused"]
        sp = r["speedup"]
        print(f"| {r['problem']} | {r['backend']} | {u['latency_ms']['median']:.4g} | {f['latency_ms']['median']:.4g} | "
              f"{sp['ratio']:.3f} [{sp['ci95'][0]:.3f}, {sp['ci95'][1]:.3f}] | {f['gflops']:.1f} | "
              f"{gemm_pct(r, f):.1f} | {peak_pct(r, f)} | {r['decision']} |")


if __name__ == "__main__":
    main()
