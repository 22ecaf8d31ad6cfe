"""The fault-injected soak (``tests/soak/driver.py``) in its short CI mode: nothing is lost.

Two real ``syncer run`` replicas, fake API server and GitHub on loopback, a real bare
repository; a seeded schedule of edits, human commits, merges and faults, flap-only windows,
then settle, merge and check. It takes about three minutes; every wait in it is bounded.
``SYNCER_SOAK_SEED`` runs another schedule (the default one is what CI runs).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SEED = int(os.environ.get("SYNCER_SOAK_SEED", "1"))


@pytest.mark.slow
def test_soak_loses_nothing_under_faults(tmp_path: Path) -> None:
    from tests.soak.driver import CI_SECONDS, run_soak

    report = run_soak(CI_SECONDS, SEED, tmp_path, ci=True, say=lambda _: None)
    print(report.table())  # shown with -rP
    context = (f"\n\nseed {SEED}, logs and repositories in {tmp_path}\n\n{report.table()}\n\ntimeline: "
               f"{json.dumps(report.details.get('timeline'))}")
    assert not report.failures, "\n".join(report.failures) + context
    figures = {f.name: f.value for f in report.figures}
    # The figures the issue asks for, spelled out (each is also an invariant in report.failures).
    assert figures["duplicate PRs: overlapping open PRs for the branch"] == "0", context
    assert figures["duplicate commits (same content change twice on main)"] == "0", context
    assert figures["commits, branch pushes and PR writes caused by flapping"] == "0", context
    assert figures["Secret written to git (ref states with a changed Secret)"] == "0", context
    assert figures["forge token occurrences in replica stdout/stderr"] == "0", context
    assert figures["git token occurrences in replica stdout/stderr (plain or Basic)"] == "0", context
    assert figures["force-pushes of main (a state not an ancestor of the next)"] == "0", context
    done, total = figures["live edits applied: keys at their last live value in main"].split("/")
    assert done == total and int(total) > 0, context
    kept, humans = figures["human git edits kept in main"].split("/")
    assert kept == humans and int(humans) > 0, context
