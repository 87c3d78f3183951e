#!/usr/bin/env bash
# tools/gen-archive.py, the benchmark archive generator, at a tiny size:
# - the same seed gives the same bytes (also with runs written in parallel), another
#   seed other bytes;
# - every container type is in it, and dsq indexes all of it with exit 0;
# - dsq reads the same events from the mixed containers as from the same text
#   written as plain files (--containers plain), and one Max_MA per memory report.
source "$(dirname "$0")/lib.sh"
e2e_init

need_tool python3 python3
need_tool zstd zstd
need_tool gzip gzip

GEN="$DSQ_SRC/tools/gen-archive.py"
ARGS=(--runs 7 --hosts 2 --ranks 2 --size 600K --seed 7)

# sha256 of every file below DIR, by relative path
digest() { (cd "$1" && find . -type f | sort | xargs sha256sum); }

python3 "$GEN" "$DSQ_TMP/a" "${ARGS[@]}" -j 1 2>/dev/null || die "gen-archive.py failed"
python3 "$GEN" "$DSQ_TMP/b" "${ARGS[@]}" -j 2 2>/dev/null || die "gen-archive.py -j 2 failed"
python3 "$GEN" "$DSQ_TMP/c" --runs 7 --hosts 2 --ranks 2 --size 600K --seed 8 2>/dev/null ||
    die "gen-archive.py --seed 8 failed"
python3 "$GEN" "$DSQ_TMP/plain" "${ARGS[@]}" --containers plain 2>/dev/null ||
    die "gen-archive.py --containers plain failed"

expect_eq "same seed, same bytes (-j 1 and -j 2)" "$(digest "$DSQ_TMP/a")" "$(digest "$DSQ_TMP/b")"
check "another seed, other bytes" test "$(digest "$DSQ_TMP/a")" != "$(digest "$DSQ_TMP/c")"

for suffix in .log .log.zst .log.gz .tar.zst .tar.gz .zip; do
    n=$(find "$DSQ_TMP/a" -type f -name "*$suffix" | wc -l)
    check "container $suffix present ($n)" test "$n" -gt 0
done

index_ok "dsq index: every container" "$DSQ_TMP/db" -q "$DSQ_TMP/a"
if grep -q problems <<<"$OUT"; then fail "dsq index: damaged input"; show_last; else pass "dsq index: nothing damaged"; fi
index_ok "dsq index: the same text as plain files" "$DSQ_TMP/db-plain" -q "$DSQ_TMP/plain"

runs=$(query "$DSQ_TMP/db" "count by run" --csv | tail -n +2 | wc -l)
expect_eq "dsq: every run" 7 "$runs"
expect_eq "containers and plain files: same events by run and kind" \
    "$(query "$DSQ_TMP/db-plain" "count by run, kind" --csv)" \
    "$(query "$DSQ_TMP/db" "count by run, kind" --csv)"
reports=$(find "$DSQ_TMP/plain" -type f -exec cat {} + | grep -c 'see_memory_usage] MA ')
expect_eq "one Max_MA per memory report" "$reports" "$(query "$DSQ_TMP/db" "count Max_MA" --csv | tail -n 1)"

e2e_finish
