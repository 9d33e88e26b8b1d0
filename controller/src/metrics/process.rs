//! The `process_*` families the Prometheus clients export (ALBC's Go client among them), read
//! from `/proc/self` at each scrape, so process dashboards and alerts written for ALBC (memory,
//! CPU, file descriptors) keep working. Off Linux nothing is exported.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Linux's user-visible clock tick (`USER_HZ`, what `/proc/<pid>/stat` counts CPU time and start
/// time in): 100 on every architecture Kubernetes nodes run (x86, arm, arm64, ppc64le, s390x).
const USER_HZ: f64 = 100.0;

#[derive(Debug, Default, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub start_time_seconds: f64,
    pub resident_memory_bytes: f64,
    pub virtual_memory_bytes: f64,
    /// Soft limit of the address space; `f64::MAX`-like 2^64 when unlimited, as the Go client.
    pub virtual_memory_max_bytes: f64,
    pub open_fds: f64,
    pub max_fds: f64,
    pub network_receive_bytes: f64,
    pub network_transmit_bytes: f64,
}

/// Reads the stats of the current process; `None` off Linux or when `/proc` is unreadable.
pub fn read() -> Option<ProcessStats> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as f64;
    let net = std::fs::read_to_string("/proc/self/net/dev").unwrap_or_default();
    parse(&stat, &status, &limits, &boot, &net, open_fds)
}

/// The stats from the texts of `/proc/self/{stat,status,limits}`, `/proc/stat` and
/// `/proc/self/net/dev`.
pub fn parse(stat: &str, status: &str, limits: &str, boot: &str, net: &str, open_fds: f64) -> Option<ProcessStats> {
    // Fields after the command name (which may hold spaces and parentheses): state is field 3.
    let after = stat.rsplit_once(')')?.1.split_whitespace().collect::<Vec<_>>();
    let field = |n: usize| after.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    let (utime, stime, start_ticks) = (field(14)?, field(15)?, field(22)?);
    let btime = boot.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse::<f64>().ok())?;
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|k| k * 1024.0)
    };
    let soft_limit = |name: &str| {
        limits.lines().find(|l| l.starts_with(name)).and_then(|l| {
            let soft = l[name.len()..].split_whitespace().next()?;
            Some(if soft == "unlimited" { 18446744073709551615.0 } else { soft.parse::<f64>().ok()? })
        })
    };
    let (mut rx, mut tx) = (0.0, 0.0);
    for line in net.lines().skip(2) {
        let Some((_, counters)) = line.split_once(':') else { continue };
        let c: Vec<f64> = counters.split_whitespace().filter_map(|v| v.parse().ok()).collect();
        if c.len() >= 9 {
            rx += c[0];
            tx += c[8];
        }
    }
    Some(ProcessStats {
        cpu_seconds: (utime + stime) / USER_HZ,
        start_time_seconds: btime + start_ticks / USER_HZ,
        resident_memory_bytes: kib("VmRSS:")?,
        virtual_memory_bytes: kib("VmSize:")?,
        virtual_memory_max_bytes: soft_limit("Max address space")?,
        open_fds,
        max_fds: soft_limit("Max open files")?,
        network_receive_bytes: rx,
        network_transmit_bytes: tx,
    })
}

/// Registered once; reads `/proc` at each scrape.
#[derive(Debug)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(p) = read() else { return Ok(()) };
        let counters = [
            ("process_cpu_seconds", "Total user and system CPU time spent in seconds", p.cpu_seconds),
            (
                "process_network_receive_bytes",
                "Bytes received by the process's network namespace",
                p.network_receive_bytes,
            ),
            (
                "process_network_transmit_bytes",
                "Bytes sent by the process's network namespace",
                p.network_transmit_bytes,
            ),
        ];
        for (name, help, v) in counters {
            ConstCounter::new(v).encode(encoder.encode_descriptor(name, help, None, MetricType::Counter)?)?;
        }
        let gauges = [
            (
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds",
                p.start_time_seconds,
            ),
            ("process_resident_memory_bytes", "Resident memory size in bytes", p.resident_memory_bytes),
            ("process_virtual_memory_bytes", "Virtual memory size in bytes", p.virtual_memory_bytes),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes",
                p.virtual_memory_max_bytes,
            ),
            ("process_open_fds", "Number of open file descriptors", p.open_fds),
            ("process_max_fds", "Maximum number of open file descriptors", p.max_fds),
        ];
        for (name, help, v) in gauges {
            ConstGauge::new(v).encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (aws-lb (ctl)) S 1 4242 4242 0 -1 4194560 2213 0 0 0 250 130 0 0 20 0 9 0 123456 \
                        1048576000 6000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    const STATUS: &str = "Name:\taws-lb-controller\nVmSize:\t  1024000 kB\nVmRSS:\t    24000 kB\n";
    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \n\
                          Max open files            1048576              1048576              files     \n\
                          Max address space         unlimited            unlimited            bytes     \n";
    const NET: &str = "Inter-|   Receive                                                |  Transmit\n \
                       face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
                       lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0\n  \
                       eth0:    5000      10    0    0    0     0          0         0     7000      12    0    0    0     0       0          0\n";

    #[test]
    fn reads_proc_texts_as_the_prometheus_clients_do() {
        let p = parse(STAT, STATUS, LIMITS, "cpu 1 2 3\nbtime 1700000000\n", NET, 12.0).expect("parsed");
        assert_eq!(p.cpu_seconds, 3.8, "(250 + 130) ticks of 1/100 s");
        assert_eq!(p.start_time_seconds, 1700000000.0 + 1234.56);
        assert_eq!(p.resident_memory_bytes, 24000.0 * 1024.0);
        assert_eq!(p.virtual_memory_bytes, 1024000.0 * 1024.0);
        assert_eq!(p.virtual_memory_max_bytes, 18446744073709551615.0);
        assert_eq!((p.open_fds, p.max_fds), (12.0, 1048576.0));
        assert_eq!((p.network_receive_bytes, p.network_transmit_bytes), (5100.0, 7100.0));
    }

    #[test]
    fn this_process_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            let p = read().expect("/proc/self readable");
            assert!(p.resident_memory_bytes > 0.0 && p.open_fds > 0.0 && p.start_time_seconds > 1.6e9, "{p:?}");
        }
    }
}
