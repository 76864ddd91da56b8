#!/usr/bin/env bash
# Peer comparison in one run: xnn-lab vs ONNX Runtime, MNN, ncnn, OpenVINO, OpenCV DNN and
# Debian's PyTorch 1.13 (eager and frozen TorchScript) on seeded torchvision models, timed
# interleaved at each thread count, every output checked against PyTorch's.
#
#   scripts/bench-peers.sh                       # 6 models x threads 1,2, 30 runs, all engines
#   scripts/bench-peers.sh --models resnet18 --threads 1 --runs 10
#   scripts/bench-peers.sh --quick               # squeezenet1_1, 1 thread, few runs, all engines
#   scripts/bench-peers.sh --self-test           # CI: xnn-lab + Debian torch only, no downloads
#   scripts/bench-peers.sh --help                # every option and the method
#
# The driver (scripts/bench_peers.py) runs under Debian's /usr/bin/python3 (numpy, torch,
# onnx); the PyPI peers run in the venv it creates (build/peers-venv or $XNN_PEERS_VENV).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -x /usr/bin/python3 ]; then
  echo "bench-peers: /usr/bin/python3 (Debian python with python3-torch) is required;" \
       "see scripts/install-deps.sh" >&2
  exit 2
fi
exec /usr/bin/python3 "$here/bench_peers.py" "$@"
