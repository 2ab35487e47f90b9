{{- define "rdx-cluster.name" -}}
{{- $name := default .Release.Name .Values.nameOverride }}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name) }}
{{- fail (printf "TxCluster name %q is not a DNS-1035 label (set nameOverride)" $name) }}
{{- end }}
{{- if gt (len $name) 40 }}
{{- fail (printf "TxCluster name %q is longer than 40 characters (set nameOverride)" $name) }}
{{- end }}
{{- $name }}
{{- end }}

{{- define "rdx-cluster.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: rdx
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rdx
{{- end }}
