//! JSON encoding of privacy numbers: infinities are written as the string `"inf"`.
//!
//! Reading accepts what writing produces: a JSON number, or the strings `"inf"` / `"-inf"`
//! (also `"infinity"`, any case). Anything else is an error naming what was found.

use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;
use std::fmt;

/// Serialize a finite number as a JSON number and ±∞ as `"inf"` / `"-inf"` (the JSON convention of every
/// answer, see `docs/spec.md`).
pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_infinite() {
        serializer.serialize_str(if *value > 0.0 { "inf" } else { "-inf" })
    } else {
        serializer.serialize_f64(*value)
    }
}

/// Read a number written by [`serialize`].
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    deserializer.deserialize_any(NumberVisitor)
}

/// Read an optional number written by [`serialize`] (`null` → `None`).
pub fn deserialize_option<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<f64>, D::Error> {
    deserializer.deserialize_option(OptionVisitor)
}

struct NumberVisitor;

impl Visitor<'_> for NumberVisitor {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number, \"inf\" or \"-inf\"")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        match v.to_ascii_lowercase().as_str() {
            "inf" | "+inf" | "infinity" | "+infinity" => Ok(f64::INFINITY),
            "-inf" | "-infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}

struct OptionVisitor;

impl<'de> Visitor<'de> for OptionVisitor {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("null, a number, \"inf\" or \"-inf\"")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        deserialize(d).map(Some)
    }
}
