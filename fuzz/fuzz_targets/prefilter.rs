//! Arbitrary JSON text through the prefilter that lets a parse be skipped,
//! held to serde_json's reading: whenever a string of the text holds the
//! needle (picked by the first byte), the prefilter must say it may.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    clawmcp::fuzzing::prefilter(data);
});
