{{/* The controller's command line. Values named as in the upstream ALBC chart render their flag only
     when set (null or empty: the controller's own default); booleans render whenever they are
     booleans, so `false` is passed on. Maps render as k=v,k=v (sorted), lists comma-joined. */}}

{{/* Values (dotted paths) that map to a flag of the same meaning. */}}
{{- define "lbc.valueFlags" -}}
{{- list
  (list "watchNamespace" "watch-namespace")
  (list "vpcTags" "aws-vpc-tags")
  (list "awsApiEndpoints" "aws-api-endpoints")
  (list "awsApiThrottle" "aws-api-throttle")
  (list "awsMaxRetries" "aws-max-retries")
  (list "ingressClass" "ingress-class")
  (list "disableIngressClassAnnotation" "disable-ingress-class-annotation")
  (list "disableIngressGroupNameAnnotation" "disable-ingress-group-name-annotation")
  (list "defaultSSLPolicy" "default-ssl-policy")
  (list "defaultTargetType" "default-target-type")
  (list "defaultLoadBalancerScheme" "default-load-balancer-scheme")
  (list "loadBalancerClass" "load-balancer-class")
  (list "enableServiceMutatorWebhook" "enable-service-mutator-webhook")
  (list "enablePodReadinessGateInject" "enable-pod-readiness-gate-inject")
  (list "enableShield" "enable-shield")
  (list "enableWaf" "enable-waf")
  (list "enableWafv2" "enable-wafv2")
  (list "ingressMaxConcurrentReconciles" "ingress-max-concurrent-reconciles")
  (list "serviceMaxConcurrentReconciles" "service-max-concurrent-reconciles")
  (list "targetgroupbindingMaxConcurrentReconciles" "targetgroupbinding-max-concurrent-reconciles")
  (list "targetgroupbindingMaxExponentialBackoffDelay" "targetgroupbinding-max-exponential-backoff-delay")
  (list "targetgroupbindingRequeueDuration" "targetgroupbinding-requeue-duration")
  (list "albGatewayMaxConcurrentReconciles" "alb-gateway-max-concurrent-reconciles")
  (list "gateway.certificateSecrets" "enable-gateway-certificate-secrets")
  (list "nlbGatewayMaxConcurrentReconciles" "nlb-gateway-max-concurrent-reconciles")
  (list "globalAcceleratorMaxConcurrentReconciles" "globalaccelerator-max-concurrent-reconciles")
  (list "globalAcceleratorMaxExponentialBackoffDelay" "globalaccelerator-max-exponential-backoff-delay")
  (list "lbStabilizationMonitorInterval" "lb-stabilization-monitor-interval")
  (list "syncPeriod" "sync-period")
  (list "tolerateNonExistentBackendService" "tolerate-non-existent-backend-service")
  (list "tolerateNonExistentBackendAction" "tolerate-non-existent-backend-action")
  (list "defaultTags" "default-tags")
  (list "externalManagedTags" "external-managed-tags")
  (list "enableEndpointSlices" "enable-endpoint-slices")
  (list "enableBackendSecurityGroup" "enable-backend-security-group")
  (list "enableManageBackendSecurityGroupRules" "enable-manage-backend-security-group-rules")
  (list "backendSecurityGroup" "backend-security-group")
  (list "disableRestrictedSecurityGroupRules" "disable-restricted-sg-rules")
  (list "maxTargetsPerTargetGroup" "max-targets-per-target-group")
  (list "serviceTargetENISGTags" "service-target-eni-security-group-tags")
  (list "controllerConfig.featureGates" "feature-gates")
  (list "certDiscovery.allowedCertificateAuthorityARNs" "allowed-certificate-authority-arns")
  (list "certManagement.defaultPCAARN" "default-pca-arn")
  | toJson }}
{{- end }}

{{/* A scalar as the controller reads it: whole numbers without an exponent (YAML numbers arrive as floats). */}}
{{- define "lbc.scalar" -}}
{{- if and (kindIs "float64" .) (eq . (float64 (int64 .))) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- end }}

{{/* A value as one flag argument: map -> k=v,k=v; list -> a,b; scalar as is. */}}
{{- define "lbc.flagValue" -}}
{{- $out := list }}
{{- if kindIs "map" . }}
{{- range $k, $v := . }}{{ $out = append $out (printf "%s=%s" $k (include "lbc.scalar" $v)) }}{{ end }}
{{- else if kindIs "slice" . }}
{{- range . }}{{ $out = append $out (include "lbc.scalar" .) }}{{ end }}
{{- else }}
{{- $out = list (include "lbc.scalar" .) }}
{{- end }}
{{- join "," $out }}
{{- end }}

{{/* AWS credentials settings in effect: awsCredentials, or ALBC's envSecretName (static keys from a
     Secret with ALBC's key names). Returned as JSON. */}}
{{- define "lbc.awsCredentials" -}}
{{- $creds := deepCopy .Values.awsCredentials }}
{{- with .Values.envSecretName }}
{{- if ne $creds.source "default" }}
{{- fail (printf "envSecretName (ALBC) and awsCredentials.source=%s both set the AWS credentials: keep one" $creds.source) }}
{{- end }}
{{- $_ := set $creds "source" "secret" }}
{{- $_ := set $creds "secretName" . }}
{{- $_ := set $creds "accessKeyIdKey" "key_id" }}
{{- $_ := set $creds "secretAccessKeyKey" "access_key" }}
{{- end }}
{{- toJson $creds }}
{{- end }}

{{/* The container's args, one `- --flag=value` per line. */}}
{{- define "lbc.args" -}}
{{- $creds := include "lbc.awsCredentials" . | fromJson }}
{{- $vault := $creds.vault | default dict }}
{{- $args := list }}
{{- $fromValues := dict }}
{{- $args = append $args (printf "--cluster-name=%s" (required "clusterName is required: the <name> of your subnets' kubernetes.io/cluster/<name> tags" .Values.clusterName)) }}
{{- $args = append $args (printf "--aws-region=%s" (required "region is required: the instance metadata service is never used to guess it" .Values.region)) }}
{{- if not (or .Values.vpcId .Values.vpcTags) }}{{ fail "vpcId is required (or vpcTags: tags that exactly one VPC of the region carries): the instance metadata service is never used to find the VPC" }}{{ end }}
{{- with .Values.vpcId }}{{ $args = append $args (printf "--aws-vpc-id=%s" .) }}{{ end }}
{{- range include "lbc.valueFlags" . | fromJsonArray }}
{{- $path := index . 0 }}
{{- $flag := index . 1 }}
{{- $v := $.Values }}
{{- range splitList "." $path }}{{ if kindIs "map" $v }}{{ $v = get $v . }}{{ else }}{{ $v = "" }}{{ end }}{{ end }}
{{- if or (kindIs "bool" $v) $v }}
{{- $args = append $args (printf "--%s=%s" $flag (include "lbc.flagValue" $v)) }}
{{- $_ := set $fromValues $flag $path }}
{{- end }}
{{- end }}
{{- $args = append $args "--enable-leader-election=true" }}
{{- $args = append $args (printf "--leader-election-id=%s" .Values.leaderElection.id) }}
{{- $args = append $args (printf "--leader-election-namespace=%s" .Release.Namespace) }}
{{- $args = append $args (printf "--leader-election-lease-duration=%s" (include "lbc.scalar" .Values.leaderElection.leaseDurationSeconds)) }}
{{- $args = append $args (printf "--metrics-bind-addr=%s" (.Values.metricsBindAddr | default (printf ":%s" (include "lbc.scalar" .Values.metricsService.port)))) }}
{{- $args = append $args "--health-probe-bind-addr=:61779" }}
{{- $args = append $args (printf "--webhook-bind-port=%s" (include "lbc.webhookPort" .)) }}
{{- if eq (include "lbc.webhookCertMode" .) "controller" }}
{{- $args = concat $args (list "--webhook-cert-mode=controller"
  (printf "--webhook-cert-secret=%s" (include "lbc.managedCertSecret" .))
  (printf "--webhook-cert-secret-namespace=%s" .Release.Namespace)
  (printf "--webhook-cert-dns-names=%s" (include "lbc.webhookDNSNames" . | fromJsonArray | join ","))
  (printf "--mutating-webhook-configuration=%s" (include "lbc.webhookConfigurationName" .))
  (printf "--validating-webhook-configuration=%s" (include "lbc.webhookConfigurationName" .))) }}
{{- else }}
{{- $args = append $args "--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs" }}
{{- end }}
{{- with .Values.webhookServer }}
{{- with .maxBodyBytes }}{{ $args = append $args (printf "--webhook-max-body-bytes=%s" (include "lbc.scalar" .)) }}{{ end }}
{{- with .maxConcurrentRequests }}{{ $args = append $args (printf "--webhook-max-concurrent-requests=%s" (include "lbc.scalar" .)) }}{{ end }}
{{- if .clientCAConfigMap }}{{ $args = append $args (printf "--webhook-client-ca-file=/etc/aws-lb-controller/webhook-client-ca/%s" .clientCAKey) }}{{ end }}
{{- end }}
{{- /* The webhook answers (504) before the API server gives up on it; 8 s, the controller's default, for 10 s. */}}
{{- $timeout := int .Values.webhookConfig.timeoutSeconds }}
{{- if ne $timeout 10 }}{{ $args = append $args (printf "--webhook-request-timeout=%ds" (max 1 (sub $timeout 2))) }}{{ end }}
{{- with .Values.tenancy }}
{{- if not (has .mode (list "compatible" "strict")) }}
{{- fail (printf "tenancy.mode=%v is not a mode: expected compatible (every manifest the upstream controller accepts works) or strict (only what tenancy.policy grants); docs/security.md" .mode) }}
{{- end }}
{{- if ne .mode "compatible" }}{{ $args = append $args (printf "--tenancy-mode=%s" .mode) }}{{ end }}
{{- if .policy }}{{ $args = append $args "--tenancy-policy-file=/etc/aws-lb-controller/tenancy/policy.json" }}{{ end }}
{{- end }}
{{- with .Values.logLevel }}{{ $args = append $args (printf "--log-level=%s" .) }}{{ end }}
{{- $args = append $args (printf "--log-format=%s" .Values.logFormat) }}
{{- with .Values.tracing }}
{{- if .otlpEndpoint }}
{{- if not (regexMatch "^https?://[^/?#]+" .otlpEndpoint) }}
{{- fail (printf "tracing.otlpEndpoint=%s is not an http(s) URL: expected the OTLP/HTTP base URL of a collector, e.g. http://tempo.monitoring:4318" .otlpEndpoint) }}
{{- end }}
{{- if not .serviceName }}{{ fail "tracing.serviceName is empty: set the service name the spans carry, e.g. aws-lb-controller" }}{{ end }}
{{- $ratio := .samplingRatio }}
{{- if not (or (kindIs "float64" $ratio) (kindIs "int64" $ratio) (kindIs "int" $ratio)) }}
{{- fail (printf "tracing.samplingRatio=%v is not a number: expected a number from 0 to 1, e.g. 0.1" $ratio) }}
{{- end }}
{{- if or (lt (float64 $ratio) 0.0) (gt (float64 $ratio) 1.0) }}
{{- fail (printf "tracing.samplingRatio=%v is out of range: expected a number from 0 to 1, e.g. 0.1" $ratio) }}
{{- end }}
{{- $args = concat $args (list (printf "--otlp-endpoint=%s" .otlpEndpoint)
  (printf "--otlp-service-name=%s" .serviceName)
  (printf "--otlp-sampling-ratio=%s" (include "lbc.scalar" $ratio))) }}
{{- end }}
{{- end }}
{{- if eq $creds.source "file" }}
{{- $args = concat $args (list "--aws-credentials-source=file"
  (printf "--aws-credentials-file=%s/%s" $creds.fileMountPath $creds.fileKey)
  (printf "--aws-credentials-profile=%s" ($creds.profile | default "default"))) }}
{{- else if eq $creds.source "vault" }}
{{- $args = concat $args (list "--aws-credentials-source=vault"
  (printf "--vault-address=%s" $vault.address)
  (printf "--vault-auth-mount=%s" $vault.authMount)
  (printf "--vault-auth-role=%s" $vault.authRole)
  (printf "--vault-secrets-mount=%s" $vault.secretsMount)
  (printf "--vault-secrets-role=%s" $vault.secretsRole)
  (printf "--vault-credential-type=%s" $vault.credentialType)
  (printf "--vault-ttl=%s" $vault.ttl)
  "--vault-token-path=/var/run/secrets/vault/token") }}
{{- with $vault.roleArn }}{{ $args = append $args (printf "--vault-role-arn=%s" .) }}{{ end }}
{{- with $vault.namespace }}{{ $args = append $args (printf "--vault-namespace=%s" .) }}{{ end }}
{{- if $vault.insecureHttp }}{{ $args = append $args "--vault-insecure-http=true" }}{{ end }}
{{- if $vault.caBundleConfigMap }}
{{- $args = append $args (printf "--vault-ca-bundle=/etc/aws-lb-controller/vault-ca/%s" $vault.caBundleKey) }}
{{- end }}
{{- end }}
{{- range $k, $v := .Values.extraArgs }}
{{- with get $fromValues $k }}
{{- fail (printf "extraArgs.%s duplicates --%s, which the value %s renders: set %s only" $k $k . .) }}
{{- end }}
{{- range $args }}
{{- if hasPrefix (printf "--%s=" $k) . }}
{{- fail (printf "extraArgs.%s duplicates --%s, which the chart renders itself (see values.yaml)" $k $k) }}
{{- end }}
{{- end }}
{{- $args = append $args (printf "--%s=%s" $k (include "lbc.scalar" $v)) }}
{{- end }}
{{- toYaml $args }}
{{- end }}

{{/* Where the webhook certificate comes from: `controller` (default: the controller keeps a CA and
     serving certificate in the Secret lbc.managedCertSecret and sets caBundle), `files` (webhookTLS:
     a Secret rendered from values, mounted) or `cert-manager` (enableCertManager: cert-manager writes
     the Secret, mounted; cainjector sets caBundle). */}}
{{- define "lbc.webhookCertMode" -}}
{{- $own := .Values.webhookTLS | default dict }}
{{- $given := or $own.caCert $own.cert $own.key }}
{{- if and $given .Values.enableCertManager }}
{{- fail "webhookTLS and enableCertManager are both set: keep one (webhookTLS: your own certificate; enableCertManager: cert-manager issues it; neither: the controller manages it)" }}
{{- end }}
{{- if $given }}
{{- if not (and $own.caCert $own.cert $own.key) }}{{ fail "webhookTLS: set caCert, cert and key together" }}{{ end }}
{{- "files" }}
{{- else if .Values.enableCertManager }}
{{- "cert-manager" }}
{{- else }}
{{- "controller" }}
{{- end }}
{{- end }}

{{/* The Secret the controller fills in the controller-managed mode (rendered empty by the chart). */}}
{{- define "lbc.managedCertSecret" -}}
{{- printf "%s-webhook-tls" (include "lbc.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Both webhook configurations (mutating and validating) carry this name. */}}
{{- define "lbc.webhookConfigurationName" -}}
{{- printf "%s-webhook" (include "lbc.fullname" .) }}
{{- end }}

{{/* The webhook Service's DNS names (the serving certificate's names), as a JSON list. */}}
{{- define "lbc.webhookDNSNames" -}}
{{- $svc := include "lbc.webhookService" . }}
{{- $ns := .Release.Namespace }}
{{- toJson (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.cluster.dnsDomain)) }}
{{- end }}

{{- define "lbc.webhookPort" -}}
{{- include "lbc.scalar" (.Values.webhookBindPort | default 9443) }}
{{- end }}

{{/* The metrics port: from ALBC's metricsBindAddr (`:8080`, `0.0.0.0:8080`) when set. */}}
{{- define "lbc.metricsPort" -}}
{{- with .Values.metricsBindAddr }}{{ splitList ":" . | last }}{{ else }}{{ include "lbc.scalar" .Values.metricsService.port }}{{ end }}
{{- end }}
