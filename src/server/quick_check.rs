//! A quick check of JSON text against the simple schemas most tools have
//! (typed tools' derived schemas among them), walked straight over the
//! text: no `Value` tree is built, and nothing is allocated on success.
//!
//! It only ever *admits*: when it says a text is valid, the full JSON
//! Schema validator (`validate.rs`) would say so too. Anything it is not
//! sure of — a keyword outside its subset (the schema then gets no quick
//! check at all), a number it cannot compare exactly with a bound, a
//! failure of any kind — is "not admitted", and the caller takes the full path, which
//! decides and words the error exactly as it always has.
//!
//! The subset, in JSON Schema 2020-12 (the draft `jsonschema` picks for a
//! schema without `$schema`, and the one derived schemas name): `type`,
//! `properties`, `required`, `additionalProperties`, `items`, `enum` of
//! strings, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//! boolean schemas, and the annotations `title`, `description`, `default`,
//! `examples`, `$comment`, `deprecated`, `readOnly`, `writeOnly` and a
//! `format` that names a number width (which `jsonschema` ignores).

use std::cmp::Ordering;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

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
        Some(Self {
            root: Node::compile(schema, true)?,
        })
    }

    /// Whether `text` (one JSON value) is certainly valid against the
    /// schema. `false` says nothing: the full validator decides.
    pub(crate) fn admits(&self, text: &str) -> bool {
        let mut reader = serde_json::Deserializer::from_str(text);
        (&self.root).deserialize(&mut reader).is_ok() && reader.end().is_ok()
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
    keys: Vec<Key>,
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

#[derive(Debug)]
struct Key {
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

impl Node {
    fn compile(schema: &Value, root: bool) -> Option<Self> {
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
        for (keyword, value) in object {
            match keyword.as_str() {
                "$schema" if root => {}
                k if ANNOTATIONS.contains(&k) => {}
                "format" if value.as_str().is_some_and(|f| WIDTH_FORMATS.contains(&f)) => {}
                "type" => checks.types = types(value)?,
                "properties" => {
                    for (name, schema) in value.as_object()? {
                        checks.key(name).node = Some(Self::compile(schema, false)?);
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
                "additionalProperties" => checks.additional = Self::compile(value, false)?,
                "items" => checks.items = Self::compile(value, false)?,
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
    fn key(&mut self, name: &str) -> &mut Key {
        let at = match self.keys.iter().position(|k| k.name == name) {
            Some(at) => at,
            None => {
                self.keys.push(Key {
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

/// Any refusal: the walk stops, and the full validator decides.
fn refused<E: de::Error>() -> E {
    E::custom("not admitted by the quick check")
}

impl<'de> DeserializeSeed<'de> for &Node {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, reader: D) -> Result<(), D::Error> {
        match self {
            Node::Any => IgnoredAny::deserialize(reader).map(drop),
            Node::Never => Err(refused()),
            Node::Checks(checks) => reader.deserialize_any(&**checks),
        }
    }
}

impl<'de> Visitor<'de> for &Checks {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value the schema admits")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.admits_kind(BOOLEAN).then_some(()).ok_or_else(refused)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.admits_integer(value.into())
            .then_some(())
            .ok_or_else(refused)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        self.admits_integer(value.into())
            .then_some(())
            .ok_or_else(refused)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        self.admits_float(value).then_some(()).ok_or_else(refused)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        let admitted = self.types & STRING != 0
            && self
                .one_of_strings
                .as_ref()
                .is_none_or(|members| members.iter().any(|m| m == value));
        admitted.then_some(()).ok_or_else(refused)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.admits_kind(NULL).then_some(()).ok_or_else(refused)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        if !self.admits_kind(ARRAY) {
            return Err(refused());
        }
        while items.next_element_seed(&self.items)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        if !self.admits_kind(OBJECT) {
            return Err(refused());
        }
        let mut seen = 0u64;
        while let Some(key) = members.next_key_seed(KeyOf(&self.keys))? {
            let node = match key {
                Some(key) => {
                    seen |= key.bit;
                    key.node.as_ref().unwrap_or(&self.additional)
                }
                None => &self.additional,
            };
            members.next_value_seed(node)?;
        }
        if seen & self.required == self.required {
            Ok(())
        } else {
            Err(refused())
        }
    }
}

/// Reads a member's name and finds its key, without keeping the name.
struct KeyOf<'a>(&'a [Key]);

impl<'de, 'a> DeserializeSeed<'de> for KeyOf<'a> {
    type Value = Option<&'a Key>;

    fn deserialize<D: Deserializer<'de>>(self, reader: D) -> Result<Self::Value, D::Error> {
        reader.deserialize_str(self)
    }
}

impl<'de, 'a> Visitor<'de> for KeyOf<'a> {
    type Value = Option<&'a Key>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().find(|k| k.name == name))
    }
}

#[cfg(test)]
mod tests;
