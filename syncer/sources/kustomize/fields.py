"""Values and paths of rendered objects, as the source map compares and follows them."""

from __future__ import annotations

import re
from typing import Any

from syncer import apifields
from syncer.detect.diff import scalar_equal
from syncer.yamlread import parse_documents
from syncer.model import Path
from syncer.detect.normalize import normalize

#: kustomize's content hash appended to a generated name: ten characters of its alphabet (hex
#: digits with 0, 1, 3, a, e swapped for g, h, k, m, t, so that no word is spelled: ``-deployment``
#: is a name, not a hash).
HASH = re.compile(r"-[2456789bcdfghkmt]{10}$")


def same(a: Any, b: Any) -> bool:
    """Do a value of a file and a value kustomize rendered mean the same (``"1.27"`` = ``1.27``)?"""
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return bool(normalize({"v": a}) == normalize({"v": b}))
    return scalar_equal(a, b) or (not isinstance(a, bool) and not isinstance(b, bool) and str(a) == str(b))


def map_path(kind: str, rendered: Any, path: Path, target: Any, at: Path = ()) -> Path | None:
    """``path`` of the rendered object as a path into ``target`` (a patch or the resource as a
    file declares it): list items by their merge key, else by position in a list of the same
    length (or of which the rendered list only appends to the end); None when ``target`` does not
    hold it."""
    out: list[str | int] = []
    for part in path:
        if isinstance(part, int):
            if not isinstance(rendered, list) or not isinstance(target, list) or not 0 <= part < len(rendered):
                return None
            rule = apifields.list_rule(kind, at + tuple(out))
            key = rule.key_of(rendered[part]) if rule is not None and rule.keys else None
            if key is not None:
                found = [j for j, item in enumerate(target) if rule is not None and rule.key_of(item) == key]
                if len(found) != 1:
                    return None
                index = found[0]
            elif len(target) == len(rendered) or (part < len(target) < len(rendered) and all(
                    same(item, rendered[j]) for j, item in enumerate(target))):
                # by position; a longer rendered list that begins with the target's items got the
                # rest appended after them (a JSON 6902 ``add`` at ``/-``): its first items are the target's
                index = part
            else:
                return None
            rendered, target = rendered[part], target[index]
            out.append(index)
        else:
            if not isinstance(target, dict) or part not in target or not isinstance(rendered, dict):
                return None
            rendered, target = rendered.get(part), target[part]
            out.append(part)
    return tuple(out)


def split_image(image: str) -> tuple[str, str, str]:
    """``name[:tag][@digest]`` -> (name, tag, digest)."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon + 1:]
    return name, tag, digest


def read_yaml_text(text: str, shown: str) -> list[Any]:
    return parse_documents(text, f"{shown} (inline patch)")
