//! Pod addresses of one node: the hosts of its pod CIDR, handed out round robin so an address
//! freed by a torn-down pod is the last to come back (a data plane still draining the old pod
//! never sees a new pod at the same address soon after), and freed only after teardown.

use ipnet::Ipv4Net;
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

#[derive(Debug)]
pub struct Pool {
    cidr: Ipv4Net,
    used: BTreeSet<Ipv4Addr>,
    /// The last address handed out.
    cursor: Option<Ipv4Addr>,
}

impl Pool {
    pub fn new(cidr: Ipv4Net) -> Self {
        Self { cidr, used: BTreeSet::new(), cursor: None }
    }

    /// The next free address after the last one handed out; `None` when all are in use.
    pub fn allocate(&mut self) -> Option<Ipv4Addr> {
        let hosts: Vec<Ipv4Addr> = self.cidr.hosts().collect();
        let start = self.cursor.and_then(|c| hosts.iter().position(|h| *h == c)).map(|i| i + 1).unwrap_or(0);
        let ip = (0..hosts.len()).map(|k| hosts[(start + k) % hosts.len()]).find(|h| !self.used.contains(h))?;
        self.used.insert(ip);
        self.cursor = Some(ip);
        Some(ip)
    }

    /// Gives `ip` back (after the pod's namespace is gone).
    pub fn release(&mut self, ip: Ipv4Addr) {
        self.used.remove(&ip);
    }

    pub fn in_use(&self) -> usize {
        self.used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_and_reuse_only_after_release() {
        let mut p = Pool::new("10.0.104.0/30".parse().unwrap());
        let a = p.allocate().unwrap();
        let b = p.allocate().unwrap();
        assert_eq!((a.to_string().as_str(), b.to_string().as_str()), ("10.0.104.1", "10.0.104.2"));
        assert_eq!(p.allocate(), None, "a /30 has two hosts");
        p.release(a);
        assert_eq!(p.allocate(), Some(a));
        p.release(b);
        p.release(a);
        // After a, the cursor moves on to b before coming back to a.
        assert_eq!(p.allocate(), Some(b));
        assert_eq!(p.in_use(), 1);
    }
}
