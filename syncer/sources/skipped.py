"""Files under ``hosts/<installation>/`` that are no manifests, left out with a note (never an
error): a Helm chart's source (a directory with a ``Chart.yaml``), a template that is not
YAML or not objects as it stands, kustomize's own files, YAML holding no object at all
(values, a tool's settings). And ``templated``: a manifest holding template expressions is
read but never edited.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from syncer.model import FileError


def templated(text: str) -> bool:
    """Does a manifest hold template expressions (``{{ ... }}`` Helm/Go, ``${VAR}`` envsubst)?
    Such a file is an input to a tool, not what the cluster got: it is never edited."""
    return ("{{" in text or "${" in text) and bool(_TEMPLATE.search(text))


_GO_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.S)
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:?=+-][^}\n]*)?\}", re.S)


@dataclass(frozen=True)
class Skipped(FileError):
    """A file that is not a manifest and is left out with a note, never an error."""


#: kustomize's own files (``kustomization.yaml``, components): inputs to a build, never objects.
_KUSTOMIZE = "kustomize.config.k8s.io/"
#: A directory holding this file is a Helm chart's source: templates and values, not objects.
CHART_FILE = "Chart.yaml"


def charts(files: list[Path], repo: Path) -> dict[Path, Skipped]:
    """The chart directories among ``files`` (a directory with a ``Chart.yaml``), one note each."""
    roots = sorted({p.parent for p in files if p.name == CHART_FILE})
    out: dict[Path, Skipped] = {}
    for root in roots:
        if any(r in root.parents for r in roots):
            continue  # a subchart (charts/x/Chart.yaml): its parent's note covers it
        shown = root.relative_to(repo).as_posix()
        count = sum(1 for p in files if root in p.parents)
        out[root] = Skipped(shown, f"{shown}/: a Helm chart's source ({CHART_FILE}, {count} files): skipped; "
                                   "syncer compares rendered manifests and never edits templates")
    return out


def skip_reason(text: str, docs: Sequence[object] | None, entries: Sequence[object]) -> str | None:
    """Why a file is no manifest at all (a note, not an error), or None: a Helm/Go template that is not
    valid YAML or not objects as it stands, or YAML none of whose documents is an object (no
    ``apiVersion`` nor ``kind``: values, a tool's settings). A file where some document is an
    object keeps its other documents' problems (``entries`` holding a ``FileError``) as errors:
    a malformed manifest."""
    failed = docs is None or any(isinstance(e, FileError) for e in entries)
    if docs and all(isinstance(d, dict) and str(d.get("apiVersion", "")).startswith(_KUSTOMIZE)
                    for d in docs if d is not None):
        return "a kustomize file (Kustomization/Component), not an object the cluster holds: skipped"
    if failed and _GO_TEMPLATE.search(text):
        return "a template ({{ }} expressions), not objects as it stands: skipped"
    if docs is not None and failed and not any(
            isinstance(d, dict) and ("apiVersion" in d or "kind" in d) for d in docs):
        return "not a Kubernetes object (no document has apiVersion or kind): skipped"
    return None
