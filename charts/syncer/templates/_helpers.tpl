{{/*
Names, labels and the syncer container.

The container and its volumes are named templates so that the standalone
Deployment, the sidecar patch and other charts all render the same thing:

  syncer.container  one list item (`- name: syncer ...`) for `containers:`
  syncer.volumes    the list items for `volumes:` that the container mounts

Both read only `.Values`, `.Release.Name`, `.Chart.Name` and `.Chart.AppVersion`,
so a parent chart that lists syncer as a dependency (alias `syncer`) can drop
them into its own Deployment, the way charts offer an `extraContainers` hook:

  containers:
    - name: manager
      ...
    {{- include "syncer.container" (dict "Values" .Values.syncer "Release" .Release "Chart" (dict "Name" "syncer" "AppVersion" "0.1.0")) | nindent 4 }}
  volumes:
    {{- include "syncer.volumes" (dict "Values" .Values.syncer "Release" .Release "Chart" (dict "Name" "syncer" "AppVersion" "0.1.0")) | nindent 4 }}

The pod then also needs the RBAC this chart renders (keep `rbac.create` on in
the dependency) and an fsGroup so the 0400 credential files are readable.
*/}}

{{- define "syncer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Resource name prefix: the release name when it already contains the chart
name (release `syncer` gives `syncer`), otherwise `<release>-<chart>`.
*/}}
{{- define "syncer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "syncer.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "syncer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "syncer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "syncer.labels" -}}
helm.sh/chart: {{ include "syncer.chart" . }}
{{ include "syncer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end }}

{{- define "syncer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "syncer.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false (in sidecar mode: the reconciler's ServiceAccount)" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "syncer.stateConfigMapName" -}}
{{- default (printf "%s-state" (include "syncer.fullname" .)) .Values.state.configMapName }}
{{- end }}

{{- define "syncer.leaseName" -}}
{{- default (printf "%s-leader" (include "syncer.fullname" .)) .Values.leaderElection.leaseName }}
{{- end }}

{{- define "syncer.image" -}}
{{- $repo := required "image.repository is required: build the image from the repository's Dockerfile and push it where the cluster can pull it" .Values.image.repository }}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" $repo $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}
{{- end }}

{{/*
Fixed paths inside the container. The credential files sit under
/var/run/syncer/, one directory per purpose, so each volume mount holds only
the Secret keys it needs.
*/}}
{{- define "syncer.forgeTokenFile" -}}/var/run/syncer/forge/token{{- end }}
{{- define "syncer.gitDir" -}}/var/run/syncer/git{{- end }}

{{/*
Checks that span several values, which the JSON schema cannot express.
Included by every template that renders something, so `helm template`,
`helm lint` and `helm install` all fail with the same message.
*/}}
{{/*
Kinds `tracked.kinds` may name: Kind -> [API group, resource]. The same table as
CHART_KINDS in syncer/grants.py (tests/test_chart.py checks they agree).
*/}}
{{- define "syncer.kindResources" -}}
{"ConfigMap": ["", "configmaps"], "CronJob": ["batch", "cronjobs"], "DaemonSet": ["apps", "daemonsets"], "Deployment": ["apps", "deployments"], "EndpointSlice": ["discovery.k8s.io", "endpointslices"], "Endpoints": ["", "endpoints"], "HorizontalPodAutoscaler": ["autoscaling", "horizontalpodautoscalers"], "Ingress": ["networking.k8s.io", "ingresses"], "Job": ["batch", "jobs"], "NetworkPolicy": ["networking.k8s.io", "networkpolicies"], "PersistentVolumeClaim": ["", "persistentvolumeclaims"], "Pod": ["", "pods"], "PodDisruptionBudget": ["policy", "poddisruptionbudgets"], "Role": ["rbac.authorization.k8s.io", "roles"], "RoleBinding": ["rbac.authorization.k8s.io", "rolebindings"], "Secret": ["", "secrets"], "Service": ["", "services"], "ServiceAccount": ["", "serviceaccounts"], "StatefulSet": ["apps", "statefulsets"]}
{{- end }}

{{- define "syncer.validate" -}}
{{- $_ := required "installation is required: the directory hosts/<installation>/ syncer keeps in sync" .Values.installation }}
{{- $_ = required "sync.remote is required: the git URL syncer clones from and pushes to" .Values.sync.remote }}
{{- $_ = required "credentials.existingSecret is required: create the Secret first (see docs/install.md); the chart never takes credential values" .Values.credentials.existingSecret }}
{{- $_ = include "syncer.image" . }}
{{- $remote := .Values.sync.remote }}
{{- $https := or (hasPrefix "https://" $remote) (hasPrefix "http://" $remote) }}
{{- if and (eq .Values.credentials.gitAuth "https") (not $https) }}
{{- fail (printf "credentials.gitAuth is https but sync.remote %q is not an https:// URL" $remote) }}
{{- end }}
{{- if and (eq .Values.credentials.gitAuth "ssh") $https }}
{{- fail (printf "credentials.gitAuth is ssh but sync.remote %q is an http(s) URL" $remote) }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled=true, so that one pod at a time writes to git" }}
{{- end }}
{{- if and .Values.networkPolicy.enabled (eq .Values.mode "sidecar") }}
{{- fail "networkPolicy.enabled works in standalone mode only: in sidecar mode the pod is the reconciler's, and the policy would cut the reconciler's own traffic" }}
{{- end }}
{{- if and .Values.networkPolicy.enabled (or (empty .Values.networkPolicy.apiServerCIDRs) (empty .Values.networkPolicy.gitCIDRs)) }}
{{- fail "networkPolicy.enabled needs networkPolicy.apiServerCIDRs and networkPolicy.gitCIDRs, or syncer could reach neither the API server nor git" }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled (eq .Values.mode "sidecar") (empty .Values.sidecar.podSelector) }}
{{- fail "serviceMonitor.enabled in sidecar mode needs sidecar.podSelector (the reconciler's pod labels) for the metrics Service" }}
{{- end }}
{{- if and (eq .Values.mode "cronjob") .Values.leaderElection.enabled }}
{{- fail "leaderElection.enabled has no effect in cronjob mode: the CronJob runs one `syncer sync` at a time (concurrencyPolicy Forbid)" }}
{{- end }}
{{- if and (eq .Values.mode "cronjob") .Values.serviceMonitor.enabled }}
{{- fail "serviceMonitor.enabled does not work in cronjob mode: a one-shot `syncer sync` serves no /metrics" }}
{{- end }}
{{- if and (eq .Values.mode "cronjob") (or .Values.prometheusRule.enabled .Values.grafanaDashboard.enabled) }}
{{- fail "prometheusRule.enabled and grafanaDashboard.enabled do not work in cronjob mode: a one-shot `syncer sync` serves no /metrics" }}
{{- end }}
{{- if and (eq .Values.mode "sidecar") (empty .Values.sidecar.deploymentName) }}
{{- fail "sidecar.deploymentName is required in sidecar mode: the reconciler Deployment the patch is for" }}
{{- end }}
{{- $byKind := list }}
{{- $table := include "syncer.kindResources" . | fromJson }}
{{- range $kind, $names := (.Values.tracked.kinds | default dict) }}
{{- if not (hasKey $table $kind) }}
{{- fail (printf "tracked.kinds.%s: not a kind the chart knows (%s); list it in tracked.extra with its apiGroup and resource" $kind (keys $table | sortAlpha | join ", ")) }}
{{- end }}
{{- $byKind = concat $byKind $names }}
{{- end }}
{{- if empty (concat .Values.tracked.configMaps .Values.tracked.endpoints .Values.tracked.extra $byKind) }}
{{- fail "tracked lists no object: set tracked.kinds (`syncer init --chart-values` prints it), tracked.configMaps, tracked.endpoints or tracked.extra to the objects syncer keeps in sync" }}
{{- end }}
{{- $managed := list "HOME" "GIT_SSH_COMMAND" "SYNCER_MODE" "SYNCER_FORGE" "SYNCER_FORGE_URL" "SYNCER_FORGE_REPO" "SYNCER_REMOTE" "SYNCER_BASE_BRANCH" "SYNCER_TOKEN_FILE" "SYNCER_GIT_TOKEN_FILE" "SYNCER_GITHUB_APP_ID" "SYNCER_GITHUB_APP_KEY_FILE" "SYNCER_GITHUB_APP_INSTALLATION_ID" "SYNCER_CLONE_DIR" "SYNCER_LOG_FORMAT" "SYNCER_RESYNC_INTERVAL" "SYNCER_STATE_CONFIGMAP" "SYNCER_LEADER_ELECT" "SYNCER_LEASE_NAME" "SYNCER_LEASE_DURATION" "SYNCER_LISTEN" }}
{{- range .Values.extraEnv }}
{{- if has .name $managed }}
{{- fail (printf "extraEnv sets %s, which the chart sets from its own values; use those instead" .name) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The syncer container, as one list item. Configuration goes in as the
SYNCER_<FLAG> env twins of the `syncer run` flags; credentials only as paths
to files mounted from the existing Secret.
*/}}
{{- define "syncer.container" -}}
{{- $gitDir := include "syncer.gitDir" . -}}
- name: syncer
  image: {{ include "syncer.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command:
    - syncer
  args:
    {{- if eq .Values.mode "cronjob" }}
    - sync
    - {{ .Values.installation | quote }}
    {{- else }}
    - run
    - {{ .Values.installation | quote }}
    - --listen
    - 0.0.0.0:{{ .Values.listenPort }}
    {{- end }}
  env:
    - name: HOME
      value: /tmp
    - name: SYNCER_MODE
      value: {{ .Values.sync.mode | quote }}
    - name: SYNCER_FORGE
      value: {{ .Values.sync.forge | quote }}
    {{- with .Values.sync.forgeURL }}
    - name: SYNCER_FORGE_URL
      value: {{ . | quote }}
    {{- end }}
    {{- with .Values.sync.forgeRepo }}
    - name: SYNCER_FORGE_REPO
      value: {{ . | quote }}
    {{- end }}
    - name: SYNCER_REMOTE
      value: {{ .Values.sync.remote | quote }}
    - name: SYNCER_BASE_BRANCH
      value: {{ .Values.sync.baseBranch | quote }}
    {{- $app := (.Values.credentials.githubApp | default dict) }}
    {{- if $app.id }}
    {{- if ne .Values.sync.forge "github" }}
    {{- fail (printf "credentials.githubApp.id is for sync.forge github, not %q" .Values.sync.forge) }}
    {{- end }}
    - name: SYNCER_GITHUB_APP_ID
      value: {{ $app.id | quote }}
    - name: SYNCER_GITHUB_APP_KEY_FILE
      value: /var/run/syncer/forge/app-key.pem
    {{- with $app.installationID }}
    - name: SYNCER_GITHUB_APP_INSTALLATION_ID
      value: {{ . | quote }}
    {{- end }}
    {{- else if ne .Values.sync.forge "none" }}
    - name: SYNCER_TOKEN_FILE
      value: {{ include "syncer.forgeTokenFile" . }}
    {{- end }}
    {{- if and (eq .Values.credentials.gitAuth "https") $app.id }}
    # git over HTTPS uses the GitHub App's installation token.
    {{- else if eq .Values.credentials.gitAuth "https" }}
    - name: SYNCER_GIT_TOKEN_FILE
      value: {{ $gitDir }}/token
    {{- else }}
    # Host keys come only from the Secret's knownHosts: an unknown or changed
    # host key stops the push instead of being trusted on first use.
    - name: GIT_SSH_COMMAND
      value: ssh -o StrictHostKeyChecking=yes -o UserKnownHostsFile={{ $gitDir }}/known_hosts -o IdentitiesOnly=yes -i {{ $gitDir }}/id_key
    {{- end }}
    - name: SYNCER_CLONE_DIR
      value: /work
    {{- if ne .Values.mode "cronjob" }}
    {{- /* Flags of `syncer run` only; a one-shot `syncer sync` has no log stream, resync or state. */}}
    - name: SYNCER_LOG_FORMAT
      value: {{ .Values.sync.logFormat | quote }}
    {{- with .Values.sync.resyncInterval }}
    - name: SYNCER_RESYNC_INTERVAL
      value: {{ . | quote }}
    {{- end }}
    - name: SYNCER_STATE_CONFIGMAP
      value: {{ include "syncer.stateConfigMapName" . | quote }}
    {{- end }}
    {{- if .Values.leaderElection.enabled }}
    - name: SYNCER_LEADER_ELECT
      value: "true"
    - name: SYNCER_LEASE_NAME
      value: {{ include "syncer.leaseName" . | quote }}
    {{- with .Values.leaderElection.leaseDuration }}
    - name: SYNCER_LEASE_DURATION
      value: {{ . | quote }}
    {{- end }}
    {{- end }}
    {{- range .Values.extraEnv }}
    - name: {{ .name }}
      value: {{ .value | quote }}
    {{- end }}
  {{- if ne .Values.mode "cronjob" }}
  ports:
    - name: http
      containerPort: {{ .Values.listenPort }}
      protocol: TCP
  # /healthz: the process is alive. /readyz: the API server and the git remote
  # answered recently. In sidecar mode an unready syncer makes the whole pod
  # unready: the reconciler keeps running, a rollout of it waits for syncer.
  livenessProbe:
    httpGet:
      path: /healthz
      port: http
    initialDelaySeconds: 10
    periodSeconds: 20
    timeoutSeconds: 5
    failureThreshold: 3
  readinessProbe:
    httpGet:
      path: /readyz
      port: http
    initialDelaySeconds: 5
    periodSeconds: 10
    timeoutSeconds: 5
    failureThreshold: 3
  {{- end }}
  {{- with .Values.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.containerSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: syncer-work
      mountPath: /work
    - name: syncer-tmp
      mountPath: /tmp
    {{- if ne .Values.sync.forge "none" }}
    - name: syncer-forge
      mountPath: /var/run/syncer/forge
      readOnly: true
    {{- end }}
    {{- if not (and (eq .Values.credentials.gitAuth "https") (.Values.credentials.githubApp | default dict).id) }}
    - name: syncer-git
      mountPath: {{ $gitDir }}
      readOnly: true
    {{- end }}
{{- end }}

{{/*
The volumes syncer.container mounts, as list items: emptyDirs for the clone and
for scratch files (the root filesystem is read-only), and the Secret keys as
files readable by their owner only (with fsGroup set, the kubelet also grants
the pod's fsGroup read access).
*/}}
{{- define "syncer.volumes" -}}
- name: syncer-work
  emptyDir:
    sizeLimit: {{ .Values.volumes.workSizeLimit }}
- name: syncer-tmp
  emptyDir:
    sizeLimit: {{ .Values.volumes.tmpSizeLimit }}
{{- if ne .Values.sync.forge "none" }}
- name: syncer-forge
  secret:
    secretName: {{ .Values.credentials.existingSecret }}
    defaultMode: 0400
    items:
      {{- if (.Values.credentials.githubApp | default dict).id }}
      - key: githubAppPrivateKey
        path: app-key.pem
      {{- else }}
      - key: forgeToken
        path: token
      {{- end }}
{{- end }}
{{- if not (and (eq .Values.credentials.gitAuth "https") (.Values.credentials.githubApp | default dict).id) }}
- name: syncer-git
  secret:
    secretName: {{ .Values.credentials.existingSecret }}
    defaultMode: 0400
    items:
    {{- if eq .Values.credentials.gitAuth "https" }}
      - key: gitToken
        path: token
    {{- else }}
      - key: sshPrivateKey
        path: id_key
      - key: knownHosts
        path: known_hosts
    {{- end }}
{{- end }}
{{- end }}

{{/*
Strategic-merge patch that adds syncer to an existing Deployment. Containers
and volumes merge by name, so the reconciler's own entries stay as they are.
*/}}
{{- define "syncer.sidecarPatch" -}}
# Adds the syncer sidecar to Deployment {{ .Release.Namespace }}/{{ .Values.sidecar.deploymentName }}.
# Rendered by the syncer chart (release {{ .Release.Name }}, mode sidecar); apply with
#   kubectl -n {{ .Release.Namespace }} patch deployment {{ .Values.sidecar.deploymentName }} --patch-file <this file>
# It sets serviceAccountName to {{ include "syncer.serviceAccountName" . }}, which the chart's RoleBinding
# grants syncer's read-only rules; if that is not the reconciler's own account,
# grant the reconciler's rules to it as well. The pod fsGroup lets syncer read
# its 0400 credential files; it is the only pod-level setting changed.
spec:
  template:
    spec:
      serviceAccountName: {{ include "syncer.serviceAccountName" . }}
      {{- with (dig "fsGroup" nil .Values.podSecurityContext) }}
      securityContext:
        fsGroup: {{ . }}
      {{- end }}
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        {{- include "syncer.container" . | nindent 8 }}
      volumes:
        {{- include "syncer.volumes" . | nindent 8 }}
{{- end }}

{{- /* The alert rules of the PrometheusRule, as a list of groups. Arguments: namespace (the
metrics' `namespace` label, as the ServiceMonitor's scrape sets it) and rule (.Values.prometheusRule). */}}
{{- define "syncer.alertGroups" -}}
{{- $ns := .namespace }}
{{- $r := .rule }}
- name: syncer
  rules:
    - alert: SyncerDriftNotCopiedBack
      expr: max by (namespace, installation, kind, name) (syncer_drift_age_seconds{namespace="{{ $ns }}"}) > {{ int $r.driftAgeSeconds }}
      for: {{ $r.driftFor }}
      labels:
        severity: {{ $r.severity }}
      annotations:
        summary: {{ `A live change has not reached git for {{ $value | humanizeDuration }}` | quote }}
        description: {{ `{{ $labels.kind }}/{{ $labels.name }} of installation {{ $labels.installation }} (namespace {{ $labels.namespace }}) has differed from git for {{ $value | humanizeDuration }}: review syncer's pull request, or see why it waits (syncer diff {{ $labels.installation }}).` | quote }}
    - alert: SyncerSyncErrors
      expr: sum by (namespace, stage) (increase(syncer_sync_errors_total{namespace="{{ $ns }}"}[15m])) > 0
      for: {{ $r.errorsFor }}
      labels:
        severity: {{ $r.severity }}
      annotations:
        summary: {{ `syncer keeps failing at the {{ $labels.stage }} stage` | quote }}
        description: {{ `syncer in namespace {{ $labels.namespace }} counted {{ $value | printf "%.0f" }} {{ $labels.stage }} failure(s) in the last 15 minutes (syncer_sync_errors_total): its log names each.` | quote }}
    - alert: SyncerNotReady
      expr: max by (namespace, pod, installation) (syncer_ready{namespace="{{ $ns }}"}) == 0
      for: {{ $r.notReadyFor }}
      labels:
        severity: {{ $r.severity }}
      annotations:
        summary: {{ `syncer cannot reach the API server or git` | quote }}
        description: {{ `syncer pod {{ $labels.pod }} (installation {{ $labels.installation }}, namespace {{ $labels.namespace }}) is not ready: /readyz says which upstream it has not reached.` | quote }}
{{- end }}
