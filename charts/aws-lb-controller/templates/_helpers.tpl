{{/* Chart name (63 chars max: DNS label). */}}
{{- define "lbc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart unless the release name already contains the chart name. */}}
{{- define "lbc.fullname" -}}
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

{{- define "lbc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lbc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "lbc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "lbc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "lbc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "lbc.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create=false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "lbc.webhookService" -}}
{{- printf "%s-webhook" (include "lbc.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lbc.tlsSecret" -}}
{{- printf "%s-tls" (include "lbc.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lbc.metricsService" -}}
{{- printf "%s-metrics" (include "lbc.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* PromQL selector of this controller's series (alerts). */}}
{{- define "lbc.metricSelector" -}}
{{- default (printf "job=%q" (include "lbc.metricsService" .)) .Values.prometheusRule.selector }}
{{- end }}

{{/* TargetGroupBinding webhooks skip metadata-only updates (finalizer, checkpoint), so the
     controller can always finish deleting a binding, even while the webhook is down. */}}
{{- define "lbc.tgbMatchConditions" -}}
{{- if semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version }}
matchConditions:
  - name: spec-changed
    expression: "request.operation != 'UPDATE' || object.spec != oldObject.spec"
{{- end }}
{{- end }}

{{- define "lbc.ingressClassParamsName" -}}
{{- default .Values.ingressClass .Values.ingressClassParams.name -}}
{{- end }}
