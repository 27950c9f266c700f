#!/usr/bin/env bash
# What cpu.openblas's direct 3×3 conv reaches called alone (the target: 90 % of the
# GEMM ceiling at conv_bn_relu 1×64×56×56 → 64): bench/conv_loop.c times the fused
# form's kernel in a loop on one set of buffers, alone and with other traffic
# between the calls, in one process, so that the gap to a record's medians (fresh
# buffers each round, the chain's calls interleaved) is the timing's, not the kernel's.
#   bench/conv_loop.sh [OUTDIR]   (default results/$(bench/machine.sh))
# Needs build/ (the kernels come from its static libraries). Writes
# OUTDIR/conv-loop.txt: three rounds of 1500 calls each way.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_out "${1:-}"
bin=$(mktemp -d)/conv_loop
trap 'rm -rf "$(dirname "$bin")"' EXIT
cc -O3 -march=native -std=c11 -D_GNU_SOURCE -fopenmp -I src/cpu -I src/core -o "$bin" \
    bench/conv_loop.c build/src/cpu/libfusecal_cpu.a build/src/measure/libfusecal_measure.a \
    build/src/core/libfusecal_core.a build/src/cpu/libfusecal_cpu.a -lopenblas -lcjson -lm
note "# bench/conv_loop.sh: cc -O3 -march=native -fopenmp bench/conv_loop.c with build/'s kernels, then conv_loop 1 64 56 56 64 1500 three times (conv-loop.txt)"
threads=$(nproc)
{
    echo "# $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(git rev-parse --short HEAD)"
    for r in 1 2 3; do
        echo "# round $r"
        OMP_NUM_THREADS=$threads "$bin" 1 64 56 56 64 1500
    done
} | tee "$out/conv-loop.txt"
