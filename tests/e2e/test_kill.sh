#!/usr/bin/env bash
# Crash safety: `dsq index` killed with SIGKILL at 50 random moments. Each time the
# index left behind opens and answers a query, and running the same command again
# gives exactly the index an uninterrupted run gives: the same events (all of
# them, in time order, with their fields), runs, fields and per-file counts.
# DSQ_COMMIT_BYTES makes the 4 MB file commit every 128 KiB, so kills land between,
# inside and after its many commits; 200 small files after it are committed in
# groups (32 at a time), so kills also land while a group is open. Rounds alternate
# the killed run between -j 1 and -j 2 (worker threads), and the re-run uses the
# other one. A 2 MB log of two ranks writes chunk records at its checkpoints, and
# DSQ_PART_PUTS=1 commits a part after each (store.h, dsq_store_parts): kills land
# between parts too. DSQ_KILL_ROUNDS overrides the 50.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool python3 python3
need_tool zstd zstd

ARCH="$DSQ_TMP/archive"
mkdir -p "$ARCH/big-run" "$ARCH/small"
python3 "$DSQ_SRC/tools/gen-log.py" 4 "$ARCH/big-run/gpu001.log" --hosts 4 2>/dev/null
python3 "$DSQ_SRC/tools/gen-log.py" 1 "$DSQ_TMP/z.log" --hosts 2 --seed 3 2>/dev/null
zstd -q "$DSQ_TMP/z.log" -o "$ARCH/big-run/gpu002.log.zst"
write_two_rank_log "$ARCH/big-run/gpu003.log"
cp -r "$SAMPLE"/* "$ARCH/small/"
for i in $(seq -w 1 100); do cp -r "$SAMPLE/gpt2-zero2" "$ARCH/many-$i"; done
export DSQ_COMMIT_BYTES=131072 DSQ_PART_PUTS=1

dump() { dump_index "$1"; } # DB: everything the index answers, as text

CLEAN="$DSQ_TMP/clean"
start=$(date +%s%N)
index_ok "uninterrupted index" "$CLEAN" -j 1 "$ARCH"
ms=$((($(date +%s%N) - start) / 1000000 + 20))
dump "$CLEAN" >"$DSQ_TMP/clean.txt"
check "the clean dump has the events" test "$(wc -l <"$DSQ_TMP/clean.txt")" -gt 10000

rounds=${DSQ_KILL_ROUNDS:-50}
bad=0 killed=0 unusable=0 in_groups=0
for ((i = 0; i < rounds; i++)); do
    db="$DSQ_TMP/k"
    rm -rf "$db"
    jk=$((1 + i % 2)) jr=$((2 - i % 2))
    "$DSQ" --db "$db" -q index -j "$jk" "$ARCH" >/dev/null 2>&1 &
    pid=$!
    sleep "$(printf '0.%03d' $((RANDOM % ms % 1000)))"
    kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
    wait "$pid" 2>/dev/null
    if [ -e "$db/data.mdb" ]; then # what the kill left opens and answers
        "$DSQ" --db "$db" "count" >/dev/null 2>"$DSQ_TMP/q.err" || { unusable=$((unusable + 1)); echo "round $i: index unusable after the kill: $(cat "$DSQ_TMP/q.err")"; }
        runs=$("$DSQ" --db "$db" --csv "count by run" 2>/dev/null | grep -c '^many-')
        [ "$jk" = 1 ] && [ "$runs" -gt 0 ] && [ "$runs" -lt 100 ] && in_groups=$((in_groups + 1))
    fi
    "$DSQ" --db "$db" -q index -j "$jr" "$ARCH" >/dev/null 2>"$DSQ_TMP/rerun.err" ||
        { bad=$((bad + 1)); echo "round $i: re-run failed: $(cat "$DSQ_TMP/rerun.err")"; continue; }
    if ! dump "$db" | cmp -s - "$DSQ_TMP/clean.txt"; then
        bad=$((bad + 1))
        echo "round $i (killed -j $jk, re-run -j $jr): the re-run index differs from the clean one:"
        dump "$db" | diff - "$DSQ_TMP/clean.txt" | head -5
    fi
done
echo "$rounds rounds, $killed killed while running (the rest had finished: ${ms} ms budget)," \
    "$in_groups of the -j 1 ones among the groups of small files"
expect_eq "every killed index opened and answered" 0 "$unusable"
expect_eq "every re-run equals the uninterrupted index" 0 "$bad"
# timing varies with the machine's load: a fifth of the kills hitting a running indexer is plenty
check "kills hit a running indexer" test "$killed" -ge $((rounds / 5))
e2e_finish
