"""Generator ``files:`` sources on real public layouts (tests/data/kustomize-corpus): podinfo's
cache base (a ``redis.conf`` turned into a hashed ConfigMap) and kustomize's ldap example (an
``env.startup.txt`` holding password lines, under an overlay whose patch file sets the replicas and
swaps a volume). Each live value goes into the line of the file that sets it; the real kustomize
renders every tree; no API server (the real-API run is ``bench/kustomizecorpus.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_kustomize import KUBECTL, _real_kubectl  # noqa: F401  (the fixture: the real kubectl)
from tests.test_kustomize_graph import C0, layout, load, obj, placed, written

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kustomize) not installed")
#: podinfo-cache's own kustomization.yaml is the tree's root: kept as it is (layout() writes the top)
_PODINFO_TOP = (Path(__file__).parent / "data" / "kustomize-corpus" / "podinfo-cache" / "kustomization.yaml").read_text()


def test_a_line_of_a_generated_redis_conf_is_written_into_the_conf_file(tmp_path: Path) -> None:
    repo = layout(tmp_path, "podinfo-cache", _PODINFO_TOP)
    m = load(repo, "default")
    conf = obj(m, "ConfigMap", "redis-config")
    text = conf.data["data"]["redis.conf"].replace("maxmemory 64mb", "maxmemory 128mb")
    maxmem = placed(m, conf, ("data", "redis.conf"), text)
    dep = obj(m, "Deployment", "cache")
    limit = placed(m, dep, C0 + ("resources", "limits", "memory"), "256Mi")
    assert [d.file for d in (maxmem, limit)] == ["hosts/t/redis.conf", "hosts/t/deployment.yaml"]
    lines, refused = written(repo, m, [maxmem, limit])
    assert refused == []
    assert lines == {"hosts/t/redis.conf": ["-maxmemory 64mb", "+maxmemory 128mb"],
                     "hosts/t/deployment.yaml": ["-              memory: 128Mi", "+              memory: 256Mi"]}


def test_an_overlay_patch_file_and_a_files_source_with_unchanged_password_lines(tmp_path: Path) -> None:
    """ldap's production overlay patches the replicas (6) and a volume; the base's generator reads
    env.startup.txt, whose password lines are unchanged: the one changed line is written."""
    repo = layout(tmp_path, "kustomize-ldap", "resources:\n  - overlays/production\n")
    m = load(repo, "default")
    dep = obj(m, "Deployment", "production-ldap")
    replicas = placed(m, dep, ("spec", "replicas"), 3)
    disk = placed(m, dep, ("spec", "template", "spec", "volumes", 0, "gcePersistentDisk", "pdName"), "ldap-disk-2")
    image = placed(m, dep, C0 + ("image",), "osixia/openldap:1.2.0")
    conf = obj(m, "ConfigMap", "production-ldap-configmap")
    text = conf.data["data"]["env.startup.txt"].replace("Example Inc.", "Example Corp.")
    org = placed(m, conf, ("data", "env.startup.txt"), text)
    assert [d.file for d in (replicas, disk, image, org)] == [
        "hosts/t/overlays/production/deployment.yaml", "hosts/t/overlays/production/deployment.yaml",
        "hosts/t/base/deployment.yaml", "hosts/t/base/env.startup.txt"]
    lines, refused = written(repo, m, [replicas, disk, image, org])
    assert refused == []
    assert lines == {
        "hosts/t/overlays/production/deployment.yaml": ["-  replicas: 6", "+  replicas: 3",
                                                        "-            pdName: ldap-persistent-storage",
                                                        "+            pdName: ldap-disk-2"],
        "hosts/t/base/deployment.yaml": ["-          image: osixia/openldap:1.1.11",
                                         "+          image: osixia/openldap:1.2.0"],
        "hosts/t/base/env.startup.txt": ["-LDAP_ORGANISATION: Example Inc.", "+LDAP_ORGANISATION: Example Corp."]}
