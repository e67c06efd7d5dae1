//! The hot path's own reading of a plain tool call — `mcp/executeTool` or
//! `tools/call`, written the way clients write them — in one pass over the
//! bytes, without serde's machinery.
//!
//! It reads only what it fully understands: an object whose members are
//! `jsonrpc` (`"2.0"`), `method`, an `id` that is a non-negative integer or
//! a string, and `params` with the tool's `id` or `name` and object
//! `arguments` (and `_meta`, kept as text); names and those strings without
//! escapes; every member once. It checks the syntax of everything it reads — the arguments
//! included, with the nesting and number rules of
//! [`reads_as_value`](super::arguments::reads_as_value) — and
//! accepts nothing serde's reading would refuse. Anything else (another
//! member, an escape it does not take, a repeated member, any
//! error) is `None`, and serde's reading decides.

use super::arguments::{ArgumentsText, MAX_NESTING};
use super::cursor::Cursor;

/// The most digits of an integer id read here (it then fits an `i64`).
const MAX_ID_DIGITS: usize = 18;

/// A plain tool call as read here, every part borrowed from its text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlainCall<'a> {
    /// The request id.
    pub(crate) id: PlainId<'a>,
    /// Which call it is, and so which dialect's.
    pub(crate) method: CallMethod,
    /// The tool: its mcpId (`mcp/executeTool`) or its name (`tools/call`).
    pub(crate) tool: &'a str,
    /// Its arguments.
    pub(crate) arguments: ArgumentsText<'a>,
    /// Its params' `_meta` object, if any: the members this crate reads.
    pub(crate) meta: Option<PlainMeta<'a>>,
}

/// The members of a `_meta` object this crate reads, each as its JSON text
/// (checked as the arguments are); other members are skipped.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PlainMeta<'a> {
    pub(crate) progress_token: Option<&'a str>,
    pub(crate) protocol_version: Option<&'a str>,
    pub(crate) client_capabilities: Option<&'a str>,
    pub(crate) log_level: Option<&'a str>,
}

/// The names of [`PlainMeta`]'s members, with their quotes, in its order.
const META_NAMES: [&[u8]; 4] = [
    b"\"progressToken\"",
    b"\"io.modelcontextprotocol/protocolVersion\"",
    b"\"io.modelcontextprotocol/clientCapabilities\"",
    b"\"io.modelcontextprotocol/logLevel\"",
];

/// A request id as written: its digits or its string's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlainId<'a> {
    /// A non-negative integer of at most 18 digits, without leading zeros.
    Number(&'a str),
    /// A string without escapes.
    String(&'a str),
}

/// The two tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallMethod {
    /// MCP v1.0's `mcp/executeTool` (`params.id`).
    ExecuteTool,
    /// The Model Context Protocol's `tools/call` (`params.name`).
    CallTool,
}

impl CallMethod {
    /// The method's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::ExecuteTool => "mcp/executeTool",
            Self::CallTool => "tools/call",
        }
    }
}

/// A plain tool call, or `None`.
pub(crate) fn read(text: &str) -> Option<PlainCall<'_>> {
    let mut reader = Reader {
        source: text,
        cursor: Cursor::new(text.as_bytes()),
    };
    let (mut jsonrpc, mut method, mut id, mut params) = (false, None, None, None);
    reader.cursor.eat(b'{')?;
    loop {
        // Names and the strings compared whole are matched as written
        // (with their quotes): an escaped spelling is left to serde.
        match reader.name(&[b"\"jsonrpc\"", b"\"method\"", b"\"id\"", b"\"params\""])? {
            0 if !jsonrpc => {
                reader.literal(b"\"2.0\"")?;
                jsonrpc = true;
            }
            1 if method.is_none() => {
                method = Some(if reader.literal(b"\"mcp/executeTool\"").is_some() {
                    CallMethod::ExecuteTool
                } else {
                    reader.literal(b"\"tools/call\"")?;
                    CallMethod::CallTool
                });
            }
            2 if id.is_none() => id = Some(reader.id()?),
            3 if params.is_none() => params = Some(reader.params()?),
            _ => return None,
        }
        if reader.cursor.closes(b'}')? {
            break;
        }
    }
    reader.cursor.end()?;
    let (method, id, params) = (method?, id?, params?);
    if !jsonrpc {
        return None;
    }
    let (tool, arguments, meta) = match (method, params) {
        (
            CallMethod::ExecuteTool,
            Params {
                tool_id: Some(tool),
                name: None,
                arguments: Some(arguments),
                meta,
            },
        )
        | (
            CallMethod::CallTool,
            Params {
                tool_id: None,
                name: Some(tool),
                arguments: Some(arguments),
                meta,
            },
        ) => (tool, arguments, meta),
        _ => return None,
    };
    Some(PlainCall {
        id,
        method,
        tool,
        arguments,
        meta,
    })
}

/// A tool call's params as read here.
struct Params<'a> {
    /// `id` (MCP v1.0).
    tool_id: Option<&'a str>,
    /// `name` (Model Context Protocol).
    name: Option<&'a str>,
    arguments: Option<ArgumentsText<'a>>,
    /// `_meta`'s members.
    meta: Option<PlainMeta<'a>>,
}

struct Reader<'t> {
    source: &'t str,
    /// Over `source`'s bytes.
    cursor: Cursor<'t>,
}

impl<'t> Reader<'t> {
    /// A member's name, one of `names` (each with its quotes), and its
    /// colon: the index of the name. (Inlined: with the names known where
    /// it is called, they are compared without a call to `memcmp`.)
    #[inline(always)]
    fn name(&mut self, names: &[&[u8]]) -> Option<usize> {
        self.cursor.peek()?;
        let rest = self.cursor.text.get(self.cursor.at..)?;
        let found = names.iter().position(|name| rest.starts_with(name))?;
        self.cursor.at += names.get(found)?.len();
        self.cursor.eat(b':')?;
        Some(found)
    }

    /// `literal`, exactly.
    fn literal(&mut self, literal: &[u8]) -> Option<()> {
        self.cursor.peek()?;
        let found = self.cursor.text.get(self.cursor.at..)?.starts_with(literal);
        found.then(|| self.cursor.at += literal.len())
    }

    /// A string without escapes, its contents.
    fn plain_str(&mut self) -> Option<&'t str> {
        let string = self.cursor.string()?;
        string.plain()?;
        // The same span of `source`, as `str` (cut at ASCII quotes).
        let end = self.cursor.at;
        let start = end.checked_sub(string.quoted.len())?;
        self.source.get(start + 1..end - 1)
    }

    /// A request id: a non-negative integer or a string without escapes.
    fn id(&mut self) -> Option<PlainId<'t>> {
        match self.cursor.peek()? {
            b'"' => Some(PlainId::String(self.plain_str()?)),
            b'0'..=b'9' => {
                let start = self.cursor.at;
                while let Some(b'0'..=b'9') = self.cursor.text.get(self.cursor.at) {
                    self.cursor.at += 1;
                }
                let digits = self.source.get(start..self.cursor.at)?;
                let plain = digits.len() <= MAX_ID_DIGITS
                    && (digits.len() == 1 || !digits.starts_with('0'));
                // A fraction or an exponent: not read here.
                let ends = !matches!(
                    self.cursor.text.get(self.cursor.at),
                    Some(b'.' | b'e' | b'E')
                );
                (plain && ends).then_some(PlainId::Number(digits))
            }
            _ => None,
        }
    }

    /// A `_meta` object: the members [`PlainMeta`] has, as text. A name
    /// with an escape, or one of its members twice, is left to serde (which
    /// reads the escape, and refuses the repeat).
    fn meta(&mut self) -> Option<PlainMeta<'t>> {
        let mut meta = PlainMeta::default();
        let mut seen = [false; META_NAMES.len()];
        self.cursor.eat(b'{')?;
        if self.cursor.eat(b'}').is_some() {
            return Some(meta);
        }
        loop {
            self.cursor.peek()?;
            let rest = self.cursor.text.get(self.cursor.at..)?;
            let known = META_NAMES.iter().position(|name| rest.starts_with(name));
            match known {
                Some(i) => self.cursor.at += META_NAMES.get(i)?.len(),
                None => {
                    self.cursor.string()?.plain()?;
                }
            }
            self.cursor.eat(b':')?;
            self.cursor.peek()?;
            let start = self.cursor.at;
            // Checked: the text is the client's. (`_meta` is one level.)
            self.cursor.skip_value::<true>(1, MAX_NESTING)?;
            let text = self.source.get(start..self.cursor.at)?;
            if let Some(i) = known {
                // Seen twice: refused (as serde refuses a repeated field,
                // even after a `null`).
                if std::mem::replace(seen.get_mut(i)?, true) {
                    return None;
                }
                let slot = match i {
                    0 => &mut meta.progress_token,
                    1 => &mut meta.protocol_version,
                    2 => &mut meta.client_capabilities,
                    _ => &mut meta.log_level,
                };
                // `null` is no value (as an `Option` reads it).
                *slot = (text != "null").then_some(text);
            }
            if self.cursor.closes(b'}')? {
                return Some(meta);
            }
        }
    }

    fn params(&mut self) -> Option<Params<'t>> {
        let mut params = Params {
            tool_id: None,
            name: None,
            arguments: None,
            meta: None,
        };
        self.cursor.eat(b'{')?;
        loop {
            match self.name(&[b"\"id\"", b"\"name\"", b"\"arguments\"", b"\"_meta\""])? {
                0 if params.tool_id.is_none() => params.tool_id = Some(self.plain_str()?),
                1 if params.name.is_none() => params.name = Some(self.plain_str()?),
                2 if params.arguments.is_none() => {
                    if self.cursor.peek()? != b'{' {
                        return None;
                    }
                    let start = self.cursor.at;
                    // Checked: the text is the client's.
                    self.cursor.skip_value::<true>(0, MAX_NESTING)?;
                    // (Cut at ASCII bytes: no UTF-8 to check again.)
                    let text = self.source.get(start..self.cursor.at)?;
                    params.arguments = Some(ArgumentsText::checked(text));
                }
                3 if params.meta.is_none() => params.meta = Some(self.meta()?),
                _ => return None,
            }
            if self.cursor.closes(b'}')? {
                return Some(params);
            }
        }
    }
}
