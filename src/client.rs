//! What a tool may ask of the client, through its
//! [`ToolContext`](crate::ToolContext), in a Model Context Protocol session
//! (2025-11-25 family) whose client declared the capability: elicitation
//! (a form for the user to fill), sampling (a completion from the client's
//! model) and its roots — plus the severity of the log lines a tool sends.
//!
//! Every request is awaited like any async call and fails with a
//! [`ClientError`] — never hangs — when the session speaks MCP v1.0, the
//! client did not declare the capability, it does not answer within the
//! server's [client request timeout](crate::ServerBuilder::client_request_timeout),
//! the request is cancelled, or the client goes away.
//!
//! ```
//! use clawmcp::client::{Elicitation, ElicitAction};
//! use clawmcp::{ToolContext, ToolError, ToolOutput};
//!
//! async fn confirm(ctx: ToolContext) -> Result<ToolOutput, ToolError> {
//!     let answer = ctx
//!         .elicit(
//!             Elicitation::new("Delete the file?")
//!                 .boolean("sure", "Yes, delete it", true)
//!                 .text("reason", "Why", false),
//!         )
//!         .await?;
//!     Ok(match answer.action {
//!         ElicitAction::Accept => ToolOutput::text(format!("deleted ({:?})", answer.content)),
//!         _ => ToolOutput::text("kept"),
//!     })
//! }
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::content::Content;
use crate::content::MessageRole;

/// The severity of a log line (RFC 5424's, as `schema.ts` names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum LogLevel {
    /// Detail for debugging.
    Debug = 0,
    /// Normal operation.
    Info = 1,
    /// Normal but significant.
    Notice = 2,
    /// A warning.
    Warning = 3,
    /// An error.
    Error = 4,
    /// A critical condition.
    Critical = 5,
    /// Action must be taken at once.
    Alert = 6,
    /// The system is unusable.
    Emergency = 7,
}

/// Why a request to the client did not get an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The session speaks MCP v1.0, or is an HTTP single exchange: there
    /// is no way to ask the client anything.
    #[error("this session cannot carry requests to the client (MCP v1.0 has none)")]
    Unsupported,
    /// The client did not declare the capability in `initialize` (for an
    /// elicitation: not with the form mode, which a form needs).
    #[error("the client did not declare the {0} capability")]
    CapabilityMissing(&'static str),
    /// No answer within the client request timeout (which counts from
    /// the ask, a wait for the client's `notifications/initialized`
    /// included).
    #[error("the client did not answer within {0:?}")]
    TimedOut(Duration),
    /// The tool's request was cancelled (or ran past its time limit)
    /// first, or ended: a context kept past its call asks nothing, and a
    /// question still waiting when the call returns stops waiting (the
    /// client is told, by `notifications/cancelled`).
    #[error("the request was cancelled before the client answered")]
    Cancelled,
    /// The client went away, or its input ended, before it answered.
    #[error("the client is gone")]
    Gone,
    /// The client answered with a JSON-RPC error.
    #[error("the client refused: {message} ({code})")]
    Refused {
        /// The error's code.
        code: i64,
        /// The error's message.
        message: String,
        /// The error's data, if any.
        data: Option<Value>,
    },
    /// The client's answer does not have the shape the protocol gives it,
    /// or the content of an accepted form does not match the form.
    #[error("the client's answer is malformed: {0}")]
    Malformed(String),
    /// The request itself is not one the protocol allows (e.g. an
    /// elicitation schema outside the restricted subset).
    #[error("invalid request to the client: {0}")]
    Invalid(String),
}

/// A form for the user to fill (`elicitation/create`, form mode): a message
/// and a flat schema of primitive fields — the restricted subset of JSON
/// Schema the protocol allows (strings, numbers, integers, booleans,
/// enumerations; no nesting).
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    message: String,
    properties: Map<String, Value>,
    required: Vec<String>,
}

impl Elicitation {
    /// A form with `message` and no fields yet.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            properties: Map::new(),
            required: Vec::new(),
        }
    }

    /// Adds field `name` with `schema` (one of the protocol's primitive
    /// schemas, checked when the form is sent).
    #[must_use]
    pub fn field(mut self, name: impl Into<String>, schema: Value, required: bool) -> Self {
        let name = name.into();
        if required {
            self.required.push(name.clone());
        }
        self.properties.insert(name, schema);
        self
    }

    /// Adds a text field.
    #[must_use]
    pub fn text(self, name: impl Into<String>, description: &str, required: bool) -> Self {
        self.field(
            name,
            json!({"type": "string", "description": description}),
            required,
        )
    }

    /// Adds a number field.
    #[must_use]
    pub fn number(self, name: impl Into<String>, description: &str, required: bool) -> Self {
        self.field(
            name,
            json!({"type": "number", "description": description}),
            required,
        )
    }

    /// Adds a yes/no field.
    #[must_use]
    pub fn boolean(self, name: impl Into<String>, description: &str, required: bool) -> Self {
        self.field(
            name,
            json!({"type": "boolean", "description": description}),
            required,
        )
    }

    /// Adds a choice among `options`.
    #[must_use]
    pub fn choice(
        self,
        name: impl Into<String>,
        description: &str,
        options: &[&str],
        required: bool,
    ) -> Self {
        self.field(
            name,
            json!({"type": "string", "description": description, "enum": options}),
            required,
        )
    }

    /// The `elicitation/create` params, after checking that every field is
    /// a primitive schema the protocol allows.
    pub(crate) fn params(&self) -> Result<Value, ClientError> {
        for (name, schema) in &self.properties {
            check_primitive(schema)
                .map_err(|why| ClientError::Invalid(format!("field {name:?}: {why}")))?;
        }
        let requested = self.requested_schema();
        Ok(json!({"mode": "form", "message": self.message, "requestedSchema": requested}))
    }

    /// The form as the object schema a client is asked to fill.
    fn requested_schema(&self) -> Value {
        let mut requested = serde_json::Map::new();
        requested.insert("type".into(), "object".into());
        requested.insert("properties".into(), json!(self.properties));
        if !self.required.is_empty() {
            requested.insert("required".into(), json!(self.required));
        }
        Value::Object(requested)
    }

    /// Checks an accepted answer's content against the form's schema (the
    /// specification's "servers SHOULD validate"): a tool that asked for a
    /// yes/no field reads a boolean, and a required field is there. A
    /// declined or cancelled answer carries nothing to check.
    pub(crate) fn check(&self, answer: &ElicitResult) -> Result<(), ClientError> {
        if answer.action != ElicitAction::Accept {
            return Ok(());
        }
        let schema = self.requested_schema();
        let content = Value::Object(answer.content.clone().unwrap_or_default());
        // (The fields were checked as primitive schemas, which compile.)
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| ClientError::Invalid(format!("the form's schema: {e}")))?;
        match validator.iter_errors(&content).next() {
            None => Ok(()),
            Some(error) => {
                let path = error.instance_path().to_string();
                // (The library's text quotes the value, which may be long.)
                let why: String = error.to_string().chars().take(300).collect();
                Err(ClientError::Malformed(format!(
                    "the accepted content does not match the form at '{path}': {why}"
                )))
            }
        }
    }
}

/// Whether `schema` is one of `schema.ts`'s `PrimitiveSchemaDefinition`s.
fn check_primitive(schema: &Value) -> Result<(), String> {
    let Some(object) = schema.as_object() else {
        return Err("a field's schema must be an object".into());
    };
    let allowed: &[&str] = match object.get("type").and_then(Value::as_str) {
        Some("string") => &[
            "type",
            "title",
            "description",
            "minLength",
            "maxLength",
            "format",
            "default",
            "enum",
            "enumNames",
            "oneOf",
        ],
        Some("number" | "integer") => &[
            "type",
            "title",
            "description",
            "minimum",
            "maximum",
            "default",
        ],
        Some("boolean") => &["type", "title", "description", "default"],
        Some("array") => &[
            "type",
            "title",
            "description",
            "minItems",
            "maxItems",
            "items",
            "default",
        ],
        Some(other) => return Err(format!("type {other:?} is not a primitive type")),
        None => return Err("a field needs a \"type\"".into()),
    };
    if let Some(key) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("{key:?} is not allowed in an elicitation field"));
    }
    if object.get("type").and_then(Value::as_str) == Some("array") {
        let items = object.get("items").and_then(Value::as_object);
        let enumerated = items.is_some_and(|i| {
            (i.get("type").and_then(Value::as_str) == Some("string") && i.contains_key("enum"))
                || i.contains_key("anyOf")
        });
        if !enumerated {
            return Err("an array field must be a multi-select enumeration of strings".into());
        }
    }
    Ok(())
}

/// What the user did with a form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted it.
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed it.
    Cancel,
}

/// The client's answer to an [`Elicitation`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values, when accepted.
    #[serde(default)]
    pub content: Option<Map<String, Value>>,
}

/// One message of a sampling request or answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingMessage {
    /// Who speaks it.
    pub role: MessageRole,
    /// What it says (text, image or audio).
    pub content: Content,
}

impl SamplingMessage {
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: MessageRole::User,
            content: Content::text(text),
        }
    }
}

/// A request for a completion from the client's model
/// (`sampling/createMessage`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sampling {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens to sample.
    pub max_tokens: u32,
    /// A system prompt the client may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Sequences that stop sampling.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Model preferences (`schema.ts`'s `ModelPreferences`), as JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<Value>,
}

impl Sampling {
    /// One user message, at most `max_tokens` tokens back.
    pub fn new(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Self {
            messages: vec![SamplingMessage::user(prompt)],
            max_tokens,
            system_prompt: None,
            temperature: None,
            stop_sequences: Vec::new(),
            model_preferences: None,
        }
    }
}

/// The client's answer to a [`Sampling`] request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingResult {
    /// Who speaks the message (the assistant).
    pub role: MessageRole,
    /// The content block(s), as JSON.
    pub content: Value,
    /// The model that produced it.
    pub model: String,
    /// Why sampling stopped, if known.
    #[serde(default)]
    pub stop_reason: Option<String>,
}

impl SamplingResult {
    /// The text of the answer (its text blocks joined).
    pub fn text(&self) -> String {
        let blocks = match &self.content {
            Value::Array(blocks) => blocks.iter().collect(),
            block => vec![block],
        };
        blocks
            .into_iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("")
    }
}

/// A root the client offers (`roots/list`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Root {
    /// Its URI (`file://…`).
    pub uri: String,
    /// Its name, if any.
    #[serde(default)]
    pub name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_primitive_fields_may_be_elicited() {
        assert!(
            Elicitation::new("m")
                .text("a", "A", true)
                .number("b", "B", false)
                .boolean("c", "C", false)
                .choice("d", "D", &["x", "y"], true)
                .params()
                .is_ok()
        );
        for bad in [
            json!({"type": "object", "properties": {}}),
            json!({"type": "string", "pattern": "x"}),
            json!({"type": "array", "items": {"type": "object"}}),
            json!("string"),
        ] {
            assert!(
                Elicitation::new("m")
                    .field("f", bad.clone(), true)
                    .params()
                    .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn log_levels_are_ordered_by_severity() {
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Error < LogLevel::Emergency);
        assert_eq!(serde_json::to_value(LogLevel::Warning).unwrap(), "warning");
    }
}
