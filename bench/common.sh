# bench/common.sh — sourced by the CPU benchmark scripts, from the repository root:
#   . bench/common.sh; bench_out "${1:-}" [SUBFOLDER]
# sets fusecal (FUSECAL, default build/fusecal), out (the given folder, else
# results/<machine>[/SUBFOLDER], the folder bench/machine.sh names) and log
# (out/commands.txt, kept: several scripts write into one folder), and gives
#   run CMD...           log the command, then run it
#   run_to FILE CMD...   the same, its standard output into FILE
#   run_slow WHY CMD...  run, logged with "# doc-test: skip WHY" (tests/doc_commands.py
#                        replays the logs; a benchmark beside PyTorch is minutes long)
#   note LINE            log a line of a command run another way
# Each command stands in the log once, however often a benchmark is re-run.
fusecal=${FUSECAL:-build/fusecal}
coretype_from="the environment"

# Where fusecal overrides OpenBLAS's kernel choice (a CPU newer than OpenBLAS's
# table: src/cpu/openblas_core.h), every command here runs with the same
# OPENBLAS_CORETYPE, PyTorch too: Debian's PyTorch does its fp32 GEMMs in that OpenBLAS.
if [ -z "${OPENBLAS_CORETYPE+x}" ] && [ -x "$fusecal" ]; then
    cores=$("$fusecal" info --no-measure --format json | python3 -c 'import json, sys
o = json.load(sys.stdin)["host"]["libraries"].get("openblas", {})
print(o["corename"], o["corename_detected"]) if "corename_detected" in o else None')
    if [ -n "$cores" ]; then
        # the records keep OpenBLAS's own choice, as when fusecal overrides it itself
        read -r OPENBLAS_CORETYPE FUSECAL_OPENBLAS_DETECTED <<<"$cores"
        export OPENBLAS_CORETYPE FUSECAL_OPENBLAS_DETECTED
        coretype_from=bench/common.sh
        echo "bench: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE for every command (OpenBLAS's own choice here: $FUSECAL_OPENBLAS_DETECTED)" >&2
    fi
fi

bench_out() {
    out=${1:-results/$(sh bench/machine.sh)${2:+/$2}}
    mkdir -p "$out"
    log=$out/commands.txt
    touch "$log"
    [ -z "${OPENBLAS_CORETYPE:-}" ] || note "# every command below ran with OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE ($coretype_from)"
}

note() { grep -qxF -- "$1" "$log" || echo "$1" >>"$log"; }

run() {
    note "$*"
    "$@"
}

run_slow() {
    local why=$1
    shift
    note "$*  # doc-test: skip $why"
    "$@"
}

run_to() {
    local to=$1
    shift
    note "$* > $to"
    "$@" >"$to"
}
