"""Secrets inside config-file values, judged line by line (issue #30's secrets item).

Was: a ``config.env`` or ``application.properties`` value whose password line was unchanged (git
already held it verbatim) kept the one changed line (``DB_USERNAME``,
``server.tomcat.max-threads``) out of git; an ``nginx.conf`` with ``proxy_pass`` was judged a
secret. Now a changed or new secret-looking line still keeps the value back; an unchanged one
does not; ``*_pass`` directives naming an upstream are no secret. The files are shaped like
public ones: Spring Boot's ``application.properties`` reference keys, the ``.env`` of a
docker-compose app, an nginx reverse-proxy ``nginx.conf`` as the nginx docs write them.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from syncer.cli import main
from syncer.secrets.values import judge, only_unchanged_secret_lines

from tests.conftest import NOW

PROPERTIES = """\
spring.application.name=orders
spring.datasource.url=jdbc:postgresql://orders-db:5432/orders
spring.datasource.username=orders
spring.datasource.password=Xq7!orders-db-pw
spring.jpa.hibernate.ddl-auto=validate
server.port=8080
server.tomcat.max-threads=200
management.endpoints.web.exposure.include=health,info,prometheus
"""
ENV = """\
# docker-compose .env of the app
APP_ENV=production
DB_HOST=postgres
DB_PORT=5432
DB_DATABASE=laravel
DB_USERNAME=laravel
DB_PASSWORD=Zk3_secret_laravel
REDIS_HOST=redis
"""
NGINX = """\
user  nginx;
worker_processes  auto;

events {
    worker_connections  1024;
}

http {
    upstream app {
        server app:3000;
    }
    server {
        listen       80;
        server_name  shop.example.com;
        location / {
            proxy_pass         http://app;
            proxy_set_header   Host $host;
            proxy_set_header   X-Real-IP $remote_addr;
            proxy_read_timeout 30s;
        }
        location /api/ {
            proxy_pass http://api.internal:9000/;
        }
        location ~ \\.php$ {
            fastcgi_pass unix:/run/php/php-fpm.sock;
            include fastcgi_params;
        }
    }
}
"""


def test_unchanged_secret_lines_do_not_hold_back_the_changed_ones() -> None:
    assert judge(PROPERTIES) is not None and judge(ENV) is not None  # each holds a password line
    assert only_unchanged_secret_lines(PROPERTIES, PROPERTIES.replace("max-threads=200", "max-threads=400"))
    assert only_unchanged_secret_lines(ENV, ENV.replace("DB_USERNAME=laravel", "DB_USERNAME=shop"))
    # the secret line itself changed, or a new one: held back
    assert not only_unchanged_secret_lines(PROPERTIES, PROPERTIES.replace("orders-db-pw", "orders-db-pw2"))
    assert not only_unchanged_secret_lines(ENV, ENV + "MAIL_PASSWORD=mail-secret-9\n")
    # a secret that needs its context is never split: a YAML item, a PEM block
    item = "env:\n- name: DB_PASSWORD\n  value: one-pw-123\n- name: MODE\n  value: a\n"
    assert not only_unchanged_secret_lines(item, item.replace("value: a", "value: b"))
    pem = "tls.key: |\n  -----BEGIN RSA PRIVATE KEY-----\n  MIIBOgIBAAJBAKj34GkxFhD90vcN\n  -----END RSA PRIVATE KEY-----\nmode: a\n"
    assert not only_unchanged_secret_lines(pem, pem.replace("mode: a", "mode: b"))
    assert not only_unchanged_secret_lines(pem, pem.replace("MIIBOg", "MIIBOh"))


def test_upstreams_are_no_secrets() -> None:
    assert judge(NGINX) is None
    for line in ("proxy_pass http://backend:8080;", "fastcgi_pass 127.0.0.1:9000;", "uwsgi_pass app;",
                 "grpc_pass grpc://127.0.0.1:9000;", "proxy_pass $upstream;"):
        assert judge(line) is None, line
    for line in ("proxy_pass http://user:s3cr3t@backend:8080;", "SMTP_PASS=hunter2xyz", "DB_PASS=hunter2xyz;",
                 "smtp_pass: hunter2xyz"):
        assert judge(line) is not None, line



def test_a_directive_whose_value_says_nothing_is_no_secret_with_its_semicolon() -> None:
    """An nginx ``server_tokens off;`` (whether nginx names its version in headers; the public saleor
    nginx.conf of tests/data/kustomize-corpus/saleor-nginx has it): the ``;`` ending a directive is not
    part of its value, and ``off`` says nothing; a real value still counts, ``;`` or not."""
    conf = (Path(__file__).parent / "data" / "kustomize-corpus" / "saleor-nginx" / "nginx.conf").read_text()
    assert "   server_tokens off;\n" in conf
    assert judge(conf) is None
    for line in ("server_tokens off;", "server_tokens on;", "auth_token $http_x_token;", "api_token ;"):
        assert judge(line) is None, line
    for line in ("auth_token hunter2xyz;", "password hunter2xyz;", "server_tokens hunter2xyz-123;"):
        assert judge(line) is not None, line


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def _cm(name: str, key: str, text: str) -> dict[str, object]:
    """The live object as the API server has it after a ``kubectl edit`` of ``key``."""
    edited = {"manager": "kubectl-edit", "operation": "Update", "time": "2026-11-30T08:00:00Z",
              "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {f"f:{key}": {}}}}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "shop", "managedFields": [edited]}, "data": {key: text}}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work, bare = tmp_path / "work", tmp_path / "origin.git"
    host = work / "hosts" / "shop"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text("installation: shop\nnamespace: shop\ntrack:\n  ConfigMap: writeback\n")
    docs = []
    for name, key, text in (("orders", "application.properties", PROPERTIES), ("laravel", "config.env", ENV),
                            ("proxy", "nginx.conf", NGINX)):
        block = "".join(f"    {line}\n" if line else "\n" for line in text.splitlines())
        docs.append(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: shop\n"
                    f"data:\n  {key}: |\n{block}")
    (host / "config.yaml").write_text("---\n".join(docs))
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "shop")
    _git(work, "remote", "add", "origin", str(bare))
    _git(work, "push", "-q", "origin", "main")
    return work


def _sync(repo: Path, tmp_path: Path, objects: list[dict[str, object]]) -> tuple[int, str, str]:
    snap = tmp_path / "live.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    out = io.StringIO()
    err = io.StringIO()
    code = main(["sync", "shop", "--repo", str(repo), "--live-file", str(snap), "--mode", "commit"], now=NOW,
                stdout=out, stderr=err)
    assert err.getvalue() == "", err.getvalue()
    shown = _git(tmp_path / "origin.git", "log", "-p", "-1", "main")
    return code, out.getvalue(), shown


def test_the_changed_lines_are_committed_and_the_secret_lines_stay_as_they_were(repo: Path, tmp_path: Path) -> None:
    live = [_cm("orders", "application.properties", PROPERTIES.replace("max-threads=200", "max-threads=400")),
            _cm("laravel", "config.env", ENV.replace("DB_USERNAME=laravel", "DB_USERNAME=shop")),
            _cm("proxy", "nginx.conf", NGINX.replace("proxy_read_timeout 30s", "proxy_read_timeout 90s"))]
    code, out, commit = _sync(repo, tmp_path, live)
    assert code == 0, out
    changed = [ln for ln in commit.splitlines() if ln and ln[0] in "+-" and not ln.startswith(("+++", "---"))]
    timeout = " " * 16 + "proxy_read_timeout"
    assert sorted(changed) == sorted([
        "-    server.tomcat.max-threads=200", "+    server.tomcat.max-threads=400",
        "-    DB_USERNAME=laravel", "+    DB_USERNAME=shop",
        f"-{timeout} 30s;", f"+{timeout} 90s;"]), commit
    assert "orders-db-pw" not in out and "Zk3_secret" not in out, [ln for ln in out.splitlines() if "pw" in ln or "Zk3" in ln]


def test_a_changed_secret_line_still_holds_its_value_back(repo: Path, tmp_path: Path) -> None:
    live = [_cm("orders", "application.properties",
                PROPERTIES.replace("max-threads=200", "max-threads=400").replace("orders-db-pw", "NEW-db-pw-77")),
            _cm("laravel", "config.env", ENV + "MAIL_PASSWORD=NEW-mail-pw-88\n")]
    snap = tmp_path / "live.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": live}))
    out = io.StringIO()
    code = main(["diff", "shop", "--repo", str(repo), "--live-file", str(snap), "-o", "json"], now=NOW, stdout=out,
                stderr=io.StringIO())
    drifts = {d["name"]: d for d in json.loads(out.getvalue())["drifts"]}
    assert code == 1
    for name in ("orders", "laravel"):
        assert drifts[name]["action"] == "report" and "looks like a secret" in drifts[name]["reason"]
    assert "NEW-db-pw-77" not in out.getvalue() and "NEW-mail-pw-88" not in out.getvalue()
