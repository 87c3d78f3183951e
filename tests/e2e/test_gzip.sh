#!/usr/bin/env bash
# gzip end to end (the ISA-L paths of src/input.c when the build has ISA-L: `dsq
# --version` names the decoder; else libarchive's, which does not check CRCs): a .gz of several members, cut, with a bad CRC,
# with garbage after it; a tar.gz with a cut .gz member; a tar.gz cut in the
# middle. Each damaged file is named with its reason, what came before the damage
# is indexed, and the exit status says something was skipped.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool gzip gzip
need_tool tar tar
need_tool python3 python3

GOOD="$SAMPLE/bert-baseline.log" # 2 DeepSpeed memory reports
C="$DSQ_TMP/in"
DB="$DSQ_TMP/db"
mkdir -p "$C" "$DSQ_TMP/src"

run_dsq --version
expect_contains "dsq --version names the gzip decoder" "gzip: " "$OUT"
expect_contains "dsq --version names the zip members' decoder" "zip members: " "$OUT"
isal=0
case $OUT in *"gzip: ISA-L"*) isal=1 ;; esac

by_file() {
    query "$DB" "count Max_MA by file, host" --csv | tail -n +2 | sed "s|^$C/||" | sort
}

cp "$GOOD" "$C/good.log"
{ gzip -c "$GOOD"; gzip -c "$GOOD"; } >"$C/multi.log.gz"
python3 - "$GOOD" "$C" "$DSQ_TMP/src" <<'EOF'
import io, random, subprocess, sys, tarfile
good = open(sys.argv[1], "rb").read()
out, src = sys.argv[2], sys.argv[3]
r = random.Random(5)
filler = "".join("step %d loss %.4f tokens %d\n" % (i, r.random(), r.randrange(10**9))
                 for i in range(40000)).encode()
def gz(b):
    return subprocess.run(["gzip", "-c", "-n"], input=b, capture_output=True, check=True).stdout
long = gz(good + filler + good)
open(out + "/trunc.log.gz", "wb").write(long[:len(long) * 6 // 10])
crc = bytearray(gz(good))
crc[-8] ^= 0x01                      # the CRC-32 in the trailer
open(out + "/crc.log.gz", "wb").write(crc)
open(out + "/trail.log.gz", "wb").write(gz(good) + b"GARBAGE\x01 after the stream\n")
def tar(members):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(data))
    return bio.getvalue()
open(out + "/run.tar.gz", "wb").write(gz(tar([("node1.log", good),
                                              ("node2.log.gz", long[:len(long) * 6 // 10]),
                                              ("node3.log", good)])))
cut = gz(tar([("node1.log", good), ("node2.log", filler), ("node3.log", good)]))
open(out + "/cut.tar.gz", "wb").write(cut[:len(cut) * 2 // 3])
open(out + "/trail.tar.gz", "wb").write(gz(tar([("node1.log", good)])) + b"GARBAGE after the tar.gz\n")
open(out + "/pad.tar.gz", "wb").write(gz(tar([("node1.log", good)])) + bytes(1024))
EOF

run_dsq --db "$DB" index "$C"
expect_code "damaged gzip: index exits 1" 1 "$RC"
expect_problem "cut .gz named with its reason" "trunc.log.gz" "truncated"
if [ $isal = 1 ]; then # libarchive's gzip reader does not check the CRC
    expect_problem "bad CRC named with its reason" "crc.log.gz" "CRC-32"
else
    echo "note: built without ISA-L: the bad CRC goes unnoticed"
fi
expect_problem "garbage after the stream named with its offset" "trail.log.gz" "trailing garbage after the gzip data (at byte"
expect_problem "cut .gz member named with its member" "run.tar.gz: node2.log.gz" "truncated"
expect_problem "cut tar.gz named with its reason" "cut.tar.gz" "truncated"
if [ $isal = 1 ]; then # libarchive's tar.gz reader does not look past the stream
    expect_problem "garbage after a tar.gz's stream named with its offset" "trail.tar.gz" "trailing garbage after the gzip data (at byte"
fi
expect_not_contains "zero padding after a tar.gz is no problem" "pad.tar.gz" "$ERR"
expect_not_contains "two gzip members are no problem" "multi.log.gz" "$ERR"
expect_eq "damaged gzip: everything before the damage is indexed" "crc.log.gz,-,2
cut.tar.gz,node1,2
good.log,-,2
multi.log.gz,-,4
pad.tar.gz,node1,2
run.tar.gz,node1,2
run.tar.gz,node2,2
run.tar.gz,node3,2
trail.log.gz,-,2
trail.tar.gz,node1,2
trunc.log.gz,-,2" "$(by_file)"

e2e_finish
