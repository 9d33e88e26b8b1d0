"""Self-test of the data plane's control endpoints (dataplane_views.py via awsemu.py)."""

import hashlib
import json
import time

import boto3
from test_acm_patches import _pem
from test_awsemu import NO_RETRY, aws, client, ctl, emu, reset  # noqa: F401  (fixtures)


def _tg(aws, name, **kw):
    return aws.elb.create_target_group(Name=name, VpcId=aws.vpc, TargetType="ip", **kw)["TargetGroups"][0][
        "TargetGroupArn"]


def test_target_group_view_lists_settings_registered_and_draining(emu, aws):
    ctl(emu, "POST", "settings", {"time_scale": 0.01})
    tg = _tg(aws, "view", Protocol="HTTP", Port=8080, HealthCheckPath="/healthz", HealthCheckIntervalSeconds=10,
             HealthCheckTimeoutSeconds=3, HealthyThresholdCount=3, UnhealthyThresholdCount=2,
             Matcher={"HttpCode": "200-299"})
    aws.elb.modify_target_group_attributes(TargetGroupArn=tg, Attributes=[
        {"Key": "deregistration_delay.timeout_seconds", "Value": "60"}])
    before = time.time()
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.9.1"}, {"Id": "10.0.9.2", "Port": 81}])
    aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.9.2", "Port": 81}])
    st, v = ctl(emu, "GET", "target-group?target_group_arn=" + tg)
    assert st == 200, v
    assert v["health_check"] == {"enabled": True, "protocol": "HTTP", "port": "traffic-port", "path": "/healthz",
                                 "interval_seconds": 10, "timeout_seconds": 3, "healthy_threshold": 3,
                                 "unhealthy_threshold": 2, "matcher": "200-299"}
    assert (v["protocol"], v["port"], v["deregistration_delay_seconds"], v["time_scale"]) == ("HTTP", 8080, 60, 0.01)
    [reg] = v["targets"]
    assert (reg["id"], reg["port"], reg["measured"]) == ("10.0.9.1", 8080, None)
    assert before <= reg["registered_at"] <= time.time()
    [dr] = v["draining"]
    assert (dr["id"], dr["port"]) == ("10.0.9.2", 81)
    assert dr["deregistered_at"] >= dr["registered_at"]
    assert abs(dr["drain_until"] - dr["deregistered_at"] - 0.6) < 0.1  # 60 s x 0.01
    # control reads are not AWS calls: the call log has only the boto3 calls above
    ops = [c["operation"] for c in ctl(emu, "GET", "calls")[1]["calls"]]
    assert "DescribeTargetHealth" not in ops and all(not o.startswith("GET") for o in ops)


def test_measured_health_drives_describe_target_health_until_deregistered(emu, aws):
    ctl(emu, "POST", "settings", {"time_scale": 0.01})
    ctl(emu, "POST", "health-policy", {"scope": "global", "initial_seconds": 0})
    tg = _tg(aws, "measured", Protocol="TCP", Port=80)
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.8.1"}, {"Id": "10.0.8.2"}])
    assert aws.states(tg) == {("10.0.8.1", 80): "healthy", ("10.0.8.2", 80): "healthy"}  # policy timeline
    reg = {t["id"]: t["registered_at"] for t in ctl(emu, "GET", "target-group?target_group_arn=" + tg)[1]["targets"]}
    st, out = ctl(emu, "POST", "measured-health", {"target_group_arn": tg, "targets": [
        {"id": "10.0.8.1", "port": 80, "state": "unhealthy", "reason": "Target.Timeout",
         "description": "Request timed out", "registered_at": reg["10.0.8.1"]}]})
    assert (st, out) == (200, {"applied": 1, "stale": []})
    h = aws.health(tg)
    assert h[("10.0.8.1", 80)] == {"State": "unhealthy", "Reason": "Target.Timeout",
                                   "Description": "Request timed out"}
    # once a data plane measures the group, an unmeasured target is still registering
    assert h[("10.0.8.2", 80)]["State"] == "initial"
    # a forced state still wins over the measurement
    ctl(emu, "POST", "health-policy", {"scope": "target", "target_group_arn": tg, "id": "10.0.8.1",
                                       "force": "healthy"})
    assert aws.states(tg)[("10.0.8.1", 80)] == "healthy"
    ctl(emu, "POST", "health-policy", {"scope": "target", "target_group_arn": tg, "id": "10.0.8.1", "force": None})
    # deregistered: draining for the whole delay (300 s x 0.01), whatever was measured or forced
    ctl(emu, "POST", "health-policy", {"scope": "target", "target_group_arn": tg, "id": "10.0.8.1",
                                       "force": "healthy"})
    aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.8.1"}])
    for _ in range(5):
        assert aws.states(tg)[("10.0.8.1", 80)] == "draining"
        time.sleep(0.4)
    ctl(emu, "POST", "health-policy", {"scope": "target", "target_group_arn": tg, "id": "10.0.8.1", "clear": True})
    # a push for the old registration is stale, also after re-registering (it starts at initial again)
    push = {"target_group_arn": tg, "targets": [{"id": "10.0.8.1", "port": 80, "state": "healthy",
                                                 "registered_at": reg["10.0.8.1"]}]}
    assert ctl(emu, "POST", "measured-health", push)[1] == {"applied": 0, "stale": [{"id": "10.0.8.1", "port": 80}]}
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.8.1"}])
    assert ctl(emu, "POST", "measured-health", push)[1]["applied"] == 0
    assert aws.states(tg)[("10.0.8.1", 80)] == "initial"


def test_measured_health_and_views_reject_bad_input(emu, aws):
    tg = _tg(aws, "bad", Protocol="TCP", Port=80)
    assert ctl(emu, "POST", "measured-health", {"target_group_arn": tg, "targets": [{"id": "x", "state": "ok"}]})[
        0] == 400
    assert ctl(emu, "POST", "measured-health", {"target_group_arn": tg, "targets": "x"})[0] == 400
    assert ctl(emu, "POST", "measured-health", {"targets": []})[0] == 400
    assert ctl(emu, "GET", "measured-health?target_group_arn=" + tg)[0] == 405
    assert ctl(emu, "GET", "target-group?target_group_arn=" + tg.replace("targetgroup/bad", "targetgroup/nope"))[
        0] == 404
    assert ctl(emu, "GET", "target-group?target_group_arn=not-an-arn")[0] == 400
    assert ctl(emu, "GET", "load-balancer")[0] == 400


def test_load_balancer_view_lists_listeners_rules_and_actions(emu, aws):
    subnets = [s["SubnetId"] for s in aws.ec2.describe_subnets()["Subnets"]][:2]
    lb = aws.elb.create_load_balancer(Name="alb", Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]
    a, b = _tg(aws, "a", Protocol="HTTP", Port=80), _tg(aws, "b", Protocol="HTTP", Port=80)
    lst = aws.elb.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80, DefaultActions=[
        {"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404", "ContentType": "text/plain",
                                                           "MessageBody": "none"}}])["Listeners"][0]["ListenerArn"]
    aws.elb.create_rule(ListenerArn=lst, Priority=20, Conditions=[
        {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/b*"]}}],
        Actions=[{"Type": "forward", "TargetGroupArn": b}])
    aws.elb.create_rule(ListenerArn=lst, Priority=10, Conditions=[
        {"Field": "host-header", "Values": ["a.example.com"]},
        {"Field": "http-header", "HttpHeaderConfig": {"HttpHeaderName": "X-Env", "Values": ["blue"]}}],
        Actions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": a, "Weight": 3},
                                                                        {"TargetGroupArn": b, "Weight": 1}]}}])
    st, v = ctl(emu, "GET", "load-balancer?load_balancer_arn=" + lb)
    assert st == 200, v
    assert v["type"] == "application"
    [listener] = v["listeners"]
    assert (listener["protocol"], listener["port"]) == ("HTTP", 80)
    assert listener["default_actions"] == [{"type": "fixed-response", "order": None, "status_code": 404,
                                            "content_type": "text/plain", "message_body": "none"}]
    assert [r["priority"] for r in listener["rules"]] == [10, 20]
    first, second = listener["rules"]
    assert first["conditions"] == [{"field": "host-header", "values": ["a.example.com"]},
                                   {"field": "http-header", "values": ["blue"], "header_name": "X-Env"}]
    assert first["actions"][0]["target_groups"] == [{"arn": a, "weight": 3}, {"arn": b, "weight": 1}]
    assert second["conditions"] == [{"field": "path-pattern", "values": ["/b*"]}]
    assert second["actions"][0]["target_groups"] == [{"arn": b, "weight": 1}]
    assert ctl(emu, "GET", "load-balancer?load_balancer_arn=" + lb + "x")[0] == 404


def test_load_balancer_view_carries_rule_transforms_and_regex_conditions(emu, aws):
    subnets = [s["SubnetId"] for s in aws.ec2.describe_subnets()["Subnets"]][:2]
    lb = aws.elb.create_load_balancer(Name="alb-xf", Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]
    tg = _tg(aws, "xf", Protocol="HTTP", Port=80)
    forward = [{"Type": "forward", "TargetGroupArn": tg}]
    lst = aws.elb.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80,
                                  DefaultActions=forward)["Listeners"][0]["ListenerArn"]
    host = {"Type": "host-header-rewrite", "HostHeaderRewriteConfig": {"Rewrites": [
        {"Regex": ".*", "Replace": "new.example.com"}]}}
    url = {"Type": "url-rewrite", "UrlRewriteConfig": {"Rewrites": [{"Regex": "(^/prefix(/)?)", "Replace": "/new$2"}]}}
    regex = [{"Field": "host-header", "HostHeaderConfig": {"RegexValues": ["^shop\\.example\\.com(:\\d+)?$"]}},
             {"Field": "path-pattern", "PathPatternConfig": {"RegexValues": ["^/prefix(/|$)"]}},
             {"Field": "http-header", "HttpHeaderConfig": {"HttpHeaderName": "X-Env", "RegexValues": ["^blue$"]}}]
    rule = aws.elb.create_rule(ListenerArn=lst, Priority=1, Conditions=regex, Actions=forward,
                               Transforms=[host, url])["Rules"][0]["RuleArn"]
    aws.elb.create_rule(ListenerArn=lst, Priority=2, Actions=forward,
                        Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/b"]}}])

    def rules():
        st, v = ctl(emu, "GET", "load-balancer?load_balancer_arn=" + lb)
        assert st == 200, v
        return v["listeners"][0]["rules"]

    first, second = rules()
    assert first["transforms"] == [{"type": "host-header-rewrite",
                                    "rewrites": [{"regex": ".*", "replace": "new.example.com"}]},
                                   {"type": "url-rewrite", "rewrites": [{"regex": "(^/prefix(/)?)", "replace": "/new$2"}]}]
    assert first["conditions"] == [
        {"field": "host-header", "values": [], "regex_values": ["^shop\\.example\\.com(:\\d+)?$"]},
        {"field": "path-pattern", "values": [], "regex_values": ["^/prefix(/|$)"]},
        {"field": "http-header", "values": [], "regex_values": ["^blue$"], "header_name": "X-Env"}]
    assert second["transforms"] == []
    aws.elb.modify_rule(RuleArn=rule, Conditions=regex, Actions=forward, Transforms=[url])
    assert [t["type"] for t in rules()[0]["transforms"]] == ["url-rewrite"]
    aws.elb.modify_rule(RuleArn=rule, Conditions=regex, Actions=forward, ResetTransforms=True)
    assert rules()[0]["transforms"] == []


def test_load_balancers_view_lists_every_load_balancer_until_deleted(emu, aws):
    subnets = [s["SubnetId"] for s in aws.ec2.describe_subnets()["Subnets"]][:2]
    alb = aws.elb.create_load_balancer(Name="fleet-alb", Subnets=subnets)["LoadBalancers"][0]
    nlb = aws.elb.create_load_balancer(Name="fleet-nlb", Subnets=subnets, Type="network")["LoadBalancers"][0]
    # another region's backend is listed too
    west_ec2, west_elb = (boto3.client(name, endpoint_url=emu, region_name="us-west-2", aws_access_key_id="testing",
                                       aws_secret_access_key="testing", config=NO_RETRY) for name in ("ec2", "elbv2"))
    west_subnets = [s["SubnetId"] for s in west_ec2.describe_subnets()["Subnets"]][:2]
    west = west_elb.create_load_balancer(Name="fleet-west", Subnets=west_subnets)["LoadBalancers"][0]
    st, v = ctl(emu, "GET", "load-balancers")
    assert st == 200, v
    created = sorted([alb, nlb, west], key=lambda lb: lb["LoadBalancerArn"])
    assert v["load_balancers"] == [{"load_balancer_arn": lb["LoadBalancerArn"], "name": lb["LoadBalancerName"],
                                    "type": lb["Type"], "dns_name": lb["DNSName"], "state": lb["State"]["Code"]}
                                   for lb in created]
    assert {lb["name"]: lb["type"] for lb in v["load_balancers"]} == {
        "fleet-alb": "application", "fleet-nlb": "network", "fleet-west": "application"}
    # the state as moto keeps it: DescribeLoadBalancers activates; reading the view does not
    assert alb["State"]["Code"] == "provisioning"
    aws.elb.describe_load_balancers(LoadBalancerArns=[alb["LoadBalancerArn"]])
    states = {lb["name"]: lb["state"] for lb in ctl(emu, "GET", "load-balancers")[1]["load_balancers"]}
    assert states["fleet-alb"] == "active"
    aws.elb.delete_load_balancer(LoadBalancerArn=alb["LoadBalancerArn"])
    names = [lb["name"] for lb in ctl(emu, "GET", "load-balancers")[1]["load_balancers"]]
    assert sorted(names) == ["fleet-nlb", "fleet-west"]
    assert ctl(emu, "POST", "load-balancers", {})[0] == 405


def test_listener_certificates_and_their_keys_for_tls_termination(emu, aws):
    acm = client(emu, "acm")
    a_cert, a_key = _pem(["a.example.com"])
    ca = _pem(["Example CA"])
    b_cert, b_key = _pem(["*.b.example.com"], issuer=ca)
    a = acm.import_certificate(Certificate=a_cert, PrivateKey=a_key)["CertificateArn"]
    b = acm.import_certificate(Certificate=b_cert, PrivateKey=b_key, CertificateChain=ca[0])["CertificateArn"]
    subnets = [s["SubnetId"] for s in aws.ec2.describe_subnets()["Subnets"]][:2]
    lb = aws.elb.create_load_balancer(Name="tls-alb", Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]
    lst = aws.elb.create_listener(LoadBalancerArn=lb, Protocol="HTTPS", Port=443,
                                  SslPolicy="ELBSecurityPolicy-TLS13-1-2-2021-06", Certificates=[{"CertificateArn": a}],
                                  DefaultActions=[{"Type": "fixed-response",
                                                   "FixedResponseConfig": {"StatusCode": "200"}}])
    aws.elb.add_listener_certificates(ListenerArn=lst["Listeners"][0]["ListenerArn"],
                                      Certificates=[{"CertificateArn": b}])

    def listener():
        return ctl(emu, "GET", "load-balancer?load_balancer_arn=" + lb)[1]["listeners"][0]

    fp = {arn: hashlib.sha256(pem).hexdigest() for arn, pem in ((a, a_cert), (b, b_cert))}
    assert listener()["certificates"] == [{"certificate_arn": a, "is_default": True, "fingerprint": fp[a]},
                                          {"certificate_arn": b, "is_default": False, "fingerprint": fp[b]}]
    assert listener()["ssl_policy"] == "ELBSecurityPolicy-TLS13-1-2-2021-06"
    st, v = ctl(emu, "GET", "certificate?certificate_arn=" + a)
    assert (st, v) == (200, {"certificate_arn": a, "certificate": a_cert.decode(), "certificate_chain": None,
                             "private_key": a_key.decode()})
    # the chain as imported, without the root moto appends to every chain
    v = ctl(emu, "GET", "certificate?certificate_arn=" + b)[1]
    assert (v["certificate"], v["certificate_chain"], v["private_key"]) == (b_cert.decode(), ca[0].decode(),
                                                                           b_key.decode())
    # a re-import to the same ARN shows as a new fingerprint
    c_cert, c_key = _pem(["a.example.com"])
    acm.import_certificate(CertificateArn=a, Certificate=c_cert, PrivateKey=c_key)
    assert listener()["certificates"][0]["fingerprint"] == hashlib.sha256(c_cert).hexdigest()
    assert ctl(emu, "GET", "certificate?certificate_arn=" + a)[1]["certificate"] == c_cert.decode()
    # an IAM server certificate (ALB takes those too)
    iam = client(emu, "iam").upload_server_certificate(ServerCertificateName="tls-alb", CertificateBody=a_cert.decode(),
                                                       PrivateKey=a_key.decode())["ServerCertificateMetadata"]["Arn"]
    v = ctl(emu, "GET", "certificate?certificate_arn=" + iam)[1]
    assert (v["certificate"].strip(), v["certificate_chain"], v["private_key"]) == (a_cert.decode().strip(), None,
                                                                                   a_key.decode())


def test_certificate_view_rejects_unknown_certificates(emu, aws):
    unknown = "arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"
    st, v = ctl(emu, "GET", "certificate?certificate_arn=" + unknown)
    assert st == 404 and f"certificate {unknown} not found in ACM" in json.dumps(v), v
    nowhere = unknown.replace("us-east-1", "nowhere-1")
    st, v = ctl(emu, "GET", "certificate?certificate_arn=" + nowhere)
    assert st == 404 and f"certificate {nowhere} not found in ACM" in json.dumps(v), v
    iam = "arn:aws:iam::123456789012:server-certificate/none"
    st, v = ctl(emu, "GET", "certificate?certificate_arn=" + iam)
    assert st == 404 and "not found in IAM server certificates" in json.dumps(v), v
    st, v = ctl(emu, "GET", "certificate?certificate_arn=arn:aws:s3:::bucket")
    assert st == 400 and "neither an ACM certificate ARN" in json.dumps(v), v
    assert ctl(emu, "GET", "certificate")[0] == 400
    assert ctl(emu, "POST", "certificate?certificate_arn=" + unknown, {})[0] == 405
