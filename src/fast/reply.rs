//! The error code of a reply this server wrote, read where its encoder
//! puts the outcome: `{"jsonrpc":"2.0","id":…,"error":{"code":…` (or, for
//! an error without an id, `{"jsonrpc":"2.0","error":{"code":…`). Nothing
//! a result holds can be taken for it, since only the member right after
//! the id is read.

/// The error code of `reply`, whose id the encoder wrote as `written_id`;
/// `None` for a result (or bytes this server's encoder did not write).
pub(crate) fn error_code(reply: &[u8], written_id: &[u8]) -> Option<i32> {
    const START: &[u8] = br#"{"jsonrpc":"2.0","#;
    const ID: &[u8] = br#""id":"#;
    const ERROR: &[u8] = br#""error":{"code":"#;
    let after_start = reply.strip_prefix(START)?;
    let rest = match after_start.strip_prefix(ERROR) {
        Some(rest) => rest,
        None => after_start
            .strip_prefix(ID)?
            .strip_prefix(written_id)?
            .strip_prefix(b",")?
            .strip_prefix(ERROR)?,
    };
    let end = rest
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'-'))
        .unwrap_or(rest.len());
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_read_right_after_the_id_and_never_inside_a_result() {
        let error = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"m"}}"#;
        assert_eq!(error_code(error, b"7"), Some(-32601));
        let no_id = br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"m"}}"#;
        assert_eq!(error_code(no_id, b"null"), Some(-32700));
        let result = br#"{"jsonrpc":"2.0","id":7,"result":{"error":{"code":-32601}}}"#;
        assert_eq!(error_code(result, b"7"), None);
        let other_id = br#"{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"m"}}"#;
        assert_eq!(error_code(other_id, b"7"), None);
    }
}
