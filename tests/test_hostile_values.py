"""Hostile values, third round (issue #21): secrets inside values, credential shapes, and
changes no one can see. Each test here failed on the code before the fix it names; the
end-to-end ones run ``sync --mode commit`` to a bare remote and look at what was pushed."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import git
from tests.helpers import _loopback_only, run  # noqa: F401 - autouse fixture: loopback only
from tests.test_hostile import CM_NAME, edit_cm, example_items, live_file

PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7LIVE\n-----END PRIVATE KEY-----\n"
CM_FILE = "hosts/asgard/ollama-endpoint-manager.yaml"


def _edited_live(tmp_path: Path, data: dict[str, str] | None = None,
                 binary: dict[str, str] | None = None) -> Path:
    """The example snapshot with keys added to the ConfigMap by ``kubectl edit`` (a person)."""
    items = example_items()
    cm = edit_cm(items)
    fields: dict[str, Any] = {}
    if data:
        cm["data"].update(data)
        fields["f:data"] = {f"f:{k}": {} for k in data}
    if binary:
        cm["binaryData"] = binary
        fields["f:binaryData"] = {".": {}, **{f"f:{k}": {} for k in binary}}
    cm["metadata"]["managedFields"].append({"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields,
                                            "manager": "kubectl-edit", "operation": "Update",
                                            "time": "2026-11-30T10:00:00Z"})
    return live_file(tmp_path, items)


def _commit(repo: Path, live: Path) -> tuple[str, str]:
    """``sync --mode commit``; the output, and the pushed main's ConfigMap file and message."""
    code, out, err = run("sync", "asgard", "--repo", str(repo), "--live-file", str(live), "--mode", "commit")
    assert code == 0, err
    git(repo, "fetch", "-q", "origin")
    pushed = git(repo, "show", f"origin/main:{CM_FILE}") + git(repo, "log", "-1", "--format=%B", "origin/main")
    return out + err, pushed


# -- 1. binaryData is judged decoded ----------------------------------------------------


def test_a_pem_key_added_live_under_binary_data_is_never_committed(asgard_repo: Path, tmp_path: Path) -> None:
    """Was: the check read only the base64 text; ``sync --mode commit`` committed the key to main."""
    key64 = base64.b64encode(PEM.encode()).decode()
    logo64 = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00binary").decode()
    live = _edited_live(tmp_path, binary={"tls.key": key64, "logo.png": logo64})
    out, pushed = _commit(asgard_repo, live)
    assert "logo.png" in pushed and logo64 in pushed  # a near miss: plain bytes are copied as usual
    for text in (out, pushed):
        assert key64 not in text and key64[:40] not in text and "MIIEvQIBADAN" not in text
        assert "tls.key" not in pushed
    code, doc, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "-o", "json")
    assert key64 not in doc
    [drift] = [d for d in json.loads(doc)["drifts"] if d["path"] == "binaryData.tls.key"]
    assert drift["action"] == "report" and drift["live"] == "‹redacted›", drift
    assert "PEM private key" in drift["reason"] and "base64" in drift["reason"], drift


def test_binary_data_decoded_shapes_and_near_misses() -> None:
    from syncer.secrets.values import judge

    b64 = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731
    assert judge(b64(PEM), binary=True)
    assert judge(b64("db:\n  password: hunter2\n"), binary=True)
    assert judge(b64(PEM)) == "value shaped like a base64-encoded PEM private key"  # in data too
    cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    assert judge(b64(cert), binary=True) is None and judge(b64(cert)) is None  # a certificate is public
    for plain in (b64("hello"), base64.b64encode(bytes(range(256))).decode(), "not base64!", ""):
        assert judge(plain, binary=True) is None, plain


# -- 2. secrets inside config-file values ---------------------------------------------

DOCKER_AUTH = base64.b64encode(b"robot:dckr-LIVE-pw").decode()
FILES = {
    "application.properties": "spring.application.name=web\nspring.datasource.url=jdbc:postgresql://db/app\n"
                              "spring.datasource.password=props-LIVE-pw\n",
    "app.yaml": "server:\n  port: 8080\ndatabase:\n  user: app\n  password: yaml-LIVE-pw\n",
    "kubeconfig": "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: https://10.0.0.1\n"
                  "users:\n- name: ci\n  user:\n    token: kube-LIVE-token\n",
    "config.json": json.dumps({"auths": {"registry.example": {"auth": DOCKER_AUTH}}}),
    "DSN": "postgres://db:5432/app?sslmode=require&user=app&password=dsn-LIVE-pw",
}
PLAIN_FILES = {
    "logging.properties": "handlers=console\nlevel=INFO\nspring.datasource.password=${DB_PASSWORD}\n",
    "web.yaml": "server:\n  port: 8080\n  passwordPolicy: strict\n  usePassword: true\n",
}
INNER_SECRETS = ("props-LIVE-pw", "yaml-LIVE-pw", "kube-LIVE-token", DOCKER_AUTH, "dckr-LIVE-pw", "dsn-LIVE-pw")


def test_credentials_inside_config_file_values_are_never_committed(asgard_repo: Path, tmp_path: Path) -> None:
    """Was: all five committed to main and shown in the diff and the commit message."""
    live = _edited_live(tmp_path, data={**FILES, **PLAIN_FILES})
    out, pushed = _commit(asgard_repo, live)
    for name in PLAIN_FILES:  # near misses (a reference, settings about passwords) are copied
        assert name in pushed, name
    for name in FILES:
        assert f"{name}:" not in pushed, name
    for text in (out, pushed):
        for secret in INNER_SECRETS:
            assert secret not in text, (secret, text[:2000])
    code, doc, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "-o", "json")
    drifts = {d["path"]: d for d in json.loads(doc)["drifts"] if d["name"] == CM_NAME}
    for name in FILES:
        assert drifts[f"data.{name}"]["action"] == "report", drifts[f"data.{name}"]
        assert "inside the value" in drifts[f"data.{name}"]["reason"]


@pytest.mark.parametrize("value", [
    "[database]\nhost = db\npassword = ini-pw\n",
    "export API_TOKEN=env-token\nLOG_LEVEL=debug\n",
    "Server=db;Database=app;User Id=app;Pwd=odbc-pw;",
    "host=db user=app password=libpq-pw",
    '{"db": {"password": "json-pw"}}',
    "env:\n- name: DB_PASSWORD\n  value: item-pw\n",
    "script: |\n  export GITHUB_TOKEN=nested-token\n",
    "users:\n- name: x\n  user:\n    client-key-data: LS0tLS1CRUdJTg==\n",
    "#!/bin/sh\nexec app --db-password=cli-pw\n",
    "spring.datasource.url=jdbc:mysql://db/app?user=app&password=nested-pw\n",
    "DB_PASSW\u041eRD=cyrillic-pw\n",
    "<config>\n  <db.password>xml-pw</db.password>\n</config>\n",
    '<datasource url="jdbc:x" password="xml-attr-pw"/>\n<x/>\n',
    "cert-bundle: " + base64.b64encode(PEM.encode()).decode(),
    "curl -H 'authorization: bearer 0a1b2c3d4e5f6a7b8c9d'",
    "sk_live_\u200b4eC39HqLyjWDarjtT1zdp7dc",
    "ѕk_live_4eC39HqLyjWDarjtT1zdp7dc",
])
def test_secret_inside_a_file_value(value: str) -> None:
    from syncer.secrets.values import judge

    assert judge(value) is not None


@pytest.mark.parametrize("value", [
    "LOG_LEVEL=debug\nINTERVAL=15\n", "PWD=/app\nOLDPWD=/\n", "[section]\ntoken_url = https://x/token\n",
    "password=\nsecret: ''\ntoken: null\n", "db:\n  password: ${DB_PASSWORD}\n  token: '{{ .Values.token }}'\n",
    '{"auths": {"r": {"auth": "none"}}}', "maxTokens: 4096\nMAX_TOKENS=512\n", "retryTokens: 3\nother: x\n", "a: [\n", "{not json",
    "192.168.68.75 100.115.97.90", "https://example.com/?page=2&sort=asc",
    "<config>\n  <password.policy>strict</password.policy>\n  <token>${TOKEN}</token>\n</config>\n",
])
def test_plain_file_values_are_no_secret(value: str) -> None:
    from syncer.secrets.values import judge

    assert judge(value) is None


def test_a_reason_never_quotes_a_secret_shaped_key_name() -> None:
    from syncer.secrets.values import judge

    why = judge("ghp_" + "a" * 36 + ".password=x\n")
    assert why is not None and "ghp_" not in why, why


def test_secretkeys_from_the_config_apply_inside_files() -> None:
    from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS
    from syncer.secrets.values import judge

    value = "stripe_live = abc\nother = 1\n"
    assert judge(value) is None
    assert judge(value, (*DEFAULT_SECRET_PATTERNS, "stripe_.*")) is not None


def test_inner_judgement_is_bounded() -> None:
    import time

    from syncer.secrets.values import judge

    start = time.monotonic()
    for value in ("a: &a [" + "*a, " * 5 + "]\n" + "b: &b [*a, *a, *a]\n" * 30, "k=v\n" * 200_000,
                  "[" * 100_000, "x: " + "{" * 5000 + "\n", "a=b&" * 200_000, "Bearer " * 100_000):
        judge(value)
    assert time.monotonic() - start < 30  # a hang guard only


# -- 3. credential shapes, confusable key names --------------------------------------


@pytest.mark.parametrize("value,what", [
    ("https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/abcdefghijklmnopqrstuvwx", "Slack webhook"),
    ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "Stripe"),
    ("AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "gcp api key"),
    ("ASIAY34FZKBOKMUTVV7A", "AWS"),
    ("sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "OpenAI"),
    ("Authorization: Bearer " + "0123456789abcdef" * 2, "bearer"),
    ("Basic " + base64.b64encode(b"admin:hunter2").decode(), "basic"),
    ("ghs_123456_eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2dpdGh1Yi5jb20ifQ.c2lnbmF0dXJl", "access token"),
])
def test_credential_shapes_are_secret_values(value: str, what: str) -> None:
    """Was: none of these shapes was known; all committed to main."""
    from syncer.secrets.values import judge

    why = judge(value)
    assert why is not None and what.lower() in why.lower(), why


@pytest.mark.parametrize("value", [
    "https://hooks.example.com/services/x", "sk_live_", "AIza-short", "ASIA", "sk-proj-short",
    "Bearer realm-authentication-required", "Basic realm", "tasks_live_count", "AKIA-docs",
])
def test_credential_shape_near_misses(value: str) -> None:
    from syncer.secrets.values import judge

    assert judge(value) is None


@pytest.mark.parametrize("key", ["DB_PASSW\u041eRD", "DB_PASS\u200bWORD", "\uff24\uff22_\uff30\uff21\uff33\uff33",
                                 "\u0430pi_key"])
def test_confusable_and_invisible_key_names_are_read_as_they_look(key: str) -> None:
    """Was: ``DB_PASSWОRD`` with a Cyrillic О split into ``PASSW`` and ``RD``: committed to main."""
    from syncer.secrets.redact import is_secret_key, secret_field

    assert is_secret_key(key) and secret_field("ConfigMap", f"data.{key}")


def test_a_cyrillic_o_in_a_secret_key_name_is_never_committed(asgard_repo: Path, tmp_path: Path) -> None:
    key = "DB_PASSW\u041eRD"
    live = _edited_live(tmp_path, data={key: "cyr-LIVE-pw", "SLACK_HOOK": FILES["DSN"].replace("dsn", "x"),
                                        "NOTES": "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/hookLIVEsecret00"})
    out, pushed = _commit(asgard_repo, live)
    for secret in ("cyr-LIVE-pw", "hookLIVEsecret00", "x-LIVE-pw"):
        assert secret not in out and secret not in pushed, secret


# -- 4. hostile input, fourth look: memory, alias re-parse, shapes missed -----------------


def test_remembered_judgements_keep_no_value_text() -> None:
    """Was (F7): ``_judge_text`` was an ``lru_cache(4096)`` keyed by the full text: 300 distinct
    1 MB values kept 300 MB alive. Now the memo holds digests: a judged value is let go."""
    import gc
    import tracemalloc

    from syncer.secrets import lookalike, values

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(4):
        value = (f"v{i}-" + "x" * 60 + "\n") * 4000  # ~260 KB, distinct each time
        assert values.judge(value) is None
        lookalike.change_note(value, value + "\u200b")
        del value
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert held < 1 << 20, f"{held} bytes held after judging 1 MB of values"


def test_memo_is_bounded_by_entries_and_bytes() -> None:
    from syncer.cache import Caches, Lru, small_size, text_key

    memo: Lru[tuple[str | bytes], str] = Lru(3, max_bytes=1 << 20, size_of=small_size)
    for i in range(10):
        assert memo.get_or((text_key("x" * 1000 + str(i)),), lambda: "why") == "why"
    assert len(memo) == 3
    small: Lru[tuple[str], str] = Lru(100, max_bytes=2000, size_of=small_size)
    for i in range(100):
        small.get_or(("k%d" % i,), lambda: "a reason " * 10)
    assert small.held_bytes <= 2000 and 0 < len(small) < 100
    judged = Caches().judged  # what values.judge remembers in: the same bounds as before (issue #21)
    assert (judged.max_entries, judged.max_bytes) == (4096, 4 << 20)
    assert isinstance(text_key("y" * 10_000), bytes) and len(text_key("y" * 10_000)) == 32


def test_yaml_aliases_to_an_inner_file_are_judged_once() -> None:
    """Was (F8): a 12 KB value whose 1,000 aliases name a string that is a YAML file (itself
    with 2,000 aliases) re-parsed it at each alias: ~9 s. Now each inner string is judged once
    per judgement, within one budget of characters parsed (``MAX_PARSED``)."""
    from syncer.secrets import values

    deep = "k: [1]\nx: " + "y" * 3000 + "\n"
    inner = f"c: &c {json.dumps(deep)}\nd: [" + ",".join(["*c"] * 2000) + "]\n"
    outer = f"a: &a {json.dumps(inner)}\nb: [" + ",".join(["*a"] * 1000) + "]\n"
    assert len(outer) <= values.MAX_YAML
    judge = values._Judge(values.DEFAULT_SECRET_PATTERNS)
    assert judge.text(outer, 0) is None
    assert judge.parsed <= len(outer) + len(inner) + len(deep)  # each inner file parsed once (not 1,000 times)
    # the secret is still found through an alias
    file = json.dumps("db:\n  password: hunter2xyz\n")
    leaky = f"a: &a {file}\nb: [*a, *a]\n"
    assert values.judge(leaky)


def _surrogate_repo(tmp_path: Path, git_value: str, live_value: str) -> tuple[Path, Path]:
    repo = tmp_path / "r"
    (repo / "hosts" / "t").mkdir(parents=True)
    (repo / "hosts" / "t" / "syncer.conf").write_text("installation: t\nnamespace: ns\ntrack:\n  ConfigMap: writeback\n")
    (repo / "hosts" / "t" / "app.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: ns\n"
        f"data:\n  a: \"{git_value}\"\n  b: \"x\"\n")
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "t")
    live = tmp_path / "live.json"
    live.write_text('{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap",'
                    '"metadata":{"name":"app","namespace":"ns","annotations":{"kubectl.kubernetes.io/'
                    'last-applied-configuration":"{\\"data\\":{\\"a\\":\\"y\\"}}"}},"data":{"a":"'
                    + live_value + '","b":"x"}}]}')
    return repo, live


def test_a_lone_surrogate_is_refused_in_git_and_escaped_from_live(tmp_path: Path) -> None:
    """Was (F6): ``a: "\\ud800"`` in a git manifest crashed ``syncer diff`` with
    UnicodeEncodeError, exit 1. Now the file is refused in one line naming it (exit 2); a live
    value with one is shown escaped."""
    import os
    import subprocess
    import sys

    from syncer.secrets import escape

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PYTHONIOENCODING": "utf-8"}

    def diff(repo: Path, live: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "syncer.cli", "diff", "t", "--repo", str(repo),
                               "--live-file", str(live)], capture_output=True, text=True, env=env, timeout=120)

    repo, live = _surrogate_repo(tmp_path / "git", "\\ud800", "y")
    done = diff(repo, live)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "hosts/t/app.yaml:7" in errors[0] and "surrogate" in errors[0]

    repo, live = _surrogate_repo(tmp_path / "live", "z", "y\\ud800")
    done = diff(repo, live)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr  # 1: differences found
    assert "y\\ud800" in done.stdout
    for out in (escape.line, escape.terminal, escape.markdown, escape.slack):
        out("a\udfffb").encode("utf-8")  # no UnicodeEncodeError


_SA_JSON = json.dumps({"type": "service_account", "private_key": PEM, "client_email": "a@b.iam.gserviceaccount.com"})
#: (ConfigMap key, live value holding a credential the check missed before F4)
F4_VALUES = {
    "AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=LEAK1abcdEFGH1234"
                                       "abcdEFGH1234abcdEFGH1234abcdEFGH1234abcdEFGH12==;EndpointSuffix=core.windows.net",
    "settings.yaml": "password: LEAK3hunter2",
    "npmrc": "//registry.npmjs.org/:_authToken=LEAK4-9f3c1d2e-aaaa-bbbb-cccc-1234567890ab",
    "sa.json": base64.b64encode(_SA_JSON.encode()).decode(),
    "auth": "admin:$apr1$LEAK6xyz$abcdefghijklmnopqrstu.",
}


def test_f4_credentials_are_never_pushed_to_the_pr_branch(tmp_path: Path) -> None:
    """Was (F4): an Azure ``AccountKey=``, a one-line ``password: x``, an ``.npmrc``
    ``_authToken`` with a UUID, a base64 service-account JSON, an htpasswd hash and
    ``args: ["--db-password", "x"]`` were pushed to the PR branch. Now each is reported only."""
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    (work / "hosts" / "t").mkdir(parents=True)
    (work / "hosts" / "t" / "syncer.conf").write_text(
        "installation: t\nnamespace: ns\ntrack:\n  ConfigMap: writeback\n  Deployment: writeback\n")
    data = "".join(f"  {key}: \"x\"\n" for key in F4_VALUES)
    (work / "hosts" / "t" / "app.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: ns\ndata:\n{data}---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: ns\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: c\n        image: x\n        args: [\"--log-level\", \"info\"]\n")
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(tmp_path, "init", "-q", "-b", "main", str(work))
    git(work, "add", ".")
    git(work, "commit", "-qm", "t")
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "main")
    args = ["--log-level", "debug", "--db-password", "LEAK7hunter2"]
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "namespace": "ns"},
              "data": dict(F4_VALUES)},
             {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"},
              "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x", "args": args}]}}}}]
    live = tmp_path / "live.json"
    live.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    code, out, err = run("sync", "t", "--repo", str(work), "--live-file", str(live), "--mode", "pr", "--forge", "none")
    assert code in (0, 1), err
    git(work, "fetch", "-q", "origin")
    branches = git(work, "branch", "-r")
    pushed = git(work, "log", "-p", "--all")
    for text in (out + err, pushed):
        for marker in ("LEAK", "MIIEvQIBADAN", F4_VALUES["sa.json"][:40]):
            assert marker not in text, (marker, branches, text[:3000])
    code, doc, _ = run("diff", "t", "--repo", str(work), "--live-file", str(live), "-o", "json")
    reasons = {d["path"]: d for d in json.loads(doc)["drifts"]}
    for key in F4_VALUES:
        assert reasons[f"data.{key}"]["action"] == "report", reasons[f"data.{key}"]
    assert any("--db-password" in d.get("reason", "") for d in reasons.values()), reasons


@pytest.mark.parametrize("value", [
    *F4_VALUES.values(),
    "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=abcdEFGH1234abcdEFGH12=",
    "https://acct.blob.core.windows.net/c?sv=2020-08-04&sp=r&se=2030-01-01&sig=abcdEFGH1234abcdEFGH1234abcd%3D",
    "hvs.CAESIJlU9JMYEhOPYv4igdhm9PnZDrabYTobQ4Ymnlq1qY",
    "- password: hunter2xyz\n- x: 1\n",
    "machine github.com login bob password s3cr3tpassw0rd\n",
    "--password hunter2xyz --user bob",
    "db.password hunter2xyz",
    "admin:$2y$05$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234\n",
    ["--log-level", "info", "--db-password", "hunter2xyz"],
    'x: {"password": "hunter2xyz"}', "a: 1\nx: {\"password\": \"hunter2xyz\"}\n",
    "db.password hunter2xyz\nx=1\n", "curl -u bob:hunter2xyz https://x",
    "machine github.com\n  login bob\n  password s3cr3tpassw0rd\n",
])
def test_f4_shapes_inside_values(value: Any) -> None:
    from syncer.secrets.values import judge

    assert judge(value) is not None


@pytest.mark.parametrize("value", [
    "Note: see the wiki", "password: ${DB_PASSWORD}", "AccountName=acct;AccountKey=;", "sig=short",
    "--password-file /run/secrets/pw", ["--password", "--other"], ["--log-level", "info"],
    "user: admin", "admin:x", base64.b64encode(b'{"type": "service_account", "project_id": "p"}' * 2).decode(),
    "hvs.short", "log in with your password please", "curl -u bob https://x", "x: {\"user\": \"bob\"}",
    "reset your password\nthen log in\n",
])
def test_f4_near_misses(value: Any) -> None:
    from syncer.secrets.values import judge

    assert judge(value) is None, judge(value)
