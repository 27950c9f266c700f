#!/usr/bin/env bash
# A/B of the norm kernels (src/cpu/norm_ops.c) between an older revision and the
# tree, in one process (bench/norm_ab.c says how): each side's norm_ops.c compiled
# with its own header and its functions renamed, linked with build/'s libraries.
#   bench/norm_ab.sh OLD_REV [OUTFILE]      (default: print only)
# Runs the fused add + norms, the layer-norm pass and the fused RMSNorm + rope over
# an n ladder at m = 512 (warm, below the LLC), two problems past it (streamed) and
# one cold; 41 pairs each. Needs build/ (cmake --build build) and a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || {
    echo "usage: bench/norm_ab.sh OLD_REV [OUTFILE]" >&2
    exit 2
}
rev=$1 outfile=${2:-/dev/null}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/old"
git show "$rev:src/cpu/norm_ops.c" > "$dir/old/norm_ops.c"
git show "$rev:src/cpu/norm_ops.h" > "$dir/old/norm_ops.h"
names="fc_cpu_norm_streams fc_cpu_norm_io fc_cpu_norm_streamed_bytes fc_cpu_norm_streamed_words
fc_cpu_norm_streamed_bytes_st fc_cpu_layernorm_rows fc_cpu_rmsnorm_rows fc_cpu_rope fc_cpu_add_layernorm
fc_cpu_add_rmsnorm fc_cpu_rmsnorm_rope"
for side in old new; do
    {
        for n in $names; do echo "#define $n ${side}_$n"; done
        if [ $side = old ]; then echo "#include \"$dir/old/norm_ops.c\""; else echo "#include \"$PWD/src/cpu/norm_ops.c\""; fi
    } > "$dir/$side.c"
done
old_io=-UOLD_IO
grep -q fc_norm_io "$dir/old/norm_ops.h" && old_io=-DOLD_IO
cflags=(-O3 -march=native -std=c11 -D_GNU_SOURCE -fopenmp -ffp-contract=fast -I src/core -I src/registry)
# each side's norm_ops.c finds its own norm_ops.h first (its folder), then src/cpu's other headers
cc "${cflags[@]}" -I "$dir/old" -I src/cpu -c "$dir/old.c" -o "$dir/old.o"
cc "${cflags[@]}" -I src/cpu -c "$dir/new.c" -o "$dir/new.o"
cc "${cflags[@]}" "$old_io" -o "$dir/norm_ab" bench/norm_ab.c "$dir/old.o" "$dir/new.o" build/src/cpu/libfusecal_cpu.a \
    build/src/core/libfusecal_core.a -lopenblas -lcjson -lm
threads=$(nproc)
{
    echo "# norm_ab: $rev (old) against the tree at $(git rev-parse --short HEAD)$(git diff --quiet -- src/cpu || echo ' with changes') (new); $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $threads threads"
    for k in add_layernorm:128 add_layernorm:768 add_layernorm:1024 add_layernorm:2048 add_layernorm:4096 \
        add_rmsnorm:128 add_rmsnorm:1024 add_rmsnorm:4096 layernorm_rows:768 layernorm_rows:4096 \
        rmsnorm_rope:1024 rmsnorm_rope:4096; do
        OMP_NUM_THREADS=$threads OMP_PROC_BIND=close "$dir/norm_ab" "${k%%:*}" 512 "${k#*:}" 0 41 | grep -v '^check'
    done
    OMP_NUM_THREADS=$threads OMP_PROC_BIND=close "$dir/norm_ab" add_layernorm 512 4096 0 15 1 | grep -v '^check'
    OMP_NUM_THREADS=$threads OMP_PROC_BIND=close "$dir/norm_ab" add_layernorm 14592 768 1 15 | grep -v '^check'
    OMP_NUM_THREADS=$threads OMP_PROC_BIND=close "$dir/norm_ab" add_rmsnorm 2048 4096 1 15 | grep -v '^check'
} | tee "$outfile"
