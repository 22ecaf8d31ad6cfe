"""Failed Kubernetes requests as our own errors, and what broke on the wire, in words.

``KubeError`` and its subclasses (``ClusterUnreachable``, ``TooLarge``, ``Unparsable``, ``NoCredentials``,
``ApiError``, ``Unauthorized``, ``Refused``, ``Conflict``, ``Gone``) are drawn in ``syncer.errors``' one tree.

Authentication is not authorisation: a 401 (``Unauthorized``) means the API server does not
take syncer's credentials at all, so nothing can be read with them; a 403 (``Refused``) means
it knows who syncer is, and that account may not read this one object.

``api_error`` turns a non-2xx answer into one of them (the body masked, then cut, before it
reaches a log line); ``cause`` names a transport failure (``connection refused``), not its class.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Sequence

import urllib3

from syncer.errors import ClusterError, CredentialsRejected, Forbidden, Unreachable
from syncer.secrets import masking


class KubeError(ClusterError):
    """A request to the API server failed."""

    status: int | None = None


class ClusterUnreachable(KubeError, Unreachable):
    """No complete answer: connection refused or reset, TLS failure, a timeout or the deadline."""

    transient = True


class TooLarge(ClusterUnreachable):
    """The answer was larger than the client accepts."""

    transient = False


class Unparsable(KubeError):
    """The answer is over the nesting limit (``bounds``): that object cannot be read."""

    transient = False


class ApiError(KubeError):
    """The API server answered, but not with success."""

    def __init__(self, message: str, status: int, reason: str = "", *, transient: bool | None = None) -> None:
        super().__init__(message, transient=transient)
        self.status = status
        self.reason = reason


class NoCredentials(KubeError, CredentialsRejected):
    """No credential to send: the kubeconfig's token file cannot be read, its credential plugin
    (``exec``, ``auth-provider``) failed."""


class Unauthorized(ApiError, CredentialsRejected):
    """401: the API server rejected the credentials themselves (expired, revoked, a token of a
    ServiceAccount since deleted, the wrong cluster's)."""


class Refused(ApiError, Forbidden):
    """403: the account may not make this request (RBAC)."""


class Conflict(ApiError):
    """409: a write lost a race (resourceVersion precondition) or the object already exists."""


class Gone(ApiError):
    """410: the resourceVersion we asked for is no longer in the server's history."""


#: What a 401 says first, wherever it is shown (stderr, /readyz, the log).
REJECTED = "the API server rejected syncer's credentials (token expired or revoked?)"


def api_error(status: int, body: object, what: str, credentials: str = "", known: Sequence[str] = ()) -> ApiError:
    """Our error for a non-2xx answer; ``body`` is the Status object, or raw bytes;
    ``credentials`` says which credentials were sent (a 401 names them: what to check). The
    message quotes at most 300 characters of the body, masked before the cut: ``known`` (the
    connection's credentials) and every credential shape (a service-account JWT, ``Bearer ...``)."""
    if isinstance(body, dict):
        message, reason = str(body.get("message") or ""), str(body.get("reason") or "")
    else:
        message, reason = (body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")), ""
    message = masking.excerpt(message, known, 300)
    if status == 410:
        return Gone(f"{what}: resourceVersion expired (410): {message}", status, reason, transient=True)
    if status == 401:
        check = f"check {credentials}" if credentials else "check the kubeconfig's user"
        return Unauthorized(f"{REJECTED}: {what} -> 401 {message or 'Unauthorized'}; {check}; a ServiceAccount "
                            "token stops working when it expires or its ServiceAccount is deleted (even if made "
                            "again under the same name)", status, reason or "Unauthorized", transient=False)
    if status == 403:
        return Refused(f"API server refused {what} ({status}): {message}", status, reason, transient=False)
    if status == 409:
        return Conflict(f"API server error on {what} ({status}): {message}", status, reason, transient=True)
    transient = status == 429 or status >= 500
    return ApiError(f"API server error on {what} ({status}): {message}", status, reason, transient=transient)


def cause(exc: BaseException) -> str:
    """What went wrong on the wire, in words (``connection refused``, ``cannot resolve host``,
    ``timed out``, ``TLS: certificate verify failed``), not a class name such as NewConnectionError."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__ or getattr(current, "reason", None)
    for err in seen:  # the most specific first (urllib3's NewConnectionError is a ConnectTimeoutError)
        if isinstance(err, ConnectionRefusedError):
            return "connection refused"
        if isinstance(err, ssl.SSLCertVerificationError):
            return f"TLS: {err.verify_message or 'certificate verify failed'}"
        if isinstance(err, ssl.SSLError):
            return f"TLS: {err.reason or err}"
        if isinstance(err, socket.gaierror):
            return f"cannot resolve the host name ({err.strerror or err})"
        if isinstance(err, ConnectionResetError):
            return "connection reset by the server"
        if isinstance(err, OSError) and err.strerror and not isinstance(err, TimeoutError):
            return err.strerror[:1].lower() + err.strerror[1:]
    for err in seen:
        if isinstance(err, (TimeoutError, socket.timeout, urllib3.exceptions.TimeoutError)):
            return "timed out"
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        return "the connection broke off mid-answer"
    return type(exc).__name__

