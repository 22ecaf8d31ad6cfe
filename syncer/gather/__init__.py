"""Gather: everything one detection reads, read before it starts.

The live objects (``live``; an API the cluster does not serve: ``served``), git's history of a
field (``history``), the one-shot's early LISTs (``oneshot``), and ``collect``, which reads them
into the one frozen value detection consumes (``syncer.detect.inputs``).
"""
