"""Self-test of awsemu.py: starts it on a free port as a subprocess and drives it with boto3."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

HERE = os.path.dirname(os.path.abspath(__file__))
# botocore's retries.max_attempts counts *retries* (max_attempts=1 still retries once); total_max_attempts=1 is
# one attempt, no retry.
NO_RETRY = Config(retries={"total_max_attempts": 1, "mode": "standard"})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("awsemu") / "awsemu.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, os.path.join(HERE, "awsemu.py"), "--port", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/_awsemu/healthz", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("awsemu did not start:\n" + log.read_text())
                time.sleep(0.1)
        yield url
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def ctl(url, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + "/_awsemu/" + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(autouse=True)
def reset(emu):
    assert ctl(emu, "POST", "reset")[0] == 200


def client(url, name):
    return boto3.client(name, endpoint_url=url, region_name="us-east-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing", config=NO_RETRY)


@pytest.fixture
def aws(emu):
    class C:
        ec2 = client(emu, "ec2")
        elb = client(emu, "elbv2")
        sts = client(emu, "sts")
        vpc = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]

        def tg(self, name, port=80):
            return self.elb.create_target_group(Name=name, Protocol="HTTP", Port=port, VpcId=self.vpc,
                                                TargetType="ip")["TargetGroups"][0]["TargetGroupArn"]

        def health(self, arn, targets=None):
            kw = {"Targets": targets} if targets else {}
            d = self.elb.describe_target_health(TargetGroupArn=arn, **kw)["TargetHealthDescriptions"]
            return {(x["Target"]["Id"], x["Target"]["Port"]): x["TargetHealth"] for x in d}

        def states(self, arn):
            return {k: v["State"] for k, v in self.health(arn).items()}

    return C()


def code_of(excinfo):
    return excinfo.value.response["Error"]["Code"]


def test_targets_keyed_by_id_and_port(emu, aws):
    tg = aws.tg("keying")
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.1.5", "Port": 80},
                                                         {"Id": "10.0.1.5", "Port": 8080}])
    assert set(aws.health(tg)) == {("10.0.1.5", 80), ("10.0.1.5", 8080)}
    ctl(emu, "POST", "settings", {"time_scale": 0})  # draining ends at once
    aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.1.5", "Port": 80}])
    assert set(aws.health(tg)) == {("10.0.1.5", 8080)}
    # explicitly asked for, the removed one is unused / Target.NotRegistered
    h = aws.health(tg, [{"Id": "10.0.1.5", "Port": 80}])
    assert h[("10.0.1.5", 80)]["State"] == "unused"
    assert h[("10.0.1.5", 80)]["Reason"] == "Target.NotRegistered"
    with pytest.raises(ClientError) as e:
        aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.1.5", "Port": 9999}])
    assert code_of(e) == "InvalidTarget"


def test_health_initial_then_healthy_and_default(emu, aws):
    tg = aws.tg("timing")
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.2.1", "Port": 80}])
    h = aws.health(tg)[("10.0.2.1", 80)]
    assert h == {"State": "initial", "Reason": "Elb.RegistrationInProgress",
                 "Description": "Target registration is in progress"}  # default: 2 s of initial
    ctl(emu, "POST", "health-policy", {"scope": "global", "initial_seconds": 0.4})
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.2.2", "Port": 80}])
    assert aws.states(tg)[("10.0.2.2", 80)] == "initial"
    time.sleep(0.5)
    assert aws.states(tg) == {("10.0.2.1", 80): "healthy", ("10.0.2.2", 80): "healthy"}


def test_forced_and_per_target_group_policy(emu, aws):
    ctl(emu, "POST", "health-policy", {"scope": "global", "initial_seconds": 0})
    a, b = aws.tg("pol-a"), aws.tg("pol-b")
    st, _ = ctl(emu, "POST", "health-policy", {"scope": "target_group", "target_group_arn": a, "then": "unhealthy"})
    assert st == 200
    for arn in (a, b):
        aws.elb.register_targets(TargetGroupArn=arn, Targets=[{"Id": "10.0.3.1", "Port": 80},
                                                              {"Id": "10.0.3.2", "Port": 80}])
    ha = aws.health(a)
    assert {k: v["State"] for k, v in ha.items()} == {("10.0.3.1", 80): "unhealthy", ("10.0.3.2", 80): "unhealthy"}
    assert ha[("10.0.3.1", 80)]["Reason"] == "Target.FailedHealthChecks"
    assert set(aws.states(b).values()) == {"healthy"}
    # force one target of b unhealthy now, with a custom reason; the other stays healthy
    ctl(emu, "POST", "health-policy", {"scope": "target", "target_group_arn": b, "id": "10.0.3.2", "port": 80,
                                       "force": "unhealthy", "reason": "Target.Timeout", "description": "timed out"})
    hb = aws.health(b)
    assert hb[("10.0.3.2", 80)] == {"State": "unhealthy", "Reason": "Target.Timeout", "Description": "timed out"}
    assert hb[("10.0.3.1", 80)]["State"] == "healthy"
    # clearing the force restores the policy; bad input is rejected
    ctl(emu, "POST", "health-policy", {"scope": "target", "target_group_arn": b, "id": "10.0.3.2", "port": 80,
                                       "force": None, "reason": None, "description": None})
    assert aws.states(b)[("10.0.3.2", 80)] == "healthy"
    assert ctl(emu, "POST", "health-policy", {"scope": "target", "id": "x", "force": "sick"})[0] == 400
    assert ctl(emu, "POST", "health-policy", {"scope": "nope"})[0] == 400


def test_draining_then_gone_and_reregister(emu, aws):
    ctl(emu, "POST", "health-policy", {"scope": "global", "initial_seconds": 0})
    ctl(emu, "POST", "settings", {"time_scale": 0.002})  # 300 s attribute -> 0.6 s
    tg = aws.tg("drain")
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.4.1", "Port": 80},
                                                         {"Id": "10.0.4.2", "Port": 80}])
    aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.4.1", "Port": 80},
                                                           {"Id": "10.0.4.2", "Port": 80}])
    h = aws.health(tg)
    assert h[("10.0.4.1", 80)] == {"State": "draining", "Reason": "Target.DeregistrationInProgress",
                                   "Description": "Target deregistration is in progress"}
    # re-registering a draining target cancels draining and restarts at initial
    ctl(emu, "POST", "health-policy", {"scope": "global", "initial_seconds": 5})
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.4.2", "Port": 80}])
    assert aws.states(tg) == {("10.0.4.1", 80): "draining", ("10.0.4.2", 80): "initial"}
    time.sleep(0.8)
    assert aws.states(tg) == {("10.0.4.2", 80): "initial"}
    # the attribute drives the duration; a per-TG draining_seconds overrides it
    aws.elb.modify_target_group_attributes(TargetGroupArn=tg, Attributes=[
        {"Key": "deregistration_delay.timeout_seconds", "Value": "3000"}])
    aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.4.2", "Port": 80}])
    time.sleep(0.8)
    assert aws.states(tg) == {("10.0.4.2", 80): "draining"}  # 3000 * 0.002 = 6 s
    ctl(emu, "POST", "health-policy", {"scope": "target_group", "target_group_arn": tg, "draining_seconds": 0.2})
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.4.3", "Port": 80}])
    aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.4.3", "Port": 80}])
    time.sleep(0.4)
    assert ("10.0.4.3", 80) not in aws.states(tg)


def test_fault_throttling_by_count_and_target_group(emu, aws):
    a, b = aws.tg("fault-a"), aws.tg("fault-b")
    st, out = ctl(emu, "POST", "faults", {"service": "elasticloadbalancing", "operation": "RegisterTargets",
                                          "target_group_arn": a, "code": "Throttling", "count": 2})
    assert st == 200 and out["id"]
    t = [{"Id": "10.0.5.1", "Port": 80}]
    aws.elb.register_targets(TargetGroupArn=b, Targets=t)  # other TG unaffected
    for _ in range(2):
        with pytest.raises(ClientError) as e:
            aws.elb.register_targets(TargetGroupArn=a, Targets=t)
        assert code_of(e) == "Throttling"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert e.value.response["Error"]["Message"] == "Rate exceeded"
    aws.elb.register_targets(TargetGroupArn=a, Targets=t)  # count used up
    assert ("10.0.5.1", 80) in aws.health(a)
    # 5xx codes map to their status and still parse
    ctl(emu, "POST", "faults", {"service": "elasticloadbalancing", "operation": "DescribeTargetGroups",
                                "code": "ServiceUnavailable", "count": 1})
    with pytest.raises(ClientError) as e:
        aws.elb.describe_target_groups()
    assert code_of(e) == "ServiceUnavailable"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert ctl(emu, "DELETE", "faults")[0] == 200
    assert ctl(emu, "GET", "faults")[1]["faults"] == []


def test_fault_on_one_target_id(emu, aws):
    tg = aws.tg("poison")
    st, out = ctl(emu, "POST", "faults", {"service": "elasticloadbalancing", "operation": "RegisterTargets",
                                          "target_group_arn": tg, "target_id": "10.0.6.2", "code": "InvalidTarget",
                                          "message": "The IP address 10.0.6.2 is not valid"})
    assert st == 200 and out["fault"]["target_id"] == "10.0.6.2"
    # A batch containing the ID fails as a whole, whatever the port ...
    with pytest.raises(ClientError) as e:
        aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.6.1", "Port": 80},
                                                             {"Id": "10.0.6.2", "Port": 8080}])
    assert code_of(e) == "InvalidTarget"
    assert e.value.response["Error"]["Message"] == "The IP address 10.0.6.2 is not valid"
    assert aws.health(tg) == {}
    # ... a batch without it goes through (a prefix of the ID does not match), every time.
    for ip in ("10.0.6.1", "10.0.6.20"):
        aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": ip, "Port": 80}])
    assert set(aws.health(tg)) == {("10.0.6.1", 80), ("10.0.6.20", 80)}
    # Id:Port form matches that port only; other operations are untouched.
    ctl(emu, "DELETE", f"faults/{out['id']}")
    ctl(emu, "POST", "faults", {"service": "elasticloadbalancing", "operation": "RegisterTargets",
                                "target_id": "10.0.6.3:81", "code": "InvalidTarget"})
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.6.3", "Port": 80}])
    with pytest.raises(ClientError):
        aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.6.3", "Port": 81}])
    aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.6.3", "Port": 80}])
    calls = ctl(emu, "GET", f"calls?target_group_arn={tg}")[1]["calls"]
    assert [c["outcome"] for c in calls if c["operation"] == "RegisterTargets"] == ["error", "ok", "ok", "ok", "error"]
    assert ctl(emu, "DELETE", "faults")[0] == 200


def test_latency_injection(emu, aws):
    aws.elb.describe_load_balancers()  # warm up
    t0 = time.monotonic()
    aws.elb.describe_load_balancers()
    base = time.monotonic() - t0
    ctl(emu, "POST", "faults", {"service": "elasticloadbalancing", "operation": "DescribeLoadBalancers",
                                "latency_ms": 400, "count": 1})
    t0 = time.monotonic()
    aws.elb.describe_load_balancers()  # slow but successful
    slow = time.monotonic() - t0
    assert slow >= 0.4 and slow > base + 0.3
    calls = ctl(emu, "GET", "calls?operation=DescribeLoadBalancers")[1]["calls"]
    assert calls[-1]["outcome"] == "ok" and calls[-1]["duration_ms"] >= 400


def test_ec2_and_sts_fault_shapes(emu, aws):
    ctl(emu, "POST", "faults", {"service": "ec2", "operation": "DescribeSubnets", "code": "RequestLimitExceeded",
                                "message": "Request limit exceeded.", "count": 1})
    with pytest.raises(ClientError) as e:
        aws.ec2.describe_subnets()
    assert code_of(e) == "RequestLimitExceeded"
    assert e.value.response["Error"]["Message"] == "Request limit exceeded."
    assert aws.ec2.describe_subnets()["Subnets"]
    ctl(emu, "POST", "faults", {"service": "sts", "operation": "GetCallerIdentity", "code": "InternalFailure",
                                "rate": 1.0, "count": 1})
    with pytest.raises(ClientError) as e:
        aws.sts.get_caller_identity()
    assert code_of(e) == "InternalFailure"
    assert aws.sts.get_caller_identity()["Account"] == "123456789012"


def test_sts_sessions_list_assumed_role_keys_without_secrets(emu, aws):
    arn = "arn:aws:iam::123456789012:role/emu-test"
    creds = aws.sts.assume_role(RoleArn=arn, RoleSessionName="s1", DurationSeconds=900, ExternalId="ext-9")["Credentials"]
    status, out = ctl(emu, "GET", "sts-sessions")
    assert status == 200
    mine = [x for x in out["sessions"] if x["access_key_id"] == creds["AccessKeyId"]]
    assert [(x["role_arn"], x["session_name"], x["external_id"]) for x in mine] == [(arn, "s1", "ext-9")]
    assert creds["SecretAccessKey"] not in json.dumps(out) and creds["SessionToken"] not in json.dumps(out)


def test_token_buckets(emu, aws):
    tg = aws.tg("bucket")
    st, out = ctl(emu, "POST", "token-buckets", {"enabled": True, "buckets": [
        {"name": "describe", "operations": "^Describe.*", "rate": 2, "burst": 3}]})
    assert st == 200 and out["enabled"]
    codes = []
    for _ in range(5):
        try:
            aws.elb.describe_target_groups(TargetGroupArns=[tg])
            codes.append("ok")
        except ClientError as e:
            codes.append(e.response["Error"]["Code"])
            assert e.response["Error"]["Message"] == "Rate exceeded"
    assert codes[:3] == ["ok"] * 3 and "Throttling" in codes[3:]
    aws.elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": "10.0.6.1", "Port": 80}])  # other ops pass
    time.sleep(1.1)  # 2/s refills >= 2 tokens
    aws.elb.describe_target_groups(TargetGroupArns=[tg])
    aws.elb.describe_target_groups(TargetGroupArns=[tg])
    # defaults when enabled without config; then off again
    out = ctl(emu, "POST", "token-buckets", {"enabled": True})[1]
    assert {b["name"] for b in out["buckets"]} >= {"elbv2-registration", "elbv2-describe"}
    assert ctl(emu, "POST", "token-buckets", {"enabled": False})[1]["enabled"] is False


def test_call_log(emu, aws):
    tg = aws.tg("calls")
    last = ctl(emu, "GET", "calls")[1]["last_seq"]
    ctl(emu, "POST", "faults", {"service": "elasticloadbalancing", "operation": "RegisterTargets",
                                "code": "Throttling", "count": 1})
    t = [{"Id": "10.0.7.1", "Port": 80}, {"Id": "10.0.7.2", "Port": 80}, {"Id": "10.0.7.3", "Port": 81}]
    with pytest.raises(ClientError):
        aws.elb.register_targets(TargetGroupArn=tg, Targets=t)
    aws.elb.register_targets(TargetGroupArn=tg, Targets=t)
    aws.elb.describe_target_health(TargetGroupArn=tg)
    out = ctl(emu, "GET", f"calls?since={last}")[1]
    ops = [c["operation"] for c in out["calls"]]
    assert ops == ["RegisterTargets", "RegisterTargets", "DescribeTargetHealth"]
    err, ok, desc = out["calls"]
    assert err["outcome"] == "error" and err["error_code"] == "Throttling" and err["http_status"] == 400
    assert ok["outcome"] == "ok" and ok["error_code"] is None and ok["targets"] == 3
    assert ok["target_group_arn"] == tg and ok["service"] == "elasticloadbalancing"
    assert desc["targets"] is None and desc["target_ids"] is None
    assert ok["target_ids"] == ["10.0.7.1:80", "10.0.7.2:80", "10.0.7.3:81"]
    assert ok["received"] <= ok["time"]
    assert ok["access_key"] == "testing" and err["access_key"] == "testing"  # the signing key ID, for rotation tests
    assert ok["forwarded_for"] is None  # no forwarder in between
    assert [c["seq"] for c in out["calls"]] == list(range(last + 1, last + 4))
    assert out["last_seq"] == last + 3 and ok["time"] > time.time() - 60 and ok["duration_ms"] >= 0
    only = ctl(emu, "GET", f"calls?since={err['seq']}&operation=RegisterTargets&target_group_arn={tg}")[1]
    assert [c["seq"] for c in only["calls"]] == [ok["seq"]]
    # moto's own errors are logged with their code; control calls are not logged
    with pytest.raises(ClientError):
        aws.elb.deregister_targets(TargetGroupArn=tg, Targets=[{"Id": "10.9.9.9", "Port": 80}])
    c = ctl(emu, "GET", f"calls?since={out['last_seq']}")[1]["calls"]
    assert [(x["operation"], x["error_code"]) for x in c] == [("DeregisterTargets", "InvalidTarget")]
    # the real node's forwarder names the calling pod in X-Forwarded-For: recorded as sent
    def from_pod(request, **_):
        request.headers["X-Forwarded-For"] = "10.244.0.9"
    aws.elb.meta.events.register("before-send.*.DescribeTargetHealth", from_pod)
    try:
        aws.elb.describe_target_health(TargetGroupArn=tg)
    finally:
        aws.elb.meta.events.unregister("before-send.*.DescribeTargetHealth", from_pod)
    c = ctl(emu, "GET", f"calls?since={out['last_seq'] + 1}")[1]["calls"]
    assert [(x["operation"], x["forwarded_for"]) for x in c] == [("DescribeTargetHealth", "10.244.0.9")]
    assert ctl(emu, "DELETE", "calls")[0] == 200
    assert ctl(emu, "GET", "calls")[1]["calls"] == []


def test_reset_clears_everything(emu, aws):
    tg = aws.tg("reset")
    ctl(emu, "POST", "faults", {"operation": "DescribeVpcs", "code": "Throttling"})
    ctl(emu, "POST", "health-policy", {"scope": "global", "initial_seconds": 0, "then": "unhealthy"})
    ctl(emu, "POST", "health-policy", {"scope": "target_group", "target_group_arn": tg, "force": "unhealthy"})
    ctl(emu, "POST", "settings", {"time_scale": 1})
    ctl(emu, "POST", "token-buckets", {"enabled": True})
    assert ctl(emu, "POST", "reset")[0] == 200
    assert ctl(emu, "GET", "calls")[1]["calls"] == []
    assert ctl(emu, "GET", "faults")[1]["faults"] == []
    assert ctl(emu, "GET", "token-buckets")[1]["enabled"] is False
    assert ctl(emu, "GET", "settings")[1]["time_scale"] == 0.01
    pol = ctl(emu, "GET", "health-policy")[1]
    assert pol["global"] == {"initial_seconds": 2.0, "then": "healthy"}
    assert pol["target_group"] == {} and pol["target"] == []
    assert aws.elb.describe_target_groups()["TargetGroups"] == []  # moto state gone too
    aws.ec2.describe_vpcs()  # fault gone


def test_moto_api_and_control_errors(emu):
    with urllib.request.urlopen(emu + "/moto-api/data.json", timeout=10) as r:
        assert r.status == 200 and "elbv2" in json.loads(r.read())
    assert ctl(emu, "GET", "nope")[0] == 404
    assert ctl(emu, "POST", "faults", {"operation": "X"})[0] == 400
    assert ctl(emu, "POST", "faults", {"code": "Throttling", "rate": 2})[0] == 400


def _raw(url, service, form):
    auth = (f"AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/{service}/aws4_request, "
            "SignedHeaders=host, Signature=00")
    req = urllib.request.Request(url + "/", data=form.encode(), method="POST", headers={
        "Authorization": auth, "Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_raw_error_bodies_are_aws_query_shapes(emu):
    ctl(emu, "POST", "faults", {"service": "elasticloadbalancing", "operation": "RegisterTargets",
                                "code": "Throttling", "count": 1})
    st, body = _raw(emu, "elasticloadbalancing", "Action=RegisterTargets&Version=2015-12-01&TargetGroupArn=x")
    assert st == 400
    assert body.startswith('<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/">'
                           "<Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message>"
                           "</Error><RequestId>")
    ctl(emu, "POST", "faults", {"service": "ec2", "operation": "DescribeSubnets", "code": "Unavailable",
                                "http_status": 503, "message": "a<b", "count": 1})
    st, body = _raw(emu, "ec2", "Action=DescribeSubnets&Version=2016-11-15")
    assert st == 503
    assert "<Response><Errors><Error><Code>Unavailable</Code><Message>a&lt;b</Message></Error></Errors><RequestID>" \
        in body


def test_concurrent_calls_are_consistent(emu, aws):
    import concurrent.futures

    ctl(emu, "POST", "health-policy", {"scope": "global", "initial_seconds": 0})
    tg = aws.tg("concurrent")

    def worker(n):
        elb = client(emu, "elbv2")
        for i in range(10):
            elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": f"10.1.{n}.{i}", "Port": 80 + i % 2}])
            elb.describe_target_health(TargetGroupArn=tg)
        return n

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(worker, range(4))) == [0, 1, 2, 3]
    assert len(aws.health(tg)) == 40
    calls = ctl(emu, "GET", f"calls?operation=RegisterTargets&target_group_arn={tg}")[1]["calls"]
    assert len(calls) == 40 and all(c["outcome"] == "ok" for c in calls)


# ---- load balancer / listener / security group patches -------------------------------------------------------------

def _nlb(aws, name, **kw):
    subnets = [s["SubnetId"] for s in aws.ec2.describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [aws.vpc]}])["Subnets"]][:2]
    args = dict(Name=name, Type="network", Scheme="internal", SubnetMappings=[{"SubnetId": s} for s in subnets])
    args.update(kw)
    return aws.elb.create_load_balancer(**args)["LoadBalancers"][0], subnets


def test_nlb_arns_addresses_and_duplicate_names(emu, aws):
    lb, subnets = _nlb(aws, "emu-nlb")
    assert ":loadbalancer/net/emu-nlb/" in lb["LoadBalancerArn"]
    alb = aws.elb.create_load_balancer(Name="emu-alb", Subnets=subnets)["LoadBalancers"][0]
    assert ":loadbalancer/app/emu-alb/" in alb["LoadBalancerArn"]
    # same name and settings: the existing load balancer; different settings: DuplicateLoadBalancerName
    again, _ = _nlb(aws, "emu-nlb")
    assert again["LoadBalancerArn"] == lb["LoadBalancerArn"]
    with pytest.raises(ClientError) as e:
        _nlb(aws, "emu-nlb", Scheme="internet-facing")
    assert code_of(e) == "DuplicateLoadBalancerName"
    # subnet mappings come back as LoadBalancerAddresses
    fixed, _ = _nlb(aws, "emu-fixed", SubnetMappings=[{"SubnetId": subnets[0], "PrivateIPv4Address": "172.31.0.10"},
                                                      {"SubnetId": subnets[1]}])
    d = aws.elb.describe_load_balancers(LoadBalancerArns=[fixed["LoadBalancerArn"]])["LoadBalancers"][0]
    addrs = {az["SubnetId"]: az.get("LoadBalancerAddresses") for az in d["AvailabilityZones"]}
    assert addrs[subnets[0]] == [{"PrivateIPv4Address": "172.31.0.10"}] and not addrs[subnets[1]]
    aws.elb.set_ip_address_type(LoadBalancerArn=alb["LoadBalancerArn"], IpAddressType="dualstack-without-public-ipv4")
    d = aws.elb.describe_load_balancers(LoadBalancerArns=[alb["LoadBalancerArn"]])["LoadBalancers"][0]
    assert d["IpAddressType"] == "dualstack-without-public-ipv4"


def test_listener_ports_and_describe_tags_limits(emu, aws):
    lb, _ = _nlb(aws, "emu-listen")
    tg = aws.elb.create_target_group(Name="emu-listen", Protocol="TCP", Port=80, VpcId=aws.vpc,
                                     TargetType="ip")["TargetGroups"][0]["TargetGroupArn"]
    action = [{"Type": "forward", "TargetGroupArn": tg}]
    listener = aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Port=80, Protocol="TCP",
                                       DefaultActions=action)["Listeners"][0]["ListenerArn"]
    assert ":listener/net/emu-listen/" in listener
    with pytest.raises(ClientError) as e:
        aws.elb.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Port=80, Protocol="TCP", DefaultActions=action)
    assert code_of(e) == "DuplicateListener"
    with pytest.raises(ClientError) as e:
        aws.elb.describe_tags(ResourceArns=[tg] * 21)
    assert code_of(e) == "ValidationError"
    assert len(aws.elb.describe_tags(ResourceArns=[tg, listener, lb["LoadBalancerArn"]])["TagDescriptions"]) == 3
    for gone, code in ((tg[:-4] + "0000", "TargetGroupNotFound"), (listener[:-4] + "0000", "ListenerNotFound"),
                       (lb["LoadBalancerArn"][:-4] + "0000", "LoadBalancerNotFound")):
        with pytest.raises(ClientError) as e:
            aws.elb.describe_tags(ResourceArns=[tg, gone])
        assert code_of(e) == code


def test_security_group_in_use_is_a_dependency_violation(emu, aws):
    sg = aws.ec2.create_security_group(GroupName="emu-dep", Description="d", VpcId=aws.vpc)["GroupId"]
    subnet = aws.ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [aws.vpc]}])["Subnets"][0]["SubnetId"]
    eni = aws.ec2.create_network_interface(SubnetId=subnet, Groups=[sg])["NetworkInterface"]["NetworkInterfaceId"]
    with pytest.raises(ClientError) as e:
        aws.ec2.delete_security_group(GroupId=sg)
    assert code_of(e) == "DependencyViolation"
    aws.ec2.delete_network_interface(NetworkInterfaceId=eni)
    lb, _ = _nlb(aws, "emu-sg", SecurityGroups=[sg])
    with pytest.raises(ClientError) as e:
        aws.ec2.delete_security_group(GroupId=sg)
    assert code_of(e) == "DependencyViolation"
    aws.elb.delete_load_balancer(LoadBalancerArn=lb["LoadBalancerArn"])
    # Named as the source of another group's rule: in use until that rule is revoked.
    other = aws.ec2.create_security_group(GroupName="emu-dep-ref", Description="d", VpcId=aws.vpc)["GroupId"]
    rule = [{"IpProtocol": "tcp", "FromPort": 30080, "ToPort": 30080, "UserIdGroupPairs": [{"GroupId": sg}]}]
    aws.ec2.authorize_security_group_ingress(GroupId=other, IpPermissions=rule)
    with pytest.raises(ClientError) as e:
        aws.ec2.delete_security_group(GroupId=sg)
    assert code_of(e) == "DependencyViolation"
    aws.ec2.revoke_security_group_ingress(GroupId=other, IpPermissions=rule)
    aws.ec2.delete_security_group(GroupId=sg)
    aws.ec2.delete_security_group(GroupId=other)
