#!/usr/bin/env bash
# The test command (README, .ci/run): installs system packages if missing, builds, runs the
# whole ctest suite (unit tests, ONNX conformance with its must-pass list, torchvision models
# against PyTorch, CLI tests), then the loader fuzz tests in an ASan+UBSan build.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

# Sanitizer pass: the whole engine suite (every op, both loaders, a few hundred mutated model
# files through each) with AddressSanitizer and UndefinedBehaviorSanitizer.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXNN_SANITIZE=ON -DXNN_BUILD_BENCH=OFF
cmake --build build-asan --target engine_tests -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-asan/tests/engine_tests
