"""A hostile API server's watch streams against the ``syncer run`` PROCESS (issue #33): its RSS.

A fake API server on loopback (``tests/fakes/kube_api``, HTTP/1.1: one watch per object, one
thread each) serves N tracked ConfigMaps normally to every LIST, and answers every WATCH with a
body that never holds a newline (``FakeKubeAPI.flood_watches``), as fast as loopback carries it.
``syncer run`` (this checkout, or the code of ``--baseline REV``) runs as a subprocess for
``--seconds`` (with 8 objects or more, under a names-only Role, so that each object still has
its own watch); sampled every 0.25 s: VmRSS, and VmHWM at the end (its peak); the bytes the fake
sent; the log lines naming a watch over its budget.

    python -m bench.watchflood [--objects 7] [--seconds 30] [--baseline main] [--framing chunked]

The chart's default memory limit is 128 MiB.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, git, git_env, median, proc_sample
from tests.fakes.kube_api import FakeKubeAPI

NS = "ai"


def _installation(tmp: Path, n: int) -> Path:
    work = tmp / "work"
    host = work / "hosts" / "flood"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text(f"installation: flood\nnamespace: {NS}\ntrack:\n  ConfigMap: writeback\n")
    docs = [f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: {NS}\ndata:\n  K: v{i}\n"
            for i in range(n)]
    (host / "configmaps.yaml").write_text("---\n".join(docs))
    env = git_env(tmp)
    git(tmp, "init", "-q", "-b", "main", str(work), env=env)
    git(work, "add", ".", env=env)
    git(work, "commit", "-q", "-m", "flood", env=env)
    bare = tmp / "origin.git"
    git(tmp, "clone", "-q", "--bare", str(work), str(bare), env=env)
    return bare


def _code(rev: str | None, tmp: Path) -> Path:
    if rev is None:
        return ROOT
    into = tmp / "baseline"
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "syncer"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure(n: int, seconds: float, rev: str | None, framing: str, flood_on: bool = True,
            keep_log: bool = False) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="watchflood-") as name, FakeKubeAPI() as api:
        tmp = Path(name)
        bare = _installation(tmp, n)
        for i in range(n):
            api.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": NS},
                     "data": {"K": f"v{i}"}})
        if n >= 8:  # the chart's names-only Role: one watch per object, however many
            api.names_only("configmaps")
        flood = api.flood_watches(framing=framing, path_contains="" if flood_on else "/no-such-path/")
        kubeconfig = api.kubeconfig(tmp / "kubeconfig", namespace=NS)
        env = {**os.environ, "PYTHONPATH": str(_code(rev, tmp)), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
               "HOME": str(tmp)}
        cmd = [sys.executable, "-m", "syncer.cli", "run", "flood", "--remote", str(bare), "--base-branch", "main",
               "--kubeconfig", str(kubeconfig), "--listen", f"127.0.0.1:{_port()}", "--mode", "commit",
               "--clone-dir", str(tmp / "clone"), "--log-format", "json", "--state-configmap", ""]
        log = open(tmp / "stderr.log", "w")
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=log)
        rss: list[float] = []
        try:
            end = time.monotonic() + seconds
            while time.monotonic() < end and proc.poll() is None:
                rss.append(proc_sample(proc.pid).rss_kib / 1024)
                time.sleep(0.25)
            peak = proc_sample(proc.pid).hwm_kib / 1024 if proc.poll() is None else float("nan")
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
        text = (tmp / "stderr.log").read_text(errors="replace")
        over = sum(1 for line in text.splitlines() if "MiB budget" in line or "an event of more than" in line
                   or "larger than" in line)
        if keep_log:
            print(text[-3000:])
        return {"peak": peak, "median": median(rss) if rss else float("nan"), "last": rss[-1] if rss else 0.0,
                "sent": flood.sent / 2 ** 20, "over": over, "exit": float(proc.returncode or 0)}


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.watchflood")
    ap.add_argument("--objects", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--baseline", help="also measure the code of this git revision")
    ap.add_argument("--framing", default="chunked", choices=["chunked", "one-chunk", "close"])
    ap.add_argument("--quiet-too", action="store_true", help="also measure without the flood (the baseline RSS)")
    ap.add_argument("--log", action="store_true", help="print the end of the sidecar's log")
    args = ap.parse_args(argv)
    print(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}; {args.objects} objects, {args.seconds:g} s, "
          f"framing {args.framing}")
    print("| code | peak RSS (VmHWM) MiB | median RSS MiB | MiB the server sent | watch lines over budget |")
    print("|---|---|---|---|---|")
    runs = [(rev, True) for rev in ([args.baseline] if args.baseline else []) + [None]]
    if args.quiet_too:
        runs.append((None, False))
    for rev, flood_on in runs:
        r = measure(args.objects, args.seconds, rev, args.framing, flood_on, args.log)
        label = (rev or "this checkout") + ("" if flood_on else ", no flood")
        print(f"| {label} | {r['peak']:.0f} | {r['median']:.0f} | {r['sent']:.0f} | {r['over']:.0f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
