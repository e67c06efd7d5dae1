//! Where a JSON value ends in bytes that arrive in pieces, found without
//! parsing it: strings, escapes and brackets are tracked, each byte looked
//! at once however the bytes are chunked. The stream decoder of MCP v1.0's
//! streaming sessions (`transport::json_stream`) and the reader of an HTTP
//! body's first value use it; serde_json then parses the value it bounds.

/// How deep a value's brackets are checked for matching; deeper nesting
/// is only counted, so a skipped value costs no memory per byte.
pub(crate) const CHECKED_DEPTH: usize = 256;

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
            let unscanned = value.get(start..).unwrap_or_default();
            return match unscanned.iter().position(u8::is_ascii_whitespace) {
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
        loop {
            if self.in_string && !self.escaped {
                // Strings are most of a message's bytes: jump to the next
                // quote or backslash.
                let unscanned = value.get(self.pos..).unwrap_or_default();
                match memchr::memchr2(b'"', b'\\', unscanned) {
                    Some(i) => self.pos += i,
                    None => {
                        self.pos = value.len();
                        return None;
                    }
                }
            }
            let &b = value.get(self.pos)?;
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
    }

    /// Forgets the first `n` scanned bytes (they were discarded); the
    /// value's state (strings, brackets) is kept.
    pub(crate) fn discard(&mut self, n: usize) {
        self.pos -= n;
    }

    /// How many expected closing brackets the scanner has room for (its
    /// memory, which deep nesting must not grow).
    #[cfg(test)]
    pub(crate) fn held_brackets(&self) -> usize {
        self.closers.capacity()
    }

    /// Whether a value's first byte was seen.
    pub(crate) fn started(&self) -> bool {
        self.structured.is_some()
    }

    /// Starts over, for the next value.
    pub(crate) fn reset(&mut self) {
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
        let blanks = (body.get(self.lead..).unwrap_or_default())
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        self.lead += blanks;
        #[cfg(test)]
        let scanned = self.scanner.pos;
        let end = match body.get(self.lead..) {
            Some(value) if !value.is_empty() => self.scanner.scan(value),
            _ => None,
        };
        #[cfg(test)]
        {
            let now = end.unwrap_or(self.scanner.pos);
            self.examined += blanks + 1 + now.saturating_sub(scanned);
        }
        end.map(|end| self.lead + end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
