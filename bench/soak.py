"""``python -m bench.soak``: a fault-injected soak of ``syncer run`` that checks nothing is lost.

    python -m bench.soak --seconds 600 --seed 7      # the long run; writes bench/RESULTS-soak.md
    python -m bench.soak --ci                        # the short mode tests/soak/test_soak.py runs

Two replicas of ``syncer run --leader-elect --mode pr`` (real subprocesses) watch a fake
Kubernetes API and keep one pull request on a fake GitHub whose branches live in a real bare
repository, which is also their ``--remote`` (over smart HTTP, with a git token). For
``--seconds`` a seeded random schedule mixes

* what people do: live edits in bursts (ConfigMap keys patched as ``kubectl-edit``, every value
  new), Secret edits, commits to ``main`` (unrelated files, and values under ``hosts/asgard/``
  that nobody edits live), one push onto syncer's branch, merging the open PR;
* what the endpoint manager does: Endpoints cleared and restored (the same address);
* what goes wrong: watch drops, 410 Gone, API 500/503/403, API hangs, forge 500/502/429 (with
  and without Retry-After), forge hangs, SIGTERM of a replica (also in the middle of a pass)
  and its restart;

and, a few times, a *flap-only window*: once everything has settled, only Endpoints flap, and
syncer must write nothing at all. At the end the faults stop, the world settles, the last PR
is merged, and the invariants are checked (see ``Soak.check``). The figures table is printed
and, unless ``--no-write``, appended with the command, seed and machine to
``bench/RESULTS-soak.md``. Exit code 0 when every invariant holds, 1 otherwise.

The driver (schedule, faults, invariants) is ``tests/soak/driver.py``; this is its command line.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from bench.common import machine
from tests.soak.driver import CI_SECONDS, Report, run_soak

ROOT = Path(__file__).resolve().parents[1]

RESULTS = ROOT / "bench" / "RESULTS-soak.md"


HEADER = """# Soak: fault-injected `syncer run`, nothing lost

Two `syncer run --leader-elect --mode pr --forge github` processes (debounce 1 s, resync 4 s,
stableFor 2 s, lease 3 s, shutdown grace 2 s) against the fake API server and fake GitHub on
loopback; the branches live in a real bare repository that syncer reaches over smart HTTP with
a git token. A seeded schedule mixes live edits, human commits and merges with API and forge
faults and replica restarts, with flap-only windows in between; then the faults stop, the
world settles, the last PR is merged and the invariants are checked. How the schedule works
and what each figure means: `tests/soak/driver.py`. Each run below was appended by `python -m bench.soak`.
"""


def write_results(report: Report, command: str, path: Path = RESULTS) -> None:
    """Append this run (command, seed, machine, figures) to ``path``."""
    m = machine()
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    verdict = "every invariant held" if not report.failures else f"{len(report.failures)} invariant(s) FAILED"
    text = [
        f"## {'CI mode' if report.ci else 'Long run'}: {report.seconds:.0f} s of chaos, seed {report.seed} ({when})",
        "",
        f"`{command}` — wall {report.wall:.0f} s; {verdict}.",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram']} RAM; {m['python']}; {m['git']}; "
        f"kernel {m['kernel']}; load {m['load']}.",
        "",
        report.table(),
        "",
    ]
    if report.failures:
        text += ["Failures:", ""] + [f"- {f}" for f in report.failures] + [""]
    old = path.read_text() if path.exists() else HEADER
    path.write_text(old.rstrip("\n") + "\n\n" + "\n".join(text))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=None, help="length of the chaos phase (default 600; --ci: 150)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random schedule")
    ap.add_argument("--ci", action="store_true", help="the short mode the test suite runs")
    ap.add_argument("--workdir", help="where the repositories and logs go (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--no-write", action="store_true", help=f"do not append the run to {RESULTS.name}")
    ap.add_argument("--json", metavar="FILE", help="also write figures, failures and the timeline as JSON")
    args = ap.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (CI_SECONDS if args.ci else 600.0)
    tmp = None
    if args.workdir:
        workdir = Path(args.workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.mkdtemp(prefix="syncer-soak-")
        workdir = Path(tmp)
    report = run_soak(seconds, args.seed, workdir, ci=args.ci)
    print(report.table())
    for f in report.failures:
        print(f"FAIL: {f}")
    command = "python -m bench.soak " + shlex.join(argv if argv is not None else sys.argv[1:])
    if not args.no_write:
        write_results(report, command.strip())
        print(f"appended to {RESULTS}")
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": [f.__dict__ for f in report.figures],
                                               "failures": report.failures, "details": report.details},
                                              indent=2, default=str))
    if tmp and not args.keep and not report.failures:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    elif tmp:
        print(f"work directory kept: {tmp}")
    return 0 if not report.failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
