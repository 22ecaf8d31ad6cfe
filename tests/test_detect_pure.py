"""Detection is pure: values in, judgements out. Run with every way to a file, a process, the
network and the clock blocked, it finds the same drifts as ever; and what it remembers lives in
the ``Caches`` passed in, except a few functions of short strings, each bounded (listed here)."""

from __future__ import annotations

import ast
import builtins
import io
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import NOW, ROOT
from tests.gathered import gathered

from syncer.cache import Caches
from syncer.config import load_config
from syncer.detect.engine import Detection
from syncer.gather.live import SnapshotSource
from syncer.model import Result
from syncer.sources.dispatch import source_for

KUBECTL = shutil.which("kubectl", path="/usr/local/bin")


class Touched(AssertionError):
    """Detection reached for something outside its inputs."""


def _blocked(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise Touched(f"detection called {what}{args[:1]!r}")
    return refuse


def _block_the_world(monkeypatch: pytest.MonkeyPatch) -> None:
    for owner, name in [(builtins, "open"), (io, "open"), (os, "open"), (os, "stat"), (os, "lstat"), (os, "scandir"),
                        (os, "listdir"), (os, "walk"), (Path, "open"), (Path, "read_text"), (Path, "read_bytes"),
                        (Path, "stat"), (Path, "exists"), (Path, "is_file"), (Path, "is_dir"), (Path, "iterdir"),
                        (Path, "rglob"), (subprocess, "run"), (subprocess, "Popen"), (socket, "socket"),
                        (socket, "create_connection"), (time, "time"), (time, "time_ns"), (time, "monotonic"),
                        (time, "sleep")]:
        monkeypatch.setattr(owner, name, _blocked(f"{getattr(owner, '__name__', owner)}.{name}"))


def _inputs(installation: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Caches]:
    """Gather (files, snapshot, a render): the inputs of one detection, read before it starts."""
    if installation == "midgard":
        if KUBECTL is None:
            pytest.skip("kubectl (kustomize) not installed")
        monkeypatch.setenv("SYNCER_KUSTOMIZE", KUBECTL)
    caches = Caches()
    config = load_config(ROOT / "hosts" / installation, installation)
    manifests = source_for(ROOT, installation, config).load(caches)
    live = SnapshotSource([ROOT / "examples" / f"{installation}-live.yaml"], config.namespace)
    return config, gathered(config, manifests, live.objects, history={}), caches


def _detect(config: Any, inputs: Any, caches: Caches) -> Result:
    detection = Detection(config, inputs, NOW, caches)
    detection.compare()
    return detection.finish()


@pytest.mark.parametrize("installation", ["asgard", "vanaheim", "midgard"])
def test_detection_reads_no_file_runs_no_process_opens_no_socket_and_reads_no_clock(
        installation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config, inputs, caches = _inputs(installation, monkeypatch)
    expected = _detect(config, inputs, Caches())
    assert expected.drifts  # each example holds real drift: the run below compares something
    with monkeypatch.context() as blocked:
        _block_the_world(blocked)
        with pytest.raises(Touched):
            open(ROOT / "README.md")  # the block holds
        got = _detect(config, inputs, caches)
        again = _detect(config, inputs, caches)  # with what the first one remembered
    assert got == expected == again


#: The functions of detection's modules (and the secret judgements it calls) remembered by
#: ``functools`` instead of in the ``Caches`` passed in: each is a pure function of short
#: strings, bounded in entries, and too small or too hot to be worth a parameter. Its bound:
PURE_SHORT = {
    "syncer/detect/normalize.py:_pointer_to_path": "4,096 pointers of at most 512 characters (pointer_to_path)",
    "syncer/detect/binding.py:config_map_ref": "1,024 (namespace, name) pairs of the config's candidate bindings",
    "syncer/detect/endpoints.py:_canonical": "65,536 addresses of at most 256 characters (canonical)",
    "syncer/detect/endpoints.py:_candidate_hosts": "1,024 candidate lists of at most 4,096 characters",
    "syncer/secrets/userpattern.py:_compiled": "256 of the config's secretKeys patterns, compiled",
    "syncer/secrets/userpattern.py:_combined": "8 configs' secretKeys patterns, compiled together",
    "syncer/secrets/redact.py:_secret_key": "8,192 key names of at most 256 characters (is_secret_key)",
}


def _remembered(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name in ("lru_cache", "cache", "cached_property"):
                    out.append(f"{path.relative_to(ROOT).as_posix()}:{node.name}")
    return out


def test_detection_remembers_nothing_process_wide_but_bounded_functions_of_short_strings() -> None:
    found = [name for package in ("detect", "secrets") for path in sorted((ROOT / "syncer" / package).rglob("*.py"))
             for name in _remembered(path)]
    assert sorted(found) == sorted(PURE_SHORT)
    for name in found:
        module, _, function = name.partition(":")
        text = (ROOT / module).read_text(encoding="utf-8")
        at = text.index(f"def {function}(")
        assert "maxsize=" in text[text.rfind("\n@", 0, at):at], f"{name}: an lru_cache without a bound"
