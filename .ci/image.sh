#!/usr/bin/env bash
# Build the Dockerfile and run the image: `syncer --help` and the asgard example inside it.
#
# No Docker daemon here: buildah (Debian package) builds daemonless with chroot isolation and
# the vfs storage driver, which need neither overlayfs, fuse nor user namespaces -- root in a
# container is enough.
#
# The base image: the Dockerfile's python:3.12-slim when its registry answers; otherwise (this
# CI machine reaches package registries only) an equivalent base built from Debian packages
# with debootstrap (bookworm: python3 3.11, pip), passed as --build-arg PYTHON_IMAGE. Either
# way the Dockerfile's own steps run unchanged: pip builds wheels from PyPI, the runtime stage
# installs them offline and adds git/openssh from Debian.
#
# Environment:
#   SYNCER_IMAGE_BASE   use this base image, skip the registry probe and debootstrap
#   SYNCER_CI_CACHE     cache directory (default ~/.cache/syncer-ci)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
readonly IMAGE=localhost/syncer:ci
readonly DEBIAN_BASE=localhost/syncer-python-base:bookworm
readonly UPSTREAM_BASE=docker.io/library/python:3.12-slim

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'image.sh: %s\n' "$*" >&2; exit 1; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  if (( ${#missing[@]} )); then
    log "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
  fi
}

debian_base() {
  if buildah images -q "$DEBIAN_BASE" >/dev/null 2>&1; then
    log "reusing $DEBIAN_BASE"
    return
  fi
  apt_install debootstrap
  local rootfs ctr mnt
  rootfs="$(mktemp -d)"
  log "debootstrap bookworm (python3, pip) into $rootfs"
  debootstrap --variant=minbase --include=python3,python3-pip,python-is-python3,ca-certificates \
    bookworm "$rootfs" http://deb.debian.org/debian >"$rootfs.log" 2>&1 \
    || { tail -20 "$rootfs.log" >&2; die "debootstrap failed (log: $rootfs.log)"; }
  ctr="$(buildah from scratch)"
  mnt="$(buildah mount "$ctr")"
  cp -a "$rootfs/." "$mnt/"
  buildah umount "$ctr" >/dev/null
  # Debian marks its Python externally managed (PEP 668); the image's pip is the only installer.
  buildah config --env PIP_BREAK_SYSTEM_PACKAGES=1 --cmd python3 "$ctr"
  buildah commit -q "$ctr" "$DEBIAN_BASE" >/dev/null
  buildah rm "$ctr" >/dev/null
  rm -rf "$rootfs" "$rootfs.log"
}

apt_install buildah
base="${SYNCER_IMAGE_BASE:-}"
if [[ -z "$base" ]]; then
  if timeout 120 buildah pull -q "$UPSTREAM_BASE" >/dev/null 2>&1; then
    base="$UPSTREAM_BASE"
  else
    log "$UPSTREAM_BASE cannot be pulled from here; building the base from Debian packages"
    debian_base
    base="$DEBIAN_BASE"
  fi
fi

# pip inside the build trusts what this machine trusts (a TLS-inspecting proxy's CA, if any).
ca="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
secret=()
[[ -s "$ca" ]] && secret=(--secret "id=pip-ca,src=$ca")

log "buildah bud (base $base)"
start=$SECONDS
buildah bud -q --layers=false "${secret[@]}" --build-arg "PYTHON_IMAGE=$base" -t "$IMAGE" . >/dev/null
log "built $IMAGE in $((SECONDS - start))s"

ctr="$(buildah from -q "$IMAGE")"
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
# Output captured whole, never piped into an early-exiting reader (pipefail would turn that SIGPIPE into 141).
help="$(buildah run "$ctr" -- syncer --help)" || die "syncer --help failed in the image"
[[ "$help" == "usage: syncer"* ]] || die "syncer --help in the image printed no usage line"
[[ "$(buildah run "$ctr" -- id -u)" == 10001 ]] || die "the image does not run as uid 10001"
set +e
out="$(buildah run -v "$PWD/hosts:/src/hosts:ro" -v "$PWD/examples:/src/examples:ro" "$ctr" -- \
  syncer diff asgard --repo /src --live-file /src/examples/asgard-live.yaml 2>&1)"
rc=$?
set -e
readarray -t -n 3 first <<<"$out"
printf '%s\n' "${first[@]}" >&2
# Exit 1 is "drift found": the example is stale on purpose.
[[ $rc == 1 && "$out" == *"asgard: 4 difference(s)"* ]] || die "asgard example in the image: exit $rc"
log "image checks passed: syncer --help, uid 10001, asgard example (4 differences, exit 1)"
