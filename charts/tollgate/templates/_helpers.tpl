{{/* Names and labels shared by every object of the release. */}}

{{- define "tollgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tollgate.fullname" -}}
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

{{- define "tollgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tollgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tollgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tollgate.labels" -}}
helm.sh/chart: {{ include "tollgate.chart" . }}
{{ include "tollgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tollgate
{{- end }}

{{/* The namespace whose tollgate.dev resources the operator compiles and where the snapshot Secrets live. */}}
{{- define "tollgate.watchNamespace" -}}
{{- default .Release.Namespace .Values.operator.watchNamespace }}
{{- end }}

{{/* Snapshot Secrets and gateway report Leases: a namespace of their own unless snapshot.namespace says otherwise. */}}
{{- define "tollgate.snapshotNamespace" -}}
{{- default (printf "%s-snapshot" (include "tollgate.watchNamespace" .)) .Values.snapshot.namespace }}
{{- end }}

{{- define "tollgate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Bytes in a Kubernetes quantity (plain, Ki/Mi/Gi/Ti or k/M/G/T), for comparing sizes at render time. */}}
{{- define "tollgate.bytes" -}}
{{- $q := toString . }}
{{- $units := dict "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 }}
{{- $n := regexFind "^[0-9]+" $q }}
{{- $u := trimPrefix $n $q }}
{{- if not (regexMatch "^[0-9]+(Ki|Mi|Gi|Ti|k|M|G|T)?$" $q) }}{{ fail (printf "%q is not a size this chart understands (e.g. 2Gi)" $q) }}{{ end }}
{{- if $u }}{{ mul (int64 $n) (get $units $u) }}{{ else }}{{ $n }}{{ end }}
{{- end }}

{{- define "tollgate.operator.serviceAccountName" -}}
{{- default (printf "%s-operator" (include "tollgate.fullname" .)) .Values.operator.serviceAccount.name }}
{{- end }}

{{- define "tollgate.gateway.serviceAccountName" -}}
{{- default (printf "%s-gateway" (include "tollgate.fullname" .)) .Values.gateway.serviceAccount.name }}
{{- end }}

{{/* Pod-level hardening shared by both Deployments: non-root, no privilege escalation, runtime seccomp. */}}
{{- define "tollgate.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "tollgate.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
{{- end }}

{{/* Which database of its own the chart runs: cloudnativepg (when asked, or "auto" and the CRD is there) or statefulset. */}}
{{- define "tollgate.postgresKind" -}}
{{- $cnpg := .Capabilities.APIVersions.Has "postgresql.cnpg.io/v1/Cluster" }}
{{- if eq .Values.postgres.kind "cloudnativepg" }}
{{- if not $cnpg }}{{ fail "postgres.kind is cloudnativepg but the postgresql.cnpg.io/v1 Cluster CRD is not installed" }}{{ end }}cloudnativepg
{{- else if and (eq .Values.postgres.kind "auto") $cnpg }}cloudnativepg
{{- else }}statefulset
{{- end }}
{{- end }}

{{/* The Secret and key DATABASE_URL comes from. */}}
{{- define "tollgate.databaseSecret" -}}
{{- if .Values.postgres.enabled }}
{{- if eq (include "tollgate.postgresKind" .) "cloudnativepg" }}
{{- printf "%s-postgres-app uri" (include "tollgate.fullname" .) }}
{{- else }}
{{- printf "%s-postgres DATABASE_URL" (include "tollgate.fullname" .) }}
{{- end }}
{{- else }}
{{- printf "%s %s" .Values.database.existingSecret .Values.database.secretKey }}
{{- end }}
{{- end }}
