//! Splits a byte stream into JSON values (docs/mcp-v1.md §8, streaming
//! sessions): newline-separated compact values, pretty-printed values, or
//! values back to back, arriving in chunks of any size.
//!
//! The decoder does not parse: it finds where each value ends
//! (`fast::value_end`, which tracks strings, escapes and brackets), and
//! hands the value's bytes to the session, which parses them (and answers `-32700` if they are not JSON).
//! A value longer than the size limit is reported once as
//! [`Input::TooLarge`] and skipped as it streams past, never buffered.
//! A closing bracket that does not match ends a value early, so one broken
//! value cannot swallow the rest of the stream.

use std::io;

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

use crate::fast::value_end::ValueScanner;
use crate::server::Input;

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
            if !self.scanner.started() && !self.skipping {
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
        assert!(decoder.scanner.held_brackets() <= 2 * crate::fast::value_end::CHECKED_DEPTH);
        assert!(buf.is_empty());
    }

    #[test]
    fn an_unfinished_value_at_the_end_is_handed_over() {
        assert_eq!(decode_in_chunks(1024, b"{\"a\":", 2), vec![msg("{\"a\":")]);
        assert!(decode_in_chunks(1024, b" \n\t ", 2).is_empty());
    }
}
