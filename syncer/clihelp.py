"""``--help`` of the subcommands: a description first, and each option's default.

argparse's ``ArgumentDefaultsHelpFormatter`` would print ``(default: None)`` for every unset
flag; ``Help`` shows a default only when there is one, before the ``[env SYNCER_...]`` twin,
and asks ``syncer run``'s settings for the defaults its flags leave unset (those are filled in
from the sidecar's own settings after parsing, see ``commands.run.sidecar_defaults``: one source of
truth, loaded only when help is printed).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

class Help(argparse.RawDescriptionHelpFormatter):
    """Help that shows each option's default (when it has one worth showing) and keeps the
    descriptions' line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if default is None and action.dest in LAZY_DEFAULTS:  # `run`'s settings, loaded for help only
            default = LAZY_DEFAULTS[action.dest]()
        if "(default" in text or default in (None, False, [], "", argparse.SUPPRESS):
            return text
        if not action.option_strings:
            return text
        shown = ",".join(default) if isinstance(default, list) else default
        head, sep, env = text.rpartition(" [env ")
        return f"{head} (default: {shown}){sep}{env}" if sep else f"{text} (default: {shown})"


def _run_default(dest: str) -> Callable[[], str | None]:
    def default() -> str | None:
        args = argparse.Namespace(**{d: None for d in ("debounce", "resync", "lease_duration", "shutdown_grace",
                                                      "listen", "state_configmap")})
        from syncer.commands.run import sidecar_defaults

        sidecar_defaults(args)
        value = getattr(args, dest)
        return f"{value}s" if dest in ("debounce", "resync", "lease_duration", "shutdown_grace") else value
    return default


LAZY_DEFAULTS = {d: _run_default(d) for d in ("debounce", "resync", "lease_duration", "shutdown_grace", "listen",
                                               "state_configmap")}


#: What each subcommand's --help says first (the one-line ``help`` is for ``syncer --help``).
DESCRIPTIONS = {
    "diff": "Compare the objects declared under hosts/<installation>/ with the live cluster (or a snapshot)\n"
            "and say, per field, who moved it (git or the cluster), which field manager changed it and\n"
            "when. Exit 0 in sync, 1 drift found, 2 error (errors win; everything found is still printed).\n"
            "Direction: from git (-) to the files as syncer would write them (+), the live values copied\n"
            "back; the opposite of `kubectl diff`, which goes from live to what apply would make it.\n"
            "KUBECTL_EXTERNAL_DIFF (or SYNCER_EXTERNAL_DIFF, which wins) names a program to show the files\n"
            "instead, run as `PROGRAM GIT_DIR SYNCED_DIR [its own flags]`, as kubectl diff runs it.",
    "sync": "Copy accepted live values back into git: a pull request (pr), a commit on the base branch\n"
            "(commit), or only print what it would do (dry-run). Works in its own clone of --remote.\n"
            "Exit 0 done, 2 error; with --exit-code also 1 when drift was found (kubectl diff's convention).",
    "run": "The sidecar: watch the tracked objects, sync when they change (and every --resync), serve\n"
           "/healthz, /readyz and /metrics. Keeps running while the API server or git is unreachable\n"
           "(not ready, retried with backoff); exits 0 on SIGTERM.",
    "init": "Write hosts/<installation>/syncer.conf from what the manifests (and the cluster) show, saying\n"
            "why for each inference, and print the chart values that grant exactly what it will read.",
    "version": "Print syncer's version and, unless --client, the API server's (GET /version, with the\n"
               "kubeconfig as kubectl reads it). Exit 2 when the server cannot be asked (the client's\n"
               "version is still printed).",
    "completion": "Print a completion script for syncer and kubectl-syncer: subcommands, flags, their values,\n"
                  "installations under hosts/ and kubeconfig contexts.",
}

#: The examples ending each subcommand's --help.
EXAMPLES = {
    "diff": """examples:
  # the bundled example, against a snapshot: no cluster needed
  syncer diff asgard --live-file examples/asgard-live.yaml
  # against the cluster of a kubeconfig context, as the chart's account would see it
  syncer diff asgard --context prod --as system:serviceaccount:ai:syncer
  # one object, or the objects whose labels in git match
  syncer diff asgard --object ConfigMap/ollama-endpoint-manager
  syncer diff asgard -l 'app.kubernetes.io/name in (ollama-endpoint-manager)'
  # for a script: JSON on stdout, exit 1 when drift was found
  syncer diff asgard -o json | jq '.drifts[] | {name, path, live}'
  # in your own diff program
  KUBECTL_EXTERNAL_DIFF='diff -u -N --color=always' syncer diff asgard""",
    "sync": """examples:
  # what a sync would commit, changing nothing (exit 1 with --exit-code when drift was found)
  syncer sync asgard --mode dry-run --exit-code
  # commit straight to the base branch of origin, fast-forward only
  syncer sync asgard --mode commit
  # one rolling pull request on GitHub; the outcome as JSON (commit id, branch, PR URL)
  SYNCER_FORGE_TOKEN=$(cat token) syncer sync asgard --mode pr --forge github --forge-repo acme/infra -o json""",
    "run": """examples:
  # the sidecar on your machine, as the chart's account (docs/install.md, "Run the sidecar locally first")
  syncer run asgard --mode dry-run --remote https://github.com/acme/infra.git --listen 127.0.0.1:8080 \\
      --state-configmap '' --log-format text
  curl -s 127.0.0.1:8080/readyz""",
    "init": """examples:
  syncer init asgard --live-file examples/asgard-live.yaml
  syncer init asgard --git-only -n ai
  syncer init asgard --chart-values > asgard-tracked.yaml""",
    "version": """examples:
  syncer version
  syncer version --client -o json
  syncer version -o yaml --context prod""",
    "completion": """examples:
  source <(syncer completion bash)                    # this shell; ~/.bashrc to keep it
  syncer completion zsh > "${fpath[1]}/_syncer"        # then restart zsh
  syncer completion fish > ~/.config/fish/completions/syncer.fish""",
}
