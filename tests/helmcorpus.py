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
    into: str  # where the chart goes, relative to hosts/<name>/ ("": the directory is the chart; "/x": the repo's x)
    layout: str  # "chart", "umbrella" or "flux"
    release: str  # the Helm release name the installation renders as
    namespace: str  # the release's namespace


INSTALLATIONS = (
    Installation("storage-chart", "local-path-provisioner", "", "chart", "storage", "storage"),
    Installation("storage-umbrella", "local-path-provisioner", "charts/local-path-provisioner", "umbrella",
                 "umbrella", "storage"),
    Installation("storage-flux", "local-path-provisioner", "chart", "flux", "local-path", "storage"),
    Installation("storage-flux-beta", "local-path-provisioner", "chart", "flux", "storage-provisioner", "storage"),
    Installation("storage-classes", "local-path-provisioner", "", "chart", "classes", "storage"),
    Installation("storage-flux-root", "local-path-provisioner", "/charts/local-path-provisioner", "flux", "node-storage",
                 "storage"),
)
BY_NAME = {i.name: i for i in INSTALLATIONS}


def build(repo: Path, name: str) -> Path:
    """``repo/hosts/<name>/`` laid out from the corpus (its own files over the chart's, so an
    installation's values.yaml replaces the chart's); returns that directory."""
    inst = BY_NAME[name]
    host = repo / "hosts" / name
    into = repo / inst.into[1:] if inst.into.startswith("/") else host / inst.into
    shutil.copytree(CORPUS / "charts" / inst.chart, into, dirs_exist_ok=True)
    shutil.copytree(CORPUS / "hosts" / name, host, dirs_exist_ok=True)
    return host


def chart_dir(repo: Path, name: str) -> Path:
    """Where the installation's chart is, as ``build`` laid it."""
    inst = BY_NAME[name]
    host = repo / "hosts" / name
    return repo / inst.into[1:] if inst.into.startswith("/") else host / inst.into
