"""Durations and numbers from ``syncer.conf``, flags and their environment twins, within bounds.

Anyone who can push to the repository writes ``syncer.conf``; flags come from the chart's values.
A number is read only when its text is short (Python refuses to convert an integer of more than
4,300 digits, and a 400-digit hour count overflows a float), and only inside a range that makes
sense for what it sets: out of range is one ``ConfigError`` naming the field or flag and the
range, never a traceback, never a loop that spins or a wait that never ends.

The ranges, and why:

- ``stableFor`` 0 .. 30 days: how long a pick must hold before it is written; a month is longer
  than anyone waits for a flapping backend.
- ``--debounce`` 0 .. 1 h: quiet time before a pass (``debounce_max`` still ends a long burst).
- ``--resync`` 1 s .. 7 days: every resync fetches git and compares everything; under a second
  is a loop against the git remote, and a week is the longest a pushed commit may go unseen.
- ``--lease-duration`` 3 s .. 1 h: the Lease is renewed every third of it (a second at least),
  and a crashed leader is replaced within it.
- ``--shutdown-grace`` 0 .. 1 h: the kubelet's grace period bounds it anyway.
- ``--push-budget`` 0 .. 1 h: commit mode's retries of pushes that lost the race (0: the first
  push only); the sidecar takes at most ``MAX_SIDECAR_PUSH_BUDGET`` (one pass must end within its
  liveness limit).
"""

from __future__ import annotations

import math
import re

from syncer.errors import ConfigError
from syncer.repofile import excerpt

#: No duration needs more characters (``168h59m59s`` is 10).
MAX_TEXT = 32
DAY = 86400.0
STABLE_FOR = (0.0, 30 * DAY)
FLAGS: dict[str, tuple[float, float]] = {
    "--debounce": (0.0, 3600.0), "--resync": (1.0, 7 * DAY), "--lease-duration": (3.0, 3600.0),
    "--shutdown-grace": (0.0, 3600.0), "--push-budget": (0.0, 3600.0),
}
_DURATION = re.compile(r"(?:([0-9]{1,9})h)?(?:([0-9]{1,9})m)?(?:([0-9]{1,9})s)?")
_SECONDS = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9})?|\.[0-9]{1,9}")
#: Digits of an integer the YAML reader (Python's ``int``) converts at most.
MAX_INT_DIGITS = 4300
_LONG_NUMBER = re.compile(r"[0-9_]{%d,}" % MAX_INT_DIGITS)


def shown(value: float) -> str:
    """600.0 -> ``10m``; 90061 -> ``25h1m1s``; 0.5 -> ``0.5s``."""
    if value != int(value):
        return f"{value:g}s"
    h, rest = divmod(int(value), 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((h, "h"), (m, "m"), (s, "s")) if n) or "0"


def _within(value: float, text: object, where: str, bounds: tuple[float, float] | None) -> float:
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise ConfigError(f"{where}: {excerpt(text)} is outside {shown(bounds[0])} .. {shown(bounds[1])}")
    return value


def parse_duration(text: object, where: str, bounds: tuple[float, float] | None = None) -> float:
    """``"10m"`` -> 600.0 seconds; also ``1h30m``, ``45s``, ``0``. ``bounds``: the range allowed."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ConfigError(f"{where}: expected a duration such as 30s, 10m or 1h30m, got {excerpt(text)}")
    if isinstance(text, int) and text != 0:
        raise ConfigError(f"{where}: {excerpt(text)} has no unit (use e.g. 30s, 10m, 1h30m)")
    raw = str(text).strip()
    if len(raw) > MAX_TEXT:
        raise ConfigError(f"{where}: a duration of {len(raw)} characters; use e.g. 30s, 10m, 1h30m")
    if raw == "0":
        return 0.0
    m = _DURATION.fullmatch(raw)
    if not raw or not m or not any(m.groups()):
        raise ConfigError(f"{where}: bad duration {excerpt(raw)} (use e.g. 30s, 10m, 1h30m)")
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    return _within(float(h * 3600 + mi * 60 + s), raw, where, bounds)


def seconds(text: str, flag: str, twin: str = "") -> float:
    """A duration flag: ``5s``, ``10m``, ``1h30m``, or plain (fractional) seconds such as ``0.5``,
    within the flag's range (``FLAGS``). ``twin``: its environment variable, named in errors."""
    where = f"{flag} (or {twin})" if twin else flag
    raw = str(text).strip()
    if len(raw) <= MAX_TEXT and _SECONDS.fullmatch(raw):
        value = float(raw)
        if not math.isfinite(value):  # cannot be, with at most 9 digits each side; never let it pass
            raise ConfigError(f"{where}: {excerpt(raw)} is no number of seconds")
        return _within(value, raw, where, FLAGS.get(flag))
    return parse_duration(raw, where, FLAGS.get(flag))


def count(text: str, flag: str, low: int, high: int) -> int:
    """An integer flag written in ASCII digits, within ``low`` .. ``high``."""
    raw = str(text).strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > len(str(high)):
        raise ConfigError(f"{flag}: {excerpt(raw)} is not a number from {low} to {high}")
    value = int(raw)
    if not low <= value <= high:
        raise ConfigError(f"{flag}: {value} is not a number from {low} to {high}")
    return value


def long_number_line(text: str) -> int | None:
    """The line (1-based) of the first run of more than ``MAX_INT_DIGITS`` digits in ``text``:
    where a YAML reader's integer conversion failed."""
    m = _LONG_NUMBER.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None
