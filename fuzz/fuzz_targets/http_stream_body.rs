//! Arbitrary bytes, in arbitrary chunks, through `JsonStreamDecoder`, the
//! splitter of HTTP streaming-session bodies (docs/mcp-v1.md §8). Invariants:
//! - decoding never fails, never panics, and never yields without consuming
//!   input (so it terminates);
//! - no message is over the limit or empty, and an oversize report always
//!   declares more than the limit;
//! - no more than the limit stays buffered between calls;
//! - message bytes are slices of the input, in order;
//! - the messages do not depend on the chunking (this found an oversize
//!   value skipped across chunks being cut up; see fuzz/README.md).
#![no_main]

use clawmcp::server::Input;
use clawmcp::transport::JsonStreamDecoder;
use clawmcp_fuzz::{assert_in_order_slices, decode_chunked, plan};
use libfuzzer_sys::fuzz_target;

/// Message limits, by `choice`.
const LIMITS: [usize; 8] = [1, 2, 16, 64, 256, 1024, 4096, 65536];

fuzz_target!(|input: &[u8]| {
    let plan = plan(input);
    let limit = LIMITS[plan.choice];

    let chunked = decode_chunked(JsonStreamDecoder::new(limit), plan.data, &plan.chunks);
    for item in &chunked.items {
        match item {
            Input::Message(body) => {
                assert!(!body.is_empty(), "an empty message");
                assert!(body.len() <= limit, "{} > {limit}", body.len());
            }
            Input::TooLarge { declared } => assert!(*declared > limit, "{declared} <= {limit}"),
            Input::Unreadable(why) => panic!("a JSON stream has no unreadable input: {why}"),
        }
    }
    assert!(
        chunked.max_buffered <= limit,
        "{} bytes buffered (limit {limit})",
        chunked.max_buffered
    );
    assert_in_order_slices(&chunked.items, plan.data);

    let whole = decode_chunked(JsonStreamDecoder::new(limit), plan.data, &[]);
    // `TooLarge` reports may differ (they declare the bytes seen when the
    // limit was crossed), the messages may not.
    let messages = |items: &[Input]| -> Vec<Input> {
        items
            .iter()
            .filter(|i| matches!(i, Input::Message(_)))
            .cloned()
            .collect()
    };
    assert_eq!(
        messages(&chunked.items),
        messages(&whole.items),
        "the chunking {:?} changed the messages",
        plan.chunks
    );
    let oversize = |items: &[Input]| {
        items
            .iter()
            .filter(|i| matches!(i, Input::TooLarge { .. }))
            .count()
    };
    assert_eq!(
        oversize(&chunked.items),
        oversize(&whole.items),
        "the chunking {:?} changed the number of oversize values",
        plan.chunks
    );
});
