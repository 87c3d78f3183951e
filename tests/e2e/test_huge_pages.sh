#!/usr/bin/env bash
# `dsq index` asks glibc for transparent huge pages (src/hugepages.h): it starts itself
# again, once, with glibc.malloc.hugetlb=1 appended to GLIBC_TUNABLES. The index it
# writes is the one written without (DSQ_HUGE_PAGES=0) and with the user's own
# tunables kept; `dsq --version` says what index does. Where strace exists and the
# kernel's THP mode is madvise: exactly one restart, with the user's tunables
# followed by the new one, and none when turned off or named by the user.
source "$(dirname "$0")/lib.sh"
e2e_init

run_dsq --version
expect_contains "--version says what index does with huge pages" "huge pages (index): " "$OUT"
DSQ_HUGE_PAGES=0 run_dsq --version
expect_contains "DSQ_HUGE_PAGES=0 turns them off" "huge pages (index): off (DSQ_HUGE_PAGES=0)" "$OUT"
GLIBC_TUNABLES=glibc.malloc.hugetlb=0 run_dsq --version
expect_contains "a tunable of the user's own is kept" "huge pages (index): as GLIBC_TUNABLES says" "$OUT"

index_quiet "$DSQ_TMP/ref" "$SAMPLE"
REF_STATUS=$STATUS REF_SUMMARY=$SUMMARY
expect_eq "sample archive indexed" 0 "$STATUS"
ref=$(dump_index "$DSQ_TMP/ref" "max Max_MA by run")
expect_contains "the sample's answer" "$SAMPLE_MAX_CSV" "$ref"
for envs in "DSQ_HUGE_PAGES=0" "GLIBC_TUNABLES=glibc.malloc.check=0" "DSQ_HUGE_PAGES_RESTARTED=1"; do
    db="$DSQ_TMP/db-${envs%%=*}"
    export "${envs?}"
    index_quiet "$db" "$SAMPLE"
    unset "${envs%%=*}"
    expect_eq "$envs: same exit status" "$REF_STATUS" "$STATUS"
    expect_eq "$envs: same summary" "$REF_SUMMARY" "$SUMMARY"
    expect_eq "$envs: same index" "$ref" "$(dump_index "$db" "max Max_MA by run")"
done

mode=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true)
self=$(readlink -f "$DSQ") # what dsq starts again: its own path, so ps names it dsq
if command -v strace >/dev/null && [[ "$mode" == *"[madvise]"* ]]; then
    restarts() { # ENV... : the execve calls of one dsq index, with their environments
        rm -rf "$DSQ_TMP/s-db"
        env "$@" strace -f -qq -v -s 4096 -e trace=execve -o "$DSQ_TMP/exec.txt" \
            "$DSQ" --db "$DSQ_TMP/s-db" -q index "$SAMPLE" >/dev/null 2>&1
        grep -c "execve(\"\($DSQ\|$self\)\"" "$DSQ_TMP/exec.txt"
    }
    # (the first execve is strace's own start of dsq)
    expect_eq "started again once, as itself" 2 "$(restarts GLIBC_TUNABLES=glibc.malloc.check=0)"
    expect_contains "with the user's tunables and the new one" \
        '"GLIBC_TUNABLES=glibc.malloc.check=0:glibc.malloc.hugetlb=1"' \
        "$(grep "execve(\"$self\"" "$DSQ_TMP/exec.txt" | tail -1)"
    expect_eq "DSQ_HUGE_PAGES=0: not started again" 1 "$(restarts DSQ_HUGE_PAGES=0)"
    expect_eq "the user's hugetlb: not started again" 1 "$(restarts GLIBC_TUNABLES=glibc.malloc.hugetlb=0)"
    expect_eq "queries are not started again" 1 "$(
        strace -f -qq -e trace=execve -o "$DSQ_TMP/q.txt" "$DSQ" --db "$DSQ_TMP/ref" "max Max_MA by run" >/dev/null 2>&1
        grep -c "execve(\"\($DSQ\|$self\)\"" "$DSQ_TMP/q.txt")"
fi
e2e_finish
