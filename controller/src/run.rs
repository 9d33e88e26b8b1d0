//! Wiring: clients, caches, admin servers, leader election and the controllers, with graceful
//! shutdown on SIGTERM/SIGINT.

use crate::admin::{self, Health};
use crate::args::Args;
use crate::context::{Context, TgbConfig};
use crate::leader::{self, LeaderConfig};
use crate::metrics::Metrics;
use crate::stores::{Stores, Triggers};
use crate::tgb;
use anyhow::{Context as _, bail};
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::events::{Recorder, Reporter};
use lbc_aws::assume_role::{ElbV2ByRole, RoleCacheLimits, SdkElbV2ByRole};
use lbc_aws::call::{CallRunner, CallTimeouts, WriteGate};
use lbc_aws::config::{ClientSettings, Endpoints, build_clients};
use lbc_aws::ec2::SdkEc2;
use lbc_aws::elbv2::SdkElbV2;
use lbc_aws::lb::SdkLoadBalancers;
use lbc_aws::net::SdkNetworking;
use lbc_aws::throttle::Throttler;
use lbc_model::lb::backend_sg::BackendSgMode;
use lbc_model::lease::LeaseTimings;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::watch;

pub async fn run(mut args: Args, albc_only: Vec<lbc_model::compat::GivenFlag>) -> anyhow::Result<()> {
    if args.cluster_name.is_empty() {
        bail!(
            "--cluster-name is required: the name in your subnets' kubernetes.io/cluster/<name> tags (e.g. --cluster-name=dev-meta)"
        );
    }
    if args.aws_region.is_empty() {
        bail!("--aws-region (or AWS_REGION) is required: the instance metadata service is never used to guess it");
    }
    let vpc =
        lbc_model::vpc::VpcSource::from_flags(&args.aws_vpc_id, &args.aws_vpc_tags).map_err(anyhow::Error::msg)?;
    // ALBC's gates and ALBC-only flags: each one not honoured is said once here, or stops the start.
    let (gates, albc_warnings) = crate::args::assess_albc(&args, &albc_only).map_err(anyhow::Error::msg)?;
    lbc_model::wire::set_quic_env_name(&args.quic_environment_variable_name).map_err(anyhow::Error::msg)?;
    let tenancy = Arc::new(args.tenancy()?);
    tracing::info!(mode = %tenancy.mode(), policy = %args.tenancy_policy_file, "tenancy (docs/security.md)");
    if tenancy.mode() == lbc_model::tenancy::TenancyMode::Strict {
        tracing::info!(
            "strict tenancy: roles, target groups, spec.networking and IngressGroups are confined to the policy's \
             grants (docs/security.md)"
        );
    }
    for w in &albc_warnings {
        tracing::warn!(target: "albc_compat", "{w}");
    }
    // Flag values are checked before anything connects: a bad one stops the process with its message.
    service_config(&args, gates)?;
    backend_rules_config(&args)?;
    let cert_cfg = crate::webhook_certs::CertsConfig::from_args(&args)?;
    if !args.webhook_client_ca_file.is_empty() {
        lbc_webhook::client_ca_roots(std::path::Path::new(&args.webhook_client_ca_file))?;
    }
    // Only the leader writes: `leader_rx` closes the AWS write gate and the gated kube client.
    let (leader_tx, leader_rx) = watch::channel(false);
    let metrics = Metrics::new();
    let (client, writer) = kube_clients(&args, leader_rx.clone(), &metrics).await?;

    let endpoints = Endpoints::parse(&args.aws_api_endpoints)?;
    let rules = lbc_model::throttle::parse_rules(&args.aws_api_throttle)?;
    let webhook_rules =
        lbc_model::throttle::parse_rules(&format!("{},{}", args.webhook_aws_api_throttle, lbc_webhook::AWS_THROTTLE))
            .map_err(|e| anyhow::anyhow!("--webhook-aws-api-throttle: {e}"))?;
    // Writes of a leadership term end before another replica may take over (`leader::WriteWindow`).
    let write_window = Arc::new(leader::WriteWindow::default());
    let gate: WriteGate = {
        let (leader, window) = (leader_rx.clone(), write_window.clone());
        Arc::new(move || (*leader.borrow()).then(|| window.left()))
    };
    let timeouts = CallTimeouts { attempt: args.aws_api_attempt_timeout, operation: args.aws_api_operation_timeout };
    let runner = CallRunner::with(
        Throttler::new(rules),
        metrics.aws.clone(),
        args.aws_max_retries,
        timeouts,
        Some(gate.clone()),
    );
    // The webhook's AWS calls: buckets and metrics of their own (`awslbc_webhook_aws_api_*`), so that
    // requests anyone can send never spend the reconcilers' budget. Calls as assumed roles (roles the
    // requests name) get buckets apart from calls as the controller's own identity.
    let webhook_aws = lbc_aws::metrics::AwsMetrics::default();
    metrics.with_registry(|r| webhook_aws.register(r.sub_registry_with_prefix("awslbc_webhook")));
    let webhook_runner = CallRunner::with(
        Throttler::new(webhook_rules.clone()),
        webhook_aws.clone(),
        args.aws_max_retries,
        timeouts,
        Some(gate.clone()),
    );
    let webhook_roles_runner =
        CallRunner::with(Throttler::new(webhook_rules), webhook_aws, args.aws_max_retries, timeouts, Some(gate));
    tokio::spawn(log_exit("metrics server", admin::serve_metrics(args.metrics_bind_addr, metrics.clone())));
    tokio::spawn({
        let m = metrics.clone();
        async move { m.pick_top_talkers_forever().await }
    });
    let credentials = crate::credentials::start(&args, &metrics).await?;
    let mut health = Health::new(credentials.as_ref().map(|c| c.status()));
    // Controller-managed webhook certificate: the pair comes from the Secret watch, not from files.
    let serving = cert_cfg.is_some().then(lbc_webhook::ServingCert::new);
    health.webhook_cert = serving.clone();
    tokio::spawn(log_exit("health server", admin::serve_health(args.health_probe_bind_addr, health.clone())));
    let clients = Arc::new(
        build_clients(&ClientSettings {
            region: args.aws_region.clone(),
            endpoints,
            credentials: credentials.as_ref().map(|c| c.provider()),
        })
        .await,
    );
    let elb: Arc<dyn lbc_aws::elbv2::ElbV2> = Arc::new(SdkElbV2::new(clients.elbv2.clone(), runner.clone()));
    // Bindings with spec.iamRoleArnToAssume (target groups of another account), webhook included.
    let elb_roles: Arc<dyn ElbV2ByRole> =
        Arc::new(SdkElbV2ByRole::new(elb.clone(), clients.clone(), runner.clone(), RoleCacheLimits::RECONCILERS));
    let webhook_elb: Arc<dyn ElbV2ByRole> = Arc::new(SdkElbV2ByRole::new(
        Arc::new(SdkElbV2::new(clients.elbv2.clone(), webhook_runner)),
        clients.clone(),
        webhook_roles_runner,
        RoleCacheLimits::WEBHOOK,
    ));
    let ec2 = Arc::new(SdkEc2::new(clients.ec2.clone(), runner.clone()));
    // Before anything reads it: the ID given, or the one VPC carrying the tags given.
    args.aws_vpc_id = find_vpc(&vpc, ec2.as_ref()).await?;
    let lbs: Arc<dyn lbc_aws::lb::LoadBalancers> =
        Arc::new(SdkLoadBalancers::new(clients.elbv2.clone(), runner.clone()));
    let acm: Arc<dyn lbc_aws::acm::Acm> = Arc::new(lbc_aws::acm::SdkAcm::new(clients.acm.clone(), runner.clone()));
    let net: Arc<dyn lbc_aws::net::Networking> = Arc::new(SdkNetworking::new(clients.ec2.clone(), runner.clone()));

    let triggers = Triggers::default();
    if args.enable_gateway_certificate_secrets && !gates.alb_gateway_api {
        anyhow::bail!(
            "--enable-gateway-certificate-secrets=true reads Secrets for the Gateway controller, which is off: add \
             --feature-gates=ALBGatewayAPI=true, or drop the flag"
        );
    }
    if gates.alb_gateway_api {
        crate::gateway::require_crds(&client).await?;
    }
    tokio::spawn(crate::gateway::report_unreconciled(client.clone(), gates.alb_gateway_api));
    let (stores, tasks) = Stores::start(
        &client,
        &args.watch_namespace,
        triggers.clone(),
        metrics.clone(),
        gates.alb_gateway_api,
        args.enable_gateway_certificate_secrets,
    );
    for (name, task) in tasks {
        health.supervise(name, task);
    }
    let cilium = args.enable_backend_security_group_rules.then(|| {
        let wake = triggers.backend_rules.clone();
        let (nodes, task) = crate::networking::CiliumNodes::watch(&client, move || wake.notify_one());
        health.supervise("CiliumNode watch", task);
        nodes
    });

    let identity = identity();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let leader_task = if args.enable_leader_election {
        let ns = if args.leader_election_namespace.is_empty() {
            "kube-system".to_string()
        } else {
            args.leader_election_namespace.clone()
        };
        let cfg = LeaderConfig {
            namespace: ns,
            name: args.leader_election_id.clone(),
            identity: identity.clone(),
            timings: LeaseTimings::from_lease(Duration::from_secs(args.leader_election_lease_duration)),
        };
        Some(tokio::spawn(leader::run(client.clone(), cfg, leader_tx, write_window, shutdown_rx.clone())))
    } else {
        let _ = leader_tx.send(true);
        std::mem::forget(leader_tx);
        None
    };

    if let (Some(cfg), Some(serving)) = (cert_cfg, &serving) {
        crate::webhook_certs::start(
            cfg,
            &client,
            &writer,
            leader_rx.clone(),
            serving.clone(),
            &health,
            &metrics,
            shutdown_rx.clone(),
        );
    }

    // Events are writes too: a replica that does not lead publishes none.
    let recorder =
        Recorder::new(writer.clone(), Reporter { controller: "aws-lb-controller".into(), instance: Some(identity) });
    let ctx = Arc::new(Context {
        client: writer,
        stores: stores.clone(),
        triggers,
        elb,
        elb_roles: elb_roles.clone(),
        ec2,
        recorder,
        metrics: metrics.clone(),
        cfg: TgbConfig {
            cluster_name: args.cluster_name.clone(),
            cluster_vpc_id: args.aws_vpc_id.clone(),
            batch_size: args.targetgroupbinding_batch_size.max(1),
            allow_outside_vpc: args.allow_targets_outside_vpc,
            health_poll_ceiling: args.targetgroupbinding_requeue_duration,
            health_poll_floor: Duration::from_secs(1),
            sync_period: args.sync_period,
            max_backoff: args.targetgroupbinding_max_exponential_backoff_delay,
            tenancy: tenancy.clone(),
        },
        leader: leader_rx.clone(),
        bindings: Default::default(),
        target_groups: Default::default(),
        target_group_fetch: Default::default(),
        target_group_tags: Default::default(),
        vpcs: Default::default(),
        instances: Arc::new(lbc_aws::instances::InstanceIdCache::new(Arc::new(
            lbc_aws::instances::SdkInstanceLookup::new(clients.ec2.clone(), runner.clone()),
        ))),
        credentials: credentials.as_ref().map(|c| c.status()),
    });

    let backend_rules = Arc::new(crate::networking::BackendRules::new(
        ctx.clone(),
        net.clone(),
        backend_rules_config(&args)?,
        cilium,
        ctx.triggers.backend_rules.clone(),
    ));
    let service_cfg = service_config(&args, gates)?;
    // One shared backend security group per cluster, for NLBs and ALBs alike.
    let mut backend_sg = crate::backend_sg::BackendSecurityGroup::new(
        service_cfg.backend_sg.clone(),
        net.clone(),
        &service_cfg.cluster_name,
        &service_cfg.vpc_id,
        service_cfg.default_tags.clone(),
    );
    if args.enable_backend_security_group_rules {
        backend_sg = backend_sg.with_rules_pass(backend_rules.pass_signals());
    }
    let backend_sg = Arc::new(backend_sg);
    let aws = crate::stack::Adapters {
        lbs,
        net,
        waf: Arc::new(lbc_aws::waf::SdkWebAcls::new(clients.wafv2.clone(), runner.clone())),
        waf_classic: Arc::new(lbc_aws::waf_classic::SdkClassicWebAcls::new(
            clients.waf_regional.clone(),
            runner.clone(),
        )),
        shield: Arc::new(lbc_aws::shield::SdkProtections::new(clients.shield.clone(), runner.clone())),
    };
    let mut ingress_ctx = crate::ingress::IngressCtx::new(
        ctx.clone(),
        &aws,
        acm,
        ingress_config(&args, &service_cfg, tenancy.clone()),
        backend_sg.clone(),
    );
    // Requested (Ingress) and imported (Gateway) certificates share one listing of ACM.
    let acm_inventory = Arc::new(crate::acm_inventory::AcmInventory::new(Arc::new(
        lbc_aws::acm_requests::SdkAcmRequests::new(clients.acm.clone(), runner.clone()),
    )));
    if service_cfg.gates.certificate_management {
        ingress_ctx = ingress_ctx.with_certificate_requests(
            acm_inventory.clone(),
            Arc::new(lbc_aws::route53::SdkDnsRecords::new(clients.route53.clone(), runner.clone())),
        );
    }
    let ingress_ctx = Arc::new(ingress_ctx);
    let gateway_ctx = gates.alb_gateway_api.then(|| {
        let options = crate::stack::StackOptions {
            cluster_tag_check: gates.subnets_cluster_tag_check,
            wafv2: false,
            waf_classic: false,
            shield: false,
            subnet_reachability: gates.subnet_discovery_by_reachability,
        };
        let cfg = gateway_config(&args, &service_cfg);
        let imports = crate::gateway::imported_certificates::ImportedCertificates::new(acm_inventory.clone());
        Arc::new(crate::gateway::GatewayCtx::new(ctx.clone(), &aws, cfg, backend_sg.clone(), options, imports))
    });
    let service_ctx = Arc::new(crate::service::ServiceCtx::new(ctx.clone(), &aws, service_cfg, backend_sg));

    let worker_ids = Arc::new(crate::quic_worker_ids::ConfigMapWorkerIds::new(client.clone()));
    let quic = lbc_webhook::quic::QuicInjector::new(args.quic_environment_variable_name.clone(), worker_ids);
    let target_control = gates.target_control_agent.then(|| {
        let (configs, task) = crate::target_control::TargetControlConfigs::watch(&client, &metrics);
        health.supervise("albtargetcontrolconfigs watch", task);
        configs
    });
    let deps = WebhookDeps { elb: webhook_elb, serving, quic, target_control };
    let webhook = spawn_webhook(&args, &ctx, &health, deps, &metrics, shutdown_rx.clone());

    let stopping = health.stopping.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutdown requested; finishing in-flight work");
        stopping.store(true, Ordering::Release);
        let _ = shutdown_tx.send(true);
    });

    tokio::select! {
        _ = stores.wait_synced() => {}
        _ = wait_true(shutdown_rx.clone()) => return Ok(()),
    }
    health.caches_synced.store(true, Ordering::Release);
    tracing::info!("all watch caches synced");

    let mut leader = leader_rx;
    // controller-runtime exports its lease's gauge only when it elects a leader.
    let lease = args.enable_leader_election.then_some(args.leader_election_id.as_str());
    loop {
        tokio::select! {
            _ = wait_true(leader.clone()) => {}
            _ = wait_true(shutdown_rx.clone()) => break,
        }
        metrics.set_leader(lease, true);
        // What an earlier term learnt of AWS may have been changed by another leader since.
        ctx.forget_all();
        tracing::info!("leading: starting controllers");
        let shutdown = shutdown_rx.clone();
        let graceful = async move { wait_true(shutdown).await };
        let lost = {
            let l = leader.clone();
            async move { wait_false(l).await }
        };
        let services = {
            let (c, n, enabled) = (
                service_ctx.clone(),
                args.service_max_concurrent_reconciles,
                gates.service_controller && args.enable_service_controller,
            );
            let shutdown = shutdown_rx.clone();
            async move {
                if enabled {
                    crate::service::run(c, n, async move { wait_true(shutdown).await }).await
                } else {
                    tracing::info!(
                        "Service controller disabled (--enable-service-controller=false or --feature-gates=EnableServiceController=false)"
                    );
                    wait_true(shutdown).await
                }
            }
        };
        let ingresses = {
            let (c, n, enabled) =
                (ingress_ctx.clone(), args.ingress_max_concurrent_reconciles, args.enable_ingress_controller);
            let shutdown = shutdown_rx.clone();
            async move {
                if enabled {
                    crate::ingress::run(c, n, async move { wait_true(shutdown).await }).await
                } else {
                    tracing::info!("Ingress controller disabled (--enable-ingress-controller=false)");
                    wait_true(shutdown).await
                }
            }
        };
        let gateways = {
            let (c, n, shutdown) =
                (gateway_ctx.clone(), args.alb_gateway_max_concurrent_reconciles, shutdown_rx.clone());
            async move {
                match c {
                    Some(c) => crate::gateway::run(c, n, async move { wait_true(shutdown).await }).await,
                    None => wait_true(shutdown).await,
                }
            }
        };
        let rules = {
            let (r, enabled, shutdown) =
                (backend_rules.clone(), args.enable_backend_security_group_rules, shutdown_rx.clone());
            async move {
                if enabled {
                    r.run(async move { wait_true(shutdown).await }).await
                } else {
                    tracing::info!("backend security-group rules off (--enable-backend-security-group-rules=false)");
                    wait_true(shutdown).await
                }
            }
        };
        tokio::select! {
            _ = async {
                let bindings = tgb::run(ctx.clone(), args.targetgroupbinding_max_concurrent_reconciles, args.targetgroupbinding_debounce, graceful);
                let must_run = |name: &'static str, f| supervised(name, &health, shutdown_rx.clone(), f);
                futures::join!(
                    must_run("TargetGroupBinding controller", Box::pin(bindings)),
                    must_run("Service controller", Box::pin(services)),
                    must_run("Ingress controller", Box::pin(ingresses)),
                    must_run("Gateway controller", Box::pin(gateways)),
                    must_run("backend security-group rules", Box::pin(rules)),
                )
            } => {}
            // Leadership lost: drop the controllers now, cancelling in-flight work at its next step.
            _ = lost => tracing::warn!("leadership lost: controllers stopped, no further writes"),
        }
        ctx.triggers.set_sender(None);
        metrics.set_leader(lease, false);
        if *shutdown_rx.borrow() {
            break;
        }
        leader.mark_changed();
    }
    if let Some(t) = leader_task {
        let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
    }
    // The webhook server answers until its drain ends (`--webhook-shutdown-delay`).
    let _ = webhook.await;
    tracing::info!("stopped");
    Ok(())
}

/// The VPC of `source`: a tag lookup is one DescribeVpcs (retried like any call), then exactly one
/// match or the start is refused with the reason.
async fn find_vpc(source: &lbc_model::vpc::VpcSource, ec2: &dyn lbc_aws::ec2::Ec2) -> anyhow::Result<String> {
    let found = match source {
        lbc_model::vpc::VpcSource::Id(_) => Vec::new(),
        lbc_model::vpc::VpcSource::Tags(tags) => ec2
            .vpcs_with_tags(tags)
            .await
            .map_err(|e| anyhow::anyhow!("--aws-vpc-tags: the VPC lookup failed: {e} (allow ec2:DescribeVpcs)"))?,
    };
    let id = source.pick(&found).map_err(anyhow::Error::msg)?;
    if let lbc_model::vpc::VpcSource::Tags(tags) = source {
        tracing::info!(vpc = %id, ?tags, "VPC found by --aws-vpc-tags");
    }
    Ok(id)
}

fn backend_rules_config(args: &Args) -> anyhow::Result<crate::networking::BackendRulesConfig> {
    Ok(crate::networking::BackendRulesConfig {
        cluster_name: args.cluster_name.clone(),
        vpc_id: args.aws_vpc_id.clone(),
        required_tags: lbc_aws::config::parse_map(
            "--service-target-eni-security-group-tags",
            &args.service_target_eni_security_group_tags,
        )
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .collect(),
        restricted: !args.disable_restricted_sg_rules,
        sync_period: args.sync_period,
    })
}

fn service_config(
    args: &Args,
    gates: lbc_model::compat::FeatureGates,
) -> anyhow::Result<crate::service::ServiceConfig> {
    let default_tags: lbc_model::lb::Tags = lbc_aws::config::parse_map("--default-tags", &args.default_tags)
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .collect();
    Ok(crate::service::ServiceConfig {
        cluster_name: args.cluster_name.clone(),
        vpc_id: args.aws_vpc_id.clone(),
        // `--default-target-type` applies to Services as in ALBC (a class-defaulted Service gets ip targets).
        select: lbc_model::service::SelectConfig {
            load_balancer_class: args.load_balancer_class.clone(),
            default_target_type: default_target_type(args),
            load_balancer_type_only: gates.service_type_load_balancer_only,
        },
        default_tags,
        external_managed_tags: args
            .external_managed_tags
            .split(',')
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .collect(),
        sync_period: args.sync_period,
        max_backoff: args.targetgroupbinding_max_exponential_backoff_delay,
        backend_sg: BackendSgMode::from_flags(args.enable_backend_security_group, &args.backend_security_group)
            .map_err(anyhow::Error::msg)?,
        default_scheme: default_scheme(args),
        gates,
    })
}

fn default_scheme(args: &Args) -> lbc_model::lb::Scheme {
    args.default_load_balancer_scheme.into()
}

fn default_target_type(args: &Args) -> lbc_model::crd::TargetType {
    args.default_target_type.into()
}

fn ingress_config(
    args: &Args,
    svc: &crate::service::ServiceConfig,
    tenancy: Arc<lbc_model::tenancy::Tenancy>,
) -> crate::ingress::IngressConfig {
    crate::ingress::IngressConfig {
        cluster_name: svc.cluster_name.clone(),
        vpc_id: svc.vpc_id.clone(),
        select: lbc_model::ingress::SelectConfig { ingress_class: args.ingress_class.clone(), ..Default::default() },
        default_tags: svc.default_tags.clone(),
        external_managed_tags: svc.external_managed_tags.clone(),
        default_ssl_policy: args.default_ssl_policy.clone(),
        default_target_type: default_target_type(args),
        sync_period: args.sync_period,
        max_backoff: args.targetgroupbinding_max_exponential_backoff_delay,
        default_scheme: svc.default_scheme,
        gates: svc.gates,
        wafv2: args.enable_wafv2,
        waf_classic: args.enable_waf,
        shield: args.enable_shield,
        required_secrets_label: args
            .required_secrets_label
            .split_once('=')
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string())),
        tenancy,
        tolerate_missing_service: args.tolerate_non_existent_backend_service,
        tolerate_missing_action: args.tolerate_non_existent_backend_action,
        default_pca_arn: args.default_pca_arn.clone(),
        allowed_certificate_authorities: lbc_model::ingress::certificates::parse_allowed_authorities(
            &args.allowed_certificate_authority_arns,
        )
        .expect("--allowed-certificate-authority-arns is checked by args::assess_albc before the start"),
    }
}

fn gateway_config(args: &Args, svc: &crate::service::ServiceConfig) -> crate::gateway::GatewayConfig {
    crate::gateway::GatewayConfig {
        cluster_name: svc.cluster_name.clone(),
        vpc_id: svc.vpc_id.clone(),
        default_tags: svc.default_tags.clone(),
        external_managed_tags: svc.external_managed_tags.clone(),
        default_tags_low_priority: svc.gates.default_tags_low_priority,
        default_target_type: default_target_type(args),
        default_scheme: svc.default_scheme,
        sync_period: args.sync_period,
        max_backoff: args.targetgroupbinding_max_exponential_backoff_delay,
        enhanced_defaults: svc.gates.enhanced_default_behavior,
    }
}

/// What the webhook server is built on besides the caches and flags.
struct WebhookDeps {
    /// The webhook's own ELBv2 clients (its own throttle budget).
    elb: Arc<dyn ElbV2ByRole>,
    /// The controller-managed serving pair, when the controller manages it.
    serving: Option<lbc_webhook::ServingCert>,
    quic: lbc_webhook::quic::QuicInjector,
    /// The ALBTargetControlConfig cache, with the gate `ALBTargetControlAgent` on.
    target_control: Option<crate::target_control::TargetControlConfigs>,
}

/// Serves the admission webhooks on every replica (leader or not), with the pair of `managed`
/// (controller-managed mode) or from the certificate files. Without certificate files the
/// controllers still run and the log says the webhook server is off.
fn spawn_webhook(
    args: &Args,
    ctx: &Context,
    health: &Health,
    deps: WebhookDeps,
    metrics: &Metrics,
    shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let WebhookDeps { elb, serving: managed, quic, target_control } = deps;
    let target_control_agent = target_control.is_some();
    let view = crate::webhook_view::StoresView {
        stores: ctx.stores.clone(),
        synced: health.caches_synced.clone(),
        target_control,
    };
    let config = lbc_webhook::WebhookConfig {
        pod_readiness_gate_inject: args.enable_pod_readiness_gate_inject,
        service_mutator: args.enable_service_mutator_webhook,
        load_balancer_class: args.load_balancer_class.clone(),
        ingress: args.ingress_select_config(),
        cluster_name: args.cluster_name.clone(),
        tenancy: ctx.cfg.tenancy.clone(),
        target_control_agent,
        // Set by the chart from the downward API (empty outside a pod: only the pod's namespace and
        // kube-system are looked at).
        controller_namespace: std::env::var("POD_NAMESPACE").unwrap_or_default(),
        ..Default::default()
    };
    let state = Arc::new(lbc_webhook::WebhookState::new(Arc::new(view), elb, config).with_quic(quic));
    metrics.with_registry(|r| state.metrics().register(r));
    let dir = std::path::PathBuf::from(&args.webhook_cert_dir);
    let source = match managed {
        Some(serving) => lbc_webhook::CertSource::Managed(serving),
        None => lbc_webhook::CertSource::Files {
            cert_file: dir.join(&args.webhook_cert_file),
            key_file: dir.join(&args.webhook_key_file),
        },
    };
    let cfg = lbc_webhook::ServeConfig {
        bind: std::net::SocketAddr::new(args.webhook_bind_host, args.webhook_bind_port),
        source,
        limits: lbc_webhook::Limits {
            max_body_bytes: args.webhook_max_body_bytes,
            max_concurrent_requests: args.webhook_max_concurrent_requests,
            request_timeout: args.webhook_request_timeout,
            ..Default::default()
        },
        client_ca_file: (!args.webhook_client_ca_file.is_empty())
            .then(|| std::path::PathBuf::from(&args.webhook_client_ca_file)),
        metrics: state.metrics().clone(),
        shutdown_delay: args.webhook_shutdown_delay,
    };
    // After SIGTERM the server keeps answering while the API server still calls it
    // (`--webhook-shutdown-delay`, `lbc_webhook::drain`).
    let router = lbc_webhook::router(state);
    let stop = wait_true(shutdown);
    tokio::spawn(async move {
        match lbc_webhook::serve(cfg, router, stop).await {
            Ok(()) => {}
            Err(lbc_webhook::ServeError::CertificateMissing { cert_file, key_file }) => tracing::warn!(
                cert = %cert_file.display(), key = %key_file.display(),
                "webhook server off: no certificate at these paths (set --webhook-cert-dir); pods get no readiness gates from this controller"
            ),
            Err(e) => tracing::error!(error = %e, "webhook server stopped"),
        }
    })
}

/// Two clients on one configuration: one for the watch caches and the election (reads, and the
/// Lease), one for the reconcilers whose writes pass the leader fence ([`crate::kube_gate`]). Both
/// time out: connecting after `--kube-api-connect-timeout`, requests other than watches after
/// `--kube-api-request-timeout` (watches end by the server's timeout or the watcher's idle timeout).
async fn kube_clients(
    args: &Args,
    leader: watch::Receiver<bool>,
    metrics: &Metrics,
) -> anyhow::Result<(Client, Client)> {
    let mut config = kube_config(args).await?;
    config.connect_timeout = Some(args.kube_api_connect_timeout);
    let timeout = args.kube_api_request_timeout;
    let (always, _) = watch::channel(true);
    let host = config.cluster_url.authority().map(|a| a.to_string()).unwrap_or_default();
    let counted = |gate: crate::kube_gate::KubeGate| gate.counting(metrics.albc.rest_requests.clone(), host.clone());
    let reader = kube::client::ClientBuilder::try_from(config.clone())?
        .with_layer(&counted(crate::kube_gate::KubeGate::new(always.subscribe(), timeout)))
        .build();
    let writer = kube::client::ClientBuilder::try_from(config)?
        .with_layer(&counted(crate::kube_gate::KubeGate::new(leader, timeout)))
        .build();
    Ok((reader, writer))
}

pub(crate) async fn kube_config(args: &Args) -> anyhow::Result<kube::Config> {
    let config = if args.kubeconfig.is_empty() {
        kube::Config::infer()
            .await
            .context("no Kubernetes config: not in a cluster and no --kubeconfig / KUBECONFIG")?
    } else {
        let kc = Kubeconfig::read_from(&args.kubeconfig)
            .with_context(|| format!("reading kubeconfig {}", args.kubeconfig))?;
        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
    };
    Ok(config)
}

fn identity() -> String {
    let host =
        std::env::var("POD_NAME").or_else(|_| std::env::var("HOSTNAME")).unwrap_or_else(|_| "aws-lb-controller".into());
    format!("{host}_{:08x}", fastrand::u32(..))
}

/// Runs a controller that must run until shutdown (or until leadership is lost, which drops it):
/// returning earlier means it died, and `/healthz` fails so the kubelet restarts the process.
async fn supervised(
    name: &'static str,
    health: &Health,
    shutdown: watch::Receiver<bool>,
    f: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>,
) {
    f.await;
    if !*shutdown.borrow() {
        health.mark_dead(format!("{name} ended while leading"));
    }
}

async fn wait_true(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

async fn wait_false(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| !*v).await;
}

async fn log_exit(what: &'static str, f: impl std::future::Future<Output = std::io::Result<()>>) {
    if let Err(e) = f.await {
        tracing::error!(error = %e, "{what} stopped");
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn malformed_tag_flags_are_refused_with_the_flag_named() {
        let args = Args::parse_from(["aws-lb-controller", "--cluster-name=c", "--default-tags=team=core,oops"]);
        let e = service_config(&args, Default::default()).unwrap_err().to_string();
        assert!(e.contains("--default-tags") && e.contains("\"oops\""), "{e}");
        let args =
            Args::parse_from(["aws-lb-controller", "--cluster-name=c", "--service-target-eni-security-group-tags=x"]);
        assert!(
            backend_rules_config(&args).unwrap_err().to_string().contains("--service-target-eni-security-group-tags")
        );
    }

    #[test]
    fn default_target_type_applies_to_services_and_ingresses() {
        let args = Args::parse_from(["aws-lb-controller", "--cluster-name=c", "--default-target-type=ip"]);
        assert_eq!(
            service_config(&args, Default::default()).unwrap().select.default_target_type,
            lbc_model::crd::TargetType::Ip
        );
        let svc = service_config(&args, Default::default()).unwrap();
        assert_eq!(ingress_config(&args, &svc, Default::default()).default_target_type, lbc_model::crd::TargetType::Ip);
        let args = Args::parse_from(["aws-lb-controller", "--cluster-name=c"]);
        assert_eq!(
            service_config(&args, Default::default()).unwrap().select.default_target_type,
            lbc_model::crd::TargetType::Instance,
            "ALBC's default"
        );
    }
}
