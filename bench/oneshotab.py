"""``syncer diff`` of two source trees, ``kubectl diff -f`` and a bare ``kubectl get`` of the same
objects, interleaved, on the REAL kube-apiserver.

The code before and after a change, measured in the same rounds as the baseline: one real
kube-apiserver (tests/realapi), the installations of ``bench.kubediff`` (ConfigMaps and Endpoints,
25 objects per file, created with ``kubectl apply -f``, 20 ConfigMaps edited live), then per round
the installed ``syncer`` console script once per tree (``PYTHONPATH`` at it) and ``kubectl diff -f``
once. A tree is a checkout or ``git archive <rev> | tar -x -C DIR``. Wall clock, CPU of the process
(``getrusage``), the 1-minute load at each round, and the sha256 of each tree's JSON output (the
trees must print the same bytes).

    python -m bench.oneshotab --sizes 1250,5000 --rounds 5 [--no-kubectl-diff] [--cold] BEFORE_TREE AFTER_TREE

A tree's runs share one ``HOME``: what a command keeps for the next (``--cache-dir``, as kubectl's
discovery cache in ``~/.kube/cache``) is there from the untimed warm-up on; ``--cold`` times each
tree a second way, keeping nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import syncer_cmd
from bench.kubediff import EDITED, KUBECTL, _env, _run, start_cluster, write_installation


def _prepare(cluster: Any, workdir: Path, n: int) -> tuple[Path, Path]:
    ns = cluster.create_namespace("ab")
    repo = workdir / f"repo-{n}"
    _files, cms, _eps = write_installation(repo, "scale", ns, n)
    kubeconfig = cluster.kubeconfig(workdir / f"kubeconfig-{n}", namespace=ns)
    env = _env(workdir)
    _run([KUBECTL, "--kubeconfig", str(kubeconfig), "apply", "-f", str(repo / "hosts" / "scale")], env)
    for i in range(0, cms, max(1, cms // EDITED))[:EDITED]:
        _run([KUBECTL, "--kubeconfig", str(kubeconfig), "-n", ns, "patch", "configmap", f"app-{i:05}", "--type",
              "merge", "-p", '{"data": {"LOG_LEVEL": "debug"}}', "--field-manager", "kubectl-edit"], env)
    return repo, kubeconfig


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, env=env, timeout=1800, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd[:3])}... exited {out.returncode}: {out.stderr[-800:]!r}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, out.stdout


def measure(repo: Path, kubeconfig: Path, trees: list[Path], rounds: int, env: dict[str, str],
            kubectl_diff: bool = True, cold: bool = False) -> list[str]:
    """Per round: each tree's ``syncer diff``, ``kubectl diff -f`` (unless not ``kubectl_diff``)
    and a bare ``kubectl get`` of the same objects (the namespace holds only them), in turn.
    ``cold``: each tree also as on a fresh machine, nothing kept from the last command
    (``SYNCER_CACHE_DIR=none``: every file parsed; a tree without the store ignores it)."""
    syncer = syncer_cmd("diff", "scale", "--repo", str(repo), "--kubeconfig", str(kubeconfig), "-o", "json")
    get = [KUBECTL, "--kubeconfig", str(kubeconfig), "get", "configmaps,endpoints"]
    # its table (what a person types) and its JSON (every field, as syncer reads them)
    baselines = {"kubectl get configmaps,endpoints": get, "kubectl get configmaps,endpoints -o json": get + ["-o", "json"]}
    if kubectl_diff:
        baselines["kubectl diff -f"] = [KUBECTL, "--kubeconfig", str(kubeconfig), "diff", "-f",
                                        str(repo / "hosts" / "scale")]
    variants: list[tuple[str, Path, dict[str, str]]] = [(str(t), t, {}) for t in trees]
    if cold:
        variants += [(f"{t} (nothing kept)", t, {"SYNCER_CACHE_DIR": "none"}) for t in trees]
    runs: dict[str, tuple[list[float], list[float], set[str]]] = {name: ([], [], set()) for name, _, _ in variants}
    runs.update({name: ([], [], set()) for name in baselines})
    loads = []
    for r in range(rounds + 1):  # round 0: untimed warm-up (bytecode written, caches warm)
        loads.append(os.getloadavg()[0])
        for name, tree, extra in variants:
            wall, cpu, out = _timed(syncer, {**env, "PYTHONPATH": str(tree), **extra})
            if r:
                runs[name][0].append(wall)
                runs[name][1].append(cpu)
                runs[name][2].add(hashlib.sha256(out).hexdigest()[:12])
        for name, cmd in baselines.items():
            wall, cpu, _ = _timed(cmd, env)
            if r:
                runs[name][0].append(wall)
                runs[name][1].append(cpu)
    lines = []
    for name, (walls, cpus, shas) in runs.items():
        line = (f"{name}: wall {statistics.median(walls):.2f} [{min(walls):.2f}-{max(walls):.2f}] s, CPU "
                f"{statistics.median(cpus):.2f} s")
        if name not in baselines:
            for base in baselines:
                b_walls = runs[base][0]
                per_round = statistics.median(w / b for b, w in zip(b_walls, walls))
                line += (f"; this / {base.removeprefix('kubectl get configmaps,endpoints') or 'table'}: "
                         f"{statistics.median(walls) / statistics.median(b_walls):.2f}x"
                         f" (ratio of medians), {per_round:.2f}x (per round)")
            line += f"; output {', '.join(sorted(shas)) or '-'}"
        lines.append(line)
    lines.append("load (1 min) at each round: " + " ".join(f"{x:.1f}" for x in loads))
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.oneshotab")
    ap.add_argument("--sizes", default="1250,5000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-kubectl-diff", action="store_true", help="time only the bare kubectl get beside the trees")
    ap.add_argument("--cold", action="store_true",
                    help="also each tree with nothing kept from the last command (SYNCER_CACHE_DIR=none)")
    ap.add_argument("trees", nargs="+", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="syncer-oneshotab-") as tmp:
        workdir = Path(tmp)
        cluster = start_cluster(workdir)
        try:
            env = {k: v for k, v in _env(workdir).items() if k != "PYTHONPATH"}
            for n in (int(s) for s in args.sizes.split(",") if s):
                repo, kubeconfig = _prepare(cluster, workdir, n)
                for line in measure(repo, kubeconfig, [t.resolve() for t in args.trees], args.rounds, env,
                                    not args.no_kubectl_diff, args.cold):
                    print(f"{n:,} objects: {line}", flush=True)
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
