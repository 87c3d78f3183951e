#!/bin/sh
# Runs the whole test suite: installs missing build and test dependencies, builds
# with warnings as errors, runs ctest; then does the same with AddressSanitizer and
# UndefinedBehaviorSanitizer. `tools/test.sh --fast` skips the sanitizer pass.
set -eu
cd "$(dirname "$0")/.."
tools/deps.sh --test
jobs="$(nproc)"
run_suite() { # build-dir, extra cmake args...
  dir="$1"; shift
  echo "== $dir: configure + build"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSQ_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  echo "== $dir: ctest"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
}
run_suite build-test
if [ "${1:-}" != "--fast" ]; then
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_suite build-asan -DDSQ_SANITIZE=ON
fi
echo "all tests passed"
