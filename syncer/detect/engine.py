"""Detection, as one straight pipeline: gathered inputs -> ``Result``. Pure: no I/O, no writes.

``syncer.gather.collect`` reads what detection needs (live objects, candidate lists, the state record,
git's history answers) into one ``Inputs``; ``detect`` compares them. A failed read of one
object costs that object (an error or a warning naming it); a live object of a shape no
Kubernetes server sends is refused where it is read (``bounds``, ``ConfigError``); any other
exception is a bug, and raised.

Git's history is asked only about the values whose direction it decides, which comparing
tells: ``Detection.compare`` compares and names its ``questions``, and ``finish`` judges again
the objects that asked, with the answers (``gather.detect_live`` asks git in between).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from syncer.bounds import check_nodes
from syncer.cache import Caches
from syncer.config import BoundConfig
from syncer.detect import bases, gitops
from syncer.detect.binding import Reads
from syncer.detect.compared import Compared, compare_object, drifts_of, evidence_for, verdicts_of
from syncer.detect.inputs import Answer, Inputs, Question, live_object, record_of
from syncer.detect.tracking import tracking
from syncer.errors import NOTHING_READABLE, ClusterError, ConfigError, Forbidden, Unserved
from syncer.grants import unreadable_message
from syncer.model import JSON, Action, Direction, Drift, DriftClass, FileError, ObjectRef, Result, Track, field_times


def check_shape(live: JSON) -> None:
    """Refuse a live object whose metadata has a type no Kubernetes server sends (one line
    naming the field), before anything reads it."""
    meta = live.get("metadata")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise ConfigError(f"live object has an unexpected shape: metadata is a {type(meta).__name__}, not a mapping")
    for key in ("annotations", "labels"):
        value = meta.get(key)
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"live object has an unexpected shape: metadata.{key} is a {type(value).__name__}, "
                              "not a mapping")


def _plural(kind: str) -> str:
    """The resource name kubectl knows a kind by, as the API's naming convention makes it
    (``NetworkPolicy`` -> ``networkpolicies``, ``Ingress`` -> ``ingresses``)."""
    low = kind.lower()
    if low.endswith("s"):
        return low + ("es" if low.endswith(("ss", "us")) else "")
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return low[:-1] + "ies"
    return low + ("es" if low.endswith(("x", "ch", "sh")) else "s")


def other_version_note(ref: ObjectRef, others: tuple[str, ...] | list[str]) -> str:
    """The snapshot holds ``ref`` only in ``others`` (git's ``autoscaling/v1``, the snapshot's
    ``v2``): not compared, and how to export it in git's version."""
    group, _, version = ref.api_version.rpartition("/")
    resource = _plural(ref.kind)
    where = f" -n {ref.namespace}" if ref.namespace else ""
    return (f"{ref} not compared: the snapshot holds it as {', '.join(others)}, git declares {ref.api_version}; "
            f"export it in git's version: kubectl get {resource}.{version}{'.' + group if group else ''} "
            f"{ref.name}{where} -o yaml --show-managed-fields")


#: What detection found, each in object order.
_PARTS = ("drifts", "errors", "warnings", "unreadable", "notes", "checked", "uncompared")


@dataclass
class _Found:
    """What detection found so far, in object order."""

    drifts: list[Drift] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    warnings: list[FileError] = field(default_factory=list)
    unreadable: list[ObjectRef] = field(default_factory=list)
    notes: list[FileError] = field(default_factory=list)
    checked: list[ObjectRef] = field(default_factory=list)
    uncompared: list[tuple[ObjectRef, str]] = field(default_factory=list)

    def sizes(self) -> tuple[int, ...]:
        return tuple(len(getattr(self, name)) for name in _PARTS)

    def fill(self, places: Mapping[int, tuple[int, ...]], judged: Mapping[int, _Found]) -> _Found:
        """These findings with what the i-th object was judged to be (``judged[i]``) at its
        place (``places[i]``: the sizes of each list when its turn came)."""
        filled = _Found()
        for n, name in enumerate(_PARTS):
            part, into, start = getattr(self, name), getattr(filled, name), 0
            for i, sizes in places.items():  # in object order
                into += part[start:sizes[n]]
                into += getattr(judged[i], name)
                start = sizes[n]
            into += part[start:]
        return filled


class Detection:
    """One detection of ``inputs`` at ``now``, in two steps. ``compare`` compares every tracked
    object and tells which values git's history must decide (``questions``); ``finish`` judges
    the differences of the objects that asked with the answers and gives the ``Result``.
    Per-object problems become ``errors``, not exceptions; an API server that could not be
    reached at all was raised by ``gather``. Nothing here reads a file, the network or a clock:
    what it remembers is in ``caches``."""

    def __init__(self, config: BoundConfig, inputs: Inputs, now: datetime, caches: Caches | None = None) -> None:
        manifests = inputs.manifests
        self.caches = caches if caches is not None else Caches()
        self.config = config
        self.inputs, self.now = inputs, now
        self.tracking = inputs.tracking if inputs.tracking is not None else tracking(manifests, self.caches,
                                                                                     inputs.reusable)
        self.tracked = self.tracking.tracked(self.config)
        self.cache = Reads()  # candidate lists and their ConfigMaps read in this detection
        self.found = _Found(errors=list(manifests.errors), notes=list(manifests.skipped))
        self.questions: list[Question] = []
        #: git's answers known so far (None: no history); ``finish`` adds the rest
        self._answers: dict[Question, Answer] | None = None if inputs.history is None else dict(inputs.history)
        self._waiting: dict[int, Compared] = {}  # objects whose differences wait for git's history
        self._places: dict[int, tuple[int, ...]] = {}  # ... and where their findings go
        self.appliers = frozenset(self.config.appliers)
        self._compared = False

    def compare(self) -> list[Question]:
        """Compare every tracked object (once): the findings so far, and the questions to git's
        history whose answers ``finish`` needs."""
        if self._compared:
            return self.questions
        self._compared = True
        inputs = self.inputs
        reused = 0
        readable = inputs.reusable and inputs.record_readable
        in_sync, reads, checked = self.tracked.in_sync, inputs.live, self.found.checked
        for i, (ref, _, in_family) in enumerate(self.tracked.items):
            seen = in_sync[i]
            if seen is not None and readable and not in_family and seen is reads[ref]:
                checked.append(ref)  # known in sync with this very live object (``_judge``, "reused")
                reused += 1
                continue
            asked: list[Question] = []
            outcome = self._judge(i, self.found, asked)
            reused += outcome == "reused"
            if outcome == "asked":
                self._places[i] = self.found.sizes()
                self.questions += [q for q in dict.fromkeys(asked) if q not in self.questions]
        self.caches.compared.served(reused)  # comparisons not made again
        return self.questions

    def finish(self, answers: Mapping[Question, Answer] | None = None) -> Result:
        """The result, with git's ``answers`` to ``questions`` (an unanswered one: no answer)."""
        if not self._compared:
            raise RuntimeError("Detection.finish before compare")
        found = self.found
        if self._waiting:
            if self._answers is not None:
                self._answers.update(answers or {})
            judged: dict[int, _Found] = {}
            for i, compared in self._waiting.items():
                judged[i] = _Found()
                self._judged(i, compared, verdicts_of(compared), judged[i])
            found = found.fill(self._places, judged)
        return Result(self.config.installation, tuple(found.drifts), tuple(found.errors), tuple(found.checked),
                      tuple(found.warnings), tuple(found.unreadable), tuple(found.notes), tuple(found.uncompared))

    def _judge(self, i: int, out: _Found, asked: list[Question]) -> str:
        """Judge the i-th tracked object into ``out``: "reused" (known in sync), "asked" (its
        differences wait for git's history: nothing added to ``out``) or "judged"."""
        ref, obj, in_family = self.tracked.items[i]
        inputs, config, family, in_sync = self.inputs, self.config, self.tracking.family, self.tracked.in_sync
        manifests, memo = inputs.manifests, inputs.reusable
        try:
            live = live_object(inputs.live, ref)
            if live is None:
                others = inputs.other_versions.get(ref, ())
                if others:  # a note, not a drift: nothing says the object differs
                    out.notes.append(FileError(obj.file, other_version_note(ref, tuple(others))))
                else:
                    out.drifts.append(Drift(ref, obj.file, (), "declared", None, Direction.UNKNOWN,
                                            DriftClass.REMOVED, Action.REPORT, detail="declared in git, absent live",
                                            reason="absent live; syncer never deletes from git"))
                out.checked.append(ref)
                return "judged"
            if ref in inputs.renamed:
                out.notes.append(FileError(obj.file, f"{ref}: generated by kustomize, held live as "
                                                     f"{inputs.renamed[ref]} (git's content, hashed into the name "
                                                     "it renders, is not applied yet): compared with that"))
            if family.shadowed and ref in family.shadowed:
                out.checked.append(ref)  # a mirrored slice: its Endpoints speaks for it
                return "judged"
            if memo and in_sync[i] is live and inputs.record_readable:
                # Still read what binds it (the candidate ConfigMap may have become
                # unreadable); what it holds cannot matter to an object without differences.
                if in_family:
                    family.read_binding(obj, live, config, inputs.live, manifests, self.cache)
                out.checked.append(ref)
                return "reused"
            check_nodes(live, "live object")  # an alias bomb in a snapshot costs this object only
            check_shape(live)
            binding = family.binding(obj, live, config, inputs.live, manifests, self.cache) if in_family else None
            since = inputs.observed_since.get(ref)
            record_of(inputs, ref)  # a record that could not be read fails the object, in sync or not
            unstored: list[str] = []
            compared = compare_object(obj, live, config,
                                      lambda: evidence_for(obj, live, self.appliers, inputs, self.caches,
                                                           self._answers, asked),
                                      binding, since, self.caches, memo, unstored)
            if compared is not None:
                compared = replace(compared, fields=field_times(inputs.observed_since, ref))
        except (ClusterError, ConfigError) as exc:
            self._cost(ref, obj.file, exc, out)
            return "judged"
        out.notes.extend(FileError(obj.file, message) for message in unstored)
        if compared is None:
            if memo and not unstored:
                in_sync[i] = live
            out.checked.append(ref)
            return "judged"
        if memo:
            in_sync[i] = None  # differences: judged afresh every pass
        verdicts = verdicts_of(compared)
        if asked:
            self._waiting[i] = compared  # judged once git's history answered
            return "asked"
        self._judged(i, compared, verdicts, out)
        return "judged"

    def _judged(self, i: int, compared: Compared, verdicts: tuple[bases.Verdict | None, list[bases.Verdict]],
                out: _Found) -> None:
        """The drifts of the i-th object's differences into ``out``."""
        ref, obj, _ = self.tracked.items[i]
        try:
            found = drifts_of(compared, self.config, self.now, *verdicts, self.caches)
            controller = gitops.reconciler(compared.live) if found else None
            if controller is not None:
                found = [replace(d, reconciler=controller) for d in found]
        except (ClusterError, ConfigError) as exc:
            self._cost(ref, obj.file, exc, out)
            return
        out.drifts.extend(found)
        out.checked.append(ref)
        if not found and self.inputs.reusable and not compared.unstored:
            self.tracked.in_sync[i] = compared.live

    def _cost(self, ref: ObjectRef, file: str, exc: ClusterError | ConfigError, out: _Found) -> None:
        """An object that could not be compared: an error (it was declared, so "in sync" cannot
        be said), or a warning only for a 403 of a kind the config marks ``optional`` (and an
        object whose API the cluster does not serve, of a kind only reported: it cannot exist)."""
        if isinstance(exc, NOTHING_READABLE):
            raise exc  # nothing can be compared
        written = self.config.track_for(ref.kind) in (Track.WRITEBACK, Track.STABLE)
        if isinstance(exc, Unserved):  # an API the cluster does not serve (a CRD not installed): syncer/gather/served.py
            error, message = unserved_outcome(exc, written)
            (out.errors if error else out.warnings).append(FileError(file, message))
            out.uncompared.append((ref, "API not served"))
            return
        if isinstance(exc, Forbidden):  # the Role lacks this object: say which grant, go on with the rest
            out.unreadable.append(ref)
            optional = not written and ref.kind in self.config.optional
            (out.warnings if optional else out.errors).append(
                FileError(file, unreadable_message(ref, exc, "optional" if optional else "written" if written
                                                   else "reported")))
            out.uncompared.append((ref, "access denied (403)"))
            return
        out.errors.append(FileError(file, f"{ref}: {exc.message}"))
        out.uncompared.append((ref, "read failed" if isinstance(exc, ClusterError) else "unusable live object"))


def unserved_outcome(exc: Unserved, written: bool) -> tuple[bool, str]:
    """(is it an error, the one line) for an object whose API the cluster does not serve;
    ``written``: its kind is tracked ``writeback`` or ``stable``. Reads nothing."""
    ref = exc.ref
    assert isinstance(ref, ObjectRef)
    same = exc.same_group
    hint = f" (it serves {ref.kind} as {', '.join(same)}: export or declare it in that version)" if same else ""
    head = f"{ref}: the cluster does not serve {ref.api_version} {ref.kind}{hint}"
    if not written:
        return False, f"{head}: not compared"
    others = exc.other_groups
    if others:
        return False, (f"{head}: not compared (track.{ref.kind} writes back the {ref.kind} of {others[0]}, "
                       "which it serves)")
    return True, (f"{head}: its kind is written back (track.{ref.kind}), so it is not synced; install its API "
                  f"(the CRD) or track {ref.kind} as report")


def detect(config: BoundConfig, inputs: Inputs, now: datetime, caches: Caches | None = None) -> Result:
    """Compare every tracked object of ``inputs`` (git's history answers, if any, in
    ``inputs.history``: an unanswered question is no answer)."""
    detection = Detection(config, inputs, now, caches)
    detection.compare()
    return detection.finish()
