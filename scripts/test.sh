#!/bin/sh
# Installs the dependencies, then builds and runs the whole test suite:
#   0. the format check (scripts/format-check.sh, .clang-format);
#   1. the libFuzzer harnesses (clang, ASan + UBSan), each fuzzing for
#      FUSECAL_FUZZ_SECONDS (60) after replaying every regression input;
#   2. the CPU test suite in an AddressSanitizer + UndefinedBehaviorSanitizer
#      build with leak checking;
#   3. the release build (the CUDA backends compiled when the toolkit is present;
#      their gpu-labelled tests skip without a GPU) and every test;
#   4. the host kernels at the other vector width (cpu_vec.h's VW): where the CPU
#      has AVX-512, an AVX2 build (x86-64-v3) and its kernel tests; where it has
#      not, an AVX-512 build (x86-64-v4) compiled only. -Werror=psabi fails a vector
#      type wider than the ISA's registers, which GCC keeps in memory.
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

if grep -qw avx512f /proc/cpuinfo; then isa=x86-64-v3; else isa=x86-64-v4; fi
cmake -S . -B build-isa -DCMAKE_BUILD_TYPE=Release -DFUSECAL_NATIVE=OFF -DFUSECAL_CUDA=OFF \
    -DCMAKE_C_FLAGS="-march=$isa -Werror=psabi"
# the tests labelled "kernels" (tests/CMakeLists.txt), each an executable of its name
kernels=$(ctest --test-dir build-isa -N -L kernels | sed -n 's/^ *Test *#[0-9]*: *//p')
[ -n "$kernels" ] || { echo "test.sh: no test labelled kernels" >&2; exit 1; }
# shellcheck disable=SC2086 # one target per word
cmake --build build-isa -j"$jobs" --target $kernels
if [ "$isa" = x86-64-v3 ]; then
    ctest --test-dir build-isa --output-on-failure -j"$jobs" -L kernels
fi
