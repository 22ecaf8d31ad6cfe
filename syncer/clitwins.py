"""Every flag's environment twin ``SYNCER_<FLAG>`` (``--forge-url`` -> ``SYNCER_FORGE_URL``),
checked exactly as the flag's own value is: the same type, the same choices, a repeatable flag's
comma-separated list, a yes/no word for a switch. A bad value, of a flag or of its twin, is one
line naming it (``UsageError``, exit 2), never argparse's usage block.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["EnvDefaults", "UsageError"]


class _Twin:
    """A flag's value still to come from its environment twin: checked after parsing exactly as
    the flag's own value would be (``resolve_twins``), so a bad one is refused, not taken."""

    def __init__(self, env: str, raw: str) -> None:
        self.env, self.raw = env, raw

    def __str__(self) -> str:  # what --help shows as the default
        return self.raw


#: A yes/no twin (``SYNCER_LEADER_ELECT``) takes these words, any case; anything else is refused.
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


class UsageError(Exception):
    """A bad flag or environment value: one line, exit 2 (what argparse prints, without its usage)."""


class EnvDefaults(argparse.ArgumentParser):
    """An ArgumentParser whose options default to their ``SYNCER_*`` environment twin, and whose
    errors are one line (``UsageError``) instead of a usage block."""

    def add_argument(self, *args: str, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        longs = [a for a in args if a.startswith("--") and a not in ("--help", "--version")]
        if not longs:
            return action
        # Every long alias has a twin (--resync and --resync-interval); the first one set wins.
        twins = ["SYNCER_" + long[2:].upper().replace("-", "_") for long in longs]
        env = next((e for e in twins if e in os.environ), twins[0])
        if env in os.environ and env != "SYNCER_FORGE_TOKEN":
            action.default = _Twin(env, os.environ[env])
        action.help = (action.help or "") + f" [env {env}]"
        return action

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """Parse, then give each flag left to its environment twin that twin's checked value (a
        subcommand's parser does the same for its own flags)."""
        parsed, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            value = getattr(parsed, action.dest, None)
            if isinstance(value, _Twin):
                setattr(parsed, action.dest, _twin_value(action, value))
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


def _twin_value(action: argparse.Action, twin: _Twin) -> Any:
    """``twin``'s value as ``action`` would take it from the command line: the same type, the
    same choices, a repeatable flag's comma-separated list; ``UsageError`` naming the variable."""
    def one(text: str) -> Any:
        try:
            value = action.type(text) if callable(action.type) else text
        except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
            raise UsageError(f"syncer: error: {twin.env}={twin.raw!r}: {exc}") from None
        if action.choices is not None and value not in action.choices:
            choices = ", ".join(map(str, action.choices))
            raise UsageError(f"syncer: error: {twin.env}={twin.raw!r}: invalid choice (choose from {choices}), as for "
                             f"{action.option_strings[-1]}")
        return value

    if isinstance(action, argparse._StoreTrueAction):
        word = twin.raw.strip().lower()
        if word not in _TRUE + _FALSE:
            raise UsageError(f"syncer: error: {twin.env}={twin.raw!r}: expected true or false (1/0, yes/no, on/off)")
        return word in _TRUE
    if isinstance(action, argparse._AppendAction):
        return [one(v) for v in twin.raw.split(",") if v]
    return one(twin.raw)
