#!/usr/bin/env bash
# The option tables at work: values checked against the settings' limits and the
# vocabularies, uniform messages, --help and `fusecal help`, list --device.
. "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1

# ---- values and their limits (the command-line ranges of src/core/settings.h)
expect 2 "an integer option given a fraction" -- "$FUSECAL" run --threads 2.5 --dry-run
err_says "bad value for --threads: '2.5'" "expected an integer in [1, 4096]"
expect 2 "rounds above the limit" -- "$FUSECAL" run --rounds 33 --dry-run
err_says "bad value for --rounds: '33'" "[2, 32]"
expect 2 "one sample is too few to stop on noise" -- "$FUSECAL" run --min-samples 1 --dry-run
err_says "bad value for --min-samples: '1'"
expect 2 "a fraction below 1 only" -- "$FUSECAL" check --baseline x.json --tolerance 1
err_says "bad value for --tolerance: '1'" "[0, 1)"
expect 2 "bytes" -- "$FUSECAL" run --max-memory 12Q --dry-run
err_says "bad value for --max-memory: '12Q'" "expected bytes"
expect 0 "bytes with a suffix" -- "$FUSECAL" run --max-memory 64K --shape m=2,k=2,n=2 --pattern linear_bias --dry-run
expect 2 "bytes past a double's range" -- "$FUSECAL" run --max-memory 1e308T --shape m=2,k=2,n=2 --dry-run
err_says "bad value for --max-memory: '1e308T'" "expected bytes"
expect 2 "a flag given a value" -- "$FUSECAL" run --quiet=yes
err_says "option '--quiet' takes no value"
expect 2 "--help given a value" -- "$FUSECAL" run --help=x
err_says "option '--help' takes no value"
expect 2 "an empty --out" -- "$FUSECAL" run --out= --shape m=2,k=2,n=2 --pattern linear_bias --dry-run
err_says "cannot write ''" "empty"
expect 2 "an ambiguous abbreviation" -- "$FUSECAL" run --max 3
err_says "ambiguous option '--max'" "--max-time" "--max-noise"
expect 0 "an unambiguous abbreviation" -- "$FUSECAL" run --dev cpu --shape m=2,k=2,n=2 --pattern linear_bias --dry-run
expect 2 "an empty list" -- "$FUSECAL" run --dtype , --dry-run
err_says "empty value for --dtype"
expect 2 "a bad item of a list" -- "$FUSECAL" run --dtype fp32,fp64 --dry-run
err_says "unknown dtype 'fp64'" "valid: fp32, tf32, bf16, fp16"
expect 2 "an unknown --by" -- "$FUSECAL" compare a.json b.json --by shape
err_says "unknown --by 'shape'" "problem,backend, problem"

# ---- --resume runs the recorded command: only how this run goes may be added
expect 0 "a small calibration" -- "$FUSECAL" run --shape m=4,k=4,n=4 --pattern linear_bias --backend cpu.openblas \
    "${FAST[@]}" --out one.json --quiet
expect 2 "--resume with a measuring option" -- "$FUSECAL" run --resume one.json --cache cold
err_says "give no other measuring options" "--cache"
expect 2 "--append with --out" -- "$FUSECAL" run --append one.json --out other.json --shape m=2,k=2,n=2 --dry-run
err_says "--append writes to the file it adds to" "--out"
pyq one.json "json.dumps(dict(d, argv=['fusecal', 'run', '--frob']))" >badargv.json
expect 2 "--resume of a command line that does not parse" -- "$FUSECAL" run --resume badargv.json --dry-run
err_says "cannot resume 'badargv.json': its command line does not parse: unknown option '--frob'"
expect 0 "--resume with --dry-run" -- "$FUSECAL" run --resume one.json --dry-run
if grep -q "1 of this run's problems already measured, 0 to go" "$WORK/err"; then ok "resume: nothing left to measure"
else bad "resume note: $(cat "$WORK/err")"; fi

# ---- help
for cmd in run list info validate check compare report; do
    expect 0 "$cmd --help" -- "$FUSECAL" "$cmd" --help
    long=$(awk 'length > 80 && !/conv_bn_relu:/' "$WORK/out")
    check_eq "$cmd --help fits 80 columns" "$long" ""
    if grep -q '^exit status: ' "$WORK/out"; then ok "$cmd --help says its exit status"; else bad "$cmd --help: no exit status"; fi
done
expect 0 "fusecal help" -- "$FUSECAL" help
for cmd in run list info validate check compare report; do
    if grep -q "^  $cmd " "$WORK/out"; then ok "fusecal help lists $cmd"; else bad "fusecal help lacks $cmd"; fi
done
expect 2 "fusecal alone" -- "$FUSECAL"
expect 2 "help of an unknown command" -- "$FUSECAL" help frob
err_says "unknown command 'frob'" "compare"

# ---- list --device: the backends and devices of one device, usable or not
expect 0 "list --device cpu" -- "$FUSECAL" list --device cpu --format json
check_eq "only CPU backends and devices" \
    "$(pyq "$WORK/out" "sorted({b['name'].split('.')[0] for b in d['backends']}), [x['name'] for x in d['devices']]")" \
    "['cpu'] ['cpu']"
expect 0 "list backends --device cuda, with or without a GPU" -- "$FUSECAL" list backends --device cuda --format json
check_eq "the CUDA backends, built or not" "$(pyq "$WORK/out" "[b['name'] for b in d['backends']]")" \
    "['cuda.cublas', 'cuda.cudnn', 'cuda.custom']"
expect 2 "list --device of an unknown device" -- "$FUSECAL" list --device tpu
err_says "unknown device 'tpu'" "cpu, cuda, all"

# ---- OpenMP placement and waiting set in the environment: fusecal removes them (with
# a line on stderr), runs again, and its team still spans the CPUs it may use, one
# thread pinned to each (left in place, libgomp bound the first thread to one CPU
# and the record said two threads where they shared it); taskset's CPUs set the
# default thread count
if [ "$(nproc)" -ge 2 ]; then
    expect 0 "OMP_PROC_BIND and OMP_WAIT_POLICY in the environment" -- env OMP_PROC_BIND=close OMP_WAIT_POLICY=active \
        "$FUSECAL" run --shape m=4,k=4,n=4 --pattern linear_bias --backend cpu.openblas "${FAST[@]}" --out omp.json --quiet
    err_says "OMP_PROC_BIND=close OMP_WAIT_POLICY=active removed" "--threads"
    check_eq "the settings removed, in the inventory; the threads pinned, one a CPU" \
        "$(pyq omp.json "[d['host']['devices']['cpu'][k] for k in ('omp_env_dropped', 'threads_pinned', 'threads')]")" \
        "['OMP_PROC_BIND=close OMP_WAIT_POLICY=active', True, $(nproc)]"
    if command -v taskset >/dev/null; then
        expect 0 "a run on one CPU of several (taskset)" -- taskset -c 0 \
            "$FUSECAL" run --shape m=4,k=4,n=4 --pattern linear_bias --backend cpu.openblas "${FAST[@]}" --out one-cpu.json --quiet
        check_eq "one thread by default, pinned" \
            "$(pyq one-cpu.json "[d['settings']['threads'], d['host']['devices']['cpu']['threads_pinned']]")" "[1, True]"
    fi
fi

finish
