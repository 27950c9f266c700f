#!/bin/sh
# Fetches, here (where Debian's archive is reachable), the packages fusecal's build
# needs that the GPU machine's image lacks, into .gpu-debs/ (ignored by git):
# cJSON and the OpenMP build of OpenBLAS (oneDNN is optional and left out). Carry
# .gpu-debs with the device call; bench/gpu_session.sh installs them there.
set -eu
cd "$(dirname "$0")/.."
mkdir -p .gpu-debs
cd .gpu-debs
apt-get update -qq
apt-get download libcjson1 libcjson-dev libopenblas0-openmp libopenblas-openmp-dev libgfortran5
ls -l
