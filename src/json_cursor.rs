//! A cursor over JSON text for the hand-written walks — the plain tool-call
//! reader (`jsonrpc::plain_call`) and the quick schema check
//! (`engine::quick_check`): whitespace, single bytes, literals and the
//! separators of members and items. `None` is "not what was expected";
//! nothing here panics on any input.

/// How many levels of arrays and objects serde_json reads, counted from
/// the root of the text it reads: the one nesting limit every hand-written
/// walk of JSON text keeps, so that it refuses what serde_json refuses.
pub(crate) const SERDE_JSON_DEPTH: usize = 127;

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

#[cfg(test)]
mod tests {
    use super::Cursor;

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
}
