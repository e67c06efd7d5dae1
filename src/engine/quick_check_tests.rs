//! The quick check never admits what the full validator refuses, and it
//! admits the plain valid arguments and outputs of the hot path.

use serde_json::{Value, json};

use super::validate;
use crate::fast::quick_check::QuickCheck;
use crate::fast::quick_check::differential::agrees;
use crate::test_rng::{Rng, choices, full_choices, sample};
use proptest::prelude::*;

/// Schemas within the subset, each with values it must admit.
fn schemas() -> Vec<(Value, Vec<Value>)> {
    let mut list = vec![
        (
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Echo",
                "type": "object", "additionalProperties": false, "required": ["message"],
                "properties": {"message": {"type": "string", "description": "The text."}}}),
            vec![
                json!({"message": "hi"}),
                json!({"message": ""}),
                json!({"message": "say \"hi\" \\ é\n"}),
            ],
        ),
        (
            json!({"type": "object", "required": ["a", "b"],
                "properties": {"a": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
                               "b": {"type": ["integer", "null"], "minimum": -9223372036854775808_i64,
                                     "maximum": 9223372036854775807_i64}}}),
            vec![
                json!({"a": 0, "b": null}),
                json!({"a": 255, "b": -5, "c": [1, {"d": 2.5}]}),
            ],
        ),
        (
            json!({"type": "object", "properties": {
                "f": {"type": "number", "exclusiveMinimum": 1.5, "exclusiveMaximum": 10},
                "g": {"type": "number"},
                "u": {"type": "integer", "minimum": 0, "maximum": 18446744073709551615_u64},
                "e": {"type": "string", "enum": ["red", "green"]},
                "l": {"type": "array", "items": {"type": "boolean"}},
                "o": {"type": "object", "additionalProperties": {"type": "string"}},
                "t": true, "n": false}}),
            vec![
                json!({"f": 2, "g": 0.25, "u": 18446744073709551615_u64, "e": "red", "l": [true, false],
                       "o": {"x": "y"}, "t": [null]}),
                json!({}),
            ],
        ),
        (
            json!({"type": "object", "required": ["only"], "additionalProperties": false}),
            vec![],
        ),
        (
            json!({"type": "object", "required": ["k"], "additionalProperties": {"type": "integer"}}),
            vec![json!({"k": 1, "z": -2})],
        ),
        (
            json!({"type": "object", "default": {}, "examples": [{}]}),
            vec![json!({"any": [1]})],
        ),
    ];
    #[cfg(feature = "schemars")]
    {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        enum Colour {
            Red,
            Green,
        }
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Wide {
            name: String,
            excitement: Option<u8>,
            count: u32,
            delta: i64,
            ratio: f64,
            tags: Vec<String>,
            flag: bool,
            colour: Colour,
            inner: Inner,
        }
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Inner {
            depth: u8,
        }
        list.push((
            crate::typed::schema_of::<Wide>(),
            vec![
                json!({"name": "n", "excitement": 3, "count": 1, "delta": 0, "ratio": 1.5,
                        "tags": [], "flag": false, "colour": "Green", "inner": {"depth": 2}}),
            ],
        ));
        // A type that holds itself gets no quick check.
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Tree {
            children: Vec<Tree>,
        }
        let tree = crate::typed::schema_of::<Tree>();
        assert!(QuickCheck::compile(&tree).is_none(), "{tree}");
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Flat {
            name: String,
            excitement: Option<u8>,
            count: u32,
            delta: i64,
            ratio: f64,
            tags: Vec<String>,
            flag: bool,
        }
        list.push((
            crate::typed::schema_of::<Flat>(),
            vec![
                json!({"name": "n", "excitement": null, "count": 4294967295_u32, "delta": -1,
                        "ratio": 0.5, "tags": ["a"], "flag": true}),
            ],
        ));
    }
    list
}

const SCALARS: &[&str] = &[
    "null",
    "true",
    "false",
    "0",
    "-0",
    "1",
    "-1",
    "255",
    "256",
    "-129",
    "1.0",
    "1.5",
    "2",
    "10",
    "9.999",
    "-0.0",
    "1e2",
    "1E400",
    "2.5e-3",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "-9223372036854775808",
    "9223372036854775807",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "\"\"",
    "\"red\"",
    "\"green\"",
    "\"r\\u0065d\"",
    "\"é\"",
    "\"a\\\"b\"",
    "\"hi\"",
];
const NAMES: &[&str] = &[
    "colour",
    "inner",
    "depth",
    "message",
    "a",
    "b",
    "c",
    "f",
    "g",
    "u",
    "e",
    "l",
    "o",
    "t",
    "n",
    "k",
    "z",
    "only",
    "name",
    "excitement",
    "count",
    "delta",
    "ratio",
    "tags",
    "flag",
    "mess\\u0061ge",
    "",
];

/// JSON text (possibly with repeated member names and escapes).
fn text(rng: &mut Rng, depth: u32) -> String {
    match rng.next() % if depth == 0 { 1 } else { 5 } {
        0 | 1 => rng.pick(SCALARS).to_owned(),
        2 => {
            let n = rng.next() % 4;
            let items: Vec<String> = (0..n).map(|_| text(rng, depth - 1)).collect();
            format!("[{}]", items.join(","))
        }
        _ => {
            let n = rng.next() % 6;
            let members: Vec<String> = (0..n)
                .map(|_| format!("\"{}\":{}", rng.pick(NAMES), text(rng, depth - 1)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
    }
}

const INTEGERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "255",
    "256",
    "-129",
    "2",
    "10",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "-9223372036854775808",
    "9223372036854775807",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "1.0",
    "1e2",
];
const NUMBERS: &[&str] = &["1.5", "9.999", "-0.0", "2.5e-3", "1E300", "0.1", "10.0"];
const STRINGS: &[&str] = &[
    "\"Green\"",
    "\"\"",
    "\"red\"",
    "\"green\"",
    "\"r\\u0065d\"",
    "\"é\"",
    "\"hi\"",
];

/// JSON text shaped by `schema`, now and then not: near the line between
/// valid and invalid, where a quick check could go wrong.
fn guided(root: &Value, schema: &Value, rng: &mut Rng, depth: u32) -> String {
    if depth == 0 || rng.next().is_multiple_of(8) {
        return text(rng, depth.min(2));
    }
    let Some(schema) = schema.as_object() else {
        return text(rng, 1);
    };
    if let Some(name) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        return guided(root, &root["$defs"][name], rng, depth);
    }
    let extra = schema
        .get("additionalProperties")
        .unwrap_or(&Value::Bool(true));
    let mut names: Vec<(&str, &Value)> = Vec::new();
    if let Some(Value::Object(properties)) = schema.get("properties") {
        names.extend(properties.iter().map(|(name, sub)| (name.as_str(), sub)));
    }
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !names.iter().any(|(known, _)| *known == name) {
                names.push((name, extra));
            }
        }
    }
    if !names.is_empty() {
        let mut members = Vec::new();
        for (name, sub) in names {
            if !rng.next().is_multiple_of(8) {
                members.push(format!(
                    "{}:{}",
                    Value::from(name),
                    guided(root, sub, rng, depth - 1)
                ));
            }
            if rng.next().is_multiple_of(16) {
                members.push(format!("{}:{}", Value::from(name), text(rng, 1)));
            }
        }
        if rng.next().is_multiple_of(4) {
            members.push(format!(
                "\"{}\":{}",
                rng.pick(NAMES),
                guided(root, extra, rng, depth - 1)
            ));
        }
        return format!("{{{}}}", members.join(","));
    }
    if let Some(items) = schema.get("items") {
        let n = rng.next() % 4;
        let items: Vec<String> = (0..n)
            .map(|_| guided(root, items, rng, depth - 1))
            .collect();
        return format!("[{}]", items.join(","));
    }
    let names: Vec<&str> = match schema.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => vec!["string", "number", "object"],
    };
    match rng.pick(&names) {
        "integer" => rng.pick(INTEGERS).to_owned(),
        "number" => {
            let pool = if rng.next().is_multiple_of(2) {
                INTEGERS
            } else {
                NUMBERS
            };
            rng.pick(pool).to_owned()
        }
        "string" => match schema.get("enum").and_then(Value::as_array) {
            Some(members) if !rng.next().is_multiple_of(4) => {
                members[rng.below(members.len())].to_string()
            }
            _ => rng.pick(STRINGS).to_owned(),
        },
        "boolean" => rng.pick(&["true", "false"]).to_owned(),
        "null" => "null".to_owned(),
        _ => text(rng, depth - 1),
    }
}

/// One generated text for `schema`: guided by it, or any JSON.
fn generated(schema: &Value, rng: &mut Rng) -> String {
    if rng.next().is_multiple_of(4) {
        text(rng, 3)
    } else {
        guided(schema, schema, rng, 4)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// What the quick check admits, the full validator accepts, for every
    /// schema of the subset and texts guided by it.
    #[test]
    fn what_the_quick_check_admits_the_full_validator_accepts(
        which in 0..schemas().len(),
        mut rng in choices(200),
    ) {
        let (schema, _) = schemas().swap_remove(which);
        let quick = QuickCheck::compile(&schema).unwrap_or_else(|| panic!("no quick check: {schema}"));
        let full = validate::compile("t", "inputSchema", &schema).unwrap();
        agrees(&quick, &full, &schema, &generated(&schema, &mut rng));
    }
}

#[test]
fn the_quick_check_admits_most_valid_texts() {
    let population = sample(&full_choices(400), 20_000);
    for (schema, examples) in schemas() {
        let quick =
            QuickCheck::compile(&schema).unwrap_or_else(|| panic!("no quick check: {schema}"));
        let full = validate::compile("t", "inputSchema", &schema).unwrap();
        for value in &examples {
            assert!(quick.admits(&value.to_string()), "{value} against {schema}");
        }
        let (mut admitted, mut valid) = (0, 0);
        for rng in &population {
            let text = generated(&schema, &mut rng.clone());
            if let Some((is_admitted, is_valid)) = agrees(&quick, &full, &schema, &text) {
                admitted += usize::from(is_admitted);
                valid += usize::from(is_valid);
            }
        }
        // Not a check that cannot fail: most valid texts are admitted
        // (floats against integer types and bounds, and repeated names
        // the validator reads as one, are left to it).
        // (A schema without examples admits nothing at all.)
        assert!(
            examples.is_empty() || valid >= 20,
            "{valid} valid texts for {schema}"
        );
        assert!(
            admitted * 10 >= valid * 6,
            "{admitted} of {valid} admitted for {schema}"
        );
    }
}

#[test]
fn schemas_outside_the_subset_get_no_quick_check() {
    for schema in [
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "type": "object"}}, "$defs": {"A": {}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/B"}}, "$defs": {"A": {}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "other.json"}}}),
        // A definition that holds itself.
        json!({"type": "object", "properties": {"t": {"$ref": "#/$defs/T"}},
               "$defs": {"T": {"type": "array", "items": {"$ref": "#/$defs/T"}}}}),
        json!({"type": "object", "anyOf": [{"required": ["a"]}]}),
        json!({"type": "object", "properties": {"s": {"type": "string", "format": "date-time"}}}),
        json!({"type": "object", "properties": {"s": {"type": "string", "minLength": 1}}}),
        json!({"type": "object", "x-vendor": 1}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
        json!({"type": "object", "properties": {"e": {"enum": ["a", 1]}}}),
        json!("not a schema"),
    ] {
        assert!(QuickCheck::compile(&schema).is_none(), "{schema}");
    }
}

#[test]
fn what_it_cannot_be_sure_of_is_left_to_the_full_validator() {
    let quick = QuickCheck::compile(&json!({"type": "object", "properties": {
        "i": {"type": "integer"}, "m": {"type": "number", "minimum": 0}}}))
    .unwrap();
    assert!(quick.admits(r#"{"i": 1.0, "m": 0.5}"#));
    assert!(!quick.admits(r#"{"i": 1.5}"#));
    // 1e300 is past what compares exactly with a 64-bit bound.
    let bounded =
        QuickCheck::compile(&json!({"type": "integer", "maximum": 18446744073709551615_u64}))
            .unwrap();
    assert!(!bounded.admits("1e300"));
    assert!(bounded.admits("1.0"));
    assert!(bounded.admits("18446744073709551615"));
    assert!(!bounded.admits("18446744073709551616"));
    assert!(quick.admits(r#"{"i": 1, "m": 0}"#));
    assert!(!quick.admits(r#"{"i": 1} x"#));
    // Nesting past serde_json's reading is left to it (and the walk does
    // not run out of stack).
    let deep = format!("{{\"t\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(!quick.admits(&deep));
    // Exactly where a value reading stops.
    for levels in 120..130 {
        let text = format!("{{\"t\":{}{}}}", "[".repeat(levels), "]".repeat(levels));
        let reads = serde_json::from_str::<Value>(&text).is_ok();
        assert_eq!(quick.admits(&text), reads, "{levels}");
    }
}

/// Found by the `quick_check` fuzz target: commas and colons inside a
/// string are not spacing, so spelling the text otherwise leaves them be.
#[test]
fn a_text_spelled_otherwise_keeps_its_strings() {
    let schema = json!({"$defs": {"Inner": {"type": "object", "required": ["depth"],
        "additionalProperties": false, "properties": {"depth": {"type": "integer",
        "format": "uint8", "minimum": 0, "maximum": 255}}}},
        "type": "object", "required": ["inner"], "properties": {"inner": {"$ref": "#/$defs/Inner"},
        "list": {"type": "array", "items": {"$ref": "#/$defs/Inner"}}}});
    let quick = QuickCheck::compile(&schema).unwrap();
    let full = validate::compile("t", "inputSchema", &schema).unwrap();
    let text = r#"{"inner":{"depth":3},"$sch,u\\\\>e,":[{"depth":0}]}"#;
    assert_eq!(agrees(&quick, &full, &schema, text), Some((true, true)));
}

/// serde_json reads an object whose first member is named
/// `$serde_json::private::RawValue` as that member's string parsed (`5`
/// here), so the text's shape is not the value's. Such an object is left
/// to the full validator, which sees the value, under any schema.
#[test]
fn an_object_serde_json_reads_as_another_value_is_left_to_the_full_validator() {
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "integer", "maximum": 10},
        "o": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 10}}}}});
    let quick = QuickCheck::compile(&schema).unwrap();
    let full = validate::compile("t", "inputSchema", &schema).unwrap();
    for text in [
        r#"{"$serde_json::private::RawValue":"5"}"#,
        r#"{"\u0024serde_json::private::RawValue":"5"}"#,
        r#"{"o":{"$serde_json::private::RawValue":"{\"n\":1000}"}}"#,
    ] {
        assert!(!quick.admits(text), "{text}");
        assert_eq!(agrees(&quick, &full, &schema, text), Some((false, false)));
    }
    // Named anywhere but first, it is a member like any other.
    let text = r#"{"n":1,"$serde_json::private::RawValue":"5"}"#;
    assert_eq!(agrees(&quick, &full, &schema, text), Some((true, true)));
    // Under a schema that takes any value too (a tool's output may hold
    // such an object, and is read back for the full validator).
    let any = json!({"type": "object"});
    let quick = QuickCheck::compile(&any).unwrap();
    let full = validate::compile("t", "outputSchema", &any).unwrap();
    let text = r#"{"a":{"b":[{"$serde_json::private::RawValue":"5"}]}}"#;
    assert_eq!(agrees(&quick, &full, &any, text), Some((false, true)));
}
