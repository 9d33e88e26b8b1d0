//! A TCP proxy on 127.0.0.1 that a test can freeze: connections stay open and new ones are
//! accepted, but nothing is forwarded in either direction until it thaws — the half-open
//! connection of a network partition, as a client sees it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct FreezableProxy {
    pub addr: SocketAddr,
    frozen: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl FreezableProxy {
    /// Forwards a fresh local port to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let frozen = Arc::new(AtomicBool::new(false));
        let f = frozen.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let f = f.clone();
                tokio::spawn(async move {
                    wait_thawed(&f).await;
                    let Ok(server) = TcpStream::connect(upstream).await else { return };
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::join!(pipe(cr, sw, f.clone()), pipe(sr, cw, f));
                });
            }
        });
        Self { addr, frozen, task }
    }

    pub fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
    }

    pub fn thaw(&self) {
        self.frozen.store(false, Ordering::SeqCst);
    }
}

impl Drop for FreezableProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn wait_thawed(frozen: &AtomicBool) {
    while frozen.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    frozen: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        wait_thawed(&frozen).await;
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Bytes read just before a freeze are held, not delivered, until the thaw.
        wait_thawed(&frozen).await;
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
