"""Section 4, scale: generated installations of 10 .. 5,000 objects, ~1 % drifted live.

Two views of the same work:

* phases, through the Python API, each size in a fresh interpreter (``python -m bench.scale
  child ...``, so one size's garbage does not inflate the next): manifests
  (``load_installation``), snapshot parse (``SnapshotSource``), diff/classify (``detect``)
  and write-back planning (``plan_changes``), with wall and CPU time and the peak RSS
  reached after each phase;
* end to end, through the CLI: ``syncer diff --live-file`` and a one-line
  ``syncer sync --mode commit`` to a local bare repository (clone reused via
  ``--clone-dir``), timed with the child's own peak RSS (``wait4``).

Sizes are measured interleaved (round 1: every size, round 2: every size, ...), so a noisy
neighbour spreads over all of them rather than hitting one.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Section, git, git_env, median, mib, run_measured, secs, spread, syncer_cmd, vm_hwm
from bench.gen import init_repos, write_snapshot

PHASES = ("manifests", "snapshot", "detect", "plan")


@dataclass
class Prepared:
    n: int
    work: Path
    bare: Path
    snap: Path  # ~1 % drifted
    snap_one: Path  # exactly one drifted value: a one-line sync
    start: str  # commit the bare repo's main is reset to before each sync
    drifted: int
    files: int
    manifest_bytes: int
    snapshot_bytes: int


def prepare(root: Path, n: int) -> Prepared:
    inst, bare = init_repos(root, "bench", n)
    snap, one = root / "live.yaml", root / "live-one.yaml"
    size = write_snapshot(snap, n, inst.drifted)
    write_snapshot(one, n, [inst.drifted[0]])
    mbytes = sum(p.stat().st_size for p in (inst.repo / "hosts" / "bench").rglob("*.yaml"))
    return Prepared(n, inst.repo, bare, snap, one, git(bare, "rev-parse", "main"), len(inst.drifted), inst.files,
                    mbytes, size)


# ---------------------------------------------------------------- the child (one size, one fresh interpreter)


def _maxrss_kib() -> int:
    return vm_hwm()  # this process's own peak (ru_maxrss would include the parent's, see common)


def child(repo: Path, installation: str, snapshot: Path) -> dict[str, Any]:
    from datetime import datetime, timezone

    from syncer.gather.collect import detect_live
    from syncer.gather.live import SnapshotSource
    from syncer.writeback.deliver import Mode, load_installation, select
    from syncer.writeback.plan import plan_changes

    out: dict[str, Any] = {"rss_start": _maxrss_kib()}

    def timed(name: str, fn: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        value = fn()
        out[name] = {"wall": time.perf_counter() - w, "cpu": time.process_time() - c, "maxrss": _maxrss_kib()}
        return value

    loaded = timed("manifests", lambda: load_installation(repo, installation))
    source = timed("snapshot", lambda: SnapshotSource([snapshot], loaded.config.namespace))
    now = datetime.now(timezone.utc)
    result = timed("detect", lambda: detect_live(loaded.config, loaded.manifests, source, now))
    changes = timed("plan", lambda: plan_changes(repo, installation, select(result, Mode.COMMIT),
                                                 loaded.manifests.objects))
    out.update(objects=len(loaded.manifests.objects), drifts=len(result.drifts), errors=len(result.errors),
               files_changed=len(changes))
    return out


def _phases(p: Prepared) -> dict[str, Any]:
    ran = run_measured([sys.executable, "-m", "bench.scale", "child", str(p.work), "bench", str(p.snap)],
                       timeout=1800, check=True)
    data: dict[str, Any] = json.loads(ran.stdout.strip().splitlines()[-1])
    data["process_maxrss"] = max(ran.peak_kib, data["plan"]["maxrss"])
    return data


def _cli_diff(p: Prepared) -> tuple[float, int, float]:
    ran = run_measured(syncer_cmd("diff", "bench", "--repo", str(p.work), "--live-file", str(p.snap), "-o", "json"),
                       timeout=1800)
    if ran.rc != 1:
        raise RuntimeError(f"syncer diff at n={p.n}: exit {ran.rc} (want 1: drift): {ran.stderr.strip()[-400:]}")
    drifts = len(json.loads(ran.stdout)["drifts"])
    if drifts != p.drifted:
        raise RuntimeError(f"syncer diff at n={p.n}: {drifts} drifts, generated {p.drifted}")
    return ran.wall, ran.peak_kib, ran.cpu


def _cli_sync(p: Prepared, clone: Path) -> tuple[float, int, float]:
    git(p.bare, "update-ref", "refs/heads/main", p.start, env=git_env(p.bare.parent))
    ran = run_measured(syncer_cmd("sync", "bench", "--repo", str(p.work), "--live-file", str(p.snap_one),
                                  "--mode", "commit", "--remote", str(p.bare), "--clone-dir", str(clone)),
                       timeout=1800)
    if ran.rc != 0 or "pushed" not in ran.stdout:
        raise RuntimeError(f"syncer sync at n={p.n}: exit {ran.rc}: {(ran.stdout + ran.stderr).strip()[-400:]}")
    changed = git(p.bare, "diff", "--numstat", p.start, "main", env=git_env(p.bare.parent))
    if changed.split()[:2] != ["1", "1"]:
        raise RuntimeError(f"syncer sync at n={p.n}: expected a one-line commit, got {changed!r}")
    return ran.wall, ran.peak_kib, ran.cpu


# ---------------------------------------------------------------- the section


def run(quick: bool, workdir: Path) -> Section:
    sec = Section("scale", "4. Scale (generated installations, ~1 % drifted)")
    if quick:
        sizes, api_rounds, cli_sizes, cli_rounds = (10, 100, 300), 1, (10, 100), 1
    else:
        sizes, api_rounds, cli_sizes, cli_rounds = (10, 100, 1000, 5000), 2, (10, 100, 1000, 5000), 1
    t0 = time.perf_counter()
    prepared = {n: prepare(workdir / f"scale-{n}", n) for n in sizes}
    gen_time = time.perf_counter() - t0
    phases: dict[int, list[dict[str, Any]]] = {n: [] for n in sizes}
    diffs: dict[int, list[tuple[float, int, float]]] = {n: [] for n in cli_sizes}
    syncs: dict[int, list[tuple[float, int, float]]] = {n: [] for n in cli_sizes}
    first_sync: dict[int, tuple[float, int, float]] = {}
    for n in cli_sizes:  # the first sync clones: measured apart (small sizes), and it warms the clone
        clone = workdir / f"scale-{n}" / "clone"
        if n <= 100:
            first_sync[n] = _cli_sync(prepared[n], clone)
        else:  # big sizes: a whole extra sync costs minutes; a plain clone warms it just the same
            git(None, "clone", "--quiet", "--branch", "main", str(prepared[n].bare), str(clone))
    for r in range(max(api_rounds, cli_rounds)):
        for n in sizes:
            big = n >= 5000
            if r < (1 if big else api_rounds):
                phases[n].append(_phases(prepared[n]))
            if n in cli_sizes and r < (1 if big else cli_rounds):
                diffs[n].append(_cli_diff(prepared[n]))
                syncs[n].append(_cli_sync(prepared[n], workdir / f"scale-{n}" / "clone"))

    def med(n: int, phase: str, what: str = "wall") -> float:
        return median([x[phase][what] for x in phases[n]])

    for n in sizes:
        p = prepared[n]
        load = [x["manifests"]["wall"] + x["snapshot"]["wall"] for x in phases[n]]
        det = [x["detect"]["wall"] for x in phases[n]]
        plan = [x["plan"]["wall"] for x in phases[n]]
        rss = max(x["process_maxrss"] for x in phases[n])
        drift_ok = all(x["drifts"] == p.drifted and x["errors"] == 0 for x in phases[n])
        sec.row(f"n={n}: load (manifests + snapshot)",
                f"{secs(median(load))} = {secs(med(n, 'manifests'))} + {secs(med(n, 'snapshot'))}",
                note=f"{p.files} files, {p.manifest_bytes / 1e6:.2f} MB manifests, {p.snapshot_bytes / 1e6:.2f} MB snapshot")
        goal = "≤ 1 s" if n == 5000 else ""
        sec.row(f"n={n}: diff/classify (detect)", f"{secs(median(det))} (CPU {secs(med(n, 'detect', 'cpu'))})", goal,
                median(det) <= 1.0 if n == 5000 else None,
                note=f"{p.drifted} drifted, found {'all' if drift_ok else 'WRONG COUNT'}")
        sec.row(f"n={n}: write-back plan", secs(median(plan)), note=f"{p.drifted} file edit(s)")
        sec.row(f"n={n}: peak RSS (API phases)", mib(rss),
                note="after load " + mib(max(x['snapshot']['maxrss'] for x in phases[n])))
        if n in cli_sizes:
            dw = [d[0] for d in diffs[n]]
            sw = [s[0] for s in syncs[n]]
            sec.row(f"n={n}: `syncer diff` end to end", f"{spread(dw, '{:.2f}')} s, {mib(max(d[1] for d in diffs[n]))}")
            sec.row(f"n={n}: one-line `sync --mode commit` (clone reused)",
                    f"{spread(sw, '{:.2f}')} s, {mib(max(s[1] for s in syncs[n]))}",
                    note=f"first sync incl. clone {first_sync[n][0]:.2f} s" if n in first_sync else
                    "clone made beforehand with plain git")
    big, small = sizes[-1], sizes[-2]
    k = big / small

    def judge(ratio: float) -> bool | None:
        # Below 1,000 objects the phases take milliseconds: one noisy sample decides. Informational there.
        return ratio <= 1.5 * k if small >= 1000 else None
    for label, fn in (("load", lambda n: med(n, "manifests") + med(n, "snapshot")),
                      ("detect", lambda n: med(n, "detect")),
                      ("plan", lambda n: med(n, "plan"))):
        r = fn(big) / fn(small) if fn(small) else float("nan")
        sec.row(f"linearity: {label} time({big})/time({small})", f"{r:.2f}", f"≈ {k:g}", judge(r))
    if big in cli_sizes and small in cli_sizes:
        for label, d in (("`syncer diff`", diffs), ("`sync --mode commit`", syncs)):
            r = median([x[0] for x in d[big]]) / median([x[0] for x in d[small]])
            sec.row(f"linearity: {label} time({big})/time({small})", f"{r:.2f}", f"≈ {k:g}", judge(r))
    sec.notes.append(
        f"Sizes {', '.join(map(str, sizes))}; API phases {api_rounds} interleaved round(s) "
        f"({'1 at 5,000' if 5000 in sizes else 'each size'}), CLI {cli_rounds} round(s); median shown, "
        f"[min–max] where there are several. Generating the installations took {gen_time:.0f} s (not counted). "
        "Each Endpoints is bound to its ConfigMap's address list (the asgard pattern, repeated). Wall times on a "
        "shared 2-core machine; CPU time given where it differs much."
    )
    sec.data = {"phases": {str(n): v for n, v in phases.items()},
                "cli_diff": {str(n): v for n, v in diffs.items()},
                "cli_sync": {str(n): v for n, v in syncs.items()},
                "first_sync": {str(n): v for n, v in first_sync.items()}}
    return sec


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "child":
        print(json.dumps(child(Path(argv[1]), argv[2], Path(argv[3]))))
        return 0
    print("usage: python -m bench.scale child REPO INSTALLATION SNAPSHOT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
