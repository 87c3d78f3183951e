#!/usr/bin/env bash
# The command line: help, usage errors, query errors with a caret under the
# offending word, a missing index, output formats, the run listing.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool python3 python3

DB="$DSQ_TMP/db"

# 1. help and version ------------------------------------------------------------
for h in --help -h help; do
    run_dsq "$h"
    expect_code "dsq $h" 0 "$RC"
    [ "$RC" = 0 ] || continue
    expect_contains "dsq $h: index usage" "dsq index" "$OUT"
    expect_contains "dsq $h: query usage" 'dsq "max Max_MA by run"' "$OUT"
    expect_contains "dsq $h: runs usage" "dsq runs" "$OUT"
    expect_contains "dsq $h: --db documented" "--db" "$OUT"
    expect_contains "dsq $h: DSQ_DB documented" "DSQ_DB" "$OUT"
done
run_dsq --version
expect_code "dsq --version" 0 "$RC"
expect_contains "dsq --version prints the version" "dsq " "$OUT"
expect_contains "dsq --version names the line-splitting backend" "(line splitting: " "$OUT"
DSQ_LINE_SHAPES= run_dsq --version
expect_contains "dsq --version says line shapes are on" "line shapes: on" "$OUT"
DSQ_LINE_SHAPES=0 run_dsq --version
expect_contains "DSQ_LINE_SHAPES=0 is shown by --version" "line shapes: off" "$OUT"
DSQ_LINES_BACKEND=scalar run_dsq --version
expect_contains "DSQ_LINES_BACKEND=scalar is shown by --version" "(line splitting: scalar)" "$OUT"
if grep -qw avx2 /proc/cpuinfo 2>/dev/null && [ "$(uname -m)" = x86_64 ]; then
    DSQ_LINES_BACKEND= run_dsq --version
    expect_contains "an AVX2 CPU splits lines with avx2 by default" "(line splitting: avx2)" "$OUT"
fi

# 2. usage errors: exit 2 with a message -------------------------------------------
run_dsq
expect_code "no arguments" 2 "$RC"
expect_contains "no arguments: usage on stderr" "dsq index" "$ERR"

run_dsq --frobnicate
expect_code "unknown option" 2 "$RC"
expect_contains "unknown option: named" "--frobnicate" "$ERR"

run_dsq --db "$DB" --bogus "max Max_MA by run"
expect_code "unknown option next to a query" 2 "$RC"
expect_contains "unknown option next to a query: named" "--bogus" "$ERR"

run_dsq --db
expect_code "--db without a value" 2 "$RC"

run_dsq --db "$DB" index
expect_code "index without a path" 2 "$RC"
check "index without a path creates no index" test ! -e "$DB"

run_dsq --db "$DB" max Max_MA by run
expect_code "unquoted query" 2 "$RC"
expect_contains "unquoted query: says to quote it" "quote" "$ERR"

# 3. a missing index: exit 3, and tell the user to run dsq index ---------------------
for q in "max Max_MA by run" runs; do
    run_dsq --db "$DSQ_TMP/missing-db" "$q"
    expect_code "missing index: dsq $q" 3 "$RC"
    expect_contains "missing index: dsq $q says to run dsq index" "dsq index" "$ERR"
    expect_contains "missing index: dsq $q names the directory" "$DSQ_TMP/missing-db" "$ERR"
done
check "a query does not create the missing index" test ! -e "$DSQ_TMP/missing-db"

# 4. the sample index --------------------------------------------------------------
index_ok "index the sample" "$DB" "$SAMPLE"

# bad queries: exit 2, the message, the query, and carets exactly under the word
# expect_caret NAME QUERY WORD MESSAGE_PART
expect_caret() {
    local name=$1 q=$2 word=$3 msg=$4
    run_dsq --db "$DB" "$q"
    expect_code "$name" 2 "$RC"
    expect_contains "$name: message" "$msg" "$ERR"
    check "$name: nothing on stdout" test -z "$OUT"
    local qline caret pfx want
    qline=$(printf '%s\n' "$ERR" | grep -nxE " *$(printf '%s' "$q" | sed 's/[][\.*^$]/\\&/g')" | head -n1)
    if [ -z "$qline" ]; then
        fail "$name: the query is not echoed on a line of its own"
        show_last
        return
    fi
    caret=$(printf '%s\n' "$ERR" | sed -n "$((${qline%%:*} + 1))p")
    qline=${qline#*:}
    if [ "$word" = "<end>" ]; then
        pfx=$qline
        want="${pfx//?/ }^"
    else
        pfx=${qline%"$word"*} # before the word's last occurrence
        want="${pfx//?/ }${word//?/^}"
    fi
    expect_eq "$name: carets under '$word'" "$qline
$want" "$qline
$caret"
}

# shellcheck disable=SC2016 # the backquotes are dsq's, not the shell's
expect_caret "misspelled field" "max Max_Ma by run" Max_Ma 'did you mean `Max_MA`'
expect_caret "unknown group key" "max Max_MA by rnu" rnu "rnu"
expect_caret "unknown aggregate" "frobnicate Max_MA" frobnicate "frobnicate"
expect_caret "bad limit" "max Max_MA by run limit x" x "number"
expect_caret "dangling where" "max Max_MA by run where" "<end>" "end of query"
# shellcheck disable=SC2016
expect_caret "misspelled field after where" "max Max_MA by run where Max_Ma > 3" Max_Ma 'did you mean `Max_MA`'

# the aligned table, --csv and --json of the same query
expect_eq "table" "$SAMPLE_MAX_TABLE" "$(query "$DB" "max Max_MA by run")"
expect_eq "--csv" "$SAMPLE_MAX_CSV" "$(query "$DB" "max Max_MA by run" --csv)"
query "$DB" "max Max_MA by run" --json >"$DSQ_TMP/json.out"
if python3 -c 'import json,sys; [json.loads(l) for l in sys.stdin]' <"$DSQ_TMP/json.out"; then
    pass "--json: every line is JSON"
else
    fail "--json: not NDJSON"
    sed 's/^/    | /' "$DSQ_TMP/json.out"
fi
expect_eq "--json: one object per row, numbers plain, units apart" \
    '{"max Max_MA": 1.5, "max Max_MA_unit": "GB", "run": "bert-baseline"}
{"max Max_MA": 3.25, "max Max_MA_unit": "GB", "run": "gpt2-zero2"}
{"max Max_MA": 21.37, "max Max_MA_unit": "GB", "run": "llama7b-zero3"}' \
    "$(python3 -c 'import json,sys; [print(json.dumps(json.loads(l), sort_keys=True)) for l in sys.stdin]' <"$DSQ_TMP/json.out")"
# options may come after the query too
expect_eq "--csv after the query" "$SAMPLE_MAX_CSV" "$("$DSQ" "max Max_MA by run" --db "$DB" --csv 2>&1)"

# several aggregates, keys, where, top
expect_eq "several aggregates, two keys" "run,host,max Max_MA,count Max_MA
llama7b-zero3,gpu009,19.02,2
llama7b-zero3,gpu010,21.37,2" "$(query "$DB" "max Max_MA, count Max_MA by run, host where run ~ 'llama*'" --csv)"
expect_eq "top 1" "run,max Max_MA
llama7b-zero3,21.37" "$(query "$DB" "max Max_MA by run top 1" --csv)"

# 5. dsq runs ----------------------------------------------------------------------
run_dsq --db "$DB" runs
expect_code "dsq runs" 0 "$RC"
expect_eq "dsq runs: the three sample runs" "run
bert-baseline
gpt2-zero2
llama7b-zero3" "$(printf '%s\n' "$OUT" | awk '{print $1}')"
run_dsq --db "$DB" --json runs
expect_code "dsq runs --json" 0 "$RC"
# llama7b-zero3: per file 2 memory reports, op load time, optimizer, step, throughput,
# 2 NCCL attributes and an HF loss dict; gpt2-zero2 and llama7b-zero3: a rank_lines
# event per file (rank files, and ranked lines)
expect_eq "dsq runs --json: runs, files, events" "bert-baseline 1 2
gpt2-zero2 2 6
llama7b-zero3 2 20" "$(printf '%s\n' "$OUT" | python3 -c '
import json, sys
for l in sys.stdin:
    o = json.loads(l)
    print(o["run"], o["files"], o["events"])')"

# On a terminal, a progress line: files done of all the walk will see (script gives a tty).
# Checked only where script can open a pseudo-terminal (a bare chroot may have no /dev/pts).
if command -v script >/dev/null &&
    script -qc "'$DSQ' --db '$DSQ_TMP/tty-db' index '$SAMPLE'" "$DSQ_TMP/tty.txt" >/dev/null 2>&1 &&
    grep -q "indexed 5 files" "$DSQ_TMP/tty.txt"; then
    expect_contains "progress line on a terminal counts files of all" "indexing: 1/5 files" \
        "$(tr '\r' '\n' <"$DSQ_TMP/tty.txt")"
fi

e2e_finish
