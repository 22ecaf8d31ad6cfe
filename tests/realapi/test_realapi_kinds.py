"""The kinds table (``syncer.kinds.KINDS``) against a real kube-apiserver's discovery: for each
built-in kind, every version the table says this release serves is served, under the table's
resource name and scope, and every version it says this release does not serve is not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from syncer.errors import ClusterError
from syncer.kinds import KINDS
from syncer.kube import kube_client
from syncer.sources.manifests import parse_documents

from .cluster import RealCluster

pytestmark = pytest.mark.realapi

#: Kinds of CRDs the table knows (not the API server's own): the test cluster installs neither.
CRD_KINDS = {"ClusterIssuer", "VolumeSnapshotClass"}
#: Served only with a feature gate (alpha) or from a release after the test cluster's.
GATED = {"PodSchedulingContext"}


def test_the_kinds_table_says_what_this_release_serves(real_cluster: RealCluster, tmp_path: Path) -> None:
    api = kube_client(str(real_cluster.kubeconfig(tmp_path / "kc")), None, read_yaml=parse_documents)
    version = api.call("GET", "/version", what="the server's version") or {}
    minor = int(re.match(r"\d+", str(version.get("minor"))).group())  # type: ignore[union-attr]
    wrong: list[str] = []
    for kind, info in KINDS.items():
        if kind in CRD_KINDS or kind in GATED:
            continue
        served = set(info.served_by(minor))
        for api_version in info.api_versions:
            try:
                resource, namespaced = api.resource(api_version, kind)
            except ClusterError:
                if api_version in served:
                    wrong.append(f"{kind}: the table says 1.{minor} serves {api_version}; it does not")
                continue
            if api_version not in served:
                wrong.append(f"{kind}: 1.{minor} serves {api_version}; the table says it does not")
            elif (resource, namespaced) != (info.resource, info.namespaced):
                wrong.append(f"{kind} {api_version}: {resource}, namespaced {namespaced}; the table says "
                             f"{info.resource}, namespaced {info.namespaced}")
    assert wrong == []
