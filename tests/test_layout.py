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
