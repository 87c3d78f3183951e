#!/usr/bin/env bash
# `dsq index -j N`: worker threads must not change the index. A mixed archive (plain,
# .zst, .gz, tar.zst, tar.gz, zip, many small runs, one big file committed in many
# pieces, hard links, damaged files) is indexed with -j 1 and with -j 4 (and $DSQ_JOBS=3): every
# event (`dsq show`), `dsq runs`, `dsq fields` and several queries answer the same,
# the summaries count the same files, members, lines and events, the problems are
# reported the same, in the same order, with the same exit status, also when the
# index map fills and grows under the writer, and when walking and writing take
# turns (a small DSQ_JOB_WINDOW); where mdb_dump is installed, every table's bytes are
# -j 1's too. Re-running over
# the unchanged archive, and after one file changed, does the same as -j 1 too.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool python3 python3
need_tool zstd zstd
need_tool gzip gzip
need_tool tar tar
need_tool zip zip

A="$DSQ_TMP/archive"
G="$DSQ_TMP/gen"
mkdir -p "$A" "$G"
gen() { python3 "$DSQ_SRC/tools/gen-log.py" "$@" 2>/dev/null || die "gen-log.py $*"; }

# a run of per-host files in every single-file container
mkdir -p "$A/run-files"
gen 1 "$A/run-files/gpu001.log" --hosts 2 --seed 1
gen 1 "$G/h2.log" --hosts 2 --seed 2
zstd -q "$G/h2.log" -o "$A/run-files/gpu002.log.zst"
gen 1 "$G/h3.log" --hosts 2 --seed 3
gzip -c "$G/h3.log" >"$A/run-files/gpu003.log.gz"
# one big file: with DSQ_COMMIT_BYTES below it is committed in many pieces
gen 3 "$G/big.log" --hosts 4 --seed 4
zstd -q "$G/big.log" -o "$A/big.log.zst"
# runs as archives of per-rank files
for spec in "tar-zst:tar.zst" "tar-gz:tar.gz" "zipped:zip"; do
    name=${spec%%:*} ext=${spec#*:}
    d="$G/$name"
    mkdir -p "$d"
    for r in 0 1 2; do gen 0.3 "$d/rank$r.log" --seed "${#name}$r"; done
    case $ext in
    tar.zst) tar -C "$G" -cf - "$name" | zstd -q -o "$A/$name.$ext" ;;
    tar.gz) tar -C "$G" -czf "$A/$name.$ext" "$name" ;;
    zip) (cd "$G" && zip -qr "$A/$name.$ext" "$name") ;;
    esac
done
# many small runs (more files than threads, so the workers overlap)
for i in $(seq -w 1 24); do
    cp -r "$SAMPLE/gpt2-zero2" "$A/small-$i"
done
cp "$SAMPLE/bert-baseline.log" "$A/"
# a file under two more names (hard links): indexed once, under the name met first
ln "$A/run-files/gpu001.log" "$A/small-03/gpu001.log"
ln "$A/run-files/gpu001.log" "$A/run-files/gpu000.log"
# damaged files between good ones: a truncated .zst, a truncated .gz, a file that
# cannot be read
head -c 20000 "$A/run-files/gpu002.log.zst" >"$A/small-05/gpu009.log.zst"
head -c 20000 "$A/run-files/gpu003.log.gz" >"$A/small-11/gpu010.log.gz"
echo secret >"$A/small-17/unreadable.log"
chmod 000 "$A/small-17/unreadable.log"
if cat "$A/small-17/unreadable.log" >/dev/null 2>&1; then # root reads anything
    rm -f "$A/small-17/unreadable.log"
fi
export DSQ_COMMIT_BYTES=262144

dump() { # DB: everything the index answers, as text
    dump_index "$1" \
        "sum MA by file, host, rank" \
        "avg loss, p50 CurrSamplesPerSec, last MA by run every 1h" \
        "count by run, failure where kind = failure"
}

# index DB ARGS...: the summary without its timing, and the problems, in $DSQ_TMP
index() {
    local db=$1
    shift
    index_quiet "$db" "$@" "$A"
}

index "$DSQ_TMP/j1" -j 1
s1=$STATUS sum1=$SUMMARY err1=$PROBLEMS
REF_STATUS=$s1 REF_SUMMARY=$sum1 REF_PROBLEMS=$err1
expect_eq "-j 1: damaged files make exit status 1" 1 "$s1"
expect_problem "-j 1: the truncated .zst is named" "small-05/gpu009.log.zst" "truncated"
dump "$DSQ_TMP/j1" >"$DSQ_TMP/dump1.txt" 2>&1
check "-j 1: the dump has the events" test "$(wc -l <"$DSQ_TMP/dump1.txt")" -gt 20000

for jobs in "-j 4" "-j2" "--jobs=3"; do
    db="$DSQ_TMP/j-${jobs//[^0-9]/}"
    # shellcheck disable=SC2086
    index "$db" $jobs
    expect_same_index "$jobs" "$db" dump "$DSQ_TMP/dump1.txt" "-j 1"
done

# a map that fills and grows many times (DSQ_MAP_BYTES: a 64 KiB first map): the
# files of the open group, whose write hit the full map, are read again by the
# writer itself, with workers or without
for jobs in 4 1; do
    DSQ_MAP_BYTES=65536 index "$DSQ_TMP/jmap$jobs" -j "$jobs"
    expect_eq "-j $jobs, growing map: summary as -j 1" "$sum1" "$SUMMARY"
    dump "$DSQ_TMP/jmap$jobs" >"$DSQ_TMP/dump.txt" 2>&1
    check "-j $jobs, growing map: every event and answer as -j 1" \
        cmp -s "$DSQ_TMP/dump1.txt" "$DSQ_TMP/dump.txt"
done

# walking and writing take turns once DSQ_JOB_WINDOW files wait (1024 by default):
# with a window of 4 the job list is cut many times, across damaged files, groups
# and a growing map
for spec in 4:65536 7:1048576 5:4194304; do
    win=${spec%%:*} map=${spec#*:}
    DSQ_JOB_WINDOW=$win DSQ_MAP_BYTES=$map index "$DSQ_TMP/jwin$win" -j 2
    expect_same_index "-j 2, job window $win, first map $map" "$DSQ_TMP/jwin$win" dump \
        "$DSQ_TMP/dump1.txt" "-j 1"
done

# ... and a map that fills late, after the list was cut many times: 40 runs of a
# few lines, then 250 of 20 kB; the files of the group open when it fills are read
# again, so the list is only cut between groups
M="$DSQ_TMP/many"
gen 0.02 "$G/one.log" --seed 5
head -3 "$G/one.log" >"$G/tiny.log"
for i in $(seq -w 1 40); do mkdir -p "$M/a$i" && cp "$G/tiny.log" "$M/a$i/gpu01.log"; done
for i in $(seq -w 1 250); do mkdir -p "$M/b$i" && cp "$G/one.log" "$M/b$i/gpu01.log"; done
index_quiet "$DSQ_TMP/many1" -j 1 "$M"
REF_STATUS=$STATUS REF_SUMMARY=$SUMMARY REF_PROBLEMS=$PROBLEMS
dump "$DSQ_TMP/many1" >"$DSQ_TMP/dump-many.txt" 2>&1
for map in 2097152 4194304; do
    DSQ_JOB_WINDOW=8 DSQ_MAP_BYTES=$map index_quiet "$DSQ_TMP/many$map" -j 2 "$M"
    expect_same_index "-j 2, job window 8, first map $map, many runs" "$DSQ_TMP/many$map" dump \
        "$DSQ_TMP/dump-many.txt" "-j 1"
done
REF_STATUS=$s1 REF_SUMMARY=$sum1 REF_PROBLEMS=$err1

# DSQ_JOBS is the default for -j
DSQ_JOBS=3 index "$DSQ_TMP/jenv"
expect_eq "DSQ_JOBS=3: summary as -j 1" "$sum1" "$SUMMARY"
dump "$DSQ_TMP/jenv" >"$DSQ_TMP/dump.txt" 2>&1
check "DSQ_JOBS=3: every event and answer as -j 1" cmp -s "$DSQ_TMP/dump1.txt" "$DSQ_TMP/dump.txt"

# the index's bytes too, where mdb_dump (lmdb-utils) is installed: every table as
# -j 1 writes it, whichever worker read which file and however far the walk ran
# ahead (the dictionary's ids are in every key). Maps that grew are compared with
# each other: a file whose write hit the full map is written again under a new
# source id, and -j 1 can fill the map at another file than -j 4 does. With
# workers, the writer drains the rest of the file whose write hit the full map and
# interns the strings in it (the worker's ids need them), before -j 1 meets them;
# the dictionary saved by the next commits is bigger and the map fills elsewhere
# (seen with a first map of 64 or 128 KiB: -j 1 filled it at the end of one more
# file), numbering the files after it otherwise. Their answers are the same
# (checked above).
if command -v mdb_dump >/dev/null; then
    tables() { # DB: every table, as mdb_dump prints it (without its header)
        local t
        for t in $(mdb_dump -l "$1"); do
            echo "table $t"
            mdb_dump -s "$t" "$1" | sed '1,/^HEADER=END/d'
        done
    }
    same_tables() { # REF DB...: every table of each DB as REF's
        local ref=$1 db
        shift
        tables "$DSQ_TMP/$ref" >"$DSQ_TMP/tables1.txt"
        check "$ref: mdb_dump lists the tables" grep -q "^table dict" "$DSQ_TMP/tables1.txt"
        for db in "$@"; do
            tables "$DSQ_TMP/$db" >"$DSQ_TMP/tables.txt"
            check "$db: every table's bytes as $ref" cmp -s "$DSQ_TMP/tables1.txt" \
                "$DSQ_TMP/tables.txt"
        done
    }
    same_tables j1 j-4 j-2 j-3 jenv jwin5
    same_tables jmap4 jwin4 # first map 64 KiB, with workers
    same_tables many1 many4194304
fi

# re-runs: unchanged (nothing read, damage reported again), then one file changed
index "$DSQ_TMP/j1" -j 1
r1=$SUMMARY rerr1=$PROBLEMS
index "$DSQ_TMP/j-4" -j 4
expect_eq "re-run unchanged: summary as -j 1" "$r1" "$SUMMARY"
expect_eq "re-run unchanged: problems as -j 1" "$rerr1" "$PROBLEMS"
expect_eq "re-run unchanged: no file indexed again" 0 "$(summary_number files "$SUMMARY")"
gen 1 "$A/run-files/gpu001.log" --hosts 3 --seed 9
index "$DSQ_TMP/j1" -j 1
c1=$SUMMARY
index "$DSQ_TMP/j-4" -j 4
expect_eq "re-run after a change: summary as -j 1" "$c1" "$SUMMARY"
dump "$DSQ_TMP/j1" >"$DSQ_TMP/dump1.txt" 2>&1
dump "$DSQ_TMP/j-4" >"$DSQ_TMP/dump.txt" 2>&1
check "re-run after a change: every event and answer as -j 1" cmp -s "$DSQ_TMP/dump1.txt" "$DSQ_TMP/dump.txt"

# a damaged file first in a group whose write fills the map: the group is read again,
# and the damage is said once (it was said twice, by each reading), with workers or
# without
P="$DSQ_TMP/redo/run"
mkdir -p "$P"
head -c 20000 "$A/run-files/gpu003.log.gz" >"$P/a-bad.log.gz"
for i in $(seq -w 1 12); do gen 0.2 "$P/b-$i.log" --seed "$i"; done
for jobs in 1 2; do
    DSQ_MAP_BYTES=65536 index_quiet "$DSQ_TMP/redo$jobs" -j "$jobs" "$P"
    expect_code "-j $jobs, damage before the map grew: exit status" 1 "$STATUS"
    expect_eq "-j $jobs, damage before the map grew: said once" 1 \
        "$(printf '%s\n' "$PROBLEMS" | grep -c 'a-bad.log.gz.*truncated')"
done

# --stats: where the time went, in every thread layout; the index is the same (as
# one made without it now: the archive changed above)
seconds='[0-9]+\.[0-9]{3}'
index "$DSQ_TMP/nostats" -j 1
REF_STATUS=$STATUS REF_SUMMARY=$SUMMARY REF_PROBLEMS=$PROBLEMS
dump "$DSQ_TMP/nostats" >"$DSQ_TMP/dump-nostats.txt" 2>&1
for jobs in 2 1; do
    index_quiet "$DSQ_TMP/stats$jobs" -j "$jobs" --stats "$A"
    times=$(printf '%s\n' "$OUT" | sed -n '/where the time went/,$p')
    SUMMARY=$(printf '%s\n' "$SUMMARY" | sed '/where the time went/,$d')
    expect_same_index "-j $jobs --stats" "$DSQ_TMP/stats$jobs" dump "$DSQ_TMP/dump-nostats.txt" \
        "-j 1 without --stats"
    expect_contains "-j $jobs --stats: the times follow the summary" "where the time went" "$times"
    if [ "$jobs" = 1 ]; then
        check "-j 1 --stats: the one thread's CPU, reading, the rest and the final sync" \
            grep -Eq "one thread: $seconds CPU; reading \(opening, decompressing\) $seconds, scanning and writing -?$seconds, the final sync $seconds" <<<"$times"
    else
        base=$(nice) # the workers go 5 nice steps below the writer, at most to 19
        want=$((19 - base < 5 ? 19 - base : 5))
        check "-j 2 --stats: the workers' nice, CPU, reading, scanning and waits" \
            grep -Eq "2 workers \(nice \+$want\): $seconds CPU; reading \(opening, decompressing\) $seconds, scanning $seconds, waiting for the writer $seconds; [0-9]+ batches sent" <<<"$times"
        check "-j 2 --stats: the writer's CPU, its waits and the final sync" \
            grep -Eq "writer: $seconds CPU; waiting for the workers $seconds, the final sync $seconds" <<<"$times"
        expect_not_contains "-j 2 --stats: the workers did some reading" \
            "decompressing) 0.000," "$times"
    fi
    check "-j $jobs --stats: the process's wall and CPU time" \
        grep -Eq "process: $seconds wall, $seconds CPU \($seconds user, $seconds system\)" <<<"$times"
done
run_dsq --db "$DSQ_TMP/x" index -q "$A"
expect_not_contains "without --stats: no times" "where the time went" "$OUT"
export DSQ_WORKER_NICE=0 # the workers at the writer's priority
index_quiet "$DSQ_TMP/nice0" -j 2 --stats "$A"
unset DSQ_WORKER_NICE
expect_contains "DSQ_WORKER_NICE=0: the workers as the writer" "2 workers (nice +0):" "$OUT"

# small files share the workers' batches (with a batch a file, a worker's 96 batches
# held 96 files, and both workers waited for the writer's bursts): 120 files of ~1 kB
# take a few (as full batches, and one a worker at the end: while the writer walks, a
# worker waiting for a job keeps its batch)
mkdir -p "$DSQ_TMP/smalls"
for i in $(seq -w 1 60); do cp -r "$SAMPLE/gpt2-zero2" "$DSQ_TMP/smalls/run-$i"; done
run_dsq --db "$DSQ_TMP/smalls-db" index -j 2 --stats "$DSQ_TMP/smalls"
expect_code "120 small files, -j 2: exit status" 0 "$RC"
batches=$(printf '%s\n' "$OUT" | sed -En 's/.*; ([0-9]+) batches sent.*/\1/p')
expect_contains "120 small files, -j 2: all indexed" "indexed 120 files" "$OUT"
check "120 small files, -j 2: in fewer batches (${batches:-none}) than a quarter of the files" \
    test "${batches:-0}" -gt 0 -a "${batches:-0}" -lt 30

# usage
run_dsq --db "$DSQ_TMP/x" index -j 0 "$A"
expect_code "-j 0 is refused" 2 "$RC"
run_dsq --db "$DSQ_TMP/x" index -j "$A"
expect_code "-j without a number is refused" 2 "$RC"
run_dsq index --help
expect_contains "--help documents -j" "-j N" "$OUT$ERR"

# the default on one CPU (a one-CPU Slurm task): two workers (and the walk's thread,
# walk.h's dsq_walk_ahead, the periodic syncs', syncer.h, and the prefetcher's,
# indexer.c), not one thread; and
# DSQ_JOBS=1 is one thread (its syncs waited for). Counted with strace where it and taskset exist.
if command -v strace >/dev/null && command -v taskset >/dev/null &&
    taskset -c 0 true 2>/dev/null; then
    threads() { # ENV... : threads dsq index starts on one CPU
        rm -rf "$DSQ_TMP/t-db"
        env "$@" taskset -c 0 strace -f -qq -e trace=clone,clone3 -o "$DSQ_TMP/clone.txt" \
            "$DSQ" --db "$DSQ_TMP/t-db" -q index "$A" >/dev/null 2>&1
        grep -c CLONE_THREAD "$DSQ_TMP/clone.txt" # (not the leak checker's tracer)
    }
    expect_eq "default on one CPU: 2 worker threads, the walk's, the syncs' and the prefetcher's" 5 "$(threads -u DSQ_JOBS)"
    expect_eq "DSQ_JOBS=1: no thread" 0 "$(threads DSQ_JOBS=1)"
fi
e2e_finish
