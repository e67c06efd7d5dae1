//! A JSON document read in place for schema checks: one flat vector of
//! entries whose strings borrow the text, instead of a `serde_json::Value`
//! tree (an allocation per string, per object and per array, and as many
//! frees). A tool's structured output is checked against its output schema
//! this way: the text is what the client reads, and nothing of the check
//! outlives it.
//!
//! It is read by the same `serde_json` reader as a `Value` (the same
//! numbers, the same recursion limit), so a document is valid here exactly
//! when its `Value` is. Two things make [`Document::read`] decline instead:
//! an object that names a key twice (a `Value` keeps the last; a schema
//! check would see both) and one with more than [`MAX_MEMBERS`] members
//! (whose lookups would be scans). The caller then checks a `Value`.

use std::borrow::Cow;
use std::fmt;

use jsonschema::json::{Array, Json, Node, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The widest object read in place.
pub(crate) const MAX_MEMBERS: usize = 32;

/// The representation, for `jsonschema::options_for::<Tape>()`.
pub(crate) struct Tape;

/// One node of a document, in document order.
#[derive(Debug, Clone, PartialEq)]
enum Entry<'t> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'t, str>),
    /// `len` elements follow; `end` is the index just past the last one.
    Array {
        len: usize,
        end: usize,
    },
    /// `len` members follow, each a `Key` and then its value; `end` is the
    /// index just past the last one.
    Object {
        len: usize,
        end: usize,
    },
    Key(Cow<'t, str>),
}

/// A document read in place.
#[derive(Debug)]
pub(crate) struct Document<'t> {
    entries: Vec<Entry<'t>>,
}

impl<'t> Document<'t> {
    /// Reads `text` (one JSON value). `Ok(None)`: read it as a `Value`
    /// instead (see the module docs); `Err`: what reading it as a `Value`
    /// would say.
    pub(crate) fn read(text: &'t str) -> Result<Option<Self>, serde_json::Error> {
        let mut builder = Builder {
            // A small document's entries in one allocation.
            entries: Vec::with_capacity(8),
            declined: false,
        };
        let mut reader = serde_json::Deserializer::from_str(text);
        Put(&mut builder).deserialize(&mut reader)?;
        reader.end()?;
        Ok((!builder.declined).then_some(Document {
            entries: builder.entries,
        }))
    }

    /// The document's root.
    pub(crate) fn root(&self) -> TapeNode<'_> {
        TapeNode {
            entries: &self.entries,
            at: 0,
        }
    }
}

struct Builder<'t> {
    entries: Vec<Entry<'t>>,
    declined: bool,
}

impl<'t> Builder<'t> {
    fn push(&mut self, entry: Entry<'t>) -> usize {
        self.entries.push(entry);
        self.entries.len() - 1
    }
}

/// Reads one value onto the builder.
struct Put<'b, 't>(&'b mut Builder<'t>);

impl<'de> DeserializeSeed<'de> for Put<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Put<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<(), E> {
        self.0.push(Entry::Bool(value));
        Ok(())
    }

    fn visit_i64<E>(self, value: i64) -> Result<(), E> {
        self.0.push(Entry::Number(value.into()));
        Ok(())
    }

    fn visit_u64<E>(self, value: u64) -> Result<(), E> {
        self.0.push(Entry::Number(value.into()));
        Ok(())
    }

    fn visit_f64<E>(self, value: f64) -> Result<(), E> {
        // As a `Value` reads it.
        self.0
            .push(Number::from_f64(value).map_or(Entry::Null, Entry::Number));
        Ok(())
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<(), E> {
        self.0.push(Entry::String(Cow::Borrowed(value)));
        Ok(())
    }

    fn visit_str<E>(self, value: &str) -> Result<(), E> {
        self.0.push(Entry::String(Cow::Owned(value.to_owned())));
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.push(Entry::Null);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let builder = self.0;
        let at = builder.push(Entry::Array { len: 0, end: 0 });
        let mut len = 0;
        while seq.next_element_seed(Put(&mut *builder))?.is_some() {
            len += 1;
        }
        builder.entries[at] = Entry::Array {
            len,
            end: builder.entries.len(),
        };
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let builder = self.0;
        let at = builder.push(Entry::Object { len: 0, end: 0 });
        let mut len = 0;
        while map.next_key_seed(PutKey(&mut *builder))?.is_some() {
            len += 1;
            let key = builder.entries.len() - 1;
            if len > MAX_MEMBERS || repeats(&builder.entries, at, key) {
                builder.declined = true;
            }
            map.next_value_seed(Put(&mut *builder))?;
        }
        builder.entries[at] = Entry::Object {
            len,
            end: builder.entries.len(),
        };
        Ok(())
    }
}

/// Whether the key at `key` repeats an earlier key of the object at `at`.
fn repeats(entries: &[Entry<'_>], at: usize, key: usize) -> bool {
    let Entry::Key(name) = &entries[key] else {
        return false;
    };
    let mut i = at + 1;
    while i < key {
        if matches!(&entries[i], Entry::Key(other) if other == name) {
            return true;
        }
        i = after(entries, i + 1);
    }
    false
}

/// Reads one object key onto the builder.
struct PutKey<'b, 't>(&'b mut Builder<'t>);

impl<'de> DeserializeSeed<'de> for PutKey<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for PutKey<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<(), E> {
        self.0.push(Entry::Key(Cow::Borrowed(value)));
        Ok(())
    }

    fn visit_str<E>(self, value: &str) -> Result<(), E> {
        self.0.push(Entry::Key(Cow::Owned(value.to_owned())));
        Ok(())
    }
}

/// The index just past the value at `i` (and everything inside it).
fn after(entries: &[Entry<'_>], i: usize) -> usize {
    match entries[i] {
        Entry::Array { end, .. } | Entry::Object { end, .. } => end,
        _ => i + 1,
    }
}

impl Json for Tape {
    type Node<'a> = TapeNode<'a>;
    type PreparedKey = String;
    // Lookups are scans of at most `MAX_MEMBERS` keys.
    const KEYS_PER_LOOKUP: usize = 8;
    type StringBuffer = ();

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>(_: &mut (), string: &str, f: impl FnOnce(TapeNode<'_>) -> T) -> T {
        let entries = [Entry::String(Cow::Borrowed(string))];
        f(TapeNode {
            entries: &entries,
            at: 0,
        })
    }
}

/// One value of a [`Document`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TapeNode<'a> {
    entries: &'a [Entry<'a>],
    at: usize,
}

impl<'a> TapeNode<'a> {
    fn entry(&self) -> &'a Entry<'a> {
        &self.entries[self.at]
    }

    fn at(&self, at: usize) -> Self {
        Self {
            entries: self.entries,
            at,
        }
    }
}

impl<'a> Node<'a, Tape> for TapeNode<'a> {
    type Object = TapeObject<'a>;
    type Array = TapeArray<'a>;
    type Number = &'a Number;

    fn as_object(&self) -> Option<TapeObject<'a>> {
        match *self.entry() {
            Entry::Object { len, end } => Some(TapeObject {
                node: *self,
                len,
                end,
            }),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<TapeArray<'a>> {
        match *self.entry() {
            Entry::Array { len, end } => Some(TapeArray {
                node: *self,
                len,
                end,
            }),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self.entry() {
            Entry::String(string) => Some(Cow::Borrowed(string)),
            _ => None,
        }
    }

    fn as_number(&self) -> Option<&'a Number> {
        match self.entry() {
            Entry::Number(number) => Some(number),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.entry() {
            Entry::Bool(value) => Some(*value),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.entry(), Entry::Null)
    }

    fn json_type(&self) -> JsonType {
        match self.entry() {
            Entry::Null => JsonType::Null,
            Entry::Bool(_) => JsonType::Boolean,
            Entry::Number(_) => JsonType::Number,
            Entry::String(_) | Entry::Key(_) => JsonType::String,
            Entry::Array { .. } => JsonType::Array,
            Entry::Object { .. } => JsonType::Object,
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(value_of(self.entries, self.at))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(std::ptr::from_ref(self.entry()) as usize))
    }
}

/// The `Value` of the entry at `at` (for the cold paths of a check).
fn value_of(entries: &[Entry<'_>], at: usize) -> Value {
    match &entries[at] {
        Entry::Null => Value::Null,
        Entry::Bool(value) => Value::Bool(*value),
        Entry::Number(number) => Value::Number(number.clone()),
        Entry::String(string) | Entry::Key(string) => Value::String(string.to_string()),
        Entry::Array { end, .. } => {
            let mut items = Vec::new();
            let mut i = at + 1;
            while i < *end {
                items.push(value_of(entries, i));
                i = after(entries, i);
            }
            Value::Array(items)
        }
        Entry::Object { end, .. } => {
            let mut members = Map::new();
            let mut i = at + 1;
            while i < *end {
                if let Entry::Key(key) = &entries[i] {
                    members.insert(key.to_string(), value_of(entries, i + 1));
                }
                i = after(entries, i + 1);
            }
            Value::Object(members)
        }
    }
}

/// An object of a [`Document`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TapeObject<'a> {
    node: TapeNode<'a>,
    len: usize,
    end: usize,
}

/// The members of a [`TapeObject`], in document order.
pub(crate) struct Members<'a> {
    node: TapeNode<'a>,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, TapeNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let entries = self.node.entries;
        while self.next < self.end {
            let key = self.next;
            self.next = after(entries, key + 1);
            if let Entry::Key(name) = &entries[key] {
                return Some((name, self.node.at(key + 1)));
            }
        }
        None
    }
}

impl<'a> Object<'a, Tape> for TapeObject<'a> {
    type Node = TapeNode<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, key: &String) -> Option<TapeNode<'a>> {
        self.members()
            .find_map(|(name, value)| (name == key).then_some(value))
    }

    fn members(&self) -> Members<'a> {
        Members {
            node: self.node,
            next: self.node.at + 1,
            end: self.end,
        }
    }
}

/// An array of a [`Document`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TapeArray<'a> {
    node: TapeNode<'a>,
    len: usize,
    end: usize,
}

/// The elements of a [`TapeArray`].
pub(crate) struct Elements<'a> {
    node: TapeNode<'a>,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = TapeNode<'a>;

    fn next(&mut self) -> Option<TapeNode<'a>> {
        (self.next < self.end).then(|| {
            let element = self.node.at(self.next);
            self.next = after(self.node.entries, self.next);
            element
        })
    }
}

impl<'a> Array<'a, Tape> for TapeArray<'a> {
    type Node = TapeNode<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn elements(&self) -> Elements<'a> {
        Elements {
            node: self.node,
            next: self.node.at + 1,
            end: self.end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(text: &str) -> Value {
        let document = Document::read(text).unwrap().expect("read in place");
        document.root().to_value().into_owned()
    }

    /// A document read in place holds what its `Value` holds.
    #[test]
    fn a_document_holds_what_its_value_holds() {
        for text in [
            r#"{"a":[1,-2,3.5,"x\"y",true,null,{"b":{}}],"c":"é","d":[],"e":18446744073709551615}"#,
            r#"[[[]],{},"",0]"#,
            r#""just a string""#,
            "12",
            " null ",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(round_trip(text), value, "{text}");
        }
    }

    /// Lookups and walks see each member once, nested values skipped whole.
    #[test]
    fn members_and_elements_skip_nested_values() {
        let text = r#"{"a":{"x":[1,{"y":2}]},"b":[[1],[2,3]],"c":3}"#;
        let document = Document::read(text).unwrap().unwrap();
        let root = document.root().as_object().unwrap();
        let names: Vec<&str> = root.members().map(|(name, _)| name).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(root.len(), 3);
        let b = root.get(&"b".to_owned()).unwrap().as_array().unwrap();
        let lens: Vec<usize> = b.elements().map(|e| e.as_array().unwrap().len()).collect();
        assert_eq!(lens, [1, 2]);
        let c = root.get(&"c".to_owned()).unwrap();
        assert_eq!(c.as_number().and_then(Number::as_u64), Some(3));
        assert!(root.get(&"x".to_owned()).is_none());
    }

    /// A repeated key or a very wide object is left to a `Value`; bad JSON
    /// fails as reading a `Value` fails.
    #[test]
    fn repeated_keys_and_wide_objects_decline_and_errors_match() {
        assert!(
            Document::read(r#"{"a":1,"b":{"a":2},"a":3}"#)
                .unwrap()
                .is_none()
        );
        let wide: serde_json::Map<String, Value> = (0..=MAX_MEMBERS)
            .map(|i| (format!("k{i}"), json!(i)))
            .collect();
        let wide = Value::Object(wide).to_string();
        assert!(Document::read(&wide).unwrap().is_none());
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        for bad in ["{\"a\":", "[1,]", "1 2", deep.as_str()] {
            let ours = Document::read(bad).unwrap_err().to_string();
            let theirs = serde_json::from_str::<Value>(bad).unwrap_err().to_string();
            assert_eq!(ours, theirs, "{bad}");
        }
    }

    /// A schema check in place agrees with one of the `Value`.
    #[test]
    fn checks_in_place_agree_with_checks_of_values() {
        let schema = json!({"type": "object", "required": ["n"], "additionalProperties": false,
            "properties": {"n": {"type": "integer", "maximum": 10},
                           "s": {"type": "string", "maxLength": 3, "pattern": "^a"},
                           "l": {"type": "array", "items": {"enum": [1, "x"]}, "uniqueItems": true}}});
        let in_place = jsonschema::options_for::<Tape>().build(&schema).unwrap();
        let of_values = jsonschema::validator_for(&schema).unwrap();
        for text in [
            r#"{"n":1}"#,
            r#"{"n":11}"#,
            r#"{"n":1.0}"#,
            r#"{"n":1.5}"#,
            r#"{"s":"a"}"#,
            r#"{"n":1,"s":"abcd"}"#,
            r#"{"n":1,"s":"b"}"#,
            r#"{"n":1,"l":[1,"x"]}"#,
            r#"{"n":1,"l":[1,1]}"#,
            r#"{"n":1,"l":[2]}"#,
            r#"{"n":1,"z":0}"#,
            r#"[]"#,
        ] {
            let document = Document::read(text).unwrap().unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                in_place.is_valid(document.root()),
                of_values.is_valid(&value),
                "{text}"
            );
        }
    }
}
