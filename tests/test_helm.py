"""Helm installations against live snapshots, rendered by the real helm (tests/data/helm-corpus).

The live side is what ``helm install`` would create (``helm template`` of the same release),
then changed as ``kubectl scale``, ``set image``, ``set env`` and ``edit`` change it. Every
mappable change must be written into its exact values line, proved by rendering; every other
one reported with its reason and never written; nothing else may differ.
"""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from syncer.cli import main
from syncer.config import parse_config
from syncer.errors import ConfigError
from syncer.sources.helm.layout import shorten
from tests.helmcorpus import BY_NAME, INSTALLATIONS, apply, build, chart_dir
from tests.realapi.tools import require_tool

Objects = list[dict[str, Any]]
CLUSTER_SCOPED = ("ClusterRole", "ClusterRoleBinding", "StorageClass")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


def repo_with(tmp_path: Path, name: str) -> Path:
    repo = tmp_path / "repo"
    build(repo, name)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", name)
    return repo


def installed(repo: Path, name: str) -> Objects:
    """What helm installs for the installation: its release rendered by the real helm (for a
    HelmRelease: with the values helm-controller merges, and its origin labels), plus the
    directory's own manifests."""
    inst = BY_NAME[name]
    helm = require_tool("helm")
    host = repo / "hosts" / name
    chart = chart_dir(repo, name) if inst.layout == "flux" else host
    args = [helm, "template", inst.release, str(chart), "-n", inst.namespace]
    plain: Objects = []
    labels: dict[str, str] = {}
    if inst.layout == "flux":
        docs = [d for d in YAML(typ="safe").load_all((host / "release.yaml").read_text()) if d]
        release = next(d for d in docs if d["kind"] == "HelmRelease")
        for i, ref in enumerate(release["spec"].get("valuesFrom", [])):
            cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ref["name"])
            path = repo / f"values-{i}.yaml"
            path.write_text(cm["data"][ref.get("valuesKey", "values.yaml")])
            args += ["-f", str(path)]
        (repo / "values-spec.json").write_text(json.dumps(release["spec"].get("values", {})))
        args += ["-f", str(repo / "values-spec.json")]
        labels = {"helm.toolkit.fluxcd.io/name": release["metadata"]["name"],
                  "helm.toolkit.fluxcd.io/namespace": release["metadata"]["namespace"]}
        plain = docs
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    objects = [d for d in YAML(typ="safe").load_all(out) if d]
    for obj in objects:
        meta = obj["metadata"]
        if obj["kind"] not in CLUSTER_SCOPED:
            meta.setdefault("namespace", inst.namespace)
        meta.setdefault("labels", {}).update(labels)
    return objects + plain


def snapshot(tmp_path: Path, objects: Objects) -> Path:
    path = tmp_path / "live.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


def find(objects: Objects, kind: str) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and "helm.sh/chart" in o["metadata"].get("labels", {})]
    return found


def container(objects: Objects) -> dict[str, Any]:
    return find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def run(repo: Path, name: str, live: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", name, "--repo", str(repo), "--live-file", str(live), *extra], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def report(repo: Path, name: str, live: Path) -> dict[str, Any]:
    code, out, err = run(repo, name, live, "-o", "json")
    doc: dict[str, Any] = json.loads(out)
    assert code in (0, 1), (code, err, doc["errors"])
    assert doc["errors"] == [], doc["errors"]
    return doc


def changed_lines(repo: Path, name: str, live: Path) -> dict[str, list[str]]:
    """The lines a sync would change, per file (the unified diff ``syncer diff`` prints)."""
    code, out, _ = run(repo, name, live)
    assert code in (0, 1), out
    lines: dict[str, list[str]] = {}
    file = ""
    for line in out.splitlines():
        if line.startswith("+++ b/"):
            file = line[6:]
        elif file and line[:1] in "+-" and not line.startswith(("+++", "---")):
            lines.setdefault(file, []).append(line)
    return lines


def table(doc: dict[str, Any]) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, path) -> (file, action) of each drift."""
    return {(d["kind"], d["path"]): (d["file"], d["action"]) for d in doc["drifts"]}


@pytest.fixture(autouse=True)
def _helm() -> None:
    require_tool("helm")


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_as_installed_is_in_sync(tmp_path: Path, name: str) -> None:
    repo = repo_with(tmp_path, name)
    doc = report(repo, name, snapshot(tmp_path, installed(repo, name)))
    assert doc["in_sync"] is True, doc["drifts"]


def edited(repo: Path, name: str, edit: Callable[[Objects], None]) -> Objects:
    objects = installed(repo, name)
    edit(objects)
    return objects


def scale_and_tag(objects: Objects) -> None:
    find(objects, "Deployment")["spec"]["replicas"] = 2  # kubectl scale --replicas=2
    c = container(objects)
    c["image"] = "rancher/local-path-provisioner:v0.0.31"  # kubectl set image
    # kubectl edit: image.pullPolicy renders the helper pod's policy (in the ConfigMap) too,
    # which did not move live: no values line holds this one value alone
    c["imagePullPolicy"] = "Always"


def shared_key(doc: dict[str, Any]) -> str:
    [pull] = [d for d in doc["drifts"] if d["path"].endswith(".imagePullPolicy")]
    assert pull["action"] == "report", pull
    assert "ConfigMap" in pull["reason"] and "helperPod.yaml" in pull["reason"], pull["reason"]
    return str(pull["file"])


def test_chart_directory_writes_each_value_into_its_values_line(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-chart")
    live = snapshot(tmp_path, edited(repo, "storage-chart", scale_and_tag))
    prefix = "spec.template.spec.containers[0]"
    doc = report(repo, "storage-chart", live)
    shared_key(doc)
    assert table(doc) == {
        ("Deployment", "spec.replicas"): ("hosts/storage-chart/values.yaml", "write"),
        ("Deployment", f"{prefix}.image"): ("hosts/storage-chart/values.yaml", "write"),
        ("Deployment", f"{prefix}.imagePullPolicy"): ("hosts/storage-chart/templates/deployment.yaml", "report"),
    }
    assert changed_lines(repo, "storage-chart", live) == {"hosts/storage-chart/values.yaml": [
        "-replicaCount: 1", "+replicaCount: 2", "-  tag: v0.0.32", "+  tag: v0.0.31"]}


def test_a_template_literal_or_a_shared_key_is_reported_not_written(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-chart")

    def edits(objects: Objects) -> None:
        c = container(objects)
        c["env"][1]["value"] = "/etc/config2/"  # kubectl set env: a literal of the template
        c["command"][10] = "busybox:1.36"  # helperImage.tag: also the helper pod's image in the ConfigMap
        find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["command"][1] = "--trace"

    live = snapshot(tmp_path, edited(repo, "storage-chart", edits))
    doc = report(repo, "storage-chart", live)
    by_path = {d["path"]: d for d in doc["drifts"]}
    prefix = "spec.template.spec.containers[0]"
    assert set(by_path) == {f"{prefix}.env[1].value", f"{prefix}.command[10]", f"{prefix}.command[1]"}
    assert all(d["action"] == "report" for d in doc["drifts"]), doc["drifts"]
    assert "not written" in by_path[f"{prefix}.env[1].value"]["reason"]
    assert "ConfigMap" in by_path[f"{prefix}.command[10]"]["reason"], by_path[f"{prefix}.command[10]"]["reason"]
    assert changed_lines(repo, "storage-chart", live) == {}


def test_a_multi_line_value_edited_live_goes_into_its_block_scalar(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-chart")

    def edits(objects: Objects) -> None:
        cm = find(objects, "ConfigMap")
        cm["data"]["setup"] = cm["data"]["setup"].replace("0777", "0770")  # kubectl edit configmap

    live = snapshot(tmp_path, edited(repo, "storage-chart", edits))
    assert table(report(repo, "storage-chart", live)) == {
        ("ConfigMap", "data.setup"): ("hosts/storage-chart/values.yaml", "write")}
    assert changed_lines(repo, "storage-chart", live) == {"hosts/storage-chart/values.yaml": [
        '-    mkdir -m 0777 -p "$VOL_DIR"', '+    mkdir -m 0770 -p "$VOL_DIR"']}


def test_umbrella_writes_into_its_dependency_subtree_never_the_vendored_chart(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-umbrella")

    def edits(objects: Objects) -> None:
        scale_and_tag(objects)
        cm = find(objects, "ConfigMap")
        cm["data"]["teardown"] = cm["data"]["teardown"].replace("rm -rf", "rm -rf --one-file-system")

    live = snapshot(tmp_path, edited(repo, "storage-umbrella", edits))
    doc = report(repo, "storage-umbrella", live)
    drifts = table(doc)
    values = "hosts/storage-umbrella/values.yaml"
    prefix = "spec.template.spec.containers[0]"
    assert drifts[("Deployment", "spec.replicas")] == (values, "write")
    assert drifts[("Deployment", f"{prefix}.image")] == (values, "write")
    shared_key(doc)
    assert drifts[("ConfigMap", "data.teardown")][1] == "report"  # only the vendored chart sets it
    assert changed_lines(repo, "storage-umbrella", live) == {values: [
        "-  replicaCount: 1          # one provisioner is enough here",
        "+  replicaCount: 2          # one provisioner is enough here",
        "-    tag: v0.0.32           # pinned after the upgrade review",
        "+    tag: v0.0.31           # pinned after the upgrade review"]}


def test_flux_release_writes_spec_values_else_the_values_configmap(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-flux")
    live = snapshot(tmp_path, edited(repo, "storage-flux", scale_and_tag))
    release = "hosts/storage-flux/release.yaml"
    prefix = "spec.template.spec.containers[0]"
    doc = report(repo, "storage-flux", live)
    shared_key(doc)
    assert {k: v for k, v in table(doc).items() if v[1] == "write"} == {
        ("Deployment", "spec.replicas"): (release, "write"),
        ("Deployment", f"{prefix}.image"): (release, "write"),
    }
    assert changed_lines(repo, "storage-flux", live) == {release: [
        "-    replicaCount: 1", "+    replicaCount: 2",  # spec.values
        "-      tag: v0.0.32", "+      tag: v0.0.31"]}  # the ConfigMap's block scalar


def test_flux_v2beta1_release_with_a_target_namespace(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-flux-beta")
    objects = installed(repo, "storage-flux-beta")
    assert find(objects, "Deployment")["metadata"]["name"] == "storage-provisioner-local-path-provisioner"
    live = snapshot(tmp_path, edited(repo, "storage-flux-beta", scale_and_tag))
    assert changed_lines(repo, "storage-flux-beta", live) == {"hosts/storage-flux-beta/release.yaml": [
        "-    replicaCount: 1", "+    replicaCount: 2", "-      tag: v0.0.32", "+      tag: v0.0.31"]}
    [pull] = [d for d in report(repo, "storage-flux-beta", live)["drifts"] if d["path"].endswith("imagePullPolicy")]
    # the key is also the helper pod's policy in the ConfigMap (and only the chart's defaults set it)
    assert pull["action"] == "report" and "helperPod.yaml" in pull["reason"], pull


def test_release_name_is_helm_controllers(tmp_path: Path) -> None:
    assert shorten("short") == "short"
    long = "a-very-long-target-namespace-name-" + "x" * 30
    short = shorten(long)
    assert len(short) == 53 and short.startswith(long[:40] + "-")


def test_release_key_in_config() -> None:
    assert parse_config("release: web\n", "hosts/x/syncer.conf", "x").release == "web"
    assert parse_config("", "hosts/x/syncer.conf", "x").release is None
    with pytest.raises(ConfigError, match="release"):
        parse_config("release: Web_1\n", "hosts/x/syncer.conf", "x")


def test_a_dependency_not_vendored_is_one_clear_error(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-umbrella")
    import shutil

    shutil.rmtree(repo / "hosts" / "storage-umbrella" / "charts")
    code, _, err = run(repo, "storage-umbrella", snapshot(tmp_path, []))
    assert code == 2
    assert err.count("\n") == 1 and "not vendored" in err and "helm dependency" in err, err


def test_a_chart_that_fails_to_render_is_one_clear_error(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-chart")
    (repo / "hosts" / "storage-chart" / "templates" / "broken.yaml").write_text("{{ .Values.nope.deeper }}\n")
    code, _, err = run(repo, "storage-chart", snapshot(tmp_path, []))
    assert code == 2 and err.count("\n") == 1 and "helm template failed" in err, err


def test_hooks_are_not_live_objects(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-chart")
    (repo / "hosts" / "storage-chart" / "templates" / "test-pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n"
        "  annotations:\n    \"helm.sh/hook\": test\nspec:\n  containers: [{name: t, image: busybox}]\n")
    doc = report(repo, "storage-chart", snapshot(tmp_path, installed(repo, "storage-chart")))
    assert doc["in_sync"] is True, doc["drifts"]


def test_a_list_item_of_values_and_a_value_inside_a_computed_document(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-classes")

    def edits(objects: Objects) -> None:
        command = container(objects)["command"]
        command[command.index("--debug-level=info")] = "--debug-level=debug"  # extraArgs[0]
        cm = find(objects, "ConfigMap")
        cm["data"]["config.json"] = cm["data"]["config.json"].replace("/mnt/fast", "/mnt/faster")  # toPrettyJson

    live = snapshot(tmp_path, edited(repo, "storage-classes", edits))
    doc = report(repo, "storage-classes", live)
    actions = {d["kind"]: (d["file"], d["action"]) for d in doc["drifts"]}
    # the JSON document is computed (toPrettyJson of a map), but the one path that moved maps
    # to one values line, and the render with the edit proves it
    assert actions == {"Deployment": ("hosts/storage-classes/values.yaml", "write"),
                       "ConfigMap": ("hosts/storage-classes/values.yaml", "write")}
    assert changed_lines(repo, "storage-classes", live) == {"hosts/storage-classes/values.yaml": [
        "-          - /mnt/fast", "+          - /mnt/faster", "-  - --debug-level=info", "+  - --debug-level=debug"]}


def test_flux_release_with_the_chart_at_the_top_of_the_repository(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-flux-root")
    live = snapshot(tmp_path, edited(repo, "storage-flux-root", scale_and_tag))
    assert changed_lines(repo, "storage-flux-root", live) == {"hosts/storage-flux-root/release.yaml": [
        "-    replicaCount: 1", "+    replicaCount: 2", "-      tag: v0.0.32", "+      tag: v0.0.31"]}
    assert not (repo / "charts" / "local-path-provisioner" / "values.yaml").read_text().count("v0.0.31")


def test_init_on_a_chart_directory_writes_the_release_helm_installed(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-chart")
    (repo / "hosts" / "storage-chart" / "syncer.conf").unlink()
    objects = installed(repo, "storage-chart")
    for obj in objects:  # as helm install annotates what it creates
        obj["metadata"].setdefault("annotations", {}).update(
            {"meta.helm.sh/release-name": "storage", "meta.helm.sh/release-namespace": "storage"})
    live = snapshot(tmp_path, objects)
    out = io.StringIO()
    assert main(["init", "storage-chart", "--repo", str(repo), "--live-file", str(live)], stdout=out,
                stderr=io.StringIO()) == 0
    assert "release storage: the one Helm release the live objects name" in out.getvalue()
    text = (repo / "hosts" / "storage-chart" / "syncer.conf").read_text()
    config = parse_config(text, "syncer.conf", "storage-chart")
    assert (config.release, config.namespace) == ("storage", "storage")
    assert "release: storage              # the Helm release" in text  # aligned with the other comments
    assert report(repo, "storage-chart", live)["in_sync"] is True
    # without a cluster: the installation's name, as Argo CD names an application's release
    (repo / "hosts" / "storage-chart" / "syncer.conf").unlink()
    out = io.StringIO()
    assert main(["init", "storage-chart", "--repo", str(repo), "--git-only", "-n", "storage"], stdout=out,
                stderr=io.StringIO()) == 0
    config = parse_config((repo / "hosts" / "storage-chart" / "syncer.conf").read_text(), "c", "storage-chart")
    assert (config.release, config.namespace) == ("storage-chart", "storage")


def test_a_pass_without_a_git_change_renders_nothing(tmp_path: Path) -> None:
    import time
    from datetime import datetime, timezone

    from syncer.cache import Caches
    from syncer.gather.live import SnapshotSource
    from syncer.sources.helm import render as helm_render
    from syncer.writeback.deliver import dry_run

    repo = repo_with(tmp_path, "storage-chart")
    time.sleep(1.1)  # past the racy window: the stamp of the tree can be trusted
    live = SnapshotSource([snapshot(tmp_path, edited(repo, "storage-chart", scale_and_tag))], "storage")
    caches = Caches()
    now = datetime.now(timezone.utc)
    first = dry_run(repo, "storage-chart", live, now, "syncer diff", caches=caches)
    assert len(first.changes) == 1
    runs = helm_render.RUNS[0]
    again = dry_run(repo, "storage-chart", live, now, "syncer diff", caches=caches)  # the sidecar's next pass
    assert helm_render.RUNS[0] == runs  # no render: not the load, not the mapping, not the proof
    assert [c.new for c in again.changes] == [c.new for c in first.changes]
    values = repo / "hosts" / "storage-chart" / "values.yaml"
    values.write_text(values.read_text().replace("replicaCount: 1", "replicaCount: 2"))  # a git change
    dry_run(repo, "storage-chart", live, now, "syncer diff", caches=caches)
    assert helm_render.RUNS[0] > runs


def test_a_secret_the_chart_renders_is_never_written(tmp_path: Path) -> None:
    import base64

    repo = repo_with(tmp_path, "storage-chart")
    values = repo / "hosts" / "storage-chart" / "values.yaml"
    values.write_text(values.read_text().replace("  registrySecret: ~", "  registrySecret: pull-secret")
                      .replace("  registryUrl: ~", "  registryUrl: registry.example.invalid")
                      .replace("  registryUser: ~", "  registryUser: robot")
                      .replace("  registryPasswd: ~", "  registryPasswd: hunter2"))
    git(repo, "commit", "-qam", "a private registry")

    def edits(objects: Objects) -> None:
        [secret] = [o for o in objects if o["kind"] == "Secret"]
        secret["metadata"]["namespace"] = "storage"
        auth = base64.b64encode(b"robot:hunter3").decode()
        secret["data"][".dockerconfigjson"] = base64.b64encode(json.dumps(
            {"auths": {"registry.example.invalid": {"auth": auth}}}).encode()).decode()

    objects = edited(repo, "storage-chart", edits)
    for o in objects:
        if o["kind"] == "Secret":
            o["metadata"]["namespace"] = "storage"
    live = snapshot(tmp_path, objects)
    code, out, err = run(repo, "storage-chart", live, "-o", "json")
    doc = json.loads(out)
    [drift] = doc["drifts"]
    assert drift["kind"] == "Secret" and drift["action"] == "report", drift
    assert "hunter" not in out and "hunter" not in err
    assert changed_lines(repo, "storage-chart", live) == {}


def test_a_colour_stays_quoted(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, "storage-classes")

    def edits(objects: Objects) -> None:  # kubectl edit of the pod template's annotation
        find(objects, "Deployment")["spec"]["template"]["metadata"]["annotations"]["example.com/theme"] = "#ff8800"

    live = snapshot(tmp_path, edited(repo, "storage-classes", edits))
    assert changed_lines(repo, "storage-classes", live) == {"hosts/storage-classes/values.yaml": [
        '-  example.com/theme: "#34577c"   # the dashboard colour of this provisioner',
        '+  example.com/theme: "#ff8800"   # the dashboard colour of this provisioner']}


@pytest.mark.parametrize("name", [i.name for i in INSTALLATIONS if i.edits])
def test_corpus_edits_written_to_their_line_or_reported(tmp_path: Path, name: str) -> None:
    """Each live edit of the corpus (tests/helmcorpus.py): a mappable one written into its exact
    values line, every other one reported with its reason and never written, nothing else."""
    inst = BY_NAME[name]
    repo = repo_with(tmp_path, name)
    objects = installed(repo, name)
    for edit in inst.edits:
        apply(objects, edit)
    live = snapshot(tmp_path, objects)
    doc = report(repo, name, live)
    got = {(d["kind"], d["path"]): d for d in doc["drifts"]}
    assert set(got) == {(e.kind, e.path) for e in inst.edits}, sorted(got)  # 0 false drift
    expected: dict[str, list[str]] = {}
    for edit in inst.edits:
        drift = got[(edit.kind, edit.path)]
        if edit.lines:
            assert (drift["file"], drift["action"]) == (f"hosts/{name}/{edit.file}", "write"), drift
            expected.setdefault(f"hosts/{name}/{edit.file}", []).extend(edit.lines)
        else:
            assert drift["action"] == "report" and edit.why in drift["reason"], drift
    lines = changed_lines(repo, name, live)
    assert {f: sorted(v) for f, v in lines.items()} == {f: sorted(v) for f, v in expected.items()}, lines


def test_an_edit_the_chart_renders_otherwise_costs_no_render_per_good_edit(tmp_path: Path) -> None:
    """Four edits, one of which the chart renders otherwise (``0`` through ``| default``): the good
    ones are proved together again and the odd one alone, not each on its own."""
    from syncer.sources.helm import render

    repo = tmp_path / "repo"
    host = repo / "hosts" / "knobs"
    (host / "templates").mkdir(parents=True)
    (host / "Chart.yaml").write_text("apiVersion: v2\nname: knobs\nversion: 0.1.0\n")
    (host / "values.yaml").write_text("a: one\nb: two\nc: three\nretries: 3\n")
    (host / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n"
        "  a: {{ .Values.a | quote }}\n  b: {{ .Values.b | quote }}\n  c: {{ .Values.c | quote }}\n"
        "  retries: {{ .Values.retries | default 5 | quote }}\n")
    (host / "syncer.conf").write_text("namespace: apps\nrelease: knobs\ntrack:\n  ConfigMap: writeback\n")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    live = snapshot(tmp_path, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "knobs", "namespace": "apps"},
                                "data": {"a": "uno", "b": "dos", "c": "tres", "retries": "0"}}])
    before = render.RUNS[0]
    doc = report(repo, "knobs", live)
    renders = render.RUNS[0] - before
    actions = {d["path"]: d["action"] for d in doc["drifts"]}
    assert actions == {"data.a": "write", "data.b": "write", "data.c": "write", "data.retries": "report"}, doc
    [retries] = [d for d in doc["drifts"] if d["path"] == "data.retries"]
    assert "renders '5'" in retries["reason"], retries["reason"]
    # the load, the sentinels, all four together, the three good ones together, the odd one alone
    assert renders == 5, renders
