//! The hot path's hand-written JSON readers, behind one boundary: nothing
//! outside this module scans JSON bytes by hand.
//!
//! - [`cursor`]: the one scanner — strings, numbers, and a walk past any
//!   value — with serde_json's one nesting limit and its one number rule.
//! - [`arguments`]: [`ArgumentsText`](arguments::ArgumentsText), a tool
//!   call's `arguments` as borrowed text that is known to be valid JSON
//!   which reads as a value (the typed "already valid" input every fast
//!   reader and every text-reading tool takes).
//! - [`plain_call`]: a one-pass reader of plain tool calls (the requests
//!   the dialects' call forms name).
//! - [`quick_check`]: a check of valid JSON text against the simple schemas
//!   most tools have, without building a `Value`.
//! - [`escape`]: a JSON string written from text, as serde_json writes it,
//!   a word at a time over the runs that need no escape (a tool's output
//!   quoted as its text block).
//! - [`prefilter`]: whether JSON text may hold a string, before a parse
//!   decides (a body's `initialize`, a request's `_meta` version key).
//! - [`value_end`]: where a JSON value ends in bytes that arrive in pieces
//!   (streaming sessions, an HTTP body's first value), found without
//!   parsing it. Framing needs it whatever the feature says: serde_json
//!   has no incremental splitter that stays linear in the bytes received.
//!
//! Each reader only ever agrees with serde_json and jsonschema: where it is
//! not sure it says "not mine", and the library decides; the writer writes
//! what serde_json writes, byte for byte. Differential proptests hold them
//! to that (`jsonrpc::differential`, `engine::quick_check_tests`, and the
//! writer's own), and each has a fuzz target (`fuzz/`). With the
//! `fast-path` feature off, none of them is consulted (the prefilter
//! answers "maybe" without looking): serde_json and jsonschema do all the
//! reading and writing, and the whole test suite runs so in CI. Only the
//! framing scanner, `value_end`, runs either way. Nothing here is public.

pub(crate) mod arguments;
pub(crate) mod cursor;
pub(crate) mod escape;
pub(crate) mod plain_call;
pub(crate) mod prefilter;
pub(crate) mod quick_check;
pub(crate) mod value_end;
