"""Push outcomes told as git told them, with real git and bare remotes: a refusal by a hook
quotes the server's ``remote:`` lines and is not retried as a race; a race is fetched and
redone; no remote at all names both ways to give one; a remote that rejects the credentials, or
denies access, or is not there, is said so. The drift report reaches stdout before any push.
(The real kube-apiserver runs the same in tests/realapi/test_realapi_truth.py.)"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE, git
from tests.helpers import run

from syncer.gitoutcome import (
    GitAccessDenied, GitAuthFailed, GitRemoteNotFound, Pushed, PushRefused, push_outcome, remote_failure,
)
from syncer.gitrepo import Workspace

HOOK = """#!/bin/sh
echo run >> "$(dirname "$0")/../hook-runs"
echo "protected branch: direct pushes to main are refused" >&2
echo "open a pull request instead" >&2
exit 1
"""


def refusing(origin: Path) -> Path:
    """A pre-receive hook in the bare ``origin`` that refuses every push (and counts its runs)."""
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    return origin / "hook-runs"


def test_a_push_refused_by_a_hook_quotes_the_server_and_is_not_retried(asgard_repo: Path, tmp_path: Path) -> None:
    runs = refusing(tmp_path / "origin.git")
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                         "--mode", "commit", "--clone-dir", str(tmp_path / "clone"))
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith(f"syncer: error: {tmp_path / 'origin.git'} refused the push of main (pre-receive hook "
                          "declined): remote: protected branch: direct pushes to main are refused; remote: open a "
                          "pull request instead; not retried"), err
    assert "kept moving" not in err and "will retry" not in err
    assert runs.read_text().count("run") == 1  # one push: a refusal is no race
    # the drift report went out before the push was tried, diff included
    assert out.startswith("asgard: 4 difference(s) in 3 object(s); 4 to copy back into git")
    assert "+  MAC_ADDRS: " in out and "pushed" not in out


def test_a_pr_branch_refused_by_a_hook_is_the_same_error(asgard_repo: Path, tmp_path: Path) -> None:
    refusing(tmp_path / "origin.git")
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                         "--mode", "pr", "--forge", "none", "--clone-dir", str(tmp_path / "clone"))
    assert code == 2 and "refused the push of syncer/asgard (pre-receive hook declined)" in err, err
    assert "moved while pushing" not in err
    assert out.startswith("asgard: 4 difference(s)") and "--- pull request ---" in out


def test_a_refused_push_in_json_still_carries_the_drifts(asgard_repo: Path, tmp_path: Path) -> None:
    import json

    refusing(tmp_path / "origin.git")
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                         "--mode", "commit", "--clone-dir", str(tmp_path / "clone"), "-o", "json")
    doc = json.loads(out)  # one document
    assert code == 2 and doc["in_sync"] is False and len(doc["drifts"]) == 4
    assert "refused the push of main" in doc["errors"][-1]["message"]


def test_no_origin_and_no_remote_names_both(asgard_repo: Path) -> None:
    git(asgard_repo, "remote", "remove", "origin")
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                         "--mode", "commit")
    assert (code, out) == (2, "")
    assert err == (f"syncer: error: --mode commit pushes, and there is no git remote to push to: the repository at "
                   f"{asgard_repo} has no remote 'origin' and no --remote was given (pass --remote URL, or git -C "
                   f"{asgard_repo} remote add origin URL)\n")


def test_a_race_is_redone_after_a_jittered_pause(asgard_repo: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from syncer.writeback import deliver as sync
    from syncer.gather.live import SnapshotSource

    pauses: list[float] = []
    ws = Workspace.open_or_clone(str(tmp_path / "origin.git"), "main", tmp_path / "clone")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(other))
    real_push = Workspace.push

    def push_after_someone_else(self: Workspace, target: str, *options: str, rev: str = "HEAD"):  # type: ignore[no-untyped-def]
        if not pauses and not (other / "NOTES").exists():  # a human pushes first, once
            (other / "NOTES").write_text("unrelated\n")
            git(other, "add", "NOTES")
            git(other, "-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-qm", "notes")
            git(other, "push", "-q", "origin", "main")
        return real_push(self, target, *options, rev=rev)

    monkeypatch.setattr(Workspace, "push", push_after_someone_else)
    out = sync.sync_commit(ws, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), sync_now(), sleep=pauses.append)
    assert out.commit and any("moved while committing" in m for m in out.messages)
    from syncer.writeback.landing import RACE_BACKOFF_FIRST

    assert len(pauses) == 1 and 0 <= pauses[0] <= RACE_BACKOFF_FIRST
    assert git(tmp_path / "origin.git", "log", "-1", "--format=%H", "main") == out.commit


def sync_now():  # type: ignore[no-untyped-def]
    from tests.conftest import NOW

    return NOW


@pytest.mark.parametrize("stdout,how,reason", [
    ("To x\n!\tHEAD:refs/heads/main\t[rejected] (non-fast-forward)\nDone\n", Pushed.RACE, "non-fast-forward"),
    ("To x\n!\tHEAD:refs/heads/main\t[rejected] (fetch first)\nDone\n", Pushed.RACE, "fetch first"),
    ("To x\n!\tHEAD:refs/heads/b\t[rejected] (stale info)\nDone\n", Pushed.RACE, "stale info"),
    ("To x\n!\tHEAD:refs/heads/main\t[remote rejected] (cannot lock ref 'refs/heads/main': is at 1 but expected 2)\n",
     Pushed.RACE, "cannot lock ref 'refs/heads/main': is at 1 but expected 2"),
    ("To x\n!\tHEAD:refs/heads/main\t[remote rejected] (protected branch hook declined)\nDone\n", Pushed.REFUSED,
     "protected branch hook declined"),
    ("To x\n!\tHEAD:refs/heads/main\t[remote rejected] (branch is currently checked out)\nDone\n", Pushed.REFUSED,
     "branch is currently checked out"),
])
def test_push_outcome_reads_the_porcelain_status(stdout: str, how: Pushed, reason: str) -> None:
    got = push_outcome(1, stdout, "remote: error: GH006: Protected branch update failed\n", "origin", "main")
    assert (got.how, got.reason) == (how, reason)
    if how is Pushed.REFUSED:
        assert isinstance(got.error, PushRefused) and not got.error.transient
        assert got.error.remote_lines == ("remote: error: GH006: Protected branch update failed",)
    assert push_outcome(0, "", "", "origin", "main").how is Pushed.DONE


@pytest.fixture
def answering() -> Iterator[tuple[list[int], str]]:
    """A git smart-HTTP server answering each request with the status in the list."""
    status = [401]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(status[0])
            if status[0] == 401:
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield status, f"http://127.0.0.1:{httpd.server_address[1]}/infra.git"
    finally:
        httpd.shutdown()


@pytest.mark.parametrize("code,error", [(401, GitAuthFailed), (403, GitAccessDenied), (404, GitRemoteNotFound)])
def test_a_remote_that_cannot_be_used_says_why(answering: tuple[list[int], str], asgard_repo: Path, tmp_path: Path,
                                               code: int, error: type) -> None:
    status, url = answering
    status[0] = code
    code_, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE), "--mode",
                          "commit", "--remote", url, "--base-branch", "main", "--clone-dir", str(tmp_path / "c"))
    assert code_ == 2 and err.count("\n") == 1, err
    said = {401: f"the git remote {url} rejected syncer's credentials (token expired or revoked?)",
            403: f"the git remote {url} refused access (403): the credentials work, but may not read",
            404: f"no git repository at {url}"}[code]
    assert err.startswith(f"syncer: error: {said}"), err
    done = subprocess.run(["git", "ls-remote", "--", url], capture_output=True, text=True,
                          env={"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false", "LC_ALL": "C",
                               "PATH": "/usr/bin:/bin"})
    assert isinstance(remote_failure(done.stderr, url, "ls-remote"), error)


def test_a_missing_local_remote_is_not_found(asgard_repo: Path, tmp_path: Path) -> None:
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE), "--mode",
                         "commit", "--remote", str(tmp_path / "nowhere.git"), "--base-branch", "main")
    assert code == 2 and err.startswith(f"syncer: error: no git repository at {tmp_path / 'nowhere.git'}"), err
