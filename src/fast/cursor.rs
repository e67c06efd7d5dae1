//! The one scanner of JSON text under the hand-written readers of the hot
//! path — the plain tool-call reader (`fast::plain_call`), the check
//! that captured arguments read as a value (`fast::arguments`) and the
//! quick schema check (`fast::quick_check`): whitespace, single bytes,
//! literals, the separators of members and items, strings
//! ([`Cursor::string`]) and numbers ([`Cursor::number`]), with the one
//! nesting limit ([`SERDE_JSON_DEPTH`]) and the one range rule for numbers
//! ([`number_in_range`]). `None` is "not what was expected"; nothing here
//! panics on any input.

/// How many levels of arrays and objects serde_json reads, counted from
/// the root of the text it reads: the one nesting limit every hand-written
/// walk of JSON text keeps, so that it refuses what serde_json refuses.
pub(crate) const SERDE_JSON_DEPTH: usize = 127;

/// The member name by which serde_json marks a raw value: reading a
/// `Value`, it reads an object whose first member has this name as that
/// member's string parsed as JSON (or refuses it), not as the object
/// written. The walks here do not take such an object
/// ([`Cursor::opens_raw_value_token`]): the plain reader leaves it to
/// serde's reading, which refuses it in arguments, and the quick check
/// leaves it to the full validator. What a tool is given is what was
/// checked.
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

pub(crate) struct Cursor<'t> {
    pub(crate) text: &'t [u8],
    pub(crate) at: usize,
}

impl<'t> Cursor<'t> {
    pub(crate) fn new(text: &'t [u8]) -> Self {
        Self { text, at: 0 }
    }

    /// The next byte past whitespace.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.text.get(self.at) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// `byte`, past whitespace.
    pub(crate) fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// `word`, exactly, here.
    pub(crate) fn word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at.checked_add(word.len())?;
        (self.text.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// A string here (past whitespace), checked as JSON writes one: no
    /// control character, only JSON's escapes, `\u` with four hex digits.
    #[inline(always)]
    pub(crate) fn string(&mut self) -> Option<Str<'t>> {
        self.scan_string::<true>()
    }

    /// A string here (past whitespace) of text known to be valid JSON
    /// (captured and checked before, or written by serde_json): the same
    /// scan, but for the search for control characters, which valid text
    /// has none of inside a string.
    #[inline(always)]
    pub(crate) fn valid_string(&mut self) -> Option<Str<'t>> {
        self.scan_string::<false>()
    }

    /// The one string scan: `CHECKED` looks for control characters too.
    /// (Inlined where it is called, as are the two above: most strings in
    /// a request are short names and values, whose scan costs less than a
    /// call.)
    #[inline(always)]
    fn scan_string<const CHECKED: bool>(&mut self) -> Option<Str<'t>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at;
        let mut at = start + 1;
        let (mut escaped, mut surrogate) = (false, false);
        loop {
            at = if CHECKED {
                plain_run(self.text, at)
            } else {
                at + memchr::memchr2(b'"', b'\\', self.text.get(at..)?)?
            };
            match *self.text.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    return Some(Str {
                        quoted: self.text.get(start..self.at)?,
                        escaped,
                        surrogate,
                    });
                }
                b'\\' => {
                    escaped = true;
                    match *self.text.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at += 2,
                        b'u' => {
                            let hex = self.text.get(at + 2..at + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            surrogate |= matches!(
                                hex,
                                [b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F', ..]
                            );
                            at += 6;
                        }
                        _ => return None,
                    }
                }
                // A control character.
                _ => return None,
            }
        }
    }

    /// Past one value of any kind here, nested at most `limit` levels of
    /// arrays and objects deep counting from `depth`, none of its objects
    /// opening with a member named [`RAW_VALUE_TOKEN`] (a value reading
    /// reads that object as another value). `CHECKED`: the text is not
    /// known to be valid JSON, and its strings and numbers must also read
    /// as a value reading reads them (no lone surrogate, no number past a
    /// float's range); otherwise it is valid JSON that reads as a value
    /// already.
    pub(crate) fn skip_value<const CHECKED: bool>(
        &mut self,
        depth: usize,
        limit: usize,
    ) -> Option<()> {
        let deeper = || (depth < limit).then_some(depth + 1);
        match self.peek()? {
            b'{' => {
                let depth = deeper()?;
                self.at += 1;
                if self.eat(b'}').is_some() {
                    return Some(());
                }
                if self.opens_raw_value_token() {
                    return None;
                }
                loop {
                    self.skip_string::<CHECKED>()?;
                    self.eat(b':')?;
                    self.skip_value::<CHECKED>(depth, limit)?;
                    if self.closes(b'}')? {
                        return Some(());
                    }
                }
            }
            b'[' => {
                let depth = deeper()?;
                self.at += 1;
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.skip_value::<CHECKED>(depth, limit)?;
                    if self.closes(b']')? {
                        return Some(());
                    }
                }
            }
            b'"' => self.skip_string::<CHECKED>(),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            _ => {
                let number = self.number()?;
                (!CHECKED || number_in_range(number)).then_some(())
            }
        }
    }

    /// Whether the string here (past whitespace: an object's first
    /// member's name) is [`RAW_VALUE_TOKEN`]. Only a name that begins with
    /// `$` or an escape is read further.
    #[inline(always)]
    pub(crate) fn opens_raw_value_token(&mut self) -> bool {
        self.peek() == Some(b'"')
            && matches!(self.text.get(self.at + 1), Some(b'$' | b'\\'))
            && self.names_raw_value_token()
    }

    /// Whether the string here is [`RAW_VALUE_TOKEN`] (rare: kept out of
    /// the walks' code).
    #[cold]
    #[inline(never)]
    fn names_raw_value_token(&self) -> bool {
        let mut name = Cursor {
            text: self.text,
            at: self.at,
        };
        name.valid_string()
            .is_some_and(|name| name.is(RAW_VALUE_TOKEN))
    }

    /// Past a string (a member's name or a value), as
    /// [`skip_value`](Self::skip_value) reads one.
    fn skip_string<const CHECKED: bool>(&mut self) -> Option<()> {
        let string = self.scan_string::<CHECKED>()?;
        (!CHECKED || string.reads()).then_some(())
    }

    /// A number here (past whitespace), as JSON writes one
    /// (`-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`): its text.
    pub(crate) fn number(&mut self) -> Option<&'t [u8]> {
        self.peek()?;
        let start = self.at;
        if self.text.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        match *self.text.get(self.at)? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.text.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.text.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.text.get(self.at) {
                self.at += 1;
            }
            self.some_digits()?;
        }
        self.text.get(start..self.at)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }

    /// After a member or an item: `true` past `close` (the object's or
    /// array's end), `false` past a comma (another follows).
    pub(crate) fn closes(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(false)
            }
            byte if byte == close => {
                self.at += 1;
                Some(true)
            }
            _ => None,
        }
    }
}

/// A string as [`Cursor::string`] read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Str<'t> {
    /// Its text, quotes included.
    pub(crate) quoted: &'t [u8],
    /// It has an escape: its value is not its text.
    pub(crate) escaped: bool,
    /// It has a `\u` escape of a UTF-16 surrogate, which reads only as one
    /// of a pair ([`Str::reads`] says).
    pub(crate) surrogate: bool,
}

impl<'t> Str<'t> {
    /// Whether the string reads as a value's string: every surrogate
    /// escape is one of a pair (read by serde_json, for the rare string
    /// that has one).
    pub(crate) fn reads(&self) -> bool {
        !self.surrogate || serde_json::from_slice::<String>(self.quoted).is_ok()
    }

    /// Its value, as bytes: its text when it has no escapes (valid UTF-8
    /// already), else read by serde_json.
    pub(crate) fn value(&self) -> Option<std::borrow::Cow<'t, [u8]>> {
        match self.plain() {
            Some(text) => Some(text.into()),
            None => serde_json::from_slice::<String>(self.quoted)
                .ok()
                .map(|text| text.into_bytes().into()),
        }
    }

    /// Whether its value is `value` (not read when it is longer than
    /// `value` written with an escape for every byte).
    pub(crate) fn is(&self, value: &str) -> bool {
        self.quoted.len() <= 6 * value.len() + 2
            && self.value().is_some_and(|text| *text == *value.as_bytes())
    }

    /// Its contents, when it has no escapes (its text is its value).
    pub(crate) fn plain(&self) -> Option<&'t [u8]> {
        if self.escaped {
            return None;
        }
        self.quoted.get(1..self.quoted.len().checked_sub(1)?)
    }
}

/// Whether a number's text reads as a value's number (within a float's
/// range: `1e400` does not). Only an exponent or a long run of digits can
/// leave it; those are read as serde_json reads them.
pub(crate) fn number_in_range(token: &[u8]) -> bool {
    let suspect = token.len() > 300 || token.iter().any(|b| matches!(b, b'e' | b'E'));
    !suspect || serde_json::from_slice::<serde_json::Number>(token).is_ok()
}

/// From `at`, the index of the first `"`, `\` or control character (or the
/// end), eight bytes at a step (as serde_json looks for them).
fn plain_run(text: &[u8], mut at: usize) -> usize {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    while let Some(Ok(chunk)) = text.get(at..at + 8).map(<[u8; 8]>::try_from) {
        let bytes = u64::from_le_bytes(chunk);
        let control = bytes.wrapping_sub(ONES * 0x20) & !bytes;
        let quote = bytes ^ (ONES * u64::from(b'"'));
        let quote = quote.wrapping_sub(ONES) & !quote;
        let backslash = bytes ^ (ONES * u64::from(b'\\'));
        let backslash = backslash.wrapping_sub(ONES) & !backslash;
        let found = (control | quote | backslash) & HIGH;
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&byte) = text.get(at) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_and_literals_are_read_past_whitespace_only() {
        let mut cursor = Cursor::new(b" \t\r\n, ]x");
        assert_eq!(cursor.closes(b']'), Some(false));
        assert_eq!(cursor.closes(b']'), Some(true));
        assert_eq!(cursor.closes(b']'), None);
        assert_eq!(cursor.word(b"xy"), None);
        assert_eq!(cursor.word(b"x"), Some(()));
        assert_eq!(cursor.end(), Some(()));
        assert_eq!(Cursor::new(b"nul").word(b"null"), None);
    }

    #[test]
    fn strings_are_scanned_as_json_writes_them() {
        fn read(text: &str) -> Option<Str<'_>> {
            Cursor::new(text.as_bytes()).string()
        }
        let s = read(r#"  "abc" x"#).unwrap();
        assert_eq!(
            (s.quoted, s.escaped, s.surrogate),
            (&br#""abc""#[..], false, false)
        );
        assert_eq!(s.plain(), Some(&b"abc"[..]));
        let s = read(r#""a\n\"\u00e9""#).unwrap();
        assert!(s.escaped && !s.surrogate && s.plain().is_none() && s.reads());
        assert!(read(r#""\ud83d\ude00""#).unwrap().reads(), "a pair");
        let lone = read(r#""\ud800x""#).unwrap();
        assert!(lone.surrogate && !lone.reads(), "a lone surrogate");
        for bad in [
            "\"a\u{1}\"",
            r#""\x""#,
            r#""\u12g4""#,
            r#""\u12""#,
            r#""open"#,
            "x",
        ] {
            assert_eq!(read(bad), None, "{bad:?}");
        }
        let long = format!("\"{}\\\"{}\"", "a".repeat(20), "b".repeat(9));
        assert_eq!(
            read(&long).unwrap().quoted.len(),
            long.len(),
            "past the 8-byte steps"
        );
    }

    #[test]
    fn valid_text_scans_the_same_without_the_control_character_search() {
        for text in [
            r#""""#,
            r#""plain""#,
            r#""a\n\"\\\u00e9 and more than eight bytes""#,
            r#""\ud800""#,
            r#""\ud83d\ude00""#,
        ] {
            let checked = Cursor::new(text.as_bytes()).string();
            assert!(checked.is_some(), "{text}");
            assert_eq!(
                checked,
                Cursor::new(text.as_bytes()).valid_string(),
                "{text}"
            );
        }
    }

    #[test]
    fn numbers_are_scanned_as_json_writes_them() {
        fn read(text: &str) -> Option<&[u8]> {
            Cursor::new(text.as_bytes()).number()
        }
        for ok in ["0", "-0", "12", "-1.5", "1e9", "2.5E-3", "1e+2"] {
            assert_eq!(read(ok), Some(ok.as_bytes()), "{ok}");
        }
        assert_eq!(read("12,"), Some(&b"12"[..]));
        assert_eq!(
            read("01"),
            Some(&b"0"[..]),
            "what follows is the caller's: a 1 where a separator must be"
        );
        for bad in ["-", "1.", ".5", "1e", "+1", "e1", "-x"] {
            assert_eq!(read(bad), None, "{bad}");
        }
        assert!(number_in_range(b"1e308") && !number_in_range(b"1e400"));
        assert!(!number_in_range(&[b'9'; 400]));
    }
}
