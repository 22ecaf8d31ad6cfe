"""Running the real ``helm template`` on a scratch copy of a chart, offline.

The binary is the one the caller names (``--helm``, a name on PATH or a path; default ``helm``):
it is passed in as a value, never read from the environment here. Every render works on a
copy of the chart directory (symlinks left out), so the user's files are never touched: the
copy gets the edits to verify and one template of syncer's own that prints the values helm
computed (``.Values`` after coalescing the chart's defaults, its vendored subcharts' and the
given values files), which is how a field is traced to a values key without parsing templates.

Offline: helm's repository configuration, cache and plugins point into the scratch
directory (so ``helm`` reads no user repositories and writes nothing in ``$HOME``), its HTTP
goes to a proxy that refuses at once, and it runs without a network when ``unshare`` can make
a namespace here. A dependency that is not vendored under ``charts/`` is refused before helm
runs: syncer never runs ``helm dependency`` nor reaches a chart repository.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncer.detect.normalize import MISSING
from syncer.errors import ConfigError
from syncer.model import Path as FieldPath
from syncer.sources.manifests import object_ref
from syncer.sources.scratch import copy_over, offline_env, sandbox
from syncer.yamlread import parse_documents

DEFAULT_BINARY = "helm"
#: helm's error (several lines) is shown as one line of at most this many characters.
MAX_MESSAGE = 400
#: A render of a small chart takes ~0.1 s on an idle machine: past this it hangs.
RENDER_TIMEOUT_S = 120.0
#: The template syncer adds to the copy: it prints the computed values as one JSON document.
VALUES_TEMPLATE = "templates/zz-syncer-values.yaml"
_VALUES_MARK = "# syncer: computed values"
#: Annotations that make a rendered document a hook (test pods, jobs): never a live object of the release.
HOOK = "helm.sh/hook"
#: How many times helm ran in this process (loads, mappings, verifications; bench reads it).
RUNS = [0]
_SOURCE = re.compile(r"^# Source: (.+)$", re.M)
_SEPARATOR = re.compile(r"^---[ \t]*$", re.M)


def binary(chosen: str | None) -> str:
    """The absolute path of the helm to run; ConfigError when there is none."""
    name = (chosen or "").strip() or DEFAULT_BINARY
    found = shutil.which(name)
    if found is None:
        raise ConfigError(f"helm: {name!r} not found (install helm, or name it with --helm; "
                          "bash .ci/helm.sh installs the pinned one)")
    return found


@dataclass(frozen=True)
class Rendered:
    """What one render gave: the documents (with the template each came from), hooks left out,
    and the values helm computed."""

    docs: tuple[tuple[str, dict[str, Any]], ...]  # (source template, object)
    values: dict[str, Any]
    hooks: int  # documents left out as hooks


def _env(scratch: str) -> dict[str, str]:
    """Offline, and helm's own settings (``HELM_*``) pointed into ``scratch``: no user repositories read."""
    home = os.path.join(scratch, ".helm")
    return offline_env("HELM_", HELM_CACHE_HOME=os.path.join(home, "cache"), HELM_CONFIG_HOME=os.path.join(home, "config"),
                       HELM_DATA_HOME=os.path.join(home, "data"), HELM_PLUGINS=os.path.join(home, "plugins"),
                       HELM_REGISTRY_CONFIG=os.path.join(home, "registry.json"),
                       HELM_REPOSITORY_CONFIG=os.path.join(home, "repositories.yaml"),
                       HELM_REPOSITORY_CACHE=os.path.join(home, "repository"), HOME=home)


def _copy(src: Path, dst: Path, texts: Mapping[str, str]) -> None:
    """The chart copied with ``texts`` over it, and syncer's template that prints the computed values."""
    copy_over(src, dst, texts)
    (dst / VALUES_TEMPLATE).parent.mkdir(parents=True, exist_ok=True)
    (dst / VALUES_TEMPLATE).write_text(f"{_VALUES_MARK}\n{{{{ toJson .Values }}}}\n", encoding="utf-8")


def _one_line(err: str, scratch: str, root: Path, shown: str) -> str:
    err = err.replace(str(root), shown).replace(scratch + "/", "").replace(scratch, "")
    said = " ".join(ln.strip() for ln in err.splitlines() if ln.strip()).removeprefix("Error: ")
    if len(said) > MAX_MESSAGE:
        said = said[:MAX_MESSAGE // 3] + " ... " + said[-(MAX_MESSAGE * 2 // 3):]  # the cause is at the end
    return said or "no message"


def render(helm: str, chart: Path, shown: str, release: str, namespace: str, *,
           texts: Mapping[str, str] | None = None, values: Sequence[str] = (),
           kube_version: str = "", api_versions: Sequence[str] = ()) -> Rendered:
    """``helm template release chart -n namespace -f v1 -f v2 ...`` on a copy of ``chart`` with
    ``texts`` (path relative to the chart -> text) written over it; ``values`` are the texts of
    the values files, lowest precedence first. ConfigError with helm's error in one line."""
    RUNS[0] += 1
    with tempfile.TemporaryDirectory(prefix="syncer-helm-") as scratch:
        root = Path(scratch) / "chart"
        _copy(chart, root, texts or {})
        args = [*sandbox(), helm, "template", release, str(root), "--namespace", namespace]
        for i, text in enumerate(values):
            path = Path(scratch) / f"values-{i}.yaml"
            path.write_text(text, encoding="utf-8")
            args += ["--values", str(path)]
        if kube_version:
            args += ["--kube-version", kube_version]
        for api in api_versions:
            args += ["--api-versions", api]
        try:
            done = subprocess.run(args, capture_output=True, timeout=RENDER_TIMEOUT_S, env=_env(scratch), cwd=scratch,
                                  check=False, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise ConfigError(f"{shown}: helm template did not finish in {RENDER_TIMEOUT_S:.0f}s") from exc
        except OSError as exc:
            raise ConfigError(f"{shown}: cannot run {helm}: {exc.strerror or exc}") from exc
        if done.returncode != 0:
            said = _one_line(done.stderr.decode("utf-8", "replace"), scratch, root, shown)
            raise ConfigError(f"{shown}: helm template failed: {said}")
        return parse_output(done.stdout.decode("utf-8"), shown)


def parse_output(text: str, shown: str) -> Rendered:
    """The documents of ``helm template``'s output, each with the template it came from; the
    hooks left out; the computed values from syncer's own template."""
    docs: list[tuple[str, dict[str, Any]]] = []
    values: dict[str, Any] | None = None
    hooks = 0
    for chunk in _SEPARATOR.split(text):
        if not chunk.strip():
            continue
        found = _SOURCE.search(chunk)
        source = found.group(1).strip() if found else ""
        if _VALUES_MARK in chunk:
            body = chunk.split(_VALUES_MARK, 1)[1].strip()
            try:
                loaded = json.loads(body) if body else {}
            except ValueError as exc:
                raise ConfigError(f"{shown}: helm printed values syncer cannot read: {exc}") from exc
            values = loaded if isinstance(loaded, dict) else {}
            continue
        for doc in parse_documents(chunk, f"helm template {shown} ({source or 'output'})"):
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise ConfigError(f"helm template {shown} ({source}): a document that is not a mapping")
            meta = doc.get("metadata")
            notes = meta.get("annotations") if isinstance(meta, dict) else None
            if isinstance(notes, dict) and HOOK in notes:
                hooks += 1
                continue
            if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
                docs.extend((source, item) for item in doc["items"] if isinstance(item, dict))
                continue
            docs.append((source, doc))
    return Rendered(tuple(docs), values if values is not None else {}, hooks)


Key = tuple[str, str, str]


def index(rendered: Rendered, namespace: str) -> dict[Key, dict[str, Any]]:
    """The rendered objects by (kind, namespace, name); a document that is no object is left out."""
    out: dict[Key, dict[str, Any]] = {}
    for _, doc in rendered.docs:
        try:
            ref = object_ref(doc, namespace, "helm template")
        except ConfigError:
            continue
        out[(ref.kind, ref.namespace, ref.name)] = doc
    return out


def differences(a: Any, b: Any, path: FieldPath = ()) -> list[FieldPath]:
    """Where two rendered objects differ (a list of another length differs as a whole)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in {**a, **b} for p in differences(a.get(k, MISSING), b.get(k, MISSING), path + (k,))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in differences(x, y, path + (i,))]
    return [] if a == b and type(a) is type(b) else [path]
