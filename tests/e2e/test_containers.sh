#!/usr/bin/env bash
# The same logs in every container dsq reads must give the same answers.
#
# Each variant rebuilds the sample archive's three runs (bert-baseline: one plain
# file at the top; gpt2-zero2, llama7b-zero3: directories of per-rank/per-host
# files) in one container shape, is indexed into a fresh --db, and must answer
# `max Max_MA by run` (table and --csv) and `count Max_MA by run` exactly as the
# plain sample does, with the same number of lines counted.
source "$(dirname "$0")/lib.sh"
e2e_init

need_tool zstd zstd
need_tool gzip gzip
need_tool xz xz-utils
need_tool bzip2 bzip2
need_tool tar tar
need_tool zip zip
need_tool python3 python3

RUNS="bert-baseline gpt2-zero2 llama7b-zero3"
V="$DSQ_TMP/variants"
mkdir -p "$V"

EXPECT_COUNT=$(sample_count_table)
EXPECT_LINES=$(count_lines "$SAMPLE"/bert-baseline.log "$SAMPLE"/gpt2-zero2/* "$SAMPLE"/llama7b-zero3/*)

# Sanity of the inputs themselves: the counts the test derives by grep must be
# the ones the sample was built with (2 + 2x2 + 2x2 reports, 55 lines).
expect_eq "sample: report counts by grep" "run            count Max_MA
bert-baseline             2
gpt2-zero2                4
llama7b-zero3             4" "$EXPECT_COUNT"
expect_eq "sample: line count by python" 55 "$EXPECT_LINES"

# --- build the variants -------------------------------------------------------

# compress_each DIR EXT CMD...: replaces every file under DIR by FILE.EXT made by CMD.
compress_each() {
    local dir=$1 ext=$2 f
    shift 2
    local files
    mapfile -t files < <(find "$dir" -type f | sort)
    for f in "${files[@]}"; do
        "$@" <"$f" >"$f.$ext" || die "compressing $f failed"
        rm "$f"
    done
}

# plain directory: a copy of the sample
cp -r "$SAMPLE" "$V/plain"

# one compressed file per log
for spec in "zst:zstd -q -c" "gz:gzip -c" "xz:xz -c" "bz2:bzip2 -c"; do
    ext=${spec%%:*}
    cp -r "$SAMPLE" "$V/file-$ext"
    # shellcheck disable=SC2086
    compress_each "$V/file-$ext" "$ext" ${spec#*:}
done

# multi-frame .zst: every file is two zstd frames, split at a byte offset inside a
# line so one line spans the frame boundary
cp -r "$SAMPLE" "$V/file-zst-multiframe"
mapfile -t files < <(find "$V/file-zst-multiframe" -type f | sort)
for f in "${files[@]}"; do
    { head -c 300 "$f" | zstd -q -c; tail -c +301 "$f" | zstd -q -c; } >"$f.zst" && rm "$f"
done
frames=$(zstd -lv "$V/file-zst-multiframe/bert-baseline.log.zst" 2>/dev/null | grep -i 'frames' | grep -oE '[0-9]+' | head -n1)
expect_eq "multi-frame input really has two frames" 2 "${frames:-?}"

# \r\n line ends (Windows-written logs), plain and as two zstd frames split between
# the \r and the \n of a line end near the middle (a frame end is a chunk end)
cp -r "$SAMPLE" "$V/crlf"
mapfile -t files < <(find "$V/crlf" -type f | sort)
for f in "${files[@]}"; do
    sed -i 's/$/\r/' "$f"
done
cp -r "$V/crlf" "$V/crlf-zst-frames"
mapfile -t files < <(find "$V/crlf-zst-frames" -type f | sort)
for f in "${files[@]}"; do
    cut=$(python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); print(d.index(b"\r\n", len(d)//2) + 1)' "$f")
    { head -c "$cut" "$f" | zstd -q -c; tail -c +$((cut + 1)) "$f" | zstd -q -c; } >"$f.zst" && rm "$f"
done

# one archive per run: the run directory (or the top-level plain file) inside
# tar_each DIR SUFFIX CMD: CMD reads a tar stream on stdin and writes the archive
tar_each() {
    local dir=$1 suffix=$2 r m
    shift 2
    mkdir -p "$dir"
    for r in $RUNS; do
        m=$r
        [ -d "$SAMPLE/$r" ] || m=$r.log
        tar -C "$SAMPLE" -cf - "$m" | "$@" >"$dir/$r$suffix"
    done
}
tar_each "$V/tar" .tar cat
tar_each "$V/tar-zst" .tar.zst zstd -q -c
tar_each "$V/tar-gz" .tar.gz gzip -c
tar_each "$V/tar-xz" .tar.xz xz -c
tar_each "$V/tar-bz2" .tar.bz2 bzip2 -c
tar_each "$V/tgz" .tgz gzip -c

# zip (deflated members)
mkdir -p "$V/zip"
for r in $RUNS; do
    m=$r
    [ -d "$SAMPLE/$r" ] || m=$r.log
    (cd "$SAMPLE" && zip -q -r "$V/zip/$r.zip" "$m") || die "zip failed"
done

# a tar whose members are .zst files, compressed again as a whole
mkdir -p "$V/tar-of-zst-src" "$V/tar-of-zst"
cp -r "$SAMPLE"/. "$V/tar-of-zst-src"
compress_each "$V/tar-of-zst-src" zst zstd -q -c
for r in $RUNS; do
    m=$r
    [ -d "$SAMPLE/$r" ] || m=$r.log.zst
    tar -C "$V/tar-of-zst-src" -cf "$V/tar-of-zst/$r.tar" "$m"
done
rm -rf "$V/tar-of-zst-src"

# compressed twice (`xz -c f | gzip -c`, ...): every layer is decoded, in single
# files and in tar members alike; gzip outside xz, zstd and bzip2, and inside xz
T="$V/twice-src"
cp -r "$SAMPLE" "$T"
mapfile -t files < <(find "$T" -type f | sort)
for i in "${!files[@]}"; do
    f=${files[$i]}
    case $((i % 4)) in
    0) xz -c <"$f" | gzip -c >"$f.xz.gz" ;;
    1) zstd -q -c <"$f" | gzip -c >"$f.zst.gz" ;;
    2) bzip2 -c <"$f" | gzip -c >"$f.bz2.gz" ;;
    3) gzip -c <"$f" | xz -c >"$f.gz.xz" ;;
    esac
    rm "$f"
done
mkdir -p "$V/tar-of-twice"
for r in $RUNS; do
    (cd "$T" && tar -cf "$V/tar-of-twice/$r.tar" "$r"*) || die "tar failed"
done
mv "$T" "$V/file-twice"

# misleading names: detection must go by magic bytes, not by the extension
M="$V/misnamed"
mkdir -p "$M/gpt2-zero2" "$M/llama7b-zero3"
zstd -q -c <"$SAMPLE/bert-baseline.log" >"$M/bert-baseline.log"                   # zstd as .log
gzip -c <"$SAMPLE/gpt2-zero2/rank0.log" >"$M/gpt2-zero2/rank0.log"                # gzip as .log
xz -c <"$SAMPLE/gpt2-zero2/rank1.log" >"$M/gpt2-zero2/rank1.txt"                  # xz as .txt
bzip2 -c <"$SAMPLE/llama7b-zero3/gpu009.log" >"$M/llama7b-zero3/gpu009.log.gz"    # bzip2 as .gz
zstd -q -c <"$SAMPLE/llama7b-zero3/gpu010.log" >"$M/llama7b-zero3/gpu010.log.xz"  # zstd as .xz
head -c4 "$M/bert-baseline.log" | od -An -tx1 | grep -q '28 b5 2f fd' ||
    fail "misnamed: bert-baseline.log is not zstd data"

# an archive with a misleading name at the top: a tar.gz called .log is still
# the run's archive (and the run is named after it without extensions)
M2="$V/misnamed-archive"
mkdir -p "$M2"
for r in $RUNS; do
    m=$r
    [ -d "$SAMPLE/$r" ] || m=$r.log
    tar -C "$SAMPLE" -cf - "$m" | gzip -c >"$M2/$r.log"
done

# --- index every variant and compare --------------------------------------------

for dir in "$V"/*; do
    name=$(basename "$dir")
    db="$DSQ_TMP/db-$name"
    index_ok "$name" "$db" "$dir"
    lines=$(summary_number lines "$OUT")
    expect_eq "$name: lines counted" "$EXPECT_LINES" "$lines"
    expect_not_contains "$name: nothing cut" "cut " "$OUT"
    expect_eq "$name: max Max_MA by run" "$SAMPLE_MAX_TABLE" "$(query "$db" "max Max_MA by run")"
    expect_eq "$name: max Max_MA by run --csv" "$SAMPLE_MAX_CSV" "$(query "$db" "max Max_MA by run" --csv)"
    expect_eq "$name: count Max_MA by run" "$EXPECT_COUNT" "$(query "$db" "count Max_MA by run")"
done

# All variants in one index: every file is a different source of the same three
# runs, so each run holds (variants) times the reports, and the peaks are unchanged.
nvar=$(find "$V" -mindepth 1 -maxdepth 1 -type d | wc -l)
db="$DSQ_TMP/db-all"
args=()
for dir in "$V"/*; do args+=("$dir"); done
index_ok "all variants together" "$db" "${args[@]}"
expect_eq "all variants: max Max_MA by run" "$SAMPLE_MAX_TABLE" "$(query "$db" "max Max_MA by run")"
b=$(count_reports "$SAMPLE/bert-baseline.log")
g=$(count_reports "$SAMPLE"/gpt2-zero2/*)
l=$(count_reports "$SAMPLE"/llama7b-zero3/*)
expect_eq "all variants: count Max_MA by run --csv" "run,count Max_MA
bert-baseline,$((b * nvar))
gpt2-zero2,$((g * nvar))
llama7b-zero3,$((l * nvar))" "$(query "$db" "count Max_MA by run" --csv)"

e2e_finish
