"""Byte-surgical edits of YAML manifests: change values, keep everything else.

One component in private modules: the node tree with character offsets (``_tree``), text
for new values (``_scalar``) and the editor itself (``_file``).  Callers use only what is
exported here.
"""

from syncer.yamledit._file import YamlEditError, YamlFile
from syncer.yamledit._scalar import block_body, double_quoted, plain_ok, same
from syncer.yamledit._tree import Doc, Node, load, mapping_key

__all__ = [
    "Doc", "Node", "YamlEditError", "YamlFile", "block_body", "double_quoted", "load", "mapping_key",
    "plain_ok", "same",
]
