//! Arbitrary text through the fast path's JSON string writer, held to
//! serde_json's: the same bytes, for every text. Inputs that are not
//! UTF-8 are skipped: the writer is given `&str`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        clawmcp::fuzzing::escape(text);
    }
});
