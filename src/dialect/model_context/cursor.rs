//! Pagination cursors: opaque to the client, checked by the server. A
//! cursor names a list and a page of it; anything else — a cursor of
//! another list, a page past the end, garbage — is `-32602`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The cursor of page `page` (from 1) of list `list`.
pub(super) fn encode(list: &str, page: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("{list}:{page}"))
}

/// The page a cursor names in `list`, which has `pages` pages.
pub(super) fn decode(cursor: &str, list: &str, pages: usize) -> Option<usize> {
    let text = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = std::str::from_utf8(&text).ok()?;
    let (named, page) = text.split_once(':')?;
    let page: usize = page.parse().ok()?;
    (named == list && page >= 1 && page < pages).then_some(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        let c = encode("tools", 2);
        assert_eq!(decode(&c, "tools", 3), Some(2));
        assert_eq!(decode(&c, "prompts", 3), None, "another list");
        assert_eq!(decode(&c, "tools", 2), None, "past the end");
        assert_eq!(
            decode(&encode("tools", 0), "tools", 3),
            None,
            "page 0 is no cursor"
        );
        assert_eq!(decode("garbage!", "tools", 3), None);
        assert_eq!(decode("", "tools", 3), None);
    }
}
