"""Regression tests for the live edits the soak found lost, replayed step by step.

syncer decides who moved from a base: the last-applied annotation (which nobody refreshes
when git changes through syncer's own PRs) and its record of the last state where git and
the cluster agreed, kept per object. So after a PR was merged, a field edited live again
looked like "both moved" (git: the merged value, live: the new one, base: the original) and
was only reported as a conflict -- never proposed, i.e. lost -- whenever

* the edit came before syncer's next pass could see git and the cluster agree, or
* another field of the same object had a git-side change pending (its record never moved on), or
* the reviewer merged an older version of the branch than syncer's newest.

Each test drives one ``Sidecar`` pass by pass (``run_pass``), with real git and the fake API.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.test_sidecar import (  # noqa: F401 - fixtures
    CM, RecordingForge, _loopback_only, agreed, fake, git, origin, seed, sidecar, wait_for,
)

from tests.fakes.kube_api import FakeKubeAPI
from syncer.sidecar.app import Sidecar
from syncer.writeback.deliver import Mode


def edit_live(sc: Sidecar, fake: FakeKubeAPI, data: dict[str, str]) -> None:
    seen = sc.cache.version
    fake.patch(*CM, {"data": data}, manager="kubectl-edit")
    wait_for(lambda: sc.cache.version > seen, what="the watch event")


def drifts(report: Any) -> dict[str, tuple[str, str, str]]:
    assert report.error is None, report.error
    return {d.path_text: (d.live, d.direction.value, d.action.value) for d in report.outcome.result.drifts
            if d.ref.kind == "ConfigMap"}


def merge(work: Path, sha: str, forge: RecordingForge) -> None:
    """The reviewer fast-forwards main to ``sha`` and the PR is gone."""
    git(origin(work), "update-ref", "refs/heads/main", sha)
    forge.open = None


def commit_in_git(work: Path, old: str, new: str) -> None:
    git(work, "pull", "-q", "--ff-only", "origin", "main")
    path = work / "hosts" / "asgard" / "ollama-endpoint-manager.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    git(work, "commit", "-qam", f"by hand: {new}")
    git(work, "push", "-q", "origin", "main")


def test_an_edit_right_after_the_merge_with_a_git_change_pending_is_proposed(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, agreed)
    forge = RecordingForge()
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.PR, forge=forge)
    sc.start(run_loop=False)
    try:
        sc.loop.run_pass("start")
        commit_in_git(agreed, 'PORT: "11434"', 'PORT: "20001"')  # pending apply, kept forever here
        edit_live(sc, fake, {"INTERVAL_SECONDS": "101", "LIVE_A": "one"})
        report = sc.loop.run_pass("change")
        assert drifts(report)["data.INTERVAL_SECONDS"] == ("101", "cluster", "write")
        assert drifts(report)["data.PORT"][1:] == ("git", "report")
        merge(agreed, git(origin(agreed), "rev-parse", "syncer/asgard"), forge)
        edit_live(sc, fake, {"INTERVAL_SECONDS": "102", "LIVE_A": "two"})  # before any pass saw the merge
        report = sc.loop.run_pass("change")
        assert drifts(report)["data.INTERVAL_SECONDS"] == ("102", "cluster", "write")
        assert drifts(report)["data.LIVE_A"] == ("two", "cluster", "write")
        merge(agreed, git(origin(agreed), "rev-parse", "syncer/asgard"), forge)
        sc.loop.run_pass("resync")  # sees git and the cluster agree on these two fields
        edit_live(sc, fake, {"INTERVAL_SECONDS": "103"})
        assert drifts(sc.loop.run_pass("change"))["data.INTERVAL_SECONDS"] == ("103", "cluster", "write")
    finally:
        sc.stop()
    main = git(origin(agreed), "show", "main:hosts/asgard/ollama-endpoint-manager.yaml")
    assert 'PORT: "20001"' in main  # the git-side change was never reverted
    assert 'INTERVAL_SECONDS: "103"' in git(origin(agreed), "show",
                                            "syncer/asgard:hosts/asgard/ollama-endpoint-manager.yaml")


def test_merging_an_older_version_of_the_branch_loses_nothing(agreed: Path, fake: FakeKubeAPI,
                                                              tmp_path: Path) -> None:
    seed(fake, agreed)
    forge = RecordingForge()
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.PR, forge=forge)
    sc.start(run_loop=False)
    try:
        sc.loop.run_pass("start")
        edit_live(sc, fake, {"INTERVAL_SECONDS": "101"})
        sc.loop.run_pass("change")
        first = git(origin(agreed), "rev-parse", "syncer/asgard")
        edit_live(sc, fake, {"INTERVAL_SECONDS": "102"})
        sc.loop.run_pass("change")  # the branch moves on to 102 ...
        merge(agreed, first, forge)  # ... while the reviewer merges the version with 101
        edit_live(sc, fake, {"INTERVAL_SECONDS": "103"})
        assert drifts(sc.loop.run_pass("change"))["data.INTERVAL_SECONDS"] == ("103", "cluster", "write")
    finally:
        sc.stop()


def test_git_set_back_to_an_older_proposal_by_hand_is_a_git_side_change(agreed: Path, fake: FakeKubeAPI,
                                                                         tmp_path: Path) -> None:
    seed(fake, agreed)
    forge = RecordingForge()
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.PR, forge=forge)
    sc.start(run_loop=False)
    try:
        sc.loop.run_pass("start")
        for value in ("101", "102"):
            edit_live(sc, fake, {"INTERVAL_SECONDS": value})
            sc.loop.run_pass("change")
            merge(agreed, git(origin(agreed), "rev-parse", "syncer/asgard"), forge)
            time.sleep(0.01)
            sc.loop.run_pass("resync")  # agreement seen: proposals older than 102 are history
        commit_in_git(agreed, 'INTERVAL_SECONDS: "102"', 'INTERVAL_SECONDS: "101"')  # a person reverts
        report = sc.loop.run_pass("resync")
        assert drifts(report)["data.INTERVAL_SECONDS"] == ("102", "git", "report")  # pending apply
    finally:
        sc.stop()


def test_the_value_git_holds_is_remembered_however_many_proposals_follow(agreed: Path, fake: FakeKubeAPI,
                                                                          tmp_path: Path) -> None:
    from syncer.sidecar.state import MAX_PROPOSALS

    seed(fake, agreed)
    forge = RecordingForge()
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.PR, forge=forge)
    sc.start(run_loop=False)
    try:
        sc.loop.run_pass("start")
        commit_in_git(agreed, 'PORT: "11434"', 'PORT: "20001"')  # keeps the ConfigMap's record still
        edit_live(sc, fake, {"INTERVAL_SECONDS": "100"})
        sc.loop.run_pass("change")
        merge(agreed, git(origin(agreed), "rev-parse", "syncer/asgard"), forge)  # git: 100
        for n in range(101, 102 + MAX_PROPOSALS):  # the next PR waits for review, updated again and again
            edit_live(sc, fake, {"INTERVAL_SECONDS": str(n)})
            assert drifts(sc.loop.run_pass("change"))["data.INTERVAL_SECONDS"] == (str(n), "cluster", "write")
    finally:
        sc.stop()
