use super::*;
use k8s_openapi::api::core::v1::{EnvVar, PodSpec};
use std::collections::BTreeSet;

const T: i64 = EPOCH_MS + 500;

#[test]
fn ids_carry_the_time_the_worker_and_the_sequence_in_the_upstream_layout() {
    let mut m = QuicIdMinter::new(100);
    let Minted::Id(id) = m.mint(T, 5).unwrap() else { panic!("an ID") };
    let n = u64::from_be_bytes(id.0);
    assert_eq!(n >> 24, 500, "milliseconds since 2020");
    assert_eq!((n >> 7) & u64::from(MAX_WORKER_ID), 100, "worker");
    assert_eq!(n & 127, 5, "sequence");
    // The pod form is the base64 of the 8 bytes; the AWS form their hex.
    assert_eq!(QuicServerId::parse_env(&id.to_env()).unwrap(), id);
    assert_eq!(id.to_string(), format!("0x{n:016x}"));
}

#[test]
fn a_millisecond_never_repeats_an_id_and_is_spent_when_its_sequence_wraps() {
    for start in [0u8, 1, 77, 126, 127, 200] {
        let mut m = QuicIdMinter::new(7);
        let mut seen = BTreeSet::new();
        while let Minted::Id(id) = m.mint(T, start).unwrap() {
            assert!(seen.insert(id), "start {start}: {id} twice");
        }
        assert!(!seen.is_empty() && seen.len() <= 128, "start {start}: {}", seen.len());
        // Asking again in the same millisecond stays spent; the next one mints again.
        assert_eq!(m.mint(T, start).unwrap(), Minted::NextMillisecond);
        let Minted::Id(next) = m.mint(T + 1, start).unwrap() else { panic!("next ms") };
        assert!(!seen.contains(&next));
    }
}

#[test]
fn a_clock_going_back_or_outside_the_layout_is_refused() {
    let mut m = QuicIdMinter::new(1);
    m.mint(T, 0).unwrap();
    assert!(m.mint(T - 1, 0).unwrap_err().contains("clock went back 1 ms"));
    assert!(QuicIdMinter::new(1).mint(EPOCH_MS - 1, 0).is_err());
    assert!(QuicIdMinter::new(1).mint(EPOCH_MS + (1 << 39), 0).is_err());
}

#[test]
fn worker_ids_count_up_and_wrap_as_the_upstream_counter() {
    assert_eq!(next_worker_id(0), 1);
    assert_eq!(next_worker_id(MAX_WORKER_ID - 1), 0);
    assert_eq!(parse_worker_id(" 42 "), Ok(42));
    for bad in ["", "-1", "x", "131072"] {
        let e = parse_worker_id(bad).unwrap_err();
        assert!(e.contains("quic-server-id-worker-tracker") && e.contains(WORKER_ID_KEY), "{e}");
    }
}

fn pod(annotation: Option<&str>, containers: &[(&str, bool, bool)], init: &[&str]) -> Pod {
    let container = |name: &str, env: bool, has_id: bool| Container {
        name: name.into(),
        env: env.then(|| {
            let mut v = vec![EnvVar { name: "OTHER".into(), value: Some("x".into()), ..Default::default() }];
            if has_id {
                v.push(EnvVar {
                    name: "AWS_LBC_QUIC_SERVER_ID".into(),
                    value: Some("AAAAAAAAAAE=".into()),
                    ..Default::default()
                });
            }
            v
        }),
        ..Default::default()
    };
    let mut p = Pod::default();
    p.metadata.annotations = annotation.map(|a| [(QUIC_ENABLED_CONTAINERS.to_string(), a.to_string())].into());
    p.spec = Some(PodSpec {
        containers: containers.iter().map(|(n, e, h)| container(n, *e, *h)).collect(),
        init_containers: Some(init.iter().map(|n| container(n, false, false)).collect()),
        ..Default::default()
    });
    p
}

#[test]
fn the_named_containers_without_an_id_get_one() {
    let p =
        pod(Some("app, side,ghost"), &[("app", false, false), ("log", true, false), ("done", true, true)], &["side"]);
    assert_eq!(
        plan_quic_injection(&p, "AWS_LBC_QUIC_SERVER_ID"),
        [
            QuicSlot { list: "containers", index: 0, has_env: false },
            QuicSlot { list: "initContainers", index: 0, has_env: false },
        ]
    );
    assert_eq!(unknown_quic_containers(&p), ["ghost"]);
    let with_env = pod(Some("log,done"), &[("log", true, false), ("done", true, true)], &[]);
    assert_eq!(
        plan_quic_injection(&with_env, "AWS_LBC_QUIC_SERVER_ID"),
        [QuicSlot { list: "containers", index: 0, has_env: true }],
        "a container that has its ID keeps it"
    );
    assert!(plan_quic_injection(&pod(None, &[("app", false, false)], &[]), "AWS_LBC_QUIC_SERVER_ID").is_empty());
    assert!(unknown_quic_containers(&pod(None, &[("app", false, false)], &[])).is_empty());
}
