"""GitHub App credentials: app id + private key -> JWT -> installation token, against the fake
GitHub (which verifies the JWT with the app's public key, and expires tokens as GitHub does)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.conftest import EXAMPLE_LIVE, ROOT
from tests.fakes.kube_api import FakeKubeAPI
from tests.fakes.forges import FakeGitHub, FakeTime
from tests.fakes.forges.github_app import EXP_TOO_FAR, EXPIRED, UNDECODABLE, FakeApp
from tests.fakes.git_http import GitHTTPServer
from tests.helpers import fake, run  # noqa: F401 - the fake Kubernetes API fixture

from syncer.errors import ConfigError, ForgeError
from syncer.forges import api_url, make_forge
from syncer.forges.githubapp import REFRESH_BEFORE, InstallationToken, app_jwt, load_private_key

APP_ID = "123456"


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem(key: rsa.RSAPrivateKey, path: Path) -> Path:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()))
    return path


def signed(key: rsa.RSAPrivateKey, claims: dict[str, object]) -> str:
    """A JWT with any claims, signed as syncer signs its own (to probe the fake's checks)."""
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims).encode())
    return head + "." + b64(key.sign(head.encode(), padding.PKCS1v15(), hashes.SHA256()))


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def github(key: rsa.RSAPrivateKey, clock: FakeTime) -> Iterator[FakeGitHub]:
    with FakeGitHub(token="personal-token-never-used") as fake:
        fake.install_app(FakeApp(APP_ID, key.public_key(), clock=clock.clock))
        yield fake


def tokens(fake: FakeGitHub, key: rsa.RSAPrivateKey, clock: FakeTime, **options: object) -> InstallationToken:
    return InstallationToken(httpx.Client(), api_url("github", fake.url), APP_ID, key, repo=fake.repo,
                             sleep=clock.sleep, clock=clock.clock, **options)  # type: ignore[arg-type]


def test_the_jwt_is_rs256_with_githubs_claims(key: rsa.RSAPrivateKey) -> None:
    jwt = app_jwt(APP_ID, key, 1_800_000_000.5)
    header, claims = (json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))) for p in jwt.split(".")[:2])
    assert header == {"alg": "RS256", "typ": "JWT"}
    assert claims == {"iat": 1_800_000_000 - 60, "exp": 1_800_000_000 + 540, "iss": APP_ID}
    fake = FakeApp(APP_ID, key.public_key(), clock=lambda: 1_800_000_000.5)
    assert fake.jwt_problem(jwt) == ""


def test_the_fake_refuses_jwts_as_github_does(key: rsa.RSAPrivateKey) -> None:
    now = 1_800_000_000.0
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    fake = FakeApp(APP_ID, key.public_key(), clock=lambda: now)
    assert fake.jwt_problem(app_jwt(APP_ID, other, now)) == UNDECODABLE  # another key's signature
    assert fake.jwt_problem(app_jwt("999", key, now)) == UNDECODABLE  # another app
    assert fake.jwt_problem(app_jwt(APP_ID, key, now - 600)) == EXPIRED
    late = FakeApp(APP_ID, key.public_key(), clock=lambda: now - 120)  # exp 11 minutes ahead of its clock
    assert late.jwt_problem(app_jwt(APP_ID, key, now)).startswith("'Issued at'")
    assert fake.jwt_problem(signed(key, {"iat": int(now) - 60, "exp": int(now) + 660, "iss": APP_ID})) == EXP_TOO_FAR
    assert fake.jwt_problem(signed(key, {"iat": int(now) - 60, "exp": int(now) + 600, "iss": APP_ID})) == ""


def test_token_minted_then_used_for_api_calls(github: FakeGitHub, key: rsa.RSAPrivateKey, clock: FakeTime) -> None:
    source = tokens(github, key, clock)
    forge = make_forge("github", github.url, github.repo, source, clock=clock.clock, sleep=clock.sleep)
    assert forge.find_open("syncer/asgard", "main") is None
    assert [(r.method, r.path, r.status) for r in github.requests] == [
        ("GET", "/repos/acme/infra/installation", 200),
        ("POST", "/app/installations/4242/access_tokens", 201),
        ("GET", "/repos/acme/infra/pulls", 200)]
    assert github.app is not None and len(github.app.minted) == 1 and github.app.jwt_refusals == []
    assert source.token() == github.app.minted[0] and source.token().startswith("ghs_")
    assert source.token() in source.known()


def test_token_refreshed_before_it_expires(github: FakeGitHub, key: rsa.RSAPrivateKey, clock: FakeTime) -> None:
    source = tokens(github, key, clock, installation_id=4242)
    first = source.token()
    assert github.app is not None
    clock.offset += 3600 - REFRESH_BEFORE - 5  # still more than 5 minutes left: the same token
    assert source.token() == first and len(github.app.minted) == 1
    clock.offset += 10  # less than 5 minutes left: a new one, before GitHub would refuse the old
    second = source.token()
    assert second != first and github.app.minted == [first, second]
    assert github.app.token_ok(first)  # it was renewed early, not after a refusal
    clock.offset += REFRESH_BEFORE  # the first one has expired now: GitHub says 401
    answer = httpx.get(f"{github.url}/repos/acme/infra/pulls", headers={"Authorization": f"Bearer {first}"})
    assert answer.status_code == 401 and answer.json()["message"] == "Bad credentials"
    forge = make_forge("github", github.url, github.repo, source, clock=clock.clock, sleep=clock.sleep)
    assert forge.find_open("syncer/asgard", "main") is None  # with the second one


def test_a_revoked_token_is_minted_again_once(github: FakeGitHub, key: rsa.RSAPrivateKey, clock: FakeTime) -> None:
    source = tokens(github, key, clock)
    forge = make_forge("github", github.url, github.repo, source, clock=clock.clock, sleep=clock.sleep)
    forge.find_open("syncer/asgard", "main")
    assert github.app is not None
    github.app.revoke()
    assert forge.find_open("syncer/asgard", "main") is None
    assert len(github.app.minted) == 2


def test_an_app_not_installed_on_the_repository(github: FakeGitHub, key: rsa.RSAPrivateKey, clock: FakeTime) -> None:
    assert github.app is not None
    github.app.installed = False
    with pytest.raises(ForgeError, match=r"GitHub App 123456 is not installed on acme/infra"):
        tokens(github, key, clock).token()


def test_the_wrong_key_names_the_app_settings(github: FakeGitHub, clock: FakeTime) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(ForgeError, match=r"--github-app-id 123456 and --github-app-key-file") as raised:
        tokens(github, other, clock).token()
    assert UNDECODABLE in str(raised.value)


def test_a_bad_key_file_is_one_line_exit_2(asgard_repo: Path, tmp_path: Path) -> None:
    bad = tmp_path / "app.pem"
    bad.write_text("-----BEGIN RSA PRIVATE KEY-----\nnot base64 at all\n-----END RSA PRIVATE KEY-----\n")
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE),
                         "--mode", "pr", "--forge", "github", "--forge-url", "http://127.0.0.1:9",
                         "--forge-repo", "acme/infra", "--github-app-id", APP_ID, "--github-app-key-file", str(bad))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"syncer: error: --github-app-key-file {bad}: not a PEM private key")
    with pytest.raises(ConfigError, match="no such file|No such file"):
        load_private_key(tmp_path / "missing.pem")


def served_origin(tmp_path: Path) -> Path:
    """A folder for GitHTTPServer holding the test's origin as ``infra.git``, pushes allowed."""
    root = tmp_path / "srv"
    root.mkdir()
    shutil.copytree(tmp_path / "origin.git", root / "infra.git")
    subprocess.run(["git", "--git-dir", str(root / "infra.git"), "config", "http.receivepack", "true"], check=True)
    return root


def test_sync_opens_the_pr_and_pushes_with_the_installation_token(asgard_repo: Path, tmp_path: Path,
                                                                     key: rsa.RSAPrivateKey) -> None:
    root = served_origin(tmp_path)
    with FakeGitHub(git_dir=root / "infra.git", token="personal-token-never-used") as github:
        app = github.install_app(FakeApp(APP_ID, key.public_key()))
        with GitHTTPServer(root, authorize=app.git_authorization_ok) as git_server:
            argv = ("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE), "--mode", "pr",
                    "--forge", "github", "--forge-url", github.url, "--forge-repo", "acme/infra",
                    "--remote", f"{git_server.url}/infra.git",
                    "--github-app-id", APP_ID, "--github-app-key-file", str(pem(key, tmp_path / "k.pem")))
            code, out, err = run(*argv)
            assert (code, err) == (0, ""), out
            assert "pull request opened" in out and len(github.prs) == 1
            assert github.prs[0].author == app.bot  # the app's bot opened it: GET /user is no help there
            # The next sync finds that PR as its own (opened by the app's bot, from this repository).
            code, out, err = run(*argv)
            assert (code, err) == (0, ""), out
            assert len(github.prs) == 1 and "pull request opened" not in out, out
        assert git_server.pushes_refused == 0
        assert app.minted and not any(t in out for t in app.minted)
    heads = subprocess.run(["git", "--git-dir", str(root / "infra.git"), "branch", "--list", "syncer/asgard"],
                           capture_output=True, text=True, check=True).stdout
    assert "syncer/asgard" in heads


def test_a_token_minted_later_is_masked_in_the_log() -> None:
    import io
    import logging

    from syncer import logs

    stream, secrets = io.StringIO(), ["static-token"]
    handler = logs.setup("text", installation="asgard", secrets=secrets, stream=stream)
    try:
        secrets.append("ghs_mintedAfterTheLogWasSetUp0000000000")  # what the CLI's on_token hook does
        logging.getLogger("syncer.test").warning("sent ghs_mintedAfterTheLogWasSetUp0000000000 and static-token")
    finally:
        logging.getLogger().removeHandler(handler)
    assert "ghs_" not in stream.getvalue() and "static-token" not in stream.getvalue()
    assert "sent *** and ***" in stream.getvalue()


def test_the_sidecar_runs_on_the_app_from_its_env_twins(asgard_repo: Path, fake: FakeKubeAPI, tmp_path: Path,
                                                        key: rsa.RSAPrivateKey) -> None:
    """``syncer run`` as the chart starts it (SYNCER_GITHUB_APP_*): a live edit becomes a pull request, the
    branch pushed over HTTPS with the installation token, which no log line shows."""
    from tests.test_sidecar import CM, _free_port, agree_with_live, kubeconfig, seed, wait_for

    agree_with_live(asgard_repo)
    seed(fake, asgard_repo)
    root = served_origin(tmp_path)
    with FakeGitHub(git_dir=root / "infra.git", token="personal-token-never-used") as github:
        app = github.install_app(FakeApp(APP_ID, key.public_key()))
        with GitHTTPServer(root, authorize=app.git_authorization_ok) as git_server:
            env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
                   "SYNCER_GITHUB_APP_ID": APP_ID, "SYNCER_GITHUB_APP_KEY_FILE": str(pem(key, tmp_path / "k.pem"))}
            env.pop("SYNCER_FORGE_TOKEN", None)
            cmd = [sys.executable, "-m", "syncer.cli", "run", "asgard", "--remote", f"{git_server.url}/infra.git",
                   "--kubeconfig", str(kubeconfig(fake, tmp_path)), "--listen", f"127.0.0.1:{_free_port()}",
                   "--clone-dir", str(tmp_path / "run-clone"), "--mode", "pr", "--forge", "github",
                   "--forge-url", github.url, "--forge-repo", "acme/infra", "--debounce", "0.2",
                   "--log-format", "json"]
            proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            try:
                wait_for(lambda: app.minted or proc.poll() is not None, timeout=60, what="the first token")
                fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "30"}}, manager="kubectl-edit")
                wait_for(lambda: github.prs or proc.poll() is not None, timeout=60, what="the pull request")
                assert proc.poll() is None, proc.communicate()
                proc.send_signal(signal.SIGTERM)
                _, stderr = proc.communicate(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
        assert proc.returncode == 0, stderr
        assert len(github.prs) == 1 and git_server.pushes_refused == 0
        assert len(app.minted) == 1 and app.minted[0] not in stderr  # one token for clone, push and API calls
