"""syncer's error tree is drawn once, in ``syncer.errors``' docstring, and completely: every
exception class defined anywhere in ``syncer`` appears in the drawing, each under its real base."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import syncer
from syncer import errors

ROOT = Path(syncer.__file__).parent
BRANCH = re.compile(r"(?:[├└]── |^ {4})(\w+)")


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(syncer.__path__, "syncer."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name:
                assert name not in found, f"two exception classes named {name}: {found[name]} and {obj}"
                found[name] = obj
    return found


def _drawn_tree() -> dict[str, str]:
    """The tree under ``SyncerError``: each drawn class and the class drawn as its parent."""
    doc = errors.__doc__ or ""
    lines = doc[doc.index("    SyncerError"):].split("\n\n")[0].splitlines()
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in lines:
        match = BRANCH.search(line)
        assert match, f"not a line of the tree: {line!r}"
        column, name = match.start(1), match.group(1)
        while stack and stack[-1][0] >= column:
            stack.pop()
        if stack:
            parents[name] = stack[-1][1]
        stack.append((column, name))
    return parents


def test_every_exception_class_in_syncer_is_in_the_one_drawing() -> None:
    classes = _exception_classes()
    assert {"SyncerError", "Unparsable", "InputRejected", "YamlEditError", "StartupError",
            "ForgeRateLimited", "EditRefused"} <= set(classes)  # the walk does see the whole package
    drawn = set(re.findall(r"[├└]── (\w+)", errors.__doc__ or "")) | {"SyncerError"}
    missing = sorted(set(classes) - drawn)
    assert not missing, f"exception classes missing from syncer/errors.py's tree: {missing}"
    stale = sorted(drawn - set(classes))
    assert not stale, f"drawn in syncer/errors.py but not defined in syncer: {stale}"


def test_the_drawing_puts_each_syncer_error_under_its_real_base() -> None:
    classes = _exception_classes()
    parents = _drawn_tree()
    assert set(parents) == {n for n, c in classes.items() if issubclass(c, errors.SyncerError)} - {"SyncerError"}
    lines = {m.group(1): m.group(0) for m in re.finditer(r"[├└]── (\w+).*", errors.__doc__ or "")}
    for name, parent in parents.items():
        first, *more = classes[name].__bases__
        assert first is classes[parent], f"{name} is drawn under {parent}"
        for extra in more:  # a second base (a marker detection catches: Forbidden, Unreachable) is named on its line
            assert f"{name} is one" in lines[extra.__name__] or f"also an {extra.__name__}" in lines[name] \
                or f"also a {extra.__name__}" in lines[name], f"{name}'s base {extra.__name__} is not named"


def test_the_tree_is_drawn_nowhere_else() -> None:
    places = [p for p in [*ROOT.rglob("*.py"), *ROOT.parent.glob("*.md"), *ROOT.parent.glob("docs/*.md")]
              if p != ROOT / "errors.py" and re.search(r"[├└]── \w*(Error|Refused|Unreachable)", p.read_text("utf-8"))]
    assert not places, f"a second drawing of the error tree (keep only syncer/errors.py's): {places}"
