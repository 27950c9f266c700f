#!/usr/bin/env python3
"""Summarizes bench/gpu_session.sh's output (results/<gpu>/) as markdown:

    bench/summarize_gpu.py RESULTS_DIR [ctest.log] [sanitize.log] ...

The GPU and its ceilings (info.json); each log's ctest verdict and first failed
check; every quick sweep in RESULTS_DIR (quick-*.json, calibration documents of
schema version 2): records, failures with their reasons, time, whether it
completed, and per record the speedup with its interval, the graph-replay speedup,
which timing decided (decided_by), the rounds, the control's split into
implementation and fusion, the fused attention kernel and the decision; the
run-to-run agreement of quick-fp32 and quick-fp32-2; the PyTorch comparison
(compare.json, and sites/ and flash2/compare.json when present) with the SDPA backends it
timed; the elementwise kernels' bandwidth. A missing or unreadable file is said so,
never fatal: the summary is written whatever failed before it."""
import json
import re
import statistics
import sys
from pathlib import Path

SCHEMA_VERSION = 2


def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def grep(path, pattern):
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return []
    return re.findall(pattern, text, re.M)


def num(x, fmt="{:.4g}"):
    return fmt.format(x) if isinstance(x, (int, float)) else "-"


def ci(r):
    return f"{r['ratio']:.2f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]" if r else "-"


def info_section(d):
    info = load(d / "info.json")
    if not info:
        print("- info.json: missing (fusecal info did not run or failed)\n")
        return
    dev = info.get("host", {}).get("devices", {}).get("cuda", {})
    c = info.get("ceilings", {}).get("cuda", {})
    g = c.get("gflops", {})
    print(f"{dev.get('name', '?')}, {dev.get('sms', '?')} SMs, driver {dev.get('driver_version', '?')}, "
          f"CUDA runtime {dev.get('cuda_runtime', '?')}, cuBLAS {dev.get('cublas', '?')}, "
          f"cuDNN {dev.get('cudnn', '?')}.")
    pk = c.get("peak_gflops", {}).get("fp32")
    print(f"Ceilings: " + (f"fp32 arithmetic peak {pk / 1e3:.1f} TFLOP/s; " if pk else "") +
          f"GEMM fp32 {g.get('fp32', 0) / 1e3:.1f}, tf32 {g.get('tf32', 0) / 1e3:.0f}, "
          f"bf16 {g.get('bf16', 0) / 1e3:.0f}, fp16 {g.get('fp16', 0) / 1e3:.0f} TFLOP/s; copy "
          f"{c.get('bandwidth_gbs', 0):.0f} GB/s; launch {c.get('launch_us', 0):.2f} us eager, "
          f"{c.get('graph_launch_us', 0):.2f} us in a graph ({c.get('method', 'method not given')}).\n")


def logs_section(logs):
    for log in logs:
        lines = grep(log, r"^.*(?:tests passed|tests failed).*$")
        fails = grep(log, r"^.*(?:CHECK failed|FAIL ).*$")
        # a log may hold several ctest runs (the gpu tests, then cli_kernel): each verdict
        verdict = "; ".join(x.strip() for x in lines) if lines else "no ctest verdict (not run, skipped or out of time)"
        first = f"; {len(fails)} failed checks, first: `{fails[0][:300]}`" if fails else ""
        print(f"- {Path(log).name}: {verdict}{first}")
    print()


def load_sweeps(d):
    sweeps = {}
    for p in sorted(d.glob("quick-*.json"), key=lambda p: (p.stem.count("-"), p.stem)):
        doc = load(p)
        if doc is None:
            print(f"- {p.stem}: unreadable")
        elif doc.get("schema_version") != SCHEMA_VERSION:
            print(f"- {p.stem}: schema version {doc.get('schema_version')}, this summary reads {SCHEMA_VERSION}")
        else:
            sweeps[p.stem] = doc
    if not sweeps:
        print("- no quick sweep (quick-*.json) to summarize")
    return sweeps


def sweep_overview(name, doc):
    recs = doc["records"]
    st = {k: sum(r["status"] == k for r in recs) for k in ("ok", "failed", "skipped")}
    dec = {k: sum(r.get("decision") == k for r in recs) for k in ("yes", "no", "inconclusive")}
    graph = sum(r.get("decided_by") == "graph" for r in recs)
    print(f"- {name}: {len(recs)} records, {st['ok']} ok, {st['failed']} failed, {st['skipped']} skipped; fuse "
          f"{dec['yes']} yes, {dec['no']} no, {dec['inconclusive']} inconclusive; {graph} decided by graph replay; "
          f"{doc.get('elapsed_s', 0):.1f} s, complete={doc.get('complete')}")
    for r in recs:
        if r["status"] != "ok":
            print(f"  - {r['status']}: {r['problem']} on {r['backend']}: {r.get('reason', '')[:300]}")


def sweep_table(name, doc):
    print(f"\n## {name}\n")
    print("| problem | backend | unfused ms | fused ms | speedup [95% CI] | graph speedup | decided by | rounds | "
          "implementation / fusion | fused % roofline | kernel | fuse |")
    print("|---|---|---:|---:|---|---|---|---:|---|---:|---|---|")
    for r in doc["records"]:
        if r["status"] != "ok":
            continue
        v = r["variants"]
        u, f = v["unfused"], v["fused"]
        split = r.get("speedup_split")
        sp = f"{ci(split['implementation'])} / {ci(split['fusion'])}" if split else "-"
        over = " (over a ceiling)" if any(x.get("over_ceiling") for x in v.values()) else ""
        print(f"| {r['problem']} | {r['backend']} | {num(u['latency_ms']['median'])} | "
              f"{num(f['latency_ms']['median'])} | {ci(r['speedup'])} | {ci(r.get('speedup_graph'))} | "
              f"{r.get('decided_by', '-')} | {r.get('rounds', '-')} | {sp} | {f.get('pct_roofline', 0):.0f}{over} | "
              f"{f.get('attention_kernel', '-')} | {r['decision']} |")


def stability(a, b):
    ka = {(r["problem"], r["backend"]): r for r in a["records"] if r["status"] == "ok"}
    kb = {(r["problem"], r["backend"]): r for r in b["records"] if r["status"] == "ok"}
    common = sorted(ka.keys() & kb.keys())
    if not common:
        return
    diffs, covered, hard, soft = [], 0, 0, 0
    for k in common:
        ra, rb = ka[k], kb[k]
        s1, s2 = ra["speedup"]["ratio"], rb["speedup"]["ratio"]
        diffs.append(abs(s1 - s2) / ((s1 + s2) / 2))
        covered += ra["speedup"]["ci95"][0] <= s2 <= ra["speedup"]["ci95"][1]
        covered += rb["speedup"]["ci95"][0] <= s1 <= rb["speedup"]["ci95"][1]
        da, db = ra["decision"], rb["decision"]
        hard += {da, db} == {"yes", "no"}
        soft += da != db and "inconclusive" in (da, db)
    print(f"\nStability (quick-fp32 against quick-fp32-2, {len(common)} records): median |speedup difference| "
          f"{100 * statistics.median(diffs):.2f} %, max {100 * max(diffs):.2f} %; the other run's speedup inside a "
          f"record's 95 % interval in {100 * covered / (2 * len(common)):.0f} % of cases; decision flips: {hard} "
          f"yes<->no, {soft} to or from inconclusive.")


def compare_section(path, title):
    cmp = load(path)
    if not cmp:
        print(f"\n- {path.name} ({title}): missing")
        return
    print(f"\n## {title}: {cmp.get('torch', '')}\n")
    print("| target | fusecal kernel | fusecal fused ms | torch fused ms | fusecal unfused ms | torch unfused ms | "
          "value | met |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    for r in cmp.get("results", []):
        print(f"| {r['name']} | {r.get('fusecal_kernel') or '-'} | {num(r.get('fusecal_fused_ms'))} | "
              f"{num(r.get('torch_fused_ms'))} | {num(r.get('fusecal_unfused_ms'))} | "
              f"{num(r.get('torch_unfused_ms'))} | {r.get('target', '')}: {num(r.get('target_value'))} | "
              f"{'yes' if r.get('met') else 'NO'} {r.get('note', '')} |")
    for r in cmp.get("results", []):
        sdpa = r.get("torch_sdpa")
        if sdpa:
            times = ", ".join(f"{b} {t:.4g} ms" for b, t in sdpa.get("sdpa_ms", {}).items())
            refused = "; ".join(f"{b}: {w}" for b, w in sdpa.get("sdpa_refused", {}).items())
            print(f"- {r['name']}: PyTorch's dispatch picks {sdpa.get('sdpa_dispatch')} "
                  f"({num(sdpa.get('sdpa_dispatch_ms'))} ms); {times or 'no backend timed alone'}"
                  f"{'; refused: ' + refused if refused else ''}; SDPA here = {sdpa.get('sdpa_reference')}")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = Path(sys.argv[1])
    print(f"# GPU session summary ({d})\n")
    info_section(d)
    logs_section(sys.argv[2:])
    sweeps = load_sweeps(d)
    for name, doc in sweeps.items():
        sweep_overview(name, doc)
    for name, doc in sweeps.items():
        sweep_table(name, doc)
    if "quick-fp32" in sweeps and "quick-fp32-2" in sweeps:
        stability(sweeps["quick-fp32"], sweeps["quick-fp32-2"])
    compare_section(d / "compare.json", "Targets against PyTorch")
    if (d / "sites" / "compare.json").exists():
        compare_section(d / "sites" / "compare.json", "The newer fusion sites against PyTorch")
    if (d / "flash2" / "compare.json").exists():
        compare_section(d / "flash2" / "compare.json", "Attention targets with --kernel flash2")
    ew = d / "elementwise.txt"
    if ew.exists():
        print("\n## Elementwise kernels\n")
        for line in ew.read_text().splitlines():
            if line.startswith("elementwise"):
                print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
