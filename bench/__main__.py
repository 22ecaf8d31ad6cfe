"""``python -m bench``: syncer's benchmarks, one table, appended to bench/RESULTS.md.

    python -m bench                          # full run (about 15 minutes)
    python -m bench --quick                  # CI-sized smoke run (about 2 minutes)
    python -m bench --quick --only scale,edit    # under a minute: no sidecar, no big git repo
    python -m bench --only latency,api       # just some sections

Sections (``--only`` names): latency (1), footprint (2, with start-up/import time), api (3),
scale (4), git (5), edit (6), kubediff (7: ``syncer diff`` vs ``kubectl diff -f`` on the real
kube-apiserver of tests/realapi), sidecarpass (8: one Loop pass at 5,000 tracked objects), kustomize
(9: a render of hosts/midgard and sidecar passes with one), sidecarprocess (10: the `syncer run` process
tracking 5,000 objects on the real kube-apiserver);
``startup`` alone runs only the import/start-up part of 2.

The sidecar sections need ``syncer run``; while its 10-minute idle window runs (nothing
happens in the sidecar's world then), the offline sections run in a separate worker
process so a full run fits in about 15 minutes (``--serial`` runs everything one after the
other instead).  Every comparison with a baseline is measured interleaved in the same run,
and reported as median [min-max].
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import ROOT, Row, Section, machine, rmtree

RESULTS = ROOT / "bench" / "RESULTS.md"
RUNTIME = ("latency", "footprint", "api")
OFFLINE = ("startup", "scale", "git", "edit", "kubediff", "sidecarpass", "kustomize", "sidecarprocess")
ORDER = ("latency", "footprint", "startup", "api", "scale", "git", "edit", "kubediff", "sidecarpass", "kustomize",
         "sidecarprocess")
NAMES = set(ORDER)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CI-sized run (smaller windows, sizes and repeats)")
    ap.add_argument("--only", metavar="NAME[,NAME]", help=f"sections to run: {', '.join(ORDER)}")
    ap.add_argument("--serial", action="store_true", help="do not overlap offline sections with the sidecar's idle window")
    ap.add_argument("--no-write", action="store_true", help=f"print the table only; do not append to {RESULTS.name}")
    ap.add_argument("--json", metavar="FILE", help="also write every section's raw numbers as JSON")
    ap.add_argument("--workdir", metavar="DIR", help="where generated repos go (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--worker", metavar="OUT", help=argparse.SUPPRESS)  # internal: offline sections -> JSON
    args = ap.parse_args(argv)
    parts = set(ORDER) if not args.only else {p.strip() for p in args.only.split(",") if p.strip()}
    unknown = parts - NAMES
    if unknown:
        ap.error(f"--only: unknown section(s) {', '.join(sorted(unknown))} (known: {', '.join(ORDER)})")
    if "footprint" in parts:
        parts.add("startup")
    args.parts = parts
    return args


def _failed(key: str, exc: BaseException) -> Section:
    sec = Section(key, f"{key} (failed)")
    sec.row(key, f"FAILED: {type(exc).__name__}: {str(exc)[:300]}")
    sec.notes.append("".join(traceback.format_exception(exc))[-1500:])
    sec.data = {"failed": True}
    return sec


def run_offline(parts: set[str], quick: bool, workdir: Path) -> list[Section]:
    out: list[Section] = []
    for key in OFFLINE:
        if key not in parts:
            continue
        t0 = time.perf_counter()
        print(f"[bench] {key} ...", file=sys.stderr, flush=True)
        try:
            if key == "startup":
                from bench import startup
                sec = startup.run(quick)
            elif key == "scale":
                from bench import scale
                sec = scale.run(quick, workdir)
            elif key == "git":
                from bench import gitcost
                sec = gitcost.run(quick, workdir)
            elif key == "kubediff":
                from bench import kubediff
                sec = kubediff.run(quick, workdir / "kubediff")
            elif key == "sidecarpass":
                from bench import sidecarpass
                sec = sidecarpass.run(quick, workdir / "sidecarpass")
            elif key == "kustomize":
                from bench import kustomizepass
                sec = kustomizepass.run(quick, workdir / "kustomize")
            elif key == "sidecarprocess":
                from bench import sidecarprocess
                sec = sidecarprocess.run(quick, workdir / "sidecarprocess", n=1250 if quick else 5000)
            else:
                from bench import edit
                sec = edit.run(quick)
        except Exception as exc:  # noqa: BLE001 - one broken section must not hide the others
            sec = _failed(key, exc)
        sec.data["seconds"] = time.perf_counter() - t0
        print(f"[bench] {key} done in {sec.data['seconds']:.0f} s", file=sys.stderr, flush=True)
        out.append(sec)
    return out


def _to_json(sections: list[Section]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(s) for s in sections]


def _from_json(items: list[dict[str, Any]]) -> list[Section]:
    out = []
    for d in items:
        d = dict(d)
        d["rows"] = [Row(**r) for r in d["rows"]]
        d["headline"] = [Row(**r) for r in d["headline"]]
        out.append(Section(**d))
    return out


class Worker:
    """The offline sections in a child process (``python -m bench --worker OUT``)."""

    def __init__(self, parts: set[str], quick: bool, workdir: Path) -> None:
        self.parts = sorted(set(parts) & set(OFFLINE))
        self.quick, self.workdir = quick, workdir
        self.proc: subprocess.Popen[bytes] | None = None
        self.out = workdir / "worker.json"

    def start(self) -> None:
        if self.proc is not None or not self.parts:
            return
        cmd = [sys.executable, "-m", "bench", "--worker", str(self.out), "--only", ",".join(self.parts),
               "--workdir", str(self.workdir / "worker")]
        if self.quick:
            cmd.append("--quick")
        print(f"[bench] worker started: {', '.join(self.parts)}", file=sys.stderr, flush=True)
        self.proc = subprocess.Popen(cmd, cwd=ROOT)

    def finish(self) -> list[Section]:
        self.start()
        if self.proc is None:
            return []
        self.proc.wait()
        if self.proc.returncode != 0 or not self.out.exists():
            return [_failed("worker", RuntimeError(f"worker exited {self.proc.returncode}"))]
        return _from_json(json.loads(self.out.read_text()))


# ---------------------------------------------------------------- output


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(sections: list[Section], args: argparse.Namespace, command: str, took: float) -> str:
    m = machine()
    lines = [
        f"## Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC — `{command}`",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram']} RAM, {m['python']}, {m['git']}, "
        f"Linux {m['kernel']}; load average at the end {m['load']} (shared machine). Took {took / 60:.1f} min.",
        "",
    ]
    head = [r for s in sections for r in s.headline]
    if head:
        lines += ["### Headline: syncer against the baseline (median [min–max], measured interleaved)", "",
                  "| comparison | ratio | over |", "|---|---|---|"]
        lines += [f"| {_cell(r.metric)} | {_cell(r.value)} | {_cell(r.note)} |" for r in head]
        lines.append("")
    lines += ["### Results", "", "| section | metric | result | goal | baseline / comparison | note |",
              "|---|---|---|---|---|---|"]
    for s in sections:
        for r in s.rows:
            mark = "" if r.ok is None else (" ✅" if r.ok else " ❌")
            goal = f"{r.goal}{mark}" if r.goal or mark else ""
            lines.append(f"| {_cell(s.title)} | {_cell(r.metric)} | {_cell(r.value)} | {_cell(goal)} | "
                         f"{_cell(r.baseline)} | {_cell(r.note)} |")
    lines.append("")
    notes = [(s.title, n) for s in sections for n in s.notes]
    if notes:
        lines += ["### How each number was taken", ""]
        lines += [f"- **{t}**: {n}" for t, n in notes]
        lines.append("")
    return "\n".join(lines)


def append_results(text: str) -> None:
    if not RESULTS.exists():
        RESULTS.write_text("# syncer benchmark results\n\nProduced by `python -m bench` (see bench/__main__.py). "
                           "Newest run last.\n\n")
    with RESULTS.open("a", encoding="utf-8") as fh:
        fh.write("\n" + text)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.workdir:
        workdir = Path(args.workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        workdir = Path(tempfile.mkdtemp(prefix="syncer-bench-"))
    if args.worker:
        sections = run_offline(args.parts, args.quick, workdir)
        Path(args.worker).write_text(json.dumps(_to_json(sections)))
        return 0
    command = "python -m bench " + shlex.join(a for a in (argv if argv is not None else sys.argv[1:]))
    command = command.strip()
    t0 = time.perf_counter()
    sections: list[Section] = []
    try:
        runtime_parts = args.parts & set(RUNTIME)
        if runtime_parts:
            from bench import runtime

            worker = Worker(args.parts, args.quick, workdir)
            if args.quick and not args.serial:
                worker.start()  # smoke run: overlap everything, accuracy matters less than time
            on_idle = (lambda: None) if args.serial else worker.start
            try:
                print(f"[bench] sidecar sections: {', '.join(sorted(runtime_parts))} ...", file=sys.stderr, flush=True)
                sections += runtime.run(args.quick, workdir, runtime_parts, on_idle=on_idle)
            except Exception as exc:  # noqa: BLE001
                sections.append(_failed("sidecar", exc))
            if args.serial:
                sections += run_offline(args.parts, args.quick, workdir / "worker")
            else:
                sections += worker.finish()
        else:
            sections += run_offline(args.parts, args.quick, workdir)
    finally:
        if not args.keep:
            rmtree(workdir)
    sections.sort(key=lambda s: ORDER.index(s.key) if s.key in ORDER else len(ORDER))
    text = render(sections, args, command, time.perf_counter() - t0)
    print(text)
    if not args.no_write:
        append_results(text)
    if args.json:
        Path(args.json).write_text(json.dumps(_to_json(sections), indent=1, default=str))
    return 1 if any(s.data.get("failed") for s in sections) else 0


if __name__ == "__main__":
    raise SystemExit(main())
