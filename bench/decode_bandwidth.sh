#!/usr/bin/env bash
# Decode attention's fused kernel against the rate a bare read of as many bytes
# reaches, in the same minutes: decode (s = 1) only reads its KV cache, so how near
# the kernel comes to a plain read stream says what is left to win. (The record's
# own ceiling is fusecal's read-only stream, measured once at the first round's
# start; the bare reads show how far the machine moves in the minutes after.)
#   bench/decode_bandwidth.sh [OUTDIR]   (default results/$(bench/machine.sh))
# Three rounds, each: bench/read_stream.c over the problem's K and V bytes (seven
# repeats), then `fusecal run` of the problem on cpu.openblas (fusecal's split-KV
# decode kernel). Writes OUTDIR/decode-bandwidth-{1,2,3}.json (the rounds' records),
# OUTDIR/decode-bandwidth-read.txt (the reads) and OUTDIR/decode-bandwidth.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_out "${1:-}"
problem=${FUSECAL_DECODE_PROBLEM:-attention:b=33,h=32,hkv=8,s=1,skv=4096,d=128}
bin=$(mktemp -d)/read_stream
trap 'rm -rf "$(dirname "$bin")"' EXIT
cc -O3 -march=native -fopenmp -o "$bin" bench/read_stream.c
threads=$(nproc)
# the bytes of K and V (fp32), what the kernel streams
bytes=$(python3 -c 'import sys
d = dict(kv.split("=") for kv in sys.argv[1].split(":")[1].split(","))
print(2 * int(d["b"]) * int(d.get("hkv", d["h"])) * int(d.get("skv", d["s"])) * int(d["d"]) * 4)' "$problem")
rm -f "$out"/decode-bandwidth-[123].json "$out/decode-bandwidth-read.txt"
for r in 1 2 3; do
    echo "round $r" >>"$out/decode-bandwidth-read.txt"
    OMP_NUM_THREADS=$threads "$bin" "$bytes" 7 | tee -a "$out/decode-bandwidth-read.txt"
    run "$fusecal" run --shape "$problem" --backend cpu.openblas --max-time 3 --seed "$r" --out "$out/decode-bandwidth-$r.json" --quiet
done
note "# bench/decode_bandwidth.sh: cc -O3 -march=native -fopenmp bench/read_stream.c, run between the fusecal runs above (decode-bandwidth-read.txt)"
python3 - "$out" <<'PY' | tee "$out/decode-bandwidth.txt"
import json, statistics, sys
out = sys.argv[1]
recs = [json.load(open(f"{out}/decode-bandwidth-{r}.json"))["records"][0] for r in (1, 2, 3)]
reads, cur = [], None
for line in open(f"{out}/decode-bandwidth-read.txt"):
    if line.startswith("round"):
        cur = []
        reads.append(cur)
    elif line.startswith("read"):
        cur.append(float(line.split()[1]))
print(f"decode attention beside a bare read of its bytes ({recs[0]['problem']}, cpu.openblas)")
print(f"{'round':>5} {'read GB/s':>10} {'read/ceiling':>13} {'fused GB/s':>11} {'fused/read':>11} {'fused/ceiling':>14}")
for i, rec in enumerate(recs):
    f = rec["variants"]["fused"]
    ceiling = f["gbs"] * 100 / f["pct_peak_bandwidth"]  # the run's bandwidth ceiling
    rd = statistics.median(reads[i])  # the median of the round's seven reads
    print(f"{i + 1:>5} {rd:>10.2f} {100 * rd / ceiling:>12.1f}% {f['gbs']:>11.2f} {100 * f['gbs'] / rd:>10.1f}% "
          f"{f['pct_peak_bandwidth']:>13.1f}%")
print(f"ceiling: {ceiling:.2f} GB/s (the record's bandwidth_ceiling_gbs: fusecal's read-only stream where the "
      "record has read_bytes, before that its copy and triad, bytes read + written; measured once, at the first "
      "round's start, and kept for the others); read: the median of seven bare reads of the K and V bytes by all "
      "threads, just before the round's fusecal run")
PY
