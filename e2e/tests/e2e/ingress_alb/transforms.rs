//! `transforms.<name>` against the emulator (rule transforms are ours there,
//! `e2e/emulator/transform_patches.py`): the backend's rules carry its rewrites, a change is one
//! ModifyRule, an invalid value leaves the ALB as it is with a Warning, and removing the annotation
//! resets the rule's transforms.

use super::*;

/// Each non-default rule of the listener on `port` as (path values, its transforms as text).
async fn transforms_of(f: &Fixture, lb: &str, port: i32) -> Vec<(Vec<String>, Vec<String>)> {
    let ls = f.elb.describe_listeners().load_balancer_arn(lb).send().await.expect("listeners");
    let Some(l) = ls.listeners().iter().find(|l| l.port() == Some(port)) else { return vec![] };
    let rs = f.elb.describe_rules().listener_arn(l.listener_arn().unwrap()).send().await.expect("rules");
    rs.rules()
        .iter()
        .filter(|r| r.is_default() != Some(true))
        .map(|r| {
            let paths = r
                .conditions()
                .iter()
                .filter_map(|c| c.path_pattern_config())
                .flat_map(|p| p.values().to_vec())
                .collect();
            let transforms = r
                .transforms()
                .iter()
                .map(|t| {
                    let rewrites = t
                        .host_header_rewrite_config()
                        .map(|c| c.rewrites())
                        .or(t.url_rewrite_config().map(|c| c.rewrites()))
                        .unwrap_or_default();
                    let shown: Vec<String> = rewrites
                        .iter()
                        .map(|w| format!("{} -> {}", w.regex().unwrap_or_default(), w.replace().unwrap_or_default()))
                        .collect();
                    format!("{} {}", t.r#type().map(|k| k.as_str()).unwrap_or_default(), shown.join(", "))
                })
                .collect();
            (paths, transforms)
        })
        .collect()
}

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn rewrites_follow_the_transforms_annotation() {
    let _serial = SERIAL.lock().await;
    let Some(f) = setup("ingress_alb_transforms").await else { return };
    let ns = ns_name("ing_xform");
    f.namespace_with_backends(&ns, &[("svc-a", "a")]).await;
    let ctl = ControllerProc::start(&f.env, &ns, "lbc-e2e-ing-xform", &["--enable-service-controller=false"]);
    let stack = format!("{ns}/web");
    let url = json!([{"type": "url-rewrite",
        "urlRewriteConfig": {"rewrites": [{"regex": "^/api/(.*)$", "replace": "/$1"}]}}])
    .to_string();
    let with = |transforms: Option<&str>| {
        let ann: Vec<(&str, &str)> = transforms.map(|t| ("transforms.svc-a", t)).into_iter().collect();
        ingress("web", vec![path("/api", "svc-a")], &ann)
    };
    let replace = |ing: Ingress| f.replace_ingress(&ns, ing);
    let paths = || vec!["/api".to_string(), "/api/*".to_string()];
    let rewritten = |t: &[&str]| vec![(paths(), t.iter().map(|s| s.to_string()).collect::<Vec<_>>())];

    // Created with a URL rewrite.
    f.ingresses(&ns).create(&PostParams::default(), &with(Some(url.as_str()))).await.expect("create ingress");
    eventually("hostname", 90, || f.hostname(&ns, "web")).await;
    let (lbs, tgs) = f.stack_arns(&stack).await;
    eventually("the rule rewrites the URL", 60, || async {
        (transforms_of(&f, &lbs[0], 80).await == rewritten(&["url-rewrite ^/api/(.*)$ -> /$1"])).then_some(())
    })
    .await;
    f.deployed_and_quiet(&ctl, &ns, "web", &tgs[0], 2).await;

    // A host-header rewrite added: one ModifyRule.
    let mark = f.emu.mark().await;
    let both = json!([
        {"type": "host-header-rewrite",
         "hostHeaderRewriteConfig": {"rewrites": [{"regex": "^shop\\.example\\.com$", "replace": "shop.internal"}]}},
        {"type": "url-rewrite", "urlRewriteConfig": {"rewrites": [{"regex": "^/api/(.*)$", "replace": "/$1"}]}}])
    .to_string();
    replace(with(Some(both.as_str()))).await;
    let want =
        rewritten(&["host-header-rewrite ^shop\\.example\\.com$ -> shop.internal", "url-rewrite ^/api/(.*)$ -> /$1"]);
    eventually("both rewrites", 60, || async { (transforms_of(&f, &lbs[0], 80).await == want).then_some(()) }).await;
    f.settled(&ctl, &ns, "web", "both rewrites").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyRule"]);

    // Two URL rewrites (AWS takes one): a Warning naming the annotation, nothing changes.
    let mark = f.emu.mark().await;
    let two = json!([
        {"type": "url-rewrite", "urlRewriteConfig": {"rewrites": [{"regex": "^/a$", "replace": "/b"}]}},
        {"type": "url-rewrite", "urlRewriteConfig": {"rewrites": [{"regex": "^/c$", "replace": "/d"}]}}])
    .to_string();
    replace(with(Some(two.as_str()))).await;
    let note = eventually("FailedBuildModel naming the transforms", 60, || async {
        notes(&f, &ns, "FailedBuildModel", "web").await.into_iter().find(|n| n.contains("2 url-rewrite transforms"))
    })
    .await;
    assert!(note.contains(&format!("{ALB}/transforms.svc-a")), "{note}");
    f.settled(&ctl, &ns, "web", "the Warning about the transforms").await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "an invalid transform changes nothing");
    assert_eq!(transforms_of(&f, &lbs[0], 80).await, want);

    // Removed: the rule's transforms are reset (one ModifyRule).
    let mark = f.emu.mark().await;
    replace(with(None)).await;
    eventually("no rewrite", 60, || async { (transforms_of(&f, &lbs[0], 80).await == rewritten(&[])).then_some(()) })
        .await;
    f.settled(&ctl, &ns, "web", "the annotation removed").await;
    assert_eq!(f.writes_since(mark, &ctl).await, ["ModifyRule"]);

    f.ingresses(&ns).delete("web", &DeleteParams::default()).await.unwrap();
    eventually("ALB deleted", 120, || async { f.stack_arns(&stack).await.0.is_empty().then_some(()) }).await;
    drop(ctl);
    kube_util::delete_namespace(&f.client, &ns).await;
}
