"""Secrets and hostile text: what is secret, hidden in every output, and live strings made inert.

Key names and value shapes (``redact``), secrets inside values (``values``, ``shapes``), the
config's own patterns (``userpattern``), invisible and look-alike characters (``lookalike``) and
escaping for each output (``escape``).
"""
