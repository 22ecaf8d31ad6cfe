"""Per-object watches multiplexed over HTTP/2 on the real kube-apiserver v1.20.2 (issue #24).

The chart's default Role (``resourceNames`` only) over 200 ConfigMaps: the collection watch is
refused (403), so each object is watched by name; the server negotiates h2 by ALPN, started here
with ``--http2-max-streams-per-connection=100`` (the default from Kubernetes 1.29), and syncer
carries the 200 watches over 3 connections (90 streams each at most) from one thread; a
``kubectl patch`` of the last object becomes a commit.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.sidecarprocess import connections, threads

from .cluster import RealCluster
from .test_realapi_sidecar import (PATHS, SyncerRun, can, changed_lines, git, helm_render,  # noqa: F401
                                   kubectl_apply_all, main_log, run_args, syncers, wait_for)
from .tools import require_tool

pytestmark = pytest.mark.realapi

N = 200
CONFIGMAPS = [f"app-{i:03}" for i in range(N)]


def repo(tmp_path: Path, namespace: str) -> Path:
    """hosts/asgard holding N ConfigMaps, committed to a bare origin."""
    work = tmp_path / "work"
    host = work / "hosts" / "asgard"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text(f"installation: asgard\nnamespace: {namespace}\ntrack:\n  ConfigMap: writeback\n")
    (host / "configmaps.yaml").write_text("---\n".join(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
        f"data:\n  LOG_LEVEL: info\n" for name in CONFIGMAPS))
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", "many")
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "main")
    return origin


def test_names_only_role_watches_200_objects_over_3_http2_connections(
        real_cluster: RealCluster, tmp_path: Path, syncers: Callable[..., SyncerRun]) -> None:
    kubectl = require_tool("kubectl")
    require_tool("helm")
    with RealCluster(real_cluster.kube_apiserver, workdir=tmp_path / "h2",
                     extra_apiserver_args=["--http2-max-streams-per-connection=100"]) as cluster:
        namespace = cluster.create_namespace()
        origin = repo(tmp_path, namespace)
        kubectl_apply_all(cluster, origin, namespace)
        values: dict[str, Any] = {
            "mode": "standalone", "installation": "asgard", "image": {"repository": "registry.example.com/syncer"},
            "sync": {"mode": "commit", "forge": "none", "remote": "https://git.example.com/ops/homelab.git"},
            "tracked": {"configMaps": CONFIGMAPS}, "state": {"configMapName": "asgard-syncer-state"},
            "credentials": {"existingSecret": "syncer-credentials", "gitAuth": "https"}}
        rendered = helm_render(namespace, values, tmp_path)
        assert all(r.get("resourceNames") or r["verbs"] == ["create"] for r in rendered["Role"]["rules"])
        for kind in ("ServiceAccount", "Role", "RoleBinding"):
            cluster.request("POST", PATHS[kind].format(ns=namespace), rendered[kind])
        token = cluster.service_account_token(namespace, rendered["ServiceAccount"]["metadata"]["name"],
                                              create=False)
        sa_config = cluster.kubeconfig(tmp_path / "sa.kubeconfig", token=token, namespace=namespace)
        wait_for(lambda: can(cluster, token, namespace, "get", "configmaps", CONFIGMAPS[-1]), 10, "the RoleBinding")
        run = syncers("h2", run_args(origin, sa_config, "--state-configmap", "asgard-syncer-state"))
        run.wait_ready(90)
        said = [e for e in run.events() if e.get("msg") == "watching"]
        assert said[0]["path"] == "one watch for the kind", said  # tried first, refused: per object
        said = said[1:]
        assert [(e["path"], e["objects"], e["over"]) for e in said] == [
            ("one watch per object", N, "HTTP/2 multiplexed over 3 connections")], said
        assert 'cannot list resource "configmaps"' in said[0]["reason"], said
        assert any(e.get("msg") == "per-object watches multiplexed over HTTP/2" and e["streams_per_connection"] == 90
                   for e in run.events())
        port = int(cluster.url.rsplit(":", 1)[1])
        # 3 for the watches, and the request pool's few (state, lease, the pass's reads)
        assert connections(run.proc.pid, port) <= 3 + 4
        assert threads(run.proc.pid) < 20
        subprocess.run([kubectl, "--kubeconfig", str(cluster.kubeconfig(tmp_path / "admin.kubeconfig",
                                                                         namespace=namespace)),
                        "patch", "configmap", CONFIGMAPS[-1], "--type=merge", "-p",
                        json.dumps({"data": {"LOG_LEVEL": "debug"}})], check=True, capture_output=True, timeout=60)
        wait_for(lambda: len(main_log(origin)) == 2, 30, "the commit of the patched ConfigMap")
        assert changed_lines(origin) == ["+  LOG_LEVEL: debug", "-  LOG_LEVEL: info"]
        assert run.metric("syncer_sync_errors_total") == 0, run.metrics()
        assert run.terminate() == 0
