"""The request log: one :class:`RequestRecord` per request, and counting them."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]
    time: float
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    body: bytes = b""
    status: int | None = None

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("1", "true", "True") or "/watch/" in self.path


def _full_path(rec: RequestRecord) -> str:
    if not rec.query:
        return rec.path
    return rec.path + "?" + "&".join(f"{k}={v}" for k, v in rec.query.items())


class RequestLogMixin:
    """Counting the recorded requests (``self.requests``)."""

    def count(self, method: str | None = None, path_contains: str = "", *, watch: bool | None = None,
              status: int | None = None) -> int:
        with self._lock:
            recs = list(self.requests)
        n = 0
        for r in recs:
            if method and r.method != method.upper():
                continue
            if path_contains and path_contains not in r.path and path_contains not in _full_path(r):
                continue
            if watch is not None and r.is_watch != watch:
                continue
            if status is not None and r.status != status:
                continue
            n += 1
        return n

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()
