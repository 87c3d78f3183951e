#!/usr/bin/env bash
# Two or more builds of dsq indexing one input in turn, many times: the comparison
# that survives this shared machine's slow and fast minutes (each round runs every
# build once, in turn, so a slow minute weighs on all of them alike).
#
#   bench/bench_alternate.sh ROUNDS INPUT BUILD...
#
# A BUILD is a build directory holding dsq, a dsq binary, or a command line whose
# last word is one (e.g. "DSQ_HUGE_PAGES=0 build/dsq": environment assignments before
# it). Each run writes a fresh index under a temporary directory. Prints, per build,
# the median and minimum wall time, the median CPU (user + system, all threads) and
# the median peak RSS (/usr/bin/time). Nothing asserts a threshold.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: bench/bench_alternate.sh ROUNDS INPUT BUILD..." >&2
  exit 2
fi
rounds=$1; input=$2; shift 2
tmp=$(mktemp -d /tmp/dsq-bench-alt.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
builds=("$@")
cmd_of() { # the command line of a build: env assignments kept, the binary resolved
  local words last
  read -r -a words <<<"$1"
  last=${words[${#words[@]}-1]}
  [ -d "$last" ] && last=$last/dsq
  words[${#words[@]}-1]=$last
  printf '%s\n' "${words[@]}"
}
for ((r = 1; r <= rounds; r++)); do
  for ((b = 0; b < ${#builds[@]}; b++)); do
    mapfile -t cmd < <(cmd_of "${builds[$b]}")
    rm -rf "$tmp/db"
    status=0
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" env "${cmd[@]}" index -q --db "$tmp/db" \
      "$input" >/dev/null 2>"$tmp/err" || status=$?
    if [ "$status" -gt 1 ]; then # 1: something was skipped (still a whole run)
      echo "bench_alternate: ${builds[$b]} exited $status: $(head -c 300 "$tmp/err")" >&2
      exit 1
    fi
    awk '{printf "%.3f %.3f %d\n", $1, $2 + $3, $4}' "$tmp/time" >>"$tmp/runs.$b"
  done
done
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
printf '%-40s %9s %9s %9s %12s\n' "build" "median s" "min s" "cpu s" "peak RSS MB"
for ((b = 0; b < ${#builds[@]}; b++)); do
  f=$tmp/runs.$b
  printf '%-40s %9.3f %9.3f %9.3f %12.1f\n' "${builds[$b]}" \
    "$(cut -d' ' -f1 "$f" | median)" "$(cut -d' ' -f1 "$f" | sort -n | head -1)" \
    "$(cut -d' ' -f2 "$f" | median)" "$(cut -d' ' -f3 "$f" | median | awk '{print $1 / 1024}')"
done
