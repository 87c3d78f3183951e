#!/bin/sh
# Runs the whole test suite: installs missing build and test dependencies, builds
# with warnings as errors, runs ctest; then does the same with AddressSanitizer and
# UndefinedBehaviorSanitizer. `tools/test.sh --fast` skips the sanitizer pass.
# DSQ_SLOW_TESTS=1 also runs the tests labelled slow (a one-node Slurm cluster,
# about a minute; installs slurm-wlm and munge as root) in the first pass.
set -eu
cd "$(dirname "$0")/.."
tools/deps.sh --test
jobs="$(nproc)"
run_suite() { # build-dir, ctest label filter, extra cmake args...
  dir="$1"; filter="$2"; shift 2
  echo "== $dir: configure + build"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSQ_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  echo "== $dir: ctest"
  # shellcheck disable=SC2086 # filter is empty or one option and its value
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" $filter
}
run_suite build-test ""
if [ "${1:-}" != "--fast" ]; then
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_suite build-asan "-LE slow" -DDSQ_SANITIZE=ON
fi
echo "all tests passed"
