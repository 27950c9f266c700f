#!/usr/bin/env bash
# The GPU session in one call, from the repository root on the GPU machine:
#
#     bash bench/gpu_session.sh                 (device tool: run, carry [".gpu-debs"], timeout_s 600)
#     bash bench/gpu_session.sh --only sweeps,compare   (a later call on the same machine)
#     bash bench/gpu_session.sh --dry-run       (any machine: every step that needs no GPU)
#
# Steps, in order of what matters most; each gets a share of the budget
# (FUSECAL_GPU_BUDGET seconds, 560 by default, inside the device tool's 10 minutes)
# and one that no longer fits is skipped with a note, so that no sweep is cut off
# half-way (complete: false):
#   env       uid, cmake, gcc, nvcc, the Pythons, the GPU (nvidia-smi);
#   packages  the Debian packages carried in .gpu-debs/ (bench/gpu_debs.sh fetches
#             them, --list names them): each source package's set is installed
#             together where the image lacks one of them or has another version
#             (libcjson1 with libcjson-dev: a newer image libcjson1 beside the carried
#             -dev breaks CMake's cJSON config), unpacked into / where dpkg -i refuses;
#             Python's jsonschema and its dependencies are unpacked into
#             .gpu-debs/python and put on the test steps' PYTHONPATH (the tests' second
#             schema validator; cli_gpu_faults skips it, said so, where it is missing);
#   cudnn     the toolkit's cuDNN, else the nvidia-cudnn-cuNN wheel beside PyTorch when
#             NN is nvcc's CUDA major (another major is left out, said so);
#   build     configure and build build-gpu/ (16 jobs, the compute-sanitizer tests on);
#   test      ctest -L gpu without the sanitizers (test_gpu, test_kernels_gpu,
#             cli_gpu_faults), then cli_kernel (its records' kernel names on the GPU);
#   info      fusecal info --device cuda;
#   sweeps    the quick sweep on cuda in bf16 and fp32, later tf32 and fp32 again with
#             another seed (run-to-run agreement), each with QUICK_STOP (3 rounds of
#             0.05 s per variant) and started only when its estimated time fits;
#   compare   bench/compare_pytorch.py on the core targets (reference kernel), on the
#             newer fusion sites (--set sites, into sites/), then the attention
#             targets with --kernel flash2 (into flash2/);
#   sanitize  the compute-sanitizer tests (memcheck, racecheck, initcheck), time left;
#   summary   bench/summarize_gpu.py, written whatever failed before it.
# --only STEP[,STEP] runs those of test, info, sweeps, compare, sanitize (env,
# packages, cudnn, build and summary always run; a warm machine's build-gpu/ is
# reused as it is). Output under $OUT (at most 8 files come back): session.log,
# build.log, ctest.log, sanitize.log, summary.md, results-gpu.tar.gz (results/<gpu>/: h100, h200,
# from nvidia-smi's name).
#
# --dry-run (tested in CI: tests/cli_gpu_session.sh) installs nothing and writes
# nowhere but $OUT (a fresh temporary folder unless OUT is set) and the build folder:
# it checks the carried package set when there is one, builds (or reuses
# FUSECAL_BUILD as it is), runs ctest -L gpu through its skip paths (exit 77 without
# a GPU), says which GPU steps it skips, and makes the summary from a fake result
# (tests/make_records.py) in $OUT/results. Exit status: 1 when the build, the gpu
# tests or the summary failed, else 0.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
DRY=0
ONLY="test,info,sweeps,compare,sanitize"
while [ $# -gt 0 ]; do
    case $1 in
    --dry-run) DRY=1 ;;
    --only) ONLY=${2:?--only needs a list}; shift ;;
    *) echo "usage: bash bench/gpu_session.sh [--dry-run] [--only STEP[,STEP]]" >&2; exit 2 ;;
    esac
    shift
done
if [ "$DRY" = 1 ]; then OUT=${OUT:-$(mktemp -d)}; else OUT=${OUT:-$PWD/gpu-out}; fi
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
# results/<gpu>/, named after the GPU that ran (results/h100, results/h200, ...)
GPU_SLUG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z' 'a-z' |
    sed -e 's/^nvidia //' -e 's/ .*//' -e 's/[^a-z0-9-]//g')
RESULTS=results/${GPU_SLUG:-h100}
[ "$DRY" = 1 ] && RESULTS=$OUT/results
BUILD=${FUSECAL_BUILD:-build-gpu}
FC=$BUILD/fusecal
mkdir -p "$RESULTS"
exec > >(tee -a "$OUT/session.log") 2>&1
TEE=$!
export PYTHONUNBUFFERED=1
T0=$(date +%s)
BUDGET=${FUSECAL_GPU_BUDGET:-560}
QUICK_STOP=(--rounds 3 --min-time 0.15 --max-time 0.15)
PER_RECORD_S=3 # a quick-sweep record with QUICK_STOP, setup and graph replay included, at most
failed=()
notes=()
left() { echo $((BUDGET - ($(date +%s) - T0))); }
step() { echo; echo "=== $* (t=$(($(date +%s) - T0)) s, $(left) s left)"; }
note() { notes+=("$*"); echo "NOTE: $*"; }
wanted() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }
# runs "$@" with at most $1 seconds (and never past the budget); 124 on timeout, 125
# when too little is left to start
limited() {
    local want=$1 l
    shift
    l=$(left)
    if [ "$l" -lt 20 ]; then return 125; fi
    [ "$want" -gt "$l" ] && want=$l
    timeout --signal=INT --kill-after=10 "$want" "$@"
}

# The summary, whatever happened before: run at exit.
finish() {
    local rc=$?
    step "summary"
    local logs=()
    for f in ctest.log sanitize.log; do [ -e "$OUT/$f" ] && logs+=("$OUT/$f"); done
    if ! python3 bench/summarize_gpu.py "$RESULTS" "${logs[@]}" >"$OUT/summary.md" 2>"$OUT/summary.err"; then
        failed+=(summary)
        cat "$OUT/summary.err"
    fi
    rm -f "$OUT/summary.err"
    {
        echo
        [ "$DRY" = 1 ] && echo "- dry run: no GPU step ran; the tables above come from a fake result"
        for n in "${notes[@]}"; do echo "- note: $n"; done
        [ ${#failed[@]} -gt 0 ] && echo "- FAILED: ${failed[*]}"
    } >>"$OUT/summary.md"
    cp "$OUT/summary.md" "$RESULTS/SUMMARY.md"
    tar czf "$OUT/results-gpu.tar.gz" -C "$(dirname "$RESULTS")" "$(basename "$RESULTS")"
    echo "total $(($(date +%s) - T0)) s"
    cat "$OUT/summary.md"
    [ ${#failed[@]} -gt 0 ] && rc=1
    exec >&- 2>&- # the log's tee ends with the script, not after it
    wait "$TEE" 2>/dev/null
    exit "$rc"
}
trap finish EXIT

step "environment$([ "$DRY" = 1 ] && echo ' (dry run)')"
echo "uid $(id -u) ($(id -un 2>/dev/null)); $(uname -srm)"
cmake --version 2>/dev/null | head -1 || echo "cmake: not found"
gcc --version 2>/dev/null | head -1 || echo "gcc: not found"
nvcc --version 2>/dev/null | tail -1 || echo "nvcc: not found"
for py in python3 /usr/bin/python3; do command -v "$py" >/dev/null && echo "$py: $("$py" --version 2>&1) ($(command -v "$py"))"; done
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv || true
else
    echo "nvidia-smi: not found"
fi

# ------------------------------------------------------------------ packages

# Installs a source package's carried .debs (all of them, together) unless the
# image holds each at the carried version.
install_group() {
    local d pkg ver have need=0
    for d in "$@"; do
        pkg=$(dpkg-deb -f "$d" Package)
        ver=$(dpkg-deb -f "$d" Version)
        have=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
        [ "$have" = "$ver" ] || need=1
        echo "  $pkg: carried $ver, image ${have:-none}"
    done
    [ $need = 0 ] && return 0
    if [ "$DRY" = 1 ]; then echo "  would install: $*"; return 0; fi
    if ! dpkg -i --force-depends "$@" >/dev/null 2>"$OUT/dpkg.err"; then
        # a Breaks (libblas3 against the OpenMP OpenBLAS) stops dpkg: unpack the files
        # alone, all under paths of their own (openblas-openmp/, cjson/)
        for d in "$@"; do dpkg -x "$d" /; done
        ldconfig
        echo "  dpkg -i refused ($(head -c 300 "$OUT/dpkg.err")); unpacked the files instead"
    fi
    rm -f "$OUT/dpkg.err"
}

packages() {
    local want p d src
    want=$(sh bench/gpu_debs.sh --list)
    if ! ls .gpu-debs/*.deb >/dev/null 2>&1; then
        note "no .gpu-debs/ here: nothing carried (sh bench/gpu_debs.sh fetches it; carry it with the call)"
        return 0
    fi
    for p in $want; do
        ls .gpu-debs/"${p}"_*.deb >/dev/null 2>&1 || note "the carried packages lack $p (sh bench/gpu_debs.sh)"
    done
    declare -A groups=()
    for d in .gpu-debs/*.deb; do
        case $(dpkg-deb -f "$d" Package) in python3-*) continue ;; esac
        src=$(dpkg-deb -f "$d" Source | cut -d' ' -f1)
        [ -n "$src" ] || src=$(dpkg-deb -f "$d" Package)
        groups[$src]+="$d "
    done
    for src in "${!groups[@]}"; do
        echo "$src:"
        # shellcheck disable=SC2086
        install_group ${groups[$src]}
    done
    # Python's jsonschema (pure Python; pyrsistent without its C extension) in a folder
    # of its own, whatever python3 the image has
    local pyroot=$PWD/.gpu-debs/python
    [ "$DRY" = 1 ] && pyroot=$OUT/python
    rm -rf "$pyroot"
    for d in .gpu-debs/python3-*.deb; do [ -e "$d" ] && dpkg -x "$d" "$pyroot"; done
    if [ -d "$pyroot/usr/lib/python3/dist-packages" ]; then
        PYPATH=$pyroot/usr/lib/python3/dist-packages
        echo "python jsonschema unpacked into $PYPATH"
    fi
}

step "packages"
PYPATH=""
packages
export PYRSISTENT_NO_C_EXTENSION=1

# ------------------------------------------------------------------ cuDNN and the build

cmake_args=(-DCMAKE_BUILD_TYPE=Release -DFUSECAL_GPU_SANITIZE=ON)
[ "$DRY" = 1 ] || cmake_args+=(-DFUSECAL_CUDA=ON)
step "cuDNN"
nvcc_major=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
if [ -e /usr/local/cuda/include/cudnn.h ] || [ -e /usr/include/cudnn.h ]; then
    echo "cuDNN headers in the system"
else
    root=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)
    wheel=$(python3 -c 'import importlib.metadata as md; print(" ".join(sorted({d.metadata["Name"] for d in md.distributions() if (d.metadata["Name"] or "").lower().startswith("nvidia-cudnn")})))' 2>/dev/null || true)
    wheel_major=$(echo "$wheel" | sed -n 's/.*nvidia-cudnn-cu\([0-9]*\).*/\1/p')
    if [ -z "$root" ] || [ ! -e "$root/include/cudnn.h" ]; then
        note "no cuDNN headers found: cuda.cudnn is left out of this build"
    elif [ -z "$wheel_major" ] || [ "$wheel_major" != "$nvcc_major" ]; then
        note "cuDNN wheel '${wheel:-unknown}' is for CUDA ${wheel_major:-?}, nvcc is CUDA ${nvcc_major:-?}: cuda.cudnn is left out"
        cmake_args+=(-DFUSECAL_CUDNN=OFF)
    else
        echo "cuDNN from the wheel $wheel (CUDA $wheel_major): $root"
        cmake_args+=(-DCUDNN_ROOT="$root")
        export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
fi

step "configure and build ($BUILD)"
if [ -n "${FUSECAL_BUILD:-}" ] && [ -e "$BUILD/CMakeCache.txt" ] && [ -x "$FC" ]; then
    echo "reusing $BUILD as it is"
elif ! { cmake -S . -B "$BUILD" "${cmake_args[@]}" && cmake --build "$BUILD" -j16; } >"$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    failed+=(build)
    exit 1
else
    grep -E "fusecal: oneDNN|CUDA:|cuDNN:" "$OUT/build.log" || true
    grep -ciE "warning" "$OUT/build.log" | sed 's/^/build warnings: /'
fi
PY=$(sed -n 's/^FUSECAL_PYTHON:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
if PYTHONPATH=$PYPATH "${PY:-python3}" -c 'import jsonschema' 2>/dev/null; then
    echo "the tests' python ${PY:-python3} has jsonschema $(PYTHONPATH=$PYPATH "${PY:-python3}" -c 'import jsonschema, importlib.metadata as m; print(m.version("jsonschema"))' 2>/dev/null)"
else
    note "the tests' python ${PY:-python3} lacks jsonschema: cli_gpu_faults checks documents with fusecal validate alone"
fi
GPU=0
why=$("$FC" list devices --format json | python3 -c "import json,sys
cuda = [d for d in json.load(sys.stdin)['devices'] if d['name'] == 'cuda']
print('CUDA is not in this build' if not cuda else 'usable' if cuda[0]['usable'] else cuda[0].get('why', ''))" 2>&1)
if [ "$why" = usable ]; then GPU=1; else note "no usable CUDA GPU here (${why:-no answer}): the GPU steps are skipped"; fi

# ------------------------------------------------------------------ the GPU steps

if wanted test; then
    step "ctest -L gpu (without the sanitizers)"
    limited 240 env PYTHONPATH="$PYPATH" ctest --test-dir "$BUILD" -L gpu -LE sanitize --output-on-failure \
        >"$OUT/ctest.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && [ "$GPU" = 1 ]; then # run --kernel on the GPU: records name the kernel that ran
        limited 120 env PYTHONPATH="$PYPATH" ctest --test-dir "$BUILD" -R '^cli_kernel$' --output-on-failure \
            >>"$OUT/ctest.log" 2>&1
        rc=$?
    fi
    grep -E "checked|FAIL|CHECK failed|passed,|ceilings:|kernel |Test +#|tests passed|skip" "$OUT/ctest.log" | head -80
    grep -E "^elementwise" "$OUT/ctest.log" >"$RESULTS/elementwise.txt" || rm -f "$RESULTS/elementwise.txt"
    if [ $rc -ne 0 ]; then
        failed+=("ctest -L gpu (exit $rc)")
    elif [ "$GPU" = 0 ] && ! grep -qE "Not Run|Skipped|No tests were found" "$OUT/ctest.log"; then
        note "ctest -L gpu passed without a GPU but skipped nothing: see ctest.log"
    fi
fi

if wanted info && [ "$GPU" = 1 ]; then
    step "fusecal info"
    limited 60 "$FC" info --device cuda --format json >"$RESULTS/info.json" || note "fusecal info failed"
fi

# A quick sweep on cuda, started only when its records fit in the time left.
sweep() { # NAME DTYPE SEED
    local name=$1 dt=$2 seed=$3 n need f=$RESULTS/quick-$1.json
    n=$("$FC" run --device cuda --sweep quick --dtype "$dt" --dry-run 2>/dev/null | awk '/problems x backends/ {print $1}')
    need=$((${n:-0} * PER_RECORD_S + 30))
    if [ "$(left)" -lt "$need" ]; then
        note "quick-$name not started: ${n:-?} records need about $need s, $(left) s left (--only sweeps in a later call)"
        return
    fi
    step "quick sweep $name (${n} records, about $need s)"
    limited $((2 * need)) "$FC" run --device cuda --sweep quick --dtype "$dt" --seed "$seed" "${QUICK_STOP[@]}" \
        --out "$f" --quiet
    echo "exit $?"
    python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["complete"] else 1)' "$f" 2>/dev/null ||
        note "quick-$name is incomplete (complete: false or no document)"
}

compare() { # [ARGS...] for compare_pytorch.py
    limited 150 python3 bench/compare_pytorch.py "$FC" "$@" || note "compare_pytorch $* did not finish"
}

if [ "$GPU" = 1 ]; then
    if wanted sweeps; then sweep bf16 bf16 1; sweep fp32 fp32 1; fi
    if wanted compare; then
        step "PyTorch comparison"
        compare --out "$RESULTS"
        step "PyTorch comparison, the newer fusion sites (norms, rope, gated and prologue linears, convs)"
        compare --out "$RESULTS/sites" --set sites --max-time 1
    fi
    if wanted sweeps; then sweep tf32 tf32 1; sweep fp32-2 fp32 2; fi
    if wanted compare; then
        step "PyTorch comparison, attention with --kernel flash2"
        compare --out "$RESULTS/flash2" --kernel flash2 --only attention_bf16_4096,attention_fp32_1024
    fi
    if wanted sanitize; then
        step "compute-sanitizer (memcheck, racecheck, initcheck) with the time left"
        limited 600 ctest --test-dir "$BUILD" -L sanitize -j3 --output-on-failure >"$OUT/sanitize.log" 2>&1
        rc=$?
        grep -E "Test +#|ERROR SUMMARY|tests passed|Errors while" "$OUT/sanitize.log" | head -20
        [ $rc -ne 0 ] && note "sanitizer tests exited $rc (124/125: out of time; see sanitize.log)"
    fi
elif [ "$DRY" = 1 ]; then
    step "the GPU steps' output, faked for the summary"
    validate=()
    python3 -c 'import jsonschema' 2>/dev/null || validate=(--no-validate)
    mk() { python3 tests/make_records.py "${validate[@]}" "$@" || failed+=("make_records.py $1"); }
    mk "$RESULTS/quick-bf16.json" --gpu "NVIDIA H100 (fake)" \
        "linear_bias_relu:m=512,k=1024,n=1024,dtype=bf16@cuda.cublas:1.05,1.12,1.2" \
        "conv_bn_relu:n=4,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=bf16@cuda.cudnn:1.3,1.4,1.5" \
        "attention:b=8,h=16,s=1024,d=64,dtype=bf16@cuda.custom:4,5,6"
    mk "$RESULTS/quick-fp32.json" "linear_bias:m=128,k=512,n=512,dtype=fp32@cuda.cublas:0.9,1,1.1" \
        "qk_softmax:b=4,h=8,s=256,d=64,dtype=fp32@cuda.custom:1,1,1:failed"
    mk "$RESULTS/quick-fp32-2.json" "linear_bias:m=128,k=512,n=512,dtype=fp32@cuda.cublas:0.95,1.02,1.08"
    cp "$RESULTS/quick-bf16.json" "$RESULTS/info.json"
fi

# the steps record their own failures (failed, notes): the trap reads those, not the
# status of the last test above
exit 0
