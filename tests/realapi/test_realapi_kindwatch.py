"""One watch per kind on the real kube-apiserver v1.20.2, with the chart's Role (issue #24).

An installation of 10 ConfigMaps (one watch for the kind from 8 objects) and 2 Endpoints
(one watch per object), and an untracked ConfigMap in the same namespace:

1. with ``rbac.watchKinds: true`` the Role the chart renders lets syncer list and watch the
   ConfigMaps as a whole: it says so at start (``watching``, one watch for the kind), a live
   edit becomes a commit, and edits of the untracked ConfigMap start no pass;
2. with the chart's default Role (``resourceNames`` only) the same start falls back to one
   watch per object, says why (the server's 403 on the collection), and still commits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .cluster import RealCluster
from .test_realapi_sidecar import (PATHS, SyncerRun, can, changed_lines, core_api, git, helm_render,  # noqa: F401
                                   kubectl_apply_all, main_log, run_args, syncers, wait_for)
from .tools import require_tool

pytestmark = pytest.mark.realapi

CONFIGMAPS = [f"app-{i:02}" for i in range(10)]
ENDPOINTS = ["mac-ollama", "m1-ollama"]


def wide_repo(tmp_path: Path, namespace: str) -> Path:
    """hosts/asgard holding 10 ConfigMaps and 2 Endpoints, committed to a bare origin."""
    work = tmp_path / "work"
    host = work / "hosts" / "asgard"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text(f"installation: asgard\nnamespace: {namespace}\n"
                                      "track:\n  ConfigMap: writeback\n  Endpoints: report\n")
    docs = [f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
            f"data:\n  LOG_LEVEL: info\n" for name in CONFIGMAPS]
    docs += [f"apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
             f"subsets:\n  - addresses:\n      - ip: 192.168.68.{50 + i}\n    ports:\n      - name: http\n"
             f"        port: 11434\n        protocol: TCP\n" for i, name in enumerate(ENDPOINTS)]
    (host / "services.yaml").write_text("---\n".join(docs))
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", "wide")
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "main")
    return origin


def edit(admin: Path, namespace: str, name: str, value: str) -> None:
    core_api(admin).patch_namespaced_config_map(name, namespace, {"data": {"LOG_LEVEL": value}},
                                                field_manager="kubectl-edit")


def paths_said(run: SyncerRun) -> dict[str, dict[str, Any]]:
    return {e["object"].split(" in ")[0]: e for e in run.events() if e.get("msg") == "watching"}


def test_one_watch_per_kind_with_the_chart_option_and_per_object_without(
        real_cluster: RealCluster, namespace: str, tmp_path: Path, syncers: Callable[..., SyncerRun]) -> None:
    require_tool("helm")
    origin = wide_repo(tmp_path, namespace)
    kubectl_apply_all(real_cluster, origin, namespace)
    real_cluster.request("POST", PATHS["ConfigMap"].format(ns=namespace), {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "untracked"}, "data": {"N": "0"}})
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    values = {"mode": "standalone", "installation": "asgard", "image": {"repository": "registry.example.com/syncer"},
              "sync": {"mode": "commit", "forge": "none", "remote": "https://git.example.com/ops/homelab.git"},
              "tracked": {"configMaps": CONFIGMAPS, "endpoints": ENDPOINTS},
              "state": {"configMapName": "asgard-syncer-state"}, "rbac": {"watchKinds": True},
              "credentials": {"existingSecret": "syncer-credentials", "gitAuth": "https"}}
    rendered = helm_render(namespace, values, tmp_path)
    role = rendered["Role"]
    for kind in ("ServiceAccount", "Role", "RoleBinding"):
        real_cluster.request("POST", PATHS[kind].format(ns=namespace), rendered[kind])
    token = real_cluster.service_account_token(namespace, rendered["ServiceAccount"]["metadata"]["name"], create=False)
    sa_config = real_cluster.kubeconfig(tmp_path / "sa.kubeconfig", token=token, namespace=namespace)
    wait_for(lambda: can(real_cluster, token, namespace, "watch", "configmaps"), 10, "the RoleBinding")
    state = ["--state-configmap", "asgard-syncer-state"]

    # 1. rbac.watchKinds: one watch for the ConfigMaps, one per Endpoints.
    run = syncers("kinds", run_args(origin, sa_config, *state))
    run.wait_ready()
    said = paths_said(run)
    assert said["ConfigMap"]["path"] == "one watch for the kind" and said["ConfigMap"]["objects"] == 10, said
    assert said["Endpoints"]["path"] == "one watch per object" and said["Endpoints"]["objects"] == 2, said
    passes = run.metric("syncer_passes_total")
    for n in range(5):  # the untracked ConfigMap's events are dropped: no pass, no commit
        real_cluster.request("PUT", PATHS["ConfigMap"].format(ns=namespace) + "/untracked", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "untracked"}, "data": {"N": str(n + 1)}})
    time.sleep(2)
    assert run.metric("syncer_passes_total") == passes
    edit(admin, namespace, "app-03", "debug")
    wait_for(lambda: len(main_log(origin)) == 2, 30, "the commit through the kind watch")
    assert changed_lines(origin) == ["+  LOG_LEVEL: debug", "-  LOG_LEVEL: info"]
    assert run.metric("syncer_sync_errors_total") == 0, run.metrics()
    assert run.terminate() == 0

    # 2. The chart's default Role: the collection is refused (403), so one watch per object.
    path = PATHS["Role"].format(ns=namespace) + "/" + role["metadata"]["name"]
    current = real_cluster.request("GET", path)
    real_cluster.request("PUT", path, {**current, "rules": [r for r in role["rules"] if r.get("resourceNames")
                                                            or r["verbs"] == ["create"]]})
    wait_for(lambda: not can(real_cluster, token, namespace, "list", "configmaps"), 10, "the narrower Role")
    run = syncers("names", run_args(origin, sa_config, *state))
    run.wait_ready()
    said = paths_said(run)
    assert said["ConfigMap"]["path"] == "one watch per object" and said["ConfigMap"]["objects"] == 10, said
    assert 'cannot list resource "configmaps"' in said["ConfigMap"]["reason"], said
    edit(admin, namespace, "app-07", "warn")
    wait_for(lambda: len(main_log(origin)) == 3, 30, "the commit through per-object watches")
    assert changed_lines(origin) == ["+  LOG_LEVEL: warn", "-  LOG_LEVEL: info"]
    assert run.metric("syncer_sync_errors_total") == 0, run.metrics()
    assert run.terminate() == 0
    assert token not in run.output() and json.dumps(token) not in run.output()
