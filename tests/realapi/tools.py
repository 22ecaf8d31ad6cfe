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


def kubectl(kubeconfig: "os.PathLike[str] | str", *args: str, editor: "os.PathLike[str] | str | None" = None) -> str:
    """The real kubectl as a person runs it (``editor``: a script run as ``KUBE_EDITOR``); its
    output, or the test fails with kubectl's error."""
    env = None
    if editor is not None:
        import sys

        env = {"KUBE_EDITOR": f"{sys.executable} {editor}", "PATH": "/usr/bin:/bin",
               "HOME": os.path.dirname(os.fspath(kubeconfig))}
    done = subprocess.run([require_tool("kubectl"), "--kubeconfig", os.fspath(kubeconfig), *args], capture_output=True,
                          text=True, timeout=120, check=False, stdin=subprocess.DEVNULL, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def syncer_later(*argv: str, minutes: float = 11) -> tuple[int, str]:
    """``syncer *argv`` as if run ``minutes`` from now (past a 10 m stableFor); (exit code, stdout)."""
    import io
    from datetime import datetime, timedelta, timezone

    from syncer.cli import main

    out = io.StringIO()
    later = datetime.now(timezone.utc) + timedelta(minutes=minutes)
    return main(list(argv), now=later, stdout=out, stderr=io.StringIO()), out.getvalue()
