"""A kustomize installation against the real kube-apiserver, applied with the real
``kubectl apply -k`` and rendered by the real kustomize (the one kubectl embeds).

``hosts/midgard/`` is an overlay (namespace, a strategic-merge patch of ``replicas``, an
inline JSON 6902 patch of an env value, ``images:``) over ``base/`` (a Deployment, a Service,
a ``configMapGenerator`` with a hashed name). Applied and diffed: in sync. Then a live edit
of a base value, of values overlay patches set, of an image ``images:`` sets and of a
generator literal: each found, attributed to the file that sets it, written there by
``sync --mode commit`` (to a bare remote) as one changed line with its comment kept; the
pushed kustomization still builds, and the next diff is in sync.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .cluster import RealCluster
from .tools import kubectl, require_tool, syncer_later

pytestmark = pytest.mark.realapi

ROOT = Path(__file__).resolve().parents[2]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def midgard(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> tuple[Path, Path]:
    """hosts/midgard in ``namespace``, pushed to a bare origin and applied with ``kubectl apply -k``."""
    require_tool("kubectl")
    work = tmp_path / "work"
    host = work / "hosts" / "midgard"
    shutil.copytree(ROOT / "hosts" / "midgard", host)
    for name in ("kustomization.yaml", "syncer.conf"):
        f = host / name
        f.write_text(re.sub(r"(?m)^namespace: midgard$", f"namespace: {namespace}", f.read_text()))
    conf = host / "syncer.conf"
    conf.write_text(re.sub(r"(?m)^  Deployment: report.*$", "  Deployment: writeback", conf.read_text()))
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(tmp_path / "origin.git"))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", "midgard")
    git(work, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(work, "push", "-q", "origin", "main")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl(admin, "apply", "-k", str(host))
    return work, admin


def diff(repo: Path, admin: Path) -> tuple[int, dict[str, object]]:
    code, out = syncer_later("diff", "midgard", "--repo", str(repo), "--kubeconfig", str(admin), "-o", "json")
    return code, json.loads(out)


def drifts(report: dict[str, object]) -> list[tuple[str, str, str, str, str]]:
    return sorted((d["kind"], d["path"], d["file"], d["direction"], d["action"])  # type: ignore[index]
                  for d in report["drifts"])  # type: ignore[attr-defined]


def pushed_change(repo: Path) -> dict[str, list[str]]:
    """The changed lines of origin/main's last commit, per file."""
    git(repo, "fetch", "-q", "origin")
    out: dict[str, list[str]] = {}
    file = ""
    for line in git(repo, "show", "--format=", "--unified=0", "origin/main").splitlines():
        if line.startswith("+++ b/"):
            file = line[6:]
        elif line[:1] in ("+", "-") and not line.startswith(("+++", "---")):
            out.setdefault(file, []).append(line)
    return out


def checkout_of_origin(tmp_path: Path) -> Path:
    clone = tmp_path / "after"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(clone))
    return clone


def test_apply_k_then_diff_is_in_sync(midgard: tuple[Path, Path]) -> None:
    repo, admin = midgard
    code, report = diff(repo, admin)
    assert code == 0 and report["errors"] == [], report
    # what was compared carries the names kustomize made: the generator's hash suffix
    names = kubectl(admin, "get", "configmap,deployment,service", "-o", "name").split()
    assert any(re.fullmatch(r"configmap/web-settings-[a-z0-9]{10}", n) for n in names), names


def test_live_edits_are_written_into_the_file_that_sets_them(midgard: tuple[Path, Path], tmp_path: Path) -> None:
    repo, admin = midgard
    kubectl(admin, "set", "env", "deployment/web", "WORKERS=8")  # base/web.yaml
    kubectl(admin, "set", "env", "deployment/web", "LOG_LEVEL=debug")  # the overlay's inline JSON 6902 patch
    kubectl(admin, "patch", "deployment", "web", "-p", '{"spec":{"replicas":5}}')  # the overlay's replicas.yaml
    kubectl(admin, "set", "image", "deployment/web", "web=nginx:1.28")  # the overlay's images:
    code, report = diff(repo, admin)
    assert code == 1, report
    prefix = "spec.template.spec.containers[0]"
    assert drifts(report) == sorted([
        ("Deployment", f"{prefix}.env[0].value", "hosts/midgard/kustomization.yaml", "cluster", "write"),
        ("Deployment", f"{prefix}.env[1].value", "hosts/midgard/base/web.yaml", "cluster", "write"),
        ("Deployment", f"{prefix}.image", "hosts/midgard/kustomization.yaml", "cluster", "write"),
        ("Deployment", "spec.replicas", "hosts/midgard/replicas.yaml", "cluster", "write"),
    ])

    code, out = syncer_later("sync", "midgard", "--repo", str(repo), "--kubeconfig", str(admin), "--mode", "commit")
    assert code == 0, out
    assert pushed_change(repo) == {
        "hosts/midgard/base/web.yaml": ['-              value: "4"   # per pod', '+              value: "8"   # per pod'],
        "hosts/midgard/kustomization.yaml": ["-        value: warn", "+        value: debug",
                                             '-    newTag: "1.27"   # pinned after the CVE review',
                                             '+    newTag: "1.28"   # pinned after the CVE review'],
        "hosts/midgard/replicas.yaml": ["-  replicas: 3  # one per zone", "+  replicas: 5  # one per zone"],
    }
    after = checkout_of_origin(tmp_path)
    kubectl(admin, "kustomize", str(after / "hosts" / "midgard"))  # still builds
    code, report = diff(after, admin)
    assert code == 0, report


def test_a_generator_literal_edited_live_goes_into_its_literal(midgard: tuple[Path, Path], tmp_path: Path) -> None:
    repo, admin = midgard
    name = kubectl(admin, "get", "configmap", "-o", "name").split()
    [generated] = [n for n in name if n.startswith("configmap/web-settings-")]
    kubectl(admin, "patch", generated, "--type", "merge", "-p", '{"data":{"GREETING":"hej"}}')
    code, report = diff(repo, admin)
    assert code == 1
    assert drifts(report) == [("ConfigMap", "data.GREETING", "hosts/midgard/base/kustomization.yaml", "cluster",
                               "write")]
    code, out = syncer_later("sync", "midgard", "--repo", str(repo), "--kubeconfig", str(admin), "--mode", "commit")
    assert code == 0, out
    assert pushed_change(repo) == {"hosts/midgard/base/kustomization.yaml": [
        "-      - GREETING=hello   # shown on the front page", "+      - GREETING=hej   # shown on the front page"]}
    after = checkout_of_origin(tmp_path)
    # The new literal gives the generated ConfigMap a new hashed name: applying is what makes
    # the cluster hold it (and points the Deployment at it); then nothing differs.
    kubectl(admin, "apply", "-k", str(after / "hosts" / "midgard"))
    code, report = diff(after, admin)
    assert code == 0, report


EXAMPLE = ROOT / "examples" / "midgard-live.yaml"


def test_the_bundled_snapshot_is_what_the_real_server_gives(real_cluster: RealCluster, tmp_path: Path) -> None:
    """examples/midgard-live.yaml (the README's example) is hosts/midgard applied with
    ``kubectl apply -k`` and edited live (a generator literal, the replicas, the image), as
    ``kubectl get -o yaml --show-managed-fields`` prints it; SYNCER_REALAPI_RECORD=1 rewrites it."""
    import os

    require_tool("kubectl")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace="midgard")
    if not any(n == "namespace/midgard" for n in kubectl(admin, "get", "namespace", "-o", "name").split()):
        kubectl(admin, "create", "namespace", "midgard")
    kubectl(admin, "apply", "-k", str(ROOT / "hosts" / "midgard"))
    [generated] = [n for n in kubectl(admin, "get", "configmap", "-o", "name").split()
                   if n.startswith("configmap/web-settings-")]
    kubectl(admin, "patch", generated, "--type", "merge", "-p", '{"data":{"GREETING":"hej"}}')
    kubectl(admin, "scale", "deployment/web", "--replicas=5")
    kubectl(admin, "set", "image", "deployment/web", "web=nginx:1.28")
    fresh = tmp_path / "midgard-live.yaml"
    fresh.write_text(kubectl(admin, "get", "configmap,deployment,service", "-o", "yaml", "--show-managed-fields"))
    if os.environ.get("SYNCER_REALAPI_RECORD") == "1":
        shutil.copy(fresh, EXAMPLE)
    found = []
    for snapshot in (fresh, EXAMPLE):
        code, out = syncer_later("diff", "midgard", "--repo", str(ROOT), "--live-file", str(snapshot), "-o", "json")
        found.append((code, drifts(json.loads(out))))
    assert found[0] == found[1] == (1, [
        ("ConfigMap", "data.GREETING", "hosts/midgard/base/kustomization.yaml", "cluster", "write"),
        ("Deployment", "spec.replicas", "hosts/midgard/replicas.yaml", "cluster", "report"),
        ("Deployment", "spec.template.spec.containers[0].image", "hosts/midgard/kustomization.yaml", "cluster",
         "report"),
    ])


CORPUS = ROOT / "tests" / "data" / "kustomize-corpus"


def test_two_overlays_each_edit_into_its_own_file_and_a_shared_base_is_reported(
        real_cluster: RealCluster, namespace: str, tmp_path: Path) -> None:
    """kustomize's helloWorld (tests/data/kustomize-corpus) with both overlays, applied with
    ``kubectl apply -k`` into ``namespace``: a live edit of each variant's ConfigMap goes into its
    own overlay's ``map.yaml`` (same file name, two directories); a live replicas of one variant,
    which only the base both share sets, is reported and blocks nothing: ``sync`` exits 0."""
    require_tool("kubectl")
    work = tmp_path / "work"
    host = work / "hosts" / "hello"
    shutil.copytree(CORPUS / "kustomize-helloworld", host)
    (host / "kustomization.yaml").write_text(f"namespace: {namespace}\nresources:\n  - overlays/dev\n"
                                             "  - overlays/stg-secondary\n")
    (host / "syncer.conf").write_text(f"installation: hello\nnamespace: {namespace}\ntrack:\n  ConfigMap: writeback\n"
                                      "  Deployment: writeback\n  Service: report\n")
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(tmp_path / "origin.git"))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", "hello")
    git(work, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(work, "push", "-q", "origin", "main")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl(admin, "apply", "-k", str(host))
    kubectl(admin, "patch", "configmap", "dev-the-map", "--type", "merge", "-p", '{"data":{"altGreeting":"Hi dev"}}')
    kubectl(admin, "patch", "configmap", "stg-secondary-the-map", "--type", "merge", "-p",
            '{"data":{"enableRisky":"false"}}')
    kubectl(admin, "scale", "deployment/dev-the-deployment", "--replicas=2")
    code, out = syncer_later("diff", "hello", "--repo", str(work), "--kubeconfig", str(admin), "-o", "json")
    report = json.loads(out)
    assert code == 1 and report["errors"] == [], report
    found = {(d["name"], d["path"]): (d["file"], d["action"]) for d in report["drifts"]}
    assert found == {
        ("dev-the-map", "data.altGreeting"): ("hosts/hello/overlays/dev/map.yaml", "write"),
        ("stg-secondary-the-map", "data.enableRisky"): ("hosts/hello/overlays/stg-secondary/map.yaml", "write"),
        ("dev-the-deployment", "spec.replicas"): ("hosts/hello/base/deployment.yaml", "report")}
    code, out = syncer_later("sync", "hello", "--repo", str(work), "--kubeconfig", str(admin), "--mode", "commit")
    assert code == 0, out
    assert pushed_change(work) == {
        "hosts/hello/overlays/dev/map.yaml": ['-  altGreeting: "Welcome to dev!"', '+  altGreeting: "Hi dev"'],
        "hosts/hello/overlays/stg-secondary/map.yaml": ['-  enableRisky: "true"', '+  enableRisky: "false"']}
