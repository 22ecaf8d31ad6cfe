"""Objects created live and never committed (issue 26), on the real kube-apiserver with the real
kubectl: ``kubectl create configmap``, ``create secret``, ``create service`` next to what the
system and controllers make (a root-CA ConfigMap, the ``default`` ServiceAccount and its token
Secret, a Helm release record, the Endpoints of a selector Service, a ConfigMap with an owner
reference, syncer's own state record). The test cluster runs no controller-manager, so those are
made here with kubectl, shaped as the controllers make them.

``untracked: report`` lists exactly the person-made objects (a Secret by name, its value never
shown); ``propose`` commits files that ``kubectl apply --dry-run=server`` accepts, after which
``diff`` is in sync.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .cluster import RealCluster
from .tools import kubectl, require_tool, syncer_later

pytestmark = pytest.mark.realapi

SECRET_VALUE = "hunter2-not-for-git"

GIT_CM = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config   # in git
data:
  MODE: fast
---
apiVersion: v1
kind: Service
metadata:
  name: web   # in git; its Endpoints are the endpoints controller's
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""

SYSTEM_MADE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-root-ca.crt
data:
  ca.crt: "-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n"
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: default
---
apiVersion: v1
kind: Secret
metadata:
  name: default-token-abcde
  annotations:
    kubernetes.io/service-account.name: default
type: kubernetes.io/service-account-token
---
apiVersion: v1
kind: Secret
metadata:
  name: sh.helm.release.v1.web.v1
  labels: {owner: helm, name: web, version: "1"}
type: helm.sh/release.v1
data:
  release: SDRzSUFBQUFBQUFBLw==
---
apiVersion: v1
kind: Endpoints
metadata:
  name: web
subsets:
  - addresses: [{ip: 10.0.0.7}]
    ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-7d4b9c-config
  ownerReferences:
    - apiVersion: apps/v1
      kind: ReplicaSet
      name: web-7d4b9c
      uid: 2b1f1c1e-0000-4000-8000-000000000001
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: syncer-state
  labels: {app.kubernetes.io/managed-by: syncer, app.kubernetes.io/component: state}
data: {}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: scratch-notes
  labels: {syncer.io/ignore: "yes"}
data: {note: ignored by a label rule}
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def _installation(tmp_path: Path, namespace: str, mode: str) -> tuple[Path, Path]:
    work, bare = tmp_path / "work", tmp_path / "origin.git"
    host = work / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text(
        f"installation: t\nnamespace: {namespace}\ntrack:\n  ConfigMap: writeback\n  Service: report\n"
        f"untracked: {mode}\nignore:\n  - kind: ConfigMap\n    labels: {{syncer.io/ignore: \"yes\"}}\n")
    (host / "app-config.yaml").write_text(GIT_CM)
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "t")
    _git(work, "remote", "add", "origin", str(bare))
    _git(work, "push", "-q", "origin", "main")
    return work, bare


@pytest.fixture
def cluster_state(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> Path:
    """git's ConfigMap applied; the system-made objects; three objects a person made live."""
    require_tool("kubectl")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    (tmp_path / "git-cm.yaml").write_text(GIT_CM)
    kubectl(admin, "apply", "-n", namespace, "-f", str(tmp_path / "git-cm.yaml"))
    (tmp_path / "system.yaml").write_text(SYSTEM_MADE)
    kubectl(admin, "create", "-n", namespace, "-f", str(tmp_path / "system.yaml"))
    kubectl(admin, "create", "configmap", "feature-flags", "-n", namespace, "--from-literal=NEW_UI=on",
            "--from-literal=BETA=off")
    kubectl(admin, "create", "secret", "generic", "db-creds", "-n", namespace,
            f"--from-literal=password={SECRET_VALUE}")
    kubectl(admin, "create", "service", "clusterip", "incident-proxy", "-n", namespace, "--tcp=8080:8080")
    return admin


def _untracked(out: str) -> dict[str, dict[str, object]]:
    doc = json.loads(out)
    return {f"{d['kind']}/{d['name']}": d for d in doc["drifts"] if d["class"] == "untracked"}


def test_report_lists_exactly_the_objects_a_person_created(cluster_state: Path, namespace: str,
                                                           tmp_path: Path) -> None:
    work, _ = _installation(tmp_path, namespace, "report")
    code, out = syncer_later("diff", "t", "--repo", str(work), "--kubeconfig", str(cluster_state), "-o", "json")
    assert code == 1, out
    found = _untracked(out)
    assert sorted(found) == ["ConfigMap/feature-flags", "Secret/db-creds", "Service/incident-proxy"]
    flags = found["ConfigMap/feature-flags"]
    assert flags["path"] == "" and flags["file"] is None and flags["action"] == "report"
    assert flags["manager"] == "kubectl-create" and flags["changed_at"]
    assert "no owner, created by kubectl-create at" in str(flags["reason"])
    assert not isinstance(found["Secret/db-creds"]["live"], dict)  # shown as "—", never its data
    assert SECRET_VALUE not in out and "aHVudGVyMi" not in out  # nor its base64
    code, text = syncer_later("diff", "t", "--repo", str(work), "--kubeconfig", str(cluster_state))
    assert SECRET_VALUE not in text and "feature-flags" in text and "untracked" in text


def test_propose_commits_clean_files_that_apply_and_then_diff_is_in_sync(cluster_state: Path, namespace: str,
                                                                        tmp_path: Path) -> None:
    work, bare = _installation(tmp_path, namespace, "propose")
    code, out = syncer_later("sync", "t", "--repo", str(work), "--kubeconfig", str(cluster_state),
                             "--mode", "commit")
    assert code == 0, out
    check = tmp_path / "check"
    _git(tmp_path, "clone", "-q", str(bare), str(check))
    proposed = sorted(p.relative_to(check).as_posix() for p in (check / "hosts/t/untracked").rglob("*.yaml"))
    assert proposed == [f"hosts/t/untracked/{namespace}/configmap-feature-flags.yaml",
                        f"hosts/t/untracked/{namespace}/service-incident-proxy.yaml"]  # never the Secret
    text = (check / proposed[1]).read_text()
    for server_field in ("uid:", "resourceVersion", "creationTimestamp", "managedFields", "clusterIP", "status"):
        assert server_field not in text, text
    message = _git(check, "log", "-1", "--format=%B")
    assert "created live, not in git" in message and "db-creds" not in message
    for path in proposed:
        kubectl(cluster_state, "apply", "--dry-run=server", "-n", namespace, "-f", str(check / path))
    # The next diff, on the pushed repository, finds everything in sync but the Secret (reported).
    code, out = syncer_later("diff", "t", "--repo", str(check), "--kubeconfig", str(cluster_state), "-o", "json")
    doc = json.loads(out)
    assert [f"{d['kind']}/{d['name']}" for d in doc["drifts"]] == ["Secret/db-creds"], out
    assert doc["errors"] == []
