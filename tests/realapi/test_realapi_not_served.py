"""Objects of an API the real kube-apiserver v1.20 does not serve (issue 20), decided from its
discovery (syncer/gather/served.py): a custom resource whose CRD is not installed is one warning naming
the object and the API, exit 0 -- unless its kind is written back and no other group serves a
kind of that name; a 404 of a kind the server does serve is "absent live", a drift.
"""

from __future__ import annotations

import io
import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from syncer.cli import main

from .test_realapi_who_moved import Kube, kube, repo_with  # noqa: F401  (kube: the fixture)

pytestmark = pytest.mark.realapi

# From the corpus (xunholy/k8s-gitops, .../gha-runner-scale-set/app/rbac.yaml): a Talos
# ServiceAccount beside a core one of the same name.
TALOS = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: runner
---
apiVersion: talos.dev/v1alpha1
kind: ServiceAccount
metadata:
  name: runner
spec:
  roles: ["os:admin"]
"""

CERTIFICATE = """\
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: web
spec:
  secretName: web-tls
  dnsNames: [web.example.org]
  issuerRef: {name: letsencrypt, kind: ClusterIssuer}
"""

CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
"""


def diff_json(repo: Path, kubeconfig: Path) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", "demo", "--repo", str(repo), "--kubeconfig", str(kubeconfig), "-o", "json"],
                now=datetime.now(timezone.utc), stdout=out, stderr=err)
    return code, dict(json.loads(out.getvalue())), err.getvalue()


def messages(doc: dict[str, Any], key: str) -> list[str]:
    return [e["message"] for e in doc[key]]


def test_a_custom_resource_without_its_crd_is_one_warning(kube: Kube, tmp_path: Path) -> None:
    ns = kube.namespace
    work = repo_with(tmp_path, {"rbac.yaml": TALOS},
                     f"installation: demo\nnamespace: {ns}\ntrack:\n  ServiceAccount: writeback\n")
    kube.kubectl("create", "serviceaccount", "runner")  # kubectl apply refuses the Talos one: no such kind
    code, doc, err = diff_json(work, kube.kubeconfig)
    assert (code, err, doc["errors"], doc["drifts"]) == (0, "", [], [])
    assert messages(doc, "warnings") == [
        f"ServiceAccount/{ns}/runner: the cluster does not serve talos.dev/v1alpha1 ServiceAccount: not compared "
        "(track.ServiceAccount writes back the ServiceAccount of v1, which it serves)"]
    # the text output says the same in one line, and the run still exits 0
    out = io.StringIO()
    assert main(["diff", "demo", "--repo", str(work), "--kubeconfig", str(kube.kubeconfig)],
                now=datetime.now(timezone.utc), stdout=out, stderr=io.StringIO()) == 0
    assert "warning: ServiceAccount/" in out.getvalue() and "talos.dev/v1alpha1 ServiceAccount: not compared" \
        in out.getvalue()


def test_not_served_is_an_error_only_for_a_kind_written_back(kube: Kube, tmp_path: Path) -> None:
    ns = kube.namespace
    for track, want in (("report", 0), ("writeback", 2)):
        work = repo_with(tmp_path / track, {"cert.yaml": CERTIFICATE},
                         f"installation: demo\nnamespace: {ns}\ntrack:\n  Certificate: {track}\n")
        code, doc, _ = diff_json(work, kube.kubeconfig)
        assert (code, doc["drifts"]) == (want, [])
        head = f"Certificate/{ns}/web: the cluster does not serve cert-manager.io/v1 Certificate"
        if track == "report":
            assert (messages(doc, "warnings"), doc["errors"]) == ([f"{head}: not compared"], [])
        else:
            assert (doc["warnings"], messages(doc, "errors")) == ([], [
                f"{head}: its kind is written back (track.Certificate), so it is not synced; install its API "
                "(the CRD) or track Certificate as report"])


def test_another_version_of_the_group_is_named(kube: Kube, tmp_path: Path) -> None:
    """batch/v1 CronJob is Kubernetes 1.21's; 1.20 serves batch/v1beta1 only."""
    ns = kube.namespace
    work = repo_with(tmp_path, {"cron.yaml": CRONJOB}, f"installation: demo\nnamespace: {ns}\n")
    code, doc, _ = diff_json(work, kube.kubeconfig)
    assert (code, doc["drifts"], doc["errors"]) == (0, [], [])
    assert messages(doc, "warnings") == [
        f"CronJob/{ns}/nightly: the cluster does not serve batch/v1 CronJob (it serves CronJob as batch/v1beta1: "
        "export or declare it in that version): not compared"]


def test_a_served_custom_kind_absent_live_is_a_drift(kube: Kube, tmp_path: Path) -> None:
    """Once its CRD is installed, the same kind absent live is a real difference, not a warning."""
    ns = kube.namespace
    group = f"{ns}.example.org"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"widgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    widget = f"apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n"
    work = repo_with(tmp_path, {"widget.yaml": widget},
                     f"installation: demo\nnamespace: {ns}\ntrack:\n  Widget: writeback\n")
    code, doc, _ = diff_json(work, kube.kubeconfig)
    assert (code, doc["drifts"]) == (2, [])
    assert messages(doc, "errors")[0].startswith(f"Widget/{ns}/w: the cluster does not serve {group}/v1 Widget")
    (tmp_path / "crd.json").write_text(json.dumps(crd))
    kube.kubectl("apply", "-f", str(tmp_path / "crd.json"))
    deadline = time.monotonic() + 30
    while "widgets" not in kube.kubectl("api-resources", f"--api-group={group}", "-o", "name"):
        assert time.monotonic() < deadline, "the CRD was not served within 30 s"
        time.sleep(0.5)
    code, doc, _ = diff_json(work, kube.kubeconfig)
    assert (code, doc["errors"], doc["warnings"]) == (1, [], [])
    assert [(d["kind"], d["detail"]) for d in doc["drifts"]] == [("Widget", "declared in git, absent live")]
