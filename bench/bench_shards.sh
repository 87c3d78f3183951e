#!/usr/bin/env bash
# Sharded indexing and queries over shards, measured on one machine.
#
#   bench/bench_shards.sh [BUILD_DIR] [RUNS] [MB_PER_RUN] [REPEATS]   (defaults: build 64 3 5)
#
# Makes an archive of RUNS runs (8 distinct generated logs, tools/gen-log.py, each
# under RUNS/8 names, zstd-compressed like a real archive), then prints:
#   - one index of everything: wall time, MB/s of text, index size
#   - the same as 8 shards one after another (the cost of every shard walking the
#     root) and 2 at a time (tools/slurm-index.sh --local --jobs 2)
#   - an unchanged re-run (the nightly no-op): per-shard wall time
#   - query latency (median of REPEATS) over 1 index, 8 shards and RUNS shards
# Scratch goes to $BENCH_DIR/shards (default /tmp/dsq-bench/shards) and is removed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd); runs=${2:-64}; mb=${3:-3}; reps=${4:-5}
dsq=$build/dsq
work=${BENCH_DIR:-/tmp/dsq-bench}/shards
rm -rf "$work"
mkdir -p "$work/archive"
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc -l; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
size_mb() { du -sb "$@" | awk '{s += $1} END {printf "%.1f", s / 1e6}'; }

for s in 0 1 2 3 4 5 6 7; do
    python3 "$here/tools/gen-log.py" "$mb" "$work/seed-$s.log" --seed "$((s + 1))" 2>/dev/null
    zstd -q -3 --rm "$work/seed-$s.log" -o "$work/seed-$s.log.zst"
done
for ((r = 0; r < runs; r++)); do
    mkdir -p "$work/archive/run-$r"
    cp "$work/seed-$((r % 8)).log.zst" "$work/archive/run-$r/gpu000.log.zst"
done
text_mb=$(echo "$runs * $mb" | bc -l)
printf 'archive: %d runs, %.0f MB of text, %s MB compressed\n\n' "$runs" "$text_mb" "$(size_mb "$work/archive")"

t0=$(now); "$dsq" index -q --db "$work/one" "$work/archive" >/dev/null; t1=$(now)
t_one=$(secs "$t0" "$t1")
printf '%-44s %8.2f s %8.1f MB/s   index %s MB\n' "one index, one process" "$t_one" \
    "$(echo "$text_mb / $t_one" | bc -l)" "$(size_mb "$work/one")"

t0=$(now)
for k in 0 1 2 3 4 5 6 7; do
    "$dsq" index -q --shard "$k/8" --db "$work/seq/shard-$k" "$work/archive" >/dev/null
done
t1=$(now)
t_seq=$(secs "$t0" "$t1")
printf '%-44s %8.2f s %8.1f MB/s   index %s MB\n' "8 shards, one after another" "$t_seq" \
    "$(echo "$text_mb / $t_seq" | bc -l)" "$(size_mb "$work/seq")"

t0=$(now)
bash "$here/tools/slurm-index.sh" --local --jobs 2 --dsq "$dsq" "$work/archive" 8 "$work/par" >/dev/null
t1=$(now)
t_par=$(secs "$t0" "$t1")
printf '%-44s %8.2f s %8.1f MB/s   index %s MB\n' "8 shards, 2 at a time (--local --jobs 2)" "$t_par" \
    "$(echo "$text_mb / $t_par" | bc -l)" "$(size_mb "$work/par"/shard-*)"

t0=$(now); "$dsq" index -q --shard 0/8 --db "$work/seq/shard-0" "$work/archive" >/dev/null; t1=$(now)
printf '%-44s %8.3f s\n' "re-run of an unchanged shard (1 of 8)" "$(secs "$t0" "$t1")"
t0=$(now); "$dsq" index -q --db "$work/one" "$work/archive" >/dev/null; t1=$(now)
printf '%-44s %8.3f s\n' "re-run of the unchanged whole index" "$(secs "$t0" "$t1")"

for ((r = 0; r < runs; r++)); do
    "$dsq" index -q --db "$work/per-run/shard-$r" "$work/archive/run-$r" >/dev/null
done

echo
printf '%-52s %10s %10s %10s\n' "query latency, median of $reps (ms)" "1 index" "8 shards" "$runs shards"
for q in "count" "max Max_MA by run" "p95 CurrSamplesPerSec by run" "avg loss by run every 1h" \
    "count by kind" "count where kind = failure"; do
    row=()
    for db in "$work/one" "$work/seq" "$work/per-run"; do
        ts=()
        for ((i = 0; i < reps; i++)); do
            t0=$(now); "$dsq" --db "$db" "$q" >/dev/null; t1=$(now)
            ts+=("$(echo "($t1 - $t0) * 1000" | bc -l)")
        done
        row+=("$(printf '%s\n' "${ts[@]}" | median)")
    done
    printf '%-52s %10.1f %10.1f %10.1f\n' "$q" "${row[@]}"
done
for cmd in runs fields; do
    row=()
    for db in "$work/one" "$work/seq" "$work/per-run"; do
        ts=()
        for ((i = 0; i < reps; i++)); do
            t0=$(now); "$dsq" --db "$db" "$cmd" >/dev/null; t1=$(now)
            ts+=("$(echo "($t1 - $t0) * 1000" | bc -l)")
        done
        row+=("$(printf '%s\n' "${ts[@]}" | median)")
    done
    printf '%-52s %10.1f %10.1f %10.1f\n' "dsq $cmd" "${row[@]}"
done
