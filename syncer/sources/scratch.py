"""What the real engines (kustomize, helm) run in: a scratch copy of the user's tree, no network.

Both sources render by running the real tool on a copy (the user's files are never touched:
edits to verify are written over the copy) with every proxy pointed at a port that refuses at
once, and, where the machine permits one, inside a namespace with no network at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from functools import cache
from pathlib import Path

#: The discard port on loopback: a proxied connection is refused at once, never forwarded.
DEAD_PROXY = "http://127.0.0.1:9"
_PROXY_VARS = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")


@cache
def sandbox() -> tuple[str, ...]:
    """The prefix that runs a command without a network (``unshare --net``, as root, else in a
    user namespace), or () where neither is permitted (a container without the capability):
    then the offline checks and the dead proxy are what keep the tool offline."""
    found = shutil.which("unshare")
    for prefix in ((found, "--net"), (found, "--map-root-user", "--net")) if found else ():
        try:
            done = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return prefix
    return ()


def offline_env(drop_prefix: str = "", **extra: str) -> dict[str, str]:
    """This process's environment with every proxy variable pointed at ``DEAD_PROXY`` (and
    variables starting with ``drop_prefix``, a tool's own settings, left out), plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in _PROXY_VARS and not (drop_prefix and k.upper().startswith(drop_prefix))}
    env.update(HTTP_PROXY=DEAD_PROXY, HTTPS_PROXY=DEAD_PROXY, http_proxy=DEAD_PROXY, https_proxy=DEAD_PROXY,
               NO_PROXY="", no_proxy="", **extra)
    return env


def copy_over(src: Path, dst: Path, texts: Mapping[str, str]) -> None:
    """``src`` into ``dst`` without symlinks (a link could lead out of the tree), then ``texts``
    (path relative to ``src`` -> text) written over the copy, byte for byte."""
    def skip_links(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if os.path.islink(os.path.join(folder, n))]

    shutil.copytree(src, dst, ignore=skip_links)
    for rel, text in texts.items():
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
