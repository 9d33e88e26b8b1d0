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

{{/* ALBC's `creator` (other than "helm") leaves out Helm's own labels. */}}
{{- define "lbc.labels" -}}
{{ include "lbc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- if eq (default "helm" .Values.creator) "helm" }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
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

{{/* The validating binding webhook also sees label-only updates: stack labels naming another
     namespace's stack are refused (docs/security.md). */}}
{{- define "lbc.tgbValidateMatchConditions" -}}
{{- if semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version }}
matchConditions:
  - name: spec-or-labels-changed
    expression: "request.operation != 'UPDATE' || object.spec != oldObject.spec || object.metadata.?labels.orValue({}) != oldObject.metadata.?labels.orValue({})"
{{- end }}
{{- end }}

{{/* Failure policy of the Service and Ingress webhooks when none is set, from (list $ <policy with
     matchConditions>): they see kinds every other controller creates too. With matchConditions
     (Kubernetes >= 1.30) only LoadBalancer Services and Ingresses that may be ours reach them, so the
     given policy (Fail) is safe; without, every Service or Ingress of the cluster would wait on this
     controller: Ignore. */}}
{{- define "lbc.sharedKindFailurePolicy" -}}
{{- $ctx := index . 0 }}
{{- if semverCompare ">=1.30-0" $ctx.Capabilities.KubeVersion.Version }}
{{- index . 1 }}
{{- else }}
{{- "Ignore" }}
{{- end }}
{{- end }}

{{- define "lbc.ingressClassParamsName" -}}
{{- default .Values.ingressClass .Values.ingressClassParams.name -}}
{{- end }}

{{/* One label selector (JSON) from a list: an extra match expression (or nil), then selectors whose
     matchExpressions are concatenated and matchLabels merged; nulls and empty parts left out. */}}
{{- define "lbc.selector" -}}
{{- $exprs := list }}
{{- $labels := dict }}
{{- range rest . }}
{{- if kindIs "map" . }}
{{- $exprs = concat $exprs (.matchExpressions | default list) }}
{{- $labels = merge $labels (.matchLabels | default dict) }}
{{- end }}
{{- end }}
{{- with first . }}{{ $exprs = append $exprs . }}{{ end }}
{{- $sel := dict }}
{{- with $exprs }}{{ $_ := set $sel "matchExpressions" . }}{{ end }}
{{- with $labels }}{{ $_ := set $sel "matchLabels" . }}{{ end }}
{{- toJson $sel }}
{{- end }}
