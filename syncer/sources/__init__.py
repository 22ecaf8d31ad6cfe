"""Sources: how ``hosts/<installation>/`` becomes git objects.

Every source implements ``source.Source`` (load the objects; place a drifted field into the file
and line that set it; verify an edit by rendering it); ``dispatch.source_for`` is the one place that
tells which source an installation is, from the table ``dispatch.SOURCES``. Plain manifests
(``plain``, on ``manifests``, with ``skipped`` for the files that are none) and a kustomize render
(``kustomize/``) are its sources. A new source type is a package here and one entry in that table.
"""
