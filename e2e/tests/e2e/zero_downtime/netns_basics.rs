//! The VPC of namespaces itself: pods reachable from the VPC only, nothing left behind.

use lbc_e2e::datapath::netns::{Vpc, check_host_has_no_route};
use lbc_e2e::datapath::require_root;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn podserver(pod: &lbc_e2e::datapath::netns::PodNet, name: &str, dir: &std::path::Path) -> Child {
    std::fs::create_dir_all(dir).unwrap();
    pod.command(env!("CARGO_BIN_EXE_lbc-podserver"))
        .args(["--name", name, "--port", "8080", "--control-dir"])
        .arg(dir)
        .stdout(std::fs::File::create(dir.join("server.log")).unwrap())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawning lbc-podserver")
}

fn wait_get(vpc: &Vpc, addr: &str, path: &str) -> (u16, String) {
    let t = Instant::now();
    loop {
        match vpc.http_get(addr, path) {
            Ok(r) => return r,
            Err(e) if t.elapsed() > Duration::from_secs(10) => panic!("{addr}{path} never answered: {e:#}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

#[test]
#[ignore = "needs root (network namespaces); run by e2e/test-all with --include-ignored"]
fn vpc_pods_are_reachable_inside_only_and_torn_down() {
    if !require_root("vpc_pods_are_reachable_inside_only_and_torn_down") {
        return;
    }
    let cidr = "10.0.0.0/16";
    let run = tempdir("netns-basics");
    let vpc = Vpc::create("basics", cidr).expect("creating the VPC");
    let name = vpc.name().to_string();
    let (a, b) = (
        vpc.add_pod("web-a", "10.0.108.10".parse().unwrap()).unwrap(),
        vpc.add_pod("web-b", "10.0.140.11".parse().unwrap()).unwrap(),
    );
    let (mut sa, mut sb) = (podserver(&a, "web-a", &run.join("a")), podserver(&b, "web-b", &run.join("b")));
    assert_eq!(wait_get(&vpc, "10.0.108.10:8080", "/"), (200, "web-a\n".into()));
    assert_eq!(wait_get(&vpc, "10.0.140.11:8080", "/"), (200, "web-b\n".into()));
    assert_eq!(wait_get(&vpc, "10.0.108.10:8080", "/healthz").0, 200);
    // Told to fail health, then told to recover.
    std::fs::write(run.join("a/fail-health"), "").unwrap();
    assert_eq!(wait_get(&vpc, "10.0.108.10:8080", "/healthz").0, 503);
    std::fs::remove_file(run.join("a/fail-health")).unwrap();
    assert_eq!(wait_get(&vpc, "10.0.108.10:8080", "/healthz").0, 200);
    // Pod to pod over the bridge; a VIP on the bridge.
    vpc.add_address("10.0.255.200".parse().unwrap()).unwrap();
    let out = a.command("curl").args(["-sS", "-m", "5", "http://10.0.140.11:8080/"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "web-b\n", "{}", String::from_utf8_lossy(&out.stderr));
    let addrs = vpc.command("ip").args(["-4", "addr", "show", "br0"]).output().unwrap();
    assert!(String::from_utf8_lossy(&addrs.stdout).contains("10.0.255.200/32"), "VIP missing from br0");
    // The host itself reaches neither the router nor the pods.
    check_host_has_no_route(cidr.parse().unwrap()).expect("host route check");
    // (The machine's default gateway may accept any connection, so what matters is who answers.)
    assert!(!host_get("10.0.108.10:8080").contains("web-a"), "the host reached a pod directly: the VPC leaks");

    // SIGTERM: the server logs it and exits cleanly.
    assert!(lbc_e2e::datapath::netns::signal(sa.id() as i32, "TERM"));
    let status = sa.wait().unwrap();
    assert!(status.success(), "podserver exited with {status} after SIGTERM");
    let log = std::fs::read_to_string(run.join("a/server.log")).unwrap();
    assert!(log.contains(" sigterm pod=web-a") && log.contains(" exit pod=web-a"), "server log: {log}");

    // Explicit pod removal kills what runs inside.
    b.remove().unwrap();
    let _ = sb.wait();
    assert!(
        !lbc_e2e::datapath::netns::Vpc::attach(&name)
            .unwrap()
            .pod_namespaces()
            .unwrap()
            .iter()
            .any(|n| n.ends_with("_web-b"))
    );
    drop(a);
    drop(vpc);
    let left: Vec<String> =
        String::from_utf8_lossy(&std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout)
            .lines()
            .filter(|l| l.contains(&name["lbcv-".len()..]))
            .map(str::to_string)
            .collect();
    assert!(left.is_empty(), "namespaces left after teardown: {left:?}");
    check_host_has_no_route(cidr.parse().unwrap()).expect("host route check after teardown");
}

#[test]
#[ignore = "needs root (network namespaces); run by e2e/test-all with --include-ignored"]
fn vpc_is_torn_down_when_a_test_panics() {
    if !require_root("vpc_is_torn_down_when_a_test_panics") {
        return;
    }
    let mut sleeper = None;
    let name = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let vpc = Vpc::create("panics", "10.0.0.0/16").unwrap();
        let pod = vpc.add_pod("p", "10.0.108.20".parse().unwrap()).unwrap();
        sleeper = Some(pod.command("sleep").arg("600").spawn().unwrap());
        std::mem::forget(pod); // even a leaked pod handle is removed with its VPC
        std::panic::panic_any(vpc.name().to_string());
    }))
    .unwrap_err()
    .downcast::<String>()
    .unwrap();
    let list =
        String::from_utf8_lossy(&std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout)
            .into_owned();
    assert!(!list.contains(&name[5..]), "namespaces of {name} left after a panic: {list}");
}

fn tempdir(what: &str) -> std::path::PathBuf {
    let d = lbc_e2e::Env::repo_root().join(format!("e2e/.run/datapath/{}", lbc_e2e::unique(what)));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// What the machine's own namespace gets from `addr` (empty when nothing answers within 1 s).
fn host_get(addr: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut c) = std::net::TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_millis(500)) else {
        return String::new();
    };
    c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let _ = c.write_all(b"GET / HTTP/1.0\r\n\r\n");
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    out
}
