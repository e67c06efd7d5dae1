//! What tools return and resources hold, beyond plain JSON: rich content
//! blocks (text, image, audio, an embedded resource, a resource link, each
//! with optional [`Annotations`]), binary resource content, and
//! [`ToolOutput`], which carries a tool's structured output, its content
//! blocks, or both.
//!
//! The types are spelled as the Model Context Protocol's `schema.ts`
//! spells them (`mimeType`, `resource_link`, …) and serialise to exactly
//! that JSON. An MCP v1.0 session sees a tool's structured output as
//! `output`; a tool that returns content blocks only is seen there as
//! `{"content": [blocks]}`.
//!
//! ```
//! use clawmcp::content::{Content, ToolOutput};
//! use serde_json::json;
//!
//! // Structured output (what typed tools and `Ok(json!(..))` give).
//! let sum: ToolOutput = json!({"sum": 5}).into();
//! // Content blocks.
//! let chart = ToolOutput::content([
//!     Content::text("Sales by month:"),
//!     Content::image(b"\x89PNG...", "image/png"),
//! ]);
//! assert_eq!(serde_json::to_value(&chart.blocks()[1]).unwrap()["type"], "image");
//! # let _ = sum;
//! ```

use std::sync::OnceLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// Who a piece of content is for, in [`Annotations`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Audience {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// Hints for the client about a piece of content (`schema.ts`: `Annotations`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Audience>>,
    /// How important it is, from 0 (optional) to 1 (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When it last changed, as an ISO 8601 time (`2025-01-12T15:00:58Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// The body of a resource: text, or bytes (sent as base64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// UTF-8 text.
    Text(String),
    /// Binary data.
    Blob(Vec<u8>),
}

impl ResourceBody {
    /// The body as MCP v1.0 shows a resource's `content`: the text, or the
    /// bytes as base64.
    pub fn as_v1_content(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Blob(bytes) => STANDARD.encode(bytes),
        }
    }
}

impl From<String> for ResourceBody {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ResourceBody {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Vec<u8>> for ResourceBody {
    fn from(bytes: Vec<u8>) -> Self {
        Self::Blob(bytes)
    }
}

/// The contents of one resource (`schema.ts`: `TextResourceContents` or
/// `BlobResourceContents`): what `resources/read` returns, and what an
/// embedded resource block carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its media type, if known.
    pub mime_type: Option<String>,
    /// Its text or bytes.
    pub body: ResourceBody,
    /// Its `_meta`, if any (an app page's `ui`, say).
    pub meta: Option<serde_json::Map<String, Value>>,
}

impl ResourceContents {
    /// Text contents.
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text.into()),
            meta: None,
        }
    }

    /// Binary contents.
    pub fn blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Blob(bytes.into()),
            meta: None,
        }
    }

    /// The same contents with `_meta` set.
    pub fn with_meta(mut self, meta: serde_json::Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }
}

impl Serialize for ResourceContents {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("uri", &self.uri)?;
        if let Some(mime_type) = &self.mime_type {
            map.serialize_entry("mimeType", mime_type)?;
        }
        match &self.body {
            ResourceBody::Text(text) => map.serialize_entry("text", text)?,
            ResourceBody::Blob(bytes) => map.serialize_entry("blob", &STANDARD.encode(bytes))?,
        }
        if let Some(meta) = &self.meta {
            map.serialize_entry("_meta", meta)?;
        }
        map.end()
    }
}

/// A link to a resource, in a tool's result (`schema.ts`: `ResourceLink`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

impl ResourceLink {
    /// A link to `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
        }
    }
}

/// One content block (`schema.ts`: `ContentBlock`), in a tool's result or
/// a prompt's message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Hints for the client.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// An image, base64-encoded.
    Image {
        /// The image's bytes, base64.
        data: String,
        /// Its media type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Hints for the client.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The audio's bytes, base64.
        data: String,
        /// Its media type, e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Hints for the client.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The contents.
        resource: ResourceContents,
        /// Hints for the client.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A link to a resource.
    ResourceLink(ResourceLink),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            annotations: None,
        }
    }

    /// An image block from its bytes (encoded as base64 here).
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// An audio block from its bytes (encoded as base64 here).
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// An embedded resource block.
    pub fn resource(contents: ResourceContents) -> Self {
        Self::Resource {
            resource: contents,
            annotations: None,
        }
    }

    /// A resource link block.
    pub fn resource_link(link: ResourceLink) -> Self {
        Self::ResourceLink(link)
    }

    /// The same block with `annotations`.
    #[must_use]
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        match &mut self {
            Self::Text { annotations: a, .. }
            | Self::Image { annotations: a, .. }
            | Self::Audio { annotations: a, .. }
            | Self::Resource { annotations: a, .. } => *a = Some(annotations),
            Self::ResourceLink(link) => link.annotations = Some(annotations),
        }
        self
    }
}

/// What a tool returns: its structured output (checked against its
/// `outputSchema`), its content blocks, or both.
///
/// - Model Context Protocol: `content` is the blocks — or, for structured
///   output alone, one text block with the output as compact JSON — and
///   `structuredContent`, when the tool lists an `outputSchema` (an object
///   schema), is the structured output, or for blocks alone
///   `{"content": [blocks]}`, the value the schema was held to.
/// - MCP v1.0: `output` is the structured output, or `{"content": [blocks]}`
///   for blocks alone.
///
/// `Ok(json!(..))` in a tool is structured output: any `Value` converts.
#[derive(Debug, Clone, Default)]
pub struct ToolOutput {
    /// The structured output as a value: given as one, or read from
    /// `ordered` (at once by [`ToolOutput::serialize`]; when first needed
    /// for output a quick check already admitted).
    structured: OnceLock<Value>,
    /// The structured output as the tool serialised it, keys in its order
    /// ([`ToolOutput::serialize`]); sent instead of `structured`, whose
    /// object keys are sorted.
    ordered: Option<String>,
    blocks: Vec<Content>,
}

/// Equal when the structured output (as JSON values: key order aside) and
/// the blocks are.
impl PartialEq for ToolOutput {
    fn eq(&self, other: &Self) -> bool {
        self.structured_value() == other.structured_value() && self.blocks == other.blocks
    }
}

/// A tool's structured output as it goes on the wire: in the tool's key
/// order when it was serialised by [`ToolOutput::serialize`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum StructuredJson<'a> {
    Value(&'a Value),
    /// Compact JSON text, as serde_json wrote it.
    Ordered(&'a str),
}

impl StructuredJson<'_> {
    /// Whether it is a JSON object.
    pub(crate) fn is_object(self) -> bool {
        match self {
            Self::Value(value) => value.is_object(),
            // Serialised compact: the text starts with the value.
            Self::Ordered(json) => json.starts_with('{'),
        }
    }

    /// The compact JSON text.
    pub(crate) fn to_json(self) -> String {
        match self {
            Self::Ordered(json) => json.to_owned(),
            Self::Value(value) => value.to_string(),
        }
    }
}

impl Serialize for StructuredJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            // Written as it is (both dialects write it around, without
            // serde, on their hot paths).
            Self::Ordered(json) => serde_json::from_str::<&RawValue>(json)
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
            Self::Value(value) => value.serialize(serializer),
        }
    }
}

impl ToolOutput {
    /// Structured output only.
    pub fn structured(value: Value) -> Self {
        Self {
            structured: OnceLock::from(value),
            ordered: None,
            blocks: Vec::new(),
        }
    }

    /// Structured output only, from any `Serialize` value, sent with its
    /// object keys in the order `output` serialises them (a struct's
    /// declaration order; a `Value`'s object keys are sorted).
    ///
    /// ```
    /// #[derive(serde::Serialize)]
    /// struct Weather { temperature: f64, conditions: &'static str }
    /// let output = clawmcp::ToolOutput::serialize(&Weather { temperature: 21.5, conditions: "sunny" }).unwrap();
    /// assert_eq!(output.structured_value().unwrap()["conditions"], "sunny");
    /// ```
    ///
    /// # Errors
    /// `output` does not serialise to JSON (a map with non-string keys, a
    /// failing `Serialize` impl).
    pub fn serialize<T: Serialize + ?Sized>(output: &T) -> Result<Self, serde_json::Error> {
        let output = Self::serialized(output)?;
        output.read_back()?;
        Ok(output)
    }

    /// Structured output serialised, not yet read back: the server reads
    /// it back ([`read_back`](Self::read_back)) unless a quick check of its
    /// text admits it. What is checked against the output schema is
    /// exactly what the client reads (an `f32` is `0.1` in both, not
    /// `0.10000000149011612` in one; a repeated key is the last one, as
    /// JSON readers take it).
    /// The text never holds a raw line break: a `RawValue` in `output` is
    /// written as it is, and one pretty-printed would end a
    /// newline-delimited message (or an event-stream line) early. In JSON
    /// text a raw CR or LF can only be whitespace between tokens, so each
    /// becomes a space.
    pub(crate) fn serialized<T: Serialize + ?Sized>(output: &T) -> Result<Self, serde_json::Error> {
        // A `String`, not a `Box<RawValue>`: no shrinking copy.
        let mut text = serde_json::to_string(output)?;
        if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
            text = text.replace(['\n', '\r'], " ");
        }
        Ok(Self {
            structured: OnceLock::new(),
            ordered: Some(text),
            blocks: Vec::new(),
        })
    }

    /// Reads serialised structured output back into a value, if that was
    /// not done yet: it fails where a JSON reader would (nesting past the
    /// 127 levels serde_json reads).
    pub(crate) fn read_back(&self) -> Result<(), serde_json::Error> {
        if let Some(raw) = &self.ordered
            && self.structured.get().is_none()
        {
            let value = serde_json::from_str(raw)?;
            let _ = self.structured.set(value);
        }
        Ok(())
    }

    /// Content blocks only.
    pub fn content(blocks: impl IntoIterator<Item = Content>) -> Self {
        Self {
            structured: OnceLock::new(),
            ordered: None,
            blocks: blocks.into_iter().collect(),
        }
    }

    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::content([Content::text(text)])
    }

    /// The same output with `value` as its structured output.
    #[must_use]
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = OnceLock::from(value);
        self.ordered = None;
        self
    }

    /// The same output with `block` appended.
    #[must_use]
    pub fn with_block(mut self, block: Content) -> Self {
        self.blocks.push(block);
        self
    }

    /// The structured output, if any.
    pub fn structured_value(&self) -> Option<&Value> {
        match (self.structured.get(), &self.ordered) {
            (Some(value), _) => Some(value),
            // Not read back yet only when a quick check admitted the text,
            // which it does only within what `read_back` reads (nesting,
            // and serde_json wrote it): this reading does not fail.
            (None, Some(raw)) => Some(
                self.structured
                    .get_or_init(|| serde_json::from_str(raw).unwrap_or(Value::Null)),
            ),
            (None, None) => None,
        }
    }

    /// The content blocks (empty for structured output alone).
    pub fn blocks(&self) -> &[Content] {
        &self.blocks
    }

    /// The structured output as it goes on the wire, if any.
    pub(crate) fn structured_json(&self) -> Option<StructuredJson<'_>> {
        match (&self.ordered, self.structured.get()) {
            (Some(raw), _) => Some(StructuredJson::Ordered(raw)),
            (None, Some(value)) => Some(StructuredJson::Value(value)),
            (None, None) => None,
        }
    }

    /// The structured output's JSON text, as the tool serialised it.
    pub(crate) fn ordered_text(&self) -> Option<&str> {
        self.ordered.as_deref()
    }

    /// The output as `outputSchema` checks it (and MCP v1.0 sends it as
    /// `output`): the structured output, or `{"content": [blocks]}`.
    pub(crate) fn schema_value(&self) -> std::borrow::Cow<'_, Value> {
        match self.structured_value() {
            Some(value) => std::borrow::Cow::Borrowed(value),
            None => std::borrow::Cow::Owned(serde_json::json!({ "content": self.blocks })),
        }
    }
}

/// Serialised structured output that does not serialise or read back as
/// JSON (`-32603`).
pub(crate) fn output_not_json(mcp_id: &str, error: &serde_json::Error) -> crate::ToolError {
    crate::ToolError::with_code(
        crate::error::ErrorCode::INTERNAL_ERROR,
        format!("the output of tool {mcp_id} is not JSON: {error}"),
    )
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        Self::structured(value)
    }
}

impl From<Content> for ToolOutput {
    fn from(block: Content) -> Self {
        Self::content([block])
    }
}

impl From<Vec<Content>> for ToolOutput {
    fn from(blocks: Vec<Content>) -> Self {
        Self::content(blocks)
    }
}

/// Who speaks a prompt message. The Model Context Protocol has no system
/// role: a [`Role::System`](crate::definition::Role::System) prompt is sent as a `user` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

impl From<crate::definition::Role> for MessageRole {
    fn from(role: crate::definition::Role) -> Self {
        match role {
            crate::definition::Role::Assistant => Self::Assistant,
            crate::definition::Role::User | crate::definition::Role::System => Self::User,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_output_text_never_holds_a_raw_line_break() {
        #[derive(Serialize)]
        struct Output {
            pretty: Box<RawValue>,
            text: String,
        }
        let pretty = RawValue::from_string("{\r\n  \"a\": [1,\n 2]\n}".into()).unwrap();
        let output = ToolOutput::serialized(&Output {
            pretty,
            text: "line\nbreak".into(),
        })
        .unwrap();
        let text = output.ordered.as_deref().unwrap();
        assert!(!text.contains(['\n', '\r']), "{text}");
        let read: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            read,
            json!({"pretty": {"a": [1, 2]}, "text": "line\nbreak"})
        );
    }

    #[test]
    fn blocks_serialise_as_schema_ts_spells_them() {
        let blocks = [
            Content::text("hi"),
            Content::image([1u8, 2, 3], "image/png"),
            Content::audio([0u8], "audio/wav"),
            Content::resource(ResourceContents::text("test://a", "text/plain", "A")),
            Content::resource(ResourceContents::blob("test://b", "image/png", vec![255u8])),
            Content::resource_link(ResourceLink::new("test://c", "c")),
            Content::text("x").with_annotations(Annotations {
                audience: Some(vec![Audience::User]),
                priority: Some(0.5),
                last_modified: None,
            }),
        ];
        assert_eq!(
            serde_json::to_value(blocks).unwrap(),
            json!([
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AQID", "mimeType": "image/png"},
                {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "test://a", "mimeType": "text/plain", "text": "A"}},
                {"type": "resource", "resource": {"uri": "test://b", "mimeType": "image/png", "blob": "/w=="}},
                {"type": "resource_link", "uri": "test://c", "name": "c"},
                {"type": "text", "text": "x", "annotations": {"audience": ["user"], "priority": 0.5}},
            ])
        );
    }

    #[test]
    fn v1_sees_structured_output_or_the_blocks() {
        assert_eq!(
            *ToolOutput::from(json!({"a": 1})).schema_value(),
            json!({"a": 1})
        );
        assert_eq!(
            *ToolOutput::text("t").schema_value(),
            json!({"content": [{"type": "text", "text": "t"}]})
        );
    }
}
