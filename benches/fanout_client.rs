//! The fan-out bench's client (benches/scale_out.py runs it): opens N idle
//! 2026-07-28 `subscriptions/listen` streams for the reference example's
//! last-write resource, spread over the given ports, waits until each is
//! acknowledged, prints `READY`; then, for each of ROUNDS changes, prints
//! for each stream the wall clock time (seconds since the Unix epoch) at
//! which that round's `notifications/resources/updated` arrived, one per
//! line, then `DONE`. A tokio client, so that reading 10,000 sockets costs
//! the measurement little.
//!
//!     fanout_client PORT[,PORT...] STREAMS [ROUNDS]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

const URI: &str = "mcp://clawmcp/examples/resources/last-write.txt";

fn request(port: u16) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}},"notifications":{{"resourceSubscriptions":["{URI}"]}}}}}}"#
    );
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

async fn stream(port: u16, acked: mpsc::Sender<()>, arrived: mpsc::Sender<f64>) {
    let Ok(mut socket) = TcpStream::connect(("127.0.0.1", port)).await else {
        return;
    };
    if socket.write_all(&request(port)).await.is_err() {
        return;
    }
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 4096];
    let mut was_acked = false;
    loop {
        let Ok(n) = socket.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        let at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        seen.extend_from_slice(&buf[..n]);
        if !was_acked && contains(&seen, b"acknowledged") {
            was_acked = true;
            seen.clear();
            let _ = acked.send(()).await;
        } else if was_acked {
            // Each event is whole in `seen` once its blank line is there.
            let Some(end) = seen.windows(2).rposition(|w| w == b"\n\n") else {
                continue;
            };
            for _ in 0..count(&seen[..end + 2], b"resources/updated") {
                let _ = arrived.send(at).await;
            }
            seen.drain(..end + 2);
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let ports: Vec<u16> = args
        .next()
        .unwrap_or_default()
        .split(',')
        .filter_map(|p| p.parse().ok())
        .collect();
    let streams: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    if ports.is_empty() || streams == 0 {
        eprintln!("usage: fanout_client PORT[,PORT...] STREAMS [ROUNDS]");
        std::process::exit(2);
    }
    let (acked_tx, mut acked) = mpsc::channel(streams);
    let (arrived_tx, mut arrived) = mpsc::channel(streams);
    for i in 0..streams {
        let port = ports[i % ports.len()];
        tokio::spawn(stream(port, acked_tx.clone(), arrived_tx.clone()));
        if i % 256 == 255 {
            tokio::task::yield_now().await;
        }
    }
    for _ in 0..streams {
        if tokio::time::timeout(Duration::from_secs(120), acked.recv())
            .await
            .ok()
            .flatten()
            .is_none()
        {
            eprintln!("not every stream was acknowledged");
            std::process::exit(1);
        }
    }
    println!("READY");
    for _ in 0..rounds {
        let mut times = Vec::with_capacity(streams);
        while times.len() < streams {
            match tokio::time::timeout(Duration::from_secs(60), arrived.recv()).await {
                Ok(Some(at)) => times.push(at),
                _ => break,
            }
        }
        let mut out = String::with_capacity(times.len() * 20);
        for at in &times {
            out.push_str(&format!("{at:.6}\n"));
        }
        out.push_str("DONE");
        println!("{out}");
    }
}
