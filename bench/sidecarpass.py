"""One sidecar pass at scale: ``Loop.run_pass`` after one live change, 5,000 tracked objects.

The sidecar's real ``Loop`` (syncer/sidecar/loop.py) over a real git clone of a generated
installation (bench/gen.py: ConfigMaps, Services, Endpoints, Deployments, ~1 % drifted live),
with its ``LiveCache`` filled from the generated live objects the way the watches fill it
(``put``), as a follower (dry-run pass: sync the clone to the base branch, detect, record
metrics; no commit). Timed: the first pass (everything parsed and compared), then passes
each after one live change of one ConfigMap, and passes with no change at all (a resync).
Reported: median [min-max] wall time, and the pass without its git commands (fetch,
checkout, clean: their cost does not depend on syncer). Then the same as the leader with
its state record (a ``ConfigMapStore`` on the fake API server over loopback HTTP): the
record is read every pass and written when what git and the cluster agree on changes.

    python -m bench.sidecarpass [--n 5000] [--rounds 15] [--profile]
"""

from __future__ import annotations

import copy
import statistics
import sys
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Section, rmtree, spread


def measure(n: int, rounds: int, root: Path, leader: bool = False) -> dict[str, Any]:
    from bench.gen import declared_objects, init_repos, live_object
    from syncer import gitrepo
    from syncer.gitrepo import Workspace
    from syncer.sources.manifests import object_ref
    from syncer.sidecar.livecache import LiveCache
    from syncer.sidecar.loop import Loop, LoopSettings
    from syncer.sidecar.schedule import Timing
    from syncer.sidecar.metrics import Metrics
    from syncer.sidecar.server import Health
    from syncer.writeback.deliver import Mode

    inst, bare = init_repos(root, "bench", n)
    ws = Workspace.open_or_clone(str(bare), "main", root / "clone", installation="bench")
    drifted = set(inst.drifted)
    cache = LiveCache("bench")
    cms = []
    for i, obj in enumerate(declared_objects(n)):
        live = live_object(obj, 2000 + i, drifted=obj["kind"] == "ConfigMap" and (i // 4) in drifted)
        ref = object_ref(obj, inst.namespace, "bench")
        cache.put(ref, live)
        if ref.kind == "ConfigMap":
            cms.append((ref, live))
    metrics = Metrics("bench")
    health = Health(cache, tick=5.0, resync=600.0)
    store, fake = None, None
    if leader:  # the state record in a ConfigMap of the fake API server, over loopback HTTP
        from tests.fakes.kube_api import FakeKubeAPI

        from syncer.kube import kube_client
        from syncer.sources.manifests import parse_documents
        from syncer.sidecar.state import ConfigMapStore

        fake = FakeKubeAPI().start()
        api = kube_client(str(fake.kubeconfig(root / "kubeconfig", namespace=inst.namespace)), None,
                          read_yaml=parse_documents, pool_size=4)
        store = ConfigMapStore(api, inst.namespace, "bench")
    loop = Loop(LoopSettings("bench", Mode.DRY_RUN, "bench", timing=Timing(debounce=0.0)), ws, cache, metrics=metrics,
                health=health, is_leader=lambda: leader, store=store)
    git_time = [0.0]
    real_run = gitrepo.run_git

    def timed_git(*a: Any, **kw: Any) -> str:
        t0 = time.perf_counter()
        try:
            return real_run(*a, **kw)
        finally:
            git_time[0] += time.perf_counter() - t0

    gitrepo.run_git = timed_git  # type: ignore[assignment]
    try:
        def one_pass() -> tuple[float, float]:
            git_time[0] = 0.0
            t0 = time.perf_counter()
            report = loop.run_pass("bench")
            took = time.perf_counter() - t0
            assert report.error is None, report.error
            return took, took - git_time[0]

        first, first_no_git = one_pass()
        changed, changed_no_git, idle, idle_no_git = [], [], [], []
        for k in range(rounds):
            ref, live = cms[k % len(cms)]
            edited = copy.deepcopy(live)
            edited["data"]["LOG_LEVEL"] = f"trace-{k}"
            edited["metadata"]["resourceVersion"] = str(90000 + k)
            cache.put(ref, edited)
            t, t_ng = one_pass()
            changed.append(t)
            changed_no_git.append(t_ng)
            t, t_ng = one_pass()
            idle.append(t)
            idle_no_git.append(t_ng)
        drifts = len(loop.last.outcome.result.drifts) if loop.last and loop.last.outcome else -1
        record = _record_size(fake, inst.namespace) if fake is not None else {}
    finally:
        gitrepo.run_git = real_run  # type: ignore[assignment]
        if fake is not None:
            fake.stop()
    return {"n": n, "tracked": len(cache.refs()), "first": first, "first_no_git": first_no_git, "changed": changed,
            "changed_no_git": changed_no_git, "idle": idle, "idle_no_git": idle_no_git, "drifts": drifts,
            "leader": leader, "record": record, "state_writes": store.writes if store is not None else 0}


def _record_size(fake: Any, namespace: str) -> dict[str, int]:
    """How the record is stored: bytes of plain JSON, and of what the ConfigMap holds."""
    from syncer.sidecar.state import unpack

    cm = fake.get("v1", "ConfigMap", namespace, "syncer-state") or {}
    packed = (cm.get("binaryData") or {}).get("bench.json.gz")
    plain = (cm.get("data") or {}).get("bench.json")
    if packed:
        return {"json": len(unpack(packed, "record")), "stored": len(packed)}
    return {"json": len(plain or ""), "stored": len(plain or "")}


def run(quick: bool, workdir: Path, n: int | None = None, rounds: int | None = None) -> Section:
    sec = Section("sidecarpass", "8. One sidecar pass at scale (follower, dry-run; and leader with its state record)")
    n = n or (1000 if quick else 5000)
    rounds = rounds or (5 if quick else 15)
    results = []
    for leader in (False, True):
        rmtree(workdir)
        workdir.mkdir(parents=True)
        try:
            results.append(measure(n, rounds, workdir, leader=leader))
        finally:
            rmtree(workdir)
    r, lead = results
    med = statistics.median(r["changed"])
    sec.row(f"pass after one live change, {r['tracked']:,} tracked objects", f"{spread(r['changed'], '{:.3f}')} s",
            "≤ 100 ms", ok=med <= 0.1,
            note=f"without its git commands (fetch, checkout, clean): {spread(r['changed_no_git'], '{:.3f}')} s; "
                 f"{len(r['changed'])} passes; {r['drifts']} drifts")
    sec.row("pass with no change (resync)", f"{spread(r['idle'], '{:.3f}')} s",
            note=f"without git: {spread(r['idle_no_git'], '{:.3f}')} s")
    sec.row("first pass (every file parsed, every object compared)", f"{r['first']:.2f} s",
            note=f"without git: {r['first_no_git']:.2f} s")
    med = statistics.median(lead["changed"])
    rec = lead["record"]
    sec.row(f"leader with the state record: pass after one live change, {lead['tracked']:,} tracked objects",
            f"{spread(lead['changed'], '{:.3f}')} s", "≤ 100 ms", ok=med <= 0.1,
            note=f"without git: {spread(lead['changed_no_git'], '{:.3f}')} s; the record read (one GET) every pass "
                 f"and written when an agreement changed ({lead['state_writes']} writes)")
    sec.row("leader: pass with no change (resync)", f"{spread(lead['idle'], '{:.3f}')} s",
            note=f"without git: {spread(lead['idle_no_git'], '{:.3f}')} s")
    sec.row(f"state record of {lead['tracked']:,} objects", f"{rec.get('json', 0):,} bytes of JSON, "
            f"{rec.get('stored', 0):,} stored", "≤ 1 MiB stored", ok=0 < rec.get("stored", 0) <= 1024 * 1024,
            note="over 256 KiB the record is gzip in binaryData (syncer/sidecar/state.py)")
    sec.notes.append("`python -m bench.sidecarpass` (or `python -m bench --only sidecarpass`): the real Loop.run_pass "
                     "as a follower over a real clone; the LiveCache is filled with `put` as the watches fill it; "
                     "each change is a new value of one ConfigMap's LOG_LEVEL. Unchanged files are not parsed again "
                     "(syncer/sources/manifests.py), objects found in sync are not compared again while neither side changes "
                     "(syncer/detect/engine.py), the edited file's parses are remembered (syncer/writeback/plan.py). The leader "
                     "rows add the state record in a ConfigMap of the fake API server (tests/fakes/kube_api, over "
                     "loopback HTTP): read every pass, written when what git and the cluster agree on changes.")
    sec.data = {"follower": r, "leader": lead}
    return sec


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bench.sidecarpass")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of the second pass after a change")
    args = ap.parse_args(argv)
    if args.profile:
        import cProfile
        import io
        import pstats

        from syncer.sidecar.loop import Loop

        real, seen, prof = Loop.run_pass, [0], cProfile.Profile()

        def profiled(self: Loop, reason: str) -> Any:
            seen[0] += 1
            if seen[0] != 4:  # first pass, change, no change, then this change
                return real(self, reason)
            prof.enable()
            try:
                return real(self, reason)
            finally:
                prof.disable()

        Loop.run_pass = profiled  # type: ignore[method-assign]
        with tempfile.TemporaryDirectory(prefix="syncer-pass-") as tmp:
            measure(args.n, 3, Path(tmp) / "w")
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(os.environ.get("SYNCER_PROFILE_SORT", "cumulative")).print_stats(45)
        print(out.getvalue())
        return 0
    with tempfile.TemporaryDirectory(prefix="syncer-pass-") as tmp:
        sec = run(False, Path(tmp) / "w", args.n, args.rounds)
    for row in sec.rows:
        print(f"{row.metric}: {row.value}  {row.goal}  {row.note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
