"""``syncer sync --mode pr`` end to end: real git remote + fake forge over loopback, via the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE, git
from tests.helpers import run

from tests.fakes.forges import FAKES, FakeForgeServer
from syncer.cli import main

TOKEN = "forge-token-abc123"


@pytest.fixture(params=sorted(FAKES))
def forge(request: pytest.FixtureRequest, asgard_repo: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SYNCER_FORGE_TOKEN", TOKEN)
    with FAKES[request.param](git_dir=asgard_repo.parent / "origin.git", token=TOKEN) as fake:
        yield fake


def sync(repo: Path, fake: FakeForgeServer, live: Path = EXAMPLE_LIVE) -> tuple[int, str, str]:
    return run("sync", "asgard", "--repo", str(repo), "--live-file", str(live), "--mode", "pr",
               "--forge", fake.kind, "--forge-url", fake.url, "--forge-repo", fake.repo)


def test_rolling_pr_lifecycle(asgard_repo: Path, forge: FakeForgeServer) -> None:
    code, out, err = sync(asgard_repo, forge)
    assert (code, err) == (0, ""), out
    assert "pull request opened" in out
    assert len(forge.prs) == 1
    pr = forge.prs[0]
    assert pr.head == "syncer/asgard" and pr.base == "main"
    assert "| ConfigMap/ai/ollama-endpoint-manager | hosts/asgard/ollama-endpoint-manager.yaml | data.MAC_ADDRS |" \
        in pr.body
    assert "kubectl-edit" in pr.body and "syncer diff asgard --live-file" in pr.body
    assert TOKEN not in out and TOKEN not in pr.body

    # Same drift again: no write call at all, one PR.
    before = len(forge.writes)
    code, out, _ = sync(asgard_repo, forge)
    assert code == 0 and "pull request unchanged" in out
    assert len(forge.writes) == before and len(forge.prs) == 1

    # Someone copies the values back by hand: the PR is closed with a comment and the branch goes.
    git(asgard_repo, "fetch", "-q", "origin")
    git(asgard_repo, "merge", "-q", "--ff-only", "origin/syncer/asgard")
    git(asgard_repo, "push", "-q", "origin", "main")
    code, out, _ = sync(asgard_repo, forge)
    assert code == 0 and "pull request closed" in out, out
    assert forge.prs[0].state == "closed"
    assert git(asgard_repo, "ls-remote", "--heads", "origin", "syncer/asgard") == ""


def test_changed_drift_updates_the_same_pr(asgard_repo: Path, forge: FakeForgeServer, tmp_path: Path) -> None:
    assert sync(asgard_repo, forge)[0] == 0
    live = tmp_path / "live.yaml"
    live.write_text(EXAMPLE_LIVE.read_text().replace("192.168.68.75 100.115.97.90", "192.168.68.76 100.115.97.90"))
    code, out, _ = sync(asgard_repo, forge, live)
    assert code == 0 and "pull request updated" in out, out
    assert len(forge.prs) == 1 and "192.168.68.76" in forge.prs[0].body


def test_bad_token_is_one_clear_line(asgard_repo: Path, forge: FakeForgeServer,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNCER_FORGE_TOKEN", "wrong-token-xyz")
    code, out, err = sync(asgard_repo, forge)
    assert code == 2 and err.count("\n") == 1 and "wrong-token-xyz" not in err + out
    assert "token" in err.lower()


def _flapped(tmp_path: Path, name: str, cleared: bool, when: str) -> Path:
    """The example snapshot with mac-ollama cleared, or re-made at ``when``."""
    text = EXAMPLE_LIVE.read_text()
    if cleared:
        start = text.index("  subsets:\n  - addresses:\n    - ip: 192.168.68.75")
        end = text.index("- apiVersion: v1\n  kind: Endpoints", start)
        text = text[:start] + text[end:]
    text = text.replace('time: "2026-08-21T08:03:24Z"', f'time: "{when}"')
    path = tmp_path / name
    path.write_text(text)
    return path


def test_sleep_wake_flapping_never_touches_an_open_pr(asgard_repo: Path, forge: FakeForgeServer,
                                                      tmp_path: Path) -> None:
    assert sync(asgard_repo, forge)[0] == 0
    git(asgard_repo, "fetch", "-q", "origin")
    branch = git(asgard_repo, "rev-parse", "origin/syncer/asgard")
    writes = len(forge.writes)
    timeline = [  # NOW is 2026-09-01T12:00Z
        _flapped(tmp_path, "a.yaml", True, "2026-09-01T11:55:09Z"),    # host asleep: cleared
        _flapped(tmp_path, "b.yaml", False, "2026-09-01T11:58:21Z"),   # back 2 min ago: not stable yet
        _flapped(tmp_path, "c.yaml", True, "2026-09-01T11:59:29Z"),    # asleep again
        _flapped(tmp_path, "d.yaml", False, "2026-09-01T11:40:24Z"),   # back and stable
    ]
    for live in timeline:
        code, out, _ = sync(asgard_repo, forge, live)
        assert code == 0, out
        assert "already holds this change" in out and "pull request unchanged" in out, out
    git(asgard_repo, "fetch", "-q", "origin")
    assert git(asgard_repo, "rev-parse", "origin/syncer/asgard") == branch
    assert len(forge.writes) == writes and len(forge.prs) == 1


def test_one_shot_sync_notifies_pr_events_and_undeclared(asgard_repo: Path, forge: FakeForgeServer,
                                                         tmp_path: Path) -> None:
    from tests.fakes.webhook import Receiver

    live = tmp_path / "live.yaml"
    live.write_text(EXAMPLE_LIVE.read_text().replace("    - ip: 192.168.68.89", "    - ip: 192.168.68.201"))
    hook = Receiver()
    try:
        code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "--mode", "pr",
                           "--forge", forge.kind, "--forge-url", forge.url, "--forge-repo", forge.repo,
                           "--notify-url", f"{hook.url}/hook")
    finally:
        hook.stop()
    assert code == 0, out
    events = [body["event"] for _, body in hook.posts]
    assert events == ["pr.opened", "drift.undeclared"]
    assert all(body["installation"] == "asgard" for _, body in hook.posts)
    assert TOKEN not in json.dumps([body for _, body in hook.posts])


def test_a_fork_pr_with_syncers_branch_is_ignored_and_syncer_opens_its_own(asgard_repo: Path,
                                                                           forge: FakeForgeServer) -> None:
    """Mallory's PR from her fork's ``syncer/asgard``: ``syncer sync`` opens its own PR next
    to it, and later closes its own; hers is never updated, commented on or closed."""
    fork = forge.add_pr("syncer/asgard", "main", title="innocent", body="mallory's text",
                        head_repo="mallory/infra", author="mallory")
    code, out, err = sync(asgard_repo, forge)
    assert (code, err) == (0, ""), out
    assert "pull request opened" in out
    [own] = [p for p in forge.open_prs() if p.number != fork.number]
    assert own.head == "syncer/asgard" and not own.head_repo and "MAC_ADDRS" in own.body

    git(asgard_repo, "fetch", "-q", "origin")  # the values copied back by hand: syncer closes its PR
    git(asgard_repo, "merge", "-q", "--ff-only", "origin/syncer/asgard")
    git(asgard_repo, "push", "-q", "origin", "main")
    code, out, _ = sync(asgard_repo, forge)
    assert code == 0 and "pull request closed" in out, out
    assert forge.pr(own.number).state == "closed"
    mine = forge.pr(fork.number)
    assert (mine.state, mine.title, mine.body, mine.labels, mine.comments) == (
        "open", "innocent", "mallory's text", [], [])
    assert not [r for r in forge.writes if re.search(rf"/(pulls|merge_requests|issues)/{fork.number}(/|$)", r.path)]
