//! `create-acm-cert` with the `EnableCertificateManagement` gate: the Ingress's certificate is
//! requested from ACM for its host, validated through a record the controller writes in the Route 53
//! zone holding the host (the emulator issues it only once that record exists, as ACM does), and the
//! ALB listens on HTTPS 443 with it. `acm-pca-arn` makes it a private certificate: a new one is
//! requested, the listener moves to it, then the old one and its record are deleted. Deleting the
//! Ingress deletes its certificate.

use super::*;

/// The certificates of the ALB's HTTPS listener on 443 (default first), once it has one.
async fn https_certificates(f: &Fixture, stack: &str) -> Option<Vec<String>> {
    let (lbs, _) = f.stack_arns(stack).await;
    let lb = lbs.first()?;
    let ls = f.elb.describe_listeners().load_balancer_arn(lb).send().await.ok()?;
    let l = ls.listeners().iter().find(|l| l.port() == Some(443))?;
    Some(l.certificates().iter().filter_map(|c| c.certificate_arn().map(str::to_string)).collect())
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn created_certificates_are_requested_validated_used_and_deleted() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_created_certificates").await else { return };
    let ns = ns_name("ing_acm");
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;
    let domain = format!("{ns}.example.test");
    let zone = aws::route53_hosted_zone(&f.env, &domain).await;
    let gate = "--feature-gates=EnableCertificateManagement=true";
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing-acm", &["--enable-service-controller=false", gate]);
    let stack = format!("{ns}/web");
    let host = format!("www.{domain}");
    let ing = with_hosts(
        ingress("web", vec![path("/a", "svc-a")], &[("create-acm-cert", "true")]),
        std::slice::from_ref(&host),
        &[],
    );
    f.ingresses(&ns).create(&PostParams::default(), &ing).await.expect("create ingress");

    let first = eventually("an HTTPS listener with the requested certificate", 120, || async {
        let certs = https_certificates(&f, &stack).await?;
        (certs.len() == 1).then(|| certs[0].clone())
    })
    .await;
    let cert = aws::acm_describe(&f.env, &first).await.expect("the certificate");
    assert_eq!(cert["Status"], "ISSUED");
    assert_eq!(cert["Type"], "AMAZON_ISSUED");
    assert_eq!(cert["DomainName"], host.as_str());
    let tags = aws::acm_tags(&f.env, &first).await;
    assert_eq!(tags.get("ingress.k8s.aws/stack"), Some(&stack));
    assert!(tags["ingress.k8s.aws/resource"].starts_with(&format!("amazon_issued/{host}-")), "{tags:?}");
    let record = cert["DomainValidationOptions"][0]["ResourceRecord"].clone();
    let name = record["Name"].as_str().unwrap().to_string();
    let records = aws::route53_records(&f.env, &zone).await;
    assert!(
        records.iter().any(|(n, t, _)| n.trim_end_matches('.') == name.trim_end_matches('.') && t == "CNAME"),
        "{records:?}"
    );
    let tg = f.target_group_of_service(&f.stack_arns(&stack).await.1, &ns, "svc-a").await;
    f.deployed_and_quiet(&ctl, &ns, "web", &tg, 2).await;

    // A private CA: another certificate (another resource ID); the listener moves, the old one goes.
    let pca = "arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/e2e";
    let patch = json!({"metadata": {"annotations": {format!("{ALB}/acm-pca-arn"): pca}}});
    f.ingresses(&ns).patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let second = eventually("the listener on a private certificate", 120, || async {
        let certs = https_certificates(&f, &stack).await?;
        (certs.len() == 1 && certs[0] != first).then(|| certs[0].clone())
    })
    .await;
    let cert = aws::acm_describe(&f.env, &second).await.expect("the private certificate");
    assert_eq!((cert["Type"].as_str(), cert["CertificateAuthorityArn"].as_str()), (Some("PRIVATE"), Some(pca)));
    eventually("the Amazon-issued certificate and its record deleted", 60, || async {
        let gone = aws::acm_describe(&f.env, &first).await.is_none();
        let records = aws::route53_records(&f.env, &zone).await;
        let record_gone = !records.iter().any(|(n, _, _)| n.trim_end_matches('.') == name.trim_end_matches('.'));
        (gone && record_gone).then_some(())
    })
    .await;

    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.expect("delete ingress");
    eventually("Ingress gone", 120, || async { f.ingresses(&ns).get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    assert_eq!(f.stack_arns(&stack).await, (vec![], vec![]));
    assert!(aws::acm_describe(&f.env, &second).await.is_none(), "the certificate leaves with its Ingress");
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}
