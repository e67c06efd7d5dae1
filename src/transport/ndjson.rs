//! Newline-delimited JSON (docs/model-context.md §4), the Model Context
//! Protocol's stdio framing: one message per line, UTF-8, ending `\n` (a
//! trailing `\r` is accepted), blank lines skipped. A line over the size
//! limit is skipped as it streams past, never buffered, and reported once as
//! [`Input::TooLarge`]. A decoder without I/O, like [`FrameCodec`](super::FrameCodec).

use std::io;

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::server::Input;

/// Newline-delimited JSON decoder and encoder.
///
/// ```
/// use bytes::BytesMut;
/// use clawmcp::server::Input;
/// use clawmcp::transport::LineCodec;
/// use tokio_util::codec::Decoder;
///
/// let mut codec = LineCodec::new(1024);
/// let mut buf = BytesMut::from(&b"{\"a\":1}\r\n\n{\"b\""[..]);
/// assert_eq!(codec.decode(&mut buf).unwrap(), Some(Input::Message("{\"a\":1}".into())));
/// assert_eq!(codec.decode(&mut buf).unwrap(), None); // the second line is not complete
/// ```
#[derive(Debug)]
pub struct LineCodec {
    max_message_size: usize,
    /// Bytes of the current line already searched for its end.
    searched: usize,
    /// The current line is over the limit and being skipped.
    skipping: bool,
}

impl LineCodec {
    /// A codec whose lines may hold at most `max_message_size` bytes.
    pub fn new(max_message_size: usize) -> Self {
        Self {
            max_message_size,
            searched: 0,
            skipping: false,
        }
    }

    /// One line (without its `\n`) as an input, or `None` when blank.
    fn line(&self, mut line: BytesMut) -> Option<Input> {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        if line.len() > self.max_message_size {
            return Some(Input::TooLarge {
                declared: line.len(),
            });
        }
        Some(Input::Message(line.freeze()))
    }
}

impl Decoder for LineCodec {
    type Item = Input;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Input>, io::Error> {
        loop {
            // (`searched` is never past the buffer's end: it is reset
            // whenever the buffer shrinks.)
            let unsearched = src.get(self.searched..).unwrap_or_default();
            let end = memchr::memchr(b'\n', unsearched).map(|i| self.searched + i);
            match end {
                Some(end) if self.skipping => {
                    src.advance(end + 1);
                    self.searched = 0;
                    self.skipping = false;
                }
                Some(end) => {
                    let line = src.split_to(end);
                    src.advance(1);
                    self.searched = 0;
                    if let Some(input) = self.line(line) {
                        return Ok(Some(input));
                    }
                }
                None if self.skipping => {
                    src.clear();
                    self.searched = 0;
                    return Ok(None);
                }
                // A line may end in `\r` before its `\n`: one byte more
                // than the limit is kept while it could be that `\r`.
                None if src.len() > self.max_message_size.saturating_add(1)
                    || (src.len() > self.max_message_size && src.last() != Some(&b'\r')) =>
                {
                    let declared = src.len();
                    src.clear();
                    self.searched = 0;
                    self.skipping = true;
                    return Ok(Some(Input::TooLarge { declared }));
                }
                None => {
                    self.searched = src.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Input>, io::Error> {
        if let Some(input) = self.decode(src)? {
            return Ok(Some(input));
        }
        self.searched = 0;
        if self.skipping {
            self.skipping = false;
            src.clear();
            return Ok(None);
        }
        // A last line without its newline.
        let line = src.split();
        Ok(self.line(line))
    }
}

/// Appends `body` as one line: the body, then `\n`.
pub(crate) fn put_line(body: &[u8], dst: &mut BytesMut) {
    dst.reserve(body.len() + 1);
    dst.put_slice(body);
    dst.put_u8(b'\n');
}

impl<T: AsRef<[u8]>> Encoder<T> for LineCodec {
    type Error = io::Error;

    fn encode(&mut self, message: T, dst: &mut BytesMut) -> Result<(), io::Error> {
        put_line(message.as_ref(), dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::chunked::msg;
    use super::*;

    fn decode_in_chunks(max: usize, input: &[u8], chunk: usize) -> Vec<Input> {
        super::super::chunked::decode_in_chunks(&mut LineCodec::new(max), input, chunk)
    }

    #[test]
    fn lines_in_any_chunking_with_crlf_and_blank_lines() {
        let input = b"{\"a\":1}\r\n\n  \r\n{\"b\":\"x\\ny\"}\n{\"c\":3}";
        for chunk in [1, 2, 3, 7, input.len()] {
            assert_eq!(
                decode_in_chunks(1024, input, chunk),
                vec![msg("{\"a\":1}"), msg("{\"b\":\"x\\ny\"}"), msg("{\"c\":3}")],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn an_oversize_line_is_skipped_once_and_the_stream_goes_on() {
        let big = format!("{{\"m\":\"{}\"}}", "x".repeat(5000));
        let input = format!("{big}\n{{\"ok\":1}}\n");
        for chunk in [1, 9, 100, input.len()] {
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
    fn a_crlf_line_of_exactly_the_limit_is_served_however_its_bytes_arrive() {
        let line = format!("{{\"m\":\"{}\"}}", "x".repeat(10));
        let input = format!("{line}\r\n{line}\r\n");
        for chunk in 1..=input.len() {
            assert_eq!(
                decode_in_chunks(line.len(), input.as_bytes(), chunk),
                vec![msg(&line), msg(&line)],
                "chunk {chunk}"
            );
        }
        let over = format!("{line}x\r\n{line}\n");
        for chunk in 1..=over.len() {
            let out = decode_in_chunks(line.len(), over.as_bytes(), chunk);
            assert!(
                matches!(out[0], Input::TooLarge { .. }),
                "chunk {chunk}: {out:?}"
            );
            assert_eq!(out[1..], [msg(&line)], "chunk {chunk}");
        }
    }

    #[test]
    fn skipping_keeps_memory_flat() {
        let mut codec = LineCodec::new(100);
        let mut buf = BytesMut::new();
        let mut reports = 0;
        for _ in 0..1000 {
            buf.extend_from_slice(&[b'x'; 4096]);
            while let Some(item) = codec.decode(&mut buf).unwrap() {
                assert!(matches!(item, Input::TooLarge { .. }));
                reports += 1;
            }
            assert!(buf.len() <= 4096);
        }
        assert_eq!(reports, 1);
    }
}
