#!/usr/bin/env bash
# Line shapes (src/shapes.h) must not change the index: the sample logs, a generated
# archive of every job kind (per-host pdsh files with 8 ranks interleaved, per-rank
# files, HF loss dicts, Megatron iterations, NCCL set-up, failures), one big
# interleaved launcher log and the real-log corpus (when present) are indexed with
# the shapes off (DSQ_LINE_SHAPES=0), on (the default) and checked line by line
# (DSQ_LINE_SHAPES=check, which aborts on a shape that answers otherwise than the
# recognizers): every event, `runs`, `fields` and the queries answer the same, and
# `dsq explain` prints the same for a file.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool python3 python3
need_tool zstd zstd
need_tool gzip gzip
need_tool tar tar
need_tool zip zip

A="$DSQ_TMP/archive"
mkdir -p "$A"
cp -r "$SAMPLE" "$A/sample"
python3 "$DSQ_SRC/tools/gen-archive.py" "$A/gen" --runs 12 --hosts 2 --ranks 4 --size 6M \
    --seed 3 -j 1 >/dev/null 2>&1 || die "gen-archive.py failed"
python3 "$DSQ_SRC/tools/gen-archive.py" --single "$A/launcher.log" --hosts 4 --ranks 8 \
    --size 4M --seed 5 >/dev/null 2>&1 || die "gen-archive.py --single failed"
# lines a family's handler acts on (attributes, a JSON block, a message on the next
# line, the launcher's command, HF's setup block), each seen often enough to be
# answered by a shape: their handlers are not quiet (dsq_family_def.quiet) for them
mkdir -p "$A/handled"
for rep in 1 2 3 4 5; do
    for h in 1 2 3 4; do
        s="2024-07-2$rep 21:3$h:05,39$h"
        cat <<EOF
gpu00$h: [$s] [INFO] [logging.py:96:log_dist] [Rank $h] Creating torch.bfloat16 ZeRO stage 3 optimizer
gpu00$h: [$s] [INFO] [config.py:991:print] activation_checkpointing_config {
gpu00$h: "partition_activations": false,
gpu00$h: "number_checkpoints": $rep$h
gpu00$h: }
gpu00$h: [$s] [INFO] [engine.py:12$h:_configure_optimizer]
gpu00$h: Using client Optimizer as basic optimizer
gpu00$h: Config: alpha=0.00001$h, betas=(0.900000, 0.999000), weight_decay=0.00000$rep, adam_w=1
gpu00$h: [$s] [INFO] [runner.py:60$h:main] cmd = /usr/bin/python$rep -u -m deepspeed.launcher.launch --master_port=2950$h train.py
gpu00$h: [$s] [INFO] [logging.py:96:log_dist] [Rank $h] step=$rep$h, skipped=0, lr=[1e-0$rep], mom=[[0.9, 0.999]]
gpu00$h: {'loss': 1.$rep$h, 'grad_norm': 0.$h, 'learning_rate': $rep.0e-05, 'epoch': 0.0$h}
gpu00$h: ***** Running training *****
gpu00$h:   Num examples = 1$rep$h
gpu00$h:   Num Epochs = $rep
EOF
    done
done >"$A/handled/ds.log"
if [ -d "${DSQ_CORPUS:-}" ]; then
    mkdir -p "$A/corpus"
    cp "$DSQ_CORPUS"/*.log "$A/corpus/" 2>/dev/null || true
fi

dump() { # DB: everything the index answers, as text
    dump_index "$1" \
        "avg loss, last loss, p50 CurrSamplesPerSec by run" \
        "max MaxMemAllocated, sum fwd_microstep by host, rank" \
        "count by run, label" \
        "last step, first lr by rank every 1h"
}

DSQ_LINE_SHAPES=0 index_quiet "$DSQ_TMP/off" -j 2 "$A"
REF_STATUS=$STATUS REF_SUMMARY=$SUMMARY REF_PROBLEMS=$PROBLEMS
dump "$DSQ_TMP/off" >"$DSQ_TMP/dump-off.txt" 2>&1
check "shapes off: the dump has the events" test "$(wc -l <"$DSQ_TMP/dump-off.txt")" -gt 20000

index_quiet "$DSQ_TMP/on" -j 2 "$A"
expect_same_index "shapes on" "$DSQ_TMP/on" dump "$DSQ_TMP/dump-off.txt" "shapes off"

DSQ_LINE_SHAPES=check index_quiet "$DSQ_TMP/check" -j 1 "$A"
expect_same_index "shapes checked line by line" "$DSQ_TMP/check" dump "$DSQ_TMP/dump-off.txt" \
    "shapes off"

# the shapes answered most lines of the launcher log (else this test tests little)
out=$(DSQ_LINE_SHAPES=stats "$DSQ" --db "$DSQ_TMP/stats" -q index -j 1 "$A/launcher.log" 2>&1)
answered=$(printf '%s\n' "$out" | sed -n 's/.*line shapes: \([0-9]*\) lines answered, \([0-9]*\) recognized.*/\1 \2/p' | head -1)
set -- $answered
check "shapes answer most of the launcher log's lines ($1 of $(($1 + $2)))" \
    test "$1" -gt "$((4 * $2))"

f=$(ls "$A"/gen/*/*.log 2>/dev/null | head -1)
[ -n "$f" ] || f="$A/launcher.log"
DSQ_LINE_SHAPES=0 "$DSQ" explain "$f" >"$DSQ_TMP/explain-off.txt" 2>&1
"$DSQ" explain "$f" >"$DSQ_TMP/explain-on.txt" 2>&1
check "explain prints the same with shapes on" cmp -s "$DSQ_TMP/explain-off.txt" "$DSQ_TMP/explain-on.txt"

e2e_finish
