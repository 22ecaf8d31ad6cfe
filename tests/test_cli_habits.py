"""What kubectl, argocd and flux users reach for: shell completion (sourced in a real bash, fish
and zsh), ``syncer version``, an external diff program, ``--color``/``NO_COLOR``, ``-l`` and
``--object``, ``--as`` headers, the JSON documents' ``schema`` and ``sync -o json``'s outcome, the
bare ``sync`` refused, examples in ``--help``."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLE_LIVE, NOW, ROOT, git

from syncer.cli import build_parser, main

LIVE = ["--live-file", str(EXAMPLE_LIVE)]


def run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        code = main(list(argv), now=NOW, stdout=out, stderr=err)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, out.getvalue(), err.getvalue()


def script(shell: str) -> str:
    code, out, err = run("completion", shell)
    assert (code, err) == (0, "")
    return out


# -- completion ---------------------------------------------------------------------------------

def bash_complete(tmp_path: Path, *words: str, cwd: Path = ROOT) -> list[str]:
    """What ``_syncer`` offers in a real bash that sourced the script, for the line ``words``
    (the last word is the one being completed)."""
    (tmp_path / "syncer.bash").write_text(script("bash"))
    line = " ".join(f"'{w}'" if w else "''" for w in words)
    program = (f"source {tmp_path / 'syncer.bash'}\n"
               f"COMP_WORDS=({line}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); _syncer\n"
               "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
               "complete -p syncer kubectl-syncer\n")
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], cwd=cwd, capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "complete -F _syncer syncer" in lines and "complete -F _syncer kubectl-syncer" in lines
    return [ln for ln in lines if ln and not ln.startswith("complete ")]


def test_bash_sources_the_script_and_completes_commands_flags_values_and_installations(tmp_path: Path) -> None:
    assert bash_complete(tmp_path, "syncer", "") == ["diff", "sync", "run", "init", "version", "completion",
                                                     "--help", "--version"]
    assert bash_complete(tmp_path, "syncer", "ver") == ["version"]
    assert bash_complete(tmp_path, "syncer", "sync", "--mode", "") == ["pr", "commit", "dry-run"]
    assert bash_complete(tmp_path, "kubectl-syncer", "diff", "--output", "=", "j") == ["json"]
    assert set(bash_complete(tmp_path, "syncer", "diff", "--co")) == {"--color", "--context"}
    assert bash_complete(tmp_path, "syncer", "diff", "") == ["asgard", "midgard", "vanaheim"]  # hosts/ of the repo
    assert bash_complete(tmp_path, "syncer", "completion", "") == ["bash", "zsh", "fish"]
    assert "--as-group" in bash_complete(tmp_path, "syncer", "run", "--as")
    files = bash_complete(tmp_path, "syncer", "diff", "--live-file", "examples/asgard-l")
    assert files == ["examples/asgard-live.yaml"]


def test_every_flag_of_every_command_is_in_the_bash_script() -> None:
    text = script("bash")
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, parser in sub.choices.items():  # type: ignore[attr-defined]
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in text, (name, flag)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (apt-get install fish)")
def test_fish_completes_from_the_script(tmp_path: Path) -> None:
    (tmp_path / "syncer.fish").write_text(script("fish"))

    def complete(line: str) -> list[str]:
        done = subprocess.run(["fish", "--no-config", "-c", f"source {tmp_path / 'syncer.fish'}; complete -C '{line}'"],
                              cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0, done.stderr
        return [ln.split("\t")[0] for ln in done.stdout.splitlines()]

    assert complete("syncer ve") == ["version"]
    assert complete("syncer sync --mode ") == ["commit", "dry-run", "pr"]
    assert complete("syncer diff ") == ["asgard", "midgard", "vanaheim"]
    assert complete("kubectl-syncer completion ") == ["bash", "fish", "zsh"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (apt-get install zsh)")
def test_zsh_loads_the_script_under_compinit(tmp_path: Path) -> None:
    (tmp_path / "_syncer").write_text(script("zsh"))
    program = (f"autoload -U compinit; compinit -u -d {tmp_path}/.zcompdump; source {tmp_path / '_syncer'}; "
               "print -r -- ${_comps[syncer]} ${_comps[kubectl-syncer]}")
    done = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, timeout=30, check=False,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "_syncer _syncer", "")


# -- version ------------------------------------------------------------------------------------

def test_version_client_as_text_json_and_yaml() -> None:
    from syncer import __version__

    assert run("version", "--client") == (0, f"Client Version: {__version__}\n", "")
    code, out, _ = run("version", "--client", "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["schema"] == "syncer.version/v1" and doc["clientVersion"]["version"] == __version__
    assert "serverVersion" not in doc
    code, out, _ = run("version", "--client", "-o", "yaml")
    assert code == 0 and out.startswith("schema: syncer.version/v1\nclientVersion:\n")


def test_version_asks_the_server_of_the_kubeconfig(fake_kube: Any, tmp_path: Path) -> None:
    kc = str(fake_kube.kubeconfig(tmp_path / "kubeconfig"))
    code, out, err = run("version", "--kubeconfig", kc)
    assert (code, err) == (0, "") and out.splitlines()[1] == f"Server Version: {fake_kube.git_version}"


# -- external diff and colour -------------------------------------------------------------------

def recorder(tmp_path: Path, status: int = 1) -> Path:
    """A diff program that records its arguments and the files it was given, then runs diff -ru."""
    prog = tmp_path / "recdiff"
    prog.write_text(f"""#!{sys.executable}
import json, os, subprocess, sys
a, b, *rest = sys.argv[1:]
files = {{side: sorted(os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs)
         for side, top in (("from", a), ("to", b))}}
json.dump({{"argv": sys.argv[1:], "files": files, "dirs": [os.path.isdir(a), os.path.isdir(b)]}},
          open({str(tmp_path / 'seen.json')!r}, "w"))
out = subprocess.run(["diff", "-ru", a, b], capture_output=True, text=True).stdout
sys.stdout.write("RECDIFF\\n" + out)
sys.exit({status})
""")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    return prog


def test_kubectl_external_diff_gets_git_s_files_and_syncer_s_and_its_output_is_shown(tmp_path: Path) -> None:
    prog = recorder(tmp_path)
    code, out, err = run("diff", "asgard", "--repo", str(ROOT), *LIVE,
                         env={"KUBECTL_EXTERNAL_DIFF": f"{prog} -u -N --label=a.b 'evil;'"})
    assert (code, err) == (1, "")  # syncer's own exit code: drift found
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["dirs"] == [True, True]
    assert seen["argv"][2:] == ["-u", "-N"]  # kubectl's rule: words of letters, digits, - and = only
    assert seen["files"]["from"] == seen["files"]["to"] == ["hosts/asgard/ollama-backends.yaml",
                                                            "hosts/asgard/ollama-endpoint-manager.yaml"]
    assert "RECDIFF" in out and '+  MAC_ADDRS: "192.168.68.75 100.115.97.90"' in out
    assert "--- a/hosts" not in out  # the program's diff instead of syncer's own
    assert "note: KUBECTL_EXTERNAL_DIFF: argument(s) --label=a.b 'evil;' ignored" in out
    assert "4 difference(s)" in out  # the summary is still syncer's


def test_syncer_external_diff_wins_and_a_failing_program_is_an_error(tmp_path: Path) -> None:
    good = recorder(tmp_path, status=1)
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\necho trouble >&2\nexit 3\n")
    failing.chmod(0o755)
    code, out, err = run("diff", "asgard", "--repo", str(ROOT), *LIVE,
                         env={"KUBECTL_EXTERNAL_DIFF": str(failing), "SYNCER_EXTERNAL_DIFF": str(good)})
    assert code == 1 and "RECDIFF" in out
    code, out, err = run("diff", "asgard", "--repo", str(ROOT), *LIVE, env={"KUBECTL_EXTERNAL_DIFF": str(failing)})
    assert code == 2 and f"KUBECTL_EXTERNAL_DIFF={str(failing)!r} exited 3" in err
    code, _, err = run("diff", "asgard", "--repo", str(ROOT), *LIVE,
                       env={"KUBECTL_EXTERNAL_DIFF": str(tmp_path / "nonesuch")})
    assert code == 2 and "cannot run it" in err


def test_color_always_never_auto_and_no_color() -> None:
    _, plain, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE)
    assert "\033[" not in plain  # not a terminal: auto means none
    _, colored, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE, "--color", "always")
    assert '\033[32m+  MAC_ADDRS: "192.168.68.75 100.115.97.90"\033[0m' in colored
    assert '\033[31m-  MAC_ADDRS: "192.168.68.58 100.115.97.90"\033[0m' in colored
    assert "\033[36m@@ " in colored
    _, never, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE, "--color", "never")
    assert never == plain
    _, env_always, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE, env={"SYNCER_COLOR": "always"})
    assert env_always == colored


def test_auto_colours_a_terminal_unless_no_color(tmp_path: Path) -> None:
    import pty

    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM", "SYNCER_COLOR")}

    def on_a_tty(env: dict[str, str]) -> str:
        leader, follower = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "syncer.cli", "diff", "asgard", "--repo", str(ROOT), *LIVE],
                                stdout=follower, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                env={**base, "PYTHONPATH": str(ROOT), **env})
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=60)
        os.close(leader)
        return b"".join(chunks).decode()

    assert "\033[32m" in on_a_tty({"TERM": "xterm"})
    assert "\033[" not in on_a_tty({"TERM": "xterm", "NO_COLOR": "1"})


# -- selection ----------------------------------------------------------------------------------

def paths(out: str) -> list[tuple[str, str]]:
    return [(d["kind"] + "/" + d["name"], d["path"]) for d in json.loads(out)["drifts"]]


def test_object_and_selector_narrow_the_diff() -> None:
    code, out, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE, "-o", "json", "--object", "cm/ollama-endpoint-manager")
    assert code == 1 and paths(out) == [("ConfigMap/ollama-endpoint-manager", "data.MAC_ADDRS"),
                                        ("ConfigMap/ollama-endpoint-manager", "data.M1_ADDRS")]
    code, out, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE, "-o", "json",
                       "--object", "Endpoints/ai/mac-ollama", "--object", "endpoints/m1-ollama")
    assert {p[0] for p in paths(out)} == {"Endpoints/mac-ollama", "Endpoints/m1-ollama"}
    code, out, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE, "-o", "json",
                       "-l", "app.kubernetes.io/name in (ollama-endpoint-manager),!nonesuch")
    assert {p[0] for p in paths(out)} == {"ConfigMap/ollama-endpoint-manager"}
    code, out, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE, "-o", "json",
                       "-l", "app.kubernetes.io/name!=ollama-endpoint-manager")
    assert "ConfigMap/ollama-endpoint-manager" not in {p[0] for p in paths(out)} and paths(out)
    narrowed = json.loads(out)["checked"]  # a count of the objects compared
    _, whole, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE, "-o", "json")
    assert 0 < narrowed < json.loads(whole)["checked"]


@pytest.mark.parametrize("flags,message", [
    (["--object", "ConfigMap/typo"], "--object ConfigMap/typo: hosts/asgard/ declares no such object"),
    (["-l", "app=nobody"], "-l 'app=nobody': no object declared under hosts/asgard/ matches"),
    (["-l", "app in (a"], "-l 'app in (a': cannot read"),
    (["-l", "bad key=x"], "cannot read"),
    (["--object", "ConfigMap"], "not KIND/NAME"),
])
def test_a_selection_that_matches_nothing_or_cannot_be_read_is_one_error(flags: list[str], message: str) -> None:
    code, out, err = run("diff", "asgard", "--repo", str(ROOT), *LIVE, *flags)
    assert code == 2 and message in err, err


def test_selector_syntax_is_kubectl_s() -> None:
    from syncer.gather.selection import parse_selector

    labels = {"app": "web", "tier": "front", "env": "prod"}
    cases = {"app=web": True, "app==web": True, "app!=web": False, "missing!=x": True, "app": True, "!app": False,
             "!missing": True, "env in (prod, staging)": True, "env notin (prod)": False, "missing notin (a)": True,
             "missing in (a)": False, "app=web,tier=front,env in (dev,prod)": True, "app=web,tier=back": False,
             "example.com/role": False, "app=": False}
    for text, expected in cases.items():
        assert all(r.matches(labels) for r in parse_selector(text)) is expected, text


def test_sync_with_a_selection_commits_only_the_selected_object_and_refuses_pr_mode(asgard_repo: Path) -> None:
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), *LIVE, "--mode", "commit",
                         "--object", "ConfigMap/ollama-endpoint-manager")
    assert (code, err) == (0, ""), out
    changed = git(asgard_repo.parent / "origin.git", "show", "--stat", "--format=", "main")
    assert "ollama-endpoint-manager.yaml" in changed and "ollama-backends.yaml" not in changed
    code, _, err = run("sync", "asgard", "--repo", str(asgard_repo), *LIVE, "--mode", "pr", "--forge", "none",
                       "-l", "app=x")
    assert code == 2 and "--mode pr keeps one pull request for the whole installation" in err


# -- impersonation ------------------------------------------------------------------------------

class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, list[str]]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).seen.append({k: self.headers.get_all(k) or [] for k in ("Impersonate-User", "Impersonate-Group")})
        body = json.dumps({"major": "1", "minor": "31", "gitVersion": "v1.31.0"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recording_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.seen = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def kubeconfig(path: Path, server: str, user: dict[str, Any] | None = None) -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t", **(user or {})}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def test_as_and_as_group_are_sent_as_kubectl_sends_them(recording_server: str, tmp_path: Path) -> None:
    kc = str(kubeconfig(tmp_path / "kc", recording_server))
    code, _, err = run("version", "--kubeconfig", kc, "--as", "system:serviceaccount:ai:syncer",
                       "--as-group", "ops", "--as-group", "system:authenticated")
    assert (code, err) == (0, "")
    assert _Recorder.seen == [{"Impersonate-User": ["system:serviceaccount:ai:syncer"],
                               "Impersonate-Group": ["ops", "system:authenticated"]}]
    # The env twins, a repeatable flag's as a comma-separated list.
    _Recorder.seen = []
    run("version", "--kubeconfig", kc, env={"SYNCER_AS": "jane", "SYNCER_AS_GROUP": "a,b"})
    assert _Recorder.seen == [{"Impersonate-User": ["jane"], "Impersonate-Group": ["a", "b"]}]
    # The kubeconfig user's own as/as-groups, as kubectl reads them; the flag replaces them.
    kc2 = str(kubeconfig(tmp_path / "kc2", recording_server, {"as": "kate", "as-groups": ["g"]}))
    _Recorder.seen = []
    run("version", "--kubeconfig", kc2)
    run("version", "--kubeconfig", kc2, "--as", "lee")
    assert _Recorder.seen == [{"Impersonate-User": ["kate"], "Impersonate-Group": ["g"]},
                              {"Impersonate-User": ["lee"], "Impersonate-Group": []}]


def test_http2_watch_streams_carry_the_impersonation_headers() -> None:
    from syncer.kube import KubeClient
    from syncer.kube.config import Connection
    from syncer.sidecar.h2conn import Endpoint

    conn = Connection(server="https://127.0.0.1:6443", token="t", impersonate="system:serviceaccount:ai:syncer",
                      impersonate_groups=("ops", "dev"))
    ep = Endpoint.of(KubeClient(conn))
    assert ep is not None
    headers = ep.headers("/api/v1/namespaces/ai/configmaps?watch=1")
    assert (b"impersonate-user", b"system:serviceaccount:ai:syncer") in headers
    assert [v for k, v in headers if k == b"impersonate-group"] == [b"ops", b"dev"]


# -- JSON documents and the sync outcome --------------------------------------------------------

def test_every_json_document_has_a_schema(asgard_repo: Path, tmp_path: Path) -> None:
    _, out, _ = run("diff", "asgard", "--repo", str(ROOT), *LIVE, "-o", "json")
    assert json.loads(out)["schema"] == "syncer.diff/v1"
    _, out, _ = run("sync", "asgard", "--repo", str(ROOT), *LIVE, "-o", "json", "--mode", "dry-run")
    doc = json.loads(out)
    assert doc["schema"] == "syncer.sync/v1" and doc["outcome"]["result"] == "dry_run"
    # A fatal error: the command's document, with its schema; the TLS warning said once, in it.
    kc = kubeconfig(tmp_path / "kc", "https://127.0.0.1:9")
    doc_kc = json.loads(kc.read_text())
    doc_kc["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    kc.write_text(json.dumps(doc_kc))
    code, out, err = run("diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(kc), "-o", "json")
    doc = json.loads(out)
    assert code == 2 and doc["schema"] == "syncer.diff/v1" and doc["fatal"] is True
    assert [w["message"] for w in doc["warnings"]] == [
        "TLS verification is off for the API server at https://127.0.0.1:9 (insecure-skip-tls-verify in the "
        "kubeconfig): its certificate is not checked"]
    assert err.count("TLS verification is off") == 1 and err.startswith("syncer: warning: TLS verification")


def test_sync_json_names_the_pushed_commit(asgard_repo: Path) -> None:
    origin = asgard_repo.parent / "origin.git"
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), *LIVE, "--mode", "commit", "-o", "json")
    assert (code, err) == (0, ""), out
    outcome = json.loads(out)["outcome"]
    assert outcome["commit"] == git(origin, "rev-parse", "main")
    assert (outcome["result"], outcome["branch"], outcome["pushed"], outcome["written"]) == ("committed", "main",
                                                                                             True, 4)
    code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), *LIVE, "--mode", "commit", "-o", "json")
    outcome = json.loads(out)["outcome"]
    assert (outcome["result"], outcome["commit"], outcome["pushed"]) == ("nothing_to_do", None, False)


def test_sync_json_in_pr_mode_names_the_branch_it_pushed(tmp_path: Path) -> None:
    from tests.conftest import pushed_repo

    work = pushed_repo(tmp_path, "asgard")
    origin = tmp_path / "origin.git"
    code, out, err = run("sync", "asgard", "--repo", str(work), *LIVE, "--mode", "pr", "--forge", "none", "-o", "json")
    assert (code, err) == (0, ""), out
    outcome = json.loads(out)["outcome"]
    assert (outcome["result"], outcome["branch"], outcome["pushed"], outcome["pull_request"]) == (
        "pushed", "syncer/asgard", True, None)
    assert outcome["commit"] == git(origin, "rev-parse", "syncer/asgard")
    code, out, _ = run("sync", "asgard", "--repo", str(work), *LIVE, "--forge", "none", "-o", "json")  # pr implied
    outcome = json.loads(out)["outcome"]
    assert (outcome["result"], outcome["pushed"], outcome["commit"]) == ("pushed", False,
                                                                         git(origin, "rev-parse", "syncer/asgard"))


def test_a_bare_sync_writes_nothing_and_says_what_to_choose(asgard_repo: Path) -> None:
    origin = asgard_repo.parent / "origin.git"
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), *LIVE)
    assert (code, out) == (2, "") and "--mode dry-run" in err and "--mode pr --forge" in err
    assert "syncer/asgard" not in git(origin, "branch", "--list")
    code, _, err = run("run", "asgard", "--remote", str(origin))
    assert code == 2 and "run: say how to write back" in err


# -- help ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["diff", "sync", "run", "init", "version", "completion"])
def test_each_subcommand_s_help_ends_with_examples(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    examples = text[text.index("examples:"):]
    assert f"syncer {command}" in examples or (command == "completion" and "syncer completion" in examples)


def test_diff_help_says_the_direction(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["diff", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "from git (-) to the files as syncer would write them (+)" in text
    assert "the opposite of `kubectl diff`" in text


# -- quieter output -----------------------------------------------------------------------------

def test_a_note_is_said_once_per_object_not_under_each_drift() -> None:
    from syncer.model import Action, Direction, Drift, DriftClass, ObjectRef, Result
    from syncer.writeback.report import render_text

    ref = ObjectRef("v1", "ConfigMap", "ai", "cm")
    note = "last-applied ignored: its annotation was last written by kubectl-edit, not by an applier"
    drifts = tuple(Drift(ref, "hosts/a/cm.yaml", ("data", k), "1", "2", Direction.CLUSTER, DriftClass.VALUE,
                         Action.WRITE, base="ownership", base_note=note) for k in ("A", "B", "C"))
    text = render_text(Result("a", drifts=drifts))
    assert text.count(note) == 1
    other = ObjectRef("v1", "ConfigMap", "ai", "other")
    text = render_text(Result("a", drifts=drifts + (Drift(other, "hosts/a/o.yaml", ("data", "X"), "1", "2",
                                                          Direction.CLUSTER, DriftClass.VALUE, Action.WRITE,
                                                          base_note=note),)))
    assert text.count(note) == 2  # once for each object


def test_text_logs_keep_their_characters() -> None:
    import logging

    from syncer import logs

    stream = io.StringIO()
    handler = logs.setup("text", installation="asgard", stream=stream)
    try:
        logs.event(logging.getLogger("syncer.test"), logging.INFO, "copied back", ref="ConfigMap/ai/cm",
                   change="MAC_ADDRS: 192.168.68.58 → 192.168.68.75", who="kubectl-edit")
    finally:
        logging.getLogger().removeHandler(handler)
    line = stream.getvalue()
    assert 'change="MAC_ADDRS: 192.168.68.58 → 192.168.68.75"' in line and "\\u2192" not in line


def test_kubectl_completes_the_plugin_through_kubectl_complete_syncer(tmp_path: Path) -> None:
    """The real kubectl (1.26 on) asks ``kubectl_complete-syncer`` for ``kubectl syncer <TAB>``
    (its hidden ``__complete`` is what its own completion script calls)."""
    from tests.realapi.tools import require_tool

    kubectl = require_tool("kubectl")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, function in (("kubectl-syncer", "kubectl_main"), ("kubectl_complete-syncer", "kubectl_complete")):
        (bin_dir / name).write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                                    f"from syncer.cli import {function}\nsys.exit({function}())\n")
        (bin_dir / name).chmod(0o755)

    def complete(*words: str) -> tuple[list[str], str]:
        done = subprocess.run([kubectl, "__complete", "syncer", *words], cwd=ROOT, capture_output=True, text=True,
                              timeout=60, check=False, env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr
        *found, directive = done.stdout.splitlines()
        return found, directive

    assert complete("di") == (["diff"], ":4")
    assert complete("sync", "--mode", "") == (["pr", "commit", "dry-run"], ":4")
    assert complete("diff", "") == (["asgard", "midgard", "vanaheim"], ":4")
    assert complete("diff", "--live-file", "") == ([], ":0")  # files: the shell's own completion
