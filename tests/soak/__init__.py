"""The fault-injected soak of ``syncer run``: the world it runs in (``world``), its driver
(``driver``: schedule, invariants, figures) and its test; ``test_soak.py`` runs it in its short
CI mode, ``python -m bench.soak`` (bench/soak.py) in its long one.
"""
