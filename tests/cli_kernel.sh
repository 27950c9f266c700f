#!/usr/bin/env bash
# run --kernel: cuda.custom's fused attention kernel (reference or flash2) is a run
# setting — checked like every choice, written to the document's settings (reference
# when not given), refused by --append into a document made with the other kernel,
# kept by --resume — and, where a GPU runs cuda.custom, named by each record whose
# fused form ran it (variants.fused.attention_kernel and its impl).
. "$(dirname "$0")/lib.sh"

cpu=(--device cpu --backend cpu.openblas --shape linear_bias:m=16,k=16,n=16 "${FAST[@]}" --rounds 2 --quiet)

expect 2 "--kernel takes only the kernels' names" -- "$FUSECAL" run --kernel flash3 "${cpu[@]}" --out "$WORK/x.json"
err_says "attention kernel" "flash3" "reference, flash2"

expect 0 "run --kernel flash2" -- "$FUSECAL" run --kernel flash2 "${cpu[@]}" --out "$WORK/f2.json"
schema_valid_anywhere "$WORK/f2.json"
check_eq "settings name the kernel" "$(pyq "$WORK/f2.json" "d['settings']['attention_kernel']")" flash2
check_eq "no CPU record claims an attention kernel" \
    "$(pyq "$WORK/f2.json" "any('attention_kernel' in v for r in d['records'] for v in r['variants'].values())")" False

expect 0 "run without --kernel" -- "$FUSECAL" run "${cpu[@]}" --out "$WORK/ref.json"
check_eq "the default is reference" "$(pyq "$WORK/ref.json" "d['settings']['attention_kernel']")" reference

expect 2 "--append refuses the other kernel" -- "$FUSECAL" run --append "$WORK/f2.json" "${cpu[@]}" \
    --shape linear_bias:m=24,k=16,n=16
err_says "attention kernel differs" "flash2" "reference"

expect 0 "--append with the same kernel" -- "$FUSECAL" run --append "$WORK/f2.json" --kernel flash2 \
    --device cpu --backend cpu.openblas --shape linear_bias:m=24,k=16,n=16 "${FAST[@]}" --rounds 2 --quiet
check_eq "appended document keeps flash2" "$(pyq "$WORK/f2.json" "d['settings']['attention_kernel'], len(d['records'])")" \
    "flash2 2"

if "$FUSECAL" list backends --format json | "$PYTHON" -c \
    "import json,sys; sys.exit(0 if any(b['name']=='cuda.custom' and b['usable'] for b in json.load(sys.stdin)['backends']) else 1)"; then
    for k in reference flash2; do
        f=$WORK/gpu-$k.json
        expect 0 "cuda.custom with --kernel $k" -- "$FUSECAL" run --device cuda --backend cuda.custom --kernel "$k" \
            --shape attention:b=1,h=3,s=100,d=64 --shape qk_softmax:b=1,h=3,s=100,d=128,causal=1 \
            --shape qk_scale:b=1,h=3,s=100,d=64 --dtype bf16 "${FAST[@]}" --rounds 2 --no-graph --out "$f" --quiet
        schema_valid_anywhere "$f"
        check_eq "$k: attention and qk_softmax name it, qk_scale (a GEMM) does not" \
            "$(pyq "$f" "sorted((r['pattern'], r['variants']['fused'].get('attention_kernel'), '$k' in r['variants']['fused']['impl']) for r in d['records'])")" \
            "[('attention', '$k', True), ('qk_scale', None, False), ('qk_softmax', '$k', True)]"
    done
else
    echo "skip: no usable cuda.custom here: the records' kernel names are checked on a GPU"
fi

finish
