"""Colour on a terminal: when (``--color auto|always|never``, ``NO_COLOR``) and the diff's colours.

``auto`` colours only a terminal, and never when ``NO_COLOR`` is set to anything but the empty
string (no-color.org) or ``TERM`` is ``dumb``. ``always`` colours whatever the output is (``| less
-R``); ``never`` not at all. The unified diff is coloured the way ``git diff`` colours it: removed
lines red, added lines green, hunk headers cyan, file headers bold.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

RED, GREEN, CYAN, BOLD, RESET = "\033[31m", "\033[32m", "\033[36m", "\033[1m", "\033[0m"


def use_color(choice: str, stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """Colour ``stream``? ``choice`` is ``--color``'s value."""
    env = os.environ if env is None else env
    if choice == "always":
        return True
    if choice == "never" or env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


def paint_diff(text: str) -> str:
    """A unified diff (already made inert for a terminal) with its lines coloured."""
    out = []
    for line in text.split("\n"):
        if line.startswith(("--- ", "+++ ")):
            out.append(f"{BOLD}{line}{RESET}")
        elif line.startswith("@@"):
            out.append(f"{CYAN}{line}{RESET}")
        elif line.startswith("-"):
            out.append(f"{RED}{line}{RESET}")
        elif line.startswith("+"):
            out.append(f"{GREEN}{line}{RESET}")
        else:
            out.append(line)
    return "\n".join(out)
