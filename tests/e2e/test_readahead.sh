#!/usr/bin/env bash
# Read-ahead (src/readahead.h): a worker that decodes its file on a second thread
# must index exactly what -j 1 indexes. A big .gz, a .tar.gz of per-rank files (one
# of them a .gz itself), a .zst and a .gz cut in the middle (an error after some
# data), committed in many pieces: with -j 2 as the workers decide (another worker
# idle), with DSQ_READAHEAD=always (every compressed file decoded ahead from its
# first read) at -j 2 and -j 4, and with DSQ_READAHEAD=never, every event and
# answer, the summary, the problems (same order) and the exit status are those of
# -j 1.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool python3 python3
need_tool gzip gzip
need_tool zstd zstd
need_tool tar tar

A="$DSQ_TMP/archive"
G="$DSQ_TMP/gen"
mkdir -p "$A/big" "$A/runs" "$G/run-7"
gen() { python3 "$DSQ_SRC/tools/gen-log.py" "$@" >/dev/null 2>&1 || die "gen-log.py $*"; }

gen 6 "$G/big.log" --hosts 4 --seed 11
gzip -1 -c "$G/big.log" >"$A/big/launcher.log.gz"
for r in 0 1 2 3; do gen 1 "$G/run-7/rank$r.log" --seed "7$r"; done
gzip -1 "$G/run-7/rank3.log"
tar -C "$G" -czf "$A/runs/run-7.tar.gz" run-7
gen 2 "$G/other.log" --hosts 2 --seed 12
zstd -q "$G/other.log" -o "$A/runs/other.log.zst"
head -c 200000 "$A/big/launcher.log.gz" >"$A/runs/cut.log.gz"
export DSQ_COMMIT_BYTES=262144

# index DB ARGS...: the summary without its timing, and the problems
index() {
    local db=$1
    shift
    index_quiet "$db" "$@" "$A"
}
dump() { dump_index "$1" "sum MA by file, host, rank" "count by run, failure where kind = failure"; }

index "$DSQ_TMP/j1" -j 1
s1=$STATUS sum1=$SUMMARY err1=$PROBLEMS
REF_STATUS=$s1 REF_SUMMARY=$sum1 REF_PROBLEMS=$err1
expect_eq "-j 1: the cut .gz makes exit status 1" 1 "$s1"
expect_problem "-j 1: the cut .gz is named" "cut.log.gz" ""
dump "$DSQ_TMP/j1" >"$DSQ_TMP/dump1.txt" 2>&1
check "-j 1: the dump has the events" test "$(wc -l <"$DSQ_TMP/dump1.txt")" -gt 20000

for mode in auto:2 always:2 always:4 never:2; do
    m=${mode%%:*} j=${mode#*:}
    db="$DSQ_TMP/$m-$j"
    DSQ_READAHEAD=$m index "$db" -j "$j"
    expect_same_index "$m, -j $j" "$db" dump "$DSQ_TMP/dump1.txt" "-j 1"
done
e2e_finish
