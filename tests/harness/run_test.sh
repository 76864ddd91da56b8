#!/usr/bin/env bash
# End-to-end tests of `xnn-lab run` and the store commands: the quickstart on a small limit,
# resume after kill -9 in the middle of a run (nothing lost, nothing duplicated, integrity ok),
# concurrent runs on one database, and config errors.
# Usage: run_test.sh XNN_LAB_BINARY REPO_ROOT
set -uo pipefail
XNN=$1
ROOT=$2
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $1"; }
bad() { failed=$((failed + 1)); echo "FAIL  $1"; [ -f "$work/out.txt" ] && sed 's/^/      /' "$work/out.txt" | tail -25; }
q() { sqlite3 -batch -noheader "$1" "$2"; }
# Waits (up to 30 s) until database $1 has at least $2 DONE jobs.
wait_for_done_jobs() {
  for _ in $(seq 1 300); do
    n=$(q "$1" "select count(*) from jobs where status='DONE'" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge "$2" ] && return 0
    sleep 0.1
  done
}

model=$ROOT/configs/models/fmnist_cnn.onnx
[ -f "$model" ] || { echo "FAIL  $model missing"; echo "0 passed, 1 failed"; exit 1; }

# --- quickstart, small -----------------------------------------------------------------------
db=$work/quick.db
if "$XNN" run "$ROOT/configs/quickstart.yaml" --db "$db" metrics.accuracy.limit=200 metrics.latency.runs=5 \
     metrics.latency.min_time=0.05 >"$work/out.txt" 2>&1 &&
   grep -q "run .* (FINISHED): 2 executed, 0 recorded earlier, 0 failed" "$work/out.txt" &&
   grep -qE "fmnist_cnn +xnn_optimized +cpu-1t +DONE" "$work/out.txt" && grep -q "results: $db" "$work/out.txt"; then
  ok "quickstart runs, prints the table and the database"
else bad "quickstart runs, prints the table and the database"; fi
top1=$(q "$db" "select value from metrics where name='top1' limit 1")
if awk "BEGIN{exit !($top1 > 0.8)}"; then ok "quickstart accuracy is real (top-1 $top1 on 200 images)"; else bad "quickstart top-1 $top1"; fi
if [ "$(q "$db" "select count(*) from samples")" -ge 10 ]; then ok "raw latency samples stored"; else bad "raw latency samples stored"; fi
if [ "$(q "$db" "select count(*) from op_profiles")" -gt 5 ]; then ok "per-op profiles stored"; else bad "per-op profiles stored"; fi
"$XNN" run "$ROOT/configs/quickstart.yaml" --db "$db" metrics.accuracy.limit=200 metrics.latency.runs=5 \
  metrics.latency.min_time=0.05 >"$work/out.txt" 2>&1
if grep -q "0 executed, 2 recorded earlier" "$work/out.txt"; then ok "second run skips recorded jobs"; else bad "second run skips recorded jobs"; fi
"$XNN" list runs --db "$db" --json >"$work/runs.json" 2>&1
if /usr/bin/python3 -c "import json; r=json.load(open('$work/runs.json')); assert len(r)==2 and all('id' in x for x in r)"; then
  ok "list runs --json gives runs with ids"; else bad "list runs --json"; fi
run_id=$(/usr/bin/python3 -c "import json; print(json.load(open('$work/runs.json'))[-1]['id'])")
"$XNN" show "$run_id" --db "$db" >"$work/out.txt" 2>&1 && grep -q "xnn_optimized" "$work/out.txt" && ok "show RUN" || bad "show RUN"
"$XNN" show latest --db "$db" --json >"$work/show.json" 2>&1
/usr/bin/python3 -c "import json; d=json.load(open('$work/show.json')); assert len(d['jobs'])==2 and d['environment']['cores']>0" \
  && ok "show --json has jobs and environment" || bad "show --json"
"$XNN" compare "$run_id" latest --db "$db" >"$work/out.txt" 2>&1 && grep -q "latency_ms_median" "$work/out.txt" && ok "compare" || bad "compare"
"$XNN" export --format csv --db "$db" >"$work/export.csv" 2>"$work/out.txt"
if head -1 "$work/export.csv" | grep -q "^run_id,experiment,job_id,model,variant,target,status,metric,value,unit$" &&
   grep -q ",top1," "$work/export.csv"; then ok "export csv"; else bad "export csv"; fi
"$XNN" export --format json --run "$run_id" --db "$db" >"$work/export.json" 2>"$work/out.txt"
/usr/bin/python3 -c "import json; d=json.load(open('$work/export.json')); assert len(d)==2 and d[0]['latency_ms_samples']" \
  && ok "export json" || bad "export json"
"$XNN" run "$ROOT/configs/quickstart.yaml" --db "$db" --dry-run metrics.accuracy.limit=200 metrics.latency.runs=5 \
  metrics.latency.min_time=0.05 >"$work/out.txt" 2>&1
[ "$(grep -c " recorded " "$work/out.txt")" -eq 2 ] && grep -q "2 jobs" "$work/out.txt" && ok "dry-run prints the job matrix" || bad "dry-run"
# Another metric setting is another job: the matrix shows it pending.
"$XNN" run "$ROOT/configs/quickstart.yaml" --db "$db" --dry-run >"$work/out.txt" 2>&1
[ "$(grep -c " pending " "$work/out.txt")" -eq 2 ] && ok "dry-run: changed settings are new jobs" || bad "dry-run pending"

# --- kill -9 in the middle, then resume ------------------------------------------------------
cat >"$work/many.yaml" <<YAML
name: resume
models: [{name: cnn, path: $model}]
variants: [fp32, {name: xnn, steps: [convert]}, {name: opt, steps: [convert, optimize]}]
targets: [{name: a, kind: cpu}, {name: b, kind: cpu}]
metrics: {latency: {runs: 20, min_time: 0.6}, accuracy: false}
YAML
db2=$work/resume.db
"$XNN" run "$work/many.yaml" --db "$db2" >"$work/run1.txt" 2>&1 &
pid=$!
wait_for_done_jobs "$db2" 2
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
done_before=$(q "$db2" "select count(*) from jobs where status='DONE'")
"$XNN" run "$work/many.yaml" --db "$db2" >"$work/out.txt" 2>&1
rc=$?
total=$(q "$db2" "select count(*) from jobs")
done_after=$(q "$db2" "select count(*) from jobs where status='DONE'")
dups=$(q "$db2" "select count(*) from (select job_id, name, count(*) c from metrics group by job_id, name having c > 1)")
integrity=$(q "$db2" "pragma integrity_check")
if [ $rc -eq 0 ] && [ "$done_before" -ge 2 ] && [ "$done_before" -lt 6 ] && [ "$total" -eq 6 ] && [ "$done_after" -eq 6 ] &&
   [ "$dups" -eq 0 ] && [ "$integrity" = "ok" ] && grep -q "$done_before recorded earlier" "$work/out.txt"; then
  ok "resume after kill -9 ($done_before of 6 done before the kill; 6 after; no duplicates; integrity ok)"
else
  bad "resume after kill -9 (rc $rc, before $done_before, total $total, after $done_after, dups $dups, integrity $integrity)"
fi

# --- Ctrl-C (SIGINT): the run stops after the current job, is marked KILLED, exits 130 -------
db4=$work/sigint.db
"$XNN" run "$work/many.yaml" --db "$db4" >"$work/sigint.txt" 2>&1 &
pid=$!
wait_for_done_jobs "$db4" 1
kill -INT $pid
wait $pid
rc=$?
status=$(q "$db4" "select status from runs limit 1")
if [ $rc -eq 130 ] && [ "$status" = "KILLED" ] && grep -q "run the same command again to resume" "$work/sigint.txt" &&
   [ "$(q "$db4" "select count(*) from jobs where status='RUNNING'")" -eq 0 ]; then
  ok "SIGINT stops after the current job: run KILLED, exit 130"
else bad "SIGINT (rc $rc, status $status)"; fi

# --- concurrent runs on one database ---------------------------------------------------------
db3=$work/concurrent.db
for i in 1 2 3; do
  sed "s/^name: resume/name: concurrent$i/" "$work/many.yaml" >"$work/c$i.yaml"
  "$XNN" run "$work/c$i.yaml" --db "$db3" metrics.latency.runs=3 metrics.latency.min_time=0.01 >"$work/c$i.txt" 2>&1 &
done
crc=0
for p in $(jobs -p); do wait "$p" || crc=1; done
if [ $crc -eq 0 ] && ! grep -qi "locked" "$work"/c*.txt && [ "$(q "$db3" "select count(*) from jobs where status='DONE'")" -eq 18 ] &&
   [ "$(q "$db3" "pragma integrity_check")" = "ok" ]; then
  ok "3 concurrent runs on one database: 18 jobs, no 'database is locked'"
else bad "concurrent runs"; cat "$work"/c*.txt | tail -20; fi

# --- config errors ---------------------------------------------------------------------------
printf 'name: x\nmodels: [%s]\nmetrics:\n  latency:\n    warmpu: 3\n' "$model" >"$work/bad.yaml"
"$XNN" run "$work/bad.yaml" --db "$work/bad.db" >"$work/out.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "bad.yaml:5:5: unknown key 'warmpu' in metrics.latency (did you mean 'warmup'?)" "$work/out.txt"; then
  ok "config error names file:line:col and suggests"; else bad "config error (rc $rc)"; fi
"$XNN" run "$ROOT/configs/quickstart.yaml" --db "$work/bad.db" targets.0.threads=0 >"$work/out.txt" 2>&1
[ $? -eq 1 ] && grep -q "targets.0.threads" "$work/out.txt" && ok "override error names the key" || bad "override error"
"$XNN" show nosuchrun --db "$db" >"$work/out.txt" 2>&1
[ $? -eq 1 ] && grep -q "no run matches 'nosuchrun'" "$work/out.txt" && ok "unknown run is a clear error" || bad "unknown run"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
