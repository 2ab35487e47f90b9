{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "rdx-operator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name when it already contains the chart name, else <release>-<chart>. */}}
{{- define "rdx-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "rdx-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rdx-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "rdx-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rdx-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rdx
{{- end }}

{{- define "rdx-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rdx-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "rdx-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "rdx-operator.engineImage" -}}
{{- printf "%s:%s" .Values.engineImage.repository (default .Chart.AppVersion .Values.engineImage.tag) }}
{{- end }}

{{- define "rdx-operator.testImage" -}}
{{- if .Values.test.image.repository }}
{{- printf "%s:%s" .Values.test.image.repository (default .Chart.AppVersion .Values.test.image.tag) }}
{{- else }}
{{- include "rdx-operator.engineImage" . }}
{{- end }}
{{- end }}

{{/* The Lease the manager competes for: operator/cmd/manager LeaderElectionID. */}}
{{- define "rdx-operator.leaseName" -}}
rdx-operator.rdx.dev
{{- end }}

{{/* Fails rendering on values that would produce a broken installation. */}}
{{- define "rdx-operator.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled=true: two managers would reconcile the same TxClusters" }}
{{- end }}
{{- if lt (int .Values.replicaCount) 0 }}
{{- fail "replicaCount must be >= 0" }}
{{- end }}
{{- if and .Values.metrics.enabled (eq (int .Values.metrics.port) (int .Values.healthPort)) }}
{{- fail "metrics.port and healthPort must differ" }}
{{- end }}
{{- end }}
