#!/usr/bin/env bash
# `dsq index -j N` wall time for N = 1 and 2 (or $JOBS), fresh index each time,
# medians of RUNS, on (a) a multi-file archive of generated runs (bench/gen_runs:
# per-host .log.zst files) and (b) one big .zst log (the bench_index.sh input).
#
#   bench/bench_jobs.sh [BUILD_DIR] [NRUNS] [RUNS]      (defaults: build 200 3)
#
# Inputs are cached in $BENCH_DIR (default /tmp/dsq-bench); indexes go to a temporary
# directory that is removed at the end. Nothing asserts a threshold.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}; nruns=${2:-200}; runs=${3:-3}
work=${BENCH_DIR:-/tmp/dsq-bench}
jobs_list=${JOBS:-1 2}
mkdir -p "$work"
archive=$work/gen-runs-$nruns
[ -d "$archive/runs" ] || "$build/bench/gen_runs" -n "$nruns" "$archive" >/dev/null
log=$work/synthetic-200MB.log
[ -f "$log" ] || python3 "$here/tools/gen-log.py" 200 "$log"
[ -f "$log.zst" ] || zstd -q -3 -f "$log" -o "$log.zst"
tmp=$(mktemp -d /tmp/dsq-bench-jobs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # "wall cpu" seconds of one run of "$@" (cpu: user + system, all threads)
  /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$@" >/dev/null 2>&1
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$tmp/time"
}
# how much of two cores this process can get now: two busy loops for one second
spin='timeout 1 sh -c "while :; do :; done"'
/usr/bin/time -f '%e %U %S' -o "$tmp/spin" sh -c "$spin & $spin; wait" 2>/dev/null || true
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg);" \
  "two busy loops got $(awk '{printf "%.2f", ($2 + $3) / $1}' "$tmp/spin") CPUs"
printf '%-34s %4s %9s %9s %9s %s\n' "input" "-j" "median s" "MB/s" "cpu s" "(wall of each run)"
for input in "$archive/runs" "$log.zst"; do
  if [ -d "$input" ]; then
    bytes=$(find "$input" -type f -name '*.zst' -exec zstd -dc {} + | wc -c)
    name="$(basename "$archive") ($(find "$input" -type f | wc -l) files)"
  else
    bytes=$(zstd -dc "$input" | wc -c)
    name=$(basename "$input")
  fi
  for j in $jobs_list; do
    ts=() cs=()
    for ((i = 0; i < runs; i++)); do
      rm -rf "$tmp/db"
      read -r wall cpu < <(timeit "$build/dsq" index -q -j "$j" --db "$tmp/db" "$input")
      ts+=("$wall") cs+=("$cpu")
    done
    med=$(printf '%s\n' "${ts[@]}" | median)
    cmed=$(printf '%s\n' "${cs[@]}" | median)
    printf '%-34s %4s %9.3f %9.1f %9.3f %s\n' "$name" "$j" "$med" \
      "$(echo "$bytes/1000000/$med" | bc -l)" "$cmed" "$(printf '%s ' "${ts[@]}")"
  done
done
