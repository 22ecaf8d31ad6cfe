"""Hostile live objects and a hostile host (issue #17): whoever can edit a ConfigMap cannot
stop, trick or leak syncer. Each test here failed on the code before the fix it names."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLE_LIVE, NOW, ROOT, git
from tests.helpers import _loopback_only, make_repo, run  # noqa: F401 - autouse fixture: loopback only
from ruamel.yaml import YAML

from syncer.cli import main

CM_NAME = "ollama-endpoint-manager"


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
    from syncer.detect.normalize import last_applied

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


def _json_depth_by_regex(raw: str, limit: int = 128) -> int:
    """The old ``json_depth`` (a regular expression for whole strings): right, but quadratic on
    an unterminated string. An oracle for short texts only."""
    import re

    if raw.count("[") + raw.count("{") <= limit:
        return raw.count("[") + raw.count("{")
    depth = deepest = 0
    for m in re.finditer(r"[\[\]{}]", re.sub(r'"(?:[^"\\]|\\.)*"', '""', raw, flags=re.DOTALL)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        else:
            depth -= 1
    return deepest


def test_json_depth_agrees_with_the_regex_on_valid_and_broken_json() -> None:
    import random

    from syncer.bounds import json_depth

    rnd = random.Random(17)
    for _ in range(20_000):
        text = "".join(rnd.choice('[]{}"\\a,:\n') for _ in range(rnd.randint(0, 24)))
        for limit in (0, 1, 2, 3, 100):
            assert json_depth(text, limit) == _json_depth_by_regex(text, limit), (text, limit)
    valid = json.dumps({"a": ['x"[\\', {"b": [[[]]]}], "c": "]]]"})
    assert json_depth(valid, 5) == _json_depth_by_regex(valid, 5) == 6


def test_json_depth_is_linear_on_an_unterminated_string() -> None:
    """Was: the regular expression ``"(?:[^"\\]|\\.)*"`` retried from every quote of an
    unterminated string: 13 s at 64 KB, a 240 KB last-applied annotation held ``syncer diff``
    190 s, a 1 MiB state record about an hour. Not a performance goal (those live in bench/):
    the 10 s bound only catches that quadratic blow-up; the linear scans take about a second
    of this thread's CPU. CPU, not the wall clock: at load 10 on two cores (and under ``nice``)
    the same scans took 10.2 s of wall time."""
    from syncer.bounds import MAX_JSON_BYTES, InputRejected, json_depth, load_json

    hostile = "[]" * 200 + '"' + '\\"' * ((MAX_JSON_BYTES - 401) // 2)  # 1 MiB, within the size limit
    assert len(hostile) <= MAX_JSON_BYTES
    start = time.thread_time()
    assert json_depth(hostile) == 1
    with pytest.raises(ValueError):
        load_json(hostile, "x")
    deep = "[" * 200 + '"' + '\\"' * ((MAX_JSON_BYTES - 201) // 2)
    with pytest.raises(InputRejected, match="nested deeper than 128"):
        load_json(deep, "x")
    assert time.thread_time() - start < 10


def test_gzip_bomb_state_record_is_refused_before_parsing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Was: 87 KB of gzip expanded to 64 MiB of ``{},{},...`` (under ``MAX_RECORD_JSON``) and
    ``json.loads`` made 1.7 GB of objects (the chart's limit is 128Mi). Now its values are
    counted before parsing and the record is refused like a too-deep one."""
    import logging

    from tests.fakes.kube_api import FakeKubeAPI
    from tests.test_sidecar import api_client

    from syncer.model import ObjectRef
    from syncer.sidecar.state import MAX_RECORD_JSON, MAX_RECORD_VALUES, ConfigMapStore, pack

    bomb = '{"v1/ConfigMap/ai/x":{"data":{},"z":[' + ",".join(["{}"] * (MAX_RECORD_VALUES + 10)) + "]}}"
    assert len(bomb) < MAX_RECORD_JSON  # the size limit alone lets it through
    packed = pack(bomb)
    assert len(packed) < 200_000
    with FakeKubeAPI() as fake:
        fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "syncer-state", "namespace": "ai"},
                  "binaryData": {"asgard.json.gz": packed}})
        store = ConfigMapStore(api_client(fake, tmp_path), "ai", "asgard")
        with caplog.at_level(logging.ERROR, logger="syncer.state"):
            store.refresh()
        assert store.rejected is not None and f"more than {MAX_RECORD_VALUES} values" in store.rejected
        assert [r.levelno for r in caplog.records if r.name == "syncer.state"] == [logging.ERROR]
        assert store.base(ObjectRef("v1", "ConfigMap", "ai", "x")) is None


def test_a_state_record_of_40000_objects_still_fits_the_bounds() -> None:
    from tests.fakes.apps import declared_objects
    from syncer.bounds import json_shape
    from syncer.sidecar.state import MAX_RECORD_JSON, MAX_RECORD_VALUES

    sample = declared_objects(400)
    text = json.dumps({f"v1/ConfigMap/ai/{i}": o for i, o in enumerate(sample)}, separators=(",", ":"))
    _, values = json_shape(text, value_limit=10**9)
    assert len(text) * 100 < MAX_RECORD_JSON
    assert values * 100 < MAX_RECORD_VALUES


def test_deep_state_record_is_refused_loudly_and_the_pass_goes_on(tmp_path: Path) -> None:
    """Was: RecursionError out of ``refresh``: every sidecar pass failed, /readyz stayed 200."""
    from tests.fakes.kube_api import FakeKubeAPI
    from tests.test_sidecar import api_client

    from syncer.model import ObjectRef
    from syncer.sidecar.state import ConfigMapStore

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
        written = json.loads(fake.get("v1", "ConfigMap", "ai", "syncer-state")["data"]["asgard.json"])
        assert written == {"v1/ConfigMap/ai/ollama-endpoint-manager": {"data": {}}}
        store.refresh()  # the record reads again: the pass goes on with it
        assert store.rejected is None
        assert store.base(ObjectRef("v1", "ConfigMap", "ai", CM_NAME)) == {"data": {}}
        assert not fake.errors, fake.errors[0]


def test_failing_objects_show_in_a_metric() -> None:
    from syncer.sidecar.metrics import Metrics
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
    from syncer.sources.manifests import check_installation

    assert check_installation("asgard") == "asgard"
    with pytest.raises(ConfigError, match="not a valid name"):
        check_installation("asgard\n")


# -- 2. secret-looking ConfigMap keys and values ----------------------------------------

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcHMtYm90In0.c2lnbmF0dXJlLUxJVkU"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAlive\n-----END RSA PRIVATE KEY-----\n"
SECRETS = ("hunter2-LIVE", "hunter2-GIT", "sk-LIVE-123", JWT, "MIIEpAIBAAKCAQEAlive", "sk-master-LIVE", "pw-LIVE",
           "stripe-LIVE")
LITELLM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: litellm\n  namespace: ai\n"


def _secret_live(tmp_path: Path) -> Path:
    items = example_items()
    edit_cm(items)["data"].update({
        "DB_PASSWORD": "hunter2-LIVE", "API_KEY": "sk-LIVE-123", "SESSION": JWT, "TLS": PEM, "STRIPE_LIVE": "stripe-LIVE",
        "key3": "v3", "CACHE_KEY_PREFIX": "cache:", "TOKEN_URL": "https://auth.example/token"})
    items.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "litellm", "namespace": "ai"},
                  "data": {"LITELLM_MASTER_KEY": "sk-master-LIVE", "LOG_LEVEL": "debug",
                           "DATABASE_URL": "postgres://app:pw-LIVE@db:5432/litellm"}})
    return live_file(tmp_path, items)


def _with_secret_config(repo: Path) -> None:
    host = repo / "hosts" / "asgard"
    (host / "litellm.yaml").write_text(LITELLM)
    cm = host / "ollama-endpoint-manager.yaml"
    cm.write_text(cm.read_text().replace('  INTERVAL_SECONDS: "15"\n', '  INTERVAL_SECONDS: "15"\n  DB_PASSWORD: hunter2-GIT\n'))
    cfg = host / "syncer.conf"
    cfg.write_text(cfg.read_text() + "secretKeys: ['stripe_.*']\n")


def test_secret_looking_keys_are_never_copied_into_git_nor_shown(asgard_repo: Path, tmp_path: Path) -> None:
    """Was: added DB_PASSWORD/API_KEY copied into the file, and shown in cleartext in the PR
    body, the commit message, ``diff -o json`` and ``detail``; ``secretKeys`` unused."""
    _with_secret_config(asgard_repo)
    git(asgard_repo, "add", ".")
    git(asgard_repo, "commit", "-qm", "litellm")
    git(asgard_repo, "push", "-q", "origin", "main")
    live = _secret_live(tmp_path)
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "--mode", "pr")
    assert code == 0, err
    git(asgard_repo, "fetch", "-q", "origin")
    files = git(asgard_repo, "show", "origin/syncer/asgard:hosts/asgard/ollama-endpoint-manager.yaml")
    files += git(asgard_repo, "show", "origin/syncer/asgard:hosts/asgard/litellm.yaml")
    message = git(asgard_repo, "log", "-1", "--format=%B", "origin/syncer/asgard")
    # near misses are plain keys: synced as usual
    assert "key3: v3" in files and 'CACHE_KEY_PREFIX: "cache:"' in files and "LOG_LEVEL: debug" in files
    assert "TOKEN_URL" in files
    # hits: neither copied nor shown; the git value stays as it was
    assert "DB_PASSWORD: hunter2-GIT" in files
    for name in ("API_KEY", "SESSION", "TLS", "LITELLM_MASTER_KEY", "DATABASE_URL", "STRIPE_LIVE"):
        assert name not in files, name
    for text in (out, err, files, message):
        for secret in SECRETS[:1] + SECRETS[2:]:
            assert secret not in text, (secret, text[:3000])
    assert "looks like a secret" in out  # reported: the PR body's "Reported, not written" list
    code, doc, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "-o", "json")
    assert code == 1
    for secret in SECRETS:
        assert secret not in doc
    drifts = {d["path"]: d for d in json.loads(doc)["drifts"] if d["name"] in (CM_NAME, "litellm")}
    for path in ("data.DB_PASSWORD", "data.API_KEY", "data.SESSION", "data.TLS", "data.STRIPE_LIVE",
                 "data.LITELLM_MASTER_KEY", "data.DATABASE_URL"):
        assert drifts[path]["action"] == "report" and drifts[path]["detail"] == "looks like a secret (value not shown)"
        assert drifts[path]["live"] == "‹redacted›"
    assert drifts["data.key3"]["live"] == "v3" and drifts["data.key3"]["action"] == "write"
    assert drifts["data"]["live"] == {"LOG_LEVEL": "debug"}  # the whole added map, judged key by key
    code, text, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live))
    assert code == 1 and "data.DB_PASSWORD" in text, text
    for secret in SECRETS[:1] + SECRETS[2:]:  # git's own value shows only as a context line of the file diff
        assert secret not in text


def test_secret_values_never_reach_webhooks(asgard_repo: Path, tmp_path: Path) -> None:
    import httpx
    from tests.fakes.webhook import Receiver

    from syncer.gather.collect import detect_live
    from syncer.gather.live import SnapshotSource
    from syncer.writeback.notify import Notifier
    from syncer.writeback.deliver import load_installation

    _with_secret_config(asgard_repo)
    loaded = load_installation(asgard_repo, "asgard")
    result = detect_live(loaded.config, loaded.manifests, SnapshotSource([_secret_live(tmp_path)], "ai"), NOW)
    receiver = Receiver()
    try:
        with httpx.Client() as client:
            hooks = Notifier([f"{receiver.url}/hook", f"slack+{receiver.url}/slack"], client)
            assert hooks.notify("pr.opened", {"installation": "asgard", "drifts": list(result.drifts)}) == []
    finally:
        receiver.stop()
    sent = json.dumps([data for _, data in receiver.posts])
    assert "data.DB_PASSWORD" in sent and "key3" in sent
    for secret in SECRETS:
        assert secret not in sent



def test_slack_text_cannot_be_forged_by_a_value() -> None:
    """Was: ``slack_text`` escaped only ``& < >``: a value with a backtick and a newline left
    its code span and added lines looking like syncer's own, with bare links and mentions."""
    from syncer.writeback.notify import slack_text

    forged = ("x`\n*syncer* asgard: pull request opened\nmerge it: https://evil.example/pr ` evil.com "
              "www.evil.example @channel #general\u2028\x1b[31m")
    drift = {"kind": "ConfigMap", "namespace": "ai", "name": "m`\nx", "path": "data.MODE`\n*ok*", "git": "a",
             "live": forged, "class": "value"}
    text = slack_text("pr.updated", {"installation": "asgard", "summary": "1 drift\n*syncer* fake", "drifts": [drift]})
    lines = text.split("\n")
    assert len(lines) == 3, lines  # the title, the summary, the one drift: nothing added
    assert lines[0] == "*syncer* asgard: pull request updated"
    assert lines[2].startswith("• ConfigMap/ai/m") and lines[2].count("`") == 4  # two code spans, closed
    for gone in ("https://", "www.evil", "evil.com", "@channel", "#general", "\x1b", "\u2028", "<", ">"):
        assert gone not in text, gone
    shown = text.replace("\u2060", "")  # the word joiners are invisible: the value still reads as written
    assert "https://evil.example/pr" in shown and "evil.com" in shown and "⏎" in shown


@pytest.mark.parametrize("key", ["PER_USER_TOKEN", "NEW_TOKEN", "API_TOKENS", "RATE_LIMIT_TOKEN", "rateLimitToken",
                                 "QUOTA_API_TOKEN", "TOTAL_ACCESS_TOKEN", "MAX_API_TOKENS", "DB_PASSWORD", "password", "API_KEY",
                                 "apiKey", "api-key", "GITHUB_TOKEN",
                                 "client_secret", "AWS_SECRET_ACCESS_KEY", "PRIVATE_KEY", "tls.privateKey",
                                 "credentials.json", "redis-passwd", "SSH_KEY", "smtpPassphrase"])
def test_secret_key_hits(key: str) -> None:
    from syncer.secrets.redact import is_secret_key

    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["key3", "CACHE_KEY_PREFIX", "MONKEY", "TOKENIZER", "KEYCLOAK_REALM", "SORT_KEY",
                                 "PRIMARY_KEY", "keyspace", "TOKEN_URL", "SECRET_NAME", "PASSWORD_FILE",
                                 "MAC_ADDRS", "private", "PASSWORD_MIN_LENGTH", "", "-", "[0]"])
def test_secret_key_near_misses(key: str) -> None:
    from syncer.secrets.redact import is_secret_key

    assert not is_secret_key(key)



@pytest.mark.parametrize("key", ["PGPASSWORD", "MYSQL_PWD", "DBPASS", "DB_PASS", "SMTP_PASS", "redisPass", "HTPASSWD",
                                 "secretkey", "apitoken", "GITHUB_APITOKEN", "clientsecret", "AUTHTOKEN",
                                 "dbpassword", "MYSQL_ROOT_PWD"])
def test_secret_key_hits_written_as_one_word(key: str) -> None:
    """Was: only whole words matched, so ``PGPASSWORD`` or ``MYSQL_PWD`` was copied and shown."""
    from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS, is_secret_key, secret_field

    assert is_secret_key(key)
    assert is_secret_key(key, (*DEFAULT_SECRET_PATTERNS, "stripe_.*"))  # secretKeys add to the defaults
    assert secret_field("ConfigMap", f"data.{key}")


@pytest.mark.parametrize("key", ["BYPASS_CACHE", "BYPASS", "COMPASS_HEADING", "TOKENIZER", "TOKENIZER_PATH",
                                 "PASSTHROUGH", "PASS_THROUGH", "SECRETARY_NAME", "SECRETARY", "PWD", "OLDPWD",
                                 "PGPASSWORD_FILE", "APITOKEN_URL", "HTPASSWD_PATH", "PASSWORD_MIN_LENGTH",
                                 "MAX_TOKENS", "MAX_NEW_TOKENS", "TOKENS_PER_MINUTE", "maxTokens", "TOKEN_LIMIT",
                                 "NUM_CTX_TOKENS", "RATE_LIMIT_TOKENS"])
def test_secret_key_near_misses_of_one_word_rules(key: str) -> None:
    """Decided: a word *ending* in a secret's name is one; a word starting with it
    (``TOKENIZER``, ``SECRETARY``, ``PASSTHROUGH``) is not; ``pass`` counts only ending the
    last word and not in ``bypass``/``compass``; ``PWD`` alone is a working directory; a last
    word saying what the key is about (``_FILE``, ``_URL``, ``_PATH``) wins as before."""
    from syncer.secrets.redact import is_secret_key

    assert not is_secret_key(key)


def test_urls_with_an_empty_user_or_a_slash_in_the_password_are_secret() -> None:
    """Was: ``secret_value`` wanted a user name and no ``/`` in the password, so
    ``redis://:hunter2@redis:6379/0`` and ``postgres://app:p/w@db/x`` were copied and shown."""
    from syncer.secrets.redact import secret_value

    for url in ("redis://:hunter2@redis:6379/0", "postgres://app:p/w@db/x", "amqp://:p%2Fw@mq",
                "DATABASE_URL=postgres://app:p/w/x@db:5432/x?sslmode=require"):
        assert secret_value(url) == "a URL with a password", url
    for plain in ("https://host:8080/x@y", "http://example.com:8080/users/@me", "redis://redis:6379/0",
                  "https://user@host/x", "mailto:ops@example.invalid", "see http://h:8080/ and ops@example.invalid"):
        assert secret_value(plain) is None, plain

def test_object_missing_live_renders_in_json(tmp_path: Path) -> None:
    # A whole object (empty path) is not a key: the secret check must not trip over it.
    repo = make_repo(tmp_path)
    items = [i for i in example_items() if i["kind"] != "Endpoints" or i["metadata"]["name"] != "mac-ollama"]
    code, doc, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(live_file(tmp_path, items)),
                         "-o", "json")
    assert code == 1, err
    gone = [d for d in json.loads(doc)["drifts"] if d["kind"] == "Endpoints" and d["name"] == "mac-ollama"]
    assert [d["path"] for d in gone] == [""] and gone[0]["live"] is None, gone


def test_secret_value_shapes_and_near_misses() -> None:
    from syncer.secrets.redact import secret_value

    assert secret_value(PEM) == "a PEM private key"
    assert secret_value(JWT) == "a JWT"
    assert secret_value("postgres://app:pw@db:5432/x") == "a URL with a password"
    assert secret_value("ghp_" + "a" * 36) == "an access token"
    assert secret_value({"nested": ["x", JWT]}) == "a JWT"
    for plain in ("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "http://db:5432/x",
                  "https://user@host/x", "eyJ-not-a-token", "192.168.68.75 100.115.97.90", 42, None):
        assert secret_value(plain) is None, plain


# -- 4. values made safe per output ---------------------------------------------------

EVIL = "192.168.68.75\n\nSigned-off-by: Mallory <m@evil.example>\x00\x1b[2J\x1b[31mred"


def test_newlines_nul_and_escapes_in_a_value_cannot_forge_the_commit_message(asgard_repo: Path,
                                                                               tmp_path: Path) -> None:
    """Was: a NUL made git refuse the message (nothing committed for any object); newlines
    forged paragraphs and trailers; ANSI escapes reached the terminal."""
    items = example_items()
    edit_cm(items)["data"]["MAC_ADDRS"] = EVIL
    live = live_file(tmp_path, items)
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "--mode", "commit")
    assert code == 0, err
    assert "\x1b" not in out and "\x00" not in out
    git(asgard_repo, "fetch", "-q", "origin")
    message = git(asgard_repo, "log", "-1", "--format=%B", "origin/main")
    assert "\x00" not in message and "\x1b" not in message
    assert not any(ln.startswith("Signed-off-by") for ln in message.splitlines())
    trailers = git(asgard_repo, "log", "-1", "--format=%(trailers:only)", "origin/main")
    assert [t.split(":")[0] for t in trailers.splitlines() if t] == ["Syncer-Installation", "Syncer-Drift-Hash"]
    assert "Signed-off-by: Mallory" in message  # still shown, escaped, inside its own line
    # the exact value (NUL included) is in the file, as YAML escapes
    from syncer.sources.manifests import parse_documents

    docs = parse_documents(git(asgard_repo, "show", "origin/main:hosts/asgard/ollama-endpoint-manager.yaml"), "f")
    assert next(d for d in docs if d and d["kind"] == "ConfigMap")["data"]["MAC_ADDRS"] == EVIL
    code, text, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live))
    assert code == 1, text
    assert "\x1b" not in text and "\x00" not in text


def test_pr_body_cells_are_inert_markdown(tmp_path: Path) -> None:
    """Was: a backtick closed the code span, ``\\|`` split the cell, and the manager name and
    details went in raw (mentions, links, HTML)."""
    from syncer.model import Action, Direction, Drift, DriftClass, ObjectRef, Result
    from syncer.writeback.report import pr_body

    ref = ObjectRef("v1", "ConfigMap", "ai", CM_NAME)
    written = Drift(ref, "hosts/asgard/x.yaml", ("data", "A"), "old", "x` | <img src=x onerror=alert(1)> \\| @org/team",
                    Direction.CLUSTER, DriftClass.VALUE, Action.WRITE, manager="evil|@admin [click](https://evil.example)",
                    changed_at="2026-08-20T09:14:00Z", detail="d")
    reported = Drift(ref, "hosts/asgard/x.yaml", ("data", "B"), "a", "b", Direction.CONFLICT, DriftClass.VALUE,
                     Action.REPORT, detail="see #1 and www.evil.example `x` <script>", reason="both moved")
    body = pr_body(Result("asgard", (written, reported)), [written], "syncer diff asgard")
    rows = [ln for ln in body.splitlines() if ln.startswith("| ConfigMap")]
    assert len(rows) == 1
    cells = rows[0].replace("\\|", "").split("|")[1:-1]  # GFM splits at every pipe not escaped
    assert len(cells) == 10
    for bad in ("<img", "<script", "@org", "@admin", "see #1", "www.evil", "https://", "](", "`x`"):
        assert bad not in body, bad
    assert "@\u2060org" in body and "&#60;img" in body


def test_pr_body_with_10000_added_keys_is_built_in_linear_time() -> None:
    from syncer.model import Action, Direction, Drift, DriftClass, ObjectRef, Result
    from syncer.writeback.report import commit_message, pr_body, pr_fingerprint

    ref = ObjectRef("v1", "ConfigMap", "ai", CM_NAME)
    drifts = tuple(Drift(ref, "f.yaml", ("data", f"K{i}"), None, f"v{i}", Direction.CLUSTER, DriftClass.ADDED,
                         Action.WRITE if i % 2 else Action.REPORT, detail=f"added: v{i}") for i in range(10_000))
    written = [d for d in drifts if d.action is Action.WRITE]
    start = time.monotonic()
    body = pr_body(Result("asgard", drifts), written, "syncer diff")
    pr_fingerprint(Result("asgard", drifts), written, "t", ["syncer"])
    commit_message("asgard", written)
    assert time.monotonic() - start < 20  # was quadratic (a list scan per drift): 127 s at 8,000 keys
    assert body.count("\n| ConfigMap") == 5000


# -- 3. linear time in added keys ------------------------------------------------------

_ADD_CASES = [
    "data:\n  A: '1'\n",
    "data:\n  A: '1'\n# trailing comment\n",
    "data: {A: '1'}\n",
    "data:\r\n  A: '1'\r\n",
    "data:\n  A: |\n    x\n\n",
    "data:\n  A: '1'",
    "meta: 1\ndata:\n    A: '1'\nafter: 2\n",
]
_ADD_ITEMS = [("B", "2"), ("C", "multi\nline\n"), ("D", "keep\n\n"), ("E", "yes"), ("F", {"x": [1, 2]}), ("G", "")]


@pytest.mark.parametrize("text", _ADD_CASES)
def test_add_keys_in_one_edit_reads_back_like_one_by_one(text: str) -> None:
    from syncer.yamledit import YamlFile

    one = YamlFile.parse(text)
    for key, value in _ADD_ITEMS:
        one.add_key(0, ("data",), key, value)
    many = YamlFile.parse(text)
    many.add_keys(0, ("data",), list(_ADD_ITEMS))
    assert many.documents == one.documents
    assert YamlFile.parse(many.render()).documents[0]["data"] == {"A": YamlFile.parse(text).documents[0]["data"]["A"],
                                                                  **dict(_ADD_ITEMS)}


def test_10000_keys_added_live_are_planned_in_one_pass(tmp_path: Path) -> None:
    """Was: 2,000 added keys took 5.5 s and 8,000 took 127 s (``add_key`` walked the document per key)."""
    from syncer.gather.collect import detect_live
    from syncer.gather.live import SnapshotSource
    from syncer.writeback.deliver import load_installation
    from syncer.writeback.plan import plan_changes

    repo = make_repo(tmp_path)
    items = example_items()
    edit_cm(items)["data"].update({f"ADDED_{i}": f"value {i}" for i in range(10_000)})
    loaded = load_installation(repo, "asgard")
    start = time.monotonic()
    result = detect_live(loaded.config, loaded.manifests, SnapshotSource([live_file(tmp_path, items)], "ai"), NOW)
    changes = plan_changes(repo, "asgard", result.writable(), loaded.manifests.objects)
    assert time.monotonic() - start < 60  # a hang guard only: the measurement is in bench/RESULTS.md
    [change] = [c for c in changes if c.file.endswith("ollama-endpoint-manager.yaml")]
    assert change.new.count("\n  ADDED_") == 10_000


def test_secret_shapes_scan_hostile_megabytes_in_linear_time() -> None:
    """A first version of these patterns took 317 s on 'eyJ-' * 262144 (backtracking)."""
    from syncer.secrets.escape import markdown
    from syncer.secrets.redact import secret_value

    start = time.monotonic()
    for value in ("x" * (1 << 20), "eyJ-" * (1 << 18), "xoxa-" * (1 << 18), "://" + "a" * (1 << 20) + ":",
                  ("-----BEGIN " + "A " * 10) * (1 << 14), "@#`|" * (1 << 18)):
        secret_value(value)
        markdown(value, 300)
    assert time.monotonic() - start < 30  # a hang guard: each takes well under a second


# -- 5. total deadlines and size limits on HTTP; a bounded status listener -------------


class RawServer:
    """A loopback TCP server running ``handler(conn)`` per connection: for misbehaving peers."""

    def __init__(self, handler: Any) -> None:
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()

        def loop() -> None:
            while not self.stop.is_set():
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    return
                threading.Thread(target=self._run, args=(handler, conn), daemon=True).start()

        threading.Thread(target=loop, daemon=True).start()

    def _run(self, handler: Any, conn: Any) -> None:
        try:
            handler(conn, self.stop)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def _trickle(conn: Any, stop: Any) -> None:
    """Headers that never end, one byte at a time: every socket read succeeds."""
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    while not stop.wait(0.2):
        conn.sendall(b"X")


def _endless(conn: Any, stop: Any) -> None:
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[")
    chunk = b'"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",' * 2000
    while not stop.is_set():
        conn.sendall(chunk)


def test_forge_call_against_a_trickling_server_ends_within_its_budget() -> None:
    """Was: timeouts were per socket read; one byte every 2 s held a call past 150 s (budget 60 s)."""
    import threading

    import httpx

    from syncer.errors import ForgeError
    from syncer.forges._http import ForgeHttp

    server = RawServer(_trickle)
    outcome: list[Any] = []
    try:
        with httpx.Client() as client:
            forge = ForgeHttp(client, forge="github", api_url=server.url, repo="o/r", token="t0k3n",
                              timeout=1.0, budget=3.0, sleep=lambda s: None)

            def call() -> None:
                try:
                    forge.request("GET", "/repos/o/r/pulls")
                except ForgeError as exc:
                    outcome.append(exc)

            start = time.monotonic()
            worker = threading.Thread(target=call, daemon=True)
            worker.start()
            worker.join(20)
            assert not worker.is_alive(), "the forge call is still running after 20 s"
            assert time.monotonic() - start < 8
    finally:
        server.close()
    [exc] = outcome
    assert "did not answer" in exc.message and exc.transient and "t0k3n" not in exc.message


def test_forge_answer_without_end_is_refused_at_the_size_limit() -> None:
    """Was: an endless body was read into memory (RSS grew to 3.5 GB)."""
    import httpx

    from syncer.errors import ForgeError
    from syncer.forges._http import ForgeHttp

    server = RawServer(_endless)
    try:
        with httpx.Client() as client:
            forge = ForgeHttp(client, forge="gitea", api_url=server.url, repo="o/r", token="tok-123", timeout=30,
                              budget=30)
            forge.max_response = 4 * 1024 * 1024
            with pytest.raises(ForgeError, match="answer larger than 4194304 bytes"):
                forge.request("GET", "/repos/o/r/pulls")
    finally:
        server.close()


@pytest.mark.parametrize("handler", [_trickle, _endless])
def test_webhooks_stop_talking_to_a_hostile_receiver_at_the_deadline(handler: Any) -> None:
    """Was: ``notify`` returned at its deadline but its thread kept reading (forever, or
    until memory ran out)."""
    import threading

    import httpx

    from syncer.writeback.notify import Notifier

    server = RawServer(handler)
    try:
        with httpx.Client() as client:
            failures = Notifier([f"{server.url}/hook"], client, timeout=1.0).notify(
                "pr.closed", {"installation": "asgard", "summary": "s"})
            assert len(failures) == 1
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and any(t.name == "syncer-webhook" for t in threading.enumerate()):
                time.sleep(0.05)
            assert not any(t.name == "syncer-webhook" for t in threading.enumerate())
    finally:
        server.close()


def test_status_listener_closes_idle_connections_and_bounds_its_workers() -> None:
    """Was: no idle timeout: 254 idle connections made /healthz time out ("Too many open files")."""
    import socket

    import httpx

    from syncer.sidecar import server as srv
    from syncer.sidecar.metrics import Metrics

    class Cache:
        api_ok_at, api_error = time.time(), None

    health = srv.Health(Cache(), tick=3600.0, resync=60.0)  # type: ignore[arg-type]
    deadline = 1.0  # the server's bound, given (5 s by default): the test waits it out once
    status = srv.StatusServer("127.0.0.1", 0, health, Metrics("asgard"), max_workers=4,
                              request_deadline=deadline).start()
    idle: list[socket.socket] = []
    try:
        for _ in range(40):  # ten times the workers, all idle
            idle.append(socket.create_connection(("127.0.0.1", status.port)))
        start = time.monotonic()
        while True:  # probes get an answer at once (503 busy) and, once the idle ones time out, 200
            try:
                code = httpx.get(f"http://127.0.0.1:{status.port}/healthz", timeout=2).status_code
            except httpx.HTTPError:
                code = 0
            if code == 200:
                break
            # 503: busy; 0: a probe that timed out on a machine under load (never a hang: bounded below)
            assert code in (0, 503) and time.monotonic() - start < deadline + 15
            time.sleep(0.05)
        assert time.monotonic() - start < deadline + 15
        for sock in idle:  # every idle connection was closed by the server (recv would time out)
            sock.settimeout(deadline + 2)
            while sock.recv(100):
                pass
    finally:
        for sock in idle:
            sock.close()
        status.stop()


def test_status_listener_gives_each_request_a_total_deadline_from_accept() -> None:
    """Was: the 5 s timeout was per read, so 16 connections each trickling one header byte
    every few seconds held every worker: /healthz answered `503 busy` for as long as they
    kept trickling (51 s measured; the chart's liveness probe restarts the pod)."""
    import socket
    import threading

    import httpx

    from syncer.sidecar import server as srv
    from syncer.sidecar.metrics import Metrics

    class Cache:
        api_ok_at, api_error = time.time(), None

    health = srv.Health(Cache(), tick=3600.0, resync=60.0)  # type: ignore[arg-type]
    deadline = 1.5  # the server's bound, given (5 s by default); the tricklers send 5 bytes in it
    status = srv.StatusServer("127.0.0.1", 0, health, Metrics("asgard"), request_deadline=deadline).start()
    slow = [socket.create_connection(("127.0.0.1", status.port)) for _ in range(srv.MAX_WORKERS)]
    accepted = time.monotonic()
    closed_at: dict[int, float] = {}
    stop = threading.Event()

    def trickle() -> None:  # a header byte each every deadline/5: well inside any per-read timeout
        payload = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
        for i in range(len(payload)):
            for n, sock in enumerate(slow):
                if n in closed_at:
                    continue
                try:
                    sock.sendall(payload[i:i + 1])
                except OSError:
                    closed_at[n] = time.monotonic()
            if stop.wait(deadline / 5) or len(closed_at) == len(slow):
                return

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        time.sleep(deadline / 5)  # every worker now holds a trickler
        while True:
            try:
                code = httpx.get(f"http://127.0.0.1:{status.port}/healthz", timeout=2).status_code
            except httpx.HTTPError:
                code = 0
            if code == 200:
                break
            assert code in (0, 503), code
            assert time.monotonic() - accepted < deadline + 6, "slow senders still hold every worker"
            time.sleep(0.05)
        for n, sock in enumerate(slow):  # each trickler was cut off, none was answered
            sock.settimeout(deadline + 6)
            data = b""
            try:
                while chunk := sock.recv(4096):
                    data += chunk
            except ConnectionResetError:
                pass
            closed_at.setdefault(n, time.monotonic())
            assert b"200 OK" not in data
        assert max(closed_at.values()) - accepted < deadline + 6
    finally:
        stop.set()
        sender.join(5)
        for sock in slow:
            sock.close()
        status.stop()


# -- 6. config and manifests only from inside the repository ----------------------------

SA_TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJl"


def test_config_symlinked_out_of_the_repository_is_not_read_nor_echoed(tmp_path: Path) -> None:
    """Was: syncer.yaml may be a symlink out of the repository, and the error echoed the
    target's content (a service-account token)."""
    from syncer.config import CONFIG_NAME

    repo = make_repo(tmp_path)
    token = tmp_path / "token"
    token.write_text(SA_TOKEN)
    conf = repo / "hosts" / "asgard" / CONFIG_NAME
    conf.unlink()
    conf.symlink_to(token)
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and out == ""
    assert "symlink points outside the repository; not read" in err
    assert SA_TOKEN[:12] not in err


def test_config_errors_quote_only_a_short_redacted_excerpt(tmp_path: Path) -> None:
    from syncer.config import CONFIG_NAME

    repo = make_repo(tmp_path)
    conf = repo / "hosts" / "asgard" / CONFIG_NAME
    conf.write_text(SA_TOKEN + "\n")  # a scalar, not a mapping
    code, _, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and "expected a mapping, got str ‹redacted›" in err and SA_TOKEN[:12] not in err
    conf.write_text("namespace: " + "x" * 5000 + "\ntrack: 7\n")
    code, _, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and len(err) < 300, err


def test_manifests_under_a_symlinked_directory_or_special_files_are_not_read(tmp_path: Path) -> None:
    import os

    from syncer.errors import ConfigError

    repo = make_repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen, namespace: ai}\n")
    (repo / "hosts" / "asgard" / "linked").symlink_to(outside, target_is_directory=True)
    os.mkfifo(repo / "hosts" / "asgard" / "fifo.yaml")
    start = time.monotonic()
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert time.monotonic() - start < 30  # a FIFO would block a plain read forever
    assert code == 1 and "stolen" not in out  # neither is a manifest of the repository
    assert "data.MAC_ADDRS" in out
    from syncer.repofile import read_inside

    with pytest.raises(ConfigError, match="fifo.yaml: not a regular file; not read"):
        read_inside(repo / "hosts" / "asgard" / "fifo.yaml", "fifo.yaml", repo)
    with pytest.raises(ConfigError, match="linked/stolen.yaml: symlink points outside the repository"):
        read_inside(repo / "hosts" / "asgard" / "linked" / "stolen.yaml", "linked/stolen.yaml", repo)


# -- the smaller items -------------------------------------------------------------------


def test_malformed_kubeconfig_is_one_clear_line(tmp_path: Path) -> None:
    """Was: a traceback (TypeError) for ``clusters: 5``."""
    repo = make_repo(tmp_path)
    kc = tmp_path / "kubeconfig"
    kc.write_text("clusters: 5\n")
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--kubeconfig", str(kc))
    assert (code, out) == (2, "")
    assert err.startswith(f"syncer: error: kubeconfig {kc}: malformed") and err.count("\n") == 1


def test_kubeconfig_server_userinfo_is_never_printed(tmp_path: Path) -> None:
    """Was: ``cannot reach the API server at https://admin:s3cretpw@...``."""
    import socket

    repo = make_repo(tmp_path)
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://admin:s3cretpw@127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: abc}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--kubeconfig", str(kc))
    assert code == 2
    assert "s3cretpw" not in out + err and f"https://admin:***@127.0.0.1:{port}" in err


def test_alias_bomb_added_live_costs_only_its_object_and_exits_2(tmp_path: Path) -> None:
    """Was: the bomb's values (added live, so never walked node by node) were expanded when
    described: MemoryError, a traceback and exit 1."""
    repo = make_repo(tmp_path)
    (repo / "hosts" / "asgard" / "bomb.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb, namespace: ai}\ndata:\n  x: '1'\n")
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    levels += [f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdef", "bcdefg")]
    live = tmp_path / "live.yaml"
    live.write_text(EXAMPLE_LIVE.read_text() + "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: bomb, namespace: ai}\n"
                    "  data:\n" + "".join(f"    {line}\n" for line in levels) + "    h: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n")
    start = time.monotonic()
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(live))
    assert time.monotonic() - start < 30
    assert code == 2, err
    assert "error: ConfigMap/ai/bomb: live object: more than 500000 values (an alias bomb?); not compared" in out
    assert "data.MAC_ADDRS" in out


def test_memory_error_anywhere_is_exit_2_and_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from syncer import cli

    def explode(*_: Any) -> int:
        raise MemoryError

    monkeypatch.setitem(cli.COMMANDS, "diff", explode)
    code, out, err = run("diff", "asgard")
    assert (code, out) == (2, "")
    assert err == "syncer: error: input too large or too deeply nested to process (MemoryError)\n"


def test_secret_looking_annotation_and_label_names_of_any_kind_are_judged_like_configmap_keys() -> None:
    """Was: only ConfigMap data keys were judged by name, so a Deployment's ``vault-token``
    annotation was copied into git while the report showed it redacted."""
    from syncer.detect.diff import FieldDiff
    from syncer.detect.secretpolicy import judge_secrets
    from syncer.model import DriftClass
    from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS as PATTERNS

    changed = FieldDiff(("spec", "template", "metadata", "annotations", "vault-token"), "old", "s3cr3t",
                        DriftClass.VALUE)
    plain = FieldDiff(("metadata", "annotations", "team"), "a", "b", DriftClass.VALUE)
    added = FieldDiff(("metadata", "labels"), None, {"api-key": "k", "tier": "web"}, DriftClass.ADDED)
    field = FieldDiff(("spec", "template", "spec", "automountServiceAccountToken"), True, False, DriftClass.VALUE)
    judged = judge_secrets("Deployment", [changed, plain, added, field], PATTERNS)
    why = {(fd.path, str(fd.live)): w for fd, w in judged}
    assert why[(changed.path, "s3cr3t")] == "key name 'vault-token'"
    assert why[(plain.path, "b")] is None
    assert why[(("metadata", "labels", "api-key"), "k")] == "key name 'api-key'"  # split out of the added map
    assert why[(("metadata", "labels"), "{'tier': 'web'}")] is None  # the rest stays one difference
    assert why[(field.path, "False")] is None  # a field of the API, not a name people chose


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ai
spec:
  template:
    spec:
      automountServiceAccountToken: false
      containers:
      - name: web
        image: nginx
        env:
        - name: DB_PASSWORD
          value: hunter2-GIT
        - name: MODE
          value: a
"""


def _edited_deployment() -> dict[str, Any]:
    """``web`` as the API server returns it after a ``kubectl edit`` of three fields."""
    env = {'k:{"name":"DB_PASSWORD"}': {".": {}, "f:name": {}, "f:value": {}},
           'k:{"name":"MODE"}': {".": {}, "f:name": {}, "f:value": {}}}
    applied = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"web"}': {
        ".": {}, "f:name": {}, "f:image": {}}}}}}}
    edited = {"f:spec": {"f:template": {"f:spec": {"f:automountServiceAccountToken": {}, "f:containers": {
        'k:{"name":"web"}': {"f:env": {".": {}, **env}}}}}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "web", "namespace": "ai", "managedFields": [
            {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2026-08-15T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": applied},
            {"manager": "kubectl-edit", "operation": "Update", "time": "2026-08-30T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": edited}]},
        "spec": {"template": {"spec": {"automountServiceAccountToken": True, "containers": [{
            "name": "web", "image": "nginx",
            "env": [{"name": "DB_PASSWORD", "value": "hunter2-LIVE"}, {"name": "MODE", "value": "b"}]}]}}}}


def _with_web_deployment(repo: Path, tmp_path: Path) -> None:
    """``web`` (DEPLOYMENT) in asgard, tracked ``writeback``, committed on 2026-08-01 (before
    the live edits of ``_edited_deployment``) and pushed."""
    import subprocess

    host = repo / "hosts" / "asgard"
    (host / "web.yaml").write_text(DEPLOYMENT)
    conf = host / "syncer.conf"
    conf.write_text(conf.read_text().replace("  Deployment: report\n", "  Deployment: writeback\n"))
    git(repo, "add", ".")
    when = {"GIT_COMMITTER_DATE": "2026-08-01T00:00:00Z", "GIT_AUTHOR_DATE": "2026-08-01T00:00:00Z"}
    subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", "commit", "-qm", "web"],
                   cwd=repo, env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(tmp_path), **when}, check=True)
    git(repo, "push", "-q", "origin", "main")


def test_env_values_named_like_secrets_are_never_copied_and_api_fields_are_shown(asgard_repo: Path,
                                                                                 tmp_path: Path) -> None:
    """Was: a Deployment's ``DB_PASSWORD`` env value edited live was shown in cleartext and
    (cluster moved) copied into git, while ``automountServiceAccountToken`` -- a boolean of
    the API -- was shown as ``‹redacted›`` in ``-o json``, webhooks and the PR body, because
    the outputs judged secrets a second time, by any word of the dotted path."""
    _with_web_deployment(asgard_repo, tmp_path)
    live = live_file(tmp_path, [*example_items(), _edited_deployment()])

    code, doc, err = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "-o", "json")
    assert code == 1, err
    drifts = {d["path"]: d for d in json.loads(doc)["drifts"] if d["name"] == "web"}
    secret = drifts["spec.template.spec.containers[0].env[0].value"]
    assert (secret["git"], secret["live"], secret["action"]) == ("‹redacted›", "‹redacted›", "report")
    assert "item named 'DB_PASSWORD'" in secret["reason"]
    mode = drifts["spec.template.spec.containers[0].env[1].value"]
    assert (mode["git"], mode["live"], mode["action"], mode["direction"]) == ("a", "b", "write", "cluster")
    token = drifts["spec.template.spec.automountServiceAccountToken"]
    assert (token["git"], token["live"], token["action"]) == (False, True, "write")

    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "--mode", "pr")
    assert code == 0, err
    git(asgard_repo, "fetch", "-q", "origin")
    written = git(asgard_repo, "show", "origin/syncer/asgard:hosts/asgard/web.yaml")
    message = git(asgard_repo, "log", "-1", "--format=%B", "origin/syncer/asgard")
    assert "value: hunter2-GIT" in written and "value: b" in written
    assert "automountServiceAccountToken: true" in written
    assert "automountServiceAccountToken: false -> true" in message
    for text in (doc, out, err, written, message):
        assert "hunter2-LIVE" not in text
    assert "automountServiceAccountToken: false → true" in out  # the summary
    assert "automountServiceAccountToken | <code>false</code> | <code>true</code> |" in out  # the PR body


@pytest.mark.parametrize(("kind", "path", "hidden"), [
    ("ConfigMap", "data.API_TOKEN", True),
    ("ConfigMap", "binaryData.tls.key.password", True),
    ("Deployment", "metadata.annotations.vault.io/token", True),
    ("Deployment", "spec.template.metadata.labels.api-key", True),
    ("Deployment", "spec.template.spec.automountServiceAccountToken", False),
    ("ServiceAccount", "automountServiceAccountToken", False),
    ("ConfigMap", "metadata.annotations.team", False),
    ("MyResource", "data.API_TOKEN", False),  # ``data`` is a free-form map only in a ConfigMap
])
def test_outputs_hide_by_the_same_key_rule_as_detection(kind: str, path: str, hidden: bool) -> None:
    from syncer.secrets.redact import secret_field

    assert secret_field(kind, path) is hidden


def _deployment_with_a_sidecar_added_live() -> dict[str, Any]:
    """``web`` after a ``kubectl edit`` that also added a second container whose env holds a
    password (and changed ``MODE``, so there is something to commit)."""
    obj = _edited_deployment()
    spec = obj["spec"]["template"]["spec"]
    spec["containers"][0]["env"][0]["value"] = "hunter2-GIT"
    spec["containers"].append({"name": "sidecar", "image": "busybox",
                               "env": [{"name": "DB_PASSWORD", "value": "hunter2-SIDECAR"}]})
    edited = obj["metadata"]["managedFields"][1]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    edited['k:{"name":"sidecar"}'] = {".": {}, "f:name": {}, "f:image": {}, "f:env": {
        ".": {}, 'k:{"name":"DB_PASSWORD"}': {".": {}, "f:name": {}, "f:value": {}}}}
    return obj


def test_a_secret_nested_in_a_whole_item_added_live_is_never_copied_nor_shown(asgard_repo: Path,
                                                                               tmp_path: Path) -> None:
    """Was: only a ``{name, value}`` item (or a list of them) at the top of a difference was
    judged, so a second container added live by ``kubectl edit`` with an env var
    ``DB_PASSWORD`` was one ``write`` drift ``containers[1]``: the password went into the file
    and showed in JSON, text, the PR body and the commit message."""
    _with_web_deployment(asgard_repo, tmp_path)
    live = live_file(tmp_path, [*example_items(), _deployment_with_a_sidecar_added_live()])

    code, doc, err = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "-o", "json")
    assert code == 1, err
    drifts = {d["path"]: d for d in json.loads(doc)["drifts"] if d["name"] == "web"}
    added = drifts["spec.template.spec.containers[1]"]
    assert (added["git"], added["live"], added["action"]) == (None, "‹redacted›", "report")
    assert "item named 'DB_PASSWORD'" in added["reason"]
    assert drifts["spec.template.spec.containers[0].env[1].value"]["action"] == "write"  # the rest syncs
    code, text, err = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live))
    assert code == 1, err

    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "--mode", "pr")
    assert code == 0, err
    git(asgard_repo, "fetch", "-q", "origin")
    written = git(asgard_repo, "show", "origin/syncer/asgard:hosts/asgard/web.yaml")
    message = git(asgard_repo, "log", "-1", "--format=%B", "origin/syncer/asgard")
    assert "value: b" in written and "sidecar" not in written
    for shown in (doc, text, out, err, written, message):
        assert "hunter2-SIDECAR" not in shown


@pytest.mark.parametrize(("value", "why"), [
    ({"name": "sidecar", "env": [{"name": "API_TOKEN", "value": "t"}]}, "item named 'API_TOKEN'"),
    ([{"name": "a", "spec": {"params": [{"name": "dbPassword", "value": "p"}]}}], "item named 'dbPassword'"),
    ({"metadata": {"annotations": {"vault.io/token": "t", "team": "a"}}}, "key name 'vault.io/token'"),
    ({"template": {"metadata": {"labels": {"api-key": "k"}}}}, "key name 'api-key'"),
    ({"kind": "ConfigMap", "data": {"SECRET_KEY": "s"}}, "key name 'SECRET_KEY'"),
    ({"name": "sidecar", "env": [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db"}}}]}, None),
    ({"name": "sidecar", "env": [{"name": "MODE", "value": "a"}], "automountServiceAccountToken": True}, None),
    ({"kind": "Other", "data": {"SECRET_KEY": "s"}}, None),  # ``data`` is free-form only in a ConfigMap
])
def test_secrets_are_looked_for_at_any_depth_of_a_whole_value(value: Any, why: str | None) -> None:
    from syncer.detect.diff import FieldDiff
    from syncer.detect.secretpolicy import judge_secrets
    from syncer.model import DriftClass
    from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS as PATTERNS

    fd = FieldDiff(("spec", "items", 1), None, value, DriftClass.ADDED)
    assert judge_secrets("Deployment", [fd], PATTERNS) == [(fd, why)]
    removed = FieldDiff(("spec", "items", 1), value, None, DriftClass.REMOVED)
    assert judge_secrets("Deployment", [removed], PATTERNS) == [(removed, why)]


def test_a_deeply_nested_object_from_the_api_costs_only_itself() -> None:
    """Was: ``KubeClient.call`` parsed answers with a bare ``json.loads``: an object nested
    20,000 levels deep (a custom resource keeps unknown fields as written) raised
    ``RecursionError`` out of the live reads, and the CLI exited 2 for the whole run. Now
    that answer is one ``KubeError`` naming the object; the others are read as usual."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from syncer.kube import Connection, KubeClient, KubeError
    from syncer.gather.live import KubeSource
    from syncer.model import ObjectRef

    def configmap(name: str, data: str) -> str:
        return ('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"ai"},"data":%s}'
                % (name, data))

    answers = {
        "/api/v1": json.dumps({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": "configmaps", "namespaced": True, "kind": "ConfigMap", "verbs": ["get"]}]}),
        "/api/v1/namespaces/ai/configmaps/plain": configmap("plain", '{"k":"v"}'),
        "/api/v1/namespaces/ai/configmaps/deep": configmap("deep", '{"k":"v","x":' + "[" * 20000 + "]" * 20000 + "}"),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server interface
            body = answers.get(self.path.partition("?")[0])
            self.send_response(200 if body else 404)
            raw = (body or '{"kind":"Status","code":404}').encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = KubeClient(Connection(f"http://127.0.0.1:{server.server_address[1]}"))
        source = KubeSource(client, concurrency=2)
        plain, deep = ObjectRef("v1", "ConfigMap", "ai", "plain"), ObjectRef("v1", "ConfigMap", "ai", "deep")
        source.prefetch([plain, deep])
        assert source.get(plain)["data"] == {"k": "v"}  # type: ignore[index]
        with pytest.raises(KubeError) as refused:
            source.get(deep)
        assert refused.value.message == f"get {deep}: JSON nested deeper than 128 levels; not read"
        assert not refused.value.transient
        client.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_an_object_nested_deeper_than_the_limit_is_refused_before_comparing() -> None:
    """An API answer is parsed by json's C decoder alone (no scan first: it cost more than the
    parse); an object nested past ``MAX_JSON_DEPTH`` that parses is refused per object before
    comparing recurses into it."""
    from syncer.bounds import MAX_JSON_DEPTH, InputRejected, check_nodes

    deep: Any = "leaf"
    for _ in range(MAX_JSON_DEPTH + 5):
        deep = [deep]
    with pytest.raises(InputRejected, match=f"live object: nested deeper than {MAX_JSON_DEPTH} levels"):
        check_nodes({"data": deep}, "live object")
    shallow: Any = "leaf"
    for _ in range(MAX_JSON_DEPTH - 2):
        shallow = {"k": shallow}
    check_nodes({"data": shallow}, "live object")  # within the limit: accepted
