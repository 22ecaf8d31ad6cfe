"""Helm installations against the real kube-apiserver (v1.20), installed with the real helm, edited
live with the real kubectl, then diffed and synced by syncer (tests/data/helm-corpus).

Each installation of the corpus is installed as its GitOps tool would: a chart directory with
``helm install <release> hosts/<inst>``, a Flux HelmRelease with ``helm install`` of its chart
and the values helm-controller merges (the ``valuesFrom`` ConfigMap, then ``spec.values``) plus
helm-controller's origin labels (a ``--post-renderer``), the HelmRelease and its ConfigMap applied
as manifests. Then: in sync (0 false drift); ``kubectl scale``, ``set image`` (mappable: written to
their exact values line by ``sync --mode commit``, proved by rendering) and ``set env`` of a
template literal (reported, never written); after the push, only the reported one remains.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from syncer.cli import main
from tests.helmcorpus import BY_NAME, CORPUS, INSTALLATIONS, Edit, build, chart_dir, policy_edit

from .cluster import RealCluster
from .tools import kubectl, require_tool

pytestmark = pytest.mark.realapi


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def syncer(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    later = datetime.now(timezone.utc) + timedelta(minutes=11)
    return main(list(argv), now=later, stdout=out, stderr=err), out.getvalue(), err.getvalue()


def diff(repo: Path, name: str, admin: Path) -> tuple[int, dict[str, Any]]:
    code, out, err = syncer("diff", name, "--repo", str(repo), "--kubeconfig", str(admin), "-o", "json")
    assert code in (0, 1), (code, err, out)
    doc: dict[str, Any] = json.loads(out)
    assert doc["errors"] == [], doc["errors"]
    return code, doc


def _namespaced(host: Path, namespace: str) -> None:
    """The installation's files with the corpus' namespaces (``storage``, ``tools``, ``ops``,
    ``flux-system``) made ``namespace``."""
    for path in [host / "syncer.conf", *host.glob("*.yaml")]:
        if path.name in ("values.yaml", "Chart.yaml"):
            continue
        text = re.sub(r"(?m)^(\s*(?:namespace|targetNamespace)): (storage|tools|ops|flux-system)$", rf"\1: {namespace}",
                      path.read_text())
        path.write_text(text)


def _post_renderer(tmp: Path, name: str, namespace: str) -> Path:
    script = tmp / "flux-post-renderer.sh"
    script.write_text(f"#!/bin/sh\nFLUX_HR_NAME={name} FLUX_HR_NAMESPACE={namespace} "
                      f"exec {sys.executable} {CORPUS / 'flux-post-renderer.py'}\n")
    script.chmod(0o755)
    return script


def install(repo: Path, name: str, namespace: str, admin: Path, tmp: Path) -> str:
    """Install the release as its GitOps tool would; the release name."""
    helm = require_tool("helm")
    inst = BY_NAME[name]
    host = repo / "hosts" / name
    env = {**os.environ, "KUBECONFIG": str(admin), "HELM_CACHE_HOME": str(tmp / ".helm"),
           "HELM_CONFIG_HOME": str(tmp / ".helm"), "HELM_DATA_HOME": str(tmp / ".helm")}
    args = [helm, "install", inst.release, str(host), "--namespace", namespace]
    release = inst.release
    if inst.layout == "flux":
        kubectl(admin, "apply", "-f", str(CORPUS / "helmrelease-crd.yaml"))
        kubectl(admin, "wait", "--for=condition=Established", "crd/helmreleases.helm.toolkit.fluxcd.io")
        docs = [d for d in YAML(typ="safe").load_all((host / "release.yaml").read_text()) if d]
        hr = next(d for d in docs if d["kind"] == "HelmRelease")
        spec = hr["spec"]
        release = spec.get("releaseName") or (f"{spec['targetNamespace']}-{hr['metadata']['name']}"
                                              if spec.get("targetNamespace") else hr["metadata"]["name"])
        args = [helm, "install", release, str(chart_dir(repo, name)), "--namespace", namespace,
                "--post-renderer", str(_post_renderer(tmp, hr["metadata"]["name"], hr["metadata"]["namespace"]))]
        for i, ref in enumerate(spec.get("valuesFrom", [])):
            cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ref["name"])
            (tmp / f"values-{i}.yaml").write_text(cm["data"][ref.get("valuesKey", "values.yaml")])
            args += ["--values", str(tmp / f"values-{i}.yaml")]
        (tmp / "values-spec.json").write_text(json.dumps(spec.get("values", {})))
        args += ["--values", str(tmp / "values-spec.json")]
        kubectl(admin, "apply", "-f", str(host / "release.yaml"))
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    return release


@pytest.fixture
def setup(real_cluster: RealCluster, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
          ) -> tuple[str, Path, Path, str]:
    name = request.param
    work = tmp_path / "work"
    host = build(work, name)
    _namespaced(host, namespace)
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(tmp_path / "origin.git"))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", name)
    git(work, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(work, "push", "-q", "origin", "main")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    release = install(work, name, namespace, admin, tmp_path)
    return name, work, admin, release


def pushed(repo: Path) -> dict[str, list[str]]:
    git(repo, "fetch", "-q", "origin")
    out: dict[str, list[str]] = {}
    file = ""
    for line in git(repo, "show", "--format=", "--unified=0", "origin/main").splitlines():
        if line.startswith("+++ b/"):
            file = line[6:]
        elif line[:1] in ("+", "-") and not line.startswith(("+++", "---")):
            out.setdefault(file, []).append(line)
    return out


#: (installation, the file the mappable edits go to, the lines that change in it)
EXPECTED = {
    "storage-chart": ("values.yaml", ["-replicaCount: 1", "+replicaCount: 2", "-  tag: v0.0.32", "+  tag: v0.0.31"]),
    "storage-umbrella": ("values.yaml", [
        "-  replicaCount: 1          # one provisioner is enough here",
        "+  replicaCount: 2          # one provisioner is enough here",
        "-    tag: v0.0.32           # pinned after the upgrade review",
        "+    tag: v0.0.31           # pinned after the upgrade review"]),
    "storage-flux": ("release.yaml", ["-    replicaCount: 1", "+    replicaCount: 2", "-      tag: v0.0.32",
                                      "+      tag: v0.0.31"]),
    "storage-flux-beta": ("release.yaml", ["-    replicaCount: 1", "+    replicaCount: 2", "-      tag: v0.0.32",
                                           "+      tag: v0.0.31"]),
    "storage-classes": ("values.yaml", ["-replicaCount: 1", "+replicaCount: 2", "-  tag: v0.0.32", "+  tag: v0.0.31"]),
    "storage-flux-root": ("release.yaml", ["-    replicaCount: 1", "+    replicaCount: 2", "-      tag: v0.0.32",
                                           "+      tag: v0.0.31"]),
}


@pytest.mark.parametrize("setup", sorted(EXPECTED), indirect=True)
def test_helm_install_live_edits_diff_and_sync(setup: tuple[str, Path, Path, str], tmp_path: Path) -> None:
    name, repo, admin, release = setup
    namespace = json.loads(kubectl(admin, "config", "view", "--minify", "-o", "json"))["contexts"][0]["context"][
        "namespace"]
    code, doc = diff(repo, name, admin)
    assert code == 0 and doc["in_sync"], doc["drifts"]  # 0 false drift as installed

    deployment = f"deployment/{release}-local-path-provisioner" if "local-path-provisioner" not in release else \
        f"deployment/{release}"
    kubectl(admin, "scale", deployment, "--replicas=2")
    kubectl(admin, "set", "image", deployment, "local-path-provisioner=rancher/local-path-provisioner:v0.0.31")
    kubectl(admin, "set", "env", deployment, "CONFIG_MOUNT_PATH=/etc/config2/")  # a literal of the template

    code, doc = diff(repo, name, admin)
    assert code == 1
    prefix = "spec.template.spec.containers[0]"
    file, lines = EXPECTED[name]
    target = f"hosts/{name}/{file}"
    got = {d["path"]: (d["file"], d["action"], d["direction"]) for d in doc["drifts"]}
    assert got[f"{prefix}.env[1].value"][1] == "report"
    assert got["spec.replicas"] == (target, "write", "cluster"), json.dumps([d for d in doc["drifts"] if d["path"] == "spec.replicas"])
    assert got[f"{prefix}.image"] == (target, "write", "cluster")
    assert set(got) == {"spec.replicas", f"{prefix}.image", f"{prefix}.env[1].value"}, got
    if BY_NAME[name].layout == "flux":  # helm-controller's origin labels, the live HelmRelease's interval
        interval = {"storage-flux": "10m", "storage-flux-beta": "5m", "storage-flux-root": "1h"}[name]
        assert {json.dumps(d.get("reconciled_by"), sort_keys=True) for d in doc["drifts"]} == {json.dumps(
            {"tool": "Flux HelmRelease", "name": release.removeprefix(f"{namespace}-") if name.endswith("beta")
             else ("local-path" if name == "storage-flux" else "node-storage"), "namespace": namespace,
             "interval": interval, "self_heal": None, "suspended": False}, sort_keys=True)}
    else:
        assert not any("reconciled_by" in d for d in doc["drifts"])

    code, out, err = syncer("sync", name, "--repo", str(repo), "--kubeconfig", str(admin), "--mode", "commit")
    assert code == 0, (out, err)
    assert pushed(repo) == {target: lines}

    after = tmp_path / "after"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(after))
    if BY_NAME[name].layout == "flux":  # what Flux's kustomize-controller does with the merged commit
        code, doc = diff(after, name, admin)
        assert {(d["kind"], d["direction"], d["action"]) for d in doc["drifts"] if d["kind"] != "Deployment"} <= {
            ("HelmRelease", "git", "report"), ("ConfigMap", "git", "report")}, doc["drifts"]
        kubectl(admin, "apply", "-f", str(after / "hosts" / name / "release.yaml"))
    code, doc = diff(after, name, admin)
    assert [(d["path"], d["action"]) for d in doc["drifts"]] == [(f"{prefix}.env[1].value", "report")]


def test_rendered_for_the_cluster_helm_installed_into(real_cluster: RealCluster, namespace: str,
                                                      tmp_path: Path) -> None:
    """A template that reads ``.Capabilities`` renders as ``helm install`` rendered it on this
    server (v1.20), not for helm's built-in default version."""
    helm = require_tool("helm")
    work = tmp_path / "work"
    host = work / "hosts" / "caps"
    (host / "templates").mkdir(parents=True)
    (host / "Chart.yaml").write_text("apiVersion: v2\nname: caps\nversion: 0.1.0\n")
    (host / "values.yaml").write_text("level: info\n")
    (host / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-caps\ndata:\n"
        "  minor: {{ .Capabilities.KubeVersion.Minor | quote }}\n  level: {{ .Values.level }}\n")
    (host / "syncer.conf").write_text(f"namespace: {namespace}\nrelease: caps\ntrack:\n  ConfigMap: writeback\n")
    git(work.parent, "init", "-q", str(work))
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    env = {**os.environ, "KUBECONFIG": str(admin), "HELM_CACHE_HOME": str(tmp_path / ".helm"),
           "HELM_CONFIG_HOME": str(tmp_path / ".helm"), "HELM_DATA_HOME": str(tmp_path / ".helm")}
    subprocess.run([helm, "install", "caps", str(host), "-n", namespace], check=True, capture_output=True, env=env)
    assert json.loads(kubectl(admin, "get", "configmap", "caps-caps", "-o", "json"))["data"]["minor"] == "20"
    code, doc = diff(work, "caps", admin)
    assert code == 0 and doc["in_sync"], doc["drifts"]


def _patch(admin: Path, edit: Edit, name: str) -> None:
    """``edit`` made live by the real kubectl (``kubectl patch --type=json``; the descheduler
    policy: its live text with one threshold changed, as ``kubectl edit`` leaves it)."""
    value = edit.value
    if value is None:
        live = json.loads(kubectl(admin, "get", f"{edit.kind.lower()}/{name}", "-o", "json"))
        value = policy_edit(live["data"][edit.pointer.rsplit("/", 1)[1]])
    kubectl(admin, "patch", f"{edit.kind.lower()}/{name}", "--type=json",
            "-p", json.dumps([{"op": "replace", "path": edit.pointer, "value": value}]))


@pytest.mark.parametrize("setup", [i.name for i in INSTALLATIONS if i.edits], indirect=True)
def test_corpus_edits_on_the_real_api(setup: tuple[str, Path, Path, str], tmp_path: Path) -> None:
    """The corpus' live edits (tests/helmcorpus.py) on releases helm installed: each mappable one
    written by ``sync --mode commit`` into its exact values line and gone after the push (the
    render with it is the live value); each other one reported, never written; nothing else."""
    name, repo, admin, release = setup
    inst = BY_NAME[name]
    code, doc = diff(repo, name, admin)
    assert code == 0 and doc["in_sync"], doc["drifts"]  # 0 false drift as installed
    for edit in inst.edits:  # names follow the release, which follows the test's namespace
        _patch(admin, edit, edit.name.replace(inst.release, release, 1))

    code, doc = diff(repo, name, admin)
    assert code == 1
    got = {(d["kind"], d["path"]): d for d in doc["drifts"]}
    assert set(got) == {(e.kind, e.path) for e in inst.edits}, json.dumps(doc["drifts"])  # 0 false drift
    expected: dict[str, list[str]] = {}
    for edit in inst.edits:
        drift = got[(edit.kind, edit.path)]
        if edit.lines:  # who moved, from managedFields: kubectl-patch is no applier
            assert (drift["file"], drift["action"], drift["direction"]) == (
                f"hosts/{name}/{edit.file}", "write", "cluster"), drift
            expected.setdefault(f"hosts/{name}/{edit.file}", []).extend(edit.lines)
        else:
            assert drift["action"] == "report" and edit.why in drift["reason"], drift

    code, out, err = syncer("sync", name, "--repo", str(repo), "--kubeconfig", str(admin), "--mode", "commit")
    assert code == 0, (out, err)
    assert {f: sorted(v) for f, v in pushed(repo).items()} == {f: sorted(v) for f, v in expected.items()}

    after = tmp_path / "after"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(after))
    if inst.layout == "flux":  # what Flux's kustomize-controller does with the merged commit
        kubectl(admin, "apply", "-f", str(after / "hosts" / name / "release.yaml"))
    code, doc = diff(after, name, admin)
    assert sorted((d["kind"], d["path"], d["action"]) for d in doc["drifts"]) == sorted(
        (e.kind, e.path, "report") for e in inst.edits if not e.lines), doc["drifts"]
