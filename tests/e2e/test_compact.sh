#!/usr/bin/env bash
# Compaction (`dsq compact`, and `dsq index` by itself once an index grew enough)
# rewrites the index without changing any answer; queries running meanwhile keep
# answering; a writer holding the index makes it refuse; killed at any moment it
# leaves an index that answers exactly as before; indexing goes on after it.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool python3 python3

ARCH="$DSQ_TMP/archive"
DB="$DSQ_TMP/db"
mkdir -p "$ARCH/big-run"
python3 "$DSQ_SRC/tools/gen-log.py" 2 "$ARCH/big-run/gpu001.log" --hosts 2 2>/dev/null
cp -r "$SAMPLE"/* "$ARCH/"

dump() { dump_index "$1"; } # DB: everything the index answers, as text

index_ok "index" "$DB" --no-compact "$ARCH"
dump "$DB" >"$DSQ_TMP/before.txt"
check "the dump has the events" test "$(wc -l <"$DSQ_TMP/before.txt")" -gt 1000

run_dsq --db "$DB" compact
expect_code "dsq compact" 0 "$RC"
expect_contains "dsq compact says what it did" "compacted $DB" "$OUT"
check "no temporary copy is left" test ! -e "$DB/compact.tmp"
dump "$DB" >"$DSQ_TMP/after.txt"
check "answers after compaction equal those before" cmp -s "$DSQ_TMP/before.txt" "$DSQ_TMP/after.txt"

# Queries while compactions replace the file under them.
(
    for _ in $(seq 1 15); do "$DSQ" --db "$DB" compact >/dev/null 2>&1 || exit 1; done
) &
compactor=$!
want=$("$DSQ" --db "$DB" --csv "count, max Max_MA by run")
bad=0 n=0
while kill -0 "$compactor" 2>/dev/null; do
    got=$("$DSQ" --db "$DB" --csv "count, max Max_MA by run" 2>&1)
    n=$((n + 1))
    [ "$got" = "$want" ] || { bad=$((bad + 1)); echo "    during compaction: $got" | head -3; }
done
wait "$compactor"
expect_eq "repeated compactions succeed" 0 "$?"
expect_eq "queries during compactions ($n) all answer as before" 0 "$bad"

# A writer holds the index: compaction refuses and changes nothing.
exec 9>"$DB/dsq.lock"
flock 9
run_dsq --db "$DB" compact
expect_code "dsq compact while a writer holds the index" 3 "$RC"
expect_contains "dsq compact says why" "another dsq index is writing" "$ERR"
exec 9>&-

# Killed at random moments: the index still answers exactly as before.
for i in $(seq 1 20); do
    "$DSQ" --db "$DB" compact >/dev/null 2>&1 &
    pid=$!
    sleep "0.0$((RANDOM % 2))$((RANDOM % 10))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if ! dump "$DB" | cmp -s - "$DSQ_TMP/before.txt"; then
        fail "killed compaction $i left an index that answers differently"
        break
    fi
done
pass "20 killed compactions left the index answering as before"
run_dsq --db "$DB" compact
expect_code "compaction after kills" 0 "$RC"
check "no temporary copy is left after kills" test ! -e "$DB/compact.tmp/data.mdb"

# Indexing goes on after compaction: a new file is added, nothing duplicated.
mkdir -p "$ARCH/late"
cp "$SAMPLE/gpt2-zero2/"* "$ARCH/late/"
index_ok "index after compaction" "$DB" --no-compact "$ARCH"
run_dsq --db "$DB" --csv "count where run = late"
expect_eq "the new run is there" "$("$DSQ" --db "$DB" --csv "count where run = gpt2-zero2")" "$OUT"

# dsq index compacts by itself once the index grew enough (a low threshold here)
# and a compacted copy would be 15% smaller. A fresh index of these runs is packed
# nearly as a copy would be: not compacted.
DB2="$DSQ_TMP/db2"
DSQ_COMPACT_MIN_BYTES=1 DSQ_COMPACT_TRACE=1 run_dsq --db "$DB2" index "$ARCH"
expect_code "index without automatic compaction" 0 "$RC"
expect_not_contains "a packed fresh index is not compacted" "compacted" "$OUT"
expect_contains "it was sized" "a compacted copy about" "$ERR"
# The size it read off the pages (past the free ones, overflow values whole) is
# within 15% of what a copy takes.
about=$(sed -n 's/.*a compacted copy about \([0-9]*\).*/\1/p' <<<"$ERR")
cp -r "$DB2" "$DSQ_TMP/db3"
run_dsq --db "$DSQ_TMP/db3" compact
copy=$(stat -c %s "$DSQ_TMP/db3/data.mdb")
check "the size of a compacted copy ($about) is about a copy's ($copy)" \
    test "$((about * 100))" -ge "$((copy * 85))" -a "$((about * 100))" -le "$((copy * 115))"
# One run of 300 per-rank files: their series and blocks go in the middle of the
# run's, splitting pages (a copy is ~40% smaller): compacted.
mkdir -p "$ARCH/many-ranks"
for i in $(seq 0 299); do cp "$SAMPLE/gpt2-zero2/rank1.log" "$ARCH/many-ranks/rank$i.log"; done
DSQ_COMPACT_MIN_BYTES=1 DSQ_COMPACT_TRACE=1 run_dsq --db "$DB2" index "$ARCH"
expect_code "index with automatic compaction" 0 "$RC"
expect_contains "the summary says it compacted" "compacted $DB2" "$OUT"
about=$(sed -n 's/.*a compacted copy about \([0-9]*\).*/\1/p' <<<"$ERR")
copy=$(stat -c %s "$DB2/data.mdb")
check "the size of a compacted copy ($about) is about the copy's ($copy)" \
    test "$((about * 100))" -ge "$((copy * 85))" -a "$((about * 100))" -le "$((copy * 115))"
index_ok "index the same into the other" "$DB" --no-compact "$ARCH"
run_dsq --db "$DB2" --csv "count by run, kind"
want2=$OUT
run_dsq --db "$DB" --csv "count by run, kind"
expect_eq "automatically compacted index answers like the other" "$OUT" "$want2"
DSQ_COMPACT_MIN_BYTES=1 run_dsq --db "$DB2" index "$ARCH"
expect_not_contains "an unchanged re-run does not compact again" "compacted" "$OUT"

run_dsq --db "$DSQ_TMP/nowhere" compact
expect_code "dsq compact without an index" 3 "$RC"
expect_contains "dsq compact without an index says so" "no index at" "$ERR"
run_dsq --db "$DB" compact extra
expect_code "dsq compact with an argument" 2 "$RC"

e2e_finish
