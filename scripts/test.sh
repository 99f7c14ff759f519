#!/usr/bin/env bash
# Runs every check and test of the project, as CI does: installs the local control
# plane if needed (cached after the first time), then formatting, lints, docs, and all
# unit, doc and integration tests (the latter against a real kube-apiserver + etcd).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-control-plane.sh >/dev/null
cargo fmt --all --check
cargo clippy --workspace --all-targets --all-features -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features
cargo test --workspace --all-features
