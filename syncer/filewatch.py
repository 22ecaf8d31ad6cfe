"""React to file changes in a directory, with ``watchfiles`` (inotify on Linux), in a thread.

Watch the DIRECTORY, not a file name: a ConfigMap mounted as a volume is updated by the
kubelet by writing a new ``..<timestamp>/`` directory and atomically swapping the ``..data``
symlink to it; ``syncer.conf`` itself is a symlink to ``..data/syncer.conf`` that never
changes, so watching the file (or filtering changes by its name) misses every update. Any
change in the directory triggers the callback; the callback re-reads what it needs.

``rerun_on_change`` is the ``syncer diff --watch`` / ``sync --watch`` loop on a checkout.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import watchfiles

from syncer.logs import event

log = logging.getLogger("syncer.filewatch")

#: Changes closer together than this are one change: an editor's save or the kubelet's
#: swap is several filesystem events within milliseconds.
DEBOUNCE_MS = 300
#: How often the watcher checks its stop event, in milliseconds: bounds shutdown time.
STEP_MS = 50
#: With a ``ready`` event: quiet time after which the watch reports itself in place.
READY_PROBE_MS = 250


def changes(directory: Path, stop: threading.Event, debounce_ms: int = DEBOUNCE_MS,
            ready: threading.Event | None = None) -> Iterator[set[str]]:
    """Sets of changed paths under ``directory`` until ``stop`` is set.

    ``ready`` is set once the OS watch is in place (at its first quiet period).
    """
    for batch in watchfiles.watch(directory, watch_filter=None, debounce=debounce_ms, step=STEP_MS, stop_event=stop,
                                  rust_timeout=READY_PROBE_MS if ready is not None else 0,
                                  yield_on_timeout=ready is not None, raise_interrupt=False):
        if ready is not None:
            ready.set()
        if batch:
            yield {path for _, path in batch}


class DirWatcher:
    """Calls ``callback(changed_paths)`` after each (debounced) change under ``directory``."""

    def __init__(self, directory: Path, callback: Callable[[set[str]], None], *,
                 debounce_ms: int = DEBOUNCE_MS) -> None:
        self.directory = directory
        self.callback = callback
        self.debounce_ms = debounce_ms
        self.stopped = threading.Event()
        #: Set once the OS-level watch is in place (changes before that are not seen).
        self.ready = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "DirWatcher":
        self._thread = threading.Thread(target=self._run, name=f"filewatch {self.directory}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            for paths in changes(self.directory, self.stopped, self.debounce_ms, self.ready):
                try:
                    self.callback(paths)
                except Exception as exc:  # noqa: BLE001 - one bad reload must not end the watch
                    event(log, logging.ERROR, "file change handler failed", ref=str(self.directory),
                          error=f"{type(exc).__name__}: {exc}")
        except (OSError, RuntimeError) as exc:
            event(log, logging.ERROR, "cannot watch directory", ref=str(self.directory), error=str(exc))
        finally:
            self.ready.set()

    def stop(self, timeout: float = 2.0) -> None:
        self.stopped.set()
        if self._thread is not None:
            self._thread.join(timeout)


def rerun_on_change(directory: Path, run: Callable[[], int], stop: threading.Event,
                    debounce_ms: int = DEBOUNCE_MS) -> int:
    """Run ``run()`` now and again after every change under ``directory``; its last result."""
    code = run()
    for _paths in changes(directory, stop, debounce_ms):
        code = run()
    return code
