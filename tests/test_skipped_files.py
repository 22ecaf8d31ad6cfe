"""Files under hosts/<installation>/ that are no Kubernetes objects are skipped with one note each
(a Helm chart's source as one note for the whole tree), never an error; a malformed manifest
stays an error."""

from __future__ import annotations

from pathlib import Path

from syncer.sources.manifests import load_manifests

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"


def _host(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "hosts" / "t" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_chart_source_is_one_note_and_its_rendered_neighbour_is_read(tmp_path: Path) -> None:
    repo = _host(tmp_path, {
        "rendered.yaml": CM.format(name="web"),
        "web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        "web/values.yaml": "replicaCount: 1\n",
        "web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"
                                 "{{- with .Values.x }}\ndata: {{ toYaml . | nindent 2 }}\n{{- end }}\n",
        "web/charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    })
    m = load_manifests(repo, "t", "ns")
    assert [r.name for r in m.objects] == ["web"] and m.errors == ()
    assert [n.message for n in m.skipped] == [
        "hosts/t/web/: a Helm chart's source (Chart.yaml, 4 files): skipped; syncer compares rendered manifests "
        "and never edits templates"]


def test_values_templates_and_kustomize_files_are_notes_malformed_manifests_errors(tmp_path: Path) -> None:
    repo = _host(tmp_path, {
        "values-prod.yaml": "replicaCount: 2\nimage: {tag: '1.27'}\n",
        "deploy.tpl.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n{{- if .Values.on }}\ndata: {}\n{{ end }}\n",
        "kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n",
        "a.yaml": CM.format(name="a"),
        "broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b\n",
        "mixed.yaml": CM.format(name="m") + "---\nfoo: bar\n",
        "noname.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
    })
    m = load_manifests(repo, "t", "ns")
    assert sorted(r.name for r in m.objects) == ["a", "m"]
    assert [n.message.split(": ", 1) for n in m.skipped] == [
        ["hosts/t/deploy.tpl.yaml", "a template ({{ }} expressions), not objects as it stands: skipped"],
        ["hosts/t/kustomization.yaml", "a kustomize file (Kustomization/Component), not an object the cluster "
                                       "holds: skipped"],
        ["hosts/t/values-prod.yaml", "not a Kubernetes object (no document has apiVersion or kind): skipped"]]
    assert sorted(e.file for e in m.errors) == ["hosts/t/broken.yaml", "hosts/t/mixed.yaml", "hosts/t/noname.yaml"]
