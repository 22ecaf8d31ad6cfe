"""The tests of each tier, counted from pytest's own collection (docs/tests.md's table).

    python -m tests.tiers                  # the table: tests per tier, and per file
    python -m tests.tiers --ids DIR        # also DIR/<tier>.txt: every test id of each tier
    python -m tests.tiers --compare FILE   # every id in FILE (one per line) is still collected

A tier is a marker expression, as the README's command and ``.ci/run`` select them: the
default run is ``-m 'not slow'`` (pyproject's addopts), the slow step ``-m slow``. Nothing
is run: ``--collect-only`` only (a few seconds per tier).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (name, marker expression, what): the default run is the first two together.
TIERS: list[tuple[str, str, str]] = [
    ("unit", "not slow and not realapi", "default run: in process, fakes over loopback, real git"),
    ("realapi", "realapi and not slow", "default run: the real kube-apiserver v1.20.2 + etcd"),
    ("slow", "slow", "the slow step of .ci/run: `python -m pytest -q -m slow -n 0`"),
    ("all", "", "both runs together: what CI runs"),
]


def collect(expr: str) -> list[str]:
    """The test ids ``python -m pytest --collect-only -q -m expr`` lists."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "-m", expr], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode not in (0, 5):  # 5: nothing collected
        raise SystemExit(f"tests.tiers: pytest --collect-only -m {expr!r} exited {done.returncode}:\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return [line for line in done.stdout.splitlines() if "::" in line]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.tiers", description=__doc__.split("\n")[0])
    p.add_argument("--ids", type=Path, help="write <tier>.txt with every test id into this directory")
    p.add_argument("--compare", type=Path, help="a list of test ids (one per line) that must all still be collected")
    args = p.parse_args(argv)
    ids = {name: collect(expr) for name, expr, _ in TIERS}
    print("| tier | marker expression | tests | what |\n|---|---|---:|---|")
    for name, expr, what in TIERS:
        print(f"| {name} | `{expr or '(none)'}` | {len(ids[name]):,} | {what} |")
    print("\n| file | unit | realapi | slow |\n|---|---:|---:|---:|")
    per = {name: Counter(i.split("::")[0] for i in ids[name]) for name, _, _ in TIERS}
    for file in sorted(per["all"]):
        print(f"| `{file}` | {per['unit'][file]} | {per['realapi'][file]} | {per['slow'][file]} |")
    split = len(ids["unit"]) + len(ids["realapi"]) + len(ids["slow"])
    if split != len(ids["all"]) or set(ids["unit"]) | set(ids["realapi"]) | set(ids["slow"]) != set(ids["all"]):
        print(f"tests.tiers: the tiers ({split}) do not add up to all ({len(ids['all'])})", file=sys.stderr)
        return 1
    if args.ids:
        args.ids.mkdir(parents=True, exist_ok=True)
        for name, found in ids.items():
            (args.ids / f"{name}.txt").write_text("".join(f"{i}\n" for i in sorted(found)))
    if args.compare:
        wanted = {line.strip() for line in args.compare.read_text().splitlines() if line.strip()}
        lost = sorted(wanted - set(ids["all"]))
        if lost:
            print(f"tests.tiers: {len(lost)} test(s) of {args.compare} are no longer collected:", file=sys.stderr)
            for i in lost:
                print(f"  {i}", file=sys.stderr)
            return 1
        print(f"\nevery one of the {len(wanted)} ids in {args.compare} is collected")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
