# Shared preamble of the end-to-end shell tests: source it after setting XNN (the binary) and
# ROOT (the repository). It makes a scratch folder $work (removed on exit), counts checks, and
# offers:
#   ok NAME / bad NAME      record a passed / failed check (bad shows the tail of $work/out.txt)
#   jf FILE KEY.PATH        print a JSON value (dotted path of object keys)
#   check NAME CMD...       a check that passes when CMD succeeds
#   run_expect NAME EXIT PATTERN CMD...   CMD exits with EXIT and its output matches PATTERN (grep -E)
#   finish                  print the totals and exit non-zero if any check failed
# shellcheck shell=bash
set -uo pipefail
PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $1"; }
bad() { failed=$((failed + 1)); echo "FAIL  $1"; [ -f "$work/out.txt" ] && sed 's/^/      /' "$work/out.txt" | tail -25; }
jf() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); [d:=d[k] for k in sys.argv[2].split('.')]; print(d)" "$1" "$2"; }
check() {
  local name=$1
  shift
  if "$@"; then ok "$name"; else failed=$((failed + 1)); echo "FAIL  $name"; fi
}
run_expect() {
  local name=$1 want=$2 pattern=$3
  shift 3
  "$@" >"$work/out.txt" 2>&1
  local got=$?
  if [ "$got" -eq "$want" ] && grep -qE -- "$pattern" "$work/out.txt"; then
    ok "$name"
  else
    failed=$((failed + 1)); echo "FAIL  $name (exit $got, want $want; pattern '$pattern')"; sed 's/^/      /' "$work/out.txt" | head -20
  fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}
