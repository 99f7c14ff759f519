# shellcheck shell=bash disable=SC2154 # cache and bin are the sourcing script's
# Sourced by install-control-plane.sh: builds the modern test server, crd-apiserver
# (scripts/crd-apiserver/main.go around Kubernetes 1.36's apiextensions-apiserver), from
# Debian sid's Go source packages, and takes sid's etcd 3.5 (streaming lists need etcd
# >= 3.5.13; bookworm's is 3.4), without installing anything from sid into the host:
# a scratch apt configuration for sid (its own sources, lists and cache under the build
# directory, the host's Debian archive keyring) only downloads .debs, and dpkg-deb
# unpacks them into a private root. The build is GOPATH mode with sid's Go toolchain
# from that root. Uses $cache, $bin, log and with_heartbeat from the sourcing script.
#
# Which packages: the build imports only about 80 of the 300-odd golang-*-dev packages
# that apt's dependency closure of golang-k8s-apiextensions-apiserver-dev names, so the
# closure is not downloaded whole. Starting from apiextensions-apiserver and the Go
# toolchain, each round downloads and unpacks what is missing, asks `go list -deps` which
# imported packages are still missing, and maps each to the sid package providing it
# (the longest Go-Import-Path of a source package in sid's Sources index that is a
# prefix of it, the source's -dev binaries in that closure), until nothing is missing:
# 4 rounds, about 20 s with the download of sid's indexes. An import that no package
# provides is reported by name and stops the install.

# The Go toolchain to build with (falls back to sid's default Go if sid drops it), the
# package to build around, and the binaries taken from sid's etcd packages with the
# names they get in $bin (beside bookworm's etcd 3.4 on PATH).
sid_go_package=golang-1.26-go
sid_root_package=golang-k8s-apiextensions-apiserver-dev
# Packages whose dependency closures also count when mapping an import to a package (for
# an import of main.go's that apiextensions-apiserver's closure lacks); none so far.
sid_extra_packages=()
sid_etcd_packages=(etcd-server etcd-client)
crd_apiserver=crd-apiserver
crd_apiserver_source="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/crd-apiserver/main.go"
declare -A sid_etcd_binaries=([etcd]=etcd-3.5 [etcdctl]=etcdctl-3.5)

# The SHA-256 of crd-apiserver's source.
crd_apiserver_source_hash() {
  sha256sum "$crd_apiserver_source" | cut -d' ' -f1
}

# Whether $bin holds a working crd-apiserver built from the current source.
crd_apiserver_is_fresh() {
  [ -x "$bin/$crd_apiserver" ] && "$bin/$crd_apiserver" --version >/dev/null 2>&1 &&
    [ "$(cat "$bin/$crd_apiserver.sha256" 2>/dev/null)" = "$(crd_apiserver_source_hash)" ]
}

# Whether $bin holds sid's etcd and etcdctl.
sid_etcd_is_cached() {
  [ -x "$bin/${sid_etcd_binaries[etcd]}" ] && "$bin/${sid_etcd_binaries[etcd]}" --version >/dev/null 2>&1 &&
    [ -x "$bin/${sid_etcd_binaries[etcdctl]}" ] && "$bin/${sid_etcd_binaries[etcdctl]}" version >/dev/null 2>&1
}

# apt-get and apt-cache on the scratch configuration for sid.
# (-c reads the file after the host's configuration, so that its settings win.)
sid_apt_get() { apt-get -c "$sid_dir/apt.conf" -q "$@"; }
sid_apt_cache() { apt-cache -c "$sid_dir/apt.conf" "$@"; }

# Writes the scratch apt configuration for sid under $sid_dir and fetches sid's
# package and source indexes (about 30 MB).
sid_apt_update() {
  local apt="$sid_dir/apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$apt/preferences.d"
  : >"$apt/status"
  cat >"$apt/sid.sources" <<SOURCES
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  # Only the files named here: the host's sources, preferences and installed packages
  # play no part. The host's apt.conf.d (a proxy, say) still applies.
  cat >"$sid_dir/apt.conf" <<CONF
Dir::State "$apt";
Dir::State::Lists "$apt/lists";
Dir::State::status "$apt/status";
Dir::Cache "$apt/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Dir::Etc::SourceList "$apt/sid.sources";
Dir::Etc::SourceParts "$apt/parts";
Dir::Etc::Preferences "$apt/preferences";
Dir::Etc::PreferencesParts "$apt/preferences.d";
APT::Architecture "$(dpkg --print-architecture)";
APT::Architectures { "$(dpkg --print-architecture)"; };
APT::Sandbox::User "$(id -un)";
Acquire::Languages "none";
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
CONF
  log "fetching Debian sid's package indexes (scratch apt configuration in $sid_dir)"
  sid_apt_get update -qq >/dev/null
}

# Downloads the named sid packages not downloaded yet and unpacks them into $sid_root.
sid_fetch() {
  local new=() p
  for p in "$@"; do
    [ -e "$sid_dir/fetched/$p" ] || new+=("$p")
  done
  [ "${#new[@]}" -gt 0 ] || return 0
  (cd "$sid_dir/debs" && sid_apt_get download -qq "${new[@]}" >/dev/null) ||
    { log "could not download from sid: ${new[*]}"; return 1; }
  local deb
  for p in "${new[@]}"; do
    deb=$(sid_deb_file "$p") && dpkg-deb -x "$deb" "$sid_root" || return 1
    touch "$sid_dir/fetched/$p"
  done
}

# The downloaded .deb of a package.
sid_deb_file() {
  local f
  for f in "$sid_dir/debs/$1"_*.deb; do
    [ -e "$f" ] && { printf '%s\n' "$f"; return 0; }
  done
  log "sid package $1 was not downloaded"
  return 1
}

# Runs sid's go in GOPATH mode on the private root, offline, cgo off.
sid_go() {
  env GOROOT="$sid_goroot" GOPATH="$sid_root/usr/share/gocode" GO111MODULE=off GOWORK=off \
    CGO_ENABLED=0 GOTOOLCHAIN=local GOPROXY=off GOFLAGS= GOENV=off GOCACHE="$sid_dir/gocache" \
    "$sid_goroot/bin/go" "$@"
}

# Writes "<import path prefix> <binary package>" lines to $sid_dir/import-paths: for each
# source package in sid's Sources index with a Go-Import-Path, each of its binaries
# that apt's dependency closure of $sid_root_package (and $sid_extra_packages) names.
sid_import_path_table() {
  sid_apt_cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "$sid_root_package" "${sid_extra_packages[@]}" | grep -v '^ ' | grep -v '<' |
    sort -u >"$sid_dir/closure"
  local sources
  # shellcheck disable=SC2016 # apt's own $(FILENAME), not the shell's
  sources=$(sid_apt_get indextargets --format '$(FILENAME)' 'Created-By: Sources' | head -1)
  [ -n "$sources" ] || { log "sid's Sources index is missing"; return 1; }
  /usr/lib/apt/apt-helper cat-file "$sources" | awk -v closure="$sid_dir/closure" '
    BEGIN { while ((getline p < closure) > 0) in_closure[p] = 1 }
    /^[^ \t]/ { field = "" }
    /^Binary:/ { field = "binary"; sub(/^Binary:[ \t]*/, ""); binaries = $0; next }
    /^Go-Import-Path:/ { sub(/^Go-Import-Path:[ \t]*/, ""); paths = $0; next }
    /^[ \t]/ && field == "binary" { binaries = binaries "," $0; next }
    /^$/ { flush() }
    END { flush() }
    function flush(   n, m, i, j, ps, bs) {
      n = split(paths, ps, /[, \t]+/); m = split(binaries, bs, /[, \t]+/)
      for (i = 1; i <= n; i++) for (j = 1; j <= m; j++)
        if (ps[i] != "" && bs[j] ~ /-dev$/ && (bs[j] in in_closure)) print ps[i], bs[j]
      paths = ""; binaries = ""; field = ""
    }' | sort -u >"$sid_dir/import-paths"
}

# Prints the import paths that the build of $1 (a directory) imports and the unpacked
# root lacks, one a line; fails on any other error go list reports.
sid_missing_imports() {
  local out
  out=$(cd "$1" && sid_go list -e -deps -f '{{if .Error}}{{.ImportPath}} {{printf "%q" .Error.Err}}{{end}}' .) || return 1
  if grep -v ' "cannot find package' <<<"$out" | grep -q .; then
    log "go list reports errors other than missing packages:"
    grep -v ' "cannot find package' <<<"$out" >&3
    return 1
  fi
  { grep ' "cannot find package' <<<"$out" || true; } | cut -d' ' -f1 | sort -u
}

# Maps import paths (stdin) to the sid packages providing them (stdout, sorted, unique);
# the paths no package provides go to $sid_dir/unprovided.
sid_packages_for() {
  awk -v table="$sid_dir/import-paths" -v unprovided="$sid_dir/unprovided" '
    BEGIN { while ((getline line < table) > 0) { split(line, f, " "); pkgs[f[1]] = pkgs[f[1]] " " f[2] } }
    {
      p = $0
      while (p != "" && !(p in pkgs)) { if (!sub(/\/[^\/]*$/, "", p)) p = "" }
      if (p == "") { print $0 > unprovided; next }
      n = split(pkgs[p], ps, " "); for (i = 1; i <= n; i++) print ps[i]
    }' | sort -u
}

# Unpacks sid's Go toolchain and every Go source package the build of crd-apiserver
# imports into $sid_root (see the header).
sid_unpack_build_dependencies() {
  local src="$1" round=0 missing wanted
  if ! sid_apt_cache show "$sid_go_package" >/dev/null 2>&1; then
    local fallback
    fallback=$(sid_apt_cache depends golang-go | awk '$2 ~ /^golang-1\.[0-9]+-go$/ { print $2; exit }')
    log "sid no longer has $sid_go_package; using its default Go, ${fallback:-none found}"
    [ -n "$fallback" ] || return 1
    sid_go_package=$fallback
  fi
  local go_version=${sid_go_package#golang-}
  go_version=${go_version%-go}
  sid_goroot="$sid_root/usr/lib/go-$go_version"
  sid_import_path_table
  log "downloading and unpacking sid's Go $go_version and $sid_root_package with what it imports"
  sid_fetch "$sid_go_package" "golang-$go_version-src" "$sid_root_package"
  while :; do
    round=$((round + 1))
    missing=$(sid_missing_imports "$src") || return 1
    [ -n "$missing" ] || break
    rm -f "$sid_dir/unprovided"
    wanted=$(sid_packages_for <<<"$missing")
    if [ -s "$sid_dir/unprovided" ]; then
      log "no sid package in the dependency closure of $sid_root_package${sid_extra_packages[*]:+ ${sid_extra_packages[*]}} provides these imports:"
      sed 's/^/  /' "$sid_dir/unprovided" >&3
      log "(a new import in crd-apiserver/main.go, or sid has moved or dropped a package): add the sid package"
      log "that provides them to sid_extra_packages in scripts/sid-go-build.sh"
      return 1
    fi
    local new=() p
    for p in $wanted; do [ -e "$sid_dir/fetched/$p" ] || new+=("$p"); done
    if [ "${#new[@]}" -eq 0 ]; then
      log "the packages providing these imports are unpacked, yet go list still misses them:"
      while IFS= read -r p; do printf '  %s\n' "$p" >&3; done <<<"$missing"
      return 1
    fi
    if [ "$round" -gt 50 ]; then log "no end to the missing imports after 50 rounds"; return 1; fi
    sid_fetch "${new[@]}"
  done
  log "unpacked $(find "$sid_dir/fetched" -type f | wc -l) sid packages in all ($(du -sm "$sid_dir/debs" | cut -f1) MB of .debs, $(du -sm "$sid_root" | cut -f1) MB unpacked) in $round rounds"
}

# The Kubernetes version of the unpacked apiextensions-apiserver: its 0.Y.Z is Kubernetes 1.Y.Z.
sid_kubernetes_version() {
  local v
  v=$(dpkg-deb -f "$(sid_deb_file "$sid_root_package")" Version)
  v=${v%%-*}
  v=${v#*:}
  case "$v" in
    0.*.*) printf 'v1.%s\n' "${v#0.}" ;;
    *) log "unexpected version $v of $sid_root_package"; return 1 ;;
  esac
}

# Builds crd-apiserver when $1 is true and takes sid's etcd and etcdctl when they are
# missing, into $bin; on failure, shows the end of the build log and fails, leaving the
# build directory. Leaves nothing but the binaries.
build_sid_binaries() {
  local build_server="$1"
  sid_dir="$cache/sid-build"
  sid_root="$sid_dir/root"
  rm -rf "$sid_dir"
  mkdir -p "$sid_dir/debs" "$sid_dir/fetched" "$sid_root" "$sid_dir/src/$crd_apiserver" "$bin"
  sid_apt_update
  if ! sid_etcd_is_cached; then
    log "downloading sid's etcd (${sid_etcd_packages[*]})"
    sid_fetch "${sid_etcd_packages[@]}"
    local name
    for name in "${!sid_etcd_binaries[@]}"; do
      install -m 0755 "$sid_root/usr/bin/$name" "$bin/${sid_etcd_binaries[$name]}.tmp"
      mv "$bin/${sid_etcd_binaries[$name]}.tmp" "$bin/${sid_etcd_binaries[$name]}"
    done
  fi
  if "$build_server"; then
    # A server of an older source must not outlive a failed rebuild.
    rm -f "$bin/$crd_apiserver" "$bin/$crd_apiserver.sha256"
    local src="$sid_dir/src/$crd_apiserver" hash
    hash=$(crd_apiserver_source_hash)
    cp "$crd_apiserver_source" "$src/main.go"
    sid_unpack_build_dependencies "$src"
    local version major minor
    version=$(sid_kubernetes_version)
    major=${version#v}
    minor=${major#*.}
    minor=${minor%%.*}
    major=${major%%.*}
    local pkg=k8s.io/component-base/version
    log "building $crd_apiserver $version with $("$sid_goroot/bin/go" version | cut -d' ' -f3) (about 6 minutes on 2 cores)"
    if ! (cd "$src" && with_heartbeat "building $crd_apiserver" sid_go build -trimpath -o "$bin/$crd_apiserver.tmp" \
      -ldflags "-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor" \
      . >"$sid_dir/build.log" 2>&1); then
      tail -40 "$sid_dir/build.log" >&2
      log "the build failed; $sid_dir is left for inspection (the next run starts afresh)"
      return 1
    fi
    mv "$bin/$crd_apiserver.tmp" "$bin/$crd_apiserver"
    printf '%s\n' "$hash" >"$bin/$crd_apiserver.sha256.tmp"
    mv "$bin/$crd_apiserver.sha256.tmp" "$bin/$crd_apiserver.sha256"
    # What it was built from, for the curious.
    (cd "$sid_dir/fetched" && for p in *; do printf '%s %s\n' "$p" "$(dpkg-deb -f "$(sid_deb_file "$p")" Version)"; done) \
      >"$bin/$crd_apiserver.packages"
  fi
  # The unpacked tree and the Go cache are about 1 GB; only the binaries are worth keeping.
  rm -rf "$sid_dir"
}
