#!/usr/bin/env bash
# Runs the benchmark suite (ours vs kube-runtime) against the embedded control plane and
# prints a table of medians and ratios; see BENCHMARKS.md. Installs the control plane
# first if needed (cached after the first time). Extra arguments go to the driver,
# e.g. `scripts/bench.sh --pairs 5` or `scripts/bench.sh --only 1,4`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-control-plane.sh >/dev/null
cargo run --release -p informer-benches --bin bench -- "$@"
