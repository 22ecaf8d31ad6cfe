#!/usr/bin/env bash
# Build (or reuse) the binaries behind the "realapi" test tier:
#   * kube-apiserver v1.20.2, compiled from Debian bookworm's `kubernetes`
#     source package with Debian's Go (golang-go, 1.19);
#   * etcd 3.4 and etcdctl, straight from Debian's etcd-server / etcd-client.
#
# Everything lands OUTSIDE the checkout, in
#   ${SYNCER_REALAPI_CACHE:-/var/cache/syncer-realapi}/
#       v1.20.2-<hash of this script>/kube-apiserver   the result
#       gocache/                                       Go build cache (warm rebuilds)
#       downloads/                                     .dsc + tarballs from apt-get source
#       apt/                                           private apt lists (deb-src)
#       work/                                          scratch GOPATH, wiped per build
# A result that is already there is reused, so running this twice is cheap.
#
# On success the LAST line on stdout is `kube-apiserver=<absolute path>`;
# progress goes to stderr. Any failure exits non-zero with a message.
#
# Knobs: SYNCER_REALAPI_CACHE (cache root), SYNCER_REALAPI_SKIP_APT=1 (never
# call apt-get; fail if a package is missing).
set -euo pipefail

K8S_VERSION=v1.20.2
DEB_SRC_VERSION='1.20.5+really1.20.2-1.1+deb12u1'
DEB_PACKAGES=(golang-go golang-github-modern-go-reflect2-dev etcd-server etcd-client dpkg-dev openssl)
REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2

SCRIPT_PATH="$(readlink -f "${BASH_SOURCE[0]}")"
SCRIPT_HASH="$(sha256sum "$SCRIPT_PATH" | cut -c1-12)"
CACHE_ROOT="${SYNCER_REALAPI_CACHE:-/var/cache/syncer-realapi}"
OUT_DIR="$CACHE_ROOT/$K8S_VERSION-$SCRIPT_HASH"
OUT_BIN="$OUT_DIR/kube-apiserver"

T0=$SECONDS
log() { printf '[realapi-build +%4ss] %s\n' "$((SECONDS - T0))" "$*" >&2; }
die() { printf '\n[realapi-build] FAILED: %s\n' "$*" >&2; exit 1; }
set -E
trap 'printf "\n[realapi-build] FAILED: line %s: \"%s\" exited %s\n" "$LINENO" "$BASH_COMMAND" "$?" >&2' ERR
trap 'rc=$?; [ $rc -eq 0 ] || printf "[realapi-build] build.sh FAILED (exit %s) after %ss; nothing was cached\n\n" "$rc" "$((SECONDS - T0))" >&2' EXIT

mkdir -p "$CACHE_ROOT" || die "cannot create cache dir $CACHE_ROOT (set SYNCER_REALAPI_CACHE)"

# One build at a time per cache (a pytest session and a manual run may race).
exec 9>"$CACHE_ROOT/.lock"
if ! flock -n 9; then
    log "another build holds $CACHE_ROOT/.lock; waiting (max 60 min)"
    flock -w 3600 9 || die "timed out waiting for $CACHE_ROOT/.lock"
fi

# ---------------------------------------------------------------- packages --
missing_packages() {
    local p
    for p in "${DEB_PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
            printf '%s\n' "$p"
        fi
    done
}

mapfile -t MISSING < <(missing_packages)
if [ "${#MISSING[@]}" -gt 0 ]; then
    [ "${SYNCER_REALAPI_SKIP_APT:-0}" = 1 ] && die "missing Debian packages: ${MISSING[*]} (SYNCER_REALAPI_SKIP_APT=1)"
    log "installing Debian packages: ${MISSING[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends "${MISSING[@]}" >&2; then
        log "apt-get install failed; refreshing package lists and retrying"
        apt-get update -q >&2
        apt-get install -y -q --no-install-recommends "${MISSING[@]}" >&2
    fi
    log "packages installed"
else
    log "Debian packages already installed: ${DEB_PACKAGES[*]}"
fi
for f in /usr/bin/etcd /usr/bin/etcdctl /usr/bin/go /usr/bin/openssl "$REFLECT2_SRC/reflect2.go"; do
    [ -e "$f" ] || die "$f is missing after installing packages"
done
# First line without `| head -n1`: head exits early, etcd gets SIGPIPE (141), and pipefail + the
# ERR trap printed a "FAILED" line on every green run.
etcd_version=$(/usr/bin/etcd --version 2>/dev/null || true)
log "etcd: ${etcd_version%%$'\n'*}; go: $(go version)"

# ---------------------------------------------------------------- reuse? ----
if [ -x "$OUT_BIN" ] && "$OUT_BIN" --version >/dev/null 2>&1; then
    log "reusing cached $OUT_BIN ($("$OUT_BIN" --version)); nothing to build"
    log "done in $((SECONDS - T0))s"
    echo "kube-apiserver=$OUT_BIN"
    exit 0
fi
log "no usable $OUT_BIN; building kube-apiserver $K8S_VERSION from Debian source $DEB_SRC_VERSION"

# ---------------------------------------------------------------- source ----
# A private deb-src list: /etc/apt is never touched. Mirror taken from the
# machine's own configuration so whatever mirror is set up here is used.
APT_DIR="$CACHE_ROOT/apt"
DL_DIR="$CACHE_ROOT/downloads"
mkdir -p "$APT_DIR/lists/partial" "$DL_DIR"

mirror_uri() {
    local uri=""
    if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
        uri="$(awk 'tolower($1)=="uris:" && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources || true)"
    fi
    if [ -z "$uri" ]; then
        uri="$(grep -hsE '^deb\s' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
                | grep -oE '(https?|file)://[^ ]*/debian/?( |$)' | head -n1 | tr -d ' ' || true)"
    fi
    printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}
MIRROR="$(mirror_uri)"
MIRROR="${MIRROR%/}"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
SIGNED=""
[ -f "$KEYRING" ] && SIGNED="[signed-by=$KEYRING] "
cat >"$APT_DIR/private.list" <<EOF
deb-src ${SIGNED}${MIRROR} bookworm main
EOF
APT_OPTS=(
    -o "Dir::Etc::SourceList=$APT_DIR/private.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$APT_DIR/lists"
    -o "APT::Sandbox::User=root"
)

ORIG_TGZ="$DL_DIR/kubernetes_${DEB_SRC_VERSION%-*}.orig.tar.gz"
DSC="$DL_DIR/kubernetes_${DEB_SRC_VERSION}.dsc"
if [ -f "$DSC" ] && [ -f "$ORIG_TGZ" ]; then
    log "source package already downloaded in $DL_DIR"
else
    log "apt-get update (private deb-src list: $MIRROR bookworm main)"
    apt-get "${APT_OPTS[@]}" update -q >&2
    log "apt-get source --download-only kubernetes=$DEB_SRC_VERSION"
    (cd "$DL_DIR" && apt-get "${APT_OPTS[@]}" source --download-only -q "kubernetes=$DEB_SRC_VERSION" >&2)
fi
[ -f "$DSC" ] || die "expected $DSC after apt-get source"

WORK="$CACHE_ROOT/work"
GOPATH_DIR="$WORK/gopath"
SRC="$GOPATH_DIR/src/k8s.io/kubernetes"
log "extracting source into $SRC (dpkg-source applies Debian's patches)"
rm -rf "$WORK"
mkdir -p "$(dirname "$SRC")"
dpkg-source --no-check -x "$DSC" "$SRC" >&2
[ -d "$SRC/vendor/k8s.io/apiserver" ] || die "source tree has no vendor/ directory"

# reflect2 v1.0.1 (vendored) breaks at run time with Go >= 1.18; use Debian's v1.0.2.
log "replacing vendored github.com/modern-go/reflect2 with Debian's copy ($REFLECT2_SRC)"
rm -rf "$SRC/vendor/github.com/modern-go/reflect2"
mkdir -p "$SRC/vendor/github.com/modern-go/reflect2"
cp -a "$REFLECT2_SRC"/*.go "$REFLECT2_SRC"/*.s "$SRC/vendor/github.com/modern-go/reflect2/"

# ---------------------------------------------------------------- build -----
export GOPATH="$GOPATH_DIR"
export GO111MODULE=off
export GOFLAGS=""
export CGO_ENABLED=0
export GOCACHE="$CACHE_ROOT/gocache"
export GOTMPDIR="$WORK/tmp"
export HOME="${HOME:-/root}"
mkdir -p "$GOCACHE" "$GOTMPDIR"
cd "$SRC"

log "building openapi-gen (shipped in vendor/k8s.io/kube-openapi)"
go build -trimpath -o "$WORK/bin/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen

# Same selection as upstream's Makefile.generated_files: every directory (with
# staging/src/ spelt as vendor/, the rest of vendor/ skipped) holding a .go file
# tagged `+k8s:openapi-gen=`, minus code-generator and sample-apiserver.
log "listing packages tagged +k8s:openapi-gen"
mapfile -t OPENAPI_DIRS < <(
    find -H . \( -path './_*' -o -path './.*' -o -path ./vendor \) -prune -o -type f -name '*.go' -print \
        | xargs grep -l --color=never '^// *+k8s:openapi-gen=' \
        | sed -e 's|^\./||' -e 's|^staging/src/|vendor/|' -e 's|/[^/]*$||' \
        | grep -vE '^vendor/k8s.io/(code-generator|sample-apiserver)/' \
        | LC_ALL=C sort -u
)
[ "${#OPENAPI_DIRS[@]}" -gt 50 ] || die "found only ${#OPENAPI_DIRS[@]} openapi-gen packages; expected well over 50"
INPUTS="$(printf 'k8s.io/kubernetes/%s,' "${OPENAPI_DIRS[@]}")"
INPUTS="${INPUTS%,}"
log "generating pkg/generated/openapi/zz_generated.openapi.go from ${#OPENAPI_DIRS[@]} packages"
# openapi-gen type-checks the standard library from source; a -trimpath binary
# does not know GOROOT by itself (it would guess /usr and resolve nothing).
GOROOT="$(go env GOROOT)" "$WORK/bin/openapi-gen" \
    --logtostderr -v 1 \
    -i "$INPUTS" \
    -p k8s.io/kubernetes/pkg/generated/openapi \
    -O zz_generated.openapi \
    -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt \
    -r "$WORK/openapi-violations.report" >"$WORK/openapi-gen.log" 2>&1 \
    || { tail -n 40 "$WORK/openapi-gen.log" >&2; die "openapi-gen failed"; }
[ -s pkg/generated/openapi/zz_generated.openapi.go ] || die "openapi-gen wrote no output"

VPKG=k8s.io/kubernetes/vendor/k8s.io
LDFLAGS="-s -w"
for pkg in client-go/pkg/version component-base/version; do
    LDFLAGS+=" -X $VPKG/$pkg.gitVersion=$K8S_VERSION -X $VPKG/$pkg.gitMajor=1 -X $VPKG/$pkg.gitMinor=20"
    LDFLAGS+=" -X $VPKG/$pkg.gitTreeState=clean -X $VPKG/$pkg.buildDate=1970-01-01T00:00:00Z"
done
log "go build ./cmd/kube-apiserver (GOPATH mode, CGO off, GOCACHE=$GOCACHE); cold: several minutes on 2 cores"
TB=$SECONDS
go build -trimpath -ldflags "$LDFLAGS" -o "$WORK/bin/kube-apiserver" ./cmd/kube-apiserver
log "go build took $((SECONDS - TB))s"

"$WORK/bin/kube-apiserver" --version >&2 || die "built kube-apiserver does not run"
mkdir -p "$OUT_DIR"
install -m 0755 "$WORK/bin/kube-apiserver" "$OUT_BIN.tmp"
mv -f "$OUT_BIN.tmp" "$OUT_BIN"
cat >"$OUT_DIR/BUILD-INFO" <<EOF
kube-apiserver $K8S_VERSION built $(date -u +%Y-%m-%dT%H:%M:%SZ) in $((SECONDS - T0))s
debian source: kubernetes $DEB_SRC_VERSION from $MIRROR
go: $(go version)
reflect2: $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev) (Debian)
build.sh sha256 prefix: $SCRIPT_HASH
EOF
rm -rf "$WORK"   # the source tree is ~600 MB; the Go cache keeps rebuilds fast
for stale in "$CACHE_ROOT/$K8S_VERSION"-*; do   # results of older versions of this script
    if [ -d "$stale" ] && [ "$stale" != "$OUT_DIR" ]; then
        log "removing stale $stale"
        rm -rf "$stale"
    fi
done
log "built $OUT_BIN ($(du -h "$OUT_BIN" | cut -f1))"
log "done in $((SECONDS - T0))s"
echo "kube-apiserver=$OUT_BIN"
