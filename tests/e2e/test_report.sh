#!/usr/bin/env bash
# `dsq report RUN`: hand-written logs (tests/report/*.log, one run each) that trigger
# each diagnostic rule, with the file:line of their evidence, and a healthy run that
# triggers none; --json parses and carries the same facts; --lang zh takes the rule
# texts from the Chinese catalogue; an unknown run is a usage error with a
# did-you-mean or the list of runs.
source "$(dirname "$0")/lib.sh"
e2e_init
need_tool python3 python3

DIR="$DSQ_SRC/tests/report"
DB="$DSQ_TMP/db"
cp "$DIR"/*.log "$DSQ_TMP/"
index_ok "report logs" "$DB" "$DSQ_TMP"/*.log

# report_has NAME RUN NEEDLE...: the text report of RUN exits 0 and holds every needle.
report_has() {
    local name=$1 run=$2
    shift 2
    run_dsq --db "$DB" report "$run"
    expect_code "$name" 0 "$RC"
    for needle in "$@"; do
        expect_contains "$name: $needle" "$needle" "$OUT"
    done
}

# 1. the healthy run: every section, no rule -------------------------------------------
report_has "healthy" healthy "run healthy:" "zero_stage = 2" "dtype = bf16" \
    "first step  2025-04-01 10:00:10" "last step   2025-04-01 10:02:00" \
    "memory peaks by rank (max Max_MA)" "12.5 GB" "CurrSamplesPerSec" "▁" \
    "failure: none recorded" "diagnostics: none triggered"
expect_not_contains "healthy: no rule" "    at " "$OUT"

# 2. each rule with its evidence lines --------------------------------------------------
report_has "deepspeed trouble" deepspeed-trouble \
    "[cache_flush] allocator cache flushes" "2 reports of allocator cache flushes, 8 flushes in all" \
    "deepspeed-trouble.log:20" "deepspeed-trouble.log:30" \
    "[loss_scale_overflow]" "6 fp16 overflows (skipped steps), 6 after training started" \
    "deepspeed-trouble.log:16" \
    "[throughput_drop]" "CurrSamplesPerSec fell from 30 (first quarter, avg of 3) to 12.5" \
    "warnings and errors (2 warning lines, 0 error lines; events by kind and label):" \
    "  6  ds_overflow  -"
report_has "straggler" straggler "[straggler] straggler rank" \
    "rank 2: CurrSamplesPerSec 12, median of 4 ranks 30.3" "straggler.log:3 "
report_has "nccl transports" nccl-transports \
    "[nccl_ib_disabled]" "nccl-transports.log:2 " \
    "[nccl_socket] NCCL on Socket" "nccl-transports.log:4 " \
    "[nccl_mixed_transport]" "different NCCL transports: Socket and IB" "nccl-transports.log:5 "
report_has "hang" hang "failure: nccl_timeout at 2025-03-01 08:10:44, rank 3" \
    "[watchdog_timeout]" "first collective timeout on rank 3" \
    "SeqNum 4410..4412 (spread 2), lowest on rank 3" "hang.log:6 " "hang.log:8 " \
    "[stalled]" "last step logged at 2025-03-01 08:00:20" "hang.log:5 "
expect_eq "hang: last step by rank, earliest first" "last step by rank:
  rank 1: - (no step logged)
  rank 3: - (no step logged)
  rank 2: 2025-03-01 08:00:10
  rank 0: 2025-03-01 08:00:20" "$(sed -n '/^last step by rank:/,/^$/p' <<<"$OUT" | sed '/^$/d')"
report_has "oom and kill" oom-kill "failure: cuda_oom" \
    "[oom] CUDA out of memory" "requested 2 GiB, 1.2 GiB free of 79.1 GiB" "oom-kill.log:6 " \
    "[sigkill]" "oom-kill.log:7 "
expect_not_contains "oom run did not stall" "[stalled]" "$OUT"

# 3. --json: valid, and the same facts -------------------------------------------------
# same_facts TEXT_FILE JSON_FILE: the JSON parses and has the text's rules (in order),
# evidence lines, timeline and first failure.
same_facts() {
    python3 - "$1" "$2" <<'PY'
import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
d = json.load(open(sys.argv[2], encoding="utf-8"))
rules = re.findall(r"^  \[(\w+)\]", text, re.M)
# every rule has its catalogue entry (title and advice)
assert all(r["title"] and r["check"] for r in d["diagnostics"]), d["diagnostics"]
assert rules == [r["rule"] for r in d["diagnostics"]], (rules, d["diagnostics"])
ev = re.findall(r"^    at (\S+)", text, re.M)
assert ev == [e.split("  ")[0] for r in d["diagnostics"] for e in r["evidence"]], ev
for key, word in (("start", "start"), ("first_step", "first step"), ("last_step", "last step"), ("end", "end")):
    m = re.search(r"^  %s +(.*)$" % word, text, re.M)
    assert m.group(1) == (d["timeline"][key] or "-"), (key, m.group(1), d["timeline"][key])
m = re.search(r"^failure: (\S+)", text, re.M)
assert m.group(1) == (d["failures"][0]["label"] if d["failures"] else "none"), m.group(1)
shown = re.search(r"^what ran:\n(.*?)\n\n", text, re.M | re.S).group(1)
for line in shown.splitlines():
    for pair in line.strip().split("  "):
        if " = " in pair:
            name, value = pair.split(" = ", 1)
            assert d["attributes"][name] == value, (name, value)
m = re.search(r"\((\d+) more attribute", shown)
shown_n = len(re.findall(r" = ", shown))
assert len(d["attributes"]) == shown_n + (int(m.group(1)) if m else 0), shown
PY
}
for run in healthy deepspeed-trouble straggler nccl-transports hang oom-kill; do
    "$DSQ" --db "$DB" report "$run" >"$DSQ_TMP/$run.txt"
    "$DSQ" --db "$DB" report --json "$run" >"$DSQ_TMP/$run.json"
    check "json $run: parses, same facts as the text" same_facts "$DSQ_TMP/$run.txt" "$DSQ_TMP/$run.json"
done
run_dsq --db "$DB" report --json hang
expect_contains "json: first failure class" '"failures":[{"time":"2025-03-01 08:10:44"' "$OUT"
expect_eq "json: last step by rank" "{'0': '2025-03-01 08:00:20', '1': None, '2': '2025-03-01 08:00:10', '3': None}" \
    "$(python3 -c 'import json, sys; print(dict(sorted(json.load(sys.stdin)["last_step_by_rank"].items())))' <<<"$OUT")"
run_dsq --db "$DB" report --json healthy
expect_contains "json: attributes as an object" '"zero_stage":"2"' "$OUT"
expect_contains "json: no rule for the healthy run" '"diagnostics":[]' "$OUT"

# 4. Chinese rule texts ----------------------------------------------------------------
run_dsq --db "$DB" report --lang zh nccl-transports
expect_code "zh" 0 "$RC"
expect_contains "zh: rule title from zh.txt" "[nccl_socket] NCCL 使用 Socket" "$OUT"

# 5. unknown runs and usage ------------------------------------------------------------
run_dsq --db "$DB" report helthy
expect_code "misspelled run" 2 "$RC"
expect_contains "did you mean" "no run 'helthy' in the index; did you mean 'healthy'?" "$ERR"
run_dsq --db "$DB" report nothing-like-it-at-all
expect_code "unknown run" 2 "$RC"
expect_contains "list of runs" "runs: deepspeed-trouble, hang, healthy, nccl-transports, near-capacity, oom-kill, straggler" "$ERR"
run_dsq --db "$DB" report
expect_code "no run named" 2 "$RC"
expect_contains "usage" "usage: dsq report" "$ERR"

# 5b. peak memory near the capacity an OOM message gave ---------------------------------
run_dsq --db "$DB" report near-capacity
expect_code "near capacity" 0 "$RC"
expect_contains "near capacity: the rule" "[memory_near_capacity]" "$OUT"
expect_contains "near capacity: rank 0 only (74.6 of 79.1 GiB)" "79.1 GiB capacity: rank 0 74.6 GB" "$OUT"
expect_not_contains "near capacity: rank 1 (41.9) is not" "rank 1 41.9" "$OUT"
run_dsq --db "$DB" report healthy
expect_not_contains "no capacity known: no such rule" "memory_near_capacity" "$OUT"

# 5c. a run of more hosts than the text names: all counted, 64 named, all in JSON -------
for h in $(seq -w 1 70); do
    printf 'node%s: [2025-04-01 10:00:%02d,000] [INFO] [logging.py:96:log_dist] [Rank %d] step=1, skipped=0, lr=[1e-05], mom=[(0.9, 0.999)]\n' \
        "$h" "$((10#$h % 60))" "$((10#$h * 8))"
done > "$DSQ_TMP/wide.log"
index_ok "wide run" "$DSQ_TMP/db-wide" "$DSQ_TMP/wide.log"
run_dsq --db "$DSQ_TMP/db-wide" report wide
expect_code "wide" 0 "$RC"
expect_contains "wide: every host counted" "run wide: 140 events, 70 hosts, 70 ranks" "$OUT"
expect_contains "wide: 64 named, then ..." "node64, ..." "$OUT"
expect_not_contains "wide: the 65th not named" "node65" "$OUT"
run_dsq --db "$DSQ_TMP/db-wide" report wide --json
expect_eq "wide: JSON names all 70" 70 "$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["hosts"]))' <<<"$OUT")"

# 5d. a run of more ranks than the report kept (4096): every one counted --------------
python3 -c '
for r in range(5000):
    print("node1: [2025-04-01 10:00:%02d,000] [INFO] [logging.py:96:log_dist] [Rank %d] step=1, skipped=0, lr=[1e-05], mom=[(0.9, 0.999)]" % (r % 60, r))
' > "$DSQ_TMP/manyranks.log"
index_ok "many ranks" "$DSQ_TMP/db-ranks" "$DSQ_TMP/manyranks.log"
run_dsq --db "$DSQ_TMP/db-ranks" report manyranks
expect_code "many ranks" 0 "$RC"
expect_contains "many ranks: every rank counted" "1 host, 5000 ranks" "$OUT"
run_dsq --db "$DSQ_TMP/db-ranks" report manyranks --json
expect_eq "many ranks: JSON's last step of each" 5000 "$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["last_step_by_rank"]))' <<<"$OUT")"

# 6. --html: a self-contained page with the report and SVG charts ----------------------
run_dsq --db "$DB" report straggler --html "$DSQ_TMP/straggler.html"
expect_code "html" 0 "$RC"
H=$(cat "$DSQ_TMP/straggler.html")
expect_contains "html: the text report is in it" "straggler" "$H"
expect_contains "html: throughput chart" "<h2>throughput (CurrSamplesPerSec)</h2>" "$H"
expect_contains "html: memory by rank chart" "<h2>memory by rank" "$H"
expect_eq "html: charts drawn as SVG" 2 "$(grep -c '<svg' <<<"$H")"
expect_eq "html: a memory line per rank (4) and the throughput line" 5 "$(grep -c '<polyline' <<<"$H")"
expect_eq "html: loads nothing from anywhere" 0 "$(grep -ciE 'https?:|src=|<script|<link|url\(' <<<"$H")"
run_dsq --db "$DB" report oom-kill --html "$DSQ_TMP/oom.html"
expect_contains "html: a run without trends says so" "no values over time" "$(cat "$DSQ_TMP/oom.html")"
run_dsq --db "$DB" report healthy --html /nonexistent-dir/x.html
expect_code "html: unwritable file" 2 "$RC"
expect_contains "html: names the file" "/nonexistent-dir/x.html" "$ERR"

e2e_finish
