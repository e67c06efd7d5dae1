//! A JSON document read in place for schema checks: one flat vector of
//! entries whose strings borrow the text, instead of a `serde_json::Value`
//! tree (an allocation per string, per object and per array, and as many
//! frees). A tool's structured output is checked against its output schema
//! this way: the text is what the client reads, and nothing of the check
//! outlives it.
//!
//! Only text that was read once already is read here — arguments that
//! `serde_json` captured as raw JSON, output it wrote — so the reader
//! need not look for errors. It declines ([`Document::read`] gives `None`:
//! check a `Value` instead) what it would read differently from a `Value`
//! or slowly: a string with an escape, an object that names a key twice
//! (a `Value` keeps the last; a check would see both), an object of more
//! than [`MAX_MEMBERS`] members (its lookups would be scans), nesting past
//! [`MAX_DEPTH`]. Numbers are read by `serde_json` itself, so they are the
//! `Value`'s numbers.

use std::borrow::Cow;

use jsonschema::json::{Array, Json, Node, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde_json::{Map, Number, Value};

/// The widest object read in place.
pub(crate) const MAX_MEMBERS: usize = 32;
/// The deepest nesting read in place (`serde_json` reads 128 levels).
pub(crate) const MAX_DEPTH: usize = 100;

/// The representation, for `jsonschema::options_for::<Tape>()`.
pub(crate) struct Tape;

/// One node of a document, in document order.
#[derive(Debug, Clone, PartialEq)]
enum Entry<'t> {
    Null,
    Bool(bool),
    Number(Number),
    String(&'t str),
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
    Key(&'t str),
}

/// A document read in place.
#[derive(Debug)]
pub(crate) struct Document<'t> {
    entries: Vec<Entry<'t>>,
}

impl<'t> Document<'t> {
    /// Reads `text`, one JSON value read once already (see the module
    /// docs); `None`: check it as a `Value` instead.
    pub(crate) fn read(text: &'t str) -> Option<Self> {
        let mut reader = Reader {
            text,
            at: 0,
            // A small document's entries in one allocation.
            entries: Vec::with_capacity(8),
        };
        reader.value(0)?;
        reader.blank();
        (reader.at == text.len()).then_some(Document {
            entries: reader.entries,
        })
    }

    /// The document's root.
    pub(crate) fn root(&self) -> TapeNode<'_> {
        TapeNode {
            entries: &self.entries,
            at: 0,
        }
    }
}

/// Reads valid JSON text into entries.
struct Reader<'t> {
    text: &'t str,
    at: usize,
    entries: Vec<Entry<'t>>,
}

impl<'t> Reader<'t> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn blank(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Steps over `byte` (after blanks).
    fn eat(&mut self, byte: u8) -> Option<()> {
        self.blank();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn push(&mut self, entry: Entry<'t>) -> usize {
        self.entries.push(entry);
        self.entries.len() - 1
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        self.blank();
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                let string = self.string()?;
                self.push(Entry::String(string));
                Some(())
            }
            b't' => self.word("true", Entry::Bool(true)),
            b'f' => self.word("false", Entry::Bool(false)),
            b'n' => self.word("null", Entry::Null),
            _ => self.number(),
        }
    }

    fn word(&mut self, word: &str, entry: Entry<'t>) -> Option<()> {
        self.text[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            self.push(entry);
        })
    }

    /// A string without escapes, its quotes stepped over.
    fn string(&mut self) -> Option<&'t str> {
        let start = self.at + 1;
        let rest = self.text.as_bytes().get(start..)?;
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[len] != b'"' {
            return None; // an escape
        }
        self.at = start + len + 1;
        self.text.get(start..start + len)
    }

    fn number(&mut self) -> Option<()> {
        let start = self.at;
        let bytes = self.text.as_bytes();
        while bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        {
            self.at += 1;
        }
        let digits = self.text.get(start..self.at)?;
        // Digits alone that fit: what `serde_json` reads them as. Anything
        // else it reads itself.
        let number = match digits.parse::<u64>() {
            Ok(n) if digits.bytes().all(|b| b.is_ascii_digit()) => Number::from(n),
            _ => serde_json::from_str(digits).ok()?,
        };
        self.push(Entry::Number(number));
        Some(())
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let at = self.push(Entry::Array { len: 0, end: 0 });
        self.at += 1;
        self.blank();
        let mut len = 0;
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            loop {
                self.value(depth)?;
                len += 1;
                self.blank();
                match self.peek()? {
                    b',' => self.at += 1,
                    b']' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.entries[at] = Entry::Array {
            len,
            end: self.entries.len(),
        };
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let at = self.push(Entry::Object { len: 0, end: 0 });
        self.at += 1;
        self.blank();
        let mut len = 0;
        if self.peek()? == b'}' {
            self.at += 1;
        } else {
            loop {
                self.blank();
                if self.peek()? != b'"' {
                    return None;
                }
                let name = self.string()?;
                len += 1;
                if len > MAX_MEMBERS || repeats(&self.entries, at, name) {
                    return None;
                }
                self.push(Entry::Key(name));
                self.eat(b':')?;
                self.value(depth)?;
                self.blank();
                match self.peek()? {
                    b',' => self.at += 1,
                    b'}' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.entries[at] = Entry::Object {
            len,
            end: self.entries.len(),
        };
        Some(())
    }
}

/// Whether `name` is a key the object at `at` already has.
fn repeats(entries: &[Entry<'_>], at: usize, name: &str) -> bool {
    let mut i = at + 1;
    while i < entries.len() {
        if matches!(entries[i], Entry::Key(other) if other == name) {
            return true;
        }
        i = after(entries, i + 1);
    }
    false
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
        let entries = [Entry::String(string)];
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
            Entry::String(string) => Some(Cow::Borrowed(*string)),
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
        Entry::String(string) | Entry::Key(string) => Value::String((*string).to_owned()),
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
                    members.insert((*key).to_owned(), value_of(entries, i + 1));
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
            if let Entry::Key(name) = entries[key] {
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
        let document = Document::read(text).expect("read in place");
        document.root().to_value().into_owned()
    }

    /// A document read in place holds what its `Value` holds.
    #[test]
    fn a_document_holds_what_its_value_holds() {
        for text in [
            r#"{"a":[1,-2,3.5,"x y",true,null,{"b":{}}],"c":"é","d":[],"e":18446744073709551615}"#,
            r#" { "a" : [ 1 , 2 ] , "b" : { } } "#,
            r#"[[[]],{},"",0,-0,1e3,18446744073709551616,-9223372036854775809,0.1]"#,
            r#""just a string""#,
            "12",
            " null ",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(round_trip(text), value, "{text}");
            let document = Document::read(text).unwrap();
            let numbers: Vec<&Number> = collect_numbers(document.root());
            let expected = expected_numbers(&value);
            assert_eq!(numbers.len(), expected.len());
            for (ours, theirs) in numbers.iter().zip(&expected) {
                assert_eq!(
                    (
                        ours.as_u64(),
                        ours.as_i64(),
                        ours.as_f64().map(f64::to_bits)
                    ),
                    (
                        theirs.as_u64(),
                        theirs.as_i64(),
                        theirs.as_f64().map(f64::to_bits)
                    ),
                    "{text}"
                );
            }
        }
    }

    fn collect_numbers(node: TapeNode<'_>) -> Vec<&Number> {
        let mut found = Vec::new();
        if let Some(number) = node.as_number() {
            found.push(number);
        }
        if let Some(array) = node.as_array() {
            array
                .elements()
                .for_each(|e| found.extend(collect_numbers(e)));
        }
        if let Some(object) = node.as_object() {
            object
                .members()
                .for_each(|(_, v)| found.extend(collect_numbers(v)));
        }
        found
    }

    fn expected_numbers(value: &Value) -> Vec<Number> {
        match value {
            Value::Number(n) => vec![n.clone()],
            Value::Array(items) => items.iter().flat_map(expected_numbers).collect(),
            // Members in document order: the test documents' keys are sorted.
            Value::Object(members) => members.values().flat_map(expected_numbers).collect(),
            _ => Vec::new(),
        }
    }

    /// Lookups and walks see each member once, nested values skipped whole.
    #[test]
    fn members_and_elements_skip_nested_values() {
        let text = r#"{"a":{"x":[1,{"y":2}]},"b":[[1],[2,3]],"c":3}"#;
        let document = Document::read(text).unwrap();
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

    /// What a `Value` would read differently, or what is slow to read in
    /// place, is declined: escapes, a repeated key, a wide object, deep
    /// nesting.
    #[test]
    fn escapes_repeated_keys_wide_and_deep_documents_are_declined() {
        let wide: serde_json::Map<String, Value> = (0..=MAX_MEMBERS)
            .map(|i| (format!("k{i}"), json!(i)))
            .collect();
        let wide = Value::Object(wide).to_string();
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        for text in [
            r#"{"a":"x\"y"}"#,
            r#"{"a\u0041":1}"#,
            r#"{"a":1,"b":{"a":2},"a":3}"#,
            wide.as_str(),
            deep.as_str(),
        ] {
            assert!(Document::read(text).is_none(), "{text}");
        }
        let shallow = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(Document::read(&shallow).is_some());
        assert!(Document::read(r#"{"a":1,"b":{"a":2}}"#).is_some());
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
            r#"{"n":1,"s":"ééé"}"#,
            r#"{"n":1,"s":"b"}"#,
            r#"{"n":1,"l":[1,"x"]}"#,
            r#"{"n":1,"l":[1,1]}"#,
            r#"{"n":1,"l":[2]}"#,
            r#"{"n":1,"z":0}"#,
            r#"[]"#,
        ] {
            let document = Document::read(text).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                in_place.is_valid(document.root()),
                of_values.is_valid(&value),
                "{text}"
            );
        }
    }
}
