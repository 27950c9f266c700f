#!/usr/bin/env bash
# bench/compare_pytorch_cpu.py on one tiny problem per family: fusecal run and
# PyTorch side by side in rounds (a document per round; a norm first, whose NNC probe
# must leave the TorchScript fuser as it found it), a row per problem with both
# variants of both from the round of the median ratio, the rounds' range and the
# percentage of the bounding ceiling; the documents it ran read again with --from; a
# problem the document lacks fails; --ceilings-beside measures the ceilings again beside
# each problem's round. Skipped (77) without torch.
. "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1
# the norm problems and decode attention grow past the LLC (no torch needed): 4x its size
# at least, in steps of 256 rows or one batch item, never smaller than listed; others as
# they are
if "$PYTHON" - "$SRC/bench" <<'EOF' >"$WORK/llc.log" 2>&1; then
import sys
sys.path.insert(0, sys.argv[1])
import compare_pytorch_cpu as c
llc = 32 << 20
for p in c.PROBLEMS:
    q = c.beyond_llc(p, llc)
    pat, d, _, dt = c.parse(q)
    if pat in c.NORM_TENSORS:
        row = d.get("n", d.get("h", 1) * d.get("d", 1)) * 4 * c.NORM_TENSORS[pat]
        assert d["m"] * row >= 4 * llc and (d["m"] - 256) * row < 4 * llc or d["m"] == c.parse(p)[1]["m"], q
        assert d["m"] >= c.parse(p)[1]["m"], q
    elif pat == "attention" and d["s"] == 1:
        kv = 2 * d.get("hkv", d["h"]) * d["skv"] * d["d"] * 4
        assert d["b"] * kv >= 4 * llc and ((d["b"] - 1) * kv < 4 * llc or d["b"] == c.parse(p)[1]["b"]), q
    else:
        assert q == p, q
assert c.beyond_llc("add_rmsnorm:m=8,n=64,dtype=bf16", 1 << 20) == "add_rmsnorm:m=8200,n=64,dtype=bf16"
assert c.beyond_llc("add_rmsnorm:m=1024,n=4096", 1 << 20) == "add_rmsnorm:m=1024,n=4096"
EOF
    ok "norm problems sized past the LLC"
else
    bad "beyond_llc: $(tail -1 "$WORK/llc.log")"
fi

if ! "$PYTHON" -c "import torch" 2>/dev/null; then
    echo "torch missing: the rest skipped"
    finish || exit 1
    exit 77
fi

LIN="linear_bias_relu:m=64,k=64,n=64" # 10.6 FLOPs a byte: compute-bound whatever the ceilings read
CONV="conv_bn_relu:n=1,c=8,h=8,w=8,k=8,r=3,s=3,pad=1,layout=nhwc"
ATT="attention:b=1,h=2,s=16,d=16,causal=1"
NORM="add_rmsnorm:m=4,n=64"
SCRIPT="$SRC/bench/compare_pytorch_cpu.py"

expect 0 "compare_pytorch_cpu.py --quick on a problem per family" -- "$PYTHON" "$SCRIPT" --fusecal "$FUSECAL" \
    --quick --max-time 0.02 --threads 2 --out cmp "$NORM" "$LIN" "$CONV" "$ATT"
for i in 1 2 3; do schema_valid_anywhere cmp/fusecal-$i.json; done
check_eq "a table row per problem" "$(grep -c '^| `' cmp/compare.md)" 4
for p in "$LIN" "$CONV" "$ATT" "$NORM"; do
    row=$(pyq cmp/compare.json "[r for r in d['rows'] if r['problem'] == '$p']")
    [ "$row" != "[]" ] && ok "row for $p" || bad "no row for $p"
done
check_eq "every figure finite and positive" "$(pyq cmp/compare.json "all(r[k] > 0 for r in d['rows'] for k in
    ('pytorch_unfused_ms', 'pytorch_fused_ms', 'fusecal_unfused_ms', 'fusecal_fused_ms', 'ratio',
     'fusecal_pct_ceiling', 'pytorch_pct_ceiling'))")" True
check_eq "the ratio is fusecal fused / PyTorch fused" "$(pyq cmp/compare.json "all(abs(r['ratio'] -
    r['fusecal_fused_ms'] / r['pytorch_fused_ms']) < 1e-9 for r in d['rows'])")" True
check_eq "three rounds, the row's ratio their median, within their range" "$(pyq cmp/compare.json "d['rounds'] == 3
    and all(len(r['round_ratios']) == 3 and r['ratio'] == sorted(r['round_ratios'])[1]
            and r['ratio'] == r['round_ratios'][r['round'] - 1]
            and r['ratio_min'] <= r['ratio'] <= r['ratio_max'] for r in d['rows'])")" True
check_eq "best backends are CPU backends" "$(pyq cmp/compare.json "all(r[k].startswith('cpu.') for r in d['rows']
    for k in ('fusecal_unfused_backend', 'fusecal_fused_backend'))")" True
check_eq "the norm against the bandwidth measured beside its rounds" "$(pyq cmp/compare.json "d['rows'][0]['ceiling']")" bw-beside
# fusecal's percentage is the one its record gives for the same median (same ceilings, same bound),
# the record in the document of the row's round
check_eq "percentages of ceilings as the records have them" "$("$PYTHON" - cmp <<'PY'
import json, sys
rows = json.load(open(sys.argv[1] + "/compare.json"))["rows"]
good = True
for r in rows:
    recs = json.load(open(f"{sys.argv[1]}/fusecal-{r['round']}.json"))["records"]
    rec = [x for x in recs if x["backend"] == r["fusecal_fused_backend"]
           and x["variants"]["fused"]["latency_ms"]["median"] == r["fusecal_fused_ms"]][0]["variants"]["fused"]
    key = {"bw": "pct_peak_bandwidth", "bw-beside": "pct_bandwidth_beside"}.get(r["ceiling"], "pct_gemm")
    good &= (rec["bound"] == "memory") == r["ceiling"].startswith("bw")
    good &= abs(rec[key] - r["fusecal_pct_ceiling"]) < 1e-6 * rec[key]
print(good)
PY
)" True
check_eq "every backend's fused form beside the fastest, the fastest among them" "$(pyq cmp/compare.json "all(
    len(r['fusecal_fused_by_backend']) >= 1 and all(e['backend'].startswith('cpu.') and e['fused_ms'] > 0
    and e['pct_ceiling'] > 0 for e in r['fusecal_fused_by_backend'])
    and min(e['fused_ms'] for e in r['fusecal_fused_by_backend']) == r['fusecal_fused_ms']
    for r in d['rows'])")" True
check_eq "PyTorch's fused forms named" "$(pyq cmp/compare.json "all(r['pytorch_fused_form'] for r in d['rows'])")" True
grep -q "^PyTorch .*, 2 threads, fp32; ceilings" "$WORK/out" && ok "header names threads, dtype, ceilings" ||
    bad "header: $(head -1 "$WORK/out")"

expect 0 "--from the documents it ran" -- "$PYTHON" "$SCRIPT" --fusecal "$FUSECAL" --from cmp/fusecal-1.json \
    --from cmp/fusecal-2.json --from cmp/fusecal-3.json --max-time 0.02 "$NORM"
grep -qF "| \`$NORM\` |" "$WORK/out" && ok "--from prints the row" || bad "--from: $(cat "$WORK/out")"
grep -q "; 3 rounds per problem" "$WORK/out" && ok "--from: a round per document" || bad "$(head -1 "$WORK/out")"
# a round whose document lacks the problem (fusecal skipped it): the row is of the others, and says so
pyq cmp/fusecal-2.json "json.dump({**d, 'records': [r for r in d['records'] if not r['problem'].startswith('add_rmsnorm')]},
    open('cmp/lacking.json', 'w'))" >/dev/null
expect 0 "--from with a round lacking the problem" -- "$PYTHON" "$SCRIPT" --fusecal "$FUSECAL" --from cmp/fusecal-1.json \
    --from cmp/lacking.json --from cmp/fusecal-3.json --max-time 0.02 "$NORM"
grep -qF "| \`$NORM\` |" "$WORK/out" && grep -q "; 2 of 3 rounds) |" "$WORK/out" && ok "the row of the other rounds" ||
    bad "$(cat "$WORK/out")"
grep -q "no fusecal record in round 2; the row is of the other 2" "$WORK/err" && ok "says which round" ||
    bad "$(cat "$WORK/err")"
expect 1 "a problem the document lacks" -- "$PYTHON" "$SCRIPT" --fusecal "$FUSECAL" --from cmp/fusecal-1.json \
    --max-time 0.02 "add_rmsnorm:m=5,n=64"
grep -q "no fusecal record for: add_rmsnorm:m=5,n=64" "$WORK/err" && ok "says which" || bad "$(cat "$WORK/err")"

# --ceilings-beside: fusecal info afresh before each problem's round, each round of each
# problem in a document of its own whose ceilings are that info's, the rows' % of them
expect 0 "--ceilings-beside" -- "$PYTHON" "$SCRIPT" --fusecal "$FUSECAL" --ceilings-beside --rounds 2 \
    --max-time 0.02 --threads 2 --out beside "$NORM" "$LIN"
schema_valid_anywhere beside/fusecal-[12]-[12].json
expect 0 "the info documents valid" -- "$FUSECAL" validate beside/info-1-1.json beside/info-1-2.json \
    beside/info-2-1.json beside/info-2-2.json
check_eq "each document's ceilings those of the info just before it" "$("$PYTHON" - beside <<'PY'
import json, sys
good = True
for r in (1, 2):
    for k in (1, 2):
        doc = json.load(open(f"{sys.argv[1]}/fusecal-{r}-{k}.json"))
        info = json.load(open(f"{sys.argv[1]}/info-{r}-{k}.json"))
        c, i = doc["ceilings"]["cpu"], info["ceilings"]["cpu"]
        good &= c["measured_utc"] == i["measured_utc"] and c["bandwidth_gbs"] == i["bandwidth_gbs"]
        good &= len(doc["records"]) > 0 and all(x["problem"].startswith(("add_rmsnorm", "linear_bias_relu")[k - 1])
                                                for x in doc["records"])
print(good)
PY
)" True
check_eq "the rows' percentages of their round's ceilings, named" "$("$PYTHON" - beside <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/compare.json"))
good = d["ceilings_beside"] is True
for k, r in enumerate(d["rows"]):
    recs = json.load(open(f"{sys.argv[1]}/fusecal-{r['round']}-{k + 1}.json"))["records"]
    rec = [x for x in recs if x["backend"] == r["fusecal_fused_backend"]
           and x["variants"]["fused"]["latency_ms"]["median"] == r["fusecal_fused_ms"]][0]["variants"]["fused"]
    key = {"bw": "pct_peak_bandwidth", "bw-beside": "pct_bandwidth_beside"}.get(r["ceiling"], "pct_gemm")
    good &= abs(rec[key] - r["fusecal_pct_ceiling"]) < 1e-6 * rec[key]
    if r["ceiling"].startswith("bw"):
        good &= r["ceiling_value"] == rec["bandwidth_ceiling_gbs" if r["ceiling"] == "bw" else "bandwidth_beside_gbs"]
    good &= len(r["round_pcts"]) == 2 and r["round_pcts"][r["round"] - 1] == r["fusecal_pct_ceiling"]
    good &= len(r["round_ceilings"]) == 2 and r["round_ceilings"][r["round"] - 1] == r["ceiling_value"]
print(good and [r["ceiling"] for r in d["rows"]] == ["bw-beside", "gemm"])
PY
)" True
grep -qE "^\| \`$NORM\` \|.*\| [0-9]+% bw-beside of [0-9.]+ GB/s \|" beside/compare.md && ok "the norm's cells name the GB/s" ||
    bad "$(cat beside/compare.md)"
grep -qE "^- \`$LIN\`: [0-9]+ % of [0-9.]+, [0-9]+ % of [0-9.]+ GFLOP/s$" beside/compare.md && ok "each round's %" ||
    bad "$(cat beside/compare.md)"
grep -q "ceilings measured beside each problem's round" beside/compare.md && ok "the header says so" ||
    bad "$(head -1 beside/compare.md)"
expect 2 "--ceilings-beside with --from" -- "$PYTHON" "$SCRIPT" --fusecal "$FUSECAL" --ceilings-beside \
    --from cmp/fusecal-1.json "$NORM"
grep -q "cannot read --from documents" "$WORK/err" && ok "says why" || bad "$(cat "$WORK/err")"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
