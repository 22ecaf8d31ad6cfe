"""Compare as Kubernetes does, on objects the real tools make: ``kubectl apply`` of manifests a
person writes (``1000m``, ``1Gi``, ``defaultMode: 0755``, ``readOnly: false``, ``stringData``, a
namespace on a ClusterRole, a LimitRange's and an HPA's quantities) to the real kube-apiserver is
no drift; ``kubectl set env`` adds an env var live, which syncer reports as ``added`` by
``kubectl-set`` and proposes whole; the tolerations admission adds on ``kubectl apply`` of a Pod
are reported, never written.

Without kubectl on PATH these tests skip with the reason (CI installs it and runs them).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

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
      containers:
        - name: app
          image: nginx:1.27  # pinned
          env:
            - name: MODE
              value: ""
          ports:
            - containerPort: 8080
          resources:
            requests:
              cpu: 1000m
              memory: 1Gi
            limits:
              cpu: "1.5"
              memory: 1536Mi
          volumeMounts:
            - name: conf
              mountPath: /etc/web
              readOnly: false
      volumes:
        - name: conf
          configMap:
            name: web
            defaultMode: 0755
---
apiVersion: v1
kind: Secret
metadata:
  name: web
stringData:
  user: admin
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {role}
  namespace: {ns}
rules: []
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
    - port: 80
      targetPort: 8080
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def applied(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> tuple[Path, Path, Path]:
    """hosts/t with the manifests above, committed, pushed to a bare origin, applied with kubectl."""
    require_tool("kubectl")
    work, bare = tmp_path / "work", tmp_path / "origin.git"
    host = work / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text(f"installation: t\nnamespace: {namespace}\ntrack:\n  Deployment: writeback\n"
                                      "  Secret: writeback\n  ClusterRole: writeback\n  Service: writeback\n")
    (host / "web.yaml").write_text(DEPLOY.replace("{role}", f"{namespace}-reader").replace("{ns}", namespace))
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "web")
    _git(work, "remote", "add", "origin", str(bare))
    _git(work, "push", "-q", "origin", "main")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl(admin, "apply", "-n", namespace, "-f", str(host / "web.yaml"))
    return work, bare, admin


def test_kubectl_applied_manifests_compare_equal(applied: tuple[Path, Path, Path], namespace: str) -> None:
    work, _, admin = applied
    stored = json.loads(kubectl(admin, "get", "-n", namespace, "deployment", "web", "-o", "json"))
    container = stored["spec"]["template"]["spec"]["containers"][0]
    # What the server made of it: the spelling differs, the values do not.
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert stored["spec"]["template"]["spec"]["volumes"][0]["configMap"]["defaultMode"] == 493
    assert "readOnly" not in container["volumeMounts"][0]
    code, out = syncer_later("diff", "t", "--repo", str(work), "--kubeconfig", str(admin))
    assert code == 0, out


def test_an_env_var_set_live_with_kubectl_is_proposed_whole(applied: tuple[Path, Path, Path], namespace: str,
                                                              tmp_path: Path) -> None:
    work, bare, admin = applied
    kubectl(admin, "set", "env", "-n", namespace, "deployment/web", "LEVEL=3")
    code, out = syncer_later("diff", "t", "--repo", str(work), "--kubeconfig", str(admin), "-o", "json")
    drifts = json.loads(out)["drifts"]
    assert [(d["path"], d["class"], d["manager"], d["action"]) for d in drifts] == [
        ("spec.template.spec.containers[0].env[1]", "added", "kubectl-set", "write")]
    code, out = syncer_later("sync", "t", "--repo", str(work), "--kubeconfig", str(admin), "--mode", "pr", "--forge",
                        "none", "--remote", str(bare), "--clone-dir", str(tmp_path / "clone"))
    assert code == 0, out
    proposed = _git(bare, "show", "syncer/t:hosts/t/web.yaml")
    before = parse_documents((work / "hosts" / "t" / "web.yaml").read_text(), "web.yaml")
    before[0]["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "LEVEL", "value": "3"})
    assert parse_documents(proposed, "web.yaml") == before
    assert "image: nginx:1.27  # pinned" in proposed and "defaultMode: 0755" in proposed


QUANTITIES = """\
apiVersion: v1
kind: LimitRange
metadata:
  name: limits
spec:
  limits:
    - type: Container
      default:
        cpu: 1000m
        memory: 1024Mi
      defaultRequest:
        cpu: 500m
        ephemeral-storage: 2048Mi
      max:
        cpu: "2.0"
        memory: 2048Mi
      min:
        cpu: 0.1
      maxLimitRequestRatio:
        cpu: "2.0"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: quota
spec:
  hard:
    requests.cpu: 4000m
    requests.storage: 10240Mi
---
apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 3
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: AverageValue, averageValue: 1000m}
    - type: Pods
      pods:
        metric: {name: qps}
        target: {type: AverageValue, averageValue: 1500m}
    - type: Object
      object:
        metric: {name: hits}
        describedObject: {apiVersion: v1, kind: Service, name: web}
        target: {type: Value, value: 2048Mi}
    - type: External
      external:
        metric: {name: queue}
        target: {type: Value, value: "10.0"}
---
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata:
  name: old
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics:
    - type: Resource
      resource: {name: memory, targetAverageValue: 1024Mi}
    - type: Pods
      pods: {metricName: qps, targetAverageValue: 1500m}
    - type: Object
      object:
        metricName: hits
        target: {apiVersion: v1, kind: Service, name: web}
        targetValue: 2000m
    - type: External
      external: {metricName: queue, targetAverageValue: "10.0"}
"""


def test_quantities_the_server_respells_are_no_drift_and_commit_writes_nothing(
        real_cluster: RealCluster, namespace: str, tmp_path: Path) -> None:
    """A plain ``kubectl apply`` of a LimitRange, a ResourceQuota and HPAs (v2beta2 targets, v2beta1
    target values): the server stores ``1``, ``1Gi``, ``2`` for ``1000m``, ``1024Mi``, ``"2.0"``."""
    require_tool("kubectl")
    work, bare = tmp_path / "work", tmp_path / "origin.git"
    host = work / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text(f"installation: t\nnamespace: {namespace}\ntrack:\n  LimitRange: writeback\n"
                                      "  ResourceQuota: writeback\n  HorizontalPodAutoscaler: writeback\n")
    (host / "q.yaml").write_text(QUANTITIES)
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "quantities")
    _git(work, "remote", "add", "origin", str(bare))
    _git(work, "push", "-q", "origin", "main")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl(admin, "apply", "-n", namespace, "-f", str(host / "q.yaml"))
    stored = json.loads(kubectl(admin, "get", "-n", namespace, "limitrange", "limits", "-o", "json"))
    limit = stored["spec"]["limits"][0]
    assert (limit["default"], limit["max"], limit["maxLimitRequestRatio"]) == (
        {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"}, {"cpu": "2"})
    hpa = json.loads(kubectl(admin, "get", "-n", namespace, "horizontalpodautoscalers.v2beta2.autoscaling", "web",
                              "-o", "json"))
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageValue"] == "1"
    code, out = syncer_later("diff", "t", "--repo", str(work), "--kubeconfig", str(admin))
    assert code == 0, out
    code, out = syncer_later("sync", "t", "--repo", str(work), "--kubeconfig", str(admin), "--mode", "commit",
                        "--remote", str(bare), "--clone-dir", str(tmp_path / "clone"))
    assert code == 0, out
    assert _git(bare, "rev-list", "--count", "main") == "1"  # nothing committed
    # A real change of a quantity is still one: the cluster's 3 CPUs against git's "2.0".
    kubectl(admin, "patch", "-n", namespace, "limitrange", "limits", "--type", "json", "-p",
             '[{"op": "replace", "path": "/spec/limits/0/max/cpu", "value": "3"}]')
    code, out = syncer_later("diff", "t", "--repo", str(work), "--kubeconfig", str(admin), "-o", "json")
    assert [(d["path"], d["git"], d["live"]) for d in json.loads(out)["drifts"]] == [
        ("spec.limits[0].max.cpu", "2.0", "3")]


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  automountServiceAccountToken: false
  containers:
    - name: app
      image: nginx:1.27
  tolerations:
    - key: dedicated
      operator: Exists
"""


def test_default_tolerations_admission_adds_on_kubectl_apply_are_never_written(
        real_cluster: RealCluster, namespace: str, tmp_path: Path) -> None:
    """``kubectl apply`` of a Pod: the DefaultTolerationSeconds admission plugin adds the
    not-ready/unreachable tolerations, which the server records under the request's manager
    (``kubectl-client-side-apply``). They are reported, never committed."""
    require_tool("kubectl")
    work, bare = tmp_path / "work", tmp_path / "origin.git"
    host = work / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text(f"installation: t\nnamespace: {namespace}\ntrack:\n  Pod: writeback\n")
    (host / "p.yaml").write_text(POD)
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "pod")
    _git(work, "remote", "add", "origin", str(bare))
    _git(work, "push", "-q", "origin", "main")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl(admin, "create", "-n", namespace, "serviceaccount", "default")  # no controller-manager makes it
    kubectl(admin, "apply", "-n", namespace, "-f", str(host / "p.yaml"))
    stored = json.loads(kubectl(admin, "get", "-n", namespace, "pod", "p", "-o", "json"))
    assert [t["key"] for t in stored["spec"]["tolerations"]] == [
        "dedicated", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    code, out = syncer_later("diff", "t", "--repo", str(work), "--kubeconfig", str(admin), "-o", "json")
    drifts = json.loads(out)["drifts"]
    assert sorted((d["path"], d["class"], d["manager"], d["action"]) for d in drifts) == [
        ("spec.tolerations[1]", "added", "kubectl-client-side-apply", "report"),
        ("spec.tolerations[2]", "added", "kubectl-client-side-apply", "report")], out
    code, out = syncer_later("sync", "t", "--repo", str(work), "--kubeconfig", str(admin), "--mode", "commit",
                        "--remote", str(bare), "--clone-dir", str(tmp_path / "clone"))
    assert _git(bare, "rev-list", "--count", "main") == "1", out  # nothing committed
