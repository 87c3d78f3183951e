#!/usr/bin/env bash
# Runs every libFuzzer target for N seconds each (default 60) under ASan+UBSan.
#   tools/fuzz.sh [SECONDS] [TARGET...]
# Builds with clang into build-fuzz (-DDSQ_FUZZ=ON -DDSQ_SANITIZE=ON), seeds each
# target's corpus from tests/golden and tests/fuzz/corpus, and keeps what the
# fuzzer finds in build-fuzz/corpus/<target>. A crash leaves crash-* files in
# build-fuzz/; add the input to tests/fuzz/corpus/ so the replay test keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}; shift || true
command -v clang >/dev/null || { echo "needs clang (apt-get install clang)"; exit 2; }
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSQ_FUZZ=ON \
  -DDSQ_SANITIZE=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" >/dev/null
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scan shapes pdsh prefix deepspeed hf megatron mmengine glog torchrun
                                     traceback pywarn nccl misc tqdm lines time query input values)
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  case $t in
    time|query|input|values) cp -n tests/fuzz/corpus-"$t"/* "$corpus/" 2>/dev/null || true ;;
    *) cp -n tests/golden/*/*.log tests/fuzz/corpus/* "$corpus/" 2>/dev/null || true ;;
  esac
  echo "== fuzz_$t for ${secs}s"
  (cd build-fuzz && ./tests/fuzz/fuzz_"$t" -max_total_time="$secs" -max_len=65536 \
     -print_final_stats=1 "corpus/$t" 2>&1 | grep -E "stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY" || true)
done
