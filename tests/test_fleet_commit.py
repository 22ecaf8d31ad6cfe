"""Commit mode when other pushes keep moving the base branch (issue #36), on real git: a bare
origin served by a real ``git daemon --enable=receive-pack`` on 127.0.0.1.

The races are real: the origin's ``pre-receive`` hook lands a "human" commit on ``main`` while
syncer's push is being received, so the server refuses syncer's ref update because ``main`` moved
(``[remote rejected] (failed to update ref)``), exactly as when another push wins. What the hook
lands (``race-mode`` in the origin): a file outside the installation, an edit of the
installation's own file, or -- every time -- enough to run the budget out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLE_LIVE, NOW, ROOT, git
from tests.helpers import fake, run  # noqa: F401 - fake: the fixture
from tests.test_sidecar import CM, UTC, FakeClock, agreed, api_client, seed, settings, wait_for  # noqa: F401
from tests.fakes.kube_api import FakeKubeAPI

import syncer.writeback.deliver as deliver
from syncer.backoff import full_jitter
from syncer.gather.live import SnapshotSource
from syncer.gitrepo import Workspace
from syncer.sidecar.app import Sidecar
from syncer.sidecar.schedule import Schedule, Timing
from syncer.writeback.deliver import Mode, sync_commit
from syncer.errors import GitError
from syncer.writeback.landing import MAX_DROPPED_IN_A_ROW, KeptMoving, PushBudget, race_backoff

#: The origin's pre-receive hook: moves ``main`` with a commit of its own (as another pusher
#: would), outside the quarantine so the ref update is real, while ``race-mode`` says so.
HOOK = r'''#!{python}
import os, subprocess, sys
from pathlib import Path

bare = Path.cwd()
words = (bare / "race-mode").read_text().split() + ["0"]
mode, left = words[0], words[1]
if mode == "off" or (left != "always" and int(left) <= 0):
    sys.exit(0)
sys.stdin.read()
env = {{k: v for k, v in os.environ.items()
        if k not in ("GIT_QUARANTINE_PATH", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")}}
env.update(GIT_AUTHOR_NAME="Ops Person", GIT_AUTHOR_EMAIL="ops@example.invalid", GIT_COMMITTER_NAME="Ops Person",
           GIT_COMMITTER_EMAIL="ops@example.invalid", GIT_INDEX_FILE=str(bare / "race-index"))


def g(*args, text_in=None):
    return subprocess.run(["git", *args], cwd=bare, env=env, input=text_in, capture_output=True, text=True,
                          check=True).stdout


head = g("rev-parse", "refs/heads/main").strip()
done = (bare / "human-commits").read_text().split() if (bare / "human-commits").exists() else []
n = len(done) + 1
if mode == "inside":
    path = "hosts/asgard/ollama-endpoint-manager.yaml"
    text = g("show", head + ":" + path).replace('INTERVAL_SECONDS: "15"', 'INTERVAL_SECONDS: "30"')
else:
    path, text = "docs/human-%d.txt" % n, "human edit %d\n" % n
blob = g("hash-object", "-w", "--stdin", text_in=text).strip()
g("read-tree", head)
g("update-index", "--add", "--cacheinfo", "100644,%s,%s" % (blob, path))
tree = g("write-tree").strip()
commit = g("commit-tree", tree, "-p", head, "-m", "human edit %d" % n).strip()
g("update-ref", "refs/heads/main", commit, head)
with open(bare / "human-commits", "a") as fh:
    fh.write(commit + "\n")
if left != "always":
    (bare / "race-mode").write_text("%s %d\n" % (mode, int(left) - 1))
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def git_daemon(bare: Path, home: Path, *options: str) -> Iterator[str]:
    """A real ``git daemon`` on 127.0.0.1 serving ``bare``'s directory (``options``: what it enables),
    with ``home`` as its HOME (its global git config); yields the git:// URL of ``bare`` once it listens."""
    port = free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", *options, "--listen=127.0.0.1",
                             f"--port={port}", f"--base-path={bare.parent}", str(bare.parent)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/{bare.name}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def served(asgard_repo: Path) -> Iterator[tuple[str, Path]]:
    """(the git:// URL of the origin, the origin's directory): a real git daemon on 127.0.0.1
    taking pushes, with the racing hook installed (``race-mode off`` until a test says)."""
    bare = asgard_repo.parent / "origin.git"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(HOOK.format(python=sys.executable))
    hook.chmod(0o755)
    (bare / "race-mode").write_text("off\n")
    with git_daemon(bare, bare.parent, "--enable=receive-pack") as url:
        yield url, bare


def race(bare: Path, mode: str, times: str) -> None:
    (bare / "race-mode").write_text(f"{mode} {times}\n")


def humans(bare: Path) -> list[str]:
    path = bare / "human-commits"
    return path.read_text().split() if path.exists() else []


def history(bare: Path) -> list[tuple[str, list[str], str, str]]:
    """main, newest first: (commit, parents, author, subject)."""
    out = git(bare, "log", "--format=%H%x09%P%x09%an%x09%s", "main").splitlines()
    return [(c, p.split(), a, s) for c, p, a, s in (line.split("\t") for line in out)]


def counting_detections(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the real detection's calls (it still runs: a spy, not a stand-in)."""
    calls: list[int] = []
    real = deliver._detect

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(deliver, "_detect", spy)
    return calls


def changed_lines(bare: Path, rev: str) -> list[str]:
    out = git(bare, "show", "--format=", "--unified=0", rev)
    return sorted(ln for ln in out.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---")))


def test_main_moved_outside_the_installation_lands_the_same_edits_without_detecting_again(
        served: tuple[str, Path], asgard_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, bare = served
    # what the commit changes when nobody races (measured on a copy of the origin)
    quiet = tmp_path / "quiet.git"
    shutil.copytree(bare, quiet)
    (quiet / "hooks" / "pre-receive").unlink()
    alone = sync_commit(Workspace.open_or_clone(str(quiet), "main", tmp_path / "alone"), "asgard",
                        SnapshotSource([EXAMPLE_LIVE], "ai"), NOW)
    expected = changed_lines(quiet, alone.commit or "")

    detections = counting_detections(monkeypatch)
    race(bare, "outside", "2")  # two pushes in a row lose to a human's unrelated commit
    ws = Workspace.open_or_clone(url, "main", tmp_path / "clone")
    out = sync_commit(ws, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW, sleep=lambda _: None)

    assert out.pushed and len(detections) == 1
    assert any("landed after 3 push attempts" in m and "re-applied on the new main 2 time(s)" in m
               and "detection redone 0 time(s)" in m for m in out.messages), out.messages
    log = history(bare)
    first, second = humans(bare)
    assert [(c, a) for c, _, a, _ in log[:3]] == [(out.commit, "syncer"), (second, "Ops Person"),
                                                 (first, "Ops Person")]
    assert all(len(parents) <= 1 for _, parents, _, _ in log)  # linear
    assert log[0][1] == [second]  # on top of the human's commit, which is kept
    assert sum(1 for _, _, a, _ in log if a == "syncer") == 1  # no duplicate
    assert changed_lines(bare, "main") == expected  # the very same edits
    assert git(bare, "show", "main:docs/human-2.txt") == "human edit 2"
    assert ws.head() == out.commit  # the clone holds what landed (the sidecar loads it next)
    assert "192.168.68.75" in (ws.path / "hosts/asgard/ollama-endpoint-manager.yaml").read_text()


def test_main_moved_in_the_installation_detects_again_and_keeps_the_human_change(
        served: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, bare = served
    detections = counting_detections(monkeypatch)
    race(bare, "inside", "1")  # a person edits the installation's file while syncer pushes
    ws = Workspace.open_or_clone(url, "main", tmp_path / "clone")
    out = sync_commit(ws, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW, sleep=lambda _: None)

    assert out.pushed and len(detections) == 2
    assert any("main moved in hosts/asgard/ollama-endpoint-manager.yaml: detecting again" in m for m in out.messages)
    [human] = humans(bare)
    log = history(bare)
    assert [c for c, _, _, _ in log[:2]] == [out.commit, human] and log[0][1] == [human]
    assert all(len(parents) <= 1 for _, parents, _, _ in log)
    assert sum(1 for _, _, a, _ in log if a == "syncer") == 1
    text = git(bare, "show", "main:hosts/asgard/ollama-endpoint-manager.yaml")
    assert 'INTERVAL_SECONDS: "30"' in text  # the person's change, never reverted to the live "15"
    assert 'MAC_ADDRS: "192.168.68.75 100.115.97.90"' in text  # and the live values copied back
    interval = [d for d in out.result.drifts if d.path_text == "data.INTERVAL_SECONDS"]
    assert interval and interval[0].direction.value == "git"  # pending apply, as detection now sees it


def test_a_one_shot_whose_pushes_all_lose_exits_2_and_says_so_plainly(served: tuple[str, Path],
                                                                      asgard_repo: Path) -> None:
    url, bare = served
    race(bare, "outside", "always")
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--remote", url, "--live-file",
                         str(EXAMPLE_LIVE), "--mode", "commit", "--push-attempts", "3")
    assert code == 2
    assert err.startswith("syncer: error: main kept moving: 3 pushes lost the race to other pushes in "), err
    assert err.rstrip().endswith(" s; nothing was lost, run again") and len(err.strip().splitlines()) == 1
    assert "MAC_ADDRS" in out  # what was found is still printed
    log = history(bare)
    assert not [c for c, _, a, _ in log if a == "syncer"]  # nothing pushed
    assert set(humans(bare)) <= {c for c, _, _, _ in log} and len(humans(bare)) == 3  # every human commit kept


def test_the_time_budget_ends_the_retries(served: tuple[str, Path], tmp_path: Path) -> None:
    url, bare = served
    race(bare, "outside", "always")
    ws = Workspace.open_or_clone(url, "main", tmp_path / "clone")
    ticks = iter(range(0, 1000, 20))  # every look at the clock: 20 s later
    with pytest.raises(KeptMoving) as raised:
        sync_commit(ws, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW, sleep=lambda _: None,
                    budget=PushBudget(attempts=100, seconds=50), clock=lambda: float(next(ticks)))
    assert raised.value.pushes == 3 and raised.value.transient
    assert "main kept moving: 3 pushes lost the race to other pushes in 60 s" in raised.value.message


#: A hook that kills the ``git receive-pack`` serving the push (its parent), the way an overloaded
#: server drops a connection: once per line of ``drop-<hook>`` in the origin. As ``pre-receive``
#: nothing was updated; as ``reference-transaction`` in its ``committed`` state ``main`` already moved
#: to syncer's commit, and the answer is lost (git push: "the remote end hung up unexpectedly").
DROP = r'''#!{python}
import os, signal, sys
from pathlib import Path

sys.stdin.read()
marks = Path.cwd() / "drop-{hook}"
if {state!r} and sys.argv[1:2] != [{state!r}]:
    sys.exit(0)
left = marks.read_text().split() if marks.exists() else []
if left:
    marks.write_text(" ".join(left[1:]))
    os.kill(os.getppid(), signal.SIGKILL)
'''


@pytest.mark.parametrize("hook, state", [("pre-receive", ""), ("reference-transaction", "committed")])
def test_a_dropped_connection_is_a_lost_race_and_the_commit_lands_once(
        served: tuple[str, Path], tmp_path: Path, hook: str, state: str) -> None:
    url, bare = served
    path = bare / "hooks" / hook
    path.write_text(DROP.format(python=sys.executable, hook=hook, state=state))
    path.chmod(0o755)
    (bare / f"drop-{hook}").write_text("1")
    before = history(bare)[0][0]
    ws = Workspace.open_or_clone(url, "main", tmp_path / "clone")
    out = sync_commit(ws, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW, sleep=lambda _: None)

    assert (bare / f"drop-{hook}").read_text() == ""  # the connection was dropped, for real
    log = history(bare)
    assert out.pushed and log[0][0] == out.commit and log[0][1] == [before]
    assert sum(1 for _, _, a, _ in log if a == "syncer") == 1  # landed once: never pushed twice
    assert ws.head() == out.commit
    assert 'MAC_ADDRS: "192.168.68.75 100.115.97.90"' in git(bare, "show", "main:hosts/asgard/ollama-endpoint-manager.yaml")


def test_a_remote_that_keeps_dropping_is_raised_not_retried_for_ever(served: tuple[str, Path],
                                                                      tmp_path: Path) -> None:
    url, bare = served
    path = bare / "hooks" / "pre-receive"
    path.write_text(DROP.format(python=sys.executable, hook="pre-receive", state=""))
    path.chmod(0o755)
    (bare / "drop-pre-receive").write_text("x " * 50)
    ws = Workspace.open_or_clone(url, "main", tmp_path / "clone")
    with pytest.raises(GitError) as raised:
        sync_commit(ws, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW, sleep=lambda _: None)
    assert not isinstance(raised.value, KeptMoving) and "git push failed" in raised.value.message
    assert len((bare / "drop-pre-receive").read_text().split()) == 50 - 1 - MAX_DROPPED_IN_A_ROW
    assert not [c for c, _, a, _ in history(bare) if a == "syncer"]


def test_in_the_sidecar_a_lost_race_is_retry_later_not_an_error(
        served: tuple[str, Path], agreed: Path, fake: FakeKubeAPI, tmp_path: Path,  # noqa: F811
        caplog: pytest.LogCaptureFixture) -> None:
    url, bare = served
    seed(fake, agreed)
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    base = settings(Mode.COMMIT, retry_base=5.0)
    loop = dataclasses.replace(base.loop, budget=PushBudget(attempts=2, seconds=60))
    sc = Sidecar(api_client(fake, tmp_path), Workspace.open_or_clone(url, "main", tmp_path / "clone"),
                 dataclasses.replace(base, loop=loop), clock=clock)
    sc.start(run_loop=False)
    try:
        assert sc.loop.step() is not None  # git and the cluster agree: nothing to commit
        fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "30"}}, manager="kubectl-edit")
        wait_for(lambda: sc.cache.dirty_since is not None)
        clock.advance(10)  # past the debounce
        race(bare, "outside", "always")
        caplog.set_level(logging.WARNING, "syncer.loop")
        report = sc.loop.step()
        assert report is not None and report.error is None and isinstance(report.deferred, KeptMoving)
        sample = sc.metrics.registry.get_sample_value
        assert sample("syncer_passes_total", {"installation": "asgard", "result": "retry_later"}) == 1.0
        assert sample("syncer_passes_total", {"installation": "asgard", "result": "error"}) is None
        assert not sample("syncer_sync_errors_total", {"stage": "git"})  # no failure counted
        assert sc.health.git_error is None and sc.health.readyz()[0]  # readiness unaffected
        [line] = [r for r in caplog.records if "kept moving" in r.getMessage()]
        assert line.levelno == logging.WARNING and getattr(line, "syncer_fields", {})["outcome"] == "retry_later"
        delay = sc.loop.schedule.retry_at - clock.now
        assert 0 <= delay <= 5.0  # full jitter over the first retry's 5 s
        assert len(humans(bare)) == 2 and not [c for c, _, a, _ in history(bare) if a == "syncer"]
        race(bare, "off", "0")
        clock.advance(delay + 0.01)
        report = sc.loop.step()
        assert report is not None and report.reason == "retry" and report.error is None and report.deferred is None
        log = history(bare)
        assert [a for _, _, a, _ in log[:3]] == ["syncer", "Ops Person", "Ops Person"]
        assert all(len(parents) <= 1 for _, parents, _, _ in log)
    finally:
        sc.stop()


def test_a_fleet_of_one_shots_pushing_at_once_all_land_once_each(served: tuple[str, Path], asgard_repo: Path,
                                                                 tmp_path: Path) -> None:
    """Four installations of one repository, four ``syncer sync`` processes started together."""
    url, bare = served
    names = [f"inst-{i}" for i in range(4)]
    conf = (ROOT / "hosts" / "asgard" / "syncer.conf").read_text()
    for name in names:
        shutil.copytree(ROOT / "hosts" / "asgard", asgard_repo / "hosts" / name)
        (asgard_repo / "hosts" / name / "syncer.conf").write_text(conf.replace("installation: asgard",
                                                                               f"installation: {name}"))
    git(asgard_repo, "add", ".")
    git(asgard_repo, "commit", "-q", "-m", "a fleet")
    git(asgard_repo, "push", "-q", "origin", "main")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCER_")}
    env["PYTHONPATH"] = str(ROOT)
    procs = [subprocess.Popen([sys.executable, "-m", "syncer.cli", "sync", name, "--remote", url, "--base-branch",
                               "main", "--live-file", str(EXAMPLE_LIVE), "--mode", "commit"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in names]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err for _, err in outs]
    log = history(bare)
    assert all(len(parents) <= 1 for _, parents, _, _ in log)
    for name in names:
        mine = [s for _, _, a, s in log if a == "syncer" and s.startswith(f"syncer({name}):")]
        assert len(mine) == 1, (name, mine)
        assert "192.168.68.75" in git(bare, "show", f"main:hosts/{name}/ollama-endpoint-manager.yaml")
    assert not any("detecting again" in out for out, _ in outs)  # they raced outside each other's files


def test_backoff_is_full_jitter_over_a_capped_exponential() -> None:
    assert full_jitter(1, 0.5, 30.0, lambda: 1.0) == 0.5
    assert full_jitter(3, 0.5, 30.0, lambda: 0.5) == 1.0
    assert full_jitter(10_000, 0.5, 30.0, lambda: 1.0) == 30.0  # no overflow, capped
    assert race_backoff(1, lambda: 0.0) == 0.0
    assert 0.0 < race_backoff(50, lambda: 0.999) <= 10.0


def test_the_sidecar_retries_a_lost_race_after_jittered_growing_delays() -> None:
    t0 = 1_000_000.0
    s = Schedule(Timing(retry_base=5.0, retry_cap=300.0), t0, rand=lambda: 0.5)
    s.started(t0)
    assert [s.retry_later(t0) for _ in range(8)] == [2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 150.0, 150.0]
    assert s.due(t0 + 149) is None and s.due(t0 + 150) == "retry"
    draws = iter([0.1, 0.9])
    spread = Schedule(Timing(retry_base=5.0), t0, rand=lambda: next(draws))
    assert spread.retry_later(t0) == pytest.approx(0.5) and spread.retry_later(t0) == pytest.approx(9.0)


#: git's ``uploadpack.packObjectsHook`` (read from the daemon's own global config only): kills the
#: ``git upload-pack`` serving a fetch (its parent) once per word of ``drop-fetch``, the way an
#: overloaded server resets a connection mid-fetch; otherwise runs pack-objects as asked.
PACK_HOOK = r'''#!{python}
import os, signal, sys
from pathlib import Path

marks = Path({marks!r})
left = marks.read_text().split() if marks.exists() else []
if left:
    marks.write_text(" ".join(left[1:]))
    os.kill(os.getppid(), signal.SIGKILL)
    sys.exit(1)
os.execvp(sys.argv[1], sys.argv[1:])
'''


def test_a_fetch_whose_connection_dropped_is_tried_again(asgard_repo: Path, tmp_path: Path) -> None:
    bare = asgard_repo.parent / "origin.git"
    home = tmp_path / "daemon-home"
    home.mkdir()
    marks = tmp_path / "drop-fetch"
    hook = tmp_path / "pack-hook"
    hook.write_text(PACK_HOOK.format(python=sys.executable, marks=str(marks)))
    hook.chmod(0o755)
    (home / ".gitconfig").write_text(f"[uploadpack]\n\tpackObjectsHook = {hook}\n")
    with git_daemon(bare, home) as url:
        ws = Workspace.open_or_clone(url, "main", tmp_path / "clone")
        # someone else's commit on the origin: the next fetch has objects to send
        other = tmp_path / "other"
        git(tmp_path, "clone", "-q", str(bare), str(other))
        (other / "notes.txt").write_text("a person's note\n")
        git(other, "add", "notes.txt")
        git(other, "commit", "-qm", "a note")
        git(other, "push", "-q", "origin", "main")
        marks.write_text("1")

        ref = ws.fetch_base()

        assert marks.read_text() == ""  # the first fetch's connection was cut, for real
        assert ws.git("rev-parse", ref) == git(bare, "rev-parse", "main")
        marks.write_text("1 2 3")  # every try cut: the last one's error is raised, said as git said it
        (other / "notes.txt").write_text("another note\n")
        git(other, "commit", "-qam", "another")
        git(other, "push", "-q", "origin", "main")
        with pytest.raises(GitError) as raised:
            ws.fetch_base()
        assert marks.read_text() == "" and "git fetch failed" in raised.value.message
