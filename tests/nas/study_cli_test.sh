#!/usr/bin/env bash
# `xnn-lab study list|show DB` end to end: studies recorded by nas_strategy_bench --store (through
# nas/study's Study), listed and shown as text and JSON; resuming a recorded study adds trials
# up to the budget; errors for a missing database and an unknown study.
# Usage: study_cli_test.sh XNN_LAB NAS_STRATEGY_BENCH
set -euo pipefail
XNN_LAB=$1
BENCH=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$BENCH" --functions branin,nas_tabular --strategies tpe,evolution --seeds 1 --budget 15 --store "$WORK/r.db" > "$WORK/run1.json"

"$XNN_LAB" study list "$WORK/r.db" > "$WORK/list.txt"
cat "$WORK/list.txt"
[ "$(wc -l < "$WORK/list.txt")" -eq 4 ] || fail "expected 4 studies"
grep -q '^branin-tpe-s0 *tpe .* branin:minimize .* 15 trials (15 complete, 0 pruned, 0 fail, 0 running)  best ' "$WORK/list.txt" \
  || fail "list line of branin-tpe-s0"
grep -q '^nas_tabular-evolution-s0 *evolution' "$WORK/list.txt" || fail "list line of nas_tabular-evolution-s0"

"$XNN_LAB" study list "$WORK/r.db" --json > "$WORK/list.json"
python3 - "$WORK/list.json" "$WORK/run1.json" <<'PY'
import json, sys
studies = {s["name"]: s for s in json.load(open(sys.argv[1]))}
run = json.load(open(sys.argv[2]))
assert set(studies) == {"branin-tpe-s0", "branin-evolution-s0", "nas_tabular-tpe-s0", "nas_tabular-evolution-s0"}
for f, v in run["functions"].items():
    for r in v["runs"]:
        s = studies["%s-%s-s0" % (f, r["strategy"])]
        assert s["states"]["COMPLETE"] == 15 and s["trials"] == 15, s
        assert abs(s["best_value"] - r["best"][-1]) < 1e-12, (s["best_value"], r["best"][-1])
        assert s["seed"] == 0 and s["directions"] == f + ":minimize"
PY

"$XNN_LAB" study show "$WORK/r.db" nas_tabular-tpe-s0 > "$WORK/show.txt"
head -3 "$WORK/show.txt"
grep -q '^study nas_tabular-tpe-s0: strategy tpe {"n_startup_trials":10' "$WORK/show.txt" || fail "show header"
[ "$(grep -c ' COMPLETE ' "$WORK/show.txt")" -eq 15 ] || fail "show lists 15 complete trials"
[ "$(grep -c '^\*' "$WORK/show.txt")" -eq 1 ] || fail "show marks one best trial"
grep -q 'op0=conv3x3\|op0=conv5x5\|op0=dwconv3x3\|op0=skip' "$WORK/show.txt" || fail "show prints parameters"

"$XNN_LAB" study show "$WORK/r.db" branin-tpe-s0 --json > "$WORK/show.json"
python3 - "$WORK/show.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["strategy"] == "tpe" and s["space"]["x1"] == {"type": "float", "low": -5, "high": 10, "log": False}, s
t = s["trial_list"]
assert [x["number"] for x in t] == list(range(15)) and all(x["state"] == "COMPLETE" for x in t)
assert all(set(x["params"]) == {"x1", "x2"} for x in t)
best = min(t, key=lambda x: x["values"][0])
assert s["best_trial"] == best["number"]
PY

# Resuming: a bigger budget continues the recorded studies; the first 15 trials are unchanged.
"$BENCH" --functions branin --strategies tpe --seeds 1 --budget 25 --store "$WORK/r.db" > "$WORK/run2.json"
"$XNN_LAB" study show "$WORK/r.db" branin-tpe-s0 --json > "$WORK/show2.json"
python3 - "$WORK/show.json" "$WORK/show2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert len(b["trial_list"]) == 25
assert b["trial_list"][:15] == a["trial_list"][:15]
PY
# The resumed study equals an uninterrupted 25-trial run without a database.
"$BENCH" --functions branin --strategies tpe --seeds 1 --budget 25 > "$WORK/plain.json"
python3 - "$WORK/run2.json" "$WORK/plain.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["functions"]["branin"]["runs"][0]["best"] == b["functions"]["branin"]["runs"][0]["best"]
PY

# Errors.
if "$XNN_LAB" study list "$WORK/missing.db" 2> "$WORK/err.txt"; then fail "missing database accepted"; fi
grep -q "missing.db: no such results database" "$WORK/err.txt" || fail "missing database message: $(cat "$WORK/err.txt")"
if "$XNN_LAB" study show "$WORK/r.db" nope 2> "$WORK/err.txt"; then fail "unknown study accepted"; fi
grep -q "no study named 'nope' (studies: branin-evolution-s0, branin-tpe-s0" "$WORK/err.txt" \
  || fail "unknown study message: $(cat "$WORK/err.txt")"
echo "study CLI: OK"
