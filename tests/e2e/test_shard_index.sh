#!/usr/bin/env bash
# dsq index --shard K/N: 24 runs (copies of the sample archive under new names)
# indexed whole and as 4 shards. Every run lands in exactly one shard with all its
# files, the shards together hold exactly the runs of the whole index, queries over
# the shards' directory print what the whole index prints, re-running a shard is
# incremental, and bad --shard values are refused with a clear message.
source "$(dirname "$0")/lib.sh"
e2e_init

ARCH="$DSQ_TMP/archive"
mkdir -p "$ARCH"
for i in 0 1 2 3 4 5 6 7; do
    cp -r "$SAMPLE/llama7b-zero3" "$ARCH/llama-$i"
    cp -r "$SAMPLE/gpt2-zero2" "$ARCH/gpt2-$i"
    cp "$SAMPLE/bert-baseline.log" "$ARCH/bert-$i.log"
done
N=4
ALL="$DSQ_TMP/all"
SHARDS="$DSQ_TMP/shards"
index_ok "index the whole archive" "$ALL" "$ARCH"
files_all=$(printf '%s\n' "$OUT" | sed -n 's/^indexed \([0-9]*\) files.*/\1/p')
files_sum=0
other_sum=0
for ((k = 0; k < N; k++)); do
    index_ok "index shard $k/$N" "$SHARDS/shard-$k" --shard "$k/$N" "$ARCH"
    files_sum=$((files_sum + $(printf '%s\n' "$OUT" | sed -n 's/^indexed \([0-9]*\) files.*/\1/p')))
    other_sum=$((other_sum + $(printf '%s\n' "$OUT" | sed -n "s/^  left \([0-9]*\) run directories and files to other shards/\1/p")))
done
expect_eq "the shards index every file once" "$files_all" "$files_sum"
expect_eq "each shard leaves the others' 24 runs unread" $((24 * (N - 1))) "$other_sum"

# runs: each shard's runs, together, are the whole index's runs, none twice
runs_of() { # DB: run names, one a line, sorted
    run_dsq --db "$1" --csv runs
    printf '%s\n' "$OUT" | tail -n +2 | cut -d, -f1 | grep -v '^$' | sort
}
whole=$(runs_of "$ALL")
expect_eq "the whole index has 24 runs" 24 "$(printf '%s\n' "$whole" | wc -l)"
union=""
nonempty=0
for ((k = 0; k < N; k++)); do
    mine=$(runs_of "$SHARDS/shard-$k")
    [ -n "$mine" ] && nonempty=$((nonempty + 1))
    union+="$mine"$'\n'
done
expect_eq "the shards together hold exactly the whole index's runs" "$whole" \
    "$(printf '%s' "$union" | grep -v '^$' | sort)"
check "runs spread over more than one shard ($nonempty of $N hold runs)" [ "$nonempty" -gt 1 ]

# a whole run in one shard: its file count there equals the whole index's
run_dsq --db "$ALL" --csv runs
whole_runs=$OUT
run_dsq --db "$SHARDS" --csv runs
expect_eq "dsq runs over the shards equals the whole index (files, lines, events per run)" \
    "$whole_runs" "$OUT"

same() { # NAME QUERY...: the same output over the whole index and over the shards
    local name=$1
    shift
    run_dsq --db "$ALL" --csv "$@"
    local want=$OUT
    expect_code "$name: whole index" 0 "$RC"
    run_dsq --db "$SHARDS" --csv "$@"
    expect_code "$name: shards" 0 "$RC"
    expect_eq "$name: shards equal the whole index" "$want" "$OUT"
}
same "max by run" "max Max_MA by run"
same "aggregates" "count, min MA, max Max_MA, sum CA, avg Max_CA, first MA, last MA by run"
same "percentiles over all runs" "p50 Max_MA, p90 Max_MA, p99 Max_MA"
same "percentiles by host" "p50 Max_MA, p95 Max_MA by host"
same "count by kind" "count by kind"
same "every" "avg Max_MA every 1m"
same "glob" "max Max_MA by run where run ~ 'gpt2-*'"
same "top" "max Max_MA by run top 5"
same "order by" "count, max Max_MA by run order by count desc limit 7"
same "fields" fields
same "show" show "kind = memory" --limit 0

# re-running a shard is incremental
run_dsq --db "$SHARDS/shard-0" index --shard "0/$N" "$ARCH"
expect_code "re-run shard 0" 0 "$RC"
expect_contains "re-run shard 0: nothing new" "indexed 0 files" "$OUT"
one=$(printf '%s\n' "$(runs_of "$SHARDS/shard-0")" | grep -c . || true)
if [ "$one" -gt 0 ]; then
    expect_contains "re-run shard 0: its files unchanged" "unchanged files" "$OUT"
fi
run_dsq --db "$SHARDS" --csv "max Max_MA by run"
run_dsq --db "$ALL" --csv "max Max_MA by run"
want=$OUT
run_dsq --db "$SHARDS" --csv "max Max_MA by run"
expect_eq "after the re-run the shards still equal the whole index" "$want" "$OUT"

# one shard of one is the whole index
index_ok "index --shard 0/1" "$DSQ_TMP/one" --shard 0/1 "$ARCH"
run_dsq --db "$DSQ_TMP/one" --csv runs
expect_eq "--shard 0/1 equals the whole index" "$whole_runs" "$OUT"

# --run names the run, and that name decides the shard
for ((k = 0; k < N; k++)); do
    run_dsq --db "$DSQ_TMP/named-$k" index --shard "$k/$N" --run fixed-name "$ARCH/gpt2-0"
done
have=0
for ((k = 0; k < N; k++)); do
    run_dsq --db "$DSQ_TMP/named-$k" --csv runs
    grep -q '^fixed-name,' <<<"$OUT" && have=$((have + 1))
done
expect_eq "--run with --shard: the named run is in exactly one shard" 1 "$have"

# tools/slurm-index.sh --local: the same shards on this machine (xargs -P), checked
SCRIPT="$DSQ_SRC/tools/slurm-index.sh"
bash "$SCRIPT" --local --jobs 2 --dsq "$DSQ" "$ARCH" "$N" "$DSQ_TMP/local" >"$DSQ_TMP/local.out" 2>&1
expect_code "slurm-index.sh --local" 0 "$?"
expect_contains "--local: the check says every shard finished" "all $N shards finished" \
    "$(cat "$DSQ_TMP/local.out")"
run_dsq --db "$DSQ_TMP/local" --csv runs
expect_eq "--local shards equal the whole index" "$whole_runs" "$OUT"
bash "$SCRIPT" --local --dsq "$DSQ" "$ARCH" 3 "$DSQ_TMP/local" >"$DSQ_TMP/local.out" 2>&1
expect_code "--local with another N for the same directory" 2 "$?"
mkdir -p "$DSQ_TMP/local/shard-9"
cp "$DSQ_TMP/local/shard-0/"* "$DSQ_TMP/local/shard-9/"
bash "$SCRIPT" --local --dsq "$DSQ" "$ARCH" "$N" "$DSQ_TMP/local" >"$DSQ_TMP/local.out" 2>&1
expect_code "--local: a stray shard directory fails the check" 1 "$?"
expect_contains "--local: names the stray shard" "stray: $DSQ_TMP/local/shard-9" "$(cat "$DSQ_TMP/local.out")"
FAKE="$DSQ_TMP/fake-dsq"
printf '#!/bin/sh\ncase " $* " in *" --shard 1/"*) exit 3 ;; esac\nexec "%s" "$@"\n' "$DSQ" >"$FAKE"
chmod +x "$FAKE"
bash "$SCRIPT" --local --dsq "$FAKE" "$ARCH" "$N" "$DSQ_TMP/local-bad" >"$DSQ_TMP/local.out" 2>&1
expect_code "--local: a failing shard fails the check" 1 "$?"
expect_contains "--local: names the failed shard" "shard 1: FAILED: dsq exited 3" "$(cat "$DSQ_TMP/local.out")"
bash "$SCRIPT" --local "$ARCH" 0 "$DSQ_TMP/x" >"$DSQ_TMP/local.out" 2>&1
expect_code "slurm-index.sh: N = 0 refused" 2 "$?"
bash "$SCRIPT" --dsq "$DSQ" "$ARCH" 2 "$DSQ_TMP/x" >"$DSQ_TMP/local.out" 2>&1
expect_code "slurm-index.sh: no partition" 2 "$?"

# bad values
for bad in 4/4 5/4 0/0 1 a/2 1/ -1/2 "1/2/3"; do
    run_dsq --db "$DSQ_TMP/bad" index --shard "$bad" "$ARCH"
    expect_code "--shard $bad refused" 2 "$RC"
    expect_contains "--shard $bad: says why" "--shard" "$ERR"
done
run_dsq --db "$DSQ_TMP/bad" index --shard 4/4 "$ARCH"
expect_contains "--shard 4/4: names the range" "0 to 3" "$ERR"
run_dsq --db "$DSQ_TMP/bad" index "$ARCH" --shard
expect_code "--shard without a value" 2 "$RC"
run_dsq --db "$SHARDS" --shard 0/4 runs
expect_code "--shard on a query is refused" 2 "$RC"
expect_contains "--shard on a query: says where it belongs" "for dsq index" "$ERR"
check "a refused --shard wrote no index" [ ! -e "$DSQ_TMP/bad" ]

# writing into the directory of shards would hide them from queries: refused
for cmd in "index $ARCH" prune "drop gpt2-0"; do
    # shellcheck disable=SC2086 # the command and its argument
    run_dsq --db "$SHARDS" $cmd
    expect_code "dsq $cmd on the directory of shards is refused" 2 "$RC"
    expect_contains "dsq $cmd on the shards: names one" "--db $SHARDS/shard-0" "$ERR"
done
check "nothing was written into the directory of shards" [ ! -e "$SHARDS/data.mdb" ]
run_dsq --db "$SHARDS/shard-0" prune
expect_code "prune on one shard works" 0 "$RC"

e2e_finish
