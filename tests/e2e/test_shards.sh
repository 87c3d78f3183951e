#!/usr/bin/env bash
# Several indexes answer as one: the sample archive indexed whole and in two
# shards (one run here, two there); every query, `dsq runs`, `dsq fields` and
# `dsq show` over the shards (repeated --db, or their parent directory) print
# exactly what the whole index prints. Also: fields, show and order by on the CLI.
source "$(dirname "$0")/lib.sh"
e2e_init

ALL="$DSQ_TMP/all"
SHARDS="$DSQ_TMP/shards"
index_ok "index the whole sample" "$ALL" "$SAMPLE"
index_ok "index shard 0 (one run)" "$SHARDS/shard-0" --run llama7b-zero3 "$SAMPLE/llama7b-zero3"
index_ok "index shard 1 (another run)" "$SHARDS/shard-1" --run gpt2-zero2 "$SAMPLE/gpt2-zero2"
index_ok "index shard 1 (a third run)" "$SHARDS/shard-1" "$SAMPLE/bert-baseline.log"

same() { # NAME ARGS...: the same output over the whole index and over the shards
    local name=$1
    shift
    run_dsq --db "$ALL" --csv "$@"
    local want=$OUT
    expect_code "$name: whole index" 0 "$RC"
    run_dsq --db "$SHARDS/shard-0" --db "$SHARDS/shard-1" --csv "$@"
    expect_code "$name: two --db" 0 "$RC"
    expect_eq "$name: two --db equal the whole index" "$want" "$OUT"
    run_dsq --db "$SHARDS" --csv "$@"
    expect_eq "$name: the shards' directory equals the whole index" "$want" "$OUT"
}

same "max by run" "max Max_MA by run"
same "several aggregates" "count, min MA, max Max_MA, sum CA, avg Max_CA, first MA, last MA by run"
same "percentiles" "p50 Max_MA, p90 Max_MA, p99 Max_MA by run, host"
same "count by host" "count by host"
same "count by kind" "count by kind"
same "every" "avg Max_MA by run every 1m"
same "glob" "max Max_MA by host where run ~ 'gpt*' or run ~ 'b*'"
same "by attribute" "count by run, nccl_net"
same "where attribute" "max Max_MA by run where optimizer ~ '*'"
same "top" "max Max_MA by run top 2"
same "order by" "max Max_MA, count by run order by count desc"
same "labels (event scan)" "count by label where kind = memory"
same "family counts" "count by family"
same "runs" runs
same "fields" fields
same "show" show "kind = memory" --limit 0

# discovery output --------------------------------------------------------------
run_dsq --db "$ALL" fields
expect_code "dsq fields" 0 "$RC"
expect_contains "dsq fields: Max_MA in GB" "Max_MA" "$OUT"
expect_contains "dsq fields: header" "field" "$OUT"

run_dsq --db "$ALL" --csv runs
expect_contains "dsq runs: columns" "run,start,duration,hosts,ranks,files,lines,events,failure,peak Max_MA,damaged,missing" "$OUT"
expect_contains "dsq runs: llama peak" "llama7b-zero3,2024-07-20 21:29:58.101" "$OUT"

run_dsq --db "$ALL" --csv show "run = llama7b-zero3 and Max_MA > 20"
expect_code "dsq show" 0 "$RC"
expect_eq "dsq show: the one memory report above 20 GB" 2 "$(printf '%s\n' "$OUT" | wc -l)"
expect_contains "dsq show: its fields" "Max_MA=21.37 GB" "$OUT"

run_dsq --db "$ALL" show --limit 2
expect_code "dsq show --limit" 0 "$RC"
expect_contains "dsq show --limit: says how many more" "showed the first 2 of" "$ERR"

run_dsq --db "$ALL" show "rnu = x"
expect_code "dsq show: bad condition" 2 "$RC"
expect_contains "dsq show: caret under the word" "^^^" "$ERR"

run_dsq --db "$ALL" "max Max_MA by run order by Max_MA"
expect_code "order by a near miss" 2 "$RC"
expect_contains "order by a near miss: hint" "did you mean \`max Max_MA\`" "$ERR"

run_dsq --db "$ALL" --db "$ALL" index "$SAMPLE"
expect_code "index refuses two --db" 2 "$RC"

e2e_finish
