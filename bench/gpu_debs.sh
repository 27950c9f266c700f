#!/bin/sh
# The Debian packages fusecal's GPU session needs that the GPU machine's image lacks
# (it reaches no package registry): cJSON (library and headers, always installed
# together: libcjson-dev's CMake files name the library of its own version), the
# OpenMP build of OpenBLAS, and Python's jsonschema with its dependencies (attr,
# pyrsistent; jsonschema's other Depends are alternatives that python3 >= 3.9
# satisfies) for the tests' second schema validator. oneDNN is optional and left out.
#
#     sh bench/gpu_debs.sh          fetches them here into .gpu-debs/ (ignored by git)
#     sh bench/gpu_debs.sh --list   prints their names, one a line (gpu_session.sh
#                                   checks the carried set against it)
#
# Carry .gpu-debs with the device call; bench/gpu_session.sh installs them there.
set -eu
PKGS="libcjson1 libcjson-dev libopenblas0-openmp libopenblas-openmp-dev libgfortran5
python3-jsonschema python3-attr python3-pyrsistent"
if [ "${1:-}" = "--list" ]; then
    for p in $PKGS; do echo "$p"; done
    exit 0
fi
cd "$(dirname "$0")/.."
mkdir -p .gpu-debs
cd .gpu-debs
apt-get update -qq
# shellcheck disable=SC2086
apt-get download $PKGS
ls -l
