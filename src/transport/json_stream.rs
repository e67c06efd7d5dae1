//! Splits a byte stream into JSON values (docs/mcp-v1.md §8, streaming
//! sessions): newline-separated compact values, pretty-printed values, or
//! values back to back, arriving in chunks of any size.
//!
//! The decoder does not parse: it finds where each value ends by tracking
//! strings, escapes and brackets, and hands the value's bytes to the
//! session, which parses them (and answers `-32700` if they are not JSON).
//! A value longer than the size limit is reported once as
//! [`Input::TooLarge`] and skipped as it streams past, never buffered.
//! A closing bracket that does not match ends a value early, so one broken
//! value cannot swallow the rest of the stream.

use std::io;

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

use crate::server::Input;

/// How deep a value's brackets are checked for matching; deeper nesting
/// is only counted, so a skipped value costs no memory per byte.
const CHECKED_DEPTH: usize = 256;

/// Finds the end of one JSON value, resuming where the last call stopped.
#[derive(Debug, Default)]
pub(crate) struct ValueScanner {
    /// Bytes of the current value already scanned.
    pos: usize,
    /// What the value is, from its first byte: `Some(true)` for an object,
    /// array or string, `Some(false)` for a bare scalar (or garbage).
    structured: Option<bool>,
    /// Closing brackets expected, innermost last (up to [`CHECKED_DEPTH`]).
    closers: Vec<u8>,
    /// Open brackets beyond [`CHECKED_DEPTH`].
    deeper: usize,
    in_string: bool,
    escaped: bool,
}

impl ValueScanner {
    /// Scans `value` (the unread rest of the current value: its first byte
    /// unless bytes were discarded) from where the last call stopped;
    /// returns the value's length once it is complete.
    pub(crate) fn scan(&mut self, value: &[u8]) -> Option<usize> {
        let structured = match self.structured {
            Some(structured) => structured,
            None => {
                let structured = matches!(value.first()?, b'{' | b'[' | b'"');
                self.structured = Some(structured);
                structured
            }
        };
        if !structured {
            // A bare scalar (or garbage) ends at white space.
            let start = self.pos;
            return match value[start..].iter().position(u8::is_ascii_whitespace) {
                Some(i) => {
                    self.pos = start + i;
                    Some(start + i)
                }
                None => {
                    self.pos = value.len();
                    None
                }
            };
        }
        while self.pos < value.len() {
            if self.in_string && !self.escaped {
                // Strings are most of a message's bytes: jump to the next
                // quote or backslash.
                match memchr::memchr2(b'"', b'\\', &value[self.pos..]) {
                    Some(i) => self.pos += i,
                    None => {
                        self.pos = value.len();
                        return None;
                    }
                }
            }
            let b = value[self.pos];
            self.pos += 1;
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.closers.is_empty() {
                        return Some(self.pos);
                    }
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' if self.closers.len() >= CHECKED_DEPTH => self.deeper += 1,
                b'{' => self.closers.push(b'}'),
                b'[' => self.closers.push(b']'),
                b'}' | b']' if self.deeper > 0 => self.deeper -= 1,
                b'}' | b']' => {
                    // A mismatched closer ends the (broken) value here.
                    let matched = self.closers.pop() == Some(b);
                    if !matched || self.closers.is_empty() {
                        return Some(self.pos);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// Forgets the first `n` scanned bytes (they were discarded); the
    /// value's state (strings, brackets) is kept.
    fn discard(&mut self, n: usize) {
        self.pos -= n;
    }

    fn reset(&mut self) {
        self.pos = 0;
        self.structured = None;
        self.closers.clear();
        self.deeper = 0;
        self.in_string = false;
        self.escaped = false;
    }
}

/// Finds where the first JSON value of a body read in pieces ends, past
/// any white space before it. The body only grows between calls, and each
/// of its bytes is looked at once, however it is chunked.
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct FirstValue {
    /// The white space before the value, as far as it is known.
    lead: usize,
    scanner: ValueScanner,
    /// Bytes looked at so far (the work done, for the linearity test).
    #[cfg(test)]
    examined: usize,
}

#[cfg_attr(not(feature = "http"), allow(dead_code))]
impl FirstValue {
    /// The end of the first value of `body` (the whole body so far, of
    /// which earlier calls saw a prefix), once it is complete.
    pub(crate) fn find(&mut self, body: &[u8]) -> Option<usize> {
        let blanks = body[self.lead..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        self.lead += blanks;
        #[cfg(test)]
        let scanned = self.scanner.pos;
        let end = match body.len() > self.lead {
            true => self.scanner.scan(&body[self.lead..]),
            false => None,
        };
        #[cfg(test)]
        {
            let now = end.unwrap_or(self.scanner.pos);
            self.examined += blanks + 1 + now.saturating_sub(scanned);
        }
        end.map(|end| self.lead + end)
    }
}

/// A [`Decoder`] of a stream of JSON values into [`Input`]s.
///
/// ```
/// use bytes::BytesMut;
/// use clawmcp::server::Input;
/// use clawmcp::transport::JsonStreamDecoder;
/// use tokio_util::codec::Decoder;
///
/// let mut decoder = JsonStreamDecoder::new(1024);
/// let mut buf = BytesMut::from(&b"{\"a\": [1, \"]\"]}\n{\n  \"b\": 2\n}"[..]);
/// assert_eq!(decoder.decode(&mut buf).unwrap(), Some(Input::Message("{\"a\": [1, \"]\"]}".into())));
/// assert_eq!(decoder.decode(&mut buf).unwrap(), Some(Input::Message("{\n  \"b\": 2\n}".into())));
/// ```
#[derive(Debug)]
pub struct JsonStreamDecoder {
    max_message_size: usize,
    scanner: ValueScanner,
    /// The current value is over the limit and being skipped.
    skipping: bool,
}

impl JsonStreamDecoder {
    /// A decoder whose values may be at most `max_message_size` bytes.
    pub fn new(max_message_size: usize) -> Self {
        Self {
            max_message_size,
            scanner: ValueScanner::default(),
            skipping: false,
        }
    }
}

impl Decoder for JsonStreamDecoder {
    type Item = Input;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Input>, io::Error> {
        loop {
            if self.scanner.structured.is_none() && !self.skipping {
                let blanks = src.iter().take_while(|b| b.is_ascii_whitespace()).count();
                src.advance(blanks);
            }
            if src.is_empty() {
                return Ok(None);
            }
            match self.scanner.scan(src) {
                Some(end) => {
                    self.scanner.reset();
                    if self.skipping {
                        self.skipping = false;
                        src.advance(end);
                        continue;
                    }
                    if end > self.max_message_size {
                        src.advance(end);
                        return Ok(Some(Input::TooLarge { declared: end }));
                    }
                    return Ok(Some(Input::Message(src.split_to(end).freeze())));
                }
                None if self.skipping => {
                    let n = src.len();
                    src.advance(n);
                    self.scanner.discard(n);
                    return Ok(None);
                }
                None if src.len() > self.max_message_size => {
                    let seen = src.len();
                    self.skipping = true;
                    src.advance(seen);
                    self.scanner.discard(seen);
                    return Ok(Some(Input::TooLarge { declared: seen }));
                }
                None => return Ok(None),
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Input>, io::Error> {
        if let Some(item) = self.decode(src)? {
            return Ok(Some(item));
        }
        self.scanner.reset();
        if self.skipping || src.is_empty() {
            self.skipping = false;
            src.clear();
            return Ok(None);
        }
        // An unfinished value: hand it over as it is; it will not parse.
        Ok(Some(Input::Message(src.split().freeze())))
    }
}

#[cfg(test)]
mod tests {
    use super::super::chunked::msg;
    use super::*;

    fn decode_in_chunks(max: usize, input: &[u8], chunk: usize) -> Vec<Input> {
        super::super::chunked::decode_in_chunks(&mut JsonStreamDecoder::new(max), input, chunk)
    }

    #[test]
    fn compact_pretty_and_adjacent_values_in_any_chunking() {
        let input =
            "{\"a\":\"}\\\"{\"}\n  {\n \"b\": [1, {\"c\": null}]\n}\n[{\"d\":1}]{\"e\":\"\\\\\"}\n";
        let expected = vec![
            msg("{\"a\":\"}\\\"{\"}"),
            msg("{\n \"b\": [1, {\"c\": null}]\n}"),
            msg("[{\"d\":1}]"),
            msg("{\"e\":\"\\\\\"}"),
        ];
        for chunk in [1, 2, 5, input.len()] {
            assert_eq!(
                decode_in_chunks(1024, input.as_bytes(), chunk),
                expected,
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn scalars_and_strings_are_values_too() {
        assert_eq!(
            decode_in_chunks(1024, b"42 \"x y\"\nnull garbage", 3),
            vec![msg("42"), msg("\"x y\""), msg("null"), msg("garbage")]
        );
    }

    #[test]
    fn a_mismatched_bracket_ends_a_broken_value() {
        assert_eq!(
            decode_in_chunks(1024, b"{\"a\": [}\n{\"b\":1}", 4),
            vec![msg("{\"a\": [}"), msg("{\"b\":1}")]
        );
    }

    #[test]
    fn oversize_values_are_skipped_and_the_stream_goes_on() {
        let big = format!("{{\"m\":\"{}\"}}", "x".repeat(5000));
        let input = format!("{big}\n{{\"ok\":1}}\n");
        for chunk in [7, 100, input.len()] {
            let out = decode_in_chunks(1000, input.as_bytes(), chunk);
            assert!(
                matches!(out[0], Input::TooLarge { .. }),
                "chunk {chunk}: {:?}",
                out[0]
            );
            assert_eq!(out[1..], [msg("{\"ok\":1}")], "chunk {chunk}");
        }
    }

    #[test]
    fn text_inside_a_skipped_value_is_never_served() {
        // The oversize value's string holds what looks like a request.
        let inner = "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":99}";
        let input = format!(
            "{{\"a\":\"{}  {inner} zz\"}}\n{{\"ok\":1}}",
            "x".repeat(150)
        );
        for chunk in [1, 7, 64, 160, input.len()] {
            let out = decode_in_chunks(100, input.as_bytes(), chunk);
            assert!(
                matches!(out[0], Input::TooLarge { .. }),
                "chunk {chunk}: {out:?}"
            );
            assert_eq!(out[1..], [msg("{\"ok\":1}")], "chunk {chunk}: {out:?}");
        }
    }

    #[test]
    fn skipping_deep_nesting_keeps_memory_flat() {
        let mut decoder = JsonStreamDecoder::new(1000);
        let mut buf = BytesMut::new();
        let mut too_large = 0;
        for _ in 0..1000 {
            buf.extend_from_slice(&[b'['; 4096]);
            while let Some(item) = decoder.decode(&mut buf).unwrap() {
                assert!(matches!(item, Input::TooLarge { .. }));
                too_large += 1;
            }
        }
        assert_eq!(too_large, 1);
        assert!(decoder.scanner.closers.capacity() <= 2 * CHECKED_DEPTH);
        assert!(buf.is_empty());
    }

    #[test]
    fn an_unfinished_value_at_the_end_is_handed_over() {
        assert_eq!(decode_in_chunks(1024, b"{\"a\":", 2), vec![msg("{\"a\":")]);
        assert!(decode_in_chunks(1024, b" \n\t ", 2).is_empty());
    }

    #[test]
    fn the_first_value_of_a_body_costs_work_linear_in_its_bytes_whatever_the_chunking() {
        // White space one byte per chunk, then a value one byte per chunk:
        // four times the chunks is four times the work, not sixteen.
        fn work(blanks: usize) -> usize {
            let value = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
            let mut body = vec![b' '; blanks];
            body.extend_from_slice(value);
            body.extend(std::iter::repeat_n(b'\n', blanks));
            let mut first = FirstValue::default();
            let mut found = None;
            for end in 1..=body.len() {
                if let Some(at) = first.find(&body[..end]) {
                    found = Some(at);
                    break;
                }
            }
            assert_eq!(found, Some(blanks + value.len()));
            first.examined
        }
        let (small, large) = (work(10_000), work(40_000));
        let ratio = large as f64 / small as f64;
        assert!(
            (3.5..4.5).contains(&ratio),
            "work {small} -> {large}: ratio {ratio}"
        );
    }

    #[test]
    fn the_first_value_is_found_in_any_chunking() {
        let body = b" \n\t {\"a\": \"} \\\" {\"} [1] ";
        for chunk in [1, 2, 3, body.len()] {
            let mut first = FirstValue::default();
            let mut found = None;
            let mut end = 0;
            while found.is_none() && end < body.len() {
                end = (end + chunk).min(body.len());
                found = first.find(&body[..end]);
            }
            assert_eq!(found, Some(body.len() - 5), "chunk {chunk}");
        }
        assert_eq!(FirstValue::default().find(b"   "), None);
    }
}
