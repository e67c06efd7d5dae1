//! Arbitrary text through the one-pass reader of plain tool calls
//! (`mcp/executeTool`, `tools/call`), held to serde's reading. Invariants:
//! - it never panics;
//! - what it takes, serde's reading takes alike: the same id, method and
//!   params (the tool's id or name, the arguments' text);
//! - what it takes also reads as a value (nesting, number range, paired
//!   surrogate escapes);
//! - what serde's one-pass reading of a call takes (in any member order),
//!   the general reading (the envelope, then the params) reads alike.
//!
//! Inputs that are not UTF-8 are skipped: the reader is given `&str`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        clawmcp::fuzzing::plain_call(text);
    }
});
