#!/usr/bin/env bash
# Runs the benchmark suite (ours vs kube-runtime, client-go and controller-runtime)
# against the embedded control plane and prints a table of medians and ratios; see
# BENCHMARKS.md. Installs the default release's kube-apiserver and etcd and builds the
# Go peers first if needed (all cached after the first time; a peer is rebuilt when the
# sources of its Go module folder, benches/client-go or benches/controller-runtime,
# change). No scenario runs kube-controller-manager, so it is not built. Extra
# arguments go to the driver, e.g. `scripts/bench.sh --pairs 5` or
# `scripts/bench.sh --only 1,4`.
set -euo pipefail
cd "$(dirname "$0")/.."

# The driver starts the default release only (TestEnv's default: the newest in
# scripts/control-plane/).
release=$(ls scripts/control-plane | grep -E '^[0-9]+\.[0-9]+$' | sort -rV | head -1)
install=(bash scripts/install-control-plane.sh --kubernetes "$release" --no-controller-manager)
"${install[@]}" >/dev/null

# Each peer is one side among others: when one cannot be built (say, offline with the
# control plane cached), the suite runs without its columns and says so.
for peer in client-go controller-runtime; do
  if ! "${install[@]}" "--$peer-peer" >/dev/null; then
    echo "[bench] the $peer peer could not be built (see above): running without it" >&2
  fi
done
cargo run --release -p informer-benches --bin bench -- "$@"
