"""Untracked objects (issue 26) without an API server: the config key, the exclusion table, the
cleaning of a proposed file, and ``diff``/``sync`` against a snapshot as ``kubectl get -o yaml``
writes it. The real-API tier (tests/realapi/test_realapi_untracked.py) makes the objects with the
real kubectl."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from syncer.cli import main
from syncer.config import UntrackedMode, parse_config
from syncer.errors import ConfigError, Unserved
from syncer.kinds import KINDS
from syncer.gather.live import SnapshotSource
from syncer.sources.manifests import parse_documents
from syncer.model import ObjectRef
from syncer.writeback.untracked import EXCLUSIONS, clean, excluded, file_for, find, render, scope

from tests.conftest import NOW


def _cfg(extra: str = "") -> Any:
    return parse_config(f"installation: t\nnamespace: ns\ntrack:\n  ConfigMap: writeback\n{extra}", "syncer.conf", "t")


def _obj(kind: str, name: str, **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", **extra.pop("meta", {})}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, **extra}


def test_config_takes_a_mode_or_a_mode_with_kinds_and_refuses_typos() -> None:
    assert _cfg().untracked.mode is UntrackedMode.IGNORE
    assert _cfg("untracked: report\n").untracked.mode is UntrackedMode.REPORT
    both = _cfg("untracked: {mode: propose, kinds: [ConfigMap]}\n").untracked
    assert (both.mode, both.kinds) == (UntrackedMode.PROPOSE, ("ConfigMap",))
    with pytest.raises(ConfigError, match=r"untracked: unknown mode 'reprot'"):
        _cfg("untracked: reprot\n")
    with pytest.raises(ConfigError, match=r"untracked: unknown key 'kind'"):
        _cfg("untracked: {mode: report, kind: [ConfigMap]}\n")


def test_ignore_rules_select_by_label_and_annotation() -> None:
    config = _cfg("ignore:\n  - kind: '*'\n    labels: {team: sre}\n  - kind: ConfigMap\n"
                  "    annotations: {scratch: null}\n")
    sre = _obj("Service", "x", meta={"labels": {"team": "sre"}})
    dev = _obj("Service", "x", meta={"labels": {"team": "dev"}})
    noted = _obj("ConfigMap", "y", meta={"annotations": {"scratch": "anything"}})
    assert excluded("Service", sre, {}, config) == "matched by an ignore rule of the config"
    assert excluded("Service", dev, {}, config) is None
    assert excluded("ConfigMap", noted, {}, config) is not None
    # A pointer rule with a selector applies only to objects whose live metadata matches.
    pointers = _cfg("ignore:\n  - kind: ConfigMap\n    labels: {team: sre}\n    pointers: [/data/X]\n")
    assert pointers.ignored_pointers("ConfigMap", "ns", "y", {"labels": {"team": "sre"}}) == ("/data/X",)
    assert pointers.ignored_pointers("ConfigMap", "ns", "y", {"labels": {"team": "dev"}}) == ()


@pytest.mark.parametrize(("kind", "obj"), [
    ("ConfigMap", _obj("ConfigMap", "web-1", meta={"ownerReferences": [{"kind": "ReplicaSet", "name": "web-1"}]})),
    ("ConfigMap", _obj("ConfigMap", "kube-root-ca.crt")),
    ("ServiceAccount", _obj("ServiceAccount", "default")),
    ("Secret", _obj("Secret", "default-token-x", type="kubernetes.io/service-account-token")),
    ("Secret", _obj("Secret", "sh.helm.release.v1.web.v3", type="helm.sh/release.v1")),
    ("Endpoints", _obj("Endpoints", "web")),  # the Service below has a selector
    ("ConfigMap", _obj("ConfigMap", "ingress-leader",
                       meta={"annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}})),
    ("ConfigMap", _obj("ConfigMap", "syncer-state", meta={"labels": {"app.kubernetes.io/managed-by": "syncer"}})),
    ("ConfigMap", _obj("ConfigMap", "web-chart-config", meta={"annotations": {"meta.helm.sh/release-name": "web"}})),
    ("Service", _obj("Service", "argo-made", meta={"annotations": {"argocd.argoproj.io/tracking-id": "a:/Service:n/x"}})),
    ("ConfigMap", _obj("ConfigMap", "flux-made", meta={"labels": {"kustomize.toolkit.fluxcd.io/name": "apps"}})),
])
def test_every_exclusion_has_its_reason(kind: str, obj: dict[str, Any]) -> None:
    services = {"web": _obj("Service", "web", spec={"selector": {"app": "web"}})}
    why = excluded(kind, obj, services, _cfg())
    assert why in {rule.reason for rule in EXCLUSIONS}


def test_a_person_made_object_is_not_excluded() -> None:
    services = {"db": _obj("Service", "db", spec={"ports": [{"port": 5432}]})}  # no selector
    assert excluded("Endpoints", _obj("Endpoints", "db"), services, _cfg()) is None
    assert excluded("ConfigMap", _obj("ConfigMap", "feature-flags"), {}, _cfg()) is None


def test_scope_is_the_tracked_kinds_and_secrets_in_every_namespace_git_uses() -> None:
    config = _cfg("  Endpoints: ignore\n")
    declared = [ObjectRef("v1", "ConfigMap", "ns", "a"), ObjectRef("apps/v1", "Deployment", "other", "d"),
                ObjectRef("v1", "Endpoints", "ns", "e"), ObjectRef("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r")]
    assert scope(config, declared) == [
        ("v1", "ConfigMap", "ns"), ("v1", "ConfigMap", "other"), ("apps/v1", "Deployment", "ns"),
        ("apps/v1", "Deployment", "other"), ("v1", "Secret", "ns"), ("v1", "Secret", "other")]
    narrowed = _cfg("untracked: {mode: report, kinds: [Service]}\n")
    assert scope(narrowed, declared) == [("v1", "Service", "ns"), ("v1", "Service", "other")]


class _Release:
    """A lister as one Kubernetes release serves CronJobs: only in ``served`` (others: not served)."""

    def __init__(self, served: str) -> None:
        self.served, self.asked = served, []

    def list_objects(self, api_version: str, kind: str, namespace: str) -> list[dict[str, Any]]:
        self.asked.append(api_version)
        if api_version != self.served:
            raise Unserved(f"the cluster does not serve {api_version} {kind}", transient=False)
        return [{"apiVersion": api_version, "kind": kind, "metadata": {"name": "nightly", "namespace": namespace}}]


@pytest.mark.parametrize(("minor", "asked"), [(20, ["batch/v1", "batch/v1beta1"]), (25, ["batch/v1"]),
                                              (32, ["batch/v1"])])
def test_untracked_cronjobs_are_listed_in_the_version_the_release_serves(minor: int, asked: list[str]) -> None:
    """``untracked: {kinds: [CronJob]}`` with no CronJob in git: listed in the newest version of the
    kinds table, else the next the server serves (batch/v1beta1 is gone from Kubernetes 1.25 on,
    batch/v1 came in 1.21)."""
    [served] = KINDS["CronJob"].served_by(minor)[-1:]
    release = _Release(served)
    drifts = find(_cfg("untracked: {mode: report, kinds: [CronJob]}\n"), [], release)
    assert release.asked == asked and [d.ref for d in drifts] == [ObjectRef(served, "CronJob", "ns", "nightly")]


LIVE_SERVICE = {
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "incident-proxy", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
                 "creationTimestamp": "2026-11-30T08:00:00Z", "labels": {"app": "incident-proxy", "tier": "on"},
                 "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                 "managedFields": [{"manager": "kubectl-create", "operation": "Update",
                                    "time": "2026-11-30T08:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {}}]},
    "spec": {"clusterIP": "10.96.0.12", "clusterIPs": ["10.96.0.12"], "type": "ClusterIP", "sessionAffinity": "None",
             "ports": [{"name": "8080-8080", "port": 8080, "protocol": "TCP", "targetPort": 8080}],
             "selector": {"app": "incident-proxy"}},
    "status": {"loadBalancer": {}},
}


def test_clean_drops_what_the_server_wrote_and_render_reads_back_as_kubectl_reads_it() -> None:
    cleaned = clean(LIVE_SERVICE)
    assert cleaned == {"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "incident-proxy", "namespace": "ns",
                                    "labels": {"app": "incident-proxy", "tier": "on"}},
                       "spec": {"ports": [{"name": "8080-8080", "port": 8080}], "selector": {"app": "incident-proxy"}}}
    text = render(cleaned)
    assert 'tier: "on"' in text  # a plain `on` is a boolean to kubectl
    assert parse_documents(text, "f") == [cleaned]
    assert LIVE_SERVICE["spec"]["clusterIP"] == "10.96.0.12"  # the live object is not modified


def test_find_reports_person_made_objects_with_who_and_when(tmp_path: Path) -> None:
    snap = tmp_path / "live.yaml"
    objects = [LIVE_SERVICE, _obj("ConfigMap", "kube-root-ca.crt", data={"ca.crt": "x"}),
               _obj("Secret", "db-creds", data={"password": "aHVudGVyMg=="}),
               _obj("ConfigMap", "app", data={"A": "1"})]
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    config = _cfg("  Service: report\nuntracked: propose\n")
    drifts = find(config, [ObjectRef("v1", "ConfigMap", "ns", "app")], SnapshotSource([snap], "ns"))
    assert [(d.ref.kind, d.ref.name, d.action.value, d.file) for d in drifts] == [
        ("Secret", "db-creds", "report", ""),
        ("Service", "incident-proxy", "write", file_for("t", "Service", "ns", "incident-proxy"))]
    secret, service = drifts
    assert secret.live is None and "aHVudGVyMg" not in repr(secret)
    assert service.manager == "kubectl-create" and service.changed_at == "2026-11-30T08:00:00Z"
    assert service.reason.startswith("no owner, created by kubectl-create at 2026-11-30T08:00:00Z")
    climbed = file_for("t", "Service", "ns", "../../x")  # no path climbs out
    assert climbed.startswith("hosts/t/untracked/ns/service-_.._x-") and climbed.count("/") == 4


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def test_sync_commit_proposes_the_file_and_the_next_diff_is_in_sync(tmp_path: Path) -> None:
    work, bare = tmp_path / "work", tmp_path / "origin.git"
    host = work / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text("installation: t\nnamespace: ns\ntrack:\n  Service: writeback\n"
                                      "untracked: propose\n")
    (host / "app.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n"
                                   "  ports: [{port: 80}]\n")
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "t")
    _git(work, "remote", "add", "origin", str(bare))
    _git(work, "push", "-q", "origin", "main")
    app = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "app", "namespace": "ns"},
           "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "clusterIP": "10.96.0.1"}}
    snap = tmp_path / "live.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [app, LIVE_SERVICE]}))
    out = io.StringIO()
    code = main(["sync", "t", "--repo", str(work), "--live-file", str(snap), "--mode", "commit"], now=NOW,
                stdout=out, stderr=io.StringIO())
    assert code == 0, out.getvalue()
    check = tmp_path / "check"
    _git(tmp_path, "clone", "-q", str(bare), str(check))
    assert (check / "hosts/t/untracked/ns/service-incident-proxy.yaml").read_text() == render(clean(LIVE_SERVICE))
    assert "created live, not in git" in _git(check, "log", "-1", "--format=%B")
    out = io.StringIO()
    code = main(["diff", "t", "--repo", str(check), "--live-file", str(snap)], now=NOW, stdout=out,
                stderr=io.StringIO())
    assert code == 0, out.getvalue()


def test_the_pr_lists_created_objects_apart_and_never_a_secret_value(tmp_path: Path) -> None:
    from syncer.model import Result
    from syncer.writeback.report import commit_message, pr_body

    snap = tmp_path / "live.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        LIVE_SERVICE, _obj("Secret", "db-creds", data={"password": "aHVudGVyMg=="})]}))
    drifts = find(_cfg("untracked: {mode: propose, kinds: [Service, Secret]}\n"), [], SnapshotSource([snap], "ns"))
    written = [d for d in drifts if d.action.value == "write"]
    body = pr_body(Result("t", tuple(drifts)), written, "syncer diff t")
    created = body.split("### Created live, not in git", 1)[1].split("###", 1)[0]
    assert "Service/ns/incident-proxy" in created and "hosts/t/untracked/ns/service-incident-proxy.yaml" in created
    assert "db-creds" not in created and "aHVudGVyMg" not in body
    assert "| Service/ns/incident-proxy |" not in body  # not a row of the value table
    message = commit_message("t", written)
    assert "created live, not in git: written as a new file by kubectl-create at 2026-11-30T08:00:00Z" in message


def test_a_kind_the_account_may_not_list_is_one_warning_naming_the_grant(tmp_path: Path) -> None:
    from syncer.kube import Refused
    from syncer.writeback.deliver import Loaded
    from syncer.writeback.untracked import with_untracked
    from syncer.sources.manifests import Manifests
    from syncer.sources.plain import ManifestsSource
    from syncer.model import Result

    class Partial:
        def describe(self) -> str:
            return "test"

        def get(self, ref: ObjectRef) -> None:
            return None

        def list_objects(self, api_version: str, kind: str, namespace: str) -> list[dict[str, Any]]:
            if kind == "Secret":
                raise Refused("secrets is forbidden: cannot list resource \"secrets\"", 403)
            return [_obj(kind, "made-live")]

    config = _cfg("untracked: report\n")
    out = with_untracked(Loaded(config, Manifests({}, ()), ManifestsSource(Path("."), "t", config)), Result("t"),
                         Partial())
    assert [(d.ref.kind, d.ref.name) for d in out.drifts] == [("ConfigMap", "made-live")]
    assert [w.message for w in out.warnings] == [
        "untracked: cannot list Secret in ns (secrets is forbidden: cannot list resource \"secrets\"): grant list on "
        "it to see the objects created there live (chart: untracked.enabled=true, untracked.resources)"]
    assert out.errors == ()


def test_an_untracked_object_holding_a_secret_is_never_proposed_nor_shown(tmp_path: Path) -> None:
    """Hostile review F1: the new file was built without the secret checks a live change gets."""
    snap = tmp_path / "live.json"
    leaky = _obj("ConfigMap", "leaky", data={"DB_PASSWORD": "hunter2-cm", "ok": "fine"})
    props = _obj("ConfigMap", "props", data={"app.properties": "spring.datasource.password=hunter2-props\n"})
    noted = _obj("ConfigMap", "noted", meta={"annotations": {"vault-token": "s.hunter2-note"}}, data={"a": "b"})
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [leaky, props, noted]}))
    drifts = find(_cfg("untracked: propose\n"), [], SnapshotSource([snap], "ns"))
    assert [(d.ref.name, d.action.value, d.file, d.live) for d in drifts] == [
        ("leaky", "report", "", None), ("noted", "report", "", None), ("props", "report", "", None)]
    assert "looks like a secret at data.DB_PASSWORD" in drifts[0].reason
    assert "hunter2" not in repr(drifts)


def test_a_committed_symlink_or_a_long_name_never_takes_a_new_file_elsewhere(tmp_path: Path) -> None:
    """Hostile review F2 and F5: a directory on the new file's path that is a symlink, and an
    object name of 253 characters (longer than a file name may be)."""
    from syncer.model import FileError
    from syncer.writeback.untracked import MAX_STEM, new_files

    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "hosts" / "t").mkdir(parents=True)
    outside.mkdir()
    (repo / "hosts" / "t" / "untracked").symlink_to(outside)
    snap = tmp_path / "live.json"
    long_name = "a" * 253
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        _obj("ConfigMap", "evil", data={"x": "y"}), _obj("ConfigMap", long_name, data={"x": "y"})]}))
    drifts = find(_cfg("untracked: propose\n"), [], SnapshotSource([snap], "ns"))
    aborted: list[FileError] = []
    assert new_files(repo, "t", drifts, aborted) == []
    assert [e.message.split(": not written: ")[1] for e in aborted] == [
        "hosts/t/untracked is a symlink or no directory; refusing to write through it"] * 2
    assert list(outside.iterdir()) == []
    stem = Path(file_for("t", "ConfigMap", "ns", long_name)).stem
    assert len(stem) <= MAX_STEM and stem.startswith("configmap-aaaa")


#: Names that clean to one file name: each pair collided (issue #33: both "proposed", one lost).
ALIKE = ["a/b", "a_b", "caf\u00e9", "caf\u00e8", "cafe\u0301", ".", "..", "x y", "x_y"]


def test_names_that_clean_alike_get_distinct_stable_files() -> None:
    files = [file_for("t", "ConfigMap", "ns", n) for n in ALIKE]
    assert len(set(files)) == len(files), files
    assert files == [file_for("t", "ConfigMap", "ns", n) for n in ALIKE]  # the same every pass
    assert file_for("t", "ConfigMap", "ns", "a_b") == "hosts/t/untracked/ns/configmap-a_b.yaml"  # clean names stay
    assert file_for("t", "ConfigMap", "a/b", "x") != file_for("t", "ConfigMap", "a_b", "x")
    assert all(len(Path(f).name.encode()) <= 255 and ".." not in Path(f).parts for f in files)


def test_objects_that_would_still_share_a_file_are_both_reported_and_neither_written(tmp_path: Path) -> None:
    """Names that differ only in case share a file on a case-insensitive checkout (macOS, Windows)."""
    work, bare = tmp_path / "work", tmp_path / "origin.git"
    host = work / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text("installation: t\nnamespace: ns\ntrack:\n  ConfigMap: writeback\n"
                                      "untracked: propose\n")
    (host / "app.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  A: '1'\n")
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "t")
    _git(work, "remote", "add", "origin", str(bare))
    _git(work, "push", "-q", "origin", "main")
    items = [_obj("ConfigMap", "app", data={"A": "1"})] + [
        _obj("ConfigMap", n, data={"who": n}) for n in [*ALIKE, "Web", "web"]]
    snap = tmp_path / "live.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    out = io.StringIO()
    code = main(["diff", "t", "--repo", str(work), "--live-file", str(snap), "-o", "json"], now=NOW, stdout=out,
                stderr=io.StringIO())
    doc = json.loads(out.getvalue())
    by_name = {d["name"]: d for d in doc["drifts"]}
    assert code == 1 and set(by_name) == {*ALIKE, "Web", "web"}
    for n in ("Web", "web"):
        assert by_name[n]["action"] == "report" and not by_name[n]["file"]
        assert "would be written to the same file" in by_name[n]["reason"]
        assert "proposed" not in by_name[n]["reason"]
    assert {by_name[n]["action"] for n in ALIKE} == {"write"}
    assert len({by_name[n]["file"] for n in ALIKE}) == len(ALIKE)
    code = main(["sync", "t", "--repo", str(work), "--live-file", str(snap), "--mode", "commit"], now=NOW,
                stdout=io.StringIO(), stderr=io.StringIO())
    assert code == 0
    check = tmp_path / "check"
    _git(tmp_path, "clone", "-q", str(bare), str(check))
    written = sorted(p.relative_to(check).as_posix() for p in (check / "hosts/t/untracked").rglob("*.yaml"))
    assert written == sorted(by_name[n]["file"] for n in ALIKE)  # every proposed one written, nothing else
    for n in ALIKE:  # each file holds its own object
        doc = parse_documents((check / by_name[n]["file"]).read_text(), by_name[n]["file"])[0]
        assert doc["metadata"]["name"] == n and doc["data"] == {"who": n}
