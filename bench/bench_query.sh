#!/usr/bin/env bash
# Query speed of whole `dsq` processes next to sqlite3 on the same events, measured in
# the same run (issue 4, point 6).
#
#   bench/bench_query.sh [-n RUNS] [-r REPEATS] [-b BUILD_DIR] [-d DIR] [-x] [-i INDEX]
#       defaults: -n 10000, -r 5, -b build,
#                 -d $BENCH_QUERY_DIR, else /tmp/dsq-bench/runs10k (runs<N> for other N)
#       -x: skip the event-count check of step 2 (it takes minutes at full size)
#
# 1. gen_runs writes DIR/runs/<run>/<host>.log.zst and DIR/events.csv.zst (the same
#    events, one CSV row per dsq event); cached: delete DIR to regenerate.
#    -i INDEX: query an index already built from DIR/runs instead of building one.
# 2. `dsq index` into a fresh DIR/dsq.db, timed; its event counts are checked against
#    the CSV (`count by run, host, kind` and `count F by run` for each queried field).
# 3. sqlite3 gets the CSV in one table `ev` (DIR/events.sqlite, cached) and, for each
#    query, the covering index that suits it best, then ANALYZE:
#      max Max_MA by run            ix_mem  (run, Max_MA)            WHERE Max_MA NOT NULL
#      p95 CurrSamplesPerSec by run ix_thr  (run, CurrSamplesPerSec) WHERE ... NOT NULL
#      count by host                ix_host (host)
#      avg loss ... every 1h        ix_loss (run, t/3600000000, loss) WHERE loss NOT NULL
#                                   ix_loss_t (run, t, loss)          WHERE loss NOT NULL
#    Partial indexes hold only the rows that have the field, which is all the query
#    reads. Some queries have several SQL forms (a loose index scan with one seek per
#    run for max Max_MA; either loss index via INDEXED BY); each form is timed and the
#    fastest is sqlite's best. The plans are printed at the end.
# 4. Each query runs as a whole process, `dsq --db D --csv Q` and `sqlite3 -csv DB SQL`,
#    once to warm the page cache (its output is compared: same rows, numbers equal to
#    a relative 1e-9), then REPEATS times (once if the warm run took more than
#    BENCH_SLOW_S seconds, default 20); the median wall time is reported.
# Needs zstd, sqlite3 (installed with apt-get if missing), python3, a built BUILD_DIR.
# Nothing here asserts a speed; see bench/README.md for measured tables.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
nruns=10000 reps=5 build=$here/build dir=${BENCH_QUERY_DIR:-} slow=${BENCH_SLOW_S:-20} check=1
reuse=""
while getopts n:r:b:d:xi: o; do
  case $o in
    n) nruns=$OPTARG ;; r) reps=$OPTARG ;; b) build=$OPTARG ;; d) dir=$OPTARG ;; x) check=0 ;;
    i) reuse=$OPTARG ;;
    *) sed -n '2,9p' "$0" >&2; exit 2 ;;
  esac
done
[ -n "$dir" ] || { [ "$nruns" = 10000 ] && dir=/tmp/dsq-bench/runs10k || dir=/tmp/dsq-bench/runs$nruns; }
dsq=$build/dsq gen=$build/bench/gen_runs db=$dir/dsq.db sdb=$dir/events.sqlite
[ -x "$dsq" ] && [ -x "$gen" ] || { echo "build first: cmake --build $build (needs dsq, bench/gen_runs)" >&2; exit 2; }
if ! command -v sqlite3 >/dev/null; then # optional bench dependency, not a project one
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q sqlite3
fi

now() { echo "${EPOCHREALTIME/./}"; }                  # microseconds, no fork
secs() { echo "scale=2; ($2 - $1) / 1000000" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
note() { printf '%s\n' "$*" >&2; }
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- 1. archive ------------------------------------------------------------------
if [ ! -f "$dir/counts.txt" ]; then
  rm -rf "$dir"; note "generating $nruns runs into $dir"
  t0=$(now); "$gen" -n "$nruns" "$dir"; gen_s="in $(secs "$t0" "$(now)") s"
else
  gen_s="earlier (cached)"
fi
total=$(awk '$1 == "total" {print $2}' "$dir/counts.txt")
arc_bytes=$(du -sb "$dir/runs" | cut -f1)
nfiles=$(find "$dir/runs" -name '*.log.zst' | wc -l)

# ---- 2. dsq index ------------------------------------------------------------------
if [ -n "$reuse" ]; then
  db=$reuse idx_s="(reused $reuse)" rc=0
else
  rm -rf "$db"; note "dsq index $dir/runs"
  t0=$(now); rc=0; "$dsq" index -q --db "$db" "$dir/runs" || rc=$?; idx_s=$(secs "$t0" "$(now)")
  [ "$rc" = 0 ] || note "WARNING: dsq index exited $rc"
fi
dsq_events=$("$dsq" --db "$db" --csv "count" | tail -n 1)
dsq_bytes=$(du -sb "$db" | cut -f1)

# ---- 3. sqlite3 --------------------------------------------------------------------
if [ ! -f "$sdb" ]; then
  note "sqlite3: loading $dir/events.csv.zst"
  rm -f "$sdb" "$dir/stage.sqlite"
  t0=$(now)
  sqlite3 "$dir/stage.sqlite" >/dev/null <<EOF
PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
.import --csv '|zstd -dc $dir/events.csv.zst' stage
EOF
  sqlite3 "$sdb" >/dev/null <<EOF
PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-1000000;
CREATE TABLE ev(run TEXT NOT NULL, host TEXT NOT NULL, rank INTEGER, t INTEGER NOT NULL,
  kind TEXT NOT NULL, step INTEGER, CurrSamplesPerSec REAL, Max_MA REAL, loss REAL,
  grad_norm REAL);
ATTACH '$dir/stage.sqlite' AS s;
INSERT INTO ev SELECT run, host, CAST(nullif(rank, '') AS INTEGER), CAST(t_us AS INTEGER),
  kind, CAST(nullif(step, '') AS INTEGER), CAST(nullif(CurrSamplesPerSec, '') AS REAL),
  CAST(nullif(Max_MA, '') AS REAL), CAST(nullif(loss, '') AS REAL),
  CAST(nullif(grad_norm, '') AS REAL) FROM s.stage;
EOF
  rm -f "$dir/stage.sqlite"
  t1=$(now)
  sqlite3 "$sdb" >/dev/null <<EOF
PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-1000000;
CREATE INDEX ix_mem ON ev(run, Max_MA) WHERE Max_MA IS NOT NULL;
CREATE INDEX ix_thr ON ev(run, CurrSamplesPerSec) WHERE CurrSamplesPerSec IS NOT NULL;
CREATE INDEX ix_host ON ev(host);
CREATE INDEX ix_loss ON ev(run, t / 3600000000, loss) WHERE loss IS NOT NULL;
CREATE INDEX ix_loss_t ON ev(run, t, loss) WHERE loss IS NOT NULL;
ANALYZE;
EOF
  t2=$(now)
  echo "$(secs "$t0" "$t1") $(secs "$t1" "$t2")" > "$sdb.times"
fi
read -r sq_load_s sq_ix_s < "$sdb.times"
sq_bytes=$(stat -c %s "$sdb")
sq_sizes=$(sqlite3 "$sdb" "SELECT name || ' ' || sum(pgsize) FROM dbstat GROUP BY name ORDER BY name")

# ---- queries: dsq text, and sqlite forms "label|SQL" (the fastest is sqlite's best) ---
names=("max Max_MA by run" "p95 CurrSamplesPerSec by run" "count by host"
       "avg loss by run every 1h where run ~ 'a*'")
sq0=("GROUP BY|SELECT run, max(Max_MA) FROM ev WHERE Max_MA IS NOT NULL GROUP BY run ORDER BY run;"
     "loose index scan (a seek per run)|WITH RECURSIVE r(run) AS (
  SELECT min(run) FROM ev WHERE Max_MA IS NOT NULL
  UNION ALL SELECT (SELECT min(run) FROM ev WHERE Max_MA IS NOT NULL AND run > r.run)
  FROM r WHERE r.run IS NOT NULL)
SELECT run, (SELECT max(Max_MA) FROM ev WHERE Max_MA IS NOT NULL AND run = r.run)
FROM r WHERE run IS NOT NULL;")
# nearest rank: the value at rank ceil(0.95 n) of the run's sorted values
sq1=("window functions, nearest rank|SELECT run, v FROM (
  SELECT run, CurrSamplesPerSec AS v, row_number() OVER w AS rn,
         count(*) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n
  FROM ev WHERE CurrSamplesPerSec IS NOT NULL
  WINDOW w AS (PARTITION BY run ORDER BY CurrSamplesPerSec))
WHERE rn = (95 * n + 99) / 100 ORDER BY run;")
sq2=("GROUP BY|SELECT host, count(*) FROM ev GROUP BY host ORDER BY host;")
loss_sql="SELECT run, strftime('%Y-%m-%d %H:00:00.000', t / 3600000000 * 3600, 'unixepoch'),
  avg(loss) FROM ev INDEXED BY IX WHERE run GLOB 'a*' AND loss IS NOT NULL
GROUP BY run, t / 3600000000 ORDER BY run, t / 3600000000;"
sq3=("GROUP BY on ix_loss (run, hour, loss)|${loss_sql/IX/ix_loss}"
     "GROUP BY on ix_loss_t (run, t, loss)|${loss_sql/IX/ix_loss_t}")

out=$dir/out; mkdir -p "$out"
# Same rows (order ignored), numbers equal to a relative 1e-9. Prints "same" or why not.
compare() {
  python3 - "$1" "$2" <<'EOF'
import csv, sys
def rows(p):
    return sorted(tuple(r) for r in csv.reader(open(p)))
def num(x):
    try: return float(x)
    except ValueError: return None
a, b = rows(sys.argv[1]), rows(sys.argv[2])
if len(a) != len(b):
    print(f"DIFFER: {len(a)} rows vs {len(b)}"); sys.exit()
bad = 0
for x, y in zip(a, b):
    ok = len(x) == len(y)
    for u, v in zip(x, y):
        fu, fv = num(u), num(v)
        if fu is not None and fv is not None:
            ok = ok and abs(fu - fv) <= 1e-9 * max(abs(fu), abs(fv), 1e-300)
        else:
            ok = ok and u == v
    if not ok:
        bad += 1
        if bad <= 3: print(f"DIFFER: {x} vs {y}", end="; ")
print(f"DIFFER in {bad} of {len(a)} rows" if bad else f"same ({len(a)} rows)")
EOF
}
# ms of one whole process run of "$@", output to /dev/null
time_ms() {
  local t0 t1; t0=$(now); "$@" >/dev/null; t1=$(now)
  echo "scale=1; ($t1 - $t0) / 1000" | bc
}
# median ms of REPEATS runs of the command after one warm run whose output, without its
# first $2 lines (a header), goes to $1
bench() {
  local o=$1 skip=$2 t0 n=$reps; shift 2
  t0=$(now); "$@" | tail -n +$((skip + 1)) > "$o"
  [ $(($(now) - t0)) -lt $((slow * 1000000)) ] || n=1
  for ((k = 0; k < n; k++)); do time_ms "$@"; done | median
}
dsq_q() { "$dsq" --db "$db" --csv "$1" | tail -n +2; }
sq_q() { sqlite3 -csv "$sdb" "$1"; }

# ---- 2b. counts check: every event of the CSV is one dsq event --------------------
check_rhk="skipped (-x)" check_f="skipped (-x)"
if [ "$check" = 1 ]; then
  note "checking event counts (dsq vs CSV in sqlite)"
  dsq_q "count by run, host, kind" > "$out/count_rhk.dsq"
  sq_q "SELECT run, host, kind, count(*) FROM ev GROUP BY 1, 2, 3" > "$out/count_rhk.sq"
  check_rhk=$(compare "$out/count_rhk.dsq" "$out/count_rhk.sq")
  dsq_q "count Max_MA, count CurrSamplesPerSec, count loss by run" > "$out/count_f.dsq"
  sq_q "SELECT run, count(Max_MA), count(CurrSamplesPerSec), count(loss) FROM ev GROUP BY run" \
    > "$out/count_f.sq"
  check_f=$(compare "$out/count_f.dsq" "$out/count_f.sq")
fi

# ---- 4. timed queries --------------------------------------------------------------
note "timing queries (warm run + median of $reps; of 1 when the warm run takes > ${slow}s)"
res=() forms=()
for i in 0 1 2 3; do
  d=$(bench "$out/q$i.dsq" 1 "$dsq" --db "$db" --csv "${names[$i]}")
  declare -n vs=sq$i
  best="" same=""
  for ((j = 0; j < ${#vs[@]}; j++)); do
    label=${vs[$j]%%|*} sql=${vs[$j]#*|}
    s=$(bench "$out/q$i.sq$j" 0 sqlite3 -csv "$sdb" "$sql")
    forms+=("${names[$i]}|$label|$s|$(compare "$out/q$i.dsq" "$out/q$i.sq$j")")
    if [ -z "$best" ] || [ "$(echo "$s < $best" | bc)" = 1 ]; then best=$s bj=$j; fi
  done
  unset -n vs
  res+=("$d|$best|$(compare "$out/q$i.dsq" "$out/q$i.sq$bj")")
done

# the floor: starting the process and opening the database
floor_d=$(bench "$out/floor.dsq" 0 "$dsq" --version)
floor_s=$(bench "$out/floor.sq" 0 sqlite3 "$sdb" "SELECT 1;")

# ---- 5. report ---------------------------------------------------------------------
echo "dsq query benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores," \
     "load average at start $load0, now $(cut -d' ' -f1-3 /proc/loadavg)"
echo "archive: $dir/runs, $nruns runs, $nfiles files, $((arc_bytes / 1000000)) MB zstd;" \
     "generated ${gen_s}"
echo "events: CSV $total, dsq count $dsq_events"
echo "counts check, count by run, host, kind: $check_rhk"
echo "counts check, count Max_MA/CurrSamplesPerSec/loss by run: $check_f"
echo
echo "| query (warm, whole process, median) | dsq ms | sqlite3 best ms | dsq/sqlite | answers |"
echo "|---|---:|---:|---:|---|"
for i in 0 1 2 3; do
  IFS='|' read -r d s same <<<"${res[$i]}"
  echo "| \`${names[$i]}\` | $d | $s | $(printf '%.3f' "$(echo "scale=4; $d / $s" | bc)") | $same |"
done
echo "| (process floor: \`dsq --version\`, \`sqlite3 DB 'SELECT 1'\`) | $floor_d | $floor_s | | |"
echo
echo "| sqlite3 form | ms | answers vs dsq |"
echo "|---|---:|---|"
for f in "${forms[@]}"; do
  IFS='|' read -r n label s same <<<"$f"
  echo "| \`$n\`: $label | $s | $same |"
done
echo
echo "dsq index: ${idx_s} s (fresh, exit $rc), $((dsq_bytes / 1000000)) MB"
echo "sqlite3: load ${sq_load_s} s, indexes + ANALYZE ${sq_ix_s} s, file $((sq_bytes / 1000000)) MB:" \
     "$(while read -r n b; do printf '%s %d MB, ' "$n" "$((b / 1000000))"; done <<<"$sq_sizes")"
echo
echo "sqlite plans:"
for i in 0 1 2 3; do
  declare -n vs=sq$i
  for v in "${vs[@]}"; do
    echo "  ${names[$i]}: ${v%%|*}"
    sqlite3 "$sdb" "EXPLAIN QUERY PLAN ${v#*|}" | grep -E 'INDEX|SCAN|TEMP' | sed 's/^/    /'
  done
  unset -n vs
done
