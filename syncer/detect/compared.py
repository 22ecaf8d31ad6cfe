"""One object compared: its differences from git, the evidence of who moved each, and the drifts
they make. ``Detection`` (``engine``) runs these per object; nothing here reads or writes anything.

``compare_object`` finds the differences (secret-looking values judged once), ``verdicts_of`` says who
moved at each from the bases ``evidence_for`` gathered (git's history among them, when answered), and
``drifts_of`` turns both into drifts with their action: written, reported, or waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from syncer import templating
from syncer.cache import Caches, by_identity
from syncer.config import Config
from syncer.detect import bases, classify, endpoints, ownership, provenance
from syncer.detect.binding import Binding, address_drift, nothing_to_pick
from syncer.detect.diff import FieldDiff, align, compare
from syncer.detect.inputs import Answer, Inputs, Question, record_of
from syncer.detect.normalize import normalize
from syncer.detect.secretpolicy import judge_secrets, secret_mask
from syncer.detect.values import describe_change
from syncer.kinds import NEVER_WRITTEN
from syncer.model import JSON, Action, Direction, Drift, DriftClass, Edit, Path
from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS, REDACTED
from syncer.sources.manifests import GitObject


def evidence_for(obj: GitObject, live: JSON, appliers: frozenset[str], inputs: Inputs, caches: Caches,
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


def edit_for(fd: FieldDiff) -> Edit | None:
    if fd.cls is DriftClass.ADDED:
        return Edit(fd.path, fd.live, add=True)  # an int last part: append the whole item
    if fd.cls is DriftClass.VALUE:
        return Edit(fd.path, fd.live)
    return None


@dataclass(frozen=True)
class Compared:
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


def compare_object(obj: GitObject, live: JSON, config: Config, evidence_of: Callable[[], tuple[bases.Evidence, str]],
                   binding: Binding | None, observed_since: datetime | None,
                   caches: Caches, memo: bool, unstored: list[str]) -> Compared | None:
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
        # No difference is not remembered: the engine knows that object in sync already
        # (``Tracked.in_sync``), and an entry per tracked object was memory for nothing.
        diffs = list(by_identity(caches.compared, (obj.data, live), (ref.kind, ignore, appliers),
                                 lambda: compare(ref.kind, git, live_n(), ignore, by_person, unowned), keep=bool))
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
    return Compared(obj, live, evidence, note, binding, moved, judge_secrets(ref.kind, diffs, patterns, git, live_n(),
                                                                                   caches=caches),
                     observed_since, bool(dropped))


def verdicts_of(c: Compared) -> tuple[bases.Verdict | None, list[bases.Verdict]]:
    """Who moved: where the Service points (None: not judged), and each other difference."""
    evidence = c.evidence
    moved = bases.combine([bases.decide(fd.path, fd.git, fd.live, evidence, fd.where_live)
                           for fd in c.moved]) if c.moved else None
    return moved, [bases.decide(fd.path, fd.git, fd.live, evidence, fd.where_live) for fd, _ in c.judged]


def drifts_of(c: Compared, config: Config, now: datetime, moved_verdict: bases.Verdict | None,
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
        edit = None if secret else edit_for(fd)
        out.append(Drift(ref, obj.file, fd.path, git_v, live_v, dirn, fd.cls, action, manager, when, detail,
                         reason, (edit,) if edit else (), base=verdict.base, base_why=verdict.why, base_note=note,
                         attribution=attribution))
    return out
