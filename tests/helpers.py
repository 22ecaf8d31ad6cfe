"""Helpers the tests share: run ``syncer`` in-process, a fresh repository holding asgard's
manifests (``git init`` only, nothing committed), and the fixtures of the tests that talk to the
fake API server over loopback (no proxy, a started :class:`FakeKubeAPI`)."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from syncer.cli import main
from tests.conftest import NOW, ROOT, git
from tests.fakes.kube_api import FakeKubeAPI


def run(*argv: str) -> tuple[int, str, str]:
    """``syncer *argv`` at the fixed :data:`~tests.conftest.NOW`: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), now=NOW, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def make_repo(tmp_path: Path) -> Path:
    """``tmp_path/repo``: hosts/asgard copied from this checkout into a new, empty git repository."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "hosts" / "asgard", repo / "hosts" / "asgard")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    return repo


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kubernetes client honours HTTP(S)_PROXY: never let a request leave loopback.
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def fake() -> Iterator[FakeKubeAPI]:
    """A started fake API server that sends a BOOKMARK every 0.2 s."""
    with FakeKubeAPI(bookmark_interval=0.2) as api:
        yield api
        assert not api.errors, "the fake kube API hit an internal error:\n" + api.errors[0]
