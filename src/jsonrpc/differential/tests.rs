//! The plain reader accepts nothing serde's reading refuses, reads what it
//! accepts exactly as serde does, and accepts the usual calls.

use crate::test_rng::{Rng, choices, full_choices, sample};
use proptest::prelude::*;

/// The forms the crate's dialects read (`dialect::Calls`), spelled here
/// for this layer's own tests.
pub(crate) struct Forms;

impl crate::jsonrpc::CallTable for Forms {
    const FORMS: &'static [crate::jsonrpc::CallForm] = &[
        crate::jsonrpc::CallForm {
            method: "mcp/executeTool",
            tool: "id",
            object_arguments: true,
            kept: &[],
        },
        crate::jsonrpc::CallForm {
            method: "tools/call",
            tool: "name",
            object_arguments: false,
            kept: &["inputResponses", "requestState"],
        },
    ];
    const META: &'static [&'static str] = &[
        "progressToken",
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/logLevel",
    ];
}

fn agrees(text: &str) -> bool {
    super::agrees::<Forms>(text)
}

fn serde_reading(text: &str) -> Option<String> {
    super::serde_reading::<Forms>(text)
}

#[test]
fn the_usual_calls_are_read_here() {
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"method":"mcp/executeTool","params":{"id":"mcp://t/tools/echo:v1","arguments":{"message":"hi"}}}"#,
        r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
        // `_meta` is kept as text and read as the general reading reads it
        // (a progress token; a 2026-07-28 request's version and capabilities).
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{},"_meta":{"progressToken":1}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        // Members it does not read are skipped.
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}, "io.modelcontextprotocol/protocolVersion" : "2026-07-28"}}}"#,
        // A `null` member is none (as serde reads an `Option`).
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":null}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"m":"\u0041 \ud83d\ude00"}}}"#,
        " { \"params\" : { \"arguments\" : { \"a\" : [ 1 , -2.5e-3 , true , null , { } , [ ] ] , \"b\" : \"x\\n\\\"\" } , \"name\" : \"n\" } ,\n\t\"method\":\"tools/call\",\"id\":0,\"jsonrpc\":\"2.0\"}\r\n",
        // As Python's json.dumps writes it: a space after every colon and comma.
        r#"{"jsonrpc": "2.0", "id": 1, "method": "mcp/executeTool", "params": {"id": "mcp://t/tools/echo:v1", "arguments": {"message": "hi"}}}"#,
        r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}, "_meta": {"progressToken": 1}}}"#,
    ] {
        assert!(agrees(text), "{text}");
    }
}

#[test]
fn what_it_does_not_take_is_left_to_serde() {
    for text in [
        // Escapes in names or in the strings read whole (the arguments'
        // strings take any escape but a lone surrogate).
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ech\u006f","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"m":"\ud800"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"\udc00":1}}}"#,
        r#"{"json\u0072pc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{}}}"#,
        // Members it does not read, repeated ones, other ids.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{},"_meta":1}}"#,
        // A `_meta` member repeated, or named with an escape.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{},"_meta":{"progressToken":1,"progressToken":2}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{},"_meta":{"progressToken":null,"progressToken":2}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{},"_meta":{"progress\u0054oken":1}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{},"requestState":"s"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"e","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":-1,"method":"tools/call","params":{"name":"e","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"mcp/executeTool","params":{"id":"e","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"e","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":null}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"e","arguments":{}}}"#,
        // Bad syntax, bad numbers, raw control characters.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"a":01}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"a":1e400}}}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"e\",\"arguments\":{\"a\":\"\t\"}}}",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"a":1,}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{}}} x"#,
        // An object serde_json reads as another value: named so first, in
        // the arguments or deeper, or in a kept `_meta` member.
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"$serde_json::private::RawValue":"2026-07-282'0","id":7}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"$serde_json::private::RawValue":"{}"}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"mcp/executeTool","params":{"id":"e","arguments":{"a":[{"\u0024serde_json::private::RawValue":"5"}]}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{},"_meta":{"progressToken":{"$serde_json::private::RawValue":"1"}}}}"#,
    ] {
        assert!(!agrees(text), "{text}");
    }
}

fn one_pass(text: &str) -> Option<String> {
    crate::jsonrpc::read_tool_call_with_serde::<Forms>(text)
        .as_ref()
        .and_then(super::summary)
}

/// serde's one-pass reading picks a call's form by the method it reads,
/// in any member order, and reads it as the general reading does.
#[test]
fn serdes_one_pass_reading_takes_the_form_its_method_names() {
    for text in [
        // The params before the method.
        r#"{"params":{"name":"echo","arguments":{"m":1}},"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        r#"{"id":"x","params":{"id":"mcp://t/tools/echo:v1","arguments":{}},"method":"mcp/executeTool","jsonrpc":"2.0"}"#,
        // Another form's method named in the arguments, or in the tool.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":"mcp/executeTool"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"mcp/executeTool","params":{"id":"tools/call","arguments":{}}}"#,
        // Escapes the plain reader leaves.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ech\u006f","arguments":{}}}"#,
    ] {
        let general = super::general_reading::<Forms>(text);
        assert!(general.is_some(), "{text}");
        assert_eq!(one_pass(text), general, "{text}");
    }
}

/// What is not a call of a form (another method, a response, a method
/// written with an escape) is left to the general reading.
#[test]
fn serdes_one_pass_reading_leaves_what_is_not_a_call() {
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"e","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"m":"tools/call"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"e","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/call","params":{"name":"e","arguments":{}}}"#,
        r#"{"params":{"name":"e","arguments":{}},"params":{"name":"e","arguments":{}},"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        r#"{"params":{"name":1,"arguments":{}},"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
    ] {
        assert_eq!(one_pass(text), None, "{text}");
    }
}

const VALUES: &[&str] = &[
    "\"\\ud800\"",
    "\"\\ud83d\\ude00\"",
    "0",
    "-0",
    "1",
    "-1",
    "10",
    "01",
    "1.",
    "1.5",
    "-2.5e-3",
    "1E2",
    "1e+2",
    "1e",
    "1e400",
    "-",
    "123456789012345678901234567890",
    "true",
    "false",
    "null",
    "nul",
    "\"\"",
    "\"x\"",
    "\"a\\\"b\"",
    "\"a\\\\\"",
    "\"\\n\\t\\/\"",
    "\"\\u0041\"",
    "\"\\x\"",
    "\"é\"",
    "\"\t\"",
    "[]",
    "{}",
    "[1,2]",
    "[1,]",
    "{\"a\":1}",
    "{\"a\"}",
    "{\"a\":1,\"a\":2}",
];
const IDS: &[&str] = &[
    "1",
    "0",
    "42",
    "007",
    "-3",
    "1.0",
    "2e3",
    "\"r\"",
    "\"\"",
    "null",
    "true",
    "123456789012345678",
    "1234567890123456789",
];

fn arguments(rng: &mut Rng, depth: u32) -> String {
    let n = rng.below(4);
    let members: Vec<String> = (0..n)
        .map(|_| {
            let value = if depth > 0 && rng.below(3) == 0 {
                if rng.below(2) == 0 {
                    arguments(rng, depth - 1)
                } else {
                    format!("[{}]", arguments(rng, depth - 1))
                }
            } else {
                rng.pick(VALUES).to_owned()
            };
            format!("\"{}\":{value}", rng.pick(&["message", "a", "b\\n", "c d"]))
        })
        .collect();
    format!("{{{}}}", members.join(","))
}

/// A `_meta` object: the members the plain reader reads, others, names
/// with escapes (one of which spells a member it reads), repeats.
fn meta(rng: &mut Rng) -> String {
    const NAMES: &[&str] = &[
        "progressToken",
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/logLevel",
        "io.modelcontextprotocol/clientInfo",
        "progress\\u0054oken",
        "x\\n",
    ];
    let n = rng.below(5);
    let members: Vec<String> = (0..n)
        .map(|_| {
            let value = match rng.below(3) {
                0 => arguments(rng, 2),
                1 => "\"2026-07-28\"".to_owned(),
                _ => rng.pick(VALUES).to_owned(),
            };
            format!("\"{}\" : {value}", rng.pick(NAMES))
        })
        .collect();
    format!("{{ {} }}", members.join(" , "))
}

fn message(rng: &mut Rng) -> String {
    let v1 = rng.below(2) == 0;
    let mut params = vec![
        if v1 {
            format!(
                "\"id\":{}",
                rng.pick(&["\"mcp://t/tools/echo:v1\"", "\"t\"", "1"])
            )
        } else {
            format!("\"name\":{}", rng.pick(&["\"echo\"", "\"e\\\"\"", "null"]))
        },
        format!(
            "\"arguments\":{}",
            if rng.below(8) == 0 {
                rng.pick(VALUES).to_owned()
            } else {
                arguments(rng, 3)
            }
        ),
    ];
    if rng.below(6) == 0 {
        params.push(
            rng.pick(&["\"_meta\":{}", "\"extra\":1", "\"arguments\":{}"])
                .to_owned(),
        );
    }
    if rng.below(3) == 0 {
        params.push(format!("\"_meta\":{}", meta(rng)));
    }
    let mut members = vec![
        format!(
            "\"jsonrpc\":{}",
            rng.pick(&["\"2.0\"", "\"2.0\"", "\"2.0\"", "\"1.0\"", "2.0"])
        ),
        format!("\"id\":{}", rng.pick(IDS)),
        format!(
            "\"method\":\"{}\"",
            if v1 { "mcp/executeTool" } else { "tools/call" }
        ),
        format!("\"params\":{{{}}}", params.join(",")),
    ];
    if rng.below(8) == 0 {
        members.push(
            rng.pick(&["\"result\":1", "\"id\":2", "\"x\":[]"])
                .to_owned(),
        );
    }
    for i in (1..members.len()).rev() {
        members.swap(i, rng.below(i + 1));
    }
    let mut text = format!("{{{}}}", members.join(","));
    // Now and then a byte changed, dropped or added, or whitespace.
    let mut bytes = text.into_bytes();
    for _ in 0..rng.below(3) {
        let at = rng.below(bytes.len());
        match rng.below(4) {
            0 => bytes[at] = b"{}[],:\"\\ 0e-"[rng.below(12)],
            1 => {
                bytes.remove(at);
            }
            2 => bytes.insert(at, b" \t\n\r"[rng.below(4)]),
            _ => bytes.insert(at, b",}]\"0"[rng.below(5)]),
        }
    }
    text = String::from_utf8_lossy(&bytes).into_owned();
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// What the plain reader takes, serde's reading takes alike (the same
    /// id, method and params), and it reads as a value.
    #[test]
    fn it_reads_what_serde_reads_and_nothing_it_refuses(mut rng in choices(160)) {
        agrees(&message(&mut rng));
    }
}

#[test]
fn it_reads_most_of_what_serde_reads() {
    let (mut read_here, mut serde_reads) = (0, 0);
    for mut rng in sample(&full_choices(160), 30_000) {
        let text = message(&mut rng);
        read_here += usize::from(agrees(&text));
        serde_reads += usize::from(serde_reading(&text).is_some());
    }
    // Not a check that cannot fail: much of what serde reads is read here
    // (the rest has escapes, other ids or members this reader leaves).
    assert!(read_here * 4 >= serde_reads, "{read_here} of {serde_reads}");
}

#[test]
fn deep_arguments_are_refused_where_a_value_reading_refuses_them() {
    for levels in 120..130 {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"e","arguments":{{"a":{}1{}}}}}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        );
        assert_eq!(agrees(&text), serde_reading(&text).is_some(), "{levels}");
    }
}
