//! A tool call's params, read with their envelope in one pass
//! (`jsonrpc::parse`): the tool it names, its arguments kept as text, and
//! the members a protocol keeps, each as text. Which requests are tool
//! calls, and which members are kept, is data a protocol gives
//! ([`CallTable`]): this layer names no method and no member of its own.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

pub(crate) use crate::call_form::{CallForm, CallTable, KEPT, KEPT_META};
use crate::fast::arguments::ArgumentsText;

/// A tool call's params, read by its [`CallForm`].
#[derive(Debug)]
pub(crate) struct ToolCall<'a> {
    /// The tool's name (or id), as the form's tool member holds it.
    pub(crate) tool: Cow<'a, str>,
    /// `arguments`: `None` when absent (or `null`, where the form allows it).
    pub(crate) arguments: Option<ArgumentsText<'a>>,
    /// The form's kept members, in its order (`None`: absent or `null`).
    pub(crate) kept: [Option<RawText<'a>>; KEPT],
    /// `_meta`'s kept members, in the forms' order; `None` when the params
    /// have no `_meta` (or it is `null`).
    pub(crate) meta: Option<[Option<RawText<'a>>; KEPT_META]>,
}

impl<'a> ToolCall<'a> {
    /// Params read by the hot path's own reader (`fast::plain_call`).
    pub(crate) fn plain(
        tool: &'a str,
        arguments: ArgumentsText<'a>,
        meta: Option<[Option<RawText<'a>>; KEPT_META]>,
    ) -> Self {
        Self {
            tool: Cow::Borrowed(tool),
            arguments: Some(arguments),
            kept: [None; KEPT],
            meta,
        }
    }

    /// `_meta`'s kept member `index` (in the forms' order).
    pub(crate) fn meta(&self, index: usize) -> Option<RawText<'a>> {
        self.meta.as_ref()?.get(index).copied().flatten()
    }

    /// The form's kept member `index`.
    pub(crate) fn kept(&self, index: usize) -> Option<RawText<'a>> {
        self.kept.get(index).copied().flatten()
    }
}

/// Reads `text`, a tool call's params (an object), by `form` and the
/// `_meta` members `meta` names. The errors are serde's (a missing or
/// repeated member, a value of the wrong type), for the dialect to word.
pub(crate) fn read_params<'a>(
    form: &'static CallForm,
    meta: &'static [&'static str],
    text: &'a str,
) -> Result<ToolCall<'a>, serde_json::Error> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let call = ParamsSeed { form, meta }.deserialize(&mut reader)?;
    reader.end()?;
    Ok(call)
}

/// Reads a tool call's params by its form (an object only: serde would
/// also read a struct from an array, by position).
#[derive(Clone, Copy)]
pub(crate) struct ParamsSeed {
    pub(crate) form: &'static CallForm,
    pub(crate) meta: &'static [&'static str],
}

impl<'de> DeserializeSeed<'de> for ParamsSeed {
    type Value = ToolCall<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed {
    type Value = ToolCall<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let form = self.form;
        let mut tool: Option<Cow<'de, str>> = None;
        let mut arguments: Option<Option<ArgumentsText<'de>>> = None;
        let mut meta: Option<Option<[Option<RawText<'de>>; KEPT_META]>> = None;
        let mut kept = [None; KEPT];
        let mut seen = [false; KEPT];
        while let Some(MemberName(key)) = map.next_key()? {
            if key == form.tool {
                if tool.is_some() {
                    return Err(A::Error::duplicate_field(form.tool));
                }
                tool = Some(map.next_value::<Borrowed<'de>>()?.0);
            } else if key == "arguments" {
                if arguments.is_some() {
                    return Err(A::Error::duplicate_field("arguments"));
                }
                let read = map.next_value::<Option<ArgumentsText<'de>>>()?;
                if form.object_arguments && !read.is_some_and(|t| t.get().starts_with('{')) {
                    return Err(A::Error::custom("arguments must be an object"));
                }
                arguments = Some(read);
            } else if key == "_meta" {
                if meta.is_some() {
                    return Err(A::Error::duplicate_field("_meta"));
                }
                meta = Some(map.next_value_seed(MetaSeed(self.meta))?);
            } else if let Some(i) = form.kept.iter().position(|k| *k == key) {
                keep(&mut map, &mut kept, &mut seen, i, &key)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(ToolCall {
            tool: tool.ok_or_else(|| A::Error::missing_field(form.tool))?,
            arguments: arguments.flatten(),
            kept,
            meta: meta.flatten(),
        })
    }
}

/// Reads kept member `i` (named `key`) as text into `kept`; a member
/// seen before is an error, as serde's derive reads one.
fn keep<'de, A: MapAccess<'de>>(
    map: &mut A,
    kept: &mut [Option<RawText<'de>>],
    seen: &mut [bool],
    i: usize,
    key: &str,
) -> Result<(), A::Error> {
    let (Some(slot), Some(seen)) = (kept.get_mut(i), seen.get_mut(i)) else {
        return Err(A::Error::custom("a kept member past the bound"));
    };
    if std::mem::replace(seen, true) {
        return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
    }
    *slot = map.next_value::<Option<RawText<'de>>>()?;
    Ok(())
}

/// `_meta`: `null`, or an object whose named members are kept as text.
struct MetaSeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for MetaSeed {
    type Value = Option<[Option<RawText<'de>>; KEPT_META]>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed {
    type Value = Option<[Option<RawText<'de>>; KEPT_META]>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = [None; KEPT_META];
        let mut seen = [false; KEPT_META];
        while let Some(MemberName(key)) = map.next_key()? {
            match self.0.iter().position(|k| *k == key) {
                Some(i) => keep(&mut map, &mut kept, &mut seen, i, &key)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(kept))
    }
}

/// A member's name, borrowed when it has no escapes.
pub(crate) struct MemberName<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for MemberName<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Borrowed::deserialize(deserializer).map(|b| Self(b.0))
    }
}

/// A string, borrowed when it has no escapes.
struct Borrowed<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Borrowed<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Borrowed<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Borrowed(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Borrowed(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Borrowed(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// A value's JSON text as written (what a borrowed `RawValue` holds): read
/// by serde, or by the plain reader, which checked it as serde would.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawText<'a>(&'a str);

impl<'a> RawText<'a> {
    /// Text the plain reader checked reads as a value.
    pub(crate) fn checked(text: &'a str) -> Self {
        Self(text)
    }

    /// The text.
    pub(crate) fn get(self) -> &'a str {
        self.0
    }

    /// The value, owned.
    pub(crate) fn to_raw_value(self) -> Option<Box<RawValue>> {
        RawValue::from_string(self.0.to_owned()).ok()
    }
}

impl std::fmt::Debug for RawText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(deserializer).map(|raw| Self(raw.get()))
    }
}
