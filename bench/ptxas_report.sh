#!/bin/sh
# Registers, spills and shared memory of every kernel in kernels/ for one GPU
# architecture, from ptxas -v (no GPU needed):
#   sh bench/ptxas_report.sh [ARCH]     (default sm_90)
# One line per entry point: registers, spill stores/loads (bytes), stack frame
# (bytes), static shared memory (bytes), the demangled name.
set -eu
cd "$(dirname "$0")/.."
arch=${1:-sm_90}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-5s %-6s %-6s %-6s %-7s %s\n' regs spillS spillL stack smem kernel
for f in kernels/*.cu; do
    "$nvcc" -arch="$arch" -O3 -Ikernels -c "$f" -o "$tmp/k.o" -Xptxas -v 2>"$tmp/log" || { cat "$tmp/log"; exit 1; }
    awk '
        /Compiling entry function/ { match($0, /\x27[^\x27]+\x27/); name = substr($0, RSTART + 1, RLENGTH - 2) }
        /bytes stack frame/ { stack = $1; st = $5; ld = $9 }
        /Used [0-9]+ registers/ {
            regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
            smem = 0; if (match($0, /[0-9]+ bytes smem/)) { smem = substr($0, RSTART); sub(/ .*/, "", smem) }
            print regs, st, ld, stack, smem, name
        }' "$tmp/log"
done | while read -r regs st ld stack smem name; do
    printf '%-5s %-6s %-6s %-6s %-7s %s\n' "$regs" "$st" "$ld" "$stack" "$smem" "$(echo "$name" | c++filt)"
done
