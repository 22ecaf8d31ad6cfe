"""Section 2 (part): import and start-up time of the CLI, against a bare interpreter start.

``python -X importtime -c "import syncer.cli"`` names the modules that cost the most
(cumulative, median over runs); ``syncer --help`` is timed end to end through the console
script, interleaved with ``python -c pass`` so the ratio survives a noisy machine.

Two environments: the one the bench runs in (here and in CI ``PYTHONDONTWRITEBYTECODE=1``
is set, so an editable install compiles syncer's own modules from source at every start),
and "bytecode cached" (``PYTHONPYCACHEPREFIX`` pointing at a warmed private cache), which is
what a normal ``pip install`` gives.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from bench.common import Row, Section, median, run_measured, spread, syncer_cmd

_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S.*)$")


def importtime(module: str, env: dict[str, str] | None = None) -> dict[str, tuple[int, int, int]]:
    """module -> (self µs, cumulative µs, depth) from one ``-X importtime`` run."""
    ran = run_measured([sys.executable, "-X", "importtime", "-c", f"import {module}"], env=env, check=True)
    out: dict[str, tuple[int, int, int]] = {}
    for line in ran.stderr.splitlines():
        m = _LINE.match(line)
        if m:
            out[m.group(4).strip()] = (int(m.group(1)), int(m.group(2)), len(m.group(3)) // 2)
    return out


def _top(runs: list[dict[str, tuple[int, int, int]]], n: int) -> list[tuple[str, float, float]]:
    cum: dict[str, list[int]] = defaultdict(list)
    own: dict[str, list[int]] = defaultdict(list)
    for r in runs:
        for mod, (s, c, _) in r.items():
            cum[mod].append(c)
            own[mod].append(s)
    rows = [(mod, median(cum[mod]) / 1000, median(own[mod]) / 1000) for mod in cum]
    return sorted(rows, key=lambda r: -r[1])[:n]


#: What is resident before syncer has done anything: the sidecar imports the official client
#: (kubeconfig loading) and httpx (forges, webhooks) on top of its own modules.
IMPORT_RSS = (
    ("bare interpreter", "pass"),
    ("`import syncer.cli`", "import syncer.cli"),
    ("`import kubernetes`", "import kubernetes"),
    ("`syncer run`'s imports", "import syncer.cli, syncer.sidecar.app, kubernetes.client, httpx"),
)


def _import_rss(stmt: str, env: dict[str, str]) -> int:
    code = f"{stmt}\nimport re\nprint(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))"
    return int(run_measured([sys.executable, "-c", code], env=env, check=True).stdout.strip())


def _cached_env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    run_measured([sys.executable, "-c", "import syncer.cli, syncer.sidecar.app"], env=env, check=True)  # warm it
    return env


def run(quick: bool) -> Section:
    sec = Section("startup", "2b. Import and start-up time")
    reps = 3 if quick else 7
    as_is = "PYTHONDONTWRITEBYTECODE=1" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode writable"
    with tempfile.TemporaryDirectory(prefix="bench-pyc-") as tmp:
        cached = _cached_env(Path(tmp))
        cli_runs, cli_cached, side_cached, helps, helps_cached, bare = [], [], [], [], [], []
        for _ in range(reps):  # interleaved: the neighbour's load hits every variant alike
            cli_runs.append(importtime("syncer.cli"))
            cli_cached.append(importtime("syncer.cli", cached))
            side_cached.append(importtime("syncer.sidecar.app", cached))
            bare.append(run_measured([sys.executable, "-c", "pass"], env=cached, check=True).wall)
            helps.append(run_measured(syncer_cmd("--help"), check=True).wall)
            helps_cached.append(run_measured(syncer_cmd("--help"), env=cached, check=True).wall)

        rss = {what: _import_rss(stmt, cached) for what, stmt in IMPORT_RSS}

    def total(runs: list[dict[str, tuple[int, int, int]]], mod: str) -> list[float]:
        return [r[mod][1] / 1000 for r in runs if mod in r]

    sec.row("`import syncer.cli` (cumulative, -X importtime), bytecode cached",
            f"{spread(total(cli_cached, 'syncer.cli'), '{:.0f}')} ms",
            baseline=f"as this environment runs it ({as_is}): {spread(total(cli_runs, 'syncer.cli'), '{:.0f}')} ms")
    sec.row("`import syncer.sidecar.app` (the `run` path), bytecode cached",
            f"{spread(total(side_cached, 'syncer.sidecar.app'), '{:.0f}')} ms")
    sec.row("`syncer --help` wall time, bytecode cached", f"{spread(helps_cached, '{:.3f}')} s",
            baseline=f"`python -c pass`: {spread(bare, '{:.3f}')} s; as is ({as_is}): {spread(helps, '{:.3f}')} s")
    ratios = [h / b for h, b in zip(helps_cached, bare)]
    sec.headline.append(Row("start-up: `syncer --help` / bare `python -c pass` (bytecode cached)",
                            spread(ratios, "{:.1f}x"), note=f"{reps} interleaved pairs"))
    top = _top(cli_cached, 12)
    heavy = [f"`{mod}` {c:.0f} ms (self {s:.0f})" for mod, c, s in top if mod != "syncer.cli"][:10]
    sec.notes.append(f"Top import costs under `import syncer.cli`, bytecode cached (cumulative, median of {reps}): "
                     + "; ".join(heavy) + ".")
    third: dict[str, float] = {}
    for mod, (_, c, _) in cli_cached[0].items():
        if "." not in mod and not mod.startswith(("syncer", "_")):
            third[mod] = c / 1000
    big = sorted(third.items(), key=lambda kv: -kv[1])[:6]
    sec.notes.append("Largest top-level packages pulled in: " + ", ".join(f"`{m}` {t:.0f} ms" for m, t in big) + ".")
    loaded = set(cli_cached[0])
    lazy = [pkg for pkg in ("kubernetes", "prometheus_client", "httpx", "watchfiles") if pkg not in loaded]
    eager = [pkg for pkg in ("kubernetes", "prometheus_client", "httpx", "watchfiles", "git", "ruamel.yaml")
             if pkg in loaded]
    sec.row("third-party packages imported by `import syncer.cli`", ", ".join(f"`{p}`" for p in eager) or "none",
            note="not imported (lazy): " + (", ".join(f"`{p}`" for p in lazy) or "none"))
    base = rss["bare interpreter"]
    sec.row("peak RSS after imports only (VmHWM)",
            ", ".join(f"{what} {kib / 1024:.1f} MiB" for what, kib in rss.items()),
            note=f"`kubernetes` alone adds {(rss['`import kubernetes`'] - base) / 1024:.1f} MiB to a bare interpreter")
    sec.data = {"import_rss_kib": rss, "cli_ms_cached": total(cli_cached, "syncer.cli"),
                "cli_ms_as_is": total(cli_runs, "syncer.cli"),
                "sidecar_ms_cached": total(side_cached, "syncer.sidecar.app"), "help_s_cached": helps_cached,
                "help_s_as_is": helps, "python_s": bare, "top": top}
    return sec
