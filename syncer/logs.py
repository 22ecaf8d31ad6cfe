"""Structured logs for the sidecar: one line per event, the object in every line, no secrets.

``setup`` installs one handler on the ``syncer`` logger with one of two formats:

* ``text``: ``2026-08-21T07:11:14Z WARNING [Endpoints/ai/mac-ollama] outage started since=...``
* ``json``: ``{"time": ..., "level": ..., "logger": ..., "object": ..., "msg": ..., <fields>}``

Callers say which object a line is about with ``event(log, level, msg, ref=..., **fields)``;
lines about no particular object carry ``installation/<name>``. Every rendered line goes
through ``redact_text`` with the known secrets (forge and git tokens), so a token that
slipped into an exception message never reaches the log.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import IO, Any

from syncer.secrets.redact import redact_text
from syncer.model import JSON

FORMATS = ("text", "json")
_FIELDS = "syncer_fields"
_OBJECT = "syncer_object"


def event(log: logging.Logger, level: int, msg: str, *, ref: object = None, exc: BaseException | None = None,
          **fields: Any) -> None:
    """Log one event about ``ref`` (an ``ObjectRef`` or any text) with extra key=value ``fields``."""
    extra = {_OBJECT: str(ref) if ref is not None else None, _FIELDS: fields}
    log.log(level, msg, extra=extra, exc_info=exc if exc is not None and log.isEnabledFor(logging.DEBUG) else None)


class _Formatter(logging.Formatter):
    def __init__(self, default_object: str, secrets: Sequence[str]) -> None:
        super().__init__()
        self.default_object = default_object
        self.secrets = secrets  # by reference: a token minted later (GitHub App) is appended to it

    def parts(self, record: logging.LogRecord) -> tuple[str, str, JSON]:
        when = datetime.fromtimestamp(record.created, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        obj = getattr(record, _OBJECT, None) or self.default_object
        fields = dict(getattr(record, _FIELDS, None) or {})
        if record.exc_info and record.exc_info[1] is not None:
            fields["error"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        return when, obj, fields

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(self.render(record), self.secrets)

    def render(self, record: logging.LogRecord) -> str:
        raise NotImplementedError


class TextFormatter(_Formatter):
    def render(self, record: logging.LogRecord) -> str:
        when, obj, fields = self.parts(record)
        tail = "".join(f" {k}={_text_value(v)}" for k, v in fields.items())
        return f"{when} {record.levelname} [{obj}] {record.getMessage()}{tail}".replace("\n", "⏎")


class JsonFormatter(_Formatter):
    def render(self, record: logging.LogRecord) -> str:
        when, obj, fields = self.parts(record)
        doc = {"time": when, "level": record.levelname.lower(), "logger": record.name, "object": obj,
               "msg": record.getMessage()}
        doc.update({k: v for k, v in fields.items() if k not in doc})
        return json.dumps(doc, ensure_ascii=False, default=str)


def _text_value(value: Any) -> str:
    """A field's value in a text line: quoted when it holds a space, a quote or ``=``; its own
    characters kept (an arrow stays an arrow, not ``\\u2192``), control characters escaped."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return json.dumps(text, ensure_ascii=False) if (not text or any(c in text for c in " \"=")) else text


def setup(fmt: str, *, installation: str, secrets: Sequence[str] = (), stream: IO[str] | None = None,
          level: int = logging.INFO) -> logging.Handler:
    """Log to ``stream`` (stderr) in ``fmt``: syncer's loggers from ``level``, the libraries'
    (urllib3, watchfiles, ...) from WARNING, all in the same one-line format; returns the handler."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r} (use {' or '.join(FORMATS)})")
    handler = logging.StreamHandler(stream or sys.stderr)
    cls = JsonFormatter if fmt == "json" else TextFormatter
    handler.setFormatter(cls(f"installation/{installation}", secrets))
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_syncer", False):
            root.removeHandler(old)
    handler._syncer = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("syncer").setLevel(level)
    return handler


class Collector(logging.Handler):
    """A one-shot command's warnings (``syncer diff|sync|init|version``): kept, each message once, to
    be told with the command's own output (a ``warning:`` line, the JSON document's ``warnings``)
    instead of as bare lines on stderr while it runs."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        super().__init__(logging.WARNING)
        self.secrets = secrets
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = redact_text(record.getMessage(), self.secrets)
        if message not in self.messages:
            self.messages.append(message)

    def take(self) -> list[str]:
        """The warnings said since the last ``take``."""
        taken, self.messages = self.messages, []
        return taken


_COLLECTOR: Collector | None = None


def collect(secrets: Sequence[str] = ()) -> Collector:
    """Keep syncer's warnings from now on (until ``uncollect``); ``take_warnings`` hands them over."""
    global _COLLECTOR
    uncollect()
    _COLLECTOR = Collector(secrets)
    logging.getLogger("syncer").addHandler(_COLLECTOR)
    return _COLLECTOR


def uncollect() -> None:
    global _COLLECTOR
    if _COLLECTOR is not None:
        logging.getLogger("syncer").removeHandler(_COLLECTOR)
        _COLLECTOR = None


def take_warnings() -> list[str]:
    """The warnings a one-shot command's run said so far (none outside ``collect``)."""
    return _COLLECTOR.take() if _COLLECTOR is not None else []
