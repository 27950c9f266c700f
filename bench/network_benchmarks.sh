#!/usr/bin/env bash
# The networks on the CPU, for the record (run on a quiet machine):
#   bench/network_benchmarks.sh [OUTDIR]      (default results/$(bench/machine.sh))
# For resnet50 and mobilenet_v2 at batch 1: `fusecal run --network` with the default
# stopping rule (OUTDIR/network-NAME.json, its wall time in OUTDIR/network-times.txt),
# then bench/network_vs_pytorch.py on it (OUTDIR/network-NAME-pytorch.{txt,json}):
# PyTorch eager against BN-folded/frozen end to end, the ratio predicted / realized.
# NETWORKS="resnet50 ..." picks others for the fusecal part (the PyTorch part knows
# resnet50 and mobilenet_v2).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_out "${1:-}"
cores=$(nproc)
torch_py=${TORCH_PYTHON:-/usr/bin/python3}
for net in ${NETWORKS:-resnet50 mobilenet_v2}; do
    start=$(date +%s)
    run "$fusecal" run --network "$net" --device cpu --seed 13 --out "$out/network-$net.json" --quiet
    echo "$net: $(($(date +%s) - start)) s for fusecal run --network $net ($cores cores)" | tee -a "$out/network-times.txt"
    case $net in resnet50 | mobilenet_v2) ;; *) continue ;; esac
    if "$torch_py" -c 'import torch, torchvision' 2>/dev/null; then
        run_slow "a benchmark beside PyTorch: minutes, and python3-torch" "$torch_py" bench/network_vs_pytorch.py "$out/network-$net.json" --network "$net" \
            --json "$out/network-$net-pytorch.json" | tee "$out/network-$net-pytorch.txt"
    else
        echo "network_benchmarks.sh: no PyTorch and torchvision for $torch_py: $net's comparison left out (Debian: apt-get install python3-torch python3-torchvision)" >&2
    fi
done
