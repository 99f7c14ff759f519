#!/usr/bin/env bash
# Runs the benchmark suite (ours vs kube-runtime, and client-go) against the embedded
# control plane and prints a table of medians and ratios; see BENCHMARKS.md. Installs
# the control plane and builds client-go's peer first if needed (both cached after the
# first time; the peer is rebuilt when benches/client-go/main.go changes). Extra
# arguments go to the driver, e.g. `scripts/bench.sh --pairs 5` or
# `scripts/bench.sh --only 1,4`.
set -euo pipefail
cd "$(dirname "$0")/.."

# client-go is one side among others: when its peer cannot be built (say, offline
# with the control plane cached), the suite runs without its columns and says so.
if ! bash scripts/install-control-plane.sh --client-go-peer >/dev/null; then
  echo "[bench] the client-go peer could not be built (see above): running without it" >&2
  bash scripts/install-control-plane.sh >/dev/null
fi
cargo run --release -p informer-benches --bin bench -- "$@"
