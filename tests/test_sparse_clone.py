"""The first clone is partial (blob-less) and sparse: only hosts/<installation>/ is checked out."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import ROOT, git

from syncer.gitrepo import Identity, Workspace


def _two_installations(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    shutil.copytree(ROOT / "hosts" / "asgard", work / "hosts" / "asgard")
    (work / "hosts" / "other").mkdir(parents=True)
    (work / "hosts" / "other" / "big.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
                                                      "data: {blob: '" + "y" * 50_000 + "'}\n")
    (work / "README.md").write_text("top-level files stay\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "two installations")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    return bare


def test_first_clone_checks_out_only_the_installation(tmp_path: Path) -> None:
    bare = _two_installations(tmp_path)
    ws = Workspace.open_or_clone(f"file://{bare}", "main", tmp_path / "clone", Identity(), installation="asgard")
    files = sorted(p.relative_to(ws.path).as_posix() for p in ws.path.rglob("*") if ".git" not in p.parts and p.is_file())
    assert files == ["README.md", "hosts/asgard/ollama-backends.yaml", "hosts/asgard/ollama-endpoint-manager.yaml",
                     "hosts/asgard/syncer.conf"]
    # blob-less: the other installation's file content was never fetched
    other = git(ws.path, "rev-parse", "HEAD:hosts/other/big.yaml")
    missing = git(ws.path, "rev-list", "--objects", "--missing=print", "HEAD")
    assert f"?{other}" in missing.split()
    # and it is a normal clone for everything syncer does: edit, commit, push
    path = ws.path / "hosts" / "asgard" / "ollama-endpoint-manager.yaml"
    path.write_text(path.read_text().replace("INTERVAL_SECONDS", "INTERVAL_SECS"))
    ws.commit(["hosts/asgard/ollama-endpoint-manager.yaml"], "edit")
    assert ws.push_base()
    assert "INTERVAL_SECS" in git(bare, "show", "main:hosts/asgard/ollama-endpoint-manager.yaml")
    # reused with another installation: the sparse set follows
    again = Workspace.open_or_clone(f"file://{bare}", "main", tmp_path / "clone", Identity(), installation="other")
    assert (again.path / "hosts" / "other" / "big.yaml").exists()
    assert not (again.path / "hosts" / "asgard").exists()


def test_without_an_installation_the_only_one_is_checked_out_else_everything(tmp_path: Path) -> None:
    bare = _two_installations(tmp_path)
    ws = Workspace.open_or_clone(f"file://{bare}", "main", tmp_path / "clone", Identity())
    assert (ws.path / "hosts" / "asgard").is_dir() and (ws.path / "hosts" / "other").is_dir()  # two: all of it
