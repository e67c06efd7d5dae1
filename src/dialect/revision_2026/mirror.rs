//! The tool arguments the 2026-07-28 revision mirrors into HTTP headers
//! (docs/model-context.md §7.6): a property of a tool's `inputSchema` that
//! says `"x-mcp-header": "Region"` is sent by the client, beside the body,
//! as `Mcp-Param-Region`, so that a proxy can route on it without reading
//! the body; the server refuses a request whose header and body differ.
//!
//! An annotation is checked when the listing is compiled, by the rules a
//! client holds a tool to (a client leaves out a tool that breaks one, so
//! a server that served it would serve a tool no client calls):
//!
//! - its value is a non-empty HTTP token (RFC 9110 `tchar`s), unique
//!   within the schema regardless of case;
//! - the property's `type` is `string`, `integer` or `boolean`;
//! - the property is reached from the schema's root through `properties`
//!   alone: an annotation under `items`, `anyOf`, `$defs` or any other
//!   member (but the instances of `const`, `enum`, `default` and
//!   `examples`) is refused.

use serde_json::{Map, Value};

use crate::engine::Catalog;
use crate::error::{BuildError, clipped};

/// The schema keyword that marks a mirrored property.
const ANNOTATION: &str = "x-mcp-header";

/// The prefix of a mirrored argument's header name.
const HEADER_PREFIX: &str = "mcp-param-";

/// Keywords whose values are instances, not schemas: an object there is
/// data, whatever its keys.
const INSTANCE_KEYWORDS: &[&str] = &["const", "enum", "default", "examples"];

/// Keywords whose value maps names to schemas: each entry is a schema,
/// whatever its name (`$defs` may define one called `properties`).
const SCHEMA_MAPS: &[&str] = &[
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
];

/// One mirrored argument of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mirror {
    /// The header's name, lowercase: `mcp-param-` and the annotation.
    header: String,
    /// The annotation as the schema writes it (`Region`), for messages.
    name: String,
    /// The chain of `properties` keys from the arguments to the value.
    path: Box<[String]>,
}

/// The mirrored arguments of every tool of a listing, by the tool's index
/// in its catalog.
#[derive(Debug, Default)]
pub(crate) struct Mirrors(Vec<Box<[Mirror]>>);

impl Mirrors {
    /// The mirrors of `catalog`'s tools, each annotation checked.
    /// `serves_revision` is false for a server that speaks only MCP v1.0,
    /// which has no such headers: nothing is read or refused then.
    pub(crate) fn build(catalog: &Catalog, serves_revision: bool) -> Result<Self, BuildError> {
        if !serves_revision {
            return Ok(Self::default());
        }
        let tools = catalog.tools.iter().map(|tool| {
            let definition = &tool.definition;
            scan(&definition.input_schema)
                .map(Vec::into_boxed_slice)
                .map_err(|problem| BuildError::InvalidHeaderMirror {
                    mcp_id: definition.mcp_id.clone(),
                    problem,
                })
        });
        tools.collect::<Result<_, _>>().map(Self)
    }

    /// The mirrored arguments of the tool at `index` (none for an index it
    /// does not have).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn of(&self, index: usize) -> &[Mirror] {
        self.0.get(index).map_or(&[], |mirrors| mirrors)
    }
}

#[cfg_attr(not(feature = "http"), allow(dead_code))]
impl Mirror {
    /// The header's name, lowercase (`mcp-param-region`).
    pub(crate) fn header(&self) -> &str {
        &self.header
    }

    /// Holds the header's value (`None`: not sent; else as the client
    /// wrote it, base64 already decoded) to the argument it mirrors. A
    /// value a client mirrors (text, a boolean, a finite number; an
    /// integer only within ±(2^53 − 1), where numbers compare exactly)
    /// needs the header, which must stand for it: the same text, number
    /// (`42` is `42.0`) or boolean. Any other value (absent, `null`, an
    /// object, an array, a larger integer) must come without one.
    pub(crate) fn check(
        &self,
        header: Option<&str>,
        arguments: &Map<String, Value>,
    ) -> Result<(), String> {
        let (first, rest) = self
            .path
            .split_first()
            .map_or((None, &[][..]), |(f, r)| (Some(f), r));
        let value = first
            .and_then(|key| arguments.get(key))
            .and_then(|value| rest.iter().try_fold(value, |value, key| value.get(key)))
            .filter(|value| !value.is_null());
        let name = &self.name;
        // (Joined only for a message: a request that passes allocates
        // nothing here.)
        let property = || self.path.join(".");
        match (header, value) {
            (None, Some(value)) if is_mirrored(value) => Err(format!(
                "the Mcp-Param-{name} header is required: argument '{}' has a value",
                property()
            )),
            (None, _) => Ok(()),
            (Some(_), None) => Err(format!(
                "Mcp-Param-{name} is set but argument '{}' has no value",
                property()
            )),
            (Some(_), Some(value)) if !is_mirrored(value) => Err(format!(
                "Mcp-Param-{name} is set but argument '{}' is a value no client mirrors",
                property()
            )),
            (Some(header), Some(value)) if !stands_for(header, value) => Err(format!(
                "Mcp-Param-{name} header value '{}' does not match argument '{}'",
                clipped(header),
                property()
            )),
            (Some(_), Some(_)) => Ok(()),
        }
    }
}

/// The annotated properties of `schema`, or why an annotation breaks a
/// rule (the first such).
fn scan(schema: &Value) -> Result<Vec<Mirror>, String> {
    let mut mirrors = Vec::new();
    visit(schema, &mut Vec::new(), true, &mut mirrors)?;
    Ok(mirrors)
}

/// Visits `node`, at `path` from the root (`reachable`: by `properties`
/// alone), adding its annotation, then its subschemas.
fn visit(
    node: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    mirrors: &mut Vec<Mirror>,
) -> Result<(), String> {
    let Some(schema) = node.as_object() else {
        return Ok(());
    };
    let at = || match path.is_empty() {
        true => "the schema's root".to_owned(),
        false => format!("property '{}'", path.join(".")),
    };
    if let Some(annotation) = schema.get(ANNOTATION) {
        if reachable && path.is_empty() {
            return Err(format!(
                "{ANNOTATION} on the schema's root marks no property"
            ));
        }
        if !reachable {
            return Err(format!(
                "{ANNOTATION} under {} is off the chain of 'properties' from the root \
                 (under items, anyOf, $defs or the like)",
                at()
            ));
        }
        let name = annotation
            .as_str()
            .filter(|name| is_token(name))
            .ok_or_else(|| {
                format!(
                    "{ANNOTATION} of {} must be a non-empty HTTP token (letters, digits and !#$%&'*+-.^_`|~), not {}",
                    at(),
                    clipped(&annotation.to_string())
                )
            })?;
        let kind = schema.get("type").and_then(Value::as_str);
        if !matches!(kind, Some("string" | "integer" | "boolean")) {
            return Err(format!(
                "{ANNOTATION} of {} is allowed on a string, integer or boolean property only, not {}",
                at(),
                kind.unwrap_or("one without a single type")
            ));
        }
        let header = format!("{HEADER_PREFIX}{}", name.to_ascii_lowercase());
        if let Some(taken) = mirrors.iter().find(|m| m.header == header) {
            return Err(format!(
                "{ANNOTATION} '{name}' of {} is the name of '{}' too (names are compared without case)",
                at(),
                taken.path.join(".")
            ));
        }
        mirrors.push(Mirror {
            header,
            name: name.to_owned(),
            path: path.clone().into_boxed_slice(),
        });
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (key, child) in properties {
            path.push(key.clone());
            let visited = visit(child, path, reachable, mirrors);
            path.pop();
            visited?;
        }
    }
    // Every other member that may hold a schema (`items`, `anyOf`,
    // `$defs`, `dependencies`, an unknown keyword, ...): an annotation
    // anywhere under one is off the `properties` chain.
    let others = schema
        .iter()
        .filter(|(key, _)| *key != "properties" && !INSTANCE_KEYWORDS.contains(&key.as_str()));
    for (key, value) in others {
        match value.as_object() {
            Some(entries) if SCHEMA_MAPS.contains(&key.as_str()) => {
                for entry in entries.values() {
                    visit_all(entry, path, mirrors)?;
                }
            }
            _ => visit_all(value, path, mirrors)?,
        }
    }
    Ok(())
}

/// Visits every schema `value` may be or hold, none of them reached
/// through `properties` alone.
fn visit_all(
    value: &Value,
    path: &mut Vec<String>,
    mirrors: &mut Vec<Mirror>,
) -> Result<(), String> {
    match value {
        Value::Object(_) => visit(value, path, false, mirrors),
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| visit_all(item, path, mirrors)),
        _ => Ok(()),
    }
}

/// An HTTP token (RFC 9110 §5.6.2): one or more `tchar`s.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether a client mirrors `value` (it leaves out an object, an array, a
/// number that is not finite and an integer past ±(2^53 − 1)).
fn is_mirrored(value: &Value) -> bool {
    const MOST_SAFE: f64 = 9_007_199_254_740_991.0;
    match value {
        Value::String(_) | Value::Bool(_) => true,
        Value::Number(number) => number
            .as_f64()
            .is_some_and(|n| n.is_finite() && (n.fract() != 0.0 || n.abs() <= MOST_SAFE)),
        _ => false,
    }
}

/// Whether a header's value stands for the argument's: the same text, the
/// same number (compared as numbers: `42` and `42.0` are one), the same
/// boolean.
fn stands_for(header: &str, value: &Value) -> bool {
    match value {
        Value::String(text) => header == text,
        Value::Number(number) => match (header.parse::<f64>(), number.as_f64()) {
            (Ok(a), Some(b)) => a == b,
            _ => false,
        },
        Value::Bool(on) => header == if *on { "true" } else { "false" },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mirrors(schema: Value) -> Result<Vec<Mirror>, String> {
        scan(&schema)
    }

    fn arguments(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_property_reached_through_properties_alone_is_mirrored_at_any_depth() {
        let found = mirrors(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"},
                "target": {
                    "type": "object",
                    "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}}
                }
            }
        }))
        .expect("valid annotations");
        let named: Vec<(&str, String)> = found
            .iter()
            .map(|m| (m.header(), m.path.join(".")))
            .collect();
        assert_eq!(
            named,
            [
                ("mcp-param-region", "region".to_owned()),
                ("mcp-param-zone", "target.zone".to_owned())
            ]
        );
    }

    #[test]
    fn an_annotation_that_breaks_a_rule_a_client_holds_is_refused() {
        let property = |annotated: Value| json!({"type": "object", "properties": {"p": annotated}});
        let refused = [
            (
                "an empty name",
                property(json!({"type": "string", "x-mcp-header": ""})),
            ),
            (
                "a space",
                property(json!({"type": "string", "x-mcp-header": "My Region"})),
            ),
            (
                "a colon",
                property(json!({"type": "string", "x-mcp-header": "Region:Primary"})),
            ),
            (
                "past ASCII",
                property(json!({"type": "string", "x-mcp-header": "Région"})),
            ),
            (
                "a tab",
                property(json!({"type": "string", "x-mcp-header": "Region\t1"})),
            ),
            (
                "not text",
                property(json!({"type": "string", "x-mcp-header": 7})),
            ),
            (
                "a number",
                property(json!({"type": "number", "x-mcp-header": "Score"})),
            ),
            (
                "an object",
                property(json!({"type": "object", "x-mcp-header": "Data"})),
            ),
            (
                "an array",
                property(json!({"type": "array", "x-mcp-header": "Items"})),
            ),
            (
                "null",
                property(json!({"type": "null", "x-mcp-header": "Nil"})),
            ),
            ("no type", property(json!({"x-mcp-header": "Any"}))),
            (
                "two types",
                property(json!({"type": ["string", "null"], "x-mcp-header": "Or"})),
            ),
            (
                "a name twice, in another case",
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "MyField"},
                    "b": {"type": "string", "x-mcp-header": "myfield"}
                }}),
            ),
            (
                "on the root",
                json!({"type": "object", "x-mcp-header": "Root"}),
            ),
            (
                "under items",
                property(
                    json!({"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}),
                ),
            ),
            (
                "under anyOf",
                json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            ),
            (
                "under $defs",
                json!({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}),
            ),
            (
                "under additionalProperties",
                json!({"type": "object", "additionalProperties": {"type": "string", "x-mcp-header": "X"}}),
            ),
            (
                "under draft-07 dependencies",
                json!({"type": "object", "dependencies": {"a": {"properties": {
                    "b": {"type": "string", "x-mcp-header": "B"}
                }}}}),
            ),
            (
                "under a keyword this does not know",
                json!({"type": "object", "x-vendor": {"nested": [{"x-mcp-header": "V"}]}}),
            ),
            (
                "on a definition named properties",
                json!({"type": "object", "$defs": {"properties": {"type": "string", "x-mcp-header": "P"}}}),
            ),
            (
                "on a definition named default",
                json!({"type": "object", "$defs": {"default": {"type": "string", "x-mcp-header": "D"}}}),
            ),
        ];
        for (what, schema) in refused {
            assert!(mirrors(schema.clone()).is_err(), "{what}: {schema}");
        }
        let fine = property(json!({"type": "boolean", "x-mcp-header": "Dry-Run_2.v~1"}));
        assert_eq!(mirrors(fine).map(|m| m.len()), Ok(1));
        // Instances are data: an object there is no schema.
        let data = json!({"type": "object", "properties": {"p": {
            "type": "object",
            "default": {"x-mcp-header": "NotOne"},
            "examples": [{"x-mcp-header": "NorThis"}]
        }}});
        assert_eq!(mirrors(data), Ok(Vec::new()));
        // A definition's name is a name, not a keyword.
        let named = json!({"type": "object", "$defs": {"x-mcp-header": {"type": "string"}}});
        assert_eq!(mirrors(named), Ok(Vec::new()));
    }

    #[test]
    fn a_header_must_stand_for_its_argument_and_is_required_when_the_client_would_send_it() {
        let found = mirrors(json!({"type": "object", "properties": {
            "n": {"type": "integer", "x-mcp-header": "N"},
            "nested": {"type": "object", "properties": {
                "flag": {"type": "boolean", "x-mcp-header": "Flag"}
            }}
        }}))
        .expect("valid");
        let (n, flag) = (&found[0], &found[1]);
        let args = arguments(json!({"n": 42, "nested": {"flag": true}}));
        assert_eq!(n.check(Some("42"), &args), Ok(()));
        assert_eq!(n.check(Some("42.0"), &args), Ok(()));
        assert!(n.check(Some("43"), &args).is_err());
        assert!(
            n.check(None, &args).is_err(),
            "the value is there: so must the header be"
        );
        assert_eq!(flag.check(Some("true"), &args), Ok(()));
        assert!(flag.check(Some("false"), &args).is_err());
        assert!(flag.check(None, &args).is_err());
        let empty = arguments(json!({"n": null}));
        assert_eq!(n.check(None, &empty), Ok(()));
        assert!(
            n.check(Some("1"), &empty).is_err(),
            "a header with no value to stand for"
        );
        assert_eq!(flag.check(None, &empty), Ok(()));
        // A value the client leaves out needs no header; sent, it cannot match.
        let unsent = arguments(json!({"n": {"an": "object"}, "nested": {"flag": [true]}}));
        assert_eq!(n.check(None, &unsent), Ok(()));
        assert_eq!(flag.check(None, &unsent), Ok(()));
        assert!(n.check(Some("x"), &unsent).is_err());
        // Past 2^53 a header could compare equal to a neighbour as a
        // float: the client sends none, and one sent is refused.
        let huge = arguments(json!({"n": 9_007_199_254_740_993_u64}));
        assert_eq!(n.check(None, &huge), Ok(()));
        assert!(n.check(Some("9007199254740992"), &huge).is_err());
        assert!(n.check(Some("9007199254740993"), &huge).is_err());
    }

    #[test]
    fn a_value_compares_by_its_json_type_and_numbers_as_numbers() {
        assert!(stands_for("42", &json!(42.0)));
        assert!(stands_for("42.0", &json!(42)));
        assert!(!stands_for("42", &json!("43")));
        assert!(!stands_for("42", &json!(43)));
        assert!(stands_for("true", &json!(true)));
        assert!(!stands_for("True", &json!(true)));
        assert!(!stands_for("{}", &json!({})));
    }
}
