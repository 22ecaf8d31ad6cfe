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

#: The characters that matter: brackets, separators, and what starts, escapes or ends a string.
_SIGNIFICANT = re.compile(r'[\[\]{}"\\,:]')
#: Only what matters to nesting, when values are not counted (fewer stops on a large answer).
_NESTING = re.compile(r'[\[\]{}"\\]')


class InputRejected(ClusterError):
    """A live or state input is over one of the limits above (permanent for that input)."""


def json_shape(raw: str, depth_limit: int = MAX_JSON_DEPTH, value_limit: int | None = None) -> tuple[int, int]:
    """``(deepest nesting, values)`` of a JSON text; counting stops once past ``depth_limit``
    or ``value_limit``.

    Deepest is the deepest ``[``/``{`` nesting; values counts the containers, the commas
    between items and the colons after keys -- about the number of values and keys
    ``json.loads`` would make, so what parsing will allocate is known before it starts
    (without ``value_limit``: the containers only, a cheaper scan). Brackets, commas and
    colons inside strings do not count.

    One pass over only the significant characters (``[]{}",:`` and ``\\``) with a small state
    machine for strings and escapes: linear in ``len(raw)``, no recursion, no backtracking
    (a regular expression for whole strings would be quadratic on an unterminated one). A
    string left open at the end is no string, as for the decoder: its opening quote is an
    ordinary character and the rest is counted as if outside strings (one more pass at most;
    ``json.loads`` fails on such a text anyway).
    """
    most = value_limit if value_limit is not None else len(raw) + 1
    significant = _SIGNIFICANT if value_limit is not None else _NESTING  # without it: containers only
    depth = deepest = values = 0
    in_string = False
    opened = 0  # where the open string began
    skip = -1  # the character after a backslash inside a string
    depth_at_open = deepest_at_open = values_at_open = 0
    for m in significant.finditer(raw):
        pos = m.start()
        if pos == skip:
            continue
        ch = m.group()
        if in_string:
            if ch == "\\":
                skip = pos + 1
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string, opened = True, pos
            depth_at_open, deepest_at_open, values_at_open = depth, deepest, values
        elif ch in "[{":
            depth += 1
            values += 1
            if depth > deepest:
                deepest = depth
                if deepest > depth_limit:
                    return deepest, values
        elif ch in ",:":
            values += 1
            if values > most:
                return deepest, values
        elif ch != "\\":
            depth -= 1
    if in_string:  # unterminated: every quote after it is an ordinary character too
        depth, deepest, values = depth_at_open, deepest_at_open, values_at_open
        for m in significant.finditer(raw, opened + 1):
            ch = m.group()
            if ch in "[{":
                depth += 1
                values += 1
                if depth > deepest:
                    deepest = depth
                    if deepest > depth_limit:
                        break
            elif ch in ",:":
                values += 1
                if values > most:
                    break
            elif ch in "]}":
                depth -= 1
    return deepest, values


def json_depth(raw: str, limit: int = MAX_JSON_DEPTH) -> int:
    """Deepest ``[``/``{`` nesting of a JSON text, counting stops once past ``limit``.

    Brackets inside strings do not count. Linear in ``len(raw)``, no recursion.
    """
    if raw.count("[") + raw.count("{") <= limit:
        return raw.count("[") + raw.count("{")  # an upper bound, under the limit anyway
    return json_shape(raw, limit)[0]


def load_json(raw: str, what: str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH,
              max_values: int | None = None) -> Any:
    """``json.loads(raw)`` within the limits; ``InputRejected`` naming ``what`` otherwise.

    ``max_values`` bounds what parsing allocates (see ``json_shape``): a few bytes of JSON
    (``{},``) become a Python object of some 70 bytes, so a size limit alone lets a
    compressed record of 87 KB grow to gigabytes.

    Malformed JSON raises ``ValueError`` as ``json.loads`` does (callers decide whether a
    broken value is an error or simply no value).
    """
    check_json(raw, what, max_bytes=max_bytes, max_depth=max_depth, max_values=max_values)
    try:
        return json.loads(raw)
    except RecursionError:  # cannot happen under the depth limit; never let it escape anyway
        raise InputRejected(f"{what}: JSON nested too deeply; not read", transient=False) from None


def check_json(raw: str, what: str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH,
               max_values: int | None = None) -> None:
    """``InputRejected`` naming ``what`` when parsing ``raw`` would go past ``load_json``'s limits
    (for a caller that parses it a piece at a time)."""
    size = len(raw.encode("utf-8", "surrogatepass")) if len(raw) * 4 > max_bytes else len(raw)
    if size > max_bytes:
        raise InputRejected(f"{what}: {size} bytes of JSON, more than the {max_bytes} allowed; not read",
                            transient=False)
    if max_values is None:
        deepest = json_depth(raw, max_depth)
    else:
        deepest, values = json_shape(raw, max_depth, max_values)
        if deepest <= max_depth and values > max_values:
            raise InputRejected(f"{what}: JSON of more than {max_values} values; "
                                "not read", transient=False)
    if deepest > max_depth:
        raise InputRejected(f"{what}: JSON nested deeper than {max_depth} levels; not read", transient=False)


#: Values (mapping entries, list items, scalars) one live object may expand to. Aliases in a
#: YAML snapshot share subtrees, so nine lines can stand for 387 million values (an alias
#: bomb); the largest real objects (a ConfigMap near the 1 MiB limit) hold tens of thousands.
MAX_NODES = 500_000


def check_nodes(data: Any, what: str, limit: int = MAX_NODES, max_depth: int = MAX_JSON_DEPTH) -> None:
    """``InputRejected`` when ``data``, with every alias expanded, holds more than ``limit``
    values, or nests deeper than ``max_depth`` (comparing it would recurse that deep). Stops
    counting at the limit: linear in ``limit`` at worst, no recursion."""
    if _within(data, limit, max_depth):
        return
    stack = [(data, 0)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > limit:
            raise InputRejected(f"{what}: more than {limit} values (an alias bomb?); not compared", transient=False)
        if isinstance(node, (dict, list)):
            if depth >= max_depth:
                raise InputRejected(f"{what}: nested deeper than {max_depth} levels; not compared", transient=False)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))


def _within(data: Any, limit: int, max_depth: int) -> bool:
    """True when ``check_nodes`` would accept ``data``: the same count and depth, but only maps
    and lists go on the stack (a scalar is counted with its parent's children: most of the
    cost on a live object). False: ``check_nodes`` walks again, node by node, to say which
    limit was met first (the slow walk runs only for an input it refuses)."""
    if not isinstance(data, (dict, list)):
        return True
    count = 1
    stack = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if depth >= max_depth:
            return False
        children = node.values() if isinstance(node, dict) else node
        count += len(children)
        if count > limit:
            return False
        below = depth + 1
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, below))
    return True
