"""Generator ``files:`` sources on real public layouts (tests/data/kustomize-corpus): podinfo's
cache base (a ``redis.conf`` turned into a hashed ConfigMap) and kustomize's ldap example (an
``env.startup.txt`` holding password lines, under an overlay whose patch file sets the replicas and
swaps a volume). Each live value goes into the line of the file that sets it; the real kustomize
renders every tree; no API server (the real-API run is ``bench/kustomizecorpus.py``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.test_kustomize import KUBECTL, _real_kubectl  # noqa: F401  (the fixture: the real kubectl)
from tests.test_kustomize_graph import C0, CORPUS, layout, load, obj, placed, written

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


#: the installation's top for podinfo's database base: v1.20 serves no batch/v1 CronJob nor autoscaling/v2
#: HPA, so the top deletes them (and the StatefulSet) as the real-API bench does; the tree stays as it is
_DATABASE_TOP = "resources:\n  - bases/database\npatches:\n" + "".join(
    f"  - patch: |-\n      apiVersion: {api}\n      kind: {kind}\n      metadata:\n        name: {name}\n      $patch: delete\n"
    for api, kind, name in (("batch/v1", "CronJob", "rollup-daily"), ("batch/v1", "CronJob", "rollup-weekly"),
                            ("batch/v1", "CronJob", "backup-daily"),
                            ("autoscaling/v2", "HorizontalPodAutoscaler", "database-replica"),
                            ("apps/v1", "StatefulSet", "database-primary")))


def test_lines_of_shell_scripts_behind_unhashed_generators_are_written_into_the_scripts(tmp_path: Path) -> None:
    """podinfo's database base: two configMapGenerators with disableNameSuffixHash read a shell script each
    (``${BACKUP_EXIT:-0}`` in them is shell, not a template); one line of each script changes, and an image
    of the base's Deployment beside them: each goes into its own file, in the one line that sets it."""
    repo = layout(tmp_path, "podinfo-database", _DATABASE_TOP)
    m = load(repo, "default")
    backup = obj(m, "ConfigMap", "backup-script")
    assert backup.ref.name == "backup-script"  # no hash suffix
    sleep = placed(m, backup, ("data", "backup.sh"), backup.data["data"]["backup.sh"].replace("sleep 60", "sleep 90"))
    rollup = obj(m, "ConfigMap", "rollup-script")
    step = placed(m, rollup, ("data", "rollup.sh"), rollup.data["data"]["rollup.sh"].replace("  sleep 10", "  sleep 20"))
    dep = obj(m, "Deployment", "database-replica")
    image = placed(m, dep, C0 + ("image",), "ghcr.io/stefanprodan/podinfo:6.11.1")
    assert [d.file for d in (sleep, step, image)] == [
        "hosts/t/bases/database/scripts/backup.sh", "hosts/t/bases/database/scripts/rollup.sh",
        "hosts/t/bases/database/deployment-replica.yaml"]
    lines, refused = written(repo, m, [sleep, step, image])
    assert refused == []
    assert lines == {
        "hosts/t/bases/database/scripts/backup.sh": ["-sleep 60", "+sleep 90"],
        "hosts/t/bases/database/scripts/rollup.sh": ["-  sleep 10", "+  sleep 20"],
        "hosts/t/bases/database/deployment-replica.yaml": ["-        image: ghcr.io/stefanprodan/podinfo:6.10.2",
                                                           "+        image: ghcr.io/stefanprodan/podinfo:6.11.1"]}


def test_a_line_of_a_generated_nginx_conf_is_written_into_the_conf_file(tmp_path: Path) -> None:
    """saleor's nginx kustomization (its own ``kustomization.yml`` is the installation's): a changed
    directive of the ``nginx.conf`` behind a hashed generator is that file's line (that its
    ``server_tokens off;`` is no secret: tests/test_secret_lines.py)."""
    repo = tmp_path / "repo"
    shutil.copytree(CORPUS / "saleor-nginx", repo / "hosts" / "t")
    m = load(repo, "default")
    conf = obj(m, "ConfigMap", "nginx-conf")
    assert conf.ref.name != "nginx-conf"  # hashed
    text = conf.data["data"]["nginx.conf"].replace("worker_connections 1024;", "worker_connections 4096;")
    workers = placed(m, conf, ("data", "nginx.conf"), text)
    image = placed(m, obj(m, "Deployment", "nginx"), C0 + ("image",), "nginx:1.27")
    assert [(d.file, d.action.value) for d in (workers, image)] == [("hosts/t/nginx.conf", "write"),
                                                                     ("hosts/t/nginx.yml", "write")]
    lines, refused = written(repo, m, [workers, image])
    assert refused == []
    assert lines == {"hosts/t/nginx.conf": ["-   worker_connections 1024;", "+   worker_connections 4096;"],
                     "hosts/t/nginx.yml": ["-        image: nginx:latest", "+        image: nginx:1.27"]}
