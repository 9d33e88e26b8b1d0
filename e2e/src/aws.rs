//! AWS SDK clients pointed at the emulator, and helpers to create test target groups.

use crate::Env;
use aws_credential_types::Credentials;
use aws_sdk_elasticloadbalancingv2 as elbv2;
use elbv2::operation::describe_target_health::DescribeTargetHealthError;
use std::collections::{BTreeMap, BTreeSet};

/// Access key ID of the harness's own calls, so the call log tells them from the controller's.
pub const HARNESS_ACCESS_KEY: &str = "E2EHARNESS";

pub async fn elbv2(env: &Env) -> elbv2::Client {
    let conf = elbv2::Config::builder()
        .behavior_version(elbv2::config::BehaviorVersion::latest())
        .region(elbv2::config::Region::new(env.get("AWS_REGION").to_string()))
        .credentials_provider(Credentials::new(HARNESS_ACCESS_KEY, "testing", None, None, "e2e"))
        .endpoint_url(env.aws_endpoint())
        // Tests see every AWS answer as it is, throttling included.
        .retry_config(elbv2::config::retry::RetryConfig::disabled())
        .build();
    elbv2::Client::from_conf(conf)
}

/// Creates an IP target group in the e2e VPC; returns its ARN.
pub async fn create_ip_target_group(env: &Env, client: &elbv2::Client, name: &str, port: i32) -> String {
    create_target_group(env, client, name, port, elbv2::types::TargetTypeEnum::Ip).await
}

/// Creates a TCP target group of `target_type` in the e2e VPC; returns its ARN.
pub async fn create_target_group(
    env: &Env,
    client: &elbv2::Client,
    name: &str,
    port: i32,
    target_type: elbv2::types::TargetTypeEnum,
) -> String {
    let out = client
        .create_target_group()
        .name(name)
        .protocol(elbv2::types::ProtocolEnum::Tcp)
        .port(port)
        .vpc_id(env.get("LBC_VPC_ID"))
        .target_type(target_type)
        .health_check_interval_seconds(5)
        .health_check_timeout_seconds(4)
        .send()
        .await
        .expect("CreateTargetGroup");
    out.target_groups()[0].target_group_arn().expect("arn").to_string()
}

/// Registered (not draining) targets as `ip:port`, sorted.
pub async fn registered(client: &elbv2::Client, arn: &str) -> BTreeSet<String> {
    try_registered(client, arn).await.expect("DescribeTargetHealth")
}

/// [`registered`], or the error when the target group cannot be described (for example deleted
/// between a listing and this look).
pub async fn try_registered(
    client: &elbv2::Client,
    arn: &str,
) -> Result<BTreeSet<String>, elbv2::error::SdkError<DescribeTargetHealthError>> {
    let out = client.describe_target_health().target_group_arn(arn).send().await?;
    Ok(out
        .target_health_descriptions()
        .iter()
        .filter(|d| {
            let s = d.target_health().and_then(|h| h.state()).map(|s| s.as_str().to_string()).unwrap_or_default();
            s != "draining" && s != "unused"
        })
        .filter_map(|d| d.target().map(|t| format!("{}:{}", t.id().unwrap_or_default(), t.port().unwrap_or_default())))
        .collect())
}

/// The controller's EC2 networking adapter, signed as the harness, for tests that inspect
/// security groups and subnets.
pub async fn networking(env: &Env) -> lbc_aws::net::SdkNetworking {
    use lbc_aws::config::{ClientSettings, Endpoints, build_clients};
    let runner = lbc_aws::call::CallRunner::new(
        lbc_aws::throttle::Throttler::new(lbc_model::throttle::default_rules()),
        lbc_aws::metrics::AwsMetrics::default(),
        0,
    );
    let settings = ClientSettings {
        region: env.get("AWS_REGION").into(),
        endpoints: Endpoints::all(env.aws_endpoint()),
        credentials: Some(aws_credential_types::provider::SharedCredentialsProvider::new(Credentials::new(
            HARNESS_ACCESS_KEY,
            "testing",
            None,
            None,
            "e2e",
        ))),
    };
    lbc_aws::net::SdkNetworking::new(build_clients(&settings).await.ec2, runner)
}

/// One call to a JSON-protocol service of the emulator (`X-Amz-Target: <target>.<operation>`), signed as
/// the harness for `signing_name`, as raw JSON (the e2e crate needs no ACM or WAFv2 SDK).
async fn json_call(
    env: &Env,
    signing_name: &str,
    target: &str,
    operation: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let region = env.get("AWS_REGION");
    let auth = format!(
        "AWS4-HMAC-SHA256 Credential={HARNESS_ACCESS_KEY}/20260101/{region}/{signing_name}/aws4_request, SignedHeaders=host, Signature=0"
    );
    reqwest::Client::new()
        .post(env.aws_endpoint())
        .header("X-Amz-Target", format!("{target}.{operation}"))
        .header("Content-Type", "application/x-amz-json-1.1")
        .header("Authorization", auth)
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{signing_name} {operation}: {e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("{signing_name} {operation} answer: {e}"))
}

async fn acm_call(env: &Env, operation: &str, body: serde_json::Value) -> serde_json::Value {
    json_call(env, "acm", "CertificateManager", operation, body).await
}

/// One WAFv2 call to the emulator (REGIONAL scope is the caller's to set).
pub async fn wafv2_call(env: &Env, operation: &str, body: serde_json::Value) -> serde_json::Value {
    json_call(env, "wafv2", "AWSWAF_20190729", operation, body).await
}

/// Creates a REGIONAL web ACL in the emulator; returns its ARN.
pub async fn wafv2_web_acl(env: &Env, name: &str) -> String {
    let body = serde_json::json!({
        "Name": name, "Scope": "REGIONAL", "DefaultAction": {"Allow": {}},
        "VisibilityConfig": {"SampledRequestsEnabled": false, "CloudWatchMetricsEnabled": false, "MetricName": name},
    });
    let out = wafv2_call(env, "CreateWebACL", body).await;
    out["Summary"]["ARN"].as_str().unwrap_or_else(|| panic!("no web ACL ARN in {out}")).to_string()
}

/// ARN of the web ACL the emulator associates with `resource_arn`.
pub async fn wafv2_web_acl_of(env: &Env, resource_arn: &str) -> Option<String> {
    let out = wafv2_call(env, "GetWebACLForResource", serde_json::json!({ "ResourceArn": resource_arn })).await;
    out["WebACL"]["ARN"].as_str().map(String::from)
}

/// One WAF Classic (WAF Regional) call to the emulator.
pub async fn waf_classic_call(env: &Env, operation: &str, body: serde_json::Value) -> serde_json::Value {
    json_call(env, "waf-regional", "AWSWAF_Regional_20161128", operation, body).await
}

/// Creates a WAF Classic web ACL in the emulator; returns its ID.
pub async fn waf_classic_web_acl(env: &Env, name: &str) -> String {
    let token = waf_classic_call(env, "GetChangeToken", serde_json::json!({})).await;
    let body = serde_json::json!({
        "Name": name, "MetricName": name.replace('-', ""), "DefaultAction": {"Type": "ALLOW"},
        "ChangeToken": token["ChangeToken"],
    });
    let out = waf_classic_call(env, "CreateWebACL", body).await;
    out["WebACL"]["WebACLId"].as_str().unwrap_or_else(|| panic!("no web ACL ID in {out}")).to_string()
}

/// ID of the WAF Classic web ACL the emulator associates with `resource_arn`.
pub async fn waf_classic_web_acl_of(env: &Env, resource_arn: &str) -> Option<String> {
    let out = waf_classic_call(env, "GetWebACLForResource", serde_json::json!({ "ResourceArn": resource_arn })).await;
    out["WebACLSummary"]["WebACLId"].as_str().map(String::from)
}

/// One Shield call to the emulator.
pub async fn shield_call(env: &Env, operation: &str, body: serde_json::Value) -> serde_json::Value {
    json_call(env, "shield", "AWSShield_20160616", operation, body).await
}

/// `(id, name)` of the Shield Advanced protection of `resource_arn` in the emulator.
pub async fn shield_protection_of(env: &Env, resource_arn: &str) -> Option<(String, String)> {
    let out = shield_call(env, "DescribeProtection", serde_json::json!({ "ResourceArn": resource_arn })).await;
    let p = &out["Protection"];
    Some((p["Id"].as_str()?.to_string(), p["Name"].as_str().unwrap_or_default().to_string()))
}

fn certificate_arn(answer: serde_json::Value) -> String {
    answer["CertificateArn"].as_str().unwrap_or_else(|| panic!("no CertificateArn in {answer}")).to_string()
}

/// Requests a certificate from the emulator's ACM (moto) and returns its ARN: ELBv2 there, like
/// AWS, accepts only certificates that exist. It stays PENDING_VALIDATION for a minute.
pub async fn acm_certificate(env: &Env, domain: &str) -> String {
    certificate_arn(acm_call(env, "RequestCertificate", serde_json::json!({ "DomainName": domain })).await)
}

/// Imports a self-signed certificate (common name `names[0]`, every name a SAN) into the
/// emulator's ACM and returns its ARN: ISSUED at once, type IMPORTED, key EC_prime256v1.
pub async fn acm_import_certificate(env: &Env, names: &[&str]) -> String {
    use base64::Engine as _;
    let mut params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
        .expect("certificate names");
    params.distinguished_name.push(rcgen::DnType::CommonName, names[0]);
    let key = rcgen::KeyPair::generate().expect("key pair");
    let cert = params.self_signed(&key).expect("self-signed certificate");
    let b64 = |pem: String| base64::engine::general_purpose::STANDARD.encode(pem);
    let body = serde_json::json!({ "Certificate": b64(cert.pem()), "PrivateKey": b64(key.serialize_pem()) });
    certificate_arn(acm_call(env, "ImportCertificate", body).await)
}

/// Load balancers and target groups carrying `<tag_key>=<stack>` (e.g. `service.k8s.aws/stack=ns/name`).
pub async fn stack_arns(client: &elbv2::Client, tag_key: &str, stack: &str) -> (Vec<String>, Vec<String>) {
    let lbs = client.describe_load_balancers().send().await.expect("describe lbs");
    let tgs = client.describe_target_groups().send().await.expect("describe tgs");
    let arns: Vec<String> = lbs
        .load_balancers()
        .iter()
        .filter_map(|l| l.load_balancer_arn().map(String::from))
        .chain(tgs.target_groups().iter().filter_map(|t| t.target_group_arn().map(String::from)))
        .collect();
    let (mut lb, mut tg) = (Vec::new(), Vec::new());
    for chunk in arns.chunks(20) {
        for d in tags_of(client, chunk).await {
            let ours = d.tags().iter().any(|t| t.key() == Some(tag_key) && t.value() == Some(stack));
            let arn = d.resource_arn().unwrap_or_default().to_string();
            if ours && arn.contains(":loadbalancer/") {
                lb.push(arn);
            } else if ours {
                tg.push(arn);
            }
        }
    }
    (lb, tg)
}

/// DescribeTags for `arns`, skipping resources that other tests (sharing the emulator) delete
/// between a listing and this call: a single vanished ARN fails the whole batch.
pub async fn tags_of(client: &elbv2::Client, arns: &[String]) -> Vec<elbv2::types::TagDescription> {
    let describe = |arns: Vec<String>| client.describe_tags().set_resource_arns(Some(arns)).send();
    match describe(arns.to_vec()).await {
        Ok(out) => out.tag_descriptions().to_vec(),
        Err(e) if is_not_found(&e) => {
            let mut found = Vec::new();
            for arn in arns {
                match describe(vec![arn.clone()]).await {
                    Ok(out) => found.extend(out.tag_descriptions().iter().cloned()),
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => panic!("describe tags of {arn}: {e:?}"),
                }
            }
            found
        }
        Err(e) => panic!("describe tags: {e:?}"),
    }
}

fn is_not_found<E: elbv2::error::ProvideErrorMetadata>(e: &E) -> bool {
    matches!(e.code(), Some("TargetGroupNotFound" | "LoadBalancerNotFound" | "ListenerNotFound"))
}

/// One Route 53 (REST) call to the emulator: the answer's text.
async fn route53_call(env: &Env, method: reqwest::Method, path: &str, body: Option<String>) -> String {
    let auth = format!(
        "AWS4-HMAC-SHA256 Credential={HARNESS_ACCESS_KEY}/20260101/us-east-1/route53/aws4_request, SignedHeaders=host, Signature=0"
    );
    let url = format!("{}/2013-04-01/{path}", env.aws_endpoint().trim_end_matches('/'));
    let mut req = reqwest::Client::new().request(method, url).header("Authorization", auth);
    if let Some(b) = body {
        req = req.header("Content-Type", "application/xml").body(b);
    }
    let answer = req.send().await.unwrap_or_else(|e| panic!("route53 {path}: {e}"));
    answer.text().await.unwrap_or_else(|e| panic!("route53 {path} answer: {e}"))
}

/// The text of every `<tag>…</tag>` in `xml`, in order.
fn xml_values(xml: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    xml.split(&open).skip(1).filter_map(|s| s.split_once(&close).map(|(v, _)| v.to_string())).collect()
}

/// Creates a public hosted zone in the emulator's Route 53; returns its ID (`/hostedzone/…`).
pub async fn route53_hosted_zone(env: &Env, name: &str) -> String {
    let body = format!(
        "<CreateHostedZoneRequest><Name>{name}</Name><CallerReference>{}</CallerReference></CreateHostedZoneRequest>",
        crate::unique("e2e")
    );
    let xml = route53_call(env, reqwest::Method::POST, "hostedzone", Some(body)).await;
    xml_values(&xml, "Id")
        .into_iter()
        .find(|i| i.contains("hostedzone"))
        .unwrap_or_else(|| panic!("no zone ID in {xml}"))
}

/// The (name, type, values) of every record of a hosted zone.
pub async fn route53_records(env: &Env, zone_id: &str) -> Vec<(String, String, Vec<String>)> {
    let id = zone_id.trim_start_matches("/hostedzone/");
    let xml = route53_call(env, reqwest::Method::GET, &format!("hostedzone/{id}/rrset"), None).await;
    xml.split("<ResourceRecordSet>")
        .skip(1)
        .map(|set| {
            let first = |t: &str| xml_values(set, t).into_iter().next().unwrap_or_default();
            (first("Name"), first("Type"), xml_values(set, "Value"))
        })
        .collect()
}

/// DescribeCertificate's `Certificate`, `None` when the certificate is gone.
pub async fn acm_describe(env: &Env, arn: &str) -> Option<serde_json::Value> {
    let out = acm_call(env, "DescribeCertificate", serde_json::json!({ "CertificateArn": arn })).await;
    out.get("Certificate").cloned()
}

/// A certificate's tags.
pub async fn acm_tags(env: &Env, arn: &str) -> BTreeMap<String, String> {
    let out = acm_call(env, "ListTagsForCertificate", serde_json::json!({ "CertificateArn": arn })).await;
    let tags = out["Tags"].as_array().cloned().unwrap_or_default();
    tags.iter()
        .map(|t| {
            (t["Key"].as_str().unwrap_or_default().to_string(), t["Value"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// Everything of one load-balancer stack that adoption must keep: ARNs of the load balancer, its
/// listeners, rules and target groups, and each target group's registered targets.
pub async fn stack_snapshot(client: &elbv2::Client, tag_key: &str, stack: &str) -> BTreeMap<String, Vec<String>> {
    let (lbs, tgs) = stack_arns(client, tag_key, stack).await;
    let mut out = BTreeMap::new();
    let mut listeners = Vec::new();
    let mut rules = Vec::new();
    for lb in &lbs {
        let ls = client.describe_listeners().load_balancer_arn(lb).send().await.expect("listeners");
        for l in ls.listeners() {
            let arn = l.listener_arn().unwrap_or_default().to_string();
            let rs = client.describe_rules().listener_arn(&arn).send().await.expect("rules");
            rules.extend(rs.rules().iter().map(|r| {
                format!(
                    "{} prio={} conditions={:?} actions={:?}",
                    r.rule_arn().unwrap_or_default(),
                    r.priority().unwrap_or_default(),
                    r.conditions(),
                    r.actions()
                )
            }));
            listeners.push(format!(
                "{arn} {:?}:{:?} default={:?} certs={:?} ssl={:?} alpn={:?}",
                l.protocol(),
                l.port(),
                l.default_actions(),
                l.certificates(),
                l.ssl_policy(),
                l.alpn_policy()
            ));
        }
    }
    for tg in &tgs {
        out.insert(format!("targets {tg}"), registered(client, tg).await.into_iter().collect());
    }
    out.insert("load balancers".into(), lbs);
    out.insert("target groups".into(), tgs);
    listeners.sort();
    rules.sort();
    out.insert("listeners".into(), listeners);
    out.insert("rules".into(), rules);
    out
}
