#!/usr/bin/env bash
# A real Slurm: starts a one-node cluster on this machine (munged, slurmctld and
# slurmd on loopback, configs in a temp dir, stopped at the end even on failure),
# submits tools/slurm-index.sh's job array over a generated archive, and checks
# that queries over the shard indexes equal the same queries over one index built
# in one process; then a second night (incremental), a failing shard and a killed
# one (the check job reports both), and a changed shard count (refused).
#
# Slow (about a minute) and it installs packages: it runs only with
# DSQ_SLOW_TESTS=1 (ctest -L slow), installs Debian's slurm-wlm and munge when they
# are missing (as root only), and skips with the reason otherwise.
source "$(dirname "$0")/lib.sh"
e2e_init

[ "${DSQ_SLOW_TESTS:-0}" = 1 ] ||
    skip "slow test (a one-node Slurm cluster): run it with DSQ_SLOW_TESTS=1 ctest -L slow"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
    ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    [ "$(id -u)" = 0 ] ||
        skip "slurm-wlm and munge are not installed and installing them needs root (apt-get install slurm-wlm munge)"
    echo "installing slurm-wlm and munge (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge >"$DSQ_TMP/apt.log" 2>&1 ||
        { tail -n 20 "$DSQ_TMP/apt.log"; skip "apt-get install slurm-wlm munge failed (log above)"; }
fi
[ "$(id -u)" = 0 ] || skip "a Slurm cluster on this machine needs root (slurmd runs jobs as their user)"
need_tool python3 python3

# --- the cluster ---------------------------------------------------------------
# Its own directory under /tmp (short enough for the munge socket path), its own
# ports, its own munge key and socket: nothing of a system Slurm or munge is used.
C=$(mktemp -d /tmp/dsq-slurm.XXXXXX) || die "mktemp"
chmod 700 "$C"
mkdir -p "$C/munge" "$C/state" "$C/spool" "$C/log"
chmod 700 "$C/munge"
PIDS=()
SUBMIT="" # a running tools/slurm-index.sh --wait (under timeout)
stop_cluster() {
    if [ -n "$SUBMIT" ]; then # it and its sbatch --wait, which would outlive the cluster
        pkill -TERM -P "$(pgrep -P "$SUBMIT" | head -n1)" 2>/dev/null || true
        kill "$SUBMIT" 2>/dev/null || true
    fi
    if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
        scancel --quiet --user="$(id -un)" >/dev/null 2>&1 || true
        sleep 1
    fi
    local p
    for p in "${PIDS[@]}"; do # slurmd, slurmctld, munged: the daemons this test started
        kill "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]}"; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.5
        done
        kill -9 "$p" 2>/dev/null || true
    done
    rm -rf "$C"
}
trap stop_cluster EXIT
trap 'exit 1' INT TERM

show_logs() {
    local f
    for f in "$C"/log/*; do
        echo "    == $f"
        tail -n 15 "$f" | sed 's/^/    | /'
    done
}

read -r P1 P2 < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
H=$(hostname -s)
dd if=/dev/urandom of="$C/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$C/munge/munge.key"
cat >"$C/slurm.conf" <<EOF
ClusterName=dsqtest
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$P1
SlurmdPort=$P2
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$C/munge/sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd.pid
SlurmctldLogFile=$C/log/slurmctld.log
SlurmdLogFile=$C/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MailProg=/bin/true
NodeName=$H NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=dsqtest Nodes=$H Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$C/slurm.conf"

munged -F --force --socket="$C/munge/sock" --key-file="$C/munge/munge.key" \
    --pid-file="$C/munge/munged.pid" --seed-file="$C/munge/seed" \
    --log-file="$C/log/munged.log" >"$C/log/munged.out" 2>&1 &
PIDS=($! "${PIDS[@]}")
for _ in $(seq 20); do [ -S "$C/munge/sock" ] && break; sleep 0.25; done
check "munged answers on its socket" sh -c "munge -S '$C/munge/sock' -n | unmunge -S '$C/munge/sock' >/dev/null"
slurmctld -D -f "$SLURM_CONF" >"$C/log/slurmctld.out" 2>&1 &
PIDS=($! "${PIDS[@]}")
slurmd -D -f "$SLURM_CONF" >"$C/log/slurmd.out" 2>&1 &
PIDS=($! "${PIDS[@]}")
up=0
for _ in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qx idle; then up=1; break; fi
    sleep 0.5
done
if [ "$up" = 1 ]; then
    pass "one-node cluster up: node $H idle in partition dsqtest"
else
    fail "the cluster did not come up (sinfo: $(sinfo -h 2>&1 | head -n1))"
    show_logs
    e2e_finish
fi

# --- the archive: copies of the sample under 30 names, and two generated runs ------
ARCH="$DSQ_TMP/archive"
mkdir -p "$ARCH"
for i in $(seq -w 0 9); do
    cp -r "$SAMPLE/llama7b-zero3" "$ARCH/llama-$i"
    cp -r "$SAMPLE/gpt2-zero2" "$ARCH/gpt2-$i"
    cp "$SAMPLE/bert-baseline.log" "$ARCH/bert-$i.log"
done
for s in 1 2; do
    mkdir -p "$ARCH/synthetic-$s"
    python3 "$DSQ_SRC/tools/gen-log.py" 2 "$ARCH/synthetic-$s/train.log" --seed "$s" 2>/dev/null ||
        die "gen-log.py failed"
done
ALL="$DSQ_TMP/all"
index_ok "index the whole archive in one process" "$ALL" "$ARCH"

# --- night 1: the array job and its check ------------------------------------------
N=4
IDX="$DSQ_TMP/shards"
SCRIPT="$DSQ_SRC/tools/slurm-index.sh"
# submit ARGS...: tools/slurm-index.sh --wait ARGS, output in submit.out. In the
# background so that a TERM to this test stops the cluster right away.
submit() {
    timeout 300 bash "$SCRIPT" --wait "$@" >"$DSQ_TMP/submit.out" 2>&1 &
    SUBMIT=$!
    wait $SUBMIT
    local rc=$?
    SUBMIT=""
    return $rc
}
submit --dsq "$DSQ" "$ARCH" "$N" "$IDX" dsqtest
rc=$?
OUT=$(cat "$DSQ_TMP/submit.out")
# shellcheck disable=SC2034 # read by show_last (lib.sh)
LAST_CMD="slurm-index.sh" # shown by show_last
expect_code "slurm-index.sh --wait: the array and the check job" 0 "$rc"
[ "$rc" = 0 ] || { printf '%s\n' "$OUT" | sed 's/^/    | /'; show_logs; }
expect_contains "submitted an array job" "submitted array job" "$OUT"
expect_contains "the check job reports every shard" "all $N shards finished" "$OUT"
for ((k = 0; k < N; k++)); do
    expect_contains "shard $k ran as Slurm task $k/$N on $H" "shard $k/$N on $H" \
        "$(cat "$IDX/.slurm/shard-$k.log" 2>/dev/null)"
done
check "the check job wrote its own output" ls "$IDX"/.slurm/check-*.log

same() { # NAME ARGS...: shards and the one-process index print the same
    local name=$1
    shift
    run_dsq --db "$ALL" --csv "$@"
    local want=$OUT
    run_dsq --db "$IDX" --csv "$@"
    expect_code "$name: over the shards" 0 "$RC"
    expect_eq "$name: the Slurm shards equal the one-process index" "$want" "$OUT"
}
all_same() {
    same "runs" runs
    same "fields" fields
    same "max by run" "max Max_MA by run"
    same "aggregates" "count, min MA, max Max_MA, sum CA, avg Max_CA, first MA, last MA by run"
    same "percentiles" "p50 Max_MA, p90 Max_MA, p99 Max_MA"
    same "throughput percentiles by host" "p50 CurrSamplesPerSec, p95 CurrSamplesPerSec by host"
    same "count by run, kind" "count by run, kind"
    same "every" "avg Max_MA every 1h"
    same "show" show "kind = memory and run ~ 'llama*'" --limit 0
}
all_same

# --- night 2: one run added, the rest unchanged --------------------------------------------
cp "$SAMPLE/bert-baseline.log" "$ARCH/bert-new.log"
index_ok "one process: the new run" "$ALL" "$ARCH"
submit --max-running 2 --dsq "$DSQ" "$ARCH" "$N" "$IDX" dsqtest
expect_code "second night (at most 2 tasks at once)" 0 "$?"
indexed=$(cat "$IDX"/.slurm/shard-*.log | sed -n 's/^indexed \([0-9]*\) files.*/\1/p' | awk '{s += $1} END {print s + 0}')
expect_eq "second night: only the new file is read" 1 "$indexed"
all_same

# --- a changed shard count is refused ----------------------------------------------------
bash "$SCRIPT" --dsq "$DSQ" "$ARCH" 3 "$IDX" dsqtest >"$DSQ_TMP/submit.out" 2>&1
expect_code "another N for the same directory" 2 "$?"
expect_contains "another N: says why" "holds $N shards, not 3" "$(cat "$DSQ_TMP/submit.out")"

# --- a failing shard and a killed one: the check job says so ---------------------------
FAKE="$DSQ_TMP/fake-dsq"
cat >"$FAKE" <<EOF
#!/bin/sh
# dsq, except that shard 1 fails (index unusable) and shard 2's task is killed
case " \$* " in
*" --shard 1/"*) echo "dsq: cannot open index (simulated)" >&2; exit 3 ;;
*" --shard 2/"*) kill -9 \$PPID; exit 9 ;;
esac
exec "$DSQ" "\$@"
EOF
chmod +x "$FAKE"
submit --dsq "$FAKE" "$ARCH" "$N" "$DSQ_TMP/bad" dsqtest
rc=$?
OUT=$(cat "$DSQ_TMP/submit.out")
# shellcheck disable=SC2034
LAST_CMD="slurm-index.sh" # shown by show_last
expect_code "a failed shard fails the check job" 1 "$rc"
expect_contains "the failed shard: its exit code" "shard 1: FAILED: dsq exited 3" "$OUT"
expect_contains "the killed shard: no marker" "shard 2: FAILED: no marker" "$OUT"
expect_contains "the others are fine" "shard 0: ok" "$OUT"
expect_contains "the count of problems" "2 problem(s)" "$OUT"

e2e_finish
