#!/usr/bin/env bash
# End-to-end test of the CI performance gate recipe (configs/ci/README.md): perf_smoke run twice
# and gated; `import --gbench` of a committed Google Benchmark fixture and synthetic variants of
# it (times x1.5, x0.67, too few repetitions, too noisy) for the REGRESSION / IMPROVEMENT /
# UNCERTAIN decisions; single-value regressions (size, top-1) made by editing a copy of a
# database; the --junit / --json / --markdown outputs; and the usage/data errors (exit 2).
# Timing is only asserted on the synthetic fixtures: two real runs of the same build on a shared
# machine may differ, so that gate is checked for consistency, not for its verdict.
# The fixture tests/harness/data/gbench_gemm256.json is a real result (Google Benchmark 1.7.1,
# where --benchmark_min_time takes plain seconds):
#   build/engine/xnn_kernel_bench --benchmark_filter='^BM_f32_gemm/256/256/256$' \
#     --benchmark_repetitions=5 --benchmark_min_time=0.05 --benchmark_format=json
# (CV 0.6%, so x1.5 separates completely and 5 + 5 samples reach p = 2/252 < 0.01).
# Usage: gate_test.sh XNN_LAB_BINARY REPO_ROOT
set -uo pipefail
XNN=$1
ROOT=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $1"; }
bad() { failed=$((failed + 1)); echo "FAIL  $1"; [ -f "$work/out.txt" ] && sed 's/^/      /' "$work/out.txt" | tail -30; }
py=/usr/bin/python3
policy=$ROOT/configs/ci/gate_policy.yaml
smoke=$ROOT/configs/ci/perf_smoke.yaml
fixture=$ROOT/tests/harness/data/gbench_gemm256.json
for f in "$policy" "$smoke" "$fixture"; do
  [ -f "$f" ] || { echo "FAIL  $f missing"; echo "0 passed, 1 failed"; exit 1; }
done

# gbench_variant IN OUT MODE [ARG]: MODE scale F (every time x F), head N (first N repetitions,
# no aggregates), noisy (odd repetitions x 1.3).
gbench_variant() {
  "$py" - "$@" <<'PY'
import json, sys
src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(src))
rows = []
for i, b in enumerate(x for x in d["benchmarks"] if x["run_type"] == "iteration"):
    if mode == "scale":
        b["real_time"] *= float(sys.argv[4]); b["cpu_time"] *= float(sys.argv[4])
    elif mode == "head" and i >= int(sys.argv[4]):
        continue
    elif mode == "noisy" and i % 2 == 1:
        b["real_time"] *= 1.3; b["cpu_time"] *= 1.3
    rows.append(b)
if mode == "scale":  # keep the aggregates, scaled like the samples (the cv stays)
    for b in d["benchmarks"]:
        if b["run_type"] == "aggregate" and b.get("aggregate_unit", "time") == "time":
            b["real_time"] *= float(sys.argv[4]); b["cpu_time"] *= float(sys.argv[4])
    rows += [b for b in d["benchmarks"] if b["run_type"] == "aggregate"]
d["benchmarks"] = rows
json.dump(d, open(dst, "w"), indent=2)
PY
}

# --- the recipe: perf_smoke on "main" and on the "PR", each into its own database -------------
for side in base cand; do
  if "$XNN" run "$smoke" --db "$work/$side.db" --tag "$side" >"$work/out.txt" 2>&1 &&
     grep -q "(FINISHED): 2 executed" "$work/out.txt"; then
    ok "perf_smoke ($side) runs"
  else bad "perf_smoke ($side) runs"; fi
done
n=$(sqlite3 -batch -noheader "$work/base.db" "select count(*) from samples where name='latency_ms'")
[ "$n" -eq 80 ] && ok "perf_smoke records 40 raw latency samples per job" || bad "perf_smoke samples ($n, expected 80)"

"$XNN" gate --baseline "$work/base.db:tag:base" --candidate tag:cand --db "$work/cand.db" --policy "$policy" \
  >"$work/out.txt" 2>&1
rc=$?
echo "      --- real gate table (perf_smoke twice, same build) ---"
sed 's/^/      /' "$work/out.txt"
rows=$(grep -cE "^fmnist_cnn +(fp32|xnn_optimized) +cpu-1t +(latency_ms|size_bytes|top1|top5) " "$work/out.txt")
det=$(grep -cE "^fmnist_cnn .*(size_bytes|top1|top5) .* PASS$" "$work/out.txt")
lat=$(grep -cE "^fmnist_cnn .* latency_ms .* (PASS|UNCERTAIN|REGRESSION|IMPROVEMENT)$" "$work/out.txt")
regr=$(grep -cE " REGRESSION$" "$work/out.txt")
if [ "$rows" -eq 8 ] && [ "$det" -eq 6 ] && [ "$lat" -eq 2 ] && grep -q "^gate: " "$work/out.txt" &&
   { { [ $rc -eq 0 ] && [ "$regr" -eq 0 ]; } || { [ $rc -eq 1 ] && [ "$regr" -gt 0 ]; }; }; then
  if [ $rc -eq 0 ]; then ok "gate of two perf_smoke runs: exit 0 (PASS/UNCERTAIN), 8 comparisons, size and top-1 PASS"
  else ok "gate of two perf_smoke runs: 8 comparisons, size and top-1 PASS; exit 1 from a latency change this machine really measured between the runs (noise, not asserted)"; fi
else bad "gate of two perf_smoke runs (rc $rc, rows $rows, deterministic PASS $det, latency rows $lat)"; fi

# One database for both: the second run reuses the first's recorded jobs, so there is nothing to gate.
"$XNN" run "$smoke" --db "$work/one.db" --tag first >/dev/null 2>&1
"$XNN" run "$smoke" --db "$work/one.db" --tag second >/dev/null 2>&1
"$XNN" gate --baseline tag:first --candidate tag:second --db "$work/one.db" >"$work/out.txt" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "same recorded job" "$work/out.txt" && grep -q "own database" "$work/out.txt" &&
  ok "one database, reused jobs: exit 2, says to record the candidate in its own database" || bad "shared jobs (rc $rc)"

# --- import --gbench ---------------------------------------------------------------------------
gbench_variant "$fixture" "$work/slow.json" scale 1.5
gbench_variant "$fixture" "$work/fast.json" scale 0.6667
gbench_variant "$fixture" "$work/few.json" head 3
gbench_variant "$work/slow.json" "$work/few_slow.json" head 3
gbench_variant "$fixture" "$work/noisy.json" noisy
g=$work/g.db
"$XNN" import --gbench "$fixture" --db "$g" --tag gb_base --commit abc123def >"$work/out.txt" 2>&1
rc=$?
job=$(sqlite3 -batch -noheader "$g" "select id from jobs where model='BM_f32_gemm' and variant='256/256/256'")
nsamp=$(sqlite3 -batch -noheader "$g" "select count(*) from samples where job_id='$job' and name='latency_ms'")
agg=$(sqlite3 -batch -noheader "$g" "select count(*) from metrics where job_id='$job' and name in ('gbench_mean_ms','gbench_cv','latency_ms_median')")
host=$(sqlite3 -batch -noheader "$g" "select e.hostname || '/' || e.cores from runs r join environments e on e.id = r.environment_id")
want_host=$("$py" -c "import json,sys; c=json.load(open(sys.argv[1]))['context']; print(c['host_name'] + '/' + str(c['num_cpus']))" "$fixture")
if [ $rc -eq 0 ] && grep -q "1 imported" "$work/out.txt" && [ "$nsamp" -eq 5 ] && [ "$agg" -eq 3 ] && [ "$host" = "$want_host" ] &&
   [ "$(sqlite3 -batch -noheader "$g" "select config_text like '%library_build_type%' from runs")" = 1 ]; then
  ok "import --gbench: one job (BM_f32_gemm / 256/256/256), 5 raw samples, aggregates as metrics, context recorded"
else bad "import --gbench (rc $rc, samples $nsamp, metrics $agg, host $host vs $want_host)"; fi
"$XNN" import --gbench "$fixture" --db "$g" >"$work/out.txt" 2>&1
grep -q "0 imported, 1 recorded earlier" "$work/out.txt" && ok "importing the same file again reuses its job" || bad "re-import"
for v in slow fast few few_slow noisy; do
  "$XNN" import --gbench "$work/$v.json" --db "$g" --tag "gb_$v" >"$work/out.txt" 2>&1 || bad "import $v.json"
done
printf '{"benchmarks": [{"name": "BM_x", "run_type": "iteration", "real_time": 1, "time_unit": "xs"}]}' >"$work/badunit.json"
"$XNN" import --gbench "$work/badunit.json" --db "$g" >"$work/out.txt" 2>&1
[ $? -eq 1 ] && grep -q "badunit.json:1:.*benchmarks.0.time_unit: expected ns, us, ms or s, got 'xs'" "$work/out.txt" &&
  ok "import --gbench: a bad file is an error naming file, line and field" || bad "import bad unit"

# --- decisions on the synthetic fixtures -------------------------------------------------------
gate() { "$XNN" gate --db "$g" "$@" >"$work/out.txt" 2>&1; }
gate --baseline commit:abc123 --candidate tag:gb_slow
rc=$?
[ $rc -eq 1 ] && grep -qE "^BM_f32_gemm +256/256/256 +cpu +latency_ms .* \+50\.00% +0\.0079 +REGRESSION$" "$work/out.txt" &&
  grep -q "^gate: FAIL" "$work/out.txt" && ok "times x1.5: REGRESSION, exit 1 (commit: selector)" || bad "x1.5 regression (rc $rc)"
gate --baseline tag:gb_base --candidate tag:gb_fast
rc=$?
[ $rc -eq 0 ] && grep -qE "latency_ms .* -33\.33% .* IMPROVEMENT$" "$work/out.txt" && ok "times x0.67: IMPROVEMENT, exit 0" ||
  bad "improvement (rc $rc)"
gate --baseline tag:gb_few --candidate tag:gb_few_slow
rc=$?
[ $rc -eq 0 ] && grep -qE "latency_ms .* UNCERTAIN$" "$work/out.txt" && grep -q "too few samples: baseline 3, candidate 3" "$work/out.txt" &&
  grep -q -- "--benchmark_repetitions=" "$work/out.txt" && ok "3 repetitions a side: UNCERTAIN (asks for more repetitions), exit 0" ||
  bad "too few samples (rc $rc)"
gate --baseline tag:gb_noisy --candidate tag:gb_slow
rc=$?
[ $rc -eq 0 ] && grep -q "too noisy" "$work/out.txt" && ok "noisy baseline (CV > 10%): UNCERTAIN, exit 0" || bad "noisy (rc $rc)"
gate --baseline tag:gb_base --candidate tag:gb_base
[ $? -eq 2 ] && grep -q "same run" "$work/out.txt" && ok "baseline = candidate: exit 2" || bad "same run"
printf 'models:\n  BM_f32_gemm: {latency_ms: {regression: 0.6}}\n' >"$work/model_policy.yaml"
gate --baseline tag:gb_base --candidate tag:gb_slow --policy "$work/model_policy.yaml"
rc=$?
[ $rc -eq 0 ] && grep -qE "latency_ms .* PASS$" "$work/out.txt" && ok "per-model threshold (60%) lets the x1.5 change pass" ||
  bad "per-model policy (rc $rc)"
# Another database: the baseline downloaded from main.
"$XNN" import --gbench "$work/slow.json" --db "$work/pr.db" --tag pr >/dev/null 2>&1
"$XNN" gate --baseline "$g:tag:gb_base" --candidate tag:pr --db "$work/pr.db" >"$work/out.txt" 2>&1
[ $? -eq 1 ] && grep -q "REGRESSION" "$work/out.txt" && ok "FILE.db:SEL baseline from another database" || bad "other database"

# --- outputs -----------------------------------------------------------------------------------
gate --baseline tag:gb_base --candidate tag:gb_slow --json --junit "$work/regression.xml"
rc=$?
cp "$work/out.txt" "$work/gate.json"
if [ $rc -eq 1 ] && "$py" -m json.tool "$work/gate.json" >/dev/null &&
   "$py" -c "
import json, sys
d = json.load(open(sys.argv[1]))
c = d['comparisons'][0]
assert d['result'] == 'FAIL' and d['exit_code'] == 1 and d['counts']['REGRESSION'] == 1, d
assert c['metric'] == 'latency_ms' and c['verdict'] == 'REGRESSION' and abs(c['change_rel'] - 0.5) < 1e-9, c
assert c['n_baseline'] == 5 and c['exact'] and abs(c['p_value'] - 2 / 252) < 1e-12, c
" "$work/gate.json"; then ok "--json: valid, result FAIL, p = 2/252 (exact, 5 + 5)"; else bad "--json (rc $rc)"; fi
if "$py" -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$work/regression.xml" &&
   "$py" -c "
import xml.dom.minidom, sys
d = xml.dom.minidom.parse(sys.argv[1])
cases = d.getElementsByTagName('testcase')
assert len(cases) == 1 and cases[0].getAttribute('name') == 'latency_ms', cases
f = d.getElementsByTagName('failure')
assert len(f) == 1 and f[0].getAttribute('message').startswith('REGRESSION'), f
assert d.getElementsByTagName('testsuite')[0].getAttribute('failures') == '1'
" "$work/regression.xml"; then ok "--junit: well-formed, REGRESSION is a failure"; else bad "--junit regression"; fi
gate --baseline tag:gb_few --candidate tag:gb_few_slow --junit "$work/uncertain.xml"
"$py" -c "
import xml.dom.minidom, sys
d = xml.dom.minidom.parse(sys.argv[1])
s = d.getElementsByTagName('skipped')
assert len(s) == 1 and 'UNCERTAIN' in s[0].getAttribute('message') and 'benchmark_repetitions' in s[0].getAttribute('message'), s
assert not d.getElementsByTagName('failure')
" "$work/uncertain.xml" && ok "--junit: UNCERTAIN is skipped with its message" || bad "--junit uncertain"
gate --baseline tag:gb_base --candidate tag:gb_slow --markdown
rc=$?
[ $rc -eq 1 ] && grep -q "^## xnn-lab performance gate: FAIL (1 regression)" "$work/out.txt" &&
  grep -q "^| model | variant | target | metric | baseline | candidate | change | p-value | verdict |$" "$work/out.txt" &&
  grep -q "^|---|---|---|---|---:|---:|---:|---:|---|$" "$work/out.txt" && grep -q "| \*\*REGRESSION\*\* |$" "$work/out.txt" &&
  ok "--markdown: heading, table, bold REGRESSION" || bad "--markdown (rc $rc)"
gate --baseline tag:gb_base --candidate tag:gb_slow --markdown --json
[ $? -eq 2 ] && ok "--markdown with --json: usage error, exit 2" || bad "--markdown --json"

# --- single values: size and top-1 (stored as a ratio; thresholds in points) ------------------
printf 'metrics:\n  latency_ms: {enabled: false}\n' >"$work/no_latency.yaml"
cp "$work/cand.db" "$work/edit.db"
sqlite3 "$work/edit.db" "update metrics set value = value * 1.02 where name = 'size_bytes';
                         update metrics set value = value - 0.004 where name = 'top1';"
"$XNN" gate --baseline "$work/base.db:tag:base" --candidate tag:cand --db "$work/edit.db" --policy "$work/no_latency.yaml" \
  >"$work/out.txt" 2>&1
rc=$?
[ $rc -eq 1 ] && [ "$(grep -cE "size_bytes .* \+2\.00% +- +REGRESSION$" "$work/out.txt")" -eq 2 ] &&
  [ "$(grep -cE "top1 .* -0\.40 pt +- +REGRESSION$" "$work/out.txt")" -eq 2 ] && ! grep -q "latency_ms" "$work/out.txt" &&
  ok "size +2% and top-1 -0.4 points: REGRESSION (latency switched off by the policy)" || bad "single-value regressions (rc $rc)"
cp "$work/cand.db" "$work/edit2.db"
sqlite3 "$work/edit2.db" "update metrics set value = value - 0.002 where name = 'top1';"
"$XNN" gate --baseline "$work/base.db:tag:base" --candidate tag:cand --db "$work/edit2.db" --policy "$work/no_latency.yaml" \
  >"$work/out.txt" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(grep -cE "top1 .* -0\.20 pt +- +PASS$" "$work/out.txt")" -eq 2 ] && ok "top-1 -0.2 points: PASS" ||
  bad "top-1 within threshold (rc $rc)"

# --- usage and data errors: exit 2 with a clear message ----------------------------------------
gate --baseline nosuchrun --candidate tag:gb_slow
[ $? -eq 2 ] && grep -q "no run matches 'nosuchrun'" "$work/out.txt" && ok "unknown run: exit 2" || bad "unknown run"
gate --baseline tag:nosuchtag --candidate tag:gb_slow
[ $? -eq 2 ] && grep -q "no FINISHED run matches 'tag:nosuchtag'" "$work/out.txt" && ok "unknown tag: exit 2" || bad "unknown tag"
gate --baseline "$work/missing.db:abc" --candidate tag:gb_slow
[ $? -eq 2 ] && grep -q "no database file '$work/missing.db'" "$work/out.txt" && ok "missing baseline database: exit 2" ||
  bad "missing database"
printf 'alpha: 0.01\nmetrics:\n  latency_ms: {regresion: 0.1}\n' >"$work/bad_policy.yaml"
gate --baseline tag:gb_base --candidate tag:gb_slow --policy "$work/bad_policy.yaml"
[ $? -eq 2 ] && grep -q "bad_policy.yaml:3:16: unknown key 'regresion' in metrics.latency_ms (did you mean 'regression'?)" "$work/out.txt" &&
  ok "bad policy key: exit 2 naming file:line:col and the key" || bad "bad policy key"
"$XNN" gate --baseline "$work/base.db:tag:base" --candidate tag:gb_slow --db "$g" >"$work/out.txt" 2>&1
[ $? -eq 2 ] && grep -q "no common jobs" "$work/out.txt" && ok "no common jobs: exit 2" || bad "no common jobs"
gate --baseline tag:gb_base
[ $? -eq 2 ] && grep -q "candidate" "$work/out.txt" && ok "missing --candidate: exit 2" || bad "missing --candidate"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
