#!/usr/bin/env bash
# `dsq index` asks for transparent huge pages for malloc's heap (src/hugepages.h): it
# grows the heap by 256 MiB of address space and advises it MADV_HUGEPAGE. The index
# it writes is the one written without (DSQ_HUGE_PAGES=0) and with the user's own
# tunables; `dsq --version` says what index does. Where strace exists and the
# kernel's THP mode is madvise: one advice of at least 128 MiB, none when turned off
# or left to glibc's tunable, none for a query, and dsq is never started again.
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
n=0
for envs in "DSQ_HUGE_PAGES=0" "GLIBC_TUNABLES=glibc.malloc.check=0" "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"; do
    db="$DSQ_TMP/db-$((++n))"
    export "${envs?}"
    index_quiet "$db" "$SAMPLE"
    unset "${envs%%=*}"
    expect_eq "$envs: same exit status" "$REF_STATUS" "$STATUS"
    expect_eq "$envs: same summary" "$REF_SUMMARY" "$SUMMARY"
    expect_eq "$envs: same index" "$ref" "$(dump_index "$db" "max Max_MA by run")"
done

mode=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true)
if command -v strace >/dev/null && [[ "$mode" == *"[madvise]"* ]]; then
    trace() { # ENV... -- ARGS...: the execve and madvise calls of one dsq run
        local envs=()
        while [[ "$1" != "--" ]]; do envs+=("$1"); shift; done
        shift
        env "${envs[@]}" strace -f -qq -e trace=execve,madvise -o "$DSQ_TMP/trace.txt" \
            "$DSQ" "$@" >/dev/null 2>&1
        cat "$DSQ_TMP/trace.txt"
    }
    big_advice() { # the MADV_HUGEPAGE calls of at least 128 MiB in a trace
        grep -E 'madvise\(0x[0-9a-f]+, [0-9]+, MADV_HUGEPAGE\)' |
            awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,$/ && $i + 0 >= 134217728) n++ } END { print n + 0 }'
    }
    run_dsq --version
    on=0 # (not in a sanitizer's build: its malloc is not glibc's)
    [[ "$OUT" == *"huge pages (index): on ("* ]] && on=1
    rm -rf "$DSQ_TMP/s-db"
    t=$(trace X=1 -- --db "$DSQ_TMP/s-db" -q index "$SAMPLE")
    expect_eq "the heap advised once (when --version says on)" "$on" "$(big_advice <<<"$t")"
    expect_eq "not started again" 1 "$(grep -c 'execve(' <<<"$t")"
    rm -rf "$DSQ_TMP/s-db"
    t=$(trace DSQ_HUGE_PAGES=0 -- --db "$DSQ_TMP/s-db" -q index "$SAMPLE")
    expect_eq "DSQ_HUGE_PAGES=0: not advised" 0 "$(big_advice <<<"$t")"
    rm -rf "$DSQ_TMP/s-db"
    t=$(trace GLIBC_TUNABLES=glibc.malloc.hugetlb=0 -- --db "$DSQ_TMP/s-db" -q index "$SAMPLE")
    expect_eq "the user's hugetlb: not advised" 0 "$(big_advice <<<"$t")"
    t=$(trace X=1 -- --db "$DSQ_TMP/ref" "max Max_MA by run")
    expect_eq "a query: not advised" 0 "$(big_advice <<<"$t")"
fi
e2e_finish
