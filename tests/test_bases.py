"""Who moved: every base (proposals, record, last-applied, ownership, git history) and how they
combine. The managedFields shapes are the ones kubectl v1.32 leaves on a v1.20 API server
(see tests/realapi/test_realapi_kubectl.py, which checks the same rules against the real ones)."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from syncer.detect import bases
from syncer.config import parse_config
from syncer.gather.history import GitHistory, GitSays, LineChange, judge
from syncer.model import Direction, ObjectRef
from syncer.detect.normalize import LAST_APPLIED, normalize
from syncer.detect.ownership import DEFAULT_APPLIERS, direction_by_owner, owner, trusted_last_applied

APPLIERS = frozenset(DEFAULT_APPLIERS)
ANN = f"f:{LAST_APPLIED}"
PATH = ("data", "MAC_ADDRS")
OLD, NEW, EDITED = "192.168.68.58 100.115.97.90", "192.168.68.60 100.115.97.90", "192.168.68.75 100.115.97.90"


def entry(manager: str, fields: dict[str, Any], time: str, operation: str = "Update") -> dict[str, Any]:
    return {"manager": manager, "operation": operation, "apiVersion": "v1", "time": time, "fieldsType": "FieldsV1",
            "fieldsV1": fields}


def applied_fields(*keys: str) -> dict[str, Any]:
    return {"f:data": {".": {}, **{f"f:{k}": {} for k in keys}},
            "f:metadata": {"f:annotations": {".": {}, ANN: {}}}}


def configmap(data: dict[str, str], annotation: dict[str, str] | None, managed: list[dict[str, Any]]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "ollama-endpoint-manager", "namespace": "ai", "managedFields": managed}
    if annotation is not None:
        doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ollama-endpoint-manager",
                                                                      "namespace": "ai", "annotations": {}},
               "data": annotation}
        meta["annotations"] = {LAST_APPLIED: json.dumps(doc)}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def evidence(live: dict[str, Any], record: dict[str, Any] | None = None,
             history: tuple[GitSays, str] | None = None, proposed: dict[Any, Any] | None = None) -> bases.Evidence:
    snapshots: list[tuple[str, dict[str, Any]]] = []
    applied, _ = trusted_last_applied(live, APPLIERS)
    if applied is not None:
        snapshots.append((bases.LAST_APPLIED, applied))
    if record is not None:
        snapshots.append((bases.RECORD, normalize(record)))
    return bases.Evidence(snapshots, proposed or {}, lambda p: direction_by_owner(live, p, APPLIERS),
                          lambda p: history)


APPLY = entry("kubectl-client-side-apply", applied_fields("MAC_ADDRS", "PORT"), "2026-08-01T10:00:00Z")


def edited(touch_annotation: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {"f:data": {"f:MAC_ADDRS": {}}}
    if touch_annotation:
        fields["f:metadata"] = {"f:annotations": {ANN: {}}}
    return entry("kubectl-edit", fields, "2026-08-20T09:14:00Z")


def test_kubectl_edit_that_rewrote_the_annotation_is_a_cluster_move() -> None:
    # The seed's failure: the editor's search-and-replace also rewrote last-applied, which then
    # "proves" the cluster is as applied. kubectl-edit owns the annotation now: no base.
    apply = entry("kubectl-client-side-apply", applied_fields("PORT"), "2026-08-01T10:00:00Z")
    live = configmap({"MAC_ADDRS": EDITED, "PORT": "11434"}, {"MAC_ADDRS": EDITED, "PORT": "11434"},
                     [apply, edited(touch_annotation=True)])
    base, note = trusted_last_applied(live, APPLIERS)
    assert base is None
    assert note == ("last-applied ignored: its annotation was last written by kubectl-edit at 2026-08-20T09:14:00Z, "
                    "not by an applier")
    v = bases.decide(PATH, OLD, EDITED, evidence(live))
    assert (v.direction, v.base) == (Direction.CLUSTER, bases.OWNERSHIP)
    assert "kubectl-edit" in v.why


def test_kubectl_edit_leaving_the_annotation_alone_is_a_cluster_move_by_last_applied() -> None:
    apply = entry("kubectl-client-side-apply", applied_fields("PORT"), "2026-08-01T10:00:00Z")
    live = configmap({"MAC_ADDRS": EDITED}, {"MAC_ADDRS": OLD}, [apply, edited(touch_annotation=False)])
    assert trusted_last_applied(live, APPLIERS)[1] == ""
    v = bases.decide(PATH, OLD, EDITED, evidence(live))
    assert (v.direction, v.base) == (Direction.CLUSTER, bases.LAST_APPLIED)


def test_server_side_apply_without_annotation_or_record() -> None:
    # kubectl apply --server-side: manager "kubectl", operation Apply; no annotation at all.
    ssa = entry("kubectl", {"f:data": {"f:MAC_ADDRS": {}, "f:PORT": {}}}, "2026-08-01T10:00:00Z", "Apply")
    patch = entry("kubectl-edit", {"f:data": {"f:MAC_ADDRS": {}}}, "2026-08-20T09:14:00Z")
    live = configmap({"MAC_ADDRS": EDITED, "PORT": "11434"}, None,
                     [{**ssa, "fieldsV1": {"f:data": {"f:PORT": {}}}}, patch])
    edited_live = bases.decide(PATH, OLD, EDITED, evidence(live))
    assert (edited_live.direction, edited_live.base) == (Direction.CLUSTER, bases.OWNERSHIP)
    changed_in_git = bases.decide(("data", "PORT"), "11435", "11434", evidence(live))
    assert (changed_in_git.direction, changed_in_git.base) == (Direction.GIT, bases.OWNERSHIP)
    assert "kubectl (Apply" in changed_in_git.why and "an applier" in changed_in_git.why


def test_a_manager_listed_in_appliers_counts_as_one() -> None:
    flux = entry("my-cd-tool", {"f:data": {"f:MAC_ADDRS": {}}}, "2026-08-01T10:00:00Z")
    live = configmap({"MAC_ADDRS": OLD}, None, [flux])
    assert direction_by_owner(live, PATH, APPLIERS)[0] is Direction.CLUSTER  # type: ignore[index]
    assert direction_by_owner(live, PATH, {"my-cd-tool"})[0] is Direction.GIT  # type: ignore[index]


def test_newest_owner_wins_and_unowned_fields_say_nothing() -> None:
    live = configmap({"MAC_ADDRS": EDITED}, None, [APPLY, edited(False)])
    who = owner(live, PATH)
    assert who is not None and (who.manager, who.time) == ("kubectl-edit", "2026-08-20T09:14:00Z")
    assert owner(live, ("data", "NOT_THERE")) is None
    assert owner({"metadata": {}}, PATH) is None
    v = bases.decide(PATH, OLD, EDITED, evidence({"metadata": {}, "data": {"MAC_ADDRS": EDITED}}))
    assert (v.direction, v.base) == (Direction.UNKNOWN, bases.NONE)


def test_annotation_without_managed_fields_is_trusted_as_before() -> None:
    live = configmap({"MAC_ADDRS": EDITED}, {"MAC_ADDRS": OLD}, [])
    del live["metadata"]["managedFields"]
    assert trusted_last_applied(live, APPLIERS)[0] is not None


def test_live_edit_plus_rewritten_annotation_never_overwrites_a_pending_git_change() -> None:
    # git: a reviewed change OLD -> NEW, not applied yet. Live: someone edits to EDITED and makes
    # the annotation say NEW. The record of the last agreement (OLD) says both moved, and the
    # field owner cannot say git did not: a conflict, reported, never written.
    live = configmap({"MAC_ADDRS": EDITED}, {"MAC_ADDRS": NEW}, [APPLY, edited(touch_annotation=True)])
    record = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ollama-endpoint-manager"},
              "data": {"MAC_ADDRS": OLD}}
    v = bases.decide(PATH, NEW, EDITED, evidence(live, record=record))
    assert (v.direction, v.base) == (Direction.CONFLICT, bases.RECORD)
    # Without any record (a one-shot diff), git's history shows the change came after the apply.
    moved = (GitSays.MOVED, "git changed these lines after the last apply")
    v = bases.decide(PATH, NEW, EDITED, evidence(live, history=moved))
    assert (v.direction, v.base) == (Direction.CONFLICT, "ownership vs git-history")


def test_a_trusted_annotation_saying_both_moved_is_not_overruled_by_ownership() -> None:
    apply = entry("kubectl-client-side-apply", applied_fields("PORT"), "2026-08-01T10:00:00Z")
    live = configmap({"MAC_ADDRS": EDITED}, {"MAC_ADDRS": OLD}, [apply, edited(False)])
    v = bases.decide(PATH, NEW, EDITED, evidence(live))
    assert (v.direction, v.base) == (Direction.CONFLICT, bases.LAST_APPLIED)


def test_git_holding_syncers_own_copy_means_the_cluster_moved_again() -> None:
    # syncer's PR (EDITED) merged without a re-apply; then a new live edit. last-applied (OLD)
    # says both moved; the value's lines were last written by syncer's copy: git did not move.
    apply = entry("kubectl-client-side-apply", applied_fields("PORT"), "2026-08-01T10:00:00Z")
    again = "192.168.68.99 100.115.97.90"
    live = configmap({"MAC_ADDRS": again}, {"MAC_ADDRS": OLD}, [apply, edited(False)])
    copied = (GitSays.COPIED, "git's lines were last written by syncer's copy")
    v = bases.decide(PATH, EDITED, again, evidence(live, history=copied))
    assert (v.direction, v.base) == (Direction.CLUSTER, bases.GIT_HISTORY)


def test_proposals_and_definite_snapshots_come_first() -> None:
    live = configmap({"MAC_ADDRS": EDITED}, {"MAC_ADDRS": OLD}, [APPLY])
    v = bases.decide(PATH, NEW, EDITED, evidence(live, proposed={PATH: [NEW]}))
    assert (v.direction, v.base) == (Direction.CLUSTER, bases.PROPOSAL)
    # Owned by an applier, but git still equals the record: the snapshot's equality wins.
    record = {"data": {"MAC_ADDRS": OLD}}
    v = bases.decide(PATH, OLD, EDITED, evidence(configmap({"MAC_ADDRS": EDITED}, None, [APPLY]), record=record))
    assert (v.direction, v.base) == (Direction.CLUSTER, bases.RECORD)


def test_contradicting_snapshots_and_endpoints_combination() -> None:
    live = configmap({"MAC_ADDRS": EDITED}, {"MAC_ADDRS": OLD}, [])
    v = bases.decide(PATH, OLD, EDITED, evidence(live, record={"data": {"MAC_ADDRS": EDITED}}))
    assert (v.direction, v.base) == (Direction.CONFLICT, "last-applied vs record")
    a = bases.Verdict(Direction.CLUSTER, bases.OWNERSHIP, "x")
    b = bases.Verdict(Direction.GIT, bases.LAST_APPLIED, "y")
    assert bases.combine([a, a]) == a
    assert bases.combine([a, b]) == bases.Verdict(Direction.CONFLICT, "ownership vs last-applied", "x; y")


def test_judge_compares_the_newest_line_change_with_the_last_apply() -> None:
    applied = datetime(2026, 8, 1, 10, 0, tzinfo=timezone.utc)
    before = LineChange("a" * 40, datetime(2026, 7, 1, tzinfo=timezone.utc), False)
    after = LineChange("b" * 40, datetime(2026, 8, 2, tzinfo=timezone.utc), False)
    assert judge(None, applied) is None
    assert judge(before, applied) is None
    said = judge(after, applied)
    assert said is not None and said[0] is GitSays.MOVED and "bbbbbbbbbbbb" in said[1]
    said = judge(LineChange("c" * 40, datetime(2026, 7, 1, tzinfo=timezone.utc), True), applied)
    assert said is not None and said[0] is GitSays.COPIED


def git(cwd: Path, *args: str, when: str = "2026-07-01T00:00:00Z") -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ops", "GIT_AUTHOR_EMAIL": "ops@example.invalid", "GIT_COMMITTER_NAME": "Ops",
           "GIT_COMMITTER_EMAIL": "ops@example.invalid", "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when,
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


B = ObjectRef("v1", "ConfigMap", "ai", "b")


def git_rev(cwd: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_git_history_finds_the_newest_change_of_the_value(tmp_path: Path) -> None:
    host = tmp_path / "hosts" / "asgard"
    host.mkdir(parents=True)
    f = host / "cm.yaml"
    f.write_text("# first\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\n"
                 "kind: ConfigMap\nmetadata:\n  name: b\ndata:\n  A: one\n  B: |\n    two\n    three\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "manifests")
    h = GitHistory(tmp_path, "asgard")
    assert h.last_change("hosts/asgard/cm.yaml", B, ("data", "B")) is None  # arrived with the object: no change
    first = git_rev(tmp_path)
    f.write_text(f.read_text().replace("    three\n", "    four\n"))
    git(tmp_path, "commit", "-qam", "syncer(asgard): copy 1 live value(s) back from the cluster",
        when="2026-08-01T00:00:00Z")
    h = GitHistory(tmp_path, "asgard")
    change = h.last_change("hosts/asgard/cm.yaml", B, ("data", "B"))  # the block's last line changed
    assert change is not None and change.by_syncer and change.commit != first
    assert change.time == datetime(2026, 8, 1, tzinfo=timezone.utc)
    assert h.last_change("hosts/asgard/cm.yaml", B, ("data", "A")) is None
    f.write_text(f.read_text().replace("A: one", "A: uno"))
    git(tmp_path, "commit", "-qam", "A in Spanish", when="2026-07-10T00:00:00Z")  # committed before the next one
    f.write_text(f.read_text().replace("    four\n", "    five\n"))
    git(tmp_path, "commit", "-qam", "five", when="2026-08-05T00:00:00Z")
    h = GitHistory(tmp_path, "asgard")
    a = h.last_change("hosts/asgard/cm.yaml", B, ("data", "A"))
    assert a is not None and a.time == datetime(2026, 7, 10, tzinfo=timezone.utc) and not a.by_syncer
    # changed before the apply only: git did not move since, no answer
    applied = datetime(2026, 7, 15, tzinfo=timezone.utc)
    assert judge(h.last_change("hosts/asgard/cm.yaml", B, ("data", "A"), since=applied), applied) is None
    f.write_text(f.read_text().replace("A: uno", "A: eins"))  # uncommitted: a change made now
    h = GitHistory(tmp_path, "asgard")
    now = h.last_change("hosts/asgard/cm.yaml", B, ("data", "A"))
    assert now is not None and now.commit == "0" * 40 and now.time > change.time
    assert h.last_change("hosts/asgard/cm.yaml", B, ("data", "C")) is None  # never there: never changed
    assert GitHistory(tmp_path / "hosts", "asgard").last_change("nope.yaml", B, ("data",)) is None


def test_git_history_sees_a_value_removed_after_syncer_copied_it(tmp_path: Path) -> None:
    """Was: ``git blame`` cannot see a deleted line, so a person's removal of a key syncer had
    copied into git looked like no git change at all, and the key was copied back."""
    host = tmp_path / "hosts" / "asgard"
    host.mkdir(parents=True)
    f = host / "cm.yaml"
    f.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: ai}\ndata:\n  A: one\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "manifests")
    f.write_text(f.read_text() + "  K: x\n")
    git(tmp_path, "commit", "-qam", "syncer(asgard): copy 1 live value(s) back from the cluster",
        when="2026-08-01T00:00:00Z")
    f.write_text(f.read_text().replace("  K: x\n", ""))
    git(tmp_path, "commit", "-qam", "K is not wanted", when="2026-08-02T00:00:00Z")
    change = GitHistory(tmp_path, "asgard").last_change("hosts/asgard/cm.yaml", B, ("data", "K"))
    assert change is not None and not change.by_syncer
    assert change.time == datetime(2026, 8, 2, tzinfo=timezone.utc)
    says = judge(change, datetime(2026, 7, 1, 12, tzinfo=timezone.utc))
    assert says is not None and says[0] is GitSays.MOVED


def test_appliers_config_key() -> None:
    cfg = parse_config("installation: asgard\nappliers: [kubectl-client-side-apply, my-cd]\n", "s.yaml", "asgard")
    assert cfg.appliers == ("kubectl-client-side-apply", "my-cd")
    assert parse_config("installation: asgard\n", "s.yaml", "asgard").appliers == DEFAULT_APPLIERS
    from syncer.errors import ConfigError
    with pytest.raises(ConfigError, match=r"^s.yaml: appliers\[1\]: expected a field manager name"):
        parse_config("appliers: [kubectl, 3]\n", "s.yaml", "asgard")
    with pytest.raises(ConfigError, match="unknown key 'applier'"):
        parse_config("applier: [kubectl]\n", "s.yaml", "asgard")


def test_a_map_left_empty_in_a_managers_set_owns_none_of_its_keys() -> None:
    # After kubectl-patch took PORT, the real server leaves kubectl-client-side-apply with
    # `f:data: {}` (and `f:annotations: {}` after kubectl-edit took the annotation).
    apply = entry("kubectl-client-side-apply", {"f:data": {}, "f:metadata": {"f:annotations": {}}},
                  "2026-08-30T10:00:00Z")
    patch = entry("kubectl-patch", {"f:data": {"f:PORT": {}}}, "2026-08-20T10:00:00Z")
    live = configmap({"MAC_ADDRS": OLD, "PORT": "1"}, {"MAC_ADDRS": OLD, "PORT": "11434"}, [apply, patch])
    who = owner(live, ("data", "PORT"))
    assert who is not None and who.manager == "kubectl-patch"  # though the apply entry is newer
    assert owner(live, PATH) is None
    assert trusted_last_applied(live, APPLIERS)[0] is not None  # nobody owns it: trusted as before
    # An atomic list (Endpoints' subsets) is owned whole.
    ep = {"metadata": {"managedFields": [entry("ollama-endpoint-manager", {"f:subsets": {}}, "2026-08-21T08:03:24Z")]},
          "subsets": [{"addresses": [{"ip": "192.168.68.75"}]}]}
    who = owner(ep, ("subsets", 0, "addresses", 0, "ip"))
    assert who is not None and who.manager == "ollama-endpoint-manager"


def test_an_annotation_owned_by_an_applier_and_an_editor_is_tainted() -> None:
    # Seen on kube-apiserver v1.20: after kubectl-edit rewrote the annotation, a later update by
    # a third manager gives kubectl-client-side-apply the annotation back, next to kubectl-edit.
    for apply_time in ("2026-08-20T09:14:00Z", "2026-08-01T10:00:00Z"):  # the same second, or older
        apply = entry("kubectl-client-side-apply", applied_fields("PORT"), apply_time)
        live = configmap({"MAC_ADDRS": EDITED}, {"MAC_ADDRS": EDITED}, [edited(touch_annotation=True), apply])
        base, note = trusted_last_applied(live, APPLIERS)
        assert base is None and "kubectl-edit" in note


def test_git_history_fetches_old_versions_only_in_syncers_own_clone(tmp_path: Path) -> None:
    """A person's partial checkout: nothing fetched (no answer). Syncer's own blob-less clone:
    the old version is fetched with the clone's credentials -- without it, a reviewed change
    not applied yet looked like nothing in ``sync`` and was overwritten."""
    from syncer.gitrepo import Workspace

    src, work = tmp_path / "src", tmp_path / "clone"
    (src / "hosts" / "asgard").mkdir(parents=True)
    f = src / "hosts" / "asgard" / "cm.yaml"
    git(tmp_path, "init", "-q", "-b", "main", str(src))
    for value, when in (("one", "2026-07-01T00:00:00Z"), ("two", "2026-08-01T00:00:00Z"), ("three", "2026-08-02T00:00:00Z")):
        f.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b}}\ndata:\n  A: {value}\n")
        git(src, "add", ".")
        git(src, "commit", "-qm", value, when=when)
    git(src, "config", "uploadpack.allowFilter", "true")
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{src}", str(work))
    # the old version's blob is not here: a person's checkout must not fetch it
    assert GitHistory(work, "asgard").last_change("hosts/asgard/cm.yaml", B, ("data", "A")) is None
    assert GitHistory(src, "asgard").last_change("hosts/asgard/cm.yaml", B, ("data", "A")) is not None
    ws = Workspace.open_or_clone(f"file://{src}", "main", tmp_path / "syncer-clone", installation="asgard")
    change = GitHistory(ws.path, "asgard", ws.history_git()).last_change("hosts/asgard/cm.yaml", B, ("data", "A"))
    assert change is not None and change.time == datetime(2026, 8, 2, tzinfo=timezone.utc)

# -- git history end to end: `sync --mode commit` must never revert a reviewed git change --------

CM_TEXT = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: ai\ndata:\n{data}"
APP = ObjectRef("v1", "ConfigMap", "ai", "app")


def _history_repo(tmp_path: Path, versions: list[tuple[str, str, str]]) -> tuple[Path, Path]:
    """A work repo with ``hosts/t`` committed as ``versions`` (data lines, subject, date),
    pushed to a bare origin that serves partial clones (as GitHub, GitLab and Gitea do)."""
    work, bare = tmp_path / "work", tmp_path / "origin.git"
    host = work / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text("installation: t\nnamespace: ai\ntrack: {ConfigMap: writeback}\n")
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    git(work, "init", "-q", "-b", "main")
    for data, subject, when in versions:
        (host / "cm.yaml").write_text(CM_TEXT.format(data=data))
        git(work, "add", ".")
        git(work, "commit", "-qm", subject, when=when)
    git(work, "remote", "add", "origin", f"file://{bare}")
    git(work, "push", "-q", "origin", "main")
    return work, bare


def _live(data: dict[str, str], annotation: dict[str, str], managed: list[dict[str, Any]], tmp_path: Path) -> Path:
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "namespace": "ai"}, "data": annotation}
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "app", "namespace": "ai", "annotations": {LAST_APPLIED: json.dumps(doc)}, "managedFields": managed},
        "data": data}
    path = tmp_path / "live.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [live]}))
    return path


def _sync_commit(work: Path, bare: Path, live: Path) -> tuple[str, str]:
    from tests.helpers import run

    before = subprocess.run(["git", "--git-dir", str(bare), "rev-parse", "main"], capture_output=True, text=True,
                            check=True).stdout
    code, out, err = run("sync", "t", "--repo", str(work), "--remote", f"file://{bare}", "--live-file", str(live),
                         "--mode", "commit")
    assert code == 0, out + err
    after = subprocess.run(["git", "--git-dir", str(bare), "rev-parse", "main"], capture_output=True, text=True,
                           check=True).stdout
    return out, "pushed" if after != before else "nothing pushed"


def test_a_reviewed_change_not_applied_yet_survives_sync_in_a_blobless_clone(tmp_path: Path) -> None:
    """Was: ``sync`` works in a ``--filter=blob:none`` clone where the old version of the file
    was missing, so git's history gave no answer; with the annotation rewritten by
    ``kubectl edit`` ownership alone said "the cluster moved" and 8080 was pushed over the
    reviewed 11500 on main."""
    work, bare = _history_repo(tmp_path, [
        ('  PORT: "11434"\n  B: x\n', "app", "2026-08-01T00:00:00Z"),
        ('  PORT: "11500"\n  B: x\n', "reviewed: move the port", "2026-08-10T00:00:00Z")])
    apply = entry("kubectl-client-side-apply", applied_fields("B"), "2026-08-02T00:00:00Z")
    edit = entry("kubectl-edit", {"f:data": {"f:PORT": {}}, "f:metadata": {"f:annotations": {ANN: {}}}},
                 "2026-08-15T00:00:00Z")
    live = _live({"PORT": "8080", "B": "x"}, {"PORT": "8080", "B": "x"}, [apply, edit], tmp_path)
    out, pushed = _sync_commit(work, bare, live)
    assert pushed == "nothing pushed", out
    assert "data.PORT: 11500 → 8080" in out and "conflict" in out and "ownership vs git-history" in out


def test_a_key_syncer_copied_then_a_person_removed_is_not_copied_back(tmp_path: Path) -> None:
    """Was: the annotation (never re-applied) has no K and git has none again, so "git still
    holds the last-applied value" said the cluster moved, and K went back onto main."""
    work, bare = _history_repo(tmp_path, [
        ('  A: "1"\n', "app", "2026-07-01T00:00:00Z"),
        ('  A: "1"\n  K: x\n', "syncer(t): copy 1 live value(s) back from the cluster", "2026-07-06T00:00:00Z"),
        ('  A: "1"\n', "K is not wanted", "2026-07-07T00:00:00Z")])
    apply = entry("kubectl-client-side-apply", applied_fields("A"), "2026-07-02T00:00:00Z")
    edit = entry("kubectl-edit", {"f:data": {"f:K": {}}}, "2026-07-05T00:00:00Z")
    live = _live({"A": "1", "K": "x"}, {"A": "1"}, [apply, edit], tmp_path)
    out, pushed = _sync_commit(work, bare, live)
    assert pushed == "nothing pushed", out
    assert "data.K" in out and "last-applied vs git-history" in out
    # The same on the person's own checkout (full history there).
    from tests.helpers import run

    code, doc, _ = run("diff", "t", "--repo", str(work), "--live-file", str(live), "-o", "json")
    [drift] = json.loads(doc)["drifts"]
    assert (drift["path"], drift["direction"], drift["base"]) == ("data.K", "conflict", "last-applied vs git-history")


def test_the_history_budget_starts_with_the_first_git_call(tmp_path: Path) -> None:
    """Was: the 30 s ran from construction, before the cluster was read; a slow read left no
    time, history said nothing, and the verdict let a live value over a person's change."""
    work, _ = _history_repo(tmp_path, [
        ('  A: "1"\n', "app", "2026-07-01T00:00:00Z"), ('  A: "2"\n', "two", "2026-07-08T00:00:00Z")])
    now = [0.0]
    h = GitHistory(work, "t", clock=lambda: now[0])
    now[0] += 3600  # reading a big cluster took an hour
    change = h.last_change("hosts/t/cm.yaml", APP, ("data", "A"))
    assert change is not None and change.time == datetime(2026, 7, 8, tzinfo=timezone.utc) and h.trouble is None


def test_a_history_that_cannot_be_read_never_lets_a_live_value_be_committed(tmp_path: Path) -> None:
    """A person's blob-less checkout (nothing fetched): the old version needed is missing, so
    the answer is "unknown" (proposed, never committed), not "the cluster moved"."""
    from tests.helpers import run

    # values no other test uses: versions are remembered by content, across repositories
    work, bare = _history_repo(tmp_path, [
        ('  A: "partial"\n', "app", "2026-07-01T00:00:00Z"),
        ('  A: "partial"\n  K: y\n', "syncer(t): copy 1 live value(s) back from the cluster", "2026-07-06T00:00:00Z"),
        ('  A: "partial"\n', "K is not wanted", "2026-07-07T00:00:00Z")])
    apply = entry("kubectl-client-side-apply", applied_fields("A"), "2026-07-02T00:00:00Z")
    live = _live({"A": "partial", "K": "y"}, {"A": "partial"}, [apply, entry("kubectl-edit", {"f:data": {"f:K": {}}},
                                                                             "2026-07-05T00:00:00Z")], tmp_path)
    partial = tmp_path / "partial"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{bare}", str(partial))
    code, doc, _ = run("diff", "t", "--repo", str(partial), "--live-file", str(live), "-o", "json")
    [drift] = json.loads(doc)["drifts"]
    assert (drift["direction"], drift["base"]) == ("unknown", "last-applied vs git-history")
    assert "could not be read" in drift["base_why"]


def test_a_syncer_pr_merged_with_a_merge_commit_is_syncer_s_copy(tmp_path: Path) -> None:
    """Was: the first-parent log saw only "Merge pull request #N", a person's change after the
    apply, so every later live edit of that value was a conflict."""
    work, _ = _history_repo(tmp_path, [('  A: "1"\n', "app", "2026-07-01T00:00:00Z")])
    git(work, "checkout", "-q", "-b", "syncer/t")
    (work / "hosts" / "t" / "cm.yaml").write_text(CM_TEXT.format(data='  A: "2"\n'))
    git(work, "commit", "-qam", "syncer(t): copy 1 live value(s) back from the cluster", when="2026-07-06T00:00:00Z")
    git(work, "checkout", "-q", "main")
    git(work, "merge", "-q", "--no-ff", "-m", "Merge pull request #7 from acme/syncer/t", "syncer/t",
        when="2026-07-07T00:00:00Z")
    change = GitHistory(work, "t").last_change("hosts/t/cm.yaml", APP, ("data", "A"))
    assert change is not None and change.by_syncer
    assert judge(change, datetime(2026, 7, 2, tzinfo=timezone.utc))[0] is GitSays.COPIED  # type: ignore[index]


def test_history_reads_a_checkout_in_a_subdirectory_of_the_repository(tmp_path: Path) -> None:
    """Was: with ``--repo`` a subdirectory (hosts/ under mono/k8s/), paths named from the
    repository root never matched, and history never answered."""
    root = tmp_path / "mono"
    sub = root / "k8s" / "hosts" / "t"
    sub.mkdir(parents=True)
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    for value, when in (('"1"', "2026-07-01T00:00:00Z"), ('"2"', "2026-07-08T00:00:00Z")):
        (sub / "cm.yaml").write_text(CM_TEXT.format(data=f"  A: {value}\n"))
        git(root, "add", ".")
        git(root, "commit", "-qm", value, when=when)
    change = GitHistory(root / "k8s", "t").last_change("hosts/t/cm.yaml", APP, ("data", "A"))
    assert change is not None and change.time == datetime(2026, 7, 8, tzinfo=timezone.utc)


def test_a_status_apply_is_no_apply_of_the_manifest() -> None:
    """A controller applying ``status`` server-side (``subresource: status``, Kubernetes 1.22+)
    would otherwise move the "last apply" past a git change and hide it."""
    from syncer.detect.ownership import last_apply_time

    apply = entry("kubectl-client-side-apply", applied_fields("A"), "2026-07-02T00:00:00Z")
    status = {**entry("my-controller", {"f:status": {"f:ready": {}}}, "2026-07-09T00:00:00Z", operation="Apply"),
              "subresource": "status"}
    live = configmap({"A": "1"}, {"A": "1"}, [apply, status])
    assert last_apply_time(live, APPLIERS) == "2026-07-02T00:00:00Z"
