#!/usr/bin/env bash
# Installs the control planes the tests and the demo run: for each Kubernetes release in
# scripts/control-plane/ (1.37, the default, and 1.33, the oldest our k8s-openapi
# supports), kube-apiserver and kube-controller-manager built as a Go module build of
# k8s.io/kubernetes (its staging modules replaced by their published versions of the
# same release), and etcd of the version that release is tested with, built from
# go.etcd.io/etcd/server/v3. Every module is pinned by the go.sum beside its go.mod and
# fetched through the Go module proxy; nothing comes from apt. Idempotent: a binary that
# is in place and says the expected version is not built again; when only one is
# missing, only that one is built.
#
# Where: $INFORMER_CACHE_DIR (default ~/.cache/informer-testenv)/k8s/<version>-linux-amd64/,
# the layout of controller-runtime's setup-envtest, so that such a folder can be
# KUBEBUILDER_ASSETS for envtest too (kube-apiserver, etcd, and kube-controller-manager,
# which envtest's folders lack; no kubectl). The Go module and build caches are kept
# beside it ($cache/go/mod, $cache/go/build), shared by every build here (the
# benchmarks' peers too), so that a rebuild or a second binary compiles only what it
# adds. Prints the folder of the first release it installed last.
#
# Usage: install-control-plane.sh [--kubernetes MINOR]... [--no-controller-manager]
#                                 [--client-go-peer] [--controller-runtime-peer]
#   --kubernetes MINOR      only this release (1.37 or 1.33; may be repeated); without
#                           it, every release in scripts/control-plane/, newest first
#   --no-controller-manager kube-apiserver and etcd only (what the demo needs)
#   --client-go-peer        also the benchmarks' client-go peer (benches/client-go, a Go
#                           module of its own) into $cache/bin/client-go-bench-peer
#   --controller-runtime-peer also the benchmarks' controller-runtime peer
#                           (benches/controller-runtime) into
#                           $cache/bin/controller-runtime-bench-peer
#   A peer is rebuilt when its sources change (their SHA-256 is kept beside it).
#
# KUBEBUILDER_ASSETS: when it names a folder with kube-apiserver and etcd, the tests use
# those for the default release (informer/src/testenv/install.rs), so this script does
# not build the default release's kube-apiserver and etcd (it still builds
# kube-controller-manager, which envtest's folders lack, and the other releases).
#
# Needs Go >= the go line of the module it builds (1.26 for Kubernetes 1.37); the
# machine's `go` is used, or /usr/local/go/bin/go when that on PATH is older. Times
# measured on the project's 2-core VM while other work ran (a fresh cache): 1.37's
# kube-apiserver 11 min and etcd 50 s (716 CPU-seconds in all), 1.37's
# kube-controller-manager after it 4.3 min, 1.33's kube-apiserver and
# kube-controller-manager 15 min and etcd 1.5 min; a cached run, under a second.
#
# The body is one function called on the last line, so that bash has read all of it
# before running any: a script edited (say, by a checkout) while a long build runs
# would otherwise go on reading the new file from the old offset.
main() {
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cache="${INFORMER_CACHE_DIR:-$HOME/.cache/informer-testenv}"
bin="$cache/bin"
releases_dir="$here/control-plane"

# Progress goes to the script's stderr as it was at the start (fd 3), also from
# inside a command whose output is redirected to a log (the heartbeat of a build).
exec 3>&2
log() { printf '[install-control-plane] %s\n' "$*" >&3; }

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

# The version a module's go.mod requires of `module`, e.g. v1.37.2.
required_version() {
  awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1/go.mod"
}

# The go line of a module's go.mod, e.g. 1.26.0.
go_line() {
  awk '$1 == "go" { print $2; exit }' "$1/go.mod"
}

# Whether version $1 (1.26.8, go1.26.8) is at least $2 (1.26, 1.26.0).
at_least() {
  local a="${1#go}" b="${2#go}"
  [ "$(printf '%s\n%s\n' "$b" "$a" | sort -V | head -1)" = "$b" ]
}

# The Go to build a module needing Go $1 with: `go` on PATH, else /usr/local/go's.
find_go() {
  local need="$1" candidate version
  for candidate in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    version=$("$candidate" env GOVERSION 2>/dev/null || true)
    if [ -n "$version" ] && at_least "$version" "$need"; then
      echo "$candidate"
      return 0
    fi
  done
  log "building needs Go >= $need; found: $(command -v go >/dev/null && go version || echo 'no go on PATH')"
  log "install Go $need or later (https://go.dev/dl), or point the tests at binaries you have:"
  log "  KUBEBUILDER_ASSETS=/folder/with/kube-apiserver-and-etcd (controller-runtime's setup-envtest lays one out)"
  return 1
}

# go "$@" with this script's caches, in module dir $1.
go_in() {
  local dir="$1" go
  shift
  go=$(find_go "$(go_line "$dir")") || return 1
  ( cd "$dir" &&
    GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" CGO_ENABLED=0 GOTOOLCHAIN=local \
      GOFLAGS="-mod=readonly -buildvcs=false" "$go" "$@" )
}

# Whether $1 is an executable whose `--version` output contains $2. (Read whole first:
# `grep -q` stops at the first match, and under pipefail the program's SIGPIPE would
# fail the check now and then.)
says_version() {
  local said
  [ -x "$1" ] && said=$("$1" --version 2>/dev/null) && grep -qF "$2" <<<"$said"
}

# The folder with kube-apiserver and etcd that KUBEBUILDER_ASSETS names, if any.
kubebuilder_assets() {
  local dir="${KUBEBUILDER_ASSETS:-}"
  [ -n "$dir" ] && [ -x "$dir/kube-apiserver" ] && [ -x "$dir/etcd" ] && echo "$dir"
}

# Installs release $1 (a folder of $releases_dir) into its envtest-style folder.
install_release() {
  local minor="$1" with_manager="$2" default="$3"
  local modules="$releases_dir/$minor"
  local kubernetes etcd
  kubernetes=$(required_version "$modules/kubernetes" k8s.io/kubernetes)
  etcd=$(required_version "$modules/etcd" go.etcd.io/etcd/server/v3)
  local dir="$cache/k8s/${kubernetes#v}-linux-amd64"
  mkdir -p "$dir"

  local assets=""
  if "$default"; then assets=$(kubebuilder_assets || true); fi
  local wanted=(kube-apiserver)
  if "$with_manager"; then wanted+=(kube-controller-manager); fi
  local missing=() name
  for name in "${wanted[@]}"; do
    if [ "$name" = kube-apiserver ] && [ -n "$assets" ]; then
      log "kube-apiserver: KUBEBUILDER_ASSETS=$assets is used for the default release"
    elif says_version "$dir/$name" "Kubernetes $kubernetes"; then
      log "$name $kubernetes cached at $dir/$name"
    else
      missing+=("$name")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    build_kubernetes "$modules/kubernetes" "$kubernetes" "$dir" "${missing[@]}"
  fi

  if [ -n "$assets" ]; then
    log "etcd: KUBEBUILDER_ASSETS=$assets is used for the default release"
  elif says_version "$dir/etcd" "etcd Version: ${etcd#v}"; then
    log "etcd ${etcd#v} cached at $dir/etcd"
  else
    build_etcd "$modules/etcd" "$etcd" "$dir"
  fi
  installed+=("$dir")
}

# Builds the named programs of k8s.io/kubernetes $2 (module dir $1) into $3, in one go
# build so that they share their compiled dependencies, stamped with the release's
# version as Kubernetes' own build does (clients parse it from /version).
build_kubernetes() {
  local module="$1" version="$2" dir="$3"
  shift 3
  local names=("$@") packages=() name
  for name in "${names[@]}"; do packages+=("k8s.io/kubernetes/cmd/$name"); done
  local minor="${version#v1.}"
  minor="${minor%%.*}"
  local stamp=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    stamp+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    stamp+=" -X $pkg.gitTreeState=clean"
  done
  local started=$SECONDS
  log "downloading the Go modules of Kubernetes $version (pinned by $module/go.sum)"
  with_heartbeat "downloading Go modules" go_in "$module" mod download >&3 2>&1
  log "building ${names[*]} $version with $(go_in "$module" env GOVERSION) (about 8-12 minutes on 2 idle cores for both, the first time)"
  local out="$cache/go/out-$version"
  rm -rf "$out"
  mkdir -p "$out"
  with_heartbeat "building ${names[*]} $version" \
    go_in "$module" build -trimpath -ldflags "-s -w$stamp" -o "$out/" "${packages[@]}" \
    >"$cache/go/build-$version.log" 2>&1 || { tail -40 "$cache/go/build-$version.log" >&2; exit 1; }
  for name in "${names[@]}"; do
    mv "$out/$name" "$dir/$name"
    log "built $name: $("$dir/$name" --version) in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s"
  done
  rm -rf "$out"
}

# Builds etcd $2 (module dir $1) into $3.
build_etcd() {
  local module="$1" version="$2" dir="$3" started=$SECONDS
  log "building etcd ${version#v} (about 1-2 minutes)"
  with_heartbeat "building etcd ${version#v}" \
    go_in "$module" build -trimpath -ldflags "-s -w" -o "$dir/etcd.tmp" go.etcd.io/etcd/server/v3 \
    >"$cache/go/build-etcd-$version.log" 2>&1 || { tail -40 "$cache/go/build-etcd-$version.log" >&2; exit 1; }
  mv "$dir/etcd.tmp" "$dir/etcd"
  log "built etcd: $("$dir/etcd" --version | head -1) in $(( SECONDS - started )) s"
}

# Builds the benchmarks' peer in Go module folder $1 as $bin/$2, unless the binary there
# was built from the folder's current sources and those of the module the peers share
# (benches/gopeer, beside it).
install_peer() {
  local source="$1" name="$2" hash
  hash=$(cat "$source"/go.mod "$source"/go.sum "$source"/*.go     "$source"/../gopeer/go.mod "$source"/../gopeer/*.go | sha256sum | cut -d' ' -f1)
  if [ -x "$bin/$name" ] && [ "$(cat "$bin/$name.sha256" 2>/dev/null)" = "$hash" ]; then
    log "$name cached at $bin/$name"
    return 0
  fi
  # A peer of older sources must not outlive a failed rebuild: the driver would run it
  # as if it were current.
  rm -f "$bin/$name" "$bin/$name.sha256"
  mkdir -p "$bin"
  log "building $name from $source"
  with_heartbeat "building $name" go_in "$source" build -trimpath -o "$bin/$name" . \
    >"$cache/go/build-$name.log" 2>&1 || { tail -40 "$cache/go/build-$name.log" >&2; exit 1; }
  printf '%s\n' "$hash" >"$bin/$name.sha256"
  log "built $name: $("$bin/$name" --version)"
}

usage() {
  cat >&2 <<USAGE
usage: install-control-plane.sh [--kubernetes MINOR]... [--no-controller-manager]
                                [--client-go-peer] [--controller-runtime-peer]
  --kubernetes MINOR         only this release (one of: $(ls "$releases_dir" | tr '\n' ' ')); may be repeated
  --no-controller-manager    kube-apiserver and etcd only
  --client-go-peer           also the benchmarks' client-go peer, into $bin
  --controller-runtime-peer  also the benchmarks' controller-runtime peer, into $bin
USAGE
}

minors=()
with_manager=true
peers=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kubernetes)
      [ $# -ge 2 ] && [ -d "$releases_dir/${2:-}" ] || { log "--kubernetes needs one of: $(ls "$releases_dir" | tr '\n' ' ')"; exit 2; }
      minors+=("$2"); shift ;;
    --no-controller-manager) with_manager=false ;;
    --client-go-peer) peers+=(client-go) ;;
    --controller-runtime-peer) peers+=(controller-runtime) ;;
    -h | --help) usage; exit 0 ;;
    *) log "unknown argument $1"; usage; exit 2 ;;
  esac
  shift
done
# Newest first: the default release is the newest.
all=($(ls "$releases_dir" | grep -E '^[0-9]+\.[0-9]+$' | sort -rV))
if [ "${#minors[@]}" -eq 0 ]; then minors=("${all[@]}"); fi

# Two runs at once (say, two test binaries installing on first use) take turns.
mkdir -p "$cache/go"
exec 9>"$cache/install.lock"
flock 9

installed=()
for minor in "${minors[@]}"; do
  default=false
  [ "$minor" = "${all[0]}" ] && default=true
  install_release "$minor" "$with_manager" "$default"
done
for peer in "${peers[@]}"; do
  install_peer "$root/benches/$peer" "$peer-bench-peer"
done
echo "${installed[0]}"
}

main "$@"
