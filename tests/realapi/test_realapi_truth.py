"""The 14 failure cases of issue #32 on the real kube-apiserver, each run as a user runs it: the
real ``syncer`` command (``python -m syncer.cli`` in a process of its own), real git, a bare
remote; the whole output is checked, not only the exit code.

 1-4  a token whose ServiceAccount was deleted and made again (HTTP 401): ``diff``, ``diff -o
      json``, ``diff`` with a report-only config, ``sync --mode commit``
 5    a ServiceAccount with no Role at all (403 for everything): no "in sync (0 objects checked)"
 6    a bare remote whose pre-receive hook refuses the push
 7    a repository without ``origin`` and no ``--remote``
 8    the sidecar whose token is revoked while it runs, then rotated in its token file
 9-12 bad environment twins: ``SYNCER_MODE=comit``, ``SYNCER_LOG_FORMAT=xml``,
      ``SYNCER_OUTPUT=yaml``, ``SYNCER_FORGE=gihub``
 13   ``track:`` with ``Configmap`` (checked against the server's discovery)
 14   an installation directory without objects
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .cluster import RealCluster
from .test_realapi_sidecar import (  # noqa: F401 - the syncers fixture
    SyncerRun, asgard_repo, clean_env, git, kubectl_apply_all, kubectl_edit, main_log, syncers, wait_for,
)

pytestmark = pytest.mark.realapi

REJECTED = "the API server rejected syncer's credentials (token expired or revoked?)"
RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/"
#: What syncer's account may read: every kind hosts/asgard declares, and its state record.
READS = [{"apiGroups": ["", "apps", "rbac.authorization.k8s.io"],
          "resources": ["configmaps", "endpoints", "services", "serviceaccounts", "deployments", "roles",
                        "rolebindings"], "verbs": ["get", "list", "watch"]},
         {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update"]}]


@dataclass
class Setup:
    cluster: RealCluster
    namespace: str
    work: Path  # the checkout (hosts/asgard, origin = ``origin``)
    origin: Path
    admin: Path  # kubeconfig

    def syncer(self, *argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        done = subprocess.run([sys.executable, "-m", "syncer.cli", *argv], capture_output=True, text=True, timeout=120,
                              check=False, env=clean_env(**(env or {})), cwd=self.work, stdin=subprocess.DEVNULL)
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout, done.stderr

    def account(self, name: str, rules: list[dict[str, object]] | None = None) -> str:
        """A ServiceAccount (with a Role of ``rules``, if any) and a bound token of it."""
        if rules is not None:
            self.cluster.request("POST", RBAC.format(ns=self.namespace) + "roles", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name},
                "rules": rules})
            self.cluster.request("POST", RBAC.format(ns=self.namespace) + "rolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": self.namespace}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}})
        return self.cluster.service_account_token(self.namespace, name)

    def recreate(self, name: str, old_token: str) -> None:
        """Delete the ServiceAccount and make it again under the same name (a reinstall does that):
        its old tokens are rejected from then on (after the server's token cache, about 10 s)."""
        path = f"/api/v1/namespaces/{self.namespace}/serviceaccounts"
        self.cluster.request("DELETE", f"{path}/{name}")
        self.cluster.request("POST", path, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})

        def rejected() -> bool:
            try:
                self.cluster.request("GET", "/version", token=old_token)
            except urllib.error.HTTPError as exc:
                return exc.code == 401
            return False

        wait_for(rejected, 60, "the old token to be rejected", interval=0.5)


@pytest.fixture
def setup(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> Setup:
    origin = asgard_repo(tmp_path, namespace)
    kubectl_apply_all(real_cluster, origin, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl_edit(admin, namespace, {"MAC_ADDRS": "192.168.68.75 100.115.97.90"})  # one drift to copy back
    return Setup(real_cluster, namespace, tmp_path / "work", origin, admin)


@pytest.fixture
def revoked(setup: Setup, tmp_path: Path) -> Path:
    """A kubeconfig whose token was good until its ServiceAccount was made again."""
    token = setup.account("syncer", READS)
    kc = setup.cluster.kubeconfig(tmp_path / "sa.kubeconfig", token=token, namespace=setup.namespace)
    assert setup.syncer("diff", "asgard", "--kubeconfig", str(kc))[0] == 1  # it worked: drift found
    setup.recreate("syncer", token)
    return kc


def assert_rejected(err: str, kc: Path) -> None:
    assert err.count("\n") == 1 and err.startswith(f"syncer: error: {REJECTED}: "), err
    assert f"check the token of user 'realapi-user' in kubeconfig {kc}" in err
    assert "ServiceAccount is deleted (even if made again under the same name)" in err
    assert "tracked.kinds" not in err and "may not read" not in err  # not the RBAC advice


# -- 1-4: HTTP 401 -------------------------------------------------------------------------

def test_case_01_a_rejected_token_is_no_in_sync(setup: Setup, revoked: Path) -> None:
    code, out, err = setup.syncer("diff", "asgard", "--kubeconfig", str(revoked))
    assert (code, out) == (2, "")  # nothing is claimed: no headline at all
    assert_rejected(err, revoked)


def test_case_02_a_rejected_token_in_json_is_in_sync_false(setup: Setup, revoked: Path) -> None:
    code, out, err = setup.syncer("diff", "asgard", "--kubeconfig", str(revoked), "-o", "json")
    doc = json.loads(out)
    assert code == 2 and doc["in_sync"] is False and doc["fatal"] is True and doc["drifts"] == []
    assert doc["errors"][0]["message"].startswith(REJECTED)
    assert_rejected(err, revoked)


def test_case_03_a_rejected_token_exits_2_with_a_report_only_config(setup: Setup, revoked: Path) -> None:
    conf = setup.work / "hosts" / "asgard" / "syncer.conf"
    conf.write_text(conf.read_text().replace("ConfigMap: writeback", "ConfigMap: report")
                    .replace("Endpoints: stable", "Endpoints: report"))
    code, out, err = setup.syncer("diff", "asgard", "--kubeconfig", str(revoked))
    assert (code, out) == (2, "")  # was exit 0: a false green in CI
    assert_rejected(err, revoked)


def test_case_04_sync_with_a_rejected_token_says_so_not_nothing_to_commit(setup: Setup, revoked: Path) -> None:
    before = main_log(setup.origin)
    code, out, err = setup.syncer("sync", "asgard", "--kubeconfig", str(revoked), "--mode", "commit")
    assert (code, out) == (2, "") and "nothing to commit" not in out
    assert_rejected(err, revoked)
    assert main_log(setup.origin) == before


# -- 5: HTTP 403 for everything -----------------------------------------------------------

def test_case_05_an_account_that_may_read_nothing_is_not_in_sync(setup: Setup, tmp_path: Path) -> None:
    kc = setup.cluster.kubeconfig(tmp_path / "nobody.kubeconfig", token=setup.account("nobody"),
                                  namespace=setup.namespace)
    code, out, err = setup.syncer("diff", "asgard", "--kubeconfig", str(kc))
    assert (code, err) == (2, "")
    lines = out.splitlines()
    assert lines[0] == ("asgard: NOT known to be in sync; 9 of 9 declared object(s) could not be compared "
                        "(9 access denied (403)); 0 compared without differences")
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 9 and all("syncer's account may not read it" in e and "forbidden" in e for e in errors)
    assert any("tracked.kinds.ConfigMap" in e and "written back, so it is not synced" in e for e in errors)
    assert any("tracked.kinds.Service" in e and "optional:" in e for e in errors)  # RBAC advice, as before
    assert REJECTED not in out
    code, out, _ = setup.syncer("diff", "asgard", "--kubeconfig", str(kc), "-o", "json")
    doc = json.loads(out)
    assert code == 2 and doc["in_sync"] is False and doc["checked"] == 0 and len(doc["not_compared"]) == 9


# -- 6-7: the push --------------------------------------------------------------------------

def test_case_06_a_push_refused_by_a_hook_quotes_the_server_and_is_not_retried(setup: Setup) -> None:
    hook = setup.origin / "hooks" / "pre-receive"
    hook.write_text('#!/bin/sh\necho run >> "$(dirname "$0")/../hook-runs"\n'
                    'echo "protected branch: direct pushes to main are refused" >&2\nexit 1\n')
    hook.chmod(0o755)
    before = main_log(setup.origin)
    code, out, err = setup.syncer("sync", "asgard", "--kubeconfig", str(setup.admin), "--mode", "commit")
    assert code == 2 and err.count("\n") == 1, err
    assert err == (f"syncer: error: {setup.origin} refused the push of main (pre-receive hook declined): remote: "
                   "protected branch: direct pushes to main are refused; not retried (not a race: another push "
                   "would be refused alike)\n")
    assert (setup.origin / "hook-runs").read_text() == "run\n"  # one push, not five
    # the drift report reached stdout before the push was tried, with the diff it would have pushed
    assert out.startswith("asgard: 1 difference(s) in 1 object(s); 1 to copy back into git\n")
    assert '+  MAC_ADDRS: "192.168.68.75 100.115.97.90"' in out and "pushed" not in out
    assert main_log(setup.origin) == before


def test_case_07_no_origin_and_no_remote_names_both(setup: Setup) -> None:
    git(setup.work, "remote", "remove", "origin")
    code, out, err = setup.syncer("sync", "asgard", "--kubeconfig", str(setup.admin), "--mode", "commit")
    assert (code, out) == (2, "")
    assert err == (f"syncer: error: --mode commit pushes, and there is no git remote to push to: the repository at "
                   f"{setup.work} has no remote 'origin' and no --remote was given (pass --remote URL, or git -C "
                   f"{setup.work} remote add origin URL)\n")


# -- 8: the sidecar -------------------------------------------------------------------------

def test_case_08_the_sidecar_is_unready_while_its_token_is_revoked_and_heals_from_the_token_file(
        setup: Setup, tmp_path: Path, syncers: Callable[..., SyncerRun]) -> None:
    token = setup.account("syncer", READS)
    token_file = tmp_path / "token"  # as the kubelet projects it
    token_file.write_text(token)
    kc = setup.cluster.kubeconfig(tmp_path / "sa.kubeconfig", token=token, namespace=setup.namespace)
    cfg = json.loads(kc.read_text())
    cfg["users"][0]["user"] = {"tokenFile": str(token_file)}
    kc.write_text(json.dumps(cfg))
    run = syncers("sidecar", ["--remote", str(setup.origin), "--kubeconfig", str(kc), "--mode", "commit",
                              "--debounce", "0.3", "--resync", "20s", "--shutdown-grace", "3s"])
    run.wait_ready()
    wait_for(lambda: len(main_log(setup.origin)) == 2, 30, "the drift copied back")

    setup.recreate("syncer", token)
    revoked_at = time.monotonic()
    kubectl_edit(setup.admin, setup.namespace, {"M1_ADDRS": "192.168.68.89 100.127.6.20"})  # the open watch sees it
    status, body = wait_for(lambda: (r := run.get("/readyz"))[0] == 503 and r, 40, "/readyz 503")
    assert body.startswith(f"API server: {REJECTED}"), body
    unready_after = time.monotonic() - revoked_at
    assert unready_after < 40  # within a resync (20 s) and its pass
    assert run.get("/healthz")[0] == 200  # alive: a restart would not bring a valid token
    assert run.metric("syncer_credentials_rejected_total", upstream="api-server") >= 1
    time.sleep(3)
    assert run.get("/readyz")[0] == 503  # and it stays so, after the live edit too
    assert len(main_log(setup.origin)) == 2  # nothing written with what it could not read

    token_file.write_text(setup.cluster.service_account_token(setup.namespace, "syncer", create=False))
    rotated_at = time.monotonic()
    wait_for(lambda: run.get("/readyz")[0] == 200, 60, "ready again, without a restart")
    print(f"\nrevoked -> /readyz 503 in {unready_after:.1f}s; token file rewritten -> 200 in "
          f"{time.monotonic() - rotated_at:.1f}s")
    wait_for(lambda: len(main_log(setup.origin)) == 3, 60, "the edit made meanwhile copied back")
    assert run.alive()
    assert run.terminate() == 0


# -- 9-12: environment twins ----------------------------------------------------------------

@pytest.mark.parametrize("case,env,value,command,flag,choices", [
    ("09", "SYNCER_MODE", "comit", "sync", "--mode", "pr, commit, dry-run"),
    ("10", "SYNCER_LOG_FORMAT", "xml", "run", "--log-format", "text, json"),
    ("11", "SYNCER_OUTPUT", "yaml", "diff", "--output", "text, json"),
    ("12", "SYNCER_FORGE", "gihub", "sync", "--forge", "github, gitea, gitlab, none"),
])
def test_case_09_to_12_a_bad_environment_twin_is_refused_like_its_flag(
        setup: Setup, case: str, env: str, value: str, command: str, flag: str, choices: str) -> None:
    before = main_log(setup.origin)
    code, out, err = setup.syncer(command, "asgard", "--kubeconfig", str(setup.admin), env={env: value})
    assert (code, out) == (2, "")
    assert err == f"syncer: error: {env}={value!r}: invalid choice (choose from {choices}), as for {flag}\n"
    code, out, err = setup.syncer(command, "asgard", "--kubeconfig", str(setup.admin), flag, value)
    assert (code, out) == (2, "") and err.count("\n") == 1 and f"argument {flag}" in err.replace("-o/", "")
    assert main_log(setup.origin) == before  # nothing ran


# -- 13-14: the config and the directory -----------------------------------------------------

def test_case_13_a_misspelt_track_kind_is_an_error_naming_the_kind_meant(setup: Setup) -> None:
    conf = setup.work / "hosts" / "asgard" / "syncer.conf"
    conf.write_text(conf.read_text().replace("ConfigMap: writeback", "Configmap: writeback"))
    code, out, err = setup.syncer("diff", "asgard", "--kubeconfig", str(setup.admin))
    assert (code, out) == (2, "")
    assert err == ("syncer: error: hosts/asgard/syncer.conf: track.Configmap: no manifest declares kind Configmap and "
                   "the API server serves no kind of that name (did you mean ConfigMap?); kinds are spelt as in a "
                   "manifest's `kind:`\n")


def test_case_14_an_installation_without_objects_is_an_error_naming_its_directory(setup: Setup) -> None:
    (setup.work / "hosts" / "empty").mkdir()
    code, out, err = setup.syncer("diff", "empty", "--kubeconfig", str(setup.admin))
    assert (code, out) == (2, "")
    assert err == (f"syncer: error: hosts/empty/ ({setup.work / 'hosts' / 'empty'}) declares no Kubernetes objects: "
                   "nothing to compare; add its manifests, or pass the installation that has them\n")
