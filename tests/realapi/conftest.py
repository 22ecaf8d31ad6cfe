"""Fixtures for the realapi tier: one real etcd + kube-apiserver per pytest session.

Environment:
  SYNCER_REALAPI=0                 outside CI: skip this tier (nothing is built)
  SYNCER_REALAPI_KUBE_APISERVER    use this kube-apiserver binary, do not run build.sh
  SYNCER_REALAPI_CACHE             cache root for build.sh (default /var/cache/syncer-realapi)
  SYNCER_REALAPI_RECORD=1          (re)write tests/realapi/observed/*.json
  SYNCER_REALAPI_KEEP=1            keep the cluster's temp dir (logs, certs) after the run
  CI                               set: a build or start failure FAILS the tier, never skips
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cluster import ClusterError, RealCluster

HERE = Path(__file__).resolve().parent
BUILD_SH = HERE / "build.sh"
BUILD_TIMEOUT_S = 60 * 60


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselection looks at the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every test in this folder belongs to the realapi tier, whatever its module says.
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.realapi)
            # One worker runs the whole tier under pytest-xdist (`--dist loadgroup`): one
            # cluster per run, as without xdist, not one per worker.
            item.add_marker(pytest.mark.xdist_group("realapi"))


def _run_build(config: pytest.Config) -> str:
    """Run build.sh (a no-op when the cache is warm); return the kube-apiserver path."""
    capman = config.pluginmanager.getplugin("capturemanager")
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"syncer-realapi-build-{os.getpid()}.log"
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        # Let build progress reach the terminal (a cold build takes minutes).
        ctx = capman.global_and_fixture_disabled() if capman else _nullcontext()
        with ctx:
            proc = subprocess.Popen(
                ["bash", str(BUILD_SH)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                sys.stderr.write(line.decode(errors="replace"))
            rc = proc.wait(timeout=BUILD_TIMEOUT_S)
    text = log_path.read_text(errors="replace")
    if rc != 0:
        raise ClusterError(f"build.sh exited {rc} after {time.monotonic() - t0:.0f}s; log: {log_path}\n{text[-3000:]}")
    for line in reversed(text.splitlines()):
        if line.startswith("kube-apiserver="):
            log_path.unlink(missing_ok=True)
            return line.split("=", 1)[1].strip()
    raise ClusterError(f"build.sh did not print kube-apiserver=<path>; log: {log_path}")


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.fixture(scope="session")
def real_cluster(request: pytest.FixtureRequest) -> Iterator[RealCluster]:
    if os.environ.get("SYNCER_REALAPI") == "0":
        if _in_ci():
            sys.stderr.write("realapi: SYNCER_REALAPI=0 is ignored under CI; use -m 'not realapi' to leave the tier out\n")
        else:
            pytest.skip("SYNCER_REALAPI=0: real kube-apiserver tier switched off")
    try:
        binary = os.environ.get("SYNCER_REALAPI_KUBE_APISERVER") or _run_build(request.config)
        cluster = RealCluster(kube_apiserver=binary, keep_workdir=os.environ.get("SYNCER_REALAPI_KEEP") == "1")
        cluster.start()
    except (ClusterError, OSError, subprocess.SubprocessError) as e:
        # Never a skip: a tier that silently disappears proves nothing.
        pytest.fail(f"realapi: could not build/start kube-apiserver + etcd: {e}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def namespace(real_cluster: RealCluster) -> str:
    """A fresh namespace per test."""
    return real_cluster.create_namespace()


@pytest.fixture
def admin_kubeconfig(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> Path:
    return real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
