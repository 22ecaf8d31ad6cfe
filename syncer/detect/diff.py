"""Compare one object as declared in git with the same object live, as the API server would. Pure.

Comparison is driven by git: every field git declares is compared; a field that exists only
live is a server default and does not count -- except inside the maps that hold data
(``kinds.DATA_MAPS``: ConfigMap ``data``, Secret ``data``, Endpoints ``subsets``), where a key
added live is exactly the drift we must not miss, and except for whole items of keyed lists
(an env var, a container, a volume added live), which are reported as ``added``, and except
for keys a person wrote live with kubectl (``compare``'s ``moved_by``, from managedFields).

Values compare by meaning, not spelling: quantities (``1000m`` == ``"1"``), IntOrString
(``80`` == ``"80"``), zero values the server drops (``readOnly: false``, ``value: ""``,
``[]``, ``{}``, null) equal absence -- but not where a pointer field keeps its zero
(``apifields.keeps_zero``: ``runAsUser: 0``, ``emptyDir: {}``).  A union member swapped live
(``emptyDir`` -> ``hostPath``) is one difference of the whole map.  Lists compare by their API semantics
(``apifields.list_rule``): keyed lists item by item by merge key, never by position; sets in any
order; every other list whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from collections.abc import Callable
from typing import Any

from syncer import apifields, kinds
from syncer.errors import ConfigError
from syncer.model import JSON, DriftClass, Path
from syncer.detect.normalize import MISSING, is_ignored

#: Upper bound on nodes visited in one object: stops alias bombs from eating CPU.
MAX_NODES = 200_000


@dataclass(frozen=True)
class FieldDiff:
    """One difference. ``path`` is where it is in git's object (list indexes count git's items;
    an item only live sits after git's items, in live order); ``live_path`` is where the value
    is in the live object (for managedFields), None when the value is not there."""

    path: Path
    git: Any  # None when absent in git
    live: Any  # None when absent live
    cls: DriftClass
    live_path: Path | None = None
    #: a key only live that managedFields say a manager other than an applier wrote
    moved_live: bool = False

    @property
    def where_live(self) -> Path:
        return self.path if self.live_path is None else self.live_path

    @property
    def is_item(self) -> bool:
        """A whole list item (added or removed), not a field."""
        return bool(self.path) and isinstance(self.path[-1], int) and self.cls is not DriftClass.VALUE

    @property
    def needs_person(self) -> bool:
        """Something only live outside the data maps (a list item, a label): written only when
        a person added it -- admission, controllers and the server add such things too."""
        return self.cls is DriftClass.ADDED and (self.is_item or self.moved_live or self.path[:2] in kinds.METADATA_MAPS)


#: Labels a tool adds to every object it installs, whatever the manifest says: Helm 3 labels each
#: release object ``app.kubernetes.io/managed-by: Helm`` (seen on the real server). Only live: no drift.
TOOL_LABELS = frozenset({("app.kubernetes.io/managed-by", "Helm")})


def _json_key(key: Any) -> str:
    """A YAML map key that is no string, as kubectl's YAML-to-JSON conversion writes it."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == [] or value is MISSING


def _zero(value: Any) -> bool:
    """A value the API server drops when serializing (``omitempty``): equal to absence."""
    return _empty(value) or value is False or value == "" or (type(value) in (int, float) and value == 0)


_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
_SUFFIX = {
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60, "n": Decimal("1e-9"), "u": Decimal("1e-6"),
    "m": Decimal("1e-3"), "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"),
    "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"), "": Decimal(1),
}


def quantity(value: Any) -> Decimal | None:
    """The amount a ``resource.Quantity`` spells (``"1Gi"``, ``"500m"``, ``1``, ``0.5``), or None."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    m = _QUANTITY.match(str(value).strip())
    if not m:
        return None
    try:
        number, suffix = Decimal(m.group(1)), m.group(2) or ""
        if suffix[:1] in ("e", "E"):
            return number * Decimal(10) ** int(suffix[1:])
        return number * _SUFFIX[suffix]
    except (InvalidOperation, ValueError, OverflowError):
        return None


def scalar_equal(a: Any, b: Any, path: Path = (), kind: str = "") -> bool:
    """``a`` (git) and ``b`` (live) mean the same value at ``path`` of a ``kind``."""
    if a == b and type(a) is type(b):
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if apifields.is_quantity(path, kind):
        qa, qb = quantity(a), quantity(b)
        if qa is not None and qa == qb:
            return True
    if apifields.is_int_or_string(path) and isinstance(a, (int, str)) and isinstance(b, (int, str)):
        return str(a) == str(b)
    return False


def _matchable(rule: apifields.ListRule, items: list[Any]) -> list[tuple[Any, ...]] | None:
    """The key of every item, or None when an item has none or two share one (then: atomic)."""
    keys = [rule.key_of(item) for item in items]
    if any(k is None for k in keys) or len(set(keys)) != len(keys):
        return None
    return keys  # type: ignore[return-value]


def _with_key_defaults(rule: apifields.ListRule, item: dict[str, Any], live: Any) -> dict[str, Any]:
    """``item`` with the key fields it omits that ``live`` holds at their defaults (a renamed
    port's ``protocol: TCP``): the server filled those in, no person wrote them."""
    filled = {name: default for name, default in rule.keys
              if default is not None and name not in item and isinstance(live, dict) and live.get(name) == default}
    return {**filled, **item} if filled else item


#: Says whether a manager other than an applier wrote the live field at a path (see ``compare``).
MovedBy = Callable[[Path], bool]


class _Walker:
    def __init__(self, kind: str, ignore: tuple[str, ...], moved_by: MovedBy | None = None,
                 unowned: bool = False) -> None:
        self.kind = kind
        self.unowned = unowned
        self.ignore = ignore
        self.moved_by = moved_by
        self.out: list[FieldDiff] = []
        self.nodes = 0

    def equal(self, git: Any, live: Any, path: Path) -> bool:
        """Does ``live`` hold everything ``git`` declares at ``path``?"""
        before = len(self.out)
        self.walk(git, live, path, None)
        found = len(self.out) > before
        del self.out[before:]
        return not found

    def walk(self, git: Any, live: Any, path: Path, lpath: Path | None) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ConfigError(f"{self.kind}: more than {MAX_NODES} nodes to compare (alias bomb?)")
        if self.ignore and is_ignored(path, self.ignore):
            return
        if live is MISSING or live is None:
            # A zero value the server drops equals absence -- but a data key must exist.
            data = len(path) == 2 and path[0] in kinds.DATA_MAPS.get(self.kind, ())
            if git is None:
                return
            if apifields.keeps_zero(self.kind, path) or not (_empty(git) if data and live is MISSING else _zero(git)):
                self.out.append(FieldDiff(path, git, None, DriftClass.REMOVED, lpath))
            return
        if isinstance(git, dict):
            if not isinstance(live, dict):
                self.out.append(FieldDiff(path, git, live, DriftClass.VALUE, lpath))
                return
            before = len(self.out)
            for key, value in git.items():
                # kubectl sends a YAML key 404 or true as the JSON key "404", "true"
                lkey = key if isinstance(key, str) or key in live else _json_key(key)
                self.walk(value, live.get(lkey, MISSING), path + (key,), None if lpath is None else lpath + (lkey,))
            data = len(path) == 1 and path[0] in kinds.DATA_MAPS.get(self.kind, ()) and self.kind != "Endpoints"
            if data or path in kinds.METADATA_MAPS:
                spelled = {_json_key(k) for k in git if not isinstance(k, str)}
                for key, value in live.items():
                    if key in git or key in spelled or (path[-1:] == ("labels",) and (key, value) in TOOL_LABELS):
                        continue
                    if self.ignore and is_ignored(path + (key,), self.ignore):
                        continue
                    if not _empty(value):
                        self.out.append(FieldDiff(path + (key,), None, value, DriftClass.ADDED,
                                                  None if lpath is None else lpath + (key,)))
            elif "metadata" not in path:
                self.moved_keys(git, live, path, lpath)
            if path == ("metadata",):
                self.metadata_maps_only_live(git, live, lpath)
            self.union_swap(git, live, path, lpath, before)
        elif isinstance(git, list):
            if not isinstance(live, list):
                self.out.append(FieldDiff(path, git, live, DriftClass.VALUE, lpath))
            else:
                self.walk_list(git, live, path, lpath)
        elif git is None:
            return  # `key:` with no value declares nothing
        elif not scalar_equal(git, live, path, self.kind):
            self.out.append(FieldDiff(path, git, live, DriftClass.VALUE, lpath))

    def moved_keys(self, git: JSON, live: JSON, path: Path, lpath: Path | None) -> None:
        """Keys only live that a manager other than an applier wrote (``kubectl edit``/``patch``,
        a controller): a difference.  Keys nobody owns are server defaults: not one."""
        if self.moved_by is None or lpath is None:
            return
        for key, value in live.items():
            if key in git or value is None or (_empty(value) and not apifields.keeps_zero(self.kind, path + (key,))):
                continue
            if self.ignore and is_ignored(path + (key,), self.ignore):
                continue
            if self.moved_by(lpath + (key,)):
                self.out.append(FieldDiff(path + (key,), None, value, DriftClass.ADDED, lpath + (key,), True))

    def metadata_maps_only_live(self, git: JSON, live: JSON, lpath: Path | None) -> None:
        """Labels or annotations added live to an object whose git declares no such map at all
        (``kubectl annotate deployment/x team=qa`` on a manifest without ``annotations:``): each
        key a person wrote (``moved_by``) is ``added``. Keys a tool added (Helm's
        ``app.kubernetes.io/managed-by``, admission, a controller) are not: git never had the map.
        An object without managedFields (``unowned``) cannot say who wrote them: every such key
        counts, as it does where git has the map."""
        if lpath is None or (self.moved_by is None and not self.unowned):
            return
        for name in ("labels", "annotations"):
            held = live.get(name)
            if name in git or not isinstance(held, dict):
                continue
            for key, value in held.items():
                where = ("metadata", name, key)
                if name == "labels" and (key, value) in TOOL_LABELS:
                    continue
                if (not _empty(value) and not (self.ignore and is_ignored(where, self.ignore))
                        and (self.unowned or self.moved_by is not None and self.moved_by(lpath + (name, key)))):
                    self.out.append(FieldDiff(where, None, value, DriftClass.ADDED, lpath + (name, key), True))

    def union_swap(self, git: JSON, live: JSON, path: Path, lpath: Path | None,
                   before: int) -> None:
        """A union's member replaced live by another (``emptyDir`` -> ``hostPath``): one change
        of the whole map instead of "removed" plus "added" (git would then hold two members)."""
        members = apifields.union_members(path)
        if members is None:
            return
        gone = [k for k in git if apifields.is_union_member(members, k) and live.get(k) is None and git[k] is not None]
        new = [k for k in live if apifields.is_union_member(members, k) and k not in git and live[k] is not None]
        if not gone or not new:
            return
        del self.out[before:]
        self.out.append(FieldDiff(path, git, live, DriftClass.VALUE, lpath))

    def walk_list(self, git: list[Any], live: list[Any], path: Path, lpath: Path | None) -> None:
        rule = apifields.list_rule(self.kind, path)
        if rule is not None and rule.keys:
            git_keys, live_keys = _matchable(rule, git), _matchable(rule, live)
            if git_keys is not None and live_keys is not None:
                self.walk_keyed(rule, git, live, git_keys, live_keys, path, lpath)
                return
        if rule is not None and self._same_set(git, live, path):
            return
        if len(git) == len(live):
            for i, (g, l) in enumerate(zip(git, live)):
                self.walk(g, l, path + (i,), None if lpath is None else lpath + (i,))
        else:
            # An atomic list changed length: it is replaced whole, as the API would.
            self.out.append(FieldDiff(path, git, live, DriftClass.VALUE, lpath))

    def _same_set(self, git: list[Any], live: list[Any], path: Path) -> bool:
        """Every git item equals a distinct live item and no live item is left over."""
        if len(git) != len(live):
            return False
        left = list(range(len(live)))
        for g in git:
            hit = next((j for j in left if self.equal(g, live[j], path + (0,))), None)
            if hit is None:
                return False
            left.remove(hit)
        return True

    def walk_keyed(self, rule: apifields.ListRule, git: list[Any], live: list[Any], git_keys: list[Any],
                   live_keys: list[Any], path: Path, lpath: Path | None) -> None:
        where = {k: j for j, k in enumerate(live_keys)}
        known = set(git_keys)
        extra = [j for j, k in enumerate(live_keys) if k not in known]
        renamed = self._renamed(rule, git, live, [i for i, k in enumerate(git_keys) if k not in where], extra, path)
        for i, (g, k) in enumerate(zip(git, git_keys)):
            j = where.get(k, renamed.get(i))
            if j is None:
                self.out.append(FieldDiff(path + (i,), g, None, DriftClass.REMOVED, None))
            elif i in renamed:
                self.walk(_with_key_defaults(rule, g, live[j]), live[j], path + (i,),
                          None if lpath is None else lpath + (j,))
            else:
                self.walk(g, live[j], path + (i,), None if lpath is None else lpath + (j,))
        if renamed:
            return  # every item only live is a git item whose key changed
        for n, j in enumerate(extra):
            item_path = path + (len(git) + n,)
            if self.ignore and is_ignored(item_path, self.ignore):
                continue
            self.out.append(FieldDiff(item_path, None, live[j], DriftClass.ADDED,
                                      None if lpath is None else lpath + (j,)))

    def _renamed(self, rule: apifields.ListRule, git: list[Any], live: list[Any], gone: list[int],
                 extra: list[int], path: Path) -> dict[int, int]:
        """Git items whose key changed live (``kubectl patch`` of a ``containerPort``, an env var
        renamed in ``kubectl edit``): git index -> live index. Only when the items gone and the
        items only live pair up one to one, in order, and each live item still holds every other
        field its git item declares; otherwise none (an item removed and another added). The API
        keys these lists by those fields, so it sees a removal and an addition; written back as
        such, git would keep the old item beside the new one."""
        if not gone or len(gone) != len(extra):
            return {}
        names = {name for name, _ in rule.keys}
        plain = _Walker(self.kind, self.ignore)  # git's own fields only: no owner is asked
        for i, j in zip(gone, extra):
            rest = {k: v for k, v in git[i].items() if k not in names}
            if not plain.equal(rest, live[j], path + (i,)):
                return {}
        return dict(zip(gone, extra))

def _cluster_scoped(kind: str, live: JSON) -> bool:
    meta = live.get("metadata")
    return kind in kinds.CLUSTER_SCOPED or (isinstance(meta, dict) and not meta.get("namespace"))


def compare(kind: str, git: JSON, live: JSON, ignore: tuple[str, ...] = (),
            moved_by: MovedBy | None = None, unowned: bool = False) -> list[FieldDiff]:
    """Field-level differences between normalized ``git`` and ``live`` objects.

    ``unowned``: the live object has no managedFields at all (seen on kube-apiserver v1.20 for an
    ``APIService``, and for an object created with nothing but a name, a ``kubectl create`` of a
    ServiceAccount, which stays without entries after ``kubectl annotate``): labels and
    annotations only live count even where git has no such map.

    ``moved_by(live_path)``, when given, says whether a manager other than an applier wrote
    the live field there (``ownership.moved_by``): such a key only live is reported ``added``.
    """
    walker = _Walker(kind, ignore, moved_by, unowned)
    for key, value in git.items():
        if key in ("apiVersion", "kind", "status"):
            continue
        if key == "metadata" and isinstance(value, dict) and "namespace" in value and _cluster_scoped(kind, live):
            value = {k: v for k, v in value.items() if k != "namespace"}  # means nothing here
        walker.walk(value, live.get(key, MISSING), (key,), (key,))
    skip = {"apiVersion", "kind", "status", "metadata", *kinds.DATA_MAPS.get(kind, ())}
    walker.moved_keys(git, {k: v for k, v in live.items() if k not in skip}, (), ())
    for key in sorted(kinds.DATA_MAPS.get(kind, ())):
        if key not in git and not _empty(live.get(key, MISSING)) and not is_ignored((key,), ignore):
            walker.out.append(FieldDiff((key,), None, live[key], DriftClass.ADDED))
    return walker.out


def align(kind: str, base: Any, git: Any, live: Any, path: Path = ()) -> Any:
    """``base`` (an older state of the object) laid out in git's coordinates.

    Items of keyed lists move to the index their git item has (items only live follow git's,
    in live order; a missing one reads as MISSING), so that a ``FieldDiff.path`` finds the
    same item in the base as in git.
    """
    if isinstance(base, dict):
        g = git if isinstance(git, dict) else {}
        l = live if isinstance(live, dict) else {}
        return {k: align(kind, v, g.get(k, MISSING), l.get(k, MISSING), path + (k,)) for k, v in base.items()}
    if not isinstance(base, list) or not isinstance(git, list):
        return base
    rule = apifields.list_rule(kind, path)
    live_l = live if isinstance(live, list) else []
    keys = (_matchable(rule, git), _matchable(rule, live_l), _matchable(rule, base)) if rule and rule.keys else None
    if keys is None or None in keys:
        return [align(kind, b, git[i] if i < len(git) else MISSING, MISSING, path + (i,)) for i, b in enumerate(base)]
    git_keys, live_keys, base_keys = keys
    assert git_keys is not None and live_keys is not None and base_keys is not None
    by_key = dict(zip(base_keys, base))
    order = list(git_keys) + [k for k in live_keys if k not in set(git_keys)]
    out = [align(kind, by_key[k], git[i] if i < len(git) else MISSING, MISSING, path + (i,)) if k in by_key else MISSING
           for i, k in enumerate(order)]
    return out + [b for k, b in zip(base_keys, base) if k not in set(order)]
