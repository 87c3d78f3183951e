#!/usr/bin/env bash
# The shared corpus of real logs: every file indexes cleanly, every line is
# counted, and the memory peaks found match what an independent reading of the
# files gives. Skipped (77) when the corpus is not there.
source "$(dirname "$0")/lib.sh"
[ -d "${DSQ_CORPUS:-}" ] || skip "corpus not found at ${DSQ_CORPUS:-<DSQ_CORPUS unset>}"
e2e_init
need_tool python3 python3

C=$(cd "$DSQ_CORPUS" && pwd)
DB="$DSQ_TMP/db"

mapfile -t FILES < <(cd "$C" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
[ "${#FILES[@]}" -gt 0 ] || skip "corpus at $C holds no files"
echo "corpus: ${#FILES[@]} files at $C"

# Independent expectations, straight from the files:
#  - run of a file: its first directory below the corpus root, or for a file at
#    the top its name without log/compression extensions;
#  - a memory report is the MA line DeepSpeed's see_memory_usage logs
#    ("[utils.py:NNN:see_memory_usage] MA <n> GB  Max_MA <n> GB ..."), not any
#    text mentioning Max_MA (the corpus MANIFEST.tsv quotes one in its notes);
#  - the peak of a run is the largest such number (formatted like dsq: %.6g).
python3 - "$C" "$DSQ_TMP" "${FILES[@]}" <<'EOF'
import re, sys
root, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
EXTS = [".zst", ".zstd", ".gz", ".tgz", ".xz", ".txz", ".bz2", ".tbz2", ".tar", ".zip",
        ".log", ".txt", ".out", ".err"]

def run_of(rel):
    if "/" in rel:
        return rel.split("/", 1)[0]
    name, changed = rel, True
    while changed:
        changed = False
        for e in EXTS:
            if len(name) > len(e) and name.lower().endswith(e):
                name, changed = name[:-len(e)], True
                break
    return name

MA = re.compile(rb"see_memory_usage\]\s*MA\s+[0-9.]+\s*GB\s+Max_MA\s+([0-9]+(?:\.[0-9]+)?)\s*GB")
peak, count, runs = {}, {}, set()
for rel in files:
    run = run_of(rel)
    runs.add(run)
    for line in re.split(rb"\r\n|\r|\n", open(root + "/" + rel, "rb").read()):
        m = MA.search(line)
        if m:
            v = float(m.group(1))
            peak[run] = max(peak.get(run, v), v)
            count[run] = count.get(run, 0) + 1
key = lambda s: s.encode()
with open(out + "/expect-max.csv", "w") as f:
    f.write("run,max Max_MA\n")
    for r in sorted(peak, key=key):
        f.write("%s,%s\n" % (r, "%.6g" % peak[r]))
with open(out + "/expect-count.csv", "w") as f:
    f.write("run,count Max_MA\n")
    for r in sorted(count, key=key):
        f.write("%s,%d\n" % (r, count[r]))
with open(out + "/expect-runs.txt", "w") as f:
    for r in sorted(runs, key=key):
        f.write(r + "\n")
EOF
[ -s "$DSQ_TMP/expect-max.csv" ] || die "could not compute the expected answers"
EXPECT_LINES=$(cd "$C" && count_lines "${FILES[@]}")

# index: no file may fail
run_dsq --db "$DB" index "$C"
expect_code "index the corpus" 0 "$RC"
if [ -z "$ERR" ]; then
    pass "index the corpus: no problem reported"
else
    fail "index the corpus: problems reported"
    show_last
fi
expect_contains "index the corpus: every file indexed" "indexed ${#FILES[@]} files" "$OUT"
expect_not_contains "index the corpus: nothing failed" "problems:" "$OUT"
expect_eq "index the corpus: line count (\\n, \\r\\n, lone \\r, unterminated last line)" \
    "$EXPECT_LINES" "$(summary_number lines "$OUT")"

# the peaks, the report counts, the runs
expect_eq "max Max_MA by run" "$(cat "$DSQ_TMP/expect-max.csv")" "$(query "$DB" "max Max_MA by run" --csv)"
expect_eq "count Max_MA by run" "$(cat "$DSQ_TMP/expect-count.csv")" "$(query "$DB" "count Max_MA by run" --csv)"
run_dsq --db "$DB" --json runs
expect_code "dsq runs" 0 "$RC"
printf '%s\n' "$OUT" >"$DSQ_TMP/runs.json"
expect_eq "dsq runs: one run per corpus file" "$(cat "$DSQ_TMP/expect-runs.txt")" \
    "$(python3 -c 'import json,sys; [print(json.loads(l)["run"]) for l in sys.stdin]' <"$DSQ_TMP/runs.json")"
expect_eq "dsq runs: lines add up" "$EXPECT_LINES" \
    "$(python3 -c 'import json,sys; print(sum(json.loads(l)["lines"] for l in sys.stdin))' <"$DSQ_TMP/runs.json")"
expect_eq "dsq runs: nothing damaged" 0 \
    "$(python3 -c 'import json,sys; print(sum(json.loads(l)["damaged"] for l in sys.stdin))' <"$DSQ_TMP/runs.json")"

# again: nothing changed, nothing re-read
run_dsq --db "$DB" index "$C"
expect_code "re-index the corpus" 0 "$RC"
expect_contains "re-index the corpus: all unchanged" "skipped ${#FILES[@]} unchanged files" "$OUT"
expect_eq "re-index the corpus: same peaks" "$(cat "$DSQ_TMP/expect-max.csv")" "$(query "$DB" "max Max_MA by run" --csv)"

e2e_finish
