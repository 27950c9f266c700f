#!/bin/sh
# Installs the dependencies, then builds and runs the whole test suite:
#   0. the format check (scripts/format-check.sh, .clang-format);
#   1. the libFuzzer harnesses (clang, ASan + UBSan), each fuzzing for
#      FUSECAL_FUZZ_SECONDS (60) after replaying every regression input;
#   2. the CPU test suite in an AddressSanitizer + UndefinedBehaviorSanitizer
#      build with leak checking;
#   3. the release build (the CUDA backends compiled when the toolkit is present;
#      their gpu-labelled tests skip without a GPU) and every test.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh --tests
jobs=$(nproc)

# the sources as .clang-format has them
sh scripts/format-check.sh
secs=${FUSECAL_FUZZ_SECONDS:-60}

cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DFUSECAL_FUZZ=ON -DFUSECAL_FUZZ_SECONDS="$secs"
cmake --build build-fuzz -j"$jobs"
ctest --test-dir build-fuzz --output-on-failure -j"$jobs"

cmake -S . -B build-asan -DFUSECAL_SANITIZE=ON -DFUSECAL_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs"

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
