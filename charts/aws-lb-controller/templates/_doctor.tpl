{{/* `aws-lb-controller doctor` in the cluster (docs/doctor.md), shared by the `helm test` hook
     (tests/doctor.yaml) and the ArgoCD PostSync hook (doctor-postsync.yaml): the same ServiceAccount,
     RBAC and pod, each rendering adding its own hook annotations. */}}

{{- define "lbc.doctor.name" -}}
{{- printf "%s-doctor" (include "lbc.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of the doctor's objects: the chart's, but with its own app.kubernetes.io/name, so the
     controller's Services, PodDisruptionBudget and NetworkPolicy (which select name + instance) never
     select the doctor's pod. */}}
{{- define "lbc.doctor.labels" -}}
{{- $labels := include "lbc.labels" . | fromYaml }}
{{- $_ := set $labels "app.kubernetes.io/name" (printf "%s-doctor" (include "lbc.name" .) | trunc 63 | trimSuffix "-") }}
{{- $_ := set $labels "app.kubernetes.io/component" "doctor" }}
{{- toYaml $labels }}
{{- end }}

{{/* The doctor's ServiceAccount and RBAC, from (dict "root" $ "annotations" <hook annotations>):
     read-only plus `create` on pods for doctor's one server-side dry-run, so they must exist only while
     doctor runs (the annotations make them hooks deleted after the run, whatever its result). */}}
{{- define "lbc.doctor.rbac" -}}
{{- $ := .root }}
{{- $name := include "lbc.doctor.name" $ }}
{{- $webhooks := printf "%s-webhook" (include "lbc.fullname" $) }}
{{- $meta := dict "labels" (include "lbc.doctor.labels" $ | fromYaml) "annotations" .annotations }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $name }}
  namespace: {{ $.Release.Namespace }}
  {{- toYaml $meta | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $name }}
  {{- toYaml $meta | nindent 2 }}
rules:
  # Exactly what doctor calls (controller/src/doctor/kube.rs): one list of each kind it inspects
  # (bindings, Services, Ingresses and EndpointSlices: which Services are ours and their pod IPs;
  # pods and namespaces: readiness gates and labels; nodes; Deployments: ALBC still installed).
  - apiGroups: ["elbv2.k8s.aws"]
    resources: ["targetgroupbindings"]
    verbs: ["list"]
  # Tenancy: which Ingresses' groups their IngressClassParams set (the admin's choice).
  - apiGroups: ["elbv2.k8s.aws"]
    resources: ["ingressclassparams"]
    verbs: ["list"]
  # Services, pods, nodes, namespaces: lists, as above.
  - apiGroups: [""]
    resources: ["services", "pods", "nodes", "namespaces"]
    verbs: ["list"]
  # Pod IPs of our Services.
  - apiGroups: ["discovery.k8s.io"]
    resources: ["endpointslices"]
    verbs: ["list"]
  # Our Ingresses and their backends (which Services are ours).
  - apiGroups: ["networking.k8s.io"]
    resources: ["ingresses", "ingressclasses"]
    verbs: ["list"]
  # Conflicts: a Deployment running ALBC's image.
  - apiGroups: ["apps"]
    resources: ["deployments"]
    verbs: ["list"]
  # Webhooks: our configurations (caBundle, endpoints) and ALBC's, by name.
  - apiGroups: ["admissionregistration.k8s.io"]
    resources: ["mutatingwebhookconfigurations"]
    resourceNames: [{{ $webhooks | quote }}, "aws-load-balancer-webhook"]
    verbs: ["get"]
  # Webhooks: our validating configuration, by name.
  - apiGroups: ["admissionregistration.k8s.io"]
    resources: ["validatingwebhookconfigurations"]
    resourceNames: [{{ $webhooks | quote }}]
    verbs: ["get"]
  # CRDs: served and stored versions of ours, by name.
  - apiGroups: ["apiextensions.k8s.io"]
    resources: ["customresourcedefinitions"]
    resourceNames: ["albtargetcontrolconfigs.elbv2.k8s.aws", "ingressclassparams.elbv2.k8s.aws", "targetgroupbindings.elbv2.k8s.aws"]
    verbs: ["get"]
  # The one write doctor sends: a server-side dry-run Pod create (never stored) in a labelled
  # namespace, to see the readiness gate injected. RBAC cannot tell a dry-run from a real create:
  # this is why the ServiceAccount exists only while doctor runs.
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $name }}
  {{- toYaml $meta | nindent 2 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ $name }}
    namespace: {{ $.Release.Namespace }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: kube-system
  {{- toYaml $meta | nindent 2 }}
rules:
  # Pod IPs: Cilium's IPAM mode (ENI expected) from its ConfigMap, by name.
  - apiGroups: [""]
    resources: ["configmaps"]
    resourceNames: ["cilium-config"]
    verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: kube-system
  {{- toYaml $meta | nindent 2 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ $name }}
    namespace: {{ $.Release.Namespace }}
{{- end }}

{{/* The doctor's pod spec: the controller image with the Deployment's own flags (the same
     `lbc.args`, with doctor.helmTest.vaultAuthRole as the Vault role when set) plus
     `doctor --webhook-configuration=<fullname>-webhook`, and the Deployment's credential wiring. */}}
{{- define "lbc.doctor.podSpec" -}}
{{- $creds := include "lbc.awsCredentials" . | fromJson }}
{{- $vault := $creds.vault | default dict }}
{{- $volumes := or (has $creds.source (list "file" "vault")) .Values.extraVolumes .Values.extraVolumeMounts }}
{{- $ctx := . }}
{{- with .Values.doctor.helmTest.vaultAuthRole }}
{{- $values := deepCopy $.Values }}
{{- $_ := set $values.awsCredentials.vault "authRole" . }}
{{- $ctx = dict "Values" $values "Release" $.Release "Chart" $.Chart "Capabilities" $.Capabilities "Template" $.Template }}
{{- end }}
serviceAccountName: {{ include "lbc.doctor.name" . }}
restartPolicy: Never
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .Values.hostNetwork }}
hostNetwork: true
{{- end }}
{{- with .Values.dnsPolicy | default (.Values.hostNetwork | ternary "ClusterFirstWithHostNet" "") }}
dnsPolicy: {{ . }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
containers:
  - name: doctor
    image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
    imagePullPolicy: {{ .Values.image.pullPolicy }}
    args:
      {{- include "lbc.args" $ctx | nindent 6 }}
      - doctor
      - --webhook-configuration={{ printf "%s-webhook" (include "lbc.fullname" .) }}
    {{- /* The Deployment's environment and credential volumes (templates/deployment.yaml);
         charts/tests/test_chart.py checks they stay equal. */}}
    env:
      - name: POD_NAME
        valueFrom:
          fieldRef:
            fieldPath: metadata.name
      - name: POD_NAMESPACE
        valueFrom:
          fieldRef:
            fieldPath: metadata.namespace
      {{- if eq $creds.source "secret" }}
      - name: AWS_ACCESS_KEY_ID
        valueFrom:
          secretKeyRef:
            name: {{ $creds.secretName }}
            key: {{ $creds.accessKeyIdKey }}
      - name: AWS_SECRET_ACCESS_KEY
        valueFrom:
          secretKeyRef:
            name: {{ $creds.secretName }}
            key: {{ $creds.secretAccessKeyKey }}
      {{- with $creds.sessionTokenKey }}
      - name: AWS_SESSION_TOKEN
        valueFrom:
          secretKeyRef:
            name: {{ $creds.secretName }}
            key: {{ . }}
      {{- end }}
      {{- end }}
      {{- range $k, $v := .Values.env }}
      - name: {{ $k }}
        value: {{ $v | quote }}
      {{- end }}
    {{- with .Values.envFrom }}
    envFrom:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    securityContext:
      {{- toYaml .Values.securityContext | nindent 6 }}
    resources:
      {{- toYaml .Values.resources | nindent 6 }}
    {{- if $volumes }}
    volumeMounts:
      {{- if eq $creds.source "file" }}
      - name: aws-credentials
        mountPath: {{ $creds.fileMountPath }}
        readOnly: true
      {{- else if eq $creds.source "vault" }}
      - name: vault-token
        mountPath: /var/run/secrets/vault
        readOnly: true
      {{- if $vault.caBundleConfigMap }}
      - name: vault-ca
        mountPath: /etc/aws-lb-controller/vault-ca
        readOnly: true
      {{- end }}
      {{- end }}
      {{- with .Values.extraVolumeMounts }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    {{- end }}
{{- if $volumes }}
volumes:
  {{- if eq $creds.source "file" }}
  - name: aws-credentials
    {{- if $creds.fileVolume }}
    {{- toYaml $creds.fileVolume | nindent 4 }}
    {{- else }}
    secret:
      secretName: {{ $creds.secretName }}
      defaultMode: 0440
    {{- end }}
  {{- else if eq $creds.source "vault" }}
  - name: vault-token
    projected:
      sources:
        - serviceAccountToken:
            path: token
            audience: {{ $vault.audience }}
            expirationSeconds: {{ $vault.tokenExpirationSeconds }}
  {{- if $vault.caBundleConfigMap }}
  - name: vault-ca
    configMap:
      name: {{ $vault.caBundleConfigMap }}
  {{- end }}
  {{- end }}
  {{- with .Values.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
