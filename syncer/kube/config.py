"""Where the API server is and how to authenticate: kubeconfig, credential plugins, in-cluster, TLS.

A small kubeconfig reader (explicit file, ``$KUBECONFIG``'s list, ``~/.kube/config``): token,
token file, basic auth, client certificates, CA, ``insecure-skip-tls-verify``,
``tls-server-name``, and the in-cluster service account. Only kubeconfigs that need a
credential plugin (``exec``, ``auth-provider``) import the official ``kubernetes`` package,
which then refreshes the bearer token; everyone else is spared its import, which costs more
memory and start-up time than the rest of syncer (README, "Dependencies").
It is the optional extra ``syncer[exec-auth]``; without it such a kubeconfig is one clear error.

The kubeconfig's YAML is read by the caller's ``read_yaml`` (``manifests.parse_documents``, YAML
as kubectl reads it): this package sits below the git side and does not import it.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from syncer import USER_AGENT
from syncer.errors import ConfigError
from syncer.kube.errors import NoCredentials
from syncer.model import JSON

#: YAML text and the name to show in errors -> its documents; ConfigError ``file:line`` when malformed.
ReadYaml = Callable[[str, str], Sequence[object]]

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass
class Connection:
    """Where the API server is and how to authenticate; built by ``load_connection``."""

    server: str
    token: str | None = None
    token_file: Path | None = None
    ca_data: bytes | None = None  # PEM
    cert_data: bytes | None = None  # PEM client certificate
    key_data: bytes | None = None  # PEM client key
    insecure: bool = False
    tls_server_name: str | None = None
    basic: tuple[str, str] | None = None
    #: Credential plugins: returns the current "Bearer ..." header (refreshing as needed).
    auth_hook: Callable[[], str] | None = None
    #: Where the credentials come from, in words: what a 401 says to check.
    source: str = ""
    #: kubectl's ``--as``/``--as-group`` (or the kubeconfig user's ``as``/``as-groups``): every
    #: request is made as this user, with these groups (the API server checks that the account
    #: authenticated by the credentials may ``impersonate`` them).
    impersonate: str | None = None
    impersonate_groups: tuple[str, ...] = ()
    _file_token: tuple[float, str] = field(default=(0.0, ""), repr=False)
    _sent: str = field(default="", repr=False)  # the credential of the last header built

    def identity_headers(self) -> list[tuple[str, str]]:
        """The impersonation headers every request carries (one ``Impersonate-Group`` per group,
        as client-go sends them: the server reads each header value as one group)."""
        if not self.impersonate:
            return []
        return [("Impersonate-User", self.impersonate), *(("Impersonate-Group", g) for g in self.impersonate_groups)]

    def authorization(self) -> str | None:
        """The ``Authorization`` header of the next request (``Bearer ...``, ``Basic ...``), or None;
        ``kube.NoCredentials`` when the token file cannot be read or the credential plugin fails."""
        value = self._authorization()
        if value:
            self._sent = value.partition(" ")[2]
        return value

    def known(self) -> list[str]:
        """The secrets this connection sends, for masking them out of error text; no I/O."""
        found = [self._sent, self.token or "", self._file_token[1], self.basic[1] if self.basic else ""]
        return [s for s in found if s]

    def _authorization(self) -> str | None:
        if self.auth_hook is not None:
            try:
                return self.auth_hook()
            except Exception as exc:  # noqa: BLE001 -- the plugin's client raises what it likes
                said = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
                raise NoCredentials(f"syncer has no credentials to send: the credential plugin of "
                                    f"{self.source or 'the kubeconfig'} failed: {said}") from None
        if self.token_file is not None:  # projected tokens rotate: re-read at most once a minute
            read_at, token = self._file_token
            if time.monotonic() - read_at > 60 or not token:
                try:
                    token = self.token_file.read_text(encoding="utf-8").strip()
                except OSError as exc:
                    raise NoCredentials(f"syncer has no credentials to send: token file {self.token_file}: "
                                        f"{exc.strerror or exc}") from None
                if not token:
                    raise NoCredentials(f"syncer has no credentials to send: token file {self.token_file} is empty")
                self._file_token = (time.monotonic(), token)
            return f"Bearer {token}"
        if self.token:
            return f"Bearer {self.token}"
        if self.basic is not None:
            return "Basic " + base64.b64encode(f"{self.basic[0]}:{self.basic[1]}".encode()).decode()
        return None

    def headers(self) -> list[tuple[str, str]]:
        """The headers every request to this server carries, over HTTP/1.1 and HTTP/2 alike: the
        User-Agent (found in the API server's audit log), the credentials and the impersonation
        headers. The one place that builds them, so a header every request needs is added here once."""
        headers = [("User-Agent", USER_AGENT)]
        auth = self.authorization()
        if auth:
            headers.append(("Authorization", auth))
        return headers + self.identity_headers()

    def rejected(self) -> None:
        """The API server answered 401: a token file is read again at the next request (the
        kubelet, or a person, may have written a new token since), not a minute later."""
        self._file_token = (0.0, "")

    def describe(self) -> str:
        """Which credentials are sent, in words a person can check (never the secret itself)."""
        if self.token_file is not None:
            return f"the token in {self.token_file} ({self.source})" if self.source else f"the token in {self.token_file}"
        kind = ("the credential plugin" if self.auth_hook is not None else "the token" if self.token
                else "the client certificate" if self.cert_data else "the password" if self.basic else "no credentials")
        return f"{kind} of {self.source}" if self.source else kind


def _named(doc: JSON, section: str, key: str, where: str) -> dict[str, JSON]:
    out: dict[str, JSON] = {}
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get(key), dict):
            out.setdefault(entry["name"], entry[key])
    return out


def _file_or_data(entry: JSON, name: str, base: Path, where: str) -> bytes | None:
    data = entry.get(f"{name}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=False)
        except ValueError:
            raise ConfigError(f"kubeconfig {where}: {name}-data is not base64") from None
    path = entry.get(name)
    if path:
        full = (base / str(path)).expanduser()
        try:
            return full.read_bytes()
        except OSError as exc:
            raise ConfigError(f"kubeconfig {where}: {name} {full}: {exc.strerror or exc}") from None
    return None


def _kubeconfig_files(kubeconfig: str | None) -> list[Path]:
    if kubeconfig:
        return [Path(kubeconfig)]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p) for p in env.split(os.pathsep) if p]
    default = Path("~/.kube/config").expanduser()
    return [default] if default.exists() else []


def load_connection(kubeconfig: str | None, context: str | None, *, read_yaml: ReadYaml,
                    impersonate: str | None = None, impersonate_groups: Sequence[str] = ()) -> Connection:
    """Connection settings from a kubeconfig (explicit, $KUBECONFIG, ~/.kube/config) or in-cluster.

    ``impersonate``/``impersonate_groups`` are kubectl's ``--as``/``--as-group``: they replace the
    kubeconfig user's ``as``/``as-groups``. Groups without a user are refused, as kubectl refuses
    them (the API server would answer 400 to every request).

    A kubeconfig of the wrong shape (``clusters: 5``) is one clear ConfigError, never a traceback.
    """
    try:
        conn = _load_connection(kubeconfig, context, read_yaml)
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise ConfigError(f"kubeconfig {where}: malformed ({type(exc).__name__}: {str(exc)[:80]})") from None
    groups = tuple(g.strip() for g in impersonate_groups if g.strip())
    if impersonate is not None and impersonate.strip():
        conn.impersonate, conn.impersonate_groups = impersonate.strip(), groups
    elif groups:
        if not conn.impersonate:
            raise ConfigError("--as-group needs --as USER: a request cannot impersonate groups without a user")
        conn.impersonate_groups = groups
    return conn


#: Where a pod's service account namespace is (kubectl's default namespace inside a pod).
SA_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def context_namespace(kubeconfig: str | None, context: str | None, *, read_yaml: ReadYaml) -> tuple[str, str] | None:
    """kubectl's default namespace, as (namespace, where it came from): the kubeconfig context's
    ``namespace`` (``default`` when it names none), in a pod without a kubeconfig the service
    account's; None when there is no readable kubeconfig nor service account."""
    files = _kubeconfig_files(kubeconfig)
    if not files and not context:
        try:
            ns = SA_NAMESPACE_FILE.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return (ns, "the pod's service account namespace") if ns else None
    current, contexts = "", []
    for path in files:
        try:
            docs = [d for d in read_yaml(path.read_text(encoding="utf-8"), str(path)) if isinstance(d, dict)]
        except (OSError, UnicodeDecodeError, ConfigError):
            continue
        for doc in docs[:1]:
            contexts += [c for c in doc.get("contexts") or [] if isinstance(c, dict)]
            current = current or str(doc.get("current-context") or "")
    name = context or current
    ctx = _named({"contexts": contexts}, "contexts", "context", "").get(name) if name else None
    if ctx is None:
        return None
    ns = str(ctx.get("namespace") or "")
    return (ns, f"the namespace of kubeconfig context {name}") if ns else \
        ("default", f"kubeconfig context {name} names no namespace: kubectl's default")


def _load_connection(kubeconfig: str | None, context: str | None, read_yaml: ReadYaml) -> Connection:
    files = _kubeconfig_files(kubeconfig)
    if not files and not context:
        return _in_cluster()
    where = kubeconfig or os.environ.get("KUBECONFIG") or str(files[0] if files else "~/.kube/config")
    merged: JSON = {"clusters": [], "users": [], "contexts": []}
    current = ""
    bases: dict[tuple[str, str], Path] = {}
    read = 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if kubeconfig:
                raise ConfigError(f"kubeconfig {where}: no such file") from None
            continue
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"kubeconfig {where}: {path}: {exc}") from None
        docs = [d for d in read_yaml(text, str(path)) if d is not None]
        doc = docs[0] if docs else {}
        if not isinstance(doc, dict):
            raise ConfigError(f"kubeconfig {where}: {path}: not a kubeconfig mapping")
        for section in ("clusters", "users", "contexts"):
            for entry in doc.get(section) or []:
                merged[section].append(entry)
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    bases.setdefault((section, entry["name"]), path.parent)
        current = current or str(doc.get("current-context") or "")
        read += 1
    if not read:  # $KUBECONFIG names only files that do not exist: say that, not "no current-context"
        raise ConfigError(f"kubeconfig {where}: no such file" + (" (none of $KUBECONFIG's files exists)"
                                                                  if len(files) > 1 else ""))
    name = context or current
    contexts = _named(merged, "contexts", "context", where)
    if not name or name not in contexts:
        raise ConfigError(f"kubeconfig {where}: " + (f"context {name!r} not found" if name else "no current-context"))
    ctx = contexts[name]
    clusters, users = _named(merged, "clusters", "cluster", where), _named(merged, "users", "user", where)
    cluster_name, user_name = str(ctx.get("cluster") or ""), str(ctx.get("user") or "")
    if cluster_name not in clusters:
        raise ConfigError(f"kubeconfig {where}: cluster {cluster_name!r} of context {name!r} not found")
    cluster = clusters[cluster_name]
    user = users.get(user_name, {})
    server = str(cluster.get("server") or "").rstrip("/")
    if not server.startswith(("http://", "https://")):
        raise ConfigError(f"kubeconfig {where}: cluster {cluster_name!r} has no http(s) server")
    if cluster.get("proxy-url"):
        raise ConfigError(f"kubeconfig {where}: cluster {cluster_name!r}: proxy-url is not supported")
    cbase = bases.get(("clusters", cluster_name), Path("."))
    ubase = bases.get(("users", user_name), Path("."))
    conn = Connection(
        server=server,
        ca_data=_file_or_data(cluster, "certificate-authority", cbase, where),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=str(cluster.get("tls-server-name") or "") or None,
        cert_data=_file_or_data(user, "client-certificate", ubase, where),
        key_data=_file_or_data(user, "client-key", ubase, where),
    )
    conn.source = f"user {user_name!r} in kubeconfig {where} (context {name!r})"
    if user.get("as"):
        conn.impersonate = str(user["as"])
        conn.impersonate_groups = tuple(str(g) for g in user.get("as-groups") or [] if g)
    if user.get("token"):
        conn.token = str(user["token"])
    elif user.get("tokenFile"):
        conn.token_file = (ubase / str(user["tokenFile"])).expanduser()
    elif user.get("username") and user.get("password"):
        conn.basic = (str(user["username"]), str(user["password"]))
    elif user.get("exec") or user.get("auth-provider"):
        conn.auth_hook = _plugin_auth(kubeconfig, name, where)
    return conn


def _plugin_auth(kubeconfig: str | None, context: str, where: str) -> Callable[[], str]:
    """A credential plugin (exec / auth-provider): the official client runs it and refreshes."""
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise ConfigError(f"kubeconfig {where}: its user runs a credential plugin (exec/auth-provider), which needs "
                          "the official kubernetes client: pip install 'syncer[exec-auth]'") from None

    conf = client.Configuration()
    try:
        config.load_kube_config(config_file=kubeconfig, context=context,  # type: ignore[no-untyped-call]
                                client_configuration=conf)
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        # an exec plugin runs here first: its failure means no credential, as a 401 does
        said = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise NoCredentials(f"syncer has no credentials to send: the credential plugin of context {context!r} in "
                            f"kubeconfig {where} failed: {said}") from exc

    def header() -> str:
        # The client keeps the token under "authorization" up to v34 and "BearerToken" from v35 on.
        value = conf.get_api_key_with_prefix("BearerToken") or conf.get_api_key_with_prefix("authorization") or ""
        return str(value)

    return header


def _in_cluster() -> Connection:
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    where = "in-cluster service account"
    if not host or not port:
        raise ConfigError(f"kubeconfig {where}: no kubeconfig found and KUBERNETES_SERVICE_HOST/PORT are not set "
                          "(not running in a pod): pass --kubeconfig")
    token_file = IN_CLUSTER_DIR / "token"
    if not token_file.exists():
        raise ConfigError(f"kubeconfig {where}: {token_file} does not exist")
    try:
        ca = (IN_CLUSTER_DIR / "ca.crt").read_bytes()
    except OSError as exc:
        raise ConfigError(f"kubeconfig {where}: {IN_CLUSTER_DIR / 'ca.crt'}: {exc.strerror or exc}") from None
    netloc = f"[{host}]" if ":" in host else host
    return Connection(server=f"https://{netloc}:{port}", token_file=token_file, ca_data=ca,
                      source="the pod's ServiceAccount token, projected by the kubelet")


def ssl_context(conn: Connection) -> ssl.SSLContext:
    """The TLS settings of ``conn``: its CA (or none checked), its client certificate and key."""
    # The system's CA store only when it is what checks the server (reading it costs 50-200 ms).
    if conn.insecure:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif conn.ca_data:
        ctx = ssl.create_default_context(cadata=conn.ca_data.decode("ascii", "replace"))
    else:
        ctx = ssl.create_default_context()
    if conn.cert_data and conn.key_data:
        # load_cert_chain wants files: write them privately, load, delete at once.
        with tempfile.TemporaryDirectory(prefix="syncer-tls-") as tmp:
            cert, key = Path(tmp) / "cert.pem", Path(tmp) / "key.pem"
            for path, data in ((cert, conn.cert_data), (key, conn.key_data)):
                path.touch(mode=0o600)
                path.write_bytes(data)
            try:
                ctx.load_cert_chain(str(cert), str(key))
            except ssl.SSLError as exc:
                raise ConfigError(f"kubeconfig: client certificate/key cannot be used: {exc}") from None
    return ctx

