#!/usr/bin/env python3
"""Summarizes bench/gpu_session.sh's output (results/h100/) against issue 3's
targets, as markdown:

    bench/summarize_gpu.py results/h100 [ctest.log] [sanitize.log]

Ceilings; the GPU tests' verdict; each quick sweep (records, failures, time, the
fused/unfused speedups eager and from graph replays); run-to-run stability of the
two fp32 sweeps; the PyTorch comparison; the elementwise kernels' bandwidth."""
import json
import re
import statistics
import sys
from pathlib import Path


def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tail_match(path, pattern):
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return []
    return re.findall(pattern, text, re.M)


def main():
    d = Path(sys.argv[1])
    logs = sys.argv[2:]
    print(f"# GPU session summary ({d})\n")
    info = load(d / "info.json")
    if info:
        dev = info["host"]["devices"].get("cuda", {})
        c = info["ceilings"].get("cuda", {})
        g = c.get("gflops", {})
        print(f"{dev.get('name', '?')}, {dev.get('sms', '?')} SMs, driver {dev.get('driver_version', '?')}, "
              f"CUDA runtime {dev.get('cuda_runtime', '?')}, cuBLAS {dev.get('cublas', '?')}, cuDNN {dev.get('cudnn', '?')}.")
        print(f"Ceilings: GEMM fp32 {g.get('fp32', 0) / 1e3:.1f}, tf32 {g.get('tf32', 0) / 1e3:.0f}, "
              f"bf16 {g.get('bf16', 0) / 1e3:.0f}, fp16 {g.get('fp16', 0) / 1e3:.0f} TFLOP/s; copy "
              f"{c.get('bandwidth_gbs', 0):.0f} GB/s; launch {c.get('launch_us', 0):.2f} us eager, "
              f"{c.get('graph_launch_us', 0):.2f} us in a graph.\n")
    for log in logs:
        lines = tail_match(log, r"^.*(?:tests passed|tests failed).*$")
        fails = tail_match(log, r"^.*CHECK failed.*$")
        print(f"- {Path(log).name}: {lines[-1].strip() if lines else 'no ctest verdict (not run or out of time)'}"
              + (f"; {len(fails)} failed checks, first: `{fails[0][:300]}`" if fails else ""))
    print()
    sweeps = {}
    for name in ("quick-bf16", "quick-fp32", "quick-fp32-2"):
        doc = load(d / f"{name}.json")
        if not doc:
            print(f"- {name}: missing")
            continue
        sweeps[name] = doc
        recs = doc["records"]
        st = {k: sum(r["status"] == k for r in recs) for k in ("ok", "failed", "skipped")}
        print(f"- {name}: {len(recs)} records, {st['ok']} ok, {st['failed']} failed, {st['skipped']} skipped, "
              f"{doc['elapsed_s']:.1f} s, complete={doc['complete']}")
        for r in recs:
            if r["status"] != "ok":
                print(f"  - {r['status']}: {r['problem']} on {r['backend']}: {r.get('reason', '')[:300]}")
    for name in ("quick-bf16", "quick-fp32"):
        doc = sweeps.get(name)
        if not doc:
            continue
        print(f"\n## {name}: speedup unfused/fused (eager, graph replay)\n")
        print("| problem | backend | unfused ms | fused ms | speedup [95% CI] | graph speedup | fused % roofline | fuse |")
        print("|---|---|---:|---:|---|---:|---:|---|")
        for r in doc["records"]:
            if r["status"] != "ok":
                continue
            u, f = r["variants"]["unfused"], r["variants"]["fused"]
            sp, gs = r["speedup"], r.get("speedup_graph", {})
            print(f"| {r['problem'].split(',dtype')[0]} | {r['backend']} | {u['latency_ms']['median']:.4g} | "
                  f"{f['latency_ms']['median']:.4g} | {sp['ratio']:.2f} [{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}] | "
                  f"{gs.get('ratio', float('nan')):.2f} | {f.get('pct_roofline', 0):.0f} | {r['decision']} |")
    a, b = sweeps.get("quick-fp32"), sweeps.get("quick-fp32-2")
    if a and b:
        ka = {(r["problem"], r["backend"]): r for r in a["records"] if r["status"] == "ok"}
        kb = {(r["problem"], r["backend"]): r for r in b["records"] if r["status"] == "ok"}
        diffs = []
        for k in ka.keys() & kb.keys():
            s1, s2 = ka[k]["speedup"]["ratio"], kb[k]["speedup"]["ratio"]
            diffs.append(abs(s1 - s2) / ((s1 + s2) / 2))
        if diffs:
            print(f"\nStability (two fp32 quick sweeps, {len(diffs)} records): median speedup difference "
                  f"{100 * statistics.median(diffs):.2f} % (target <= 2 %), max {100 * max(diffs):.2f} %.")
    for name in ("quick-bf16", "quick-fp32"):
        doc = sweeps.get(name)
        if doc:
            print(f"Quick sweep time {name}: {doc['elapsed_s']:.1f} s (target <= 60 s).")
    cmp = load(d / "compare.json")
    if cmp:
        print(f"\n## Targets vs PyTorch ({cmp.get('torch', '')})\n")
        print("| target | fusecal fused ms | torch fused ms | fusecal unfused ms | torch unfused ms | value | met |")
        print("|---|---:|---:|---:|---:|---|---|")
        for r in cmp["results"]:
            def num(x):
                return f"{x:.4g}" if isinstance(x, (int, float)) else "-"
            print(f"| {r['name']} | {num(r['fusecal_fused_ms'])} | {num(r['torch_fused_ms'])} | "
                  f"{num(r['fusecal_unfused_ms'])} | {num(r['torch_unfused_ms'])} | {r['target']}: "
                  f"{num(r['target_value'])} | {'yes' if r['met'] else 'NO'} {r.get('note', '')} |")
    ew = d / "elementwise.txt"
    if ew.exists():
        print("\n## Elementwise kernels\n")
        for line in ew.read_text().splitlines():
            if line.startswith("elementwise"):
                print(f"    {line}")


if __name__ == "__main__":
    main()
