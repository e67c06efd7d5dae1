//! A JSON string written from text, byte for byte as serde_json writes it
//! (`"`, `\` and the controls below U+0020 escaped, the controls without a
//! short form as `\u00xx` in lowercase hex, nothing else), but eight bytes
//! at a time over the runs that need no escape. Quoting a tool's output as
//! its text block is the one place the hot path writes long strings, and
//! serde_json spends about nine instructions a byte on it.

/// 0x01 in every byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether some byte of `word` is below 0x20, `"` or `\`. Exact as a
/// whole: a borrow can mark a byte above a true match, never a word
/// without one.
fn needs_escape(word: u64) -> bool {
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v;
    (control | zero_in(quote) | zero_in(backslash)) & HIGHS != 0
}

/// What each byte is written as: 0 for itself, else the letter after its
/// `\` (`u` for `\u00xx`).
// (Built at compile time: an index out of range would not compile.)
#[allow(clippy::indexing_slicing)]
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x0C] = b'f';
    table[b'\n' as usize] = b'n';
    table[b'\r' as usize] = b'r';
    table[b'\t' as usize] = b't';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// The shortest text written here: below it the words cost more than they
/// save (the 64 B cells' 38-byte output took serde_json 510 instructions,
/// and a first version of this writer 639).
pub(crate) const WORTH_FROM: usize = 256;

/// `text` as a JSON string (quotes included), appended to `out`. Words
/// that need no escape are tested eight bytes at a time and copied in one
/// run; from a word that needs one, bytes are written one by one until a
/// whole word needed none.
// `run ≤ at ≤ stop ≤ bytes.len()` throughout; a byte indexes `ESCAPE`'s
// 256 entries, a nibble `HEX`'s 16.
#[allow(clippy::indexing_slicing)]
pub(crate) fn write_quoted(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + bytes.len() / 8 + 2);
    out.push(b'"');
    let mut at = 0;
    let mut by_words = true;
    while at < bytes.len() {
        if by_words {
            let run = at;
            while let Some(word) = bytes
                .get(at..at + 8)
                .and_then(|w| <[u8; 8]>::try_from(w).ok())
            {
                if needs_escape(u64::from_le_bytes(word)) {
                    break;
                }
                at += 8;
            }
            out.extend_from_slice(&bytes[run..at]);
        }
        let stop = (at + 8).min(bytes.len());
        by_words = true;
        for &byte in &bytes[at..stop] {
            match ESCAPE[usize::from(byte)] {
                0 => out.push(byte),
                b'u' => {
                    out.extend_from_slice(b"\\u00");
                    out.push(HEX[usize::from(byte >> 4)]);
                    out.push(HEX[usize::from(byte & 0xF)]);
                    by_words = false;
                }
                letter => {
                    out.push(b'\\');
                    out.push(letter);
                    by_words = false;
                }
            }
        }
        at = stop;
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn quoted(text: &str) -> String {
        let mut out = Vec::new();
        write_quoted(&mut out, text);
        String::from_utf8(out).expect("escaping keeps UTF-8")
    }

    fn serde(text: &str) -> String {
        serde_json::to_string(text).expect("a str serialises")
    }

    #[test]
    fn every_byte_below_0x80_is_written_as_serde_json_writes_it() {
        for byte in 0u8..0x80 {
            let text = char::from(byte).to_string();
            assert_eq!(quoted(&text), serde(&text), "byte {byte:#04x}");
        }
    }

    #[test]
    fn escapes_at_every_place_in_a_word_and_across_words_match_serde_json() {
        for len in 0..40 {
            for at in 0..len {
                for special in [
                    "\"", "\\", "\n", "\u{1}", "\u{1f}", "é", "\u{2028}", "\u{7f}",
                ] {
                    let mut text: String = "x".repeat(len);
                    text.replace_range(at..=at, special);
                    assert_eq!(quoted(&text), serde(&text), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn a_json_text_is_quoted_as_serde_json_quotes_it() {
        let text = r#"{"message":"hi \"there\"\n","n":[1,2.5e3,null],"path":"C:\\tmp"}"#;
        assert_eq!(quoted(text), serde(text));
    }

    proptest! {
        /// Held to serde_json over any text, and over text made mostly of
        /// the bytes that need escaping.
        #[test]
        fn writes_what_serde_json_writes(text in any::<String>()) {
            prop_assert_eq!(quoted(&text), serde(&text));
        }

        /// Long stretches with and without escapes, so that the writer
        /// goes from words to bytes and back at every offset.
        #[test]
        fn writes_what_serde_json_writes_across_clean_and_dense_stretches(
            parts in proptest::collection::vec(
                ("[a-zé]{0,40}", "[\"\\\\\\x00-\\x1fa]{0,12}"), 0..12)
        ) {
            let text: String = parts.iter().map(|(clean, dense)| format!("{clean}{dense}")).collect();
            prop_assert_eq!(quoted(&text), serde(&text));
        }

        #[test]
        fn writes_what_serde_json_writes_where_escapes_are_dense(
            text in "[\"\\\\\\x00-\\x1fa-z\u{80}-\u{10ffff}]{0,64}"
        ) {
            prop_assert_eq!(quoted(&text), serde(&text));
        }
    }
}
