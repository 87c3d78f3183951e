#!/usr/bin/env bash
# Whole-process indexing speed next to its baseline, measured in the same run.
#
#   bench/bench_index.sh [BUILD_DIR] [SIZE_MB] [RUNS]     (defaults: build 200 5)
#
# Generates a deterministic DeepSpeed+NCCL log (tools/gen-log.py), compresses it
# with zstd -3, then times RUNS times each and prints medians:
#   zstd -dc FILE > /dev/null      the decompression floor
#   dsq index FILE (fresh index)   decode + split + scan + LMDB
#   bench_lex on the plain text    in-memory lexing vs memchr (see bench_lex.c)
# Nothing here asserts a threshold; compare numbers between builds (bench/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}; size=${2:-200}; runs=${3:-5}
work=${BENCH_DIR:-/tmp/dsq-bench}
mkdir -p "$work"
log=$work/synthetic-${size}MB.log
[ -f "$log" ] || python3 "$here/tools/gen-log.py" "$size" "$log"
[ -f "$log.zst" ] || zstd -q -3 -f "$log" -o "$log.zst"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # prints seconds of one run of "$@"
  local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
zt=(); dt=()
for ((i = 0; i < runs; i++)); do
  zt+=("$(timeit sh -c "zstd -dc '$log.zst' > /dev/null")")
  rm -rf "$work/db"
  dt+=("$(timeit "$build/dsq" index -q --db "$work/db" "$log.zst")")
done
zmed=$(printf '%s\n' "${zt[@]}" | median); dmed=$(printf '%s\n' "${dt[@]}" | median)
bytes=$(stat -c %s "$log"); zbytes=$(stat -c %s "$log.zst")
lines=$("$build/dsq" index -q --db "$work/db" "$log.zst" >/dev/null; wc -l < "$log")
printf '%-28s %10s %10s %12s\n' "input" "MB" "MB.zst" "lines"
printf '%-28s %10.1f %10.1f %12d\n' "$(basename "$log")" "$(echo "$bytes/1000000" | bc -l)" \
  "$(echo "$zbytes/1000000" | bc -l)" "$lines"
printf '\n%-28s %10s %12s %8s\n' "command (median of $runs)" "seconds" "MB/s (text)" "ratio"
printf '%-28s %10.3f %12.1f %8s\n' "zstd -dc > /dev/null" "$zmed" "$(echo "$bytes/1000000/$zmed" | bc -l)" "1.00"
printf '%-28s %10.3f %12.1f %8.2f\n' "dsq index" "$dmed" "$(echo "$bytes/1000000/$dmed" | bc -l)" \
  "$(echo "$dmed/$zmed" | bc -l)"
printf 'index size: %s\n\n' "$(du -sh "$work/db" | cut -f1)"
"$build/bench/bench_lex" "$log" "$runs"
