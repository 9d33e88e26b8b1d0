//! The controller's image (image/build) run for real: Debian's containerd and runc, a containerd of the test's own
//! (its root, state and socket in a temporary directory, the CRI plugin off), the archive imported with
//! `ctr images import`, then
//! - `--version` in a container: exits 0 and prints what the packaged binary prints;
//! - the controller in a container the way the chart runs it (uid 65532 from the image, read-only root, the
//!   webhook certificate mounted read-only under /tmp, host network to reach this environment's API server and
//!   AWS emulator): `/readyz` answers 200 (the time from `ctr run` to it is printed, and the same binary's as a
//!   process of this machine, for comparison), the process runs as 65532:65532 on a read-only root, the files it
//!   sees are exactly the image's (runtime mounts aside), the webhook serves TLS, `aws_lb_controller_build_info`
//!   names the build, and a TargetGroupBinding is reconciled (its pods registered in the emulator).
//!
//! The archive: `$LBC_IMAGE_ARCHIVE` when set, else `image/build --binary <the controller built beside this test>`.

use lbc_e2e::Env;
use lbc_e2e::controller::{ControllerProc, Ports, binary, flags, free_port};
use lbc_e2e::fixture::TgbScene;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The containerd namespace of this test's images and containers.
const NAMESPACE: &str = "lbc-image-test";

/// A containerd of this test's own, stopped (with its containers) when dropped.
struct Containerd {
    dir: PathBuf,
    child: Child,
}

impl Containerd {
    fn start() -> Self {
        for tool in ["containerd", "ctr", "runc"] {
            let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().expect("sh runs");
            assert!(
                found.status.success(),
                "{tool} is not installed: this test runs the image under Debian's containerd and runc \
                 (apt-get install -y containerd runc; e2e/test-all installs them)"
            );
        }
        let dir = std::env::temp_dir().join(format!("lbc-image-ctd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("containerd dir");
        let d = dir.display();
        // Only what a single-host `ctr run` needs: no CRI (no Kubernetes here), no snapshotters this machine lacks.
        let config = format!(
            "version = 2\nroot = \"{d}/root\"\nstate = \"{d}/state\"\n\
             disabled_plugins = [\"io.containerd.grpc.v1.cri\", \"io.containerd.snapshotter.v1.btrfs\", \
             \"io.containerd.snapshotter.v1.zfs\", \"io.containerd.snapshotter.v1.devmapper\", \
             \"io.containerd.snapshotter.v1.aufs\"]\n\
             [grpc]\n  address = \"{d}/containerd.sock\"\n[ttrpc]\n  address = \"{d}/containerd.sock.ttrpc\"\n\
             [debug]\n  address = \"\"\n[metrics]\n  address = \"\"\n\
             [plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"{d}/opt\"\n"
        );
        std::fs::write(dir.join("config.toml"), config).expect("containerd config");
        let log = std::fs::File::create(dir.join("containerd.log")).expect("containerd log");
        let child = Command::new("containerd")
            .arg("--config")
            .arg(dir.join("config.toml"))
            .stdout(log.try_clone().expect("log fd"))
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start containerd");
        let c = Self { dir, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !c.ctr(&["version"]).status.success() {
            assert!(Instant::now() < deadline, "containerd did not answer within 20 s:\n{}", c.log_tail());
            std::thread::sleep(Duration::from_millis(100));
        }
        c
    }

    fn ctr(&self, args: &[&str]) -> Output {
        Command::new("ctr")
            .arg("--address")
            .arg(self.dir.join("containerd.sock"))
            .args(["--namespace", NAMESPACE])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run ctr")
    }

    /// `ctr ARGS` that must succeed: its stdout, else a panic with its stderr and containerd's log.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.ctr(args);
        assert!(
            out.status.success(),
            "ctr {} failed ({}): {}\n{}\ncontainerd log:\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log_tail()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("containerd.log")).unwrap_or_default();
        text.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// The host PID of container `id`'s task.
    fn pid(&self, id: &str) -> u32 {
        let tasks = self.ok(&["tasks", "ls"]);
        tasks
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.first() == Some(&id)).then(|| f.get(1).and_then(|p| p.parse().ok())).flatten()
            })
            .unwrap_or_else(|| panic!("no task {id} in `ctr tasks ls`:\n{tasks}"))
    }

    /// The status `ctr tasks ls` gives container `id`'s task (`RUNNING`, `STOPPED`), `None` without a task.
    fn task_status(&self, id: &str) -> Option<String> {
        let out = self.ctr(&["tasks", "ls"]);
        String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&id)).then(|| f.last().map(|s| s.to_string())).flatten()
        })
    }

    /// Stops and removes container `id`: SIGTERM, SIGKILL after 10 s.
    fn remove(&self, id: &str) {
        let _ = self.ctr(&["tasks", "kill", "--signal", "SIGTERM", id]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.task_status(id).is_some_and(|s| s != "STOPPED") && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        if self.task_status(id).is_some_and(|s| s != "STOPPED") {
            let _ = self.ctr(&["tasks", "kill", "--signal", "SIGKILL", id]);
            std::thread::sleep(Duration::from_millis(500));
        }
        let _ = self.ctr(&["tasks", "delete", "--force", id]);
        let _ = self.ctr(&["containers", "delete", id]);
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let containers = self.ctr(&["containers", "ls", "--quiet"]);
        for id in String::from_utf8_lossy(&containers.stdout).lines() {
            self.remove(id.trim());
        }
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
        // Snapshots still mounted (a test that failed half-way) are unmounted before the directory goes.
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let root = self.dir.display().to_string();
        for point in mounts.lines().filter_map(|l| l.split(' ').nth(4)).filter(|p| p.starts_with(&root)) {
            let _ = Command::new("umount").arg("-l").arg(point).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The archive to test: `$LBC_IMAGE_ARCHIVE`, else image/build's of the controller built beside this test.
fn archive(env: &Env) -> PathBuf {
    if let Some(a) = std::env::var_os("LBC_IMAGE_ARCHIVE").filter(|a| !a.is_empty()) {
        let a = PathBuf::from(a);
        assert!(a.is_file(), "LBC_IMAGE_ARCHIVE={} is not a file: point it at image/build's output", a.display());
        return a;
    }
    let out_dir = env.run_dir().join("image");
    let bin = binary();
    let printed = run(Command::new(env.repo.join("image/build"))
        .arg("--binary")
        .arg(&bin)
        .args(["--tag", "aws-lb-controller:e2e", "--out-dir"])
        .arg(&out_dir));
    PathBuf::from(printed.lines().last().expect("image/build prints the archive's path").trim())
}

/// One path of the image or of the container's root, as image/ls.py describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: String,
    uid: u32,
    gid: u32,
    mode: u32,
    size: u64,
    link: String,
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}:{} {:04o} {} bytes", self.kind, self.uid, self.gid, self.mode, self.size)?;
        if !self.link.is_empty() {
            write!(f, " -> {}", self.link)?;
        }
        Ok(())
    }
}

fn image_files(env: &Env, archive: &Path) -> BTreeMap<String, Entry> {
    let listing = run(Command::new("python3").arg(env.repo.join("image/ls.py")).arg(archive));
    let mut files = BTreeMap::new();
    let mut hardlinks = Vec::new();
    for line in listing.lines() {
        let v: Value = serde_json::from_str(line).expect("image/ls.py prints JSON lines");
        let path = v["path"].as_str().expect("path").to_string();
        let link = v["link"].as_str().expect("link").to_string();
        let kind = v["type"].as_str().expect("type");
        if kind == "hardlink" {
            hardlinks.push((path.clone(), link.clone()));
        }
        let entry = Entry {
            // A hard link is another name of a file: the container shows a file of that size.
            kind: if kind == "hardlink" { "file".into() } else { kind.into() },
            uid: v["uid"].as_u64().expect("uid") as u32,
            gid: v["gid"].as_u64().expect("gid") as u32,
            mode: u32::from_str_radix(v["mode"].as_str().expect("mode"), 8).expect("octal mode"),
            size: v["size"].as_u64().expect("size"),
            link: if kind == "symlink" { link } else { String::new() },
        };
        files.insert(path, entry);
    }
    for (path, target) in hardlinks {
        let size = files.get(&target).map_or(0, |t| t.size);
        files.get_mut(&path).expect("listed").size = size;
    }
    files
}

/// Every path under `root` (the container's root seen from the host), but the mount points of `mounts` and what
/// is under them.
fn container_files(root: &Path, mounts: &BTreeSet<String>) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
            let e = e.expect("dir entry");
            let path = e.path();
            let inside = format!("/{}", path.strip_prefix(root).expect("under root").display());
            if mounts.contains(&inside) {
                continue;
            }
            let md = std::fs::symlink_metadata(&path).expect("lstat");
            let ft = md.file_type();
            let (kind, link) = if ft.is_symlink() {
                ("symlink", std::fs::read_link(&path).expect("readlink").display().to_string())
            } else if ft.is_dir() {
                stack.push(path.clone());
                ("dir", String::new())
            } else if ft.is_file() {
                ("file", String::new())
            } else {
                ("other", String::new())
            };
            out.insert(
                inside,
                Entry {
                    kind: kind.into(),
                    uid: md.uid(),
                    gid: md.gid(),
                    mode: md.permissions().mode() & 0o7777,
                    size: if kind == "file" { md.len() } else { 0 },
                    link,
                },
            );
        }
    }
    out
}

/// Mount points of process `pid` (as its mount namespace sees them) and the options of its root.
fn mounts(pid: u32) -> (BTreeSet<String>, String) {
    let info = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).expect("mountinfo");
    let mut points = BTreeSet::new();
    let mut root_options = String::new();
    for line in info.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f[4] == "/" {
            root_options = f[5].to_string();
        } else {
            points.insert(f[4].to_string());
        }
    }
    (points, root_options)
}

#[tokio::test]
#[ignore = "runs the image under containerd + runc against the e2e environment (e2e/up)"]
async fn image_runs_under_containerd_as_65532_with_a_read_only_root() {
    let Some(scene) = TgbScene::setup("image_containerd", 2, false).await else { return };
    let env = scene.env.clone();
    let archive = archive(&env);
    let config: Value = serde_json::from_str(&run(Command::new("python3")
        .arg(env.repo.join("image/ls.py"))
        .arg("--config")
        .arg(&archive)))
    .expect("image config");
    let image_ref = run(Command::new("python3").arg(env.repo.join("image/ls.py")).arg("--ref").arg(&archive));
    let image_ref = image_ref.trim();
    let entrypoint: Vec<String> = serde_json::from_value(config["config"]["Entrypoint"].clone()).expect("Entrypoint");
    assert_eq!(config["config"]["User"], "65532:65532", "image config: {config}");

    let ctd = Containerd::start();
    let t = Instant::now();
    ctd.ok(&["images", "import", &archive.display().to_string()]);
    let imported = ctd.ok(&["images", "ls", "--quiet"]);
    assert!(imported.lines().any(|l| l == image_ref), "ctr imported {imported:?}, expected {image_ref}");
    eprintln!("image: {} imported in {:.2} s", archive.display(), t.elapsed().as_secs_f64());

    // (a) --version, read-only root, as the image's user.
    let mut version_cmd = vec!["run", "--rm", "--read-only", "--net-host", image_ref, "lbc-version"];
    version_cmd.extend(entrypoint.iter().map(String::as_str));
    version_cmd.push("--version");
    let printed = ctd.ok(&version_cmd);
    let host = run(Command::new(binary()).arg("--version"));
    assert_eq!(printed.trim(), host.trim(), "the image's --version differs from the packaged binary's");
    assert!(printed.starts_with("aws-lb-controller "), "{printed}");

    // (c) the controller, as the chart runs it, against this environment.
    // What the pod would get from volumes: the webhook certificate and a kubeconfig, readable by 65532.
    let files = ctd.dir.join("volumes");
    let certs = files.join("certs");
    lbc_e2e::webhook::write_cert(&certs);
    let kubeconfig = files.join("kubeconfig");
    std::fs::copy(env.get("KUBECONFIG"), &kubeconfig).expect("copy the kubeconfig");
    for f in [kubeconfig.clone(), certs.join("tls.crt"), certs.join("tls.key")] {
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let kubeconfig = kubeconfig.display().to_string();
    let ports = Ports { metrics: free_port(), health: free_port(), webhook: free_port() };
    let access_key = format!("E2EIMAGE{}", ports.metrics);
    let log = env.run_dir().join(format!("logs/controller-image-{}.log", ports.metrics));
    let log_uri = format!("file://{}", log.display());
    let vars = [
        format!("AWS_ACCESS_KEY_ID={access_key}"),
        format!("AWS_SECRET_ACCESS_KEY={}", env.get("AWS_SECRET_ACCESS_KEY")),
        format!("AWS_REGION={}", env.get("AWS_REGION")),
        "AWS_EC2_METADATA_DISABLED=true".to_string(),
        "KUBECONFIG=/etc/aws-lb-controller/kubeconfig".to_string(),
    ];
    let mount_kubeconfig = format!("type=bind,src={kubeconfig},dst=/etc/aws-lb-controller/kubeconfig,options=rbind:ro");
    let mount_certs =
        format!("type=bind,src={},dst=/tmp/k8s-webhook-server/serving-certs,options=rbind:ro", certs.display());
    let mut run_cmd = vec!["run", "--detach", "--read-only", "--net-host", "--log-uri", &log_uri];
    for v in &vars {
        run_cmd.extend(["--env", v.as_str()]);
    }
    run_cmd.extend(["--mount", &mount_kubeconfig, "--mount", &mount_certs, image_ref, "lbc-controller"]);
    let args = flags(&env, &scene.ns, "lbc-e2e-leader", ports, &[]);
    run_cmd.extend(entrypoint.iter().map(String::as_str));
    run_cmd.extend(args.iter().map(String::as_str));

    let started = Instant::now();
    ctd.ok(&run_cmd);
    let created = started.elapsed();
    let readyz = format!("http://127.0.0.1:{}/readyz", ports.health);
    let http = reqwest::Client::new();
    loop {
        if http.get(&readyz).send().await.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        let stopped = ctd.task_status("lbc-controller").as_deref() == Some("STOPPED");
        assert!(
            !stopped && started.elapsed() < Duration::from_secs(60),
            "/readyz of the controller in the container did not answer 200 within 60 s (exited: {stopped}); its \
             log ({}):\n{}\n\
             containerd log:\n{}",
            log.display(),
            std::fs::read_to_string(&log).unwrap_or_default(),
            ctd.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ready = started.elapsed();
    eprintln!(
        "image: ctr run -> task running {:.2} s, -> /readyz 200 {:.2} s",
        created.as_secs_f64(),
        ready.as_secs_f64()
    );

    // The process: the image's user, a read-only root.
    let pid = ctd.pid("lbc-controller");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    for (key, want) in [("Uid:", "65532\t65532\t65532\t65532"), ("Gid:", "65532\t65532\t65532\t65532")] {
        let line = status.lines().find(|l| l.starts_with(key)).expect("uid/gid lines");
        assert_eq!(line[key.len()..].trim(), want, "{key} of the controller in the container");
    }
    let (points, root_options) = mounts(pid);
    assert!(root_options.split(',').any(|o| o == "ro"), "the container's root is mounted {root_options}, not ro");

    // (b) Its files are the image's: mount points aside (/proc, /dev, /sys, the mounted certificate and
    // kubeconfig, the runtime's /etc/hosts and resolv.conf), and the directories the runtime made to mount on.
    let want = image_files(&env, &archive);
    let seen = container_files(Path::new(&format!("/proc/{pid}/root")), &points);
    let mount_parents: BTreeSet<String> = points
        .iter()
        .flat_map(|p| {
            let mut parents = Vec::new();
            let mut cur = Path::new(p);
            while let Some(parent) = cur.parent() {
                parents.push(parent.display().to_string());
                cur = parent;
            }
            parents
        })
        .collect();
    let mut problems = Vec::new();
    for (path, entry) in &seen {
        match want.get(path) {
            Some(w) if w == entry => {}
            Some(w) => problems.push(format!("{path}: in the container {entry}, in the image {w}")),
            None if mount_parents.contains(path) && entry.kind == "dir" => {}
            None => problems.push(format!("{path}: in the container ({entry}), not in the image")),
        }
    }
    for path in want.keys() {
        if !seen.contains_key(path) && !points.contains(path) {
            problems.push(format!("{path}: in the image, not in the container"));
        }
    }
    assert!(problems.is_empty(), "the container's files differ from the image's:\n{}", problems.join("\n"));
    eprintln!(
        "image: the container's {} paths are the image's {} ({} mount points aside)",
        seen.len(),
        want.len(),
        points.len()
    );
    assert!(!["/bin/sh", "/usr/bin/sh", "/bin/bash"].iter().any(|s| want.contains_key(*s)), "the image has a shell");

    // The build it runs, the webhook over TLS with the mounted certificate, and a binding reconciled.
    let metrics = http
        .get(format!("http://127.0.0.1:{}/metrics", ports.metrics))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let (version, rest) = host.trim().trim_start_matches("aws-lb-controller ").split_once(" (rev ").expect("version");
    let revision = rest.split(',').next().expect("revision");
    let info = format!("aws_lb_controller_build_info{{version=\"{version}\",revision=\"{revision}\",");
    assert!(metrics.lines().any(|l| l.starts_with(&info) && l.ends_with(" 1")), "no {info}... 1 in:\n{metrics}");
    let ca = reqwest::Certificate::from_pem(&std::fs::read(certs.join("tls.crt")).expect("cert")).expect("pem");
    let tls = reqwest::Client::builder().add_root_certificate(ca).build().expect("tls client");
    let webhook = format!("https://127.0.0.1:{}/mutate-v1-pod", ports.webhook);
    lbc_e2e::eventually("the webhook in the container answers over TLS", 30, || async {
        tls.get(&webhook).send().await.ok().map(|_| ())
    })
    .await;
    scene.wait_targets("the pods registered by the controller in the container", &scene.expected("web")).await;

    // SIGTERM ends it (graceful shutdown inside the container).
    let stop = Instant::now();
    ctd.ok(&["tasks", "kill", "--signal", "SIGTERM", "lbc-controller"]);
    lbc_e2e::eventually("the controller to exit on SIGTERM", 30, || async {
        (ctd.task_status("lbc-controller").as_deref() == Some("STOPPED")).then_some(())
    })
    .await;
    eprintln!("image: SIGTERM -> exited {:.2} s", stop.elapsed().as_secs_f64());
    ctd.remove("lbc-controller");
    drop(ctd);

    // For comparison: the same binary started as a process of this machine, to the same /readyz.
    let started = Instant::now();
    let host_proc = ControllerProc::start(&env, &scene.ns, "lbc-e2e-leader-host", &[]);
    while !host_proc.ready().await {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the host process never got ready: {}",
            host_proc.log_text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "image: for comparison, the same binary as a host process -> /readyz 200 {:.2} s",
        started.elapsed().as_secs_f64()
    );
    host_proc.terminate();
    scene.cleanup().await;
}
