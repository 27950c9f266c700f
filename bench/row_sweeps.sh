#!/usr/bin/env bash
# What bounds the fused add + norm kernels that stream (the target: 80 % of the
# bandwidth): bench/row_sweeps.c times fusecal's add_layernorm and add_rmsnorm
# kernels beside the plainest loops with the same traffic (a flat triad, the same
# row by row, the two sweeps a row needs with nothing else), in one process,
# alternated, so that each share is of the same minutes' memory.
#   bench/row_sweeps.sh [OUTDIR]   (default results/$(bench/machine.sh))
# Needs build/ (the kernels come from its static libraries). Writes
# OUTDIR/row-sweeps.txt: the problems of the norm targets, LLaMA's add_rmsnorm
# (2048 x 4096) and BERT-base's add_layernorm (14592 x 768), five rounds each.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_out "${1:-}"
bin=$(mktemp -d)/row_sweeps
trap 'rm -rf "$(dirname "$bin")"' EXIT
cc -O3 -march=native -std=c11 -D_GNU_SOURCE -fopenmp -I src/cpu -I src/core -I src/registry -o "$bin" \
    bench/row_sweeps.c build/src/cpu/libfusecal_cpu.a build/src/core/libfusecal_core.a -lopenblas -lcjson -lm
note "# bench/row_sweeps.sh: cc -O3 -march=native -fopenmp bench/row_sweeps.c with build/'s kernels, then row_sweeps 2048 4096 5 10 and row_sweeps 14592 768 5 10 (row-sweeps.txt)"
threads=$(nproc)
{
    echo "# $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(git rev-parse --short HEAD)"
    OMP_NUM_THREADS=$threads "$bin" 2048 4096 5 10
    OMP_NUM_THREADS=$threads "$bin" 14592 768 5 10
} | tee "$out/row-sweeps.txt"
