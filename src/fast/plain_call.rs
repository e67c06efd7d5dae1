//! The hot path's own reading of a plain tool call — a request whose
//! method a protocol's [`CallTable`] names, written the way clients write
//! it — in one pass over the bytes, without serde's machinery.
//!
//! It reads only what it fully understands: an object whose members are
//! `jsonrpc` (`"2.0"`), `method`, an `id` that is a non-negative integer or
//! a string, and `params` with the form's tool member and object
//! `arguments` (and `_meta`, whose kept members are kept as text); names
//! and those strings without escapes; every member once. It checks the
//! syntax of everything it reads — the arguments included, with the
//! nesting, number and member-name rules of
//! [`reads_as_value`](super::arguments::reads_as_value) — and accepts
//! nothing serde's reading would refuse. Anything else (another member,
//! an escape it does not take, a repeated member, any error) is `None`,
//! and serde's reading decides.

use super::arguments::{ArgumentsText, MAX_NESTING};
use super::cursor::Cursor;
use crate::call_form::{CallForm, CallTable, KEPT_META};

/// The most digits of an integer id read here (it then fits an `i64`).
const MAX_ID_DIGITS: usize = 18;

/// The most forms whose tool members a call's params are read for.
const MAX_FORMS: usize = 4;

/// A plain tool call as read here, every part borrowed from its text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlainCall<'a> {
    /// The request id.
    pub(crate) id: PlainId<'a>,
    /// Which call it is.
    pub(crate) form: &'static CallForm,
    /// The tool, as the form's tool member names it.
    pub(crate) tool: &'a str,
    /// Its arguments.
    pub(crate) arguments: ArgumentsText<'a>,
    /// Its params' `_meta` object, if any: the kept members' JSON text, in
    /// the forms' order (checked as the arguments are).
    pub(crate) meta: Option<[Option<&'a str>; KEPT_META]>,
}

/// A request id as written: its digits or its string's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlainId<'a> {
    /// A non-negative integer of at most 18 digits, without leading zeros.
    Number(&'a str),
    /// A string without escapes.
    String(&'a str),
}

/// A plain tool call of one of table `T`'s forms, or `None`. (Its names are
/// the table's constants.)
#[inline(always)]
pub(crate) fn read<T: CallTable>(text: &str) -> Option<PlainCall<'_>> {
    let mut reader = Reader {
        source: text,
        cursor: Cursor::new(text.as_bytes()),
    };
    let (mut jsonrpc, mut form, mut id, mut params) = (false, None, None, None);
    reader.cursor.eat(b'{')?;
    loop {
        // Names and the strings compared whole are matched as written
        // (with their quotes): an escaped spelling is left to serde.
        match reader.name(&["jsonrpc", "method", "id", "params"])? {
            0 if !jsonrpc => {
                reader.literal(b"\"2.0\"")?;
                jsonrpc = true;
            }
            1 if form.is_none() => {
                reader.cursor.peek()?;
                let found = reader.first_quoted(T::FORMS, |f| f.method)?;
                reader.cursor.at += found.method.len() + 2;
                form = Some(found);
            }
            2 if id.is_none() => id = Some(reader.id()?),
            3 if params.is_none() => params = Some(reader.params::<T>()?),
            _ => return None,
        }
        if reader.cursor.closes(b'}')? {
            break;
        }
    }
    reader.cursor.end()?;
    let (form, id, params) = (form?, id?, params?);
    if !jsonrpc {
        return None;
    }
    // The form's own tool member, and no other form's.
    let (key, tool) = params.tool?;
    // (Both names are the table's: the same text is most often the same
    // place, which spares a call to `memcmp`.)
    if !std::ptr::eq(key, form.tool) && key != form.tool {
        return None;
    }
    Some(PlainCall {
        id,
        form,
        tool,
        arguments: params.arguments?,
        meta: params.meta,
    })
}

/// A tool call's params as read here.
struct Params<'a> {
    /// The tool member of one of the forms, and its string.
    tool: Option<(&'static str, &'a str)>,
    arguments: Option<ArgumentsText<'a>>,
    /// `_meta`'s kept members.
    meta: Option<[Option<&'a str>; KEPT_META]>,
}

struct Reader<'t> {
    source: &'t str,
    /// Over `source`'s bytes.
    cursor: Cursor<'t>,
}

impl<'t> Reader<'t> {
    /// A member's name, one of `names` (quoted, as written), and its
    /// colon: the index of the name. (Inlined: with the names known where
    /// it is called, they are compared without a call to `memcmp`.)
    #[inline(always)]
    fn name(&mut self, names: &[&str]) -> Option<usize> {
        self.cursor.peek()?;
        let found = self.index_quoted(names)?;
        self.cursor.at += names.get(found)?.len() + 2;
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
    #[inline(always)]
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

    /// A `_meta` object: the members `names` names, as text. A name with
    /// an escape, or one of its members twice, is left to serde (which
    /// reads the escape, and refuses the repeat).
    #[inline(always)]
    fn meta(&mut self, names: &[&str]) -> Option<[Option<&'t str>; KEPT_META]> {
        let mut meta = [None; KEPT_META];
        let mut seen = [false; KEPT_META];
        self.cursor.eat(b'{')?;
        if self.cursor.eat(b'}').is_some() {
            return Some(meta);
        }
        loop {
            self.cursor.peek()?;
            let known = self.index_quoted(names);
            match known {
                Some(i) => self.cursor.at += names.get(i)?.len() + 2,
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
                // `null` is no value (as an `Option` reads it).
                *meta.get_mut(i)? = (text != "null").then_some(text);
            }
            if self.cursor.closes(b'}')? {
                return Some(meta);
            }
        }
    }

    /// `name`, with its quotes, is next (as written: no escapes). The
    /// closing quote's place is looked at first: most names that are not
    /// `name` are told apart there, without comparing their bytes.
    #[inline(always)]
    fn quoted(&self, name: &str) -> bool {
        let rest = self.cursor.text.get(self.cursor.at..).unwrap_or_default();
        let n = name.len();
        if rest.get(n + 1) != Some(&b'"') || rest.first() != Some(&b'"') {
            return false;
        }
        let Some(text) = rest.get(1..=n) else {
            return false;
        };
        // A short name is compared as two overlapping words (inlined, the
        // name's words constants), which costs less than a call to
        // `memcmp`; a long one, such as a `_meta` key, by `memcmp`.
        let name = name.as_bytes();
        match n {
            8..=16 => same_ends::<8>(text, name),
            4..8 => same_ends::<4>(text, name),
            2..4 => same_ends::<2>(text, name),
            _ => text == name,
        }
    }

    /// The first of `items` whose name (`name_of`) is next, quoted. (A
    /// loop of its own, not an iterator adapter: it inlines, and with a
    /// static table the names become constants.)
    #[inline(always)]
    fn first_quoted<T>(
        &self,
        items: &'static [T],
        name_of: impl Fn(&T) -> &str,
    ) -> Option<&'static T> {
        let mut i = 0;
        while let Some(item) = items.get(i) {
            if self.quoted(name_of(item)) {
                return Some(item);
            }
            i += 1;
        }
        None
    }

    /// The index of the first of `names` that is next, quoted.
    #[inline(always)]
    fn index_quoted(&self, names: &[&str]) -> Option<usize> {
        let mut i = 0;
        while let Some(name) = names.get(i) {
            if self.quoted(name) {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    #[inline(always)]
    fn params<T: CallTable>(&mut self) -> Option<Params<'t>> {
        let mut params = Params {
            tool: None,
            arguments: None,
            meta: None,
        };
        if T::FORMS.len() > MAX_FORMS || T::META.len() > KEPT_META {
            return None;
        }
        self.cursor.eat(b'{')?;
        loop {
            self.cursor.peek()?;
            if let Some(form) = self.first_quoted(T::FORMS, |f| f.tool) {
                self.cursor.at += form.tool.len() + 2;
                self.cursor.eat(b':')?;
                // A second tool member (the same or another form's): serde's.
                if params.tool.is_some() {
                    return None;
                }
                params.tool = Some((form.tool, self.plain_str()?));
            } else {
                match self.name(&["arguments", "_meta"])? {
                    0 if params.arguments.is_none() => {
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
                    1 if params.meta.is_none() => params.meta = Some(self.meta(T::META)?),
                    _ => return None,
                }
            }
            if self.cursor.closes(b'}')? {
                return Some(params);
            }
        }
    }
}

/// Whether `text` and `name`, of one length of `N` to `2 * N` bytes, are
/// the same: their first `N` and last `N` bytes (which cover them), each
/// compared as one word.
#[inline(always)]
fn same_ends<const N: usize>(text: &[u8], name: &[u8]) -> bool {
    let last = name.len().saturating_sub(N);
    text.len() == name.len()
        && chunk::<N>(text, 0) == chunk::<N>(name, 0)
        && chunk::<N>(text, last) == chunk::<N>(name, last)
}

/// The `N` bytes of `bytes` at `at` (zeros past its end).
#[inline(always)]
fn chunk<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes
        .get(at..at + N)
        .and_then(|b| b.try_into().ok())
        .unwrap_or([0; N])
}
