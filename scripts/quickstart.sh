#!/usr/bin/env bash
# The main job (README): installs system packages if missing, builds xnn-lab, and runs the
# quickstart experiment, printing the results table and where the database is.
# Extra arguments go to `xnn-lab run` (e.g. metrics.accuracy.limit=500 or --force).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target xnn-lab
build/harness/cli/xnn-lab run configs/quickstart.yaml "$@"
