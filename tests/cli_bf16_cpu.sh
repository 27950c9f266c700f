#!/usr/bin/env bash
# bf16 on the CPU, as this machine has it: where /proc/cpuinfo lists avx512_bf16 or
# amx_bf16, `list backends` offers bf16 on cpu.onednn (every pattern it offers in
# fp32) and a bf16 run measures and verifies it with oneDNN's bf16 kernels; elsewhere
# both say why, naming the ISA. cpu.openblas declines bf16 with its reason either way.
# (test_backends checks both paths whatever the CPU, with its flags pretended.)
. "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1
"$FUSECAL" list backends --format json >backends.json || bad "list backends"
sup() { pyq backends.json "sorted([b for b in d['backends'] if b['name'] == '$1'][0]['supports']['$2'])"; }
"$FUSECAL" list backends >backends.txt
if [ "$(sup cpu.onednn fp32)" = "[]" ]; then
    echo "cpu.onednn is not built or not usable here: skipped"
    exit 77
fi
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
    check_eq "cpu.onednn offers in bf16 what it offers in fp32" "$(sup cpu.onednn bf16)" "$(sup cpu.onednn fp32)"
    expect 0 "a bf16 run on cpu.onednn" -- "$FUSECAL" run --backend cpu.onednn --dtype bf16 --quiet --max-time 0.02 \
        --shape linear_bias_relu:m=8,k=16,n=24 --shape "conv_bn_relu:n=1,c=8,h=6,w=6,k=16,pad=1" \
        --shape add_rmsnorm:m=4,n=64 --out bf16.json
    schema_valid_anywhere bf16.json
    check_eq "three bf16 records, verified" "$(pyq bf16.json "[(r['dtype'], r['status'], r['verification']['passed'])
        for r in d['records']]")" "[('bf16', 'ok', True), ('bf16', 'ok', True), ('bf16', 'ok', True)]"
    check_eq "bf16 tolerances" "$(pyq bf16.json "all(1e-3 < r['verification']['tolerance'] < 5e-2
        for r in d['records'])")" True
    check_eq "oneDNN's bf16 kernels ran" "$(pyq bf16.json "all('avx512_core_bf16' in r['variants']['fused']['impl']
        or 'amx' in r['variants']['fused']['impl'] for r in d['records'][:2])")" True
    check_eq "the records say what is bf16" "$(pyq bf16.json "all('[bf16 activations, weights and outputs' in
        r['variants'][v]['impl'] for r in d['records'] for v in ('unfused', 'fused'))")" True
else
    grep -q "bf16  unsupported: bf16 needs avx512_bf16 or amx_bf16; this CPU has .* only (" backends.txt &&
        ok "cpu.onednn declines bf16 naming the ISA" || bad "cpu.onednn bf16: $(grep bf16 backends.txt)"
    expect 2 "a bf16 run on cpu.onednn" -- "$FUSECAL" run --backend cpu.onednn --dtype bf16 --quiet \
        --shape linear_bias_relu:m=8,k=16,n=24 --out bf16.json
    grep -q "bf16 needs avx512_bf16 or amx_bf16" "$WORK/err" && ok "says why" || bad "$(cat "$WORK/err")"
fi
check_eq "cpu.openblas declines bf16" "$(sup cpu.openblas bf16)" "[]"
grep -q "bf16  unsupported: cpu.openblas computes in fp32 only (asked: bf16): " backends.txt &&
    ok "cpu.openblas says why" || bad "cpu.openblas bf16: $(grep bf16 backends.txt)"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
