# Shared preamble of the end-to-end shell tests: source it after setting XNN (the binary) and
# ROOT (the repository). It makes a scratch folder $work (removed on exit), counts checks, and
# offers:
#   ok NAME / bad NAME      record a passed / failed check (bad shows the tail of $work/out.txt)
#   jf FILE KEY.PATH        print a JSON value (dotted path of object keys)
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
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}
