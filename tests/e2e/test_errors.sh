#!/usr/bin/env bash
# Damaged and hostile input: dsq names the file and the reason, indexes everything
# else, exits 1 when something was skipped, and never crashes.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool zstd zstd
need_tool gzip gzip
need_tool tar tar
need_tool python3 python3

# expect_index_status NAME WANT: status of the last run_dsq, and never a crash
expect_index_status() {
    expect_code "$1" "$2" "$RC"
}

# a DeepSpeed memory report (3 lines)
report() { # HOST_PREFIX LABEL MAX_MA
    printf '%s[2024-07-20 21:40:00,000] [INFO] [utils.py:800:see_memory_usage] %s\n' "$1" "$2"
    printf '%s[2024-07-20 21:40:00,000] [INFO] [utils.py:801:see_memory_usage] MA 1.0 GB         Max_MA %s GB         CA 2.0 GB         Max_CA 2 GB \n' "$1" "$3"
    printf '%s[2024-07-20 21:40:00,000] [INFO] [utils.py:808:see_memory_usage] CPU Virtual Memory:  used = 10.0 GB, percent = 1.0%%\n' "$1"
}

# 1. unreadable and truncated files next to good ones ------------------------------
E="$DSQ_TMP/mixed"
cp -r "$SAMPLE" "$E"
# gpu009's log as two zstd frames: the whole log, then a second frame holding one
# more report (a 99.5 GB peak) cut in half. The first frame is read; the second
# never yields a byte.
zstd -q -c "$SAMPLE/llama7b-zero3/gpu009.log" >"$E/llama7b-zero3/gpu009.log.zst"
report "gpu009: " "never seen" 99.5 | zstd -q -c >"$DSQ_TMP/frame2.zst"
head -c $(($(stat -c %s "$DSQ_TMP/frame2.zst") / 2)) "$DSQ_TMP/frame2.zst" >>"$E/llama7b-zero3/gpu009.log.zst"
rm "$E/llama7b-zero3/gpu009.log"
# a corrupt .zst: valid magic, then bytes that are no zstd frame
printf '\x28\xb5\x2f\xfd\x00\x58\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' >"$E/gpt2-zero2/rank2.log.zst"
# a truncated .gz
gzip -c "$SAMPLE/bert-baseline.log" | head -c 100 >"$E/gpt2-zero2/rank3.log.gz"
# a log that cannot be opened: a dangling symbolic link (works as root too)
ln -s "$DSQ_TMP/no-such-file.log" "$E/llama7b-zero3/gpu011.log"
# and, when not root, a file without read permission (it would raise the peak)
if [ "$(id -u)" != 0 ]; then
    report "gpu012: " "secret" 88.0 >"$E/llama7b-zero3/gpu012.log"
    chmod 000 "$E/llama7b-zero3/gpu012.log"
else
    echo "note: running as root, which reads a chmod 000 file: that check is left out"
fi

run_dsq --db "$DSQ_TMP/db-mixed" index "$E"
expect_index_status "damaged files: index" 1
expect_problem "truncated .zst named with its reason" "llama7b-zero3/gpu009.log.zst" "truncated"
expect_problem "corrupt .zst named" "gpt2-zero2/rank2.log.zst" "zstd"
expect_problem "truncated .gz named with its reason" "gpt2-zero2/rank3.log.gz" "truncated"
expect_problem "dangling symlink named with its reason" "llama7b-zero3/gpu011.log" "No such file"
if [ "$(id -u)" != 0 ]; then
    expect_problem "unreadable file named with its reason" "llama7b-zero3/gpu012.log" "Permission denied"
    chmod 644 "$E/llama7b-zero3/gpu012.log"
fi
expect_contains "damaged files: summary says what was skipped" "problems:" "$OUT"
expect_eq "damaged files: the good runs are all there" "$SAMPLE_MAX_TABLE" "$(query "$DSQ_TMP/db-mixed" "max Max_MA by run")"
# gpu009's first frame counts: 2 reports from it, 2 from gpu010
expect_eq "damaged files: what was read before the damage is kept" "$(sample_count_table)" \
    "$(query "$DSQ_TMP/db-mixed" "count Max_MA by run")"

# a dangling symlink given on the command line
run_dsq --db "$DSQ_TMP/db-link" index "$E/llama7b-zero3/gpu011.log" "$SAMPLE/bert-baseline.log"
expect_index_status "dangling symlink argument: index" 1
expect_problem "dangling symlink argument named" "gpu011.log" "No such file"
expect_eq "dangling symlink argument: the other file is indexed" "run,max Max_MA
bert-baseline,1.5" "$(query "$DSQ_TMP/db-link" "max Max_MA by run" --csv)"

# a path that does not exist at all
run_dsq --db "$DSQ_TMP/db-link" index "$DSQ_TMP/not-there"
expect_index_status "missing path: index" 1
expect_problem "missing path named" "not-there" "No such file"

# 2. damaged archives ----------------------------------------------------------------
T="$DSQ_TMP/tars"
mkdir -p "$T/src" "$T/in"
# a plain tar whose middle member's header is clobbered: the members after it are
# still read (the middle one would have raised the peak to 99.5 GB)
cp "$SAMPLE/gpt2-zero2/rank0.log" "$SAMPLE/gpt2-zero2/rank1.log" "$T/src/"
report "" "middle" 99.5 >"$T/src/middle.log"
tar -C "$T/src" -cf "$T/in/gpt2-zero2.tar" rank0.log middle.log rank1.log
python3 - "$T/in/gpt2-zero2.tar" <<'EOF'
import sys
path = sys.argv[1]
d = bytearray(open(path, "rb").read())
off = 0
while d[off:off + 100].rstrip(b"\0") != b"middle.log":
    size = int(d[off + 124:off + 136].rstrip(b"\0 ") or b"0", 8)
    off += 512 + (size + 511) // 512 * 512
d[off:off + 512] = b"\xaa" * 512
open(path, "wb").write(d)
EOF
# a tar of .zst members whose middle member is corrupt zstd
cp "$SAMPLE/llama7b-zero3/gpu009.log" "$SAMPLE/llama7b-zero3/gpu010.log" "$T/src/"
zstd -q -f "$T/src/gpu009.log" "$T/src/gpu010.log"
printf '\x28\xb5\x2f\xfd\x00\x58\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' >"$T/src/bad.log.zst"
tar -C "$T/src" -cf "$T/in/llama7b-zero3.tar" gpu009.log.zst bad.log.zst gpu010.log.zst
# a tar.gz corrupted inside its second member: the first member is kept
python3 - "$SAMPLE/bert-baseline.log" "$T/in/bert-baseline.tar.gz" <<'EOF'
import io, random, subprocess, sys, tarfile
r = random.Random(3)
filler = "".join("step %d loss %.4f tokens %d\n" % (i, r.random(), r.randrange(10**9))
                 for i in range(60000)).encode()
bert = open(sys.argv[1], "rb").read()
bio = io.BytesIO()
with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as t:
    for name, data in [("first.log", bert), ("filler.log", filler), ("last.log", bert)]:
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        ti.mtime = 1700000000
        t.addfile(ti, io.BytesIO(data))
gz = bytearray(subprocess.run(["gzip", "-c", "-n"], input=bio.getvalue(),
                              capture_output=True, check=True).stdout)
at = len(gz) * 2 // 3
for i in range(at, at + 64):
    gz[i] ^= 0x55
open(sys.argv[2], "wb").write(gz)
EOF

run_dsq --db "$DSQ_TMP/db-tars" index "$T/in"
expect_index_status "damaged archives: index" 1
expect_problem "clobbered tar header named" "gpt2-zero2.tar" "damaged"
expect_problem "corrupt .zst member named with its member" "llama7b-zero3.tar: bad.log.zst" "zstd"
expect_problem "corrupt tar.gz named" "bert-baseline.tar.gz" ""
expect_eq "damaged archives: members around the damage are indexed" "run,max Max_MA,count Max_MA
bert-baseline,1.5,2
gpt2-zero2,3.25,4
llama7b-zero3,21.37,4" "$(query "$DSQ_TMP/db-tars" "max Max_MA, count Max_MA by run" --csv)"

# 3. empty files, binary garbage, garbage behind real magic bytes --------------------
G="$DSQ_TMP/garbage"
mkdir -p "$G/plain" "$G/magic"
cp "$SAMPLE/bert-baseline.log" "$G/plain/"
: >"$G/plain/empty.log"
: >"$G/plain/empty.log.zst"
python3 - "$G" "$SAMPLE/bert-baseline.log" <<'EOF'
import random, sys
root, bert = sys.argv[1], open(sys.argv[2], "rb").read()
r = random.Random(7)
junk = bytes(r.getrandbits(8) for _ in range(1 << 16))
open(root + "/plain/garbage.bin", "wb").write(junk)
# NUL bytes, invalid UTF-8, ANSI colours and a short binary blob between two good
# reports (a longer blob would make the file binary: see test_hostile.sh)
lines = bert.split(b"\n")
noisy = b"\n".join(lines[:4]) + b"\n\x00\x00\xff\xfe\xc3\x28 \x1b[31mred\x1b[0m \x00tail\n" + \
        junk[:256].replace(b"\n", b"").replace(b"\r", b"") + b"\n" + b"\n".join(lines[4:])
open(root + "/plain/noisy.log", "wb").write(noisy)
for name, magic in [("fake.zst", b"\x28\xb5\x2f\xfd"), ("fake.gz", b"\x1f\x8b"),
                    ("fake.xz", b"\xfd7zXZ\x00"), ("fake.bz2", b"BZh9"),
                    ("fake.zip", b"PK\x03\x04"), ("fake.tar", None)]:
    data = magic + junk if magic else junk[:257] + b"ustar" + junk[262:]
    open(root + "/magic/" + name, "wb").write(data)
EOF
run_dsq --db "$DSQ_TMP/db-garbage" index "$G/plain"
expect_index_status "empty and garbage files: index" 1
expect_problem "binary garbage named with its reason" "plain/garbage.bin" "binary data"
expect_not_contains "the noisy log is not binary" "noisy.log" "$ERR"
expect_not_contains "the empty file is no problem" "empty.log" "$ERR"
expect_eq "empty and garbage files: the good run and the noisy copy" "run,max Max_MA,count Max_MA
bert-baseline,1.5,2
noisy,1.5,2" "$(query "$DSQ_TMP/db-garbage" "max Max_MA, count Max_MA by run" --csv)"
run_dsq --db "$DSQ_TMP/db-garbage" runs
expect_code "empty and garbage files: runs" 0 "$RC"
expect_contains "empty and garbage files: runs lists the garbage file" "garbage" "$OUT"
expect_contains "empty and garbage files: runs lists the empty file" "empty" "$OUT"

run_dsq --db "$DSQ_TMP/db-magic" index "$G/magic" "$SAMPLE/bert-baseline.log"
if [ "$RC" = 0 ] || [ "$RC" = 1 ]; then
    pass "garbage behind magic bytes: index exits $RC, no crash"
else
    fail "garbage behind magic bytes: index exited $RC"
    show_last
fi
expect_problem "garbage behind zstd magic named" "fake.zst" "zstd"
expect_eq "garbage behind magic bytes: the good file is indexed" "run,max Max_MA
bert-baseline,1.5" "$(query "$DSQ_TMP/db-magic" "max Max_MA by run" --csv)"

# 4. lines longer than the line cap (1 MiB) ------------------------------------------
L="$DSQ_TMP/long"
mkdir -p "$L"
python3 - "$L" "$SAMPLE/bert-baseline.log" <<'EOF'
import sys
root, rep = sys.argv[1], open(sys.argv[2], "rb").read()
MiB = 1 << 20
w = lambda name, data: open(root + "/" + name, "wb").write(data)
w("long.log", b"x" * (2 * MiB) + b"\n" + rep)           # a 2 MiB line, then a report
w("longcrlf.log", b"c" * (3 * MiB) + b"\r\n" + rep)     # ended by \r\n
w("longcr.log", b"w" * (2 * MiB) + b"\r" + rep)         # ended by a lone \r (tqdm)
w("over.log", b"o" * (MiB + 1) + b"\n" + rep)           # one byte over the cap
w("exact.log", b"e" * MiB + b"\n" + rep)                # exactly at the cap: not cut
w("tail.log", rep + b"z" * (3 * MiB))                   # the last line, unterminated
w("between.log", rep.split(b"\n", 3)[0] + b"\n" + rep.split(b"\n", 3)[1] + b"\n" +
  rep.split(b"\n", 3)[2] + b"\n" + b"b" * (5 * MiB // 2) + b"\n" + rep.split(b"\n", 3)[3])
EOF
zstd -q -c "$L/long.log" >"$L/longz.log.zst"   # streamed in chunks, not mmap'd
gzip -c "$L/long.log" >"$L/longg.log.gz"
run_dsq --db "$DSQ_TMP/db-long" index "$L"
expect_index_status "long lines: index" 0
expect_contains "long lines: summary reports the cut lines" "cut 8 lines longer than the line cap" "$OUT"
expect_eq "long lines: every line counted once" "$(count_lines "$L"/*.log "$L/long.log" "$L/long.log")" \
    "$(summary_number lines "$OUT")"
expect_eq "long lines: the reports after (and before) the long line are found" "run,max Max_MA,count Max_MA
between,1.5,2
exact,1.5,2
long,1.5,2
longcr,1.5,2
longcrlf,1.5,2
longg,1.5,2
longz,1.5,2
over,1.5,2
tail,1.5,2" "$(query "$DSQ_TMP/db-long" "max Max_MA, count Max_MA by run" --csv)"

# re-running over the same damaged files: nothing is redone, but the damage is
# reported again and the exit status still says something was skipped
run_dsq --db "$DSQ_TMP/db-mixed" index "$E"
expect_code "re-run over unchanged damaged files" 1 "$RC"
expect_contains "re-run: the damaged file is named again" "gpt2-zero2/rank2.log.zst" "$ERR"
expect_contains "re-run: says it is unchanged" "unchanged since it was indexed with" "$ERR"

e2e_finish
