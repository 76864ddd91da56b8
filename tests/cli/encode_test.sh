#!/usr/bin/env bash
# End-to-end tests of `xnn-lab encode` on the quickstart Fashion-MNIST CNN: 5-bit k-means
# codebooks with rANS-coded indices (text report and --json fields: sizes, bits per weight vs the
# entropy bound, Huffman, zstd -19, xz -9, load times), `xnn-lab eval` of the encoded model against
# fp32 on 1000 test images, Huffman and per-layer bits, the `encode` experiment step, and bad
# inputs failing with messages that name the problem.
# Usage: encode_test.sh XNN_LAB_BINARY SOURCE_DIR
XNN=$1
SRC=$2
ROOT=$SRC
# shellcheck source=tests/cli/lib.sh
source "$ROOT/tests/cli/lib.sh"
# json_check NAME FILE PYTHON_EXPRESSION : the expression over `d` (the parsed JSON) is true.
json_check() {
  if $PY -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2" 2>"$work/out.txt"; then
    ok "$1"
  else bad "$1 ($3)"; head -c 1500 "$2"; echo; fi
}
model=$SRC/configs/models/fmnist_cnn.onnx
[ -f "$model" ] || { echo "FAIL  model $model missing"; echo "0 passed, 1 failed"; exit 1; }
pre="--mean 0.2860 --std 0.3530"   # configs/quickstart.yaml's preprocessing (scale 1/255)
cd "$work" || exit 1

# --- 5-bit codebooks, rANS: the text report ------------------------------------------------------
if "$XNN" encode "$model" -o $work/e5.xnn --bits 5 --load-repetitions 3 >$work/out.txt 2>&1; then
  ok "encode --bits 5"
  grep -q "bits per weight" $work/out.txt && grep -q "^total" $work/out.txt && grep -qE "load \(median of 3" $work/out.txt \
    && ok "text report: per-tensor table, total row, load times" || bad "text report"
  sed 's/^/      /' $work/out.txt
else bad "encode --bits 5"; fi
check_no_tmp() { [ ! -e $work/e5.xnn.dense.tmp ] && ok "no temporary dense file left" || bad "temporary file left"; }
check_no_tmp

# --- --json: sizes and the entropy comparison ----------------------------------------------------
if "$XNN" encode "$model" -o $work/e5j.xnn --bits 5 --load-repetitions 1 --json >$work/e5.json 2>$work/out.txt; then
  json_check "json: encoded file at least 4x smaller than the dense .xnn" $work/e5.json \
    "d['encoded_file_bytes'] * 4 < d['dense_file_bytes'] and d['size_ratio'] > 4"
  json_check "json: every conv/gemm weight coded with <= 32 centroids" $work/e5.json \
    "len(d['tensors']) >= 2 and all(t['codebook_size'] <= 32 and t['bits'] == 5 for t in d['tensors'])"
  json_check "json: rANS payload within 1% of the entropy bound" $work/e5.json \
    "d['total']['rans_bits_per_weight'] <= 1.01 * d['total']['entropy_bits_per_weight'] and d['total']['coder_over_entropy'] <= 1.01"
  json_check "json: Huffman >= entropy, zstd/xz reported, tables stated" $work/e5.json \
    "d['total']['huffman_bits_per_weight'] >= d['total']['entropy_bits_per_weight'] and d['total']['zstd19_bits_per_weight'] > 0 and d['total']['xz9_bits_per_weight'] > 0 and d['total']['table_bytes'] > 0"
  json_check "json: load times measured" $work/e5.json "d['dense_load_ms'] > 0 and d['encoded_load_ms'] > 0"
  $PY -c "import json; d=json.load(open('$work/e5.json')); t=d['total']; print('      total bits/weight %.3f (payload %.3f, entropy %.3f, huffman %.3f, rans %.3f, zstd19 %.3f, xz9 %.3f); %d -> %d bytes' % (t['bits_per_weight'], t['payload_bits_per_weight'], t['entropy_bits_per_weight'], t['huffman_bits_per_weight'], t['rans_bits_per_weight'], t['zstd19_bits_per_weight'], t['xz9_bits_per_weight'], d['dense_file_bytes'], d['encoded_file_bytes']))"
else bad "encode --json"; fi

# --- the encoded model is an ordinary model: eval it against fp32 ---------------------------------
if "$XNN" eval "$model" --dataset fashion-mnist --limit 1000 $pre --json >$work/f.json 2>$work/out.txt &&
   "$XNN" eval $work/e5.xnn --dataset fashion-mnist --limit 1000 $pre --json >$work/c.json 2>$work/out.txt; then
  f=$($PY -c "import json; print(json.load(open('$work/f.json'))['top1'])")
  c=$($PY -c "import json; print(json.load(open('$work/c.json'))['top1'])")
  echo "      fp32 top-1 $f, 5-bit encoded top-1 $c (1000 test images)"
  awk "BEGIN{exit !($c >= $f - 0.02)}" && ok "5-bit encoded top-1 $c within 2 points of fp32 $f" || bad "encoded $c vs fp32 $f"
else bad "eval fp32 / encoded"; fi

# --- Huffman coder, per-layer bits, re-encoding an encoded model without clustering -----------------
if "$XNN" encode "$model" -o $work/h.xnn --bits 4 --coder huffman --load-repetitions 0 --json >$work/h.json 2>$work/out.txt; then
  json_check "huffman coder chosen and reported" $work/h.json "d['coder'] == 'huffman' and all(t['codebook_size'] <= 16 for t in d['tensors'])"
  first=$($PY -c "import json; print(json.load(open('$work/h.json'))['tensors'][0]['node'])")
  if "$XNN" encode $work/h.xnn -o $work/h2.xnn --no-cluster --bits 4 --bits-per-layer "$first=8" --load-repetitions 0 --json >$work/h2.json 2>$work/out.txt; then
    json_check "--no-cluster on a clustered model is lossless; --bits-per-layer applies" $work/h2.json \
      "d['total']['max_abs_error'] == 0 and d['tensors'][0]['bits'] == 8 and all(t['bits'] == 4 for t in d['tensors'][1:])"
  else bad "re-encode with --no-cluster"; fi
else bad "encode --coder huffman"; fi

# --- the encode step in an experiment ------------------------------------------------------------
cat >$work/exp.yaml <<YAML
name: encode_step_test
models:
  - name: fmnist_cnn
    path: $model
    preprocess: {scale: 1/255, mean: 0.2860, std: 0.3530, layout: NCHW}
variants:
  - name: coded
    steps:
      - convert
      - {type: encode, bits: 5, coder: rans}
targets: [{kind: cpu}]
metrics:
  latency: {runs: 3, min_time: 0.01, warmup: 1}
  accuracy: {dataset: fashion-mnist, split: test, limit: 200}
YAML
if "$XNN" run $work/exp.yaml --db $work/e.db >$work/out.txt 2>&1 && grep -qE "coded .*DONE" $work/out.txt; then
  ok "the encode step runs inside an experiment"
else bad "encode step in an experiment"; fi
if "$XNN" export --db $work/e.db --format json >$work/export.json 2>$work/out.txt &&
   $PY -c "import json,sys
rows = json.load(open(sys.argv[1]))
rows = rows if isinstance(rows, list) else rows.get('jobs', rows.get('results', []))
text = json.dumps(rows)
assert 'encode.bits_per_weight' in text and 'encode.entropy_bits_per_weight' in text, text[:400]" $work/export.json; then
  ok "the encode step's bits per weight are stored with the job's metrics"
else cp $work/export.json $work/out.txt 2>/dev/null; bad "encode step metrics in the store"; fi
sed 's/coder: rans}/coder: lz77}/' $work/exp.yaml >$work/bad_step.yaml
if "$XNN" run $work/bad_step.yaml --db $work/e2.db >$work/out.txt 2>&1; then bad "unknown coder in a step accepted"
elif grep -q "bad_step.yaml:10:.*unknown coder 'lz77'" $work/out.txt; then ok "step error names the config location"
else bad "step error message"; fi

# --- bad inputs fail clearly ----------------------------------------------------------------------
expect_error() {  # description, expected message (grep -E), command...
  local what=$1 pattern=$2
  shift 2
  if "$@" >$work/out.txt 2>&1; then bad "$what: accepted"
  elif grep -qE -- "$pattern" $work/out.txt; then ok "$what"
  else bad "$what: message"; fi
}
expect_error "unknown layer name" "no encodable weight or node named 'nope'; candidates:" \
  "$XNN" encode "$model" -o $work/x.xnn --bits-per-layer nope=4
expect_error "bits out of range" "--bits: 9 bits \(expected 1..8\)" "$XNN" encode "$model" -o $work/x.xnn --bits 9
expect_error "malformed --bits-per-layer" "--bits-per-layer 'fc': expected NAME=BITS" \
  "$XNN" encode "$model" -o $work/x.xnn --bits-per-layer fc
expect_error "--no-cluster on float weights" "distinct values; cluster it" "$XNN" encode "$model" -o $work/x.xnn --no-cluster
expect_error "unknown coder" "coder" "$XNN" encode "$model" -o $work/x.xnn --coder lz77

finish
