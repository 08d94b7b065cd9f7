//! JSON encoding of privacy numbers: infinities are written as the string `"inf"`.

use serde::Serializer;

/// Serialize a finite number as a JSON number and ±∞ as `"inf"` / `"-inf"` (the JSON convention of every
/// answer, see `docs/spec.md`).
pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_infinite() {
        serializer.serialize_str(if *value > 0.0 { "inf" } else { "-inf" })
    } else {
        serializer.serialize_f64(*value)
    }
}
