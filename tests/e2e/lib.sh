# Shared helpers for the end-to-end tests (sourced, not run).
#
# Environment (set by tests/CMakeLists.txt; defaults let a test run by hand from
# the source tree after a build in build/):
#   DSQ         the dsq binary
#   DSQ_SRC     the source root
#   DSQ_CORPUS  the shared real-log corpus (may not exist)
#   DSQ_TMP     scratch directory of this test: wiped and recreated by e2e_init
#
# Conventions: a check that fails prints what differs and bumps FAILURES; the test
# goes on so one run shows every failure; e2e_finish exits 1 if anything failed.
# Exit 77 means "skipped" (ctest SKIP_RETURN_CODE).

set -u

E2E_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DSQ_SRC:=$(cd "$E2E_LIB_DIR/../.." && pwd)}"
: "${DSQ:=$DSQ_SRC/build/dsq}"
: "${DSQ_CORPUS:=$DSQ_SRC/../shared/corpus}"
: "${DSQ_TMP:=${TMPDIR:-/tmp}/dsq-e2e-$(basename "$0" .sh)}"
case "$DSQ" in /*) ;; *) DSQ="$PWD/$DSQ" ;; esac

SAMPLE="$DSQ_SRC/tests/data/archive"
FAILURES=0
CHECKS=0

# The answer the sample archive is built to give (tools/make-sample-archive.py).
# shellcheck disable=SC2034 # used by the tests that source this file
SAMPLE_MAX_TABLE='run            max Max_MA
bert-baseline      1.5 GB
gpt2-zero2        3.25 GB
llama7b-zero3    21.37 GB'
# shellcheck disable=SC2034
SAMPLE_MAX_CSV='run,max Max_MA
bert-baseline,1.5
gpt2-zero2,3.25
llama7b-zero3,21.37'

die() {
    echo "FATAL: $*" >&2
    exit 1
}

skip() {
    echo "skipped: $*"
    exit 77
}

e2e_init() {
    [ -x "$DSQ" ] || die "dsq binary not found or not executable: DSQ=$DSQ (build first)"
    [ -d "$SAMPLE" ] || die "sample archive missing: $SAMPLE"
    case "$DSQ_TMP" in
    "" | / | "$HOME" | "$DSQ_SRC") die "refusing to use DSQ_TMP=$DSQ_TMP as scratch" ;;
    esac
    rm -rf "$DSQ_TMP" || die "cannot clear $DSQ_TMP"
    mkdir -p "$DSQ_TMP" || die "cannot create $DSQ_TMP"
    DSQ_TMP=$(cd "$DSQ_TMP" && pwd)
    # a test must never touch the user's default index
    export DSQ_DB="$DSQ_TMP/no-default-db-used"
    export LC_ALL=C
    # a sanitizer build must not report through exit 1, which means "skipped"
    # here: make its reports look like the crashes they are (see run_dsq)
    export ASAN_OPTIONS="${ASAN_OPTIONS:-exitcode=199}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
}

# need_tool COMMAND DEBIAN_PACKAGE
need_tool() {
    command -v "$1" >/dev/null 2>&1 ||
        die "required tool '$1' not found: install the Debian package '$2' (apt-get install $2)"
}

# check NAME COMMAND...: passes when COMMAND succeeds.
check() {
    local name=$1
    shift
    if "$@"; then pass "$name"; else fail "$name"; fi
}

pass() {
    CHECKS=$((CHECKS + 1))
    echo "ok: $1"
}

fail() {
    CHECKS=$((CHECKS + 1))
    FAILURES=$((FAILURES + 1))
    echo "FAIL: $1"
}

# expect_eq NAME EXPECTED ACTUAL: exact text comparison, unified diff on failure.
expect_eq() {
    if [ "$2" == "$3" ]; then
        pass "$1"
    else
        fail "$1"
        diff -u --label expected --label actual <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed 's/^/    /'
    fi
}

# expect_code NAME EXPECTED_STATUS ACTUAL_STATUS
expect_code() {
    if [ "$2" == "$3" ]; then
        pass "$1 (exit $3)"
    else
        fail "$1: expected exit status $2, got $3"
        show_last
    fi
}

# expect_contains NAME NEEDLE HAYSTACK: fixed-string search.
expect_contains() {
    if grep -qF -- "$2" <<<"$3"; then
        pass "$1"
    else
        fail "$1: output does not contain: $2"
        printf '%s\n' "$3" | sed 's/^/    | /'
    fi
}

expect_not_contains() {
    if grep -qF -- "$2" <<<"$3"; then
        fail "$1: output unexpectedly contains: $2"
        printf '%s\n' "$3" | sed 's/^/    | /'
    else
        pass "$1"
    fi
}

# expect_problem NAME NEEDLE REASON: some stderr line of the last run_dsq contains
# NEEDLE (the file, member...) and says REASON (fixed strings; REASON is matched
# case-insensitively).
expect_problem() {
    local lines
    lines=$(printf '%s\n' "$ERR" | grep -F -- "$2")
    if [ -z "$lines" ]; then
        fail "$1: no message names $2"
        show_last
    elif ! grep -qiF -- "$3" <<<"$lines"; then
        fail "$1: the message about $2 does not say '$3'"
        show_last
    else
        pass "$1"
    fi
}

# run_dsq ARGS...: runs dsq, leaving OUT (stdout), ERR (stderr) and RC (status).
# A status above 125 (killed by a signal: crash, abort, sanitizer) is always a
# failure of its own.
run_dsq() {
    local o="$DSQ_TMP/.out" e="$DSQ_TMP/.err"
    "$DSQ" "$@" >"$o" 2>"$e"
    RC=$?
    OUT=$(cat "$o")
    ERR=$(cat "$e")
    LAST_CMD="dsq $*"
    if [ "$RC" -gt 125 ]; then
        fail "dsq crashed (exit $RC): $LAST_CMD"
        show_last
    fi
}

show_last() {
    echo "    command: ${LAST_CMD:-?}"
    [ -n "${OUT:-}" ] && printf '%s\n' "$OUT" | sed 's/^/    stdout| /'
    [ -n "${ERR:-}" ] && printf '%s\n' "$ERR" | sed 's/^/    stderr| /'
    return 0
}

# index_ok NAME DB ARGS...: `dsq --db DB index ARGS...` must exit 0 and stay quiet
# on stderr.
index_ok() {
    local name=$1 db=$2
    shift 2
    run_dsq --db "$db" index "$@"
    if [ "$RC" -eq 0 ]; then
        pass "$name: index exits 0"
    else
        fail "$name: index exited $RC, expected 0"
        show_last
    fi
    if [ -n "$ERR" ]; then
        fail "$name: index wrote to stderr"
        show_last
    fi
}

# dump_index DB [QUERY...]: everything the index answers, as text (all events in
# time order with their fields, runs, fields, per-file/host/rank and per-run/kind
# aggregates, then each extra QUERY), for comparing two indexes exactly.
dump_index() {
    local db=$1
    shift
    "$DSQ" --db "$db" --csv show --limit 0 2>/dev/null
    "$DSQ" --db "$db" --csv runs
    "$DSQ" --db "$db" --csv fields
    "$DSQ" --db "$db" --csv "count, max Max_MA, p95 Max_MA by file, host, rank"
    "$DSQ" --db "$db" --csv "count by run, kind"
    for q in "$@"; do "$DSQ" --db "$db" --csv "$q"; done
}

# write_two_rank_log PATH: a 2 MB DeepSpeed log of two ranks, 8,000 steps each, whose
# values vary enough that its series write chunk records at checkpoints (with
# DSQ_COMMIT_BYTES of about 100 kB), so DSQ_PART_PUTS makes those commit in parts.
write_two_rank_log() {
    python3 - "$1" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(8000):
        for r in range(2):
            f.write("[2024-07-20 %02d:%02d:%02d,%03d] [INFO] [logging.py:96:log_dist] [Rank %d] "
                    "time (ms) | fwd_microstep: %.2f | bwd_microstep: %.3f\n"
                    % (10 + i // 3600, i // 60 % 60, i % 60, r * 7, r,
                       100.0 + (i * 7919 + r * 11) % 10007 / 100.0, 0.5 * r + (i * 104729 % 8191) / 1000.0))
PY
}

# index_quiet DB ARGS...: `dsq --db DB -q index ARGS...`; sets STATUS, SUMMARY (the
# summary without its timing and index path) and PROBLEMS (stderr), to compare runs.
index_quiet() {
    local db=$1
    shift
    run_dsq --db "$db" -q index "$@"
    STATUS=$RC
    SUMMARY=$(printf '%s\n' "$OUT" | sed 's/ in [0-9.]* s (.*)$//; s/ into .*$//')
    PROBLEMS=$ERR
}

# expect_same_index NAME DB DUMP_FN REF_DUMP REF_NAME: the last index_quiet gave the
# exit status, summary and problems (same order) in REF_STATUS, REF_SUMMARY and
# REF_PROBLEMS, and `DUMP_FN DB` prints exactly the file REF_DUMP (the reference
# index's dump); REF_NAME names the reference in the messages ("-j 1").
expect_same_index() {
    local name=$1 db=$2 dump_fn=$3 ref=$4 ref_name=$5
    expect_eq "$name: exit status as $ref_name" "$REF_STATUS" "$STATUS"
    expect_eq "$name: summary as $ref_name" "$REF_SUMMARY" "$SUMMARY"
    expect_eq "$name: problems as $ref_name, in the same order" "$REF_PROBLEMS" "$PROBLEMS"
    "$dump_fn" "$db" >"$DSQ_TMP/dump.txt" 2>&1
    if cmp -s "$ref" "$DSQ_TMP/dump.txt"; then
        pass "$name: every event and answer as $ref_name"
    else
        fail "$name: the index answers differently from $ref_name"
        diff "$ref" "$DSQ_TMP/dump.txt" | head -10
    fi
}

# query DB QUERY [OPTIONS...]: prints stdout of the query; the status goes to RC.
query() {
    local db=$1 q=$2
    shift 2
    run_dsq --db "$db" "$@" "$q"
    if [ "$RC" -ne 0 ]; then
        fail "query '$q' on $db exited $RC"
        show_last
    fi
    printf '%s\n' "$OUT"
}

# summary_number WORD TEXT: the number before WORD in an index summary,
# e.g. summary_number lines "$OUT" for "..., 55 lines, 10 events ...".
summary_number() {
    printf '%s\n' "$2" | grep -oE "[0-9]+ $1\b" | head -n1 | cut -d' ' -f1
}

# count_lines FILE...: total lines as dsq counts them: a line ends at "\n", "\r\n"
# or a lone "\r", and a last line without a terminator counts too.
count_lines() {
    python3 - "$@" <<'EOF'
import sys
total = 0
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    # every "\n", every "\r", but a "\r\n" pair is one line end
    n = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    if data and data[-1:] not in (b"\n", b"\r"):
        n += 1
    total += n
print(total)
EOF
}

# Memory reports in plain logs: one per line carrying "Max_MA <number>".
count_reports() {
    cat "$@" | grep -cE 'Max_MA [0-9]' || true
}

# Expected `dsq "count Max_MA by run"` table for the sample archive, from grep.
sample_count_table() {
    local b g l
    b=$(count_reports "$SAMPLE/bert-baseline.log")
    g=$(count_reports "$SAMPLE"/gpt2-zero2/*)
    l=$(count_reports "$SAMPLE"/llama7b-zero3/*)
    printf '%-13s  %12s\n' run "count Max_MA" bert-baseline "$b" gpt2-zero2 "$g" llama7b-zero3 "$l"
}

e2e_finish() {
    echo "$CHECKS checks, $FAILURES failed"
    [ "$FAILURES" -eq 0 ] || exit 1
    exit 0
}
