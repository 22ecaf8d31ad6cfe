"""The sidecar (``syncer run``): watch the cluster, keep a live cache, run passes when due,
record the agreed state, take part in leader election, serve health and metrics.

Entered only from the CLI (``syncer.commands.run.cmd_run`` builds ``app.Sidecar``); nothing else in
``syncer`` imports this package. The one-shot commands share the pieces below it: detection
and write-back (``syncer.writeback.deliver``), webhooks (``syncer.writeback.notify``), file watching and logs.
"""
