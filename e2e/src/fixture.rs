//! The common TargetGroupBinding scene: a namespace with a pod set `web` (port 8080), a Service
//! `web` (80 → 8080), an IP target group and a binding `web` of the two.

use crate::emulator::Emulator;
use crate::{Env, aws, eventually, kube_util, unique};
use aws_sdk_elasticloadbalancingv2 as elbv2;
use kube::Client;
use std::collections::BTreeSet;

/// The readiness gate of binding `web`.
pub const GATE: &str = "target-health.elbv2.k8s.aws/web";

pub struct TgbScene {
    pub env: Env,
    pub client: Client,
    pub elb: elbv2::Client,
    pub emu: Emulator,
    pub ns: String,
    pub arn: String,
}

impl TgbScene {
    /// `replicas` pods (gated when asked) behind binding `web`; `None` when the environment is not up.
    pub async fn setup(test: &str, replicas: u32, gated: bool) -> Option<Self> {
        let env = Env::require(test)?;
        let client = kube_util::client(&env).await;
        let elb = aws::elbv2(&env).await;
        let emu = Emulator::new(env.aws_endpoint());
        let ns = unique(test.replace('_', "-")[..test.len().min(20)].trim_end_matches('-'));
        let replicas = replicas.to_string();
        let mut args =
            vec!["create", &ns, "web", "--replicas", &replicas, "--port", "8080", "--terminate-seconds", "5"];
        if gated {
            args.extend(["--readiness-gates", GATE]);
        }
        env.pods(&args);
        env.pods(&["service", &ns, "web", "--port", "80", "--target-port", "8080"]);
        let arn = aws::create_ip_target_group(&env, &elb, &unique("tg"), 8080).await;
        emu.tg_health(&arn, 1.0, "healthy").await;
        kube_util::create_binding(&client, &ns, "web", "web", 80, &arn).await;
        Some(Self { env, client, elb, emu, ns, arn })
    }

    /// A second pod set `set` (2 pods) with its own Service `set`, IP target group and binding
    /// `set` in the same namespace; returns the target group's ARN.
    pub async fn add_binding(&self, set: &str) -> String {
        let selector = format!("app={set}");
        self.env.pods(&["create", &self.ns, set, "--replicas", "2", "--port", "8080"]);
        self.env.pods(&["service", &self.ns, set, "--port", "80", "--target-port", "8080", "--selector", &selector]);
        let arn = aws::create_ip_target_group(&self.env, &self.elb, &unique("tg"), 8080).await;
        kube_util::create_binding(&self.client, &self.ns, set, set, 80, &arn).await;
        arn
    }

    /// `ip:8080` of every pod of `set`.
    pub fn expected(&self, set: &str) -> BTreeSet<String> {
        self.env.pod_ips(&self.ns, set).into_iter().map(|ip| format!("{ip}:8080")).collect()
    }

    pub async fn wait_targets(&self, what: &str, want: &BTreeSet<String>) {
        self.wait_targets_of(&self.arn, what, want, 60).await;
    }

    pub async fn wait_targets_of(&self, arn: &str, what: &str, want: &BTreeSet<String>, secs: u64) {
        eventually(what, secs, || async {
            let got = aws::registered(&self.elb, arn).await;
            (&got == want).then_some(())
        })
        .await;
    }

    pub fn controller(&self, extra: &[&str]) -> crate::controller::ControllerProc {
        crate::controller::ControllerProc::start(&self.env, &self.ns, "lbc-e2e-leader", extra)
    }

    pub async fn cleanup(self) {
        kube_util::delete_namespace(&self.client, &self.ns).await;
    }
}
