"""Running the real kustomize on a scratch copy of ``hosts/<installation>/``.

The binary is the one ``--kustomize`` names (``sources.source.Tools``; env twin
``SYNCER_KUSTOMIZE``): ``kubectl`` (``kubectl kustomize DIR``: kubectl embeds kustomize) by
default; a name containing ``kustomize`` is run as ``kustomize build DIR``. Every render works on a copy of the installation's directory
(symlinks left out, nothing outside it reachable), so the user's files are never touched:
the copy may get ``buildMetadata`` added (origins of each resource) or the edits to verify.
Rendering is offline: remote references are refused before kustomize runs (``offline``),
kustomize runs in a network namespace of its own (no interface but a down loopback) when
``unshare`` can make one here, and its HTTP goes to a proxy that does not answer in any case.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from syncer.errors import ConfigError
from syncer.sources.scratch import copy_over, offline_env, sandbox
from syncer.yamlread import parse_documents

#: kustomize's error (several lines) is shown as one line of at most this many characters.
MAX_MESSAGE = 400
#: One render of a small installation takes ~0.1 s on an idle machine; a render past this is
#: a hung binary (or one waiting on the network despite the dead proxy).
RENDER_TIMEOUT_S = 120.0
#: Annotations ``buildMetadata`` adds: stripped again from the objects syncer compares.
ORIGIN = "config.kubernetes.io/origin"
TRANSFORMATIONS = "alpha.config.kubernetes.io/transformations"
#: kustomize's output is read at most this far: more is one error (parsed, it would not fit the
#: sidecar's 128 MiB; the API server refuses any object over 1.5 MiB anyway).
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
MAX_ERROR_BYTES = 64 * 1024
#: How many times kustomize ran in this process (loads and verifications; bench reads it).
RUNS = [0]
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@|github\.com/|gitlab\.com/|bitbucket\.org/)|\?ref=|\.git(?://|$)")


def binary(tool: str) -> list[str]:
    """The command that renders a directory with ``tool`` (its last argument follows)."""
    chosen = tool.strip() or "kubectl"
    found = shutil.which(chosen)
    if found is None:
        raise ConfigError(f"kustomize: {chosen!r} not found (set SYNCER_KUSTOMIZE or --kustomize to kubectl or "
                          "kustomize)")
    return [found, "build"] if "kustomize" in Path(found).name else [found, "kustomize"]


def is_remote(entry: str) -> bool:
    """Does a ``resources``/``components`` entry name a remote base (a URL, a git repository)?"""
    return bool(_REMOTE.search(entry.strip()))


def render(directory: Path, shown: str, tool: str, texts: Mapping[str, str] | None = None,
           helm: bool = False, inside: str = "") -> list[Any]:
    """The documents kustomize (``tool``: ``binary``) renders from a copy of ``directory`` (its
    subdirectory ``inside``, when given) with ``texts`` written over the copy (path relative to
    ``directory`` -> text); ConfigError with kustomize's error in one line."""
    cmd = binary(tool)
    RUNS[0] += 1
    with tempfile.TemporaryDirectory(prefix="syncer-kustomize-") as scratch:
        root = Path(scratch) / directory.name
        copy_over(directory, root, texts or {})
        args = [*sandbox(), *cmd, *(["--enable-helm"] if helm else []), str(root / inside) if inside else str(root)]
        code, out, err = _run(args, scratch, shown, cmd[0])
        if code != 0:
            host = shown.removesuffix("/" + inside) if inside else shown
            said = one_line(err.decode("utf-8", "replace").replace(str(root), host).replace(scratch, ""))
            if len(said) > MAX_MESSAGE:
                said = said[:MAX_MESSAGE // 3] + " ... " + said[-(MAX_MESSAGE * 2 // 3):]  # the cause is at the end
            raise ConfigError(f"{shown}: kustomize build failed: {said or 'no message'}")
        return [d for d in parse_documents(out.decode("utf-8"), f"kustomize build {shown}") if d is not None]


def _run(args: list[str], cwd: str, shown: str, binary_path: str) -> tuple[int, bytes, bytes]:
    """Run kustomize; its output is read at most ``MAX_OUTPUT_BYTES`` (then it is stopped:
    a render that large would not fit the sidecar's memory once parsed), its errors at most
    ``MAX_ERROR_BYTES``, all of it within ``RENDER_TIMEOUT_S``."""
    import selectors

    try:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=offline_env(GIT_ALLOW_PROTOCOL="file", GIT_TERMINAL_PROMPT="0"), cwd=cwd)
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot run {binary_path}: {exc.strerror or exc}") from exc
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + RENDER_TIMEOUT_S
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        try:
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ConfigError(f"{shown}: kustomize did not finish in {RENDER_TIMEOUT_S:.0f}s")
                for key, _ in sel.select(timeout=min(left, 1.0)):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    sink = key.data
                    sink.extend(chunk)
                    if sink is out and len(out) > MAX_OUTPUT_BYTES:
                        raise ConfigError(f"{shown}: kustomize renders more than {_size(MAX_OUTPUT_BYTES)} "
                                          "of objects: not read (a generator or resource file that large cannot be "
                                          "applied either)")
                    if sink is err and len(err) > MAX_ERROR_BYTES:
                        del err[MAX_ERROR_BYTES:]
            code = proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
        except subprocess.TimeoutExpired as exc:
            raise ConfigError(f"{shown}: kustomize did not finish in {RENDER_TIMEOUT_S:.0f}s") from exc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()
    return code, bytes(out), bytes(err)


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n // 1024} KiB"


#: A klog line's header (``E1201 10:32:17.123456   12345 run.go:72] ``), which some kubectl builds
#: put before a command's error, and its structured value (``"command failed" err=<`` then the
#: error's lines, each after a tab, and `` >``; or ``err="..."`` on one line).
_KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w./-]+:\d+\]\s?")
_KLOG_VALUE = re.compile(r'^(?:"[^"]*"\s*)?(?:err=)?')


def one_line(stderr: str) -> str:
    """kustomize's error as one line, whatever kubectl or kustomize wrapped it in: klog's
    header and structure, ``error:``/``Error:``, line breaks and indentation gone."""
    parts: list[str] = []
    for raw in stderr.splitlines():
        line = raw.strip()
        # a wrapper's klog around a kubectl's own klog (a tab-indented line of the outer value): each layer off
        while (head := _KLOG.match(line)) is not None:
            line = _KLOG_VALUE.sub("", line[head.end():], count=1)
            if line.startswith('"') and line.endswith('"') and len(line) > 1:
                try:
                    line = json.loads(line)
                except ValueError:
                    line = line[1:-1]
            line = line.removeprefix("<").strip()
        text = line.strip()
        if text == ">" or not text:
            continue
        parts.extend(p.strip() for p in text.splitlines() if p.strip())
    said = " ".join(parts)
    for prefix in ("error: ", "Error: "):
        said = said.removeprefix(prefix)
    return said


def origin_of(obj: dict[str, Any], strip: bool) -> tuple[dict[str, Any], tuple[tuple[str, str], ...]]:
    """The parsed origin annotation of a rendered object ({} when none) and the transformers
    that ran on it, in order: (the kustomization that configured it, relative to the rendered
    directory; its kind). ``strip`` removes the annotations ``buildMetadata`` added (and
    ``annotations`` itself when left empty)."""
    meta = obj.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(notes, dict):
        return {}, ()
    raw, steps = notes.get(ORIGIN), notes.get(TRANSFORMATIONS)
    if strip and isinstance(meta, dict):
        notes.pop(ORIGIN, None)
        notes.pop(TRANSFORMATIONS, None)
        if not notes:
            del meta["annotations"]
    origin = _yaml(raw)
    ran = []
    for step in _yaml(steps, many=True):
        by = step.get("configuredBy") if isinstance(step, dict) else None
        where = step.get("configuredIn") if isinstance(step, dict) else None
        if isinstance(by, dict) and isinstance(by.get("kind"), str):
            ran.append((where if isinstance(where, str) else "", by["kind"]))
    return (origin if isinstance(origin, dict) else {}), tuple(ran)


def _yaml(raw: Any, many: bool = False) -> Any:
    if not isinstance(raw, str):
        return [] if many else {}
    try:
        docs = parse_documents(raw, ORIGIN)
    except ConfigError:
        docs = []
    first = docs[0] if docs else None
    if many:
        return first if isinstance(first, list) else []
    return first if isinstance(first, dict) else {}
