"""``syncer run``: the sidecar, from its flags to its settings, until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import TextIO

from syncer import clients, logs
from syncer.commands import EXIT_OK, checkout, reproduce
from syncer.durations import seconds
from syncer.writeback.landing import MAX_SIDECAR_PUSH_BUDGET
from syncer.errors import ConfigError, SyncerError
from syncer.gitrepo import Workspace, origin_url
from syncer.sources.manifests import default_installation
from syncer.writeback.deliver import Mode


def sidecar_defaults(args: argparse.Namespace) -> None:
    """Give the ``run`` flags left unset (on the command line and in the environment) the
    defaults of the settings they feed, spelled as flags: one source of truth."""
    from syncer.sidecar.app import SidecarSettings
    from syncer.sidecar.schedule import Timing

    seconds = {"debounce": Timing.debounce, "resync": Timing.resync,
               "lease_duration": SidecarSettings.lease_duration, "shutdown_grace": SidecarSettings.grace}
    for dest, value in seconds.items():
        if getattr(args, dest) is None:
            setattr(args, dest, f"{value:g}")
    if args.listen is None and SidecarSettings.listen is not None:
        args.listen = "{}:{}".format(*SidecarSettings.listen)
    if args.state_configmap is None:
        args.state_configmap = SidecarSettings.state_configmap or ""


#: glibc's ``mallopt`` parameters (malloc.h): M_ARENA_MAX, M_MMAP_THRESHOLD.
_M_ARENA_MAX, _M_MMAP_THRESHOLD = -8, -3


def fewer_arenas() -> None:
    """Keep the C allocator's memory near what the sidecar holds. With one arena per thread
    (glibc's default, up to 8 per core) and a threshold for ``mmap`` that rises with every large
    block freed, each watch thread's arena keeps its largest buffers after they are freed: 30
    flooded per-object watches held 120 MiB of RSS while their budget held 32 MiB
    (``python -m bench.watchflood --objects 30``). Two arenas and a fixed 128 KiB threshold
    (blocks above it are returned to the system when freed) take it to 68 MiB. Skipped where
    glibc is not the C library, and for each setting the environment already makes
    (``MALLOC_ARENA_MAX``, ``MALLOC_MMAP_THRESHOLD_``). Called before any thread starts."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    if "MALLOC_ARENA_MAX" not in os.environ:
        mallopt(_M_ARENA_MAX, 2)
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        mallopt(_M_MMAP_THRESHOLD, 128 * 1024)


def cmd_run(args: argparse.Namespace, now: datetime, stdout: TextIO) -> int:
    """The sidecar: runs until SIGTERM/SIGINT; 0 after a clean shutdown, 2 when it cannot start."""
    import signal
    import threading

    from syncer.sidecar.app import Sidecar, SidecarSettings
    from syncer.sidecar.loop import LoopSettings
    from syncer.sidecar.schedule import Timing
    from syncer.sidecar.server import parse_listen

    if args.live_file:
        raise ConfigError("run watches the API server; --live-file is for diff and sync")
    fewer_arenas()
    sidecar_defaults(args)
    # every duration checked before anything starts: a bad one is exit 2 now, not after the clone
    durations = {dest: seconds(getattr(args, dest), flag, "SYNCER_" + flag[2:].upper().replace("-", "_"))
                 for dest, flag in (("debounce", "--debounce"), ("resync", "--resync"),
                                    ("lease_duration", "--lease-duration"), ("shutdown_grace", "--shutdown-grace"))}
    git_token = clients.read_secret(args.git_token_file, "--git-token-file")
    forge = clients.forge(args)
    secrets = [os.environ.get("SYNCER_FORGE_TOKEN", ""), git_token,
               clients.read_secret(args.token_file, "--token-file") if forge is not None else ""]
    try:
        listen = parse_listen(args.listen)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    remote = args.remote
    if not remote:
        try:
            remote = origin_url(checkout(args))
        except SyncerError:
            remote = None
    if not remote:
        raise ConfigError("--remote URL is required: the git repository syncer clones from and pushes to")
    identity = clients.git_identity(args, git_token)
    budget = clients.push_budget(args)
    if budget.seconds > MAX_SIDECAR_PUSH_BUDGET:
        raise ConfigError(f"--push-budget (or SYNCER_PUSH_BUDGET): {budget.seconds:g}s is more than the sidecar allows "
                          f"({MAX_SIDECAR_PUSH_BUDGET:g}s: a pass must end within its liveness limit); the sidecar "
                          "retries the installation later anyway")
    app = clients.github_app(args)
    if app is not None:  # each new installation token joins what the log masks
        app.on_token = secrets.append
    from syncer.sidecar.metrics import Metrics
    from syncer.sidecar.server import StatusServer
    from syncer.sidecar.starting import StartingHealth, until_up

    logs.setup(args.log_format, installation=args.installation or "", secrets=secrets)
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():  # SIGTERM during start: stop right after
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    starting = StartingHealth()
    early: StatusServer | None = None  # probes answered from the first second: 503 while starting
    try:
        if listen is not None:
            try:
                early = StatusServer(listen[0], listen[1], starting, Metrics(args.installation or "")).start()
            except OSError as exc:  # e.g. the --listen port is taken
                raise ConfigError(f"--listen {args.listen}: {exc.strerror or exc}") from None
        with tempfile.TemporaryDirectory(prefix="syncer-") as tmp:
            dest = Path(args.clone_dir) if args.clone_dir else Path(tmp) / "clone"

            def clone() -> Workspace:
                return clients.workspace(args, remote, dest, identity, args.installation)

            ws = until_up("cloning the git remote", clone, starting, stop)
            if ws is None:  # SIGTERM while the remote was still unreachable
                return EXIT_OK
            installation = args.installation or default_installation(ws.path)
            logs.setup(args.log_format, installation=installation, secrets=secrets)
            notifier = clients.notifier(args.notify_url, clients.http_client(), secrets) if args.notify_url else None
            lease_duration = durations["lease_duration"]
            settings = SidecarSettings(
                loop=LoopSettings(installation, Mode(args.mode), reproduce(args, installation),
                                  timing=Timing(debounce=durations["debounce"], resync=durations["resync"]),
                                  tools=clients.tools(args), budget=budget),
                listen=listen, state_configmap=args.state_configmap or None, leader_elect=args.leader_elect,
                lease_name=args.lease_name or "", lease_duration=lease_duration, lease_renew=lease_duration / 3,
                config_file=Path(args.config).absolute() if args.config else None,  # not resolve(): ..data swaps
                grace=durations["shutdown_grace"])
            sidecar = Sidecar(clients.sidecar_kube(args), ws, settings, forge=forge, notifier=notifier)
            sidecar.server, early = early, None  # the sidecar answers the probes from now on
            try:
                try:
                    sidecar.start()
                except OSError as exc:
                    sidecar.stop()
                    raise ConfigError(f"--listen {args.listen}: {exc.strerror or exc}") from None
                while not stop.wait(0.5):
                    pass
            finally:
                sidecar.stop()
    finally:
        if early is not None:
            early.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return EXIT_OK
