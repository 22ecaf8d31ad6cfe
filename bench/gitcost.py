"""Section 5, git cost: a big repository (20,000 commits, 5,000 files, built with fast-import).

* ``syncer sync --mode commit`` of a one-line drift, reusing ``--clone-dir`` after the first
  clone, interleaved with the same sync without ``--clone-dir`` (a fresh clone every time:
  what the CLI does by default) as the baseline;
* where the time of a reused-clone sync goes, git command by git command (in-process, with
  syncer's ``run_git`` wrapped by a timer);
* first-clone time with plain git against the same bare repository: syncer's own clone
  command (``Workspace.open_or_clone``: ``clone --no-tags --single-branch --branch main``,
  full history), ``--depth 1`` and ``--filter=blob:none``.  Remotes are ``file://`` URLs so
  git uses its real transport (a plain path would hard-link objects, which no network remote
  can do); the plain-path clone is shown for reference.
"""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import Row, Section, git, git_env, median, rmtree, run_measured, spread, syncer_cmd
from bench.gen import fast_import_repo, write_snapshot

CLONE_WAYS: dict[str, list[str]] = {
    "syncer's clone (full history)": [],
    "--depth 1": ["--depth", "1"],
    "--filter=blob:none": ["--filter=blob:none"],
    "--depth 1 --filter=blob:none": ["--depth", "1", "--filter=blob:none"],
}


SPARSE = "--filter=blob:none --sparse + sparse-checkout set hosts/<installation>"


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _clone(url: str, dest: Path, extra: list[str]) -> tuple[float, int]:
    rmtree(dest)
    ran = run_measured(["git", "clone", "--quiet", "--no-tags", "--single-branch", "--branch", "main", *extra, "--",
                        url, str(dest)], env=git_env(dest.parent), timeout=600, check=True)
    return ran.wall, _du(dest / ".git")


def _sparse_clone(url: str, dest: Path, installation: str) -> tuple[float, int]:
    """Partial clone that checks out only ``hosts/<installation>/`` (all syncer reads or writes)."""
    rmtree(dest)
    env = git_env(dest.parent)
    t0 = time.perf_counter()
    run_measured(["git", "clone", "--quiet", "--no-tags", "--single-branch", "--branch", "main",
                  "--filter=blob:none", "--sparse", "--", url, str(dest)], env=env, timeout=600, check=True)
    run_measured(["git", "-C", str(dest), "sparse-checkout", "set", f"hosts/{installation}"], env=env,
                 timeout=600, check=True)
    return time.perf_counter() - t0, _du(dest / ".git")


def _sync(bare: Path, start: str, work: Path, snap: Path, clone: Path | None) -> float:
    git(bare, "update-ref", "refs/heads/main", start, env=git_env(bare.parent))
    args = ["sync", "bench", "--repo", str(work), "--live-file", str(snap), "--mode", "commit",
            "--remote", f"file://{bare}"]
    if clone is not None:
        args += ["--clone-dir", str(clone)]
    ran = run_measured(syncer_cmd(*args), timeout=900)
    if ran.rc != 0 or "pushed" not in ran.stdout:
        raise RuntimeError(f"sync on the big repo: exit {ran.rc}: {(ran.stdout + ran.stderr).strip()[-400:]}")
    return ran.wall


def git_breakdown(bare: Path, start: str, clone: Path, snap: Path) -> dict[str, float]:
    """Seconds per git subcommand (and for the rest) in one reused-clone ``sync_commit``."""
    import syncer.gitrepo as gitrepo
    from syncer.gather.live import SnapshotSource
    from syncer.writeback.deliver import load_installation, sync_commit

    git(bare, "update-ref", "refs/heads/main", start, env=git_env(bare.parent))
    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    original = gitrepo.run_git

    def timed(args: list[str], *rest: Any, **kw: Any) -> str:
        t0 = time.perf_counter()
        try:
            return original(args, *rest, **kw)
        finally:
            spent[f"git {args[0]}"] += time.perf_counter() - t0
            calls[f"git {args[0]}"] += 1

    gitrepo.run_git = timed  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        ws = gitrepo.Workspace.open_or_clone(f"file://{bare}", "main", clone)
        loaded = load_installation(ws.path, "bench")
        source = SnapshotSource([snap], loaded.config.namespace)
        out = sync_commit(ws, "bench", source, datetime.now(timezone.utc))
        total = time.perf_counter() - t0
    finally:
        gitrepo.run_git = original  # type: ignore[assignment]
    if out.commit is None:
        raise RuntimeError("breakdown sync made no commit")
    out = {f"{k} x{calls[k]}" if calls[k] > 1 else k: v for k, v in spent.items()}
    out["other (load, detect, plan, write)"] = total - sum(spent.values())
    out["total"] = total
    return out


def run(quick: bool, workdir: Path) -> Section:
    sec = Section("git", "5. Git cost (big repository)")
    files, commits, reps = (1000, 2000, 2) if quick else (5000, 20000, 4)
    root = workdir / "gitcost"
    rmtree(root)
    root.mkdir(parents=True)
    bare = root / "big.git"
    t0 = time.perf_counter()
    info = fast_import_repo(bare, "bench", 10, files, commits)
    build = time.perf_counter() - t0
    start = git(bare, "rev-parse", "main")
    url = f"file://{bare}"
    work = root / "work"
    _clone(url, work, [])
    snap = root / "live-one.yaml"
    write_snapshot(snap, 10, [0])  # one ConfigMap edited live: a one-line commit

    # First clone, plain git, strategies interleaved.
    clones: dict[str, list[tuple[float, int]]] = {k: [] for k in (*CLONE_WAYS, SPARSE)}
    local: list[float] = []
    for _ in range(reps):
        for way, extra in CLONE_WAYS.items():
            clones[way].append(_clone(url, root / "c", extra))
        clones[SPARSE].append(_sparse_clone(url, root / "c", "bench"))
        local.append(_clone(str(bare), root / "c", [])[0])
    rmtree(root / "c")

    # syncer: first sync (clones), then reused clone vs fresh clone each time, interleaved.
    clone = root / "syncer-clone"
    first = _sync(bare, start, work, snap, clone)
    reused, fresh = [], []
    for _ in range(reps):
        reused.append(_sync(bare, start, work, snap, clone))
        fresh.append(_sync(bare, start, work, snap, None))
    breakdown = git_breakdown(bare, start, clone, snap)

    sec.row("repository", f"{info['commits']:,} commits, {info['files']:,} files, {info['bytes'] / 1e6:.1f} MB packed",
            note=f"built with git fast-import + repack in {build:.1f} s")
    med_reused = median(reused)
    sec.row("one-line `sync --mode commit`, clone reused (`--clone-dir`)", f"{spread(reused, '{:.2f}')} s", "≤ 2 s",
            med_reused <= 2.0, f"fresh clone each time: {spread(fresh, '{:.2f}')} s")
    sec.row("first `sync` (includes the clone)", f"{first:.2f} s")
    parts = sorted(((k, v) for k, v in breakdown.items() if k != "total"), key=lambda kv: -kv[1])
    sec.row("where a reused-clone sync goes", ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in parts),
            note=f"in-process total {breakdown['total']:.2f} s")
    full = median([c[0] for c in clones["syncer's clone (full history)"]])
    for way, results in clones.items():
        t = [c[0] for c in results]
        size = median([c[1] for c in results])
        sec.row(f"first clone: {way}", f"{spread(t, '{:.2f}')} s, .git {size / 1e6:.1f} MB",
                baseline="" if way.startswith("syncer") else f"full / this: {full / median(t):.1f}x")
    sec.row("first clone: plain path (hard links; what a local path gives syncer)", f"{spread(local, '{:.2f}')} s")
    sec.headline.append(Row("git: sync with fresh clone / with reused `--clone-dir`",
                            spread([f / r for f, r in zip(fresh, reused)], "{:.1f}x"), note=f"{reps} interleaved pairs"))
    sec.headline.append(Row("git: first clone full / `--depth 1`",
                            spread([a[0] / b[0] for a, b in zip(clones["syncer's clone (full history)"],
                                                                 clones["--depth 1"])], "{:.1f}x"),
                            note=f"{reps} interleaved rounds"))
    sec.notes.append(
        "syncer today (`Workspace.open_or_clone` in syncer/gitrepo.py): the first clone is "
        "`git clone --quiet --no-tags --single-branch --branch <base>` -- full history of one branch, no depth or "
        "filter; a reused `--clone-dir` runs `remote set-url`, `fetch` of the base branch, `checkout --force -B`, "
        "`clean -fdxq`, then `add`, `commit`, `rev-parse`, `push`. The CLI without `--clone-dir` clones into a "
        "temporary directory on every run."
    )
    if quick:
        sec.notes.append(f"--quick: a smaller repository ({commits:,} commits, {files:,} files) than the full run.")
    sec.data = {"reused": reused, "fresh": fresh, "first": first, "breakdown": breakdown,
                "clones": {k: v for k, v in clones.items()}, "local": local, "repo": {k: v for k, v in info.items()
                                                                                      if k != "installation"}}
    return sec
