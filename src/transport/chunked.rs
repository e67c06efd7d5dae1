//! Test helpers shared by the codecs' tests: feeding bytes in awkward
//! chunks (one byte at a time, a split inside a header or a character),
//! as a socket may deliver them.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;

use crate::server::Input;

/// Feeds `input` to `decoder` in chunks of `chunk` bytes (at least one),
/// then ends the input; returns everything decoded, in order.
pub(super) fn decode_in_chunks<D>(decoder: &mut D, input: &[u8], chunk: usize) -> Vec<Input>
where
    D: Decoder<Item = Input, Error = std::io::Error>,
{
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in input.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        while let Some(item) = decoder.decode(&mut buf).unwrap() {
            out.push(item);
        }
    }
    while let Some(item) = decoder.decode_eof(&mut buf).unwrap() {
        out.push(item);
    }
    out
}

/// A decoded message with this text.
pub(super) fn msg(text: &str) -> Input {
    Input::Message(Bytes::copy_from_slice(text.as_bytes()))
}
