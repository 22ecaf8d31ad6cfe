"""Kustomize installations without an API server: the render by the real kustomize (the one
kubectl embeds, a local binary call), the source map (which file and position set each
field), the verifying re-render, and the errors for what cannot be rendered offline.

The real-API tier (tests/realapi/test_realapi_kustomize.py) applies the same installation
with ``kubectl apply -k`` and writes live edits back end to end.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from syncer.sources import kustomize, scratch
from syncer.cache import Caches
from syncer.config import Config
from syncer.errors import ConfigError
from syncer.sources.dispatch import source_for
from syncer.sources.manifests import GitObject, Manifests
from syncer.sources.source import Source, Tools
from syncer.model import Action, Direction, Drift, DriftClass, Edit, FileError
from syncer.writeback.placement import proved
from syncer.writeback.plan import plan_changes
from tests.conftest import ROOT
from tests.helpers import run

KUBECTL = shutil.which("kubectl", path="/usr/local/bin") or shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kustomize) not installed")
CONTAINER = ("spec", "template", "spec", "containers", 0)


TOOLS = Tools(kustomize=str(KUBECTL))


@pytest.fixture(autouse=True)
def _real_kubectl(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line's runs take ``--kustomize`` from its env twin; the calls below pass TOOLS."""
    monkeypatch.setenv("SYNCER_KUSTOMIZE", str(KUBECTL))


def midgard(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "hosts" / "midgard", repo / "hosts" / "midgard")
    return repo


def settle(repo: Path) -> None:
    """Every file's timestamps in the past: the render cache trusts their stamps (no racy case)."""
    past = time.time() - 10
    for f in repo.rglob("*"):
        os.utime(f, (past, past), follow_symlinks=False)
    time.sleep(1.1)  # the ctime that utime just set, too


def by_kind(manifests: Manifests) -> dict[str, GitObject]:
    return {ref.kind: obj for ref, obj in manifests.objects.items()}


def drift(obj: GitObject, path: tuple[str | int, ...], live: Any, cls: DriftClass = DriftClass.VALUE) -> Drift:
    edit = Edit(path, live, add=cls is DriftClass.ADDED)
    return Drift(obj.ref, obj.file, path, None, live, Direction.CLUSTER, cls, Action.WRITE, edits=(edit,))


def load_source(repo: Path, installation: str, namespace: str, *, caches: Caches | None = None,
                tools: Tools = TOOLS) -> tuple[Source, Manifests]:
    """The installation's source and what it loads, as ``sync`` loads them."""
    source = source_for(repo, installation, Config(installation, namespace=namespace), tools)
    return source, source.load(caches if caches is not None else Caches())


def place(source: Source, obj: GitObject, path: tuple[str | int, ...], live: Any) -> Drift:
    [placed] = source.place(obj, [drift(obj, path, live)], Caches())
    return placed


def write(repo: Path, source: Source, manifests: Manifests, drifts: list[Drift],
          installation: str = "midgard") -> tuple[dict[str, list[str]], list[FileError]]:
    """Plan and verify as ``sync`` does: the changed lines per file, and what was refused."""
    aborted: list[FileError] = []
    _, changes = proved(source, repo, installation, drifts, manifests.objects, aborted, Caches())
    lines = {c.file: [ln for ln in c.unified_diff().splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
             for c in changes}
    return lines, aborted


def test_objects_are_what_kustomize_renders_with_their_origin_files(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    before = {f: f.read_bytes() for f in repo.rglob("*") if f.is_file()}
    source, manifests = load_source(repo, "midgard", "default")
    names = sorted(str(ref) for ref in manifests.objects)
    assert names[0].startswith("ConfigMap/midgard/web-settings-") and len(names[0]) == len("ConfigMap/midgard/web-settings-") + 10
    assert names[1:] == ["Deployment/midgard/web", "Service/midgard/web"]
    objs = by_kind(manifests)
    assert objs["Deployment"].file == "hosts/midgard/base/web.yaml"
    assert objs["ConfigMap"].file == "hosts/midgard/base/kustomization.yaml"  # its generator
    assert objs["Deployment"].data["spec"]["replicas"] == 3  # the overlay's patch applied
    # the origin annotations syncer asked for are not part of what is compared
    assert all("annotations" not in obj.data["metadata"] for obj in objs.values())
    assert manifests.errors == ()
    assert {f: f.read_bytes() for f in repo.rglob("*") if f.is_file()} == before  # rendered on a scratch copy


def test_each_field_is_traced_to_the_file_and_position_that_sets_it(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    source, manifests = load_source(repo, "midgard", "default")
    objs = by_kind(manifests)
    dep, cm = objs["Deployment"], objs["ConfigMap"]
    cases = {
        "replicas": place(source, dep, ("spec", "replicas"), 5),
        "image": place(source, dep, CONTAINER + ("image",), "nginx:1.28"),
        "json6902": place(source, dep, CONTAINER + ("env", 0, "value"), "debug"),
        "base": place(source, dep, CONTAINER + ("env", 1, "value"), "8"),
        "literal": place(source, cm, ("data", "GREETING"), "hej"),
    }
    assert {k: (d.file, d.action) for k, d in cases.items()} == {
        "replicas": ("hosts/midgard/replicas.yaml", Action.WRITE),
        "image": ("hosts/midgard/kustomization.yaml", Action.WRITE),
        "json6902": ("hosts/midgard/kustomization.yaml", Action.WRITE),
        "base": ("hosts/midgard/base/web.yaml", Action.WRITE),
        "literal": ("hosts/midgard/base/kustomization.yaml", Action.WRITE),
    }
    assert cases["image"].edits == (Edit(("images", 0, "newTag"), "1.28", doc=0),)
    assert cases["literal"].edits == (Edit(("configMapGenerator", 0, "literals", 0), "GREETING=hej", doc=0),)
    lines, aborted = write(repo, source, manifests, list(cases.values()))
    assert aborted == []
    assert lines == {
        "hosts/midgard/base/kustomization.yaml": ["-      - GREETING=hello   # shown on the front page",
                                                  "+      - GREETING=hej   # shown on the front page"],
        "hosts/midgard/base/web.yaml": ['-              value: "4"   # per pod', '+              value: "8"   # per pod'],
        "hosts/midgard/kustomization.yaml": ["-        value: warn", "+        value: debug",
                                             '-    newTag: "1.27"   # pinned after the CVE review',
                                             '+    newTag: "1.28"   # pinned after the CVE review'],
        "hosts/midgard/replicas.yaml": ["-  replicas: 3  # one per zone", "+  replicas: 5  # one per zone"],
    }


def test_what_a_transformer_computes_is_reported_with_the_reason_and_never_written(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    source, manifests = load_source(repo, "midgard", "default")
    objs = by_kind(manifests)
    namespace = place(source, objs["Service"], ("metadata", "namespace"), "elsewhere")
    assert namespace.action is Action.REPORT and namespace.edits == ()
    assert namespace.reason.startswith("not written: no file sets metadata.namespace: kustomize computes it")
    assert "NamespaceTransformer" in namespace.reason
    # the image's name: images: sets only newTag, so no single place holds the new name
    renamed = place(source, objs["Deployment"], CONTAINER + ("image",), "registry.example/nginx:1.27")
    assert renamed.action is Action.REPORT and "does not set newName" in renamed.reason


def test_replicas_and_newname_fields_of_the_kustomization_and_a_patch_file(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    host = repo / "hosts" / "midgard"
    (host / "kustomization.yaml").write_text((host / "kustomization.yaml").read_text().replace(
        "  - path: replicas.yaml\n", "  - path: env.yaml\n    target: {kind: Deployment}\n").replace(
        '    newTag: "1.27"   # pinned after the CVE review\n',
        '    newName: mirror.example/nginx\n    newTag: "1.27"\nreplicas:\n  - name: web\n    count: 2  # two\n'))
    (host / "env.yaml").write_text("- op: add\n  path: /spec/template/spec/containers/0/env/-\n"
                                   "  value: {name: EXTRA, value: \"on\"}   # added here\n")
    source, manifests = load_source(repo, "midgard", "default")
    dep = by_kind(manifests)["Deployment"]
    replicas = place(source, dep, ("spec", "replicas"), 4)
    image = place(source, dep, CONTAINER + ("image",), "mirror2.example/nginx:1.29")
    extra = place(source, dep, CONTAINER + ("env", 2, "value"), "off")
    assert (replicas.file, replicas.edits) == ("hosts/midgard/kustomization.yaml",
                                               (Edit(("replicas", 0, "count"), 4, doc=0),))
    assert image.edits == (Edit(("images", 0, "newName"), "mirror2.example/nginx", doc=0),
                           Edit(("images", 0, "newTag"), "1.29", doc=0))
    assert (extra.file, extra.edits) == ("hosts/midgard/env.yaml", (Edit((0, "value", "value"), "off", doc=0),))
    lines, aborted = write(repo, source, manifests, [replicas, image, extra])
    assert aborted == [], aborted
    assert lines["hosts/midgard/env.yaml"] == ['-  value: {name: EXTRA, value: "on"}   # added here',
                                               '+  value: {name: EXTRA, value: "off"}   # added here']
    assert sorted(lines["hosts/midgard/kustomization.yaml"]) == sorted([
        "-    newName: mirror.example/nginx", '-    newTag: "1.27"', "-    count: 2  # two",
        "+    newName: mirror2.example/nginx", '+    newTag: "1.29"', "+    count: 4  # two"])


def test_an_edit_that_does_not_render_the_live_value_is_not_written(tmp_path: Path) -> None:
    """The base declares the label, and the overlay's ``labels:`` sets the same value: the base
    file looks like the source, but kustomize overrides whatever it holds."""
    repo = midgard(tmp_path)
    host = repo / "hosts" / "midgard"
    (host / "kustomization.yaml").write_text((host / "kustomization.yaml").read_text()
                                             + "labels:\n  - pairs: {app: web}\n")
    source, manifests = load_source(repo, "midgard", "default")
    dep = by_kind(manifests)["Deployment"]
    label = place(source, dep, ("metadata", "labels", "app"), "shop")
    assert label.file == "hosts/midgard/base/web.yaml" and label.action is Action.WRITE
    lines, aborted = write(repo, source, manifests, [label])
    assert lines == {}
    assert [e.file for e in aborted] == ["hosts/midgard/base/web.yaml"]
    assert "not written: Deployment/midgard/web metadata.labels.app: the edited kustomization renders 'web', " \
           "live is 'shop'" in aborted[0].message


def test_a_render_is_made_again_only_when_a_file_of_the_tree_changed(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    settle(repo)
    caches = Caches()
    _, first = load_source(repo, "midgard", "default", caches=caches)
    assert caches.counters()["renders"] == (0, 1, 1)  # one render, remembered
    assert load_source(repo, "midgard", "default", caches=caches)[1] is first
    assert caches.counters()["renders"] == (1, 1, 1)
    patch = repo / "hosts" / "midgard" / "replicas.yaml"
    patch.write_text(patch.read_text().replace("replicas: 3", "replicas: 4"))
    settle(repo)
    _, again = load_source(repo, "midgard", "default", caches=caches)
    assert caches.counters()["renders"] == (1, 2, 1) and again is not first  # rendered again
    assert by_kind(again)["Deployment"].data["spec"]["replicas"] == 4


def test_a_remote_base_is_one_clear_error_for_the_installation(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    host = repo / "hosts" / "midgard"
    (host / "kustomization.yaml").write_text((host / "kustomization.yaml").read_text().replace(
        "  - base\n", "  - base\n  - https://github.com/example/shop//base?ref=v1\n"))
    code, out, err = run("diff", "midgard", "--repo", str(repo), "--live-file", str(ROOT / "examples" / "midgard-live.yaml"))
    assert (code, out) == (2, "")
    assert err == ("syncer: error: hosts/midgard/kustomization.yaml: remote base "
                   "'https://github.com/example/shop//base?ref=v1': kustomize cannot render it offline "
                   "(vendor it into the repository)\n")


@contextlib.contextmanager
def loopback_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 (its URL) that serves anything and records each request's path."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  stolen: fetched\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize(("edit", "field"), [
    (lambda t, url: t.replace("  - path: replicas.yaml\n", f"  - path: replicas.yaml\n  - path: {url}/patch.yaml\n"),
     "patches[1].path: '{url}/patch.yaml'"),
    (lambda t, url: t + f"configMapGenerator:\n  - name: app\n    files:\n      - info={url}/secret.txt\n",
     "configMapGenerator[0].files[0]: 'info={url}/secret.txt'"),
    (lambda t, url: t + f"helmCharts:\n  - name: shop\n    repo: {url}/charts\n    version: 1.0.0\n",
     "helmCharts[0].repo: '{url}/charts'"),
], ids=["patch-path", "generator-file", "helm-repo"])
def test_a_url_in_any_field_is_refused_and_never_fetched(tmp_path: Path, edit: Any, field: str) -> None:
    repo = midgard(tmp_path)
    file = repo / "hosts" / "midgard" / "kustomization.yaml"
    with loopback_server() as (url, seen):
        file.write_text(edit(file.read_text(), url))
        code, out, err = run("diff", "midgard", "--repo", str(repo), "--live-file",
                             str(ROOT / "examples" / "midgard-live.yaml"))
    assert (code, out) == (2, "")
    assert err == (f"syncer: error: hosts/midgard/kustomization.yaml: {field.format(url=url)} is a remote reference: "
                   "syncer renders offline and never lets kustomize fetch (put the file or chart into the repository "
                   "and name it by a relative path)\n")
    assert seen == []


def test_a_url_in_a_transformer_config_file_or_inline_config_is_refused(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    host = repo / "hosts" / "midgard"
    base = (host / "kustomization.yaml").read_text()
    (host / "more.yaml").write_text("apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\n"
                                    "path: http://localhost:1/p.yaml\n")
    (host / "kustomization.yaml").write_text(base + "transformers:\n  - more.yaml\n")
    with pytest.raises(ConfigError, match=r"^hosts/midgard/more.yaml: path: 'http://localhost:1/p.yaml' is a remote"):
        load_source(repo, "midgard", "default")
    (host / "kustomization.yaml").write_text(base + "transformers:\n  - |-\n    apiVersion: builtin\n"
                                             "    kind: PatchTransformer\n    metadata:\n      name: p\n"
                                             "    path: github.com/example/shop/p.yaml\n")
    with pytest.raises(ConfigError, match=r"^hosts/midgard/kustomization.yaml: transformers\[0\].path: "
                                          r"'github.com/example/shop/p.yaml' is a remote reference"):
        load_source(repo, "midgard", "default")


def test_urls_in_data_kustomize_never_loads_still_render(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    file = repo / "hosts" / "midgard" / "kustomization.yaml"
    file.write_text(file.read_text() + "commonAnnotations:\n  docs: https://wiki.example/shop\n"
                    "configMapGenerator:\n  - name: links\n    literals:\n      - API=https://api.example/v1\n")
    rendered = [o.data for o in load_source(repo, "midgard", "default")[1].objects.values()]
    assert {o["kind"]: o["metadata"]["annotations"]["docs"] for o in rendered} == {
        "Deployment": "https://wiki.example/shop", "Service": "https://wiki.example/shop",
        "ConfigMap": "https://wiki.example/shop"}
    assert [o["data"] for o in rendered if o["metadata"]["name"].startswith("links-")] == [{"API": "https://api.example/v1"}]


@pytest.mark.skipif(not scratch.sandbox(), reason="unshare cannot make a network namespace here")
def test_the_render_itself_cannot_reach_loopback(tmp_path: Path) -> None:
    """Past syncer's check (render called directly): kustomize has no network to fetch with."""
    repo = midgard(tmp_path)
    host = repo / "hosts" / "midgard"
    with loopback_server() as (url, seen):
        (host / "kustomization.yaml").write_text((host / "kustomization.yaml").read_text().replace(
            "  - path: replicas.yaml\n", f"  - path: replicas.yaml\n  - path: {url}/patch.yaml\n"))
        with pytest.raises(ConfigError, match="kustomize build failed"):
            kustomize.render.render(host, "hosts/midgard", str(KUBECTL))
    assert seen == []


def test_a_kustomization_that_does_not_build_is_one_line_naming_it(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    (repo / "hosts" / "midgard" / "replicas.yaml").unlink()
    code, out, err = run("diff", "midgard", "--repo", str(repo), "--live-file", str(ROOT / "examples" / "midgard-live.yaml"))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("syncer: error: hosts/midgard: kustomize build failed: ")
    assert err.endswith("lstat hosts/midgard/replicas.yaml: no such file or directory\n"), err
    assert "syncer-kustomize-" not in err  # the scratch copy's path is not shown


#: kubectl as some builds (v1.32.4) print a failed command: klog's header and its structured
#: value around kustomize's error (each line after a tab, then " >"), replayed around the real
#: kubectl's own error.
KLOG_KUBECTL = """#!{python}
import subprocess, sys
done = subprocess.run([{real!r}, *sys.argv[1:]], capture_output=True, text=True)
sys.stdout.write(done.stdout)
if done.returncode:
    said = done.stderr.strip().removeprefix("error: ")
    sys.stderr.write('E1201 10:32:17.123456   12345 run.go:72] "command failed" err=<\\n')
    sys.stderr.write("".join("\\t" + line + "\\n" for line in said.splitlines()) + " >\\n")
sys.exit(done.returncode)
"""


def test_kustomize_errors_wrapped_in_klog_by_the_kubectl_on_path_are_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No SYNCER_KUSTOMIZE: the kubectl on PATH renders, and it is another kubectl than the one
    .ci installs, one that wraps its errors in klog's structure: the message is still one line."""
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "kubectl"
    wrapper.write_text(KLOG_KUBECTL.format(python=sys.executable, real=str(KUBECTL)))
    wrapper.chmod(0o755)
    monkeypatch.delenv("SYNCER_KUSTOMIZE")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    repo = midgard(tmp_path)
    (repo / "hosts" / "midgard" / "replicas.yaml").unlink()
    code, out, err = run("diff", "midgard", "--repo", str(repo), "--live-file", str(ROOT / "examples" / "midgard-live.yaml"))
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert err.startswith("syncer: error: hosts/midgard: kustomize build failed: trouble configuring builtin "
                          "PatchTransformer with config: ` path: replicas.yaml `: failed to get the patch file"), err
    assert err.endswith("lstat hosts/midgard/replicas.yaml: no such file or directory\n"), err
    assert "E1201" not in err and "command failed" not in err and " >" not in err


def test_klog_of_a_wrapper_around_a_kubectl_that_itself_logs_klog_is_taken_off_layer_by_layer() -> None:
    """The dispatcher kubectl (v1.32.4) writes ``err="..."`` on one klog line; a wrapper that
    logs klog too nests that line, tab-indented, inside its own ``err=< ... >``: one line, no klog."""
    from syncer.sources.kustomize.render import one_line

    inner = ('E1202 03:55:40.706508    6837 run.go:72] "command failed" err="accumulating resources: '
             "lstat /t/nope.yaml: no such file or directory\"")
    assert one_line(inner + "\n") == "accumulating resources: lstat /t/nope.yaml: no such file or directory"
    nested = 'E1201 10:32:17.123456   12345 run.go:72] "command failed" err=<\n\t' + inner + "\n >\n"
    assert one_line(nested) == "accumulating resources: lstat /t/nope.yaml: no such file or directory"


def test_the_binary_is_configurable_and_a_missing_one_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="no-such-kustomize' not found"):
        load_source(midgard(tmp_path), "midgard", "default", tools=Tools(kustomize=str(tmp_path / "no-such-kustomize")))
    monkeypatch.setenv("SYNCER_KUSTOMIZE", str(tmp_path / "no-such-kustomize"))  # --kustomize's env twin
    code, out, err = run("diff", "midgard", "--repo", str(midgard(tmp_path / "cli")), "--live-file",
                         str(ROOT / "examples" / "midgard-live.yaml"))
    assert (code, out) == (2, "") and "no-such-kustomize' not found" in err


def test_the_bundled_example_diffs_as_the_readme_says() -> None:
    code, out, err = run("diff", "midgard", "--live-file", str(ROOT / "examples" / "midgard-live.yaml"))
    assert (code, err) == (1, "")
    assert "  spec.replicas: 3 → 5  (hosts/midgard/replicas.yaml)" in out
    assert "  spec.template.spec.containers[0].image: nginx:1.27 → nginx:1.28  (hosts/midgard/kustomization.yaml)" in out
    assert "+      - GREETING=hej   # shown on the front page" in out


def test_the_kustomize_flag_names_the_binary_for_this_run_only(tmp_path: Path) -> None:
    """The flag is a value handed to the source: the process's environment is left as it was."""
    repo = midgard(tmp_path)
    code, out, err = run("diff", "midgard", "--repo", str(repo), "--kustomize", str(tmp_path / "kustomize"),
                         "--live-file", str(ROOT / "examples" / "midgard-live.yaml"))
    assert (code, out) == (2, "") and "kustomize: " in err and "/kustomize' not found" in err
    assert os.environ["SYNCER_KUSTOMIZE"] == str(KUBECTL)


def test_a_generator_env_file_line_is_written_as_that_line(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    base = repo / "hosts" / "midgard" / "base"
    (base / "kustomization.yaml").write_text((base / "kustomization.yaml").read_text().replace(
        "      - CACHE_TTL=300\n", "      - CACHE_TTL=300\n    envs:\n      - web.env\n"))
    (base / "web.env").write_text("# tuning\r\nTHEME=dark\r\nPAGE_SIZE=20\r\n")
    source, manifests = load_source(repo, "midgard", "default")
    cm = by_kind(manifests)["ConfigMap"]
    page = place(source, cm, ("data", "PAGE_SIZE"), "50")
    assert (page.file, page.action, page.edits) == ("hosts/midgard/base/web.env", Action.WRITE,
                                                     (Edit((2,), "PAGE_SIZE=50", doc=-1),))
    lines, aborted = write(repo, source, manifests, [page])
    assert aborted == [] and lines == {"hosts/midgard/base/web.env": ["-PAGE_SIZE=20", "+PAGE_SIZE=50"]}
    aborted2: list[FileError] = []
    [change] = plan_changes(repo, "midgard", [page], manifests.objects, aborted2)
    assert change.new == "# tuning\r\nTHEME=dark\r\nPAGE_SIZE=50\r\n"  # the file's CRLF kept


def test_an_installation_of_a_base_and_overlays_renders_the_overlay_no_other_includes(tmp_path: Path) -> None:
    """No kustomization.yaml in hosts/<installation>/ itself: base/ and overlays/prod/ (which
    includes ../../base). The one not included by another is what is applied."""
    repo = tmp_path / "repo"
    src = ROOT / "hosts" / "midgard"
    host = repo / "hosts" / "shop"
    shutil.copytree(src / "base", host / "base")
    prod = host / "overlays" / "prod"
    prod.mkdir(parents=True)
    shutil.copy(src / "replicas.yaml", prod)
    (prod / "kustomization.yaml").write_text((src / "kustomization.yaml").read_text().replace("  - base\n",
                                                                                          "  - ../../base\n"))
    source, manifests = load_source(repo, "shop", "default")
    dep = by_kind(manifests)["Deployment"]
    assert dep.file == "hosts/shop/base/web.yaml" and dep.data["spec"]["replicas"] == 3
    replicas = place(source, dep, ("spec", "replicas"), 6)
    assert replicas.file == "hosts/shop/overlays/prod/replicas.yaml"
    lines, aborted = write(repo, source, manifests, [replicas], "shop")
    assert aborted == [] and list(lines) == ["hosts/shop/overlays/prod/replicas.yaml"]
    # a second overlay nobody includes: which one is applied cannot be told
    shutil.copytree(prod, host / "overlays" / "staging")
    with pytest.raises(ConfigError, match=r"hosts/shop: 2 kustomizations that no other includes "
                                          r"\(hosts/shop/overlays/prod, hosts/shop/overlays/staging\)"):
        load_source(repo, "shop", "default")


def test_an_image_pinned_by_digest_is_written_as_its_digest(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    host = repo / "hosts" / "midgard"
    old, new = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    (host / "kustomization.yaml").write_text((host / "kustomization.yaml").read_text().replace(
        '    newTag: "1.27"   # pinned after the CVE review\n', f"    digest: {old}  # reviewed\n"))
    source, manifests = load_source(repo, "midgard", "default")
    dep = by_kind(manifests)["Deployment"]
    assert dep.data["spec"]["template"]["spec"]["containers"][0]["image"] == f"nginx@{old}"
    pinned = place(source, dep, CONTAINER + ("image",), f"nginx@{new}")
    assert pinned.edits == (Edit(("images", 0, "digest"), new, doc=0),)
    tagged = place(source, dep, CONTAINER + ("image",), "nginx:1.28")  # a tag where the entry pins a digest
    assert tagged.action is Action.REPORT and tagged.edits == () and "images: entry 'nginx'" in tagged.reason
    lines, aborted = write(repo, source, manifests, [pinned])
    assert aborted == [] and lines == {"hosts/midgard/kustomization.yaml": [f"-    digest: {old}  # reviewed",
                                                                            f"+    digest: {new}  # reviewed"]}


def test_a_secret_generator_is_never_written_and_its_values_never_quoted(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    base = repo / "hosts" / "midgard" / "base"
    (base / "kustomization.yaml").write_text((base / "kustomization.yaml").read_text()
                                             + "secretGenerator:\n  - name: web-db\n    literals:\n"
                                               "      - DB_PASSWORD=hunter2\n")
    source, manifests = load_source(repo, "midgard", "default")
    secret = by_kind(manifests)["Secret"]
    d = replace(drift(secret, ("data", "DB_PASSWORD"), "‹secret sha256:0123abcd›"), action=Action.REPORT,
                reason="Secret: never written", edits=())
    [placed] = source.place(secret, [d], Caches())
    assert (placed.file, placed.action, placed.edits, placed.reason) == (
        "hosts/midgard/base/kustomization.yaml", Action.REPORT, (), "Secret: never written")


def test_sync_commit_writes_the_literal_through_real_git(tmp_path: Path) -> None:
    """``sync --mode commit`` from the bundled snapshot: one commit on the bare origin changing
    the generator's literal line (the Deployment is tracked ``report`` there)."""
    from tests.conftest import git

    repo = midgard(tmp_path)
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(tmp_path / "origin.git"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "midgard")
    git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(repo, "push", "-q", "origin", "main")
    live = str(ROOT / "examples" / "midgard-live.yaml")
    code, out, err = run("sync", "midgard", "--repo", str(repo), "--live-file", live, "--mode", "commit")
    assert (code, err) == (0, ""), out
    git(repo, "fetch", "-q", "origin")
    shown = git(repo, "show", "--format=%s", "--unified=0", "origin/main")
    changed = [ln for ln in shown.splitlines() if ln[:1] in ("+", "-") and ln[:3] not in ("+++", "---")]
    assert changed == ["-      - GREETING=hello   # shown on the front page",
                       "+      - GREETING=hej   # shown on the front page"]
    assert shown.splitlines()[0].startswith("syncer(midgard): copy ")
    assert "diff --git a/hosts/midgard/base/kustomization.yaml" in shown


def test_a_place_that_sets_more_than_the_drifted_value_is_not_written(tmp_path: Path) -> None:
    """Two Deployments run nginx and ``images:`` sets the tag of both: a live image edit of one
    traces to the entry, but writing it would change the other too."""
    repo = midgard(tmp_path)
    base = repo / "hosts" / "midgard" / "base"
    (base / "worker.yaml").write_text((base / "web.yaml").read_text().replace("name: web\n", "name: worker\n", 1))
    (base / "kustomization.yaml").write_text((base / "kustomization.yaml").read_text().replace(
        "  - web.yaml\n", "  - web.yaml\n  - worker.yaml\n"))
    source, manifests = load_source(repo, "midgard", "default")
    web = next(o for r, o in manifests.objects.items() if r.name == "web" and r.kind == "Deployment")
    image = place(source, web, CONTAINER + ("image",), "nginx:1.28")
    assert image.file == "hosts/midgard/kustomization.yaml" and image.action is Action.WRITE
    lines, aborted = write(repo, source, manifests, [image])
    assert lines == {}
    assert [e.message for e in aborted] == [
        "hosts/midgard/kustomization.yaml: not written: the edit would also change Deployment/midgard/worker "
        "spec.template.spec.containers[0].image (that place sets more than the drifted value)"]
    # web's own base value is set for web alone: written
    env = place(source, web, CONTAINER + ("env", 1, "value"), "8")
    lines, aborted = write(repo, source, manifests, [env])
    assert aborted == [] and list(lines) == ["hosts/midgard/base/web.yaml"]


def test_a_refused_edit_never_blocks_another_edit_of_the_same_file(tmp_path: Path) -> None:
    """``images:`` sets the tag of two Deployments (the image edit of one is refused); the JSON
    6902 patch in the same kustomization.yaml sets web's log level alone: it is written."""
    repo = midgard(tmp_path)
    base = repo / "hosts" / "midgard" / "base"
    (base / "worker.yaml").write_text((base / "web.yaml").read_text().replace("name: web\n", "name: worker\n", 1))
    (base / "kustomization.yaml").write_text((base / "kustomization.yaml").read_text().replace(
        "  - web.yaml\n", "  - web.yaml\n  - worker.yaml\n"))
    source, manifests = load_source(repo, "midgard", "default")
    web = next(o for r, o in manifests.objects.items() if r.name == "web" and r.kind == "Deployment")
    image = place(source, web, CONTAINER + ("image",), "nginx:1.28")
    level = place(source, web, CONTAINER + ("env", 0, "value"), "debug")
    assert image.file == level.file == "hosts/midgard/kustomization.yaml"
    lines, aborted = write(repo, source, manifests, [image, level])
    assert lines == {"hosts/midgard/kustomization.yaml": ["-        value: warn", "+        value: debug"]}
    assert [e.message for e in aborted] == [
        "hosts/midgard/kustomization.yaml: not written: the edit would also change Deployment/midgard/worker "
        "spec.template.spec.containers[0].image (that place sets more than the drifted value)"]


def test_the_same_edit_of_the_same_tree_is_rendered_once(tmp_path: Path) -> None:
    repo = midgard(tmp_path)
    settle(repo)
    caches = Caches()
    source, manifests = load_source(repo, "midgard", "default", caches=caches)
    replicas = place(source, by_kind(manifests)["Deployment"], ("spec", "replicas"), 5)
    runs = kustomize.render.RUNS[0]
    for _ in range(3):  # the sidecar plans a held drift every pass
        _, changes = proved(source, repo, "midgard", [replicas], manifests.objects, [], caches)
        assert [c.file for c in changes] == ["hosts/midgard/replicas.yaml"]
    assert kustomize.render.RUNS[0] - runs == 1
