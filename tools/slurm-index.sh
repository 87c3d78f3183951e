#!/usr/bin/env bash
# Index a log archive as N shards: a Slurm job array (one task per shard) and a
# dependent job that checks every shard finished. Or the same on one machine.
#
#   tools/slurm-index.sh [OPTIONS] ROOT N INDEXDIR PARTITION [-- SBATCH_ARGS...]
#   tools/slurm-index.sh --local [--jobs J] [OPTIONS] ROOT N INDEXDIR
#
# Task K of the array runs
#   dsq index -q --shard K/N --db INDEXDIR/shard-K ROOT
# (K = $SLURM_ARRAY_TASK_ID, N = $SLURM_ARRAY_TASK_COUNT): it indexes only the runs
# whose name hashes to K, so every run is in exactly one shard, and re-running it
# (the next night) only reads new or changed files. Query every shard at once with
#   dsq --db INDEXDIR "max Max_MA by run"
#
# The check job (sbatch --dependency=afterany:ARRAYJOB) reads the marker each task
# writes when dsq returns (INDEXDIR/.slurm/shard-K.rc: exit code, host, seconds),
# asks sacct for the state of tasks without one (when accounting is there), opens
# every shard, and prints one line per shard. It exits 0 when every shard finished
# with exit 0 or 1 (1: some input was unreadable or damaged, the rest is indexed),
# else 1. Its report is INDEXDIR/.slurm/check.out (and the job's output file).
#
# Options:
#   --dsq PATH     the dsq binary (default: $DSQ, else dsq on PATH). Must be reachable
#                  at the same path on the compute nodes, like ROOT and INDEXDIR.
#   --wait         (Slurm) wait for the check job and exit with its status
#   --local        no Slurm: run the N shards on this machine, J at a time (xargs -P)
#   --jobs J       (--local) shards at a time (default: nproc)
#   --time T       (Slurm) time limit per task (sbatch --time; default 12:00:00)
#   --max-running M  (Slurm) at most M tasks at once (--array=0-(N-1)%M): with N a few
#                  times M, Slurm hands shards to free slots as others finish, which
#                  evens out shards of unequal size
#   SBATCH_ARGS    passed to both sbatch calls (--account, --qos, --mem, ...)
#
# INDEXDIR/.slurm holds the task scripts, logs (shard-K.log) and markers. The shard
# count is recorded in INDEXDIR/.slurm/shards: a different N would move runs between
# shards (and a query over the directory would count them twice), so it is refused;
# index into a fresh directory instead.
#
# Internal entry points (used by the jobs themselves):
#   slurm-index.sh --task DSQ ROOT INDEXDIR N [K]   one shard (K from Slurm if absent)
#   slurm-index.sh --check DSQ INDEXDIR N [JOBID]   the check
set -uo pipefail

die() {
    echo "slurm-index: $*" >&2
    exit 2
}

# --- one shard -----------------------------------------------------------------
run_task() { # DSQ ROOT INDEXDIR N [K]
    local dsq=$1 root=$2 dir=$3 n=$4 k=${5:-${SLURM_ARRAY_TASK_ID:-}}
    [ -n "$k" ] || die "--task: no shard number (not in a Slurm array task?)"
    # SLURM_ARRAY_TASK_COUNT is the array's size; it must agree with the N recorded
    if [ -n "${SLURM_ARRAY_TASK_COUNT:-}" ] && [ "$SLURM_ARRAY_TASK_COUNT" != "$n" ]; then
        echo "slurm-index: array has $SLURM_ARRAY_TASK_COUNT tasks but the index has $n shards" >&2
        echo "2 $(hostname) 0" >"$dir/.slurm/shard-$k.rc"
        exit 2
    fi
    local t0 rc
    t0=$(date +%s)
    echo "shard $k/$n on $(hostname) at $(date -u '+%F %T UTC'): $dsq index --shard $k/$n --db $dir/shard-$k $root"
    "$dsq" index -q --shard "$k/$n" --db "$dir/shard-$k" "$root"
    rc=$?
    echo "$rc $(hostname) $(($(date +%s) - t0))" >"$dir/.slurm/shard-$k.rc.tmp" &&
        mv "$dir/.slurm/shard-$k.rc.tmp" "$dir/.slurm/shard-$k.rc"
    echo "shard $k/$n: dsq exited $rc"
    exit "$rc"
}

# --- the check -------------------------------------------------------------------
run_check() { # DSQ INDEXDIR N [JOBID]
    local dsq=$1 dir=$2 n=$3 job=${4:-} bad=0 warn=0 k rc host secs state line summary
    local use_sacct=0
    if [ -n "$job" ] && command -v sacct >/dev/null 2>&1 &&
        sacct -n -X -j "$job" -o JobID >/dev/null 2>&1; then
        use_sacct=1
    fi
    {
        echo "dsq shard check: $n shards in $dir${job:+ (array job $job)}, $(date -u '+%F %T UTC')"
        for ((k = 0; k < n; k++)); do
            if [ -f "$dir/.slurm/shard-$k.rc" ]; then
                read -r rc host secs <"$dir/.slurm/shard-$k.rc"
                summary=$(grep -m1 '^indexed ' "$dir/.slurm/shard-$k.log" 2>/dev/null || true)
                case "$rc" in
                0) state="ok" ;;
                1) state="ok, some input skipped or damaged (see .slurm/shard-$k.log)"; warn=$((warn + 1)) ;;
                *) state="FAILED: dsq exited $rc (see .slurm/shard-$k.log)"; bad=$((bad + 1)) ;;
                esac
                if [ "$rc" -le 1 ] && ! "$dsq" --db "$dir/shard-$k" --csv runs >/dev/null 2>&1; then
                    state="FAILED: the index does not open"
                    bad=$((bad + 1))
                fi
                line="shard $k: $state, on $host in ${secs}s${summary:+; $summary}"
            else
                state="no marker: the task did not finish (killed, timed out, never ran)"
                if [ "$use_sacct" = 1 ]; then
                    local s
                    s=$(sacct -n -X -P -j "${job}_$k" -o State,ExitCode 2>/dev/null | head -n1)
                    [ -n "$s" ] && state="$state; sacct: ${s/|/, exit }"
                fi
                line="shard $k: FAILED: $state"
                bad=$((bad + 1))
            fi
            echo "$line"
        done
        # a shard directory beyond N would be queried too (and hold other runs)
        for d in "$dir"/shard-*; do
            [ -d "$d" ] || continue
            k=${d##*/shard-}
            if ! [[ "$k" =~ ^[0-9]+$ ]] || [ "$k" -ge "$n" ]; then
                echo "stray: $d is not one of the $n shards; remove it or queries over $dir read it too"
                bad=$((bad + 1))
            fi
        done
        if [ "$bad" -eq 0 ]; then
            echo "all $n shards finished ($warn with skipped or damaged input); query them with: dsq --db $dir ..."
        else
            echo "$bad problem(s): re-run the failed shards (the others are incremental and quick)"
        fi
    } >"$dir/.slurm/check.out.tmp" # not a pipe: bad must be counted in this shell
    mv "$dir/.slurm/check.out.tmp" "$dir/.slurm/check.out"
    cat "$dir/.slurm/check.out"
    [ "$bad" -eq 0 ] || exit 1
    exit 0
}

# --- submit ------------------------------------------------------------------------
main() {
    local local_mode=0 jobs wait=0 dsq=${DSQ:-} tlimit=12:00:00 throttle=""
    jobs=$(nproc 2>/dev/null || echo 2)
    local pos=()
    while [ $# -gt 0 ]; do
        case "$1" in
        --task) shift; [ $# -ge 4 ] || die "--task DSQ ROOT INDEXDIR N [K]"; run_task "$@" ;;
        --check) shift; [ $# -ge 3 ] || die "--check DSQ INDEXDIR N [JOBID]"; run_check "$@" ;;
        --local) local_mode=1 ;;
        --wait) wait=1 ;;
        --jobs) [ $# -ge 2 ] || die "--jobs needs a number"; jobs=$2; shift ;;
        --dsq) [ $# -ge 2 ] || die "--dsq needs a path"; dsq=$2; shift ;;
        --time) [ $# -ge 2 ] || die "--time needs a value"; tlimit=$2; shift ;;
        --max-running)
            [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--max-running needs a whole number, 1 or more"
            throttle="%$2"; shift ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) pos+=("$1") ;;
        esac
        shift
    done
    local extra=("$@")
    local want=4
    [ "$local_mode" = 1 ] && want=3
    [ "${#pos[@]}" -eq "$want" ] ||
        die "usage: slurm-index.sh ROOT N INDEXDIR PARTITION [-- SBATCH_ARGS...]  or  slurm-index.sh --local ROOT N INDEXDIR (see --help)"
    local root=${pos[0]} n=${pos[1]} dir=${pos[2]} part=${pos[3]:-}
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "N must be a whole number of shards, 1 or more (got '$n')"
    [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a whole number, 1 or more (got '$jobs')"
    [ -e "$root" ] || die "no such archive: $root"
    [ -n "$dsq" ] || dsq=$(command -v dsq) || die "dsq not found: give --dsq PATH or put it on PATH"
    [ -x "$dsq" ] || die "not an executable: $dsq"
    dsq=$(realpath "$dsq") || die "cannot resolve $dsq"
    root=$(realpath "$root") || die "cannot resolve $root"
    case "$dsq$root$dir" in *"'"*) die "paths with a single quote are not supported" ;; esac
    mkdir -p "$dir/.slurm" || die "cannot create $dir/.slurm"
    dir=$(realpath "$dir")
    if [ -f "$dir/.slurm/shards" ]; then
        local had
        had=$(cat "$dir/.slurm/shards")
        [ "$had" = "$n" ] || die "$dir holds $had shards, not $n: another N moves runs between shards; use a fresh directory"
    fi
    echo "$n" >"$dir/.slurm/shards"
    local self="$dir/.slurm/slurm-index.sh"
    if [ "$(realpath "$0")" != "$self" ]; then
        { cp "$0" "$self.tmp" && mv "$self.tmp" "$self"; } || die "cannot copy the script into $dir/.slurm"
    fi
    rm -f "$dir"/.slurm/shard-*.rc "$dir/.slurm/check.out"

    if [ "$local_mode" = 1 ]; then
        unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_COUNT # a --local run inside a job
        echo "indexing $root as $n shards into $dir, $jobs at a time"
        # shellcheck disable=SC2016 # expanded by the sh -c, from its arguments
        seq 0 $((n - 1)) | xargs -P "$jobs" -I{} sh -c \
            'bash "$1" --task "$2" "$3" "$4" "$5" {} >"$4/.slurm/shard-{}.log" 2>&1' \
            _ "$self" "$dsq" "$root" "$dir" "$n"
        bash "$self" --check "$dsq" "$dir" "$n"
        exit $?
    fi

    command -v sbatch >/dev/null 2>&1 || die "sbatch not found: is this a Slurm login node? (or use --local)"
    [ -n "$part" ] || die "give a partition"
    local array check
    array=$(sbatch --parsable --array="0-$((n - 1))$throttle" --partition="$part" --job-name=dsq-index \
        --time="$tlimit" --output="$dir/.slurm/shard-%a.log" "${extra[@]}" \
        --wrap="bash '$self' --task '$dsq' '$root' '$dir' $n") ||
        die "sbatch of the array job failed"
    array=${array%%;*}
    echo "submitted array job $array: $n tasks, logs in $dir/.slurm/shard-K.log"
    local waitopt=()
    [ "$wait" = 1 ] && waitopt=(--wait)
    check=$(sbatch --parsable "${waitopt[@]}" --dependency="afterany:$array" --kill-on-invalid-dep=yes \
        --partition="$part" --job-name=dsq-index-check --time=00:30:00 \
        --output="$dir/.slurm/check-%j.log" "${extra[@]}" \
        --wrap="bash '$self' --check '$dsq' '$dir' $n $array")
    local rc=$?
    check=${check%%;*}
    if [ "$wait" = 1 ]; then
        cat "$dir/.slurm/check.out" 2>/dev/null || echo "slurm-index: the check job left no report" >&2
        exit "$rc"
    fi
    [ "$rc" -eq 0 ] || die "sbatch of the check job failed (the array job $array is queued)"
    echo "submitted check job $check (after the array): report in $dir/.slurm/check.out"
}

main "$@"
