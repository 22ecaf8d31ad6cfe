"""Sources: how ``hosts/<installation>/`` becomes git objects.

Plain manifests (``manifests``, with ``skipped`` for the files that are none), a kustomize render
(``kustomize/``), and ``dispatch``, the one place that tells which of them an installation is.
"""
