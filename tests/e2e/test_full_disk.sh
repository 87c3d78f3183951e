#!/usr/bin/env bash
# A full disk: `dsq index` stops with a message saying the disk is full, the index
# keeps what was committed before (it opens and answers, every run in it complete),
# and once there is space the same command goes on and ends with exactly the index
# an uninterrupted run gives. `dsq compact` without room for its copy changes
# nothing. Needs root to mount a small tmpfs; skipped otherwise.
source "$(dirname "$0")/lib.sh"
umount "$DSQ_TMP/fs" 2>/dev/null # left mounted by a run that was killed
e2e_init
need_tool python3 python3
[ "$(id -u)" -eq 0 ] || skip "needs root to mount a small filesystem"
FS="$DSQ_TMP/fs"
mkdir -p "$FS"
mount -t tmpfs -o size=1m tmpfs "$FS" 2>/dev/null || skip "cannot mount a tmpfs here"
trap 'umount "$FS" 2>/dev/null' EXIT

ARCH="$DSQ_TMP/archive"
for i in 1 2 3 4 5 6; do
    mkdir -p "$ARCH/run$i"
    python3 "$DSQ_SRC/tools/gen-log.py" 3 "$ARCH/run$i/gpu001.log" --hosts 2 --seed "$i" 2>/dev/null
done

# Small files are committed in groups (up to 256 files or DSQ_COMMIT_BYTES of text):
# a limit of one and a half of these 3 MB files makes a commit of every two files,
# none of them split, so some runs are committed before the small disk fills.
export DSQ_COMMIT_BYTES=4500000

dump() { dump_index "$1"; } # DB: everything the index answers, as text
CLEAN="$DSQ_TMP/clean"
index_ok "clean index on a disk with room" "$CLEAN" --no-compact "$ARCH"
dump "$CLEAN" >"$DSQ_TMP/clean.txt"

# The small disk holds half of the clean index (whatever the index format makes of
# these logs), so the disk fills after some commits and before the last.
small_kb=$(($(stat -c %s "$CLEAN/data.mdb") / 2048))
for jobs in 1 2; do
    umount "$FS" 2>/dev/null
    mount -t tmpfs -o size="${small_kb}k" tmpfs "$FS" || { fail "remount the small filesystem"; break; }
    DB="$FS/db"
    run_dsq --db "$DB" index -j "$jobs" --no-compact "$ARCH"
    expect_code "-j $jobs: index onto a full disk" 3 "$RC"
    expect_contains "-j $jobs: it says the disk is full" "is full" "$ERR"
    expect_contains "-j $jobs: it names the index" "$DB" "$ERR"
    run_dsq --db "$DB" --csv "count by run"
    expect_code "-j $jobs: the index left behind answers" 0 "$RC"
    partial=0 present=0
    while IFS=, read -r run count; do
        [ "$run" = run ] || [ -z "$run" ] && continue
        present=$((present + 1))
        want=$("$DSQ" --db "$CLEAN" --csv "count where run = $run" | tail -1)
        [ "$count" = "$want" ] || partial=$((partial + 1))
    done <<<"$OUT"
    check "-j $jobs: some runs were committed before the disk filled ($present)" \
        test "$present" -gt 0
    check "-j $jobs: not all runs were committed ($present)" test "$present" -lt 6
    expect_eq "-j $jobs: every run in the index is complete" 0 "$partial"

    mount -o remount,size=64m "$FS"
    index_ok "-j $jobs: the same command once there is room" "$DB" -j "$jobs" --no-compact "$ARCH"
    if dump "$DB" | cmp -s - "$DSQ_TMP/clean.txt"; then
        pass "-j $jobs: it ends with the index an uninterrupted run gives"
    else
        fail "-j $jobs: the index after the full disk differs from a clean one"
        dump "$DB" | diff - "$DSQ_TMP/clean.txt" | head -5
    fi
done

# No room for a compacted copy: compaction fails and changes nothing.
size=$(stat -c %s "$DB/data.mdb")
free_kb=$(df -k --output=avail "$FS" | tail -1)
fill_kb=$((free_kb - size / 2048))
[ "$fill_kb" -gt 0 ] && dd if=/dev/zero of="$FS/filler" bs=1k count="$fill_kb" 2>/dev/null
run_dsq --db "$DB" compact
expect_code "compaction without room for its copy" 3 "$RC"
expect_contains "it says the index is unchanged" "unchanged" "$ERR"
check "no temporary copy is left" test ! -e "$DB/compact.tmp"
if dump "$DB" | cmp -s - "$DSQ_TMP/clean.txt"; then
    pass "the index answers as before"
else
    fail "a failed compaction changed the answers"
fi
rm -f "$FS/filler"

# The disk fills while a big file's checkpoint is committed in parts (store.h,
# dsq_store_parts; here a part after every chunk record, and a checkpoint every
# 100 kB): the index left behind answers every event it shows without calling
# anything damaged, and the same command once there is room ends with the clean index.
LONG="$DSQ_TMP/long"
mkdir -p "$LONG"
write_two_rank_log "$LONG/gpu001.log"
export DSQ_COMMIT_BYTES=100000 DSQ_PART_PUTS=1
index_ok "the long log, clean" "$DSQ_TMP/long-clean" --no-compact "$LONG"
dump "$DSQ_TMP/long-clean" >"$DSQ_TMP/long-clean.txt"
umount "$FS" 2>/dev/null
mount -t tmpfs -o size=$(($(stat -c %s "$DSQ_TMP/long-clean/data.mdb") * 2 / 3 / 1024))k tmpfs "$FS" ||
    fail "remount the small filesystem"
DB="$FS/long"
run_dsq --db "$DB" index --no-compact "$LONG"
expect_code "parts: index onto a full disk" 3 "$RC"
expect_contains "parts: it says the disk is full" "is full" "$ERR"
run_dsq --db "$DB" --csv show --limit 0
expect_code "parts: the index left behind shows its events" 0 "$RC"
expect_eq "parts: and calls nothing damaged" "" "$ERR"
check "parts: some events were committed ($(echo "$OUT" | wc -l) lines)" test "$(echo "$OUT" | wc -l)" -gt 100
"$DSQ" --db "$DSQ_TMP/long-clean" --csv show --limit 0 | sort >"$DSQ_TMP/long-clean-show.txt"
expect_eq "parts: each event shown, with its fields, as the clean index shows it" "" \
    "$(echo "$OUT" | sort | comm -23 - "$DSQ_TMP/long-clean-show.txt" | head -3)"
mount -o remount,size=64m "$FS"
index_ok "parts: the same command once there is room" "$DB" --no-compact "$LONG"
if dump "$DB" | cmp -s - "$DSQ_TMP/long-clean.txt"; then
    pass "parts: it ends with the index an uninterrupted run gives"
else
    fail "parts: the index after the full disk differs from a clean one"
    dump "$DB" | diff - "$DSQ_TMP/long-clean.txt" | head -5
fi
unset DSQ_COMMIT_BYTES DSQ_PART_PUTS

e2e_finish
