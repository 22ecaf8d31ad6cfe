"""The image's kubectl and helm are the ones CI tests with: Dockerfile and .ci/helm.sh pin the same wheel and binaries."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def _pins(text: str, pattern: str) -> dict[str, str]:
    return dict(re.findall(pattern, text, re.MULTILINE))


def test_dockerfile_and_helm_sh_pin_the_same_kubectl_and_helm() -> None:
    dockerfile = _pins((ROOT / "Dockerfile").read_text(), r"^ARG (LAYER_\w+|KUBECTL_SHA256|HELM_SHA256)=(\S+)$")
    helm_sh = _pins((ROOT / ".ci" / "helm.sh").read_text(),
                    r'^readonly (LAYER_\w+|KUBECTL_SHA256|HELM_SHA256)="([^"]+)"$')
    names = ("LAYER_PACKAGE", "LAYER_VERSION", "LAYER_WHEEL_SHA256", "KUBECTL_SHA256", "HELM_SHA256")
    assert [dockerfile.get(n) for n in names] == [helm_sh.get(n) for n in names]
    assert all(dockerfile.get(n) for n in names)
