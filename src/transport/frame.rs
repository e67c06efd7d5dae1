//! The stdio frame codec (docs/mcp-v1.md §7): `Content-Length` framing as a
//! tokio-util [`Decoder`]/[`Encoder`], a state machine without I/O.
//!
//! Decoding is tolerant where docs/mcp-v1.md asks for it: header names are
//! case-insensitive, `Content-Type` may be any `application/json` or
//! `application/vscode-jsonrpc` variant (with `charset=utf-8`), other headers
//! are ignored, and a bare `\n` may end a line. Bad input never stops the
//! decoder: it yields [`Input::Unreadable`] for a header block it cannot
//! read and skips ahead to the next `Content-Length` header; a frame over
//! the size limit is skipped as it streams past, never buffered, and
//! reported as [`Input::TooLarge`].

use std::io;

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

pub use crate::server::DEFAULT_MAX_HEADER_SIZE;
use crate::server::Input;

/// `Content-Length` frame decoder and encoder.
///
/// ```
/// use bytes::BytesMut;
/// use clawmcp::server::Input;
/// use clawmcp::transport::FrameCodec;
/// use tokio_util::codec::Decoder;
///
/// let mut codec = FrameCodec::new(4 * 1024 * 1024);
/// let mut buf = BytesMut::from(&b"content-length: 2\n\n{}Content-Length: 100000000\r\n\r\n"[..]);
/// assert_eq!(codec.decode(&mut buf).unwrap(), Some(Input::Message("{}".into())));
/// assert_eq!(codec.decode(&mut buf).unwrap(), Some(Input::TooLarge { declared: 100_000_000 }));
/// ```
#[derive(Debug)]
pub struct FrameCodec {
    max_message_size: usize,
    max_header_size: usize,
    state: Reading,
}

/// What the decoder is reading now.
#[derive(Debug)]
enum Reading {
    /// Reading a header block.
    FrameHead(FrameHead),
    /// Waiting for this many body bytes.
    Body(usize),
    /// Discarding this many more bytes of a frame that is not served.
    Skip(usize),
    /// After unreadable input: discarding lines until a `Content-Length` header.
    Resync,
}

#[derive(Debug, Default)]
struct FrameHead {
    /// Bytes of header lines read so far in this block.
    size: usize,
    /// Bytes of the current (unfinished) line already searched for its end.
    searched: usize,
    content_length: Option<usize>,
    /// A `Content-Type` this server cannot read.
    bad_content_type: Option<String>,
}

/// What one header line says.
enum Line<'a> {
    Blank,
    ContentLength(usize),
    ContentType(&'a str),
    Other,
    Unreadable(String),
}

impl FrameCodec {
    /// A codec whose frames may carry at most `max_message_size` body bytes.
    pub fn new(max_message_size: usize) -> Self {
        Self {
            max_message_size,
            max_header_size: DEFAULT_MAX_HEADER_SIZE,
            state: Reading::FrameHead(FrameHead::default()),
        }
    }

    /// Sets the limit of one header block (default 8 KiB); a longer one is
    /// unreadable.
    #[must_use]
    pub fn with_max_header_size(mut self, bytes: usize) -> Self {
        self.max_header_size = bytes;
        self
    }

    /// Moves to resynchronisation and reports why.
    fn unreadable(&mut self, why: String) -> Option<Input> {
        self.state = Reading::Resync;
        Some(Input::Unreadable(why))
    }

    /// Handles one complete header line of the current header block:
    /// `raw` without its line ending, `len` with it. `Err` means the line
    /// cannot be read.
    fn header_line(&mut self, raw: &[u8], len: usize) -> Result<Option<Input>, String> {
        let Reading::FrameHead(head) = &mut self.state else {
            return Ok(None);
        };
        let line = parse_line(raw);
        let first_line = head.size == 0;
        head.size += len;
        head.searched = 0;
        if head.size > self.max_header_size {
            return Err(format!(
                "frame header block is over {} bytes",
                self.max_header_size
            ));
        }
        match line {
            Line::Blank if first_line => Ok(None), // a stray blank line between frames
            Line::Blank => Ok(self.end_of_head()),
            Line::ContentLength(n) => match head.content_length {
                Some(m) if m != n => Err(format!(
                    "frame header has two Content-Length values, {m} and {n}"
                )),
                _ => {
                    head.content_length = Some(n);
                    Ok(None)
                }
            },
            Line::ContentType(value) => {
                if !is_supported_content_type(value) {
                    head.bad_content_type = Some(value.to_owned());
                }
                Ok(None)
            }
            Line::Other => Ok(None),
            Line::Unreadable(why) => Err(why),
        }
    }

    fn end_of_head(&mut self) -> Option<Input> {
        let Reading::FrameHead(head) = std::mem::replace(&mut self.state, Reading::Resync) else {
            return None;
        };
        match (head.content_length, head.bad_content_type) {
            (None, _) => self.unreadable("frame header block has no Content-Length".into()),
            (Some(n), _) if n > self.max_message_size => {
                self.state = Reading::Skip(n);
                Some(Input::TooLarge { declared: n })
            }
            (Some(n), Some(ctype)) => {
                self.state = Reading::Skip(n);
                Some(Input::Unreadable(format!(
                    "unsupported Content-Type {ctype:?}: expected application/json or \
                     application/vscode-jsonrpc with charset=utf-8; the frame was skipped"
                )))
            }
            (Some(n), None) => {
                self.state = Reading::Body(n);
                None
            }
        }
    }
}

impl Decoder for FrameCodec {
    type Item = Input;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Input>, io::Error> {
        loop {
            match &mut self.state {
                Reading::Body(n) => {
                    let n = *n;
                    if src.len() < n {
                        src.reserve(n - src.len());
                        return Ok(None);
                    }
                    let body = src.split_to(n).freeze();
                    self.state = Reading::FrameHead(FrameHead::default());
                    return Ok(Some(Input::Message(body)));
                }
                Reading::Skip(n) => {
                    let k = (*n).min(src.len());
                    src.advance(k);
                    *n -= k;
                    if *n > 0 {
                        return Ok(None);
                    }
                    self.state = Reading::FrameHead(FrameHead::default());
                }
                Reading::Resync => match find_content_length(src) {
                    Some(at) => {
                        src.advance(at);
                        self.state = Reading::FrameHead(FrameHead::default());
                    }
                    None => {
                        // Keep what could be the start of a split header name.
                        let keep = (CONTENT_LENGTH.len() - 1).min(src.len());
                        src.advance(src.len() - keep);
                        return Ok(None);
                    }
                },
                Reading::FrameHead(head) => {
                    if head.size == 0
                        && let Some((header_len, n)) = plain_header(src)
                        && header_len <= self.max_header_size
                    {
                        // The common `Content-Length: N\r\n\r\n` alone.
                        src.advance(header_len);
                        *head = FrameHead {
                            size: header_len,
                            content_length: Some(n),
                            ..FrameHead::default()
                        };
                        if let Some(item) = self.end_of_head() {
                            return Ok(Some(item));
                        }
                        continue;
                    }
                    // The block's lines stay in `src` until the block is
                    // read, so that a bad block can be searched again.
                    // (`size` and `searched` count bytes of `src` that were
                    // read already, so both slices below are in it.)
                    let start = head.size;
                    let from = start + head.searched;
                    let unsearched = src.get(from..).unwrap_or_default();
                    let Some(end) = memchr::memchr(b'\n', unsearched).map(|i| head.searched + i)
                    else {
                        head.searched = src.len() - start;
                        if src.len() > self.max_header_size {
                            src.advance(1);
                            let limit = self.max_header_size;
                            return Ok(self
                                .unreadable(format!("frame header block is over {limit} bytes")));
                        }
                        return Ok(None);
                    };
                    let raw = src.get(start..start + end).unwrap_or_default();
                    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
                    let blank = raw.is_empty();
                    match self.header_line(raw, end + 1) {
                        Err(why) => {
                            // Search again from inside this block: a frame
                            // glued to garbage starts mid-line.
                            src.advance(1);
                            return Ok(self.unreadable(format!("unreadable frame header: {why}")));
                        }
                        Ok(item) => {
                            match &self.state {
                                // A stray blank line between frames: drop it.
                                Reading::FrameHead(head) if head.size == end + 1 && blank => {
                                    src.advance(end + 1);
                                    self.state = Reading::FrameHead(FrameHead::default());
                                }
                                Reading::FrameHead(_) => {}
                                // A bad block is searched again from its second byte.
                                Reading::Resync => src.advance(1),
                                // A good block is dropped; its body follows.
                                Reading::Body(_) | Reading::Skip(_) => src.advance(start + end + 1),
                            }
                            if item.is_some() {
                                return Ok(item);
                            }
                        }
                    }
                }
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Input>, io::Error> {
        if let Some(item) = self.decode(src)? {
            return Ok(Some(item));
        }
        let partial = match &self.state {
            Reading::Body(n) => Some(format!(
                "input ended {} bytes short of a frame's end",
                n - src.len()
            )),
            Reading::FrameHead(head)
                if head.size > 0 || !src.iter().all(u8::is_ascii_whitespace) =>
            {
                Some("input ended inside a frame header".to_owned())
            }
            _ => None,
        };
        src.clear();
        self.state = Reading::FrameHead(FrameHead::default());
        Ok(partial.map(Input::Unreadable))
    }
}

/// Appends `body` as a frame: `Content-Length: N\r\n\r\n` and the body.
pub(crate) fn put_frame(body: &[u8], dst: &mut BytesMut) {
    let mut digits = itoa::Buffer::new();
    let len = digits.format(body.len());
    dst.reserve(20 + len.len() + body.len());
    dst.put_slice(b"Content-Length: ");
    dst.put_slice(len.as_bytes());
    dst.put_slice(b"\r\n\r\n");
    dst.put_slice(body);
}

impl Encoder<&[u8]> for FrameCodec {
    type Error = io::Error;

    /// Writes `Content-Length: N\r\n\r\n` and the body.
    fn encode(&mut self, body: &[u8], dst: &mut BytesMut) -> Result<(), io::Error> {
        put_frame(body, dst);
        Ok(())
    }
}

const CONTENT_LENGTH: &[u8] = b"content-length";

/// A header block that is exactly `Content-Length: N\r\n\r\n`, as most
/// clients write it: its length and N.
fn plain_header(src: &[u8]) -> Option<(usize, usize)> {
    const NAME: &[u8] = b"Content-Length: ";
    let rest = src.strip_prefix(NAME)?;
    // (At most 16 looked at: a header that trickles in is read again.)
    let digits = rest
        .iter()
        .take(16)
        .take_while(|b| b.is_ascii_digit())
        .count();
    let (number, after) = rest.split_at_checked(digits)?;
    if digits == 0 || digits > 15 || !after.starts_with(b"\r\n\r\n") {
        return None;
    }
    let n = number.iter().try_fold(0usize, |n, d| {
        n.checked_mul(10)?.checked_add(usize::from(d - b'0'))
    })?;
    Some((NAME.len() + digits + 4, n))
}

/// Where the next `Content-Length` header name starts, in any case.
fn find_content_length(buf: &[u8]) -> Option<usize> {
    buf.windows(CONTENT_LENGTH.len())
        .position(|w| w.eq_ignore_ascii_case(CONTENT_LENGTH))
}

fn parse_line(raw: &[u8]) -> Line<'_> {
    if raw.is_empty() {
        return Line::Blank;
    }
    let mut parts = raw.splitn(2, |&b| b == b':');
    let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
        return Line::Unreadable("a line without a colon".into());
    };
    if name.is_empty() || !name.iter().all(|&b| is_token_byte(b)) {
        return Line::Unreadable("a malformed header name".into());
    }
    let Ok(value) = std::str::from_utf8(value) else {
        return Line::Unreadable("a value that is not UTF-8".into());
    };
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    if name.eq_ignore_ascii_case(b"content-length") {
        return match value.parse::<usize>() {
            Ok(n) if value.bytes().all(|b| b.is_ascii_digit()) => Line::ContentLength(n),
            _ => Line::Unreadable(format!("Content-Length {value:?} is not a byte count")),
        };
    }
    if name.eq_ignore_ascii_case(b"content-type") {
        return Line::ContentType(value);
    }
    Line::Other
}

/// RFC 9110 token characters.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `application/json` or `application/vscode-jsonrpc`, with at most a
/// `charset=utf-8` (or `utf8`) parameter among its parameters.
fn is_supported_content_type(value: &str) -> bool {
    let mut parts = value.split(';');
    let media = parts.next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("application/json")
        && !media.eq_ignore_ascii_case("application/vscode-jsonrpc")
    {
        return false;
    }
    parts.all(|param| match param.split_once('=') {
        Some((name, value)) if name.trim().eq_ignore_ascii_case("charset") => {
            let value = value.trim().trim_matches('"');
            value.eq_ignore_ascii_case("utf-8") || value.eq_ignore_ascii_case("utf8")
        }
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::super::chunked::{decode_in_chunks, msg};
    use super::*;

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn decode_all(input: &[u8]) -> Vec<Input> {
        decode_in_chunks(&mut FrameCodec::new(1024), input, input.len())
    }

    #[test]
    fn one_byte_at_a_time_equals_all_at_once() {
        let mut input = Vec::new();
        for body in [r#"{"a":1}"#, "[]", r#"{"s":"héllo ✓ 😀"}"#] {
            input.extend(frame(body));
        }
        let expected = vec![msg(r#"{"a":1}"#), msg("[]"), msg(r#"{"s":"héllo ✓ 😀"}"#)];
        for chunk in [1, 2, 3, 7, 16, input.len()] {
            assert_eq!(
                decode_in_chunks(&mut FrameCodec::new(1024), &input, chunk),
                expected,
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn header_names_are_case_insensitive_and_other_headers_ignored() {
        let input = b"content-LENGTH: 2\r\nX-Tag: a\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}";
        assert_eq!(decode_all(input), vec![msg("{}")]);
    }

    #[test]
    fn bare_lf_line_endings_are_tolerated() {
        assert_eq!(
            decode_all(b"Content-Length: 2\nContent-Type: application/json\n\n{}"),
            vec![msg("{}")]
        );
    }

    #[test]
    fn accepted_content_types() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "application/json;charset=UTF-8",
            "application/vscode-jsonrpc; charset=utf-8",
            "application/vscode-jsonrpc;charset=\"utf8\"",
        ] {
            assert!(is_supported_content_type(ok), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/jsonl",
            "application/json; charset=utf-16",
        ] {
            assert!(!is_supported_content_type(bad), "{bad}");
        }
    }

    #[test]
    fn unsupported_content_type_skips_the_frame_and_goes_on() {
        let mut input = b"Content-Length: 2\r\nContent-Type: text/plain\r\n\r\n{}".to_vec();
        input.extend(frame("[]"));
        let out = decode_all(&input);
        assert!(matches!(out[0], Input::Unreadable(_)));
        assert_eq!(out[1..], [msg("[]")]);
    }

    #[test]
    fn garbage_header_block_resynchronises_at_next_content_length() {
        let mut input = b"GARBAGE, NOT A HEADER\r\n\r\n".to_vec();
        input.extend(frame(r#"{"id":29}"#));
        for chunk in [1, 5, input.len()] {
            let out = decode_in_chunks(&mut FrameCodec::new(1024), &input, chunk);
            assert!(
                matches!(out[0], Input::Unreadable(_)),
                "chunk {chunk}: {out:?}"
            );
            assert_eq!(out[1..], [msg(r#"{"id":29}"#)], "chunk {chunk}");
        }
    }

    #[test]
    fn header_block_without_content_length_is_unreadable_then_recovers() {
        let mut input =
            b"Content-Type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":30}\r\n".to_vec();
        input.extend(frame(r#"{"id":31}"#));
        let out = decode_all(&input);
        assert!(matches!(out[0], Input::Unreadable(_)), "{out:?}");
        assert_eq!(out.last(), Some(&msg(r#"{"id":31}"#)));
        assert!(
            out[1..out.len() - 1]
                .iter()
                .all(|i| matches!(i, Input::Unreadable(_)))
        );
    }

    #[test]
    fn oversize_frame_is_skipped_without_buffering() {
        let mut codec = FrameCodec::new(16);
        let mut buf = BytesMut::from(&b"Content-Length: 1000000\r\n\r\n"[..]);
        assert_eq!(
            codec.decode(&mut buf).unwrap(),
            Some(Input::TooLarge {
                declared: 1_000_000
            })
        );
        let mut fed = 0;
        while fed < 1_000_000 {
            buf.extend_from_slice(&[b'x'; 4096][..4096.min(1_000_000 - fed)]);
            fed += 4096.min(1_000_000 - fed);
            assert_eq!(codec.decode(&mut buf).unwrap(), None);
            assert!(buf.is_empty(), "skipped bytes are dropped at once");
        }
        buf.extend_from_slice(&frame("{}"));
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(msg("{}")));
    }

    #[test]
    fn frames_glued_to_garbage_are_found_again() {
        for garbage in [
            &b"GARBAGE"[..],
            b"Content-Type: application/json\r\n\r\n{\"id\":1}",
            b"Content-Length: 3\r\n\r\n{\"id\":1,\"m\":\"x\"}",
            b"Content-Length: abc\r\n",
        ] {
            let mut input = garbage.to_vec();
            input.extend(frame(r#"{"id":3}"#));
            input.extend(frame(r#"{"id":4}"#));
            for chunk in [1, 4, input.len()] {
                let out = decode_in_chunks(&mut FrameCodec::new(1024), &input, chunk);
                assert!(
                    !matches!(out[0], Input::Message(_)) || out[0] == msg("{\"i"),
                    "{out:?}"
                );
                let tail: Vec<&Input> = out.iter().rev().take(2).collect();
                assert_eq!(
                    tail,
                    [&msg(r#"{"id":4}"#), &msg(r#"{"id":3}"#)],
                    "{garbage:?} chunk {chunk}: {out:?}"
                );
            }
        }
    }

    #[test]
    fn a_frame_of_exactly_the_limit_is_served() {
        let body = "x".repeat(16);
        assert_eq!(
            decode_in_chunks(&mut FrameCodec::new(16), &frame(&body), 3),
            vec![msg(&body)]
        );
    }

    #[test]
    fn overlong_header_line_is_unreadable_and_not_buffered() {
        let mut codec = FrameCodec::new(1024).with_max_header_size(64);
        let mut buf = BytesMut::from(&[b'A'; 100][..]);
        assert!(matches!(
            codec.decode(&mut buf).unwrap(),
            Some(Input::Unreadable(_))
        ));
        assert_eq!(codec.decode(&mut buf).unwrap(), None);
        assert!(buf.len() < 16, "only a possible header-name prefix is kept");
        buf.extend_from_slice(b"AAAA\r\n");
        buf.extend_from_slice(&frame("{}"));
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(msg("{}")));
    }

    #[test]
    fn bad_content_length_values_are_unreadable() {
        for bad in ["-1", "abc", "1.5", "", "99999999999999999999999"] {
            let mut input = format!("Content-Length: {bad}\r\n\r\n").into_bytes();
            input.extend(frame("{}"));
            let out = decode_all(&input);
            assert!(matches!(out[0], Input::Unreadable(_)), "{bad}: {out:?}");
            assert_eq!(out.last(), Some(&msg("{}")), "{bad}");
        }
    }

    #[test]
    fn truncated_frame_at_eof_is_reported() {
        let out = decode_all(b"Content-Length: 10\r\n\r\n{}");
        assert!(matches!(out[..], [Input::Unreadable(_)]), "{out:?}");
        assert!(decode_all(b"\r\n").is_empty());
    }

    #[test]
    fn encoder_counts_bytes_not_characters() {
        let mut dst = BytesMut::new();
        FrameCodec::new(1024)
            .encode("\"✓\"".as_bytes(), &mut dst)
            .unwrap();
        assert_eq!(&dst[..], "Content-Length: 5\r\n\r\n\"✓\"".as_bytes());
    }
}
