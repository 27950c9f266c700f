#!/usr/bin/env bash
# cpu.onednn's Winograd convolutions, as this machine has them: a 3x3 fp32
# convolution of 64 channels or more runs as oneDNN's Winograd convolution in both
# variants where the CPU has AVX-512 (between reorders of x and of the output, named
# in the records), verified against float64, its record counting the FLOPs the
# algorithm performs (fewer than the problem's) and its percentages of the GEMM
# ceiling and the roofline of those; 32 channels, a 1x1 filter, a residual or bf16
# run direct. Without AVX-512 oneDNN has no Winograd convolution: every record
# direct. Skipped (77) where cpu.onednn is not built.
. "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1
"$FUSECAL" list backends --format json >backends.json || bad "list backends"
if [ "$(pyq backends.json "[b['usable'] for b in d['backends'] if b['name'] == 'cpu.onednn']")" != "[True]" ]; then
    echo "cpu.onednn is not built or not usable here: skipped"
    exit 77
fi
WINO="conv_bn_relu:n=1,c=64,h=9,w=7,k=64,r=3,s=3,pad=1"
expect 0 "conv problems on cpu.onednn" -- "$FUSECAL" run --backend cpu.onednn --quiet --max-time 0.02 \
    --shape "$WINO" --shape "conv_relu:n=2,c=64,h=6,w=5,k=80,r=3,s=3,layout=nchw" \
    --shape "conv_bn:n=1,c=32,h=9,w=7,k=64,r=3,s=3,pad=1" --shape "conv_bn_add_relu:n=1,c=64,h=9,w=7,k=64,r=3,s=3,pad=1" \
    --shape "conv_bn_relu:n=1,c=64,h=9,w=7,k=64,r=1,s=1" --out conv.json
schema_valid_anywhere conv.json
check_eq "every record verified" "$(pyq conv.json "[(r['status'], r['verification']['passed']) for r in d['records']]")" \
    "[('ok', True), ('ok', True), ('ok', True), ('ok', True), ('ok', True)]"
wino() { pyq conv.json "['convolution(winograd)' in r['variants'][v]['impl'] for r in d['records'] for v in
    ('unfused', 'fused')]"; }
if grep -qw avx512f /proc/cpuinfo; then
    check_eq "Winograd in both variants where it pays, direct elsewhere" "$(wino)" \
        "[True, True, True, True, False, False, False, False, False, False]"
    check_eq "between reorders of x and of the output" "$(pyq conv.json "all(r['variants'][v]['impl'].startswith('reorder[')
        and r['variants'][v]['impl'].count(' -> reorder[') == 1 for r in d['records'][:2] for v in ('unfused', 'fused'))")" True
    check_eq "two of the kernels layout reorders" "$(pyq conv.json "[r['variants'][v].get('layout_reorders', 0) for r in
        d['records'] for v in ('unfused', 'fused')]")" "[2, 2, 2, 2, 0, 0, 0, 0, 0, 0]"
    check_eq "the folds and post-op named with the convolution" "$(pyq conv.json "'convolution(winograd)[' in
        d['records'][0]['variants']['fused']['impl'].split(' with BN folded into weights/bias + post-op eltwise_relu -> reorder[')[0]")" True
    check_eq "the FLOPs it performs: fewer than the problem's, present only there" "$(pyq conv.json "[(0 <
        r['variants'][v].get('flops_performed', r['flops']) < r['flops']) for r in d['records'] for v in
        ('unfused', 'fused')]")" "[True, True, True, True, False, False, False, False, False, False]"
    # F(2x2, 3x3) at 9x7 outputs: 5 x 4 tiles of 16 products per channel pair, their
    # transforms' additions, the bias; then BN's 2 and ReLU's 1 per output unfused
    check_eq "F(2x2,3x3)'s count" "$(pyq conv.json "round(d['records'][0]['variants']['fused']['flops_performed'])")" \
        "$(python3 -c "t = 5 * 4; Y = 64 * 9 * 7; print(t * (2 * 16 * 64 * 64 + 32 * 64 + 24 * 64) + Y + 3 * Y)")"
    check_eq "percentages of the work performed" "$(pyq conv.json "all(abs(v['pct_peak_flops'] - 100 *
        v['flops_performed'] / (v['latency_ms']['median'] * 1e-3) / 1e9 / r['roofline']['peak_gflops']) < 1e-6 *
        v['pct_peak_flops'] and abs(v['pct_gemm'] - 100 * v['flops_performed'] / (v['latency_ms']['median'] * 1e-3) /
        1e9 / r['roofline']['ceiling_gflops']) < 1e-6 * v['pct_gemm'] and abs(v['gflops'] - r['flops'] /
        (v['latency_ms']['median'] * 1e-3) / 1e9) < 1e-6 * v['gflops'] for r in d['records'][:2] for v in
        r['variants'].values())")" True
else
    check_eq "no Winograd without AVX-512" "$(wino)" "[False, False, False, False, False, False, False, False, False, False]"
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
