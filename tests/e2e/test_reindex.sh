#!/usr/bin/env bash
# Incremental indexing: unchanged files are skipped, grown and rewritten files are
# re-indexed without duplicates, the newest content wins; --run and DSQ_DB.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool python3 python3

A="$DSQ_TMP/archive"
cp -r "$SAMPLE" "$A"
DB="$DSQ_TMP/db"

# a DeepSpeed memory report (3 lines) as the sample's gpt2-zero2 rank files print it
report() { # TIME LABEL MAX_MA
    printf '[2024-08-02 %s,250] [INFO] [utils.py:781:see_memory_usage] %s\n' "$1" "$2"
    printf '[2024-08-02 %s,250] [INFO] [utils.py:782:see_memory_usage] MA 1.1 GB         Max_MA %s GB         CA 3.5 GB         Max_CA 4 GB \n' "$1" "$3"
    printf '[2024-08-02 %s,250] [INFO] [utils.py:789:see_memory_usage] CPU Virtual Memory:  used = 17.3 GB, percent = 6.9%%\n' "$1"
}

count_csv() { # expected `count Max_MA by run --csv` from the files, by grep
    printf 'run,count Max_MA\n'
    printf 'bert-baseline,%s\n' "$(count_reports "$A/bert-baseline.log")"
    printf 'gpt2-zero2,%s\n' "$(count_reports "$A"/gpt2-zero2/*)"
    printf 'llama7b-zero3,%s\n' "$(count_reports "$A"/llama7b-zero3/*)"
}

# 1. first index, then the same inputs again: nothing new --------------------------
index_ok "first index" "$DB" "$A"
expect_contains "first index: summary" "indexed 5 files (5 members)" "$OUT"
expect_eq "first index: lines" 55 "$(summary_number lines "$OUT")"
# 10 memory reports, llama7b-zero3's 14 other events (see test_cli.sh), and a
# rank_lines event for each of the 4 files whose lines name a rank
expect_eq "first index: events" 28 "$(summary_number events "$OUT")"
expect_eq "first index: counts" "$(count_csv)" "$(query "$DB" "count Max_MA by run" --csv)"
COUNT_BY_RUN=$(query "$DB" "count by run")

index_ok "re-index unchanged" "$DB" "$A"
expect_contains "re-index unchanged: skips all" "skipped 5 unchanged files" "$OUT"
expect_contains "re-index unchanged: indexes none" "indexed 0 files" "$OUT"
expect_eq "re-index unchanged: no events" 0 "$(summary_number events "$OUT")"
expect_eq "re-index unchanged: count by run" "$COUNT_BY_RUN" "$(query "$DB" "count by run")"
expect_eq "re-index unchanged: max" "$SAMPLE_MAX_TABLE" "$(query "$DB" "max Max_MA by run")"

# the same files reached through another spelling of the path are the same files
index_ok "re-index by another path spelling" "$DB" "$(cd "$DSQ_TMP" && pwd)/./archive/"
expect_contains "re-index by other path spelling: skips all" "skipped 5 unchanged files" "$OUT"
(cd "$DSQ_TMP" && "$DSQ" --db db index archive >"$DSQ_TMP/rel.out" 2>&1)
expect_eq "re-index from a relative path: exit" 0 $?
expect_contains "re-index from a relative path: skips all" "skipped 5 unchanged files" "$(cat "$DSQ_TMP/rel.out")"
expect_eq "re-index by other paths: count by run" "$COUNT_BY_RUN" "$(query "$DB" "count by run")"

# 2. a grown file: one more report, exactly one more event --------------------------
report "09:15:00" "After step 100" "2.5" >>"$A/gpt2-zero2/rank1.log"
index_ok "re-index appended" "$DB" "$A"
expect_contains "re-index appended: one file" "indexed 1 files" "$OUT"
expect_contains "re-index appended: others skipped" "skipped 4 unchanged files" "$OUT"
# the re-read file's 3 reports and its rank_lines event
expect_eq "re-index appended: events of the re-read file" 4 "$(summary_number events "$OUT")"
expect_eq "re-index appended: count Max_MA by run" "run,count Max_MA
bert-baseline,2
gpt2-zero2,5
llama7b-zero3,4" "$(query "$DB" "count Max_MA by run" --csv)"
expect_eq "re-index appended: counts match grep" "$(count_csv)" "$(query "$DB" "count Max_MA by run" --csv)"
expect_eq "re-index appended: count by label (no duplicate)" "label,count
-,2
After initializing ZeRO optimizer,2
After step 100,1
Before initializing optimizer states,2" "$(query "$DB" "count by label where run = gpt2-zero2" --csv)"
expect_eq "re-index appended: max unchanged" "$SAMPLE_MAX_TABLE" "$(query "$DB" "max Max_MA by run")"

# a grown file whose new report is the new peak
report "09:16:00" "After step 200" "7.75" >>"$A/gpt2-zero2/rank1.log"
index_ok "re-index appended peak" "$DB" "$A"
expect_eq "re-index appended peak: max" "run            max Max_MA
bert-baseline      1.5 GB
gpt2-zero2        7.75 GB
llama7b-zero3    21.37 GB" "$(query "$DB" "max Max_MA by run")"
expect_eq "re-index appended peak: counts" "$(count_csv)" "$(query "$DB" "count Max_MA by run" --csv)"

# a shrunk file: the last report removed again
head -n -3 "$A/gpt2-zero2/rank1.log" >"$DSQ_TMP/shrunk" && cat "$DSQ_TMP/shrunk" >"$A/gpt2-zero2/rank1.log"
index_ok "re-index shrunk" "$DB" "$A"
expect_eq "re-index shrunk: max back" "$SAMPLE_MAX_TABLE" "$(query "$DB" "max Max_MA by run")"
expect_eq "re-index shrunk: counts" "$(count_csv)" "$(query "$DB" "count Max_MA by run" --csv)"

# 3. rewritten in place, same size: the new value wins ------------------------------
F="$A/bert-baseline.log"
size0=$(stat -c %s "$F")
sed -i 's/Max_MA 1\.5 GB/Max_MA 1.9 GB/' "$F"
expect_eq "in place: size unchanged" "$size0" "$(stat -c %s "$F")"
index_ok "re-index rewritten" "$DB" "$A"
expect_contains "re-index rewritten: one file" "indexed 1 files" "$OUT"
expect_eq "re-index rewritten: max" "run            max Max_MA
bert-baseline      1.9 GB
gpt2-zero2        3.25 GB
llama7b-zero3    21.37 GB" "$(query "$DB" "max Max_MA by run")"
expect_eq "re-index rewritten: no duplicates" "$(count_csv)" "$(query "$DB" "count Max_MA by run" --csv)"

# same size AND the old mtime restored: only the content fingerprint tells
touch -r "$F" "$DSQ_TMP/mtime-ref"
sed -i 's/Max_MA 1\.9 GB/Max_MA 1.7 GB/' "$F"
touch -r "$DSQ_TMP/mtime-ref" "$F"
expect_eq "fingerprint: size unchanged" "$size0" "$(stat -c %s "$F")"
index_ok "re-index same size and mtime" "$DB" "$A"
expect_contains "re-index same size and mtime: one file" "indexed 1 files" "$OUT"
expect_eq "re-index same size and mtime: max" "run,max Max_MA
bert-baseline,1.7
gpt2-zero2,3.25
llama7b-zero3,21.37" "$(query "$DB" "max Max_MA by run" --csv)"
expect_eq "re-index same size and mtime: no duplicates" "$(count_csv)" "$(query "$DB" "count Max_MA by run" --csv)"

# many files unchanged, with workers: the walk's thread reads their fingerprints
# ahead of the writer (walk.h, dsq_walk_ahead's note) while it runs ahead; one of
# them rewritten with its size and mtime kept is read again, the others skipped
M="$DSQ_TMP/many"
mkdir -p "$M/run"
for i in $(seq 100 599); do
    printf '[2024-05-01 10:00:00,000] [INFO] [engine.py:10:step] step=%d, loss=1.%03d\n' \
        "$i" "$i" >"$M/run/f$i.log"
done
index_ok "many files" "$DSQ_TMP/db-many" -j 2 "$M"
G="$M/run/f550.log"
touch -r "$G" "$DSQ_TMP/mtime-ref2"
sed -i 's/loss=1\.550/loss=9.550/' "$G"
touch -r "$DSQ_TMP/mtime-ref2" "$G"
index_ok "many files, one rewritten" "$DSQ_TMP/db-many" -j 2 "$M"
expect_contains "many files, one rewritten: it alone is read" "indexed 1 files" "$OUT"
expect_contains "many files, one rewritten: the others skipped" "skipped 499 unchanged" "$OUT"
index_ok "many files, again" "$DSQ_TMP/db-many" -j 2 "$M"
expect_contains "many files, again: all skipped" "skipped 500 unchanged" "$OUT"

# only the mtime changed: re-read (or skipped), but never duplicated
touch -d '2001-01-01 00:00:00' "$F"
index_ok "re-index touched" "$DB" "$A"
expect_eq "re-index touched: no duplicates" "$(count_csv)" "$(query "$DB" "count Max_MA by run" --csv)"
cp "$SAMPLE/bert-baseline.log" "$F"

# 4. --run NAME -------------------------------------------------------------------
DBR="$DSQ_TMP/db-run"
index_ok "--run whole archive" "$DBR" --run merged "$SAMPLE"
expect_eq "--run: one run with the peak of all" "run     max Max_MA
merged    21.37 GB" "$(query "$DBR" "max Max_MA by run")"
expect_eq "--run: all reports in it" "run,count Max_MA
merged,$(count_reports "$SAMPLE"/bert-baseline.log "$SAMPLE"/gpt2-zero2/* "$SAMPLE"/llama7b-zero3/*)" \
    "$(query "$DBR" "count Max_MA by run" --csv)"
index_ok "--run=NAME single file" "$DBR" --run=bert-again "$SAMPLE/bert-baseline.log"
expect_eq "--run=NAME single file: separate run" "run,max Max_MA
bert-again,1.5
merged,21.37" "$(query "$DBR" "max Max_MA by run" --csv)"

# a file already indexed under its default run, indexed again under --run, moves
DBM="$DSQ_TMP/db-move"
index_ok "move: default names" "$DBM" "$A"
index_ok "move: --run on one file" "$DBM" --run renamed "$A/bert-baseline.log"
expect_eq "move: the file now belongs to the new run only" "run,max Max_MA,count Max_MA
gpt2-zero2,3.25,$(count_reports "$A"/gpt2-zero2/*)
llama7b-zero3,21.37,4
renamed,1.5,2" "$(query "$DBM" "max Max_MA, count Max_MA by run" --csv)"

# a plain file given directly is its own run, named without extensions
DBF="$DSQ_TMP/db-file"
cp "$SAMPLE/bert-baseline.log" "$DSQ_TMP/solo-run.out.log"
index_ok "single file" "$DBF" "$DSQ_TMP/solo-run.out.log"
expect_eq "single file: run named without extensions" "run,max Max_MA
solo-run,1.5" "$(query "$DBF" "max Max_MA by run" --csv)"

# 5. DSQ_DB works like --db ---------------------------------------------------------
DBE="$DSQ_TMP/db-env"
DSQ_DB="$DBE" "$DSQ" index "$SAMPLE" >"$DSQ_TMP/env.out" 2>&1
expect_eq "DSQ_DB index: exit" 0 $?
check "DSQ_DB index: the index is created at \$DSQ_DB" test -d "$DBE"
expect_contains "DSQ_DB index: summary names it" "into $DBE" "$(cat "$DSQ_TMP/env.out")"
out=$(DSQ_DB="$DBE" "$DSQ" "max Max_MA by run" 2>&1)
expect_eq "DSQ_DB query: exit" 0 $?
expect_eq "DSQ_DB query" "$SAMPLE_MAX_TABLE" "$out"
out=$(DSQ_DB="$DBE" "$DSQ" runs 2>&1)
expect_eq "DSQ_DB runs: exit" 0 $?
expect_eq "DSQ_DB runs == --db runs" "$(query "$DBE" runs)" "$out"
DSQ_DB="$DBE" "$DSQ" index "$SAMPLE" >"$DSQ_TMP/env.out" 2>&1
expect_contains "DSQ_DB re-index: unchanged" "skipped 5 unchanged files" "$(cat "$DSQ_TMP/env.out")"
# --db wins over DSQ_DB
out=$(DSQ_DB="$DSQ_TMP/does-not-exist" "$DSQ" --db "$DBE" "max Max_MA by run" 2>&1)
expect_eq "--db overrides DSQ_DB" "$SAMPLE_MAX_TABLE" "$out"
check "the overridden DSQ_DB is left alone" test ! -e "$DSQ_TMP/does-not-exist"

e2e_finish
