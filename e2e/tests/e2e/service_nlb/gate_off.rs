//! ALBC's gate `EnableServiceController`: set false, the leader never starts the Service
//! controller, so a LoadBalancer Service of ours gets no NLB, no finalizer and no status; started
//! again at the gate's default, the same Service gets its NLB.

use super::*;

#[tokio::test]
#[ignore = "end-to-end: needs the local environment (e2e/up); e2e/test-all runs it with --include-ignored"]
async fn without_the_service_controller_gate_a_service_gets_nothing_until_the_gate_is_back() {
    let Some(f) = setup("svc_nlb_gate_off", 1).await else { return };
    f.services().create(&PostParams::default(), &nlb_service("web", &[])).await.expect("create service");
    let mark = f.emu.mark().await;
    let ctl = f.controller(&["--feature-gates=EnableServiceController=false"]);
    // The leader's decision, logged once it leads with synced caches: after this line no Service
    // reconcile can run in this process, so what follows is not a race with a slow first pass.
    eventually("the Service controller's disabled line", 90, || async {
        ctl.log_text().contains("Service controller disabled").then_some(())
    })
    .await;
    assert_eq!(f.writes_since(mark, &ctl).await, Vec::<String>::new(), "nothing written for the Service");
    assert_eq!(f.stack_arns("web").await, (vec![], vec![]), "no NLB, no target group");
    let s = f.services().get("web").await.unwrap();
    assert!(s.metadata.finalizers.unwrap_or_default().is_empty(), "no finalizer on a Service nobody reconciles");
    assert_eq!(f.hostname("web").await, None);
    ctl.terminate();

    // At the gate's default (true, as in ALBC) the same Service is built.
    let _ctl = f.controller(&[]);
    eventually("status.loadBalancer hostname", 90, || f.hostname("web")).await;
    let (lbs, tgs) = f.stack_arns("web").await;
    assert_eq!((lbs.len(), tgs.len()), (1, 1));
    f.wait_registered(&tgs[0]).await;
    f.services().delete("web", &DeleteParams::default()).await.unwrap();
    eventually("Service gone", 120, || async { f.services().get_opt("web").await.ok()?.is_none().then_some(()) }).await;
    assert_eq!(f.stack_arns("web").await, (vec![], vec![]), "deleted with the Service");
    kube_util::delete_namespace(&f.client, &f.ns).await;
}
