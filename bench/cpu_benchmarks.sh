#!/usr/bin/env bash
# The CPU benchmarks: the quick sweep of every pattern twice, minutes apart
# (bench/repeatability.sh: time and run-to-run stability), and one run of the
# target problems side by side.
#   bench/cpu_benchmarks.sh [OUTDIR]      (default results/$(bench/machine.sh))
# Writes OUTDIR/{info,quick-1,quick-2,targets}.json, OUTDIR/REPEATABILITY.md,
# OUTDIR/pytorch-cpu{,-bf16}/ (bench/compare_pytorch_cpu.py, every family beside
# PyTorch's eager and fused forms; where PyTorch is installed) and OUTDIR/SUMMARY.md; with
# FUSECAL_STANDARD=1 also the standard sweep (OUTDIR/standard.json, ~20 min on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_out "${1:-}"

run_to "$out/info.json" "$fusecal" info --format json
bash bench/repeatability.sh "$out"
run "$fusecal" run --device cpu --seed 7 --max-time 5 --min-time 1 \
    --shape conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,layout=nhwc \
    --shape linear_bias_relu:m=512,k=1024,n=1024 \
    --shape attention:b=1,h=8,s=1024,d=64 --shape attention:b=8,h=16,s=1024,d=64 \
    --shape attention:b=1,h=8,s=2048,d=64 --shape attention:b=1,h=4,s=4096,d=64 \
    --shape attention:b=1,h=8,s=256,d=64 --shape attention:b=1,h=8,s=512,d=64 \
    --shape attention:b=1,h=32,hkv=8,s=512,d=128,causal=1 --shape attention:b=1,h=32,hkv=8,s=1,skv=4096,d=128 \
    --out "$out/targets.json" --quiet
# every family beside PyTorch (Debian's python3-torch), fp32 and (where cpu.onednn
# computes it) bf16
torch_py=${TORCH_PYTHON:-/usr/bin/python3}
if "$torch_py" -c 'import torch' 2>/dev/null; then
    why="a benchmark beside PyTorch: minutes, and python3-torch"
    run_slow "$why" "$torch_py" bench/compare_pytorch_cpu.py --fusecal "$fusecal" --out "$out/pytorch-cpu"
    run_slow "$why" "$torch_py" bench/compare_pytorch_cpu.py --fusecal "$fusecal" --dtype bf16 --out "$out/pytorch-cpu-bf16"
else
    echo "cpu_benchmarks.sh: no PyTorch for $torch_py: the comparisons beside it left out (Debian: apt-get install python3-torch)" >&2
fi
if [ "${FUSECAL_STANDARD:-0}" = 1 ]; then
    run_slow "the standard sweep: twenty minutes" "$fusecal" run --sweep standard --seed 11 --out "$out/standard.json" --quiet
fi
python3 bench/summarize_cpu.py "$out" | tee "$out/SUMMARY.md"
