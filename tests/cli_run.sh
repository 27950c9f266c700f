#!/usr/bin/env bash
# fusecal run / list / info / validate end to end: records are written, valid
# under both validators, verified, and re-runnable from their problem strings.
. "$(dirname "$0")/lib.sh"

out=$WORK/cal.json
expect 0 "run tiny problems of every family on every CPU backend" -- \
    "$FUSECAL" run --shape m=7,k=13,n=5 --shape n=2,c=3,h=7,w=6,k=3,r=3,s=3,pad=1 --shape b=1,h=2,s=33,d=64 \
    --shape n=1,c=4,h=6,w=5,k=4 --shape m=5,n=24 --shape m=3,h=2,d=8 "${FAST[@]}" --out "$out"
schema_valid "$out"
n_expected=$(grep -c '' < <("$FUSECAL" run --shape m=7,k=13,n=5 --shape n=2,c=3,h=7,w=6,k=3,r=3,s=3,pad=1 \
    --shape b=1,h=2,s=33,d=64 \
    --shape n=1,c=4,h=6,w=5,k=4 --shape m=5,n=24 --shape m=3,h=2,d=8 --dry-run | grep -v 'problems x backends'))
check_eq "one record per problem and backend" "$(pyq "$out" "len(d['records'])")" "$n_expected"
check_eq "every record ok and verified" \
    "$(pyq "$out" "all(r['status']=='ok' and r['verification']['passed'] for r in d['records'])")" True
check_eq "document complete" "$(pyq "$out" "d['complete']")" True
"$FUSECAL" list patterns --format json > "$WORK/patterns.json"
check_eq "every pattern measured" "$(pyq "$out" "len({r['pattern'] for r in d['records']})")" \
    "$(pyq "$WORK/patterns.json" "len(d['patterns'])")"
check_eq "flat partitioner fields" \
    "$(pyq "$out" "all(k in r for r in d['records'] for k in ('fusion_pattern','unfused_latency_ms','fused_latency_ms','speedup_factor','memory_reduction','unfused_gflops','fused_gflops'))")" True
check_eq "speedup CI brackets the ratio" \
    "$(pyq "$out" "all(r['speedup']['ci95'][0] <= r['speedup']['ratio'] <= r['speedup']['ci95'][1] for r in d['records'])")" True
# the decision follows the CI, unless the state check withheld it: the rounds' medians
# spanning 2x or more and a tenth of the rounds (one at least) across the threshold
# from the CI's decision, counted here from per_round
cat > "$WORK/decided.py" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
key = {'fusion': 'ratio_fusion', 'graph': 'ratio_graph', 'eager': 'ratio'}
bad = []
for r in d['records']:
    t = r['threshold']
    c = (r['speedup_split']['fusion'] if r['decided_by'] == 'fusion' else r['speedup'])['ci95']
    ci = 'yes' if c[0] > t else 'no' if c[1] < t else 'inconclusive'
    st = r['state']
    q = [p[key[r['decided_by']]] for p in r['per_round']]
    against = sum(x < t for x in q) if ci == 'yes' else sum(x > t for x in q) if ci == 'no' else 0
    base = 'control' if r['decided_by'] == 'fusion' else 'unfused'
    span = max(max(p['median_ms'][v] for p in r['per_round']) / min(p['median_ms'][v] for p in r['per_round'])
               for v in (base, 'fused'))
    held = ci != 'inconclusive' and span >= 2 and against >= 1 and against >= 0.1 * r['rounds']
    if (abs(st['span'] / span - 1) > 1e-9 or st['rounds_against'] != against or
            st.get('withheld') != (ci if held else None) or r['decision'] != ('inconclusive' if held else ci)):
        bad.append(r['problem'] + ' ' + r['backend'])
print(bad or True)
EOF
check_eq "decision follows the CI (the fusion split's where a control was measured) or the state check" \
    "$(python3 "$WORK/decided.py" "$out")" True
check_eq "decided on the fusion split exactly where a control was measured and the implementation is no loss" \
    "$(pyq "$out" "all((r['decided_by'] == 'fusion') == ('control' in r['variants'] and r['speedup_split']['implementation']['ci95'][1] >= 1) for r in d['records'])")" True
check_eq "implementations named, unfused kernels per op" \
    "$(pyq "$out" "all(r['variants']['fused']['impl'] and r['variants']['fused']['kernels'] == (2 if r['pattern'] == 'linear_swiglu' and r['backend'] == 'cpu.onednn' else 1) and r['variants']['unfused']['kernels'] > 1 for r in d['records'])")" True
check_eq "ceilings measured" "$(pyq "$out" "d['ceilings']['cpu']['gflops']['fp32'] > 1 and d['ceilings']['cpu']['bandwidth_gbs'] > 1")" True
check_eq "host block" "$(pyq "$out" "'openblas' in d['host']['libraries'] and d['host']['devices']['cpu']['cores'] >= 1")" True
# memory-bound records: each round's bandwidth ceilings measured beside it (in the
# worker processes), each variant's the median of its rounds' and its percentage of it;
# none for the others, and none at all with --no-bandwidth-beside
cat > "$WORK/beside.py" <<'EOF'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
on = d['settings']['bandwidth_beside']
mem = bad = 0
for r in d['records']:
    vs = r['variants']
    if on and any(v['bound'] == 'memory' for v in vs.values()):
        mem += 1
        for name, v in vs.items():
            per = [p['bandwidth_beside_gbs'][name] for p in r['per_round']]
            med = statistics.median(per)
            bad += abs(v['bandwidth_beside_gbs'] - med) > 1e-6 * med
            bad += abs(v['pct_bandwidth_beside'] - 100 * v['gbs'] / med) > 1e-6 * v['pct_bandwidth_beside']
            bad += v['over_ceiling'] != (v['pct_bandwidth_beside'] > 100 or v['pct_peak_bandwidth'] > 100 or v['pct_peak_flops'] > 100 or v['pct_roofline'] > 100 or v.get('pct_peak_flops_beside', 0) > 100)
    else:
        bad += any('bandwidth_beside_gbs' in p for p in r['per_round'])
        bad += any('pct_bandwidth_beside' in v or 'bandwidth_beside_gbs' in v for v in vs.values())
print(on, mem > 0 if on else mem == 0, bad)
EOF
check_eq "bandwidth beside the memory-bound records' rounds" "$(python3 "$WORK/beside.py" "$out")" "True True 0"
expect 0 "a memory-bound problem with --no-bandwidth-beside" -- "$FUSECAL" run --shape m=5,n=24 --backend cpu.onednn \
    --no-bandwidth-beside "${FAST[@]}" --out "$WORK/nobeside.json" --quiet
check_eq "no bandwidth beside when turned off" "$(python3 "$WORK/beside.py" "$WORK/nobeside.json")" "False True 0"
# compute-bound records: the arithmetic peak measured beside each round, the record's
# the median of the rounds', each variant's percentage of it (of the work it did, as
# pct_peak_flops is); none for memory-bound records, none with --no-peak-beside
cat > "$WORK/peak.py" <<'EOF'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
on = d['settings']['peak_beside']
comp = bad = 0
for r in d['records']:
    vs, roof = r['variants'], r['roofline']
    if on and any(v['bound'] == 'compute' for v in vs.values()):
        comp += 1
        med = statistics.median(p['peak_beside_gflops'] for p in r['per_round'])
        bad += abs(roof['peak_beside_gflops'] - med) > 1e-9 * med
        for v in vs.values():
            want = v['pct_peak_flops'] * roof['peak_gflops'] / med
            bad += abs(v['pct_peak_flops_beside'] - want) > 1e-6 * want
            bad += v['over_ceiling'] != (v['pct_peak_flops_beside'] > 100 or v['pct_peak_flops'] > 100 or v['pct_peak_bandwidth'] > 100 or v['pct_roofline'] > 100 or v.get('pct_bandwidth_beside', 0) > 100)
    else:
        bad += any('peak_beside_gflops' in p for p in r['per_round']) + ('peak_beside_gflops' in roof)
        bad += any('pct_peak_flops_beside' in v for v in vs.values())
print(on, comp > 0 if on else comp == 0, bad)
EOF
expect 0 "a compute-bound linear" -- "$FUSECAL" run --shape m=256,k=256,n=256 --pattern linear_bias,linear_bias_gelu \
    --backend cpu.openblas "${FAST[@]}" --out "$WORK/peak.json" --quiet
check_eq "the arithmetic peak beside the compute-bound records' rounds" "$(python3 "$WORK/peak.py" "$WORK/peak.json")" "True True 0"
expect 0 "a report of them" -- "$FUSECAL" report "$WORK/peak.json" -o "$WORK/peak.html"
check_eq "the report gives each record's peak beside its rounds" "$(grep -o 'arithmetic peak beside the rounds [0-9.]* GFLOP/s' "$WORK/peak.html" | wc -l)" \
    "$(pyq "$WORK/peak.json" "len(d['records'])")"
check_eq "beside the compute-bound records of every family alone" "$(python3 "$WORK/peak.py" "$out")" \
    "True $(pyq "$out" "any(v['bound'] == 'compute' for r in d['records'] for v in r['variants'].values())") 0"
expect 0 "the same with --no-peak-beside" -- "$FUSECAL" run --shape m=256,k=256,n=256 --pattern linear_bias \
    --backend cpu.openblas --no-peak-beside "${FAST[@]}" --out "$WORK/nopeak.json" --quiet
check_eq "no peak beside when turned off" "$(python3 "$WORK/peak.py" "$WORK/nopeak.json")" "False True 0"
check_eq "BN folding time reported apart" "$(pyq "$out" "all(r['prepare_ms'] >= 0 for r in d['records'] if r['pattern']=='conv_bn_relu')")" True

# a conv shape with k != c is for every conv pattern but the depthwise one; with k = c,
# the depthwise one takes it too (g = c)
dry() { "$FUSECAL" run --shape "$1" --backend cpu.openblas --dry-run | awk -F'[ :]+' '/^cpu/ {print $2}' | sort | tr '\n' ' '; }
check_eq "k != c: no depthwise problem" "$(dry n=1,c=4,h=5,w=5,k=8)" "conv_bn conv_bn_add_relu conv_bn_relu conv_relu "
check_eq "k = c: a depthwise problem too" "$(dry n=1,c=4,h=5,w=5,k=4)" \
    "conv_bn conv_bn_add_relu conv_bn_relu conv_relu dwconv_bn_relu "

# the problem string re-runs the same problem
p=$(pyq "$out" "[r['problem'] for r in d['records'] if r['pattern']=='conv_bn_relu'][0]")
expect 0 "re-run from a record's problem string" -- "$FUSECAL" run --shape "$p" --backend cpu.openblas "${FAST[@]}" --out "$WORK/re.json" --quiet
check_eq "same problem" "$(pyq "$WORK/re.json" "d['records'][0]['problem']")" "$p"

# formats
expect 0 "csv output" -- "$FUSECAL" run --shape m=8,k=8,n=8 --pattern linear_bias --backend cpu.openblas "${FAST[@]}" --out "$WORK/r.csv" --quiet
check_eq "csv header + 1 row" "$(grep -c '' "$WORK/r.csv")" 2
check_eq "csv columns" "$("$PYTHON" -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[0]['pattern'], r[0]['status'], float(r[0]['speedup'])>0)" "$WORK/r.csv")" "linear_bias ok True"
# cpu.openblas's fused linear changes its GEMM too: a control was timed, and the decision
# made on the fusion split, or on the whole speedup where the implementation's split is a
# loss (its interval below 1, so its point estimate too)
check_eq "csv decided on the fusion split unless the implementation loses" "$("$PYTHON" -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1])))[0]; print(float(r['speedup_fusion'])>0, r['decided_by'] == 'fusion' or (r['decided_by'] == 'eager' and float(r['speedup_implementation']) < 1))" "$WORK/r.csv")" "True True"
expect 0 "jsonl output" -- "$FUSECAL" run --shape m=8,k=8,n=8 --pattern linear_bias,linear_bias_gelu --backend cpu.openblas "${FAST[@]}" --out "$WORK/r.jsonl" --quiet
check_eq "jsonl: header + 2 records, each a JSON object" "$("$PYTHON" -c "import json,sys; L=[json.loads(l) for l in open(sys.argv[1])]; print(len(L), L[0]['schema'], L[1]['pattern'])" "$WORK/r.jsonl")" "3 fusecal-calibration linear_bias"
expect 0 "markdown output" -- "$FUSECAL" run --shape m=8,k=8,n=8 --pattern linear_bias --backend cpu.openblas "${FAST[@]}" --out "$WORK/r.md" --quiet
if grep -q '^| linear_bias | cpu.openblas | fp32 |' "$WORK/r.md"; then ok "markdown table row"; else bad "markdown table row"; fi

# a sweep file
cat >"$WORK/sweep.json" <<'JSON'
{"schema_version": 1, "stop": {"max_time_s": 0.05, "min_time_s": 0.01},
 "thresholds": {"linear_bias": 1.5},
 "entries": [{"patterns": ["linear_bias"], "shapes": [{"m": 9, "k": 10, "n": 11}]},
             {"problems": ["conv_relu:n=1,c=2,h=5,w=5,k=3,r=3,s=3,pad=1,layout=nchw"]}]}
JSON
expect 0 "sweep file" -- "$FUSECAL" run --sweep "$WORK/sweep.json" --backend cpu.openblas --seed 3 --out "$WORK/sw.json" --quiet
check_eq "sweep file problems" "$(pyq "$WORK/sw.json" "sorted(r['problem'] for r in d['records'])")" \
    "['conv_relu:n=1,c=2,h=5,w=5,k=3,r=3,s=3,stride=1,pad=1,layout=nchw,dtype=fp32', 'linear_bias:m=9,k=10,n=11,dtype=fp32']"
check_eq "sweep file threshold and stop rule" "$(pyq "$WORK/sw.json" "[r['threshold'] for r in d['records'] if r['pattern']=='linear_bias'][0], d['settings']['stop']['max_time_s']")" "1.5 0.05"
expect 0 "validate accepts a sweep file" -- "$FUSECAL" validate "$WORK/sweep.json"
# dimension names regardless of case: M is m; a shape naming one twice is refused
cat >"$WORK/sweep2.json" <<'JSON'
{"schema_version": 1, "entries": [{"patterns": ["linear_bias"], "shapes": [{"M": 9, "m": 10, "k": 10, "n": 11}]}]}
JSON
expect 2 "a sweep file naming m twice (M and m)" -- "$FUSECAL" run --sweep "$WORK/sweep2.json" --dry-run
err_says "dimension 'm' given twice"
expect 0 "upper-case dims in a problem string" -- "$FUSECAL" run --shape 'linear_bias:M=512,K=1024,N=1024' --backend cpu.openblas --dry-run
check_eq "the canonical string is lower case" "$(head -1 "$WORK/out")" "cpu.openblas   linear_bias:m=512,k=1024,n=1024,dtype=fp32 (threshold 1.1)"

# cold cache and threads are recorded
if have_backend cpu.onednn; then onednn=1; cold_backend=cpu.onednn; else onednn=0; cold_backend=cpu.openblas; fi
expect 0 "cold cache, one thread" -- "$FUSECAL" run --shape m=16,k=16,n=16 --pattern linear_bias_relu --backend "$cold_backend" --cache cold --threads 1 "${FAST[@]}" --out "$WORK/cold.json" --quiet
check_eq "settings recorded" "$(pyq "$WORK/cold.json" "d['settings']['cache'], d['settings']['threads'], d['records'][0]['variants']['fused']['batch']")" "cold 1 1"

# the quick sweep's plan holds every pattern on both backends (dry run: no measuring)
expect 0 "dry run of the quick sweep" -- "$FUSECAL" run --dry-run
"$FUSECAL" list backends --format json > "$WORK/backends.json"
cp "$WORK/out" "$WORK/plan.txt"
plan_check='
import json, sys
plan = [l.split() for l in open(sys.argv[1]) if l.startswith("cpu.")]
problems = {p for _, p, *_ in plan}
pats = {p.split(":")[0] for p in problems}
be = {b["name"]: set(b.get("supports", {}).get("fp32", ())) for b in json.load(open(sys.argv[2]))["backends"]}
every = json.load(open(sys.argv[3]))["patterns"]
out = [pats == {p["name"] for p in every}]
for name in ("cpu.openblas", "cpu.onednn"):
    want = {p for p in problems if p.split(":")[0] in be.get(name, ())}
    out.append({p for b, p, *_ in plan if b == name} == want)
print(*out)'
check_eq "quick sweep plan: every pattern, every problem on each backend that implements it" \
    "$("$PYTHON" -c "$plan_check" "$WORK/plan.txt" "$WORK/backends.json" "$WORK/patterns.json")" "True True True"

# list and info
expect 0 "list" -- "$FUSECAL" list
if grep -q 'cpu.openblas' "$WORK/out" && grep -q 'conv_bn_relu' "$WORK/out"; then ok "list names backends and patterns"; else bad "list output"; fi
expect 0 "list --format json" -- "$FUSECAL" list backends --format json
check_eq "list json parses" "$("$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['backends']) >= 2)" "$WORK/out")" True
expect 0 "info --format json" -- "$FUSECAL" info --format json --threads 2
check_eq "info: ceilings and inventory" "$("$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); c=d['ceilings']['cpu']; h=d['host']; print(c['gflops']['fp32']>1, c['bandwidth_gbs']>1, 'openblas' in h['libraries'], len(h['devices']['cpu']['model'])>0)" "$WORK/out")" "True True True True"
# the LLC the kernels plan for: named by /sys, or else the assumed one recorded (exactly one)
check_eq "info: the LLC named or assumed" "$("$PYTHON" -c "import json,sys; c=json.load(open(sys.argv[1]))['host']['devices']['cpu']; print(bool(c.get('cache_bytes')) != ('llc_assumed_bytes' in c))" "$WORK/out")" "True"
expect 0 "info text" -- "$FUSECAL" info --no-measure
for cmd in run list info validate; do expect 0 "$cmd --help" -- "$FUSECAL" "$cmd" --help; done
expect 0 "--version" -- "$FUSECAL" --version

# rounds in worker processes (the default) or in one process: the records say which;
# the worker is not a command a user calls, and says so when fed anything else
expect 0 "rounds in workers" -- "$FUSECAL" run --shape m=16,k=16,n=16 --pattern linear_bias,linear_bias_relu \
    --backend cpu.openblas "${FAST[@]}" --out "$WORK/procs.json" --quiet
check_eq "workers: every record ok, in plan order, its rounds in processes" \
    "$(pyq "$WORK/procs.json" "[(r['pattern'], r['status'], r['rounds'] >= 5, 'each round in its own process' in r['speedup']['method']) for r in d['records']]")" \
    "[('linear_bias', 'ok', True, True), ('linear_bias_relu', 'ok', True, True)]"
schema_valid "$WORK/procs.json"
expect 0 "--one-process" -- "$FUSECAL" run --shape m=16,k=16,n=16 --pattern linear_bias --backend cpu.openblas \
    "${FAST[@]}" --one-process --out "$WORK/one.json" --quiet
check_eq "one process: the method says so" "$(pyq "$WORK/one.json" "'the rounds in one process' in d['records'][0]['speedup']['method']")" True
expect 2 "the worker fed nothing" -- "$FUSECAL" __rounds </dev/null
err_says "worker of 'fusecal run'"

# without --out: fusecal-<time>.json, or -2, -3, ... when that is taken, so runs
# started in the same second and folder never write one file (here the names of
# this second and the next ten are taken beforehand); a dry run takes no name
mkdir "$WORK/names"
now=$(date -u +%s)
for t in $(seq "$now" $((now + 10))); do echo taken >"$WORK/names/fusecal-$(date -u -d "@$t" +%Y%m%d-%H%M%S).json"; done
(cd "$WORK/names" && "$FUSECAL" run --shape m=2,k=2,n=2 --pattern linear_bias --backend cpu.openblas --max-time 0.05 \
    --min-time 0.01 --min-samples 2 --rounds 2 --no-bandwidth-beside --quiet 2>/dev/null)
check_eq "default name: a run beside taken names exits 0" "$?" 0
check_eq "default name: the names taken are untouched" "$(cat "$WORK/names"/fusecal-*[0-9][0-9].json | sort -u)" taken
made=$(ls "$WORK/names" | grep -E '^fusecal-[0-9]{8}-[0-9]{6}-2\.json$')
check_eq "default name: the run wrote -2" "$(echo "$made" | wc -l) $(pyq "$WORK/names/$made" "len(d['records'])" 2>/dev/null)" "1 1"
before=$(ls "$WORK/names" | wc -l)
(cd "$WORK/names" && "$FUSECAL" run --shape m=2,k=2,n=2 --pattern linear_bias --backend cpu.openblas --dry-run >/dev/null 2>&1)
check_eq "default name: a dry run makes no file" "$(ls "$WORK/names" | wc -l)" "$before"

finish
