#!/usr/bin/env bash
# The norm family on the CPU against the machine's bandwidth ceiling (the
# target: fused norms at 80 % or more of what `fusecal info` measures). Runs the
# standard sweep's norm problems (an n ladder 128..8192 at m = 512, BERT-base and
# LLaMA-7B/8B shapes) on every CPU backend, warm and cold, and prints per record the
# unfused and fused latency, the speedup and the fused form's GB/s as a share of the
# ceiling. Run it on a quiet machine:
#   bench/norm_cpu.sh [OUTDIR]      (default results/$(bench/machine.sh)/norm)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_out "${1:-}" norm

for cache in warm cold; do
    run "$fusecal" run --device cpu --pattern add_layernorm,add_rmsnorm,qk_norm_rope --sweep standard \
        --cache "$cache" --seed 13 --out "$out/norm-$cache.json" --quiet
done
python3 - "$out" <<'PY' | tee "$out/SUMMARY.md"
import json, sys
out = sys.argv[1]
for cache in ("warm", "cold"):
    doc = json.load(open(f"{out}/norm-{cache}.json"))
    bw = doc["ceilings"]["cpu"]["bandwidth_gbs"]
    print(f"## {cache} cache (bandwidth ceiling {bw:.1f} GB/s)\n")
    print("| backend | problem | unfused ms | fused ms | speedup [95% CI] | fused GB/s | % of ceiling |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: |")
    for r in doc["records"]:
        if r["status"] != "ok":
            print(f"| {r['backend']} | {r['problem']} | {r['status']}: {r.get('reason', '')} | | | | |")
            continue
        f, s = r["variants"]["fused"], r["speedup"]
        print(f"| {r['backend']} | {r['problem']} | {r['unfused_latency_ms']:.4f} | {r['fused_latency_ms']:.4f} "
              f"| {s['ratio']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}] | {f['gbs']:.1f} | {100 * f['gbs'] / bw:.0f} |")
    print()
PY
