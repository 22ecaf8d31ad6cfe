"""Where a live value of a Helm release goes: the one values line that renders it, proved by
rendering.

``place`` maps each drifted field of a rendered object to a values key with one render of
sentinels (``sentinel``), finds the file that sets that key with the highest precedence among
those the installation owns (a chart directory's ``values.yaml``; a HelmRelease's
``spec.values``, else its ``valuesFrom`` ConfigMap's text; never a vendored chart), plans the
edit with the real write-back, and renders again with it: the field must show the live value
and nothing else rendered may change, except fields of the same object that moved live to
exactly what the edit renders. Anything else is reported with its reason and never written.
``verify`` renders all the planned files together once more before anything is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path as FsPath
from typing import Any

from syncer.errors import ConfigError
from syncer.sources.helm import sentinel
from syncer.sources.helm.layout import Release, flux_release, stamp
from syncer.sources.helm.render import Rendered, differences, index, render
from syncer.kinds import NEVER_WRITTEN
from syncer.sources.kustomize.fields import same
from syncer.sources.manifests import GitObject, object_ref
from syncer.model import Action, Drift, Edit, FileError, ObjectRef, Path, format_path
from syncer.detect.normalize import MISSING, get_path, normalize
from syncer.secrets.redact import REDACTED
from syncer.yamlread import parse_documents

@dataclass(frozen=True)
class Renderer:
    """How to run helm for this installation."""

    helm: str
    kube_version: str = ""
    api_versions: tuple[str, ...] = ()


class _Refused(Exception):
    """A drift that cannot be written: the message says why."""


class HelmMap:
    """The source map of an installation's Helm releases (``Manifests.source_map``)."""

    def __init__(self, repo: FsPath, installation: str, renderer: Renderer, releases: list[Release],
                 renders: list[Rendered], owners: dict[ObjectRef, int], plain: dict[ObjectRef, GitObject],
                 default_namespace: str) -> None:
        self.repo, self.installation, self.renderer = repo.resolve(), installation, renderer
        self.releases, self.renders, self.owners = releases, renders, owners
        self.plain, self.default_namespace = plain, default_namespace
        self.objects: dict[ObjectRef, GitObject] = {}  # the rendered objects (set by the loader)
        self._placed: dict[str, list[Drift]] = {}
        self._renders: dict[tuple[int, tuple[tuple[str, str], ...], tuple[str, ...]], Rendered] = {}
        self.verifications = 0  # renders made to map and prove edits (bench and tests read it)

    # -- rendering -------------------------------------------------------------------------
    def render_with(self, i: int, texts: dict[str, str], extra: tuple[str, ...] = ()) -> Rendered:
        """Release ``i`` rendered with ``texts`` (repo-relative file -> text) in place of the
        files, and ``extra`` values documents over its values."""
        key = (i, tuple(sorted(texts.items())), extra)
        if key in self._renders:  # a proof and the verification of the same edits render the same
            return self._renders[key]
        rel = self.releases[i]
        self.verifications += 1
        values = rel.values
        inside = rel.chart_shown + "/"
        chart_texts = {f.removeprefix(inside): t for f, t in texts.items() if f.startswith(inside)}
        if rel.owner is not None and texts:
            values = self._release_values(rel, texts)
        got = render(self.renderer.helm, rel.chart, rel.chart_shown, rel.name, rel.namespace, texts=chart_texts,
                     values=(*values, *extra), kube_version=self.renderer.kube_version,
                     api_versions=self.renderer.api_versions)
        for _, doc in got.docs:
            stamp(doc, rel)
        if len(self._renders) >= 32:
            self._renders.clear()
        self._renders[key] = got
        return got

    def _release_values(self, rel: Release, texts: dict[str, str]) -> tuple[str, ...]:
        """A HelmRelease's values files when some of its manifests' files hold ``texts``."""
        objects = dict(self.plain)
        for file, text in texts.items():
            for j, doc in enumerate(parse_documents(text, file)):
                if not isinstance(doc, dict) or "kind" not in doc:
                    continue
                try:
                    ref = object_ref(doc, self.default_namespace, file)
                except ConfigError:
                    continue
                if ref in objects and objects[ref].file == file:
                    objects[ref] = replace(objects[ref], data=doc, doc=j)
        assert rel.owner is not None
        return flux_release(self.repo, objects[rel.owner], objects, self.default_namespace).values

    # -- placing ---------------------------------------------------------------------------
    def origin_file(self, obj: GitObject) -> str:
        return obj.file

    def place(self, obj: GitObject, drifts: list[Drift]) -> list[Drift]:
        if obj.ref not in self.owners:  # a manifest of the directory (a HelmRelease, its values): its own file
            return drifts
        todo = [d for d in drifts if d.edits and obj.ref.kind not in NEVER_WRITTEN and REDACTED not in (d.git, d.live)]
        if not todo:
            return [replace(d, edits=()) for d in drifts]
        key = hashlib.sha256(repr((str(obj.ref), [(d.path, repr(d.git), repr(d.live), d.action.value, d.reason)
                                                   for d in drifts])).encode()).hexdigest()
        if key not in self._placed:
            if len(self._placed) >= 256:
                self._placed.clear()
            placed = self._place(obj, todo)
            self._placed[key] = [placed.get(id(d), replace(d, edits=())) for d in drifts]
        return list(self._placed[key])

    def _refuse(self, drift: Drift, why: str) -> Drift:
        reason = f"not written: {why}"
        if drift.action is Action.REPORT and drift.reason:
            reason = f"{drift.reason}; {reason}"
        return replace(drift, action=Action.REPORT, reason=reason, edits=())

    def _place(self, obj: GitObject, todo: list[Drift]) -> dict[int, Drift]:
        i = self.owners[obj.ref]
        values = self.renders[i].values
        out: dict[int, Drift] = {}
        wanted: dict[int, list[sentinel.Candidate]] = {}
        known: dict[Path, sentinel.Candidate] = {}  # one sentinel per values key, whichever drifts it may render
        n = 0
        for d in todo:
            if not _scalar(d.git) or not _scalar(d.live):
                out[id(d)] = self._refuse(d, "the value is not one scalar (a mapping, a list, or absent on one side): "
                                             "no single values line sets it")
                continue
            if isinstance(d.git, bool) or isinstance(d.live, bool):
                out[id(d)] = self._refuse(d, "a true/false field: which values key sets it cannot be told by a "
                                             "sentinel (set it in the values yourself)")
                continue
            found = [known.setdefault(c.path, c) for c in sentinel.candidates(values, d.git, n)]
            n += len(found)
            if not found:
                out[id(d)] = self._refuse(d, f"no values key of release {self.releases[i].name} renders "
                                             f"{d.git!r}: a literal of the chart's template {obj.file}")
                continue
            wanted[id(d)] = found
        if not wanted:
            return out
        probes = self._probe(i, list(known.values()))
        planned: list[Drift] = []
        origin: dict[int, Drift] = {}
        for d in todo:
            if id(d) not in wanted:
                continue
            try:
                placed = self._edits(i, obj, d, wanted[id(d)], probes, [t.path for t in todo])
            except _Refused as exc:
                out[id(d)] = self._refuse(d, str(exc))
                continue
            planned.append(placed)
            origin[id(placed)] = d
        proved = self._prove(i, obj, planned)
        for placed in planned:
            why = proved[id(placed)]
            d = origin[id(placed)]
            out[id(d)] = placed if not why else self._refuse(replace(d, file=obj.file), why)
        return out

    def _probe(self, i: int, cands: list[sentinel.Candidate]) -> list[tuple[list[sentinel.Candidate], Rendered]]:
        """Renders with the candidates' sentinels: one for all of them, split in halves when a
        render fails (a schema, a ``required``, a type the sentinel breaks)."""
        values = self.renders[i].values
        cands = list({c.path: c for c in cands}.values())
        try:
            got = self.render_with(i, {}, (sentinel.override(values, {c.path: c.token for c in cands}),))
            return [(cands, got)]
        except ConfigError:
            if len(cands) == 1:
                return []
        half = len(cands) // 2
        return self._probe(i, cands[:half]) + self._probe(i, cands[half:])

    def _field(self, i: int, got: Rendered, drift: Drift) -> Any:
        ref = drift.ref
        now = index(got, self.releases[i].namespace).get((ref.kind, ref.namespace, ref.name))
        return get_path(normalize(now), drift.path) if now is not None else MISSING

    def _rendered_at(self, i: int, got: Rendered, token: Any) -> list[tuple[ObjectRef, Path]]:
        """Every field of the release's objects where a sentinel shows."""
        refs = {(r.kind, r.namespace, r.name): r for r, o in self.owners.items() if o == i}
        out: list[tuple[ObjectRef, Path]] = []
        for key, obj in index(got, self.releases[i].namespace).items():
            ref = refs.get(key)
            if ref is None:
                continue
            for path, value in sentinel.leaves(normalize(obj), copies=True):
                if sentinel.found_in(token, value):
                    out.append((ref, path))
        return out

    def _edits(self, i: int, obj: GitObject, d: Drift, cands: list[sentinel.Candidate],
               probes: list[tuple[list[sentinel.Candidate], Rendered]], moved: list[Path]) -> Drift:
        shown: list[tuple[int, sentinel.Candidate]] = []
        field: Any = MISSING
        seen_in: Rendered | None = None
        tokens = {c.path: c for c in cands}
        if all(self._field(i, got, d) is MISSING for subset, got in probes if any(c.path in tokens for c in subset)):
            # some sentinel of the batch renamed or dropped the object: each candidate on its own
            probes = [p for c in cands[:sentinel.MAX_CANDIDATES] for p in self._probe(i, [c])]
        for subset, got in probes:
            mine = [c for c in subset if c.path in tokens]
            if not mine:
                continue
            here = self._field(i, got, d)
            if here is MISSING:
                continue
            hits = [(at, c) for c in mine for at in sentinel.found_in(c.token, here)]
            if hits:
                if shown:  # sentinels of one field spread over renders: render them together
                    return self._edits(i, obj, d, [c for _, c in shown] + [c for _, c in hits],
                                       self._probe(i, [c for _, c in shown] + [c for _, c in hits]), moved)
                shown, field, seen_in = hits, here, got
        if not shown:
            keys = ", ".join(format_path(c.path) for c in cands[:3])
            raise _Refused(f"the chart computes it (a literal of {obj.file}, or a function of values such as "
                           f"{keys}): no values line holds it")
        if len({c.path for _, c in shown}) != len(shown):
            raise _Refused(f"{format_path(shown[0][1].path)} shows more than once in the field")
        if isinstance(field, str):
            solved = sentinel.solve(field, shown, sentinel.go_text(d.live))
            if solved is None:
                keys = ", ".join(format_path(c.path) for _, c in shown)
                raise _Refused(f"the live value {d.live!r} does not keep the template's text around {keys}")
            news = {p: sentinel.typed(t, tokens[p].value) for p, t in solved.items()}
        else:
            news = {shown[0][1].path: d.live}
        edits: list[Edit] = []
        file = ""
        for path, new in news.items():
            if sentinel.go_text(new) == sentinel.go_text(tokens[path].value):
                continue
            assert seen_in is not None
            others = [f"{ref} {format_path(p)}" for ref, p in self._rendered_at(i, seen_in, tokens[path].token)
                      if ref != d.ref or not any(p[:len(m)] == m or m[:len(p)] == p for m in moved)]
            if others:
                raise _Refused(f"{format_path(path)} also renders {', '.join(others[:3])}"
                               f"{' ...' if len(others) > 3 else ''}, which did not move live")
            where, edit = self._edit_for(i, path, new)
            if file and where != file:
                raise _Refused(f"its values keys are set in two files ({file}, {where})")
            file = where
            edits.append(edit)
        if not edits:
            raise _Refused("the values already hold what the live value needs (the chart computes the rest)")
        return replace(d, file=file, edits=tuple(edits))

    def _edit_for(self, i: int, path: Path, new: Any) -> tuple[str, Edit]:
        """The file and edit that set values ``path`` to ``new`` where it has the highest precedence."""
        rel = self.releases[i]
        for src in rel.owned:
            if get_path(src.data, path) is MISSING:
                continue
            if src.inner:
                return src.file, Edit(src.at, new, doc=src.doc, values=True, inner=path)
            return src.file, Edit(src.at + path, new, doc=src.doc, values=True)
        for src in rel.owned:
            if src.inner or not isinstance(path[-1], str) or (isinstance(new, str) and "\n" in new):
                continue  # a new key goes in as one line, or not at all
            parent = get_path(src.data, path[:-1]) if len(path) > 1 else src.data
            if isinstance(parent, dict):
                return src.file, Edit(src.at + path, new, add=True, doc=src.doc, values=True)
        owned = rel.owned[0].what if rel.owned else f"{rel.chart_shown}/values.yaml"
        raise _Refused(f"{format_path(path)} comes from the chart's own defaults ({rel.chart_shown}); "
                       f"set it in {owned} to keep the live value")

    def _prove(self, i: int, obj: GitObject, planned: list[Drift]) -> dict[int, str]:
        """Each planned drift (by id) with "" (proved) or why not: rendered with all the edits,
        then (when that fails) each on its own, then the good ones together."""
        if not planned:
            return {}
        why = self._proof(i, obj, planned)
        if not why:
            return {id(d): "" for d in planned}
        if len(planned) == 1:
            return {id(planned[0]): why}
        # The drifts whose field that render does not show live are the likely culprits: the
        # rest proved together once more and the suspects each alone cost 1 + k renders, where
        # each on its own costs one per drift (most of a diff's time with many edits).
        suspects = self._misses(i, obj, planned)
        rest = [d for d in planned if id(d) not in suspects]
        if suspects and rest and not self._proof(i, obj, rest):
            out = {id(d): "" for d in rest}
            out.update({id(d): self._proof(i, obj, [d]) for d in planned if id(d) in suspects})
            cleared = [d for d in planned if not out[id(d)]]
            if len(cleared) > len(rest) and self._proof(i, obj, cleared):
                return {id(d): (out[id(d)] or "the edits together render something else") for d in planned}
            return out
        alone = {id(d): self._proof(i, obj, [d]) for d in planned}
        good = [d for d in planned if not alone[id(d)]]
        if len(good) > 1 and self._proof(i, obj, good):
            return {id(d): (alone[id(d)] or "the edits together render something else") for d in planned}
        return alone

    def _misses(self, i: int, obj: GitObject, planned: list[Drift]) -> set[int]:
        """The planned drifts (by id) whose field the render with all of them (made by the
        ``_proof`` just before: the same texts, so no new render) does not show as live."""
        from syncer.writeback.plan import plan_changes

        aborted: list[FileError] = []
        changes = plan_changes(self.repo, self.installation, planned, {obj.ref: obj}, aborted)
        if aborted:
            return set()
        try:
            got = self.render_with(i, {c.file: c.new for c in changes})
        except ConfigError:
            return set()
        return {id(d) for d in planned if not same(self._field(i, got, d), d.live)}

    def _proof(self, i: int, obj: GitObject, planned: list[Drift]) -> str:
        from syncer.writeback.plan import plan_changes  # writeback imports the source's models; not the other way

        aborted: list[FileError] = []
        changes = plan_changes(self.repo, self.installation, planned, {obj.ref: obj}, aborted)
        if aborted:
            return aborted[0].message.removeprefix(f"{aborted[0].file}: not written: ")
        try:
            got = self.render_with(i, {c.file: c.new for c in changes})
        except ConfigError as exc:
            return f"the edited values do not render: {exc.message}"
        for d in planned:
            value = self._field(i, got, d)
            if value is MISSING or not same(value, d.live):
                return f"with the edit the chart renders {'nothing' if value is MISSING else repr(value)}, live is {d.live!r}"
        moved = [d.path for d in planned]
        extra = self._side_effects(i, got, {obj.ref: moved})
        if extra:
            return (f"the edit would also change {', '.join(extra[:3])}{' ...' if len(extra) > 3 else ''} "
                    "(that values key renders into fields that did not move live)")
        return ""

    def _side_effects(self, i: int, got: Rendered, allowed: dict[ObjectRef, list[Path]]) -> list[str]:
        now = index(got, self.releases[i].namespace)
        out = []
        for ref, owner in self.owners.items():
            if owner != i:
                continue
            new = now.get((ref.kind, ref.namespace, ref.name))
            if new is None:
                out.append(f"{ref} (no longer rendered)")
                continue
            for path in differences(normalize(self.objects[ref].data), normalize(new)):
                if not any(path[:len(p)] == p or p[:len(path)] == path for p in allowed.get(ref, [])):
                    out.append(f"{ref} {format_path(path) or '(object)'}")
        keys = {(r.kind, r.namespace, r.name) for r, o in self.owners.items() if o == i}
        out.extend(f"{k[0]}/{k[1]}/{k[2]} (newly rendered)" for k in now if k not in keys)
        return out

    # -- verifying -------------------------------------------------------------------------
    def check(self, texts: Mapping[str, str], drifts: Sequence[Drift]) -> list[str | None]:
        """One render of each release the drifts belong to, with ``texts`` in place of its files:
        for each drift, why its field does not render as its live value (or something else the
        release renders changes with it), None when proven. A drift of a manifest of the
        directory (no release renders it) is proven by its file reading back as intended."""
        out: list[str | None] = [None] * len(drifts)
        for i, rel in enumerate(self.releases):
            mine = [j for j, d in enumerate(drifts) if self.owners.get(d.ref) == i]
            plain = [j for j, d in enumerate(drifts) if d.ref not in self.owners]
            # a HelmRelease's own file or its values ConfigMap edited as a manifest changes the render
            if not mine and not any(drifts[j].file in texts for j in plain):
                continue
            try:
                got = self.render_with(i, dict(texts))
            except ConfigError as exc:
                for j in mine:
                    out[j] = f"not written: the edited values do not render: {exc.message}"
                continue
            allowed: dict[ObjectRef, list[Path]] = {}
            for j in mine:
                allowed.setdefault(drifts[j].ref, []).append(drifts[j].path)
            extra = self._side_effects(i, got, allowed)
            for j in mine:
                d = drifts[j]
                value = self._field(i, got, d)
                if value is MISSING or not same(value, d.live):
                    out[j] = (f"not written: with the edit the chart renders "
                              f"{'nothing' if value is MISSING else repr(value)}, live is {d.live!r}")
                elif extra:
                    out[j] = (f"not written: the edit would also change {', '.join(extra[:3])}"
                              f"{' ...' if len(extra) > 3 else ''}")
        return out


def _scalar(value: Any) -> bool:
    return value is not None and value is not MISSING and not isinstance(value, (dict, list))
