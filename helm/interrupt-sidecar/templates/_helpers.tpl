{{/*
Names and labels, in the shape of the prometheus-community charts.
Every helper here and in _sidecar.tpl takes a chart scope (.Values, .Release,
.Chart): `$` in this chart, `index .Subcharts "interrupt-sidecar"` in a parent.
*/}}

{{- define "interrupt-sidecar.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "interrupt-sidecar.fullname" -}}
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

{{- define "interrupt-sidecar.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "interrupt-sidecar.selectorLabels" -}}
app.kubernetes.io/name: {{ include "interrupt-sidecar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "interrupt-sidecar.labels" -}}
helm.sh/chart: {{ include "interrupt-sidecar.chart" . }}
{{ include "interrupt-sidecar.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: interrupt-sidecar
{{- end }}

{{- define "interrupt-sidecar.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "interrupt-sidecar.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "interrupt-sidecar.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "interrupt-sidecar.authSecretName" -}}
{{- default (printf "%s-auth" (include "interrupt-sidecar.fullname" .)) .Values.sidecar.auth.existingSecret }}
{{- end }}

{{/* The unix socket: a subdirectory of the shared emptyDir (see values.yaml). */}}
{{- define "interrupt-sidecar.socketPath" -}}
{{- printf "%s/sock/sidecar.sock" (trimSuffix "/" .Values.sidecar.socketDir) }}
{{- end }}

{{- define "interrupt-sidecar.address" -}}
{{- printf "unix://%s" (include "interrupt-sidecar.socketPath" .) }}
{{- end }}

{{- define "interrupt-sidecar.authTokenPath" -}}
/var/run/secrets/interrupt-sidecar/{{ .Values.sidecar.auth.secretKey }}
{{- end }}

{{/* Durations as the daemon's flags spell them. */}}
{{- define "interrupt-sidecar.ms" -}}
{{- printf "%dms" (round (mulf . 1000) 0 | int) }}
{{- end }}

{{/*
Refuse combinations that could not work, with a message that says what to change.
Rendered (empty) at the top of every pod-bearing template.
*/}}
{{- define "interrupt-sidecar.validate" -}}
{{- $s := .Values.sidecar }}
{{- if lt (float64 $s.shutdownTimeoutSeconds) (float64 $s.graceSeconds) }}
{{- fail (printf "sidecar.shutdownTimeoutSeconds (%v) must be at least sidecar.graceSeconds (%v): the daemon waits up to the grace for tools to unwind within its shutdown budget" $s.shutdownTimeoutSeconds $s.graceSeconds) }}
{{- end }}
{{- $agent := ternary (float64 .Values.agentShutdownSeconds) 0.0 (eq $s.mode "native") }}
{{- $needed := addf $agent $s.graceSeconds $s.shutdownTimeoutSeconds 2 }}
{{- if le (float64 .Values.terminationGracePeriodSeconds) $needed }}
{{- if eq $s.mode "native" }}
{{- fail (printf "terminationGracePeriodSeconds (%v) must exceed %v s = agentShutdownSeconds %v + sidecar.graceSeconds %v + sidecar.shutdownTimeoutSeconds %v + 2 s for the daemon to close its streams and server: the native sidecar is stopped only after the agent has exited, and the kubelet SIGKILLs whatever is left when the period ends, before the daemon has killed the tools. Raise terminationGracePeriodSeconds or lower the others." .Values.terminationGracePeriodSeconds $needed .Values.agentShutdownSeconds $s.graceSeconds $s.shutdownTimeoutSeconds) }}
{{- else }}
{{- fail (printf "terminationGracePeriodSeconds (%v) must exceed %v s = sidecar.graceSeconds %v + sidecar.shutdownTimeoutSeconds %v + 2 s for the daemon to close its streams and server: the kubelet SIGKILLs whatever is left when the period ends, before the daemon has killed the tools. Raise terminationGracePeriodSeconds or lower the others." .Values.terminationGracePeriodSeconds $needed $s.graceSeconds $s.shutdownTimeoutSeconds) }}
{{- end }}
{{- end }}
{{- if and $s.tcp.enabled (not $s.auth.enabled) }}
{{- fail "sidecar.tcp.enabled needs sidecar.auth.enabled: anyone who can reach the TCP port could interrupt executions and have their tools killed" }}
{{- end }}
{{- /* The daemon's TCP listeners share the pod's network namespace: one port each. */}}
{{- $ports := dict }}
{{- if $s.tcp.enabled }}{{ $_ := set $ports "sidecar.tcp.port" $s.tcp.port }}{{ end }}
{{- if $s.metrics.enabled }}{{ $_ := set $ports "sidecar.metrics.port" $s.metrics.port }}{{ end }}
{{- if eq $s.probes.mode "grpc" }}{{ $_ := set $ports "sidecar.health.port" $s.health.port }}{{ end }}
{{- range $a, $pa := $ports }}
{{- range $b, $pb := $ports }}
{{- if and (lt $a $b) (eq (int $pa) (int $pb)) }}
{{- fail (printf "%s and %s are both %v: the daemon binds each of its TCP listeners in the pod's network namespace, so they need different ports" $a $b $pa) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and (eq $s.mode "native") (semverCompare "<1.29.0-0" .Capabilities.KubeVersion.Version) }}
{{- fail (printf "sidecar.mode=native needs Kubernetes >= 1.29 (restartable init containers); this cluster is %s: use sidecar.mode=classic" .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- end }}
