"""Who moved, decided from what the real API server records after a real kubectl (and helm).

kubectl v1.32 and helm come from the PyPI wheel `.ci/helm.sh` installs into /usr/local/bin
(never /usr/bin/kubectl, the gcloud dispatcher: ``tools.require_tool`` refuses it, and skips
with the reason when a tool is absent). Every change below is made by the tool a
person would use; syncer then reads the objects back through the API and must name the side
that moved, the manager and the time the server recorded.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from syncer.cli import main
from syncer.config import CONFIG_NAME

from .cluster import RealCluster
from .tools import require_tool

pytestmark = pytest.mark.realapi

ROOT = Path(__file__).resolve().parents[2]
TOOL_TIMEOUT_S = 120
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


class Kube:
    """kubectl and helm against the test namespace, as a person runs them."""

    def __init__(self, kubeconfig: Path, namespace: str, tmp: Path) -> None:
        self.kubeconfig, self.namespace, self.tmp = kubeconfig, namespace, tmp

    def _run(self, exe: str, args: list[str], editor: str | None = None) -> str:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(self.tmp)}
        if editor is not None:
            env["KUBE_EDITOR"] = editor
        proc = subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                              check=False)
        assert proc.returncode == 0, f"{Path(exe).name} {' '.join(args)}: {proc.stderr.strip()}"
        return proc.stdout

    def kubectl(self, *args: str, editor: str | None = None) -> str:
        return self._run(require_tool("kubectl"), ["-n", self.namespace, *args], editor)

    def helm(self, *args: str) -> str:
        return self._run(require_tool("helm"), [*args, "--namespace", self.namespace, "--kubeconfig", str(self.kubeconfig)])

    def edit(self, what: str, sed: str) -> None:
        """``kubectl edit`` with an editor that runs one sed expression on the buffer."""
        script = self.tmp / f"editor-{len(list(self.tmp.glob('editor-*')))}.sh"
        script.write_text(f"#!/bin/sh\nexec sed -i '{sed}' \"$1\"\n")
        script.chmod(0o755)
        self.kubectl("edit", what, editor=str(script))

    def get(self, what: str) -> dict[str, Any]:
        return dict(json.loads(self.kubectl("get", what, "-o", "json")))

    def time_of(self, what: str, manager: str) -> str:
        """When the server says ``manager`` last wrote ``what``."""
        live = json.loads(self.kubectl("get", what, "-o", "json", "--show-managed-fields"))
        entries = live["metadata"]["managedFields"]
        [when] = [e["time"] for e in entries if e["manager"] == manager]
        return str(when)


def repo_with(tmp_path: Path, files: dict[str, str], config: str) -> Path:
    work = tmp_path / "work"
    host = work / "hosts" / "demo"
    host.mkdir(parents=True)
    (host / CONFIG_NAME).write_text(config)
    for name, text in files.items():
        (host / name).write_text(text)
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", "manifests")
    return work


def diff(repo: Path, kubeconfig: Path, installation: str = "demo", now: datetime | None = None) -> list[dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", installation, "--repo", str(repo), "--kubeconfig", str(kubeconfig), "-o", "json"],
                now=now or datetime.now(timezone.utc), stdout=out, stderr=err)
    assert err.getvalue() == "" and code in (0, 1), (code, err.getvalue(), out.getvalue())
    doc = json.loads(out.getvalue())
    assert doc["errors"] == []
    return list(doc["drifts"])


def seen(drifts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((d["kind"], d["name"], d["path"], d["class"], d["direction"], d["manager"], d["action"])
                  for d in drifts)


@pytest.fixture
def kube(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> Kube:
    require_tool("kubectl")  # skips (CI: fails) with the reason when it is absent
    return Kube(real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace), namespace, tmp_path)


# -- the asgard scenario of issue #11 ------------------------------------------------------

SECRET = """apiVersion: v1
kind: Secret
metadata:
  name: ollama-token
  namespace: ai
type: Opaque
stringData:
  token: not-a-real-token
"""


@pytest.mark.parametrize("replace_everywhere", [True, False], ids=["search-and-replace", "one-line-edit"])
def test_asgard_applied_then_edited_gives_exactly_the_two_real_drifts(
        kube: Kube, tmp_path: Path, replace_everywhere: bool) -> None:
    work = tmp_path / "work"
    shutil.copytree(ROOT / "hosts" / "asgard", work / "hosts" / "asgard")
    (work / "hosts" / "asgard" / "ollama-token.yaml").write_text(SECRET)  # stringData, as people write it
    for f in (work / "hosts" / "asgard").iterdir():
        f.write_text(f.read_text().replace("namespace: ai", f"namespace: {kube.namespace}"))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", "asgard")
    manifests = [str(f) for f in sorted((work / "hosts" / "asgard").glob("*.yaml")) ]
    kube.kubectl("apply", *(a for f in manifests for a in ("-f", f)))
    assert diff(work, kube.kubeconfig, "asgard") == []  # freshly applied: nothing, the Secret included

    # A person edits MAC_ADDRS: either a search-and-replace over the whole buffer, which also
    # rewrites the same text inside the last-applied annotation (kubectl-edit then owns the
    # annotation, and it claims the edit was applied), or an edit of that one line.
    where = "" if replace_everywhere else "/^  MAC_ADDRS:/"
    kube.edit("configmap/ollama-endpoint-manager", f"{where}s/192.168.68.58/192.168.68.75/g")
    cm = kube.get("configmap/ollama-endpoint-manager")
    assert cm["data"]["MAC_ADDRS"] == "192.168.68.75 100.115.97.90"
    annotation = cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert ("192.168.68.75" in annotation) is replace_everywhere  # it now "agrees" with the edit
    # The reconciler repoints an Endpoints (merge patch with its own field manager).
    kube.kubectl("patch", "endpoints", "mac-ollama", "--type=merge", "--field-manager=ollama-endpoint-manager", "-p",
                 json.dumps({"subsets": [{"addresses": [{"ip": "192.168.68.75"}],
                                          "ports": [{"name": "http", "port": 11434}]}]}))

    drifts = diff(work, kube.kubeconfig, "asgard")
    assert seen(drifts) == [
        ("ConfigMap", "ollama-endpoint-manager", "data.MAC_ADDRS", "value", "cluster", "kubectl-edit", "write"),
        ("Endpoints", "mac-ollama", "subsets", "pick", "cluster", "ollama-endpoint-manager", "wait"),
    ]
    mac, pick = sorted(drifts, key=lambda d: d["kind"])
    assert mac["changed_at"] == kube.time_of("configmap/ollama-endpoint-manager", "kubectl-edit")
    if replace_everywhere:  # the rewritten annotation is no base; the field's owner decides
        assert mac["base"] == "ownership" and mac["base_note"].startswith(
            "last-applied ignored: its annotation was last written by kubectl-edit")
    else:  # the annotation is still the applier's: it decides
        assert mac["base"] == "last-applied" and "base_note" not in mac
    assert pick["changed_at"] == kube.time_of("endpoints/mac-ollama", "ollama-endpoint-manager")
    assert "held" in pick["reason"] and "of 10m00s" in pick["reason"]


# -- server-side apply: no annotation, no syncer record -------------------------------------

CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  PORT: "11434"
  MODE: fast
"""
CONFIG = "installation: demo\nnamespace: {ns}\ntrack:\n  ConfigMap: writeback\n  Deployment: report\n"


def test_server_side_apply_live_edit_is_cluster_and_git_change_is_pending(kube: Kube, tmp_path: Path) -> None:
    work = repo_with(tmp_path, {"settings.yaml": CM}, CONFIG.format(ns=kube.namespace))
    kube.kubectl("apply", "--server-side", "-f", str(work / "hosts" / "demo" / "settings.yaml"))
    assert "annotations" not in kube.get("configmap/settings")["metadata"]
    assert diff(work, kube.kubeconfig) == []
    kube.edit("configmap/settings", "s/^  PORT: .*/  PORT: \"8080\"/")
    (work / "hosts" / "demo" / "settings.yaml").write_text(CM.replace("MODE: fast", "MODE: slow"))
    git(work, "commit", "-qam", "mode: slow")
    drifts = {d["path"]: d for d in diff(work, kube.kubeconfig)}
    assert seen(list(drifts.values())) == [
        ("ConfigMap", "settings", "data.MODE", "value", "git", "kubectl", "report"),
        ("ConfigMap", "settings", "data.PORT", "value", "cluster", "kubectl-edit", "write"),
    ]
    assert drifts["data.PORT"]["base"] == drifts["data.MODE"]["base"] == "ownership"
    assert drifts["data.PORT"]["changed_at"] == kube.time_of("configmap/settings", "kubectl-edit")
    assert drifts["data.MODE"]["changed_at"] == kube.time_of("configmap/settings", "kubectl")
    assert "pending apply" in drifts["data.MODE"]["reason"]


# -- one verb at a time, on client-side applied objects --------------------------------------

DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    team: dev
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.25
"""


def _replace_port(kube: Kube) -> None:
    cm = kube.get("configmap/settings")
    cm["data"]["PORT"] = "8080"
    path = kube.tmp / "replaced.json"
    path.write_text(json.dumps(cm))
    kube.kubectl("replace", "-f", str(path))


#: verb -> (change it, object, path, manager recorded, base, last-applied set aside?)
VERBS: dict[str, tuple[Any, str, str, str, str, bool]] = {
    "patch": (lambda k: k.kubectl("patch", "configmap", "settings", "-p", '{"data":{"PORT":"8080"}}'),
              "configmap/settings", "data.PORT", "kubectl-patch", "last-applied", False),
    "edit": (lambda k: k.edit("configmap/settings", "s/^  PORT: .*/  PORT: \"8080\"/"),
             "configmap/settings", "data.PORT", "kubectl-edit", "last-applied", False),
    "replace": (_replace_port, "configmap/settings", "data.PORT", "kubectl-replace", "ownership", True),
    "set-image": (lambda k: k.kubectl("set", "image", "deployment/web", "web=nginx:1.26"),
                  "deployment/web", "spec.template.spec.containers[0].image", "kubectl-set", "last-applied", False),
    "annotate": (lambda k: k.kubectl("annotate", "--overwrite", "deployment", "web", "team=ops"),
                 "deployment/web", "metadata.annotations.team", "kubectl-annotate", "last-applied", False),
    # kube-apiserver v1.20 records no manager for writes through the /scale subresource: the
    # replicas stay owned by the applier, and only the trusted annotation knows they moved. The
    # applier applied 1, not 3: syncer names no manager ("attribution uncertain").
    "scale": (lambda k: k.kubectl("scale", "deployment", "web", "--replicas=3"),
              "deployment/web", "spec.replicas", None, "last-applied", False),
}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_each_kubectl_verb_is_a_cluster_move_by_its_manager(kube: Kube, tmp_path: Path, verb: str) -> None:
    change, what, path, manager, base, tainted = VERBS[verb]
    work = repo_with(tmp_path, {"settings.yaml": CM, "web.yaml": DEPLOY}, CONFIG.format(ns=kube.namespace))
    for name in ("settings.yaml", "web.yaml"):
        kube.kubectl("apply", "-f", str(work / "hosts" / "demo" / name))
    assert diff(work, kube.kubeconfig) == []
    change(kube)
    drifts = diff(work, kube.kubeconfig)
    kind = "ConfigMap" if what.startswith("configmap") else "Deployment"
    action = "write" if kind == "ConfigMap" else "report"
    assert seen(drifts) == [(kind, what.split("/")[1], path, "value", "cluster", manager, action)]
    [d] = drifts
    if manager is None:  # the apply's time is no time of this change: none is said
        assert (d["changed_at"], d["attribution"]) == (None, "uncertain")
    else:
        assert d["changed_at"] == kube.time_of(what, manager)
    assert d["base"] == base
    assert ("last-applied ignored" in d.get("base_note", "")) is tainted


def test_rollout_restart_and_a_pending_git_change(kube: Kube, tmp_path: Path) -> None:
    work = repo_with(tmp_path, {"web.yaml": DEPLOY}, CONFIG.format(ns=kube.namespace))
    kube.kubectl("apply", "-f", str(work / "hosts" / "demo" / "web.yaml"))
    # rollout restart stamps a template annotation git never declared: a server/tool-added
    # field, not a drift.
    kube.kubectl("rollout", "restart", "deployment/web")
    live = kube.get("deployment/web")
    assert "kubectl.kubernetes.io/restartedAt" in live["spec"]["template"]["metadata"]["annotations"]
    assert diff(work, kube.kubeconfig) == []
    # A change committed to git and not applied yet: git moved, the applier still owns the field.
    (work / "hosts" / "demo" / "web.yaml").write_text(DEPLOY.replace("nginx:1.25", "nginx:1.27"))
    git(work, "commit", "-qam", "nginx 1.27")
    [d] = diff(work, kube.kubeconfig)
    assert (d["path"], d["direction"], d["manager"], d["action"], d["base"]) == (
        "spec.template.spec.containers[0].image", "git", "kubectl-client-side-apply", "report", "last-applied")
    assert d["changed_at"] == kube.time_of("deployment/web", "kubectl-client-side-apply")
    # Applying it settles everything.
    kube.kubectl("apply", "-f", str(work / "hosts" / "demo" / "web.yaml"))
    assert diff(work, kube.kubeconfig) == []


# -- helm ----------------------------------------------------------------------------------

def test_helm_is_an_applier(kube: Kube, tmp_path: Path) -> None:
    require_tool("helm")
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("port: \"11434\"\nmode: fast\n")
    (chart / "templates" / "settings.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
        "data:\n  PORT: {{ .Values.port | quote }}\n  MODE: {{ .Values.mode }}\n")
    # git keeps what the chart renders (as an installation repo of rendered manifests would).
    work = repo_with(tmp_path, {"settings.yaml": CM}, CONFIG.format(ns=kube.namespace))
    kube.helm("upgrade", "--install", "tiny", str(chart))
    assert diff(work, kube.kubeconfig) == []
    # git changes MODE; the release is not upgraded yet: pending apply, helm still owns it.
    (work / "hosts" / "demo" / "settings.yaml").write_text(CM.replace("MODE: fast", "MODE: slow"))
    git(work, "commit", "-qam", "mode: slow")
    # a person edits PORT live
    kube.edit("configmap/settings", "s/^  PORT: .*/  PORT: \"8080\"/")
    drifts = {d["path"]: d for d in diff(work, kube.kubeconfig)}
    assert seen(list(drifts.values())) == [
        ("ConfigMap", "settings", "data.MODE", "value", "git", "helm", "report"),
        ("ConfigMap", "settings", "data.PORT", "value", "cluster", "kubectl-edit", "write"),
    ]
    assert drifts["data.MODE"]["changed_at"] == kube.time_of("configmap/settings", "helm")
    assert drifts["data.PORT"]["changed_at"] == kube.time_of("configmap/settings", "kubectl-edit")
    assert drifts["data.MODE"]["base"] == drifts["data.PORT"]["base"] == "ownership"
    # helm upgrade with git's values: helm's three-way merge also puts PORT back; in sync.
    kube.helm("upgrade", "tiny", str(chart), "--set", "mode=slow")
    assert diff(work, kube.kubeconfig) == []


# -- the fake API server records managedFields as the real one does -----------------------

def _kubectl_like_writes(request: Any, apply: Any, ns: str) -> list[list[tuple[str, str, Any]]]:
    """The requests kubectl sends for apply (create), edit and patch, a server-side apply and a
    reconciler's merge patch; managedFields (manager, operation, fieldsV1) after each step."""
    base = f"/api/v1/namespaces/{ns}/configmaps"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": ns},
          "data": {"MAC_ADDRS": "192.168.68.58 100.115.97.90", "PORT": "11434"}}
    annotation = json.dumps({**cm, "metadata": {**cm["metadata"], "annotations": {}}}, sort_keys=True)
    created = json.loads(json.dumps(cm))
    created["metadata"]["annotations"] = {LAST_APPLIED: annotation}
    smp = "application/strategic-merge-patch+json"
    steps: list[Any] = [
        lambda: request("POST", f"{base}?fieldManager=kubectl-client-side-apply", created, "application/json"),
        lambda: request("PATCH", f"{base}/cm?fieldManager=kubectl-edit",
                        {"data": {"MAC_ADDRS": "192.168.68.75 100.115.97.90"},
                         "metadata": {"annotations": {LAST_APPLIED: annotation.replace("68.58", "68.75")}}}, smp),
        lambda: apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": ns},
                       "data": {"A": "a", "B": "b"}}),
        lambda: request("PATCH", f"{base}/ssa?fieldManager=kubectl-edit", {"data": {"A": "x"}}, smp),
        lambda: request("POST", f"/api/v1/namespaces/{ns}/endpoints?fieldManager=kubectl-client-side-apply",
                        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ep"}, "subsets": [
                            {"addresses": [{"ip": "192.168.68.58"}], "ports": [{"name": "http", "port": 11434}]}]},
                        "application/json"),
        lambda: request("PATCH", f"/api/v1/namespaces/{ns}/endpoints/ep?fieldManager=ollama-endpoint-manager",
                        {"subsets": [{"addresses": [{"ip": "192.168.68.75"}],
                                      "ports": [{"name": "http", "port": 11434}]}]}, "application/merge-patch+json"),
    ]
    objects = ["configmaps/cm", "configmaps/cm", "configmaps/ssa", "configmaps/ssa", "endpoints/ep", "endpoints/ep"]
    seen_fields = []
    for step, obj in zip(steps, objects):
        step()
        live = request("GET", f"/api/v1/namespaces/{ns}/{obj}", None, None)
        seen_fields.append(sorted((e["manager"], e["operation"], e["fieldsV1"]) for e in live["metadata"]["managedFields"]))
    return seen_fields


def test_the_fake_records_managed_fields_like_the_real_server(real_cluster: RealCluster, namespace: str) -> None:
    import urllib.request

    from tests.fakes.kube_api import FakeKubeAPI

    def requester(url: str, token: str, context: Any) -> Any:
        def request(method: str, path: str, body: Any, ctype: str | None) -> Any:
            headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
            if ctype:
                headers["Content-Type"] = ctype
            req = urllib.request.Request(url + path, None if body is None else json.dumps(body).encode(),
                                         headers, method=method)
            with urllib.request.urlopen(req, timeout=10, context=context) as resp:
                return json.loads(resp.read())
        return request

    real_request = requester(real_cluster.url, real_cluster.admin_token, real_cluster._ssl)

    def real_apply(obj: dict[str, Any]) -> Any:
        name, ns = obj["metadata"]["name"], obj["metadata"]["namespace"]
        return real_request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/{name}?fieldManager=kubectl&force=true",
                            obj, "application/apply-patch+yaml")

    real = _kubectl_like_writes(real_request, real_apply, namespace)
    with FakeKubeAPI() as fake:  # the fake takes server-side apply through its Python API only
        fake_seen = _kubectl_like_writes(requester(fake.url, fake.token, None),
                                         lambda obj: fake.put(obj, manager="kubectl", operation="Apply"), namespace)
    assert fake_seen == real
    # What syncer relies on, as the real server records it: kubectl-edit owns the annotation it
    # rewrote, the client-side applier keeps only an empty `f:data`-style shell of what it lost,
    # a reconciler's merge patch owns Endpoints' subsets whole.
    after_edit = {m: f for m, _, f in real[1]}
    assert after_edit["kubectl-edit"]["f:metadata"] == {"f:annotations": {f"f:{LAST_APPLIED}": {}}}
    assert after_edit["kubectl-client-side-apply"]["f:metadata"] == {"f:annotations": {}}
    assert {m: f for m, _, f in real[5]}["ollama-endpoint-manager"] == {"f:subsets": {}}


def test_a_live_edit_that_rewrote_the_annotation_never_overwrites_a_reviewed_git_change(
        kube: Kube, tmp_path: Path) -> None:
    """Issue #11: git holds a reviewed change not applied yet; a person edits the same key live
    with a search-and-replace that also makes the annotation claim the edit was applied. No
    syncer record (a one-shot diff): ownership says the cluster moved, git's history says git
    changed the line after the last apply. A conflict: reported, never written."""
    work = repo_with(tmp_path, {"settings.yaml": CM}, CONFIG.format(ns=kube.namespace))
    kube.kubectl("apply", "-f", str(work / "hosts" / "demo" / "settings.yaml"))
    time.sleep(1.1)  # managedFields and commits have whole seconds: the commit comes strictly after
    (work / "hosts" / "demo" / "settings.yaml").write_text(CM.replace('PORT: "11434"', 'PORT: "11500"'))
    git(work, "commit", "-qam", "port 11500 (reviewed)")
    kube.edit("configmap/settings", 's/11434/8080/g')
    [d] = diff(work, kube.kubeconfig)
    assert (d["path"], d["direction"], d["manager"], d["action"]) == ("data.PORT", "conflict", "kubectl-edit", "report")
    assert d["base"] == "ownership vs git-history" and "after the cluster last applied it" in d["base_why"]
    assert d["changed_at"] == kube.time_of("configmap/settings", "kubectl-edit")
    assert d["base_note"].startswith("last-applied ignored: its annotation was last written by kubectl-edit")
    out = io.StringIO()  # nothing to copy back, and no file diff
    code = main(["diff", "demo", "--repo", str(work), "--kubeconfig", str(kube.kubeconfig)],
                now=datetime.now(timezone.utc), stdout=out, stderr=io.StringIO())
    assert code == 1 and out.getvalue().startswith("demo: 1 difference(s) in 1 object(s); 0 to copy back into git")
    assert "+++ b/" not in out.getvalue()
    # The same through `sync --mode commit` in syncer's own clone: blob-less (the remote allows
    # partial clones, as forges do), so the old version of the file is fetched for the history.
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    git(work, "push", "-q", f"file://{bare}", "main")
    head = git(bare, "rev-parse", "main")
    out = io.StringIO()
    code = main(["sync", "demo", "--repo", str(work), "--remote", f"file://{bare}", "--kubeconfig",
                 str(kube.kubeconfig), "--mode", "commit"], now=datetime.now(timezone.utc), stdout=out,
                stderr=io.StringIO())
    assert code == 0 and "conflict" in out.getvalue() and "nothing to commit" in out.getvalue(), out.getvalue()
    assert git(bare, "rev-parse", "main") == head  # 11500 stays on main
