"""Bad input: one clear line naming the culprit, exit 2, and nothing written."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from conftest import EXAMPLE_LIVE, NOW, ROOT, git

from syncer.cli import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), now=NOW, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def make_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "hosts" / "asgard", repo / "hosts" / "asgard")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    return repo


def test_malformed_yaml_names_file_and_line_and_the_rest_still_diffs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "hosts" / "asgard" / "broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: [\n")
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2
    errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: hosts/asgard/broken.yaml:4:")
    assert "data.MAC_ADDRS" in out  # the other files were compared


def test_unknown_key_in_syncer_yaml(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    cfg = repo / "hosts" / "asgard" / "syncer.yaml"
    cfg.write_text(cfg.read_text().replace("stableFor:", "stablefor:"))
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert (code, out) == (2, "")
    assert err == ("syncer: error: hosts/asgard/syncer.yaml: unknown key 'stablefor' (allowed: candidates, "
                   "ignore, installation, namespace, secretKeys, stableFor, track)\n")


def test_unknown_installation(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    code, _, err = run("diff", "midgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("syncer: error: unknown installation 'midgard'") and "(known: asgard)" in err


def test_path_traversal_installation_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    code, _, err = run("diff", "../..", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and "not a valid name" in err


def test_duplicate_object_names_both_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    shutil.copy(repo / "hosts" / "asgard" / "ollama-backends.yaml", repo / "hosts" / "asgard" / "zz-copy.yaml")
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2
    assert ("error: Service/ai/mac-ollama is declared twice: in hosts/asgard/ollama-backends.yaml and in "
            "hosts/asgard/zz-copy.yaml") in out


def test_document_without_kind(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "hosts" / "asgard" / "nokind.yaml").write_text("apiVersion: v1\nmetadata: {name: x}\n")
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and "error: hosts/asgard/nokind.yaml (document 1): document has no kind" in out


def test_non_utf8_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "hosts" / "asgard" / "latin1.yaml").write_bytes(b"apiVersion: v1\nkind: ConfigMap\n# caf\xe9\n")
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and "error: hosts/asgard/latin1.yaml: not UTF-8 text" in out


def test_symlink_out_of_the_repo_is_not_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    outside = tmp_path / "outside.yaml"
    outside.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n")
    (repo / "hosts" / "asgard" / "link.yaml").symlink_to(outside)
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and "link.yaml: symlink points outside the repository" in out


def test_secret_in_hosts_is_never_written_back(asgard_repo: Path, tmp_path: Path) -> None:
    secret = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: ollama-auth\n  namespace: ai\n"
              "stringData:\n  TOKEN: old-value\n")
    (asgard_repo / "hosts" / "asgard" / "secret.yaml").write_text(secret)
    cfg = asgard_repo / "hosts" / "asgard" / "syncer.yaml"
    cfg.write_text(cfg.read_text().replace("  ConfigMap: writeback", "  ConfigMap: writeback\n  Secret: writeback"))
    git(asgard_repo, "add", ".")
    git(asgard_repo, "commit", "-qm", "add secret")
    git(asgard_repo, "push", "-q", "origin", "main")
    live = tmp_path / "live.yaml"
    live.write_text(EXAMPLE_LIVE.read_text() + (
        "- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: ollama-auth\n    namespace: ai\n"
        "  stringData:\n    TOKEN: new-live-value\n"))
    code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "--mode", "commit")
    assert code == 0, out
    assert "new-live-value" not in out
    git(asgard_repo, "fetch", "-q", "origin")
    assert git(asgard_repo, "show", "origin/main:hosts/asgard/secret.yaml") + "\n" == secret
    code, out, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "-o", "json")
    assert "new-live-value" not in out and "old-value" not in out and '"action": "report"' in out
