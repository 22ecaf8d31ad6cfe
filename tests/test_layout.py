"""README's Layout section names every module of the package, one line each, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> set[str]:
    """``syncer/`` modules as README names them: ``kube/client``, ``engine``, ``sidecar/loop``."""
    found: set[str] = set()
    for path in (ROOT / "syncer").rglob("*.py"):
        rel = path.relative_to(ROOT / "syncer").with_suffix("")
        if rel.name == "__main__":
            continue
        if rel.name == "__init__":
            if rel.parent == Path("."):
                continue
            found.add(f"{rel.parent.as_posix()}/")
            continue
        found.add(rel.as_posix())
    return found


def _layout_lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("* `") or line.startswith("  * `")]


def test_every_module_has_one_layout_line_and_every_line_names_a_module() -> None:
    named: dict[str, int] = {}
    for line in _layout_lines():
        m = re.match(r"\s*\* `([^`]+)`", line)
        assert m, line
        named[m.group(1)] = named.get(m.group(1), 0) + 1
    modules = _modules()
    assert sorted(modules - set(named)) == [], "modules README's Layout does not name"
    assert sorted(set(named) - modules) == [], "names in README's Layout that are not modules"
    assert [name for name, n in named.items() if n > 1] == []


#: What code outside ``syncer/sources/`` may import of it: the seam (the protocol and the one
#: dispatch) and the git objects every source loads. A source's own modules are its own.
SEAM = {"syncer.sources", "syncer.sources.source", "syncer.sources.dispatch", "syncer.sources.manifests",
        "syncer.sources.skipped"}


def test_a_new_source_type_goes_in_one_place() -> None:
    """README's Layout and the dispatch's docstring say where (a package under sources/ and one
    entry in ``SOURCES``); every source class is in that table, plain manifests last; and nothing
    outside sources/ imports a source of its own accord (it asks the ``Source`` it was given)."""
    import inspect

    from syncer.sources import dispatch
    from syncer.sources.plain import ManifestsSource
    from tests.test_imports import graph

    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Layout\n", 1)[1]
    assert "a new source type is a package here and one\nentry in `sources/dispatch`'s `SOURCES`" in section
    assert "A new source type: a package ``syncer/sources/<name>/``" in (dispatch.__doc__ or "")
    assert dispatch.SOURCES[-1] is ManifestsSource
    classes = set()
    for path in (ROOT / "syncer" / "sources").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        mod = __import__(module, fromlist=["_"])
        for _, value in inspect.getmembers(mod, inspect.isclass):
            if value.__module__ == module and all(hasattr(value, n) for n in ("claims", "load", "place", "verify")):
                classes.add(value)
    assert classes and classes == set(dispatch.SOURCES)
    outside = {(a, b) for a, targets in graph().items() if not a.startswith("syncer.sources")
               for b in targets if b.startswith("syncer.sources") and b not in SEAM}
    assert sorted(outside) == []
