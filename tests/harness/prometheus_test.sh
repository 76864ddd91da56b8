#!/usr/bin/env bash
# Prometheus end to end, against the real servers from Debian: `xnn-lab serve` on a database the
# quickstart filled, its /metrics checked by `promtool check metrics` (no lint problem allowed),
# scraped by a real `prometheus` whose query API must return what the store holds; a real
# `prometheus-pushgateway` receiving `xnn-lab run --push-gateway` (push-add: a failed run keeps
# the last success); `--textfile` checked by promtool; live `--metrics-listen` during a run;
# listen errors; clean stop on SIGTERM/SIGINT; the Grafana dashboard's JSON and metric names.
# Usage: prometheus_test.sh XNN_LAB_BINARY REPO_ROOT. Exit 77 (skipped) without the servers.
set -uo pipefail
XNN=$1
ROOT=$2
PY=/usr/bin/python3

for bin in prometheus promtool prometheus-pushgateway; do
  if ! command -v "$bin" >/dev/null 2>&1; then
    echo "SKIP: '$bin' is not installed (scripts/install-deps.sh installs prometheus and prometheus-pushgateway)"
    exit 77
  fi
done

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $1"; }
bad() {
  failed=$((failed + 1))
  echo "FAIL  $1"
  for f in "${@:2}"; do [ -f "$f" ] && { echo "      --- $f"; tail -25 "$f" | sed 's/^/      /'; }; done
}
q() { sqlite3 -batch -noheader "$1" "$2"; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
# get URL [OUT]: body to OUT (or stdout); fails on a connection error or a non-2xx status.
get() {
  $PY - "$1" "${2:-/dev/stdout}" <<'PYEOF'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        data = r.read()
except Exception as e:
    sys.stderr.write("GET %s: %s\n" % (sys.argv[1], e)); sys.exit(1)
open(sys.argv[2], "wb").write(data)
PYEOF
}
# wait_for URL SECONDS: until a GET succeeds.
wait_for() {
  for _ in $(seq 1 $(($2 * 10))); do get "$1" /dev/null 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
# promql PORT QUERY: the first result's value ("" when the result is empty).
promql() {
  $PY - "$1" "$2" <<'PYEOF'
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
try:
    d = json.load(urllib.request.urlopen(url, timeout=10))
except Exception:
    print(""); sys.exit(0)
r = d.get("data", {}).get("result", [])
print(r[0]["value"][1] if d.get("status") == "success" and r else "")
PYEOF
}
# same A B: numerically equal within 1e-9 relative.
same() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = (a < 0 ? -a : a); exit !(a != "" && b != "" && d <= 1e-9 * (m > 1e-300 ? m : 1)) }'; }
# lint FILE: promtool check metrics must pass with no output at all (no lint warnings either).
lint() { promtool check metrics <"$1" >"$1.lint" 2>&1 && [ ! -s "$1.lint" ]; }

model=$ROOT/configs/models/fmnist_cnn.onnx
[ -f "$model" ] || { echo "FAIL  $model missing"; echo "0 passed, 1 failed"; exit 1; }

# --- 1. the quickstart into a fresh database (small) -----------------------------------------
db=$work/quick.db
if "$XNN" run "$ROOT/configs/quickstart.yaml" --db "$db" metrics.accuracy.limit=200 metrics.latency.runs=5 \
     metrics.latency.min_time=0.05 >"$work/quick.txt" 2>&1 && [ "$(q "$db" "select count(*) from jobs where status='DONE'")" -eq 2 ]; then
  ok "quickstart recorded 2 jobs"
else bad "quickstart run" "$work/quick.txt"; fi

# --- 2. serve ---------------------------------------------------------------------------------
"$XNN" serve --listen 127.0.0.1:0 --db "$db" >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
pids+=("$serve_pid")
serve_port=""
for _ in $(seq 1 100); do
  serve_port=$(sed -n 's|^serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$work/serve.err")
  [ -n "$serve_port" ] && break
  sleep 0.1
done
if [ -n "$serve_port" ] && get "http://127.0.0.1:$serve_port/metrics" "$work/metrics.txt"; then
  ok "serve --listen 127.0.0.1:0 serves /metrics (port $serve_port)"
else bad "serve starts" "$work/serve.err"; fi
med_ms=$(q "$db" "select m.value from metrics m join jobs j on j.id = m.job_id where j.variant = 'fp32' and m.name = 'latency_ms_median'")
want_med=$(awk -v v="$med_ms" 'BEGIN { printf "%.17g", v / 1000 }')
line=$(grep '^xnn_lab_latency_median_seconds{experiment="quickstart",model="fmnist_cnn",target="cpu-1t",variant="fp32"} ' "$work/metrics.txt")
if [ -n "$line" ] && same "${line##* }" "$want_med"; then ok "latency median in seconds equals the store's ms / 1000 ($want_med)"
else bad "median gauge ('$line' vs $want_med)" "$work/metrics.txt"; fi
top1=$(q "$db" "select m.value from metrics m join jobs j on j.id = m.job_id where j.variant = 'xnn_optimized' and m.name = 'top1'")
line=$(grep '^xnn_lab_accuracy_top1_ratio{experiment="quickstart",model="fmnist_cnn",target="cpu-1t",variant="xnn_optimized"} ' "$work/metrics.txt")
if [ -n "$line" ] && same "${line##* }" "$top1"; then ok "top-1 accuracy as a ratio ($top1)"; else bad "top1 gauge ('$line' vs $top1)" "$work/metrics.txt"; fi
if grep -q '^xnn_lab_model_size_bytes{.*variant="xnn_optimized"} [0-9]' "$work/metrics.txt" &&
   grep -q '^xnn_lab_latency_p90_seconds{.*variant="fp32"} ' "$work/metrics.txt" &&
   grep -q '^xnn_lab_last_result_timestamp_seconds{.*variant="fp32"} 1[0-9]*' "$work/metrics.txt" &&
   grep -q '^xnn_lab_target_info{kind="cpu",simulated="false",target="cpu-1t"} 1$' "$work/metrics.txt" &&
   grep -q '^xnn_lab_exporter_scrapes_total 1$' "$work/metrics.txt" &&
   grep -q '^xnn_lab_exporter_store_read_errors_total 0$' "$work/metrics.txt" &&
   grep -q '^xnn_lab_exporter_scrape_duration_seconds_bucket{le="+Inf"} 0$' "$work/metrics.txt" &&
   grep -q '^# TYPE xnn_lab_exporter_scrape_duration_seconds histogram$' "$work/metrics.txt"; then
  ok "size, p90, timestamp, target info and the exporter's own counters and histogram are served"
else bad "the other metrics" "$work/metrics.txt"; fi
run_id=$(q "$db" "select id from runs limit 1")
commit=$(q "$db" "select git_commit from runs limit 1")
if ! grep -q "$run_id" "$work/metrics.txt" && { [ -z "$commit" ] || ! grep -q "$commit" "$work/metrics.txt"; }; then
  ok "no run id or commit in any label"; else bad "unbounded labels" "$work/metrics.txt"; fi

# --- 3. promtool ------------------------------------------------------------------------------
if lint "$work/metrics.txt"; then ok "promtool check metrics: serve's /metrics is clean"
else bad "promtool check metrics (serve)" "$work/metrics.txt.lint"; fi

# --- 4. a real Prometheus scrapes serve; its query API returns the store's value ---------------
prom_port=$(free_port)
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: xnn-lab
    static_configs:
      - targets: ['127.0.0.1:$serve_port']
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=("$!")
got=""
for _ in $(seq 1 120); do
  got=$(promql "$prom_port" 'xnn_lab_latency_median_seconds{variant="fp32",job="xnn-lab"}')
  [ -n "$got" ] && break
  sleep 0.5
done
if [ -n "$got" ] && same "$got" "$want_med"; then
  ok "Prometheus query xnn_lab_latency_median_seconds{variant=\"fp32\"} = $got = store's $med_ms ms"
else bad "Prometheus query ('$got' vs $want_med)" "$work/prometheus.log"; fi
up=$(promql "$prom_port" 'up{job="xnn-lab"}')
got_top1=$(promql "$prom_port" 'xnn_lab_accuracy_top1_ratio{variant="xnn_optimized"}')
if [ "$up" = "1" ] && same "$got_top1" "$top1"; then ok "target up, top-1 through Prometheus = $got_top1"
else bad "up '$up', top1 '$got_top1' vs $top1" "$work/prometheus.log"; fi
scrapes=$(promql "$prom_port" 'xnn_lab_exporter_scrapes_total')
if [ -n "$scrapes" ] && awk -v s="$scrapes" 'BEGIN { exit !(s >= 1) }'; then ok "exporter scrape counter seen by Prometheus ($scrapes)"
else bad "scrape counter '$scrapes'" "$work/prometheus.log"; fi

# --- errors: port in use, bad address ---------------------------------------------------------
"$XNN" serve --listen "127.0.0.1:$prom_port" --db "$db" >"$work/err.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "cannot listen on 127.0.0.1:$prom_port: address already in use" "$work/err.txt"; then
  ok "serve on a port in use: exit 1, 'address already in use'"
else bad "port in use (rc $rc)" "$work/err.txt"; fi
"$XNN" serve --listen "localhost" --db "$db" >"$work/err.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "listen address 'localhost': no port" "$work/err.txt"; then ok "serve --listen without a port: exit 1, clear"
else bad "bad address (rc $rc)" "$work/err.txt"; fi
"$XNN" serve --listen "no.such.host.invalid:9464" --db "$db" >"$work/err.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "unknown host 'no.such.host.invalid'" "$work/err.txt"; then ok "serve on an unknown host: exit 1, clear"
else bad "unknown host (rc $rc)" "$work/err.txt"; fi
"$XNN" run "$ROOT/configs/quickstart.yaml" --db "$work/never.db" --metrics-listen "127.0.0.1:$prom_port" >"$work/err.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "address already in use" "$work/err.txt" && [ "$(q "$work/never.db" "select count(*) from jobs" 2>/dev/null || echo 0)" = "0" ]; then
  ok "run --metrics-listen on a port in use: exit 1 before any job"
else bad "run --metrics-listen port in use (rc $rc)" "$work/err.txt"; fi

# --- serve stops cleanly on SIGTERM / SIGINT --------------------------------------------------
kill -TERM "$serve_pid"
rc=124
for _ in $(seq 1 50); do kill -0 "$serve_pid" 2>/dev/null || { wait "$serve_pid"; rc=$?; break; }; sleep 0.1; done
if [ $rc -eq 0 ] && grep -q "stopped (SIGTERM)" "$work/serve.err"; then ok "serve stops on SIGTERM (exit 0)"
else bad "serve SIGTERM (rc $rc)" "$work/serve.err"; fi
"$XNN" serve --listen 127.0.0.1:0 --db "$work/missing.db" >/dev/null 2>"$work/serve2.err" &
serve2=$!
pids+=("$serve2")
p2=""
for _ in $(seq 1 100); do
  p2=$(sed -n 's|^serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$work/serve2.err")
  [ -n "$p2" ] && break
  sleep 0.1
done
get "http://127.0.0.1:$p2/metrics" "$work/missing.txt" 2>/dev/null
get "http://127.0.0.1:$p2/metrics" "$work/missing.txt" 2>/dev/null
kill -INT "$serve2"
wait "$serve2"
rc=$?
if grep -q '^xnn_lab_exporter_store_read_errors_total 2$' "$work/missing.txt" && grep -q "does not exist yet" "$work/serve2.err" &&
   [ $rc -eq 0 ] && grep -q "stopped (SIGINT)" "$work/serve2.err" && [ ! -e "$work/missing.db" ]; then
  ok "a missing store counts read errors (not created); SIGINT stops serve (exit 0)"
else bad "missing store / SIGINT (rc $rc)" "$work/missing.txt" "$work/serve2.err"; fi

# --- 5. Pushgateway: push-add at the end of a run ---------------------------------------------
gw_port=$(free_port)
prometheus-pushgateway --web.listen-address="127.0.0.1:$gw_port" --persistence.file="$work/pushgateway.data" \
  >"$work/pushgateway.log" 2>&1 &
pids+=("$!")
wait_for "http://127.0.0.1:$gw_port/metrics" 30 || bad "pushgateway did not start" "$work/pushgateway.log"
cat >"$work/push.yaml" <<YAML
name: pushtest
models: [{name: cnn, path: $model}]
variants: [fp32]
targets: [{name: cpu-1t, kind: cpu, threads: 1}]
metrics: {latency: {warmup: 1, runs: 3, min_time: 0.01}, accuracy: false}
YAML
"$XNN" run "$work/push.yaml" --db "$work/push.db" --push-gateway "http://127.0.0.1:$gw_port" --push-instance ci-box \
  >"$work/push1.txt" 2>&1
rc=$?
get "http://127.0.0.1:$gw_port/metrics" "$work/gw1.txt"
grouping='experiment="pushtest",instance="ci-box",job="xnn-lab"'
success1=$(sed -n "s/^xnn_lab_last_success_timestamp_seconds{$grouping} //p" "$work/gw1.txt")
if [ $rc -eq 0 ] && grep -q "pushed metrics to http://127.0.0.1:$gw_port/metrics/job/xnn-lab/instance/ci-box/experiment/pushtest" "$work/push1.txt" &&
   [ -n "$success1" ] && grep -q "^xnn_lab_run_jobs{$grouping,state=\"done\"} 1$" "$work/gw1.txt" &&
   grep -q "^xnn_lab_latency_median_seconds{$grouping,model=\"cnn\",target=\"cpu-1t\",variant=\"fp32\"} " "$work/gw1.txt" &&
   grep -q "^push_time_seconds{$grouping} " "$work/gw1.txt"; then
  ok "run --push-gateway: the gateway has job=\"xnn-lab\", the last-success gauge ($success1) and the results"
else bad "push (rc $rc)" "$work/push1.txt" "$work/gw1.txt"; fi
printf 'this is not an onnx model\n' >"$work/garbage.onnx"
sleep 1.1  # a later success would carry a later timestamp
"$XNN" run "$work/push.yaml" --db "$work/push.db" "models.0.path=$work/garbage.onnx" \
  --push-gateway "http://127.0.0.1:$gw_port" --push-instance ci-box >"$work/push2.txt" 2>&1
rc=$?
get "http://127.0.0.1:$gw_port/metrics" "$work/gw2.txt"
success2=$(sed -n "s/^xnn_lab_last_success_timestamp_seconds{$grouping} //p" "$work/gw2.txt")
if [ $rc -eq 1 ] && [ -n "$success2" ] && [ "$success2" = "$success1" ] &&
   grep -q "^xnn_lab_run_jobs{$grouping,state=\"failed\"} 1$" "$work/gw2.txt"; then
  ok "a failed run push-adds its counts and keeps the previous last success (push-add semantics)"
else bad "failed run push (rc $rc, success '$success1' -> '$success2')" "$work/push2.txt" "$work/gw2.txt"; fi
if lint "$work/gw2.txt"; then ok "promtool check metrics: the gateway's page is clean"
else bad "promtool (gateway)" "$work/gw2.txt.lint"; fi
"$XNN" run "$work/push.yaml" --db "$work/push.db" --push-gateway "http://127.0.0.1:$(free_port)" >"$work/push3.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "error: push to the Pushgateway failed: POST http://127.0.0.1:.*/metrics/job/xnn-lab/instance/" "$work/push3.txt"; then
  ok "an unreachable gateway: the run is recorded, exit 1 with the reason"
else bad "unreachable gateway (rc $rc)" "$work/push3.txt"; fi
"$XNN" run "$work/push.yaml" --db "$work/push.db" --push-gateway "127.0.0.1:9091" >"$work/push4.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "Pushgateway URL '127.0.0.1:9091': expected http://HOST:PORT" "$work/push4.txt" &&
   ! grep -q "recorded earlier" "$work/push4.txt"; then ok "a malformed --push-gateway URL fails before the run"
else bad "malformed URL (rc $rc)" "$work/push4.txt"; fi

# --- 6. node_exporter textfile ------------------------------------------------------------------
mkdir -p "$work/textfile"
"$XNN" run "$work/push.yaml" --db "$work/push.db" --textfile "$work/textfile" --textfile-each-job >"$work/tf.txt" 2>&1
rc=$?
tf=$work/textfile/xnn_lab.prom
if [ $rc -eq 0 ] && [ -f "$tf" ] && [ "$(ls "$work/textfile")" = "xnn_lab.prom" ] &&
   grep -q '^xnn_lab_run_jobs{experiment="pushtest",state="skipped"} 1$' "$tf" &&
   grep -q '^xnn_lab_last_success_timestamp_seconds{experiment="pushtest"} ' "$tf" &&
   grep -q '^xnn_lab_run_in_progress{experiment="pushtest"} 0$' "$tf"; then
  ok "run --textfile DIR writes DIR/xnn_lab.prom (and nothing else)"
else bad "textfile (rc $rc)" "$work/tf.txt" "$tf"; fi
if lint "$tf"; then ok "promtool check metrics: the textfile is clean"; else bad "promtool (textfile)" "$tf.lint"; fi
"$XNN" run "$work/push.yaml" --db "$work/push.db" --textfile "$work/nowhere" >"$work/tf2.txt" 2>&1
[ $? -eq 2 ] && grep -qi "nowhere" "$work/tf2.txt" && ok "--textfile with a missing folder is a usage error" || bad "textfile missing dir" "$work/tf2.txt"

# --- 7. live metrics during a run -----------------------------------------------------------------
cat >"$work/live.yaml" <<YAML
name: live
models: [{name: cnn, path: $model}]
variants: [fp32, {name: xnn, steps: [convert]}]
targets: [{name: a, kind: cpu}, {name: b, kind: cpu}]
metrics: {latency: {runs: 20, min_time: 0.8}, accuracy: false}
YAML
live_port=$(free_port)
"$XNN" run "$work/live.yaml" --db "$work/live.db" --metrics-listen "127.0.0.1:$live_port" >"$work/live.txt" 2>&1 &
live_pid=$!
pids+=("$live_pid")
seen=0
for _ in $(seq 1 300); do
  if get "http://127.0.0.1:$live_port/metrics" "$work/live.prom" 2>/dev/null &&
     grep -q '^xnn_lab_run_in_progress{experiment="live"} 1$' "$work/live.prom" &&
     grep -q '^xnn_lab_run_jobs{experiment="live",state="planned"} 4$' "$work/live.prom" &&
     grep -qE '^xnn_lab_run_jobs\{experiment="live",state="done"\} [123]$' "$work/live.prom" &&
     grep -q '^xnn_lab_latency_median_seconds{experiment="live",model="cnn",target="a",variant="fp32"} ' "$work/live.prom"; then
    seen=1
    break
  fi
  sleep 0.1
done
wait "$live_pid"
rc=$?
if [ $seen -eq 1 ] && [ $rc -eq 0 ] && grep -q '^xnn_lab_run_job_duration_seconds_count{experiment="live"} [123]$' "$work/live.prom"; then
  ok "run --metrics-listen: live progress and results mid-run ($(grep 'state="done"' "$work/live.prom"))"
else bad "live metrics (seen $seen, rc $rc)" "$work/live.txt" "$work/live.prom"; fi
if lint "$work/live.prom"; then ok "promtool check metrics: the live page is clean"; else bad "promtool (live)" "$work/live.prom.lint"; fi

# --- 8. Grafana dashboard ---------------------------------------------------------------------------
dash=$ROOT/configs/dashboards/xnn-lab.json
if $PY -m json.tool "$dash" >/dev/null; then ok "dashboard JSON parses"; else bad "dashboard JSON"; fi
missing=""
for name in $(grep -o 'xnn_lab_[a-z0-9_]*' "$dash" | sort -u); do
  base=${name%_bucket}
  grep -q "^# TYPE $base " "$work/metrics.txt" "$work/live.prom" "$tf" || missing="$missing $name"
done
if [ -z "$missing" ]; then ok "every metric the dashboard queries is exported"; else bad "dashboard names not exported:$missing"; fi
if $PY -c "
import sys, yaml
for f in sys.argv[1:]:
    d = yaml.safe_load(open(f)); assert d['apiVersion'] == 1, f
" "$ROOT/configs/dashboards/provisioning/dashboards.yaml" "$ROOT/configs/dashboards/provisioning/datasources.yaml"; then
  ok "provisioning YAML parses"; else bad "provisioning YAML"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
