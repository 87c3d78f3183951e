#!/bin/sh
# Installs what dsq needs on Debian/Ubuntu, only if something is missing.
#   tools/deps.sh          build dependencies
#   tools/deps.sh --test   build + test dependencies (compressors, zip, python3, mdb_dump,
#                          strace)
set -eu
pkgs="build-essential cmake pkg-config re2c libzstd-dev liblmdb-dev libarchive-dev liblzma-dev libisal-dev"
if [ "${1:-}" = "--test" ]; then
  pkgs="$pkgs zstd gzip xz-utils bzip2 tar zip python3 lmdb-utils strace"
fi
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
