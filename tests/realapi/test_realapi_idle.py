"""An idle ``syncer run`` on the real kube-apiserver v1.20.2, counted in the server's audit log.

v1.20 sends no BOOKMARK on an idle watch until its timeoutSeconds nears; syncer used to
abandon a watch after 150 s of silence and re-open it (12 requests in 300 idle seconds for
7 objects). Now an idle watch stays open until the server ends it (TCP keepalive watches
the connection), so an idle window longer than that old timeout holds no request at all,
and every request carries syncer's User-Agent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from syncer import __version__

from .cluster import RealCluster
from .test_realapi_sidecar import SyncerRun, asgard_repo, kubectl_apply_all, run_args, syncers  # noqa: F401

pytestmark = [pytest.mark.realapi, pytest.mark.slow]

#: Longer than the old 150 s inactivity timeout.
IDLE = 170.0


def test_idle_sidecar_sends_nothing_and_names_itself(real_cluster: RealCluster, tmp_path: Path,
                                                     syncers: Callable[..., SyncerRun]) -> None:
    with RealCluster(real_cluster.kube_apiserver, workdir=tmp_path / "audited", audit=True) as audited:
        namespace = audited.create_namespace()
        origin = asgard_repo(tmp_path, namespace)
        kubectl_apply_all(audited, origin, namespace)
        admin = audited.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
        run = syncers("idle", run_args(origin, admin, "--state-configmap", "asgard-state"))
        run.wait_ready()
        time.sleep(3)  # the start-up passes settle
        ours = audited.audit_events("syncer/")
        assert ours and {e["userAgent"] for e in ours} == {f"syncer/{__version__}"}
        watches = [e for e in ours if e["verb"] == "watch"]
        assert len(watches) == 9, [e["requestURI"] for e in watches]  # one per object of hosts/asgard
        quiet_from = time.time()
        time.sleep(IDLE)
        assert run.alive()
        idle = audited.audit_events("syncer/", since=quiet_from)
        assert idle == [], [(e["verb"], e["requestURI"]) for e in idle]
