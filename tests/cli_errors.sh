#!/usr/bin/env bash
# Every bad input: a one-line error naming what is wrong (and the valid choices),
# exit 2, before anything is measured, and nothing written.
. "$(dirname "$0")/lib.sh"

out=$WORK/never.json
run() { expect "$1" "$2" -- "$FUSECAL" run "${@:3}" --out "$out" --max-time 0.05 --min-time 0.01; }

run 2 "unknown pattern" --pattern nope;                      err_says "unknown pattern 'nope'" "valid:" "conv_bn_relu"
run 2 "unknown backend" --backend cpu.magic;                 err_says "unknown backend 'cpu.magic'" "cpu.openblas"
run 2 "unknown dtype" --dtype fp64;                          err_says "unknown dtype 'fp64'" "bf16"
run 2 "unknown device" --device tpu;                         err_says "unknown device 'tpu'" "cpu, cuda, all"
run 2 "unknown layout" --layout chwn;                        err_says "unknown layout 'chwn'" "nchw, nhwc"
run 2 "unknown cache mode" --cache tepid;                    err_says "unknown cache mode 'tepid'"
run 2 "unknown format" --shape m=2,k=2,n=2 --format xml;     err_says "unknown format 'xml'"
run 2 "unknown sweep" --sweep huge;                          err_says "unknown sweep 'huge'" "quick, standard, full"
run 2 "unknown option" --frobnicate;                         err_says "unknown option '--frobnicate'"
expect 2 "missing option value" -- "$FUSECAL" run --pattern; err_says "needs a value"
run 2 "bad number" --threads two;                            err_says "bad value for --threads: 'two'"
run 2 "malformed shape" --shape m=1,k;                        err_says "bad token 'k'"
run 2 "bad dim value" --shape m=abc,k=1,n=1;                 err_says "bad value 'm=abc'"
run 2 "empty token" --shape "m=1,,k=1,n=1";                  err_says "bad token ''"
run 2 "unknown dimension" --shape m=1,k=1,n=1,zz=3;          err_says "unknown dimension 'zz'"
run 2 "dim <= 0" --shape m=0,k=1,n=1;                        err_says "'m=0' out of range"
run 2 "negative dim" --shape linear_bias:m=-4,k=1,n=1;       err_says "'m=-4' out of range"
run 2 "missing dim" --shape linear_bias:m=4,k=1;             err_says "missing dimension 'n'"
run 2 "overflowing buffers" --shape linear_bias:m=2147483647,k=2147483647,n=2147483647; err_says "too large" "overflow"
run 2 "more than host memory" --shape linear_bias:m=2000000000,k=1000,n=1; err_says "needs" "GiB of host memory"
run 2 "more than --max-memory" --shape linear_bias:m=1024,k=1024,n=1024 --max-memory 1M; err_says "allowed by --max-memory"
run 2 "bad problem string pattern" --shape nope:m=1;          err_says "unknown pattern 'nope'"
run 2 "a shape too long for a problem string" --pattern linear_bias --shape "m=8,k=8,n=$(printf '0%.0s' {1..1000})77"
err_says "problem string too long"
run 2 "groups not dividing c" --shape conv_bn_relu:n=1,c=6,h=5,w=5,k=8,g=4; err_says "groups 'g=4' must divide c=6 and k=8"
run 2 "a depthwise shape with k != c" --pattern dwconv_bn_relu --shape n=1,c=4,h=5,w=5,k=8; err_says "is depthwise: k must equal c"
run 2 "shape vs --pattern" --pattern linear_bias --shape conv_relu:n=1,c=1,h=4,w=4,k=1; err_says "leaves out"
run 2 "causal without softmax" --shape qk_scale:b=1,h=1,s=4,d=4,causal=1; err_says "causal=1 needs a softmax"
if have_backend cpu.onednn; then
    run 2 "unsupported combination" --backend cpu.onednn --pattern linear_bias --shape m=4,k=8,n=8,dtype=fp16; err_says "nothing to measure" "cpu.onednn" "fp32 and bf16"
else
    run 2 "backend not built" --backend cpu.onednn --pattern linear_bias --shape m=4,k=8,n=8; err_says "cpu.onednn" "not in this build"
fi
run 2 "--device cuda without a GPU or CUDA build" --device cuda; err_says "--device cuda"
run 2 "--shape with --sweep" --shape m=1,k=1,n=1 --sweep quick; err_says "exclude each other"
if [ -e "$out" ]; then bad "a failed run wrote $out"; else ok "no output file after usage errors"; fi

# unwritable output: refused before measuring, nothing created
expect 2 "unwritable --out directory" -- "$FUSECAL" run --shape m=2,k=2,n=2 --out /nonexistent-dir/x.json
err_says "cannot write '/nonexistent-dir/x.json'"
mkdir "$WORK/ro" && chmod 555 "$WORK/ro"
if [ "$(id -u)" -ne 0 ]; then
    expect 2 "read-only --out directory" -- "$FUSECAL" run --shape m=2,k=2,n=2 --out "$WORK/ro/x.json"
    err_says "not writable"
fi
# a directory that takes no new file, to root either: refused by trying, before the ceilings
expect 2 "--out where no file can be made" -- "$FUSECAL" run --shape m=2,k=2,n=2 --out /proc/fusecal-x.json
err_says "cannot write '/proc/fusecal-x.json'"
if grep -q "ceilings" "$WORK/err"; then bad "measured before refusing /proc/fusecal-x.json"; else ok "refused before measuring"; fi
expect 2 "--out is a directory" -- "$FUSECAL" run --shape m=2,k=2,n=2 --out "$WORK"
err_says "is a directory"

# an existing result file survives a run that fails to write
echo '{"keep": true}' >"$WORK/keep.json"
FUSECAL_FAULT=write expect 2 "write failure keeps the previous file" -- "$FUSECAL" run --shape m=2,k=2,n=2 --pattern linear_bias \
    --backend cpu.openblas --out "$WORK/keep.json" --max-time 0.05 --min-time 0.01 --quiet
err_says "previous contents kept"
check_eq "previous file intact" "$(cat "$WORK/keep.json")" '{"keep": true}'
if ls -a "$WORK" | grep -q '\.tmp'; then bad "temp file left behind"; else ok "no temp file left"; fi

# a symbolic link as --out: the file it names is written, the link kept
mkdir "$WORK/runs" && echo '{}' >"$WORK/runs/t.json" && ln -s runs/t.json "$WORK/latest.json"
expect 0 "--out through a symbolic link" -- "$FUSECAL" run --shape m=2,k=2,n=2 --pattern linear_bias --backend cpu.openblas \
    --out "$WORK/latest.json" --max-time 0.05 --min-time 0.01 --quiet
check_eq "the link kept, the file it names written" \
    "$([ -L "$WORK/latest.json" ] && pyq "$WORK/runs/t.json" "len(d['records'])")" 1

# unknown commands and validate errors
expect 2 "unknown command" -- "$FUSECAL" frob;                err_says "unknown command 'frob'" "run"
expect 2 "validate without a file" -- "$FUSECAL" validate;   err_says "needs a file"
expect 2 "validate a missing file" -- "$FUSECAL" validate "$WORK/missing.json"; err_says "cannot open"
printf '{"schema": "fusecal-calibration", "schema_version": 2, "records": [' >"$WORK/trunc.json"
expect 1 "validate a truncated file" -- "$FUSECAL" validate "$WORK/trunc.json"; err_says "trunc.json" "truncated"
printf '{"schema": "fusecal-calibration", "schema_version": 7}' >"$WORK/v7.json"
expect 1 "validate a newer schema version" -- "$FUSECAL" validate "$WORK/v7.json"; err_says "v7.json" "newer"
printf '{"schema": "fusecal-calibration", "schema_version": 2, "x": 1, "x": 2}' >"$WORK/dup.json"
expect 1 "validate duplicate keys" -- "$FUSECAL" validate "$WORK/dup.json"; err_says "duplicate key 'x'"
expect 2 "list of nothing" -- "$FUSECAL" list gizmos;          err_says "unknown list 'gizmos'"
expect 2 "info bad device" -- "$FUSECAL" info --device tpu;   err_says "unknown device 'tpu'"

finish
