"""Profile the phases the numbers show are slow, with pyinstrument (``pip install -e '.[bench]'``).

    python -m bench.profile scale 1000     # load / snapshot / detect / plan of a generated installation
    python -m bench.profile edit           # YamlFile parse + set_value + render over the corpus
    python -m bench.profile startup        # import syncer.cli
    python -m bench.profile whatif 1000    # time the suggested fixes against the current code

Reports go to ``bench/profiles/<what>-<phase>.txt`` (text, call tree) and the top
functions by own time are printed, which is what "What the profile says" in RESULTS.md
summarises.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import CORPUS, ROOT

OUT = ROOT / "bench" / "profiles"


def _profile(name: str, fn: Callable[[], Any], interval: float = 0.005) -> Any:
    from pyinstrument import Profiler

    prof = Profiler(interval=interval)
    prof.start()
    try:
        result = fn()
    finally:
        prof.stop()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.txt").write_text(prof.output_text(unicode=True, color=False, show_all=False))
    session = prof.last_session
    print(f"== {name}: {session.duration:.2f} s wall, {session.cpu_time:.2f} s CPU -> {OUT / (name + '.txt')}")
    for line in top_self(prof, 12):
        print("   ", line)
    return result


def top_self(prof: Any, n: int) -> list[str]:
    """The functions with the most own (self) time, as ``seconds  function  file:line``."""
    totals: dict[tuple[str, str], float] = {}

    def walk(frame: Any) -> None:
        if frame is None:
            return
        if not frame.is_synthetic:  # "[self]" leaves repeat their parent's own time
            where = Path(frame.file_path or "?")
            key = (frame.function or "?", f"{where.parent.name}/{where.name}:{frame.line_no}")
            totals[key] = totals.get(key, 0.0) + frame.total_self_time
        for child in frame.children:
            walk(child)

    walk(prof.last_session.root_frame())
    rows = sorted(totals.items(), key=lambda kv: -kv[1])[:n]
    return [f"{t:7.3f}s  {fn}  {where}" for (fn, where), t in rows]


def profile_scale(n: int) -> None:
    from bench.gen import init_repos, write_snapshot
    from syncer.gather.collect import detect_live
    from syncer.gather.live import SnapshotSource
    from syncer.writeback.deliver import Mode, load_installation, select
    from syncer.writeback.plan import plan_changes

    with tempfile.TemporaryDirectory(prefix="bench-prof-") as tmp:
        inst, _ = init_repos(Path(tmp) / "repo", "bench", n)
        snap = Path(tmp) / "live.yaml"
        write_snapshot(snap, n, inst.drifted)
        loaded = _profile(f"scale{n}-load", lambda: load_installation(inst.repo, "bench"))
        source = _profile(f"scale{n}-snapshot", lambda: SnapshotSource([snap], loaded.config.namespace))
        now = datetime.now(timezone.utc)
        result = _profile(f"scale{n}-detect", lambda: detect_live(loaded.config, loaded.manifests, source, now))
        _profile(f"scale{n}-plan", lambda: plan_changes(inst.repo, "bench", select(result, Mode.COMMIT),
                                                        loaded.manifests.objects))


def profile_edit() -> None:
    import random

    from bench.edit import corpus_files, pick_edit
    from syncer.yamledit import YamlFile

    rng = random.Random(5)
    work = []
    for path in corpus_files():  # the edits are drawn outside the profile: only syncer's part is measured
        text = path.read_bytes().decode("utf-8")
        picked = pick_edit(text, rng)
        if picked is not None:
            work.append((path.name, text, picked[0]))

    def run() -> None:
        for name, text, plan in work:
            doc = YamlFile.parse(text, name)
            try:
                doc.set_value(plan.doc, plan.path, plan.new)
            except Exception:  # noqa: BLE001 - a refused edit is counted by the bench, not here
                continue
            doc.render()

    _profile("edit-corpus", run)


def profile_startup() -> None:
    for mod in [m for m in sys.modules if m == "syncer" or m.startswith(("syncer.", "kubernetes", "prometheus_client"))]:
        del sys.modules[mod]
    _profile("startup-import", lambda: __import__("syncer.cli"), interval=0.005)


def _normalize_pruned(obj: dict[str, Any]) -> dict[str, Any]:
    """What ``syncer.detect.normalize.normalize`` returns, copying only what it keeps (the proposed fix)."""
    import copy

    return copy.deepcopy(_normalize_shallow(obj))


def _normalize_shallow(obj: dict[str, Any]) -> dict[str, Any]:
    """The same content, sharing everything below ``metadata`` with ``obj`` (safe only for readers).

    This was the proposed fix; ``syncer.detect.normalize.normalize`` now does exactly this.
    """
    from syncer.detect.normalize import normalize

    return normalize(obj)


def _detect_whatif(repo: Path, source: Any, reps: int) -> tuple[float, float]:
    """``detect`` as it is, then with the suggested fixes patched in (this process only)."""
    import functools
    import time

    import syncer.config as config_mod
    import syncer.detect.compared as engine  # where normalize is called from
    import syncer.detect.normalize as norm
    from syncer.gather.collect import detect_live
    from syncer.writeback.deliver import load_installation

    loaded = load_installation(repo, "bench")
    now = datetime.now(timezone.utc)

    def timed() -> tuple[float, Any]:
        best, result = float("inf"), None
        for _ in range(reps):
            t0 = time.perf_counter()
            result = detect_live(loaded.config, loaded.manifests, source, now)
            best = min(best, time.perf_counter() - t0)
        return best, result

    before, r0 = timed()
    after = {}
    index: dict[tuple[str, str], Any] = {}
    for c in loaded.config.candidates:
        index.setdefault((c.namespace, c.endpoints), c)
    saved = (engine.normalize, norm.normalize, norm.pointer_to_path, config_mod.Config.candidates_for)
    try:
        norm.pointer_to_path = functools.lru_cache(maxsize=4096)(saved[2])  # type: ignore[assignment]
        config_mod.Config.candidates_for = lambda self, ns, ep: index.get((ns, ep))  # type: ignore[method-assign]
        for name, fn in (("copy what is kept", _normalize_pruned), ("no deep copy", _normalize_shallow)):
            engine.normalize = norm.normalize = fn  # type: ignore[assignment]
            after[name], r1 = timed()
            assert r0 == r1, "the patched detect must give the same result"
    finally:
        engine.normalize, norm.normalize, norm.pointer_to_path, config_mod.Config.candidates_for = saved  # type: ignore[method-assign]
    return before, after


def whatif(n: int) -> None:
    """Time the fixes suggested in RESULTS.md against what syncer does now, on one installation."""
    import json
    import time

    import yaml

    from bench.gen import init_repos, write_snapshot
    from syncer.gather.live import SnapshotSource
    from syncer.sources.manifests import parse_documents
    from syncer.detect.normalize import normalize

    def best(fn: Callable[[], Any], reps: int = 3) -> float:
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    with tempfile.TemporaryDirectory(prefix="bench-whatif-") as tmp:
        inst, _ = init_repos(Path(tmp) / "repo", "bench", n)
        snap = Path(tmp) / "live.yaml"
        write_snapshot(snap, n, inst.drifted)
        text = snap.read_text()
        reps = 1 if n >= 2000 else 3
        now = best(lambda: parse_documents(text, "live.yaml"), reps)
        c_yaml = best(lambda: list(yaml.load_all(text, Loader=yaml.CSafeLoader)), reps)
        as_json = json.dumps(list(yaml.load_all(text, Loader=yaml.CSafeLoader))[0])
        j = best(lambda: json.loads(as_json), reps)
        print(f"snapshot {len(text) / 1e6:.1f} MB ({n} objects): ruamel pure (now) {now:.2f} s, "
              f"PyYAML+libyaml CSafeLoader {c_yaml:.2f} s ({now / c_yaml:.1f}x), "
              f"json.loads of the same as `-o json` {j:.3f} s ({now / j:.0f}x)")
        import importlib.util

        from ruamel.yaml import YAML

        if importlib.util.find_spec("_ruamel_yaml") is not None:  # ruamel.yaml.clib
            c_ruamel = best(lambda: list(YAML(typ="safe").load_all(text)), reps)
            same = list(YAML(typ="safe").load_all(text)) == parse_documents(text, "live.yaml")
            print(f"ruamel.yaml with ruamel.yaml.clib (YAML(typ='safe'), not pure): {c_ruamel:.2f} s "
                  f"({now / c_ruamel:.1f}x), same data: {same}")
        else:
            print("ruamel.yaml.clib not importable: `pip install ruamel.yaml.clib` (or PYTHONPATH to it) to time "
                  "ruamel's own C parser")
        source = SnapshotSource([snap], "default")
        objs = list(source.objects.values())
        detect_now, fixed = _detect_whatif(inst.repo, source, max(reps, 2))
        print(f"detect ({n} objects): now {detect_now:.2f} s; with candidates index + pointer cache + normalize "
              + ", ".join(f"[{k}] {v:.2f} s ({detect_now / v:.1f}x)" for k, v in fixed.items()) + "; same result")
        assert all(normalize(o) == _normalize_pruned(o) for o in objs)
        a = best(lambda: [normalize(o) for o in objs])
        b = best(lambda: [_normalize_pruned(o) for o in objs])
        print(f"normalize of {len(objs)} live objects: deepcopy-then-drop (now) {a * 1000:.0f} ms, "
              f"drop-then-deepcopy {b * 1000:.0f} ms ({a / b:.1f}x), same result")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["scale", "edit", "startup", "whatif"])
    ap.add_argument("n", nargs="?", type=int, default=1000, help="objects (scale)")
    args = ap.parse_args(argv)
    if args.what == "scale":
        profile_scale(args.n)
    elif args.what == "edit":
        if not CORPUS.is_dir():
            print(f"corpus not found at {CORPUS}", file=sys.stderr)
            return 2
        profile_edit()
    elif args.what == "whatif":
        whatif(args.n)
    else:
        profile_startup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
