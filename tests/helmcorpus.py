"""The Helm corpus (tests/data/helm-corpus): real public charts, vendored byte for byte
(SOURCES.md), and installations built on them in both layouts Argo CD and Flux read.

``build(repo, name)`` lays installation ``name`` into ``repo/hosts/<name>/``: its own files
(values, an umbrella's Chart.yaml, a HelmRelease and its values ConfigMap, syncer.conf) and the
chart it renders, copied where the layout wants it (the directory itself, ``charts/<chart>/``
of an umbrella, or the path a HelmRelease names).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "data" / "helm-corpus"


@dataclass(frozen=True)
class Installation:
    name: str
    chart: str  # under CORPUS/charts
    into: str  # where the chart goes, relative to hosts/<name>/ ("" : the directory is the chart)
    layout: str  # "chart", "umbrella" or "flux"
    release: str  # the Helm release name the installation renders as
    namespace: str  # the release's namespace


INSTALLATIONS = (
    Installation("storage-chart", "local-path-provisioner", "", "chart", "storage", "storage"),
    Installation("storage-umbrella", "local-path-provisioner", "charts/local-path-provisioner", "umbrella",
                 "umbrella", "storage"),
    Installation("storage-flux", "local-path-provisioner", "chart", "flux", "local-path", "storage"),
    Installation("storage-flux-beta", "local-path-provisioner", "chart", "flux", "storage-provisioner", "storage"),
)
BY_NAME = {i.name: i for i in INSTALLATIONS}


def build(repo: Path, name: str) -> Path:
    """``repo/hosts/<name>/`` laid out from the corpus; returns that directory."""
    inst = BY_NAME[name]
    host = repo / "hosts" / name
    shutil.copytree(CORPUS / "charts" / inst.chart, host / inst.into if inst.into else host, dirs_exist_ok=True)
    shutil.copytree(CORPUS / "hosts" / name, host, dirs_exist_ok=True)
    return host
