"""The command-line tools some realapi tests drive (kubectl, helm): found on PATH, or the test is
skipped with the reason -- the README's test command must pass on a machine without them.
CI (env ``CI`` set) installs them with ``.ci/helm.sh``, so there a missing tool fails instead.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

import pytest


def _missing(message: str) -> None:
    message += "; run `bash .ci/helm.sh` to install it"
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{message} (CI is set, so this is an error, not a skip)", pytrace=False)
    pytest.skip(message)


@functools.lru_cache(maxsize=None)
def _probe(name: str) -> tuple[str | None, str]:
    """(path, "") for a working tool, (None, why) otherwise."""
    path = shutil.which(name)
    if path is None:
        return None, f"{name} is not on PATH"
    args = [path, "version", "--client", "-o", "json"] if name == "kubectl" else [path, "version", "--short"]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{path} does not run: {exc}"
    if out.returncode != 0:
        return None, f"`{path} version` failed: {out.stderr.strip()[:200]}"
    if "dispatcher" in out.stdout:  # gcloud's /usr/bin/kubectl picks a kubectl of its own
        return None, f"the kubectl on PATH ({path}) is gcloud's dispatcher, not kubectl"
    return path, ""


def require_tool(name: str) -> str:
    """Absolute path of ``name`` (``kubectl`` or ``helm``) on PATH; skips (CI: fails) without it."""
    path, why = _probe(name)
    if path is None:
        _missing(why)
    assert path is not None
    return path
