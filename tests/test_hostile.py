"""Hostile live objects and a hostile host (issue #17): whoever can edit a ConfigMap cannot
stop, trick or leak syncer. Each test here failed on the code before the fix it names."""

from __future__ import annotations

import io
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_LIVE, NOW, ROOT, git
from ruamel.yaml import YAML

from syncer.cli import main

CM_NAME = "ollama-endpoint-manager"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), now=NOW, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def make_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "hosts" / "asgard", repo / "hosts" / "asgard")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    return repo


def example_items() -> list[dict[str, Any]]:
    return list(YAML(typ="safe").load(EXAMPLE_LIVE.read_text())["items"])


def live_file(tmp_path: Path, items: list[dict[str, Any]]) -> Path:
    """A ``kubectl get -o json`` style snapshot of ``items``."""
    path = tmp_path / "live.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def edit_cm(items: list[dict[str, Any]], name: str = CM_NAME) -> dict[str, Any]:
    return next(o for o in items if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name)


# -- 1. bounded inputs ----------------------------------------------------------------


def test_deep_last_applied_annotation_costs_only_its_object(tmp_path: Path) -> None:
    """Was: RecursionError, a traceback and exit 1 for the whole installation."""
    repo = make_repo(tmp_path)
    items = example_items()
    edit_cm(items)["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "[" * 20000
    start = time.monotonic()
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(live_file(tmp_path, items)))
    assert time.monotonic() - start < 10
    assert code == 2, err
    assert err == ""
    errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert errors == ["error: ConfigMap/ai/ollama-endpoint-manager: annotation "
                      "kubectl.kubernetes.io/last-applied-configuration: JSON nested deeper than 128 levels; "
                      "not read"]
    assert "Endpoints/ai/mac-ollama" in out  # the rest of the installation was compared


def test_huge_last_applied_annotation_is_refused_unread() -> None:
    from syncer.bounds import InputRejected
    from syncer.normalize import last_applied

    live = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                                         '{"a": "' + "x" * (2 * 1024 * 1024) + '"}'}}}
    with pytest.raises(InputRejected, match="more than the 1048576 allowed"):
        last_applied(live)


def test_json_depth_ignores_brackets_inside_strings() -> None:
    from syncer.bounds import json_depth, load_json

    text = json.dumps({"a": "[" * 5000, "b": [[1]]})
    assert json_depth(text) == 3
    assert load_json(text, "x")["b"] == [[1]]
    assert json_depth('{"a": "\\"[[[[", "b": ' + "[" * 200 + "]" * 200 + "}") == 129


def test_deep_state_record_is_refused_loudly_and_the_pass_goes_on(tmp_path: Path) -> None:
    """Was: RecursionError out of ``refresh``: every sidecar pass failed, /readyz stayed 200."""
    from fakes.kube_api import FakeKubeAPI
    from test_sidecar import api_client

    from syncer.metrics import Metrics
    from syncer.model import ObjectRef
    from syncer.state import ConfigMapStore

    with FakeKubeAPI() as fake:
        fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "syncer-state", "namespace": "ai"},
                  "data": {"asgard.json": "[" * 50000}})
        store = ConfigMapStore(api_client(fake, tmp_path), "ai", "asgard")
        store.refresh()
        assert store.rejected is not None and "nested deeper than 128" in store.rejected
        assert store.base(ObjectRef("v1", "ConfigMap", "ai", CM_NAME)) is None
        # the next agreement overwrites the hostile record
        assert store.record({ObjectRef("v1", "ConfigMap", "ai", CM_NAME): {"data": {}}},
                            keep=[ObjectRef("v1", "ConfigMap", "ai", CM_NAME)])
        assert json.loads(fake.get("v1", "ConfigMap", "ai", "syncer-state")["data"]["asgard.json"])
    metrics = Metrics("asgard")
    assert b'syncer_failing_objects{installation="asgard"} 0.0' in metrics.render()


def test_failing_objects_show_in_a_metric() -> None:
    from syncer.metrics import Metrics
    from syncer.model import FileError, Result

    metrics = Metrics("asgard")
    metrics.observe(Result("asgard", errors=(FileError("f", "ConfigMap/ai/x: bad"),)), NOW, {})
    text = metrics.render().decode()
    assert 'syncer_failing_objects{installation="asgard"} 1.0' in text
    assert 'syncer_sync_errors_total{stage="object"} 1.0' in text


# -- 7. hooks ---------------------------------------------------------------------------


def test_hooks_planted_in_the_shared_temp_dir_never_run(asgard_repo: Path, tmp_path: Path) -> None:
    """Was: ``core.hooksPath=$TMPDIR/syncer-no-hooks``, created with exist_ok: anyone on the host
    could plant hooks there, and they ran during ``sync --mode commit``."""
    import os
    import subprocess
    import sys

    shared = tmp_path / "shared-tmp"
    marker = tmp_path / "hook-ran"
    for where in (shared / "syncer-no-hooks", asgard_repo / ".git" / "hooks"):
        where.mkdir(parents=True, exist_ok=True)
        for hook in ("pre-commit", "post-commit", "commit-msg", "reference-transaction", "post-checkout",
                     "pre-push"):
            (where / hook).write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
            (where / hook).chmod(0o755)
    env = {**os.environ, "TMPDIR": str(shared), "PYTHONPATH": str(ROOT)}
    env.pop("SYNCER_FORGE_TOKEN", None)
    done = subprocess.run([sys.executable, "-m", "syncer.cli", "sync", "asgard", "--repo", str(asgard_repo),
                           "--live-file", str(EXAMPLE_LIVE), "--mode", "commit"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "pushed" in done.stdout  # a commit was made and pushed: the hooks had their chance
    assert not marker.exists(), marker.read_text()


def test_installation_name_with_a_trailing_newline_is_refused() -> None:
    from syncer.errors import ConfigError
    from syncer.manifests import check_installation

    assert check_installation("asgard") == "asgard"
    with pytest.raises(ConfigError, match="not a valid name"):
        check_installation("asgard\n")
