"""kubectl's habits against the real kube-apiserver: ``--as`` impersonation gets the named account's
answers (its 403 without a Role, its reads with the chart's), and ``syncer version`` asks the server.
"""

from __future__ import annotations

import io
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from syncer.cli import main
from syncer.config import load_config

from .cluster import RealCluster
from .test_realapi_kubectl import copy_into_namespaces
from .tools import kubectl, require_tool

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "syncer"


def syncer(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()


def asgard(cluster: RealCluster, tmp_path: Path) -> tuple[Path, str, Path]:
    """(work tree, namespace, admin kubeconfig): asgard applied as kubectl applies it, then edited live."""
    work = tmp_path / "work"
    host, _ = copy_into_namespaces(cluster, "asgard", work)
    namespace = load_config(host, "asgard").namespace
    admin = cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl(admin, "apply", "-f", f"{host}/")
    kubectl(admin, "patch", "configmap", "ollama-endpoint-manager", "-n", namespace, "--type=merge",
            "-p", json.dumps({"data": {"MAC_ADDRS": "192.168.68.75 100.115.97.90"}}))
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    return work, namespace, admin


def test_as_a_service_account_without_a_role_gets_its_403_and_with_the_chart_role_its_reads(
        real_cluster: RealCluster, tmp_path: Path) -> None:
    require_tool("kubectl")
    work, ns, admin = asgard(real_cluster, tmp_path)
    kubectl(admin, "create", "serviceaccount", "syncer", "-n", ns)
    account = f"system:serviceaccount:{ns}:syncer"

    # The admin's own credentials, as the account: the API server refuses what the account may not do.
    code, out, err = syncer("diff", "asgard", "--repo", str(work), "--kubeconfig", str(admin), "--as", account)
    assert code == 2, out + err
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert errors and all(account in line for line in errors), out
    assert any("ConfigMap/" in line and "403" in line for line in errors), out
    # Without --as, the same kubeconfig reads everything (the 403 was the account's, not the admin's).
    code, out, _ = syncer("diff", "asgard", "--repo", str(work), "--kubeconfig", str(admin))
    assert code == 1 and "error:" not in out, out

    # The chart's Role for this installation, bound to the account: now --as reads what the chart grants.
    code, printed, err = syncer("init", "asgard", "--repo", str(work), "--chart-values")
    assert code == 0, err
    values = {"installation": "asgard", "image": {"repository": "registry.example.com/syncer"},
              "sync": {"mode": "commit", "forge": "none", "remote": "https://git.example.com/o/r.git"},
              "credentials": {"existingSecret": "syncer-credentials"}, "serviceAccount": {"create": False,
                                                                                          "name": "syncer"},
              "tracked": yaml.safe_load(printed)["tracked"]}
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
    done = subprocess.run([require_tool("helm"), "template", "syncer", str(CHART), "-n", ns, "-f",
                           str(tmp_path / "values.yaml"), "--show-only", "templates/role.yaml", "--show-only",
                           "templates/rolebinding.yaml"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    (tmp_path / "rbac.yaml").write_text(done.stdout)
    kubectl(admin, "apply", "-n", ns, "-f", str(tmp_path / "rbac.yaml"))
    code, out, err = syncer("diff", "asgard", "--repo", str(work), "--kubeconfig", str(admin), "--as", account,
                            "-o", "json")
    doc: dict[str, Any] = json.loads(out)
    assert (code, doc["errors"], doc["warnings"]) == (1, [], []), out + err
    assert [d["path"] for d in doc["drifts"]] == ["data.MAC_ADDRS"]

    # A group without a user is refused before any request, as kubectl refuses it.
    code, _, err = syncer("diff", "asgard", "--repo", str(work), "--kubeconfig", str(admin), "--as-group", "ops")
    assert code == 2 and "--as-group needs --as" in err


def test_version_names_the_server_s_version(real_cluster: RealCluster, tmp_path: Path) -> None:
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig")
    code, out, err = syncer("version", "-o", "json", "--kubeconfig", str(admin))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "syncer.version/v1"
    assert doc["serverVersion"]["gitVersion"].startswith("v1.") and doc["serverVersion"]["major"] == "1"
    code, out, _ = syncer("version", "--kubeconfig", str(admin))
    assert code == 0 and out.splitlines()[1] == f"Server Version: {doc['serverVersion']['gitVersion']}"
    # An account the server does not know (a token it refuses) still prints the client's, then fails.
    bad = real_cluster.kubeconfig(tmp_path / "bad.kubeconfig", token="not-a-token")
    code, out, err = syncer("version", "--kubeconfig", str(bad))
    assert code == 2 and out.startswith("Client Version: ") and "401" in err, (out, err)


def test_the_sidecar_as_an_account_impersonates_it_on_every_request_watches_and_http2_streams_included(
        real_cluster: RealCluster, tmp_path: Path) -> None:
    """``syncer run --as``, counted in the audit log of a kube-apiserver of its own: every request
    syncer sent (its User-Agent), the per-object watches multiplexed over HTTP/2 among them, was
    made as the named account, which the API server authorized with that account's Role."""
    require_tool("kubectl")
    from syncer import __version__

    from .test_realapi_sidecar import SyncerRun, asgard_repo, clean_env, kubectl_apply_all, run_args

    with RealCluster(real_cluster.kube_apiserver, workdir=tmp_path / "audited", audit=True) as audited:
        ns = audited.create_namespace()
        origin = asgard_repo(tmp_path, ns)
        kubectl_apply_all(audited, origin, ns)
        admin = audited.kubeconfig(tmp_path / "admin.kubeconfig", namespace=ns)
        kubectl(admin, "create", "serviceaccount", "syncer", "-n", ns)
        kubectl(admin, "create", "role", "syncer", "-n", ns, "--verb=get,list,watch",
                "--resource=configmaps,endpoints,services,serviceaccounts,deployments.apps,"
                "roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io")
        kubectl(admin, "create", "rolebinding", "syncer", "-n", ns, "--role=syncer",
                f"--serviceaccount={ns}:syncer")
        account = f"system:serviceaccount:{ns}:syncer"
        run = SyncerRun("as", run_args(origin, admin, "--state-configmap", "", "--as", account), clean_env(),
                        tmp_path / "as.log")
        try:
            run.wait_ready()
            assert "HTTP/2 multiplexed" in run.output(), run.output()[-2000:]
            # The impersonated user is known once the request passed the impersonation filter: the
            # later stages carry it, which a watch reaches when it ends (here: at shutdown).
            run.proc.terminate()
            assert run.proc.wait(timeout=30) == 0
            assert audited.audit_log is not None
            deadline = time.monotonic() + 20
            while True:
                events = [json.loads(line) for line in audited.audit_log.read_text().splitlines() if line.strip()]
                ours = [e for e in events if e.get("userAgent") == f"syncer/{__version__}"
                        and e.get("stage") == "ResponseComplete"]
                watches = [e for e in ours if e["verb"] == "watch"]
                if len(watches) >= 9 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert len({e["requestURI"] for e in watches}) == 9, [e["requestURI"] for e in watches]  # one per object
            assert {(e.get("impersonatedUser") or {}).get("username") for e in ours} == {account}
            assert {e["user"]["username"] for e in ours} == {"realapi-admin"}  # whose credentials were sent
            assert all(e.get("annotations", {}).get("authorization.k8s.io/decision") == "allow" for e in watches)
            reason = " ".join(e.get("annotations", {}).get("authorization.k8s.io/reason", "") for e in watches)
            assert 'RoleBinding "syncer' in reason, reason[:500]  # allowed by the account's own Role
        finally:
            if run.alive():
                run.proc.kill()
                run.proc.wait(timeout=30)
