"""A throw-away etcd + kube-apiserver pair on loopback, for the realapi test tier.

Only the standard library is used here, so the helper works before (and
independently of) the Kubernetes client that the tests exercise. The admin
calls below (readiness, namespaces, TokenRequest) are plain HTTPS requests
with the admin bearer token.

Typical use::

    cluster = RealCluster(kube_apiserver="/var/cache/.../kube-apiserver")
    cluster.start()
    try:
        ns = cluster.create_namespace()
        cfg = cluster.kubeconfig(tmp_path / "kubeconfig", namespace=ns)
    finally:
        cluster.stop()
"""

from __future__ import annotations

import atexit
import base64
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from typing import Any

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0

_LIVE_CLUSTERS: "weakref.WeakSet[RealCluster]" = weakref.WeakSet()


def _stop_all_at_exit() -> None:
    for cluster in list(_LIVE_CLUSTERS):
        try:
            cluster.stop()
        except Exception:  # pragma: no cover - best effort at interpreter exit
            pass


atexit.register(_stop_all_at_exit)


class ClusterError(RuntimeError):
    """The cluster could not be started or answered unexpectedly."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (held open together while picking)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


class RealCluster:
    """etcd + kube-apiserver child processes bound to 127.0.0.1 only.

    Attributes set by :meth:`start`: ``url`` (``https://127.0.0.1:PORT``),
    ``admin_token`` (member of ``system:masters``), ``ca_file`` (the CA the
    apiserver's self-signed serving certificate chains to), ``etcd_url``.
    """

    def __init__(
        self,
        kube_apiserver: str | os.PathLike[str],
        etcd: str | os.PathLike[str] = "/usr/bin/etcd",
        workdir: str | os.PathLike[str] | None = None,
        extra_apiserver_args: list[str] | None = None,
        keep_workdir: bool = False,
        audit: bool = False,
    ) -> None:
        self.kube_apiserver = str(kube_apiserver)
        self.etcd = str(etcd)
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="syncer-realapi-"))
        self.keep_workdir = keep_workdir
        self.extra_apiserver_args = list(extra_apiserver_args or [])
        #: With ``audit``: every request, one JSON line per stage (level Metadata: verb,
        #: resource, userAgent, timestamps), written before the answer (blocking mode).
        self.audit_log: Path | None = None
        if audit:
            self.workdir.mkdir(parents=True, exist_ok=True)
            policy = self.workdir / "audit-policy.yaml"
            policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n")
            self.audit_log = self.workdir / "audit.log"
            self.extra_apiserver_args += [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}",
                                          "--audit-log-format=json", "--audit-log-mode=blocking"]
        self.admin_token = secrets.token_hex(24)
        self.etcd_proc: subprocess.Popen[bytes] | None = None
        self.apiserver_proc: subprocess.Popen[bytes] | None = None
        self.etcd_port, self.etcd_peer_port, self.port = free_ports(3)
        self.etcd_url = f"http://127.0.0.1:{self.etcd_port}"
        self.url = f"https://127.0.0.1:{self.port}"
        self.cert_dir = self.workdir / "certs"
        self.ca_file = self.workdir / "apiserver-ca.crt"
        self.etcd_log = self.workdir / "etcd.log"
        self.apiserver_log = self.workdir / "kube-apiserver.log"
        self.apiserver_starts = 0
        self._ns_counter = itertools.count(1)
        self._ssl = ssl.create_default_context()

    # ------------------------------------------------------------------ life
    def start(self) -> "RealCluster":
        _LIVE_CLUSTERS.add(self)
        try:
            self._write_credentials()
            self._start_etcd()
            self._start_apiserver()
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> "RealCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _write_credentials(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.cert_dir.mkdir(exist_ok=True)
        tokens = self.workdir / "tokens.csv"
        # token,user,uid,"group1,group2"
        tokens.write_text(f'{self.admin_token},realapi-admin,realapi-admin,"system:masters"\n')
        tokens.chmod(0o600)
        key = self.workdir / "sa.key"
        if not key.exists():
            subprocess.run(
                ["openssl", "genrsa", "-traditional", "-out", str(key), "2048"],
                check=True,
                capture_output=True,
            )

    def _start_etcd(self) -> None:
        data_dir = self.workdir / "etcd-data"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        args = [
            self.etcd,
            "--name=realapi",
            f"--data-dir={data_dir}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=realapi={peer}",
            "--initial-cluster-state=new",
            "--logger=zap",
            "--log-outputs=stderr",
        ]
        self.etcd_proc = self._spawn(args, self.etcd_log)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            self._check_alive(self.etcd_proc, "etcd", self.etcd_log)
            try:
                with urllib.request.urlopen(self.etcd_url + "/health", timeout=2) as resp:
                    if json.load(resp).get("health") == "true":
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        raise ClusterError(f"etcd not healthy after {READY_TIMEOUT_S}s:\n{_tail(self.etcd_log)}")

    def apiserver_args(self) -> list[str]:
        w = self.workdir
        return [
            self.kube_apiserver,
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            "--insecure-port=0",
            f"--cert-dir={self.cert_dir}",
            f"--etcd-servers={self.etcd_url}",
            f"--token-auth-file={w / 'tokens.csv'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={w / 'sa.key'}",
            f"--service-account-signing-key-file={w / 'sa.key'}",
            "--authorization-mode=RBAC",
            "--endpoint-reconciler-type=none",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--watch-cache=true",
            "--profiling=false",
            "--logtostderr=true",
            "--v=1",
            *self.extra_apiserver_args,
        ]

    def _start_apiserver(self) -> None:
        self.apiserver_proc = self._spawn(self.apiserver_args(), self.apiserver_log, append=True)
        self.apiserver_starts += 1
        self.wait_ready()
        self._extract_ca()

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Poll ``/readyz`` (as admin) until it answers 200."""
        deadline = time.monotonic() + timeout
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the serving cert may not exist yet when we start
        last = "no answer"
        while time.monotonic() < deadline:
            assert self.apiserver_proc is not None
            self._check_alive(self.apiserver_proc, "kube-apiserver", self.apiserver_log)
            req = urllib.request.Request(
                self.url + "/readyz", headers={"Authorization": f"Bearer {self.admin_token}"}
            )
            try:
                with urllib.request.urlopen(req, timeout=3, context=ctx) as resp:
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}: {e.read()[-300:]!r}"
            except OSError as e:
                last = repr(e)
            time.sleep(0.2)
        raise ClusterError(
            f"kube-apiserver not ready after {timeout}s (last: {last}):\n{_tail(self.apiserver_log)}"
        )

    def _extract_ca(self) -> None:
        """The self-signed bundle is ``leaf + CA``; keep the CA (last PEM block)."""
        bundle = (self.cert_dir / "apiserver.crt").read_text()
        blocks = [b + "-----END CERTIFICATE-----\n" for b in bundle.split("-----END CERTIFICATE-----") if "BEGIN" in b]
        self.ca_file.write_text(blocks[-1].lstrip())
        self._ssl = ssl.create_default_context(cafile=str(self.ca_file))

    def restart_apiserver(self, grace: float = STOP_TIMEOUT_S) -> float:
        """Stop kube-apiserver (SIGTERM, then SIGKILL after ``grace`` seconds), start it again
        on the same port.

        etcd keeps running, so all objects survive. Returns the seconds the API was down.
        With no client watching, SIGTERM ends the server in about a second. An open HTTP/1.1
        watch keeps it draining for its 60 s shutdown timeout (new connections are refused at
        once, the open watch stays up), so with a watcher connected the restart costs
        ``grace`` plus start-up; see docs/realapi.md.
        """
        t0 = time.monotonic()
        self._terminate(self.apiserver_proc, grace)
        self._start_apiserver()
        return time.monotonic() - t0

    def stop(self) -> None:
        """Kill both processes (by PID) and remove the temp dir."""
        self._terminate(self.apiserver_proc)
        self._terminate(self.etcd_proc)
        self.apiserver_proc = self.etcd_proc = None
        _LIVE_CLUSTERS.discard(self)
        if self._own_workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    @staticmethod
    def _spawn(args: list[str], log: Path, append: bool = False) -> "subprocess.Popen[bytes]":
        with open(log, "ab" if append else "wb") as out:
            return subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # no terminal signals; we end it ourselves by PID
            )

    @staticmethod
    def _check_alive(proc: "subprocess.Popen[bytes]", name: str, log: Path) -> None:
        if proc.poll() is not None:
            raise ClusterError(f"{name} exited with {proc.returncode}:\n{_tail(log)}")

    @staticmethod
    def _terminate(proc: "subprocess.Popen[bytes] | None", grace: float = STOP_TIMEOUT_S) -> None:
        if proc is None or proc.poll() is not None:
            return
        try:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT_S)
        except ProcessLookupError:
            pass

    def rss_mib(self) -> dict[str, float]:
        """Resident memory of each child process right now (MiB), from /proc."""
        out = {}
        for name, proc in (("etcd", self.etcd_proc), ("kube-apiserver", self.apiserver_proc)):
            if proc is None or proc.poll() is not None:
                continue
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    out[name] = int(line.split()[1]) / 1024
        return out

    def audit_events(self, user_agent_prefix: str = "", since: float = 0.0) -> list[dict[str, Any]]:
        """Requests the audit log saw (stage RequestReceived: one per request, a watch too),
        whose userAgent starts with ``user_agent_prefix``, received at or after ``since``
        (epoch seconds)."""
        from datetime import datetime

        if self.audit_log is None or not self.audit_log.exists():
            return []
        out = []
        for line in self.audit_log.read_text(errors="replace").splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("stage") != "RequestReceived" or not str(ev.get("userAgent", "")).startswith(user_agent_prefix):
                continue
            at = datetime.fromisoformat(str(ev["requestReceivedTimestamp"]).replace("Z", "+00:00")).timestamp()
            if at >= since:
                out.append(ev)
        return out

    # ------------------------------------------------------------ admin API
    def request(
        self, method: str, path: str, body: Any = None, token: str | None = None, timeout: float = 10
    ) -> Any:
        """One JSON request as admin (or with ``token``); returns the decoded body.

        Raises ``urllib.error.HTTPError`` for non-2xx answers.
        """
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {token or self.admin_token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        with urllib.request.urlopen(req, timeout=timeout, context=self._ssl) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def create_namespace(self, prefix: str = "realapi") -> str:
        """A new namespace with a unique name (deleted ones stay Terminating without a
        controller-manager, so every test gets its own)."""
        name = f"{prefix}-{next(self._ns_counter)}-{secrets.token_hex(3)}"
        self.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        return name

    def service_account_token(
        self, namespace: str, sa: str, expiration_seconds: int = 3600, create: bool = True
    ) -> str:
        """A bound token for ServiceAccount ``sa`` via the TokenRequest API (creating the SA
        first when ``create`` and it does not exist)."""
        if create:
            try:
                self.request(
                    "POST",
                    f"/api/v1/namespaces/{namespace}/serviceaccounts",
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}},
                )
            except urllib.error.HTTPError as e:
                if e.code != 409:
                    raise
        answer = self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{sa}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": expiration_seconds},
            },
        )
        return str(answer["status"]["token"])

    def kubeconfig(
        self,
        path: str | os.PathLike[str],
        token: str | None = None,
        namespace: str = "default",
        insecure: bool = False,
    ) -> Path:
        """Write a kubeconfig for ``kubernetes.config.load_kube_config(config_file=...)``.

        Verifies the server against the apiserver's self-signed CA unless ``insecure``.
        """
        cluster: dict[str, Any] = {"server": self.url}
        if insecure:
            cluster["insecure-skip-tls-verify"] = True
        else:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca_file.read_bytes()).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "realapi", "cluster": cluster}],
            "users": [{"name": "realapi-user", "user": {"token": token or self.admin_token}}],
            "contexts": [
                {"name": "realapi", "context": {"cluster": "realapi", "user": "realapi-user", "namespace": namespace}}
            ],
            "current-context": "realapi",
            "preferences": {},
        }
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(config, indent=2) + "\n")  # JSON is valid YAML
        out.chmod(0o600)
        return out

    # ------------------------------------------------------------------ etcd
    def _etcd_post(self, path: str, body: dict[str, Any]) -> Any:
        req = urllib.request.Request(
            self.etcd_url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.load(resp)

    def etcd_revision(self) -> int:
        """etcd's current revision (= the newest resourceVersion the apiserver can hand out)."""
        answer = self._etcd_post("/v3/kv/range", {"key": base64.b64encode(b"/").decode(), "limit": 1})
        return int(answer["header"]["revision"])

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision through the v3 HTTP gateway
        (``POST /v3/kv/compaction``, physical): every older revision is gone, so reads and
        watches that etcd itself serves at an older resourceVersion answer 410 Gone.
        Returns the compacted revision.

        Note: watches served from the apiserver's watch cache do not look at etcd's
        compaction; see docs/realapi.md and ``restart_apiserver()``.
        """
        rev = self.etcd_revision()
        self._etcd_post("/v3/kv/compaction", {"revision": rev, "physical": True})
        return rev
