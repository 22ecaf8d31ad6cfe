"""The JSON documents syncer prints (``diff -o json``, ``sync -o json``, ``version -o json`` and
the document of a fatal error), each with its ``schema``: a name and a version a script can
check before it reads further.

A schema's version changes only when a key it has is removed or changes meaning; new keys are
added without a new version (SPEC §3: extra keys are fine).

    syncer.diff/v1      installation, in_sync, drifts, errors, warnings, notes
    syncer.sync/v1      the same, plus ``outcome`` (what the sync did: ``sync_outcome``)
    syncer.version/v1   clientVersion, serverVersion (absent with --client)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from syncer.model import JSON

if TYPE_CHECKING:
    from syncer.writeback.deliver import Outcome

DIFF = "syncer.diff/v1"
SYNC = "syncer.sync/v1"
VERSION = "syncer.version/v1"

SCHEMAS = {"diff": DIFF, "sync": SYNC, "version": VERSION}


def dumps(doc: JSON) -> str:
    return json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n"


def with_schema(command: str, doc: JSON) -> JSON:
    """``doc`` with its ``schema`` as the first key."""
    return {"schema": SCHEMAS[command], **{k: v for k, v in doc.items() if k != "schema"}}


def fatal(command: str, installation: str | None, message: str,
          warnings: tuple[str, ...] = ()) -> str:
    """The document of a command that could compare nothing (no kubeconfig, API server unreachable):
    the command's own shape, with the error in it and ``fatal: true``."""
    doc: JSON = {"installation": installation, "in_sync": False, "drifts": [],
                 "errors": [{"file": "", "message": message}],
                 "warnings": [{"file": "", "message": w} for w in warnings], "notes": [],
                 "checked": 0, "not_compared": [], "fatal": True}
    if command == "sync":
        doc["outcome"] = None
    return dumps(with_schema(command, doc))


#: What a sync did, in ``outcome.result``: one word a script can switch on.
RESULTS = ("committed", "pushed", "pull_request", "nothing_to_do", "dry_run", "left_alone")


def sync_outcome(out: Outcome, mode: str, forge: str) -> JSON:
    """``sync -o json``'s ``outcome``: what the sync did and where, from its ``Outcome``.

    * ``result``: ``committed`` (commit mode: a commit pushed to the base branch), ``pushed``
      (pr mode: branch ``syncer/<installation>`` pushed or already current, no forge API),
      ``pull_request`` (pr mode with a forge: the PR opened, updated or unchanged),
      ``nothing_to_do``, ``dry_run`` (what would be written), ``left_alone`` (a human pushed to
      syncer's branch, or the PR was closed unmerged for this very drift).
    * ``commit``: the full id of the commit that holds the change (``null`` when none); ``branch``
      where it is; ``pushed``: whether this run pushed it (false when the branch already held it).
    * ``pull_request``: ``{number, url, action}`` (``action``: opened, updated, unchanged,
      closed, ...), or null.
    """
    pr = out.pr
    request: JSON | None = None
    if pr is not None and pr.pr is not None:
        request = {"number": pr.pr.number, "url": pr.pr.url or None, "action": pr.outcome.value}
    elif pr is not None:
        request = {"number": None, "url": None, "action": pr.outcome.value}
    branch = out.branch or None
    if mode == "dry-run":
        result = "dry_run" if out.written else "nothing_to_do"
    elif out.left_alone or (pr is not None and pr.outcome.value in ("human-pushed", "suppressed")):
        result = "left_alone"
    elif out.commit is None:
        result = "nothing_to_do"
    elif mode == "commit":
        result = "committed"
    else:
        result = "pull_request" if forge != "none" and request is not None else "pushed"
    return {"result": result, "mode": mode, "commit": out.commit, "branch": branch, "pushed": out.pushed,
            "pull_request": request, "written": len(out.written), "messages": list(out.messages)}
