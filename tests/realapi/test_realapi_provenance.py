"""What managedFields really record on the real kube-apiserver, and what syncer says from them.

* A manager's entry has one ``time``, moved only when that manager's set of fields changes: a
  second ``kubectl patch`` of the same field keeps the first patch's time (the sidecar's watch
  supplies the field's own time: tests/test_provenance.py).
* ``kubectl scale`` on v1.20 leaves ``spec.replicas`` owned by ``kubectl-client-side-apply`` at
  the apply's time: syncer names no manager there and says "attribution uncertain".
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

from syncer.cli import main

from .cluster import RealCluster
from .tools import kubectl, require_tool


def entries(admin: Path, kind: str, name: str, ns: str) -> dict[str, dict[str, Any]]:
    obj = json.loads(kubectl(admin, "get", kind, name, "-n", ns, "-o", "json", "--show-managed-fields"))
    return {e["manager"]: e for e in obj["metadata"]["managedFields"]}


def test_managed_fields_times_and_scale_on_the_real_server(real_cluster: RealCluster, tmp_path: Path) -> None:
    require_tool("kubectl")
    ns = real_cluster.create_namespace("prov")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=ns)
    host = tmp_path / "repo" / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text(f"installation: t\nnamespace: {ns}\ntrack:\n  ConfigMap: writeback\n"
                                      "  Deployment: writeback\n")
    (host / "cm.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: {ns}\n"
                                  "data:\n  A: '1'\n  B: '1'\n")
    (host / "web.yaml").write_text(f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {ns}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.25
""")
    kubectl(admin, "apply", "-f", str(host / "cm.yaml"), "-f", str(host / "web.yaml"))

    kubectl(admin, "patch", "configmap", "c", "-n", ns, "--type=merge", "-p", '{"data":{"A":"2"}}')
    first = entries(admin, "configmap", "c", ns)["kubectl-patch"]["time"]
    time.sleep(1.5)
    kubectl(admin, "patch", "configmap", "c", "-n", ns, "--type=merge", "-p", '{"data":{"A":"3"}}')
    assert entries(admin, "configmap", "c", ns)["kubectl-patch"]["time"] == first  # the second patch: no new time
    time.sleep(1.5)
    kubectl(admin, "patch", "configmap", "c", "-n", ns, "--type=merge", "-p", '{"data":{"B":"2"}}')
    assert entries(admin, "configmap", "c", ns)["kubectl-patch"]["time"] > first  # its field set grew: a new time

    kubectl(admin, "scale", "deployment", "web", "-n", ns, "--replicas=3")
    owners = entries(admin, "deployment", "web", ns)
    assert list(owners) == ["kubectl-client-side-apply"] and "f:replicas" in owners[
        "kubectl-client-side-apply"]["fieldsV1"]["f:spec"]

    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", "t", "--repo", str(tmp_path / "repo"), "--kubeconfig", str(admin), "-o", "json"],
                stdout=out, stderr=err)
    assert code == 1, out.getvalue() + err.getvalue()
    drifts = {(d["kind"], d["path"]): d for d in json.loads(out.getvalue())["drifts"]}
    replicas = drifts[("Deployment", "spec.replicas")]
    assert (replicas["live"], replicas["manager"], replicas["attribution"], replicas["direction"]) == (
        3, None, "uncertain", "cluster")
    assert drifts[("ConfigMap", "data.A")]["manager"] == "kubectl-patch"
    assert "attribution" not in drifts[("ConfigMap", "data.A")]
