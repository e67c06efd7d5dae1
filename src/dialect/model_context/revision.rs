//! The revisions of the Model Context Protocol this dialect speaks, and
//! what each one's shapes hold. A session's results, lists and
//! capabilities take the shapes of the version it negotiated
//! (docs/model-context.md §2): a client built against an older `schema.ts`
//! meets no member or content block there that its revision does not
//! define, and a content block it could not read is sent as one it can.

use std::borrow::Cow;

use crate::content::{Annotations, Content, ResourceContents};
use crate::prompt::PromptMessage;

/// A revision of the protocol, oldest first: a later one has every shape
/// of an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Revision {
    /// Served on stdio only (over HTTP it meant the retired HTTP+SSE
    /// transport).
    V2024_11_05,
    /// Adds audio blocks, tool annotations and the `completions`
    /// capability (and batches, which this revision alone allows).
    V2025_03_26,
    /// Adds `title` and `_meta` on listed items, output schemas with
    /// `structuredContent`, resource-link blocks, `_meta` on resource
    /// contents and `lastModified` in annotations.
    V2025_06_18,
    /// Adds icons on listed items.
    V2025_11_25,
    /// The stateless revision (`dialect::revision_2026`), which has no
    /// session; its shapes are 2025-11-25's.
    V2026_07_28,
}

impl Revision {
    /// The revision a session speaks before it negotiated one, and the one
    /// `initialize` offers when it cannot give the client's.
    pub(crate) const LATEST_SESSION: Self = Self::V2025_11_25;

    /// The version as `protocolVersion` writes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision a session negotiates when its client asks for
    /// `asked`: that one if it opens sessions over this transport, else
    /// [`Revision::LATEST_SESSION`].
    pub(crate) fn negotiate(asked: &str, over_http: bool) -> Self {
        Self::of_session(asked)
            .filter(|r| !over_http || r.is_served_over_http())
            .unwrap_or(Self::LATEST_SESSION)
    }

    /// Whether a session of this revision opens over HTTP: all but
    /// 2024-11-05, which there meant the retired HTTP+SSE transport.
    pub(crate) fn is_served_over_http(self) -> bool {
        self > Self::V2024_11_05
    }

    /// The revision of a session's negotiated `version`, if it is one
    /// that opens sessions (on some transport).
    pub(crate) fn of_session(version: &str) -> Option<Self> {
        [
            Self::V2025_11_25,
            Self::V2025_06_18,
            Self::V2025_03_26,
            Self::V2024_11_05,
        ]
        .into_iter()
        .find(|r| r.as_str() == version)
    }

    /// Whether this revision has `structuredContent` (and so lists output
    /// schemas), `title`, `_meta` on items and resource-link blocks.
    pub(crate) fn has_structured_content(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// Whether listed items carry icons.
    pub(crate) fn has_icons(self) -> bool {
        self >= Self::V2025_11_25
    }

    /// Whether tools carry annotations and the server declares
    /// `completions`.
    pub(crate) fn has_tool_annotations(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// Whether content may be audio.
    fn has_audio(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// `blocks` as this revision has them: as they are from 2025-06-18 on.
    /// Before it, a resource link is a text block holding the link's JSON
    /// (the model still reads where it points), annotations lose
    /// `lastModified` and embedded contents their `_meta`; before
    /// 2025-03-26, an audio block is a text block saying it was left out.
    pub(crate) fn blocks(self, blocks: &[Content]) -> Cow<'_, [Content]> {
        if self.has_structured_content() {
            return Cow::Borrowed(blocks);
        }
        Cow::Owned(blocks.iter().map(|block| self.block(block)).collect())
    }

    /// A prompt's messages as this revision has them (their blocks as
    /// [`Revision::blocks`] makes them).
    pub(crate) fn messages(self, messages: &[PromptMessage]) -> Cow<'_, [PromptMessage]> {
        if self.has_structured_content() {
            return Cow::Borrowed(messages);
        }
        Cow::Owned(
            messages
                .iter()
                .map(|m| PromptMessage::new(m.role, self.block(&m.content)))
                .collect(),
        )
    }

    /// A resource's contents as this revision has them: no `_meta` before
    /// 2025-06-18.
    pub(crate) fn contents(self, contents: &ResourceContents) -> Cow<'_, ResourceContents> {
        if self.has_structured_content() || contents.meta.is_none() {
            return Cow::Borrowed(contents);
        }
        Cow::Owned(ResourceContents {
            meta: None,
            ..contents.clone()
        })
    }

    /// One block as this revision, older than 2025-06-18, has it.
    fn block(self, block: &Content) -> Content {
        let annotations = |a: &Option<Annotations>| {
            a.as_ref().map(|a| Annotations {
                last_modified: None,
                ..a.clone()
            })
        };
        match block {
            Content::Text {
                text,
                annotations: a,
            } => Content::Text {
                text: text.clone(),
                annotations: annotations(a),
            },
            Content::Image {
                data,
                mime_type,
                annotations: a,
            } => Content::Image {
                data: data.clone(),
                mime_type: mime_type.clone(),
                annotations: annotations(a),
            },
            Content::Audio {
                mime_type,
                annotations: a,
                ..
            } if !self.has_audio() => Content::Text {
                text: format!(
                    "[an audio block ({mime_type}) was left out: protocol version {} has no audio content]",
                    self.as_str()
                ),
                annotations: annotations(a),
            },
            Content::Audio {
                data,
                mime_type,
                annotations: a,
            } => Content::Audio {
                data: data.clone(),
                mime_type: mime_type.clone(),
                annotations: annotations(a),
            },
            Content::Resource {
                resource,
                annotations: a,
            } => Content::Resource {
                resource: self.contents(resource).into_owned(),
                annotations: annotations(a),
            },
            Content::ResourceLink(link) => Content::Text {
                // (A link always serialises: its members are strings and
                // numbers.)
                text: serde_json::to_string(block).unwrap_or_else(|_| link.uri.clone()),
                annotations: annotations(&link.annotations),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::ResourceLink;
    use serde_json::{Value, json};

    fn wire(blocks: &[Content]) -> Value {
        serde_json::to_value(blocks).unwrap()
    }

    #[test]
    fn a_session_negotiates_the_version_it_asks_for_when_its_transport_opens_it() {
        assert_eq!(
            Revision::negotiate("2025-06-18", true),
            Revision::V2025_06_18
        );
        assert_eq!(
            Revision::negotiate("2024-11-05", false),
            Revision::V2024_11_05
        );
        // Over HTTP 2024-11-05 was another transport; 2026-07-28 has no
        // sessions; an unknown version gets the latest.
        for asked in ["2024-11-05", "2026-07-28", "1999-01-01", ""] {
            assert_eq!(Revision::negotiate(asked, true), Revision::LATEST_SESSION);
        }
        for r in [
            Revision::V2024_11_05,
            Revision::V2025_03_26,
            Revision::V2025_06_18,
            Revision::V2025_11_25,
        ] {
            assert_eq!(Revision::of_session(r.as_str()), Some(r));
            #[cfg(feature = "http")]
            assert_eq!(
                super::super::supported_over_http(r.as_str()),
                r.is_served_over_http()
            );
        }
        #[cfg(feature = "http")]
        assert!(!super::super::supported_over_http("2026-07-28"));
    }

    #[test]
    fn from_2025_06_18_on_blocks_go_as_they_are() {
        let blocks = [Content::resource_link(ResourceLink::new("file:///a", "a"))];
        for r in [
            Revision::V2025_06_18,
            Revision::V2025_11_25,
            Revision::V2026_07_28,
        ] {
            assert!(matches!(r.blocks(&blocks), Cow::Borrowed(_)));
        }
    }

    #[test]
    fn before_2025_06_18_a_resource_link_is_a_text_block_holding_the_link() {
        let annotations = Annotations {
            priority: Some(0.5),
            last_modified: Some("2025-01-12T15:00:58Z".into()),
            ..Annotations::default()
        };
        let link = Content::resource_link(ResourceLink::new("file:///a.txt", "a"))
            .with_annotations(annotations);
        for r in [Revision::V2024_11_05, Revision::V2025_03_26] {
            assert_eq!(
                wire(&r.blocks(std::slice::from_ref(&link))),
                json!([{
                    "type": "text",
                    "text": r#"{"type":"resource_link","uri":"file:///a.txt","name":"a","annotations":{"priority":0.5,"lastModified":"2025-01-12T15:00:58Z"}}"#,
                    "annotations": {"priority": 0.5},
                }])
            );
        }
    }

    #[test]
    fn audio_is_a_block_from_2025_03_26_on_and_a_note_before() {
        let audio = [Content::audio(b"RIFF", "audio/wav")];
        assert_eq!(
            wire(&Revision::V2025_03_26.blocks(&audio)),
            json!([{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}])
        );
        assert_eq!(
            wire(&Revision::V2024_11_05.blocks(&audio)),
            json!([{
                "type": "text",
                "text": "[an audio block (audio/wav) was left out: protocol version 2024-11-05 has no audio content]",
            }])
        );
    }

    #[test]
    fn before_2025_06_18_contents_have_no_meta() {
        let mut meta = serde_json::Map::new();
        meta.insert("ui".into(), json!({"prefersBorder": true}));
        let contents = ResourceContents::text("ui://a", "text/html", "<p>").with_meta(meta);
        let embedded = [Content::resource(contents.clone())];
        let shaped = Revision::V2025_03_26.blocks(&embedded);
        assert_eq!(
            wire(&shaped),
            json!([{"type": "resource", "resource": {"uri": "ui://a", "mimeType": "text/html", "text": "<p>"}}])
        );
        assert!(Revision::V2025_03_26.contents(&contents).meta.is_none());
        assert!(Revision::V2025_06_18.contents(&contents).meta.is_some());
    }

    #[test]
    fn before_2025_06_18_a_prompt_message_links_by_text() {
        let messages = [PromptMessage::new(
            crate::content::MessageRole::User,
            Content::resource_link(ResourceLink::new("file:///a", "a")),
        )];
        let shaped = Revision::V2025_03_26.messages(&messages);
        assert!(
            matches!(&shaped[0].content, Content::Text { text, .. } if text.contains("file:///a"))
        );
        assert!(matches!(
            Revision::V2025_11_25.messages(&messages),
            Cow::Borrowed(_)
        ));
    }
}
