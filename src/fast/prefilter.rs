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

/// Needles the prefilter is checked with (by its proptest and its fuzz
/// target, beside the needles it serves): one for each character a short
/// escape writes, between two others.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) const ESCAPE_NEEDLES: [&str; 8] = [
    "1/2", "a\"b", "a\\b", "a\nb", "a\rb", "a\tb", "a\u{8}b", "a\u{c}b",
];

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
        let initialize = Prefilter::new("initialize");
        assert!(initialize.may_hold(br#"{"method":"initiali\u007Ae"}"#));
        assert!(initialize.may_hold(br#"{"method":"initialize"}"#));
    }

    /// (With `fast-path` off, the answer is "maybe" all the same.)
    #[test]
    fn without_the_needle_or_an_escape_that_can_spell_it_nothing_is_held() {
        let maybe = !cfg!(feature = "fast-path");
        let key = Prefilter::new(KEY);
        for text in [
            r#"{"_meta":{"progressToken":1}}"#,
            r#"{"a":"line\nbreak \"quoted\" tab\t"}"#,
            r#"{"io.modelcontextprotocol/protocolversion":1}"#,
        ] {
            assert_eq!(key.may_hold(text.as_bytes()), maybe, "{text}");
        }
        let initialize = Prefilter::new("initialize");
        for text in [
            r#"{"path":"a\/b"}"#,
            r#"{"jsonrpc":"2.0","method":"mcp/listTools","id":1}"#,
        ] {
            assert_eq!(initialize.may_hold(text.as_bytes()), maybe, "{text}");
        }
    }

    /// `c` as JSON string content, by `how`: 0 literally where JSON allows
    /// it, else by its short escape; 1 by its short escape where it has
    /// one, else literally; else (or where neither serves) by `\u` (a
    /// surrogate pair above the BMP).
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
        let literal = (!matches!(c, '"' | '\\') && c >= ' ').then(|| c.to_string());
        let short = short.map(str::to_owned);
        let chosen = match how {
            0 => literal.or(short),
            1 => short.or(literal),
            _ => None,
        };
        chosen.unwrap_or_else(|| {
            c.encode_utf16(&mut [0; 2])
                .iter()
                .map(|unit| format!("\\u{unit:04x}"))
                .collect()
        })
    }

    /// A character of `KEY`, or one that needs care in JSON.
    fn any_char() -> impl Strategy<Value = char> {
        prop_oneof![
            proptest::sample::select(KEY.chars().collect::<Vec<_>>()),
            proptest::sample::select(vec![
                '"', '\\', '/', '\n', '\r', '\t', '\u{8}', '\u{c}', 'é', '😀'
            ]),
        ]
    }

    proptest! {
        /// The rule the prefilter lives by, against serde_json's reading:
        /// whenever a string of the text holds the needle, it says "maybe".
        /// The needle sits whole in the string, between random text, all
        /// written literally where JSON allows, or all by short escapes
        /// where they exist, or each character its own way (so a needle is
        /// written whole, part escaped, or all escaped).
        #[test]
        fn a_held_needle_is_never_missed(
            pick in 0..3 + ESCAPE_NEEDLES.len(),
            before in proptest::collection::vec(any_char(), 0..20),
            after in proptest::collection::vec(any_char(), 0..20),
            style in 0..3u8,
            rolls in proptest::collection::vec(any::<u8>(), 100),
        ) {
            let needle = [KEY, "protocolVersion", "initialize"]
                .into_iter()
                .chain(ESCAPE_NEEDLES)
                .nth(pick)
                .unwrap_or(KEY);
            let chars: Vec<char> = before
                .iter()
                .copied()
                .chain(needle.chars())
                .chain(after.iter().copied())
                .collect();
            let text: String = std::iter::once("\"".to_owned())
                .chain(chars.iter().zip(rolls.iter().cycle()).map(|(&c, &roll)| {
                    written(c, if style == 2 { roll % 3 } else { style })
                }))
                .chain(std::iter::once("\"".to_owned()))
                .collect();
            let decoded: String = serde_json::from_str(&text).map_err(|e| {
                TestCaseError::fail(format!("{text}: {e}"))
            })?;
            prop_assert!(decoded.contains(needle), "{text}");
            prop_assert!(Prefilter::new(needle).may_hold(text.as_bytes()), "{text}");
        }
    }
}
