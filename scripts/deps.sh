#!/bin/sh
# Installs what fusecal builds and tests with, from the distribution's packages
# (Debian 12 / Ubuntu 24.04, as root). The CUDA Toolkit is not a package here: when
# it is installed (/usr/local/cuda), the build finds it and adds the CUDA backends.
#   scripts/deps.sh          build and run dependencies
#   scripts/deps.sh --tests  also what the test suite uses
# A required package that cannot be installed stops the script. An optional one
# is reported and left out: without libdnnl-dev (oneDNN 2.x or 3.x) the build has no
# cpu.onednn; without a chromium package the browser test of reports skips; without
# python3-torch and python3-torchvision the comparison with PyTorch and the FX
# partitioner's tests skip.
set -eu
required="build-essential cmake git pkg-config libopenblas-openmp-dev libcjson-dev"
optional="libdnnl-dev"
if [ "${1:-}" = "--tests" ]; then
    # schema cross-check, fuzzers + sanitizers (clang, libFuzzer), the format check, browser test of reports
    required="$required python3 python3-jsonschema clang libclang-rt-dev clang-format"
    optional="$optional chromium python3-torch python3-torchvision"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
install() { apt-get install -y -qq --no-install-recommends "$@" >/dev/null; }
# shellcheck disable=SC2086
install $required
got=$required
for p in $optional; do
    if install "$p" 2>/dev/null; then
        got="$got $p"
    else
        echo "deps.sh: optional package '$p' could not be installed; going on without it" >&2
    fi
done
echo "installed: $got"
