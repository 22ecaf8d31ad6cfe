"""A fleet of installations pushing to ONE repository at once, in commit mode (issue #36).

One repository holds ``hosts/inst-000/`` ... ``hosts/inst-<N-1>/`` (each a copy of the asgard
example, stale as git had it) and is served by a real ``git daemon --enable=receive-pack`` on
127.0.0.1 (a free port). N ``syncer sync inst-NNN --mode commit`` processes, each with its own
``--live-file`` snapshot (a copy of examples/asgard-live.yaml: four values to copy back), are
started together -- a fleet-wide edit, or every sidecar restarting after an upgrade -- and all
push to ``main``. Measured: how many landed, how many were lost (a process that said it pushed
and whose commit is not in ``main``: must be 0), duplicates (an installation with more than one
commit: must be 0), push attempts (from each process's own report), the wall time until the
last process ended, and whether ``main`` is linear (no merge commit, every commit one parent).

``--human`` adds a person pushing an unrelated commit (a file under ``docs/``, outside every
installation) every 200 ms for as long as the syncers run, fetching and rebasing when they lose
the race themselves: every one of their commits must be in ``main`` at the end.

    python -m bench.fleet [--sizes 10,20,40,100] [--human] [--baseline /work/main]

``--baseline DIR`` runs the code of that checkout (``PYTHONPATH=DIR python -m syncer.cli``)
instead of this one's, for a before/after pair.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import ROOT, git, git_env, read_ref

LIVE = ROOT / "examples" / "asgard-live.yaml"
#: What every installation's commit must contain: a value only the live snapshot holds.
LIVE_VALUE = "192.168.68.75"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_repo(work: Path, n: int) -> Path:
    """``work/srv/fleet.git`` holding N copies of hosts/asgard, plus each one's live snapshot
    under ``work/live/``."""
    seed, bare, live = work / "seed", work / "srv" / "fleet.git", work / "live"
    for d in (seed, live):
        d.mkdir(parents=True)
    git(None, "init", "-q", "--bare", "-b", "main", str(bare))
    git(None, "init", "-q", "-b", "main", str(seed))
    (seed / "README.md").write_text("fleet repository (bench)\n")
    (seed / "docs").mkdir()
    (seed / "docs" / "log.txt").write_text("human edits\n")
    conf = (ROOT / "hosts" / "asgard" / "syncer.conf").read_text()
    for i in range(n):
        name = f"inst-{i:03d}"
        shutil.copytree(ROOT / "hosts" / "asgard", seed / "hosts" / name)
        (seed / "hosts" / name / "syncer.conf").write_text(conf.replace("installation: asgard", f"installation: {name}"))
        shutil.copy(LIVE, live / f"{name}.yaml")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", f"{n} installations")
    git(seed, "push", "-q", str(bare), "main")
    return bare


@dataclass
class Daemon:
    proc: subprocess.Popen[bytes]
    url: str

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def serve(srv: Path) -> Daemon:
    port = free_port()
    proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
                             "--max-connections=0", "--listen=127.0.0.1", f"--port={port}", f"--base-path={srv}", str(srv)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return Daemon(proc, f"git://127.0.0.1:{port}/fleet.git")
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("git daemon did not start listening")


@dataclass
class Human:
    """A person pushing one unrelated commit every ``every`` seconds (rebasing when they lose)."""

    url: str
    clone: Path
    every: float = 0.2
    pushed: list[str] = field(default_factory=list)
    lost_races: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        env = git_env(self.clone.parent)
        git(None, "clone", "-q", self.url, str(self.clone), env=env)
        n = 0
        while not self.stop.is_set():
            started = time.monotonic()
            n += 1
            with open(self.clone / "docs" / "log.txt", "a") as fh:
                fh.write(f"edit {n}\n")
            git(self.clone, "commit", "-q", "-am", f"human edit {n}", env=env)
            for _ in range(50):
                done = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=self.clone, env=env,
                                      capture_output=True, check=False)
                if done.returncode == 0:
                    self.pushed.append(git(self.clone, "rev-parse", "HEAD", env=env))
                    break
                self.lost_races += 1
                git(self.clone, "pull", "-q", "--rebase", "origin", "main", env=env)
            self.stop.wait(max(0.0, self.every - (time.monotonic() - started)))


@dataclass
class Run:
    n: int
    human: bool
    wall: float
    codes: dict[str, int]
    attempts: dict[str, int]
    landed: set[str]
    duplicates: int
    lost: int
    linear: bool
    commits: int
    human_pushed: int = 0
    human_kept: int = 0
    human_lost_races: int = 0
    redetects: int = 0
    errors: list[str] = field(default_factory=list)
    #: seconds after the start at which main moved (every push that landed, the human's too)
    moves: list[float] = field(default_factory=list)
    #: per landed process, seconds from its first push to its landing (its own report)
    racing: list[float] = field(default_factory=list)


def _attempts(stdout: str) -> tuple[int, int]:
    """Push attempts and re-detections a process reported: this code says ``after N push
    attempt(s)``; older code says "moved while committing" once per lost race."""
    m = re.search(r"after (\d+) push attempt", stdout)
    redetects = len(re.findall(r"detecting again", stdout))
    if m:
        return int(m.group(1)), redetects
    m = re.search(r"(\d+) pushes", stdout)
    lost = stdout.count("moved while committing")
    return (int(m.group(1)) if m else lost + 1), lost


def run_fleet(n: int, human: bool, baseline: Path | None, work: Path) -> Run:
    bare = build_repo(work, n)
    daemon = serve(bare.parent)
    code_root = baseline or ROOT
    env = {**os.environ, "PYTHONPATH": str(code_root), "HOME": str(work)}
    for name in list(env):
        if name.startswith("SYNCER_"):
            del env[name]
    procs: dict[str, subprocess.Popen[str]] = {}
    person = Human(daemon.url, work / "human") if human else None
    thread = threading.Thread(target=person.run, daemon=True) if person else None
    try:
        if thread is not None:
            thread.start()
            time.sleep(0.5)  # the human is pushing before the fleet starts
        names = [f"inst-{i:03d}" for i in range(n)]
        moves: list[float] = []
        watching = threading.Event()

        def watch_ref() -> None:  # when main moved, read from disk every 10 ms
            last = read_ref(bare)
            while not watching.is_set():
                now = read_ref(bare)
                if now != last:
                    moves.append(time.monotonic() - t0)
                    last = now
                watching.wait(0.01)
        t0 = time.monotonic()
        threading.Thread(target=watch_ref, daemon=True).start()
        procs.update({name: subprocess.Popen(
            [sys.executable, "-m", "syncer.cli", "sync", name, "--remote", daemon.url, "--base-branch", "main",
             "--live-file", str(work / "live" / f"{name}.yaml"), "--mode", "commit",
             "--clone-dir", str(work / "clones" / name)],
            cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in names})
        outs = {name: p.communicate(timeout=900) for name, p in procs.items()}
        wall = time.monotonic() - t0
        watching.set()
        if person is not None and thread is not None:
            person.stop.set()
            thread.join(60)
        codes = {name: p.returncode for name, p in procs.items()}
        attempts, redetects, errors = {}, 0, []
        for name, (out, err) in outs.items():
            a, r = _attempts(out + err)
            attempts[name], redetects = a, redetects + r
            if codes[name] != 0:
                errors.append(f"{name}: exit {codes[name]}: {err.strip().splitlines()[-1] if err.strip() else ''}")
        racing = sorted(float(m.group(1)) for out, _ in outs.values()
                        for m in [re.search(r"push attempts in ([0-9.]+) s", out)] if m)
        check = work / "check"
        git(None, "clone", "-q", str(bare), str(check))
        log = git(check, "log", "--format=%H %P%x09%s", "main").splitlines()
        linear = all(len(line.split("\t")[0].split()) <= 2 for line in log)
        per: dict[str, int] = {}
        for name in names:
            touched = git(check, "log", "--format=%H", "main", "--", f"hosts/{name}").split()
            per[name] = len(touched) - 1  # the seed commit touched every installation
        landed = {name for name in names if per[name] >= 1 and LIVE_VALUE in
                  (check / "hosts" / name / "ollama-endpoint-manager.yaml").read_text()}
        lost = sum(1 for name in names if codes[name] == 0 and name not in landed)
        run = Run(n, human, wall, codes, attempts, landed, sum(max(0, c - 1) for c in per.values()), lost, linear,
                  len(log), redetects=redetects, errors=errors, moves=moves, racing=racing)
        if person is not None:
            main = set(git(check, "rev-list", "main").split())
            run.human_pushed, run.human_kept = len(person.pushed), sum(1 for sha in person.pushed if sha in main)
            run.human_lost_races = person.lost_races
        return run
    finally:
        for p in procs.values():  # interrupted: end the syncers this run started
            if p.poll() is None:
                p.kill()
                p.wait()
        if person is not None:
            person.stop.set()
        daemon.stop()


def describe(r: Run) -> str:
    att = sorted(r.attempts.values())
    line = (f"N={r.n}{' +human' if r.human else ''}: landed {len(r.landed)}/{r.n}, lost {r.lost}, duplicates "
            f"{r.duplicates}, exit 2: {sum(1 for c in r.codes.values() if c)}, attempts total {sum(att)} "
            f"(median {att[len(att) // 2]}, max {att[-1]}), re-detections {r.redetects}, wall {r.wall:.1f} s, "
            f"linear {'yes' if r.linear else 'NO'}, commits on main {r.commits}")
    if r.moves:
        q = [r.moves[min(len(r.moves) - 1, int(len(r.moves) * f))] for f in (0.0, 0.5, 1.0)]
        line += f"; main moved first at {q[0]:.1f} s, half its moves by {q[1]:.1f} s, last at {q[2]:.1f} s"
    if r.racing:
        line += (f"; first push to landing (the ones that raced): median {r.racing[len(r.racing) // 2]:.1f} s, "
                 f"max {r.racing[-1]:.1f} s")
    if r.human:
        line += f"; human commits pushed {r.human_pushed}, kept {r.human_kept}, their lost races {r.human_lost_races}"
    return line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,20,40,100", help="fleet sizes, comma-separated")
    ap.add_argument("--human", action="store_true", help="also a person pushing an unrelated commit every 200 ms")
    ap.add_argument("--only-human", action="store_true", help="only the runs with the person pushing")
    ap.add_argument("--baseline", metavar="DIR", help="run this checkout's code instead (e.g. /work/main)")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    args = ap.parse_args(argv)
    baseline = Path(args.baseline).resolve() if args.baseline else None
    variants = [True] if args.only_human else ([False, True] if args.human else [False])
    ok = True
    for n in (int(x) for x in args.sizes.split(",") if x.strip()):
        for human in variants:
            work = Path(tempfile.mkdtemp(prefix=f"syncer-fleet-{n}-"))
            try:
                r = run_fleet(n, human, baseline, work)
            finally:
                if not args.keep:
                    shutil.rmtree(work, ignore_errors=True)
            print(describe(r), flush=True)
            for e in r.errors[:3]:
                print(f"    {e}", flush=True)
            ok = ok and len(r.landed) == n and r.lost == 0 and r.duplicates == 0 and r.linear and \
                (not human or r.human_kept == r.human_pushed)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
