"""Words for people: the terminal summary, the JSON document, commit messages, PR text."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from syncer.secrets import escape, lookalike
from syncer.kinds import NEVER_WRITTEN
from syncer.model import Action, Direction, Drift, DriftClass, ObjectRef, Result
from syncer.secrets.redact import REDACTED, secret_field
from syncer.detect.values import MAX_LINES_SHOWN, changed_lines, describe_line, is_multiline

_COLORS = {"red": "\033[31m", "green": "\033[32m", "yellow": "\033[33m", "bold": "\033[1m", "dim": "\033[2m"}
_RESET = "\033[0m"


def _hidden(drift: Drift) -> bool:
    """Hide this drift's values? Detection judged secrets already (``secretpolicy.looks_secret``:
    key names with the config's ``secretKeys``, named list items, value shapes) and put
    ``‹redacted›`` in the drift; this second look, for drifts made elsewhere, applies the same
    key-name rule with the default patterns, so it never hides a field of the API such as
    ``automountServiceAccountToken``."""
    return drift.ref.kind in NEVER_WRITTEN or secret_field(drift.ref.kind, drift.path_text)


def shown(drift: Drift, value: Any) -> str:
    """A value as it may be shown to people."""
    if value is None:
        return "—"
    if _hidden(drift):
        return REDACTED
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text


def unseen(drift: Drift) -> str | None:
    """What a person cannot see in a shown change: an invisible or look-alike character
    (``differs only by U+200B ZERO WIDTH SPACE``), a word mixing scripts in the value or in
    the key name (``db.іnternal``). None for hidden values."""
    if _hidden(drift):
        return None
    note = lookalike.change_note(drift.git, drift.live)
    if note is None and (in_key := lookalike.mixed_note(drift.path_text)):
        note = f"key name: {in_key}"
    return note


def _line_pairs(drift: Drift) -> list[tuple[str | None, str | None]] | None:
    """The changed lines of a multi-line string value (None: not one, or not to be shown)."""
    if _hidden(drift):
        return None
    git, live = drift.git, drift.live
    if not (is_multiline(git) or is_multiline(live)) or not all(v is None or isinstance(v, str) for v in (git, live)):
        return None
    return changed_lines(git or "", live or "")


def drift_hash(drifts: Sequence[Drift]) -> str:
    """Identifies a set of changes by what they write, not by when they were seen."""
    h = hashlib.sha256()
    for d in sorted(drifts, key=lambda d: (str(d.ref), d.path_text)):
        h.update(json.dumps([str(d.ref), d.path_text, d.live], sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def pr_fingerprint(result: Result, written: Sequence[Drift], title: str, labels: Sequence[str]) -> str:
    """The substance of a PR: which values it writes and which warnings stand, without times."""
    h = hashlib.sha256()
    rows = [[str(d.ref), d.file, d.path_text, d.git, d.live, d.cls.value, d.direction.value, d.manager, d.base,
             d.base_note] for d in written]
    written_ids = {id(d) for d in written}  # a set: one lookup per drift, not a scan of the list
    rows += [[str(d.ref), d.path_text, d.cls.value, d.direction.value, d.detail, d.base] for d in result.drifts
             if id(d) not in written_ids and d.cls is not DriftClass.CLEARED and d.action is not Action.WAIT]
    rows.sort(key=lambda row: json.dumps(row, default=str))
    h.update(json.dumps([title, sorted(labels), rows], sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def _paint(text: str, color: str, enabled: bool) -> str:
    return f"{_COLORS[color]}{text}{_RESET}" if enabled else text


def render_text(result: Result, file_diffs: str = "", color: bool = False) -> str:
    """The ``syncer diff`` summary: one block per object, then the unified diff."""
    out: list[str] = []
    if result.in_sync:
        out.append(f"{result.installation}: in sync ({len(result.checked)} objects checked)")
    else:
        n_write = len(result.writable())
        out.append(_paint(
            f"{result.installation}: {len(result.drifts)} difference(s) in {len({d.ref for d in result.drifts})} "
            f"object(s); {n_write} to copy back into git", "bold", color))
    last = None
    # An object whose fields are set in several files (a render's layers): each line names its own.
    files: dict[ObjectRef, set[str]] = {}
    for d in result.drifts:
        files.setdefault(d.ref, set()).add(d.file)
    for d in result.drifts:
        mixed = len(files[d.ref]) > 1
        if d.ref != last:
            out.append("")
            out.append(_paint(escape.line(f"{d.ref}" if mixed else f"{d.ref}  ({d.file})"), "bold", color))
            last = d.ref
        tone = {Action.WRITE: "green", Action.WAIT: "yellow", Action.REPORT: "red"}[d.action]
        head = f"  {d.path_text or '(object)'}: {d.detail}" + (f"  ({d.file})" if mixed else "")
        out.append(escape.line(head))  # live-sourced: no ANSI escapes, no forged lines
        who = f" by field manager {d.manager}" if d.manager else ""  # managedFields' manager, e.g. kubectl-edit
        when = f" at {d.changed_at}" if d.changed_at else ""
        out.append(_paint(escape.line(
            f"      {d.cls.value}, {d.direction.value} moved{who}{when} -> {d.action.value}: {d.reason}"), tone, color))
        if d.base:
            out.append(_paint(escape.line(f"      base: {d.base}" + (f" ({d.base_why})" if d.base_why else "")),
                              "dim", color))
        if d.base_note:
            out.append(_paint(escape.line(f"      note: {d.base_note}"), "yellow", color))
    for warn in result.warnings:
        out.append(_paint(escape.line(f"warning: {warn.message}"), "yellow", color))
    for note in result.notes:
        out.append(_paint(escape.line(f"note: {note.message}"), "yellow", color))
    for err in result.errors:
        out.append(_paint(escape.line(f"error: {err.message}"), "red", color))
    if file_diffs:
        out.append("")
        out.append(escape.terminal(file_diffs.rstrip("\n")))
    return "\n".join(out) + "\n"


def render_json(result: Result) -> str:
    doc = result.to_json()
    for d, item in zip(result.drifts, doc["drifts"]):
        if _hidden(d):
            item["git"], item["live"] = shown(d, d.git), shown(d, d.live)
    return json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n"


def commit_message(installation: str, drifts: Sequence[Drift]) -> str:
    """Subject + one paragraph per object: field old -> new, manager, time."""
    by_ref: dict[Any, list[Drift]] = {}
    for d in drifts:
        by_ref.setdefault(d.ref, []).append(d)
    subject = f"syncer({installation}): copy {len(drifts)} live value(s) back from the cluster"
    lines = [subject, ""]
    for ref in sorted(by_ref):
        mine = by_ref[ref]
        lines.append(f"{ref} ({mine[0].file}):")
        for d in mine:
            who = f" by {d.manager}" if d.manager else ""
            when = f" at {d.changed_at}" if d.changed_at else ""
            pairs = _line_pairs(d)
            if d.cls is DriftClass.UNTRACKED:
                lines.append(f"  created live, not in git: written as a new file{who}{when}")
                continue
            note = unseen(d)
            told = f" (note: {note})" if note else ""
            if pairs is None:
                lines.append(f"  {d.path_text}: {shown(d, d.git)} -> {shown(d, d.live)}{told}")
            else:  # a multi-line value: one line per changed line, as the log says it
                lines.append(f"  {d.path_text}: {len(pairs)} line(s) changed{told}")
                lines += [f"    {describe_line(o, n)}" for o, n in pairs[:MAX_LINES_SHOWN]]
                if len(pairs) > MAX_LINES_SHOWN:
                    lines.append(f"    … and {len(pairs) - MAX_LINES_SHOWN} more changed line(s)")
            lines.append(f"    {d.cls.value}{who}{when}")
        lines.append("")
    # Live-sourced text (values, key names, managers) cannot add lines: no forged paragraphs
    # or trailers, no NUL for git to refuse.
    lines = [escape.line(text) for text in lines]
    lines.append(f"Syncer-Installation: {installation}")
    lines.append(f"Syncer-Drift-Hash: {drift_hash(drifts)}")
    return "\n".join(lines) + "\n"


#: Characters of one value shown in a PR table cell; the commit holds the whole value.
CELL_LIMIT = 300


def _cell(text: str) -> str:
    """Live-sourced text as an inert table cell (no code-span breakout, split cell, HTML,
    mention or link)."""
    return escape.markdown(text, CELL_LIMIT)


def _code(text: str) -> str:
    return f"<code>{escape.markdown(text, CELL_LIMIT)}</code>"


def pr_title(installation: str, drifts: Sequence[Drift]) -> str:
    objects = sorted({f"{d.ref.kind}/{d.ref.name}" for d in drifts})
    names = ", ".join(objects[:3]) + (f" and {len(objects) - 3} more" if len(objects) > 3 else "")
    return f"syncer({installation}): copy live values back ({names})"


def pr_labels(result: Result) -> tuple[str, ...]:
    labels = ["syncer", "drift"]
    if any(d.cls is DriftClass.UNDECLARED for d in result.drifts):  # not CLEARED: it comes and goes
        labels.append("needs-attention")
    return tuple(labels)


def _side(pairs: list[tuple[str | None, str | None]], which: int) -> str:
    """One side of a multi-line value's changed lines, for a table cell: one code span per line."""
    shown_lines = [p[which] for p in pairs[:MAX_LINES_SHOWN]]
    cell = "<br>".join("—" if ln is None else _code(ln) if ln.strip() else "(empty line)" for ln in shown_lines)
    if len(pairs) > MAX_LINES_SHOWN:
        cell += f"<br>… {len(pairs) - MAX_LINES_SHOWN} more"
    return cell


def pr_body(result: Result, written: Sequence[Drift], reproduce: str,
            comments: Mapping[tuple[str, str], str] | None = None) -> str:
    """The pull request is the notification: what changed, who did it, when, how to check.

    ``comments`` maps (object, field) to the comment ending the changed line in git (from the
    write-back): kept by the edit, it may describe the old value, and the row says so."""
    lines = [
        f"The live cluster and git disagree for installation **{result.installation}**. "
        f"This pull request copies {len(written)} live value(s) back into git.",
        "",
        "| object | file | field | git | live | class | direction | base | field manager | changed at |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    created = [d for d in written if d.cls is DriftClass.UNTRACKED]
    for d in written:
        if d.cls is DriftClass.UNTRACKED:
            continue
        pairs = _line_pairs(d)
        if pairs is None:
            git_cell, live_cell = _code(shown(d, d.git)), _code(shown(d, d.live))
        else:  # multi-line: just the lines that changed, one per line, as the log says it
            git_cell, live_cell = _side(pairs, 0), _side(pairs, 1)
        note = unseen(d)
        if note:
            live_cell += f" ⚠️ {_cell(note)}"
        comment = (comments or {}).get((str(d.ref), d.path_text))
        if comment:
            live_cell += f" ⚠️ the comment on this line in git, {_code(comment)}, may describe the old value"
        lines.append("| " + " | ".join((
            _cell(f"{d.ref.kind}/{d.ref.namespace}/{d.ref.name}"), _cell(d.file), _cell(d.path_text),
            git_cell, live_cell, d.cls.value, d.direction.value,
            _cell(d.base or "?"), _cell(d.manager or "?"), _cell(d.changed_at or "?"))) + " |")
    if created:
        lines += ["", "### Created live, not in git", "",
                  "Objects nobody committed, proposed as new files (check that they belong in git):", ""]
        lines += [f"- {_cell(str(d.ref))} -> {_code(d.file)} ({_cell(d.reason)})" for d in created]
    notes = sorted({f"{d.ref}: {d.base_note}" for d in result.drifts if d.base_note})
    if notes:
        lines += ["", *(f"- ⚠️ {_cell(n)}" for n in notes)]
    unknown = [d for d in written if d.direction is Direction.UNKNOWN]
    if unknown:
        lines += ["", f"{len(unknown)} of these have no known base (no trusted last-applied annotation, no record of "
                      "the last agreed state, no field owner in managedFields): check that the live value, not git's, is the one to keep."]
    # Transient states stay out of the PR: a cleared Endpoints (an outage, reported by logs,
    # metrics and webhooks) and values still waiting to be stable would rewrite the PR at
    # every flap.
    written_ids = {id(d) for d in written}  # a set: one lookup per drift, not a scan of the list
    others = [d for d in result.drifts if id(d) not in written_ids and d.cls is not DriftClass.CLEARED
              and d.action is not Action.WAIT]
    if others:
        lines += ["", "### Reported, not written", ""]
        for d in others:
            mark = "⚠️ " if d.cls in (DriftClass.UNDECLARED, DriftClass.CLEARED) else ""
            lines.append(f"- {mark}**{d.cls.value}** {_cell(str(d.ref))} {_code(d.path_text or '(object)')}: "
                         f"{_cell(d.detail) if not _hidden(d) else REDACTED} "
                         f"({d.action.value}: {_cell(d.reason)}" + (f"; base: {_cell(d.base)}" if d.base else "") + ")")
    lines += ["", "Reproduce locally:", "", "```", reproduce, "```", ""]
    return "\n".join(lines)
