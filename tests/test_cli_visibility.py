"""What an operator sees: unreadable objects (403) named with the grant to add, exit codes that
follow from them (an object not read is not in sync, unless its kind is ``optional:``), ``sync --exit-code``, JSON on fatal errors, causes in words, help with
descriptions and defaults, and the chart values ``syncer init`` prints."""

from __future__ import annotations

import io
import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import NOW, ROOT, git
from tests.test_live_api import load_asgard_as_applied

from tests.fakes.kube_api import FakeKubeAPI
from syncer.cli import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), now=NOW, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def forbid_report_kinds(api: FakeKubeAPI) -> None:
    """The chart's Role as docs/install.md had it: ConfigMaps and Endpoints only."""
    for resource in ("services", "deployments.apps", "serviceaccounts", "roles.rbac.authorization.k8s.io",
                     "rolebindings.rbac.authorization.k8s.io"):
        api.forbid("get", resource)


OPTIONAL = "optional: [Service, Deployment, ServiceAccount, Role, RoleBinding]\n"


def mark_optional(repo: Path) -> None:
    """The report kinds of asgard marked ``optional:`` (a 403 of them is a warning), committed and pushed."""
    git(repo, "pull", "-q", "--rebase", "origin", "main")  # a sync may have pushed meanwhile
    conf = repo / "hosts" / "asgard" / "syncer.conf"
    conf.write_text(conf.read_text() + OPTIONAL)
    git(repo, "commit", "-qam", "optional report kinds")
    git(repo, "push", "-q", "origin", "main")


def test_unreadable_report_kinds_are_errors_naming_the_grant_and_no_in_sync_is_claimed(
        fake_kube: FakeKubeAPI, asgard_repo: Path, tmp_path: Path) -> None:
    load_asgard_as_applied(fake_kube)
    forbid_report_kinds(fake_kube)
    kc = str(fake_kube.kubeconfig(tmp_path / "kubeconfig"))
    code, out, err = run("diff", "asgard", "--repo", str(asgard_repo), "--kubeconfig", kc, "--context", "fake")
    assert (code, err) == (2, "")  # an object not read is not one compared: whatever its kind's mode
    assert out.splitlines()[0] == ("asgard: 4 difference(s) in 3 object(s); 4 to copy back into git; 6 of 9 declared "
                                   "object(s) could not be compared (6 access denied (403))")
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 6 and not [line for line in out.splitlines() if line.startswith("warning:")]
    svc = next(e for e in errors if "Service/ai/mac-ollama" in e)
    assert "may not read it" in svc and "not compared" in svc and "tracked.kinds.Service" in svc
    assert "optional:" in svc  # ... and how to say it may be refused
    assert "data.MAC_ADDRS" in out and "m1-ollama" in out  # the rest was compared
    code, out, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--kubeconfig", kc, "--context", "fake",
                       "-o", "json")
    doc: dict[str, Any] = json.loads(out)
    assert code == 2 and len(doc["errors"]) == 6 and doc["in_sync"] is False
    assert {(d["kind"], d["reason"]) for d in doc["not_compared"]} == {
        (k, "access denied (403)") for k in ("Service", "Deployment", "ServiceAccount", "Role", "RoleBinding")}


def test_unreadable_optional_kinds_are_warnings_naming_the_grant_and_diff_still_answers(
        fake_kube: FakeKubeAPI, asgard_repo: Path, tmp_path: Path) -> None:
    load_asgard_as_applied(fake_kube)
    forbid_report_kinds(fake_kube)
    mark_optional(asgard_repo)
    kc = str(fake_kube.kubeconfig(tmp_path / "kubeconfig"))
    code, out, err = run("diff", "asgard", "--repo", str(asgard_repo), "--kubeconfig", kc, "--context", "fake")
    assert (code, err) == (1, "")  # drift found; the optional kinds' refusals cost no error
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 6 and not [line for line in out.splitlines() if line.startswith("error:")]
    svc = next(w for w in warnings if "Service/ai/mac-ollama" in w)
    assert "may not read it" in svc and "optional" in svc and "tracked.kinds.Service" in svc
    assert "data.MAC_ADDRS" in out and "m1-ollama" in out  # the rest was compared
    code, out, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--kubeconfig", kc, "--context", "fake",
                       "-o", "json")
    doc: dict[str, Any] = json.loads(out)
    assert code == 1 and doc["errors"] == [] and len(doc["warnings"]) == 6
    assert {w["file"] for w in doc["warnings"]} == {"hosts/asgard/ollama-backends.yaml",
                                                    "hosts/asgard/ollama-endpoint-manager.yaml"}


def test_sync_commits_what_it_can_exit_0_with_optional_kinds_unreadable_2_with_a_written_one(
        fake_kube: FakeKubeAPI, asgard_repo: Path, tmp_path: Path) -> None:
    load_asgard_as_applied(fake_kube)
    forbid_report_kinds(fake_kube)
    kc = str(fake_kube.kubeconfig(tmp_path / "kubeconfig"))
    origin = asgard_repo.parent / "origin.git"
    before = git(origin, "rev-list", "--count", "main")
    # Report kinds unreadable, not optional: what was read is still written, and the exit says 2.
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--kubeconfig", kc, "--context", "fake",
                         "--mode", "commit", "--clone-dir", str(tmp_path / "c0"))
    assert code == 2 and "error: Service/ai/mac-ollama" in out, out
    assert int(git(origin, "rev-list", "--count", "main")) == int(before) + 1  # the ConfigMap values went in
    fake_kube.patch("v1", "ConfigMap", "ai", "ollama-endpoint-manager", {"data": {"MAC_ADDRS": "192.168.68.89"}},
                    manager="kubectl-edit", time="2026-08-21T09:00:00Z")
    mark_optional(asgard_repo)
    before = git(origin, "rev-list", "--count", "main")
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--kubeconfig", kc, "--context", "fake",
                         "--mode", "commit", "--clone-dir", str(tmp_path / "c1"))
    assert (code, err) == (0, ""), out
    assert int(git(origin, "rev-list", "--count", "main")) == int(before) + 1
    assert "warning: Service/ai/mac-ollama" in out

    # A written-back kind (ConfigMap: writeback) unreadable: an error, exit 2 -- the rest still written.
    fake_kube.patch("v1", "Endpoints", "ai", "mac-ollama",
                    {"subsets": [{"addresses": [{"ip": "192.168.68.58"}], "ports": [{"name": "http", "port": 11434}]}]},
                    manager="ollama-endpoint-manager", time="2026-08-21T08:03:24Z")
    fake_kube.forbid("get", "configmaps")
    code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), "--kubeconfig", kc, "--context", "fake",
                       "--mode", "commit", "--clone-dir", str(tmp_path / "c2"))
    assert code == 2
    error = next(line for line in out.splitlines() if line.startswith("error: ConfigMap/ai/ollama-endpoint-manager"))
    assert "written back, so it is not synced" in error and "tracked.kinds.ConfigMap" in error


def test_sync_exit_code_gates_ci_on_drift() -> None:
    live = str(ROOT / "examples" / "asgard-live.yaml")
    base = ["sync", "asgard", "--repo", str(ROOT), "--live-file", live, "--mode", "dry-run"]
    assert run(*base)[0] == 0
    assert run(*base, "--exit-code")[0] == 1


def test_json_output_carries_a_fatal_error_too(tmp_path: Path) -> None:
    code, out, err = run("diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(tmp_path / "missing"), "-o", "json")
    assert code == 2
    assert err == f"syncer: error: kubeconfig {tmp_path / 'missing'}: no such file\n"
    doc = json.loads(out)
    assert doc["fatal"] is True and doc["errors"][0]["message"] == f"kubeconfig {tmp_path / 'missing'}: no such file"


def test_missing_kubeconfig_from_the_environment_is_no_such_file_not_no_current_context(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nope"))
    code, _, err = run("diff", "asgard", "--repo", str(ROOT))
    assert code == 2 and err == f"syncer: error: kubeconfig {tmp_path / 'nope'}: no such file\n"


def test_a_refused_connection_is_said_in_words(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    code, _, err = run("diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(kc))
    assert code == 2 and err.rstrip().endswith("connection refused"), err
    assert "NewConnectionError" not in err


def test_a_snapshot_without_managed_fields_says_why_direction_is_unknown(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "asgard-live.yaml").read_text()
    doc = json.loads(subprocess.run(["python", "-c", "import sys,json,yaml; print(json.dumps(yaml.safe_load(sys.stdin)))"],
                                    input=text, capture_output=True, text=True, check=True).stdout)
    for item in doc["items"]:
        item["metadata"].pop("managedFields", None)
        item["metadata"].get("annotations", {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(doc))
    code, out, _ = run("diff", "asgard", "--repo", str(ROOT), "--live-file", str(bare))
    assert code == 1
    assert "carry no managedFields" in out and "--show-managed-fields" in out
    code, out, _ = run("diff", "asgard", "--repo", str(ROOT), "--live-file", str(ROOT / "examples" / "asgard-live.yaml"))
    assert "managedFields" not in out and "by field manager kubectl-edit" in out


@pytest.mark.parametrize("command,wanted", [
    ("diff", ["Exit 0 in sync, 1 drift found", "(default: text)"]),
    ("sync", ["Copy accepted live values back", "required unless --forge is given", "--exit-code", "examples:"]),
    ("run", ["The sidecar", "(default: 0.0.0.0:8080)", "(default: 600s)", "(default: syncer-state)"]),
    ("init", ["Write hosts/<installation>/syncer.conf", "--chart-values"]),
])
def test_subcommand_help_has_a_description_and_the_defaults(command: str, wanted: list[str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for piece in wanted:
        assert " ".join(piece.split()) in text, piece
    assert "(default: None)" not in text


def test_init_prints_the_chart_values_granting_what_the_config_reads() -> None:
    code, out, _ = run("init", "asgard", "--repo", str(ROOT), "--chart-values")
    assert code == 0
    assert out.splitlines()[1:] == [
        "tracked:",
        "  kinds:",
        "    ConfigMap: [ollama-endpoint-manager]",
        "    Deployment: [ollama-endpoint-manager]",
        "    Endpoints: [m1-ollama, mac-ollama]",
        "    Role: [ollama-endpoint-manager]",
        "    RoleBinding: [ollama-endpoint-manager]",
        "    Service: [m1-ollama, mac-ollama]",
        "    ServiceAccount: [ollama-endpoint-manager]",
    ]
