#!/usr/bin/env bash
# Fault injection on the GPU: FUSECAL_FAULT=cuda, cublas or cudnn makes every call of
# that library fail inside each problem. The records of the backends that use it are
# failed with the call named (file:line and the library's error string), the others
# are measured, every problem has its record, and run exits 1. Exit 77 (skipped)
# where no CUDA GPU is usable. Documents are checked by both schema validators, or
# by fusecal's alone (said so) where python's jsonschema is not installed.
. "$(dirname "$0")/lib.sh"

if ! "$FUSECAL" list devices --format json | "$PYTHON" -c \
    "import json,sys; sys.exit(0 if any(d['name']=='cuda' and d['usable'] for d in json.load(sys.stdin)['devices']) else 1)"; then
    echo "skipped: no usable CUDA GPU"
    exit 77
fi

problems=(--shape linear_bias_relu:m=64,k=96,n=80 --shape attention:b=1,h=2,s=64,d=64
          --shape conv_bn_relu:n=1,c=8,h=9,w=9,k=16,r=3,s=3,pad=1,layout=nhwc)
backends=()
for b in cuda.cublas cuda.custom cuda.cudnn; do have_backend "$b" && backends+=("$b"); done
list=$(IFS=,; echo "${backends[*]}")

# site, the text its errors start with, the backends that must fail
for spec in "cuda|CUDA call|cuda.cublas cuda.custom cuda.cudnn" \
            "cublas|cuBLAS call|cuda.cublas cuda.custom" \
            "cudnn|cuDNN call|cuda.cudnn"; do
    IFS='|' read -r site says must <<<"$spec"
    [ "$site" = cudnn ] && ! have_backend cuda.cudnn && continue
    f=$WORK/fault-$site.json
    FUSECAL_FAULT=$site expect 1 "FUSECAL_FAULT=$site" -- "$FUSECAL" run --device cuda --backend "$list" "${problems[@]}" \
        "${FAST[@]}" --no-graph --out "$f" --quiet
    schema_valid_anywhere "$f"
    check_eq "$site: every problem has its record" "$(pyq "$f" "len(d['records'])")" "${#backends[@]}"
    check_eq "$site: failed records name the call, its file:line and the error" \
        "$(pyq "$f" "all(r['status']=='ok' or ('$says ' in r['reason'] and '.c:' in r['reason']) for r in d['records'])")" True
    for b in "${backends[@]}"; do
        want=ok
        case " $must " in *" $b "*) want=failed ;; esac
        check_eq "$site: $b $want" "$(pyq "$f" "[r['status'] for r in d['records'] if r['backend']=='$b']")" "['$want']"
    done
done

# without the switch the same run is clean
expect 0 "no fault: every record ok" -- "$FUSECAL" run --device cuda --backend "$list" "${problems[@]}" "${FAST[@]}" \
    --no-graph --out "$WORK/clean.json" --quiet
check_eq "clean run verified" "$(pyq "$WORK/clean.json" "all(r['status']=='ok' for r in d['records'])")" True

finish
