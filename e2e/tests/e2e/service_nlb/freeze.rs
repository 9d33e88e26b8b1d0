//! Issue 14 item 1 for Services: a controller restarted with another `--load-balancer-class`
//! freezes the Services of the old class (their class cannot change) instead of deleting their NLBs.

use super::*;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn a_changed_load_balancer_class_flag_freezes_the_service_instead_of_deleting_its_nlb() {
    let Some(f) = setup("svc_nlb_freeze", 2).await else { return };
    let ctl = f.controller(&[]);
    let mut svc = nlb_service("web", &[]);
    svc.spec.as_mut().expect("spec").load_balancer_class = Some("service.k8s.aws/nlb".into());
    f.services().create(&PostParams::default(), &svc).await.expect("create service");
    let host = eventually("status.loadBalancer hostname", 90, || f.hostname("web")).await;
    let (lbs, tgs) = f.stack_arns("web").await;
    assert_eq!((lbs.len(), tgs.len()), (1, 1));
    let want = f.wait_registered(&tgs[0]).await;
    ctl.terminate();

    // Restarted with another class: a Warning naming both, proof the Service was looked at.
    let mark = f.emu.mark().await;
    let ctl = f.controller(&["--load-balancer-class=corp.example/nlb"]);
    let note = eventually("Frozen Warning", 90, || async { f.warnings("Frozen").await.into_iter().next() }).await;
    for want in ["\"service.k8s.aws/nlb\"", "\"corp.example/nlb\"", "--load-balancer-class=service.k8s.aws/nlb"] {
        assert!(note.contains(want), "{want}: {note}");
    }
    // A Service reconcile and a binding reconcile after the Warning, then nothing written.
    f.settled(&ctl, "web", "the Frozen Warning").await;
    let services = f.services();
    ctl.settled("targetGroupBinding", "the Frozen Warning", || kube_util::poke(&services, "web")).await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "a frozen Service is not written to");
    assert_eq!(f.stack_arns("web").await, (lbs.clone(), tgs.clone()), "the NLB and target group stay");
    assert_eq!(f.hostname("web").await.as_deref(), Some(host.as_str()));
    assert_eq!(aws::registered(&f.elb, &tgs[0]).await, want, "targets stay registered");
    let s = f.services().get("web").await.unwrap();
    assert!(s.metadata.finalizers.unwrap_or_default().contains(&"service.k8s.aws/resources".to_string()));
    ctl.terminate();

    // The right class again: deleting the Service still deletes its NLB.
    let _ctl = f.controller(&[]);
    f.services().delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Service gone", 120, || async { f.services().get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    let (lbs, tgs) = f.stack_arns("web").await;
    assert!(lbs.is_empty() && tgs.is_empty(), "left behind: {lbs:?} {tgs:?}");
    kube_util::delete_namespace(&f.client, &f.ns).await;
}
