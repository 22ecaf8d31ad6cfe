"""map_path: a rendered path as a path into the file (or patch) that declares it."""

from __future__ import annotations

from syncer.sources.kustomize.fields import map_path

C0 = ("spec", "template", "spec", "containers", 0)


def _dep(args: list[str]) -> dict[str, object]:
    return {"spec": {"template": {"spec": {"containers": [{"name": "app", "args": args}]}}}}


def test_a_list_the_render_only_appended_to_maps_its_first_items_to_the_file() -> None:
    rendered, declared = _dep(["--a", "--b", "--c", "--d"]), _dep(["--a", "--b"])
    assert map_path("Deployment", rendered, C0 + ("args", 1), declared) == C0 + ("args", 1)
    # an appended item is not the file's
    assert map_path("Deployment", rendered, C0 + ("args", 2), declared) is None


def test_a_longer_list_that_does_not_begin_with_the_files_items_is_not_mapped_by_position() -> None:
    rendered, declared = _dep(["--x", "--a", "--b"]), _dep(["--a", "--b"])  # an item inserted at the front
    assert map_path("Deployment", rendered, C0 + ("args", 1), declared) is None
    assert map_path("Deployment", _dep(["--a", "--b"]), C0 + ("args", 1), _dep(["--a", "--q"])) == C0 + ("args", 1)
