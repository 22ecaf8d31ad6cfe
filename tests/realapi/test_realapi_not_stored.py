"""Fields git declares that the real kube-apiserver v1.20 does not store (issue 20): Job
``ttlSecondsAfterFinished`` (TTLAfterFinished, alpha and off in 1.20) and Service
``ipFamilies``/``ipFamilyPolicy`` (IPv6DualStack, alpha and off). The server records them in the
writer's managedFields and drops them from the object, whichever way the object went in (``kubectl
apply``, ``--server-side``, ``helm install``): one note, no drift -- ``kubectl diff`` shows nothing
either. A field a person removes live (``kubectl edit``) leaves every managedFields entry: that
stays a ``removed`` difference, next to the note.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from syncer.cli import main

from .test_realapi_who_moved import Kube, kube, repo_with  # noqa: F401  (kube: the fixture)

pytestmark = pytest.mark.realapi

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  ttlSecondsAfterFinished: 100   # dropped by a 1.20 server: the feature is off
  activeDeadlineSeconds: 600
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          image: busybox
"""

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ipFamilyPolicy: SingleStack
  ipFamilies: [IPv4]
  ports:
    - port: 80
      protocol: TCP   # a server-side apply on 1.20 needs the list key spelled out
  selector: {app: web}
"""

WAYS = ("apply", "server-side", "helm")


def diff_json(repo: Path, kubeconfig: Path) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", "demo", "--repo", str(repo), "--kubeconfig", str(kubeconfig), "-o", "json"],
                now=datetime.now(timezone.utc), stdout=out, stderr=err)
    assert err.getvalue() == ""
    return code, dict(json.loads(out.getvalue()))


def put(kube: Kube, way: str, files: dict[str, str], tmp: Path) -> None:
    """The files into the cluster ``way``: kubectl apply, a server-side apply, or a Helm chart."""
    chart = tmp / "chart"
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (chart / "templates" / name).write_text(text)
    if way == "helm":
        (chart / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 0.1.0\n")
        kube.helm("install", "demo", str(chart))
    else:
        kube.kubectl("apply", *(["--server-side"] if way == "server-side" else []), "-f", str(chart / "templates"))


@pytest.mark.parametrize("way", WAYS)
def test_fields_the_server_drops_are_one_note_each_not_drift(kube: Kube, tmp_path: Path, way: str) -> None:
    ns = kube.namespace
    files = {"job.yaml": JOB.replace("{name}", "once"), "svc.yaml": SERVICE}
    work = repo_with(tmp_path, files, f"installation: demo\nnamespace: {ns}\ntrack:\n  Job: writeback\n"
                                      "  Service: writeback\n")
    put(kube, way, files, tmp_path)
    live = kube.get("job/once")
    assert "ttlSecondsAfterFinished" not in live["spec"]  # really not stored
    assert "ipFamilies" not in kube.get("service/web")["spec"]
    code, doc = diff_json(work, kube.kubeconfig)
    assert (code, doc["drifts"], doc["errors"]) == (0, [], [])
    manager = {"apply": "kubectl-client-side-apply", "server-side": "kubectl", "helm": "helm"}[way]
    tail = f"(a field it does not know, or of a feature turned off): {manager} sent it, the live object lacks it; " \
           "not a difference"
    assert sorted(n["message"] for n in doc["notes"]) == [
        f"Job/{ns}/once: the server did not store spec.ttlSecondsAfterFinished {tail}",
        f"Service/{ns}/web: the server did not store spec.ipFamilies {tail}",
        f"Service/{ns}/web: the server did not store spec.ipFamilyPolicy {tail}",
    ]


@pytest.mark.parametrize("way", WAYS)
def test_a_field_removed_with_kubectl_edit_is_still_reported(kube: Kube, tmp_path: Path, way: str) -> None:
    """The opposite case: ``kubectl edit`` deletes ``activeDeadlineSeconds``. The server then
    leaves no entry naming it (not even the applier's) and keeps no ``kubectl-edit`` entry (it
    owns nothing): a removal, reported (never deleted from git), beside the note."""
    ns = kube.namespace
    files = {"job.yaml": JOB.replace("{name}", "edited")}
    work = repo_with(tmp_path, files, f"installation: demo\nnamespace: {ns}\ntrack:\n  Job: writeback\n")
    put(kube, way, files, tmp_path)
    kube.edit("job/edited", "/activeDeadlineSeconds:/d")
    live = json.loads(kube.kubectl("get", "job/edited", "-o", "json", "--show-managed-fields"))
    assert "activeDeadlineSeconds" not in live["spec"]
    assert "kubectl-edit" not in {e["manager"] for e in live["metadata"]["managedFields"]}
    code, doc = diff_json(work, kube.kubeconfig)
    assert code == 1 and doc["errors"] == []
    [drift] = doc["drifts"]
    assert (drift["path"], drift["class"], drift["action"]) == ("spec.activeDeadlineSeconds", "removed", "report")
    if way == "apply":  # the last-applied annotation still holds git's value: the cluster moved
        assert (drift["direction"], drift["base"]) == ("cluster", "last-applied")
    assert [n["message"].split(" (")[0] for n in doc["notes"]] == [
        f"Job/{ns}/edited: the server did not store spec.ttlSecondsAfterFinished"]
