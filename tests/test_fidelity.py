"""The fidelity pairs (tests/data/fidelity), driven through the CLI on real git.

Each pair is a manifest and the live object a real API server returned for it, from public
diff test suites (gitops-engine, argo-cd, kubectl-neat).  For every pair: ``syncer diff`` must
find exactly the differences the source test sees (none for the pairs that compare equal),
and ``sync --mode commit`` / ``sync --mode pr --forge none`` must write nothing wrong: the
file on the pushed branch must read back as git plus exactly the live values we expect to be
copied, and nothing else.

``python tests/test_fidelity.py [REPO]`` prints the false-drift and wrong-write counts of the
syncer importable from the current path (run it with another checkout first on PYTHONPATH
to measure that one).
"""

from __future__ import annotations

import copy
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if not __package__:  # run as a script: the checkout's ``tests`` package, after any syncer on PYTHONPATH
    sys.path.append(str(Path(__file__).resolve().parents[1]))
from tests.conftest import DATA, NOW, git  # noqa: E402

from syncer.cli import main  # noqa: E402
from syncer.sources.manifests import parse_documents  # noqa: E402

PAIRS = DATA / "fidelity"
CASES = sorted(p.name for p in PAIRS.iterdir() if (p / "hosts").is_dir())

#: Pairs whose source test sees no difference.
EQUAL = {
    "neat-list1", "neat-list1-jsonlive", "neat-pod1", "neat-pv1", "neat-role", "neat-secret1", "neat-service1",
    "ge-aggr-clusterrole", "ge-spinnaker-sa", "ge-sealedsecret", "ge-endpoints", "ge-elasticsearch",
    "ge-mutatingwebhook", "ge-smd-deploy", "ge-ssd-svc", "ge-grafana-clusterrole",
    "ge-wordpress-secret", "in-demo-sa", "in-hpa-same", "in-rv", "in-secret-stringdata",
    "in-customobj-nskubesys", "in-customobj-nsdefault",
}
C0 = "spec.template.spec.containers[0]"
#: Pairs with real differences: {path: (class, action)} of every drift ``syncer diff`` reports.
DIFFERENT: dict[str, dict[str, tuple[str, str]]] = {
    "acd-childapp": {"spec.source.targetRevision": ("value", "write")},
    "acd-deployment": {"metadata.annotations.iksm-version": ("value", "report"), "spec.replicas": ("value", "report")},
    "acd-deployment-env": {
        "metadata.annotations.iksm-version": ("value", "report"), "spec.replicas": ("value", "report"),
        f"{C0}.env[0]": ("removed", "report"), f"{C0}.env[1]": ("removed", "report"),
        f"{C0}.env[2].value": ("value", "report"),
    },
    "acd-httpproxy": {"spec.routes[0].rateLimitPolicy.global.descriptors": ("value", "write")},
    "acd-pdb": {"spec.selector.matchLabels.app": ("value", "report"),
                "spec.selector.matchLabels.version": ("value", "report")},
    "acd-rollout": {f"{C0}.livenessProbe.initialDelaySeconds": ("value", "write")},
    "acd-simpleapp": {"spec.servers[0].port": ("value", "write"), "spec.servers[1].enabled": ("value", "write")},
    # VAR2 (valueFrom) was added live by someone unknown: reported whole, never written.
    "ge-deployment": {f"{C0}.env[1]": ("added", "report")},
    "ge-smd-deploy2": {f"{C0}.ports[2]": ("added", "report")},
    "ge-smd-svc": {"spec.ports[1].targetPort": ("value", "report")},
    "ge-smd-svc-withtype": {"spec.ports[1].targetPort": ("value", "report")},
    "ge-smd-svc-2ports": {"spec.ports[2]": ("added", "report")},
    "ge-smd-svc-5ports": {"spec.ports[2]": ("removed", "report"), "spec.ports[4]": ("removed", "report")},
    # key3 is owned by argocd-controller's server-side Apply: an applier wrote it, so git is the
    # side that moved (it dropped key3, not synced yet): pending apply, reported (issue #11).
    "ge-ssd-configmap": {"data.key3": ("added", "report")},
    # git dropped the label; the forward tool applied it once and has not pruned it yet.
    "ge-ssd-svc-nolabel": {"metadata.labels.delete-me": ("added", "report")},
    "ge-ssd-deploy-compkey": {f"{C0}.ports[2]": ("removed", "report")},
    # The idle container was added with kubectl by a person: proposed whole.
    "ge-ssd-deploy-manual": {f"{C0}.ports[1]": ("removed", "report"),
                             # added by a manual `kubectl apply` (kubectl-client-side-apply, an
                             # applier): reported as git's side, never written (issue #11)
                             "spec.template.spec.containers[1]": ("added", "report")},
    "ge-ssd-deploy-nested": {f"{C0}.ports[1]": ("removed", "report"), f"{C0}.env[1]": ("removed", "report")},
    # owned by helm and argocd-controller (appliers): git's desired state moved, pending apply
    "in-hpa-mod": {"spec.minReplicas": ("value", "report"), "spec.maxReplicas": ("value", "report"),
                   "spec.metrics[0].resource.target.averageUtilization": ("value", "report")},
}
#: What the pull request may write: {path in git: path of the value in live} ("+" appends).
PR_WRITES: dict[str, dict[str, str]] = {
    "acd-childapp": {"spec.source.targetRevision": "spec.source.targetRevision"},
    "acd-httpproxy": {"spec.routes[0].rateLimitPolicy.global.descriptors":
                      "spec.routes[0].rateLimitPolicy.global.descriptors"},
    "acd-rollout": {f"{C0}.livenessProbe.initialDelaySeconds": f"{C0}.livenessProbe.initialDelaySeconds"},
    "acd-simpleapp": {"spec.servers[0].port": "spec.servers[0].port",
                      "spec.servers[1].enabled": "spec.servers[1].enabled"},
}



def _path(text: str) -> tuple[str | int, ...]:
    out: list[str | int] = []
    for part in text.replace("]", "").split("."):
        name, *idx = part.split("[")
        if name:
            out.append(name)
        out.extend(int(i) for i in idx)
    return tuple(out)


def _get(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _live(case: Path) -> Path:
    return next(case.glob("live.*"))


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), now=NOW, stdout=out, stderr=io.StringIO())
    return code, out.getvalue()


def _setup(case: Path, tmp: Path) -> tuple[Path, Path]:
    bare, work = tmp / "origin.git", tmp / "work"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    shutil.copytree(case / "hosts", work / "hosts")
    # The pairs ship their config as syncer.yaml (read-only data): moved as a user would.
    for legacy in (work / "hosts").glob("*/syncer.yaml"):
        legacy.rename(legacy.with_name("syncer.conf"))
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "manifests")
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "main")
    return bare, work


def _objects(text: str) -> list[Any]:
    return parse_documents(text, "<pair>")


def _expected(case: Path, old: str, writes: dict[str, str]) -> list[Any]:
    """The file's documents after copying exactly ``writes`` from live, computed independently."""
    docs = _objects(old)
    live = json.loads(_live(case).read_text()) if _live(case).suffix == ".json" else _objects(_live(case).read_text())[0]
    for git_path, live_path in writes.items():
        value = copy.deepcopy(_get(live, _path(live_path)))
        if git_path.startswith("+"):
            _get(docs[0], _path(git_path[1:])).append(value)
        else:
            p = _path(git_path)
            _get(docs[0], p[:-1])[p[-1]] = value
    return docs


def check_pair(name: str, tmp: Path) -> tuple[bool, list[str]]:
    """(false drift?, wrong writes) for one pair; asserts nothing, so it can also measure."""
    case = PAIRS / name
    bare, work = _setup(case, tmp)
    live = str(_live(case))
    code, out = _run("diff", "t", "--repo", str(work), "--live-file", live, "-o", "json")
    doc = json.loads(out)
    found = {d["path"]: (d["class"], d["action"]) for d in doc["drifts"]}
    false_drift = name in EQUAL and bool(found)
    wrong: list[str] = []
    files = sorted(p.relative_to(work).as_posix() for p in (work / "hosts" / "t").glob("*.yaml"))
    for mode, ref, extra in (("commit", "main", []), ("pr", "syncer/t", ["--forge", "none"])):
        _run("sync", "t", "--repo", str(work), "--live-file", live, "--mode", mode, "--remote", str(bare),
             "--clone-dir", str(tmp / f"clone-{mode}"), *extra)
        has_ref = subprocess.run(["git", "-C", str(bare), "rev-parse", "--verify", "-q", ref],
                                 capture_output=True).returncode == 0
        for file in files:
            old = (work / file).read_text()
            new = git(bare, "show", f"{ref}:{file}") + ("\n" if old.endswith("\n") else "") if has_ref else old
            writes = PR_WRITES.get(name, {}) if mode == "pr" else {}
            if new.rstrip("\n") == old.rstrip("\n"):
                if writes and mode == "pr":
                    wrong.append(f"{mode}: expected write missing")
                continue
            try:
                ok = _objects(new) == _expected(case, old, writes)
            except (KeyError, IndexError, TypeError):
                ok = False
            if not ok:
                wrong.append(f"{mode}: {file} does not read back as git plus exactly the expected live values")
    return false_drift, wrong


@pytest.mark.parametrize("name", CASES)
def test_pair_diff_finds_exactly_the_real_differences(name: str, tmp_path: Path) -> None:
    work = _setup(PAIRS / name, tmp_path)[1]
    code, out = _run("diff", "t", "--repo", str(work), "--live-file", str(_live(PAIRS / name)), "-o", "json")
    doc = json.loads(out)
    found = {d["path"]: (d["class"], d["action"]) for d in doc["drifts"]}
    assert doc["errors"] == []
    if name in EQUAL:
        assert (code, found) == (0, {}), "the source test sees no difference"
    else:
        assert (code, found) == (1, DIFFERENT[name])


@pytest.mark.parametrize("name", CASES)
def test_pair_sync_writes_nothing_wrong(name: str, tmp_path: Path) -> None:
    false_drift, wrong = check_pair(name, tmp_path)
    assert not false_drift
    assert wrong == []


def test_every_pair_is_classified() -> None:
    assert set(CASES) == EQUAL | set(DIFFERENT)


if __name__ == "__main__":
    import tempfile

    drifted, wrong_pairs = [], []
    for case in CASES:
        with tempfile.TemporaryDirectory() as d:
            fd, w = check_pair(case, Path(d))
        if fd:
            drifted.append(case)
        if w:
            wrong_pairs.append(f"{case} ({'; '.join(w)})")
    equal = len([c for c in CASES if c in EQUAL])
    print(f"false drift: {len(drifted)} of {equal} equal pairs: {', '.join(drifted) or '-'}")
    print(f"wrong writes: {len(wrong_pairs)} of {len(CASES)} pairs: {'; '.join(wrong_pairs) or '-'}")
