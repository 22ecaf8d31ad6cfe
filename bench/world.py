"""The sidecar bench's world: a fake API server holding a generated installation, its bare git
repository, the ``syncer run`` and poller subprocesses, and what the bench reads back from them
(the fake's request log, /proc, the sidecar's JSON log, git).  Used by ``bench.runtime``.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import ROOT, ProcSample, git, git_env, proc_sample, read_ref, syncer_cmd
from bench.gen import Installation, declared_objects, init_repos
from tests.fakes.kube_api import FakeKubeAPI, RequestRecord  # the tests' loopback fake

N_OBJECTS = 10
POLL_N = 10.0
KEYS = ("LOG_LEVEL", "TIMEOUT_SECONDS", "PORT")


def sidecar_available() -> str | None:
    """None when ``syncer run`` exists; else why not."""
    if not (ROOT / "syncer" / "sidecar" / "loop.py").exists():
        return "syncer/sidecar/loop.py missing"
    ran = subprocess.run(syncer_cmd("run", "--help"), capture_output=True, text=True)
    if ran.returncode != 0:
        return "`syncer run` subcommand missing"
    return None


@dataclass
class World:
    root: Path
    fake: FakeKubeAPI
    inst: Installation
    bare: Path
    start: str
    kubeconfig: Path
    configmaps: list[tuple[str, str]]  # (namespace, name)

    def edit(self, cm: int, data: dict[str, str]) -> float:
        ns, name = self.configmaps[cm % len(self.configmaps)]
        t0 = time.perf_counter()
        self.fake.patch("v1", "ConfigMap", ns, name, {"data": data}, manager="kubectl-edit")
        return t0

    def wait_commit(self, old: str | None, timeout: float) -> tuple[str | None, float]:
        """Poll the bare repo's main (a file read, every 2 ms) until it moves."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            now = read_ref(self.bare)
            if now != old:
                return now, time.perf_counter()
            time.sleep(0.002)
        return None, time.perf_counter()

    def requests_between(self, t0: float, t1: float) -> list[RequestRecord]:
        with self.fake._lock:  # the fake's own lock; its request log is appended under it
            return [r for r in self.fake.requests if t0 <= r.time < t1]


def make_world(root: Path) -> World:
    fake = FakeKubeAPI().start()  # bookmarks as kube-apiserver v1.20: none while nothing changes
    inst, bare = init_repos(root, "bench", N_OBJECTS, drifted=[])
    configmaps = []
    for obj in declared_objects(N_OBJECTS):
        fake.put(obj, applied=True)  # as `kubectl apply` leaves it: last-applied annotation, managedFields
        if obj["kind"] == "ConfigMap":
            configmaps.append((obj["metadata"]["namespace"], obj["metadata"]["name"]))
    kc = fake.kubeconfig(root / "kubeconfig")
    return World(root, fake, inst, bare, git(bare, "rev-parse", "main"), kc, configmaps)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 2.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # loopback only
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError:
        return 0, ""


def metric_total(text: str, name: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


@dataclass
class Window:
    """CPU and memory of one process over a time window, from /proc samples."""

    start: ProcSample
    end: ProcSample
    rss_max: int

    @property
    def wall(self) -> float:
        return self.end.t - self.start.t

    @property
    def cpu_pct(self) -> float:
        return 100.0 * (self.end.cpu - self.start.cpu) / self.wall

    @property
    def child_pct(self) -> float:
        return 100.0 * (self.end.child_cpu - self.start.child_cpu) / self.wall


def watch_process(pid: int, seconds: float, every: float = 1.0,
                  during: Callable[[float], None] | None = None) -> Window:
    """Sample ``pid`` for ``seconds``; ``during(t)`` is called at each tick (e.g. to make changes)."""
    first = proc_sample(pid)
    rss = first.rss_kib
    end = first.t + seconds
    while time.monotonic() < end:
        if during is not None:
            during(time.monotonic() - first.t)
        else:
            time.sleep(min(every, max(0.0, end - time.monotonic())))
        rss = max(rss, proc_sample(pid).rss_kib)
    return Window(first, proc_sample(pid), rss)


@dataclass
class Procs:
    sidecar: subprocess.Popen[bytes]
    poller: subprocess.Popen[bytes] | None
    port: int
    poll_log: Path
    side_log: Path
    ready_after: float
    extra: dict[str, Any] = field(default_factory=dict)

    def polls(self) -> list[dict[str, Any]]:
        out = []
        for line in self.poll_log.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out


def start_procs(a: World, b: World | None, root: Path) -> Procs:
    port = _free_port()
    env = git_env(root)
    env["PYTHONUNBUFFERED"] = "1"
    side_log = root / "sidecar.log"
    cmd = syncer_cmd("run", "bench", "--remote", str(a.bare), "--mode", "commit", "--debounce", "0",
                     "--kubeconfig", str(a.kubeconfig), "--listen", f"127.0.0.1:{port}",
                     "--clone-dir", str(root / "sidecar-clone"), "--log-format", "json")
    t0 = time.perf_counter()
    sidecar = subprocess.Popen(cmd, stdout=side_log.open("wb"), stderr=subprocess.STDOUT, env=env, cwd=root)
    poller = None
    poll_log = root / "poller.log"
    if b is not None:
        poller = subprocess.Popen([sys.executable, "-m", "bench.poller", "bench", "--kubeconfig", str(b.kubeconfig),
                                   "--remote", str(b.bare), "--clone-dir", str(root / "poller-clone"),
                                   "--interval", str(POLL_N)],
                                  stdout=poll_log.open("wb"), stderr=(root / "poller.err").open("wb"), env=env,
                                  cwd=ROOT)
    ready = None
    while time.perf_counter() - t0 < 120:
        if sidecar.poll() is not None:
            raise RuntimeError(f"syncer run exited {sidecar.returncode}: {side_log.read_text()[-1500:]}")
        if http_get(f"http://127.0.0.1:{port}/readyz")[0] == 200:
            ready = time.perf_counter() - t0
            break
        time.sleep(0.05)
    if ready is None:
        raise RuntimeError(f"syncer run not ready after 120 s: {side_log.read_text()[-1500:]}")
    # Let the start-up pass finish (it records the agreed state) before the first change.
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline and metric_total(http_get(f"http://127.0.0.1:{port}/metrics")[1],
                                                     "syncer_last_sync_timestamp_seconds") == 0:
        time.sleep(0.1)
    return Procs(sidecar, poller, port, poll_log, side_log, ready)


def stop_procs(p: Procs) -> float:
    """SIGTERM both; seconds the sidecar took to exit."""
    if p.poller is not None and p.poller.poll() is None:
        p.poller.send_signal(signal.SIGTERM)
    t0 = time.perf_counter()
    if p.sidecar.poll() is None:
        p.sidecar.send_signal(signal.SIGTERM)
    try:
        p.sidecar.wait(30)
    except subprocess.TimeoutExpired:
        p.sidecar.kill()
        p.sidecar.wait()
    took = time.perf_counter() - t0
    if p.poller is not None:
        try:
            p.poller.wait(10)
        except subprocess.TimeoutExpired:
            p.poller.kill()
            p.poller.wait()
    return took


def classify_requests(recs: list[RequestRecord]) -> str:
    """``watch 3, list 2, PUT 1``: what kinds of requests a window held."""
    c: Counter[str] = Counter()
    for r in recs:
        if r.is_watch:
            c["watch"] += 1
        elif r.method == "GET" and re.search(r"(/api|/apis|/api/v1|/apis/[^/]+(/[^/]+)?|/version)$", r.path):
            c["discovery"] += 1
        elif r.method == "GET":
            c["list" if any(k in r.query for k in ("fieldSelector", "labelSelector", "limit")) else "get"] += 1
        else:
            c[r.method + (" (dry run)" if "dryRun" in r.query else "")] += 1
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1])) or "none"


def commit_sizes(world: World) -> list[int]:
    """Lines changed (added + removed) per commit pushed since the start, oldest first."""
    out = git(world.bare, "log", "--reverse", "--format=@%H", "--numstat", f"{world.start}..main",
              env=git_env(world.root))
    commits: list[int] = []
    for line in out.splitlines():
        if line.startswith("@"):
            commits.append(0)
        elif line.strip() and commits:
            added, removed, _ = line.split("\t", 2)
            commits[-1] += int(added) + int(removed)
    return commits


def stuck_passes(log: Path, t0: float, t1: float) -> int:
    """Passes in [t0, t1) (unix time) that found drift but wrote nothing, from the sidecar's JSON log."""
    from datetime import datetime

    n = 0
    for line in log.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("msg") != "pass done" or not rec.get("drifts") or rec.get("written"):
            continue
        try:
            when = datetime.fromisoformat(str(rec.get("time")).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        if t0 - 1 <= when < t1:
            n += 1
    return n


def live_values_in_git(world: World) -> bool:
    """Does git's main hold every ConfigMap's current live ``LOG_LEVEL``?"""
    tree = git(world.bare, "grep", "-h", "LOG_LEVEL:", "main", "--", "hosts", env=git_env(world.root))
    for ns, name in world.configmaps:
        live = ((world.fake.get("v1", "ConfigMap", ns, name) or {}).get("data") or {}).get("LOG_LEVEL")
        if live is None or not re.search(rf"LOG_LEVEL: {re.escape(live)}(\s|$)", tree, re.M):
            return False
    return True
