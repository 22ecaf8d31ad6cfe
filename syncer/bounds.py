"""Limits on what anyone with edit rights on a ConfigMap can make syncer chew on.

Live objects and syncer's own state record are written by people and programs syncer does
not control. Every such input is measured *before* it is parsed, so a hostile value costs
one object an error, never the process (a ``RecursionError``, a ``MemoryError``) or the
rest of the installation.

``load_json(raw, what)`` is ``json.loads`` with a size and a nesting limit, checked in one
linear scan that needs no recursion.
"""

from __future__ import annotations

import json
import re
from typing import Any

from syncer.errors import ClusterError

#: The last-applied annotation lives in ``metadata.annotations`` (256 KiB in total) and the
#: state record in one ConfigMap (1 MiB in total): anything bigger did not come from the API
#: server and is refused unread.
MAX_JSON_BYTES = 1024 * 1024
#: Kubernetes objects nest about 15 levels deep (a CRD's schema a few dozen); Python's
#: ``json`` recurses once per level and gives up near 1,000.
MAX_JSON_DEPTH = 128

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class InputRejected(ClusterError):
    """A live or state input is over one of the limits above (permanent for that input)."""


def json_depth(raw: str, limit: int = MAX_JSON_DEPTH) -> int:
    """Deepest ``[``/``{`` nesting of a JSON text, counting stops once past ``limit``.

    Brackets inside strings do not count. Linear in ``len(raw)``, no recursion.
    """
    if raw.count("[") + raw.count("{") <= limit:
        return raw.count("[") + raw.count("{")  # an upper bound, under the limit anyway
    depth = deepest = 0
    for m in _BRACKETS.finditer(_STRING.sub('""', raw)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        else:
            depth -= 1
    return deepest


def load_json(raw: str, what: str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(raw)`` within the limits; ``InputRejected`` naming ``what`` otherwise.

    Malformed JSON raises ``ValueError`` as ``json.loads`` does (callers decide whether a
    broken value is an error or simply no value).
    """
    size = len(raw.encode("utf-8", "surrogatepass")) if len(raw) * 4 > max_bytes else len(raw)
    if size > max_bytes:
        raise InputRejected(f"{what}: {size} bytes of JSON, more than the {max_bytes} allowed; not read",
                            transient=False)
    if json_depth(raw, max_depth) > max_depth:
        raise InputRejected(f"{what}: JSON nested deeper than {max_depth} levels; not read", transient=False)
    try:
        return json.loads(raw)
    except RecursionError:  # cannot happen under the depth limit; never let it escape anyway
        raise InputRejected(f"{what}: JSON nested too deeply; not read", transient=False) from None


#: Values (mapping entries, list items, scalars) one live object may expand to. Aliases in a
#: YAML snapshot share subtrees, so nine lines can stand for 387 million values (an alias
#: bomb); the largest real objects (a ConfigMap near the 1 MiB limit) hold tens of thousands.
MAX_NODES = 500_000


def check_nodes(data: Any, what: str, limit: int = MAX_NODES) -> None:
    """``InputRejected`` when ``data``, with every alias expanded, holds more than ``limit``
    values. Stops counting at the limit: linear in ``limit`` at worst, no recursion."""
    stack = [data]
    count = 0
    while stack:
        node = stack.pop()
        count += 1
        if count > limit:
            raise InputRejected(f"{what}: more than {limit} values (an alias bomb?); not compared", transient=False)
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
