"""A kustomize installation in the sidecar: what a render costs, and a pass with and without one.

``hosts/midgard`` (an overlay over a base: 3 objects) in a real git clone, its live objects in
a ``LiveCache`` as the watches fill it (the generated ConfigMap's literal drifted live), the
real ``Loop.run_pass`` as a follower (dry-run: detect, plan, verify; no commit). Timed: one
render by the real kustomize (``kubectl kustomize`` on a scratch copy, with the origin
annotations), the first pass, passes after one live change (no file changed: no render), and
passes after a git change of one file (one render to load, one to verify the planned edit),
and passes with no change at all.

    python -m bench.kustomizepass [--rounds 10]
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, Section, rmtree, spread


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args], cwd=cwd,
                   check=True, capture_output=True)


def measure(rounds: int, root: Path) -> dict[str, Any]:
    from syncer.cache import Caches
    from syncer.config import Config
    from syncer.sources.dispatch import source_for
    from syncer.gitrepo import Workspace
    from syncer.sources.kustomize import render
    from syncer.sidecar.livecache import LiveCache
    from syncer.sidecar.loop import Loop, LoopSettings
    from syncer.sidecar.schedule import Timing
    from syncer.sidecar.metrics import Metrics
    from syncer.sidecar.server import Health
    from syncer.writeback.deliver import Mode

    work = root / "work"
    shutil.copytree(ROOT / "hosts" / "midgard", work / "hosts" / "midgard")
    _git(root, "init", "-q", "--bare", "-b", "main", str(root / "origin.git"))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "midgard")
    _git(work, "push", "-q", str(root / "origin.git"), "main")

    renders = []
    host = work / "hosts" / "midgard"
    for _ in range(rounds):
        t0 = time.perf_counter()
        render.render(host, "hosts/midgard", "kubectl", {"kustomization.yaml": (host / "kustomization.yaml").read_text()
                                              + "buildMetadata: [originAnnotations, transformerAnnotations]\n"})
        renders.append(time.perf_counter() - t0)

    cache = LiveCache("midgard")
    declared = source_for(work, "midgard", Config("midgard", namespace="midgard")).load(Caches())
    config_map = None
    for ref, obj in declared.objects.items():
        live = copy.deepcopy(obj.data)
        live["metadata"].update(namespace=ref.namespace, uid=f"uid-{ref.name}", resourceVersion="100")
        if ref.kind == "ConfigMap":
            live["data"]["GREETING"] = "hej"
            config_map = (ref, live)
        cache.put(ref, live)
    assert config_map is not None
    ws = Workspace.open_or_clone(str(root / "origin.git"), "main", root / "clone", installation="midgard")
    loop = Loop(LoopSettings("midgard", Mode.DRY_RUN, "midgard", timing=Timing(debounce=0.0)), ws, cache,
                metrics=Metrics("midgard"),
                health=Health(cache, tick=5.0, resync=600.0), is_leader=lambda: False)

    def one_pass() -> tuple[float, int]:
        made = render.RUNS[0]
        t0 = time.perf_counter()
        report = loop.run_pass("bench")
        took = time.perf_counter() - t0
        assert report.error is None, report.error
        return took, render.RUNS[0] - made

    time.sleep(1.1)  # past the racy window of the clone's fresh files: their stamps are trusted
    first, _ = one_pass()
    live_change, live_renders, git_change, git_renders, idle, idle_renders = [], [], [], [], [], []
    for k in range(rounds):
        ref, live = config_map
        edited = copy.deepcopy(live)
        edited["data"]["CACHE_TTL"] = str(300 + k + 1)
        edited["metadata"]["resourceVersion"] = str(200 + k)
        cache.put(ref, edited)
        t, n = one_pass()
        live_change.append(t)
        live_renders.append(n)
        patch = work / "hosts" / "midgard" / "replicas.yaml"
        patch.write_text(patch.read_text().replace(f"replicas: {3 + k}", f"replicas: {4 + k}"))
        _git(work, "commit", "-qam", f"replicas {4 + k}")
        _git(work, "push", "-q", str(root / "origin.git"), "main")
        time.sleep(1.1)
        t, n = one_pass()
        git_change.append(t)
        git_renders.append(n)
        time.sleep(1.1)  # the clone's checkout of that change: past its racy window
        one_pass()  # loads again now that the stamps can be trusted (a fresh file is never cached)
        t, n = one_pass()
        idle.append(t)
        idle_renders.append(n)
    drifts = len(loop.last.outcome.result.drifts) if loop.last and loop.last.outcome else -1
    return {"render": renders, "first": first, "live_change": live_change, "live_renders": live_renders,
            "git_change": git_change, "git_renders": git_renders, "idle": idle, "idle_renders": idle_renders,
            "drifts": drifts}


def run(quick: bool, workdir: Path, rounds: int | None = None) -> Section:
    sec = Section("kustomize", "9. A kustomize installation in the sidecar (hosts/midgard, rendered by kubectl kustomize)")
    rounds = rounds or (3 if quick else 10)
    rmtree(workdir)
    workdir.mkdir(parents=True)
    try:
        r = measure(rounds, workdir)
    finally:
        rmtree(workdir)
    sec.row("one render (scratch copy + kubectl kustomize, origin annotations)", f"{spread(r['render'], '{:.3f}')} s",
            note=f"{len(r['render'])} renders")
    sec.row("pass with no change (resync)", f"{spread(r['idle'], '{:.3f}')} s",
            note=f"kustomize runs per pass: {sorted(set(r['idle_renders']))} (the render and the verification remembered)")
    sec.row("pass after one live change of a writable value (no file changed)", f"{spread(r['live_change'], '{:.3f}')} s",
            note=f"kustomize runs per pass: {sorted(set(r['live_renders']))} (no load; one to verify the new edit); "
                 f"{r['drifts']} drifts")
    sec.row("pass after a git change of one file", f"{spread(r['git_change'], '{:.3f}')} s",
            note=f"kustomize runs per pass: {sorted(set(r['git_renders']))} (one to load, one to verify the planned edit)")
    sec.row("first pass", f"{r['first']:.3f} s")
    sec.notes.append("`python -m bench.kustomizepass` (or `python -m bench --only kustomize`): the real Loop.run_pass "
                     "as a follower over a real clone of hosts/midgard; a render is made again only when a file of "
                     "the installation's tree changed (syncer/sources/kustomize/__init__.py), a planned edit is verified "
                     "by one more render, remembered while the texts and drifts stay the same.")
    sec.data = r
    return sec


def main(argv: list[str]) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bench.kustomizepass")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        sec = run(False, Path(tmp) / "kustomize", rounds=args.rounds)
    for row in sec.rows:
        print(f"{row.metric}: {row.value}  {row.note}")


if __name__ == "__main__":
    main(sys.argv[1:])
