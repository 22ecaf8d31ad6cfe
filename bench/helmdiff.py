"""One-shot ``syncer diff`` of a Helm installation, the whole process, rendered by the real helm.

For each installation of the Helm corpus (tests/data/helm-corpus: a chart directory, an
umbrella, Flux HelmReleases), its live side is what helm installs (``helm template`` of the
same release, with helm-controller's values and labels for a HelmRelease), as a snapshot:

* in sync: ``syncer diff <inst> --live-file live.json`` (one render);
* with drift: the installation's live edits of the corpus (tests/helmcorpus.py ``edits``; for
  the local-path installations ``kubectl scale``, ``set image`` and an edit of a key shared by
  two fields), the text output with the planned diff.

Timed: the ``syncer diff`` process from start to exit (median [min-max] of ``--rounds``), and in
process the number of helm renders each one makes. Target: <= 2 s.

    python -m bench.helmdiff [--rounds 5] [--only storage-chart,storage-flux]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench.common import ROOT

sys.path.insert(0, str(ROOT))


def _timed(argv: list[str], rounds: int) -> tuple[list[float], int]:
    times, code = [], 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - t0)
        code = done.returncode
        if code not in (0, 1):
            raise RuntimeError(f"{' '.join(argv)}: exit {code}: {done.stderr.strip()[:300]}")
    return times, code


def _renders(repo: Path, name: str, live: Path) -> int:
    import io

    from syncer.cli import main
    from syncer.sources.helm import render

    before = render.RUNS[0]
    main(["diff", name, "--repo", str(repo), "--live-file", str(live)], stdout=io.StringIO(), stderr=io.StringIO())
    return render.RUNS[0] - before


def apply_all(edits: tuple[Any, ...], objects: list[dict[str, Any]]) -> None:
    from tests.helmcorpus import apply

    for e in edits:
        apply(objects, e)


def measure(rounds: int, only: set[str] | None, root: Path) -> list[dict[str, Any]]:
    from tests import test_helm as cases
    from tests.helmcorpus import INSTALLATIONS

    syncer = str(Path(sys.executable).with_name("syncer"))
    out = []
    for inst in INSTALLATIONS:
        if only and inst.name not in only:
            continue
        work = root / inst.name
        work.mkdir()
        repo = cases.repo_with(work, inst.name)
        installed = cases.installed(repo, inst.name)
        in_sync = cases.snapshot(work / "sync", installed) if (work / "sync").mkdir() is None else None
        edit = cases.scale_and_tag if not inst.edits else partial(apply_all, inst.edits)
        drifted = cases.snapshot(work / "drift", cases.edited(repo, inst.name, edit)) if (
            work / "drift").mkdir() is None else None
        assert in_sync is not None and drifted is not None
        row: dict[str, Any] = {"installation": inst.name, "chart": inst.chart, "layout": inst.layout,
                               "objects": len(installed), "edits": len(inst.edits) or 3}
        for label, live in (("in sync", in_sync), ("drift", drifted)):
            times, code = _timed([syncer, "diff", inst.name, "--repo", str(repo), "--live-file", str(live)], rounds)
            row[label] = {"median": statistics.median(times), "min": min(times), "max": max(times), "exit": code,
                          "renders": _renders(repo, inst.name, live)}
        out.append(row)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| installation | chart | layout | objects | diff in sync: s (exit, helm renders) | diff with the "
             "live edits: s (exit, helm renders) | ≤ 2 s |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = []
        for label in ("in sync", "drift"):
            m = r[label]
            cells.append(f"{m['median']:.2f} [{m['min']:.2f}–{m['max']:.2f}] (exit {m['exit']}, {m['renders']})")
        ok = "✅" if max(r["in sync"]["median"], r["drift"]["median"]) <= 2.0 else "❌"
        lines.append(f"| {r['installation']} | {r['chart']} | {r['layout']} | {r['objects']} | {cells[0]} | "
                     f"{r['edits']} edits: {cells[1]} | {ok} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.helmdiff", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", help="installations, comma-separated")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    only = {s.strip() for s in args.only.split(",")} if args.only else None
    with tempfile.TemporaryDirectory(prefix="syncer-helmdiff-") as tmp:
        rows = measure(args.rounds, only, Path(tmp))
    base, _ = _timed([str(Path(sys.executable).with_name("syncer")), "diff", "asgard", "--repo", str(ROOT),
                      "--live-file", str(ROOT / "examples" / "asgard-live.yaml")], args.rounds)
    print(table(rows))
    print(f"\nbaseline, the same machine and moment: `syncer diff asgard --live-file examples/asgard-live.yaml` "
          f"(plain manifests, no render) {statistics.median(base):.2f} [{min(base):.2f}–{max(base):.2f}] s")
    print(f"\nload: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
          f"rounds: {args.rounds}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "baseline": base}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
