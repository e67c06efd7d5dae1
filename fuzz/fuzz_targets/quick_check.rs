//! Arbitrary JSON text checked by the quick schema check against one of a
//! few schemas of its subset, held to the full validator (jsonschema).
//! Invariants:
//! - it never panics;
//! - what it admits, the full validator accepts;
//! - the same text spaced out gets the same answer.
//!
//! Byte 0 picks the schema; the rest is the text (skipped when not UTF-8).
#![no_main]

use std::sync::OnceLock;

use clawmcp::fuzzing::QuickCheckTarget;
use libfuzzer_sys::fuzz_target;

/// Schemas of the quick check's subset, as typed tools derive them.
const SCHEMAS: [&str; 6] = [
    r##"{"type":"object","additionalProperties":false,"required":["message"],"properties":{"message":{"type":"string"}}}"##,
    r##"{"type":"object","required":["a","b"],"properties":{"a":{"type":"integer","minimum":0,"maximum":255},"b":{"type":"number","exclusiveMinimum":-1.5,"exclusiveMaximum":1e3}}}"##,
    r##"{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}},"flag":{"type":["boolean","null"]},"colour":{"enum":["Red","Green","Blue"]}}}"##,
    r##"{"$defs":{"Inner":{"type":"object","required":["depth"],"additionalProperties":false,"properties":{"depth":{"type":"integer","format":"uint8","minimum":0,"maximum":255}}}},"type":"object","required":["inner"],"properties":{"inner":{"$ref":"#/$defs/Inner"},"list":{"type":"array","items":{"$ref":"#/$defs/Inner"}}}}"##,
    r##"{"type":"array","items":{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}}"##,
    r##"{"type":["string","integer"],"minimum":1}"##,
];

/// The schemas, compiled once.
fn targets() -> &'static [QuickCheckTarget] {
    static TARGETS: OnceLock<Vec<QuickCheckTarget>> = OnceLock::new();
    TARGETS.get_or_init(|| {
        SCHEMAS
            .iter()
            .map(|text| {
                let schema: serde_json::Value = serde_json::from_str(text).expect("a fixed schema");
                QuickCheckTarget::new(schema).expect("a schema of the quick check's subset")
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let targets = targets();
    targets[usize::from(which) % targets.len()].check(text);
});
