//! [`SdkLoadBalancers`]' listener certificates and listener rules (the trait methods in `sdk.rs`
//! call these). Every call goes through the [`crate::call::CallRunner`].

use super::convert as cv;
use super::convert_rules as cr;
use super::sdk::{PAGE_SIZE, SVC, SdkLoadBalancers, err, gone_is_ok, invalid, non_empty};
use super::{LoadBalancers, require_target_group_arns};
use crate::call::all_pages;
use crate::error::AwsError;
use aws_sdk_elasticloadbalancingv2::types as sdk;
use lbc_model::lb::{Observed, Rule};

impl SdkLoadBalancers {
    /// Every certificate DescribeListenerCertificates reports (the default one included), paged.
    pub(super) async fn listener_certificates(&self, listener_arn: &str) -> Result<Vec<sdk::Certificate>, AwsError> {
        const OP: &str = "DescribeListenerCertificates";
        all_pages(|marker| async move {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.describe_listener_certificates().listener_arn(listener_arn);
                    req.page_size(PAGE_SIZE).set_marker(marker.clone()).send().await.map_err(err(OP))
                })
                .await?;
            Ok((page.certificates().to_vec(), page.next_marker().map(String::from)))
        })
        .await
    }

    pub(super) async fn change_listener_certificates(
        &self,
        listener_arn: &str,
        certificates: &[String],
        add: bool,
    ) -> Result<(), AwsError> {
        if certificates.is_empty() {
            return Ok(());
        }
        let certs: Vec<sdk::Certificate> =
            certificates.iter().map(|c| sdk::Certificate::builder().certificate_arn(c).build()).collect();
        if add {
            const OP: &str = "AddListenerCertificates";
            self.runner
                .run(SVC, OP, || async {
                    let req = self.client.add_listener_certificates().listener_arn(listener_arn);
                    req.set_certificates(Some(certs.clone())).send().await.map_err(err(OP))
                })
                .await
                .map(|_| ())
        } else {
            const OP: &str = "RemoveListenerCertificates";
            self.runner
                .run(SVC, OP, || async {
                    let req = self.client.remove_listener_certificates().listener_arn(listener_arn);
                    req.set_certificates(Some(certs.clone())).send().await.map_err(err(OP))
                })
                .await
                .map(|_| ())
        }
    }

    /// Non-default rules with their tags, sorted by priority.
    pub(super) async fn all_rules(&self, listener_arn: &str) -> Result<Vec<Observed<Rule>>, AwsError> {
        const OP: &str = "DescribeRules";
        let mut out = all_pages(|marker| async move {
            let page = self
                .runner
                .run(SVC, OP, || async {
                    let req = self.client.describe_rules().listener_arn(listener_arn);
                    req.page_size(PAGE_SIZE).set_marker(marker.clone()).send().await.map_err(err(OP))
                })
                .await?;
            Ok((page.rules().iter().filter_map(cr::rule_from).collect(), page.next_marker().map(String::from)))
        })
        .await?;
        let arns: Vec<String> = out.iter().map(|r| r.id.clone()).collect();
        let mut tags = self.describe_tags(&arns).await?;
        for r in &mut out {
            r.spec.tags = tags.remove(&r.id).unwrap_or_default();
        }
        out.sort_by_key(|r| r.spec.priority);
        Ok(out)
    }

    pub(super) async fn create_one_rule(&self, listener_arn: &str, rule: &Rule) -> Result<Observed<Rule>, AwsError> {
        const OP: &str = "CreateRule";
        require_target_group_arns(&rule.actions).map_err(|m| invalid(OP, m))?;
        let actions = cv::actions(&rule.actions).map_err(|m| invalid(OP, m))?;
        let conditions: Vec<sdk::RuleCondition> = rule.conditions.iter().map(cr::condition).collect();
        let transforms = non_empty(cr::transforms(&rule.transforms));
        let priority = cv::int(rule.priority);
        let out = self
            .runner
            .run(SVC, OP, || async {
                let req = self.client.create_rule().listener_arn(listener_arn).priority(priority);
                let req = req.set_conditions(Some(conditions.clone())).set_actions(Some(actions.clone()));
                let req = req.set_transforms(transforms.clone());
                req.set_tags(non_empty(cv::tags(&rule.tags))).send().await.map_err(err(OP))
            })
            .await?;
        let created =
            out.rules().first().and_then(cr::rule_from).ok_or_else(|| invalid(OP, "no rule in the answer".into()))?;
        Ok(Observed { id: created.id, spec: Rule { tags: rule.tags.clone(), ..created.spec } })
    }

    pub(super) async fn modify_one_rule(&self, arn: &str, rule: &Rule) -> Result<(), AwsError> {
        const OP: &str = "ModifyRule";
        require_target_group_arns(&rule.actions).map_err(|m| invalid(OP, m))?;
        let actions = cv::actions(&rule.actions).map_err(|m| invalid(OP, m))?;
        let conditions: Vec<sdk::RuleCondition> = rule.conditions.iter().map(cr::condition).collect();
        // AWS reads an empty Transforms as "leave them": no transform left is ResetTransforms (ALBC's way).
        let transforms = non_empty(cr::transforms(&rule.transforms));
        let reset = transforms.is_none().then_some(true);
        self.runner
            .run(SVC, OP, || async {
                let req = self.client.modify_rule().rule_arn(arn).set_conditions(Some(conditions.clone()));
                let req = req.set_transforms(transforms.clone()).set_reset_transforms(reset);
                req.set_actions(Some(actions.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    pub(super) async fn move_rules(&self, priorities: &[(String, u32)]) -> Result<(), AwsError> {
        const OP: &str = "SetRulePriorities";
        if priorities.is_empty() {
            return Ok(());
        }
        let pairs: Vec<sdk::RulePriorityPair> = priorities
            .iter()
            .map(|(arn, p)| sdk::RulePriorityPair::builder().rule_arn(arn).priority(cv::int(*p)).build())
            .collect();
        self.runner
            .run(SVC, OP, || async {
                self.client.set_rule_priorities().set_rule_priorities(Some(pairs.clone())).send().await.map_err(err(OP))
            })
            .await
            .map(|_| ())
    }

    pub(super) async fn delete_one_rule(&self, arn: &str) -> Result<(), AwsError> {
        const OP: &str = "DeleteRule";
        let r = self
            .runner
            .run(SVC, OP, || async { self.client.delete_rule().rule_arn(arn).send().await.map_err(err(OP)) })
            .await;
        gone_is_ok(r.map(|_| ()))
    }
}
