#!/usr/bin/env bash
# Installs what the embedded control plane needs: etcd (Debian's etcd-server), and
# kube-apiserver and kube-controller-manager built from Debian's Kubernetes 1.20.2
# source; and the modern control plane for custom resources and streaming lists:
# crd-apiserver (scripts/crd-apiserver/main.go around Kubernetes 1.36's
# apiextensions-apiserver), built from Debian sid's Go source packages, with sid's etcd
# 3.5 as etcd-3.5 and etcdctl-3.5, all without installing anything from sid into the
# host (scripts/sid-go-build.sh says how). Idempotent: once the binaries are cached, a
# second run only checks and exits; when only one is missing, only that one is built.
# Prints the cache directory's bin/ path last.
#
# Usage: install-control-plane.sh [--client-go-peer] [--no-crd-apiserver]
#   --client-go-peer  also build the benchmarks' client-go peer (benches/client-go/main.go,
#                     linked against the tree's vendored client-go 1.20) into
#                     $bin/client-go-bench-peer, where the benchmark driver looks for it;
#                     rebuilt when main.go changes (its SHA-256 is kept beside the binary).
#                     For scripts/bench.sh; the tests (scripts/test.sh) do not need it.
#   --no-crd-apiserver  skip the modern control plane ($bin/crd-apiserver, rebuilt when
#                     scripts/crd-apiserver/main.go changes, its SHA-256 kept beside it;
#                     $bin/etcd-3.5, $bin/etcdctl-3.5).
#
# Time on 2 idle cores: both binaries in one build (a fresh machine) about 8 minutes
# (14 CPU-minutes) after the package downloads and installs; kube-controller-manager
# alone, when kube-apiserver is cached, about 6-7 (12 CPU-minutes). They share most of
# their dependencies, so one build of both costs little more than either alone. The
# client-go peer alone, when both are cached: about 6 minutes (4 CPU-minutes) on a
# loaded machine, most of it the tree's generated files and client-go's dependencies;
# with a build of the others it shares those. The modern control plane (crd-apiserver
# and sid's etcd) when the rest is cached: 6-7 minutes, 4.6-4.9 CPU-minutes (measured
# twice, 5 min 57 s and 7 min 14 s, with other builds sharing the 2 cores); about 20 s
# of it fetches sid's indexes and downloads and unpacks the 90 packages the build needs
# (84 MB of .debs, 0.7 GB unpacked), the rest is the Go build. crd-apiserver is 78 MB,
# etcd-3.5 27 MB, etcdctl-3.5 22 MB. A fresh machine's default run builds the 1.20
# binaries and then the modern control plane: about 15 minutes. A run with everything
# cached takes about half a second (0.4 s with --no-crd-apiserver); with only etcd-3.5
# and etcdctl-3.5 missing, about 6 s.
#
# What the modern control plane leaves in $bin besides crd-apiserver, etcd-3.5 and
# etcdctl-3.5: crd-apiserver.sha256 (the SHA-256 of the main.go it was built from: a
# different main.go rebuilds it) and crd-apiserver.packages (the sid packages, name and
# version, the build used). `crd-apiserver --version` prints `Kubernetes v1.36.4` (the
# version is set at link time from the apiextensions-apiserver package's 0.36.4, since
# clients parse it); `etcdctl-3.5 version` (it has no --version flag). sid's etcd is
# dynamically linked against libc6 >= 2.34, which bookworm has. Bookworm's etcd 3.4
# stays on PATH as etcd for the 1.20 control plane. How the testenv runs crd-apiserver
# and what it serves: informer/src/testenv (the module docs and version.rs).
#
# Env:
#   INFORMER_CACHE_DIR   where the built binaries are cached (default ~/.cache/informer-testenv)
set -euo pipefail

cache="${INFORMER_CACHE_DIR:-$HOME/.cache/informer-testenv}"
bin="$cache/bin"
# The programs built from the Kubernetes tree (each from its cmd/<name>), cached in $bin.
kubernetes_binaries=(kube-apiserver kube-controller-manager)
# The benchmarks' client-go peer, built from its source in this repository when asked.
peer=client-go-bench-peer
peer_source="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/benches/client-go/main.go"
# The modern control plane's build (crd-apiserver, etcd-3.5, etcdctl-3.5) from Debian sid.
# shellcheck source-path=SCRIPTDIR source=sid-go-build.sh
. "$(dirname "${BASH_SOURCE[0]}")/sid-go-build.sh"
packages=(golang-go etcd-server etcd-client rsync jq golang-github-modern-go-reflect2-dev dpkg-dev make)

# Progress goes to the script's stderr as it was at the start (fd 3), also from
# inside a command whose output is redirected to a log (the heartbeat of a build).
exec 3>&2
log() { printf '[install-control-plane] %s\n' "$*" >&3; }

# Only Debian (and its derivatives) have the packages and the Kubernetes source package
# this builds from: elsewhere, say so and how to use binaries the user already has.
require_apt() {
  command -v apt-get >/dev/null && command -v dpkg-query >/dev/null && return 0
  log "this install needs Debian's apt (apt-get, dpkg-query), which this system lacks."
  log "Point the tests at binaries you already have instead (Kubernetes >= 1.20, etcd 3.x):"
  log "  INFORMER_KUBE_APISERVER=/path/to/kube-apiserver"
  log "  INFORMER_KUBE_CONTROLLER_MANAGER=/path/to/kube-controller-manager  (only for controller_manager(true))"
  log "  INFORMER_ETCD=/path/to/etcd  INFORMER_ETCDCTL=/path/to/etcdctl  (or have them on PATH)"
  log "and set INFORMER_TESTENV_NO_INSTALL=1 so that nothing tries to install them."
  exit 1
}

# Runs "$@" while printing that it is still working every minute (a silent build of
# several minutes looks hung).
with_heartbeat() {
  local what="$1" started=$SECONDS
  shift
  ( while sleep 60; do log "still $what ($(( (SECONDS - started) / 60 )) min so far)"; done ) &
  local beat=$!
  local status=0
  "$@" || status=$?
  kill "$beat" 2>/dev/null || true
  wait "$beat" 2>/dev/null || true
  return "$status"
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

have_packages() {
  local p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || return 1
  done
}

# The Kubernetes source only exists as a Debian source package: add a deb-src entry
# mirroring the machine's own Debian suite.
ensure_deb_src() {
  local list=/etc/apt/sources.list.d/informer-deb-src.sources
  [ -f "$list" ] && return 0
  log "adding deb-src entry $list"
  local suite
  # shellcheck source=/dev/null
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  as_root tee "$list" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  as_root apt-get update -qq
}

ensure_packages() {
  if have_packages; then return 0; fi
  log "installing Debian packages: ${packages[*]}"
  as_root apt-get update -qq
  with_heartbeat "installing Debian packages" \
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
}

# Unpacks Debian's Kubernetes source into $build/k8s, patched so that this Go builds a
# working binary, and sets k8s_src to the tree. Anything built from it goes through
# make_in_kubernetes_source; a program of one's own (say, one linking the tree's
# client-go) can be copied under "$k8s_src/cmd/<name>" and built the same way, since
# make WHAT= takes any package of the tree.
unpack_kubernetes_source() {
  build="$cache/build"
  rm -rf "$build"
  mkdir -p "$build"
  (
    cd "$build"
    log "downloading Debian's kubernetes source package"
    apt-get source --download-only kubernetes >/dev/null 2>&1 || {
      as_root apt-get update -qq
      apt-get source --download-only kubernetes >/dev/null
    }
    dpkg-source --no-check -x kubernetes_*.dsc k8s >/dev/null
  )
  k8s_src="$build/k8s"
  # The vendored reflect2 v1.0.1 panics under Go >= 1.18 while encoding responses;
  # Debian ships the fixed 1.0.2.
  local r2="$k8s_src/vendor/github.com/modern-go/reflect2"
  rm -f "$r2"/go_above_17.go "$r2"/go_below_17.go "$r2"/go_below_19.go
  cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go "$r2"/
  mkdir -p "$k8s_src/.go/src/k8s.io"
  ln -sfn "$k8s_src" "$k8s_src/.go/src/k8s.io/kubernetes"
}

# Builds the named programs (cmd/<name> of the unpacked tree) in one make, so that they
# share the compiled dependencies, and installs them into $bin. On failure, shows the
# end of the build log and exits.
make_in_kubernetes_source() {
  local names=("$@") what=() name
  for name in "${names[@]}"; do what+=("cmd/$name"); done
  log "building ${names[*]} (about 6-8 minutes on 2 idle cores)"
  (
    cd "$k8s_src/.go/src/k8s.io/kubernetes"
    # GOPATH mode: the tree's vendor/ directory supplies every dependency.
    export GOPATH="$k8s_src/.go" GO111MODULE=off CGO_ENABLED=0 GOCACHE="$cache/gocache"
    with_heartbeat "building ${names[*]}" make WHAT="${what[*]}" >"$build/make.log" 2>&1 ||
      { tail -40 "$build/make.log" >&2; exit 1; }
  )
  mkdir -p "$bin"
  for name in "${names[@]}"; do
    install -m 0755 "$k8s_src/_output/local/bin/linux/amd64/$name" "$bin/$name.tmp"
    mv "$bin/$name.tmp" "$bin/$name"
  done
}

# The source tree and Go cache are 1.3 GB; only the binaries are worth keeping.
remove_kubernetes_source() {
  rm -rf "$build" "$cache/gocache"
}

# Whether $bin holds a working copy of the named program.
is_cached() {
  [ -x "$bin/$1" ] && "$bin/$1" --version >/dev/null 2>&1
}

# The SHA-256 of the client-go peer's source.
peer_source_hash() {
  sha256sum "$peer_source" | cut -d' ' -f1
}

# Whether $bin holds a working client-go peer built from the current source.
peer_is_fresh() {
  is_cached "$peer" && [ "$(cat "$bin/$peer.sha256" 2>/dev/null)" = "$(peer_source_hash)" ]
}

# Puts the peer's source into the unpacked tree as cmd/$peer, so that it builds with
# the tree's vendored client-go (the version of the test server).
add_peer_to_kubernetes_source() {
  mkdir -p "$k8s_src/cmd/$peer"
  cp "$peer_source" "$k8s_src/cmd/$peer/main.go"
}

# Records which source the installed peer was built from (after a successful build).
record_peer_source() {
  local hash
  hash=$(peer_source_hash)
  printf '%s\n' "$hash" >"$bin/$peer.sha256.tmp"
  mv "$bin/$peer.sha256.tmp" "$bin/$peer.sha256"
}

usage() {
  cat >&2 <<USAGE
usage: install-control-plane.sh [--client-go-peer] [--no-crd-apiserver]
  --client-go-peer    also build the benchmarks' client-go peer into $bin/$peer
  --no-crd-apiserver  skip the modern control plane ($bin/$crd_apiserver, $bin/${sid_etcd_binaries[etcd]},
                      $bin/${sid_etcd_binaries[etcdctl]}, from Debian sid)
USAGE
}

with_peer=false
with_crd_apiserver=true
for arg in "$@"; do
  case "$arg" in
    --client-go-peer) with_peer=true ;;
    --no-crd-apiserver) with_crd_apiserver=false ;;
    -h | --help) usage; exit 0 ;;
    *) log "unknown argument $arg"; usage; exit 2 ;;
  esac
done
if "$with_peer" && [ ! -f "$peer_source" ]; then
  log "--client-go-peer: its source $peer_source is missing (run this script from the repository)"
  exit 1
fi

# Two runs at once (say, two test binaries installing on first use) take turns.
mkdir -p "$cache"
exec 9>"$cache/install.lock"
flock 9

require_apt
ensure_packages
missing=()
for name in "${kubernetes_binaries[@]}"; do
  if is_cached "$name"; then log "$name cached at $bin/$name"; else missing+=("$name"); fi
done
build_peer=false
if "$with_peer"; then
  if peer_is_fresh; then log "$peer cached at $bin/$peer"; else build_peer=true; fi
fi
# One build for everything missing, so that the programs share compiled dependencies.
to_build=("${missing[@]}")
if "$build_peer"; then to_build+=("$peer"); fi
if [ "${#to_build[@]}" -gt 0 ]; then
  ensure_deb_src
  unpack_kubernetes_source
  if "$build_peer"; then
    # A peer of an older source must not outlive a failed rebuild: the driver would
    # run it as if it were current.
    rm -f "$bin/$peer" "$bin/$peer.sha256"
    add_peer_to_kubernetes_source
  fi
  make_in_kubernetes_source "${to_build[@]}"
  if "$build_peer"; then record_peer_source; fi
  remove_kubernetes_source
  for name in "${to_build[@]}"; do log "built $name: $("$bin/$name" --version)"; done
fi
if "$with_crd_apiserver"; then
  build_crd_apiserver=false
  if crd_apiserver_is_fresh; then
    log "$crd_apiserver cached at $bin/$crd_apiserver"
  else
    build_crd_apiserver=true
  fi
  if sid_etcd_is_cached; then
    log "${sid_etcd_binaries[etcd]} and ${sid_etcd_binaries[etcdctl]} cached in $bin"
  fi
  if "$build_crd_apiserver" || ! sid_etcd_is_cached; then
    started=$SECONDS
    build_sid_binaries "$build_crd_apiserver"
    if "$build_crd_apiserver"; then log "built $crd_apiserver: $("$bin/$crd_apiserver" --version)"; fi
    log "${sid_etcd_binaries[etcd]}: $("$bin/${sid_etcd_binaries[etcd]}" --version | head -1)"
    log "modern control plane done in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s"
  fi
fi
command -v etcd >/dev/null || { log "etcd missing after install"; exit 1; }
echo "$bin"
