"""Write-back: turn a detection ``Result`` into a commit on the base branch or a rolling PR.

``deliver`` (detect, then commit, open the PR, or only say what they would do) is the one
entry point, for ``syncer sync`` and every sidecar pass alike: it maps the mode to
``sync_commit``, ``sync_pr`` or ``dry_run``.

Always works in a clone owned by syncer: reset to the remote base branch, detect, apply
the accepted drifts, commit, push. A rejected fast-forward (someone pushed first) means
fetch, then push the same edits on the new base -- or detect again when the new commits
changed the installation (``landing``) -- never force. The PR branch ``syncer/<installation>`` is
regenerated from base + current drift each time, pushed with a lease, and left alone once a
human has pushed to it.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syncer.detect import endpoints
from syncer.writeback import untracked
from syncer.cache import Caches
from syncer.config import BoundConfig, Config, UntrackedMode, load_config
from syncer.gather.collect import BaseStore, detect_live
from syncer.gather.helmrelease import capabilities_of
from syncer.gather.trackcheck import check_kinds
from syncer.errors import ConfigError, GitError, SyncerError
from syncer.gitrepo import Workspace
from syncer.gather.history import GitHistory
from syncer.gather.live import LiveSource
from syncer.sources.dispatch import source_for
from syncer.sources.manifests import Manifests, host_dir
from syncer.sources.source import DEFAULT_TOOLS, Source, Tools
from syncer.model import Action, Direction, Drift, DriftClass, FileError, ObjectRef, Reconciler, Result
from syncer.gather.selection import Selection
from syncer.writeback.placement import placed, proved
from syncer.writeback.report import commit_message, drift_hash, pr_body, pr_fingerprint, pr_labels, pr_title
from syncer.writeback.landing import Edits, PushBudget, land
from syncer.writeback.plan import FileChange, write_changes

if TYPE_CHECKING:
    from syncer.forges.base import Forge
    from syncer.writeback.pullrequest import PrResult

class Mode(str, enum.Enum):
    PR = "pr"
    COMMIT = "commit"
    DRY_RUN = "dry-run"


#: The write-back mode when none is given (SPEC §2.8: a pull request).
DEFAULT_MODE = Mode.PR


@dataclass(frozen=True)
class Loaded:
    config: BoundConfig  # bound to ``manifests`` (``Config.bound_to``), once
    manifests: Manifests
    git: Source  # what loaded ``manifests``: it places and verifies their edits


def load_installation(repo: Path, installation: str, config: Config | None = None, *,
                      caches: Caches | None = None, only: Selection | None = None,
                      tools: Tools = DEFAULT_TOOLS, include: Callable[[list[str]], None] | None = None) -> Loaded:
    """Config and manifests of ``hosts/<installation>/``; ``config`` overrides its syncer.conf;
    ``caches``: what the installation's earlier loads remember (None: nothing); ``only``: the
    objects ``-l``/``--object`` select (None: all); ``tools``: the programs its source runs
    (``--kustomize``, ``--helm``); ``include`` checks out the paths outside the installation its
    source reads (a sparse clone's)."""
    base = host_dir(repo, installation)
    if config is None:
        config = load_config(base, installation, caches=caches)
    git = source_for(repo, installation, config, tools)
    caches = caches if caches is not None else Caches()
    if include is not None:
        include(git.checkout_paths(caches))
    manifests = git.load(caches)
    if not manifests.objects and not manifests.errors:  # nothing to compare is no "in sync"
        skipped = f" ({len(manifests.skipped)} file(s) skipped: no Kubernetes objects in them)" if manifests.skipped else ""
        raise ConfigError(f"hosts/{installation}/ ({base}) declares no Kubernetes objects{skipped}: nothing to "
                          "compare; add its manifests, or pass the installation that has them")
    # bindings without a namespace go where git declares what they bind (not where -n points)
    bound = config.bound_to(endpoints.declared_services(manifests.objects, caches=caches))
    return Loaded(bound, only.apply(manifests, installation) if only is not None else manifests, git)


def _comments(changes: list[FileChange]) -> dict[tuple[str, str], str]:
    """(object, field) -> the comment ending the changed line in git, for the PR rows."""
    return {(str(ref), path): comment for c in changes for ref, path, comment in c.comments}


def select(result: Result, mode: Mode) -> list[Drift]:
    """The drifts this mode writes: commit mode only those whose direction is known."""
    drifts = list(result.writable())
    if mode is Mode.COMMIT:
        drifts = [d for d in drifts if d.direction is Direction.CLUSTER]
    return drifts


@dataclass
class Outcome:
    result: Result
    written: list[Drift] = field(default_factory=list)
    changes: list[FileChange] = field(default_factory=list)
    commit: str | None = None
    pr: "PrResult | None" = None
    title: str = ""
    body: str = ""
    labels: tuple[str, ...] = ()
    messages: list[str] = field(default_factory=list)
    #: The branch that holds ``commit`` (the base branch, or ``syncer/<installation>``), and
    #: whether this run pushed it there (False: the branch already held this very change).
    branch: str = ""
    pushed: bool = False
    #: The branch is a human's now (commits not by syncer): nothing was written.
    left_alone: bool = False
    #: The installation as detection loaded it, while the clone still holds exactly that (no
    #: file written), so the sidecar need not load it again; None once files were written.
    loaded: Loaded | None = None


#: Optional inputs the sidecar passes through to detection: a config override (``--config``)
#: and when the watch saw each object's content change (fallback for stability timing).
ConfigArg = Config | None
SinceArg = Mapping[ObjectRef, datetime] | None
#: Told what was detected, before anything is written (the CLI prints the drift report then,
#: so it reaches stdout whatever happens to the push).
OnDetected = Callable[[Outcome], None] | None


def _detect(repo: Path, installation: str, source: LiveSource, now: datetime, store: BaseStore | None,
            mode: Mode, config: ConfigArg = None, observed_since: SinceArg = None,
            ws: Workspace | None = None, caches: Caches | None = None, only: Selection | None = None,
            tools: Tools = DEFAULT_TOOLS) -> tuple[Loaded, Result, list[Drift], list[FileChange]]:
    """Detect and plan; in syncer's own clone ``ws``, git's history may fetch the old versions
    the blob-less clone lacks (without them, a reviewed git change not applied yet would look
    like nothing and be overwritten)."""
    caches = caches if caches is not None else Caches()
    if caches.helm_capabilities is None:  # read only if a Helm installation renders
        caches.helm_capabilities = capabilities_of(source)
    loaded = load_installation(repo, installation, config, caches=caches, only=only, tools=tools,
                               include=ws.include if ws is not None else None)
    unchecked = check_kinds(loaded.config, {ref.kind for ref in loaded.manifests.objects}, source)
    history = (GitHistory(repo, installation, ws.history_git(), head=ws.synced, caches=caches) if ws is not None
               else GitHistory(repo, installation, caches=caches))
    result = detect_live(loaded.config, loaded.manifests, source, now, store=store, observed_since=observed_since,
                         history=history, history_file=loaded.git.history_file, caches=caches)
    result = with_reconcilers(result, source)
    if only is None:
        result = untracked.with_untracked(loaded, result, source, caches)
    elif loaded.config.untracked.mode is not UntrackedMode.IGNORE:
        result = replace(result, notes=result.notes + (FileError(loaded.config.source, (
            f"untracked objects not looked for: {only.describe()} selects declared objects only")),))
    if unchecked:
        result = replace(result, notes=result.notes + tuple(unchecked))
    result = placed(loaded.git, loaded.manifests.objects, result, caches)  # each drift's own file and line
    result, drifts, changes = _file_changes(repo, installation, result, select(result, mode), loaded, caches)
    return loaded, result, drifts, changes


def with_reconcilers(result: Result, source: LiveSource) -> Result:
    """``result`` with what each GitOps controller's own object says (its interval, self-heal,
    suspended), read once per controller; "periodically" where it cannot be read."""
    from syncer.detect import gitops

    lister = getattr(source, "lister", None)  # the sidecar's watch cache reads other objects through it

    def read(ref: ObjectRef) -> dict[str, Any] | None:
        try:
            return source.get(ref)
        except SyncerError:
            if lister is None or not hasattr(lister, "get"):
                raise
            found: dict[str, Any] | None = lister.get(ref)
            return found

    resolved: dict[Reconciler, Reconciler] = {}
    drifts = []
    for d in result.drifts:
        if d.reconciler is not None:
            if d.reconciler not in resolved:
                resolved[d.reconciler] = gitops.with_interval(d.reconciler, read)
            d = replace(d, reconciler=resolved[d.reconciler])
        drifts.append(d)
    return replace(result, drifts=tuple(drifts)) if resolved else result


def _file_changes(repo: Path, installation: str, result: Result, drifts: list[Drift],
                  loaded: Loaded, caches: Caches) -> tuple[Result, list[Drift], list[FileChange]]:
    """Plan the file edits and have the source prove them; a file none of whose edits can be
    written exactly is left out with one line in ``result.errors``; an edit that cannot be made
    or proven alone is reported on its drift (action report, the reason) and blocks no other.
    Neither is claimed by the commit or PR. Untracked objects to propose become new files."""
    aborted: list[FileError] = []
    new = [d for d in drifts if d.cls is DriftClass.UNTRACKED]
    refused: list[tuple[Drift, str]] = []
    drifts, changes = proved(loaded.git, repo, installation, [d for d in drifts if d.cls is not DriftClass.UNTRACKED],
                             loaded.manifests.objects, aborted, caches, refused)
    if refused:  # each reported with why, in place of the drift: never an error, never blocking the rest
        why = {id(d): reason for d, reason in refused}
        result = replace(result, drifts=tuple(_refused(d, why[id(d)]) if id(d) in why else d for d in result.drifts))
    for drift, change in untracked.new_files(repo, installation, new, aborted):
        drifts.append(drift)
        changes.append(change)
    if aborted:
        result = replace(result, errors=result.errors + tuple(e for e in aborted if e not in result.errors))
    return result, drifts, changes


def _refused(drift: Drift, reason: str) -> Drift:
    return replace(drift, action=Action.REPORT, edits=(),
                   reason=f"{drift.reason}; {reason}" if drift.reason and drift.action is Action.REPORT else reason)


def dry_run(repo: Path, installation: str, source: LiveSource, now: datetime, reproduce: str,
            store: BaseStore | None = None, *, config: ConfigArg = None, observed_since: SinceArg = None,
            ws: Workspace | None = None, caches: Caches | None = None, only: Selection | None = None,
            tools: Tools = DEFAULT_TOOLS) -> Outcome:
    """What ``sync`` would do, computed on ``repo`` as it is (syncer's clone ``ws``, or a
    person's checkout); writes nothing."""
    loaded, result, drifts, changes = _detect(repo, installation, source, now, store, Mode.DRY_RUN, config,
                                              observed_since, ws, caches, only, tools)
    out = Outcome(result, drifts, changes, loaded=loaded)
    if drifts:
        out.title, out.body, out.labels = (pr_title(installation, drifts),
                                           pr_body(result, drifts, reproduce, comments=_comments(changes)),
                                           pr_labels(result))
    return out


def sync_commit(ws: Workspace, installation: str, source: LiveSource, now: datetime,
                store: BaseStore | None = None, *, config: ConfigArg = None,
                observed_since: SinceArg = None, caches: Caches | None = None, on_detected: OnDetected = None,
                sleep: Callable[[float], None] = time.sleep, only: Selection | None = None,
                tools: Tools = DEFAULT_TOOLS, budget: PushBudget = PushBudget(),
                clock: Callable[[], float] = time.monotonic) -> Outcome:
    """Commit accepted drifts straight to the base branch, fast-forward only. A push that lost
    a race is pushed again on the new base after a jittered pause, detecting again only when
    the new commits changed the installation (``landing``); a refused one is raised as it is."""
    caches = caches if caches is not None else Caches()
    notes: list[str] = []  # kept across attempts, so a lost race shows in the outcome
    latest: list[Outcome] = []

    def detect() -> Edits | None:
        ws.sync_to_base()
        loaded, result, drifts, changes = _detect(ws.path, installation, source, now, store, Mode.COMMIT, config,
                                                  observed_since, ws, caches, only, tools)
        out = Outcome(result, drifts, changes, messages=notes, loaded=loaded)
        latest.append(out)
        held = [d for d in result.writable() if d.direction is Direction.UNKNOWN]
        if held and len(latest) == 1:
            out.messages.append(f"{len(held)} change(s) have no known base and are never committed directly: "
                                "use --mode pr to propose them")
        if not changes:
            return None
        if on_detected is not None and len(latest) == 1:
            on_detected(out)
        if store is not None:
            store.propose(drifts)  # before the push: git never holds a proposal syncer does not remember
        return Edits(changes, commit_message(installation, drifts), loaded.git.checkout_paths(caches))

    edits = detect()
    landed = land(ws, installation, edits, detect, budget, notes=notes, sleep=sleep, clock=clock) if edits else None
    out = latest[-1]
    if landed is None:
        out.messages.append("nothing to commit")
        return out
    out.commit, out.loaded = landed.commit, None  # the files changed: the sidecar loads them again
    out.branch, out.pushed = ws.base, True
    out.messages.append(f"pushed {out.commit[:12]} to {ws.base}")
    if landed.pushes > 1:
        out.messages.append(landed.summary(ws.base))
    return out


def keep_transient(ws: Workspace, rev: str, result: Result, manifests: Manifests) -> tuple[list[Drift], list[str]]:
    """Endpoints picks already proposed on the open branch ``rev``, kept while the backend is
    away; and one line for each branch version refused (the judgement: ``binding.keep_proposed``)."""
    from syncer.detect.binding import keep_proposed

    return keep_proposed(result, manifests, lambda file: ws.git("show", f"{rev}:{file}"))


def sync_pr(ws: Workspace, installation: str, source: LiveSource, now: datetime, reproduce: str,
            forge: "Forge | None" = None, store: BaseStore | None = None, *, config: ConfigArg = None,
            observed_since: SinceArg = None, caches: Caches | None = None, on_detected: OnDetected = None,
            tools: Tools = DEFAULT_TOOLS) -> Outcome:
    """Keep one branch ``syncer/<installation>`` (and one PR when a forge is given) current."""
    caches = caches if caches is not None else Caches()
    from syncer.writeback.pullrequest import Proposal, reconcile_pull_request

    branch = f"syncer/{installation}"
    base_sha = ws.sync_to_base()
    loaded, result, drifts, changes = _detect(ws.path, installation, source, now, store, Mode.PR, config,
                                              observed_since, ws, caches, tools=tools)
    remote = ws.fetch_branch(branch)
    # With a state record, syncer's own commits are the ones it recorded pushing (an author
    # email anyone can write proves nothing); a record that never held one falls back to the
    # emails once (an upgrade), as a one-shot ``sync`` without a record always does.
    foreign = ws.foreign_commits(remote, store.pushed_heads() if store is not None else None) if remote else []
    refused: list[str] = []
    if remote and not foreign:
        kept, refused = keep_transient(ws, remote, result, loaded.manifests)
        if kept:
            order = {(d.ref, d.path): i for i, d in enumerate(result.drifts)}
            drifts = sorted(drifts + kept, key=lambda d: order.get((d.ref, d.path), len(order)))
            result, drifts, changes = _file_changes(ws.path, installation, result, drifts, loaded, caches)
    out = Outcome(result, drifts, changes, loaded=loaded, messages=refused)
    if foreign:
        out.left_alone, out.branch = True, branch
        out.messages.append(f"{branch} has {len(foreign)} commit(s) not made by syncer; leaving it alone")
        if forge is not None:
            out.pr = reconcile_pull_request(forge, branch, ws.base, None, human_pushed=True)
        return out
    if not changes:
        if forge is not None:  # the branch is syncer's own (no foreign commit), or gone
            out.pr = reconcile_pull_request(forge, branch, ws.base, None, pushed=[remote] if remote else None)
        if remote:
            ws.delete_branch(branch, remote)
            out.messages.append(f"drift gone: deleted {branch}")
        else:
            out.messages.append("nothing to propose")
        return out
    out.title, out.body, out.labels = (pr_title(installation, drifts),
                                       pr_body(result, drifts, reproduce, comments=_comments(changes)), pr_labels(result))
    if on_detected is not None:
        on_detected(out)
    write_changes(ws.path, changes)
    out.commit = ws.commit([c.file for c in changes], commit_message(installation, drifts))
    out.loaded = None  # the files changed: the sidecar loads them again
    unchanged = remote is not None and ws.tree(remote) == ws.tree() and ws.git("rev-parse", f"{remote}^") == base_sha
    if store is not None:  # before the push: git never holds a proposal (nor a head) syncer does not remember
        store.propose(drifts, head=remote if unchanged else out.commit)
    out.branch = branch
    if unchanged:
        out.commit = remote
        out.messages.append(f"{branch} already holds this change")
    elif not ws.push_branch(branch, remote):
        raise GitError(f"{branch} moved while pushing (another syncer or a human); will re-check", transient=True)
    else:
        out.pushed = True
        out.messages.append(f"pushed {branch} at {out.commit[:12]}")
    if forge is not None:
        # the PR's head must be what syncer pushed, or (a forge slow to see a push) the branch
        # as syncer found it, checked to hold its own commits only
        pushed = [sha for sha in (out.commit, remote) if sha]
        out.pr = reconcile_pull_request(forge, branch, ws.base,
                                        Proposal(out.title, out.body, out.labels, drift_hash(drifts),
                                                 pr_fingerprint(result, drifts, out.title, out.labels)),
                                        pushed=pushed)
    return out


def deliver(mode: Mode, where: Workspace | Path, installation: str, source: LiveSource, now: datetime,
               reproduce: str = "", forge: "Forge | None" = None, store: BaseStore | None = None, *,
               config: ConfigArg = None, observed_since: SinceArg = None, caches: Caches | None = None,
               on_detected: OnDetected = None, only: Selection | None = None, tools: Tools = DEFAULT_TOOLS,
               budget: PushBudget = PushBudget()) -> Outcome:
    """Detect and write back as ``mode`` says: ``commit`` (``sync_commit``), ``pr`` (``sync_pr``),
    or ``dry-run`` (``dry_run``: what they would do, nothing written). ``caches``: what the
    installation remembers between passes (the sidecar's, kept across them; None: nothing);
    ``on_detected``: told what was found before the first write (never in a dry run); ``tools``:
    the programs the installation's source runs (``--kustomize``); ``budget``: how long commit
    mode retries pushes that lost the race (``--push-attempts``, ``--push-budget``).

    ``where`` is syncer's own clone (a ``Workspace``), or for a dry run a checkout (a ``Path``)
    taken as it is; a dry run in a clone first resets it to the remote base branch.
    """
    if mode is Mode.DRY_RUN:
        ws = where if isinstance(where, Workspace) else None
        if ws is not None:
            ws.sync_to_base()
        checkout = where.path if isinstance(where, Workspace) else where
        return dry_run(checkout, installation, source, now, reproduce, store, config=config,
                       observed_since=observed_since, ws=ws, caches=caches, only=only, tools=tools)
    if not isinstance(where, Workspace):
        raise TypeError(f"--mode {mode.value} writes in syncer's own clone, not in a checkout ({where})")
    if mode is Mode.COMMIT:
        return sync_commit(where, installation, source, now, store, config=config, observed_since=observed_since,
                           caches=caches, on_detected=on_detected, only=only, tools=tools, budget=budget)
    if only is not None:  # the one PR speaks for the whole installation
        raise ConfigError(f"{only.describe()}: --mode pr keeps one pull request for the whole installation, which a "
                          "selection would shrink or close; use --mode commit or --mode dry-run")
    return sync_pr(where, installation, source, now, reproduce, forge, store, config=config,
                   observed_since=observed_since, caches=caches, on_detected=on_detected, tools=tools)
