"""Live edits syncer used to miss or read backwards (issue 20), each made by the real kubectl (and
helm) against the real kube-apiserver v1.20:

* ``kubectl annotate`` on a Deployment and a ClusterRole whose manifests have no ``annotations:``;
* ``kubectl apply --server-side --force-conflicts --field-manager=hotfix-team``: a live edit
  (direction cluster), not an applier's apply; the PDB ``spec.selector`` it drops is really gone;
* ``syncer init`` takes kubectl's namespace (the kubeconfig context's), not the one 2 of 8
  manifests name;
* a Helm chart's source beside the rendered manifests: one note, exit 0;
* a snapshot of an HPA in another version than git's: one note naming the export command.
"""

from __future__ import annotations

import io
import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from syncer.cli import main
from syncer.config import CONFIG_NAME, load_config

from .test_realapi_who_moved import Kube, git, kube, repo_with  # noqa: F401  (kube: the fixture)
from .tools import kubectl, require_tool

pytestmark = pytest.mark.realapi


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), now=datetime.now(timezone.utc), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def diff_json(repo: Path, kubeconfig: Path) -> tuple[int, dict[str, Any]]:
    code, out, err = run("diff", "demo", "--repo", str(repo), "--kubeconfig", str(kubeconfig), "-o", "json")
    assert err == "", err
    return code, dict(json.loads(out))


def by_path(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["path"]): d for d in doc["drifts"]}


DEPLOY_AND_ROLE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
  labels: {app: x}
spec:
  replicas: 1
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: app
          image: nginx:1.27
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {role}
rules: []  # nothing yet
"""


def test_annotations_added_live_are_reported_and_written_as_a_new_map(kube: Kube, tmp_path: Path) -> None:
    role = f"{kube.namespace}-reader"
    work = repo_with(tmp_path, {"app.yaml": DEPLOY_AND_ROLE.replace("{role}", role)},
                     f"installation: demo\nnamespace: {kube.namespace}\ntrack:\n  Deployment: writeback\n"
                     "  ClusterRole: writeback\n")
    kube.kubectl("apply", "-f", str(work / "hosts" / "demo" / "app.yaml"))
    assert diff_json(work, kube.kubeconfig)[0] == 0
    kube.kubectl("annotate", "deployment/x", "team=qa")
    kube.kubectl("annotate", f"clusterrole/{role}", "team=qa")
    code, doc = diff_json(work, kube.kubeconfig)
    found = by_path(doc)
    assert code == 1 and doc["errors"] == []
    for kind in ("Deployment", "ClusterRole"):
        d = found[(kind, "metadata.annotations.team")]
        assert (d["class"], d["live"], d["direction"], d["manager"], d["action"]) == (
            "added", "qa", "cluster", "kubectl-annotate", "write")
    # Written as a new `annotations:` map; comments and the rest of the file untouched.
    code, out, err = run("sync", "demo", "--repo", str(work), "--kubeconfig", str(kube.kubeconfig), "--mode", "dry-run")
    assert (code, err) == (0, ""), out
    assert " metadata:\n   name: x\n   labels: {app: x}\n+  annotations:\n+    team: qa\n spec:\n" in out
    assert f" metadata:\n   name: {role}\n+  annotations:\n+    team: qa\n rules: []  # nothing yet\n" in out


PDB = """\
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: pdb
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: x}
"""

HOTFIX = "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb\nspec:\n  minAvailable: 2\n"


def test_a_server_side_apply_by_another_manager_is_a_live_edit(kube: Kube, tmp_path: Path) -> None:
    work = repo_with(tmp_path, {"pdb.yaml": PDB},
                     f"installation: demo\nnamespace: {kube.namespace}\ntrack:\n  PodDisruptionBudget: writeback\n")
    kube.kubectl("apply", "-f", str(work / "hosts" / "demo" / "pdb.yaml"))
    assert diff_json(work, kube.kubeconfig)[0] == 0
    hotfix = tmp_path / "hotfix.yaml"
    hotfix.write_text(HOTFIX)
    kube.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=hotfix-team", "-f", str(hotfix))
    live = json.loads(kube.kubectl("get", "pdb/pdb", "-o", "json", "--show-managed-fields"))
    # The selector really is gone: kubectl >= 1.26 hands the client-side applier's fields (and
    # its last-applied annotation) to the new manager before applying, so a manifest without
    # the selector drops it. Not a comparison artefact of policy/v1beta1 on v1.20.
    assert "selector" not in live["spec"]
    assert [(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]] == [("hotfix-team", "Apply")]
    code, doc = diff_json(work, kube.kubeconfig)
    found = by_path(doc)
    d = found[("PodDisruptionBudget", "spec.minAvailable")]
    assert (d["git"], d["live"], d["direction"], d["manager"], d["base"], d["action"]) == (
        1, 2, "cluster", "hotfix-team", "ownership", "write")
    assert "not an applier" in d["base_why"]
    gone = found[("PodDisruptionBudget", "spec.selector")]
    assert (gone["class"], gone["action"]) == ("removed", "report")  # never deleted from git
    # The same apply by kubectl's own manager is an applier's: git's pending change.
    kube.kubectl("apply", "-f", str(work / "hosts" / "demo" / "pdb.yaml"), "--server-side", "--force-conflicts")
    (work / "hosts" / "demo" / "pdb.yaml").write_text(PDB.replace("minAvailable: 1", "minAvailable: 3"))
    git(work, "commit", "-qam", "three")
    d = by_path(diff_json(work, kube.kubeconfig)[1])[("PodDisruptionBudget", "spec.minAvailable")]
    assert (d["git"], d["live"], d["direction"], d["manager"]) == (3, 1, "git", "kubectl")
    # With `appliers` naming hotfix-team, its apply writes git again.
    conf = work / "hosts" / "demo" / CONFIG_NAME
    conf.write_text(conf.read_text() + "appliers: [kubectl, kubectl-client-side-apply, hotfix-team]\n")
    kube.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=hotfix-team", "-f", str(hotfix))
    d = by_path(diff_json(work, kube.kubeconfig)[1])[("PodDisruptionBudget", "spec.minAvailable")]
    assert (d["live"], d["direction"], d["manager"]) == (2, "git", "hotfix-team")


def test_init_takes_kubectls_namespace_not_the_one_a_few_manifests_name(kube: Kube, tmp_path: Path) -> None:
    files = {f"cm{i}.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i}\ndata:\n  k: v{i}\n"
             for i in range(6)}
    files.update({f"sys{i}.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sys{i}\n"
                                  f"  namespace: {kube.namespace}-sys\ndata:\n  k: s{i}\n" for i in range(2)})
    work = repo_with(tmp_path, files, "installation: demo\n")
    (work / "hosts" / "demo" / CONFIG_NAME).unlink()
    kube.kubectl("create", "namespace", f"{kube.namespace}-sys")
    # As a person runs it: no -n, the context's namespace takes the six that name none.
    kubectl(kube.kubeconfig, "apply", "-f", str(work / "hosts" / "demo"))
    code, out, err = run("init", "demo", "--repo", str(work), "--kubeconfig", str(kube.kubeconfig))
    assert (code, err) == (0, ""), out
    assert (f"namespace {kube.namespace}: the namespace of kubeconfig context realapi, as kubectl apply would use "
            f"(6 manifests name none; others name their own: {kube.namespace}-sys (2))") in out
    assert load_config(work / "hosts" / "demo", "demo").namespace == kube.namespace
    code, doc = diff_json(work, kube.kubeconfig)
    assert (code, doc["drifts"], doc["errors"]) == (0, [], [])
    # From a snapshot alone (another context), the namespace its objects are in informs it.
    snap = tmp_path / "live.yaml"
    snap.write_text(kube.kubectl("get", "configmaps", "-o", "yaml", "--show-managed-fields"))
    code, out, err = run("init", "demo", "--repo", str(work), "--live-file", str(snap), "--force",
                         "--kubeconfig", str(tmp_path / "none.kubeconfig"))
    assert code == 0 and f"namespace {kube.namespace}: the live snapshot holds 6 of the 6 manifests naming none" in out
    # -n wins.
    code, out, _ = run("init", "demo", "--repo", str(work), "--git-only", "--force", "-n", "elsewhere")
    assert code == 0 and "namespace elsewhere: given with -n" in out


def test_a_chart_source_beside_its_rendered_manifests_is_one_note(kube: Kube, tmp_path: Path) -> None:
    helm = require_tool("helm")
    work = repo_with(tmp_path, {}, "installation: demo\ntrack:\n  Deployment: writeback\n  Service: writeback\n"
                                   "  ServiceAccount: writeback\n")
    host = work / "hosts" / "demo"
    subprocess.run([helm, "create", str(host / "web")], check=True, capture_output=True, timeout=60)
    rendered = subprocess.run([helm, "template", "web", str(host / "web"), "--skip-tests", "-n", kube.namespace],
                              check=True, capture_output=True, text=True, timeout=60).stdout
    (host / "rendered.yaml").write_text(rendered)
    (host / "values-prod.yaml").write_text("replicaCount: 2\nimage:\n  tag: '1.27'\n")  # not an object
    conf = host / CONFIG_NAME
    conf.write_text(conf.read_text() + f"namespace: {kube.namespace}\n")
    git(work, "add", ".")
    git(work, "commit", "-qm", "chart")
    kube.helm("install", "web", str(host / "web"))
    code, out, err = run("diff", "demo", "--repo", str(work), "--kubeconfig", str(kube.kubeconfig))
    assert (code, err) == (0, ""), out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: hosts/demo/web/: a Helm chart's source (Chart.yaml, "
        f"{len(list(p for p in (host / 'web').rglob('*') if p.suffix in ('.yaml', '.yml')))} files): "
        "skipped; syncer compares rendered manifests and never edits templates",
        "note: hosts/demo/values-prod.yaml: not a Kubernetes object (no document has apiVersion or kind): skipped"]
    assert "error" not in out
    # A live edit of a rendered object is still found, and sync exits 0.
    kube.kubectl("label", "deployment/web", "tier=front")
    code, out, err = run("sync", "demo", "--repo", str(work), "--kubeconfig", str(kube.kubeconfig), "--mode", "dry-run")
    assert (code, err) == (0, "") and "metadata.labels.tier: added: front" in out and "+    tier: front" in out
    # A genuinely malformed manifest stays an error.
    (host / "broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b\n")
    code, out, _ = run("diff", "demo", "--repo", str(work), "--kubeconfig", str(kube.kubeconfig))
    assert code == 2 and "error: hosts/demo/broken.yaml" in out


HPA = """\
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 3
  targetCPUUtilizationPercentage: 80
"""


def test_a_snapshot_in_another_version_is_one_note_naming_the_export(kube: Kube, tmp_path: Path) -> None:
    work = repo_with(tmp_path, {"hpa.yaml": HPA},
                     f"installation: demo\nnamespace: {kube.namespace}\ntrack:\n  HorizontalPodAutoscaler: writeback\n")
    kube.kubectl("apply", "-f", str(work / "hosts" / "demo" / "hpa.yaml"))
    snap = tmp_path / "v2.yaml"  # v1.20 serves v2beta2 (autoscaling/v2 came in v1.23)
    snap.write_text(kube.kubectl("get", "horizontalpodautoscalers.v2beta2.autoscaling", "web", "-o", "yaml",
                                 "--show-managed-fields"))
    code, out, err = run("diff", "demo", "--repo", str(work), "--live-file", str(snap))
    export = (f"kubectl get horizontalpodautoscalers.v1.autoscaling web -n {kube.namespace} -o yaml "
              "--show-managed-fields")
    assert (code, err) == (0, ""), out
    assert out.splitlines()[1:] == [
        f"note: HorizontalPodAutoscaler/{kube.namespace}/web not compared: the snapshot holds it as "
        f"autoscaling/v2beta2, git declares autoscaling/v1; export it in git's version: {export}"]
    # The command it names gives a snapshot that compares: in sync.
    snap.write_text(kube.kubectl(*export.split()[1:]))
    code, out, _ = run("diff", "demo", "--repo", str(work), "--live-file", str(snap))
    assert code == 0 and "in sync" in out and "note:" not in out


PORTED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
        - name: api
          image: nginx:1.27
          env:
            - name: LOG_LEVEL
              value: info
          ports:
            - containerPort: 8080
"""


def test_a_key_changed_live_is_one_value_not_an_item_removed_and_one_added(kube: Kube, tmp_path: Path) -> None:
    """The API keys container ports by (containerPort, protocol) and env by name: a port changed by
    ``kubectl patch`` and an env var renamed in ``kubectl edit`` read as an item removed plus one
    added (the new item's defaulted ``protocol: TCP`` owned by kubectl-patch). Written so, git kept
    the old port beside the new one. Now each is one change of the key, written on its own line."""
    work = repo_with(tmp_path, {"api.yaml": PORTED},
                     f"installation: demo\nnamespace: {kube.namespace}\ntrack:\n  Deployment: writeback\n")
    kube.kubectl("apply", "-f", str(work / "hosts" / "demo" / "api.yaml"))
    assert diff_json(work, kube.kubeconfig)[0] == 0
    kube.kubectl("patch", "deployment/api", "--type", "json", "-p",
                 '[{"op":"replace","path":"/spec/template/spec/containers/0/ports/0/containerPort","value":8081}]')
    kube.edit("deployment/api", "s/name: LOG_LEVEL/name: LOGLEVEL/")
    code, doc = diff_json(work, kube.kubeconfig)
    assert (code, doc["errors"]) == (1, [])
    c0 = "spec.template.spec.containers[0]"
    found = by_path(doc)
    assert sorted(p for _, p in found) == [f"{c0}.env[0].name", f"{c0}.ports[0].containerPort"]
    port, env = found[("Deployment", f"{c0}.ports[0].containerPort")], found[("Deployment", f"{c0}.env[0].name")]
    assert (port["git"], port["live"], port["direction"], port["manager"], port["action"]) == (
        8080, 8081, "cluster", "kubectl-patch", "write")
    assert (env["git"], env["live"], env["direction"], env["manager"], env["action"]) == (
        "LOG_LEVEL", "LOGLEVEL", "cluster", "kubectl-edit", "write")
    code, out, err = run("sync", "demo", "--repo", str(work), "--kubeconfig", str(kube.kubeconfig), "--mode", "dry-run")
    assert (code, err) == (0, ""), out
    assert "-            - name: LOG_LEVEL\n+            - name: LOGLEVEL\n" in out
    assert "-            - containerPort: 8080\n+            - containerPort: 8081\n" in out
    assert "protocol" not in out
