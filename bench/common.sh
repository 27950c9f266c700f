# bench/common.sh — sourced by the CPU benchmark scripts, from the repository root:
#   . bench/common.sh; bench_out "${1:-}" [SUBFOLDER]
# sets fusecal (FUSECAL, default build/fusecal), out (the given folder, else
# results/<machine>[/SUBFOLDER], the folder bench/machine.sh names) and log
# (out/commands.txt, kept: several scripts write into one folder), and gives
#   run CMD...           log the command, then run it
#   run_to FILE CMD...   the same, its standard output into FILE
#   note LINE            log a line of a command run another way
# Each command stands in the log once, however often a benchmark is re-run.
fusecal=${FUSECAL:-build/fusecal}

bench_out() {
    out=${1:-results/$(sh bench/machine.sh)${2:+/$2}}
    mkdir -p "$out"
    log=$out/commands.txt
    touch "$log"
}

note() { grep -qxF -- "$1" "$log" || echo "$1" >>"$log"; }

run() {
    note "$*"
    "$@"
}

run_to() {
    local to=$1
    shift
    note "$* > $to"
    "$@" >"$to"
}
