"""Byte-surgical edits of YAML manifests: change values, keep everything else.

ruamel.yaml's parser gives every node its character offsets; an edit renders only the new
value's text (see :mod:`._scalar`) and splices it into the original string, so
comments, quoting, indentation, flow style, anchors, ``---`` separators, CRLF line ends
(detected per file and used for new lines) and a missing final newline all survive.

Each document owns the text from its ``---`` to the next one and is parsed on its own,
so an edit can never touch another document's bytes; a document no edit touches is
never parsed by this (pure-Python) parser: :meth:`YamlFile.parse` cuts the documents
by their ``---``/``...`` markers, checked against the C parser's document count.
Every edit is verified by parsing again before it is kept, and must read back as
exactly the intended data, or it is refused with :class:`YamlEditError` and nothing
changes.  When the document has no anchors, aliases, tags or directives only the lines
around the edit are parsed again: the block-mapping entries or sequence items that hold
it, plus the blank and comment lines after them (a ``|`` block could claim those), which
at their own columns parse alone exactly as they do in place.  Otherwise the whole
document is parsed again.  An edit on a 200 KB file takes a few milliseconds.

Style rules: plain scalars stay plain unless the new text would read back differently
under YAML 1.2 or 1.1 (``true``, ``yes``, ``y``, ``1.0``, ``""``, ``a: b``, ``*x``, ``#x``...),
then they become double-quoted; quoted scalars keep their quote character (``'`` turns
into ``"`` only when single quotes cannot hold the text); block scalars keep ``|``/``>``,
their header, comment and indentation, and only their body lines change (the chomping
indicator follows the new value's trailing newlines).  A multi-line string written over a
*plain* scalar in block context becomes a ``|`` block scalar (a trailing comment moves to
its header line); in flow context, over a quoted scalar, or where a block scalar cannot
hold it, it becomes a one-line double-quoted string with ``\n`` escapes.  Scalars are
never folded, however long.  Mappings and lists are rendered in block style with the
document's indentation step and the sequence style used nearby (``- `` at the key's
column or indented), or in flow style inside flow collections; empty ones as ``{}``/``[]``.

Refused: paths through an alias or a ``<<`` merge, and edits that would change what an
alias shows (an aliased anchor on the value, around it, or inside a replaced value).

The parts, each a private module: ``_node`` (a node with offsets), ``_tree`` (the tree of
nodes, built from ruamel's parser events), ``_text`` (positions in a document's text),
``_scalar`` (text for new values), ``_file`` (:class:`YamlFile`: planning an edit as splices) and ``_verify``
(checking that the spliced text reads back as intended).  Callers use only what is
exported here.
"""

from syncer.yamledit._file import YamlEditError, YamlFile
from syncer.yamledit._node import Node
from syncer.yamledit._scalar import block_body, double_quoted, plain_ok, same
from syncer.yamledit._tree import Doc, load, mapping_key

__all__ = [
    "Doc", "Node", "YamlEditError", "YamlFile", "block_body", "double_quoted", "load", "mapping_key",
    "plain_ok", "same",
]
