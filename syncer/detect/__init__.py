"""Detect: the comparison of git objects with live objects, on values read before (``inputs``).

``engine`` runs it: normalize, diff, the values inside ConfigMaps, who moved (``classify``,
``bases``, ``ownership``), the Endpoints family (``endpoints``, ``binding``) and what is secret
(``secretpolicy``).
"""
