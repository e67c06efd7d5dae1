//! A quick check of JSON text against the simple schemas most tools have
//! (typed tools' derived schemas among them), walked straight over text
//! that is already known to be valid JSON which reads as a value
//! (arguments a JSON reader captured and checked, output serde_json
//! wrote), with the crate's one JSON scanner ([`cursor`](super::cursor)): no `Value`
//! tree is built, and nothing is allocated on success.
//!
//! It only ever *admits*: when it says a text is valid, the full JSON
//! Schema validator (`validate.rs`) would say so too (a differential test
//! holds it to that). Anything it is not sure of — a keyword outside its
//! subset (the schema then gets no quick check at all), a number it cannot
//! compare exactly with a bound, nesting past serde_json's limit, anything
//! unexpected — is "not admitted", and the caller takes the full path,
//! which decides and words every error.
//!
//! The subset, in JSON Schema 2020-12 (the draft `jsonschema` picks for a
//! schema without `$schema`, and the one derived schemas name): `type`,
//! `properties`, `required`, `additionalProperties`, `items`, `enum` of
//! strings, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//! boolean schemas, `$ref` to the root's `$defs` (beside annotations only,
//! and not to a definition that holds itself: nested structs and unit
//! enums derive to these), and the annotations `title`, `description`,
//! `default`, `examples`, `$comment`, `deprecated`, `readOnly`,
//! `writeOnly` and a `format` that names a number width (which
//! `jsonschema` ignores).

use std::cmp::Ordering;

use serde_json::Value;

use super::cursor::{Cursor, RAW_VALUE_TOKEN, SERDE_JSON_DEPTH};

/// The only `$schema` a quick check accepts (or none).
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
/// Keywords that only annotate: they never make an instance invalid.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];
/// `format`s that name a number's width (schemars writes them); they are
/// not formats `jsonschema` knows, so it never checks them.
const WIDTH_FORMATS: &[&str] = &[
    "int8", "int16", "int32", "int64", "int", "uint8", "uint16", "uint32", "uint64", "uint",
    "float", "double",
];
/// The largest integer every `f64` holds exactly.
const EXACT_IN_F64: u128 = 1 << 53;

/// A schema's quick check: [`admits`](Self::admits) JSON text, or cannot say.
#[derive(Debug)]
pub(crate) struct QuickCheck {
    root: Node,
}

impl QuickCheck {
    /// The quick check of `schema`, or `None` when the schema uses
    /// anything outside the subset (its instances always take the full
    /// path).
    pub(crate) fn compile(schema: &Value) -> Option<Self> {
        let object = schema.as_object()?;
        if let Some(uri) = object.get("$schema")
            && uri.as_str() != Some(DRAFT_2020_12)
        {
            return None;
        }
        let defs = match object.get("$defs") {
            Some(defs) => Some(defs.as_object()?),
            None => None,
        };
        let mut compiling = Compiling {
            defs,
            expanding: Vec::new(),
        };
        Some(Self {
            root: Node::compile(schema, true, &mut compiling)?,
        })
    }

    /// Whether `text` (one JSON value) is certainly valid against the
    /// schema. `false` says nothing: the full validator decides.
    pub(crate) fn admits(&self, text: &str) -> bool {
        let mut walk = Walk {
            cursor: Cursor::new(text.as_bytes()),
        };
        walk.value(&self.root, 0).is_some() && walk.cursor.end().is_some()
    }
}

/// One (sub)schema.
#[derive(Debug)]
enum Node {
    /// `true`, `{}`, or only annotations: every value.
    Any,
    /// `false`: no value.
    Never,
    Checks(Box<Checks>),
}

/// Type bits.
const NULL: u8 = 1;
const BOOLEAN: u8 = 1 << 1;
const OBJECT: u8 = 1 << 2;
const ARRAY: u8 = 1 << 3;
const NUMBER: u8 = 1 << 4;
const INTEGER: u8 = 1 << 5;
const STRING: u8 = 1 << 6;
const EVERY_TYPE: u8 = NULL | BOOLEAN | OBJECT | ARRAY | NUMBER | INTEGER | STRING;

#[derive(Debug)]
struct Checks {
    /// The `type`s allowed (every one when there is no `type`).
    types: u8,
    /// Each property named in `properties` or `required`.
    keys: Vec<Member>,
    /// The bits of the required keys.
    required: u64,
    /// `additionalProperties` (`Any` when absent).
    additional: Node,
    /// `items` (`Any` when absent).
    items: Node,
    /// `enum`, when every member is a string.
    one_of_strings: Option<Vec<String>>,
    /// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`.
    bounds: Vec<Bound>,
}

/// A member of an object the schema describes: by name, its schema and
/// its bit if required.
#[derive(Debug)]
struct Member {
    name: String,
    /// Its schema in `properties`; `None` when only `required` names it
    /// (its value is then checked by `additionalProperties`).
    node: Option<Node>,
    /// Its bit in `Checks::required`, or 0.
    bit: u64,
}

#[derive(Debug, Clone, Copy)]
enum Limit {
    Integer(i128),
    Float(f64),
}

#[derive(Debug, Clone, Copy)]
enum Bound {
    Minimum(Limit),
    Maximum(Limit),
    ExclusiveMinimum(Limit),
    ExclusiveMaximum(Limit),
}

/// What compiling a schema needs beyond the (sub)schema at hand: the
/// root's `$defs`, and the definitions being expanded (a type that holds
/// itself gets no quick check).
struct Compiling<'s> {
    defs: Option<&'s serde_json::Map<String, Value>>,
    expanding: Vec<&'s str>,
}

impl Node {
    fn compile<'s>(schema: &'s Value, root: bool, compiling: &mut Compiling<'s>) -> Option<Self> {
        let object = match schema {
            Value::Bool(true) => return Some(Self::Any),
            Value::Bool(false) => return Some(Self::Never),
            Value::Object(object) => object,
            _ => return None,
        };
        let mut checks = Checks {
            types: EVERY_TYPE,
            keys: Vec::new(),
            required: 0,
            additional: Self::Any,
            items: Self::Any,
            one_of_strings: None,
            bounds: Vec::new(),
        };
        if let Some(reference) = object.get("$ref") {
            return Self::referenced(object, reference, compiling);
        }
        for (keyword, value) in object {
            match keyword.as_str() {
                "$schema" | "$defs" if root => {}
                k if ANNOTATIONS.contains(&k) => {}
                "format" if value.as_str().is_some_and(|f| WIDTH_FORMATS.contains(&f)) => {}
                "type" => checks.types = types(value)?,
                "properties" => {
                    for (name, schema) in value.as_object()? {
                        checks.key(name).node = Some(Self::compile(schema, false, compiling)?);
                    }
                }
                "required" => {
                    for name in value.as_array()? {
                        let name = name.as_str()?;
                        if checks.keys.iter().any(|k| k.name == name && k.bit != 0) {
                            continue;
                        }
                        // One bit each: past 64 required names, no quick check.
                        let bit = 1u64.checked_shl(checks.required.count_ones())?;
                        checks.key(name).bit = bit;
                        checks.required |= bit;
                    }
                }
                "additionalProperties" => {
                    checks.additional = Self::compile(value, false, compiling)?;
                }
                "items" => checks.items = Self::compile(value, false, compiling)?,
                "enum" => {
                    let members = value.as_array()?;
                    let strings: Option<Vec<String>> = members
                        .iter()
                        .map(|m| m.as_str().map(str::to_owned))
                        .collect();
                    checks.one_of_strings = Some(strings.filter(|s| !s.is_empty())?);
                }
                "minimum" => checks.bounds.push(Bound::Minimum(limit(value)?)),
                "maximum" => checks.bounds.push(Bound::Maximum(limit(value)?)),
                "exclusiveMinimum" => checks.bounds.push(Bound::ExclusiveMinimum(limit(value)?)),
                "exclusiveMaximum" => checks.bounds.push(Bound::ExclusiveMaximum(limit(value)?)),
                _ => return None,
            }
        }
        Some(if checks.constrains() {
            Self::Checks(Box::new(checks))
        } else {
            Self::Any
        })
    }
}

impl Node {
    /// `{"$ref": "#/$defs/Name"}` beside annotations only: the definition,
    /// compiled in its place.
    fn referenced<'s>(
        object: &'s serde_json::Map<String, Value>,
        reference: &'s Value,
        compiling: &mut Compiling<'s>,
    ) -> Option<Self> {
        let only_annotations = object
            .keys()
            .all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str()));
        let name = reference.as_str()?.strip_prefix("#/$defs/")?;
        // A name with pointer escapes or percent-encoding is left alone.
        if !only_annotations
            || name.contains(['~', '/', '%'])
            || compiling.expanding.contains(&name)
        {
            return None;
        }
        let definition = compiling.defs?.get(name)?;
        compiling.expanding.push(name);
        let node = Self::compile(definition, false, compiling);
        compiling.expanding.pop();
        node
    }
}

impl Checks {
    /// Whether any value can fail these checks.
    fn constrains(&self) -> bool {
        self.types != EVERY_TYPE
            || !self.keys.is_empty()
            || !matches!(self.additional, Node::Any)
            || !matches!(self.items, Node::Any)
            || self.one_of_strings.is_some()
            || !self.bounds.is_empty()
    }

    /// The key named `name`, added if new.
    // `at` is where the key was found, or where it was just pushed.
    #[allow(clippy::indexing_slicing)]
    fn key(&mut self, name: &str) -> &mut Member {
        let at = match self.keys.iter().position(|k| k.name == name) {
            Some(at) => at,
            None => {
                self.keys.push(Member {
                    name: name.to_owned(),
                    node: None,
                    bit: 0,
                });
                self.keys.len() - 1
            }
        };
        &mut self.keys[at]
    }

    /// An integer instance (an `i64` or `u64` as read).
    fn admits_integer(&self, value: i128) -> bool {
        self.types & (NUMBER | INTEGER) != 0
            && self.one_of_strings.is_none()
            && self.bounds.iter().all(|bound| bound.admits(value))
    }

    /// A float instance (a fraction, an exponent, `-0`, or an integer past
    /// 64 bits, as read).
    fn admits_float(&self, value: f64) -> bool {
        let integral = value.fract() == 0.0;
        (self.types & NUMBER != 0 || (self.types & INTEGER != 0 && integral))
            && self.one_of_strings.is_none()
            && self.bounds.iter().all(|bound| bound.admits_float(value))
    }

    fn admits_kind(&self, bit: u8) -> bool {
        self.types & bit != 0 && self.one_of_strings.is_none()
    }
}

impl Bound {
    fn parts(self) -> (Limit, fn(Ordering) -> bool) {
        match self {
            Self::Minimum(l) => (l, Ordering::is_ge),
            Self::Maximum(l) => (l, Ordering::is_le),
            Self::ExclusiveMinimum(l) => (l, Ordering::is_gt),
            Self::ExclusiveMaximum(l) => (l, Ordering::is_lt),
        }
    }

    fn admits(self, value: i128) -> bool {
        let (limit, holds) = self.parts();
        let order = match limit {
            Limit::Integer(limit) => Some(value.cmp(&limit)),
            // Compared as floats only where the integer is exact in one.
            Limit::Float(limit) if value.unsigned_abs() <= EXACT_IN_F64 => {
                #[allow(clippy::cast_precision_loss)]
                let value = value as f64;
                value.partial_cmp(&limit)
            }
            Limit::Float(_) => None,
        };
        order.is_some_and(holds)
    }

    fn admits_float(self, value: f64) -> bool {
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        let order = match self.parts().0 {
            Limit::Float(limit) => value.partial_cmp(&limit),
            // Each side exact in the other's form, or no answer.
            Limit::Integer(limit) if limit.unsigned_abs() <= EXACT_IN_F64 => {
                value.partial_cmp(&(limit as f64))
            }
            Limit::Integer(limit) if value.fract() == 0.0 && value.abs() <= EXACT_IN_F64 as f64 => {
                Some((value as i128).cmp(&limit))
            }
            Limit::Integer(_) => None,
        };
        order.is_some_and(self.parts().1)
    }
}

fn types(value: &Value) -> Option<u8> {
    fn bit(name: &Value) -> Option<u8> {
        Some(match name.as_str()? {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "object" => OBJECT,
            "array" => ARRAY,
            "number" => NUMBER,
            "integer" => INTEGER,
            "string" => STRING,
            _ => return None,
        })
    }
    match value {
        Value::Array(names) if !names.is_empty() => names
            .iter()
            .try_fold(0, |bits, name| Some(bits | bit(name)?)),
        Value::Array(_) => None,
        name => bit(name),
    }
}

fn limit(value: &Value) -> Option<Limit> {
    let Value::Number(n) = value else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        Some(Limit::Integer(i.into()))
    } else if let Some(u) = n.as_u64() {
        Some(Limit::Integer(u.into()))
    } else {
        n.as_f64().filter(|f| f.is_finite()).map(Limit::Float)
    }
}

/// How deep a walk goes before it gives up: as deep as serde_json reads
/// from the root of the text checked.
#[allow(clippy::cast_possible_truncation)]
const MAX_DEPTH: u32 = SERDE_JSON_DEPTH as u32;

/// A walk over JSON text that is known to be valid: arguments as a JSON
/// reader captured them, output as serde_json wrote it. Strings are
/// skipped by a search for their closing quote, not read; the few things
/// whose exact reading matters — an escaped name, an escaped `enum`
/// member, a number that is not a plain 64-bit integer — are read by
/// serde_json, as the full path reads them. `None` is "not admitted"
/// (also for anything unexpected: the walk never panics).
struct Walk<'t> {
    cursor: Cursor<'t>,
}

/// A number as serde_json reads it into a `Value`.
enum Read {
    Integer(i128),
    Float(f64),
}

impl<'t> Walk<'t> {
    /// One value that `node` admits.
    fn value(&mut self, node: &Node, depth: u32) -> Option<()> {
        match node {
            Node::Any => self.skip(depth),
            Node::Never => None,
            Node::Checks(checks) => self.checked(checks, depth),
        }
    }

    fn checked(&mut self, checks: &Checks, depth: u32) -> Option<()> {
        let admitted = match self.cursor.peek()? {
            b'{' => return self.object(checks, depth),
            b'[' => return self.array(checks, depth),
            b'"' => {
                let string = self.cursor.valid_string()?;
                checks.types & STRING != 0
                    && match &checks.one_of_strings {
                        None => true,
                        Some(members) => {
                            let value = string.value()?;
                            members.iter().any(|m| m.as_bytes() == &*value)
                        }
                    }
            }
            b't' => self.cursor.word(b"true").is_some() && checks.admits_kind(BOOLEAN),
            b'f' => self.cursor.word(b"false").is_some() && checks.admits_kind(BOOLEAN),
            b'n' => self.cursor.word(b"null").is_some() && checks.admits_kind(NULL),
            _ => match self.number()? {
                Read::Integer(value) => checks.admits_integer(value),
                Read::Float(value) => checks.admits_float(value),
            },
        };
        admitted.then_some(())
    }

    fn object(&mut self, checks: &Checks, depth: u32) -> Option<()> {
        let depth = deeper(depth)?;
        if !checks.admits_kind(OBJECT) {
            return None;
        }
        self.cursor.at += 1;
        let mut seen = 0u64;
        if self.cursor.eat(b'}').is_none() {
            let mut first = true;
            loop {
                if self.cursor.peek()? != b'"' {
                    return None;
                }
                let string = self.cursor.valid_string()?;
                let name = string.value()?;
                // serde_json reads an object named so first as another
                // value: the full validator decides on that one.
                if std::mem::take(&mut first) && *name == *RAW_VALUE_TOKEN.as_bytes() {
                    return None;
                }
                let key = checks.keys.iter().find(|k| k.name.as_bytes() == &*name);
                self.cursor.eat(b':')?;
                let node = match key {
                    Some(key) => {
                        seen |= key.bit;
                        key.node.as_ref().unwrap_or(&checks.additional)
                    }
                    None => &checks.additional,
                };
                self.value(node, depth)?;
                if self.cursor.closes(b'}')? {
                    break;
                }
            }
        }
        (seen & checks.required == checks.required).then_some(())
    }

    fn array(&mut self, checks: &Checks, depth: u32) -> Option<()> {
        if !checks.admits_kind(ARRAY) {
            return None;
        }
        self.items(&checks.items, deeper(depth)?)
    }

    /// `[...]`, each item admitted by `node`.
    fn items(&mut self, node: &Node, depth: u32) -> Option<()> {
        self.cursor.at += 1;
        if self.cursor.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.value(node, depth)?;
            if self.cursor.closes(b']')? {
                return Some(());
            }
        }
    }

    /// Any one value (of valid text: no checks but the nesting).
    fn skip(&mut self, depth: u32) -> Option<()> {
        self.cursor
            .skip_value::<false>(depth as usize, MAX_DEPTH as usize)
    }

    /// A number: a plain integer read here, anything else by serde_json.
    fn number(&mut self) -> Option<Read> {
        let token = self.cursor.number()?;
        let (negative, digits) = match token.split_first()? {
            (b'-', digits) => (true, digits),
            _ => (false, token),
        };
        if !digits.is_empty() && digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit) {
            let magnitude = digits
                .iter()
                .fold(0i128, |n, d| n * 10 + i128::from(d - b'0'));
            // serde_json reads `-0` as a float (-0.0), which admits as 0 does.
            return Some(Read::Integer(if negative { -magnitude } else { magnitude }));
        }
        let number: serde_json::Number = serde_json::from_slice(token).ok()?;
        if let Some(i) = number.as_i64() {
            Some(Read::Integer(i.into()))
        } else if let Some(u) = number.as_u64() {
            Some(Read::Integer(u.into()))
        } else {
            number.as_f64().map(Read::Float)
        }
    }
}

fn deeper(depth: u32) -> Option<u32> {
    (depth < MAX_DEPTH).then_some(depth + 1)
}

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod differential;
