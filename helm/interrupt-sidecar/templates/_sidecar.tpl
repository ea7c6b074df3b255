{{/*
The sidecar block, as named templates a parent chart can include to inject the
daemon into its own Deployment/StatefulSet (README: "Inject into your workload").
Each takes a chart scope whose .Values are this chart's values: `$` here, and
`(index .Subcharts "interrupt-sidecar")` in a parent chart that depends on it.
Lists are rendered as YAML list items, maps as YAML mappings, both unindented:
place them with nindent.
*/}}

{{/* The helm test's health check and the exec probe fallback:
grpc.health.v1.Health/Check over the socket. argv: address, timeout seconds,
optional bearer token file. */}}
{{- define "interrupt-sidecar.healthCheckScript" -}}
import sys
import grpc
from grpc_health.v1 import health_pb2 as pb, health_pb2_grpc as rpc
metadata = ()
if len(sys.argv) > 3:
    with open(sys.argv[3]) as token:
        metadata = (("authorization", "Bearer " + token.read().strip()),)
with grpc.insecure_channel(sys.argv[1]) as channel:
    request = pb.HealthCheckRequest()
    reply = rpc.HealthStub(channel).Check(request, timeout=float(sys.argv[2]), metadata=metadata)
sys.exit(0 if reply.status == pb.HealthCheckResponse.SERVING else 1)
{{- end }}

{{- define "interrupt-sidecar.probe" -}}
{{- $ctx := index . 0 }}{{- $p := index . 1 -}}
{{- if eq $ctx.Values.sidecar.probes.mode "grpc" }}
grpc:
  port: {{ $ctx.Values.sidecar.health.port }}
{{- else }}
exec:
  command:
    - python
    - -c
    - {{ include "interrupt-sidecar.healthCheckScript" $ctx | quote }}
    - {{ include "interrupt-sidecar.address" $ctx | quote }}
    - {{ max 1 (sub (int $p.timeoutSeconds) 1) | quote }}
    {{- if $ctx.Values.sidecar.auth.enabled }}
    - {{ include "interrupt-sidecar.authTokenPath" $ctx | quote }}
    {{- end }}
{{- end }}
periodSeconds: {{ $p.periodSeconds }}
timeoutSeconds: {{ $p.timeoutSeconds }}
failureThreshold: {{ $p.failureThreshold }}
{{- end }}

{{/* The daemon's container, for initContainers (native) or containers (classic). */}}
{{- define "interrupt-sidecar.container" -}}
{{- include "interrupt-sidecar.validate" . }}
{{- $s := .Values.sidecar -}}
- name: {{ $s.name }}
  image: {{ include "interrupt-sidecar.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if eq $s.mode "native" }}
  # A native sidecar: started before the agent, stopped after it.
  restartPolicy: Always
  {{- end }}
  args:
    - serve
    - --listen={{ include "interrupt-sidecar.address" . }}
    {{- if $s.tcp.enabled }}
    - --listen=0.0.0.0:{{ $s.tcp.port }}
    # Today the daemon refuses off-loopback TCP without this flag; the bearer
    # token below is what keeps strangers out.
    - --allow-insecure-tcp
    - --auth-token-file={{ include "interrupt-sidecar.authTokenPath" . }}
    {{- end }}
    - --metrics-listen={{ if $s.metrics.enabled }}0.0.0.0:{{ $s.metrics.port }}{{ end }}
    {{- if eq $s.probes.mode "grpc" }}
    # Only grpc.health.v1, for the kubelet's grpc probes: it grants nothing, so
    # it needs neither the token nor --allow-insecure-tcp.
    - --health-listen=0.0.0.0:{{ $s.health.port }}
    {{- end }}
    - --state-dir={{ $s.stateDir }}
    - --grace={{ include "interrupt-sidecar.ms" $s.graceSeconds }}
    - --shutdown-timeout={{ include "interrupt-sidecar.ms" $s.shutdownTimeoutSeconds }}
    - --loop={{ $s.loop }}
    - --log-level={{ $s.logLevel }}
  {{- with $s.extraEnv }}
  env:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if or $s.tcp.enabled $s.metrics.enabled (eq $s.probes.mode "grpc") }}
  ports:
    {{- if $s.tcp.enabled }}
    - name: grpc
      containerPort: {{ $s.tcp.port }}
      protocol: TCP
    {{- end }}
    {{- if eq $s.probes.mode "grpc" }}
    - name: health
      containerPort: {{ $s.health.port }}
      protocol: TCP
    {{- end }}
    {{- if $s.metrics.enabled }}
    - name: metrics
      containerPort: {{ $s.metrics.port }}
      protocol: TCP
    {{- end }}
  {{- end }}
  startupProbe:
    {{- include "interrupt-sidecar.probe" (list . $s.probes.startup) | trim | nindent 4 }}
  livenessProbe:
    {{- include "interrupt-sidecar.probe" (list . $s.probes.liveness) | trim | nindent 4 }}
  readinessProbe:
    {{- include "interrupt-sidecar.probe" (list . $s.probes.readiness) | trim | nindent 4 }}
  {{- with $s.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    runAsNonRoot: true
    runAsUser: {{ $s.runAsUser }}
    runAsGroup: {{ $s.runAsGroup }}
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    privileged: false
    capabilities:
      drop: [ALL]
      {{- with $s.capabilities.add }}
      add:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    seccompProfile:
      type: RuntimeDefault
  volumeMounts:
    - name: interrupt-sidecar-socket
      mountPath: {{ $s.socketDir }}
    - name: interrupt-sidecar-state
      mountPath: {{ $s.stateDir }}
    - name: interrupt-sidecar-tmp
      mountPath: /tmp
    {{- if $s.auth.enabled }}
    - name: interrupt-sidecar-auth
      mountPath: /var/run/secrets/interrupt-sidecar
      readOnly: true
    {{- end }}
{{- end }}

{{/* initContainers items: the sidecar in native mode, nothing in classic mode. */}}
{{- define "interrupt-sidecar.initContainers" -}}
{{- if eq .Values.sidecar.mode "native" }}
{{- include "interrupt-sidecar.container" . }}
{{- end }}
{{- end }}

{{/* containers items: the sidecar in classic mode, nothing in native mode. */}}
{{- define "interrupt-sidecar.containers" -}}
{{- if eq .Values.sidecar.mode "classic" }}
{{- include "interrupt-sidecar.container" . }}
{{- end }}
{{- end }}

{{/* volumes items. */}}
{{- define "interrupt-sidecar.volumes" -}}
# The socket directory shared by the sidecar and the agent.
- name: interrupt-sidecar-socket
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
- name: interrupt-sidecar-state
  {{- toYaml .Values.sidecar.stateVolume | nindent 2 }}
- name: interrupt-sidecar-tmp
  emptyDir:
    sizeLimit: 16Mi
{{- if .Values.sidecar.auth.enabled }}
- name: interrupt-sidecar-auth
  secret:
    secretName: {{ include "interrupt-sidecar.authSecretName" . }}
    defaultMode: 0440
    items:
      - key: {{ .Values.sidecar.auth.secretKey }}
        path: {{ .Values.sidecar.auth.secretKey }}
{{- end }}
{{- end }}

{{/* env items for the agent container: where the daemon is (and its token). */}}
{{- define "interrupt-sidecar.agentEnv" -}}
- name: INTERRUPT_SIDECAR_ADDRESS
  value: {{ include "interrupt-sidecar.address" . | quote }}
{{- if .Values.sidecar.auth.enabled }}
- name: INTERRUPT_SIDECAR_AUTH_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "interrupt-sidecar.authSecretName" . }}
      key: {{ .Values.sidecar.auth.secretKey }}
{{- end }}
{{- end }}

{{/* volumeMounts items for the agent container. */}}
{{- define "interrupt-sidecar.agentVolumeMounts" -}}
- name: interrupt-sidecar-socket
  mountPath: {{ .Values.sidecar.socketDir }}
{{- end }}

{{/* The pod's securityContext: everyone runs as the daemon's uid (the socket is
owner-only and the daemon only kills its own uid's processes). */}}
{{- define "interrupt-sidecar.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.sidecar.runAsUser }}
runAsGroup: {{ .Values.sidecar.runAsGroup }}
fsGroup: {{ .Values.sidecar.runAsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* A securityContext for the agent container: least privilege, same uid. */}}
{{- define "interrupt-sidecar.agentSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.sidecar.runAsUser }}
runAsGroup: {{ .Values.sidecar.runAsGroup }}
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Labels for pods carrying the sidecar: the PodMonitor and Service select them. */}}
{{- define "interrupt-sidecar.podLabels" -}}
{{ include "interrupt-sidecar.selectorLabels" . }}
app.kubernetes.io/component: agent
{{- end }}

{{/* terminationGracePeriodSeconds, validated against the shutdown budget. */}}
{{- define "interrupt-sidecar.terminationGracePeriodSeconds" -}}
{{- include "interrupt-sidecar.validate" . }}
{{- .Values.terminationGracePeriodSeconds }}
{{- end }}
