"""Write-back through real git: a bare origin in tmp_path, clones, pushes, races."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE, NOW, ROOT, git
from tests.helpers import run

from syncer.cli import main
from syncer.gitrepo import Workspace
from syncer.gather.live import SnapshotSource
from syncer.writeback.deliver import sync_commit


def origin_log(work: Path, ref: str = "main") -> list[str]:
    git(work, "fetch", "-q", "origin")
    return git(work, "log", "--format=%H%x09%an%x09%s", f"origin/{ref}").splitlines()


def changed_lines(work: Path, rev: str) -> list[str]:
    out = git(work, "show", "--format=", "--unified=0", rev)
    return [ln for ln in out.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def test_commit_mode_writes_exactly_the_drifted_lines(asgard_repo: Path) -> None:
    head_before = git(asgard_repo, "rev-parse", "HEAD")
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                         "--mode", "commit")
    assert (code, err) == (0, ""), out
    log = origin_log(asgard_repo)
    assert len(log) == 2 and log[0].split("\t")[1] == "syncer"
    assert sorted(changed_lines(asgard_repo, "origin/main")) == sorted([
        '-  MAC_ADDRS: "192.168.68.58 100.115.97.90"',
        '+  MAC_ADDRS: "192.168.68.75 100.115.97.90"',
        '-  M1_ADDRS: "100.127.6.20"',
        '+  M1_ADDRS: "192.168.68.89 100.127.6.20"',
        "-      - ip: 192.168.68.58   # Mac Studio, LAN",
        "+      - ip: 192.168.68.75   # Mac Studio, LAN",
        "-      - ip: 100.127.6.20    # M1 laptop, tailnet",
        "+      - ip: 192.168.68.89    # M1 laptop, tailnet",
    ])
    message = git(asgard_repo, "log", "-1", "--format=%B", "origin/main")
    assert "syncer(asgard): copy 4 live value(s)" in message
    assert "data.MAC_ADDRS: 192.168.68.58 100.115.97.90 -> 192.168.68.75 100.115.97.90" in message
    assert "by kubectl-edit at 2026-08-20T09:14:00Z" in message
    # The user's own checkout is untouched.
    assert git(asgard_repo, "rev-parse", "HEAD") == head_before
    assert git(asgard_repo, "status", "--porcelain") == ""

    # Same drift again: nothing new.
    code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                       "--mode", "commit")
    assert code == 0 and "nothing to commit" in out
    assert len(origin_log(asgard_repo)) == 2


def test_commit_mode_redoes_after_losing_a_push_race(asgard_repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(asgard_repo / ".." / "origin.git"), str(other))

    class Racing(Workspace):
        raced = 0

        def push_base(self, rev: str = "HEAD") -> bool:
            if not Racing.raced:  # a human pushes an unrelated change first
                Racing.raced = 1
                (other / "hosts" / "asgard" / "notes.txt").write_text("hello\n")
                git(other, "add", ".")
                git(other, "commit", "-q", "-m", "human change")
                git(other, "push", "-q", "origin", "main")
            return super().push_base(rev)

    ws = Racing.open_or_clone(str(tmp_path / "origin.git"), "main", tmp_path / "clone")
    out = sync_commit(ws, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW)
    assert any("moved while committing" in m for m in out.messages)
    log = origin_log(asgard_repo)
    assert [line.split("\t")[2] for line in log[:2]] == [
        "syncer(asgard): copy 4 live value(s) back from the cluster", "human change"]
    # The human's commit is kept (never force-pushed away).
    assert git(asgard_repo, "show", "origin/main:hosts/asgard/notes.txt") == "hello"


def test_pr_mode_without_forge_pushes_one_branch_and_prints_the_pr(asgard_repo: Path) -> None:
    args = ("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE), "--mode", "pr",
            "--forge", "none")
    code, out, err = run(*args)
    assert (code, err) == (0, "")
    assert "--- pull request ---" in out and "| ConfigMap/ai/ollama-endpoint-manager |" in out
    assert "syncer diff asgard --live-file" in out
    branch = origin_log(asgard_repo, "syncer/asgard")
    assert len(branch) == 2
    assert len(origin_log(asgard_repo)) == 1  # base untouched
    sha = git(asgard_repo, "rev-parse", "origin/syncer/asgard")
    code, out, _ = run(*args)
    assert code == 0 and "already holds this change" in out
    assert git(asgard_repo, "rev-parse", "origin/syncer/asgard") == sha


def test_pr_branch_taken_over_by_a_human_is_left_alone(asgard_repo: Path, tmp_path: Path) -> None:
    args = ("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE), "--mode", "pr")
    assert run(*args)[0] == 0
    other = tmp_path / "human"
    git(tmp_path, "clone", "-q", "-b", "syncer/asgard", str(tmp_path / "origin.git"), str(other))
    (other / "hosts" / "asgard" / "ollama-backends.yaml").write_text("# reviewed by hand\n", encoding="utf-8")
    git(other, "commit", "-qam", "fix up the PR by hand")
    git(other, "push", "-q", "origin", "syncer/asgard")
    human = git(other, "rev-parse", "HEAD")
    code, out, _ = run(*args)
    assert code == 0 and "not made by syncer; leaving it alone" in out
    git(asgard_repo, "fetch", "-q", "origin")
    assert git(asgard_repo, "rev-parse", "origin/syncer/asgard") == human


def test_pr_branch_deleted_when_git_is_fixed_by_hand(asgard_repo: Path, tmp_path: Path) -> None:
    args = ("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE), "--mode", "pr")
    assert run(*args)[0] == 0
    # Someone merges the branch's content by hand into main.
    git(asgard_repo, "fetch", "-q", "origin")
    git(asgard_repo, "merge", "-q", "--ff-only", "origin/syncer/asgard")
    git(asgard_repo, "push", "-q", "origin", "main")
    code, out, _ = run(*args)
    assert code == 0 and "drift gone: deleted syncer/asgard" in out
    assert git(asgard_repo, "ls-remote", "--heads", "origin", "syncer/asgard") == ""


def test_dry_run_changes_nothing(asgard_repo: Path) -> None:
    before = (asgard_repo / "hosts" / "asgard" / "ollama-backends.yaml").read_bytes()
    code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                       "--mode", "dry-run")
    assert code == 0
    assert "+      - ip: 192.168.68.75   # Mac Studio, LAN" in out
    assert "title: syncer(asgard): copy live values back" in out
    assert (asgard_repo / "hosts" / "asgard" / "ollama-backends.yaml").read_bytes() == before
    assert git(asgard_repo, "ls-remote", "--heads", "origin") .count("refs/heads/") == 1
    assert len(origin_log(asgard_repo)) == 1


def test_cleared_endpoints_produce_no_commit(asgard_repo: Path, tmp_path: Path) -> None:
    live = tmp_path / "live.yaml"
    text = EXAMPLE_LIVE.read_text()
    # Keep the ConfigMap edit away (git already has it) and clear mac-ollama.
    git_cm = (asgard_repo / "hosts" / "asgard" / "ollama-endpoint-manager.yaml").read_text()
    git_cm = git_cm.replace("192.168.68.58 100.115.97.90", "192.168.68.75 100.115.97.90").replace(
        '"100.127.6.20"', '"192.168.68.89 100.127.6.20"')
    (asgard_repo / "hosts" / "asgard" / "ollama-endpoint-manager.yaml").write_text(git_cm)
    backends = (asgard_repo / "hosts" / "asgard" / "ollama-backends.yaml").read_text()
    (asgard_repo / "hosts" / "asgard" / "ollama-backends.yaml").write_text(
        backends.replace("100.127.6.20 ", "192.168.68.89"))
    git(asgard_repo, "commit", "-qam", "copy back by hand")
    git(asgard_repo, "push", "-q", "origin", "main")
    start = text.index("  subsets:\n  - addresses:\n    - ip: 192.168.68.75")
    end = text.index("- apiVersion: v1\n  kind: Endpoints", start)
    live.write_text(text[:start] + text[end:])
    code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "--mode", "commit")
    assert code == 0 and "nothing to commit" in out, out
    assert len(origin_log(asgard_repo)) == 2


def test_push_rejected_for_auth_is_one_clear_line(asgard_repo: Path, tmp_path: Path) -> None:
    from tests.fakes.git_http import GitHTTPServer

    root = tmp_path / "srv"
    root.mkdir()
    shutil.copytree(tmp_path / "origin.git", root / "asgard.git")
    subprocess.run(["git", "--git-dir", str(root / "asgard.git"), "config", "http.receivepack", "true"], check=True)
    with GitHTTPServer(root) as srv:
        code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                             "--mode", "commit", "--remote", f"{srv.url}/asgard.git")
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(
        f"syncer: error: the git remote {srv.url}/asgard.git rejected syncer's credentials (token expired or revoked?)")
    assert "--git-token-file" in err and "git push: fatal: could not read Username" in err
    assert srv.pushes_refused == 1  # told at once: not retried as a race
    assert "4 difference(s)" in out.splitlines()[0]  # the drift report went out before the push


def test_https_push_with_git_token_file(asgard_repo: Path, tmp_path: Path) -> None:
    from tests.fakes.git_http import GitHTTPServer

    root = tmp_path / "srv"
    root.mkdir()
    shutil.copytree(tmp_path / "origin.git", root / "asgard.git")
    subprocess.run(["git", "--git-dir", str(root / "asgard.git"), "config", "http.receivepack", "true"], check=True)
    token_file = tmp_path / "git-token"
    token_file.write_text("s3cr3t-git-token\n")
    with GitHTTPServer(root, token="s3cr3t-git-token") as srv:
        code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                             "--mode", "commit", "--remote", f"{srv.url}/asgard.git", "--git-token-file",
                             str(token_file))
    assert (code, err) == (0, ""), err + out
    assert "s3cr3t-git-token" not in out
    log = subprocess.run(["git", "--git-dir", str(root / "asgard.git"), "log", "--format=%an", "main"],
                         check=True, capture_output=True, text=True).stdout.split()
    assert log == ["syncer", "Ops", "Person"]


def test_sync_with_only_a_remote_works_in_its_own_clone(asgard_repo: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A CronJob pod has no checkout: `syncer sync` with --remote alone takes the installation
    and its config from the clone it makes anyway."""
    empty = tmp_path / "pod"
    (empty / "work").mkdir(parents=True)
    monkeypatch.chdir(empty)
    origin = tmp_path / "origin.git"
    out, err = io.StringIO(), io.StringIO()
    code = main(["sync", "--remote", str(origin), "--mode", "commit", "--clone-dir", str(empty / "work"),
                 "--live-file", str(EXAMPLE_LIVE)], now=NOW, stdout=out, stderr=err)
    assert (code, err.getvalue()) == (0, "")
    subject = git(tmp_path, "--git-dir", str(origin), "log", "-1", "--format=%s", "main")
    assert subject == "syncer(asgard): copy 4 live value(s) back from the cluster"
    # Without --remote it still says what is missing, in one line.
    code = main(["sync", "--mode", "commit", "--live-file", str(EXAMPLE_LIVE)], now=NOW, stdout=out, stderr=err)
    assert code == 2 and "not inside a git repository (pass --repo)" in err.getvalue()


def test_the_base_branch_defaults_to_the_remotes_default_branch(tmp_path: Path) -> None:
    """Was: ``--base-branch`` defaulted to the literal ``main``, so a repository whose default
    branch is ``trunk`` (or ``master``) failed to clone unless told."""
    bare, work = tmp_path / "origin.git", tmp_path / "work"
    git(tmp_path, "init", "-q", "--bare", "-b", "trunk", str(bare))
    git(tmp_path, "init", "-q", "-b", "trunk", str(work))
    shutil.copytree(ROOT / "hosts" / "asgard", work / "hosts" / "asgard")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "asgard manifests")
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "trunk")
    code, out, err = run("sync", "asgard", "--repo", str(work), "--live-file", str(EXAMPLE_LIVE), "--mode", "commit")
    assert (code, err) == (0, ""), out
    assert git(work, "--git-dir", str(bare), "log", "-1", "--format=%s", "trunk") == \
        "syncer(asgard): copy 4 live value(s) back from the cluster"
    assert "main" not in git(work, "--git-dir", str(bare), "branch", "--list")
    # A remote that names no default branch (nothing pushed yet): one line naming the flag.
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", str(empty))
    code, out, err = run("sync", "asgard", "--repo", str(work), "--remote", str(empty),
                         "--live-file", str(EXAMPLE_LIVE), "--mode", "commit")
    assert code == 2 and err.count("\n") == 1 and "names no default branch" in err and "--base-branch" in err, err


SYNCER_AS_AUTHOR = {"GIT_AUTHOR_NAME": "syncer", "GIT_AUTHOR_EMAIL": "syncer@users.noreply.local"}


def forge_branch(tmp_path: Path, old: str, new: str, env: dict[str, str]) -> str:
    """Someone who may push writes ``syncer/asgard`` (base + one commit turning ``old`` into
    ``new`` in ollama-backends.yaml) under the identity ``env`` gives; its sha."""
    other = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(other))
    git(other, "checkout", "-q", "-b", "syncer/asgard")
    backends = other / "hosts" / "asgard" / "ollama-backends.yaml"
    text = backends.read_text()
    assert old in text
    backends.write_text(text.replace(old, new, 1))
    subprocess.run(["git", "commit", "-qam", "syncer(asgard): copy 1 live value(s) back from the cluster"],
                   cwd=other, check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(other), "GIT_CONFIG_NOSYSTEM": "1",
                        "GIT_COMMITTER_NAME": "Ops Person", "GIT_COMMITTER_EMAIL": "ops@example.invalid", **env})
    git(other, "push", "-q", "origin", "syncer/asgard")
    return git(other, "rev-parse", "HEAD")


def live_with_mac_cleared(tmp_path: Path) -> Path:
    import yaml
    doc = yaml.safe_load(EXAMPLE_LIVE.read_text())
    for item in doc["items"]:
        if item["kind"] == "Endpoints" and item["metadata"]["name"] == "mac-ollama":
            item.pop("subsets", None)  # the Mac sleeps
    live = tmp_path / "live-cleared.yaml"
    live.write_text(yaml.safe_dump(doc))
    return live


def test_a_forged_pick_of_an_address_in_no_candidate_list_is_never_carried(asgard_repo: Path,
                                                                           tmp_path: Path) -> None:
    # F9: author and committer both say syncer; the address is in no candidate list.
    forged = forge_branch(tmp_path, "ip: 192.168.68.58", "ip: 203.0.113.66",
                          {**SYNCER_AS_AUTHOR, "GIT_COMMITTER_NAME": "syncer",
                           "GIT_COMMITTER_EMAIL": "syncer@users.noreply.local"})
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file",
                         str(live_with_mac_cleared(tmp_path)), "--mode", "pr", "--forge", "none")
    assert (code, err) == (0, ""), out
    assert ("Endpoints/ai/mac-ollama: the open branch points it at 203.0.113.66, in no candidate list bound to "
            "Service mac-ollama; not kept") in out
    pr = [ln for ln in out.partition("--- pull request ---")[2].splitlines() if not ln.startswith("syncer: ")]
    assert pr and not [ln for ln in pr if "203.0.113.66" in ln]  # no PR row shows it
    git(asgard_repo, "fetch", "-q", "origin")
    head = git(asgard_repo, "rev-parse", "origin/syncer/asgard")
    assert head != forged and "203.0.113.66" not in git(asgard_repo, "show", head)
    assert "ip: 192.168.68.58" in git(asgard_repo, "show", f"{head}:hosts/asgard/ollama-backends.yaml")
    assert git(asgard_repo, "log", "-1", "--format=%s", head).startswith("syncer(asgard): copy 3 live value(s)")


def test_a_commit_authored_as_syncer_but_committed_by_someone_else_is_foreign(asgard_repo: Path,
                                                                            tmp_path: Path) -> None:
    # Without a state record the emails are all syncer has: both must be its own.
    forged = forge_branch(tmp_path, "ip: 192.168.68.58", "ip: 100.115.97.90", SYNCER_AS_AUTHOR)
    code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file",
                       str(live_with_mac_cleared(tmp_path)), "--mode", "pr", "--forge", "none")
    assert code == 0 and "syncer/asgard has 1 commit(s) not made by syncer; leaving it alone" in out, out
    git(asgard_repo, "fetch", "-q", "origin")
    assert git(asgard_repo, "rev-parse", "origin/syncer/asgard") == forged
