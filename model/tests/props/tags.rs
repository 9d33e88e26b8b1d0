//! The tags every created resource carries: docs/iam-policy.json lets a create through only
//! when it sends `elbv2.k8s.aws/cluster`, and later writes only on resources that carry it, so no
//! user or default tag may drop or change it.

use lbc_model::lb::Tags;
use lbc_model::lb::tags::{
    INGRESS_TAG_PREFIX, SERVICE_TAG_PREFIX, Tracking, backend_security_group_tags, resource_tags, stack_tag_key,
};
use lbc_model::names::CLUSTER_TAG;
use proptest::prelude::*;

fn tags() -> impl Strategy<Value = Tags> {
    let key = prop_oneof![
        Just(CLUSTER_TAG.to_string()),
        Just(stack_tag_key(SERVICE_TAG_PREFIX)),
        Just(stack_tag_key(INGRESS_TAG_PREFIX)),
        Just("team".to_string()),
        any::<String>(),
    ];
    proptest::collection::btree_map(key, any::<String>(), 0..5)
}

proptest! {
    #[test]
    fn created_resources_always_carry_our_cluster_tag(
        cluster in "[a-z0-9-]{1,20}",
        stack in any::<String>(),
        resource in any::<String>(),
        ingress in any::<bool>(),
        defaults in tags(),
        user in tags(),
        defaults_low in any::<bool>(),
    ) {
        let prefix = if ingress { INGRESS_TAG_PREFIX } else { SERVICE_TAG_PREFIX };
        let t = Tracking { prefix, cluster: &cluster, stack_id: &stack, resource_id: &resource };
        let got = resource_tags(&t, &defaults, &user, defaults_low);
        prop_assert_eq!(got.get(CLUSTER_TAG), Some(&cluster));
        prop_assert_eq!(got.get(&stack_tag_key(prefix)), Some(&stack));
        // Every user key not reserved by tracking holds the winner's value.
        for (k, v) in defaults.iter().chain(user.iter()) {
            let winner = if defaults_low { user.get(k).or(defaults.get(k)) } else { defaults.get(k).or(user.get(k)) };
            if got.get(k) != Some(v) && !k.starts_with("elbv2.k8s.aws/") && !k.starts_with(prefix) {
                prop_assert_eq!(got.get(k), winner);
            }
        }
        let backend = backend_security_group_tags(&cluster, &defaults);
        prop_assert_eq!(backend.get(CLUSTER_TAG), Some(&cluster));
    }
}
