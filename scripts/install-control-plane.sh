#!/usr/bin/env bash
# Installs what the embedded control plane needs: etcd (Debian's etcd-server) and a
# kube-apiserver built from Debian's Kubernetes 1.20.2 source. Idempotent: once the
# binary is cached, a second run only checks and exits. Prints the cache directory's
# bin/ path last.
#
# Env:
#   INFORMER_CACHE_DIR   where the built binary is cached (default ~/.cache/informer-testenv)
set -euo pipefail

cache="${INFORMER_CACHE_DIR:-$HOME/.cache/informer-testenv}"
bin="$cache/bin"
apiserver="$bin/kube-apiserver"
packages=(golang-go etcd-server etcd-client rsync jq golang-github-modern-go-reflect2-dev dpkg-dev make)

log() { printf '[install-control-plane] %s\n' "$*" >&2; }

# Only Debian (and its derivatives) have the packages and the Kubernetes source package
# this builds from: elsewhere, say so and how to use binaries the user already has.
require_apt() {
  command -v apt-get >/dev/null && command -v dpkg-query >/dev/null && return 0
  log "this install needs Debian's apt (apt-get, dpkg-query), which this system lacks."
  log "Point the tests at binaries you already have instead (any kube-apiserver >= 1.20, etcd 3.x):"
  log "  INFORMER_KUBE_APISERVER=/path/to/kube-apiserver"
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

build_apiserver() {
  local build="$cache/build"
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
  local src="$build/k8s"
  # The vendored reflect2 v1.0.1 panics under Go >= 1.18 while encoding responses;
  # Debian ships the fixed 1.0.2.
  local r2="$src/vendor/github.com/modern-go/reflect2"
  rm -f "$r2"/go_above_17.go "$r2"/go_below_17.go "$r2"/go_below_19.go
  cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go "$r2"/
  mkdir -p "$src/.go/src/k8s.io"
  ln -sfn "$src" "$src/.go/src/k8s.io/kubernetes"
  log "building kube-apiserver (about 7 minutes on 2 cores)"
  (
    cd "$src/.go/src/k8s.io/kubernetes"
    # GOPATH mode: the tree's vendor/ directory supplies every dependency.
    export GOPATH="$src/.go" GO111MODULE=off CGO_ENABLED=0 GOCACHE="$cache/gocache"
    with_heartbeat "building kube-apiserver" make WHAT=cmd/kube-apiserver >"$build/make.log" 2>&1 ||
      { tail -40 "$build/make.log" >&2; exit 1; }
  )
  mkdir -p "$bin"
  install -m 0755 "$src/_output/local/bin/linux/amd64/kube-apiserver" "$apiserver.tmp"
  mv "$apiserver.tmp" "$apiserver"
  # The source tree and Go cache are 1.3 GB; only the binary is worth keeping.
  rm -rf "$build" "$cache/gocache"
}

# Two runs at once (say, two test binaries installing on first use) take turns.
mkdir -p "$cache"
exec 9>"$cache/install.lock"
flock 9

require_apt
ensure_packages
if [ -x "$apiserver" ] && "$apiserver" --version >/dev/null 2>&1; then
  log "kube-apiserver cached at $apiserver"
else
  ensure_deb_src
  build_apiserver
  log "built $("$apiserver" --version)"
fi
command -v etcd >/dev/null || { log "etcd missing after install"; exit 1; }
echo "$bin"
