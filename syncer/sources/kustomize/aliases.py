"""A kustomization file with YAML aliases is refused before anything expands them.

kustomize's own reader bounds alias expansion; syncer reads kustomization files only to follow
their layers and needs no alias in them, so an alias is one clear error, found on the parser's
event stream (flat: an alias is one event, whatever it would expand to) in time linear in the
text. A billion-laughs kustomization is then one line naming the file, not a hang.
"""

from __future__ import annotations

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import AliasEvent

from syncer.errors import ConfigError
from syncer.yamlread import malformed


def refuse_aliases(text: str, shown: str) -> None:
    """ConfigError naming ``shown`` when ``text`` holds a YAML alias (``*name``)."""
    if "*" not in text:
        return
    try:
        for event in YAML(typ="safe").parse(text):
            if isinstance(event, AliasEvent):
                line = event.start_mark.line + 1 if event.start_mark is not None else 0
                raise ConfigError(f"{shown}: line {line}: a YAML alias (*{event.anchor}) in a kustomization: "
                                  "not read (syncer never expands aliases in kustomization files; write the value out)")
    except YAMLError as exc:
        raise malformed(exc, shown) from exc
