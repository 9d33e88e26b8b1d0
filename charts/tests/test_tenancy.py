"""The tenancy switch and policy (docs/security.md) as the chart renders them: the mode flag when not the
controller's default (compatible), the policy
as a ConfigMap mounted read-only with its file flag only when a policy is given, a pod-template checksum that rolls
the pods when the policy changes (the controller reads it at start), and a precise error for a mode that is not one.
"""
import json

from test_chart import by_kind, one, render  # noqa: F401
from test_chart import helm  # noqa: F401  (fixture)

POLICY = {"assumeRoles": [{"namespaces": ["team-a"], "roleArns": ["arn:aws:iam::444455556666:role/lbc/team-a/*"]}],
          "ingressGroups": [{"group": "shared", "namespaces": ["team-a", "team-b"], "owner": "team-a"}]}


def controller(docs):
    return one(docs, "Deployment")["spec"]["template"]


def args_of(docs):
    return controller(docs)["spec"]["containers"][0]["args"]


def test_compatible_by_default_without_a_policy_file(helm, tmp_path):
    docs = render(helm, tmp_path, {})
    args = args_of(docs)
    assert not [a for a in args if a.startswith("--tenancy-mode")], "compatible is the controller's default"
    assert not [a for a in args if a.startswith("--tenancy-policy-file")]
    assert not [c for c in by_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-tenancy")]
    assert "checksum/tenancy-policy" not in (controller(docs)["metadata"].get("annotations") or {})


def test_a_policy_is_mounted_read_only_and_named_by_the_flag(helm, tmp_path):
    docs = render(helm, tmp_path, {"tenancy": {"mode": "strict", "policy": POLICY}})
    args = args_of(docs)
    assert "--tenancy-mode=strict" in args
    assert "--tenancy-policy-file=/etc/aws-lb-controller/tenancy/policy.json" in args
    cm = [c for c in by_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-tenancy")]
    assert len(cm) == 1
    assert json.loads(cm[0]["data"]["policy.json"]) == POLICY
    spec = controller(docs)["spec"]
    mount = [m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "tenancy-policy"]
    assert mount == [{"name": "tenancy-policy", "mountPath": "/etc/aws-lb-controller/tenancy", "readOnly": True}]
    volume = [v for v in spec["volumes"] if v["name"] == "tenancy-policy"]
    assert volume[0]["configMap"]["name"] == cm[0]["metadata"]["name"]


def test_a_changed_policy_rolls_the_pods(helm, tmp_path):
    def checksum(policy):
        docs = render(helm, tmp_path, {"tenancy": {"mode": "strict", "policy": policy}})
        return controller(docs)["metadata"]["annotations"]["checksum/tenancy-policy"]
    other = {**POLICY, "assumeRoles": [{"namespaces": ["team-b"], "roleArns": ["arn:aws:iam::444455556666:role/b"]}]}
    assert checksum(POLICY) == checksum(POLICY), "deterministic (ArgoCD renders it again and again)"
    assert checksum(POLICY) != checksum(other)


def test_a_mode_that_is_not_one_is_refused_with_the_choices(helm, tmp_path):
    p = render(helm, tmp_path, {"tenancy": {"mode": "Strict"}}, check=False)
    assert p.returncode != 0
    assert "tenancy.mode=Strict is not a mode: expected compatible" in p.stderr, p.stderr
