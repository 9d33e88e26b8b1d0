//! Property tests of the target-sync conversions: targets sent to AWS read back as the same
//! (ip, port), DescribeTargetGroups answers of any shape become a [`TargetGroupInfo`] without
//! loss, and AWS's target health values map both ways.

use super::{describe, to_info};
use aws_sdk_elasticloadbalancingv2::types as sdk;
use lbc_model::target::{HealthState, Target};
use proptest::prelude::*;
use std::net::IpAddr;

const STATES: &[HealthState] = &HealthState::ALL;

fn text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(prop_oneof!["[a-z0-9:/._-]{0,20}", any::<String>()])
}

proptest! {
    #[test]
    fn targets_read_back_as_sent(ip in any::<IpAddr>(), port in any::<u16>(), az in text()) {
        let d = describe(&Target::new(ip, port), az.as_deref());
        prop_assert_eq!(d.id().and_then(|id| id.parse::<IpAddr>().ok()), Some(ip));
        prop_assert_eq!(d.port(), Some(i32::from(port)));
        prop_assert_eq!(d.availability_zone(), az.as_deref());
    }

    #[test]
    fn target_groups_keep_every_field(
        (arn, name, vpc) in (text(), text(), text()),
        (target_type, protocol, ip_type) in (text(), text(), text()),
        (port, interval) in any::<(Option<i32>, Option<i32>)>(),
        lbs in proptest::collection::vec("[a-z0-9:/-]{0,20}", 0..3),
    ) {
        let tg = sdk::TargetGroup::builder()
            .set_target_group_arn(arn.clone())
            .set_target_group_name(name.clone())
            .set_vpc_id(vpc.clone())
            .set_target_type(target_type.as_deref().map(Into::into))
            .set_protocol(protocol.as_deref().map(Into::into))
            .set_ip_address_type(ip_type.as_deref().map(Into::into))
            .set_port(port)
            .set_health_check_interval_seconds(interval)
            .set_load_balancer_arns(Some(lbs.clone()))
            .build();
        let info = to_info(&tg);
        prop_assert_eq!(info.arn, arn.unwrap_or_default());
        prop_assert_eq!(info.name, name.unwrap_or_default());
        prop_assert_eq!(info.target_type, target_type.unwrap_or_default());
        prop_assert_eq!((info.protocol, info.ip_address_type, info.vpc_id), (protocol, ip_type, vpc));
        prop_assert_eq!((info.port, info.health_check_interval_seconds), (port, interval));
        prop_assert_eq!(info.load_balancer_arns, lbs);
    }

    #[test]
    fn health_states_map_both_ways(i in any::<prop::sample::Index>(), other in any::<String>()) {
        let s = STATES[i.index(STATES.len())];
        prop_assert_eq!(HealthState::from_aws(s.as_str()), s);
        if !STATES.iter().any(|s| s.as_str() == other) {
            // A state a newer API reports is never taken for healthy.
            prop_assert_eq!(HealthState::from_aws(&other), HealthState::Unavailable);
        }
    }
}
