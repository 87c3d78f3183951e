#!/usr/bin/env bash
# Facts about the real-log corpus, each checked by eye against the file named (see
# ../shared/corpus/MANIFEST.tsv): watchdog timeouts (OpType via SeqNum, timeout),
# CUDA OOM sizes, launcher exit codes, NCCL world sizes, hosts and ranks, the
# year of year-less glog stamps, and how much of the corpus the families cover.
# Skipped (77) when the corpus is not there.
source "$(dirname "$0")/lib.sh"
[ -d "${DSQ_CORPUS:-}" ] || skip "corpus not found at ${DSQ_CORPUS:-<DSQ_CORPUS unset>}"
e2e_init
DB="$DSQ_TMP/db"
index_ok "corpus" "$DB" "$DSQ_CORPUS"

# fact QUERY EXPECTED-CSV: the query's CSV output must be exactly EXPECTED.
fact() {
    local got
    got=$(query "$DB" "$1" --csv)
    expect_eq "$1" "$2" "$got"
}

# 014: two ranks time out on BROADCAST SeqNum=1 after 600000 ms; 047 (behind a log
# viewer's "[80746] " line numbers): ranks 0 and 4 on ALLREDUCE SeqNum=1580; 048:
# ALLREDUCE SeqNum=808; 049: _REDUCE_SCATTER_BASE SeqNum=7753 (three lines each).
fact "max SeqNum, max \"Timeout(ms)\", count by run where label = nccl_timeout and run ~ '0[14]*'" \
"run,max SeqNum,max Timeout(ms),count
014_olora-pg-nccl-watchdog-timeout-broadcast-2ranks,1,600000,2
047_llamafactory7396-watchdog-with-viewer-line-numbers,1580,600000,2
048_basicsr737-rank-prefixed-watchdog-allreduce,808,600000,3
049_llamafactory6269-watchdog-reduce-scatter,7753,600000,3"

# 052 (a markdown "> " quote) tried to allocate 978.00 MiB; 056 (new message
# format) 3.39 GiB; 058 (2020 format) 8.52 GiB.
fact "max \"tried to allocate\" by run where label = cuda_oom" \
"run,max tried to allocate
052_ds3869-oom-sigkill-markdown-quoted,978
056_llamafactory7532-zero3-offload-48gpu-oom-new-format,3.39
058_ds237-2020-megatron-zero2-oom-old-format,8.52"

# 060 Root Cause table, 061 glog-style elastic line, 065 old ERROR: format: exitcode -9 (SIGKILL).
fact "min exitcode by run where label = signal" \
"run,min exitcode
060_cppo6-accelerate-childfailed-root-cause-sigkill,-9
061_robomamba10-torchrun-glog-style-elastic-failed,-9
065_colossalai3514-rich-continuation-and-elastic-sigterm,-9"

# NCCL world sizes from "comm ... rank R nranks N ... Init COMPLETE".
fact "max nranks by run where kind = nccl_init and not run ~ '079*'" \
"run,max nranks
000_seed-rccl-xtuner-24rank,24
020_ds7128-nccl-commsplit-init-complete,2
085_nccltests252-2host-init-complete-tuner,8
104_ds2931-2node-16rank-init-complete-ib-error-systemerror,16"

# 000 seed: the pdsh hosts gpu004 and gpu009; the memory reports come from gpu009.
fact "count Max_MA by host where run = '000_seed-deepspeed-zero3-cpuadam-2host'" \
"host,count Max_MA
gpu009,10"

# 014: a year-less glog watchdog line (E1218 ...) before the launcher's dated line
# of 2025-12-18 takes that year, not the file's mtime year.
fact "min time by run, label where run ~ '014*' and kind = failure" \
"run,label,min time
014_olora-pg-nccl-watchdog-timeout-broadcast-2ranks,launcher_exit,2025-12-18 20:27:23.533
014_olora-pg-nccl-watchdog-timeout-broadcast-2ranks,nccl_timeout,2025-12-18 20:27:21.426"

# Ranks present (rank_lines events): 014 has [rank0]: and [rank1]: prefixes, 6 lines
# each; 054 holds worker-5's [rank22]: lines only (12), although the job had 32 ranks.
fact "count, sum lines by rank where run ~ '014*' and kind = rank_lines" \
"rank,count,sum lines
0,1,6
1,1,6"
fact "sum lines by host, rank where run ~ '054*' and kind = rank_lines" \
"host,rank,sum lines
worker-5,22,12"
# 112: every line carries the launcher's "[155] " rank tag (host info-19, GPU 3).
fact "sum lines by host, rank where run ~ '112*' and kind = rank_lines" \
"host,rank,sum lines
crow-ib-new-nccl-256-info-19,155,10"
# 076 (icefall): "(rank/world)" after the header: 8 lines of rank 0, 7 of rank 1, 1 of
# rank 2. 115 (nccl-tests): its device table puts ranks 0-1 on H20-GPU-05, 2-3 on -06.
fact "sum lines by rank where run ~ '076*' and kind = rank_lines" \
"rank,sum lines
0,8
1,7
2,1"
fact "count by host, rank where run ~ '115*' and kind = rank_lines" \
"host,rank,count
H20-GPU-05,0,1
H20-GPU-05,1,1
H20-GPU-06,2,1
H20-GPU-06,3,1"
fact "count by rank, label where run ~ '047*' and kind = failure" \
"rank,label,count
0,nccl_timeout,1
4,nccl_timeout,1"

# Last step and loss, read off the files: 070's last loss dict ('loss': 0.0756, 13
# dicts), 119's last Megatron iteration 125 (lm loss 2.477393E+00), 011's last
# mmengine Iter(train) [140/...] (loss 0.0376), 072's last DeepSpeed step=19180.
fact "last loss, count by run where kind = hf_loss and run ~ '070*'" \
"run,last loss,count
070_modal82-hf-trainer-loss-dicts-grad-norm,0.0756,13"
fact "last iteration, last \"lm loss\" by run where kind = megatron_iter and run ~ '119*'" \
"run,last iteration,last lm loss
119_megatronllm11-megatron-iterations-122-125,125,2.477393"
fact "last iter, last loss by run where kind = mmengine_iter and run ~ '011*'" \
"run,last iter,last loss
011_xtuner-mmengine-llava-llama3-deepspeed-zero2,140,0.0376"
fact "last step by run where kind = ds_step and run ~ '072*'" \
"run,last step
072_dse381-1node-8gpu-llama30b-step-timer,19180"

# 022: a terminal hard-wrapped the watchdog line mid-OpType ("_ALLGATHER" / "_BASE"):
# one failure of rank 4, SeqNum 473096, ran for 1800004 ms, and the wrapped line
# after the FlightRecorder line is that line's. 023: ROCm's "Memory access fault by
# GPU node-4" is a cuda_error failure.
fact "count, max SeqNum, max \"ran for\" by rank where run ~ '022*' and kind = failure" \
"rank,count,max SeqNum,max ran for
4,1,473096,1800004"
fact "count by family where run ~ '022*'" \
"family,count
glog,5"
fact "count by label where run ~ '023*' and kind = failure" \
"label,count
cuda_error,1"

# Coverage: family line counts add up to the corpus's line count, and at least
# four fifths of the lines are recognized (86.7% when this test was last updated;
# 92.0% of the .log files' lines: MANIFEST.tsv and README.md are counted too).
run_dsq explain --stats "$DSQ_CORPUS"
lines=$(printf '%s\n' "$OUT" | head -n1 | grep -oE '^[0-9]+ files, [0-9]+ lines' | grep -oE '[0-9]+ lines' | cut -d' ' -f1)
recog=$(printf '%s\n' "$OUT" | head -n1 | grep -oE '[0-9]+ recognized' | cut -d' ' -f1)
total=$(query "$DB" "count by family" --csv | tail -n +2 | awk -F, '{s += $2} END {print s}')
expect_eq "count by family adds up to the line count" "$lines" "$total"
check "at least four fifths recognized ($recog of $lines)" test $((recog * 5)) -ge $((lines * 4))
e2e_finish
