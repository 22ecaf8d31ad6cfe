"""A forge credential: one fixed token, the token in a file, or a source that mints them.

``ForgeHttp`` asks its ``TokenSource`` for the token of each request, masks every token it
``knows`` in messages, and on a 401 has it ``expire`` the current one: a token file is read
again (a rotated Secret is taken without a restart), a GitHub App's token minted again
(``githubapp.InstallationToken``). No token shows itself in a ``repr``.
"""

from __future__ import annotations

from typing import Protocol

from syncer.errors import ForgeError

__all__ = ["FileToken", "Secret", "StaticToken", "TokenSource"]


class Secret:
    """A string that does not show itself in ``repr``/``str`` (debuggers, locals dumps)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


class TokenSource(Protocol):
    """Where a forge credential comes from when it is not one fixed token (a GitHub App's
    installation token, minted and refreshed). ``token()`` may call the forge to mint one;
    ``known()`` never does: the tokens to mask in messages; ``expire()`` drops the current
    token after the forge refused it and says whether a new one can be had; ``hint`` names the
    settings to check when the forge refuses the credential."""

    hint: str

    def token(self) -> str: ...

    def known(self) -> list[str]: ...

    def expire(self) -> bool: ...


class StaticToken:
    """One token for the life of the process (``--token-file``, ``SYNCER_FORGE_TOKEN``)."""

    hint = "--token-file/SYNCER_FORGE_TOKEN"

    def __init__(self, token: str) -> None:
        self._secret = Secret(token)

    def __repr__(self) -> str:
        return "StaticToken('***')"

    def token(self) -> str:
        return self._secret.reveal()

    def known(self) -> list[str]:
        return [self._secret.reveal()]

    def expire(self) -> bool:
        return False


class FileToken:
    """The token in a file (``--token-file``, a mounted Secret): read when first needed, and
    again when the forge refuses it, so a rewritten file (a rotated Secret) is taken without a
    restart. ``expire`` says whether the file now holds another token."""

    def __init__(self, path: str, hint: str = "--token-file") -> None:
        self.path, self.hint = path, f"{hint} {path}"
        self._secret: Secret | None = None
        self._seen: list[str] = []  # every token read, to mask them all

    def __repr__(self) -> str:
        return f"FileToken({self.path!r})"

    def _read(self) -> str:
        from pathlib import Path

        try:
            token = Path(self.path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ForgeError(f"{self.hint}: {exc.strerror or exc}", transient=True) from None
        if not token:
            raise ForgeError(f"{self.hint} is empty", transient=True)
        if token not in self._seen:
            self._seen.append(token)
        return token

    def token(self) -> str:
        if self._secret is None:
            self._secret = Secret(self._read())
        return self._secret.reveal()

    def known(self) -> list[str]:
        return list(self._seen)

    def expire(self) -> bool:
        old = self._secret.reveal() if self._secret is not None else None
        try:
            new = self._read()
        except ForgeError:
            return False
        self._secret = Secret(new)
        return new != old
