//! JSON-RPC 2.0 messages (docs/mcp-v1.md §1): request ids, the classification
//! of incoming bytes into requests, notifications, responses and invalid
//! messages, and the compact encoding of outgoing ones.
//!
//! Incoming messages are read without building a `serde_json::Value` tree of
//! the envelope: each member is borrowed as raw JSON text and interpreted
//! on its own, so one bad member (a boolean id, a numeric `jsonrpc`) does not
//! hide the others, and an integer id is echoed exactly as it was written.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::error::RpcError;
use crate::fast::plain_call::{self, PlainCall, PlainId};

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod differential;
mod tool_call;

pub(crate) use crate::fast::arguments::ArgumentsText;
pub(crate) use tool_call::{CallForm, CallTable, RawText, ToolCall, read_params};
use tool_call::{MemberName, ParamsSeed};

/// The id of a request: a string, an integer or `null`.
///
/// Integers are kept as the digits the client sent, so `9223372036854775807`
/// and `9007199254740993` come back unrounded; `"7"` (a string) and `7` (a
/// number) are different ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer id, as its decimal digits (with a leading `-` if negative).
    Number(Arc<str>),
    /// A string id, decoded.
    String(Arc<str>),
    /// The `null` id.
    Null,
}

impl RequestId {
    /// Reads an id from its raw JSON text; `None` when it is not a string,
    /// an integer or `null` (a boolean, object, array or fraction).
    pub(crate) fn from_raw(raw: &RawValue) -> Option<Self> {
        let text = raw.get();
        match text.as_bytes().first()? {
            b'"' => str_of(raw).map(|s| Self::String(Arc::from(&*s))),
            b'n' => Some(Self::Null),
            b'-' | b'0'..=b'9' => is_integer(text).then(|| Self::Number(text.into())),
            _ => None,
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n.to_string().into())
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::String(s.into())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => f.write_str(n),
            Self::String(s) => write!(f, "{s:?}"),
            Self::Null => f.write_str("null"),
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(n) => match serde_json::from_str::<&RawValue>(n) {
                Ok(raw) => raw.serialize(serializer),
                Err(e) => Err(serde::ser::Error::custom(e)),
            },
            Self::String(s) => serializer.serialize_str(s),
            Self::Null => serializer.serialize_unit(),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Self::from_raw(&raw)
            .ok_or_else(|| serde::de::Error::custom("an id must be a string or an integer"))
    }
}

/// A JSON string member, borrowed when it has no escapes.
fn str_of(raw: &RawValue) -> Option<Cow<'_, str>> {
    if let Ok(s) = serde_json::from_str::<&str>(raw.get()) {
        return Some(Cow::Borrowed(s));
    }
    serde_json::from_str::<String>(raw.get())
        .ok()
        .map(Cow::Owned)
}

/// Captures a member as raw text, `null` included (serde's `Option` would
/// turn `null` into `None`, which must stay distinct from "absent").
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The members of a message object, each as raw JSON text.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// One incoming message, classified.
// (A tool call's kept members are held by value, not boxed: no allocation
// on the hot path. The feature `otel` keeps three more.)
#[derive(Debug)]
#[cfg_attr(feature = "otel", allow(clippy::large_enum_variant))]
pub(crate) enum Incoming<'a> {
    /// A request: it gets exactly one reply.
    Request {
        id: RequestId,
        method: Cow<'a, str>,
        /// Its params as raw JSON (`None` when absent, or when `call`
        /// holds them).
        params: Option<&'a RawValue>,
        /// The params of a tool call, read in the same pass as the
        /// envelope (see [`ToolCall`]).
        call: Option<ToolCall<'a>>,
    },
    /// A valid notification: it never gets a reply.
    Notification {
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    /// A response object from the client: the answer to a request the
    /// server sent (Model Context Protocol), ignored in MCP v1.0.
    Response {
        /// The id, when it is one the server could have used.
        id: Option<RequestId>,
        /// `result` when it succeeded, else `error`, as raw JSON.
        outcome: Result<&'a RawValue, &'a RawValue>,
    },
    /// Not a JSON-RPC 2.0 message: answered `-32600` with `id` (`null` when unreadable).
    Invalid { id: RequestId, reason: String },
}

/// What one body of bytes holds.
#[derive(Debug)]
#[cfg_attr(feature = "otel", allow(clippy::large_enum_variant))]
pub(crate) enum Parsed<'a> {
    /// One message.
    Single(Incoming<'a>),
    /// A non-empty batch, in order.
    Batch(Vec<Incoming<'a>>),
    /// Not valid JSON: `-32700` with id `null` (or `-32600` for an empty
    /// batch, which is one error object, not an array).
    Error(RpcError),
}

/// The most messages one batch may hold: its reply is built whole, so a
/// batch of tiny invalid elements must not amplify into a huge reply.
pub const MAX_BATCH: usize = 1024;

/// Parses one message body (docs/mcp-v1.md §1); the tool calls of
/// table `T` are read with their params in one pass.
pub(crate) fn parse<T: CallTable>(body: &[u8]) -> Parsed<'_> {
    // Validate UTF-8 once; every later pass reads a `str` without checking again.
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(e) => {
            return Parsed::Error(RpcError::parse_error(format!(
                "body is not valid UTF-8: {e}"
            )));
        }
    };
    let first = text.bytes().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'[') {
        return match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) if items.is_empty() => {
                Parsed::Error(RpcError::invalid_request("empty batch"))
            }
            Ok(items) if items.len() > MAX_BATCH => {
                Parsed::Error(RpcError::invalid_request(format!(
                    "a batch of {} messages is over the limit of {MAX_BATCH}",
                    items.len()
                )))
            }
            Ok(items) => Parsed::Batch(items.into_iter().map(classify_raw).collect()),
            Err(e) => Parsed::Error(not_json(text, e)),
        };
    }
    if first != Some(b'{') {
        // serde would read a struct from an array by position: only an
        // object may become an envelope.
        return Parsed::Error(match serde_json::from_str::<IgnoredAny>(text) {
            Ok(_) => RpcError::invalid_request("a JSON-RPC message must be an object"),
            Err(e) => RpcError::parse_error(format!("body is not valid JSON: {e}")),
        });
    }
    // A tool call (a request of one of table `T`'s forms) is read in one
    // pass, its params into a `ToolCall`: the hot path, which the general
    // reading would walk twice (the envelope, then the params). The plain
    // reader reads a call written the usual way, serde any other; any
    // surprise (the method is not the one named in the text, `jsonrpc` is
    // not `"2.0"`, no usable id, params that are not an object or do not
    // read) leaves it to the general reading, which then answers.
    if cfg!(feature = "fast-path")
        && let Some(call) = plain_call::read::<T>(text)
    {
        return Parsed::Single(from_plain(call));
    }
    if let Some(call) = read_tool_call_with_serde::<T>(text) {
        return Parsed::Single(call);
    }
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(envelope) => Parsed::Single(classify(envelope)),
        Err(e) => Parsed::Error(not_json(text, e)),
    }
}

/// A call the plain reader read, as the general reading gives it.
fn from_plain(plain: PlainCall<'_>) -> Incoming<'_> {
    let id = match plain.id {
        PlainId::Number(digits) => RequestId::Number(digits.into()),
        PlainId::String(text) => RequestId::String(text.into()),
    };
    Incoming::Request {
        id,
        method: Cow::Borrowed(plain.form.method),
        params: None,
        call: Some(ToolCall::plain(
            plain.tool,
            plain.arguments,
            plain.meta.map(|m| m.map(|text| text.map(RawText::checked))),
        )),
    }
}

/// A tool call read by serde in one pass: any the plain reader leaves, and
/// all of them without the `fast-path` feature. The method read picks the
/// form; params written before the method are kept as text and read by
/// that form once it is known. Anything else is left to the general
/// reading.
fn read_tool_call_with_serde<T: CallTable>(text: &str) -> Option<Incoming<'_>> {
    let seed = CallSeed {
        forms: T::FORMS,
        meta: T::META,
    };
    let mut reader = serde_json::Deserializer::from_str(text);
    let envelope = serde::de::DeserializeSeed::deserialize(seed, &mut reader).ok()?;
    reader.end().ok()?;
    if envelope.jsonrpc != "2.0" {
        return None;
    }
    Some(Incoming::Request {
        id: RequestId::from_raw(envelope.id?)?,
        method: Cow::Borrowed(envelope.form.method),
        params: None,
        call: Some(envelope.params),
    })
}

/// A tool call's envelope: every member but the params borrowed as text,
/// the params read by the form its method names.
struct CallEnvelope<'a> {
    jsonrpc: &'a str,
    form: &'static CallForm,
    id: Option<&'a RawValue>,
    params: ToolCall<'a>,
}

/// Reads a [`CallEnvelope`] (an object only) of one of `forms`. It stops
/// at the first sign of another message: a method no form has, or a
/// `result` or `error` before any method (a response). A member repeated,
/// or one missing but `id`, refuses it, as the general reading refuses it.
struct CallSeed {
    forms: &'static [CallForm],
    meta: &'static [&'static str],
}

/// A call's params: read by its form, or kept as text until the method
/// names the form.
enum CallParams<'a> {
    Read(ToolCall<'a>),
    BeforeMethod(&'a RawValue),
}

impl<'de> serde::de::DeserializeSeed<'de> for CallSeed {
    type Value = CallEnvelope<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for CallSeed {
    type Value = CallEnvelope<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error as _;
        let seed = |form| ParamsSeed {
            form,
            meta: self.meta,
        };
        let (mut jsonrpc, mut form, mut id, mut params) = (None, None, None, None);
        // `result` and `error` are read only so that a repeated one is
        // refused as the general reading refuses it.
        let (mut result, mut error) = (false, false);
        while let Some(MemberName(key)) = map.next_key()? {
            let repeated = match &*key {
                "jsonrpc" => jsonrpc.replace(map.next_value::<&'de str>()?).is_some(),
                "method" => {
                    let method = map.next_value::<&'de str>()?;
                    let named = (self.forms.iter().find(|f| f.method == method))
                        .ok_or_else(|| A::Error::custom("not a tool call"))?;
                    form.replace(named).is_some()
                }
                "id" => id.replace(map.next_value::<&'de RawValue>()?).is_some(),
                "params" => {
                    let read = match form {
                        Some(form) => CallParams::Read(map.next_value_seed(seed(form))?),
                        None => CallParams::BeforeMethod(map.next_value::<&'de RawValue>()?),
                    };
                    params.replace(read).is_some()
                }
                "result" | "error" if form.is_none() => {
                    return Err(A::Error::custom("a response"));
                }
                other => {
                    map.next_value::<IgnoredAny>()?;
                    match other {
                        "result" => std::mem::replace(&mut result, true),
                        "error" => std::mem::replace(&mut error, true),
                        _ => false,
                    }
                }
            };
            if repeated {
                return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
            }
        }
        let form = form.ok_or_else(|| A::Error::missing_field("method"))?;
        let params = match params.ok_or_else(|| A::Error::missing_field("params"))? {
            CallParams::Read(call) => call,
            CallParams::BeforeMethod(text) => {
                let mut reader = serde_json::Deserializer::from_str(text.get());
                serde::de::DeserializeSeed::deserialize(seed(form), &mut reader)
                    .map_err(A::Error::custom)?
            }
        };
        Ok(CallEnvelope {
            jsonrpc: jsonrpc.ok_or_else(|| A::Error::missing_field("jsonrpc"))?,
            form,
            id,
            params,
        })
    }
}

/// A body that failed to read as an envelope: `-32700` when it is not JSON
/// at all, `-32600` when it is JSON of the wrong shape (`42`, `null`, …).
fn not_json(text: &str, error: serde_json::Error) -> RpcError {
    if error.is_data() && serde_json::from_str::<IgnoredAny>(text).is_ok() {
        return RpcError::invalid_request(format!("not a JSON-RPC 2.0 message: {error}"));
    }
    RpcError::parse_error(format!("body is not valid JSON: {error}"))
}

fn classify_raw(raw: &RawValue) -> Incoming<'_> {
    if !raw.get().starts_with('{') {
        return Incoming::Invalid {
            id: RequestId::Null,
            reason: "a JSON-RPC message must be an object".into(),
        };
    }
    match serde_json::from_str::<Envelope<'_>>(raw.get()) {
        Ok(envelope) => classify(envelope),
        Err(e) => Incoming::Invalid {
            id: RequestId::Null,
            reason: format!("not a JSON-RPC 2.0 message: {e}"),
        },
    }
}

fn classify(env: Envelope<'_>) -> Incoming<'_> {
    if env.method.is_none()
        && let Some(outcome) = env.result.map(Ok).or(env.error.map(Err))
    {
        return Incoming::Response {
            id: env.id.and_then(RequestId::from_raw),
            outcome,
        };
    }
    let id = match env.id.map(RequestId::from_raw) {
        None => None,
        Some(Some(id)) => Some(id),
        Some(None) => {
            return Incoming::Invalid {
                id: RequestId::Null,
                reason: "id must be a string or an integer".into(),
            };
        }
    };
    let invalid = |reason: &str| Incoming::Invalid {
        id: id.clone().unwrap_or(RequestId::Null),
        reason: reason.into(),
    };
    if env.jsonrpc.and_then(str_of).as_deref() != Some("2.0") {
        return invalid("jsonrpc must be exactly \"2.0\"");
    }
    let Some(method) = env.method.and_then(str_of) else {
        return invalid("method must be a string");
    };
    if let Some(params) = env.params
        && !matches!(params.get().as_bytes().first(), Some(b'{' | b'[' | b'n'))
    {
        return invalid("params must be an object or an array");
    }
    match id {
        Some(id) => Incoming::Request {
            id,
            method,
            params: env.params,
            call: None,
        },
        None => Incoming::Notification {
            method,
            params: env.params,
        },
    }
}

/// A response as written, and its outcome: the error's code for an error
/// response, so that a transport's status follows the outcome without
/// reading the bytes again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Reply {
    /// The response's JSON text.
    pub(crate) bytes: Vec<u8>,
    /// Its error's code; `None` for a result.
    pub(crate) error: Option<i32>,
    /// Where a result's value begins in `bytes` (0 for an error).
    pub(crate) result_at: usize,
}

/// Encodes a success response: `{"jsonrpc":"2.0","id":…,"result":…}`.
pub(crate) fn encode_result<T: Serialize + ?Sized>(id: &RequestId, result: &T) -> Reply {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_id(&mut out, id);
    out.extend_from_slice(br#","result":"#);
    let result_at = out.len();
    if serde_json::to_writer(&mut out, result).is_err() {
        // A result that cannot be serialised (a map with non-string keys)
        // is the server's fault: answer -32603 instead.
        return encode_error(
            id,
            &RpcError::internal("the result could not be serialised as JSON"),
        );
    }
    out.push(b'}');
    Reply {
        bytes: out,
        error: None,
        result_at,
    }
}

/// Encodes a success response whose result is `parts` of JSON text one
/// after the other (each already JSON, as a serialised output is).
pub(crate) fn encode_result_text(id: &RequestId, parts: &[&str]) -> Reply {
    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &[u8] = br#","result":"#;
    let length = parts.iter().map(|p| p.len()).sum::<usize>();
    let mut out = Vec::with_capacity(HEAD.len() + RESULT.len() + length + 24);
    out.extend_from_slice(HEAD);
    write_id(&mut out, id);
    out.extend_from_slice(RESULT);
    let result_at = out.len();
    for part in parts {
        out.extend_from_slice(part.as_bytes());
    }
    out.push(b'}');
    Reply {
        bytes: out,
        error: None,
        result_at,
    }
}

/// Encodes an error response with the code's fixed message (MCP v1.0's
/// table) and `data`.
pub(crate) fn encode_error(id: &RequestId, error: &RpcError) -> Reply {
    encode_error_with(Some(id), error.code.0, error.code.message(), &*error.data)
}

/// Encodes an error response: `id` (omitted when `None`), `code`,
/// `message` and `data` (any JSON value).
pub(crate) fn encode_error_with<D: Serialize + ?Sized>(
    id: Option<&RequestId>,
    code: i32,
    message: &str,
    data: &D,
) -> Reply {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","#);
    if let Some(id) = id {
        out.extend_from_slice(br#""id":"#);
        write_id(&mut out, id);
        out.push(b',');
    }
    out.extend_from_slice(br#""error":{"code":"#);
    out.extend_from_slice(itoa::Buffer::new().format(code).as_bytes());
    out.extend_from_slice(br#","message":"#);
    write_json(&mut out, message);
    out.extend_from_slice(br#","data":"#);
    write_json(&mut out, data);
    out.extend_from_slice(b"}}");
    Reply {
        bytes: out,
        error: Some(code),
        result_at: 0,
    }
}

/// Encodes a request the server sends: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`.
pub(crate) fn encode_request<T: Serialize + ?Sized>(id: u64, method: &str, params: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    out.extend_from_slice(br#","method":"#);
    write_json(&mut out, method);
    out.extend_from_slice(br#","params":"#);
    write_json(&mut out, params);
    out.push(b'}');
    out
}

/// Encodes a notification: `{"jsonrpc":"2.0","method":…,"params":…}`.
pub(crate) fn encode_notification<T: Serialize + ?Sized>(method: &str, params: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    write_json(&mut out, method);
    out.extend_from_slice(br#","params":"#);
    write_json(&mut out, params);
    out.push(b'}');
    out
}

/// Encodes replies to the requests of a batch as one array.
pub(crate) fn encode_batch(replies: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + replies.iter().map(|r| r.len() + 1).sum::<usize>());
    out.push(b'[');
    for (i, reply) in replies.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(reply);
    }
    out.push(b']');
    out
}

/// `id` as JSON.
pub(crate) fn id_json(id: &RequestId) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    write_id(&mut out, id);
    out
}

/// Writes an id: an integer as the digits the client sent, with no
/// allocation (the hot path of every reply), anything else through serde.
/// Writes `id` as JSON.
pub(crate) fn write_id(out: &mut Vec<u8>, id: &RequestId) {
    match id {
        RequestId::Number(n) if is_integer(n) => out.extend_from_slice(n.as_bytes()),
        RequestId::Null => out.extend_from_slice(b"null"),
        other => write_json(out, other),
    }
}

/// Whether `text` is a JSON integer (`-`? digits, no leading zero).
fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text).as_bytes();
    match digits {
        [] => false,
        [b'0', _, ..] => false,
        _ => digits.iter().all(u8::is_ascii_digit),
    }
}

/// `text` as a JSON string, quotes included, byte for byte as serde_json
/// writes it (with the `fast-path` feature, a long text a word at a time).
pub(crate) fn quote(text: &str) -> String {
    if cfg!(feature = "fast-path") && text.len() >= crate::fast::escape::WORTH_FROM {
        let mut out = Vec::new();
        crate::fast::escape::write_quoted(&mut out, text);
        // Escapes are ASCII, written between whole characters.
        String::from_utf8(out).unwrap_or_default()
    } else {
        // (A `str` always serialises.)
        serde_json::to_string(text).unwrap_or_default()
    }
}

/// Writes `value` as JSON: a value that cannot fail to serialise
/// (strings, ids, derived protocol types), or `null`, logged, for one that
/// does.
pub(crate) fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    if let Err(e) = serde_json::to_writer(&mut *out, value) {
        tracing::error!("serialising a protocol value failed: {e}");
        out.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::differential::tests::Forms;
    use super::*;

    /// The general reading of a body (the envelope, then the params).
    fn general(text: &str) -> Incoming<'_> {
        classify(serde_json::from_str::<Envelope<'_>>(text).unwrap())
    }

    #[test]
    fn a_tool_call_read_in_one_pass_reads_as_the_general_reading_does() {
        let read_alike = [
            r#"{"jsonrpc":"2.0","id":7,"method":"mcp/executeTool","params":{"id":"mcp://t/tools/a:v1","arguments":{"x":[1,{"y":"z"}]}}}"#,
            r#"{"params":{"arguments":{},"id":"mcp://t/tools/a:v1","extra":1},"method":"mcp/executeTool","id":"s","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":-3,"method":"mcp/executeTool","params":{"id":"mcp://t/tools/\u0061"}}"#,
            r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"progressToken":"p"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}"#,
        ];
        for text in read_alike {
            // Read in one pass: the call, and no params left to read.
            let Parsed::Single(Incoming::Request {
                id,
                method,
                call: Some(call),
                params: None,
            }) = parse::<Forms>(text.as_bytes())
            else {
                panic!("not read in one pass: {text}");
            };
            let Incoming::Request {
                id: id2,
                method: method2,
                params: Some(raw),
                ..
            } = general(text)
            else {
                panic!("the general reading differs: {text}");
            };
            assert_eq!((&id, &method), (&id2, &method2), "{text}");
            let form = Forms::FORMS.iter().find(|f| f.method == method).unwrap();
            let again = format!("{:?}", read_params(form, Forms::META, raw.get()).unwrap());
            assert_eq!(format!("{call:?}"), again, "{text}");
        }
        // Anything unusual is left to the general reading, which says what
        // is wrong with it.
        let left = [
            r#"{"jsonrpc":"2.0","id":1,"method":"mcp/executeTool","params":["mcp://t/tools/a:v1",{}]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"mcp/executeTool","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"mcp/executeTool","params":{"id":"a","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.1","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/call"},"x":"\"tools/call\""}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"result":1,"result":2}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"error":1,"error":2}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}} trailing"#,
        ];
        for text in left {
            assert!(
                !matches!(
                    parse::<Forms>(text.as_bytes()),
                    Parsed::Single(Incoming::Request { call: Some(_), .. })
                ),
                "read in one pass: {text}"
            );
        }
    }

    fn single(body: &str) -> Incoming<'_> {
        match parse::<Forms>(body.as_bytes()) {
            Parsed::Single(m) => m,
            other => panic!("expected one message, got {other:?}"),
        }
    }

    #[test]
    fn replies_carry_the_id_as_sent_and_stay_json_for_any_id() {
        let ids = [
            (
                RequestId::from_raw(&raw("-9223372036854775809")).unwrap(),
                "-9223372036854775809",
            ),
            (RequestId::from(0), "0"),
            (RequestId::from("a\"b"), r#""a\"b""#),
            (RequestId::Null, "null"),
            // Built by hand, not read from the wire: never written as-is.
            (RequestId::Number("12abc".into()), "null"),
            (RequestId::Number("007".into()), "null"),
            (RequestId::Number(String::new().into()), "null"),
        ];
        for (id, expected) in ids {
            let start = format!(r#"{{"jsonrpc":"2.0","id":{expected},"#);
            for reply in [
                encode_result(&id, &true),
                encode_error(&id, &RpcError::internal("x")),
            ] {
                let text = std::str::from_utf8(&reply.bytes).unwrap();
                assert!(text.starts_with(&start), "{id:?}: {text}");
                assert!(
                    serde_json::from_str::<serde_json::Value>(text).is_ok(),
                    "{text}"
                );
            }
        }
    }

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn invalid_id(body: &str) -> RequestId {
        match single(body) {
            Incoming::Invalid { id, .. } => id,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn large_integer_ids_are_echoed_unrounded() {
        for big in ["9007199254740993", "9223372036854775807", "-5", "0"] {
            let body = format!(r#"{{"jsonrpc":"2.0","method":"m","id":{big}}}"#);
            let Incoming::Request { id, .. } = single(&body) else {
                panic!("not a request")
            };
            let reply = encode_result(&id, &serde_json::json!([]));
            assert_eq!(
                String::from_utf8(reply.bytes).unwrap(),
                format!(r#"{{"jsonrpc":"2.0","id":{big},"result":[]}}"#)
            );
        }
    }

    #[test]
    fn string_and_number_ids_differ() {
        let a = RequestId::from_raw(&RawValue::from_string("\"7\"".into()).unwrap());
        let b = RequestId::from_raw(&RawValue::from_string("7".into()).unwrap());
        assert_ne!(a, b);
        assert_eq!(a, Some(RequestId::from("7")));
        assert_eq!(b, Some(RequestId::from(7)));
    }

    #[test]
    fn unreadable_ids_are_null_in_the_error() {
        for id in ["true", "{\"x\":1}", "[1]", "1.5", "1e3"] {
            let body = format!(r#"{{"jsonrpc":"2.0","method":"m","id":{id}}}"#);
            assert_eq!(invalid_id(&body), RequestId::Null, "id {id}");
        }
    }

    #[test]
    fn wrong_version_or_method_echoes_the_id() {
        assert_eq!(
            invalid_id(r#"{"jsonrpc":"1.0","method":"m","id":3}"#),
            RequestId::from(3)
        );
        assert_eq!(
            invalid_id(r#"{"jsonrpc":2.0,"method":"m","id":"x"}"#),
            RequestId::from("x")
        );
        assert_eq!(
            invalid_id(r#"{"jsonrpc":"2.0","method":42,"id":5}"#),
            RequestId::from(5)
        );
        assert_eq!(
            invalid_id(r#"{"jsonrpc":"2.0","id":6,"params":{}}"#),
            RequestId::from(6)
        );
        assert_eq!(
            invalid_id(r#"{"jsonrpc":"2.0","method":"m","params":"x","id":7}"#),
            RequestId::from(7)
        );
    }

    #[test]
    fn invalid_message_without_id_is_still_invalid() {
        assert_eq!(
            invalid_id(r#"{"jsonrpc":"1.0","method":"m"}"#),
            RequestId::Null
        );
    }

    #[test]
    fn null_id_is_a_request_and_absent_id_a_notification() {
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","method":"m","id":null}"#),
            Incoming::Request {
                id: RequestId::Null,
                ..
            }
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","method":"m","params":null}"#),
            Incoming::Notification { .. }
        ));
    }

    #[test]
    fn responses_are_recognised() {
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":9,"result":{}}"#),
            Incoming::Response {
                id: Some(_),
                outcome: Ok(_)
            }
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":9,"error":{"code":1}}"#),
            Incoming::Response {
                outcome: Err(_),
                ..
            }
        ));
    }

    #[test]
    fn non_objects_are_invalid_requests_and_bad_json_a_parse_error() {
        for body in ["42", "\"m\"", "null", "true"] {
            let Parsed::Error(e) = parse::<Forms>(body.as_bytes()) else {
                panic!("{body}")
            };
            assert_eq!(e.code, crate::error::ErrorCode::INVALID_REQUEST, "{body}");
        }
        for body in [&b"{\"jsonrpc\":"[..], b"{\"id\":\"\xff\xfe\"}", b"", b"[1,"] {
            let Parsed::Error(e) = parse::<Forms>(body) else {
                panic!("{body:?}")
            };
            assert_eq!(e.code, crate::error::ErrorCode::PARSE_ERROR, "{body:?}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let body = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(matches!(
            parse::<Forms>(body.as_bytes()),
            Parsed::Error(_) | Parsed::Batch(_)
        ));
    }

    #[test]
    fn empty_batch_is_one_invalid_request() {
        let Parsed::Error(e) = parse::<Forms>(b" [ ] ") else {
            panic!()
        };
        assert_eq!(e.code, crate::error::ErrorCode::INVALID_REQUEST);
    }

    #[test]
    fn batch_elements_are_classified_one_by_one() {
        let Parsed::Batch(items) = parse::<Forms>(
            br#"[1,{"jsonrpc":"2.0","method":"m","id":6},"x",{"jsonrpc":"2.0","method":"n"}]"#,
        ) else {
            panic!()
        };
        assert!(matches!(items[0], Incoming::Invalid { .. }));
        assert!(matches!(items[1], Incoming::Request { .. }));
        assert!(matches!(items[2], Incoming::Invalid { .. }));
        assert!(matches!(items[3], Incoming::Notification { .. }));
    }

    #[test]
    fn error_object_has_the_fixed_message() {
        let e = RpcError::invalid_params("Missing required property: 'x'");
        assert_eq!(
            String::from_utf8(encode_error(&RequestId::from(3), &e).bytes).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params","data":"Missing required property: 'x'"}}"#
        );
    }

    #[test]
    fn escaped_method_names_are_decoded() {
        let Incoming::Request { method, .. } =
            single(r#"{"jsonrpc":"2\u002e0","method":"mcp\/listTools","id":1}"#)
        else {
            panic!()
        };
        assert_eq!(method, "mcp/listTools");
    }
}
