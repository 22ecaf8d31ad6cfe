"""Shared fixtures: the bundled example, temp git repos."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The tests' own data: the real-world corpus, the fidelity pairs, the GitHub API description
#: (their sources and licences in each folder's SOURCES.md / README.md; see tests/data/README.md).
DATA = ROOT / "tests" / "data"
EXAMPLE_LIVE = ROOT / "examples" / "asgard-live.yaml"
#: A fixed "now", well after every change recorded in the example snapshot.
NOW = datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _own_parse_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with no parses an earlier test kept (``syncer.parsestore``): a
    test of the YAML reader reads the YAML, and no test depends on another's order."""
    monkeypatch.setenv("SYNCER_CACHE_DIR", str(tmp_path_factory.mktemp("syncer-cache")))


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "Ops Person", "GIT_AUTHOR_EMAIL": "ops@example.invalid",
           "GIT_COMMITTER_NAME": "Ops Person", "GIT_COMMITTER_EMAIL": "ops@example.invalid",
           "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def pushed_repo(tmp_path: Path, installation: str) -> Path:
    """``tmp_path/work`` with hosts/<installation> committed on main and pushed to a bare
    ``tmp_path/origin.git``."""
    bare = tmp_path / "origin.git"
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    shutil.copytree(ROOT / "hosts" / installation, work / "hosts" / installation)
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", f"{installation} manifests")
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "main")
    return work


@pytest.fixture
def asgard_repo(tmp_path: Path) -> Path:
    """A work repo with hosts/asgard committed on main, plus a bare ``origin`` it was pushed to."""
    return pushed_repo(tmp_path, "asgard")


from tests.fakes.kube_api import fake_kube_fixture  # noqa: E402,F401  (registers the ``fake_kube`` fixture)


_SKIP_SITES: dict[str, tuple[str, int]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Skips with the same reason (``helm is not on PATH``, ``kubectl ... dispatcher``) are one
    line in the ``-ra`` summary, not one per test: every such report names the first place that
    reason was seen, which is what pytest folds them by."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        path, lineno, reason = report.longrepr
        first = _SKIP_SITES.setdefault(str(reason), (str(path), int(lineno or 0)))
        report.longrepr = (first[0], first[1], reason)
