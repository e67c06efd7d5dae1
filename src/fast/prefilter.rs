//! A quick "may this JSON text hold that string?" before a parse decides:
//! `false` only when no string of the text can equal (or contain) the
//! needle, so the parse is skipped only where its answer is known.
//!
//! A string's character comes from a literal byte or from an escape. When
//! no escape of the text can write a character of the needle, the needle
//! can only be written literally, and a substring search finds it. An
//! escape that can (`\u` can write any; `\/` a `/`; `\"`, `\\`, `\b`, `\f`,
//! `\n`, `\r` and `\t` their own character) makes the answer "maybe".
//!
//! With the `fast-path` feature off the answer is always "maybe", and the
//! parse decides every time.

use memchr::memmem::Finder;

/// A needle to look for in JSON text (see the module docs).
pub(crate) struct Prefilter {
    finder: Finder<'static>,
}

impl Prefilter {
    /// A prefilter for `needle`, a string as it decodes (not as written).
    pub(crate) fn new(needle: &'static str) -> Self {
        Self {
            finder: Finder::new(needle.as_bytes()),
        }
    }

    /// Whether `text` (JSON text, valid or not) may hold the needle in one
    /// of its strings: `false` only when it certainly does not.
    pub(crate) fn may_hold(&self, text: &[u8]) -> bool {
        !cfg!(feature = "fast-path")
            || self.finder.find(text).is_some()
            || escape_may_write(text, self.finder.needle())
    }
}

/// Whether some escape in `text` may write a byte of `needle`. A `\` that
/// is itself escaped is looked at too, which can only say "maybe" more.
fn escape_may_write(text: &[u8], needle: &[u8]) -> bool {
    memchr::memchr_iter(b'\\', text).any(|at| {
        let written = match text.get(at + 1) {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 0x08,
            Some(b'f') => 0x0C,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            // `\u` may write anything; a `\` at the end or before another
            // byte is not JSON, and the parse refuses it.
            _ => return true,
        };
        needle.contains(&written)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: &str = "io.modelcontextprotocol/protocolVersion";

    #[test]
    fn a_needle_written_literally_or_by_an_escape_that_can_spell_it_may_be_held() {
        let key = Prefilter::new(KEY);
        for text in [
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"}}"#,
            r#"{"_meta":{"io.modelcontextprotocol\/protocolVersion":"x"}}"#,
            r#"{"_meta":{"\u0069o.modelcontextprotocol/protocolVersion":"x"}}"#,
        ] {
            assert!(key.may_hold(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn without_the_needle_or_an_escape_that_can_spell_it_nothing_is_held() {
        if !cfg!(feature = "fast-path") {
            return;
        }
        let key = Prefilter::new(KEY);
        for text in [
            r#"{"_meta":{"progressToken":1}}"#,
            r#"{"a":"line\nbreak \"quoted\" tab\t"}"#,
            r#"{"io.modelcontextprotocol/protocolversion":1}"#,
        ] {
            assert!(!key.may_hold(text.as_bytes()), "{text}");
        }
        let initialize = Prefilter::new("initialize");
        assert!(!initialize.may_hold(br#"{"path":"a\/b"}"#));
        assert!(initialize.may_hold(br#"{"method":"initiali\u007Ae"}"#));
    }

    /// Each character written as JSON may: itself (where JSON allows), its
    /// short escape, or `\u` (a surrogate pair above the BMP).
    fn written(c: char, how: u8) -> String {
        let short = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '/' => Some("\\/"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            _ => None,
        };
        let literal = !matches!(c, '"' | '\\') && c >= ' ';
        match (how % 3, short) {
            (0, _) if literal => c.to_string(),
            (1, Some(short)) => short.to_owned(),
            _ => c
                .encode_utf16(&mut [0; 2])
                .iter()
                .map(|unit| format!("\\u{unit:04x}"))
                .collect(),
        }
    }

    proptest! {
        /// The rule the prefilter lives by, against serde_json's reading:
        /// whenever a string of the text holds the needle, it says "maybe".
        #[test]
        fn a_held_needle_is_never_missed(
            chars in proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(KEY.chars().collect::<Vec<_>>()),
                    proptest::sample::select(vec!['"', '\\', '/', '\n', '\t', '\u{8}', 'é', '😀']),
                ],
                0..80,
            ),
            hows in proptest::collection::vec(any::<u8>(), 80),
        ) {
            let text: String = std::iter::once("\"".to_owned())
                .chain(chars.iter().zip(&hows).map(|(&c, &how)| written(c, how)))
                .chain(std::iter::once("\"".to_owned()))
                .collect();
            let decoded: String = serde_json::from_str(&text).map_err(|e| {
                TestCaseError::fail(format!("{text}: {e}"))
            })?;
            for needle in [KEY, "protocolVersion", "/", "\"", "\n"] {
                if decoded.contains(needle) {
                    prop_assert!(Prefilter::new(needle).may_hold(text.as_bytes()), "{text}");
                }
            }
        }
    }
}
