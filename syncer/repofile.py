"""Read a file of the repository, and only of the repository.

The repository (and its ``hosts/<installation>/`` tree) may come from anyone who can push to
it. A symlink in it, or a symlinked directory on the way, may point at a service-account
token or ``/dev/zero``; a FIFO would block forever. ``read_inside`` resolves the real path
first and reads it only when it is a regular file inside the repository and small enough.

``excerpt(value)`` is what an error may quote of a file's content: short, one line, and
nothing that looks like a secret.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from syncer.errors import ConfigError
from syncer.secrets.redact import REDACTED, secret_value

#: No manifest or config comes close; a bigger file is refused unread.
MAX_FILE_BYTES = 4 * 1024 * 1024
#: Characters of file content an error message may quote.
EXCERPT_CHARS = 24


def read_inside(path: Path, display: str, repo: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of ``path``; ConfigError naming ``display`` when it resolves outside
    ``repo``, is not a regular file, is larger than ``limit`` or is not UTF-8."""
    real = path.resolve()
    if not real.is_relative_to(repo.resolve()):
        raise ConfigError(f"{display}: symlink points outside the repository; not read")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ConfigError(f"{display}: cannot read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{display}: not a regular file; not read")
        if info.st_size > limit:
            raise ConfigError(f"{display}: larger than {limit // (1024 * 1024)} MiB; not read")
        with os.fdopen(os.dup(fd), "rb") as fh:
            raw = fh.read(limit + 1)
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise ConfigError(f"{display}: larger than {limit // (1024 * 1024)} MiB; not read")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{display}: not UTF-8 text (bad byte at offset {exc.start})") from exc


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters of its first line; secret-looking: redacted."""
    if secret_value(value if isinstance(value, (str, list, dict)) else str(value)):
        return REDACTED
    text = repr(value).split("\\n")[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"
