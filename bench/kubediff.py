"""``syncer diff`` against ``kubectl diff -f`` on the REAL kube-apiserver (tests/realapi tier).

One run: start etcd + kube-apiserver v1.20.2 on loopback (tests/realapi/cluster.py, with an
audit log), write an installation of ConfigMaps and Endpoints (20 + 5 per file, the shape of
issue #14: 1,000 + 250 in 50 files), create them with ``kubectl apply -f`` (client-side apply,
as people do), edit 20 ConfigMaps live (``kubectl patch``, field manager kubectl-edit), then
time, interleaved, the two one-shot commands a person would run on the same files:

    syncer diff <inst> --repo R --kubeconfig K
    kubectl diff -f R/hosts/<inst>/ --kubeconfig K

Both end to end, process start to exit. Then ``syncer diff`` with a Role that may only get
(its LIST is refused: the GET-by-name fallback), and at 5,000 objects.

``kubectl`` is /usr/local/bin/kubectl (v1.32.3, installed by .ci/helm.sh from the PyPI wheel);
the kube-apiserver is built by tests/realapi/build.sh (a no-op when cached).

    python -m bench.kubediff [--quick] [--sizes 1250,5000] [--no-idle]

Last, an idle ``syncer run`` watching 10 objects on the same server: CPU, RSS and the
requests the audit log saw (600 s window; 120 s with --quick).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, Row, Section, rmtree, spread, syncer_cmd
from tests.realapi.cluster import RealCluster  # the tests' real API server harness

KUBECTL = os.environ.get("SYNCER_KUBECTL", "/usr/local/bin/kubectl")
CM_PER_FILE, EP_PER_FILE = 20, 5
EDITED = 20


def apiserver_binary() -> str:
    """tests/realapi/build.sh's kube-apiserver (it reuses its cache)."""
    given = os.environ.get("SYNCER_REALAPI_KUBE_APISERVER")
    if given:
        return given
    out = subprocess.run(["bash", str(ROOT / "tests" / "realapi" / "build.sh")], capture_output=True, text=True,
                         timeout=3600, check=False)
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("kube-apiserver="):
            return line.split("=", 1)[1].strip()
    raise RuntimeError(f"tests/realapi/build.sh failed ({out.returncode}): {(out.stdout + out.stderr)[-1500:]}")


def _configmap(ns: str, i: int) -> str:
    return (f"---\n# upstream settings of service {i}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
            f"  name: app-{i:05}\n  namespace: {ns}\n  labels:\n    app.kubernetes.io/name: app-{i:05}\n"
            f"    team: team-{i % 8}\ndata:\n  LOG_LEVEL: info\n  PORT: \"{8000 + i % 1000}\"\n"
            f"  UPSTREAM_ADDRS: 10.{i // 250 % 200}.{i % 250}.10 10.{i // 250 % 200}.{i % 250}.11\n"
            f"  TIMEOUT_SECONDS: \"30\"\n  FEATURE_FLAGS: |\n    search=on\n    beta-{i % 5}=off\n")


def _endpoints(ns: str, i: int) -> str:
    return (f"---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: backend-{i:05}\n  namespace: {ns}\n"
            f"subsets:\n  - addresses:\n      - ip: 10.{100 + i // 250 % 100}.{i % 250}.20\n"
            f"    ports:\n      - name: http\n        port: 8080\n        protocol: TCP\n")


def write_installation(repo: Path, name: str, ns: str, n: int) -> tuple[int, int, int]:
    """``n`` objects, 4 ConfigMaps per Endpoints, 25 objects per file; (files, configmaps, endpoints)."""
    base = repo / "hosts" / name
    base.mkdir(parents=True, exist_ok=True)
    (base / "syncer.conf").write_text(f"installation: {name}\nnamespace: {ns}\ntrack:\n  ConfigMap: writeback\n"
                                      f"  Endpoints: stable\n")
    files = n // (CM_PER_FILE + EP_PER_FILE)
    for f in range(files):
        parts = [_configmap(ns, f * CM_PER_FILE + j) for j in range(CM_PER_FILE)]
        parts += [_endpoints(ns, f * EP_PER_FILE + j) for j in range(EP_PER_FILE)]
        (base / f"services-{f:03}.yaml").write_text("".join(parts))
    return files, files * CM_PER_FILE, files * EP_PER_FILE


def _run(cmd: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=False)
    took = time.perf_counter() - t0
    if out.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd[:4])}... exited {out.returncode}: {(out.stderr or out.stdout)[-800:]}")
    return took, out.stdout


def _env(home: Path) -> dict[str, str]:
    # As installed: Python writes and reuses bytecode (this environment's PYTHONDONTWRITEBYTECODE=1
    # would recompile every syncer module at every start); one untimed warm-up run each.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HOME=str(home), KUBECTL_EXTERNAL_DIFF="diff -u -N")
    return env


def start_cluster(workdir: Path) -> RealCluster:
    return RealCluster(apiserver_binary(), workdir=workdir / "cluster", audit=True).start()


def _get_only_token(cluster: RealCluster, ns: str) -> str:
    """A ServiceAccount that may get ConfigMaps and Endpoints but not list them."""
    cluster.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "get-only"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps", "endpoints"], "verbs": ["get"]}]})
    cluster.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "get-only"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "get-only"},
        "subjects": [{"kind": "ServiceAccount", "name": "get-only", "namespace": ns}]})
    return cluster.service_account_token(ns, "get-only")


def measure(cluster: RealCluster, workdir: Path, n: int, rounds: int, with_kubectl: bool,
            get_only: bool) -> dict[str, Any]:
    ns = cluster.create_namespace("bench")
    repo = workdir / f"repo-{n}"
    rmtree(repo)
    files, cms, eps = write_installation(repo, "scale", ns, n)
    kubeconfig = cluster.kubeconfig(workdir / f"kubeconfig-{n}", namespace=ns)
    env = _env(workdir)
    t_apply, _ = _run([KUBECTL, "--kubeconfig", str(kubeconfig), "apply", "-f", str(repo / "hosts" / "scale")], env)
    for i in range(0, cms, max(1, cms // EDITED))[:EDITED]:
        _run([KUBECTL, "--kubeconfig", str(kubeconfig), "-n", ns, "patch", "configmap", f"app-{i:05}", "--type",
              "merge", "-p", json.dumps({"data": {"LOG_LEVEL": "debug"}}), "--field-manager", "kubectl-edit"], env)
    syncer = syncer_cmd("diff", "scale", "--repo", str(repo), "--kubeconfig", str(kubeconfig), "-o", "json")
    kubectl = [KUBECTL, "--kubeconfig", str(kubeconfig), "diff", "-f", str(repo / "hosts" / "scale")]
    s_times, k_times, drifts, k_out = [], [], 0, ""
    _run(syncer, env, ok=(0, 1))  # warm-up: bytecode written, API server caches warm, for both
    if with_kubectl:
        _run(kubectl, env, ok=(0, 1))
    for _ in range(rounds):
        took, out = _run(syncer, env, ok=(0, 1))
        s_times.append(took)
        drifts = len(json.loads(out)["drifts"])
        if with_kubectl:
            took, k_out = _run(kubectl, env, ok=(0, 1))
            k_times.append(took)
    res: dict[str, Any] = {"n": n, "files": files, "configmaps": cms, "endpoints": eps, "apply": t_apply,
                           "syncer": s_times, "kubectl": k_times, "drifts": drifts,
                           "kubectl_changed": k_out.count("\n-  LOG_LEVEL: debug") if k_out else None}
    if get_only:
        token = _get_only_token(cluster, ns)
        limited = cluster.kubeconfig(workdir / f"kubeconfig-{n}-get", namespace=ns, token=token)
        cmd = syncer_cmd("diff", "scale", "--repo", str(repo), "--kubeconfig", str(limited), "-o", "json")
        g_times = []
        for _ in range(rounds):
            took, out = _run(cmd, env, ok=(0, 1))
            g_times.append(took)
            assert len(json.loads(out)["drifts"]) == drifts, "the GET path found other drifts than the LIST path"
        res["get_only"] = g_times
    return res


def idle_sidecar(cluster: RealCluster, workdir: Path, seconds: float) -> dict[str, Any]:
    """``syncer run`` watching 10 objects (8 ConfigMaps + 2 Endpoints) on the real API server:
    CPU, RSS and the requests the audit log saw over an idle window."""
    import socket
    import urllib.request

    from bench.common import git, git_env, proc_sample

    ns = cluster.create_namespace("idle")
    root = workdir / "idle"
    rmtree(root)
    work, bare = root / "work", root / "origin.git"
    base = work / "hosts" / "idle"
    base.mkdir(parents=True)
    (base / "syncer.conf").write_text(f"installation: idle\nnamespace: {ns}\ntrack:\n  ConfigMap: writeback\n"
                                      "  Endpoints: stable\n")
    (base / "services.yaml").write_text("".join(_configmap(ns, i) for i in range(8)) +
                                        "".join(_endpoints(ns, i) for i in range(2)))
    env = git_env(root)
    git(root, "init", "-q", "--bare", "-b", "main", str(bare), env=env)
    git(work, "init", "-q", "-b", "main", env=env)
    git(work, "add", ".", env=env)
    git(work, "commit", "-q", "-m", "idle", env=env)
    git(work, "push", "-q", str(bare), "main", env=env)
    kubeconfig = cluster.kubeconfig(root / "kubeconfig", namespace=ns)
    _run([KUBECTL, "--kubeconfig", str(kubeconfig), "apply", "-f", str(base)], _env(root))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "syncer.cli", "run", "idle", "--remote", str(bare), "--kubeconfig", str(kubeconfig),
           "--mode", "commit", "--listen", f"127.0.0.1:{port}", "--state-configmap", "syncer-state"]
    log = open(root / "syncer.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**env, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            raise RuntimeError(f"syncer run not ready: {(root / 'syncer.log').read_text()[-1500:]}")
        time.sleep(5)
        watches = [e for e in cluster.audit_events("syncer/") if e.get("verb") == "watch"
                   and (e.get("objectRef") or {}).get("namespace") == ns]
        start, since = proc_sample(proc.pid), time.time()
        rss = []
        while time.monotonic() - start.t < seconds:
            time.sleep(1)
            rss.append(proc_sample(proc.pid).rss_kib)
        end = proc_sample(proc.pid)
        idle = [e for e in cluster.audit_events("syncer/", since=since)
                if (e.get("objectRef") or {}).get("namespace") == ns]
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
    window = end.t - start.t
    return {"seconds": window, "cpu_pct": 100 * (end.cpu - start.cpu) / window, "rss_mib": max(rss) / 1024,
            "hwm_mib": end.hwm_kib / 1024, "watches": len(watches),
            "requests": [(e.get("verb"), e.get("requestURI")) for e in idle]}


def run(quick: bool, workdir: Path, sizes: tuple[int, ...] | None = None, with_idle: bool = True) -> Section:
    sec = Section("kubediff", "7. One-shot diff on the real API server: syncer vs kubectl diff")
    if not Path(KUBECTL).exists():
        sec.row("kubectl", f"not measured: {KUBECTL} is missing (bash .ci/helm.sh installs it)")
        return sec
    sizes = sizes or ((1250,) if quick else (1250, 5000))
    rounds = 3 if quick else 5
    workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    cluster = start_cluster(workdir)
    results = []
    idle = None
    try:
        sec.notes.append(f"real kube-apiserver v1.20.2 + etcd on loopback, started in {time.perf_counter() - t0:.1f} s")
        for n in sizes:
            results.append(measure(cluster, workdir, n, rounds if n <= 1250 else max(1, rounds // 2),
                                   with_kubectl=n <= 1250 or not quick, get_only=n <= 1250))
        audit = cluster.audit_events("syncer/")
        idle = idle_sidecar(cluster, workdir, 120.0 if quick else 600.0) if with_idle else None
    finally:
        cluster.stop()
        if not os.environ.get("SYNCER_BENCH_KEEP"):
            shutil.rmtree(workdir / "cluster", ignore_errors=True)
    for r in results:
        n = r["n"]
        what = f"{n:,} objects ({r['configmaps']:,} ConfigMaps + {r['endpoints']:,} Endpoints in {r['files']} files)"
        s_med = statistics.median(r["syncer"])
        goal = "< 1 s" if n <= 1250 else "< 2.5 s"
        sec.row(f"`syncer diff`, {what}, {EDITED} edited live", f"{spread(r['syncer'])} s", goal,
                ok=s_med < (1.0 if n <= 1250 else 2.5),
                note=f"{r['drifts']} drifts found; {len(r['syncer'])} runs; objects created with `kubectl apply -f` "
                     f"in {r['apply']:.0f} s")
        if r["kubectl"]:
            k_med = statistics.median(r["kubectl"])
            ratios = [k / s for k, s in zip(r["kubectl"], r["syncer"])]
            sec.row(f"`kubectl diff -f`, same files, same run ({n:,} objects)", f"{spread(r['kubectl'])} s",
                    baseline=f"kubectl v1.32.3; changed objects it shows: {r['kubectl_changed']}")
            sec.row(f"ratio kubectl diff / syncer diff ({n:,} objects)", f"{statistics.median(ratios):.1f}x "
                    f"[{min(ratios):.1f}x–{max(ratios):.1f}x]", "≥ 5x", ok=statistics.median(ratios) >= 5,
                    note=f"ratio of the medians: {k_med / s_med:.1f}x")
            sec.headline.append(Row(f"one-shot diff, {n:,} objects on the real API server: kubectl diff / "
                                    "syncer diff", f"{statistics.median(ratios):.1f}x [{min(ratios):.1f}x–"
                                    f"{max(ratios):.1f}x]", note=f"{len(ratios)} interleaved pairs"))
        if r.get("get_only"):
            sec.row(f"`syncer diff` with a Role that cannot list ({n:,} objects): GETs by name, 8 at a time",
                    f"{spread(r['get_only'])} s", note="the LIST is refused (403) and syncer falls back; same drifts")
    if idle is not None:
        per_hour = len(idle["requests"]) * 3600 / idle["seconds"]
        sec.row(f"idle `syncer run`, 10 objects watched, {idle['seconds']:.0f} s: API requests (real audit log)",
                f"{len(idle['requests'])} ({per_hour:.0f}/hour measured; + 10/hour watch renewals by design = "
                f"{per_hour + 10:.0f}/hour)", "≤ 30/hour", ok=per_hour + 10 <= 30,
                note=f"{idle['watches']} watches opened at start; in the window: "
                     f"{', '.join(f'{v} {u}' for v, u in idle['requests']) or 'nothing'}")
        sec.row("idle `syncer run` on the real API server: CPU", f"{idle['cpu_pct']:.3f} % of a core", "< 0.5 %",
                ok=idle["cpu_pct"] < 0.5)
        sec.row("idle `syncer run` on the real API server: RSS", f"{idle['rss_mib']:.1f} MiB (VmHWM "
                f"{idle['hwm_mib']:.1f} MiB)", "≤ 64 MiB", ok=idle["rss_mib"] <= 64)
    per_kind: dict[str, int] = {}
    for ev in audit:
        key = f"{ev.get('verb')} {(ev.get('objectRef') or {}).get('resource', '')}"
        per_kind[key] = per_kind.get(key, 0) + 1
    sec.notes.append("Commands, timed end to end (process start to exit), interleaved, after one untimed warm-up "
                     "run of each (bytecode written, as a pip install does; this environment's "
                     "PYTHONDONTWRITEBYTECODE=1 is dropped for them): `syncer diff scale --repo R "
                     "--kubeconfig K -o json` and `kubectl --kubeconfig K diff -f R/hosts/scale` (KUBECTL_EXTERNAL_DIFF="
                     "'diff -u -N'). Requests syncer sent over the whole section, from the API server's audit log "
                     f"(userAgent syncer/...): {', '.join(f'{k} {v}' for k, v in sorted(per_kind.items()))}.")
    sec.data = {"results": results, "syncer_requests": per_kind, "idle": idle}
    return sec


def parse_cost(n: int = 1250) -> str:
    """Parsing the installation's files: pure parser, ruamel's C loader, syncer's reader."""
    import tempfile

    from ruamel.yaml import YAML

    from syncer.sources.manifests import parse_documents

    with tempfile.TemporaryDirectory(prefix="syncer-parse-") as tmp:
        write_installation(Path(tmp), "s", "ns", n)
        texts = [p.read_text() for p in sorted((Path(tmp) / "hosts" / "s").glob("*.yaml"))]
    t0 = time.perf_counter()
    pure = [list(YAML(typ="safe", pure=True).load_all(t)) for t in texts]
    t1 = time.perf_counter()
    [list(YAML(typ="safe").load_all(t)) for t in texts]
    t2 = time.perf_counter()
    ours = [parse_documents(t, "x") for t in texts]
    t3 = time.perf_counter()
    assert repr(ours) == repr(pure)
    return (f"{len(texts)} files, {n} objects: pure {t1 - t0:.3f} s, ruamel C loader {t2 - t1:.3f} s, "
            f"syncer {t3 - t2:.3f} s (pure/syncer {(t1 - t0) / (t3 - t2):.1f}x); same data")


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(prog="python -m bench.kubediff")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="")
    ap.add_argument("--no-idle", action="store_true", help="leave out the idle sidecar window")
    ap.add_argument("--parse-only", action="store_true", help="only time parsing the installation's files")
    args = ap.parse_args(argv)
    if args.parse_only:
        print(parse_cost())
        return 0
    sizes = tuple(int(s) for s in args.sizes.split(",") if s) or None
    with tempfile.TemporaryDirectory(prefix="syncer-kubediff-") as tmp:
        sec = run(args.quick, Path(tmp), sizes, with_idle=not args.no_idle)
    for r in sec.rows:
        print(f"{r.metric}: {r.value}  {r.goal}  {r.baseline}  {r.note}")
    for n in sec.notes:
        print("-", n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
