"""``sync.deliver``, the one write-back entry point of ``syncer sync`` and the sidecar, and
``sidecar.record.agreed``, what a pass records as agreed. Real git, the example snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.cache import Caches
from syncer.gitrepo import Workspace
from syncer.gather.live import SnapshotSource
from syncer.model import ObjectRef, Result
from syncer.sidecar.record import agreed
from syncer.writeback.deliver import Mode, deliver, load_installation
from tests.conftest import EXAMPLE_LIVE, NOW, git, pushed_repo

CM_FILE = Path("hosts/asgard/ollama-endpoint-manager.yaml")
CM = ObjectRef("v1", "ConfigMap", "ai", "ollama-endpoint-manager")


def fields(result: Result) -> set[tuple[ObjectRef, str]]:
    return {(d.ref, d.path_text) for d in result.drifts}


def copy_mac_back(tree: Path) -> None:
    """The live MAC_ADDRS written into the file by hand, not committed."""
    path = tree / CM_FILE
    path.write_text(path.read_text().replace("192.168.68.58 100.115.97.90", "192.168.68.75 100.115.97.90"))


def test_a_dry_run_in_syncers_clone_starts_from_the_remote_base_a_checkout_is_taken_as_is(tmp_path: Path) -> None:
    work = pushed_repo(tmp_path, "asgard")
    ws = Workspace.open_or_clone(str(tmp_path / "origin.git"), "main", tmp_path / "clone")
    source = SnapshotSource([EXAMPLE_LIVE], "ai")
    mac = (CM, "data.MAC_ADDRS")

    copy_mac_back(ws.path)  # a leftover in the clone: the clone is reset before the pass
    out = deliver(Mode.DRY_RUN, ws, "asgard", source, NOW, "syncer diff asgard")
    assert mac in fields(out.result) and out.title and out.written
    assert "192.168.68.58 100.115.97.90" in (ws.path / CM_FILE).read_text()

    copy_mac_back(work)  # the user's checkout: `syncer sync --mode dry-run` compares it as it is
    out = deliver(Mode.DRY_RUN, work, "asgard", source, NOW, "syncer diff asgard")
    assert mac not in fields(out.result) and out.result.drifts
    assert "192.168.68.75 100.115.97.90" in (work / CM_FILE).read_text()
    assert git(work, "status", "--porcelain").split() == ["M", str(CM_FILE)]  # nothing written or committed
    assert out.loaded is not None and CM in out.loaded.manifests.objects  # the outcome carries the parse


@pytest.mark.parametrize("mode", [Mode.COMMIT, Mode.PR])
def test_commit_and_pr_write_only_in_syncers_clone(tmp_path: Path, mode: Mode) -> None:
    work = pushed_repo(tmp_path, "asgard")
    with pytest.raises(TypeError, match=f"--mode {mode.value} writes in syncer's own clone"):
        deliver(mode, work, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW)
    assert git(work, "status", "--porcelain") == ""


def test_commit_mode_commits_in_the_clone_and_pushes(tmp_path: Path) -> None:
    pushed_repo(tmp_path, "asgard")
    ws = Workspace.open_or_clone(str(tmp_path / "origin.git"), "main", tmp_path / "clone")
    out = deliver(Mode.COMMIT, ws, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW)
    assert out.commit is not None and out.written
    assert git(tmp_path / "origin.git", "rev-parse", "main") == out.commit


def test_agreed_is_what_was_checked_without_a_difference_never_a_secret(tmp_path: Path) -> None:
    work = pushed_repo(tmp_path, "asgard")
    (work / "hosts" / "asgard" / "token.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: ai\nstringData:\n  t: x\n")
    loaded = load_installation(work, "asgard")
    out = deliver(Mode.DRY_RUN, work, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW)
    secret = ObjectRef("v1", "Secret", "ai", "token")
    unchecked = ObjectRef("v1", "ServiceAccount", "ai", "ollama-endpoint-manager")
    assert secret in loaded.manifests.objects and unchecked in loaded.manifests.objects
    checked = tuple(r for r in loaded.manifests.objects if r != unchecked)
    result = Result("asgard", tuple(d for d in out.result.drifts if d.ref != secret), (), checked)  # in sync

    record = agreed(result, loaded.manifests, Caches())
    drifting = {d.ref for d in result.drifts}
    assert CM in drifting and CM not in record
    assert secret not in record and unchecked not in record
    assert set(record) == set(checked) - drifting - {secret}
    deployment = next(r for r in record if r.kind == "Deployment")
    assert "status" not in record[deployment] and record[deployment]["metadata"]["name"] == deployment.name
