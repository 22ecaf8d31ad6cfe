"""The chart's cronjob mode against the real kube-apiserver: the CronJob's own command and
environment (``syncer sync asgard`` with the chart's ``SYNCER_*`` settings), run as the
ServiceAccount bound to the Role the chart renders for that mode, copies a ``kubectl edit``
back into git -- the Role's read rules are enough for a one-shot sync, and it holds nothing
else. Needs helm (skips with the reason without it; CI installs it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .cluster import RealCluster
from .test_realapi_sidecar import (CM_NAME, PATHS, asgard_repo, can, clean_env, git, helm_render,
                                   kubectl_apply_all, kubectl_edit)
from .tools import require_tool


def test_cronjob_sync_with_the_chart_role(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> None:
    require_tool("helm")
    origin = asgard_repo(tmp_path, namespace, ignore_outside_role=True)
    kubectl_apply_all(real_cluster, origin, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)

    rendered = helm_render(namespace, {
        "mode": "cronjob", "installation": "asgard",
        "image": {"repository": "registry.example.com/syncer"},
        "sync": {"mode": "commit", "forge": "none", "remote": "https://git.example.com/ops/homelab.git"},
        "tracked": {"configMaps": [CM_NAME], "endpoints": ["mac-ollama", "m1-ollama"]},
        "cronjob": {"schedule": "*/5 * * * *"},
        "credentials": {"existingSecret": "syncer-credentials", "gitAuth": "https"},
    }, tmp_path)
    role, binding, account = rendered["Role"], rendered["RoleBinding"], rendered["ServiceAccount"]
    assert all(set(r["verbs"]) == {"get", "list", "watch"} and r.get("resourceNames") for r in role["rules"])
    for kind, obj in (("ServiceAccount", account), ("Role", role), ("RoleBinding", binding)):
        real_cluster.request("POST", PATHS[kind].format(ns=namespace), obj)
    token = real_cluster.service_account_token(namespace, account["metadata"]["name"], create=False)
    assert can(real_cluster, token, namespace, "get", "configmaps", CM_NAME)
    assert not can(real_cluster, token, namespace, "create", "configmaps")
    sa_config = real_cluster.kubeconfig(tmp_path / "sa.kubeconfig", token=token, namespace=namespace)

    kubectl_edit(admin, namespace, {"MAC_ADDRS": "192.168.68.75 100.115.97.90"})

    # The Job's container as the chart renders it; only what points into the pod changes:
    # the clone dir, the remote (a local bare repository), the git token file (none needed).
    pod = rendered["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    (tmp_path / "work-dir").mkdir()
    env.update(SYNCER_REMOTE=str(origin), SYNCER_CLONE_DIR=str(tmp_path / "work-dir"), HOME=str(tmp_path),
               KUBECONFIG=str(sa_config))
    env.pop("SYNCER_GIT_TOKEN_FILE")
    assert container["command"] == ["syncer"]
    cwd = tmp_path / "pod"  # no checkout in the pod
    cwd.mkdir()
    out = subprocess.run([sys.executable, "-m", "syncer.cli", *container["args"]], cwd=cwd, env=clean_env(**env),
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    log = git(tmp_path, "--git-dir", str(origin), "log", "-1", "--format=%B", "main")
    assert f"ConfigMap/{namespace}/{CM_NAME}" in log and "data.MAC_ADDRS" in log, log
    assert "kubectl-edit" in log
