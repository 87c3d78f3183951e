#!/usr/bin/env bash
# Indexing speed of whole `dsq index` processes next to decompression and ugrep,
# measured in the same run on the same bytes (issue 5). Prints one table.
#
#   bench/bench_speed.sh [-b BUILD]... [-n REPEATS] [-s SINGLE_SIZE] [-a ARCHIVE_SIZE]
#                        [-r RUNS] [-H HOSTS] [-R RANKS] [-m FILES] [-J BIG_HOSTS]
#                        [-S BIG_SIZE] [-d DIR] [-k] [-c]
#     defaults: -b build -n 3 -s 200M -a 300M -r 100 -H 4 -R 8 -m 8000 -J 256 -S 100M
#     -d $BENCH_DIR/speed
#     (BENCH_DIR defaults to /tmp/dsq-bench); sizes are text bytes, K/M/G = 10^3/6/9
#     -b twice or more: one set of dsq rows per build (DIR/dsq or a dsq binary)
#     -k: keep the last index of each input in DIR (default: removed)
#     -c: no cold archive row
#     DSQ_INDEX_ARGS: extra arguments for every `dsq index` (e.g. "-j 2")
#
# Inputs (tools/gen-archive.py, deterministic, cached in DIR: delete DIR to regenerate):
#   single.log.zst   one pdsh-prefixed launcher log of SINGLE_SIZE (zstd -3)
#   single.log.gz    the same text, gzip -6
#   archive/         RUNS runs x HOSTS hosts x RANKS ranks, ARCHIVE_SIZE of text in every
#                    container (.log, .log.zst, .log.gz, run.tar.zst, run.tar.gz, .zip)
#   archive, again   `dsq index` over the archive into the index it just built (nothing
#                    changed: every file is skipped)
#   archive, cold    the archive again, its files' pages dropped from the page cache
#                    before every timed run (posix_fadvise DONTNEED; directories and
#                    inodes stay cached), as a nightly run finds its logs (-c: left out)
#   one run          FILES per-rank files (copies of one of the archive's) in one run
#                    directory: the cost of a run's size (-m 0: left out)
#   big job .zst     one pdsh-prefixed launcher log of BIG_SIZE of a big job: BIG_HOSTS hosts
#                    x RANKS ranks (2,048 by default: every (host, rank) has its blocks,
#                    series and counts in one file), zstd -3 (-J 0: left out)
# Baselines, each the median of REPEATS runs, like dsq's, run round by round with them:
#   single inputs   zstd -dc / gzip -dc FILE > /dev/null
#   archive         every file decompressed by its own tool, one process per tool
#                   (zstd -dc, gzip -dc, unzip -p, cat), one after the other
#   re-run          find -printf of every file's size and mtime (a stat of each)
#   ugrep           ugrep -z [-r] -c Max_MA > FILE (multi-threaded; apt-get install ugrep;
#                   into a file: writing to /dev/null it stops at the first match)
# dsq: `dsq index -q --db FRESH_DIR INPUT`, a fresh index in DIR each time; wall time,
# peak RSS (/usr/bin/time %M), lines and events as dsq reports them, index size (du).
# Nothing here asserts a speed; bench/README.md has measured tables.
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")/.." && pwd)
builds=() reps=3 ssize=200M asize=300M runs=100 hosts=4 ranks=8 keep=0 onerun=8000 bighosts=256
cold=1
bigsize=100M
dir=${BENCH_DIR:-/tmp/dsq-bench}/speed
while getopts b:n:s:a:r:H:R:m:J:S:d:kc o; do
  case $o in
    b) builds+=("$OPTARG") ;; n) reps=$OPTARG ;; s) ssize=$OPTARG ;; a) asize=$OPTARG ;;
    r) runs=$OPTARG ;; H) hosts=$OPTARG ;; R) ranks=$OPTARG ;; d) dir=$OPTARG ;; k) keep=1 ;;
    m) onerun=$OPTARG ;; J) bighosts=$OPTARG ;; S) bigsize=$OPTARG ;; c) cold=0 ;;
    *) sed -n '4,14p' "$0" >&2; exit 2 ;;
  esac
done
[ ${#builds[@]} -gt 0 ] || builds=("$here/build")
bins=()
for b in "${builds[@]}"; do
  if [ -x "$b/dsq" ] && [ -f "$b/dsq" ]; then bins+=("$(cd "$b" && pwd)/dsq")
  elif [ -x "$b" ] && [ -f "$b" ]; then bins+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")")
  else echo "no dsq binary in $b (build first)" >&2; exit 2; fi
done
# each build's name in the table: its directory's name, with the parent's when two
# builds share it (/tmp/old/build-rel and ./build-rel -> old/build-rel, main/build-rel),
# or with the binary's when two are in one directory (/tmp/x/dsq-a, /tmp/x/dsq-b ->
# x/dsq-a, x/dsq-b)
names=()
for bin in "${bins[@]}"; do
  d=$(dirname "$bin") n=$(basename "$(dirname "$bin")") same=0 here_too=0
  for other in "${bins[@]}"; do
    [ "$other" != "$bin" ] && [ "$(basename "$(dirname "$other")")" = "$n" ] && same=1
    [ "$other" != "$bin" ] && [ "$(dirname "$other")" = "$d" ] && here_too=1
  done
  if [ $here_too = 1 ]; then n="$n/$(basename "$bin")"
  elif [ $same = 1 ]; then n="$(basename "$(dirname "$d")")/$n"; fi
  names+=("$n")
done
build_name() { local i; for i in "${!bins[@]}"; do [ "${bins[$i]}" = "$1" ] && echo "${names[$i]}"; done; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
have_ugrep=0; command -v ugrep >/dev/null && have_ugrep=1

now() { echo "${EPOCHREALTIME/./}"; }                # microseconds, no fork
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else printf "-"}'; }
cores=$(nproc)
note() { printf '%s\n' "$*" >&2; }
# seconds of one run of "${@:2}", its output into $1
wall_to() {
  local t0 out=$1; shift
  t0=$(now); "$@" >"$out" 2>&1 || true
  echo "scale=4; ($(now) - $t0) / 1000000" | bc
}
wall() { wall_to /dev/null "$@"; } # output discarded
# output into a file: grep and ugrep writing to /dev/null stop at the first match
# (only the exit status can be seen), and would read little of an input
wall_to_file() { wall_to "$dir/ugrep.out" "$@"; }
bytes() { du -s --apparent-size --block-size=1 "$@" | awk '{s += $1} END {print s}'; }

# ---- inputs ------------------------------------------------------------------------
mkdir -p "$dir"
gen=(python3 "$here/tools/gen-archive.py" --seed 1)
# cached inputs are named by the generator's own bytes too: a changed generator makes new ones
gid=g$(sha256sum "$here/tools/gen-archive.py" | cut -c1-8)
single=$dir/single-$ssize-$gid.log
if [ ! -f "$single.zst" ] || [ ! -f "$single.gz" ]; then
  note "generating $single ($ssize of text)"
  "${gen[@]}" --single "$single" --hosts "$hosts" --ranks "$ranks" --size "$ssize"
  zstd -q -3 -f "$single" -o "$single.zst"
  gzip -6 -n -c "$single" > "$single.gz"
  rm -f "$single"
fi
arch=$dir/archive-$runs-$hosts-$ranks-$asize-$gid
if [ ! -f "$arch.done" ]; then
  rm -rf "$arch"; note "generating $arch"
  t0=$(now)
  "${gen[@]}" "$arch" --runs "$runs" --hosts "$hosts" --ranks "$ranks" --size "$asize"
  echo "scale=1; ($(now) - $t0) / 1000000" | bc > "$arch.done"
fi

big=$dir/bigjob-$bighosts-$ranks-$bigsize-$gid.log
if [ "$bighosts" -gt 0 ] && [ ! -f "$big.zst" ]; then
  note "generating $big ($bighosts hosts x $ranks ranks)"
  "${gen[@]}" --single "$big" --hosts "$bighosts" --ranks "$ranks" --size "$bigsize"
  zstd -q -3 -f "$big" -o "$big.zst"
  rm -f "$big"
fi

one=$dir/onerun-$onerun-of-$(basename "$arch") # copies of that archive's file
if [ "$onerun" -gt 0 ] && [ ! -f "$one.done" ]; then
  rm -rf "$one"; note "generating $one"
  src=$(find "$arch" -name 'rank0.log' -type f | sort | sed -n 1p) # (not head: sort writing on after head ends gets SIGPIPE, which ends the script)
  [ -n "$src" ] || { echo "no per-rank rank0.log in $arch" >&2; exit 2; }
  mkdir -p "$one/bigrun"
  python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); [open(f"{sys.argv[2]}/rank{i}.log","wb").write(d) for i in range(int(sys.argv[3]))]' \
    "$src" "$one/bigrun" "$onerun"
  touch "$one.done"
fi

decode_all() { # every file of the archive, decompressed by its own tool, to stdout
  find "$1" -type f \( -name '*.zst' \) -print0 | xargs -0 -r zstd -dcq
  find "$1" -type f \( -name '*.gz' \) -print0 | xargs -0 -r gzip -dc
  find "$1" -type f -name '*.zip' -print0 | xargs -0 -r -n1 unzip -p
  find "$1" -type f -name '*.log' -print0 | xargs -0 -r cat
}
stat_all() { find "$1" -type f -printf '%s %T@\n'; }
# drops the pages of every file under $1 from the page cache (clean pages: they were
# written long before)
drop_pages() {
  find "$1" -type f -print0 | python3 -c 'import os, sys
for p in sys.stdin.buffer.read().split(b"\0"):
    if p:
        fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)'
}

# ---- one input: baseline + ugrep + dsq per build -------------------------------------
# Round by round: each round times the baseline, ugrep, the stat of every file (the
# archive) and every build once, the builds in turn (reversed every other round), so
# that a machine that slows down or speeds up during the run weighs on all of them
# alike; each figure is the median of its REPEATS rounds.
rows=() wrows=()
# bench_input LABEL INPUT BASELINE_NAME BASELINE_CMD... ; sets rows (and wrows: --stats)
bench_input() {
  local label=$1 input=$2 bname=$3; shift 3
  local comp text ug="-" st="-"
  comp=$(bytes "$input")
  case $bname in
    "zstd -dc") text=$(zstd -dcq "$input" | wc -c) ;;
    "gzip -dc") text=$(gzip -dc "$input" | wc -c) ;;
    *) text=$(decode_all "$input" | wc -c) ;;
  esac
  local i j k n=${#bins[@]} t db out
  local -a base_t=() ug_t=() st_t=() times=() rsss=() again=() again_rss=() outs=() order=()
  local -a wheres=()
  local prep=: # what runs before each timed command: the cold row drops the files' pages
  [ "$label" = "archive, cold" ] && prep=drop_pages
  for ((i = 0; i < reps; i++)); do
    note "$label: round $((i + 1)) of $reps: $bname$([ $have_ugrep = 1 ] && echo ", ugrep"), $n build(s)"
    $prep "$input"
    base_t+=("$(wall "$@")")
    if [ $have_ugrep = 1 ]; then
      $prep "$input"
      if [ -d "$input" ]; then ug_t+=("$(wall_to_file ugrep -z -r -c Max_MA "$input")")
      else ug_t+=("$(wall_to_file ugrep -z -c Max_MA "$input")"); fi
    fi
    [ "$label" = archive ] && st_t+=("$(wall stat_all "$input")")
    order=()
    for ((j = 0; j < n; j++)); do order+=($((i % 2 ? n - 1 - j : j))); done
    for k in "${order[@]}"; do
      db=$dir/db-$k; rm -rf "$db"
      $prep "$input"
      t=$(now)
      # shellcheck disable=SC2086 # DSQ_INDEX_ARGS is a list of words
      out=$(/usr/bin/time -f %M -o "$dir/rss" "${bins[$k]}" index -q --stats ${DSQ_INDEX_ARGS:-} --db "$db" "$input") ||
        note "WARNING: dsq index exited $? on $input"
      times[k]+="$(echo "scale=4; ($(now) - $t) / 1000000" | bc) "
      rsss[k]+="$(tail -n 1 "$dir/rss") "
      outs[k]=$out
      # where the time went in this round (dsq index --stats; builds before it print none)
      wheres[k]=$(sed -n '/where the time went/,$p' <<<"$out" | tail -n +2)
      if [ "$label" = archive ]; then # the unchanged re-run, into this index
        t=$(now)
        # shellcheck disable=SC2086
        /usr/bin/time -f %M -o "$dir/rss" "${bins[$k]}" index -q ${DSQ_INDEX_ARGS:-} --db "$db" "$input" >/dev/null || true
        again[k]+="$(echo "scale=4; ($(now) - $t) / 1000000" | bc) "
        again_rss[k]+="$(tail -n 1 "$dir/rss") "
      fi
    done
  done
  local base lines events
  base=$(printf '%s\n' "${base_t[@]}" | median)
  [ $have_ugrep = 1 ] && ug=$(printf '%s\n' "${ug_t[@]}" | median)
  [ "$label" = archive ] && st=$(printf '%s\n' "${st_t[@]}" | median)
  for ((k = 0; k < n; k++)); do
    db=$dir/db-$k
    lines=$(sed -n 's/.*decompressed [^,]*, \([0-9]*\) lines, \([0-9]*\) events.*/\1/p' <<<"${outs[$k]}")
    events=$(sed -n 's/.*decompressed [^,]*, \([0-9]*\) lines, \([0-9]*\) events.*/\2/p' <<<"${outs[$k]}")
    rows+=("$label|${names[$k]}|$comp|$text|$bname|$base|$ug|$(tr ' ' '\n' <<<"${times[$k]}" | grep . | median)|${lines:-0}|${events:-0}|$(tr ' ' '\n' <<<"${rsss[$k]}" | grep . | median)|$(du -s --block-size=1 "$db" | cut -f1)")
    if [ -n "${wheres[$k]}" ]; then
      wrows+=("$label, ${names[$k]}:" "${wheres[$k]}")
      # the least wall time this much CPU could take on this machine's cores: a ratio
      # above a goal here needs less work, not better overlap
      local cpu floor
      cpu=$(sed -n 's/.*process: [0-9.]* wall, \([0-9.]*\) CPU.*/\1/p' <<<"${wheres[$k]}")
      if [ -n "$cpu" ]; then
        floor=$(awk -v c="$cpu" -v n="$cores" 'BEGIN {printf "%.3f", c / n}')
        wrows+=("    floor: $cpu CPU / $cores cores = $floor s wall at best: $(ratio "$floor" "$base") x $bname$([ -n "$ug" ] && [ "$ug" != - ] && echo ", $(ratio "$floor" "$ug") x ugrep")")
      fi
    fi
    [ "$label" = archive ] &&
      rows+=("archive, unchanged|${names[$k]}|$comp|$text|stat all files|$st|-|$(tr ' ' '\n' <<<"${again[$k]}" | grep . | median)|0|0|$(tr ' ' '\n' <<<"${again_rss[$k]}" | grep . | median)|$(du -s --block-size=1 "$db" | cut -f1)")
    if [ $keep = 1 ]; then rm -rf "$dir/index-$label-${names[$k]//\//-}"
      mv "$db" "$dir/index-$label-${names[$k]//\//-}"; else rm -rf "$db"; fi
  done
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
bench_input single.log.zst "$single.zst" "zstd -dc" zstd -dcq "$single.zst"
bench_input single.log.gz "$single.gz" "gzip -dc" gzip -dc "$single.gz"
bench_input archive "$arch" "decompress all" decode_all "$arch"
[ "$cold" = 1 ] && bench_input "archive, cold" "$arch" "decompress all" decode_all "$arch"
[ "$onerun" -gt 0 ] && bench_input "one run" "$one" "decompress all" decode_all "$one"
[ "$bighosts" -gt 0 ] && bench_input "big job .zst" "$big.zst" "zstd -dc" zstd -dcq "$big.zst"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
rm -f "$dir/rss" "$dir/ugrep.out"

# ---- the table -------------------------------------------------------------------------
nfiles=$(find "$arch" -type f | wc -l)
echo
echo "dsq index speed, $(date -u '+%Y-%m-%d %H:%M UTC'), $cores cores, load average $load0 -> $load1"
echo "median of $reps runs; single = one $ssize launcher log ($hosts hosts x $ranks ranks);"
echo "archive = $runs runs x $hosts hosts x $ranks ranks, $nfiles files/archives (generated in $(cat "$arch.done") s)"
[ "$onerun" -gt 0 ] && echo "one run = $onerun copies of one of the archive's per-rank files in one run directory"
[ "$bighosts" -gt 0 ] && echo "big job = one $bigsize launcher log of $bighosts hosts x $ranks ranks"
echo
awk -F'|' -v multi=$((${#bins[@]} > 1)) '
function mb(x) { return sprintf("%.1f", x / 1e6) }
function r(a, b) { return (b == "-" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
BEGIN {
  printf "| input |%s in MB | text MB | baseline | base s | ugrep s | dsq s | dsq/base | dsq/ugrep | M lines/s | M events/s | peak RSS MB | index MB |\n", multi ? " build |" : ""
  printf "|---|%s---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", multi ? "---|" : ""
}
{
  ls = $9 > 0 ? sprintf("%.2f", $9 / $8 / 1e6) : "-"
  es = $10 > 0 ? sprintf("%.2f", $10 / $8 / 1e6) : "-"
  printf "| %s |%s %s | %s | %s | %.3f | %s | %.3f | %s | %s | %s | %s | %.0f | %s |\n", $1,
    multi ? " " $2 " |" : "", mb($3), mb($4), $5, $6, ($7 == "-" ? "-" : sprintf("%.3f", $7)), $8,
    r($8, $6), r($8, $7), ls, es, $11 / 1024, mb($12)
}' < <(printf '%s\n' "${rows[@]}")
if [ ${#wrows[@]} -gt 0 ]; then
  echo
  echo "where the time went in each input's last round (dsq index --stats; seconds):"
  printf '%s\n' "${wrows[@]}"
fi
echo
echo "dsq reported lines/events: $(printf '%s\n' "${rows[@]}" | awk -F'|' '$9 > 0 {printf "%s %s lines %s events; ", $1, $9, $10}')"
