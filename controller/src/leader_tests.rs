//! The election loop against a mocked API server (tower-test), under paused tokio time.

use super::*;
use http::{Request, Response, StatusCode};
use kube::client::Body;
use lbc_model::lease::LeaseTimings;
use serde_json::json;
use std::sync::Arc;
use tower_test::mock::{self, Handle, SendResponse};

type ApiHandle = Handle<Request<Body>, Response<Body>>;

fn cfg() -> LeaderConfig {
    LeaderConfig {
        namespace: "kube-system".into(),
        name: "lease".into(),
        identity: "me".into(),
        timings: LeaseTimings::from_lease(Duration::from_secs(15)),
    }
}

fn lease(holder: &str, renew: &str, rv: &str) -> serde_json::Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "lease", "namespace": "kube-system", "resourceVersion": rv},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": renew, "leaseTransitions": 1}
    })
}

fn respond(tx: SendResponse<Response<Body>>, code: StatusCode, body: serde_json::Value) {
    tx.send_response(Response::builder().status(code).body(Body::from(serde_json::to_vec(&body).unwrap())).unwrap());
}

fn not_found() -> serde_json::Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"})
}

async fn next(h: &mut ApiHandle) -> (String, SendResponse<Response<Body>>) {
    let (req, tx) = h.next_request().await.expect("a request");
    (req.method().to_string(), tx)
}

fn start(client: Client) -> (watch::Receiver<bool>, watch::Sender<bool>) {
    let (rx, stop, _) = start_with_window(client);
    (rx, stop)
}

fn start_with_window(client: Client) -> (watch::Receiver<bool>, watch::Sender<bool>, Arc<WriteWindow>) {
    let (tx, rx) = watch::channel(false);
    let (stop_tx, stop_rx) = watch::channel(false);
    let window = Arc::new(WriteWindow::default());
    tokio::spawn(run(client, cfg(), tx, window.clone(), stop_rx));
    (rx, stop_tx, window)
}

/// Writes get the leadership's time plus half the fence margin (12.5 s of a 15 s lease) from the
/// start of the renewal, so no write of ours is outstanding when another replica may take over.
#[tokio::test(start_paused = true)]
async fn writes_are_given_until_half_way_through_the_fence_margin() {
    let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
    let (mut leader, _stop, window) = start_with_window(Client::new(svc, "default"));
    let (_, tx) = next(&mut h).await;
    respond(tx, StatusCode::NOT_FOUND, not_found());
    let (_, tx) = next(&mut h).await;
    respond(tx, StatusCode::CREATED, lease("me", "2026-01-01T00:00:00.000000Z", "1"));
    leader.wait_for(|v| *v).await.unwrap();
    assert_eq!(window.left(), Duration::from_millis(12_500));
    let _hung = next(&mut h).await; // the first renewal never answers
    leader.wait_for(|v| !*v).await.unwrap();
    assert_eq!(window.left(), Duration::from_millis(2_500), "the last writes' remaining time, under the 5 s margin");
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_renewal_never_answers_stops_before_the_lease_could_pass() {
    let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
    let (mut leader, _stop) = start(Client::new(svc, "default"));
    let t0 = Instant::now();
    let (m, tx) = next(&mut h).await;
    assert_eq!(m, "GET");
    respond(tx, StatusCode::NOT_FOUND, not_found());
    let (m, tx) = next(&mut h).await;
    assert_eq!(m, "POST");
    respond(tx, StatusCode::CREATED, lease("me", "2026-01-01T00:00:00.000000Z", "1"));
    leader.wait_for(|v| *v).await.unwrap();

    // From now on the API server accepts connections but never answers (a half-open connection).
    let mut hung = Vec::new();
    let (m, tx) = next(&mut h).await;
    assert_eq!(m, "GET");
    assert_eq!(t0.elapsed(), Duration::from_secs(2), "renewals every retry period");
    hung.push(tx);
    leader.wait_for(|v| !*v).await.unwrap();
    let lost_after = t0.elapsed();
    assert_eq!(lost_after, Duration::from_secs(10), "dropped at the renew deadline");
    assert!(lost_after < cfg().timings.lease, "before any other replica may take the lease");
}

#[tokio::test(start_paused = true)]
async fn a_follower_takes_the_lease_only_after_seeing_it_unchanged_for_the_whole_duration() {
    let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
    let (leader, _stop) = start(Client::new(svc, "default"));
    let t0 = Instant::now();
    // The record says "renewed long ago" by wall clock: that must not matter, only what we see.
    let stale = lease("other", "2000-01-01T00:00:00.000000Z", "7");
    loop {
        let (m, tx) = next(&mut h).await;
        if m == "PUT" {
            assert!(t0.elapsed() >= Duration::from_secs(15), "took over after {:?}", t0.elapsed());
            assert!(t0.elapsed() <= Duration::from_secs(17), "took over after {:?}", t0.elapsed());
            let mut won = stale.clone();
            won["spec"]["holderIdentity"] = json!("me");
            respond(tx, StatusCode::OK, won);
            break;
        }
        assert_eq!(m, "GET");
        assert!(!*leader.borrow(), "not leader while the other holds it");
        respond(tx, StatusCode::OK, stale.clone());
    }
    let mut leader = leader;
    leader.wait_for(|v| *v).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_renewed_record_restarts_the_followers_clock() {
    let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
    let (leader, _stop) = start(Client::new(svc, "default"));
    let t0 = Instant::now();
    let mut n = 0;
    while t0.elapsed() < Duration::from_secs(40) {
        let (m, tx) = next(&mut h).await;
        assert_eq!(m, "GET", "never tries to take a lease that keeps being renewed");
        n += 1;
        // The other leader renews every 4 s.
        let renew = format!("2026-01-01T00:00:{:02}.000000Z", t0.elapsed().as_secs() / 4 * 4);
        respond(tx, StatusCode::OK, lease("other", &renew, "9"));
    }
    assert!(n >= 15, "{n}");
    assert!(!*leader.borrow());
}

/// Creates the Lease (GET 404, POST 201) and waits until leading.
async fn acquire(h: &mut ApiHandle, leader: &mut watch::Receiver<bool>) {
    let (m, tx) = next(h).await;
    assert_eq!(m, "GET");
    respond(tx, StatusCode::NOT_FOUND, not_found());
    let (m, tx) = next(h).await;
    assert_eq!(m, "POST");
    respond(tx, StatusCode::CREATED, lease("me", "2026-01-01T00:00:00.000000Z", "1"));
    leader.wait_for(|v| *v).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_loses_the_compare_and_swap_stops_writes_at_once() {
    let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
    let (mut leader, _stop) = start(Client::new(svc, "default"));
    acquire(&mut h, &mut leader).await;
    let t0 = Instant::now();
    let (m, tx) = next(&mut h).await;
    assert_eq!(m, "GET");
    respond(tx, StatusCode::OK, lease("me", "2026-01-01T00:00:00.000000Z", "1"));
    let (m, tx) = next(&mut h).await;
    assert_eq!(m, "PUT", "the renewal replaces the record it read (resourceVersion 1)");
    // Another replica wrote the Lease in between: 409 Conflict.
    let conflict = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409,
                          "message": "the object has been modified"});
    respond(tx, StatusCode::CONFLICT, conflict);
    leader.wait_for(|v| !*v).await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_secs(2), "dropped with the failed renewal, not at the deadline");
}

#[tokio::test(start_paused = true)]
async fn api_errors_keep_leadership_only_until_the_renew_deadline() {
    let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
    let (mut leader, _stop) = start(Client::new(svc, "default"));
    let t0 = Instant::now();
    acquire(&mut h, &mut leader).await;
    let watching = leader.clone();
    let mut errors = 0;
    loop {
        tokio::select! {
            r = h.next_request() => {
                let (req, tx) = r.expect("a request");
                assert_eq!(req.method().as_str(), "GET");
                assert!(*watching.borrow(), "still leading at {:?} after {errors} failed renewals", t0.elapsed());
                let e = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "InternalError",
                               "code": 500, "message": "etcdserver: request timed out"});
                respond(tx, StatusCode::INTERNAL_SERVER_ERROR, e);
                errors += 1;
            }
            _ = leader.wait_for(|v| !*v) => break,
        }
    }
    assert_eq!(t0.elapsed(), cfg().timings.renew_deadline, "dropped at the renew deadline");
    assert_eq!(errors, 4, "renewals every retry period until then (2, 4, 6, 8 s)");
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_writes_first_then_releases_the_lease() {
    let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
    let (mut leader, stop) = start(Client::new(svc, "default"));
    acquire(&mut h, &mut leader).await;
    stop.send(true).unwrap();
    let (m, tx) = next(&mut h).await;
    assert_eq!(m, "GET");
    assert!(!*leader.borrow(), "writes stopped before the release is even read");
    respond(tx, StatusCode::OK, lease("me", "2026-01-01T00:00:00.000000Z", "3"));
    let (req, tx) = h.next_request().await.expect("the release");
    assert_eq!(req.method().as_str(), "PUT");
    let body = req.into_body().collect_bytes().await.unwrap();
    let released: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(released["metadata"]["resourceVersion"], json!("3"), "a compare-and-swap on the record read");
    assert!(released["spec"].get("holderIdentity").is_none(), "holder cleared: {released}");
    assert!(released["spec"].get("renewTime").is_none(), "renew time cleared: {released}");
    respond(tx, StatusCode::OK, released);
}

#[tokio::test(start_paused = true)]
async fn a_follower_stopping_releases_nothing() {
    let (svc, mut h) = mock::pair::<Request<Body>, Response<Body>>();
    let (tx, leader) = watch::channel(false);
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(run(Client::new(svc, "default"), cfg(), tx, Default::default(), stop_rx));
    let (m, tx) = next(&mut h).await;
    assert_eq!(m, "GET");
    respond(tx, StatusCode::OK, lease("other", "2026-01-01T00:00:00.000000Z", "7"));
    stop.send(true).unwrap();
    task.await.unwrap();
    // The election has ended and dropped its client: every request it made was seen above.
    assert!(h.next_request().await.is_none(), "a follower has nothing to release");
    assert!(!*leader.borrow());
}
