#!/usr/bin/env bash
# Paths: a file is known by its resolved absolute path, however it was reached
# (a symbolic link to the archive, a symbolic link to the file, a relative path;
# a hard link is known by its device and inode too),
# so a re-run through another route finds every file unchanged and the index
# holds each file once; the index directory inside the walked tree is never read.
source "$(dirname "$0")/lib.sh"
e2e_init

A="$DSQ_TMP/archive"
cp -r "$SAMPLE" "$A"
NFILES=$(find "$A" -type f | wc -l)
# a file linked into a run from outside the archive (counted once, as its target)
mkdir -p "$DSQ_TMP/elsewhere"
cp "$SAMPLE/bert-baseline.log" "$DSQ_TMP/elsewhere/extra.log"
mkdir -p "$A/linked-run"
ln -s "$DSQ_TMP/elsewhere/extra.log" "$A/linked-run/extra.log"
NFILES=$((NFILES + 1))
ln -s "$A" "$DSQ_TMP/via-link"

DB="$A/.dsq-index" # inside the walked tree: must be skipped
index_ok "first run through a symbolic link to the archive" "$DB" "$DSQ_TMP/via-link"
expect_contains "every file indexed" "indexed $NFILES files" "$ERR$OUT"
BEFORE=$(dump_index "$DB")

run_dsq --db "$DB" index "$A"
expect_code "re-run through the real path" 0 "$RC"
expect_contains "re-run through the real path: all unchanged" "skipped $NFILES unchanged files" "$ERR$OUT"
(cd "$DSQ_TMP" && run_dsq --db "$DB" index "archive/")
expect_contains "re-run through a relative path with a slash: all unchanged" \
    "skipped $NFILES unchanged files" "$ERR$OUT"
run_dsq --db "$DB" -j 2 index "$DSQ_TMP/via-link/"
expect_contains "re-run with -j 2: all unchanged" "skipped $NFILES unchanged files" "$ERR$OUT"
run_dsq --db "$DB" index "$A/linked-run/extra.log" --run linked-run
expect_contains "the linked file named directly: unchanged" "skipped 1 unchanged file" "$ERR$OUT"
expect_eq "the index is the same after the re-runs" "$BEFORE" "$(dump_index "$DB")"

# the linked file changes: found through the link, indexed again, still once
printf '[2024-07-20 21:40:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=99, skipped=0, lr=[1e-05], mom=[(0.9, 0.999)]\n' \
    >>"$DSQ_TMP/elsewhere/extra.log"
run_dsq --db "$DB" index "$A"
expect_contains "a changed link target is indexed again" "indexed 1 file" "$ERR$OUT"
expect_eq "the linked run has its file once" "1" \
    "$("$DSQ" --db "$DB" --csv runs | awk -F, -v r=linked-run 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "files") c = i } $1 == r { print $c }')"

# One file under several names in one walk: links to it inside the walked tree
# (next to it, from a run walked before it, from one after) and two links to one
# file outside it. Each file is indexed once, under its own name and run (the
# outside one under its first link's), and the summary counts the other names as
# links, not as unchanged files (the index is fresh); -j 1 and -j 2 alike.
L="$DSQ_TMP/links"
mkdir -p "$L/run0" "$L/run1" "$L/run2"
cp "$SAMPLE/bert-baseline.log" "$L/run1/a.log"
ln -s a.log "$L/run1/latest.log"
ln -s ../run1/a.log "$L/run0/first.log"
ln -s "$L/run1/a.log" "$L/run2/a.log"
ln -s "$DSQ_TMP/elsewhere/extra.log" "$L/run1/extra.log"
ln -s "$DSQ_TMP/elsewhere/extra.log" "$L/run2/extra.log"
# once_each WHAT DIR LINKS FILES: DIR, indexed with -j 1 and with -j 2 (into
# $DSQ_TMP/db-WHAT-J), holds each of its 2 files once (FILES: "file,run" lines), the
# other LINKS names counted as links; a re-run finds the files unchanged, the links
# still links
once_each() {
    local what=$1 dir=$2 links=$3 files=$4 j db
    for j in 1 2; do
        db="$DSQ_TMP/db-$what-$j"
        index_ok "$what -j $j" "$db" -j "$j" "$dir"
        expect_contains "$what -j $j: each file indexed once" "indexed 2 files" "$OUT"
        expect_contains "$what -j $j: the other names counted as links" \
            "skipped $links links to files indexed under another name" "$OUT"
        expect_not_contains "$what -j $j: a fresh index has nothing unchanged" "unchanged" "$OUT"
        expect_eq "$what -j $j: each file in its own run" "$files" \
            "$(query "$db" "count Max_MA by file, run" --csv | tail -n +2 | cut -d, -f1,2 | sort)"
        index_ok "$what -j $j: re-run" "$db" -j "$j" "$dir"
        expect_contains "$what -j $j: re-run: the files unchanged" "skipped 2 unchanged files" "$OUT"
        expect_contains "$what -j $j: re-run: the links still links" \
            "skipped $links links to files indexed under another name" "$OUT"
        expect_contains "$what -j $j: re-run: nothing indexed again" "indexed 0 files" "$OUT"
    done
}
once_each links "$L" 4 "$DSQ_TMP/elsewhere/extra.log,run1
$L/run1/a.log,run1"

# Hard links: one file under several names in one walk (next to it, in a run walked
# before it, in one after). The first name the walk meets is indexed, in its run; the
# other names are counted as links, not indexed again (the file is known by its device
# and inode, not only its path); -j 1 and -j 2 alike, and the re-run too.
H="$DSQ_TMP/hard"
mkdir -p "$H/run0" "$H/run1" "$H/run2"
cp "$SAMPLE/bert-baseline.log" "$H/run1/b.log"
ln "$H/run1/b.log" "$H/run1/a.log"
ln "$H/run1/b.log" "$H/run0/first.log"
ln "$H/run1/b.log" "$H/run2/c.log"
cp "$SAMPLE/bert-baseline.log" "$H/run2/own.log" # the same bytes, another file
once_each hard "$H" 3 "$H/run0/first.log,run0
$H/run2/own.log,run2"
expect_eq "hard links: -j 2 indexes as -j 1" "$(dump_index "$DSQ_TMP/db-hard-1")" \
    "$(dump_index "$DSQ_TMP/db-hard-2")"

e2e_finish
