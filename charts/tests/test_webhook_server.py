"""The webhook server's limits and client authentication as the chart renders them (docs/webhooks.md#limits):
nothing beyond the controller's defaults unless asked; the body and concurrency limits as flags; the request
deadline kept 2 s below the webhook configurations' timeoutSeconds; a client CA ConfigMap mounted read-only and
named by --webhook-client-ca-file; and a memory limit on the controller (the overload test measures against it).
"""
from test_chart import one, render  # noqa: F401
from test_chart import helm  # noqa: F401  (fixture)


def pod(docs):
    return one(docs, "Deployment")["spec"]["template"]["spec"]


def args_of(docs):
    return pod(docs)["containers"][0]["args"]


def flags(args, prefix):
    return [a for a in args if a.startswith(prefix)]


def test_defaults_render_no_limit_flags_and_keep_a_memory_limit(helm, tmp_path):
    docs = render(helm, tmp_path, {})
    args = args_of(docs)
    for f in ("--webhook-max-body-bytes", "--webhook-max-concurrent-requests", "--webhook-request-timeout",
              "--webhook-client-ca-file"):
        assert not flags(args, f), f"{f}: the controller's default applies"
    assert not [v for v in pod(docs).get("volumes") or [] if v["name"] == "webhook-client-ca"]
    # webhook/src/limits.rs sizes its defaults for this limit; e2e/tests/e2e/webhook_overload.rs measures against it.
    assert pod(docs)["containers"][0]["resources"]["limits"]["memory"] == "512Mi"
    hooks = [w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]]
    assert hooks and all(w["timeoutSeconds"] == 10 for w in hooks), "the 8 s default deadline is 2 s below"


def test_limits_and_deadline_follow_the_values(helm, tmp_path):
    docs = render(helm, tmp_path, {"webhookServer": {"maxBodyBytes": 2097152, "maxConcurrentRequests": 64},
                                   "webhookConfig": {"timeoutSeconds": 15}})
    args = args_of(docs)
    assert flags(args, "--webhook-max-body-bytes") == ["--webhook-max-body-bytes=2097152"]
    assert flags(args, "--webhook-max-concurrent-requests") == ["--webhook-max-concurrent-requests=64"]
    assert flags(args, "--webhook-request-timeout") == ["--webhook-request-timeout=13s"]
    short = args_of(render(helm, tmp_path, {"webhookConfig": {"timeoutSeconds": 2}}))
    assert flags(short, "--webhook-request-timeout") == ["--webhook-request-timeout=1s"]


def test_client_ca_configmap_is_mounted_read_only_and_named_by_the_flag(helm, tmp_path):
    docs = render(helm, tmp_path, {"webhookServer": {"clientCAConfigMap": "apiserver-webhook-client-ca",
                                                     "clientCAKey": "bundle.pem"}})
    assert flags(args_of(docs), "--webhook-client-ca-file") == [
        "--webhook-client-ca-file=/etc/aws-lb-controller/webhook-client-ca/bundle.pem"]
    spec = pod(docs)
    vol = [v for v in spec["volumes"] if v["name"] == "webhook-client-ca"]
    assert vol == [{"name": "webhook-client-ca", "configMap": {"name": "apiserver-webhook-client-ca"}}]
    mounts = [m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "webhook-client-ca"]
    assert mounts == [{"name": "webhook-client-ca", "mountPath": "/etc/aws-lb-controller/webhook-client-ca",
                       "readOnly": True}]
