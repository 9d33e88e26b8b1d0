"""The upstream ALBC chart's values work in this chart under the same keys, with the same meaning.

    $HOME/.cache/aws-lb-controller/venv/bin/python -m pytest charts/tests/test_albc_values.py

- every leaf of ALBC's values.yaml is either supported here (SUPPORTED) or explained (NOT_APPLICABLE),
  so a key added upstream fails until it is classified;
- each value that maps to a controller flag renders that flag, and only when set (FLAG_CASES);
- albc-values.yaml, a production values file written for ALBC's chart, renders flag by flag
  (FILE_FLAGS) and pod spec, webhooks, RBAC and certificates as ALBC's chart means them;
- ALBC's own defaults render no ALBC-only flag and keep the controller's defaults.

ALBC's chart is read from the source snapshot of shared/peers/build-albc.sh (extracted under
~/.cache/aws-lb-controller/albc-<commit>/src, or read from the tarball); without it the
classification tests skip with the reason (a fresh clone has no snapshot), unless LBC_ALBC_REQUIRED=1.
"""

import os
import tarfile
from pathlib import Path

import pytest
import yaml

from test_chart import BASE_VALUES, CHART, KUBE_VERSION, MATRIX, REPO, by_kind, deep_merge, helm, one, render, run  # noqa: F401

ALBC_COMMIT = "225f4456"
ALBC_CHART = "helm/aws-load-balancer-controller"
ALBC_VALUES_FILE = Path(__file__).with_name("albc-values.yaml")
# The one change an ALBC values file needs: this controller's image.
OUR_IMAGE = {"image": {"repository": "harbor.corp.example/platform/aws-lb-controller", "tag": ""}}

# ALBC flags this controller parses but does not implement (reported at start-up, or refused when
# ignoring them is unsafe): lbc_model::compat::ALBC_ONLY_FLAGS.
ALBC_ONLY_FLAGS = {
    "alb-gateway-max-concurrent-reconciles", "nlb-gateway-max-concurrent-reconciles",
    "gateway-class-max-concurrent-reconciles", "globalaccelerator-max-concurrent-reconciles",
    "globalaccelerator-max-exponential-backoff-delay", "lb-stabilization-monitor-interval",
    "max-targets-per-target-group", "enable-endpoint-slices", "enable-manage-backend-security-group-rules",
    "aws-vpc-tag-key", "allowed-certificate-authority-arns",
    "default-pca-arn", "quic-environment-variable-name", "tolerate-non-existent-backend-service",
    "tolerate-non-existent-backend-action",
}

# Flags the chart always renders (not from ALBC values), with the default values.
CHART_FLAGS = [
    "--enable-leader-election=true", "--leader-election-id=aws-load-balancer-controller-leader",
    "--leader-election-namespace=kube-system", "--leader-election-lease-duration=15",
    "--health-probe-bind-addr=:61779", "--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs",
    "--log-format=json",
]

# Without webhookTLS or enableCertManager (ALBC's defaults) the controller manages the webhook certificate: these
# flags instead of --webhook-cert-dir (release `lbc` in kube-system).
_SVC = "lbc-aws-lb-controller-webhook"
MANAGED_CERT_FLAGS = [
    "--webhook-cert-mode=controller", "--webhook-cert-secret=lbc-aws-lb-controller-webhook-tls",
    "--webhook-cert-secret-namespace=kube-system",
    f"--webhook-cert-dns-names={_SVC},{_SVC}.kube-system,{_SVC}.kube-system.svc,{_SVC}.kube-system.svc.cluster.local",
    f"--mutating-webhook-configuration={_SVC}", f"--validating-webhook-configuration={_SVC}",
]

# Maps of ALBC's values.yaml the user fills freely (selectors, probes, security contexts): leaves.
FREE_FORM = {"podSecurityContext", "securityContext", "livenessProbe", "readinessProbe", "objectSelector",
             "ingressClassParams.spec", "controllerConfig.featureGates", "certManagement",
             "webhookConfig.ingressValidationObjectSelector", "webhookConfig.ingressValidationNamespaceSelector",
             "serviceMutatorWebhookConfig.objectSelector"}
# Each value that maps to a flag: an example value and the flag it renders.
FLAG_CASES = [
    ("vpcTags", {"Name": "prod-vpc", "env": "prod"}, "--aws-vpc-tags=Name=prod-vpc,env=prod"),
    ("awsApiEndpoints", "EC2=https://ec2.example", "--aws-api-endpoints=EC2=https://ec2.example"),
    ("awsApiThrottle", ["ELB v2:Register.*=4:20", "EC2:.*=10:40"], "--aws-api-throttle=ELB v2:Register.*=4:20,EC2:.*=10:40"),
    ("awsApiThrottle", "EC2:.*=10:40", "--aws-api-throttle=EC2:.*=10:40"),
    ("awsMaxRetries", 10, "--aws-max-retries=10"),
    ("ingressClass", "alb-internal", "--ingress-class=alb-internal"),
    ("defaultTargetType", "ip", "--default-target-type=ip"),
    ("defaultLoadBalancerScheme", "internet-facing", "--default-load-balancer-scheme=internet-facing"),
    ("enablePodReadinessGateInject", False, "--enable-pod-readiness-gate-inject=false"),
    ("enableShield", True, "--enable-shield=true"),
    ("enableWaf", False, "--enable-waf=false"),
    ("enableWafv2", False, "--enable-wafv2=false"),
    ("ingressMaxConcurrentReconciles", 7, "--ingress-max-concurrent-reconciles=7"),
    ("serviceMaxConcurrentReconciles", 4, "--service-max-concurrent-reconciles=4"),
    ("targetgroupbindingMaxConcurrentReconciles", 12, "--targetgroupbinding-max-concurrent-reconciles=12"),
    ("targetgroupbindingMaxExponentialBackoffDelay", "16m40s", "--targetgroupbinding-max-exponential-backoff-delay=16m40s"),
    ("targetgroupbindingRequeueDuration", "15s", "--targetgroupbinding-requeue-duration=15s"),
    ("albGatewayMaxConcurrentReconciles", 3, "--alb-gateway-max-concurrent-reconciles=3"),
    ("nlbGatewayMaxConcurrentReconciles", 3, "--nlb-gateway-max-concurrent-reconciles=3"),
    ("globalAcceleratorMaxConcurrentReconciles", 1, "--globalaccelerator-max-concurrent-reconciles=1"),
    ("globalAcceleratorMaxExponentialBackoffDelay", "16m40s", "--globalaccelerator-max-exponential-backoff-delay=16m40s"),
    ("lbStabilizationMonitorInterval", "2m", "--lb-stabilization-monitor-interval=2m"),
    ("syncPeriod", "10h0m0s", "--sync-period=10h0m0s"),
    ("watchNamespace", "apps", "--watch-namespace=apps"),
    ("disableIngressClassAnnotation", True, "--disable-ingress-class-annotation=true"),
    ("disableIngressGroupNameAnnotation", False, "--disable-ingress-group-name-annotation=false"),
    ("tolerateNonExistentBackendService", False, "--tolerate-non-existent-backend-service=false"),
    ("tolerateNonExistentBackendAction", True, "--tolerate-non-existent-backend-action=true"),
    ("defaultSSLPolicy", "ELBSecurityPolicy-TLS13-1-2-2021-06", "--default-ssl-policy=ELBSecurityPolicy-TLS13-1-2-2021-06"),
    ("defaultTags", {"team": "a", "cost-center": 40071234, "env": "prod"}, "--default-tags=cost-center=40071234,env=prod,team=a"),
    ("externalManagedTags", ["Owner", "Team"], "--external-managed-tags=Owner,Team"),
    ("enableEndpointSlices", True, "--enable-endpoint-slices=true"),
    ("enableBackendSecurityGroup", False, "--enable-backend-security-group=false"),
    ("enableManageBackendSecurityGroupRules", True, "--enable-manage-backend-security-group-rules=true"),
    ("backendSecurityGroup", "sg-0123456789abcdef0", "--backend-security-group=sg-0123456789abcdef0"),
    ("disableRestrictedSecurityGroupRules", True, "--disable-restricted-sg-rules=true"),
    ("maxTargetsPerTargetGroup", 1000000, "--max-targets-per-target-group=1000000"),
    ("controllerConfig.featureGates", {"NLBSecurityGroup": False, "ALBSingleSubnet": True},
     "--feature-gates=ALBSingleSubnet=true,NLBSecurityGroup=false"),
    ("certDiscovery.allowedCertificateAuthorityARNs", "arn:aws:acm-pca:ap-northeast-2:123456789012:certificate-authority/a",
     "--allowed-certificate-authority-arns=arn:aws:acm-pca:ap-northeast-2:123456789012:certificate-authority/a"),
    ("certManagement.defaultPCAARN", "arn:aws:acm-pca:ap-northeast-2:123456789012:certificate-authority/b",
     "--default-pca-arn=arn:aws:acm-pca:ap-northeast-2:123456789012:certificate-authority/b"),
    ("serviceTargetENISGTags", "team=a,tier=web", "--service-target-eni-security-group-tags=team=a,tier=web"),
    ("loadBalancerClass", "service.k8s.aws/nlb-internal", "--load-balancer-class=service.k8s.aws/nlb-internal"),
    ("enableServiceMutatorWebhook", False, "--enable-service-mutator-webhook=false"),
    ("logLevel", "debug", "--log-level=debug"),
    ("metricsBindAddr", ":9090", "--metrics-bind-addr=:9090"),
    ("webhookBindPort", 10443, "--webhook-bind-port=10443"),
]
# Every leaf of ALBC's values.yaml this chart supports, and where it goes.
SUPPORTED = {"clusterName": "--cluster-name", "region": "--aws-region", "vpcId": "--aws-vpc-id"} | {
    # certManagement is an empty map in ALBC's values.yaml: a leaf.
    k.split(".")[0] if k.startswith("certManagement.") else k: f.split("=", 1)[0] for k, _, f in FLAG_CASES} | {
    "replicaCount": "Deployment replicas", "revisionHistoryLimit": "Deployment", "runtimeClassName": "pod spec",
    "image.repository": "container image (must name this controller's image)", "image.tag": "container image",
    "image.pullPolicy": "container", "imagePullSecrets": "pod spec", "nameOverride": "names",
    "fullnameOverride": "names", "autoscaling.enabled": "HorizontalPodAutoscaler",
    "autoscaling.minReplicas": "HPA", "autoscaling.maxReplicas": "HPA",
    "autoscaling.targetCPUUtilizationPercentage": "HPA", "serviceAccount.create": "ServiceAccount",
    "serviceAccount.annotations": "ServiceAccount", "serviceAccount.name": "ServiceAccount",
    "serviceAccount.automountServiceAccountToken": "ServiceAccount",
    "serviceAccount.imagePullSecrets": "ServiceAccount", "rbac.create": "RBAC",
    "podSecurityContext": "pod spec", "securityContext": "container", "terminationGracePeriodSeconds": "pod spec",
    "resources": "container", "priorityClassName": "pod spec", "nodeSelector": "pod spec",
    "tolerations": "pod spec", "affinity": "pod spec", "configureDefaultAffinity": "pod spec",
    "topologySpreadConstraints": "pod spec", "updateStrategy": "Deployment strategy",
    "serviceAnnotations": "webhook Service", "deploymentAnnotations": "Deployment",
    "podAnnotations": "pod", "podLabels": "pod", "additionalLabels": "every object",
    "enableCertManager": "Certificate", "certManager.duration": "Certificate",
    "certManager.renewBefore": "Certificate", "certManager.revisionHistoryLimit": "Certificate",
    "certManager.rootCert.duration": "root CA Certificate",
    "cluster.dnsDomain": "webhook certificate names", "ingressClassParams.create": "IngressClassParams",
    "ingressClassParams.name": "IngressClassParams", "ingressClassParams.spec": "IngressClassParams",
    "createIngressClassResource": "IngressClass", "webhookConfig.disableIngressValidation": "vingress webhook",
    "webhookConfig.ingressValdationFailurePolicy": "vingress webhook",
    "webhookConfig.ingressValidationObjectSelector": "vingress webhook",
    "webhookConfig.ingressValidationNamespaceSelector": "vingress webhook",
    "webhookTLS.caCert": "webhook certificate", "webhookTLS.cert": "webhook certificate",
    "webhookTLS.key": "webhook certificate", "keepTLSSecret": "webhook certificate",
    "webhookNamespaceSelectors": "mpod webhook", "livenessProbe": "container", "readinessProbe": "container",
    "env": "container", "hostNetwork": "pod spec", "dnsPolicy": "pod spec", "extraVolumeMounts": "container",
    "extraVolumes": "pod spec", "podDisruptionBudget": "PodDisruptionBudget", "objectSelector": "mpod webhook",
    "serviceMonitor.enabled": "ServiceMonitor", "serviceMonitor.namespace": "ServiceMonitor",
    "serviceMonitor.additionalLabels": "ServiceMonitor", "serviceMonitor.interval": "ServiceMonitor",
    "serviceMonitor.scrapeTimeout": "ServiceMonitor", "serviceMonitor.relabelings": "ServiceMonitor",
    "serviceMonitor.metricRelabelings": "ServiceMonitor",
    "clusterSecretsPermissions.allowAllSecrets": "ClusterRole (secrets get)",
    "ingressClassConfig.default": "IngressClass", "serviceMutatorWebhookConfig.failurePolicy": "mservice webhook",
    "serviceMutatorWebhookConfig.objectSelector": "mservice webhook",
    "serviceMutatorWebhookConfig.namespaceSelectors": "mservice webhook",
    "serviceMutatorWebhookConfig.operations": "mservice webhook",
    "podMutatorWebhookConfig.failurePolicy": "mpod webhook",
}
# Keys ALBC's chart reads but only mentions in comments of its values.yaml (so not leaves above).
COMMENTED = {"envSecretName": "container env (AWS keys)", "envFrom": "container", "creator": "labels",
             "certManager.issuerRef": "Certificate", "autoscaling.autoscaleBehavior": "HPA"}
NOT_APPLICABLE: dict[str, str] = {}


def albc_chart_text(name):
    """A file of ALBC's chart from the build-albc.sh snapshot: its extracted source, or the tarball."""
    src = Path(os.environ.get("LBC_ALBC_SRC", Path.home() / f".cache/aws-lb-controller/albc-{ALBC_COMMIT}/src"))
    if (src / ALBC_CHART / name).exists():
        return (src / ALBC_CHART / name).read_text()
    tarball = REPO.parent / f"shared/peers/aws-load-balancer-controller-{ALBC_COMMIT}.tar.gz"
    if tarball.exists():
        with tarfile.open(tarball) as t:
            member = next(m for m in t.getmembers() if m.name.endswith(f"/{ALBC_CHART}/{name}"))
            return t.extractfile(member).read().decode()
    why = f"ALBC's chart not found ({src}, {tarball}): run shared/peers/build-albc.sh or set LBC_ALBC_SRC"
    # The snapshot sits beside the project on development machines, not in a fresh clone (CI):
    # there the classification skips with this reason unless LBC_ALBC_REQUIRED=1 asks for it.
    if os.environ.get("LBC_ALBC_REQUIRED") == "1":
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def albc_defaults():
    return yaml.safe_load(albc_chart_text("values.yaml"))


def leaves(values, prefix=""):
    for k, v in values.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict) and v and path not in FREE_FORM:
            yield from leaves(v, f"{path}.")
        else:
            yield path


def has_path(values, path):
    for k in path.split("."):
        if not isinstance(values, dict) or k not in values:
            return False
        values = values[k]
    return True


def nested(path, value):
    for k in reversed(path.split(".")):
        value = {k: value}
    return value


def args_of(docs):
    return one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]


# ---------------------------------------------------------------------------------------------
# classification


def test_every_albc_value_is_classified(albc_defaults):
    albc = set(leaves(albc_defaults))
    unclassified = albc - set(SUPPORTED) - set(NOT_APPLICABLE)
    assert not unclassified, f"ALBC chart values neither supported nor in NOT_APPLICABLE: {sorted(unclassified)}"
    stale = (set(SUPPORTED) | set(NOT_APPLICABLE)) - albc
    assert not stale, f"classified but not in ALBC's values.yaml (renamed or removed upstream?): {sorted(stale)}"
    assert not set(SUPPORTED) & set(NOT_APPLICABLE)
    text = albc_chart_text("values.yaml") + albc_chart_text("templates/deployment.yaml") + \
        albc_chart_text("templates/hpa.yaml") + albc_chart_text("templates/_helpers.tpl")
    assert all(k.split(".")[-1] in text for k in COMMENTED), "COMMENTED lists a key ALBC's chart never mentions"


def test_supported_values_are_documented_here():
    ours = yaml.safe_load((CHART / "values.yaml").read_text())
    missing = [k for k in list(SUPPORTED) + list(COMMENTED) if not has_path(ours, k)
               and k not in ("certManager.issuerRef", "envFrom")]
    assert not missing, f"supported ALBC keys without a default and comment in values.yaml: {missing}"
    assert has_path(ours, "certManager.issuerRef") and has_path(ours, "envFrom")
    for key in NOT_APPLICABLE:
        assert not has_path(ours, key), f"{key} is classified not applicable but is in values.yaml"


# ---------------------------------------------------------------------------------------------
# value -> flag

# Rendered whatever the value (the chart needs the port); null falls back to the chart's default.
ALWAYS_RENDERED = {"metricsBindAddr", "webhookBindPort", "clusterName", "region"}


def flag_renders(helm, tmp_path, cases):
    """Renders all cases in one values file; returns {key: the args of that key's flag}."""
    values = {}
    for key, value, _ in cases:
        values = deep_merge(values, nested(key, value))
    args = args_of(render(helm, tmp_path, values))
    return {key: [a for a in args if a.startswith(flag.split("=", 1)[0] + "=")] for key, _, flag in cases}


def test_each_value_renders_its_flag(helm, tmp_path):
    # awsApiThrottle twice (a list, one string): two renders.
    for cases in (FLAG_CASES[:3] + FLAG_CASES[4:], FLAG_CASES[3:4]):
        found = flag_renders(helm, tmp_path, cases)
        wrong = {key: found[key] for key, _, flag in cases if found[key] != [flag]}
        assert not wrong, f"value -> rendered flag, expected {[c for c in cases if c[0] in wrong]}: {wrong}"


@pytest.mark.parametrize("empty", [None, ""])
def test_unset_values_render_no_flag(helm, tmp_path, empty):
    cases = [(key, empty, flag) for key, _, flag in FLAG_CASES if key not in ALWAYS_RENDERED | {"ingressClass"}]
    found = flag_renders(helm, tmp_path, cases)
    assert not {k: v for k, v in found.items() if v}


def test_vpc_tags_stand_in_for_the_vpc_id(helm, tmp_path):
    args = args_of(render(helm, tmp_path, {"vpcId": "", "vpcTags": {"Name": "prod-vpc", "env": "prod"}}))
    assert "--aws-vpc-tags=Name=prod-vpc,env=prod" in args and not [a for a in args if a.startswith("--aws-vpc-id")]


def test_defaults_keep_the_controllers_defaults(helm, tmp_path):
    args = args_of(render(helm, tmp_path, {}))
    assert args == ["--cluster-name=e2e-cluster", "--aws-region=us-east-1", "--aws-vpc-id=vpc-0123456789abcdef0",
                    "--ingress-class=alb", "--enable-service-mutator-webhook=true", *CHART_FLAGS[:4],
                    "--metrics-bind-addr=:8080", *CHART_FLAGS[4:5], "--webhook-bind-port=9443",
                    *MANAGED_CERT_FLAGS, "--log-level=info", *CHART_FLAGS[6:]]


@pytest.mark.parametrize("case", MATRIX)
def test_no_albc_only_flag_unless_asked(helm, tmp_path, case):
    args = args_of(render(helm, tmp_path, MATRIX[case]))
    assert not [a for a in args if a[2:].split("=", 1)[0] in ALBC_ONLY_FLAGS]


def test_albc_defaults_render_no_albc_only_flag(helm, tmp_path, albc_defaults):
    """ALBC's values.yaml as is (its defaults), with the required values and our image."""
    required = {"clusterName": "prod-meta", "region": "ap-northeast-2", "vpcId": "vpc-0a1b2c3d4e5f60718"}
    docs = render(helm, tmp_path, deep_merge(albc_defaults, {**required, **OUR_IMAGE}))
    args = args_of(docs)
    assert not [a for a in args if a[2:].split("=", 1)[0] in ALBC_ONLY_FLAGS], args
    # ALBC's chart renders --default-target-type only when not `instance`; `instance` is also ours.
    assert args == ["--cluster-name=prod-meta", "--aws-region=ap-northeast-2", "--aws-vpc-id=vpc-0a1b2c3d4e5f60718",
                    "--ingress-class=alb", "--default-target-type=instance", "--enable-service-mutator-webhook=true",
                    *CHART_FLAGS[:4], "--metrics-bind-addr=:8080", *CHART_FLAGS[4:5], "--webhook-bind-port=9443",
                    *MANAGED_CERT_FLAGS, *CHART_FLAGS[6:]]
    # ALBC's default: no cluster-wide access to Secrets.
    assert ("", "secrets") not in {(g, r) for rule in one(docs, "ClusterRole")["rules"]
                                   for g in rule["apiGroups"] for r in rule["resources"]}


def test_albc_values_files_lint(helm, tmp_path, albc_defaults):
    """`helm lint --strict` with ALBC's defaults and with the production file, each plus our image."""
    image = tmp_path / "image.yaml"
    image.write_text(yaml.safe_dump(OUR_IMAGE))
    defaults = tmp_path / "albc-defaults.yaml"
    defaults.write_text(yaml.safe_dump(deep_merge(albc_defaults, {"clusterName": "c", "region": "r", "vpcId": "vpc-1"})))
    for values in (defaults, ALBC_VALUES_FILE):
        run([helm, "lint", "--strict", "--kube-version", KUBE_VERSION, CHART, "-f", values, "-f", image])


def test_albc_image_is_refused(helm, tmp_path, albc_defaults):
    p = render(helm, tmp_path, deep_merge(albc_defaults, {"clusterName": "c", "region": "r", "vpcId": "vpc-1"}),
               check=False)
    assert p.returncode != 0 and "is the upstream AWS Load Balancer Controller's image" in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
# a production ALBC values file

FILE_FLAGS = {
    "clusterName": "--cluster-name=prod-meta",
    "region": "--aws-region=ap-northeast-2",
    "vpcId": "--aws-vpc-id=vpc-0a1b2c3d4e5f60718",
    "awsApiEndpoints": "--aws-api-endpoints=Elastic Load Balancing v2=https://vpce-0a1b2c3d.elasticloadbalancing."
                       "ap-northeast-2.vpce.amazonaws.com,EC2=https://vpce-0d4c3b2a.ec2.ap-northeast-2.vpce.amazonaws.com",
    "awsApiThrottle": "--aws-api-throttle=Elastic Load Balancing v2:RegisterTargets|DeregisterTargets=4:20,"
                      "Elastic Load Balancing v2:.*=10:40",
    "awsMaxRetries": "--aws-max-retries=10",
    "ingressClass": "--ingress-class=alb",
    "disableIngressClassAnnotation": "--disable-ingress-class-annotation=true",
    "disableIngressGroupNameAnnotation": "--disable-ingress-group-name-annotation=false",
    "defaultSSLPolicy": "--default-ssl-policy=ELBSecurityPolicy-TLS13-1-2-2021-06",
    "defaultTargetType": "--default-target-type=ip",
    "defaultLoadBalancerScheme": "--default-load-balancer-scheme=internal",
    "loadBalancerClass": "--load-balancer-class=service.k8s.aws/nlb",
    "enableServiceMutatorWebhook": "--enable-service-mutator-webhook=false",
    "enablePodReadinessGateInject": "--enable-pod-readiness-gate-inject=true",
    "enableShield": "--enable-shield=false",
    "enableWaf": "--enable-waf=false",
    "enableWafv2": "--enable-wafv2=true",
    "ingressMaxConcurrentReconciles": "--ingress-max-concurrent-reconciles=5",
    "serviceMaxConcurrentReconciles": "--service-max-concurrent-reconciles=5",
    "targetgroupbindingMaxConcurrentReconciles": "--targetgroupbinding-max-concurrent-reconciles=10",
    "targetgroupbindingMaxExponentialBackoffDelay": "--targetgroupbinding-max-exponential-backoff-delay=5m",
    "targetgroupbindingRequeueDuration": "--targetgroupbinding-requeue-duration=15s",
    "syncPeriod": "--sync-period=1h",
    "tolerateNonExistentBackendService": "--tolerate-non-existent-backend-service=true",
    "tolerateNonExistentBackendAction": "--tolerate-non-existent-backend-action=true",
    "defaultTags": "--default-tags=cost-center=40071234,environment=prod,platform=meta",
    "externalManagedTags": "--external-managed-tags=Owner,backup-policy",
    "enableEndpointSlices": "--enable-endpoint-slices=true",
    "enableBackendSecurityGroup": "--enable-backend-security-group=true",
    "enableManageBackendSecurityGroupRules": "--enable-manage-backend-security-group-rules=false",
    "backendSecurityGroup": "--backend-security-group=sg-0f1e2d3c4b5a69788",
    "disableRestrictedSecurityGroupRules": "--disable-restricted-sg-rules=false",
    "serviceTargetENISGTags": "--service-target-eni-security-group-tags=platform.corp.example/pod-traffic=allowed",
    "controllerConfig.featureGates": "--feature-gates=EnableRGTAPI=false,NLBSecurityGroup=true,"
                                     "ServiceTypeLoadBalancerOnly=false,SubnetsClusterTagCheck=true",
    "logLevel": "--log-level=info",
    "metricsBindAddr": "--metrics-bind-addr=:8080",
    "webhookBindPort": "--webhook-bind-port=9443",
}


@pytest.fixture(scope="module")
def albc_file_docs(helm, tmp_path_factory):
    values = deep_merge(yaml.safe_load(ALBC_VALUES_FILE.read_text()), OUR_IMAGE)
    return render(helm, tmp_path_factory.mktemp("albc"), values)


def test_albc_values_file_flag_by_flag(albc_file_docs):
    args = args_of(albc_file_docs)
    wrong = {k: f for k, f in FILE_FLAGS.items() if args.count(f) != 1}
    assert not wrong, f"flags missing or repeated: {wrong}\nargs: {args}"
    assert sorted(set(args) - set(FILE_FLAGS.values())) == sorted(CHART_FLAGS)
    assert len(args) == len(FILE_FLAGS) + len(CHART_FLAGS)


def test_albc_values_file_pod_and_objects(albc_file_docs):
    docs = albc_file_docs
    dep = one(docs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert dep["spec"]["replicas"] == 2 and dep["spec"]["revisionHistoryLimit"] == 3
    assert dep["metadata"]["annotations"] == {"argocd.argoproj.io/sync-wave": "-5"}
    assert dep["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert pod["runtimeClassName"] == "runc" and pod["dnsPolicy"] == "ClusterFirst" and "hostNetwork" not in pod
    assert pod["imagePullSecrets"] == [{"name": "harbor-pull"}] and pod["priorityClassName"] == "system-cluster-critical"
    assert pod["serviceAccountName"] == "aws-load-balancer-controller"
    assert pod["tolerations"][0]["key"] == "node.cloudprovider.kubernetes.io/uninitialized"
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
    assert pod["terminationGracePeriodSeconds"] == 10
    assert dep["spec"]["template"]["metadata"]["labels"]["platform.corp.example/component"] == "load-balancing"
    assert dep["spec"]["template"]["metadata"]["annotations"]["platform.corp.example/tier"] == "ingress"
    assert c["image"] == "harbor.corp.example/platform/aws-lb-controller:0.1.0"
    assert c["livenessProbe"]["httpGet"]["port"] == 61779 and c["livenessProbe"]["initialDelaySeconds"] == 30
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 61779, "scheme": "HTTP"}
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"webhook": 9443, "metrics": 8080, "health": 61779}
    assert c["resources"]["limits"]["memory"] == "1Gi"
    assert {"name": "AWS_STS_REGIONAL_ENDPOINTS", "value": "regional"} in c["env"]
    # additionalLabels on every object the chart renders (CRDs come from crds/ as they are).
    unlabelled = [d["kind"] for d in docs if d["kind"] != "CustomResourceDefinition"
                  and d["metadata"].get("labels", {}).get("app.kubernetes.io/part-of") != "platform-ingress"]
    assert not unlabelled, unlabelled
    sa = one(docs, "ServiceAccount")
    assert sa["imagePullSecrets"] == [{"name": "harbor-pull"}]
    assert sa["metadata"]["annotations"] == {"platform.corp.example/owner": "network-team"}
    assert one(docs, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    assert not by_kind(docs, "HorizontalPodAutoscaler")
    svc = next(d for d in by_kind(docs, "Service") if d["metadata"]["name"].endswith("-webhook"))
    assert svc["metadata"]["annotations"] == {"platform.corp.example/purpose": "admission-webhook"}
    sm = one(docs, "ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert sm["spec"]["endpoints"][0]["metricRelabelings"][0]["regex"] == "go_gc_.*"
    assert sm["spec"]["endpoints"][0]["interval"] == "30s"
    cls, icp = one(docs, "IngressClass"), one(docs, "IngressClassParams")
    assert cls["metadata"]["annotations"]["ingressclass.kubernetes.io/is-default-class"] == "true"
    assert icp["spec"] == {"scheme": "internal", "group": {"name": "platform"}}
    # allowAllSecrets: false -> no cluster-wide Secrets access.
    assert ("", "secrets") not in {(g, r) for rule in one(docs, "ClusterRole")["rules"]
                                   for g in rule["apiGroups"] for r in rule["resources"]}


def test_albc_values_file_webhooks_and_certificate(albc_file_docs):
    docs = albc_file_docs
    hooks = {w["name"]: w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]}
    assert "mservice.elbv2.k8s.aws" not in hooks  # enableServiceMutatorWebhook: false
    mpod = hooks["mpod.elbv2.k8s.aws"]
    assert mpod["failurePolicy"] == "Ignore"
    assert mpod["namespaceSelector"]["matchExpressions"] == [
        {"key": "elbv2.k8s.aws/pod-readiness-gate-inject", "operator": "In", "values": ["enabled"]},
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]
    assert mpod["objectSelector"]["matchExpressions"] == [
        {"key": "platform.corp.example/readiness-gate", "operator": "NotIn", "values": ["disabled"]},
        {"key": "app.kubernetes.io/name", "operator": "NotIn", "values": ["aws-lb-controller"]}]
    ving = hooks["vingress.elbv2.k8s.aws"]
    assert ving["failurePolicy"] == "Fail" and "objectSelector" not in ving
    assert ving["namespaceSelector"] == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]}
    cert = one(docs, "Certificate")
    assert cert["spec"]["renewBefore"] == "720h0m0s" and cert["spec"]["duration"] == "8760h0m0s"
    assert cert["spec"]["issuerRef"] == {"kind": "ClusterIssuer", "name": "platform-ca"}
    assert cert["spec"]["dnsNames"][-1] == "lbc-aws-lb-controller-webhook.kube-system.svc.cluster.local"
    assert not by_kind(docs, "Issuer") and not by_kind(docs, "Secret")


# ---------------------------------------------------------------------------------------------
# single values

def test_autoscaling_renders_an_hpa_instead_of_replicas(helm, tmp_path):
    docs = render(helm, tmp_path, {"autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 6,
                                                   "autoscaleBehavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}}})
    hpa = one(docs, "HorizontalPodAutoscaler")
    assert "replicas" not in one(docs, "Deployment")["spec"]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "lbc-aws-lb-controller"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    assert hpa["spec"]["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 80}
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 600
    assert one(docs, "PodDisruptionBudget")  # two replicas at least
    docs = render(helm, tmp_path, {"autoscaling": {"enabled": True, "minReplicas": 1}})
    assert not by_kind(docs, "PodDisruptionBudget")


def test_host_network_resolves_cluster_names(helm, tmp_path):
    pod = one(render(helm, tmp_path, {"hostNetwork": True}), "Deployment")["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert "dnsPolicy" not in one(render(helm, tmp_path, {}), "Deployment")["spec"]["template"]["spec"]


def test_metrics_bind_addr_moves_the_metrics_port(helm, tmp_path):
    dep = one(render(helm, tmp_path, {"metricsBindAddr": "0.0.0.0:9090"}), "Deployment")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert {p["name"]: p["containerPort"] for p in c["ports"]}["metrics"] == 9090
    assert dep["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == "9090"


def test_env_secret_name_reads_albc_key_names(helm, tmp_path):
    c = one(render(helm, tmp_path, {"envSecretName": "aws-secret"}), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in c["env"]}
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"] == {"name": "aws-secret", "key": "key_id"}
    assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "aws-secret", "key": "access_key"}


def test_creator_leaves_out_helm_labels(helm, tmp_path):
    labels = one(render(helm, tmp_path, {"creator": "platform-team"}), "Deployment")["metadata"]["labels"]
    assert "helm.sh/chart" not in labels and "app.kubernetes.io/managed-by" not in labels
    assert labels["app.kubernetes.io/name"] == "aws-lb-controller"


def test_ingress_validation_can_be_left_out(helm, tmp_path):
    docs = render(helm, tmp_path, {"webhookConfig": {"disableIngressValidation": True}})
    hooks = {w["name"] for d in by_kind(docs, "ValidatingWebhookConfiguration") for w in d["webhooks"]}
    assert hooks == {"vtargetgroupbinding.elbv2.k8s.aws", "vingressclassparams.elbv2.k8s.aws"}


def test_service_mutator_namespace_selectors(helm, tmp_path):
    expr = [{"key": "team", "operator": "In", "values": ["a"]}]
    docs = render(helm, tmp_path, {"serviceMutatorWebhookConfig": {"namespaceSelectors": expr}})
    hooks = {w["name"]: w for d in by_kind(docs, "MutatingWebhookConfiguration") for w in d["webhooks"]}
    assert hooks["mservice.elbv2.k8s.aws"]["namespaceSelector"] == {"matchExpressions": expr}


def test_ingress_namespace_selector_keeps_watch_namespace(helm, tmp_path):
    sel = {"matchExpressions": [{"key": "team", "operator": "Exists"}]}
    docs = render(helm, tmp_path, {"watchNamespace": "apps", "webhookConfig": {"ingressValidationNamespaceSelector": sel}})
    ving = next(w for d in by_kind(docs, "ValidatingWebhookConfiguration") for w in d["webhooks"]
                if w["name"] == "vingress.elbv2.k8s.aws")
    assert ving["namespaceSelector"] == {**sel, "matchLabels": {"kubernetes.io/metadata.name": "apps"}}


@pytest.mark.parametrize("overrides, message", [
    ({"syncPeriod": "1h", "extraArgs": {"sync-period": "5m"}},
     "extraArgs.sync-period duplicates --sync-period, which the value syncPeriod renders"),
    ({"extraArgs": {"log-format": "text"}}, "extraArgs.log-format duplicates --log-format, which the chart renders itself"),
    ({"envSecretName": "aws-secret", "awsCredentials": {"source": "file", "secretName": "f"}},
     "envSecretName (ALBC) and awsCredentials.source=file both set the AWS credentials"),
    ({"image": {"repository": "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-load-balancer-controller"}},
     "is the upstream AWS Load Balancer Controller's image"),
])
def test_conflicting_values_fail_with_a_message(helm, tmp_path, overrides, message):
    p = render(helm, tmp_path, overrides, check=False)
    assert p.returncode != 0 and message in p.stderr, p.stderr
