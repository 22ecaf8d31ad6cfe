"""The sidecar keeps only the compact form of each live object (syncer/sidecar/compact.py), and
still catches a live edit and says who made it, on the real kube-apiserver v1.20.2.

Ten ConfigMaps created with the real ``kubectl apply -f`` (one watch for the kind: the admin
may list them); then a real ``kubectl edit`` (its editor a script) of one, and a
server-side apply of another by a field manager of its own (``hotfix-team``). Each becomes one
commit on main whose message names the field, the manager the managedFields say wrote it, and
the time: what provenance reads from the entries the compact form keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .cluster import RealCluster
from .test_realapi_kindwatch import CONFIGMAPS, paths_said, wide_repo
from .test_realapi_sidecar import SyncerRun, changed_lines, git, main_log, run_args, syncers, wait_for  # noqa: F401
from .tools import kubectl

pytestmark = pytest.mark.realapi


def test_an_edit_and_a_server_side_apply_become_commits_naming_their_managers(
        real_cluster: RealCluster, namespace: str, tmp_path: Path, syncers: Callable[..., SyncerRun]) -> None:
    origin = wide_repo(tmp_path, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl(admin, "apply", "-f", str(tmp_path / "work" / "hosts" / "asgard" / "services.yaml"))
    run = syncers("compact", run_args(origin, admin, "--state-configmap", "asgard-syncer-state"))
    run.wait_ready()
    said = paths_said(run)
    assert said["ConfigMap"]["path"] == "one watch for the kind" and said["ConfigMap"]["objects"] == len(CONFIGMAPS)
    wait_for(lambda: run.metric("syncer_passes_total") >= 1, 30, "the first pass")
    assert len(main_log(origin)) == 1  # in sync: nothing to commit

    editor = tmp_path / "editor.py"  # kubectl runs it as KUBE_EDITOR, with Python (tools.kubectl)
    editor.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text().replace('LOG_LEVEL: info', 'LOG_LEVEL: debug'))\n")
    kubectl(admin, "edit", "-n", namespace, "configmap/app-04", editor=editor)
    wait_for(lambda: len(main_log(origin)) == 2, 30, "the commit of the kubectl edit")
    assert changed_lines(origin) == ["+  LOG_LEVEL: debug", "-  LOG_LEVEL: info"]
    body = git(origin, "log", "-1", "--format=%B", "main")
    assert "app-04" in body and "data.LOG_LEVEL" in body and "by kubectl-edit at " in body, body

    patch = tmp_path / "hotfix.yaml"
    patch.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-08\n  namespace: {namespace}\n"
                     "data:\n  LOG_LEVEL: warn\n")
    kubectl(admin, "apply", "--server-side", "--force-conflicts", "--field-manager=hotfix-team", "-f", str(patch))
    wait_for(lambda: len(main_log(origin)) == 3, 30, "the commit of the server-side apply")
    assert changed_lines(origin) == ["+  LOG_LEVEL: warn", "-  LOG_LEVEL: info"]
    body = git(origin, "log", "-1", "--format=%B", "main")
    assert "app-08" in body and "by hotfix-team at " in body, body
    assert run.metric("syncer_sync_errors_total") == 0, run.metrics()
    assert run.terminate() == 0
