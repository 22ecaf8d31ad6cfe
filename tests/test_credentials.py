"""Authentication is not authorisation: credentials the API server or the forge rejects (401)
are their own error, nothing is claimed "in sync" with them, readiness drops while they are
rejected, and a rewritten token file brings the sidecar back without a restart. (403 keeps its
RBAC advice: tests/test_cli_visibility.py.) The real kube-apiserver does the same in
tests/realapi/test_realapi_truth.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
from tests.conftest import NOW, ROOT
from tests.fakes.forges import FakeGitHub, init_bare_repo
from tests.test_live_api import load_asgard_as_applied
from tests.test_sidecar import (  # noqa: F401 - fixtures
    _loopback_only, agreed, fake, origin, seed, sidecar, wait_for,
)

from tests.fakes.kube_api import FakeKubeAPI
from syncer.cli import main
from syncer.errors import CredentialsRejected, ForgeAuthFailed
from syncer.forges import make_forge
from syncer.forges.tokens import FileToken
from syncer.kube import REJECTED, NoCredentials, Unauthorized, kube_client
from syncer.sources.manifests import parse_documents
from syncer.writeback.deliver import Mode

LOCAL = ("127.0.0.1", 0)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), now=NOW, stdout=out, stderr=err), out.getvalue(), err.getvalue()


def token_file_kubeconfig(api: FakeKubeAPI, path: Path, token_file: Path) -> Path:
    """A kubeconfig whose user reads its token from ``token_file`` (as a projected token is read)."""
    cfg = json.loads(api.kubeconfig(path).read_text())
    cfg["users"][0]["user"] = {"tokenFile": str(token_file)}
    path.write_text(json.dumps(cfg))
    return path


def test_a_rejected_token_is_not_in_sync_nor_an_rbac_warning(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    load_asgard_as_applied(fake_kube)
    kc = fake_kube.kubeconfig(tmp_path / "kc")
    fake_kube.token = "a-token-issued-later"  # the one in the kubeconfig is no longer valid: 401
    code, out, err = run("diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(kc))
    assert (code, out) == (2, "")  # nothing compared: no headline claims anything
    assert err.count("\n") == 1 and err.startswith(f"syncer: error: {REJECTED}: ")
    assert "-> 401" in err and f"check the token of user 'fake-user' in kubeconfig {kc} (context 'fake')" in err
    assert "tracked.kinds" not in err and "may not read" not in err  # not RBAC's advice
    code, out, err = run("diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(kc), "-o", "json")
    doc = json.loads(out)
    assert code == 2 and doc["in_sync"] is False and doc["fatal"] is True
    assert doc["errors"][0]["message"].startswith(REJECTED)


def test_a_rejected_token_exits_2_with_a_report_only_config(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    """No kind written back: a 401 still is no green (it used to exit 0, "in sync (0 objects checked)")."""
    import shutil

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "hosts" / "asgard", repo / "hosts" / "asgard")
    conf = repo / "hosts" / "asgard" / "syncer.conf"
    conf.write_text(conf.read_text().replace("ConfigMap: writeback", "ConfigMap: report")
                    .replace("Endpoints: stable", "Endpoints: report"))
    load_asgard_as_applied(fake_kube)
    kc = fake_kube.kubeconfig(tmp_path / "kc")
    fake_kube.token = "rotated"
    for command in (["diff"], ["sync", "--mode", "dry-run"]):
        code, out, err = run(*command, "asgard", "--repo", str(repo), "--kubeconfig", str(kc))
        assert (code, out) == (2, "") and REJECTED in err, (command, out, err)


def test_a_token_file_that_cannot_be_read_is_no_credentials(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    load_asgard_as_applied(fake_kube)
    kc = token_file_kubeconfig(fake_kube, tmp_path / "kc", tmp_path / "gone")
    code, out, err = run("diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(kc))
    assert (code, out) == (2, "")
    assert err == f"syncer: error: syncer has no credentials to send: token file {tmp_path / 'gone'}: " \
                  "No such file or directory\n"


def test_a_401_reads_the_token_file_again_at_once(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(fake_kube.token)
    api = kube_client(str(token_file_kubeconfig(fake_kube, tmp_path / "kc", token)), None, read_yaml=parse_documents)
    assert api.call("GET", "/api/v1/namespaces/default/configmaps") is not None
    fake_kube.token = "rotated-by-the-kubelet"
    with pytest.raises(Unauthorized) as err:
        api.call("GET", "/api/v1/namespaces/default/configmaps", what="list ConfigMaps")
    assert isinstance(err.value, CredentialsRejected) and err.value.status == 401
    assert f"check the token in {token}" in err.value.message
    token.write_text("rotated-by-the-kubelet\n")  # within the minute the file is otherwise trusted for
    assert api.call("GET", "/api/v1/namespaces/default/configmaps") is not None


def test_a_failing_credential_plugin_is_no_credentials() -> None:
    from syncer.kube.config import Connection

    def plugin() -> str:
        raise RuntimeError("exec: executable aws-iam-authenticator not found\nmore")

    conn = Connection(server="https://127.0.0.1:1", auth_hook=plugin, source="user 'eks' in kubeconfig kc")
    with pytest.raises(NoCredentials) as err:
        conn.authorization()
    assert err.value.message == ("syncer has no credentials to send: the credential plugin of user 'eks' in "
                                 "kubeconfig kc failed: exec: executable aws-iam-authenticator not found")


@pytest.mark.parametrize("state", ["syncer-state", None], ids=["state-record", "no-state-record"])
def test_sidecar_unready_while_its_token_is_rejected_and_back_when_the_file_is_rewritten(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path, state: str | None) -> None:
    """The open watches were authenticated when they began and go on streaming: a pass's own
    request (the state read, else one ``GET /version``) is what meets the 401."""
    seed(fake, agreed)
    token = tmp_path / "token"
    token.write_text(fake.token)
    api = kube_client(str(token_file_kubeconfig(fake, tmp_path / "kc", token)), None, read_yaml=parse_documents,
                      pool_size=64)
    sc = sidecar(fake, agreed, tmp_path, api=api, mode=Mode.DRY_RUN, listen=LOCAL, debounce=0.1,
                 retry_base=0.1, state_configmap=state).start()
    assert sc.server is not None
    base = f"http://127.0.0.1:{sc.server.port}"

    def get(path: str) -> httpx.Response:
        return httpx.get(base + path, timeout=5, trust_env=False)

    try:
        wait_for(lambda: get("/readyz").status_code == 200, what="ready")
        fake.token = "issued-after-the-serviceaccount-was-recreated"  # syncer's token is revoked
        sc.loop.poke()  # a pass (the resync would run one): its state read meets the 401
        down = wait_for(lambda: (r := get("/readyz")).status_code == 503 and r, what="unready")
        assert down.text.startswith(f"API server: {REJECTED}"), down.text
        assert get("/healthz").status_code == 200  # alive: a restart would not bring a valid token
        metrics = get("/metrics").text
        rejected = [line for line in metrics.splitlines()
                    if line.startswith('syncer_credentials_rejected_total{upstream="api-server"}')]
        assert rejected and float(rejected[0].split()[-1]) >= 1, rejected
        token.write_text(fake.token)  # the kubelet (or a person) writes the new token
        sc.loop.poke()
        wait_for(lambda: get("/readyz").status_code == 200, timeout=15, what="ready again without a restart")
    finally:
        sc.stop()


def test_the_forge_token_file_is_read_again_when_the_forge_rejects_it(tmp_path: Path) -> None:
    token = tmp_path / "forge-token"
    token.write_text("old-token")
    bare = init_bare_repo(tmp_path / "infra.git", ("main", "syncer/asgard"))
    with FakeGitHub(git_dir=bare, token="new-token") as server, httpx.Client() as client:
        forge = make_forge("github", server.url, server.repo, FileToken(str(token)), client=client)
        with pytest.raises(ForgeAuthFailed) as err:
            forge.find_open("syncer/asgard", "main")
        assert "rejected syncer's token (expired or revoked?)" in str(err.value)
        assert f"--token-file {token}" in str(err.value) and "old-token" not in str(err.value)
        token.write_text("new-token\n")  # a rotated Secret, mounted again
        assert forge.find_open("syncer/asgard", "main") is None  # no restart, no error
