"""The parses kept between commands (syncer/parsestore.py): a second command parses only
the files whose text changed, and a store that is stale, damaged, foreign or unwritable never
changes what syncer reads."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from syncer.cache import Caches
from syncer.cli import main
from syncer import parsestore
from syncer.sources.manifests import load_manifests
from syncer.parsestore import ParseStore, cache_dir, store_for
from tests.conftest import EXAMPLE_LIVE, NOW

TWO_DOCS = """apiVersion: v1
kind: ConfigMap
metadata:
  name: one
data:
  MODE: "0755"
  OCTAL: 0755
  FLAG: yes
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: two
data:
  LIST: a,b
"""


def _installation(root: Path, files: dict[str, str]) -> Path:
    base = root / "hosts" / "inst"
    base.mkdir(parents=True)
    for name, text in files.items():
        (base / name).write_text(text)
    return root


def _load(repo: Path, directory: Path | None) -> tuple[dict[str, object], ParseStore]:
    caches = Caches(stored=store_for(directory, str(repo), "inst"))
    manifests = load_manifests(repo, "inst", "default", caches=caches)
    data = {str(ref): obj.data for ref, obj in manifests.objects.items()}
    data["errors"] = [e.message for e in manifests.errors]
    return data, caches.stored


def test_a_second_load_parses_nothing_and_reads_the_same(tmp_path: Path) -> None:
    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS, "b.yaml": TWO_DOCS.replace("one", "three")
                                             .replace("two", "four")})
    fresh, first = _load(repo, None)  # parsed, nothing kept
    kept, second = _load(repo, tmp_path / "cache")
    assert (second.hits, second.misses) == (0, 2)
    again, third = _load(repo, tmp_path / "cache")
    assert (third.hits, third.misses) == (2, 0)
    assert fresh == kept == again
    # YAML 1.1 as kubectl reads it, also from the store: 0755 is 493, yes is true, "0755" a string
    one = next(v for k, v in again.items() if k.endswith("/one"))
    assert one["data"] == {"MODE": "0755", "OCTAL": 493, "FLAG": True}  # type: ignore[index]


def test_a_changed_file_is_parsed_again_and_its_new_value_read(tmp_path: Path) -> None:
    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS, "b.yaml": "apiVersion: v1\nkind: ConfigMap\n"
                                             "metadata:\n  name: b\ndata:\n  K: old\n"})
    _load(repo, tmp_path / "cache")
    (repo / "hosts" / "inst" / "b.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"
                                                    "data:\n  K: new\n")
    data, store = _load(repo, tmp_path / "cache")
    assert (store.hits, store.misses) == (1, 1)
    assert next(v for k, v in data.items() if k.endswith("/b"))["data"] == {"K": "new"}  # type: ignore[index]


def test_a_broken_file_is_not_remembered_and_errs_every_time(tmp_path: Path) -> None:
    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS, "bad.yaml": "a: [1, 2\n"})
    for _ in range(2):
        data, store = _load(repo, tmp_path / "cache")
        assert any("bad.yaml" in e and "malformed YAML" in e for e in data["errors"])  # type: ignore[attr-defined]
    assert store.misses == 1 and store.hits == 1  # the good file from the store, the bad one parsed again


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", b"truncated"])
def test_a_damaged_store_is_ignored(tmp_path: Path, damage: bytes) -> None:
    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS})
    fresh, _ = _load(repo, None)
    _load(repo, tmp_path / "cache")
    [path] = (tmp_path / "cache" / "parsed").glob("*.parsed")
    path.write_bytes(damage if damage != b"truncated" else path.read_bytes()[:40])
    data, store = _load(repo, tmp_path / "cache")
    assert data == fresh and store.misses == 1
    data, store = _load(repo, tmp_path / "cache")  # written again, whole
    assert data == fresh and store.hits == 1


def test_a_store_of_another_reader_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed reader (its source, ruamel, Python) is a new tag: nothing stored by the old one is used."""
    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS})
    _load(repo, tmp_path / "cache")
    monkeypatch.setattr(parsestore, "_tag", lambda: "another reader")
    _, store = _load(repo, tmp_path / "cache")
    assert (store.hits, store.misses) == (0, 1)


def test_forged_entries_of_the_wrong_shape_are_dropped(tmp_path: Path) -> None:
    import marshal

    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS})
    _load(repo, tmp_path / "cache")
    [path] = (tmp_path / "cache" / "parsed").glob("*.parsed")
    tag, entries = marshal.loads(path.read_bytes())
    path.write_bytes(marshal.dumps((tag, {k: "not a list of documents" for k in entries})))
    data, store = _load(repo, tmp_path / "cache")
    assert store.misses == 1 and data == _load(repo, None)[0]


def test_a_cache_dir_that_is_a_file_costs_only_time(tmp_path: Path) -> None:
    """A directory that cannot be made (also as root, who may write anywhere else)."""
    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS})
    (tmp_path / "file").write_text("not a directory")
    data, store = _load(repo, tmp_path / "file" / "cache")
    assert data == _load(repo, None)[0] and store.misses == 1
    assert (tmp_path / "file").read_text() == "not a directory"


def test_the_store_is_private_and_named_by_a_digest(tmp_path: Path) -> None:
    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS})
    store = store_for(tmp_path / "cache", "https://user:secret@git.example.invalid/ops.git", "inst")
    assert store.path is not None and "secret" not in str(store.path) and "example" not in str(store.path)
    _load(repo, tmp_path / "cache")
    assert stat.S_IMODE((tmp_path / "cache" / "parsed").stat().st_mode) == 0o700
    [path] = (tmp_path / "cache" / "parsed").glob("*.parsed")
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0  # mkstemp: 0600


def test_the_strings_read_back_are_interned(tmp_path: Path) -> None:
    """The sidecar's memory relies on one string per key across thousands of documents."""
    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS})
    _load(repo, tmp_path / "cache")
    data, store = _load(repo, tmp_path / "cache")
    assert store.hits == 1
    keys = [k for v in data.values() if isinstance(v, dict) for k in v]
    assert keys and all(k is sys.intern(k) for k in keys)


def test_only_the_newest_stores_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsestore, "MAX_STORES", 3)
    repo = _installation(tmp_path / "repo", {"a.yaml": TWO_DOCS})
    for i in range(5):
        caches = Caches(stored=store_for(tmp_path / "cache", f"repo-{i}", "inst"))
        load_manifests(repo, "inst", "default", caches=caches)
        os.utime(caches.stored.path, ns=(i * 10**9, i * 10**9))
    kept = sorted((tmp_path / "cache" / "parsed").glob("*.parsed"))
    assert len(kept) == 3
    assert store_for(tmp_path / "cache", "repo-0", "inst").path not in kept
    assert store_for(tmp_path / "cache", "repo-4", "inst").path in kept


def test_cache_dir_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNCER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir(None) == tmp_path / "xdg" / "syncer"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir(None) == tmp_path / "home" / ".cache" / "syncer"
    assert cache_dir("none") is None and cache_dir("NONE") is None
    assert cache_dir(str(tmp_path / "mine")) == tmp_path / "mine"
    monkeypatch.setenv("SYNCER_CACHE_DIR", "none")
    assert cache_dir(None) is None


def test_diff_twice_prints_the_same_and_the_second_parses_nothing(tmp_path: Path, asgard_repo: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """End to end: `syncer diff` on the bundled example, then again from the kept parses."""
    repo = asgard_repo
    cache = tmp_path / "cache"
    argv = ["diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE), "-o", "json",
            "--cache-dir", str(cache)]
    outputs = []
    for _ in range(2):
        code = main(argv, now=NOW)
        outputs.append((code, capsys.readouterr().out))
    assert outputs[0] == outputs[1] and outputs[0][0] == 1  # the example drifts
    assert json.loads(outputs[0][1])["drifts"]
    [path] = (cache / "parsed").glob("*.parsed")
    store = store_for(cache, str(repo.absolute()), "asgard")
    files = len(list((repo / "hosts" / "asgard").glob("*.yaml")))
    for f in (repo / "hosts" / "asgard").glob("*.yaml"):
        store.documents(f.read_text(), f.name, lambda text, shown: pytest.fail(f"{shown} parsed again"))
    assert store.hits == files > 0
    code = main([*argv[:-2], "--cache-dir", "none"], now=NOW)
    assert (code, capsys.readouterr().out) == outputs[0]
