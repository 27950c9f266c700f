#!/bin/sh
# Installs what fusecal builds and tests with, from the distribution's packages
# (Debian 12 / Ubuntu 24.04, as root). The CUDA Toolkit is not a package here: when
# it is installed (/usr/local/cuda), the build finds it and adds the CUDA backends.
#   scripts/deps.sh          build and run dependencies
#   scripts/deps.sh --tests  also what the test suite uses
set -eu
pkgs="build-essential cmake git pkg-config libopenblas-openmp-dev libdnnl-dev libcjson-dev"
if [ "${1:-}" = "--tests" ]; then
    # schema cross-check, fuzzers + sanitizers (clang, libFuzzer), browser test of reports
    pkgs="$pkgs python3 python3-jsonschema clang libclang-rt-dev chromium"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
echo "installed: $pkgs"
