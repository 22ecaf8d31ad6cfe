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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from syncer.detect import bases, classify, endpoints, gitops, ownership, provenance
from syncer.detect.binding import Binding, Reads, address_drift, nothing_to_pick
from syncer import templating
from syncer.bounds import check_nodes
from syncer.cache import Caches, by_identity
from syncer.config import BoundConfig, Config
from syncer.detect.diff import FieldDiff, align, compare
from syncer.errors import NOTHING_READABLE, ClusterError, ConfigError, Forbidden, Unserved
from syncer.grants import unreadable_message
from syncer.detect.inputs import Answer, Inputs, Question, live_object, record_of
from syncer.kinds import NEVER_WRITTEN
from syncer.sources.manifests import GitObject
from syncer.model import (JSON, Action, Direction, Drift, DriftClass, Edit, FileError, ObjectRef, Path, Result,
                          Track, field_times)
from syncer.detect.normalize import normalize
from syncer.detect.tracking import tracking
from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS, REDACTED
from syncer.detect.secretpolicy import judge_secrets, secret_mask
from syncer.detect.values import describe_change


def _evidence(obj: GitObject, live: JSON, appliers: frozenset[str], inputs: Inputs, caches: Caches,
              answers: Mapping[Question, Answer] | None, asked: list[Question]) -> tuple[bases.Evidence, str]:
    """Every base known for one object, and a note when the last-applied annotation is set aside.

    Git holding exactly a value syncer proposed there (the cluster's value at the time) means
    git took that value from the cluster: the cluster moved since, even when no pass saw the
    two agree, and even while a git-side change of another field of the object keeps the
    record of the whole object from moving on.

    A question to git's history not in ``answers`` (None: no history) is no answer, and added
    to ``asked``. ``appliers``: one frozenset per detection, held by every memo key below (a
    copy per object would grow with the objects compared)."""
    snapshots: list[tuple[str, JSON]] = []
    applied, note = (by_identity(caches.last_applied, (live,), appliers,
                                 lambda: ownership.trusted_last_applied(live, appliers))
                     if inputs.reusable else ownership.trusted_last_applied(live, appliers))
    if applied is not None:
        snapshots.append((bases.LAST_APPLIED, applied))
    released = inputs.released.get(obj.ref)
    if released is not None:
        snapshots.append((bases.RELEASED, released))
    record = record_of(inputs, obj.ref)
    if record is not None and record.base is not None:
        snapshots.append((bases.RECORD, record.base))
    if obj.ref.kind == endpoints.SLICE:  # a slice applied as v1beta1 remembers it in that shape
        snapshots = [(name, endpoints.as_v1(b)) for name, b in snapshots]
    proposed = record.proposed if record is not None else {}

    def owner(live_path: Path) -> tuple[Direction, ownership.Owner] | None:
        return ownership.direction_by_owner(live, live_path, appliers)

    def git_history(path: Path) -> Answer:
        if answers is None:
            return None
        when = ownership.last_apply_time(live, appliers)
        if when is None:
            who = ownership.owner(live, path, appliers)
            when = who.time if who is not None else None
        applied_at = classify.parse_time(when)
        if applied_at is None:
            return None
        question = (obj.ref, path, applied_at)
        if question in answers:
            return answers[question]
        asked.append(question)
        return None

    return bases.Evidence(snapshots, proposed, owner, git_history), note


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


def _edit_for(fd: FieldDiff) -> Edit | None:
    if fd.cls is DriftClass.ADDED:
        return Edit(fd.path, fd.live, add=True)  # an int last part: append the whole item
    if fd.cls is DriftClass.VALUE:
        return Edit(fd.path, fd.live)
    return None


@dataclass(frozen=True)
class _Compared:
    """One object's differences, ready to be judged: what comparing found, before any base
    (git's history among them) says who moved."""

    obj: GitObject
    live: JSON
    evidence: bases.Evidence  # the snapshots in git's list layout, as the diffs' paths
    note: str
    binding: Binding | None
    moved: list[FieldDiff]  # where the Service points (judged as one drift), else empty
    judged: list[tuple[FieldDiff, str | None]]  # every other difference, with why it looks secret
    observed_since: datetime | None
    unstored: bool = False
    #: when the watch saw each field change (None: not watched field by field: a one-shot run)
    fields: Mapping[Path, datetime] | None = None  # a field the server did not store was noted: never remembered in sync


def _compare(obj: GitObject, live: JSON, config: Config, evidence_of: Callable[[], tuple[bases.Evidence, str]],
             binding: Binding | None, observed_since: datetime | None,
             caches: Caches, memo: bool, unstored: list[str]) -> _Compared | None:
    """One object's differences (None: none); ``memo``: remember them by identity in ``caches``
    (where the judgements of texts are remembered in any case). The fields git declares that the
    server did not store are not differences: one note each into ``unstored``.

    ``evidence_of`` gives the bases and their note, asked only when there are differences: an
    object in sync needs no base, and its parsed last-applied annotation, held for every
    tracked object, would be a copy of each object's declared content."""
    ref = obj.ref
    ignore = config.ignored_pointers(ref.kind, ref.namespace, ref.name, live.get("metadata"))
    git = normalize(obj.data)
    appliers = tuple(config.appliers)
    # keys only live count where a person wrote them (the rule for items added live, below)
    by_person = ownership.moved_by(live, appliers, lambda who: ownership.added_by_person(who, appliers))
    unowned = not (live.get("metadata") or {}).get("managedFields")
    normalized: list[JSON] = []  # the live object normalized, once, if comparing needed it

    def live_n() -> JSON:
        if not normalized:
            normalized.append(normalize(live))
        return normalized[0]

    if memo:  # a copy: the readiness diffs below extend it
        diffs = list(by_identity(caches.compared, (obj.data, live), (ref.kind, ignore, appliers),
                                 lambda: compare(ref.kind, git, live_n(), ignore, by_person, unowned)))
    else:
        diffs = compare(ref.kind, git, live_n(), ignore, by_person, unowned)
    diffs, dropped = ownership.not_stored(ref, live, diffs)  # fields the server drops: notes, no drift
    unstored += dropped
    if binding is not None:
        diffs += endpoints.readiness_diff(ref.kind, git, live, diffs, ignore)
    if not diffs:
        return None
    evidence, note = evidence_of()
    evidence = replace(evidence, snapshots=[(n, align(ref.kind, b, git, live_n())) for n, b in evidence.snapshots])
    moved: list[FieldDiff] = []
    if binding is not None:
        # Where the Service points: one drift, classified against its candidates. Port and
        # other changes of the object are drifts of their own.
        moved, diffs = endpoints.split(ref.kind, git, diffs)
        if moved and nothing_to_pick(ref.kind, obj.data, live, binding):
            moved = []
    patterns = (*DEFAULT_SECRET_PATTERNS, *config.secret_keys)
    return _Compared(obj, live, evidence, note, binding, moved, judge_secrets(ref.kind, diffs, patterns, git, live_n(),
                                                                                   caches=caches),
                     observed_since, bool(dropped))


def _verdicts(c: _Compared) -> tuple[bases.Verdict | None, list[bases.Verdict]]:
    """Who moved: where the Service points (None: not judged), and each other difference."""
    evidence = c.evidence
    moved = bases.combine([bases.decide(fd.path, fd.git, fd.live, evidence, fd.where_live)
                           for fd in c.moved]) if c.moved else None
    return moved, [bases.decide(fd.path, fd.git, fd.live, evidence, fd.where_live) for fd, _ in c.judged]


def _drifts(c: _Compared, config: Config, now: datetime, moved_verdict: bases.Verdict | None,
            verdicts: list[bases.Verdict], caches: Caches) -> list[Drift]:
    """The drifts of one object's differences, with who moved at each."""
    obj, live, note = c.obj, c.live, c.note
    ref = obj.ref
    track = config.track_for(ref.kind)
    secret = ref.kind in NEVER_WRITTEN
    applied = ownership.trusted_last_applied(live, tuple(config.appliers))[0]
    out = []
    if moved_verdict is not None and c.binding is not None:
        verdict = moved_verdict
        drift = address_drift(ref, obj.file, obj.data, live, c.moved, c.binding, verdict.direction, track,
                              now, config.stable_for, c.observed_since, c.fields)
        out.append(replace(drift, base=verdict.base, base_why=verdict.why, base_note=note))
        if obj.templated and out[-1].action is not Action.REPORT and templating.marks(out[-1].git, None):
            out[-1] = replace(out[-1], action=Action.REPORT, reason="templated: not written")
    for (fd, looks_secret), verdict in zip(c.judged, verdicts):
        dirn = verdict.direction
        prov = provenance.of_field(live, fd.where_live, config.appliers, applied,
                                   provenance.seen_at(c.fields, fd.where_live))
        manager, when = prov.manager, prov.changed_at
        attribution = "uncertain" if prov.uncertain else ""
        if looks_secret and not secret:
            # Never copied into git, never shown anywhere (text, JSON, PR, commit, webhooks, logs).
            shown_git = None if fd.git is None else REDACTED
            shown_live = None if fd.live is None else REDACTED
            out.append(Drift(ref, obj.file, fd.path, shown_git, shown_live, dirn, fd.cls, Action.REPORT, manager,
                             when, "looks like a secret (value not shown)",
                             f"looks like a secret ({looks_secret}): never copied into git; keep it in a Secret",
                             base=verdict.base, base_why=verdict.why, base_note=note, attribution=attribution))
            continue
        changed = classify.parse_time(when) or c.observed_since
        action, reason = classify.decide(ref.kind, fd.cls, dirn, track, changed, now, config.stable_for)
        if obj.templated and action is not Action.REPORT and templating.marks(fd.git, None):
            action, reason = Action.REPORT, "templated: not written"
        elif (fd.needs_person and action is not Action.REPORT
              and not ownership.added_by_person(ownership.owner(live, fd.where_live, config.appliers),
                                                config.appliers)):
            what = "list item" if fd.is_item else "key"
            who = f"by {manager}" if manager else "by an unknown manager (no managedFields entry)"
            action, reason = Action.REPORT, f"{what} added live {who}, not by a person: never written"
        git_v, live_v = (secret_mask(fd.git), secret_mask(fd.live)) if secret else (fd.git, fd.live)
        detail = "secret value differs" if secret else describe_change(git_v, live_v, caches)
        edit = None if secret else _edit_for(fd)
        out.append(Drift(ref, obj.file, fd.path, git_v, live_v, dirn, fd.cls, action, manager, when, detail,
                         reason, (edit,) if edit else (), base=verdict.base, base_why=verdict.why, base_note=note,
                         attribution=attribution))
    return out


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
        self._waiting: dict[int, _Compared] = {}  # objects whose differences wait for git's history
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
                self._judged(i, compared, _verdicts(compared), judged[i])
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
            compared = _compare(obj, live, config,
                                lambda: _evidence(obj, live, self.appliers, inputs, self.caches, self._answers, asked),
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
        verdicts = _verdicts(compared)
        if asked:
            self._waiting[i] = compared  # judged once git's history answered
            return "asked"
        self._judged(i, compared, verdicts, out)
        return "judged"

    def _judged(self, i: int, compared: _Compared, verdicts: tuple[bases.Verdict | None, list[bases.Verdict]],
                out: _Found) -> None:
        """The drifts of the i-th object's differences into ``out``."""
        ref, obj, _ = self.tracked.items[i]
        try:
            found = _drifts(compared, self.config, self.now, *verdicts, self.caches)
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
