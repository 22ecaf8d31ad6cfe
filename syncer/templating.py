"""Which values are templates: judged per value, never per file.

A value is an input to a tool, not what the cluster got, only where a real tool substitutes:
Helm's (Go template) ``{{ ... }}``, and a ``${VAR}`` that Flux's ``postBuild`` substitutes --
a variable some Flux ``Kustomization`` of the repository declares in ``postBuild.substitute``
(any variable, once one of them reads ``postBuild.substituteFrom``: its names live in a
ConfigMap or Secret of the cluster). Everything else is text: a ``${FRONTEND_ADDR}`` in a
container's shell script is the shell's, and the file's other values are written as usual.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

_GO = re.compile(r"\{\{.*?\}\}", re.S)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[=+?-][^}\n]*)?\}")
#: The repository scan for Flux's declarations is bounded: files read, and each file's size.
MAX_SCANNED_FILES = 20_000
MAX_SCANNED_BYTES = 1024 * 1024


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*_texts(k), *_texts(v))]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def marks(value: Any, substituted: frozenset[str] | None) -> str:
    """The first template mark in ``value`` (a scalar, or every string inside a mapping or a
    list), or "": ``{{ }}`` always, ``${VAR}`` when VAR is in ``substituted`` (None: any VAR)."""
    for text in _texts(value):
        go = _GO.search(text)
        if go:
            return go.group(0)
        for var in _VAR.finditer(text):
            if substituted is None or var.group(1) in substituted:
                return var.group(0)
    return ""


def flux_substitutions(repo: Path) -> frozenset[str] | None:
    """The variables Flux ``postBuild.substitute`` declares anywhere in ``repo`` (None: some
    ``substituteFrom`` makes any name possible)."""
    from syncer.yamlread import parse_documents
    from syncer.errors import ConfigError

    names: set[str] = set()
    seen = 0
    for folder, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            if not name.endswith((".yaml", ".yml")):
                continue
            seen += 1
            if seen > MAX_SCANNED_FILES:
                return frozenset(names)
            path = Path(folder) / name
            try:
                if path.is_symlink() or path.stat().st_size > MAX_SCANNED_BYTES:
                    continue
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "postBuild" not in text:
                continue
            try:
                docs = parse_documents(text, str(path))
            except ConfigError:
                continue
            for doc in docs:
                spec = doc.get("spec") if isinstance(doc, dict) else None
                post = spec.get("postBuild") if isinstance(spec, dict) else None
                if not isinstance(post, dict):
                    continue
                if post.get("substituteFrom"):
                    return None
                declared = post.get("substitute")
                if isinstance(declared, dict):
                    names.update(str(k) for k in declared)
    return frozenset(names)
