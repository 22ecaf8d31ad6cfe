"""One ``syncer diff`` reads the installation's config once, binds it to the manifests once, derives
the tracking once and normalizes each object once: counted through the whole command, against a
snapshot and against the API server (where the early LISTs need the config too)."""

from __future__ import annotations

import collections
import copy
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from syncer import config as config_module
from syncer.cli import main
from syncer.detect import normalize as normalize_module
from syncer.detect import tracking as tracking_module
from syncer.sources.manifests import load_manifests
from tests.conftest import NOW, ROOT
from tests.fakes.kube_api import FakeKubeAPI


class Calls:
    """Calls of the functions counted, and of ``normalize`` per object (each object held, so an id
    is never reused by another)."""

    def __init__(self) -> None:
        self.count: collections.Counter[str] = collections.Counter()
        self.normalized: dict[int, tuple[Any, int]] = {}

    def most_normalized(self) -> int:
        return max(n for _, n in self.normalized.values())


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    seen = Calls()

    def counting(name: str, fn: Any, per_object: bool = False) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen.count[name] += 1
            if per_object:
                held, n = seen.normalized.get(id(args[0]), (args[0], 0))
                seen.normalized[id(args[0])] = (held, n + 1)
            return fn(*args, **kwargs)
        return wrapper

    for module, name, per_object in ((config_module, "load_config", False), (tracking_module, "tracking", False),
                                     (normalize_module, "normalize", True)):
        original = getattr(module, name)
        wrapped = counting(name, original, per_object)
        for loaded in list(sys.modules.values()):  # every module that imported it by name
            if getattr(loaded, "__name__", "").startswith("syncer") and getattr(loaded, name, None) is original:
                monkeypatch.setattr(loaded, name, wrapped)
    monkeypatch.setattr(config_module.Config, "bound_to", counting("bound_to", config_module.Config.bound_to))
    yield seen


def _diff(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", "asgard", "--repo", str(ROOT), *args], now=NOW, stdout=out, stderr=err)
    assert code == 1 and "ollama-endpoint-manager" in out.getvalue(), err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize("namespace", [(), ("-n", "ai")])
def test_a_diff_of_a_snapshot_does_each_once(calls: Calls, namespace: tuple[str, ...]) -> None:
    _diff("--live-file", str(ROOT / "examples" / "asgard-live.yaml"), *namespace)
    assert {k: calls.count[k] for k in ("load_config", "bound_to", "tracking")} == \
        {"load_config": 1, "bound_to": 1, "tracking": 1}
    assert calls.count["normalize"] > 0 and calls.most_normalized() == 1


def test_a_diff_against_the_api_server_does_each_once(calls: Calls, fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    for obj in load_manifests(ROOT, "asgard", "ai").objects.values():
        fake_kube.put(obj.data, applied=True, time="2026-06-02T18:40:11Z")
    edited = copy.deepcopy(next(o.data for o in load_manifests(ROOT, "asgard", "ai").objects.values()
                                if o.ref.kind == "ConfigMap"))
    edited["data"]["LOG_LEVEL"] = "debug"  # a kubectl edit: one drift to judge
    fake_kube.put(edited, manager="kubectl-edit", time="2026-06-03T09:00:00Z")
    _diff("--kubeconfig", str(fake_kube.kubeconfig(tmp_path / "kc")), "--context", "fake")
    assert {k: calls.count[k] for k in ("load_config", "bound_to", "tracking")} == \
        {"load_config": 1, "bound_to": 1, "tracking": 1}
    assert calls.most_normalized() == 1
