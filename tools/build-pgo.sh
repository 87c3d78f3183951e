#!/usr/bin/env bash
# A profile-guided Release build of dsq: build instrumented, train, build again
# using the profile. The lexer is branchy re2c code, which the profile lays out
# for the line shapes logs really have (measured: +15-25% lexing; bench/README.md).
#
#   tools/build-pgo.sh [BUILD_DIR]        (default: build-pgo)
#
# Training (about a minute): `dsq index` with -j 1 and -j 2 over the shared corpus
# (when present), the bundled sample archive, a generated mixed archive and a
# generated single log (tools/gen-archive.py --seed 7: not the seed the benchmarks
# use), then queries, `runs`, `fields`, `show`, `explain` and compaction on what
# was built. The result is BUILD_DIR/dsq; `dsq --version` says "profile-guided".
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/build-pgo}
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
prof="$out/pgo-profile"
work=$(mktemp -d "${TMPDIR:-/tmp}/dsq-pgo.XXXXXX")
trap 'rm -rf "$work"' EXIT
jobs=$(nproc)
for tool in cmake zstd python3; do
  command -v "$tool" >/dev/null || { echo "build-pgo.sh needs $tool: run tools/deps.sh --test first" >&2; exit 2; }
done

echo "== instrumented build in $out"
rm -rf "$prof"
cmake -S "$here" -B "$out" -DCMAKE_BUILD_TYPE=Release -DDSQ_PGO=generate -DDSQ_PGO_DIR="$prof" >/dev/null
cmake --build "$out" -j "$jobs" --target dsq >/dev/null

echo "== training"
dsq="$out/dsq"
gen=(python3 "$here/tools/gen-archive.py" --seed 7)
"${gen[@]}" "$work/archive" --runs 6 --hosts 2 --ranks 4 --size 40M >/dev/null
"${gen[@]}" --single "$work/single.log" --hosts 4 --ranks 8 --size 40M >/dev/null
zstd -q -3 --rm "$work/single.log" -o "$work/single.log.zst"
inputs=("$here/tests/data/archive" "$work/archive" "$work/single.log.zst")
[ -d "$here/../shared/corpus" ] && inputs+=("$here/../shared/corpus")
for j in 1 2; do
  "$dsq" index -q -j "$j" --db "$work/db$j" "${inputs[@]}" >/dev/null 2>&1 || true
done
db="$work/db2"
for q in "max Max_MA by run" "p95 CurrSamplesPerSec by run" "count by host" \
         "avg loss by run every 1h" "count by run, kind" "max Max_MA by host where run ~ '*'"; do
  "$dsq" --db "$db" "$q" >/dev/null 2>&1 || true
  "$dsq" --db "$db" --csv "$q" >/dev/null 2>&1 || true
done
"$dsq" --db "$db" runs >/dev/null 2>&1 || true
"$dsq" --db "$db" fields >/dev/null 2>&1 || true
"$dsq" --db "$db" show "kind = failure" >/dev/null 2>&1 || true
"$dsq" --db "$db" compact >/dev/null 2>&1 || true
for f in "$here"/tests/data/archive/*.log; do "$dsq" explain "$f" >/dev/null 2>&1 || true; done

echo "== optimized build"
cmake -S "$here" -B "$out" -DCMAKE_BUILD_TYPE=Release -DDSQ_PGO=use -DDSQ_PGO_DIR="$prof" >/dev/null
cmake --build "$out" -j "$jobs" >/dev/null
"$out/dsq" --version
