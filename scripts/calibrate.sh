#!/bin/sh
# Installs the dependencies, builds fusecal, and runs the quick sweep of every
# pattern on every usable device (the CPU; the GPU too when CUDA and one are
# present), printing a table and writing calibration.json.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
./build/fusecal info
./build/fusecal run --device all --sweep quick --out calibration.json
