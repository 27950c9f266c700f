#!/usr/bin/env bash
# bench/gpu_session.sh --dry-run, on this build: every step that needs no GPU runs
# (the environment, the carried packages' check, the build reused, ctest -L gpu
# through its skip paths), the GPU steps say they are skipped where there is no GPU,
# and the summary is written from a fake result of schema version 2 — into $OUT
# alone. Then bench/summarize_gpu.py on its own: a document of another schema
# version is named, not summarized, and a broken folder still gives a summary.
. "$(dirname "$0")/lib.sh"
: "${BUILD:?}"

out=$WORK/session
OUT=$out FUSECAL_BUILD=$BUILD bash "$SRC/bench/gpu_session.sh" --dry-run >"$WORK/log" 2>&1
rc=$?
check_eq "the dry run exits 0" "$rc" 0
[ "$rc" = 0 ] || tail -30 "$WORK/log" | sed 's/^/    /'
for f in session.log summary.md results-gpu.tar.gz results/SUMMARY.md; do
    if [ -s "$out/$f" ]; then ok "wrote $f"; else bad "no $f"; fi
done
grep -q "uid $(id -u)" "$WORK/log" && grep -qi "cmake version" "$WORK/log" && ok "environment printed first" ||
    bad "no uid or cmake version in the log"
grep -q "reusing $BUILD as it is" "$WORK/log" && ok "the build reused" || bad "the build not reused"
if [ -e "$out/ctest.log" ] && grep -qE "tests passed|No tests were found" "$out/ctest.log"; then
    ok "ctest -L gpu ran"
else bad "ctest -L gpu did not run"; fi
gpu=$("$FUSECAL" list devices --format json | "$PYTHON" -c \
    "import json,sys; print(int(any(d['name']=='cuda' and d['usable'] for d in json.load(sys.stdin)['devices'])))")
if [ "$gpu" = 0 ]; then
    why=$("$FUSECAL" list devices --format json | "$PYTHON" -c \
        "import json,sys; print([d.get('why', '') for d in json.load(sys.stdin)['devices'] if d['name'] == 'cuda'][0])")
    grep -qF "no usable CUDA GPU here (${why:-no answer})" "$out/summary.md" &&
        ok "the GPU steps said skipped, with the device's reason" || bad "no skip note with '$why'"
    schema_valid "$out"/results/quick-*.json
    s=$(cat "$out/summary.md")
    for want in "# GPU session summary" "quick-bf16: 3 records, 3 ok" "quick-fp32: 2 records, 1 ok, 1 failed" \
        "| attention:b=8,h=16,s=1024,d=64,dtype=bf16 | cuda.custom |" "| decided by |" \
        "Stability (quick-fp32 against quick-fp32-2, 1 records)" "compare.json (Targets against PyTorch): missing" \
        "- dry run: no GPU step ran"; do
        case $s in *"$want"*) ok "summary: $want" ;; *) bad "summary lacks: $want" ;; esac
    done
else
    echo "skip: a GPU is usable here, so the dry run measured instead of faking"
fi

# summarize_gpu.py alone: another schema version is named, and the summary survives
mkdir -p "$WORK/old"
"$PYTHON" "$TESTS/make_records.py" --schema-version 1 --no-validate "$WORK/old/quick-fp32.json" \
    "linear_bias:m=8,k=8,n=8,dtype=fp32@cuda.cublas:1,1.1,1.2"
echo "not json" >"$WORK/old/quick-bf16.json"
expect 0 "summarize_gpu.py on a broken folder" -- "$PYTHON" "$SRC/bench/summarize_gpu.py" "$WORK/old" "$WORK/none.log"
s=$(cat "$WORK/out")
for want in "quick-fp32: schema version 1, this summary reads 2" "quick-bf16: unreadable" "info.json: missing" \
    "none.log: no ctest verdict"; do
    case $s in *"$want"*) ok "summary: $want" ;; *) bad "summary lacks: $want" ;; esac
done

# compare_pytorch.py's targets: each target's own value, whatever the target before it
if "$PYTHON" - "$SRC/bench" <<'EOF' >"$WORK/targets.log" 2>&1; then
import sys
sys.path.insert(0, sys.argv[1])
import compare_pytorch as c
kv = c.parse_problem("attention:b=4,h=16,s=4096,d=128,dtype=bf16")[1]
r, met, more = c.target_value("attention_bf16_4096", 0.8, 2.0, 5.0, 1.0, kv)
assert (r, met) == (0.5, False) and "TFLOP/s" in more, (r, met, more)
r, met, _ = c.target_value("attention_fp32_1024", 1.0, 0.85, 1.5, 1.0, {})
assert (r, met) == (0.85, True), (r, met)
r, met, _ = c.target_value("linear_fp32_small", 1.0, 0.9, 0.8, 1.0, {})
assert (r, met) == (0.9 / 0.8, False), (r, met)
r, met, _ = c.target_value("conv_bn_relu_bf16_nhwc", 1.0, 0.05, 0.06, 0.03, {})
assert abs(r - 5 / 3) < 1e-12 and not met, (r, met)
r, met, _ = c.target_value("add_rmsnorm_bf16", 1.0, 0.09, 0.2, 0.1, {})
assert abs(r - 0.9) < 1e-12 and met, (r, met)
names = [t[0] for t in c.SETS["all"]]
assert len(names) == len(set(names)), names
assert {p.split(":")[0] for _, p, _, _ in c.SITES} >= {"add_rmsnorm", "add_layernorm", "qk_norm_rope", "linear_swiglu",
                                                   "gelu_linear", "dwconv_bn_relu", "conv_bn_add_relu"}
for _, p, _, _ in c.SETS["all"]:
    print(p)
EOF
    ok "compare_pytorch.py: every target computes its own value"
else
    bad "compare_pytorch.py target_value: $(tail -1 "$WORK/targets.log")"
fi
# and every target is a problem fusecal parses (as fp32 on the CPU: the dry run needs no GPU)
while read -r p; do
    q=$(echo "$p" | sed 's/dtype=[a-z0-9]*/dtype=fp32/')
    if "$FUSECAL" run --dry-run --device cpu --shape "$q" >"$WORK/dry.log" 2>&1; then ok "target problem $p"
    else bad "target problem $p: $(tail -1 "$WORK/dry.log")"; fi
done < <(grep ":" "$WORK/targets.log")

finish
