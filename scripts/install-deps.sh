#!/usr/bin/env bash
# The one place that lists xnn-lab's system packages (Debian 12). Idempotent: re-running
# installs only what is missing. Needs root (or sudo).
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # declared C++ dependencies
  libonnx-dev libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler
  libcli11-dev libyaml-cpp-dev libsqlite3-dev sqlite3 libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  zlib1g-dev libzstd-dev libssl-dev
  # encode report baselines (zstd -19, xz -9 through the libraries)
  liblzma-dev
  # real data and conformance suites
  libonnx-testdata dataset-fashion-mnist
  # fixture generation: PyTorch exports of torchvision models (Debian's python)
  python3 python3-numpy python3-onnx python3-torch python3-torchvision libopenblas0-pthread
  # interop check: OpenCV DNN loads our ONNX exports (Debian's python)
  python3-opencv
  # scripts/bench_train.py reads training configs
  python3-yaml
  # integration tests: real Prometheus servers (promtool ships with prometheus)
  prometheus prometheus-pushgateway
  # report rendering test: headless browser
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
