"""The fault-injected soak of ``syncer run``: the world it runs in (``world``) and its test.

The driver (schedule, invariants, figures) is ``bench/soak.py``; ``test_soak.py`` runs it in
its short CI mode.
"""
