#!/usr/bin/env bash
# The linear family's gated unit (linear_swiglu) and GELU prologue (gelu_linear) on
# the CPU backends: the standard sweep's problems of the two patterns (the quick one,
# the k ladder from 128 to 4096 at m=512, n=1024, and the LLaMA-7B, LLaMA-3-8B and
# BERT-base shapes), then a table of unfused and fused latency, the speedup with its
# interval, the split into implementation and fusion (cpu.openblas's control variant)
# and the decision.
#   bench/linear_gated.sh [OUTDIR]      (default results/$(bench/machine.sh))
# Writes OUTDIR/linear-gated.json and OUTDIR/linear-gated.md and appends the command
# to OUTDIR/commands.txt. About 10 minutes on 2 cores; run it on a quiet machine
# (fusecal warns when the load average says otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_out "${1:-}"

run "$fusecal" run --device cpu --pattern linear_swiglu,gelu_linear --sweep standard --seed 13 \
    --out "$out/linear-gated.json" --quiet
python3 - "$out/linear-gated.json" <<'EOF' | tee "$out/linear-gated.md"
import json
import sys

doc = json.load(open(sys.argv[1]))
print("| problem | backend | unfused ms | fused ms | speedup [95% CI] | implementation / fusion | fuse |")
print("| --- | --- | ---: | ---: | --- | --- | --- |")
for r in doc["records"]:
    if r["status"] != "ok":
        print(f"| {r['problem']} | {r['backend']} | | | {r['status']}: {r.get('reason', '')} | | |")
        continue
    v, sp = r["variants"], r["speedup"]
    split = r.get("speedup_split")
    parts = ""
    if split:
        parts = f"{split['implementation']['ratio']:.3f}x / {split['fusion']['ratio']:.3f}x"
    print(f"| {r['problem']} | {r['backend']} | {v['unfused']['latency_ms']['median']:.4g} | "
          f"{v['fused']['latency_ms']['median']:.4g} | {sp['ratio']:.3f}x [{sp['ci95'][0]:.3f}, {sp['ci95'][1]:.3f}] | "
          f"{parts} | {r['decision']} |")
EOF
