//! Arbitrary bytes, in arbitrary chunks, through the stdio `FrameCodec`
//! (docs/mcp-v1.md §7). Invariants:
//! - decoding never fails, never panics, and never yields without consuming
//!   input (so it terminates; libFuzzer's -timeout catches a loop inside
//!   one `decode` call);
//! - a decoded message is never over the configured limit, and an oversize
//!   report always declares more than the limit;
//! - no more than max(limit, header limit) bytes stay buffered between calls
//!   (an oversize frame is skipped as it streams past, never buffered);
//! - message bodies are slices of the input, in order;
//! - the messages and oversize reports do not depend on the chunking.
#![no_main]

use clawmcp::server::Input;
use clawmcp::transport::{DEFAULT_MAX_HEADER_SIZE, FrameCodec};
use clawmcp_fuzz::{assert_in_order_slices, decode_chunked, plan};
use libfuzzer_sys::fuzz_target;

/// Message limits, by `choice`.
const LIMITS: [usize; 8] = [0, 1, 16, 100, 1024, 4096, 65536, 1 << 20];

fuzz_target!(|input: &[u8]| {
    let plan = plan(input);
    let limit = LIMITS[plan.choice];
    let header_limit = if plan.flag {
        64
    } else {
        DEFAULT_MAX_HEADER_SIZE
    };
    let codec = || FrameCodec::new(limit).with_max_header_size(header_limit);

    let chunked = decode_chunked(codec(), plan.data, &plan.chunks);
    for item in &chunked.items {
        match item {
            Input::Message(body) => assert!(body.len() <= limit, "{} > {limit}", body.len()),
            Input::TooLarge { declared } => assert!(*declared > limit, "{declared} <= {limit}"),
            Input::Unreadable(_) => {}
        }
    }
    assert!(
        chunked.max_buffered <= limit.max(header_limit).max(16),
        "{} bytes buffered (limit {limit}, header limit {header_limit})",
        chunked.max_buffered
    );
    assert_in_order_slices(&chunked.items, plan.data);

    let whole = decode_chunked(codec(), plan.data, &[]);
    assert_eq!(
        chunked.content(),
        whole.content(),
        "the chunking {:?} changed what was decoded",
        plan.chunks
    );
});
