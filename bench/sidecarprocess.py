"""Section 9, sidecarprocess: the ``syncer run`` PROCESS tracking thousands of objects on the
REAL kube-apiserver (tests/realapi tier), issue #24.

One real etcd + kube-apiserver v1.20.2 on loopback (with an audit log) holds an installation
of ConfigMaps and Endpoints (4 ConfigMaps per Endpoints, 25 objects per file: the shape of
bench/kubediff.py), created with ``kubectl apply -f``. Then, one after the other against the
same objects, each variant:

    syncer run scale --remote BARE --kubeconfig K --mode commit --debounce 2s --listen ...

as a subprocess (its own bare git remote), with

* ``before``: the code of ``--baseline REV`` (``git archive`` into a temporary directory),
  with a Role that allows listing (the admin kubeconfig);
* ``after, kind-wide Role``: this checkout, same credentials;
* ``after, resourceNames Role``: this checkout, a ServiceAccount whose Role names every
  tracked object (the chart's default least-privilege Role).

Measured per variant: process start -> ``/readyz`` 200; after that, a steady window: RSS
(VmRSS every second, VmHWM), threads (/proc/PID/status), TCP connections to the API server's
port (the process's socket inodes looked up in /proc/PID/net/tcp, ESTABLISHED); the API
requests syncer sent in the window (audit log, extrapolated to an hour, plus the watch
renewals its open watches cost by design, one per watch per hour); live edit -> commit on
the bare remote (a merge patch of ``data.LOG_LEVEL`` as ``kubectl edit`` sends, timed to the
ref change); log lines written and how many are warnings.

    python -m bench.sidecarprocess [--n 5000] [--baseline main] [--steady 20] [--variants before,kind,names]
                                   [--server-arg=--http2-max-streams-per-connection=100] [--code DIR]
    python -m bench --only sidecarprocess      # 5,000 objects, no baseline
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import ROOT, Section, git, git_env, median, proc_sample, read_ref, rmtree, spread
from bench.kubediff import KUBECTL, _env, _run, apiserver_binary, start_cluster, write_installation
from tests.realapi.cluster import RealCluster

DEBOUNCE = 2.0
EDITS = 3
#: A process not ready after this long is measured as it is ("not ready within").
READY_WAIT = 120.0


@dataclass
class Variant:
    key: str
    title: str
    code: Path  # PYTHONPATH of the syncer that runs
    role: str  # "admin" (may list every kind) or "names" (resourceNames only)


def _baseline_tree(rev: str, into: Path) -> Path:
    """The code of ``rev``, unpacked (no worktree: the repository is not touched)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "syncer"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _names_token(cluster: RealCluster, ns: str, configmaps: list[str], endpoints: list[str]) -> str:
    """A ServiceAccount with the chart's least-privilege Role: tracked objects by name, the state record."""
    rules: list[dict[str, Any]] = [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": configmaps, "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["endpoints"], "resourceNames": endpoints, "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["syncer-state"],
         "verbs": ["get", "update", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
    ]
    cluster.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "syncer-names"},
        "rules": rules})
    cluster.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "syncer-names"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "syncer-names"},
        "subjects": [{"kind": "ServiceAccount", "name": "syncer-names", "namespace": ns}]})
    return cluster.service_account_token(ns, "syncer-names")


def _patch(cluster: RealCluster, ns: str, name: str, data: dict[str, str]) -> None:
    """What ``kubectl edit`` sends: a merge patch, field manager kubectl-edit."""
    req = urllib.request.Request(
        f"{cluster.url}/api/v1/namespaces/{ns}/configmaps/{name}?fieldManager=kubectl-edit",
        data=json.dumps({"data": data}).encode(), method="PATCH",
        headers={"Authorization": f"Bearer {cluster.admin_token}", "Content-Type": "application/merge-patch+json"})
    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    for attempt in range(3):  # an API server swamped by thousands of watches may not accept at once
        try:
            with urllib.request.urlopen(req, timeout=30, context=ctx) as resp:
                resp.read()
            return
        except (urllib.error.URLError, TimeoutError):
            if attempt == 2:
                raise


def _sockets(pid: int) -> set[int]:
    out = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(fd_dir / fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(int(target[8:-1]))
    return out


def connections(pid: int, port: int) -> int:
    """ESTABLISHED TCP connections of ``pid`` to ``port`` (IPv4 and IPv6 tables)."""
    mine = _sockets(pid)
    n = 0
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if int(f[2].rsplit(":", 1)[1], 16) == port and f[3] == "01" and int(f[9]) in mine:
                n += 1
    return n


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def measure(cluster: RealCluster, variant: Variant, repo: Path, ns: str, kubeconfig: Path, root: Path,
            steady: float, edits: int = EDITS) -> dict[str, Any]:
    rmtree(root)
    root.mkdir(parents=True)
    env = git_env(root)
    bare = root / "origin.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(bare), env=env)
    git(repo, "push", "-q", "-f", str(bare), "HEAD:main", env=env)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "syncer.cli", "run", "scale", "--remote", str(bare), "--kubeconfig", str(kubeconfig),
           "--mode", "commit", "--debounce", f"{DEBOUNCE:g}s", "--listen", f"127.0.0.1:{port}",
           "--state-configmap", "syncer-state", "--clone-dir", str(root / "clone")]
    log_path = root / "syncer.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    t0 = time.monotonic()
    started = time.time()
    # cwd outside the checkout: `python -m` puts the working directory first on sys.path.
    proc = subprocess.Popen(cmd, cwd=root, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**_env(root), **{k: v for k, v in env.items() if k.startswith("GIT_")},
                                 "PYTHONPATH": f"{variant.code}{os.pathsep}{ROOT}"}, start_new_session=True)
    out: dict[str, Any] = {"variant": variant.key, "title": variant.title}
    try:
        out["ready"] = float("inf")
        while not _ready(port):
            if proc.poll() is not None:
                raise RuntimeError(f"{variant.key}: syncer run exited: {log_path.read_text()[-1500:]}")
            if time.monotonic() - t0 > READY_WAIT:
                break  # measured as it is: never ready within the wait
            time.sleep(0.1)
        else:
            out["ready"] = time.monotonic() - t0
        head = None
        for _ in range(300):  # the start-up pass: records the state, maybe commits nothing
            head = read_ref(bare)
            time.sleep(0.1)
            if (root / "clone").exists():
                break
        time.sleep(3)
        since = time.time()
        rss, thr, conns = [], [], []
        s_start = time.monotonic()
        while time.monotonic() - s_start < steady:
            sample = proc_sample(proc.pid)
            rss.append(sample.rss_kib)
            thr.append(threads(proc.pid))
            conns.append(connections(proc.pid, cluster.port))
            time.sleep(1)
        window = time.time() - since
        idle = [e for e in cluster.audit_events("syncer/", since=since)
                if (e.get("objectRef") or {}).get("namespace") == ns]
        out.update(rss_mib=max(rss) / 1024, hwm_mib=proc_sample(proc.pid).hwm_kib / 1024, threads=max(thr),
                   connections=max(conns), window=window, idle_requests=len(idle),
                   idle_kinds=sorted({f"{e.get('verb')} {(e.get('objectRef') or {}).get('resource')}" for e in idle}))
        watches = [e for e in cluster.audit_events("syncer/", since=started) if e.get("verb") == "watch"
                   and (e.get("objectRef") or {}).get("namespace") == ns]
        out["watches"] = len(watches)
        head = read_ref(bare)
        latencies, rss_edits = [], []
        for k in range(edits):
            t_edit = time.perf_counter()
            try:
                _patch(cluster, ns, f"app-{(7 + 97 * k) % 4000:05}", {"LOG_LEVEL": f"debug-{variant.key}-{k}"})
            except (urllib.error.URLError, TimeoutError) as exc:  # the API server itself is swamped
                out.setdefault("edit_failures", []).append(f"{type(exc).__name__}: {str(exc)[:120]}")
                latencies.append(float("inf"))
                continue
            while time.perf_counter() - t_edit < 60:
                now = read_ref(bare)
                if now != head:
                    latencies.append(time.perf_counter() - t_edit)
                    head = now
                    break
                time.sleep(0.005)
            else:
                latencies.append(float("inf"))  # no commit within 60 s
            time.sleep(3)
            rss_edits.append(proc_sample(proc.pid).rss_kib / 1024)
        out["edit_commit"] = latencies
        out["rss_after_edits_mib"] = proc_sample(proc.pid).rss_kib / 1024
        out["rss_per_edit_mib"] = [round(x, 1) for x in rss_edits]
        out["log_seconds"] = time.time() - started
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
    text = log_path.read_text(errors="replace").splitlines()
    out["log_lines"] = len(text)
    warnings = [ln for ln in text if '"warning"' in ln.lower() or "warning" in ln.lower()[:80]]
    out["log_warnings"] = len(warnings)
    out["warning_sample"] = warnings[0][:300] if warnings else ""
    out["paths"] = [ln[:300] for ln in text if "watching" in ln][:6]
    return out


def run(quick: bool, workdir: Path, n: int = 5000, baseline: str | None = None, steady: float = 20.0,
        variants: tuple[str, ...] = ("before", "kind", "names"), edits: int = EDITS,
        server_args: tuple[str, ...] = (), code: Path = ROOT) -> Section:
    """``code``: the syncer the "after" variants run (a frozen copy: this checkout may change
    while a long run goes on)."""
    sec = Section("sidecarprocess", f"9. `syncer run` process at {n:,} tracked objects on the real API server")
    if not Path(KUBECTL).exists():
        sec.row("kubectl", f"not measured: {KUBECTL} is missing (bash .ci/helm.sh installs it)")
        return sec
    if baseline is None:
        variants = tuple(v for v in variants if v != "before")
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = (RealCluster(apiserver_binary(), workdir=workdir / "cluster", audit=True,
                           extra_apiserver_args=list(server_args)).start() if server_args else start_cluster(workdir))
    results: list[dict[str, Any]] = []
    try:
        ns = cluster.create_namespace("scale")
        repo = workdir / "repo"
        rmtree(repo)
        files, n_cm, n_ep = write_installation(repo, "scale", ns, n)
        env = git_env(workdir)
        git(repo, "init", "-q", "-b", "main", env=env)
        git(repo, "add", ".", env=env)
        git(repo, "commit", "-q", "-m", "scale", env=env)
        admin = cluster.kubeconfig(workdir / "admin.kubeconfig", namespace=ns)
        t_apply, _ = _run([KUBECTL, "--kubeconfig", str(admin), "apply", "-f", str(repo / "hosts" / "scale")],
                          _env(workdir))
        names = _names_token(cluster, ns, [f"app-{i:05}" for i in range(n_cm)] + ["syncer-state"],
                             [f"backend-{i:05}" for i in range(n_ep)])
        limited = cluster.kubeconfig(workdir / "names.kubeconfig", token=names, namespace=ns)
        table = {
            "before": Variant("before", f"before ({baseline}), Role may list", _baseline_tree(
                baseline or "HEAD", workdir / "baseline") if baseline else ROOT, "admin"),
            "kind": Variant("kind", "after, Role may list and watch the kinds", code, "admin"),
            "names": Variant("names", "after, resourceNames Role (chart default)", code, "names"),
        }
        for key in variants:
            v = table[key]
            print(f"[bench] sidecarprocess: {v.title} ...", file=sys.stderr, flush=True)
            results.append(measure(cluster, v, repo, ns, admin if v.role == "admin" else limited,
                                   workdir / f"run-{key}", steady, edits))
    finally:
        cluster.stop()
        if not os.environ.get("SYNCER_BENCH_KEEP"):
            shutil.rmtree(workdir / "cluster", ignore_errors=True)
    kinds = 2
    for r in results:
        t = r["title"]
        lat = r["edit_commit"]
        per_hour = r["idle_requests"] * 3600 / r["window"]
        sec.row(f"{t}: RSS steady", f"{r['rss_mib']:.0f} MiB (VmHWM {r['hwm_mib']:.0f} MiB; "
                f"after the edits {r['rss_after_edits_mib']:.0f} MiB)", "≤ 128 MiB", r["rss_mib"] <= 128,
                note=f"RSS after each edit: {r['rss_per_edit_mib']} MiB")
        sec.row(f"{t}: threads", str(r["threads"]), "a handful, not growing with objects", r["threads"] <= 32)
        sec.row(f"{t}: TCP connections to the API server", str(r["connections"]), "≤ 50", r["connections"] <= 50)
        ready = f"{r['ready']:.1f} s" if r["ready"] != float("inf") else f"not ready within {READY_WAIT:.0f} s"
        sec.row(f"{t}: process start -> /readyz 200", ready, "≤ 10 s", r["ready"] <= 10)
        sec.row(f"{t}: live edit -> commit ({len(lat)} edits)", f"{spread(lat)} s",
                f"≤ debounce + 1 s = {DEBOUNCE + 1:g} s", median(lat) <= DEBOUNCE + 1,
                note="; ".join(f"the bench's PATCH failed: {e}" for e in r.get("edit_failures", [])))
        sec.row(f"{t}: idle API requests", f"{r['idle_requests']} in {r['window']:.0f} s ({per_hour:.0f}/hour) "
                f"+ {r['watches']} watch renewals/hour by design", f"≤ 2 per kind and namespace = {2 * kinds}/hour",
                per_hour + r["watches"] <= 2 * kinds if r["variant"] != "names" else None,
                note=", ".join(r["idle_kinds"]) or "nothing in the window")
        sec.row(f"{t}: log lines", f"{r['log_lines']} in {r['log_seconds']:.0f} s, {r['log_warnings']} warnings",
                note=(" | ".join(r["paths"]) + (f" | a warning: {r['warning_sample']}" if r["warning_sample"] else ""))[:900])
    sec.notes.append(f"{n:,} objects ({n_cm:,} ConfigMaps + {n_ep:,} Endpoints in {files} files) created with "
                     f"`kubectl apply -f` in {t_apply:.0f} s; `syncer run scale --mode commit --debounce "
                     f"{DEBOUNCE:g}s --state-configmap syncer-state`, ConfigMaps tracked writeback, Endpoints stable; "
                     f"steady window {steady:.0f} s starting 3 s after the first pass; then {edits} live edits, "
                     "each timed from the PATCH to the new commit on the bare remote. Variants run one after the "
                     "other against the same objects.")
    sec.data = {"results": results}
    return sec


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.sidecarprocess", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--baseline", metavar="REV", help="also run the code of REV (e.g. main) as 'before'")
    ap.add_argument("--steady", type=float, default=20.0)
    ap.add_argument("--variants", default="before,kind,names")
    ap.add_argument("--edits", type=int, default=EDITS, help="live edits after the steady window")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="an extra kube-apiserver flag (e.g. --http2-max-streams-per-connection=100)")
    ap.add_argument("--code", type=Path, default=ROOT, metavar="DIR",
                    help="the syncer tree the after variants run (e.g. `git archive HEAD | tar -x -C DIR`)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="syncer-bench-proc-") as tmp:
        sec = run(False, Path(tmp), args.n, args.baseline, args.steady, tuple(args.variants.split(",")), args.edits,
                  tuple(args.server_arg), args.code.resolve())
    for r in sec.rows:
        print(f"| {r.metric} | {r.value} | {r.goal}{'' if r.ok is None else (' ✅' if r.ok else ' ❌')} | {r.note} |")
    for note in sec.notes:
        print(note)
    if args.json:
        Path(args.json).write_text(json.dumps(sec.data, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
