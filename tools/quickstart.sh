#!/bin/sh
# One command from a fresh checkout: install build dependencies, build dsq in
# release mode, index the bundled sample archive into the default index, and
# answer `dsq "max Max_MA by run"`.
set -eu
cd "$(dirname "$0")/.."
tools/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
echo "built build/dsq"
echo
echo '$ build/dsq index tests/data/archive'
build/dsq index tests/data/archive
echo
echo '$ build/dsq "max Max_MA by run"'
build/dsq "max Max_MA by run"
