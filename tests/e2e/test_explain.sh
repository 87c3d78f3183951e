#!/usr/bin/env bash
# `dsq explain FILE|-`: golden outputs of hand-written logs (tests/explain/NNN-what.log) in
# English, in Chinese and with --only problems; stdin and compressed input give the same
# explanation as the plain file; usage errors. Regenerate the expected files with
#   DSQ_UPDATE=1 bash tests/e2e/test_explain.sh
# and read every changed line against its .log and the catalogue.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool gzip gzip
need_tool tar tar

DIR="$DSQ_SRC/tests/explain"

# golden NAME EXPECTED_FILE ARGS...: dsq explain ARGS must print EXPECTED_FILE exactly.
golden() {
    local name=$1 expected=$2
    shift 2
    run_dsq explain "$@"
    if [ "${DSQ_UPDATE:-0}" = 1 ]; then
        printf '%s\n' "$OUT" >"$expected"
        pass "$name (updated)"
        return
    fi
    expect_code "$name" 0 "$RC"
    expect_eq "$name" "$(cat "$expected")" "$OUT"
}

# 1. golden outputs ------------------------------------------------------------------
for log in "$DIR"/*.log; do
    base=${log%.log}
    n=$(basename "$base")
    golden "$n en" "$base.en.expected" "$log"
    golden "$n zh" "$base.zh.expected" --lang zh "$log"
    golden "$n only problems" "$base.problems.expected" --only problems "$log"
done

# 2. stdin and compressed input read like the plain file -----------------------------
log="$DIR/003-failures.log"
plain=$("$DSQ" explain "$log")
run_dsq explain - <"$log"
expect_code "stdin" 0 "$RC"
expect_eq "stdin explains like the file" "$plain" "$OUT"
gzip -c "$log" >"$DSQ_TMP/failures.log.gz"
run_dsq explain "$DSQ_TMP/failures.log.gz"
expect_eq "gzip file explains like the plain file" "$plain" "$OUT"
"$DSQ" explain - <"$DSQ_TMP/failures.log.gz" >"$DSQ_TMP/stdin-gz.out" 2>&1
expect_eq "gzip on stdin explains like the plain file" "$plain" "$(cat "$DSQ_TMP/stdin-gz.out")"
run_dsq explain --only problems --lang zh - <"$log"
expect_eq "options combine on stdin" "$(cat "$DIR/003-failures.zh.problems.expected")" "$OUT"

# 3. an archive: each member under its name --------------------------------------------
mkdir -p "$DSQ_TMP/arch"
cp "$DIR/001-deepspeed-training.log" "$DIR/002-nccl-socket.log" "$DSQ_TMP/arch/"
tar -C "$DSQ_TMP/arch" -czf "$DSQ_TMP/logs.tar.gz" 001-deepspeed-training.log 002-nccl-socket.log
run_dsq explain --only problems "$DSQ_TMP/logs.tar.gz"
expect_code "archive" 0 "$RC"
expect_contains "archive: first member named" "== member: 001-deepspeed-training.log ==" "$OUT"
expect_contains "archive: second member named" "== member: 002-nccl-socket.log ==" "$OUT"
expect_contains "archive: a problem of the second member" "Connection closed by remote peer" "$OUT"

# 4. usage errors ----------------------------------------------------------------------
run_dsq explain
expect_code "explain without a file" 2 "$RC"
expect_contains "explain without a file: usage" "dsq explain" "$ERR"
run_dsq explain --lang fr "$log"
expect_code "unknown language" 2 "$RC"
expect_contains "unknown language: named" "fr" "$ERR"
run_dsq explain --only warnings "$log"
expect_code "--only takes problems" 2 "$RC"
run_dsq explain "$DSQ_TMP/no-such-file.log"
expect_code "missing file" 1 "$RC"
expect_contains "missing file: named" "no-such-file.log" "$ERR"
run_dsq explain --stats "$log"
expect_code "--stats still gives the coverage report" 0 "$RC"
expect_contains "--stats: family table" "family" "$OUT"

e2e_finish
