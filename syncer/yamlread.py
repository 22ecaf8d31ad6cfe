"""YAML read as the forward tools (kubectl, helm, Argo CD) read it: YAML 1.1 with Go's
numbers (``syncer.goyaml``), ruamel's safe loader, libyaml's C parser when
``ruamel.yaml.clib`` is there; and the one way a YAML error is reported (``malformed``:
``file:line:column: malformed YAML: problem``, the pure parser's words).
"""

from __future__ import annotations

import re
import sys
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.tag import Tag

from syncer import goyaml
from syncer.errors import ConfigError


def yaml_problem(exc: YAMLError) -> tuple[str, str]:
    """Where a YAML error is (``":line:column"``, or "" when the parser gave no position) and
    what it is, in one line."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return at, str(problem)


def malformed(exc: YAMLError, display: str) -> ConfigError:
    """The error for malformed YAML in ``display``: ``display:line:column: malformed YAML: problem``."""
    at, problem = yaml_problem(exc)
    return ConfigError(f"{display}{at}: malformed YAML: {problem}")


#: Deeper flow nesting than this is refused before parsing: no manifest needs it, and the
#: YAML scanner slows down badly on pathological depth.
MAX_FLOW_DEPTH = 128


def _flow_depth_exceeded(text: str) -> int | None:
    """Line (1-based) where ``[``/``{`` nesting first passes MAX_FLOW_DEPTH, else None."""
    if text.count("[") + text.count("{") <= MAX_FLOW_DEPTH:
        return None
    depth, quote, line = 0, "", 1
    for ch in text:
        if ch == "\n":
            line += 1
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth > MAX_FLOW_DEPTH:
                return line
        elif ch in "]}":
            depth = max(0, depth - 1)
    return None


def _has_c_parser() -> bool:
    import importlib.util

    return importlib.util.find_spec("_ruamel_yaml") is not None  # ruamel.yaml.clib: libyaml's scanner/parser


#: ``ruamel.yaml.clib`` present: documents are read with the C parser (several times faster, and
#: tests/test_yaml_c_parser.py holds it to the same data as the pure one), the pure one only to
#: word an error.
C_PARSER = _has_c_parser()


_YAML_TAG = "tag:yaml.org,2002:"
#: One shared Tag per resolved type: ruamel makes a new one for every scalar and decodes its
#: URI character by character each time the constructor asks for it.
_TAGS = {t: Tag(suffix=_YAML_TAG + t) for t in ("null", "bool", "int", "float", "timestamp", "merge", "value",
                                                 "yaml")}
_TAGS["str"] = VersionedResolver.DEFAULT_SCALAR_TAG


class _Resolver(VersionedResolver):
    """ruamel's resolution (the loader's YAML version), with its rule table looked up once per load (the stock
    resolver probes the loader for a ``%YAML`` version through two AttributeErrors for every
    scalar; the C parser fixes the version anyway) and shared Tag objects."""

    @property
    def versioned_resolver(self) -> Any:
        table = self.__dict__.get("_table")
        if table is None:
            table = self.__dict__["_table"] = VersionedResolver.versioned_resolver.fget(self)  # type: ignore[attr-defined]
        return table

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is not ScalarNode or self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        if implicit[0]:  # plain: the first rule whose pattern matches, by first character
            table = self.versioned_resolver
            for tag, regexp in [*table.get(value[:1], ()), *table.get(None, ())]:
                if regexp.match(value):
                    return _TAGS.get(tag.removeprefix(_YAML_TAG)) or Tag(suffix=tag)
        return _TAGS["str"]


class _Unusual(Exception):
    """A document the fast builder leaves to ruamel's constructor."""



def _plain(node: Any, constructor: Any, seen: dict[int, Any]) -> Any:
    """The data of a composed node, for the shapes manifests have: mappings (string-like keys,
    no merge keys, no duplicates), sequences, and str/null/bool/int/float scalars, built as
    ruamel's safe constructor builds them. Anything else raises ``_Unusual``."""
    known = seen.get(id(node))
    if known is not None:
        if known[1] is _BUILDING:
            raise _Unusual  # a recursive alias
        return known[1]
    tag = node.ctag
    if isinstance(node, ScalarNode):
        if tag is _TAGS["str"] or (tag is not _TAGS["null"] and str(tag) == _YAML_TAG + "str"):
            value: Any = node.value
            if len(value) <= _SHORT:
                # One string for the process: the sidecar keeps every manifest parsed, and keys,
                # kinds, names and small settings repeat across thousands of documents.
                value = sys.intern(value)
        elif tag is _TAGS["null"]:
            value = None
        elif tag is _TAGS["bool"]:
            value = constructor.construct_yaml_bool(node)
        elif tag is _TAGS["int"]:
            value = constructor.construct_yaml_int(node)
        elif tag is _TAGS["float"]:
            value = constructor.construct_yaml_float(node)
        else:
            raise _Unusual
        if node.anchor is not None:
            seen[id(node)] = (node, value)
        return value
    seen[id(node)] = (node, _BUILDING)
    if isinstance(node, MappingNode) and str(tag) == _YAML_TAG + "map":
        out: Any = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.ctag is _TAGS["merge"]:
                raise _Unusual
            key = _plain(key_node, constructor, seen)
            if key in out:
                raise _Unusual  # ruamel words the duplicate-key error
            out[key] = _plain(value_node, constructor, seen)
    elif isinstance(node, SequenceNode) and str(tag) == _YAML_TAG + "seq":
        out = [_plain(child, constructor, seen) for child in node.value]
    else:
        raise _Unusual
    seen[id(node)] = (node, out)
    return out


_BUILDING = object()
#: Strings up to this long are interned (``_plain``): keys and short values; longer ones
#: (embedded files, address lists) rarely repeat.
_SHORT = 40


def _load_c(text: str) -> list[Any]:
    """All documents with the C parser; most documents built by ``_plain``, the rest by ruamel."""
    constructor, parser = yaml_loader(pure=False).get_constructor_parser(text)
    docs = []
    try:
        while parser.check_node():
            node = parser.get_node()
            try:
                docs.append(_plain(node, constructor, {}) if node is not None else None)
            except _Unusual:
                docs.append(constructor.construct_document(node))
    finally:
        parser.dispose()
    return docs


class _GoResolver(_Resolver):
    """Always YAML 1.1 (``0755``, ``yes``), in every document of a file: ruamel's pure parser
    otherwise falls back to 1.2 after the first document."""

    @property
    def processing_version(self) -> Any:
        return (1, 1)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        plain = kind is ScalarNode and implicit[0] and not self.yaml_path_resolvers
        if plain:  # a plain scalar's tag depends on its text alone: each text resolved once per file
            known = self.__dict__.setdefault("_plain_tags", {}).get(value)
            if known is not None:
                return known
        tag = super().resolve(kind, value, implicit)
        if (kind is ScalarNode and implicit[0] and value[:1] in _NUMBER_START and tag is not _TAGS["timestamp"]
                and value not in goyaml.SPECIAL_FLOATS):
            # Numbers as Go reads them: 0o644 and +.5e3 are numbers, ._5 is not (see syncer.goyaml).
            number = goyaml.number(value)
            tag = _TAGS["str"] if number is None else _TAGS["int" if isinstance(number, int) else "float"]
        if plain:
            self.__dict__["_plain_tags"][value] = tag
        return tag


_NUMBER_START = frozenset("0123456789+-.")


class _GoYamlConstructor(SafeConstructor):
    """YAML 1.1 as Go's decoder (kubectl, helm, Argo CD) reads it: ``0755`` is 493 and
    ``yes``/``no``/``on``/``off``/``y``/``n`` are booleans -- but ``12:30`` stays a string (Go
    has no base-60 numbers), a timestamp stays its text, and numbers are Go's (``0o644`` is 420,
    ``+.5e3`` is 500: ``syncer.goyaml``)."""

    def construct_yaml_int(self, node: Any) -> Any:
        if ":" in str(node.value):
            return self.construct_scalar(node)
        number = goyaml.number(str(node.value))
        return number if number is not None else super().construct_yaml_int(node)

    def construct_yaml_float(self, node: Any) -> Any:
        if ":" in str(node.value):
            return self.construct_scalar(node)
        number = goyaml.number(str(node.value))
        return number if number is not None else super().construct_yaml_float(node)

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
        return self.construct_scalar(node)


_GoYamlConstructor.add_constructor("tag:yaml.org,2002:timestamp", _GoYamlConstructor.construct_yaml_timestamp)
_GoYamlConstructor.add_constructor("tag:yaml.org,2002:int", _GoYamlConstructor.construct_yaml_int)
_GoYamlConstructor.add_constructor("tag:yaml.org,2002:float", _GoYamlConstructor.construct_yaml_float)


def yaml_loader(pure: bool) -> YAML:
    """A safe loader reading YAML as the forward tools do (see ``_GoYamlConstructor``)."""
    yaml = YAML(typ="safe", pure=pure)
    yaml.Resolver = _GoResolver
    yaml.version = (1, 1)
    yaml.Constructor = _GoYamlConstructor
    return yaml


def parse_documents(text: str, display: str) -> list[Any]:
    """All documents of one YAML text, read as kubectl reads them (YAML 1.1: ``0755`` is 493,
    ``yes`` is true); ConfigError ``file:line: problem`` when malformed."""
    too_deep = _flow_depth_exceeded(text)
    if too_deep is not None:
        raise ConfigError(f"{display}:{too_deep}: YAML nested deeper than {MAX_FLOW_DEPTH} levels; not read")
    if C_PARSER:
        try:
            return _no_surrogate(_load_c(text), text, display)
        except (YAMLError, RecursionError):
            pass  # the pure parser below says where and what, in the words our errors always used
    try:
        return _no_surrogate(list(yaml_loader(pure=True).load_all(text)), text, display)
    except YAMLError as exc:
        raise malformed(exc, display) from exc
    except RecursionError as exc:
        raise ConfigError(f"{display}: YAML nested too deeply") from exc


#: A YAML escape of a UTF-16 surrogate (``"\ud800"``): no character, and no output can encode it.
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F][0-9a-fA-F]{2}")


def _no_surrogate(docs: list[Any], text: str, display: str) -> list[Any]:
    """``docs``, or ConfigError ``file:line`` when a string in them holds a lone surrogate."""
    found = _SURROGATE_ESCAPE.search(text)
    if found is None:
        return docs
    stack: list[Any] = list(docs)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str) and not node.isascii() and any("\ud800" <= ch <= "\udfff" for ch in node):
            line = text.count("\n", 0, found.start()) + 1
            raise ConfigError(f"{display}:{line}: a string holds {found.group()!s}, a lone UTF-16 surrogate "
                              "(no character: YAML text is UTF-8); not read")
    return docs
