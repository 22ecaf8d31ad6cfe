"""Provider credentials from a maintained catalogue (Betterleaks' rules, run on RE2), and docker
registry logins in every shape (issue #33).

Was: syncer knew a dozen providers' token shapes of its own; a DigitalOcean, Shopify, Linear,
Square, Doppler, age or Postman token in a ConfigMap was copied into git. A docker
``config.json`` whose ``auth`` was base64 of non-ASCII or URL-safe text, or that was not quite
JSON (a comment, trailing text), was too.
"""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path

import pytest

from syncer.secrets import rules
from syncer.secrets.masking import excerpt
from syncer.secrets.values import judge

PROVIDERS = {
    "digitalocean-pat": "dop_v1_" + "a1b2c3d4e5f6a7b8" * 4,
    "shopify-access-token": "shpat_" + "a1b2c3d4e5f6a7b8" * 2,
    "linear-api-key": "lin_api_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0",
    "square-access-token": "sq0atp-" + "a1B2c3D4e5F6g7H8i9J0k1",
    "doppler-api-token": "dp.pt." + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2",
    "age-secret-key": "AGE-SECRET-KEY-1" + "Q" * 58,
    "postman-api-token": "PMAK-" + "a1b2c3d4e5f6a7b8c9d0e1f2" + "-" + "a1b2c3d4e5f6a7b8c9d0e1f2a1b2c3d4e5",
}


@pytest.mark.parametrize("rule", sorted(PROVIDERS))
def test_provider_tokens_the_catalogue_knows_are_secret_alone_and_inside_files(rule: str) -> None:
    token = PROVIDERS[rule]
    assert judge(token) == f"value shaped like {rules.rule_hit(token)}" and f"(rule {rule})" in judge(token)
    assert judge(f"app.name=web\nintegration.key={token}\nlog.level=info\n") is not None
    assert token[8:20] not in excerpt(f"error: the server said {token} was refused")  # masked in errors too


def test_the_shipped_catalogue_is_the_trimmed_upstream_one() -> None:
    doc = json.loads((Path(rules.__file__).with_name(rules.DATA)).read_text())
    assert doc["source"].startswith("Betterleaks") and len(doc["rules"]) >= 300
    assert all(set(r) <= {"id", "regex", "keywords", "entropy"} and r["keywords"] for r in doc["rules"])
    assert (Path(rules.__file__).with_name("betterleaks-LICENSE")).read_text().startswith("MIT License")
    upstream = {"rules": [
        {"id": "a", "regex": "a_[0-9]{8}", "keywords": ["a_"], "confidence": "high",
         "filter": 'entropy(finding["secret"]) <= 2.5\n'},
        {"id": "low", "regex": "x", "keywords": ["x"], "confidence": "low"},
        {"id": "skip", "regex": "y", "keywords": ["y"], "confidence": "high", "skipReport": True},
        {"id": "file", "path": "\\.p12$", "confidence": "high"},
    ]}
    assert rules.trim(upstream, "test") == {"source": "test", "rules": [
        {"id": "a", "regex": "a_[0-9]{8}", "keywords": ["a_"], "entropy": 2.5}]}


def test_a_rule_s_entropy_floor_and_keywords_are_applied() -> None:
    cat = rules.Catalogue([rules.Rule("t", r"tok_([A-Za-z0-9]{12})", ("tok_",), 3.0)])
    assert cat.hit("tok_aaaaaaaaaaaa") is None  # entropy 0: a placeholder
    assert cat.hit("x tok_a1B2c3D4e5F6 y") == "t"
    assert cat.hit("TOK_a1B2c3D4e5F6") is None  # the keyword is found case-blind, the regex decides
    assert list(cat.findings("k=tok_a1B2c3D4e5F6;")) == [("t", 6, 18)]
    assert cat.hit("\ud800 tok_a1B2c3D4e5F6") == "t"  # a lone surrogate is no error


def test_the_catalogue_is_safe_to_share_between_threads() -> None:
    cat = rules.catalogue()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                for rule, token in PROVIDERS.items():
                    assert cat.hit(token) == rule
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


DOCKER = {
    "non-ASCII user and password": json.dumps({"auths": {"r.io": {"auth": _b64("röbot:pässwörd".encode())}}}),
    "URL-safe base64": json.dumps({"auths": {"r.io": {"auth": base64.urlsafe_b64encode(b"ro>>bot:pa??ss").decode()}}}),
    "base64 of a token only": json.dumps({"auths": {"r.io": {"auth": _b64(b"ghcr-token-without-colon-123")}}}),
    "identitytoken": json.dumps({"auths": {"r.io": {"auth": "", "identitytoken": "0a1b2c3d4e5f60718293a4b5c6d7e8f9"}}}),
    "registrytoken": json.dumps({"auths": {"r.io": {"registrytoken": "opaque-registry-token-123"}}}),
    ".dockercfg": json.dumps({"https://index.docker.io/v1/": {"auth": _b64("rö:pw".encode()), "email": "a@b.io"}}),
    "with a comment": '{\n  // CI robot\n  "auths": {"r.io": {"auth": "' + _b64("röbot:pw".encode()) + '"}}\n}\n',
    "trailing text": json.dumps({"auths": {"r.io": {"auth": _b64("röbot:pw".encode())}}}) + "\n# end\n",
    "as YAML": "auths:\n  r.io:\n    auth: " + _b64("röbot:pw".encode()) + "\n",
}


@pytest.mark.parametrize("shape", sorted(DOCKER))
def test_docker_registry_logins_in_every_shape_are_secret(shape: str) -> None:
    assert judge(DOCKER[shape]) is not None, shape


@pytest.mark.parametrize("value", [
    '{"auths": {"r.io": {}}}', '{"auths": {"r.io": {"auth": ""}}}', '{"auths": {"r": {"auth": "none"}}}',
    '{"credHelpers": {"gcr.io": "gcloud"}}', '{"credsStore": "desktop"}', '{"auths": {"r.io": {"auth": "${AUTH}"}}}',
    '{"proxies": {"default": {"httpProxy": "http://proxy:3128"}}}',
])
def test_docker_configs_without_a_login_are_no_secret(value: str) -> None:
    assert judge(value) is None, judge(value)
