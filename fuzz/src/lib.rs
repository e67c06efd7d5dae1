//! Shared pieces of the fuzz targets: how an input is read as a
//! configuration, a chunking and a byte stream, a chunked decoding driver
//! that checks the decoders' resource invariants, and a checker for stdio
//! output (docs/mcp-v1.md §7: nothing but `Content-Length: N\r\n\r\n` + N bytes
//! of compact JSON-RPC).
//!
//! Input layout (every target):
//!
//! ```text
//! byte 0:        bits 0-2 `choice` (target-specific: limits, buffer size),
//!                bits 3-5 `k`, the number of chunk-size bytes (0-7),
//!                bit 6    `flag` (target-specific)
//! bytes 1..=k:   chunk sizes, each byte b meaning b + 1 bytes, used cyclically
//!                (k = 0: the whole stream in one chunk)
//! the rest:      the byte stream
//! ```

use std::io;

use bytes::BytesMut;
use clawmcp::server::Input;
use tokio_util::codec::Decoder;

// The tests' checker of stdio output; the line checker is theirs only.
#[path = "../../tests/common/stdio_output.rs"]
#[allow(dead_code)]
mod stdio_output;
pub use stdio_output::{check_line_output, check_stdio_output};

/// An input split into its configuration and its byte stream.
#[derive(Debug)]
pub struct Plan<'a> {
    /// Target-specific choice, 0-7.
    pub choice: usize,
    /// Target-specific flag.
    pub flag: bool,
    /// Chunk sizes (each at least 1), used cyclically; empty means one chunk.
    pub chunks: Vec<usize>,
    /// The byte stream.
    pub data: &'a [u8],
}

/// Reads `input` as a [`Plan`].
pub fn plan(input: &[u8]) -> Plan<'_> {
    let Some((&head, rest)) = input.split_first() else {
        return Plan {
            choice: 0,
            flag: false,
            chunks: Vec::new(),
            data: &[],
        };
    };
    let k = usize::from((head >> 3) & 7).min(rest.len());
    Plan {
        choice: usize::from(head & 7),
        flag: head & 0x40 != 0,
        chunks: rest[..k].iter().map(|&b| usize::from(b) + 1).collect(),
        data: &rest[k..],
    }
}

/// Splits `data` into pieces of the plan's chunk sizes (cyclically).
pub fn pieces<'a>(data: &'a [u8], chunks: &[usize]) -> Vec<&'a [u8]> {
    if chunks.is_empty() {
        return vec![data];
    }
    let mut out = Vec::new();
    let mut rest = data;
    let mut sizes = chunks.iter().copied().cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(1).clamp(1, rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    out
}

/// Pipe buffer sizes of the session targets, by `choice` (bits 0-1).
const PIPES: [usize; 4] = [16, 256, 4096, 64 * 1024];

/// Serves one whole stdio session of the server `make` builds (inside the
/// runtime) over an in-memory pipe
/// (its size by the plan's `choice`, bits 0-1), on a current-thread
/// runtime: the plan's stream written in its chunks, the input closed, the
/// output read to its end. Panics if the session hangs after its input
/// ended (10 s), the server does not read all of its input, or `serve_io`
/// fails. Returns the output.
pub fn serve_stdio_session(make: impl FnOnce() -> clawmcp::Server, plan: &Plan<'_>) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pipe = PIPES[plan.choice & 3];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (served, output) = runtime.block_on(async {
        let server = make();
        let (client, server_end) = tokio::io::duplex(pipe);
        let (server_read, server_write) = tokio::io::split(server_end);
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let serve = server.serve_io(server_read, server_write);
        let write = async move {
            for piece in pieces(plan.data, &plan.chunks) {
                to_server.write_all(piece).await?;
                tokio::task::yield_now().await;
            }
            to_server.shutdown().await
        };
        let read = async move {
            let mut out = Vec::new();
            from_server.read_to_end(&mut out).await.map(|_| out)
        };
        let (served, written, output) =
            tokio::time::timeout(std::time::Duration::from_secs(10), async {
                tokio::join!(serve, write, read)
            })
            .await
            .expect("the session hangs after its input ended");
        written.expect("the server reads all of its input");
        (served, output.expect("the output is readable"))
    });
    assert!(served.is_ok(), "serve_io failed: {served:?}");
    output
}

/// What a chunked decoding produced.
#[derive(Debug)]
pub struct Decoded {
    /// Every item, in order.
    pub items: Vec<Input>,
    /// The most bytes left buffered after a `decode` that asked for more.
    pub max_buffered: usize,
}

impl Decoded {
    /// The items that carry content (messages and oversize reports), for
    /// comparing decodings of the same stream; `Unreadable` reasons and
    /// counts may legitimately differ with the chunking.
    pub fn content(&self) -> Vec<&Input> {
        self.items
            .iter()
            .filter(|i| !matches!(i, Input::Unreadable(_)))
            .collect()
    }
}

/// Feeds `data` to `decoder` in `chunks`, draining after each, then ends
/// the input. Panics if the decoder errs or yields items without consuming
/// input (more items than bytes: a loop).
pub fn decode_chunked<D>(mut decoder: D, data: &[u8], chunks: &[usize]) -> Decoded
where
    D: Decoder<Item = Input, Error = io::Error>,
{
    let bound = data.len() + 2;
    let mut buf = BytesMut::new();
    let mut items = Vec::new();
    let mut max_buffered = 0;
    for piece in pieces(data, chunks) {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode(&mut buf).expect("decode never fails") {
                Some(item) => {
                    items.push(item);
                    assert!(items.len() <= bound, "the decoder yields without consuming");
                }
                None => {
                    max_buffered = max_buffered.max(buf.len());
                    break;
                }
            }
        }
    }
    while let Some(item) = decoder
        .decode_eof(&mut buf)
        .expect("decode_eof never fails")
    {
        items.push(item);
        assert!(
            items.len() <= bound,
            "the decoder yields without consuming at EOF"
        );
    }
    Decoded {
        items,
        max_buffered,
    }
}

/// Where `needle` first occurs in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Checks that every message's bytes occur in `data`, in order, without
/// overlapping.
pub fn assert_in_order_slices(items: &[Input], data: &[u8]) {
    let mut at = 0;
    for item in items {
        if let Input::Message(bytes) = item {
            let found = find(&data[at..], bytes)
                .unwrap_or_else(|| panic!("message {bytes:?} is not in the rest of the input"));
            at += found + bytes.len();
        }
    }
}
