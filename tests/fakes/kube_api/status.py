"""``meta/v1 Status`` failure bodies and the errors that carry them to the response."""

from __future__ import annotations

from typing import Any

from .resources import Resource


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``meta/v1 Status`` failure body as the apiserver writes it."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {},
                            "status": "Failure", "message": message, "reason": reason}
    if details:
        body["details"] = details
    body["code"] = code
    return body


_DEFAULT_REASON = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
                   405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
                   413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
                   429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
                   504: "Timeout"}


class _ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.body = status_body(code, reason, message, details)
        self.code = code
        self.headers = headers or {}


def _not_found(res: Resource, name: str) -> _ApiError:
    return _ApiError(404, "NotFound", f'{res.qualified} "{name}" not found', res.details(name))


def _conflict(res: Resource, name: str, why: str = "the object has been modified; please apply your "
              "changes to the latest version and try again") -> _ApiError:
    return _ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res.qualified} "{name}": {why}',
                     res.details(name))


def _bad_request(message: str) -> _ApiError:
    return _ApiError(400, "BadRequest", message)


def _invalid(res: Resource, name: str, causes: list[tuple[str, str, str]]) -> _ApiError:
    """422 Invalid with one cause per (reason, field, detail), worded as the apiserver does."""
    text = ", ".join(f"{f}: {d}" for _, f, d in causes)
    if len(causes) > 1:
        text = "[" + text + "]"
    return _ApiError(422, "Invalid", f'{res.kind}.{res.group} "{name}" is invalid: {text}' if res.group
                     else f'{res.kind} "{name}" is invalid: {text}',
                     {"name": name, **({"group": res.group} if res.group else {}), "kind": res.kind,
                      "causes": [{"reason": r, "message": d, "field": f} for r, f, d in causes]})
