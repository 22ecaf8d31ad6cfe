"""``syncer completion bash|zsh|fish``: completion scripts generated from the command line's own
parser, so every subcommand and flag (and each flag's fixed values) is offered as ``--help`` lists it.

Values that depend on where one stands are computed by the shell when completing: installations
(the directories under ``hosts/`` of the git repository around the current directory, or of
``--repo``), kubeconfig contexts (``kubectl config get-contexts -o name``), files and directories
for the flags that take them. The scripts register for ``syncer`` and ``kubectl-syncer``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

#: What a flag's value is, by its ``dest`` (flags not named here take free text).
FILES = {"live_file", "kubeconfig", "token_file", "git_token_file", "github_app_key_file", "config"}
DIRS = {"repo", "clone_dir"}
CONTEXTS = {"context"}
COMMANDS_WITH_INSTALLATION = {"diff", "sync", "run", "init"}


@dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    help: str
    takes_value: bool
    choices: tuple[str, ...]
    value: str  # "file" | "dir" | "context" | "choice" | "text" | ""


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    flags: tuple[Flag, ...]
    positional: tuple[str, ...]  # fixed choices of the positional argument (completion's shells)


def _help(text: str | None) -> str:
    head = (text or "").split(" [env ")[0].split("; ")[0].split(" (")[0]
    return head.replace("\n", " ").strip()


def commands(parser: argparse.ArgumentParser) -> list[Command]:
    """Every subcommand of ``parser`` with its flags, as the scripts need them."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    out = []
    for name, p in sub.choices.items():
        flags: list[Flag] = []
        positional: tuple[str, ...] = ()
        for action in p._actions:
            if not action.option_strings:
                if action.choices:
                    positional = tuple(str(c) for c in action.choices)
                continue
            takes = action.nargs != 0
            choices = tuple(str(c) for c in action.choices) if action.choices else ()
            value = ("choice" if choices else "file" if action.dest in FILES else "dir" if action.dest in DIRS
                     else "context" if action.dest in CONTEXTS else "text") if takes else ""
            flags.append(Flag(tuple(action.option_strings), _help(action.help), takes, choices, value))
        out.append(Command(name, _help(helps.get(name)), tuple(flags), positional))
    return out


def _q(text: str) -> str:
    """``text`` inside single quotes, for any of the three shells."""
    return text.replace("'", "")


def bash(cmds: list[Command]) -> str:
    lines = ["# bash completion for syncer and kubectl-syncer: source <(syncer completion bash)",
             "_syncer_installations() {",
             "    local repo=\"$1\"",
             "    [ -n \"$repo\" ] || repo=$(git rev-parse --show-toplevel 2>/dev/null) || repo=.",
             "    local d; for d in \"$repo\"/hosts/*/; do [ -d \"$d\" ] && basename \"$d\"; done",
             "}",
             "_syncer() {",
             "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" cmd=\"\" repo=\"\" i w",
             "    (( COMP_CWORD > 0 )) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"",
             "    if [[ \"$cur\" == \"=\" ]]; then cur=\"\"; fi",
             "    if [[ \"$prev\" == \"=\" ]] && (( COMP_CWORD > 1 )); then prev=\"${COMP_WORDS[COMP_CWORD-2]}\"; fi",
             "    for (( i=1; i < COMP_CWORD; i++ )); do",
             "        w=\"${COMP_WORDS[i]}\"",
             "        if [[ -z \"$cmd\" && \"$w\" != -* ]]; then cmd=\"$w\"; fi",
             "        if [[ \"$w\" == --repo ]]; then repo=\"${COMP_WORDS[i+1]}\"; fi",
             "    done",
             "    if [[ -z \"$cmd\" ]]; then",
             f"        COMPREPLY=( $(compgen -W '{' '.join(c.name for c in cmds)} --help --version' -- \"$cur\") )",
             "        return",
             "    fi",
             "    case \"$cmd\" in"]
    for c in cmds:
        lines.append(f"    {c.name})")
        lines.append("        case \"$prev\" in")
        for f in c.flags:
            if not f.takes_value:
                continue
            pattern = "|".join(f.names)
            if f.value == "choice":
                action = f"COMPREPLY=( $(compgen -W '{' '.join(f.choices)}' -- \"$cur\") )"
            elif f.value == "file":
                action = "compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- \"$cur\") )"
            elif f.value == "dir":
                action = "compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -d -- \"$cur\") )"
            elif f.value == "context":
                action = ("COMPREPLY=( $(compgen -W \"$(kubectl config get-contexts -o name 2>/dev/null)\" "
                          "-- \"$cur\") )")
            else:
                action = "COMPREPLY=()"
            lines.append(f"            {pattern}) {action}; return ;;")
        lines.append("        esac")
        names = " ".join(n for f in c.flags for n in f.names)
        lines.append("        if [[ \"$cur\" == -* ]]; then")
        lines.append(f"            COMPREPLY=( $(compgen -W '{names}' -- \"$cur\") ); return")
        lines.append("        fi")
        if c.positional:
            lines.append(f"        COMPREPLY=( $(compgen -W '{' '.join(c.positional)}' -- \"$cur\") )")
        elif c.name in COMMANDS_WITH_INSTALLATION:
            lines.append("        COMPREPLY=( $(compgen -W \"$(_syncer_installations \"$repo\")\" -- \"$cur\") )")
        lines.append("        ;;")
    lines += ["    esac", "}", "complete -F _syncer syncer kubectl-syncer", ""]
    return "\n".join(lines)


def zsh(cmds: list[Command]) -> str:
    lines = ["#compdef syncer kubectl-syncer",
             "# zsh completion for syncer: source <(syncer completion zsh), or save it as _syncer in $fpath",
             "_syncer_installations() {",
             "    local repo; repo=$(git rev-parse --show-toplevel 2>/dev/null) || repo=.",
             "    local -a names; names=(${repo}/hosts/*(/N:t))",
             "    _describe 'installation' names",
             "}",
             "_syncer_contexts() {",
             "    local -a names; names=(${(f)\"$(kubectl config get-contexts -o name 2>/dev/null)\"})",
             "    _describe 'context' names",
             "}",
             "_syncer() {",
             "    local curcontext=\"$curcontext\" state line",
             "    local -a commands",
             "    commands=("]
    lines += [f"        '{c.name}:{_q(c.help)}'" for c in cmds]
    lines += ["    )",
              "    _arguments -C '(- *)--version[print the version]' '(- *)'{-h,--help}'[show help]' \\",
              "        '1:command:->command' '*::arg:->args'",
              "    case $state in",
              "        command) _describe 'command' commands ;;",
              "        args)",
              "            case $line[1] in"]
    for c in cmds:
        specs = []
        for f in c.flags:
            if f.value == "choice":
                tail = f":{f.value}:({' '.join(f.choices)})"
            elif f.value == "file":
                tail = ":file:_files"
            elif f.value == "dir":
                tail = ":directory:_files -/"
            elif f.value == "context":
                tail = ":context:_syncer_contexts"
            elif f.takes_value:
                tail = ":value: "
            else:
                tail = ""
            for name in f.names:
                specs.append(f"'{name}[{_q(f.help).replace('[', '(').replace(']', ')')}]{tail}'")
        if c.positional:
            specs.append(f"'1:shell:({' '.join(c.positional)})'")
        elif c.name in COMMANDS_WITH_INSTALLATION:
            specs.append("'1:installation:_syncer_installations'")
        lines.append(f"                {c.name}) _arguments \\")
        lines += [f"                    {spec} \\" for spec in specs]
        lines.append("                    ;;")
    lines += ["            esac ;;",
              "    esac",
              "}",
              "if [ \"$funcstack[1]\" = \"_syncer\" ]; then",
              "    _syncer \"$@\"",
              "else",
              "    compdef _syncer syncer kubectl-syncer",
              "fi",
              ""]
    return "\n".join(lines)


def fish(cmds: list[Command]) -> str:
    names = " ".join(c.name for c in cmds)
    lines = ["# fish completion for syncer and kubectl-syncer: syncer completion fish | source",
             "function __syncer_installations",
             "    set -l repo (git rev-parse --show-toplevel 2>/dev/null); or set repo .",
             "    for d in $repo/hosts/*/",
             "        basename $d",
             "    end",
             "end",
             "complete -c syncer -f",
             f"complete -c syncer -n 'not __fish_seen_subcommand_from {names}' -l version -d 'print the version'"]
    for c in cmds:
        lines.append(f"complete -c syncer -n 'not __fish_seen_subcommand_from {names}' -a {c.name} -d '{_q(c.help)}'")
        when = f"-n '__fish_seen_subcommand_from {c.name}'"
        for f in c.flags:
            parts = []
            for name in f.names:
                parts.append(f"-l {name[2:]}" if name.startswith("--") else f"-s {name[1:]}")
            if f.value == "choice":
                parts.append(f"-xa '{' '.join(f.choices)}'")
            elif f.value in ("file", "dir"):
                parts.append("-rF")
            elif f.value == "context":
                parts.append("-xa '(kubectl config get-contexts -o name 2>/dev/null)'")
            elif f.takes_value:
                parts.append("-x")
            lines.append(f"complete -c syncer {when} {' '.join(parts)} -d '{_q(f.help)}'")
        if c.positional:
            lines.append(f"complete -c syncer {when} -xa '{' '.join(c.positional)}'")
        elif c.name in COMMANDS_WITH_INSTALLATION:
            lines.append(f"complete -c syncer {when} -xa '(__syncer_installations)'")
    lines += ["complete -c kubectl-syncer -w syncer", ""]
    return "\n".join(lines)


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    cmds = commands(parser)
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](cmds)


#: cobra's completion directives, the protocol ``kubectl`` speaks with a plugin's completer
#: (``kubectl_complete-<plugin>``, kubectl 1.26 on): files, no files, directories only.
FILES_DIRECTIVE, NO_FILES, DIRS_ONLY = 0, 4, 16


def _installations(repo: str | None) -> list[str]:
    import subprocess
    from pathlib import Path

    root = repo
    if not root:
        try:
            done = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=5,
                                  check=False)
            root = done.stdout.strip() if done.returncode == 0 else "."
        except (OSError, subprocess.SubprocessError):
            root = "."
    hosts = Path(root) / "hosts"
    return sorted(p.name for p in hosts.iterdir() if p.is_dir()) if hosts.is_dir() else []


def _contexts() -> list[str]:
    import subprocess

    try:
        done = subprocess.run(["kubectl", "config", "get-contexts", "-o", "name"], capture_output=True, text=True,
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return done.stdout.split() if done.returncode == 0 else []


def complete(words: list[str], parser: argparse.ArgumentParser) -> tuple[list[str], int]:
    """The candidates for the last of ``words`` (the words after ``syncer``; the last one is being
    typed, maybe empty) and a cobra directive: what ``kubectl syncer <TAB>`` shows."""
    cmds = {c.name: c for c in commands(parser)}
    *done, current = words or [""]
    name = next((w for w in done if not w.startswith("-")), None)
    if name is None:
        found = [c.name for c in cmds.values()] + ["--help", "--version"]
        return [w for w in found if w.startswith(current)], NO_FILES
    cmd = cmds.get(name)
    if cmd is None:
        return [], NO_FILES
    repo = next((done[i + 1] for i, w in enumerate(done[:-1]) if w == "--repo"), None)
    flag = next((f for f in cmd.flags if done and done[-1] in f.names and f.takes_value), None)
    if flag is not None:
        if flag.value == "choice":
            return [c for c in flag.choices if c.startswith(current)], NO_FILES
        if flag.value == "file":
            return [], FILES_DIRECTIVE
        if flag.value == "dir":
            return [], DIRS_ONLY
        if flag.value == "context":
            return [c for c in _contexts() if c.startswith(current)], NO_FILES
        return [], NO_FILES
    if current.startswith("-"):
        return [n for f in cmd.flags for n in f.names if n.startswith(current)], NO_FILES
    values = list(cmd.positional) if cmd.positional else (
        _installations(repo) if cmd.name in COMMANDS_WITH_INSTALLATION else [])
    return [v for v in values if v.startswith(current)], NO_FILES
