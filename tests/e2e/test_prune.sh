#!/usr/bin/env bash
# Removed files stay queryable and are counted as missing until `dsq prune`; `dsq
# drop RUN` removes a run, which indexing brings back exactly as it was.
source "$(dirname "$0")/lib.sh"
e2e_init

ARCH="$DSQ_TMP/archive"
DB="$DSQ_TMP/db"
cp -r "$SAMPLE" "$ARCH"
index_ok "index a copy of the sample" "$DB" "$ARCH"
run_dsq --db "$DB" "count by run"
before=$OUT

rm "$ARCH/llama7b-zero3/gpu010.log"
run_dsq --db "$DB" --csv runs
expect_contains "a removed file is counted as missing" "llama7b-zero3," "$OUT"
expect_eq "missing column of llama7b-zero3" 1 \
    "$(printf '%s\n' "$OUT" | awk -F, '$1 == "llama7b-zero3" {print $NF}')"
run_dsq --db "$DB" "count by run"
expect_eq "a removed file stays queryable" "$before" "$OUT"
index_ok "re-indexing does not drop it" "$DB" "$ARCH"
run_dsq --db "$DB" "count by run"
expect_eq "still queryable after re-indexing" "$before" "$OUT"

run_dsq --db "$DB" prune
expect_code "dsq prune" 0 "$RC"
expect_contains "dsq prune: says what it dropped" "dropped 1 file" "$OUT"
run_dsq --db "$DB" "count by file where run = llama7b-zero3"
expect_not_contains "pruned file is gone" "gpu010" "$OUT"
expect_contains "its sibling stays" "gpu009" "$OUT"
run_dsq --db "$DB" --csv runs
expect_eq "nothing missing after prune" 0 \
    "$(printf '%s\n' "$OUT" | awk -F, '$1 == "llama7b-zero3" {print $NF}')"
run_dsq --db "$DB" prune
expect_contains "a second prune drops nothing" "dropped 0 files" "$OUT"

run_dsq --db "$DB" "count by run"
kept=$OUT
run_dsq --db "$DB" drop gpt2-zero2
expect_code "dsq drop" 0 "$RC"
run_dsq --db "$DB" "count by run"
expect_not_contains "a dropped run is gone" "gpt2-zero2" "$OUT"
index_ok "index again" "$DB" "$ARCH"
run_dsq --db "$DB" "count by run"
expect_eq "re-indexed run is back as it was" "$kept" "$OUT"

run_dsq --db "$DB" drop no-such-run
expect_code "dsq drop of an unknown run" 1 "$RC"
expect_contains "dsq drop of an unknown run: says so" "no such run" "$ERR"
run_dsq --db "$DB" drop
expect_code "dsq drop without a run" 2 "$RC"
e2e_finish
