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

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
        }
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
///   `structuredContent` is the structured output when the tool lists an
///   `outputSchema` (an object schema).
/// - MCP v1.0: `output` is the structured output, or `{"content": [blocks]}`
///   for blocks alone.
///
/// `Ok(json!(..))` in a tool is structured output: any `Value` converts.
#[derive(Debug, Clone, Default)]
pub struct ToolOutput {
    structured: Option<Structured>,
    blocks: Vec<Content>,
}

/// A tool's structured output.
#[derive(Debug, Clone)]
enum Structured {
    /// A value (its object keys sorted).
    Value(Value),
    /// The text [`ToolOutput::serialize`] wrote, keys in the tool's order:
    /// sent and checked as it is; its `Value` is read only if asked for.
    Text {
        text: Box<serde_json::value::RawValue>,
        value: std::sync::OnceLock<Value>,
    },
}

impl Structured {
    fn value(&self) -> &Value {
        match self {
            Self::Value(value) => value,
            // The text was read once already (see `ToolOutput::serialize`):
            // reading it again cannot fail.
            Self::Text { text, value } => {
                value.get_or_init(|| serde_json::from_str(text.get()).unwrap_or(Value::Null))
            }
        }
    }
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
    Text(&'a serde_json::value::RawValue),
}

impl StructuredJson<'_> {
    /// Whether it is a JSON object.
    pub(crate) fn is_object(self) -> bool {
        match self {
            Self::Value(value) => value.is_object(),
            Self::Text(text) => text.get().starts_with('{'),
        }
    }

    /// The compact JSON text.
    pub(crate) fn to_json(self) -> String {
        match self {
            Self::Text(text) => text.get().to_owned(),
            Self::Value(value) => value.to_string(),
        }
    }
}

impl Serialize for StructuredJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => text.serialize(serializer),
            Self::Value(value) => value.serialize(serializer),
        }
    }
}

/// Nesting past which a text is read whole to find out whether a reader
/// takes it (`serde_json` reads 128 levels); below it, none refuses it.
const DEEP: usize = 100;

impl ToolOutput {
    /// Structured output only.
    pub fn structured(value: Value) -> Self {
        Self {
            structured: Some(Structured::Value(value)),
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
    /// failing `Serialize` impl), or nests deeper than a JSON reader takes.
    pub fn serialize<T: Serialize + ?Sized>(output: &T) -> Result<Self, serde_json::Error> {
        // One serialisation: what is checked against the output schema is
        // exactly what the client reads (an `f32` is `0.1` in both, not
        // `0.10000000149011612` in one; a repeated key is the last one, as
        // JSON readers take it). It is checked in place (no `Value` tree);
        // only a text that could nest too deep for readers is read whole
        // here, to refuse it as they would.
        let text = serde_json::value::to_raw_value(output)?;
        let openings = text
            .get()
            .bytes()
            .filter(|&b| b == b'[' || b == b'{')
            .count();
        if openings >= DEEP {
            serde_json::from_str::<Value>(text.get())?;
        }
        Ok(Self {
            structured: Some(Structured::Text {
                text,
                value: std::sync::OnceLock::new(),
            }),
            blocks: Vec::new(),
        })
    }

    /// Content blocks only.
    pub fn content(blocks: impl IntoIterator<Item = Content>) -> Self {
        Self {
            structured: None,
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
        self.structured = Some(Structured::Value(value));
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
        self.structured.as_ref().map(Structured::value)
    }

    /// The content blocks (empty for structured output alone).
    pub fn blocks(&self) -> &[Content] {
        &self.blocks
    }

    /// The structured output as it goes on the wire, if any.
    pub(crate) fn structured_json(&self) -> Option<StructuredJson<'_>> {
        self.structured.as_ref().map(|structured| match structured {
            Structured::Value(value) => StructuredJson::Value(value),
            Structured::Text { text, .. } => StructuredJson::Text(text),
        })
    }

    /// The structured output as [`serialize`](Self::serialize) wrote it,
    /// if that is where it came from (to be checked in place).
    pub(crate) fn structured_text(&self) -> Option<&str> {
        match &self.structured {
            Some(Structured::Text { text, .. }) => Some(text.get()),
            _ => None,
        }
    }

    /// The output as MCP v1.0's `output`, also what `outputSchema` checks:
    /// the structured output, or `{"content": [blocks]}`.
    pub(crate) fn v1_output(&self) -> std::borrow::Cow<'_, Value> {
        match self.structured_value() {
            Some(value) => std::borrow::Cow::Borrowed(value),
            None => std::borrow::Cow::Owned(serde_json::json!({ "content": self.blocks })),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            *ToolOutput::from(json!({"a": 1})).v1_output(),
            json!({"a": 1})
        );
        assert_eq!(
            *ToolOutput::text("t").v1_output(),
            json!({"content": [{"type": "text", "text": "t"}]})
        );
    }

    /// Serialised output keeps its key order on the wire, reads back as
    /// its value, and is refused when it nests deeper than JSON readers
    /// take — as reading it back always refused it.
    #[test]
    fn serialised_output_keeps_its_order_and_refuses_what_readers_refuse() {
        #[derive(Serialize)]
        struct Out {
            zebra: u8,
            apple: &'static str,
        }
        let output = ToolOutput::serialize(&Out {
            zebra: 1,
            apple: "a",
        })
        .unwrap();
        let wire = output.structured_json().map(StructuredJson::to_json);
        assert_eq!(wire.as_deref(), Some(r#"{"zebra":1,"apple":"a"}"#));
        assert!(
            output
                .structured_json()
                .is_some_and(StructuredJson::is_object)
        );
        assert_eq!(output, ToolOutput::from(json!({"apple": "a", "zebra": 1})));

        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!([deep]);
        }
        let refused = ToolOutput::serialize(&deep).unwrap_err().to_string();
        let text = serde_json::to_string(&deep).unwrap();
        let reader = serde_json::from_str::<Value>(&text)
            .unwrap_err()
            .to_string();
        assert_eq!(refused, reader);
        let shallow: Vec<Vec<u8>> = vec![vec![1]; 150];
        assert!(
            ToolOutput::serialize(&shallow).is_ok(),
            "many openings, little depth"
        );
    }
}
