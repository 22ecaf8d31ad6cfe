"""Small helpers shared by the bench sections: statistics, timed subprocesses, /proc, git.

Nothing here knows about syncer's internals; sections import syncer themselves.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The real-world corpus the tests carry (tests/data/corpus; sources and licences in its SOURCES.md).
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus"
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- results


@dataclass
class Row:
    """One line of the results table."""

    metric: str
    value: str
    goal: str = ""
    ok: bool | None = None  # None: no goal, or not measured
    baseline: str = ""  # baseline value and/or ratio
    note: str = ""


@dataclass
class Section:
    key: str
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    headline: list[Row] = field(default_factory=list)  # ratios against a baseline
    data: dict[str, Any] = field(default_factory=dict)  # raw numbers (for --json)

    def row(self, metric: str, value: str, goal: str = "", ok: bool | None = None, baseline: str = "",
            note: str = "") -> Row:
        r = Row(metric, value, goal, ok, baseline, note)
        self.rows.append(r)
        return r


# ---------------------------------------------------------------- statistics


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def percentile(xs: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) -- no interpolation, so p95 of 50 samples is a real sample."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def spread(xs: Sequence[float], fmt: str = "{:.2f}") -> str:
    """``median [min–max]`` for a list of measurements."""
    if not xs:
        return "n/a"
    if len(xs) == 1:
        return fmt.format(xs[0])
    return f"{fmt.format(median(xs))} [{fmt.format(min(xs))}–{fmt.format(max(xs))}]"


def ms(seconds: float) -> str:
    if seconds != seconds:  # nan
        return "n/a"
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def secs(seconds: float) -> str:
    if seconds != seconds:
        return "n/a"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


# ---------------------------------------------------------------- processes


@dataclass
class Ran:
    """A finished subprocess and what it cost."""

    cmd: list[str]
    rc: int
    wall: float
    stdout: str
    stderr: str
    peak_kib: int  # the process's own VmHWM, sampled from /proc every 10 ms while it ran
    cpu: float  # user + system seconds of the process itself (wait4)


def vm_hwm(pid: int | str = "self") -> int:
    """Peak RSS (KiB) of a process's current address space; 0 once it has none (exited)."""
    try:
        m = re.search(r"^VmHWM:\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return 0
    return int(m.group(1)) if m else 0


def run_measured(cmd: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
                 timeout: float = 300.0, check: bool = False) -> Ran:
    """Run ``cmd``, timing it and tracking its peak RSS.

    The peak comes from /proc/PID/status VmHWM, not from ``ru_maxrss``: Linux carries a
    parent's high-water mark into a child across fork/exec, so a child of a big process
    would report the parent's peak (seen here as 236 MiB for a 35 MiB ``syncer diff``).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], vm_hwm(proc.pid))
                done.wait(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        timer = threading.Timer(timeout, lambda: _kill(proc.pid))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            done.set()
            sampler.join()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        ran = Ran(list(cmd), proc.returncode, wall, out.read().decode(errors="replace"),
                  err.read().decode(errors="replace"), peak[0], usage.ru_utime + usage.ru_stime)
    if check and ran.rc != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {ran.rc}: {ran.stderr.strip()[-800:]}")
    return ran


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def syncer_cmd(*args: str) -> list[str]:
    """The ``syncer`` console script of this interpreter's environment."""
    script = Path(sys.executable).with_name("syncer")
    return [str(script) if script.exists() else "syncer", *args]


@dataclass(frozen=True)
class ProcSample:
    t: float
    rss_kib: int
    hwm_kib: int
    cpu: float  # utime + stime of the process itself, seconds
    child_cpu: float  # cutime + cstime: reaped children (git)


def proc_sample(pid: int) -> ProcSample:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
    hwm = int(re.search(r"^VmHWM:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    # after "pid (comm) ": state=0 ... utime=11 stime=12 cutime=13 cstime=14
    utime, stime, cutime, cstime = (int(x) / TICKS for x in fields[11:15])
    return ProcSample(time.monotonic(), rss, hwm, utime + stime, cutime + cstime)


# ---------------------------------------------------------------- git


GIT_ENV_BASE = {
    "GIT_AUTHOR_NAME": "Bench Ops", "GIT_AUTHOR_EMAIL": "ops@bench.invalid",
    "GIT_COMMITTER_NAME": "Bench Ops", "GIT_COMMITTER_EMAIL": "ops@bench.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C",
}


def git_env(home: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_ENV_BASE)
    if home is not None:
        env["HOME"] = str(home)
    return env


def git(cwd: Path | None, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=env or git_env(), input=input, capture_output=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode().strip()


def read_ref(bare: Path, ref: str = "refs/heads/main") -> str | None:
    """A ref of a bare repository, read straight from disk (no git process: cheap to poll)."""
    loose = bare / ref
    try:
        return loose.read_text().strip()
    except FileNotFoundError:
        pass
    try:
        for line in (bare / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except FileNotFoundError:
        pass
    return None


def rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------- machine


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        kib = int(re.search(r"^MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text(), re.M).group(1))  # type: ignore[union-attr]
        mem = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, AttributeError):
        pass
    try:
        gitv = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        gitv = "git not found"
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    return {
        "cpu": cpu,
        "cores": f"{os.cpu_count()} ({len(os.sched_getaffinity(0))} usable)",
        "ram": mem,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "git": gitv,
        "kernel": platform.release(),
        "load": load,
    }


def chunks(xs: Iterable[Any], n: int) -> list[list[Any]]:
    out: list[list[Any]] = []
    for x in xs:
        if not out or len(out[-1]) == n:
            out.append([])
        out[-1].append(x)
    return out
