#!/usr/bin/env bash
# The attention family on the CPU against the machine's ceilings (the targets:
# cpu.openblas's fused attention in fp32 at s >= 1024 at 60 % or more of the GEMM
# ceiling; decode (s = 1 over a long cache, the split-KV kernel) at 70 % or more of
# the bandwidth ceiling). Runs prefill problems along s (MHA, GQA, causal, LLaMA-3-8B)
# and decode problems along skv (LLaMA-3-8B's hkv = 8, d = 128) on the CPU backends
# and prints per record the unfused and fused latency, the speedup, and the fused
# form's GFLOP/s and GB/s as shares of the ceilings `fusecal info` measures. Run it on
# a quiet machine:
#   bench/attention_cpu.sh [OUTDIR]      (default results/$(bench/machine.sh)/attention)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_out "${1:-}" attention

prefill=()
for s in 1024 2048 4096; do prefill+=(--shape "attention:b=1,h=8,s=$s,d=64"); done
prefill+=(--shape attention:b=1,h=8,s=2048,d=128 --shape attention:b=1,h=8,s=2048,d=64,causal=1)
prefill+=(--shape attention:b=1,h=32,hkv=8,s=1024,d=128,causal=1)
decode=()
for skv in 1024 4096 16384; do decode+=(--shape "attention:b=1,h=32,hkv=8,s=1,skv=$skv,d=128"); done
decode+=(--shape attention:b=4,h=32,hkv=8,s=1,skv=4096,d=128)
run "$fusecal" run --device cpu --seed 17 --max-time 5 "${prefill[@]}" --out "$out/prefill.json" --quiet
run "$fusecal" run --device cpu --seed 19 --max-time 5 "${decode[@]}" --out "$out/decode.json" --quiet
python3 - "$out" <<'PY' | tee "$out/SUMMARY.md"
import json, sys
out = sys.argv[1]
for part, target in (("prefill", "GEMM ceiling, target 60 %"), ("decode", "bandwidth ceiling, target 70 %")):
    doc = json.load(open(f"{out}/{part}.json"))
    ceil = doc["ceilings"]["cpu"]
    gf, bw = ceil["gflops"]["fp32"], ceil["bandwidth_gbs"]
    print(f"## {part} ({target}; ceilings {gf:.1f} GFLOP/s, {bw:.1f} GB/s)\n")
    print("| backend | problem | unfused ms | fused ms | speedup [95% CI] | fused GFLOP/s | % GEMM | fused GB/s | % bandwidth |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for r in doc["records"]:
        if r["status"] != "ok":
            print(f"| {r['backend']} | {r['problem']} | {r['status']}: {r.get('reason', '')} | | | | | | |")
            continue
        f, s = r["variants"]["fused"], r["speedup"]
        print(f"| {r['backend']} | {r['problem']} | {r['unfused_latency_ms']:.4f} | {r['fused_latency_ms']:.4f} "
              f"| {s['ratio']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}] | {f['gflops']:.1f} | {100 * f['gflops'] / gf:.0f} "
              f"| {f['gbs']:.1f} | {100 * f['gbs'] / bw:.0f} |")
    print()
PY
