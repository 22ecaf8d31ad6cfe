"""Fault injection: failing or hanging the next matching requests."""

from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import unquote

from .status import _ApiError, _DEFAULT_REASON


@dataclasses.dataclass
class _Fault:
    count: int
    path_contains: str
    method: str
    status: int = 0
    reason: str = ""
    message: str = ""
    retry_after: int | None = None
    seconds: float = 0.0

    def matches(self, method: str, raw_path: str) -> bool:
        if self.method and self.method.upper() != method:
            return False
        return not self.path_contains or self.path_contains in raw_path or self.path_contains in unquote(raw_path)


class FaultsMixin:
    """Injected failures and hangs, matched against the raw request path."""

    def fail_next(self, status: int, count: int = 1, path_contains: str = "", reason: str = "",
                  retry_after: int | None = None, *, message: str = "", method: str = "") -> None:
        with self._lock:
            self._fails.append(_Fault(count, path_contains, method, status=status, reason=reason,
                                      message=message, retry_after=retry_after))

    def hang_next(self, seconds: float, path_contains: str = "", *, count: int = 1, method: str = "") -> None:
        """Accept matching requests and say nothing for ``seconds`` (then answer normally)."""
        with self._lock:
            self._hangs.append(_Fault(count, path_contains, method, seconds=seconds))

    def clear_faults(self) -> None:
        with self._lock:
            self._fails.clear()
            self._hangs.clear()
            self._forbidden.clear()

    @staticmethod
    def _take(rules: list[_Fault], method: str, raw_path: str) -> _Fault | None:
        for rule in rules:
            if rule.count > 0 and rule.matches(method, raw_path):
                rule.count -= 1
                if rule.count <= 0:
                    rules.remove(rule)
                return rule
        return None

    def _injected(self, fault: _Fault, method: str, path: str, query: dict[str, str]) -> _ApiError:
        code = fault.status
        reason = fault.reason or _DEFAULT_REASON.get(code, "")
        details: dict[str, Any] = {}
        message = fault.message
        target = self._parse_resource_path(path)
        res, name = (target[0], target[2]) if target else (None, "")
        if res is not None:
            details = res.details(name)
        if not message:
            if code == 404 and res is not None and name:
                message = f'{res.qualified} "{name}" not found'
            elif code == 403 and res is not None:
                message = self._forbidden_message(res, self._verb(method, name, query, target), name,
                                                  target[1] if target else "", target[3] if target else "")
            elif code == 409 and res is not None and name:
                message = (f'Operation cannot be fulfilled on {res.qualified} "{name}": the object has been '
                           "modified; please apply your changes to the latest version and try again")
            elif code == 410:
                message = f"too old resource version: {query.get('resourceVersion') or 1} ({self._rv})"
            else:
                message = {
                    400: "the server rejected our request for an unknown reason",
                    401: "Unauthorized",
                    404: "the server could not find the requested resource",
                    422: "the server rejected our request due to an error in our request",
                    429: "Too many requests, please try again later.",
                    500: "Internal error occurred: injected fault",
                    503: "the server is currently unable to handle the request",
                    504: "the server was unable to return a response in the time allotted, but may "
                         "still be processing the request",
                }.get(code, f"the server responded with the status code {code} but did not return more "
                            "information")
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
            details["retryAfterSeconds"] = fault.retry_after
        if code == 401:
            details = {}
        return _ApiError(code, reason, message, details or None, headers)
