"""The git HTTPS token goes to the remote's own URL only: never along a redirect (issue #33).

Real git against two loopback smart-HTTP servers (``tests/fakes/git_http.py``, backed by
``git http-backend``): the remote, which can be told to redirect every request, and a second
server on another port (another origin, though the same host) that serves the same
repositories and records every header it receives. The token must never reach the second one,
in clone, fetch, ls-remote or push; and the failure says what happened in one line.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE, git
from tests.fakes.git_http import GitHTTPServer
from tests.helpers import run

from syncer.errors import GitError
from syncer.gitrepo import Identity, Workspace, _env, failure_lines, remote_default_branch, run_git, token_scope
from syncer.secrets import masking

TOKEN = "ghs_RedirectedTokenMustNeverLeave0123456"


def _basic(token: str = TOKEN) -> str:
    return base64.b64encode(f"x-access-token:{token}".encode()).decode()


def _env_for(remote: GitHTTPServer) -> dict[str, str]:
    """The environment syncer's git gets for ``remote`` with the token (to run git by hand)."""
    return _env(Identity(token=TOKEN), f"{remote.url}/asgard.git")


def _leaks(server: GitHTTPServer) -> list[str]:
    """Every header value the server received that holds the token, in any form."""
    forms = (TOKEN, _basic())
    return [f"{method} {path} {name}: {value}" for method, path, headers in server.requests
            for name, value in headers.items() if any(f in value for f in forms)]


@pytest.fixture
def servers(asgard_repo: Path, tmp_path: Path) -> Iterator[tuple[GitHTTPServer, GitHTTPServer]]:
    root = tmp_path / "srv"
    root.mkdir()
    shutil.copytree(tmp_path / "origin.git", root / "asgard.git")
    subprocess.run(["git", "--git-dir", str(root / "asgard.git"), "config", "http.receivepack", "true"], check=True)
    with GitHTTPServer(root, token=TOKEN) as remote, GitHTTPServer(root, token=TOKEN) as elsewhere:
        yield remote, elsewhere


def test_the_scope_is_the_remote_s_own_url() -> None:
    assert token_scope("https://x-access-token:pw@GitHub.example:8443/o/r.git") == "https://github.example:8443/o/r.git"
    assert token_scope("http://[::1]:9/r.git") == "http://[::1]:9/r.git"
    assert token_scope("git@github.com:o/r.git") is None
    assert token_scope("ssh://git@host/r.git") is None
    assert token_scope("/srv/r.git") is None
    assert token_scope("file:///srv/r.git") is None
    assert token_scope("https://host:notaport/r.git") is None
    assert token_scope("https://host/r.git\n.evil") is None


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_clone_never_follows_a_redirect_to_another_origin(servers: tuple[GitHTTPServer, GitHTTPServer],
                                                          tmp_path: Path, status: int) -> None:
    remote, elsewhere = servers
    remote.redirect_to, remote.redirect_status = elsewhere.url, status
    with pytest.raises(GitError) as caught:
        Workspace.open_or_clone(f"{remote.url}/asgard.git", "main", tmp_path / "clone", Identity(token=TOKEN))
    assert elsewhere.requests == []
    assert _leaks(elsewhere) == []
    message = caught.value.message
    assert "\n" not in message and f"returned error: {status}" in message
    assert "a redirect: syncer follows none" in message and "--remote" in message
    assert TOKEN not in message and _basic() not in message
    assert not caught.value.transient  # the same answer next time: no retry loop


def test_fetch_ls_remote_and_push_never_follow_a_redirect(servers: tuple[GitHTTPServer, GitHTTPServer],
                                                          tmp_path: Path) -> None:
    remote, elsewhere = servers
    ws = Workspace.open_or_clone(f"{remote.url}/asgard.git", "main", tmp_path / "clone", Identity(token=TOKEN))
    (ws.path / "hosts" / "asgard" / "notes.txt").write_text("x\n")
    ws.commit(["hosts/asgard/notes.txt"], "a change to push")
    remote.redirect_to = elsewhere.url  # the remote starts redirecting after the clone
    calls = {
        "fetch": ws.sync_to_base,
        "ls-remote": lambda: ws.remote_sha("main"),
        "push": ws.push_base,
        "push-branch": lambda: ws.push_branch("syncer/asgard", None),
        "default-branch": lambda: remote_default_branch(f"{remote.url}/asgard.git", Identity(token=TOKEN)),
    }
    for name, call in calls.items():
        with pytest.raises(GitError, match="a redirect: syncer follows none"):
            call()
        assert elsewhere.requests == [], name
    assert _leaks(elsewhere) == []


def test_the_token_still_reaches_the_remote_itself(servers: tuple[GitHTTPServer, GitHTTPServer],
                                                   tmp_path: Path) -> None:
    """The scoped header is sent proactively to the remote's own URL: a push needs no 401 first."""
    remote, _ = servers
    ws = Workspace.open_or_clone(f"{remote.url}/asgard.git", "main", tmp_path / "clone", Identity(token=TOKEN))
    (ws.path / "hosts" / "asgard" / "notes.txt").write_text("x\n")
    ws.commit(["hosts/asgard/notes.txt"], "a change to push")
    assert ws.push_base()
    assert remote.pushes_refused == 0
    assert all(h.get("Authorization") == f"Basic {_basic()}" for _, _, h in remote.requests)


def test_the_token_is_not_sent_to_another_url_of_the_same_command(servers: tuple[GitHTTPServer, GitHTTPServer],
                                                                  tmp_path: Path) -> None:
    """Scoped by URL: a git command that talks to another server (another remote, a submodule)
    sends it no token, though the same identity runs it."""
    remote, elsewhere = servers
    run_git(["ls-remote", "--", f"{elsewhere.url}/asgard.git"], None, Identity(token=TOKEN), 30,
            remote=f"{remote.url}/asgard.git")
    assert elsewhere.requests and _leaks(elsewhere) == []


def test_sync_against_a_redirecting_remote_exits_2_and_the_token_stays_home(
        servers: tuple[GitHTTPServer, GitHTTPServer], asgard_repo: Path, tmp_path: Path) -> None:
    remote, elsewhere = servers
    remote.redirect_to = elsewhere.url
    token_file = tmp_path / "git-token"
    token_file.write_text(TOKEN + "\n")
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                         "--mode", "commit", "--remote", f"{remote.url}/asgard.git", "--git-token-file",
                         str(token_file))
    assert code == 2
    assert err.count("\n") == 1 and "a redirect: syncer follows none" in err, err
    assert TOKEN not in out + err
    assert elsewhere.requests == []
    assert git(asgard_repo, "status", "--porcelain") == ""


def test_a_token_a_server_echoes_split_across_two_lines_is_masked(servers: tuple[GitHTTPServer, GitHTTPServer],
                                                                   tmp_path: Path) -> None:
    """The attacker's pass of round 4: a remote whose hook prints the token back, cut in two
    lines, in the ``remote:`` lines a refused push quotes."""
    remote, _ = servers
    hook = tmp_path / "srv" / "asgard.git" / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho 'denied for {TOKEN[:21]}'\necho '{TOKEN[21:]} (basic {_basic()[:30]})'\n"
                    "exit 1\n")
    hook.chmod(0o755)
    ws = Workspace.open_or_clone(f"{remote.url}/asgard.git", "main", tmp_path / "clone", Identity(token=TOKEN))
    (ws.path / "hosts" / "asgard" / "notes.txt").write_text("x\n")
    ws.commit(["hosts/asgard/notes.txt"], "a change to push")
    with pytest.raises(GitError) as caught:  # the push as push_base sends it, its error as raised
        ws.git("push", "--quiet", "--porcelain", "origin", "HEAD:refs/heads/main", network=True)
    message = caught.value.message
    assert "pre-receive hook declined" in message, message
    # every line a message might quote (the refused push's remote: lines among them)
    stderr = subprocess.run(["git", "-C", str(ws.path), "push", "origin", "HEAD:refs/heads/main"],
                            capture_output=True, text=True, env={**os.environ, **_env_for(remote)}).stderr
    assert TOKEN[:21] in stderr and TOKEN[21:] in stderr  # the server did echo it, in two lines
    lines = failure_lines(masking.mask(stderr, [TOKEN, _basic()]), [TOKEN, _basic()])
    quoted = "\n".join(lines)
    assert any(ln.startswith("remote: denied for") for ln in lines), quoted
    for secret in (TOKEN, _basic()):
        assert not [secret[i:i + 8] for i in range(len(secret) - 7) if secret[i:i + 8] in quoted], quoted
