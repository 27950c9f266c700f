#!/usr/bin/env bash
# The GPU session in one call, from the repository root on the GPU machine:
#
#     bash bench/gpu_session.sh            (device tool: run, carry [".gpu-debs"], timeout_s 600)
#
# 1. installs the build's Debian packages carried in .gpu-debs/ (bench/gpu_debs.sh
#    fetches them here: cJSON, the OpenMP OpenBLAS), finds cuDNN (the toolkit's, or
#    the nvidia-cudnn-cu13 wheel beside PyTorch), configures and builds with 16 jobs;
# 2. ctest -L gpu (test_gpu: every CUDA backend x pattern x dtype x variant);
# 3. fusecal info --device cuda --format json;
# 4. the quick sweep on cuda, bf16 and fp32 (fp32 twice: run-to-run stability),
#    into results/h100/quick-*.json;
# 5. bench/compare_pytorch.py on the targets (results/h100/targets.json, compare.md);
# 6. fusecal's elementwise kernels against the measured copy bandwidth;
# 7. the compute-sanitizer tests (memcheck, racecheck, initcheck) with the time left;
# 8. a short summary, printed last.
# Everything is logged under $OUT (at most 8 files come back): session.log,
# build.log, ctest.log, sanitize.log, summary.md, results-h100.tar.gz (results/h100/
# with every JSON and markdown file). The whole run keeps under ~9.5 minutes: each
# step gets what is left of the budget and is skipped, with a note, when too little is.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT" results/h100
exec > >(tee -a "$OUT/session.log") 2>&1
export PYTHONUNBUFFERED=1
T0=$(date +%s)
BUDGET=${FUSECAL_GPU_BUDGET:-560}
left() { echo $((BUDGET - ($(date +%s) - T0))); }
step() { echo; echo "=== $* (t=$(($(date +%s) - T0)) s, $(left) s left)"; }
notes=()
note() { notes+=("$*"); echo "NOTE: $*"; }
# runs "$@" with at most $1 seconds (and never past the budget); 124 on timeout
limited() {
    local want=$1; shift
    local l; l=$(left)
    if [ "$l" -lt 20 ]; then return 125; fi
    [ "$want" -gt "$l" ] && want=$l
    timeout --signal=INT --kill-after=10 "$want" "$@"
}

step "environment"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv || true
nvcc --version | tail -2 || true
if ls .gpu-debs/*.deb >/dev/null 2>&1; then
    debs=()
    for d in .gpu-debs/*.deb; do
        pkg=$(dpkg-deb -f "$d" Package)
        dpkg -s "$pkg" >/dev/null 2>&1 || debs+=("$d") # keep what the image already has
    done
    if [ ${#debs[@]} -gt 0 ] && ! dpkg -i --force-depends "${debs[@]}" >/dev/null 2>"$OUT/dpkg.err"; then
        # a Breaks (libblas3 vs the OpenMP OpenBLAS) stops dpkg: unpack the files alone,
        # all under paths of their own (openblas-openmp/, cjson/)
        for d in "${debs[@]}"; do dpkg -x "$d" /; done
        echo "dpkg -i refused ($(head -c 300 "$OUT/dpkg.err")); unpacked the files instead"
    fi
    rm -f "$OUT/dpkg.err"
    echo "installed from .gpu-debs: ${#debs[@]} packages"
fi
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DFUSECAL_CUDA=ON -DFUSECAL_GPU_SANITIZE=ON)
if [ ! -e /usr/local/cuda/include/cudnn.h ] && [ ! -e /usr/include/cudnn.h ]; then
    CUDNN_ROOT=$(python3 -c 'import nvidia.cudnn as m, os; print(list(m.__path__)[0])' 2>/dev/null || true)
    if [ -n "$CUDNN_ROOT" ] && [ -e "$CUDNN_ROOT/include/cudnn.h" ]; then
        echo "cuDNN from the wheel: $CUDNN_ROOT"
        cmake_args+=(-DCUDNN_ROOT="$CUDNN_ROOT")
        export LD_LIBRARY_PATH="$CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    else
        note "no cuDNN headers found: cuda.cudnn is left out of this build"
    fi
fi

step "configure and build"
if ! { cmake -S . -B build-gpu "${cmake_args[@]}" && cmake --build build-gpu -j16; } >"$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    echo "BUILD FAILED (see build.log)"
    exit 1
fi
grep -E "fusecal: oneDNN|CUDA:|cuDNN:" "$OUT/build.log" || true
grep -ciE "warning" "$OUT/build.log" | sed 's/^/build warnings: /'
FC=build-gpu/fusecal

step "ctest -L gpu (without the sanitizers)"
limited 240 ctest --test-dir build-gpu -L gpu -LE sanitize --output-on-failure >"$OUT/ctest.log" 2>&1
rc_test=$?
grep -E "checked|FAIL|CHECK failed|passed,|ceilings:|Test +#|tests passed" "$OUT/ctest.log" | head -60
[ $rc_test -ne 0 ] && note "ctest -L gpu exited $rc_test (see ctest.log)"

step "fusecal info"
limited 60 $FC info --device cuda --format json >results/h100/info.json || note "fusecal info failed"
python3 -c 'import json,sys; d=json.load(open("results/h100/info.json")); print(json.dumps(d["ceilings"].get("cuda",{}), indent=1)); print(json.dumps(d["host"]["devices"].get("cuda",{}), indent=1))' || true

step "quick sweep, bf16"
limited 100 $FC run --device cuda --sweep quick --dtype bf16 --seed 1 --out results/h100/quick-bf16.json --quiet
echo "exit $?"
step "quick sweep, fp32"
limited 100 $FC run --device cuda --sweep quick --dtype fp32 --seed 1 --out results/h100/quick-fp32.json --quiet
echo "exit $?"

step "PyTorch comparison"
limited 150 python3 bench/compare_pytorch.py $FC --out results/h100 || note "compare_pytorch did not finish"

step "elementwise kernels vs copy bandwidth"
limited 40 build-gpu/tests/test_gpu gpu_elementwise_bandwidth | tee results/h100/elementwise.txt

step "quick sweep, fp32, second run (stability)"
limited 100 $FC run --device cuda --sweep quick --dtype fp32 --seed 2 --out results/h100/quick-fp32-2.json --quiet
echo "exit $?"

step "compute-sanitizer (memcheck, racecheck, initcheck) with the time left"
limited 200 ctest --test-dir build-gpu -L sanitize -j3 --output-on-failure >"$OUT/sanitize.log" 2>&1
rc_san=$?
grep -E "Test +#|ERROR SUMMARY|tests passed|Errors while" "$OUT/sanitize.log" | head -20
[ $rc_san -ne 0 ] && note "sanitizer tests exited $rc_san (124/125: out of time; see sanitize.log)"

step "summary"
python3 bench/summarize_gpu.py results/h100 "$OUT/ctest.log" "$OUT/sanitize.log" >"$OUT/summary.md" 2>&1 || true
for n in "${notes[@]}"; do echo "- note: $n" >>"$OUT/summary.md"; done
cp "$OUT/summary.md" results/h100/SUMMARY.md
tar czf "$OUT/results-h100.tar.gz" results/h100
echo "total $(($(date +%s) - T0)) s"
cat "$OUT/summary.md"
