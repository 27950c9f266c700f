#!/usr/bin/env bash
# run.sh HARNESS SEEDS REGRESSIONS SECONDS
# Replays every committed regression input, then fuzzes for SECONDS from the seed
# corpus (copied, so the repository's corpus is not modified). Any crash, leak,
# timeout or undefined behaviour fails the test and leaves the input in the log
# directory as crash-*/leak-*/timeout-*: add it under REGRESSIONS.
set -u
bin=$1 seeds=$2 regress=$3 secs=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if compgen -G "$regress/*" >/dev/null; then
    "$bin" -runs=0 "$regress"/* || { echo "FAIL: a regression input crashes $(basename "$bin")"; exit 1; }
    echo "regressions: $(ls "$regress" | wc -l) inputs pass"
fi
mkdir -p "$work/corpus"
cp -r "$seeds"/. "$work/corpus/"
cd "$work" || exit 1
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
rc=$?
tail -n 25 "$work/log"
if [ $rc -ne 0 ]; then
    for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [ -e "$f" ] && { echo "failing input ($f), base64:"; base64 -w0 "$f"; echo; }
    done
    echo "FAIL: $(basename "$bin") found a problem"
    exit 1
fi
echo "ok: $(basename "$bin") ran ${secs}s without a finding"
