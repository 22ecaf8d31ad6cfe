"""Zero values the server keeps and keys a person adds live, on the real kube-apiserver with the
real kubectl (issue 15): ``kubectl apply`` of a Deployment with ``automountServiceAccountToken:
false``, ``allowPrivilegeEscalation: false`` and an ``emptyDir: {}`` volume, then ``kubectl patch
--type=json`` removing both booleans and replacing the volume's source by ``hostPath``, is three
differences (the two removals reported, the volume proposed whole); ``kubectl edit`` adding an env
var to a container that has no ``env:`` in git, and a ``hostPath`` to a volume that declares no
source, is reported and proposed.  Plain ``omitempty`` zeros (``readOnly: false``) stay equal to
absence.  Without kubectl on PATH these tests skip with the reason.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from syncer.sources.manifests import parse_documents

from .cluster import RealCluster
from .tools import kubectl, require_tool, syncer_later

pytestmark = pytest.mark.realapi

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      automountServiceAccountToken: false
      containers:
        - name: app
          image: nginx:1.27  # pinned
          securityContext:
            allowPrivilegeEscalation: false
          volumeMounts:
            - name: data
              mountPath: /data
              readOnly: false
      volumes:
        - name: data
          emptyDir: {}
        - name: scratch
"""
POD = ("spec", "template", "spec")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def applied(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> tuple[Path, Path, Path]:
    """hosts/t with the Deployment above, committed, pushed to a bare origin, applied with kubectl."""
    require_tool("kubectl")
    work, bare = tmp_path / "work", tmp_path / "origin.git"
    host = work / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text(f"installation: t\nnamespace: {namespace}\ntrack:\n  Deployment: writeback\n")
    (host / "web.yaml").write_text(DEPLOY)
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "web")
    _git(work, "remote", "add", "origin", str(bare))
    _git(work, "push", "-q", "origin", "main")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl(admin, "apply", "-n", namespace, "-f", str(host / "web.yaml"))
    return work, bare, admin


def _drifts(work: Path, admin: Path) -> tuple[int, dict[str, tuple[str, str | None, str]]]:
    code, out = syncer_later("diff", "t", "--repo", str(work), "--kubeconfig", str(admin), "-o", "json")
    doc = json.loads(out)
    assert doc["errors"] == []
    return code, {d["path"]: (d["class"], d["manager"], d["action"]) for d in doc["drifts"]}


def _proposed(work: Path, bare: Path, admin: Path, tmp_path: Path) -> dict[str, Any]:
    code, out = syncer_later("sync", "t", "--repo", str(work), "--kubeconfig", str(admin), "--mode", "pr", "--forge",
                        "none", "--remote", str(bare), "--clone-dir", str(tmp_path / "clone"))
    assert code == 0, out
    text = _git(bare, "show", "syncer/t:hosts/t/web.yaml")
    assert "image: nginx:1.27  # pinned" in text and "readOnly: false" in text  # the rest of the file untouched
    return parse_documents(text, "web.yaml")[0]


def test_applied_as_written_is_in_sync(applied: tuple[Path, Path, Path], namespace: str) -> None:
    work, _, admin = applied
    stored = json.loads(kubectl(admin, "get", "-n", namespace, "deployment", "web", "-o", "json"))
    pod = stored["spec"]["template"]["spec"]
    # What the server keeps (pointer fields) and drops (a plain omitempty bool), and the source
    # it fills in for a volume that declares none: none of it a difference.
    assert pod["automountServiceAccountToken"] is False
    assert pod["containers"][0]["securityContext"] == {"allowPrivilegeEscalation": False}
    assert pod["volumes"] == [{"name": "data", "emptyDir": {}}, {"name": "scratch", "emptyDir": {}}]
    assert "readOnly" not in pod["containers"][0]["volumeMounts"][0]
    assert _drifts(work, admin) == (0, {})


def test_kubectl_patch_removing_kept_zeros_and_swapping_a_volume_source_is_three_differences(
        applied: tuple[Path, Path, Path], namespace: str, tmp_path: Path) -> None:
    work, bare, admin = applied
    kubectl(admin, "patch", "-n", namespace, "deployment", "web", "--type=json", "-p", json.dumps([
        {"op": "remove", "path": "/spec/template/spec/automountServiceAccountToken"},
        {"op": "remove", "path": "/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation"},
        {"op": "replace", "path": "/spec/template/spec/volumes/0", "value": {"name": "data", "hostPath": {"path": "/"}}},
    ]))
    code, found = _drifts(work, admin)
    assert code == 1
    assert {p: (c, a) for p, (c, _, a) in found.items()} == {
        "spec.template.spec.automountServiceAccountToken": ("removed", "report"),
        "spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation": ("removed", "report"),
        "spec.template.spec.volumes[0]": ("value", "write"),
    }
    assert found["spec.template.spec.volumes[0]"][1] == "kubectl-patch"
    want = parse_documents(DEPLOY, "web.yaml")[0]
    want["spec"]["template"]["spec"]["volumes"][0] = {"name": "data", "hostPath": {"path": "/", "type": ""}}
    assert _proposed(work, bare, admin, tmp_path) == want  # the volume whole; removals are never written


EDITOR = """\
import json, sys
path = sys.argv[-1]
obj = json.load(open(path))
pod = obj["spec"]["template"]["spec"]
pod["containers"][0]["env"] = [{"name": "LEVEL", "value": "3"}]
pod["volumes"][1] = {"name": "scratch", "hostPath": {"path": "/srv"}}
json.dump(obj, open(path, "w"))
"""


def test_kubectl_edit_adding_keys_git_does_not_have_is_reported_and_proposed(
        applied: tuple[Path, Path, Path], namespace: str, tmp_path: Path) -> None:
    work, bare, admin = applied
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR)
    kubectl(admin, "edit", "-n", namespace, "deployment/web", "-o", "json", editor=editor)
    code, found = _drifts(work, admin)
    assert code == 1
    assert found == {
        "spec.template.spec.containers[0].env": ("added", "kubectl-edit", "write"),
        "spec.template.spec.volumes[1].hostPath": ("added", "kubectl-edit", "write"),
    }
    want = parse_documents(DEPLOY, "web.yaml")[0]
    want["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "LEVEL", "value": "3"}]
    want["spec"]["template"]["spec"]["volumes"][1]["hostPath"] = {"path": "/srv", "type": ""}
    assert _proposed(work, bare, admin, tmp_path) == want
