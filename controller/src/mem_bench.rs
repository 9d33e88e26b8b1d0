//! Memory benchmark of the caches and per-binding state, in-process, without the e2e environment.
//!
//! Run (prints a table; an ignored test so the fast suite does not pay for it):
//!
//! ```text
//! export CARGO_TARGET_DIR=...; cargo test --workspace -- mem_bench --ignored --nocapture
//! LBC_MEM_BENCH_PODS=10000,50000 LBC_MEM_BENCH_GROUPS=10 LBC_MEM_BENCH_GATED=0 \
//!   LBC_MEM_BENCH_POD_PAGE=<POD_PAGE_SIZE> LBC_MEM_BENCH_SLICE_PAGE=<SLICE_PAGE_SIZE>   (the defaults)
//! ```
//!
//! It builds the controller's real caches for N pods behind G Services through the real decode
//! path: list pages as the API server serves them (JSON text shaped like the `bench/` scene's
//! kwok pods and the EndpointSlice controller's slices, managed fields included), read the way
//! kube-client reads them (`request_text`: the body, a copy of it as the text, then
//! `serde_json::from_str` into an `ObjectList` of the wire type), applied one object at a time
//! through [`crate::records::list_apply`] as the watcher's `InitApply` events are. Then the
//! per-binding state the TargetGroupBinding reconciler keeps ([`crate::context::BindingState`])
//! and the desired targets one reconcile computes.
//!
//! A counting global allocator (test binary only) measures bytes: `requested` is what the code
//! asked for; `chunks` estimates what glibc's malloc hands out for it (8-byte header, 16-byte
//! rounding, 32-byte minimum), closer to what RSS pays. Counters are per thread: the benchmark
//! runs on one thread, so other tests running beside it do not disturb it.

use crate::context::BindingState;
use crate::records::{Map, Records, list_apply};
use crate::stores::{POD_PAGE_SIZE, SLICE_PAGE_SIZE, pod_decoder};
use k8s_openapi::api::core::v1::ServicePort;
use kube::core::ObjectList;
use lbc_model::crd::TargetGroupIpAddressType;
use lbc_model::endpoints::{EndpointInputs, SliceInfo, desired_targets};
use lbc_model::pod::{NodeReadiness, PodInfo};
use lbc_model::target::{HealthState, Target, TargetHealth};
use lbc_model::wire::{EndpointSliceWire, PodWire};
use serde_json::{Value, json};
use std::sync::Arc;

#[allow(unsafe_code)]
mod counting {
    //! The only unsafe code of the workspace: a `GlobalAlloc` that forwards every call to
    //! `System` unchanged and counts bytes in thread-local cells (no allocation, no lock).
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static LIVE: Cell<[i64; 2]> = const { Cell::new([0; 2]) };
        static PEAK: Cell<[i64; 2]> = const { Cell::new([0; 2]) };
    }

    /// glibc malloc's chunk for a request of `n` bytes (x86_64).
    fn chunk(n: usize) -> i64 {
        ((n + 8 + 15) & !15).max(32) as i64
    }

    fn add(requested: i64, chunks: i64) {
        let _ = LIVE.try_with(|l| {
            let [r, c] = l.get();
            let now = [r + requested, c + chunks];
            l.set(now);
            let _ = PEAK.try_with(|p| {
                let [pr, pc] = p.get();
                p.set([pr.max(now[0]), pc.max(now[1])]);
            });
        });
    }

    pub struct Counting;

    // SAFETY: every method forwards to `System` with the caller's arguments and returns its
    // result; the bookkeeping touches only thread-local `Cell`s of plain integers.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            // SAFETY: same contract as ours.
            let p = unsafe { System.alloc(l) };
            if !p.is_null() {
                add(l.size() as i64, chunk(l.size()));
            }
            p
        }
        unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
            // SAFETY: same contract as ours.
            let p = unsafe { System.alloc_zeroed(l) };
            if !p.is_null() {
                add(l.size() as i64, chunk(l.size()));
            }
            p
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            // SAFETY: same contract as ours.
            unsafe { System.dealloc(p, l) };
            add(-(l.size() as i64), -chunk(l.size()));
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
            // SAFETY: same contract as ours.
            let q = unsafe { System.realloc(p, l, new) };
            if !q.is_null() {
                add(new as i64 - l.size() as i64, chunk(new) - chunk(l.size()));
            }
            q
        }
    }

    /// Live bytes of this thread: (requested, chunks).
    pub fn live() -> [i64; 2] {
        LIVE.with(Cell::get)
    }

    /// The peak since the last [`reset_peak`].
    pub fn peak() -> [i64; 2] {
        PEAK.with(Cell::get)
    }

    pub fn reset_peak() {
        PEAK.with(|p| p.set(live()));
    }
}

#[global_allocator]
static COUNTING: counting::Counting = counting::Counting;

/// Bytes allocated (requested, chunks) between two readings.
fn since(before: [i64; 2]) -> [i64; 2] {
    let now = counting::live();
    [now[0] - before[0], now[1] - before[1]]
}

const NS: &str = "lbc-bench-1764230000-3f9a";
const GATE_PREFIX: &str = "target-health.elbv2.k8s.aws/";
const PODS_PER_NODE: usize = 250;
const ENDPOINTS_PER_SLICE: usize = 100;

fn uid(kind: u32, i: usize) -> String {
    format!("{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", 0x5eed_0000u32 + kind, i % 0xffff, i % 0xfff, (i / 7) % 0xfff, i)
}

fn node(i: usize) -> String {
    format!("lbc-bench-1764230000-3f9a-{:03}", i / PODS_PER_NODE)
}

fn ip(i: usize) -> String {
    format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256)
}

/// Pod `i` of set `k`, as the API server serves a `bench/` scene pod once kwok runs it.
fn pod_json(i: usize, k: usize, gated: bool) -> Value {
    let name = format!("s{k:02}-{:05}", i);
    let t = "2026-11-27T10:00:00Z";
    let cond = |ty: &str| json!({"type": ty, "status": "True", "lastProbeTime": null, "lastTransitionTime": t});
    let mut conditions = vec![
        cond("PodReadyToStartContainers"),
        cond("Initialized"),
        cond("Ready"),
        cond("ContainersReady"),
        cond("PodScheduled"),
    ];
    let mut spec = json!({
        "containers": [{"name": "app", "image": "lbc-bench/app:1",
                        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                        "resources": {}, "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "automountServiceAccountToken": false, "nodeName": node(i), "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        "priority": 0, "enableServiceLinks": false, "preemptionPolicy": "PreemptLowerPriority"
    });
    if gated {
        let gate = format!("{GATE_PREFIX}tgb-{k:02}");
        spec["readinessGates"] = json!([{"conditionType": gate}]);
        conditions.push(json!({"type": gate, "status": "True", "lastProbeTime": null, "lastTransitionTime": t,
                               "reason": "Healthy", "message": "Target is healthy"}));
    }
    json!({
        "metadata": {
            "name": name, "namespace": NS, "uid": uid(1, i), "resourceVersion": format!("{}", 100000 + i),
            "creationTimestamp": t, "labels": {"app": format!("bench-{k:02}")},
            "annotations": {"lbc-e2e/pod-ip": ip(i)},
            "managedFields": [
                {"manager": "python-requests", "operation": "Update", "apiVersion": "v1", "time": t,
                 "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:annotations": {".": {}, "f:lbc-e2e/pod-ip": {}}, "f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {"f:automountServiceAccountToken": {}, "f:containers": {"k:{\"name\":\"app\"}": {
                        ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                        "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
                        "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                        "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:nodeName": {}, "f:restartPolicy": {},
                        "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}},
                {"manager": "kwok", "operation": "Update", "apiVersion": "v1", "time": t, "fieldsType": "FieldsV1",
                 "subresource": "status", "fieldsV1": {"f:status": {
                    "f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {},
                        "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                        "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {},
                        "f:status": {}, "f:type": {}},
                        "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {},
                        "f:status": {}, "f:type": {}}},
                    "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {},
                    "f:podIPs": {".": {}, "k:{\"ip\":\"10.0.0.1\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}}}
            ]
        },
        "spec": spec,
        "status": {
            "phase": "Running", "conditions": conditions, "hostIP": "10.0.192.1", "hostIPs": [{"ip": "10.0.192.1"}],
            "podIP": ip(i), "podIPs": [{"ip": ip(i)}], "startTime": t,
            "containerStatuses": [{"name": "app", "state": {"running": {"startedAt": t}}, "lastState": {},
                                   "ready": true, "restartCount": 0, "image": "lbc-bench/app:1", "imageID": "",
                                   "started": true}],
            "qosClass": "BestEffort"
        }
    })
}

/// EndpointSlice `j` of Service `svc-k`, holding pods `pods` (set k), as kube-controller-manager
/// writes it.
fn slice_json(k: usize, j: usize, pods: &[usize]) -> Value {
    let t = "2026-11-27T10:00:00Z";
    let endpoints: Vec<Value> = pods
        .iter()
        .map(|&i| {
            json!({"addresses": [ip(i)], "conditions": {"ready": true, "serving": true, "terminating": false},
                   "nodeName": node(i), "zone": "us-east-1a",
                   "targetRef": {"kind": "Pod", "namespace": NS, "name": format!("s{k:02}-{:05}", i), "uid": uid(1, i)}})
        })
        .collect();
    json!({
        "metadata": {
            "name": format!("svc-{k:02}-{j:05x}"), "generateName": format!("svc-{k:02}-"), "namespace": NS,
            "uid": uid(2, j), "resourceVersion": format!("{}", 900000 + j), "generation": 57, "creationTimestamp": t,
            "labels": {"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                       "kubernetes.io/service-name": format!("svc-{k:02}")},
            "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": t},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": format!("svc-{k:02}"),
                                 "uid": uid(3, k), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "discovery.k8s.io/v1", "time": t, "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:addressType": {}, "f:endpoints": {}, "f:metadata": {
                                   "f:annotations": {".": {}, "f:endpoints.kubernetes.io/last-change-trigger-time": {}},
                                   "f:generateName": {}, "f:labels": {".": {},
                                       "f:endpointslice.kubernetes.io/managed-by": {}, "f:kubernetes.io/service-name": {}},
                                   "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}}, "f:ports": {}}}]
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "protocol": "TCP", "port": 8080}]
    })
}

/// One list page as the API server sends it.
fn page(kind: &str, items: Vec<Value>, more: bool) -> Vec<u8> {
    let cont =
        if more { "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDU2LCJzdGFydCI6InMwMy0wMTIzNFx1MDAwMCJ9" } else { "" };
    serde_json::to_vec(&json!({"kind": kind, "apiVersion": "v1",
                               "metadata": {"resourceVersion": "123456", "continue": cont}, "items": items}))
    .expect("a page serialises")
}

/// What reading one page cost above what was live before it: the page's size on the wire and
/// the peak while kube-client read and decoded it and the watcher applied it.
#[derive(Default)]
struct PageCost {
    wire_bytes: usize,
    objects: usize,
    peak: [i64; 2],
}

/// Reads `body` as kube-client's `request` does and applies every object through the watcher
/// path into `building`; returns the transient peak above the bytes live before `body` existed
/// (`before`).
fn read_page<K, R>(
    body: Vec<u8>,
    before: [i64; 2],
    building: &mut Option<Map<R>>,
    decode: &mut impl FnMut(K) -> R,
) -> PageCost
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned,
{
    let wire_bytes = body.len();
    // request_text: the collected body (`to_bytes`), copied into the text (`to_vec`).
    let text = String::from_utf8(body.to_vec()).expect("utf-8");
    drop(body);
    let list: ObjectList<K> = serde_json::from_str(&text).expect("a list page decodes");
    drop(text);
    let objects = list.items.len();
    // The watcher holds the page and hands out one object at a time.
    let mut page: std::collections::VecDeque<K> = list.items.into();
    while let Some(o) = page.pop_front() {
        list_apply(building, o, decode);
    }
    drop(page);
    let p = counting::peak();
    PageCost { wire_bytes, objects, peak: [p[0] - before[0], p[1] - before[1]] }
}

struct Sizes {
    pods: usize,
    groups: usize,
    gated: bool,
    pod_page: usize,
    slice_page: usize,
}

fn per(b: [i64; 2], n: usize) -> String {
    format!("{:>6.0} / {:>6.0}", b[0] as f64 / n as f64, b[1] as f64 / n as f64)
}

fn mib(b: [i64; 2]) -> String {
    format!("{:>6.2} / {:>6.2}", b[0] as f64 / 1048576.0, b[1] as f64 / 1048576.0)
}

/// Builds everything for one size and prints a table; returns the pods cache bytes per pod
/// (requested) for the callers' sanity checks.
fn run(s: &Sizes) -> f64 {
    let n = s.pods;
    let set_of = |i: usize| i % s.groups;

    // Pods cache, page by page.
    let start = counting::live();
    let mut building: Option<Map<PodInfo>> = None;
    let mut decode_pod = pod_decoder();
    let mut worst_pod_page = PageCost::default();
    let mut pod_json_bytes = 0;
    let mut i = 0;
    while i < n {
        let end = (i + s.pod_page).min(n);
        let before = counting::live();
        let body = page("PodList", (i..end).map(|i| pod_json(i, set_of(i), s.gated)).collect(), end < n);
        counting::reset_peak();
        let c = read_page::<PodWire, _>(body, before, &mut building, &mut decode_pod);
        pod_json_bytes += c.wire_bytes;
        if c.peak[1] > worst_pod_page.peak[1] {
            worst_pod_page = c;
        }
        i = end;
    }
    let pods = Records::from_map(building.take().unwrap_or_default());
    let pods_bytes = since(start);
    assert_eq!(pods.len(), n);

    // EndpointSlices: per Service, slices of 100 endpoints.
    let start = counting::live();
    let mut slice_bodies_items: Vec<(usize, usize, Vec<usize>)> = Vec::new();
    for k in 0..s.groups {
        let members: Vec<usize> = (0..n).filter(|&i| set_of(i) == k).collect();
        for (j, chunk) in members.chunks(ENDPOINTS_PER_SLICE).enumerate() {
            slice_bodies_items.push((k, j, chunk.to_vec()));
        }
    }
    let plan_bytes = since(start);
    let mut sbuilding: Option<Map<SliceInfo>> = None;
    let mut worst_slice_page = PageCost::default();
    let mut slice_json_bytes = 0;
    let total_slices = slice_bodies_items.len();
    let mut at = 0;
    while at < total_slices {
        let end = (at + s.slice_page).min(total_slices);
        let before = counting::live();
        let items = slice_bodies_items[at..end].iter().map(|(k, j, m)| slice_json(*k, *j, m)).collect();
        let body = page("EndpointSliceList", items, end < total_slices);
        counting::reset_peak();
        let c = read_page::<EndpointSliceWire, _>(body, before, &mut sbuilding, &mut SliceInfo::from_wire);
        slice_json_bytes += c.wire_bytes;
        if c.peak[1] > worst_slice_page.peak[1] {
            worst_slice_page = c;
        }
        at = end;
    }
    let slices = Records::from_map(sbuilding.take().unwrap_or_default());
    let slices_bytes = since(start);
    let slices_bytes = [slices_bytes[0] - plan_bytes[0], slices_bytes[1] - plan_bytes[1]];
    drop(slice_bodies_items);

    // One binding's reconcile: desired targets (transient) and the state kept between passes.
    let per_binding = n / s.groups;
    let svc_port = ServicePort { name: Some("http".into()), port: 80, ..Default::default() };
    let gate = format!("{GATE_PREFIX}tgb-00");
    let svc_slices = slices.matching(NS, |sl| sl.service.as_deref() == Some("svc-00"));
    let start = counting::live();
    let input = EndpointInputs {
        service_port: &svc_port,
        family: TargetGroupIpAddressType::Ipv4,
        gate: &gate,
        pod: |name: &str| pods.get(NS, name),
        node: |_: &str| Some(NodeReadiness::Ready),
        quic: false,
    };
    let desired = desired_targets(svc_slices.iter().map(Arc::as_ref), &input);
    let desired_bytes = since(start);
    assert_eq!(desired.targets.len(), per_binding);

    let start = counting::live();
    let now = tokio::time::Instant::now();
    let mut state = BindingState::default();
    let reg = state.registered.get_or_insert_with(Default::default);
    for t in desired.targets.keys() {
        reg.insert(*t, TargetHealth::new(HealthState::Initial));
        state.registered_at.insert(*t, now);
    }
    let written_bytes = since(start);
    // Settled: AWS reported them healthy (no reason), the latency bookkeeping is gone.
    let targets: Vec<Target> = desired.targets.keys().copied().collect();
    let start2 = counting::live();
    for t in &targets {
        state.registered.as_mut().expect("registered").insert(*t, TargetHealth::new(HealthState::Healthy));
        state.registered_at.remove(t);
    }
    state.registered_at.shrink_to_fit();
    let settled_bytes = {
        let d = since(start2);
        [written_bytes[0] + d[0], written_bytes[1] + d[1]]
    };

    println!(
        "\n{n} pods, {} groups ({per_binding} targets per binding), pods {}gated; pod page {} pods, slice page {} slices \
         ({} endpoints); bytes requested / glibc chunks",
        s.groups,
        if s.gated { "" } else { "not " },
        s.pod_page,
        s.slice_page,
        s.slice_page * ENDPOINTS_PER_SLICE
    );
    println!(
        "  wire: pod {:.0} B/pod, endpoint slice {:.0} B/endpoint",
        pod_json_bytes as f64 / n as f64,
        slice_json_bytes as f64 / n as f64
    );
    println!("  {:<58} {:>15}   {:>15}", "structure", "bytes per pod", "MiB total");
    let row = |what: &str, b: [i64; 2], n: usize| println!("  {what:<58} {}   {}", per(b, n), mib(b));
    row("pods cache (Records<PodInfo>)", pods_bytes, n);
    row("EndpointSlices cache (Records<SliceInfo>)", slices_bytes, n);
    row(
        "binding state, just registered (registered + registered_at)",
        [written_bytes[0] * s.groups as i64, written_bytes[1] * s.groups as i64],
        n,
    );
    row(
        "binding state, settled (registered only)",
        [settled_bytes[0] * s.groups as i64, settled_bytes[1] * s.groups as i64],
        n,
    );
    let live_total = [
        pods_bytes[0] + slices_bytes[0] + written_bytes[0] * s.groups as i64,
        pods_bytes[1] + slices_bytes[1] + written_bytes[1] * s.groups as i64,
    ];
    row("live total (caches + all bindings just registered)", live_total, n);
    println!("  transient, per reconcile of one binding ({per_binding} targets):");
    row("  desired targets", desired_bytes, per_binding);
    println!(
        "  transient peak of one list page above live (MiB, requested / chunks), with its wire size:\n    \
         pods: {} pods, {:.2} MiB on the wire -> peak {}\n    \
         EndpointSlices: {} slices, {:.2} MiB on the wire -> peak {}",
        worst_pod_page.objects,
        worst_pod_page.wire_bytes as f64 / 1048576.0,
        mib(worst_pod_page.peak),
        worst_slice_page.objects,
        worst_slice_page.wire_bytes as f64 / 1048576.0,
        mib(worst_slice_page.peak),
    );
    drop((desired, state, slices));
    pods_bytes[0] as f64 / n as f64
}

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

#[test]
#[ignore = "memory benchmark: prints figures; run with --ignored --nocapture"]
fn mem_bench() {
    let groups: usize = env_or("LBC_MEM_BENCH_GROUPS", "10").parse().expect("LBC_MEM_BENCH_GROUPS");
    let gated = env_or("LBC_MEM_BENCH_GATED", "0") == "1";
    let pod_page =
        env_or("LBC_MEM_BENCH_POD_PAGE", &POD_PAGE_SIZE.to_string()).parse().expect("LBC_MEM_BENCH_POD_PAGE");
    let slice_page =
        env_or("LBC_MEM_BENCH_SLICE_PAGE", &SLICE_PAGE_SIZE.to_string()).parse().expect("LBC_MEM_BENCH_SLICE_PAGE");
    for n in env_or("LBC_MEM_BENCH_PODS", "10000,50000").split(',') {
        let pods: usize = n.trim().parse().expect("LBC_MEM_BENCH_PODS: comma-separated pod counts");
        run(&Sizes { pods, groups, gated, pod_page, slice_page });
    }
}

/// The benchmark's own plumbing at a small size (part of the fast suite): the counter sees the
/// records, and pages decode through the wire types into the expected records.
#[test]
fn mem_bench_counts_what_the_caches_hold() {
    let per_pod = run(&Sizes { pods: 600, groups: 3, gated: true, pod_page: 500, slice_page: 500 });
    assert!(per_pod > 50.0, "a cached pod costs at least its record; counted {per_pod} B");
}
