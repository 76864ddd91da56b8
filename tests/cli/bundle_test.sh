#!/usr/bin/env bash
# End-to-end tests of model bundles: `xnn-lab bundle create` (manifest YAML, errors with
# FILE:LINE:COL), `bundle inspect [--json]` (parsed with python3), `bundle run` (outputs equal
# `infer` on the same model; policy fallbacks with protected models and keys), and refusals of
# corrupt / truncated bundles.
# Usage: bundle_test.sh XNN_LAB_BINARY SOURCE_DIR
XNN=$1
SRC=$2
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
# json_check NAME FILE PYTHON_EXPRESSION : the expression over `d` (the parsed JSON) is true.
json_check() {
  local name=$1 file=$2 expr=$3
  if $PY -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($expr) else 1)" "$file" 2>"$work/py.txt"; then
    passed=$((passed + 1)); echo "ok    $name"
  else
    failed=$((failed + 1)); echo "FAIL  $name ($expr)"; head -c 2000 "$file"; cat "$work/py.txt"
  fi
}
flip_byte() {  # flip_byte IN OUT OFFSET
  $PY -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[int(sys.argv[3])]^=1; open(sys.argv[2],'wb').write(b)" "$1" "$2" "$3"
}

cnn=$SRC/configs/models/fmnist_cnn.onnx
[ -f "$cnn" ] || { echo "FAIL  model $cnn missing"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$work/m"
$PY -c "
import numpy as np; rng=np.random.default_rng(5)
np.save('$work/x.npy', rng.random((1,1,28,28), dtype=np.float32))"
"$XNN" infer "$cnn" --input "$work/x.npy" --output-dir "$work/o_ref" >/dev/null

# --- the documented example -------------------------------------------------------------------------
run_expect "create the example bundle" 0 "wrote .*app.xnnb: bundle 'fmnist-classifier' version 1 \(first release\), 1 model\(s\), 3 rule\(s\)" \
  "$XNN" bundle create "$SRC/configs/bundles/example.yaml" -o "$work/app.xnnb"
check "bundle starts with XNNB, no .tmp left" test "$(head -c 4 "$work/app.xnnb")" = "XNNB" -a ! -e "$work/app.xnnb.tmp"
"$XNN" bundle inspect "$work/app.xnnb" --json >"$work/inspect.json" 2>&1
json_check "inspect --json: manifest" "$work/inspect.json" \
  "d['name']=='fmnist-classifier' and d['version']==1 and d['label']=='first release' and d['format_version']==1"
json_check "inspect --json: hashes verified" "$work/inspect.json" \
  "len(d['models'])==1 and d['models'][0]['hash_verified'] and d['models'][0]['format']=='onnx' and len(d['models'][0]['sha256'])==64"
json_check "inspect --json: policy" "$work/inspect.json" \
  "[r['target'] for r in d['policy']]==['npu','cpu','cpu'] and d['policy'][1]['threads']=='half' and d['policy'][2]['threads']==1"
json_check "inspect --json: this device picks a cpu rule and says why rule 1 was skipped" "$work/inspect.json" \
  "d['selection']['chosen'] and d['selection']['target']=='cpu' and d['selection']['rules'][0]['status']=='skipped' and 'flagship' in d['selection']['rules'][0]['reason']"
"$XNN" bundle inspect "$work/app.xnnb" --json --device-class flagship >"$work/inspect_flagship.json" 2>&1
json_check "inspect --device-class flagship: the npu rule is skipped as unavailable" "$work/inspect_flagship.json" \
  "d['device']['device_class']=='flagship' and 'not available in this runtime' in d['selection']['rules'][0]['reason']"
run_expect "inspect (text) says what this device picks" 0 "picks rule [23] '(big x86|everything else)': model cnn" \
  "$XNN" bundle inspect "$work/app.xnnb"
run_expect "run the example bundle" 0 "bundle 'fmnist-classifier' version 1 \(first release\): rule [23]" \
  "$XNN" bundle run "$work/app.xnnb" --input "$work/x.npy" --output-dir "$work/o_app"
check "bundle run output == infer output (bit-identical)" diff -r "$work/o_ref" "$work/o_app"

# --- protected variants, keys and fallbacks ---------------------------------------------------------
"$XNN" protect --generate-key "$work/model.key" >/dev/null
"$XNN" protect --generate-key "$work/other.key" >/dev/null
"$XNN" convert "$cnn" -o "$work/m/plain.xnn" >/dev/null
"$XNN" protect "$cnn" --key-file "$work/model.key" -o "$work/m/secret.xnn" >/dev/null
cat >"$work/m/keyed.yaml" <<'EOF'
name: fmnist-classifier
version: 2
label: protected
created_at: "2024-06-01T12:00:00Z"
models:
  - {id: secret, path: secret.xnn}
  - {id: plain, path: plain.xnn}
policy:
  - {name: protected first, model: secret, threads: all}
  - {name: public fallback, model: plain}
EOF
run_expect "create a bundle with a protected model" 0 "secret .*xnn \(protected\)" \
  "$XNN" bundle create "$work/m/keyed.yaml" -o "$work/keyed.xnnb"
check "the key is not stored in the bundle" bash -c "! grep -qF -f <(xxd -p '$work/model.key' | tr -d '\n') <(xxd -p '$work/keyed.xnnb' | tr -d '\n')"
run_expect "run with the key uses the protected model" 0 "rule 1 'protected first', model secret" \
  "$XNN" bundle run "$work/keyed.xnnb" --key-file "$work/model.key" --input "input=$work/x.npy" --output-dir "$work/o_secret"
check "protected run output == infer output" diff -r "$work/o_ref" "$work/o_secret"
run_expect "run without a key falls back and says why" 0 "skipped rule 1 'protected first': model 'secret' failed to load: .*is protected" \
  "$XNN" bundle run "$work/keyed.xnnb" --input "$work/x.npy" --output-dir "$work/o_nokey"
check "fallback output == infer output" diff -r "$work/o_ref" "$work/o_nokey"
run_expect "run with the wrong key falls back: authentication failed" 0 "skipped rule 1 .*authentication failed: wrong key" \
  "$XNN" bundle run "$work/keyed.xnnb" --key-file "$work/other.key" --input "$work/x.npy" --output-dir "$work/o_wrong"
"$XNN" bundle inspect "$work/keyed.xnnb" --json >"$work/keyed.json"
json_check "inspect --json: protected flag and created_at from the YAML" "$work/keyed.json" \
  "[m['protected'] for m in d['models']]==[True,False] and d['created_at']=='2024-06-01T12:00:00Z' and d['policy'][0]['threads']=='all'"

# --- corrupt and truncated bundles ---------------------------------------------------------------
secret_at=$($PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['models'][0]['offset'])" "$work/keyed.json")
blobs_at=$($PY -c "import struct,sys; print(struct.unpack_from('<Q', open(sys.argv[1],'rb').read(), 16)[0])" "$work/keyed.xnnb")
flip_byte "$work/keyed.xnnb" "$work/blob_flip.xnnb" $((blobs_at + secret_at + 500))
"$XNN" bundle inspect "$work/blob_flip.xnnb" --json >"$work/blob_flip.json"
json_check "inspect: a flipped blob byte is a hash mismatch" "$work/blob_flip.json" \
  "not d['models'][0]['hash_verified'] and 'content hash mismatch' in d['models'][0]['problem'] and d['models'][1]['hash_verified']"
run_expect "run: a damaged model falls back to the intact one" 0 "skipped rule 1 .*content hash mismatch" \
  "$XNN" bundle run "$work/blob_flip.xnnb" --key-file "$work/model.key" --input "$work/x.npy" --output-dir "$work/o_flip"
check "fallback after a damaged model: output == infer output" diff -r "$work/o_ref" "$work/o_flip"
flip_byte "$work/keyed.xnnb" "$work/manifest_flip.xnnb" 100
run_expect "a flipped manifest byte is refused" 1 "manifest_flip.xnnb: manifest is corrupt" \
  "$XNN" bundle inspect "$work/manifest_flip.xnnb"
head -c 5000 "$work/keyed.xnnb" >"$work/trunc.xnnb"
run_expect "a truncated bundle is refused" 1 "trunc.xnnb: truncated: the header says [0-9]+ bytes, the file has 5000" \
  "$XNN" bundle run "$work/trunc.xnnb" --input "$work/x.npy" --output-dir "$work/o_x"
run_expect "a model file is not a bundle" 1 "plain.xnn: not a model bundle" "$XNN" bundle inspect "$work/m/plain.xnn"

# --- manifest YAML errors ------------------------------------------------------------------------
bad() {  # bad NAME PATTERN YAML
  printf '%s\n' "$3" >"$work/m/bad.yaml"
  run_expect "bad manifest: $1" 1 "$2" "$XNN" bundle create "$work/m/bad.yaml" -o "$work/bad.xnnb"
}
bad "unknown key" "bad.yaml:2:1: verison: unknown key \(did you mean 'version'\?\)" \
'name: app
verison: 1
models: [{id: a, path: plain.xnn}]
policy: [{model: a}]'
bad "missing version" "bad.yaml:1:1: missing required key 'version'" \
'name: app
models: [{id: a, path: plain.xnn}]
policy: [{model: a}]'
bad "unknown model id in a rule" "bad.yaml:5:12: policy\[0\].model: unknown model id 'b'" \
'name: app
version: 1
models: [{id: a, path: plain.xnn}]
policy:
  - model: b'
bad "missing model file" "bad.yaml:3:24: models\[0\].path: model file .*nope.xnn does not exist" \
'name: app
version: 1
models: [{id: a, path: nope.xnn}]
policy: [{model: a}]'
bad "bad threads" "bad.yaml:4:30: policy\[0\].threads: expected a thread count 1..1024, 'all' or 'half', got 'lots'" \
'name: app
version: 1
models: [{id: a, path: plain.xnn}]
policy: [{model: a, threads: lots}]'
bad "bad isa" "policy\[0\].when.isa: expected scalar, avx2, avx512 or neon, got 'sse2'" \
'name: app
version: 1
models: [{id: a, path: plain.xnn}]
policy: [{model: a, when: {isa: sse2}}]'
bad "version 0" "bad.yaml:2:10: version: expected an integer in 1\.\." \
'name: app
version: 0
models: [{id: a, path: plain.xnn}]
policy: [{model: a}]'
bad "duplicate model id" "models\[1\].id: duplicate model id 'a'" \
'name: app
version: 1
models: [{id: a, path: plain.xnn}, {id: a, path: secret.xnn}]
policy: [{model: a}]'
bad "YAML syntax error" "bad.yaml:[0-9]+:[0-9]+: YAML syntax error" \
'name: app
version: [1
policy: x'
check "no bundle written for bad manifests" test ! -e "$work/bad.xnnb"
run_expect "missing manifest file" 1 "missing.yaml: cannot open bundle manifest" \
  "$XNN" bundle create "$work/missing.yaml" -o "$work/bad.xnnb"
run_expect "bundle --help lists the subcommands" 0 "create.*" "$XNN" bundle --help
check "bundle --help names inspect and run" bash -c "'$XNN' bundle --help | grep -q inspect && '$XNN' bundle --help | grep -q run"

finish
