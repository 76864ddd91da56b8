#!/usr/bin/env bash
# End-to-end tests of `xnn-lab report`: the quickstart (small) into two databases, an HTML and
# a Markdown report, the baseline comparison against `xnn-lab gate`, escaping of hostile names,
# a training curve, error exits, then the HTML rendered in headless Chromium (no script errors,
# charts drawn, a screenshot). Without chromium the browser part is skipped (exit 77 when
# everything else passed).
# Usage: report_test.sh XNN_LAB_BINARY REPO_ROOT
set -uo pipefail
XNN=$1
ROOT=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $1"; }
bad() { failed=$((failed + 1)); echo "FAIL  $1"; [ -f "$work/out.txt" ] && sed 's/^/      /' "$work/out.txt" | tail -25; }
q() { sqlite3 -batch -noheader "$1" "$2"; }
fast=(metrics.accuracy.limit=200 metrics.latency.runs=5 metrics.latency.min_time=0.05)

# --- two quickstart runs in two databases (a baseline and a candidate) -----------------------
a=$work/a.db
b=$work/b.db
if "$XNN" run "$ROOT/configs/quickstart.yaml" --db "$a" --tag base "${fast[@]}" >"$work/out.txt" 2>&1 &&
   "$XNN" run "$ROOT/configs/quickstart.yaml" --db "$b" --tag cand "${fast[@]}" >"$work/out.txt" 2>&1; then
  ok "quickstart recorded twice (tags base, cand)"
else
  bad "quickstart runs"
  echo "$passed passed, $failed failed"
  exit 1
fi

# --- HTML ----------------------------------------------------------------------------------------
html=$work/r.html
if "$XNN" report --db "$a" -o "$html" >"$work/out.txt" 2>&1 && [ -s "$html" ]; then ok "report -o r.html"; else bad "report -o r.html"; fi
run_a=$(q "$a" "select id from runs limit 1")
has() { grep -qF -- "$2" "$1"; }
if has "$html" "<!DOCTYPE html>" && has "$html" "$run_a" && has "$html" "fmnist_cnn" && has "$html" "xnn_optimized" &&
   has "$html" "cpu-1t" && has "$html" "name: quickstart" && has "$html" "xnn-lab run"; then
  ok "html names the run, jobs, target, config text and command"
else bad "html content"; fi
cols_ok=1
for c in "median ms" "p90 ms" ">size<" ">params<" ">MACs<" ">top-1<" ">top-5<" "peak RSS"; do has "$html" "$c" || { cols_ok=0; echo "      missing column $c"; }; done
[ $cols_ok = 1 ] && ok "summary table has every recorded metric column" || bad "summary columns"
missing=""
for s in summary pareto size ops environment; do has "$html" "<section id=\"$s\"" || missing="$missing $s"; done
[ -z "$missing" ] && ok "sections summary, pareto, size, ops, environment" || bad "sections missing:$missing"
if [ "$(grep -o '<circle class="pt' "$html" | wc -l)" -eq 2 ] && has "$html" '<circle class="pt front"' &&
   [ "$(grep -o '<rect class="bar"' "$html" | wc -l)" -eq 2 ] && [ "$(grep -o '<svg class="chart stacked"' "$html" | wc -l)" -eq 2 ] &&
   grep -q '<rect class="seg"' "$html"; then
  ok "scatter (2 points, Pareto front marked), size bars (2), per-op breakdowns (2)"
else bad "charts in the html"; fi
kernel=$(q "$a" "select kernel from op_profiles order by time_ms desc limit 1")
optype=$(q "$a" "select op_type from op_profiles order by time_ms desc limit 1")
if has "$html" "$kernel" && has "$html" "$optype"; then ok "per-op table names the slowest op ($optype, $kernel)"; else bad "per-op op type / kernel"; fi
cpu=$(q "$a" "select cpu_model from environments limit 1")
if has "$html" "load average" && has "$html" "xnn-lab version" && has "$html" ">ISA<" && has "$html" ">compiler<" &&
   { [ -z "$cpu" ] || has "$html" "$(printf '%s' "$cpu" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g')"; }; then
  ok "environment: CPU, ISA, compiler, version, load"
else bad "environment section"; fi
if grep -Eiq '(src|href)[[:space:]]*=[[:space:]]*["'"'"']?[[:space:]]*(https?:)?//' "$html" || grep -Eiq '<(link|img|iframe)\b|@import|url\(' "$html"; then
  bad "self-contained: something is loaded from elsewhere"
else ok "self-contained (no external src/href, stylesheet or import)"; fi
[ "$(grep -o '<script' "$html" | wc -l)" -eq 1 ] && ok "one inline script" || bad "one inline script"

# --- Markdown ------------------------------------------------------------------------------------
"$XNN" report --db "$a" --format md -o "$work/r.out" >"$work/out.txt" 2>&1
if head -1 "$work/r.out" | grep -q "^# xnn-lab report: quickstart" && grep -q "^| model | variant | target | simulated | status |" "$work/r.out" &&
   grep -q "^## Pareto front" "$work/r.out" && [ "$(grep -c '^| fmnist_cnn |' "$work/r.out")" -eq 2 ]; then
  ok "--format md: title, summary table (2 rows), Pareto list"
else bad "--format md"; fi
"$XNN" report --db "$a" -o "$work/inferred.md" >"$work/out.txt" 2>&1
head -1 "$work/inferred.md" | grep -q "^# xnn-lab report" && ok "format inferred from .md" || bad "format inferred from .md"
"$XNN" report --db "$a" --format md -o - >"$work/stdout.md" 2>"$work/out.txt"
if diff <(grep -v '^_Generated' "$work/stdout.md") <(grep -v '^_Generated' "$work/r.out") >"$work/out.txt"; then
  ok "-o - writes to standard output"
else bad "-o -"; fi

# --- baseline: verdicts equal to `xnn-lab gate` ------------------------------------------------
rb=$work/rb.html
if "$XNN" report --db "$b" --baseline "$a:tag:base" -o "$rb" >"$work/out.txt" 2>&1 && has "$rb" '<section id="baseline"' &&
   has "$rb" "$run_a"; then
  ok "--baseline OTHER.db:tag:base (html)"
else bad "--baseline html"; fi
"$XNN" report --db "$b" --run tag:cand --baseline "$a:tag:base" --format md -o "$work/rb.md" >"$work/out.txt" 2>&1
"$XNN" gate --db "$b" --baseline "$a:tag:base" --candidate tag:cand --markdown >"$work/gate.md" 2>"$work/out.txt"
grep '^| fmnist_cnn |' "$work/gate.md" >"$work/gate.rows"
grep '^| fmnist_cnn |' "$work/rb.md" | grep -v '| no |' >"$work/report.rows"
counts=$(tail -1 "$work/gate.md")
if [ -s "$work/gate.rows" ] && diff "$work/gate.rows" "$work/report.rows" >"$work/out.txt" && grep -qxF "$counts" "$work/rb.md"; then
  ok "baseline verdicts and counts equal xnn-lab gate's ($counts)"
else bad "baseline verdicts differ from xnn-lab gate"; fi

# --- hostile names are escaped; training curves --------------------------------------------------
c=$work/c.db
cp "$a" "$c"
job=$(q "$c" "select id from jobs where variant='fp32'")
q "$c" "update jobs set model='<script>alert(1)</script> & co' where id='$job'"
q "$c" "insert into samples(job_id,name,seq,value) values ('$job','epoch_test_accuracy',0,0.71),('$job','epoch_test_accuracy',1,0.80),('$job','epoch_test_accuracy',2,0.84),('$job','epoch_train_loss',0,0.9),('$job','epoch_train_loss',1,0.6),('$job','epoch_train_loss',2,0.45)"
rc=$work/rc.html
"$XNN" report --db "$c" -o "$rc" >"$work/out.txt" 2>&1
if has "$rc" "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" && ! has "$rc" "<script>alert"; then
  ok "model name with <script> and & is escaped"
else bad "escaping"; fi
if has "$rc" '<section id="training"' && [ "$(grep -o '<svg class="chart curve"' "$rc" | wc -l)" -eq 2 ] && has "$rc" "epoch 3: 84.00%"; then
  ok "epoch_test_accuracy / epoch_train_loss samples give learning curves"
else bad "learning curves"; fi
! has "$html" '<section id="training"' && ok "no training section without epoch samples" || bad "training section without samples"
"$XNN" report --db "$c" --format md -o "$work/rc.md" >"$work/out.txt" 2>&1
if ! grep -q "<script>" "$work/rc.md" && grep -q "&lt;script&gt;" "$work/rc.md" && grep -q "71.00, 80.00, 84.00" "$work/rc.md"; then
  ok "markdown escapes names and lists the training curve"
else bad "markdown escaping / training"; fi

# --- errors --------------------------------------------------------------------------------------
expect_exit() {  # expect_exit CODE MESSAGE-REGEX DESCRIPTION -- ARGS...
  local code=$1 msg=$2 what=$3
  shift 4
  "$XNN" report "$@" >"$work/out.txt" 2>&1
  local got=$?
  if [ $got -eq "$code" ] && grep -Eq -- "$msg" "$work/out.txt"; then ok "$what (exit $code)"; else echo "      exit $got"; bad "$what"; fi
}
expect_exit 1 "no run matches 'nope'" "unknown run" -- --db "$a" --run nope -o "$work/x.html"
expect_exit 1 "no experiment 'nope' in .*quickstart" "unknown experiment" -- --db "$a" --experiment nope -o "$work/x.html"
expect_exit 1 "no results database" "missing database" -- --db "$work/missing.db" -o "$work/x.html"
cp "$a" "$work/empty.db"
q "$work/empty.db" "delete from run_jobs; delete from runs"
expect_exit 1 "has no runs" "database without runs" -- --db "$work/empty.db" -o "$work/x.html"
expect_exit 1 "cannot write the report" "unwritable output" -- --db "$a" -o "$work/no/such/dir/r.html"
expect_exit 1 "no FINISHED run matches 'tag:nope'" "unknown baseline" -- --db "$a" --baseline tag:nope -o "$work/x.html"
expect_exit 2 "pdf" "bad --format is a usage error" -- --db "$a" --format pdf -o "$work/x.html"
expect_exit 2 "output is required" "-o is required" -- --db "$a"
[ ! -e "$work/x.html" ] && ok "no output file after an error" || bad "no output file after an error"

# --- headless Chromium: scripts run without errors, charts drawn, screenshot --------------------
browser=""
for cand in chromium chromium-browser google-chrome; do command -v "$cand" >/dev/null 2>&1 && { browser=$cand; break; }; done
if [ -z "$browser" ]; then
  echo "SKIP  headless browser checks: chromium not installed (scripts/install-deps.sh installs it)"
  echo "$passed passed, $failed failed"
  [ $failed -eq 0 ] && exit 77 || exit 1
fi
chrome() {
  timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$work/chrome-profile" "$@"
}
for f in "$rb" "$rc"; do
  name=$(basename "$f")
  chrome --virtual-time-budget=5000 --enable-logging=stderr --v=0 --dump-dom "file://$f" >"$work/$name.dom" 2>"$work/$name.log"
  cp "$work/$name.log" "$work/out.txt"
  if grep -q '<body[^>]*data-ready="1"' "$work/$name.dom" && ! grep -q 'data-error=' "$work/$name.dom"; then
    ok "$name: the inline script ran to the end (data-ready=1, no data-error)"
  else bad "$name: script did not finish"; fi
  if grep -Eq "Uncaught|CONSOLE.*Error" "$work/$name.log"; then bad "$name: console errors"; else ok "$name: no console errors"; fi
  charts=$(grep -o '<body[^>]*data-charts="[0-9]*"' "$work/$name.dom" | grep -o '[0-9]*"$' | tr -d '"')
  if [ "$(grep -o '<circle class="pt' "$work/$name.dom" | wc -l)" -ge 2 ] && grep -q '<rect class="bar"' "$work/$name.dom" &&
     grep -q '<rect class="seg"' "$work/$name.dom" && [ "${charts:-0}" -ge 4 ]; then
    ok "$name: the DOM has the charts ($charts svg charts: scatter circles, size bars, op segments)"
  else bad "$name: charts in the DOM"; fi
done
if grep -q 'id="baseline"' "$work/rb.html.dom" && ! grep -q '<script>alert' "$work/rc.html.dom" && grep -q 'chart curve' "$work/rc.html.dom"; then
  ok "rendered DOM: baseline section; escaped name stays text; learning curves"
else bad "rendered DOM content"; fi
png=$work/report.png
chrome --screenshot="$png" --window-size=1280,2000 --hide-scrollbars "file://$rb" >"$work/out.txt" 2>&1
if [ -f "$png" ] && [ "$(stat -c %s "$png")" -gt 20000 ] && [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; then
  ok "screenshot: $(stat -c %s "$png") byte PNG"
else bad "screenshot"; fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
