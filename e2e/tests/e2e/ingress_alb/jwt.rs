//! `jwt-validation` against the emulator (the action is ours there, `e2e/emulator/jwt_patches.py`):
//! the Ingress's rules on the HTTPS listener validate the token before they forward, the HTTP
//! listener's forward without it (ALBC's behaviour) with a BuildWarning naming the port; a changed
//! claim is one ModifyRule; authentication beside it and an invalid value each leave the ALB exactly
//! as it is, with a Warning saying why; removing the annotation takes the action out.

use super::*;

const JWKS: &str = "https://idp.example.com/.well-known/jwks.json";

fn jwt(scope: &str) -> String {
    json!({"issuer": "https://idp.example.com", "jwksEndpoint": JWKS,
        "additionalClaims": [{"format": "space-separated-values", "name": "scope", "values": [scope]}]})
    .to_string()
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn jwt_validation_guards_the_https_rules_and_follows_the_annotation() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_jwt").await else { return };
    let ns = ns_name("ing_jwt");
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;
    let cert = aws::acm_import_certificate(&f.env, &[&format!("{}.example.test", unique("jwt"))]).await;
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing-jwt", &["--enable-service-controller=false"]);
    let stack = format!("{ns}/web");
    let with = |extra: &[(&str, String)]| {
        let mut ann =
            vec![("listen-ports", r#"[{"HTTP":80},{"HTTPS":443}]"#.to_string()), ("certificate-arn", cert.clone())];
        ann.extend(extra.iter().map(|(k, v)| (*k, v.clone())));
        let ann: Vec<(&str, &str)> = ann.iter().map(|(k, v)| (*k, v.as_str())).collect();
        ingress("web", vec![path("/api", "svc-a")], &ann)
    };
    let replace = |ing: Ingress| f.replace_ingress(&ns, ing);
    let actions = |rules: Vec<RuleText>| rules.into_iter().map(|r| r.actions).collect::<Vec<_>>();
    let guarded = |scope: &str| {
        vec![vec![
            format!("jwt-validation https://idp.example.com jwks {JWKS} claims [scope=space-separated-values:{scope}]"),
            "forward svc-a:1".to_string(),
        ]]
    };
    let open = vec![vec!["forward svc-a:1".to_string()]];

    // Created with JWT validation: the HTTPS rule validates, the HTTP rule forwards (a BuildWarning
    // says so).
    f.ingresses(&ns).create(&PostParams::default(), &with(&[("jwt-validation", jwt("orders:read"))])).await.unwrap();
    eventually("hostname", 90, || f.hostname(&ns, "web")).await;
    let (lbs, tgs) = f.stack_arns(&stack).await;
    let rules = eventually("the HTTPS rule validates the token", 60, || async {
        let r = actions(f.rule_texts(&lbs[0], 443, &ns).await);
        (r == guarded("orders:read")).then_some(r)
    })
    .await;
    eprintln!("HTTPS rules: {rules:?}");
    assert_eq!(actions(f.rule_texts(&lbs[0], 80, &ns).await), open, "as in ALBC: no JWT validation on HTTP");
    let warning = eventually("BuildWarning about HTTP", 60, || async {
        notes(&f, &ns, "BuildWarning", "web").await.into_iter().find(|n| n.contains("HTTP port 80"))
    })
    .await;
    assert!(warning.contains(&format!("{ALB}/jwt-validation")) && warning.contains("ssl-redirect"), "{warning}");
    f.deployed_and_quiet(&ctl, &ns, "web", &tgs[0], 2).await;

    // A claim changes: one ModifyRule, the HTTPS rule's.
    let mark = f.emu.mark().await;
    replace(with(&[("jwt-validation", jwt("orders:write"))])).await;
    eventually("the new claim", 60, || async {
        (actions(f.rule_texts(&lbs[0], 443, &ns).await) == guarded("orders:write")).then_some(())
    })
    .await;
    f.settled(&ctl, &ns, "web", "the claim changed").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyRule"]);

    // Authentication beside it is refused: a Warning, the ALB left exactly as it is.
    let mark = f.emu.mark().await;
    let cognito = json!({"userPoolARN": "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_e2e",
        "userPoolClientID": "app", "userPoolDomain": "auth.example.com"})
    .to_string();
    replace(with(&[
        ("jwt-validation", jwt("orders:write")),
        ("auth-type", "cognito".into()),
        ("auth-idp-cognito", cognito),
    ]))
    .await;
    let note = eventually("FailedBuildModel: both", 60, || async {
        notes(&f, &ns, "FailedBuildModel", "web").await.into_iter().find(|n| n.contains("cannot both be configured"))
    })
    .await;
    assert!(note.contains(&format!("{ALB}/jwt-validation")) && note.contains("auth-type"), "{note}");
    f.settled(&ctl, &ns, "web", "the Warning about both").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "authentication and JWT: nothing changes");

    // An invalid value (the JWKS endpoint over plain HTTP): a Warning naming it, nothing changes.
    let mark = f.emu.mark().await;
    let plain =
        jwt("orders:write").replace("https://idp.example.com/.well-known", "http://idp.example.com/.well-known");
    replace(with(&[("jwt-validation", plain)])).await;
    let note = eventually("FailedBuildModel: the JWKS endpoint", 60, || async {
        notes(&f, &ns, "FailedBuildModel", "web").await.into_iter().find(|n| n.contains("not a full https:// URL"))
    })
    .await;
    assert!(note.contains(&format!("{ALB}/jwt-validation")), "{note}");
    f.settled(&ctl, &ns, "web", "the Warning about the endpoint").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "an invalid JWT setting changes nothing");
    assert_eq!(actions(f.rule_texts(&lbs[0], 443, &ns).await), guarded("orders:write"), "still validating");

    // Removed: the HTTPS rule forwards without it (one ModifyRule).
    let mark = f.emu.mark().await;
    replace(with(&[])).await;
    eventually("no JWT validation", 60, || async {
        (actions(f.rule_texts(&lbs[0], 443, &ns).await) == open).then_some(())
    })
    .await;
    f.settled(&ctl, &ns, "web", "the annotation removed").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyRule"]);

    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.unwrap();
    eventually("ALB deleted", 120, || async { f.stack_arns(&stack).await.0.is_empty().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}
