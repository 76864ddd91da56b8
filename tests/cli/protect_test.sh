#!/usr/bin/env bash
# End-to-end tests of model protection: `xnn-lab protect` (AES-256-GCM), --key-file on
# infer / bench / eval / inspect, and the refusals (no key, wrong key, modified file, bad key file).
# Usage: protect_test.sh XNN_LAB_BINARY SOURCE_DIR
XNN=$1
SRC=$2
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

cnn=$SRC/configs/models/fmnist_cnn.onnx
[ -f "$cnn" ] || { echo "FAIL  model $cnn missing"; echo "0 passed, 1 failed"; exit 1; }
key=$work/keys/model.key
mkdir -p "$work/keys" "$work/models"

# --- keys --------------------------------------------------------------------------------------
run_expect "generate key" 0 "wrote a new 32-byte key" "$XNN" protect --generate-key "$key"
check "key file is 32 bytes, mode 0600" test "$(stat -c '%s %a' "$key")" = "32 600"
run_expect "generate key refuses to overwrite" 1 "already exists" "$XNN" protect --generate-key "$key"
"$XNN" protect --generate-key "$work/keys/other.key" >/dev/null 2>&1
check "two generated keys differ" bash -c "! cmp -s '$key' '$work/keys/other.key'"
$PY -c "import sys; open(sys.argv[1],'w').write(open(sys.argv[2],'rb').read().hex()+'\n')" "$work/keys/hex.key" "$key"
printf 'too short' >"$work/keys/bad.key"

# --- protect -------------------------------------------------------------------------------------
"$XNN" convert "$cnn" -o "$work/models/plain.xnn" >/dev/null
run_expect "protect (weights only)" 0 "protected .* -> .*w.xnn \(AES-256-GCM, weights encrypted\)" \
  "$XNN" protect "$cnn" --key-file "$key" -o "$work/models/w.xnn"
run_expect "protect --encrypt-graph" 0 "whole model encrypted" \
  "$XNN" protect "$cnn" --key-file "$work/keys/hex.key" -o "$work/models/g.xnn" --encrypt-graph
check "protected file starts with XNNP" test "$(head -c 4 "$work/models/w.xnn")" = "XNNP"
check "no .tmp or plaintext left next to the output" test "$(ls "$work/models" | tr '\n' ' ')" = "g.xnn plain.xnn w.xnn "
run_expect "protect: bad key file" 1 "bad.key: key file is 9 bytes; expected exactly 32 raw bytes or 64 hex characters" \
  "$XNN" protect "$cnn" --key-file "$work/keys/bad.key" -o "$work/models/x.xnn"
run_expect "protect: missing -o" 2 "output" "$XNN" protect "$cnn" --key-file "$key"
run_expect "protect --help mentions inspect without key" 0 "inspect. works without" "$XNN" protect --help

# --- infer ---------------------------------------------------------------------------------------
$PY -c "
import numpy as np; rng=np.random.default_rng(3)
np.save('$work/x.npy', rng.random((1,1,28,28), dtype=np.float32))"
run_expect "infer plain" 0 "f32" "$XNN" infer "$work/models/plain.xnn" --input "$work/x.npy" --output-dir "$work/o_plain"
run_expect "infer weights-only with --key-file" 0 "f32" \
  "$XNN" infer "$work/models/w.xnn" --key-file "$key" --input "$work/x.npy" --output-dir "$work/o_w"
run_expect "infer whole-model with hex --key-file" 0 "f32" \
  "$XNN" infer "$work/models/g.xnn" --key-file "$work/keys/hex.key" --input "$work/x.npy" --output-dir "$work/o_g"
check "infer outputs bit-identical (weights only)" diff -r "$work/o_plain" "$work/o_w"
check "infer outputs bit-identical (whole model)" diff -r "$work/o_plain" "$work/o_g"
run_expect "infer without key" 1 "w.xnn is protected: pass --key-file" \
  "$XNN" infer "$work/models/w.xnn" --input "$work/x.npy" --output-dir "$work/o_x"
run_expect "infer with wrong key" 1 "w.xnn: authentication failed: wrong key or the file was modified" \
  "$XNN" infer "$work/models/w.xnn" --key-file "$work/keys/other.key" --input "$work/x.npy" --output-dir "$work/o_x"
$PY -c "
import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[len(b)//2]^=1; open(sys.argv[2],'wb').write(b)" \
  "$work/models/w.xnn" "$work/models/tampered.xnn"
run_expect "infer tampered file" 1 "tampered.xnn: authentication failed" \
  "$XNN" infer "$work/models/tampered.xnn" --key-file "$key" --input "$work/x.npy" --output-dir "$work/o_x"
head -c 1000 "$work/models/w.xnn" >"$work/models/trunc.xnn"
run_expect "infer truncated file" 1 "trunc.xnn: .*truncated" \
  "$XNN" infer "$work/models/trunc.xnn" --key-file "$key" --input "$work/x.npy" --output-dir "$work/o_x"
check "no output written on refusal" test ! -e "$work/o_x"

# --- inspect -------------------------------------------------------------------------------------
run_expect "inspect weights-only without key shows the graph" 0 "weights: +encrypted" "$XNN" inspect "$work/models/w.xnn"
"$XNN" inspect "$work/models/plain.xnn" --json >"$work/i_plain.json"
"$XNN" inspect "$work/models/w.xnn" --json >"$work/i_w.json"
"$XNN" inspect "$work/models/g.xnn" --json --key-file "$work/keys/hex.key" >"$work/i_g.json"
check "inspect without key: same ops, inputs, parameters" $PY -c "
import json; a=json.load(open('$work/i_plain.json')); b=json.load(open('$work/i_w.json')); g=json.load(open('$work/i_g.json'))
assert b['format']=='xnn-protected' and b['encrypted_weights'] is True, b
for k in ['ops','inputs','outputs','parameters','nodes','weight_bytes']: assert a[k]==b[k]==g[k], k
assert g['macs']==a['macs'] and a['macs']>0 and not g['encrypted_weights'], (a, g)"
run_expect "inspect --encrypt-graph model without key" 1 "graph encrypted.*pass --key-file" "$XNN" inspect "$work/models/g.xnn"

# --- bench ---------------------------------------------------------------------------------------
run_expect "bench with --key-file" 0 "median" "$XNN" bench "$work/models/w.xnn" --key-file "$key" --runs 3 --warmup 1
run_expect "bench without key" 1 "is protected: pass --key-file" "$XNN" bench "$work/models/g.xnn" --runs 1
run_expect "bench wrong key" 1 "g.xnn: authentication failed" "$XNN" bench "$work/models/g.xnn" --key-file "$work/keys/other.key" --runs 1
run_expect "bench: raw and hex key files are the same key" 0 "median" "$XNN" bench "$work/models/g.xnn" --key-file "$key" --runs 1

# --- eval ----------------------------------------------------------------------------------------
ev() { "$XNN" eval "$1" --dataset fashion-mnist --limit 500 --scale 0.00392156862745098 --mean 0.2860 --std 0.3530 --json "${@:2}"; }
ev "$work/models/plain.xnn" >"$work/e_plain.json" 2>&1
ev "$work/models/w.xnn" --key-file "$key" >"$work/e_w.json" 2>&1
ev "$work/models/g.xnn" --key-file "$work/keys/hex.key" >"$work/e_g.json" 2>&1
check "eval accuracy identical to the unprotected model" $PY -c "
import json; a,b,c=(json.load(open('$work/'+f)) for f in ['e_plain.json','e_w.json','e_g.json'])
assert a['samples']==b['samples']==c['samples']==500 and a['top1']>0.8, (a,b,c)
assert a['top1']==b['top1']==c['top1'] and a['top5']==b['top5']==c['top5'], (a,b,c)"
run_expect "eval without key" 1 "is protected: pass --key-file" ev "$work/models/w.xnn"
run_expect "eval wrong key" 1 "authentication failed: wrong key or the file was modified" ev "$work/models/w.xnn" --key-file "$work/keys/other.key"

finish
