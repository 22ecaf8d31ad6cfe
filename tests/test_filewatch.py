"""Config hot reload through a kubelet-style ``..data`` symlink swap, and ``diff --watch``."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

from tests.conftest import EXAMPLE_LIVE, ROOT
from tests.test_sidecar import (  # noqa: F401 - fixtures
    FakeClock, _loopback_only, fake, live_like_example, seed, sidecar, wait_for,
)

from tests.fakes.kube_api import FakeKubeAPI
from syncer.filewatch import DirWatcher, rerun_on_change
from syncer.sidecar.app import ConfigOverride
from syncer.writeback.deliver import Mode

CONFIG = (ROOT / "hosts" / "asgard" / "syncer.conf").read_text()


def mount(directory: Path, text: str) -> Path:
    """A ConfigMap volume as the kubelet writes it; returns the path syncer is given."""
    directory.mkdir()
    version = directory / "..2026_01_01_00_00_00.000000001"
    version.mkdir()
    (version / "syncer.yaml").write_text(text)
    os.symlink(version.name, directory / "..data")
    os.symlink("..data/syncer.yaml", directory / "syncer.yaml")
    return directory / "syncer.yaml"


def swap(directory: Path, text: str, stamp: str = "2026_01_01_00_05_00.000000002") -> None:
    """The kubelet's update: new timestamped dir, new ``..data`` symlink renamed over the old one."""
    old = os.readlink(directory / "..data")
    version = directory / f"..{stamp}"
    version.mkdir()
    (version / "syncer.yaml").write_text(text)
    os.symlink(version.name, directory / "..data_tmp")
    os.replace(directory / "..data_tmp", directory / "..data")
    (directory / old / "syncer.yaml").unlink()
    (directory / old).rmdir()


def test_a_data_symlink_swap_is_seen_and_reloaded(tmp_path: Path) -> None:
    config = mount(tmp_path / "config", CONFIG)
    override = ConfigOverride(config, "asgard")
    assert override.current.stable_for == 600
    seen: list[set[str]] = []

    def changed(paths: set[str]) -> None:
        seen.append(paths)
        override.reload()

    watcher = DirWatcher(config.parent, changed).start()
    try:
        assert watcher.ready.wait(5)
        swap(config.parent, CONFIG.replace("stableFor: 10m", "stableFor: 1m"))
        wait_for(lambda: override.current.stable_for == 60, what="the reload")
        assert override.generation == 1
        # syncer.yaml itself (a symlink to ..data/syncer.yaml) never changed: the directory did.
        assert str(config) not in set().union(*seen)
        assert str(config.parent / "..data") in set().union(*seen)
        # A broken update keeps the last good config.
        swap(config.parent, "stableFor: soon\n", "2026_01_01_00_10_00.000000003")
        wait_for(lambda: len(seen) >= 2, what="the second change")
        assert override.current.stable_for == 60 and override.generation == 1
    finally:
        watcher.stop()


def test_the_sidecar_reloads_its_config_without_a_restart(asgard_repo: Path, fake: FakeKubeAPI,
                                                         tmp_path: Path) -> None:
    seed(fake, asgard_repo)
    live_like_example(fake)  # mac-ollama picked 192.168.68.75 at 08:03:24
    config = mount(tmp_path / "config", CONFIG)
    clock = FakeClock(datetime(2026, 8, 21, 8, 8, 24, tzinfo=timezone.utc))  # held for 5 minutes
    sc = sidecar(fake, asgard_repo, tmp_path, mode=Mode.DRY_RUN, clock=clock, config_file=config)
    sc.start(run_loop=False)
    try:
        assert sc.dirwatch is not None and sc.dirwatch.ready.wait(5)
        report = sc.loop.step()
        assert report is not None and report.outcome is not None
        mac = [d for d in report.outcome.result.drifts if d.ref.name == "mac-ollama"]
        assert [(d.action.value, d.reason) for d in mac] == [("wait", "held 5m00s of 10m00s")]
        swap(config.parent, CONFIG.replace("stableFor: 10m", "stableFor: 2m"))
        wait_for(lambda: sc.loop.due(clock()) == "config", what="the reload to ask for a pass")
        report = sc.loop.step()
        assert report is not None and report.reason == "config" and report.outcome is not None
        mac = [d for d in report.outcome.result.drifts if d.ref.name == "mac-ollama"]
        assert [(d.action.value, d.reason) for d in mac] == [("write", "stable for 5m00s")]
    finally:
        sc.stop()


def test_rerun_on_change_runs_again_after_each_change(tmp_path: Path) -> None:
    runs: list[int] = []
    stop = threading.Event()
    ready = threading.Event()

    def run() -> int:
        runs.append(1)
        ready.set()
        return len(runs)

    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(rerun_on_change(tmp_path, run, stop, debounce_ms=50)))
    thread.start()
    try:
        assert ready.wait(5)
        # the OS watch starts right after the first run; keep touching until a rerun is seen
        wait_for(lambda: (tmp_path / "a.yaml").write_text(str(len(runs))) and len(runs) >= 2, what="a rerun")
    finally:
        stop.set()
        thread.join(5)
    assert result and result[0] == len(runs) >= 2


def test_diff_watch_reruns_when_a_manifest_changes(asgard_repo: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "syncer.cli", "diff", "asgard", "--repo", str(asgard_repo), "--live-file",
           str(EXAMPLE_LIVE), "--watch"]
    # Ctrl-C as a terminal sends it. A test run started in the background (`pytest &`, nohup, some CI
    # runners) inherits SIGINT ignored, and so would the child: restore the default, as a terminal has it.
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(iter(proc.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        wait_for(lambda: any("watching" in line for line in out), timeout=20, what="the first run")
        backends = asgard_repo / "hosts" / "asgard" / "ollama-backends.yaml"
        # Git catches up with mac-ollama's live address: the next run has one difference fewer.
        # (Written until seen: the OS watch starts just after the first run's last line.)
        fixed = backends.read_text().replace("192.168.68.58", "192.168.68.75")

        def saved_and_rerun() -> bool:  # saved atomically, as editors do: never read half-written
            tmp = backends.with_name(".ollama-backends.yaml.tmp")
            tmp.write_text(fixed)
            os.replace(tmp, backends)
            return sum("watching" in line for line in out) >= 2

        wait_for(saved_and_rerun, timeout=20, what="the rerun")
        proc.send_signal(signal.SIGINT)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(5)
    text = "".join(out)
    first, second = re.split(r"syncer: watching .*\n", text)[:2]
    assert "Endpoints/ai/mac-ollama" in first and "Endpoints/ai/mac-ollama" not in second
    assert "asgard: 4 difference(s)" in first and "asgard: 3 difference(s)" in second
