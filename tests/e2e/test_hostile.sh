#!/usr/bin/env bash
# Hostile inputs (issue 6, point 5): one case per kind of input a nightly indexer
# meets in years of logs from crashing jobs. Each case indexes the hostile file
# next to a good one into its own --db and shows: a message naming the file (and
# member, line or offset) with the reason, the good file (and whatever was
# readable in the bad one) indexed, exit status 1 when something was skipped
# (0 when nothing was), and no crash (run_dsq fails any exit above 125; the ASan
# build turns sanitizer reports into exit 199).
#
# Every input is generated here, in $DSQ_TMP, and the big ones (a 200 MB line, a
# decompression bomb) are deleted as soon as their case is done.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool zstd zstd
need_tool gzip gzip
need_tool bzip2 bzip2
need_tool xz xz-utils
need_tool tar tar
need_tool python3 python3

GOOD="$SAMPLE/bert-baseline.log" # 2 DeepSpeed memory reports, peak 1.5 GB

# new_case NAME: a fresh input directory $C holding good.log; $DB is its index.
new_case() {
    C="$DSQ_TMP/$1"
    DB="$DSQ_TMP/db-$1"
    mkdir -p "$C"
    cp "$GOOD" "$C/good.log"
}

# by_file: `count Max_MA by file, host` as "file,host,count" lines, paths relative
# to $C. Archive members are told apart by their host, which dsq takes from a member
# named like a host (node1.log -> node1); "-" is no host.
by_file() {
    query "$DB" "count Max_MA by file, host" --csv | tail -n +2 | sed "s|^$C/||" | sort
}

# python helper: python3 -c with the good log's bytes as `good`
py() {
    python3 - "$GOOD" "$@"
}

# filler lines: text that compresses like a log but is not a report
FILLER_PY='
import random
def filler(n, seed=1):
    r = random.Random(seed)
    return "".join("step %d loss %.4f lr %.2e tokens %d\n" % (i, r.random(), r.random(), r.randrange(10**9))
                   for i in range(n)).encode()
'

# 1. truncated .zst ------------------------------------------------------------------
new_case trunc
py "$C/trunc.log.zst" <<EOF
import subprocess, sys
$FILLER_PY
good = open(sys.argv[1], "rb").read()
z = subprocess.run(["zstd", "-q", "-c"], input=good + filler(40000) + good, capture_output=True, check=True).stdout
open(sys.argv[2], "wb").write(z[:len(z) * 6 // 10])
EOF
run_dsq --db "$DB" index "$C"
expect_code "truncated .zst: index" 1 "$RC"
expect_problem "truncated .zst: named with the reason" "trunc.log.zst" "truncated"
expect_problem "truncated .zst: the message says how far it got" "trunc.log.zst" "after line"
expect_eq "truncated .zst: the good file and the reports before the cut" "good.log,-,2
trunc.log.zst,-,2" "$(by_file)"

# 2. corrupt zstd frames -------------------------------------------------------------
# three frames (reports | filler | reports); one byte in the middle of the second
# frame's compressed data is flipped: its checksum or block decoding fails
new_case frames
py "$C/frames.log.zst" <<EOF
import subprocess, sys
$FILLER_PY
good = open(sys.argv[1], "rb").read()
zs = lambda d: subprocess.run(["zstd", "-q", "-c"], input=d, capture_output=True, check=True).stdout
f1, f2, f3 = zs(good), bytearray(zs(filler(20000))), zs(good)
f2[len(f2) // 2] ^= 0xFF
open(sys.argv[2], "wb").write(f1 + bytes(f2) + f3)
EOF
# and frames of garbage after the zstd magic
printf '\x28\xb5\x2f\xfd\x00\x58\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' >"$C/garbage.log.zst"
run_dsq --db "$DB" index "$C"
expect_code "corrupt frames: index" 1 "$RC"
expect_problem "corrupt frame: named with the reason" "frames.log.zst" "zstd:"
expect_problem "corrupt frame: the compressed offset is given" "frames.log.zst" "compressed offset"
expect_problem "garbage frame: named with the reason" "garbage.log.zst" "zstd:"
expect_eq "corrupt frames: the good file and the frame before the damage" "frames.log.zst,-,2
good.log,-,2" "$(by_file)"

# 3. tar with a corrupt header in the middle -----------------------------------------
new_case tarhdr
mkdir -p "$DSQ_TMP/tarsrc"
cp "$GOOD" "$DSQ_TMP/tarsrc/node1.log"
cp "$GOOD" "$DSQ_TMP/tarsrc/node2.log"
cp "$GOOD" "$DSQ_TMP/tarsrc/node3.log"
tar -C "$DSQ_TMP/tarsrc" -cf "$C/run.tar" node1.log node2.log node3.log
py "$C/run.tar" <<'EOF'
import sys
d = bytearray(open(sys.argv[2], "rb").read())
off = 0
while d[off:off + 100].rstrip(b"\0") != b"node2.log":
    off += 512 + (int(d[off + 124:off + 136].rstrip(b"\0 ") or b"0", 8) + 511) // 512 * 512
d[off:off + 512] = b"\xaa" * 512
open(sys.argv[2], "wb").write(d)
EOF
run_dsq --db "$DB" index "$C"
expect_code "corrupt tar header: index" 1 "$RC"
expect_problem "corrupt tar header: named, with the member before it" "run.tar" "after member node1.log"
expect_problem "corrupt tar header: says what was skipped" "run.tar" "skipped to the next readable member"
expect_eq "corrupt tar header: the members around it are indexed" "good.log,-,2
run.tar,node1,2
run.tar,node3,2" "$(by_file)"

# 4. zip with a bad CRC ----------------------------------------------------------------
new_case zipcrc
py "$C/run.zip" <<'EOF'
import sys, zipfile
good = open(sys.argv[1], "rb").read()
with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_STORED) as z:
    for n in ("node1.log", "node2.log", "node3.log"):
        z.writestr(n, good)
d = bytearray(open(sys.argv[2], "rb").read())
at = d.index(b"node2.log") + 9 + 40   # inside node2.log's stored data, before its reports
d[at] ^= 0x20
open(sys.argv[2], "wb").write(d)
EOF
run_dsq --db "$DB" index "$C"
expect_code "zip bad CRC: index" 1 "$RC"
expect_problem "zip bad CRC: named with its member and the reason" "run.zip: node2.log" "CRC"
expect_eq "zip bad CRC: the other members are indexed (and what node2.log held)" "good.log,-,2
run.zip,node1,2
run.zip,node2,2
run.zip,node3,2" "$(by_file)"

# 5. gzip with trailing garbage ------------------------------------------------------
new_case gztrail
gzip -c "$GOOD" >"$C/trail.log.gz"
printf 'GARBAGE\001\002 after the end of the stream\n' >>"$C/trail.log.gz"
# not garbage: zero padding (tape blocks), and two gzip members back to back
{ gzip -c "$GOOD"; head -c 1000 /dev/zero; } >"$C/padded.log.gz"
{ gzip -c "$GOOD"; gzip -c "$GOOD"; } >"$C/twomembers.log.gz"
# the same inside a tar: a .gz and a .bz2 member with garbage behind their streams,
# and a .gz member with zero padding behind it (no garbage)
mkdir -p "$DSQ_TMP/gzsrc"
cp "$C/trail.log.gz" "$DSQ_TMP/gzsrc/node1.log.gz"
{ bzip2 -c "$GOOD"; printf 'GARBAGE\001\002\n'; } >"$DSQ_TMP/gzsrc/node2.log.bz2"
xz -c "$GOOD" >"$DSQ_TMP/gzsrc/node3.log.xz"
cp "$C/padded.log.gz" "$DSQ_TMP/gzsrc/node4.log.gz"
tar -C "$DSQ_TMP/gzsrc" -cf "$C/run.tar" node1.log.gz node2.log.bz2 node3.log.xz node4.log.gz
# garbage after a tar's end-of-archive marker (and its zero padding): in a plain
# tar, and inside the gzip stream of a tar.gz (libarchive stops at the marker)
cp "$GOOD" "$DSQ_TMP/gzsrc/node5.log"
{ tar -C "$DSQ_TMP/gzsrc" -cf - node5.log; printf 'GARBAGE after the end of the tar\n'; } >"$C/tarend.tar"
gzip -c "$C/tarend.tar" >"$C/tarend.tar.gz"
run_dsq --db "$DB" index "$C"
expect_code "gzip trailing garbage: index" 1 "$RC"
expect_problem "gzip trailing garbage: named with the reason and offset" "trail.log.gz" "trailing garbage after the gzip data (at byte"
expect_problem "gzip trailing garbage in a tar member: named with archive, member, reason and offset" "run.tar: node1.log.gz" "trailing garbage after the gzip data (at byte"
expect_problem "bzip2 trailing garbage in a tar member: named with archive, member and reason" "run.tar: node2.log.bz2" "trailing garbage after the bzip2 data"
expect_not_contains "gzip zero padding in a tar member is no problem" "node4.log.gz" "$ERR"
expect_problem "garbage after a tar's end: named with the reason and offset" "tarend.tar:" "after the tar's end-of-archive marker (at byte 10240 of the tar)"
# (a build that reads gzip through libarchive, DSQ_ISAL=OFF, cannot see past the marker
# inside the gzip stream: libarchive stops there; the tar's content is indexed all the same)
if "$DSQ" --version | grep -q "gzip: zlib (libarchive)"; then
    echo "skip: garbage after a tar's end inside a tar.gz (gzip read through libarchive)"
else
    expect_problem "garbage after a tar's end inside a tar.gz: named with the reason and offset" "tarend.tar.gz:" "after the tar's end-of-archive marker (at byte 10240 of the tar)"
fi
expect_not_contains "gzip zero padding is no problem" "padded.log.gz" "$ERR"
expect_not_contains "two gzip members are no problem" "twomembers.log.gz" "$ERR"
expect_eq "gzip trailing garbage: everything readable is indexed, compressed members too" "good.log,-,2
padded.log.gz,-,2
run.tar,node1,2
run.tar,node2,2
run.tar,node3,2
run.tar,node4,2
tarend.tar,node5,2
tarend.tar.gz,node5,2
trail.log.gz,-,2
twomembers.log.gz,-,4" "$(by_file)"

# 6. binary garbage --------------------------------------------------------------------
new_case binary
py "$C" <<'EOF'
import random, subprocess, sys
root = sys.argv[2]
r = random.Random(7)
junk = bytes(r.getrandbits(8) for _ in range(1 << 16))
open(root + "/core.bin", "wb").write(junk)
open(root + "/core.bin.gz", "wb").write(subprocess.run(["gzip", "-c"], input=junk, capture_output=True).stdout)
# garbage behind real magic bytes: must be reported, not read as text
for name, magic in [("fake.gz", b"\x1f\x8b"), ("fake.bz2", b"BZh9"), ("fake.xz", b"\xfd7zXZ\x00"),
                    ("fake.zst", b"\x28\xb5\x2f\xfd"), ("fake.zip", b"PK\x03\x04")]:
    open(root + "/" + name, "wb").write(magic + junk[:4096])
open(root + "/fake.tar", "wb").write(junk[:257] + b"ustar" + junk[262:10240])
EOF
run_dsq --db "$DB" index "$C"
expect_code "binary garbage: index" 1 "$RC"
expect_problem "binary garbage: named with the reason" "core.bin:" "binary data, not text"
expect_problem "compressed binary garbage: named with the reason" "core.bin.gz" "binary data, not text"
for f in fake.gz fake.tar; do
    expect_problem "garbage behind magic bytes: $f named" "$f" "magic bytes but is no valid"
done
# "BZh9" is text, so bzip2 is known by its block header too: without one this is binary
expect_problem "garbage behind bzip2's text magic: named" "fake.bz2" "binary data, not text"
expect_problem "garbage behind xz magic: named" "fake.xz" "corrupted input data"
expect_problem "garbage behind zstd magic: named" "fake.zst" "zstd:"
expect_problem "garbage behind zip magic: named" "fake.zip" "zip"
expect_eq "binary garbage: the good file is indexed" "good.log,-,2" "$(by_file)"

# 7. NUL-filled files ------------------------------------------------------------------
new_case nul
head -c 1048576 /dev/zero >"$C/zeros.log"
# a crashed writer: the log, then a preallocated tail of NULs never written
{ cat "$GOOD"; head -c 3000000 /dev/zero; } >"$C/crash-tail.log"
# logrotate copytruncate: a hole of NULs, then the log
{ head -c 2000000 /dev/zero; cat "$GOOD"; } >"$C/copytruncate.log"
head -c 100000 /dev/zero | zstd -q -c >"$C/zeros.log.zst"
run_dsq --db "$DB" index "$C"
expect_code "NUL-filled files: index" 1 "$RC"
expect_problem "NUL-only file: named with the reason" "zeros.log (byte 1048576)" "only NUL bytes"
expect_problem "NUL-only .zst: named with the reason" "zeros.log.zst" "only NUL bytes"
expect_not_contains "a log with a NUL tail is no problem" "crash-tail" "$ERR"
expect_not_contains "a log after a NUL hole is no problem" "copytruncate" "$ERR"
expect_eq "NUL-filled files: the logs around the NULs are indexed" "copytruncate.log,-,2
crash-tail.log,-,2
good.log,-,2" "$(by_file)"

# 8. empty files -----------------------------------------------------------------------
new_case empty
: >"$C/empty.log"
: >"$C/empty.log.zst"
gzip -c </dev/null >"$C/empty.log.gz"
zstd -q -c </dev/null >"$C/empty-frame.log.zst"
bzip2 -c </dev/null >"$C/empty.log.bz2"
run_dsq --db "$DB" index "$C"
expect_code "empty files: nothing is skipped" 0 "$RC"
expect_eq "empty files: no message" "" "$ERR"
expect_contains "empty files: every file is counted" "indexed 6 files" "$OUT"
expect_eq "empty files: the good file is indexed" "good.log,-,2" "$(by_file)"

# 9. a 200 MB line ---------------------------------------------------------------------
# plain (mmap'd) and as .zst (streamed): the line is cut at the 1 MiB cap, and the
# reports before and after it are found. The .zst is decoded in bounded memory.
new_case longline
py "$C/long.log" <<'EOF'
import sys
good = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb") as f:
    f.write(good)
    block = b"x" * (1 << 20)
    for _ in range(200):
        f.write(block)
    f.write(b"\n")
    f.write(good)
EOF
zstd -q -c "$C/long.log" >"$C/longz.log.zst"
run_dsq --db "$DB" index "$C"
expect_code "200 MB line: nothing is skipped" 0 "$RC"
expect_contains "200 MB line: both copies are cut and counted" "cut 2 lines longer than the line cap" "$OUT"
expect_eq "200 MB line: the reports around it are indexed" "good.log,-,2
long.log,-,4
longz.log.zst,-,4" "$(by_file)"
rm -f "$C/long.log"
maxrss=$(python3 - "$DSQ" "$DSQ_TMP/db-longline-z" "$C/longz.log.zst" <<'EOF'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "--db", sys.argv[2], "index", sys.argv[3]], capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
EOF
)
if [ "$maxrss" -lt 200 ]; then
    pass "200 MB line in a .zst: decoded in $maxrss MB of memory"
else
    fail "200 MB line in a .zst: dsq used $maxrss MB (a bounded splitter should need far less)"
fi
rm -rf "$C"

# 10. invalid UTF-8 --------------------------------------------------------------------
new_case utf8
py "$C/latin1.log" <<'EOF'
import sys
good = open(sys.argv[1], "rb").read()
lines = good.split(b"\n")
bad = b"caf\xe9 \xff\xfe \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf overlong\n"
# an invalid byte inside a report's label, and lines of invalid UTF-8 around it
lines[1] = lines[1] + b" \xe9t\xe9"
open(sys.argv[2], "wb").write(bad * 3 + b"\n".join(lines) + bad)
EOF
run_dsq --db "$DB" index "$C"
expect_code "invalid UTF-8: nothing is skipped" 0 "$RC"
expect_eq "invalid UTF-8: no message" "" "$ERR"
expect_eq "invalid UTF-8: the reports are found" "good.log,-,2
latin1.log,-,2" "$(by_file)"
run_dsq --db "$DB" --json "count Max_MA by label"
expect_code "invalid UTF-8: --json query" 0 "$RC"
if printf '%s\n' "$OUT" | python3 -c 'import json, sys
for l in sys.stdin.buffer:
    json.loads(l.decode("utf-8"))' 2>/dev/null; then
    pass "invalid UTF-8: --json output is valid UTF-8 JSON"
else
    fail "invalid UTF-8: --json output is not valid UTF-8 JSON"
    show_last
fi

# 11. ANSI escapes ---------------------------------------------------------------------
# coloured log lines, escapes in a report's label, and a tar member whose name holds
# an escape: nothing may reach the terminal raw through dsq's own messages
new_case ansi
py "$C/colour.log" <<'EOF'
import sys
good = open(sys.argv[1], "rb").read()
lines = good.split(b"\n")
lines[1] = lines[1] + b" \x1b[31mred\x1b[0m"
out = b"\x1b[32mINFO\x1b[0m starting \x1b]0;title\x07\n" + b"\n".join(lines) + b"\x1b[2J\x1b[H\n"
open(sys.argv[2], "wb").write(out)
EOF
py "$C/esc.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[2], "w", format=tarfile.PAX_FORMAT) as t:
    data = b"\x1f\x8b not gzip at all " * 10
    ti = tarfile.TarInfo("evil\x1b]0;pwned\x07\x1b[2J.log.gz")
    ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))
EOF
run_dsq --db "$DB" index "$C"
expect_code "ANSI escapes: the damaged member is skipped" 1 "$RC"
expect_problem "ANSI escapes: the member is named, escapes defused" "esc.tar: evil?]0;pwned??[2J.log.gz" "magic bytes"
if printf '%s' "$ERR" | grep -q $'\033'; then
    fail "ANSI escapes: an escape byte reached stderr"
    show_last
else
    pass "ANSI escapes: no escape byte in the messages"
fi
expect_eq "ANSI escapes: the coloured log's reports are found" "colour.log,-,2
good.log,-,2" "$(by_file)"
# query output: a label holding escapes is shown with them defused, in every format
for fmt in "" --csv --json; do
    # shellcheck disable=SC2086 # no option for the table
    run_dsq --db "$DB" $fmt "count Max_MA by label"
    expect_code "ANSI escapes: query ${fmt:-(table)}" 0 "$RC"
    if printf '%s' "$OUT" | grep -q $'\033'; then
        fail "ANSI escapes: an escape byte reached the ${fmt:-table} output"
        show_last
    else
        pass "ANSI escapes: no escape byte in the ${fmt:-table} output"
    fi
done
expect_contains "ANSI escapes: the label is kept, escapes \\u-escaped in JSON" 'Engine before forward \u001b[31mred\u001b[0m' "$OUT"
run_dsq --db "$DB" "count Max_MA by label"
expect_contains "ANSI escapes: the label is shown defused" "Engine before forward ?[31mred?[0m" "$OUT"

# 12. member names with ../ and absolute paths -----------------------------------------
# recorded as names only: nothing is written anywhere, inside or outside the tree
new_case paths
ABS="$DSQ_TMP/outside/node3.log"
py "$C/evil.tar" "$ABS" <<'EOF'
import io, sys, tarfile, zipfile
good = open(sys.argv[1], "rb").read()
names = ["../node1.log", "../../node2.log", sys.argv[3], "a/../../node4.log", "./node5.log"]
with tarfile.open(sys.argv[2], "w", format=tarfile.PAX_FORMAT) as t:
    for n in names:
        ti = tarfile.TarInfo(n)
        ti.size = len(good)
        t.addfile(ti, io.BytesIO(good))
    link = tarfile.TarInfo("link.log")  # a symlink member pointing outside: never followed
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    t.addfile(link)
with zipfile.ZipFile(sys.argv[2].replace(".tar", ".zip"), "w") as z:
    for n in names:
        z.writestr(zipfile.ZipInfo(n), good)
EOF
mkdir -p "$DSQ_TMP/cwd"
tree_list() { find "$DSQ_TMP" -path "$DB" -prune -o -path "$DSQ_TMP/cwd" -prune -o -print | sort; }
before=$(tree_list)
cd "$DSQ_TMP/cwd" || die "cd $DSQ_TMP/cwd"
run_dsq --db "$DB" index "$C"
cd - >/dev/null || die "cd back"
expect_code "../ and absolute member names: nothing is skipped" 0 "$RC"
expect_eq "../ and absolute member names: no file created anywhere" "" \
    "$(comm -13 <(printf '%s\n' "$before") <(tree_list))"
expect_eq "../ and absolute member names: nothing written in the working directory" "" \
    "$(ls -A "$DSQ_TMP/cwd")"
check "../ and absolute member names: the absolute path was not written" test ! -e "$ABS"
check "../ and absolute member names: no node1.log above the tree" test ! -e "$DSQ_TMP/node1.log"
check "../ and absolute member names: no node2.log two levels up" test ! -e "$(dirname "$DSQ_TMP")/node2.log"
expect_eq "../ and absolute member names: every member indexed" "evil.tar,node1,2
evil.tar,node2,2
evil.tar,node3,2
evil.tar,node4,2
evil.tar,node5,2
evil.zip,node1,2
evil.zip,node2,2
evil.zip,node3,2
evil.zip,node4,2
evil.zip,node5,2
good.log,-,2" "$(by_file)"

# 13. a decompression bomb ---------------------------------------------------------------
# 1.25 GiB of text (lines of 4 MiB) behind one report, in a .zst of about 50 KB:
# over 1 GiB decoded and over 1000 times the file size, the file is stopped
new_case bomb
python3 - "$GOOD" <<'EOF' | zstd -q -1 -c >"$C/bomb.log.zst"
import sys
out = sys.stdout.buffer
out.write(open(sys.argv[1], "rb").read())
line = b"A" * ((4 << 20) - 1) + b"\n"
for _ in range(320):
    out.write(line)
EOF
# a tar.zst whose middle member is 1.25 GiB of binary (refused at its first chunk):
# getting to the next member would mean decoding all of it, so the file is stopped
# before libarchive does
python3 - "$GOOD" <<'EOF' | zstd -q -1 -c >"$C/skip.tar.zst"
import io, sys, tarfile
class Binary(io.RawIOBase):
    left = 1280 << 20
    def readable(self):
        return True
    def readinto(self, b):
        n = min(len(b), self.left)
        b[:n] = (b"\x01\x02\x03\x04" * (n // 4 + 1))[:n]
        self.left -= n
        return n
good = open(sys.argv[1], "rb").read()
with tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.USTAR_FORMAT) as t:
    ti = tarfile.TarInfo("node1.log")
    ti.size = len(good)
    t.addfile(ti, io.BytesIO(good))
    ti = tarfile.TarInfo("core.bin")
    ti.size = Binary.left
    t.addfile(ti, io.BufferedReader(Binary(), 1 << 20))
    ti = tarfile.TarInfo("node2.log")
    ti.size = len(good)
    t.addfile(ti, io.BytesIO(good))
EOF
start=$(date +%s)
run_dsq --db "$DB" index "$C"
took=$(($(date +%s) - start))
expect_code "decompression bomb: index" 1 "$RC"
expect_problem "decompression bomb: named with the limit" "bomb.log.zst" "decompression bomb"
expect_problem "decompression bomb: the limit is stated" "bomb.log.zst" "1 GiB and 1000x the file size"
expect_problem "binary bomb member: refused" "skip.tar.zst: core.bin" "binary data"
expect_problem "binary bomb member: not skipped by decoding it" "skip.tar.zst" "skipping past member core.bin would decode"
expect_eq "decompression bomb: the good file and what came before the limit" "bomb.log.zst,-,2
good.log,-,2
skip.tar.zst,node1,2" "$(by_file)"
echo "note: both bombs indexed in $took s"
rm -rf "$C"

# 14. directory symlink loops --------------------------------------------------------------
new_case loops
mkdir -p "$C/run/sub"
cp "$GOOD" "$C/run/sub/rank0.log"
ln -s .. "$C/run/sub/up"          # to its parent
ln -s . "$C/run/self"             # to itself
ln -s "$C" "$C/run/sub/root"      # to the root, absolute
ln -s sub "$C/run/sideways"       # to a sibling: no loop, simply not followed
ln -s b.log "$C/run/a.log"        # file links in a circle
ln -s a.log "$C/run/b.log"
run_dsq --db "$DB" index "$C"
expect_code "symlink loops: index" 1 "$RC"
for l in run/sub/up run/self run/sub/root; do
    expect_problem "symlink loop $l: named with the reason" "$l:" "symbolic link loop"
done
expect_not_contains "a link to a sibling directory is no loop" "sideways" "$ERR"
expect_problem "file links in a circle: named with the reason" "run/a.log" "Too many levels of symbolic links"
expect_eq "symlink loops: every file indexed once" "good.log,-,2
run/sub/rank0.log,-,2" "$(by_file)"

# 15. unreadable files --------------------------------------------------------------------
if [ "$(id -u)" = 0 ]; then
    echo "note: running as root, which can read a chmod 000 file or directory: case 15 is left out"
else
    new_case unreadable
    cp "$GOOD" "$C/secret.log"
    chmod 000 "$C/secret.log"
    mkdir -p "$C/locked"
    cp "$GOOD" "$C/locked/hidden.log"
    chmod 000 "$C/locked"
    run_dsq --db "$DB" index "$C"
    chmod 755 "$C/locked"
    chmod 644 "$C/secret.log"
    expect_code "unreadable files: index" 1 "$RC"
    expect_problem "unreadable file: named with the reason" "secret.log" "Permission denied"
    expect_problem "unreadable directory: named with the reason" "locked" "Permission denied"
    expect_eq "unreadable files: the readable file is indexed" "good.log,-,2" "$(by_file)"
fi

# 16. xz with trailing bytes --------------------------------------------------------------
# garbage after an xz stream: what the stream holds is indexed, the garbage named with
# the file (and member) and where it starts, exit status 1; as a single file, a tar
# member, and after a tar.xz's xz stream. Not garbage: stream padding (zero bytes in
# whole 4-byte words) and streams back to back.
new_case xztrail
xz -c "$GOOD" >"$C/trail.log.xz"
XZ_END=$(stat -c %s "$C/trail.log.xz")
printf 'GARBAGE\001\002 after the end of the stream\n' >>"$C/trail.log.xz"
{ xz -c "$GOOD"; head -c 1024 /dev/zero; } >"$C/padded.log.xz"
{ xz -c "$GOOD"; head -c 8 /dev/zero; xz -c "$GOOD"; } >"$C/twostreams.log.xz"
mkdir -p "$DSQ_TMP/xzsrc"
cp "$C/trail.log.xz" "$DSQ_TMP/xzsrc/node1.log.xz"
cp "$C/padded.log.xz" "$DSQ_TMP/xzsrc/node2.log.xz"
tar -C "$DSQ_TMP/xzsrc" -cf "$C/run.tar" node1.log.xz node2.log.xz
cp "$GOOD" "$DSQ_TMP/xzsrc/node3.log"
{ tar -C "$DSQ_TMP/xzsrc" -cf - node3.log | xz -c; printf 'GARBAGE\n'; } >"$C/after.tar.xz"
run_dsq --db "$DB" index "$C"
expect_code "xz trailing garbage: index" 1 "$RC"
expect_problem "xz trailing garbage: named with the reason and offset" "trail.log.xz" \
    "trailing garbage after the xz data (at byte $XZ_END)"
expect_problem "xz trailing garbage in a tar member: named with archive, member, reason and offset" \
    "run.tar: node1.log.xz" "trailing garbage after the xz data (at byte $XZ_END)"
expect_problem "garbage after a tar.xz's xz stream: named with the reason" "after.tar.xz" \
    "trailing garbage after the xz data"
for f in padded.log.xz twostreams.log.xz node2.log.xz; do
    expect_not_contains "xz: $f is no problem" "$f" "$ERR"
done
expect_eq "xz trailing garbage: everything readable is indexed" "after.tar.xz,node3,2
good.log,-,2
padded.log.xz,-,2
run.tar,node1,2
run.tar,node2,2
trail.log.xz,-,2
twostreams.log.xz,-,4" "$(by_file)"

# 17. an empty log compressed twice -----------------------------------------------------
# every order of gzip, xz, bzip2 and zstd, as single files and as tar members: empty
# logs, no problem
new_case empty2
mkdir -p "$DSQ_TMP/empty2src"
for o in gzip xz bzip2 zstd; do
    for i in gzip xz bzip2 zstd; do
        printf '' | "$i" -c | "$o" -q -c >"$DSQ_TMP/empty2src/e.$i.$o"
    done
done
cp "$DSQ_TMP"/empty2src/e.* "$C/"
tar -C "$DSQ_TMP/empty2src" -cf "$C/run.tar" .
run_dsq --db "$DB" index "$C"
expect_code "empty logs compressed twice: nothing is skipped" 0 "$RC"
expect_eq "empty logs compressed twice: no message" "" "$ERR"
expect_contains "empty logs compressed twice: every file is counted" "indexed 18 files (33 members)" "$OUT"
expect_contains "empty logs compressed twice: nothing decoded but the good log" "decompressed $(stat -c %s "$GOOD") B" "$OUT"

# 18. zstd as the outer layer ------------------------------------------------------------
# a log compressed by gzip, xz or bzip2 and then by zstd (`gzip -c f | zstd`): every
# layer is decoded, as a single file and as a tar member; garbage after the inner
# gzip stream is named with the file (and member) and where it starts in what zstd
# decodes, what came before it is indexed, exit status 1; a tar.gz.zst is a tar.
new_case zstdouter
mkdir -p "$DSQ_TMP/zosrc"
gzip -c <"$GOOD" | zstd -q -c >"$C/a.log.gz.zst"
xz -c "$GOOD" | zstd -q -c >"$C/b.log.xz.zst"
bzip2 -c "$GOOD" | zstd -q -c >"$C/c.log.bz2.zst"
GZ_END=$(gzip -c <"$GOOD" | wc -c)
{ gzip -c <"$GOOD"; printf 'GARBAGE\001\002 after the gzip stream\n'; } | zstd -q -c >"$C/trail.log.gz.zst"
cp "$C/trail.log.gz.zst" "$DSQ_TMP/zosrc/node1.log.gz.zst"
cp "$C/c.log.bz2.zst" "$DSQ_TMP/zosrc/node2.log.bz2.zst"
tar -C "$DSQ_TMP/zosrc" -cf "$C/run.tar" node1.log.gz.zst node2.log.bz2.zst
cp "$GOOD" "$DSQ_TMP/zosrc/node3.log"
tar -C "$DSQ_TMP/zosrc" -cf - node3.log | gzip -c | zstd -q -c >"$C/run2.tar.gz.zst"
run_dsq --db "$DB" index "$C"
expect_code "zstd outer layer: index" 1 "$RC"
expect_problem "garbage after the gzip stream under zstd: named with the reason and offset" \
    "trail.log.gz.zst" "trailing garbage after the gzip data (at byte $GZ_END of the decoded zstd data)"
expect_problem "... in a tar member: named with archive, member, reason and offset" \
    "run.tar: node1.log.gz.zst" "trailing garbage after the gzip data (at byte $GZ_END of the decoded zstd data)"
for f in a.log.gz.zst b.log.xz.zst c.log.bz2.zst node2.log.bz2.zst run2.tar.gz.zst; do
    expect_not_contains "zstd outer layer: $f is no problem" "$f" "$ERR"
done
expect_eq "zstd outer layer: every layer decoded, everything readable indexed" "a.log.gz.zst,-,2
b.log.xz.zst,-,2
c.log.bz2.zst,-,2
good.log,-,2
run.tar,node1,2
run.tar,node2,2
run2.tar.gz.zst,node3,2
trail.log.gz.zst,-,2" "$(by_file)"

e2e_finish
