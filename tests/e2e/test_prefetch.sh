#!/usr/bin/env bash
# Prefetching (src/indexer.c): with worker threads, a file a worker had to read from
# the disk has the files after it asked of the kernel ahead of the workers
# (posix_fadvise WILLNEED); files in memory never are. 240 small files (the sample
# archive's, copied into 48 runs) are dropped from the page cache (dd iflag=nocache):
# indexed with -j 2 under strace, some files are prefetched, and the index is the
# one written from memory; indexed again from memory, none is. -j 1 has no
# prefetcher. Where the file system keeps files in memory (tmpfs: nothing to drop),
# only the index is compared.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool dd coreutils

A="$DSQ_TMP/runs"
for r in $(seq 1 48); do
    mkdir -p "$A/run-$r"
    i=0
    while IFS= read -r f; do
        cp "$f" "$A/run-$r/file$((i++)).log"
    done < <(find "$SAMPLE" -type f | sort)
done
sync
drop() { # drops every file of the archive from the page cache
    find "$A" -type f -exec dd if={} iflag=nocache count=0 status=none \;
}
resident() { # bytes of the archive's files in the page cache (fincore), or "?"
    command -v fincore >/dev/null || { echo "?"; return; }
    find "$A" -type f -exec fincore -n -b -o RES {} + | awk '{ s += $1 } END { print s + 0 }'
}
dump() { dump_index "$1" "max Max_MA by run" "count by run"; }

index_quiet "$DSQ_TMP/warm" -j 2 "$A"
REF_STATUS=$STATUS REF_SUMMARY=$SUMMARY
expect_eq "indexed from memory" 0 "$STATUS"
ref=$(dump "$DSQ_TMP/warm")

drop
cold=$(resident)
index_quiet "$DSQ_TMP/cold" -j 2 "$A"
expect_eq "read from the disk: same exit status" "$REF_STATUS" "$STATUS"
expect_eq "read from the disk: same summary" "$REF_SUMMARY" "$SUMMARY"
expect_eq "read from the disk: same index" "$ref" "$(dump "$DSQ_TMP/cold")"

if command -v strace >/dev/null && [ "$cold" = 0 ]; then
    advised() { # ARGS...: the WILLNEED advices of one dsq index run
        rm -rf "$DSQ_TMP/s-db"
        strace -f -qq -e trace=fadvise64 -o "$DSQ_TMP/trace.txt" \
            "$DSQ" --db "$DSQ_TMP/s-db" -q index "$@" "$A" >/dev/null 2>&1
        grep -c "POSIX_FADV_WILLNEED" "$DSQ_TMP/trace.txt"
    }
    drop
    n=$(advised -j 2)
    for _ in 1 2 3; do # (a late read-ahead may bring a file back: drop them again)
        [ "$n" -gt 0 ] && break
        drop
        n=$(advised -j 2)
    done
    if [ "$n" -gt 0 ]; then
        pass "files dropped from memory: prefetched ($n)"
    else
        fail "files dropped from memory: none prefetched"
    fi
    expect_eq "files in memory: none prefetched" 0 "$(advised -j 2)"
    drop
    expect_eq "-j 1: no prefetcher" 0 "$(advised -j 1)"
else
    echo "(no strace, or the files stay in memory here: prefetching not traced)"
fi
e2e_finish
