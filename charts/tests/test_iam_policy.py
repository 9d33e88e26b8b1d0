"""docs/iam-policy.json: exactly the actions the code calls, and tag conditions on every write.

    $HOME/.cache/aws-lb-controller/venv/bin/python -m pytest charts/tests/test_iam_policy.py

Needs cargo (SDK sources, for the list of operations) and jq (the cluster-pinning command of
docs/iam.md); no e2e environment. docs/iam.md explains the conditions and the exceptions below.
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_chart import CHART, REPO, cargo_metadata

POLICY = REPO / "docs/iam-policy.json"
CLUSTER_TAG = "elbv2.k8s.aws/cluster"

# SDK crate -> IAM service prefix.
SDK_IAM = {"aws-sdk-elasticloadbalancingv2": "elasticloadbalancing", "aws-sdk-ec2": "ec2", "aws-sdk-sts": "sts",
           "aws-sdk-acm": "acm", "aws-sdk-wafv2": "wafv2", "aws-sdk-wafregional": "waf-regional",
           "aws-sdk-shield": "shield", "aws-sdk-route53": "route53"}

# Permissions AWS checks on top of the called operation (no SDK call of their own).
IMPLIED = {
    # WAF asks the load balancer's service too before (dis)associating a web ACL with an ALB.
    "wafv2:associatewebacl": {"elasticloadbalancing:setwebacl"},
    "wafv2:disassociatewebacl": {"elasticloadbalancing:setwebacl"},
    "waf-regional:associatewebacl": {"elasticloadbalancing:setwebacl"},
    "waf-regional:disassociatewebacl": {"elasticloadbalancing:setwebacl"},
    # ACM asks for the tagging permission when RequestCertificate or ImportCertificate carries tags.
    "acm:requestcertificate": {"acm:addtagstocertificate"},
    "acm:importcertificate": {"acm:addtagstocertificate"},
}

# Tagging AWS authorises only as part of a create (the controller never calls it on its own): conditioned on
# the request tag like the create itself, since the resource has no tags yet.
TAG_ON_CREATE = {"acm:AddTagsToCertificate"}

# Actions AWS answers without any IAM permission (doctor's STS GetCallerIdentity: AWS documents that no
# permission is required, and it works even under an explicit deny), so the policy does not grant them.
NO_PERMISSION_NEEDED = {"sts:getcalleridentity"}

# Verbs that create, change or delete something.
WRITE = re.compile(r"^(Create|Delete|Modify|Set|Add|Remove|Register|Deregister|Authorize|Revoke|Associate|Change|Request|"
                   r"Import|Disassociate)")

# Writes allowed without an `elbv2.k8s.aws/cluster` condition: (action, resource) -> why.
UNCONDITIONED = {
    # TargetGroupBindings register pods in target groups made elsewhere (Terraform) that carry none
    # of our tags, as in ALBC. The webhook and the reconciler decide which groups a binding may use.
    ("elasticloadbalancing:RegisterTargets", "arn:aws:elasticloadbalancing:*:*:targetgroup/*/*"):
        "target groups made outside the controller",
    ("elasticloadbalancing:DeregisterTargets", "arn:aws:elasticloadbalancing:*:*:targetgroup/*/*"):
        "target groups made outside the controller",
    # The web ACL is the user's; the load balancer side is checked by the conditioned SetWebAcl.
    ("wafv2:AssociateWebACL", "*"): "the ALB side is conditioned through elasticloadbalancing:SetWebAcl",
    ("wafv2:DisassociateWebACL", "*"): "the ALB side is conditioned through elasticloadbalancing:SetWebAcl",
    ("waf-regional:AssociateWebACL", "*"): "the ALB side is conditioned through elasticloadbalancing:SetWebAcl",
    ("waf-regional:DisassociateWebACL", "*"): "the ALB side is conditioned through elasticloadbalancing:SetWebAcl",
    # A protection has no tags IAM can tie to its load balancer's; the controller creates protections only
    # for its own ALBs and deletes only those it named (lbc_model::lb::extras::ShieldProtection::is_ours).
    ("shield:CreateProtection", "*"): "Shield protections carry no load balancer tags",
    ("shield:DeleteProtection", "*"): "Shield protections carry no load balancer tags",
    # Listeners and rules: IAM cannot tie them to their load balancer's tags, and the controller
    # adopts the untagged ones of its own load balancers (made by ALBC before it tagged them; a rule
    # nobody wants on our listener is deleted, tagged or not, as in ALBC), so a resource-tag condition
    # would fail on exactly those. Their load balancer itself is conditioned.
    **{(f"elasticloadbalancing:{a}", "*"): "listeners and rules are adopted untagged with their load balancer"
       for a in ("CreateListener", "ModifyListener", "ModifyListenerAttributes", "DeleteListener",
                 "AddListenerCertificates", "RemoveListenerCertificates", "CreateRule", "ModifyRule",
                 "SetRulePriorities", "DeleteRule")},
    **{(f"elasticloadbalancing:{a}", r): "tagging adopted listeners and rules"
       for a in ("AddTags", "RemoveTags")
       for r in ("arn:aws:elasticloadbalancing:*:*:listener/app/*/*/*",
                 "arn:aws:elasticloadbalancing:*:*:listener/net/*/*/*",
                 "arn:aws:elasticloadbalancing:*:*:listener-rule/app/*/*/*/*",
                 "arn:aws:elasticloadbalancing:*:*:listener-rule/net/*/*/*/*")},
    # Route 53 records carry no tags; the policy confines the controller to CNAMEs named `_…`, the
    # shape of ACM's validation records, which it writes only for certificates it requested.
    ("route53:ChangeResourceRecordSets", "arn:aws:route53:::hostedzone/*"): "validation records carry no tags",
    # CreateSecurityGroup is authorised on the VPC too; the new group itself is conditioned.
    ("ec2:CreateSecurityGroup", "arn:aws:ec2:*:*:vpc/*"): "the VPC side of creating a tagged group",
    # Backend rules are opened on the pods' ENI security groups (the node's, the user's), not ours.
    ("ec2:AuthorizeSecurityGroupIngress", "arn:aws:ec2:*:*:security-group/*"): "pod ENI security groups",
    ("ec2:RevokeSecurityGroupIngress", "arn:aws:ec2:*:*:security-group/*"): "pod ENI security groups",
}


def statements(policy):
    for s in policy["Statement"]:
        assert s["Effect"] == "Allow", f"{s.get('Sid')}: only Allow statements are expected"
        actions = [s["Action"]] if isinstance(s["Action"], str) else s["Action"]
        resources = [s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"]
        yield s, actions, resources


def cluster_conditions(s):
    """{(condition key, operator): value} for the conditions on the cluster tag."""
    return {(k, op): v for op, kv in s.get("Condition", {}).items() for k, v in kv.items() if k.endswith(CLUSTER_TAG)}


def condition_problems(policy, pinned=None):
    """Every write is conditioned on the cluster tag (or listed in UNCONDITIONED); `pinned`: the
    condition names this cluster instead of only requiring the tag."""
    problems, used_exceptions = [], set()
    has = ("StringEquals", pinned) if pinned else ("Null", "false")
    for s, actions, resources in statements(policy):
        conds = cluster_conditions(s)
        for a in filter(lambda a: WRITE.match(a.split(":")[1]), actions):
            verb = a.split(":")[1]
            if not conds:
                for r in resources:
                    if (a, r) in UNCONDITIONED:
                        used_exceptions.add((a, r))
                    else:
                        problems.append(f"{s['Sid']}: {a} on {r} has no {CLUSTER_TAG} condition")
                continue
            resource_tag = (f"aws:ResourceTag/{CLUSTER_TAG}", has[0]) in conds and \
                conds[(f"aws:ResourceTag/{CLUSTER_TAG}", has[0])] == has[1]
            request_tag = (f"aws:RequestTag/{CLUSTER_TAG}", has[0]) in conds and \
                conds[(f"aws:RequestTag/{CLUSTER_TAG}", has[0])] == has[1]
            # A create must carry the tag; anything else must find it on the resource. A create verb
            # conditioned on the resource tag acts on an existing resource only (ImportCertificate of a
            # certificate again, AddTagsToCertificate on one): it needs no request tag.
            creates = (verb.startswith(("Create", "Request", "Import")) and verb != "CreateTags") or a in TAG_ON_CREATE
            if (creates and not resource_tag) or "CreateAction" in json.dumps(s.get("Condition")):
                if not request_tag:
                    problems.append(f"{s['Sid']}: {a} does not require the {CLUSTER_TAG} request tag")
            elif not resource_tag:
                problems.append(f"{s['Sid']}: {a} does not require the {CLUSTER_TAG} resource tag")
            # Retagging our own resource must not move it to another cluster.
            if verb in ("AddTags", "CreateTags", "AddTagsToCertificate", "ImportCertificate") and resource_tag and \
                    conds.get((f"aws:RequestTag/{CLUSTER_TAG}", "Null")) != "true":
                problems.append(f"{s['Sid']}: {a} on a tagged resource may rewrite {CLUSTER_TAG}")
    return problems, used_exceptions


def policies():
    """docs/iam-policy.json and every policy the chart carries (none today: a copy would drift)."""
    found = [("docs/iam-policy.json", json.loads(POLICY.read_text()))]
    for f in sorted(p for p in CHART.rglob("*") if p.is_file()):
        lines = [ln for ln in f.read_text(errors="replace").splitlines() if not ln.lstrip().startswith("#")]
        if any(re.search(r"\b(elasticloadbalancing|ec2|wafv2|waf-regional|shield|acm):[A-Z]", ln) for ln in lines):
            found.append((str(f.relative_to(REPO)), None))
    return found


def test_assume_role_is_confined_to_the_documented_role_path():
    """Not every role of every account: only roles made for the controller (docs/iam.md)."""
    statements = json.loads(POLICY.read_text())["Statement"]
    resources = [r for st in statements if "sts:AssumeRole" in st["Action"]
                 for r in ([st["Resource"]] if isinstance(st["Resource"], str) else st["Resource"])]
    assert resources == ["arn:aws:iam::*:role/aws-lb-controller/*"], resources
    assert "role/aws-lb-controller/" in (REPO / "docs/iam.md").read_text()


def test_the_chart_carries_no_second_policy():
    copies = [name for name, p in policies() if p is None]
    assert not copies, f"IAM actions in {copies}: the chart must not carry its own policy (docs/iam-policy.json is " \
                       "the only one; render it from there if the chart ever needs it)"


def test_every_write_is_conditioned_on_the_cluster_tag():
    problems, used = condition_problems(json.loads(POLICY.read_text()))
    assert not problems, "\n".join(problems)
    stale = set(UNCONDITIONED) - used
    assert not stale, f"UNCONDITIONED entries the policy no longer needs: {sorted(stale)}"


def test_the_condition_check_catches_a_missing_condition():
    policy = json.loads(POLICY.read_text())
    for s in policy["Statement"]:
        if "elasticloadbalancing:DeleteLoadBalancer" in s["Action"]:
            del s["Condition"]
    problems, _ = condition_problems(policy)
    assert any("DeleteLoadBalancer" in p for p in problems), problems


def pin_command():
    """The jq command of docs/iam.md that pins the policy to one cluster name."""
    lines = [ln for ln in (REPO / "docs/iam.md").read_text().splitlines() if ln.startswith("jq --arg cluster ")]
    assert len(lines) == 1, "docs/iam.md must show one `jq --arg cluster <name> ...` command"
    return lines[0]


@pytest.mark.skipif(not shutil.which("jq"), reason="jq not installed")
def test_the_documented_pinning_scopes_every_condition_to_one_cluster():
    cmd = pin_command().replace("docs/iam-policy.json", str(POLICY))
    out = subprocess.run(["bash", "-c", cmd.replace("dev-meta", "prod-a")], capture_output=True, text=True,
                         check=True).stdout
    pinned = json.loads(out)
    problems, _ = condition_problems(pinned, pinned="prod-a")
    assert not problems, "\n".join(problems)
    for s, _, _ in statements(pinned):
        left = {k: v for k, v in cluster_conditions(s).items() if k[1] == "Null" and v == "false"}
        assert not left, f"{s['Sid']}: still only requires the tag: {left}"
    original = json.loads(POLICY.read_text())
    assert [(s["Sid"], s["Action"]) for s in pinned["Statement"]] == \
           [(s["Sid"], s["Action"]) for s in original["Statement"]]


def strict_command():
    """The jq command of docs/iam.md that confines target writes to owned or granted groups."""
    lines = [ln for ln in (REPO / "docs/iam.md").read_text().splitlines() if ln.startswith("jq --argjson granted ")]
    assert len(lines) == 1, "docs/iam.md must show one `jq --argjson granted <arns> ...` command"
    return lines[0]


@pytest.mark.skipif(not shutil.which("jq"), reason="jq not installed")
@pytest.mark.parametrize("granted", [["arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/tf-web/*"], []])
def test_the_documented_strict_tenancy_policy_conditions_target_writes(granted):
    cmd = strict_command().replace("docs/iam-policy.json", str(POLICY))
    cmd = re.sub(r"--argjson granted '[^']*'", f"--argjson granted '{json.dumps(granted)}'", cmd)
    out = json.loads(subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True).stdout)
    original = {s["Sid"]: s for s in json.loads(POLICY.read_text())["Statement"]}
    by_sid = {s["Sid"]: s for s in out["Statement"]}
    writes = by_sid["RegisterPodTargets"]
    assert writes["Action"] == original["RegisterPodTargets"]["Action"]
    assert writes["Condition"] == {"Null": {"aws:ResourceTag/elbv2.k8s.aws/cluster": "false"}}
    if granted:
        extra = by_sid["RegisterPodTargetsInGrantedGroups"]
        assert extra["Resource"] == granted and extra["Action"] == writes["Action"] and "Condition" not in extra
    else:
        assert "RegisterPodTargetsInGrantedGroups" not in by_sid, "no statement with an empty Resource"
    # Everything else unchanged.
    rest = {sid: st for sid, st in by_sid.items() if not sid.startswith("RegisterPodTargets")}
    assert rest == {sid: st for sid, st in original.items() if sid != "RegisterPodTargets"}


def sdk_operations():
    """IAM action (lower case) for each operation method of each SDK client, from the SDK sources."""
    ops = {}
    for pkg in cargo_metadata(True)["packages"]:
        if pkg["name"] in SDK_IAM:
            for d in (Path(pkg["manifest_path"]).parent / "src/operation").iterdir():
                if d.is_dir():
                    ops.setdefault(pkg["name"].replace("-", "_"), {})[d.name] = d.name.replace("_", "")
    return ops


def sdk_calls():
    """(IAM action, source file, text of the call up to its .send()) for every SDK call of the code."""
    ops = sdk_operations()
    calls, problems = [], []
    for f in sorted(REPO.glob("*/src/**/*.rs")):
        if f.parts[len(REPO.parts)] in ("e2e", "target"):
            continue
        text = f.read_text()
        crates = [c for c in ops if c in text]
        if not crates:
            continue
        found = 0
        for m in re.finditer(r"\.\s*([a-z][a-z0-9_]*)\s*\(\s*\)", text):
            owners = [c for c in crates if m.group(1) in ops[c]]
            if len(owners) > 1:
                problems.append(f"{f}: .{m.group(1)}() is an operation of {owners}: cannot tell which")
            for c in owners:
                send = text.find(".send()", m.end())
                calls.append((f"{SDK_IAM[c.replace('_', '-')]}:{ops[c][m.group(1)]}", f, text[m.start():send]))
                found += 1
        sends = len(re.findall(r"\.\s*send\s*\(\s*\)", text))
        if sends != found:
            problems.append(f"{f}: {sends} .send() calls but {found} recognised SDK operations")
    assert not problems, "\n".join(problems)
    return calls


def test_iam_policy_matches_the_sdk_calls():
    used = {a for a, _, _ in sdk_calls()}
    used |= {i for a in used for i in IMPLIED.get(a, ())}
    used -= NO_PERMISSION_NEEDED
    granted = {a.lower() for _, actions, _ in statements(json.loads(POLICY.read_text())) for a in actions}
    assert used == granted, f"code calls but policy lacks: {sorted(used - granted)}; " \
                            f"policy grants but code never calls: {sorted(granted - used)}"


def test_creates_the_policy_conditions_send_tags():
    # Creates conditioned on the request tag must send tags (the model puts the cluster tag in
    # every set: model/src/lb/tags.rs, property-tested in model/tests/prop_tags.rs).
    conditioned = {a.lower() for s, actions, _ in statements(json.loads(POLICY.read_text()))
                   for a in actions if (f"aws:RequestTag/{CLUSTER_TAG}", "Null") in cluster_conditions(s)
                   and a.split(":")[1].startswith(("Create", "Request"))}
    assert {"elasticloadbalancing:createloadbalancer", "elasticloadbalancing:createtargetgroup",
            "ec2:createsecuritygroup", "acm:requestcertificate"} <= conditioned
    seen = set()
    for action, f, call in sdk_calls():
        if action in conditioned:
            seen.add(action)
            assert re.search(r"\.set_tags\(|\.set_tag_specifications\(", call), \
                f"{f}: {action} sends no tags but the policy requires {CLUSTER_TAG}:\n{call}"
    assert seen == conditioned, f"no call site found for {sorted(conditioned - seen)}"
