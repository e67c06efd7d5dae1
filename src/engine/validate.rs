//! JSON Schema validation of tool arguments and outputs, with validators
//! compiled once at build time and the error texts of docs/mcp-v1.md §2.

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use crate::error::BuildError;

/// How much of a schema library's explanation goes into an error's `data`:
/// its text quotes the offending value, which may be megabytes long.
const MAX_REASON_CHARS: usize = 300;
/// How many schema violations are looked at to choose the one to report.
const MAX_ERRORS_LOOKED_AT: usize = 64;

/// Compiles `schema` (checked against its meta-schema), or says why not.
pub(crate) fn compile(
    mcp_id: &str,
    which: &'static str,
    schema: &Value,
) -> Result<Validator, BuildError> {
    let invalid = |reason: String| BuildError::InvalidSchema {
        mcp_id: mcp_id.to_owned(),
        which,
        reason,
    };
    if !schema.is_object() {
        return Err(invalid("a schema must be a JSON object".into()));
    }
    jsonschema::validator_for(schema).map_err(|e| invalid(e.to_string()))
}

/// Whether a schema describes objects (`"type": "object"`).
pub(crate) fn is_object_schema(schema: &Value) -> bool {
    schema.get("type") == Some(&Value::String("object".into()))
}

/// Checks that an input schema describes objects (`"type": "object"`).
pub(crate) fn require_object_schema(mcp_id: &str, schema: &Value) -> Result<(), BuildError> {
    if is_object_schema(schema) {
        return Ok(());
    }
    Err(BuildError::InvalidSchema {
        mcp_id: mcp_id.to_owned(),
        which: "inputSchema",
        reason: "inputSchema must be an object schema (\"type\": \"object\")".into(),
    })
}

/// Validates a tool's `arguments`: when they fail, the exact text of
/// docs/mcp-v1.md §2 (answered `-32602` in MCP v1.0).
pub(crate) fn check_arguments(
    validator: &Validator,
    arguments: &Value,
    mcp_id: &str,
) -> Result<(), String> {
    if validator.is_valid(arguments) {
        return Ok(());
    }
    // Look at a bounded number of errors: a huge argument can fail a schema
    // in millions of places, and only the first (or a missing one) is told.
    let errors: Vec<ValidationError<'_>> = validator
        .iter_errors(arguments)
        .take(MAX_ERRORS_LOOKED_AT)
        .collect();
    // A missing top-level argument is the most useful thing to say first.
    let missing = errors.iter().find_map(|e| match e.kind() {
        ValidationErrorKind::Required { property } if e.instance_path().as_str().is_empty() => {
            Some(
                property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_owned),
            )
        }
        _ => None,
    });
    let data = match (missing, errors.first()) {
        (Some(name), _) => {
            format!("Missing required property: '{name}' in arguments for tool {mcp_id}")
        }
        (None, Some(first)) => format!("{} in arguments for tool {mcp_id}", describe(first)),
        (None, None) => {
            format!("Invalid value at '': rejected by inputSchema in arguments for tool {mcp_id}")
        }
    };
    Err(data)
}

/// Validates a tool's output: when the tool broke its own promise, the
/// text (answered `-32603`).
pub(crate) fn check_output(
    validator: &Validator,
    output: &Value,
    mcp_id: &str,
) -> Result<(), String> {
    if validator.is_valid(output) {
        return Ok(());
    }
    let what = validator
        .iter_errors(output)
        .next()
        .map_or_else(|| "Invalid value at ''".to_owned(), |e| describe(&e));
    Err(format!(
        "{what} in output of tool {mcp_id} (it does not match the tool's outputSchema)"
    ))
}

/// `Invalid value at '/path': <reason>`. An unexpected property is pointed
/// at by its own path rather than its parent's.
fn describe(error: &ValidationError<'_>) -> String {
    let mut path = error.instance_path().as_str().to_owned();
    let reason = match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } if !unexpected.is_empty() => {
            if let Some(first) = unexpected.first() {
                path.push('/');
                path.push_str(&first.replace('~', "~0").replace('/', "~1"));
            }
            let names: Vec<String> = unexpected.iter().map(|n| format!("'{n}'")).collect();
            format!("property {} is not allowed", names.join(", "))
        }
        _ => error.to_string(),
    };
    format!("Invalid value at '{path}': {}", shorten(reason))
}

fn shorten(text: String) -> String {
    if text.chars().count() <= MAX_REASON_CHARS {
        return text;
    }
    let mut short: String = text.chars().take(MAX_REASON_CHARS).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ID: &str = "mcp://t/tools/x:v1";

    fn writer() -> Validator {
        compile(
            ID,
            "inputSchema",
            &json!({"type": "object", "additionalProperties": false, "required": ["path", "content"],
                "properties": {"path": {"type": "string"}, "content": {"type": "string"},
                "n": {"type": "integer", "minimum": 0, "maximum": 10}}}),
        )
        .unwrap()
    }

    #[test]
    fn missing_required_argument_reads_as_in_the_reference() {
        let e = check_arguments(&writer(), &json!({"path": "p"}), ID).unwrap_err();
        assert_eq!(
            e,
            "Missing required property: 'content' in arguments for tool mcp://t/tools/x:v1"
        );
    }

    #[test]
    fn other_violations_name_the_path() {
        let e =
            check_arguments(&writer(), &json!({"path": ["x"], "content": "c"}), ID).unwrap_err();
        assert!(e.starts_with("Invalid value at '/path': "), "{}", e);
        assert!(
            e.ends_with(" in arguments for tool mcp://t/tools/x:v1"),
            "{}",
            e
        );
        let e = check_arguments(
            &writer(),
            &json!({"path": "p", "content": "c", "n": 11}),
            ID,
        )
        .unwrap_err();
        assert!(e.starts_with("Invalid value at '/n': "), "{}", e);
    }

    #[test]
    fn unexpected_property_is_pointed_at() {
        let e = check_arguments(
            &writer(),
            &json!({"path": "p", "content": "c", "a/b": 1}),
            ID,
        )
        .unwrap_err();
        assert!(
            e.starts_with("Invalid value at '/a~1b': property 'a/b' is not allowed"),
            "{}",
            e
        );
    }

    #[test]
    fn long_values_are_not_quoted_whole() {
        let big = "x".repeat(100_000);
        let e = check_arguments(
            &writer(),
            &json!({"path": "p", "content": "c", "n": big}),
            ID,
        )
        .unwrap_err();
        assert!(e.len() < 1_000, "{} bytes", e.len());
    }

    #[test]
    fn invalid_schemas_are_refused_at_build_time() {
        assert!(compile(ID, "outputSchema", &json!({"type": "invalid_type"})).is_err());
        assert!(compile(ID, "outputSchema", &json!("string")).is_err());
        assert!(require_object_schema(ID, &json!({"type": "string"})).is_err());
        assert!(require_object_schema(ID, &json!({"type": "object"})).is_ok());
    }

    #[test]
    fn output_mismatch_is_an_internal_error() {
        let v = compile(
            ID,
            "outputSchema",
            &json!({"type": "object", "required": ["sum"]}),
        )
        .unwrap();
        let e = check_output(&v, &json!({}), ID).unwrap_err();
        assert!(
            e.ends_with("(it does not match the tool's outputSchema)"),
            "{e}"
        );
    }
}
