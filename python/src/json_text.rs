//! Answers as JSON text, exactly as `pld … --format json` writes the same report (keys in the
//! same order, infinities as the string `"inf"`); the Python layer parses it into dicts.

use serde::{Serialize, Serializer};

/// `value` in the library's serde form.
pub fn to_json<T: Serialize>(value: &T) -> String {
    // Plain structs of numbers and strings always serialize; should one not, the message
    // reaches the caller as a JSON object rather than as a panic (as in the CLI).
    serde_json::to_string(value).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot serialize: {e}") }).to_string()
    })
}

/// A number as every report writes it: finite as a JSON number, ±∞ as `"inf"` / `"-inf"`.
pub fn number<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_infinite() {
        serializer.serialize_str(if *value > 0.0 { "inf" } else { "-inf" })
    } else {
        serializer.serialize_f64(*value)
    }
}

/// An optional number: `null`, or as [`number`].
pub fn optional_number<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(x) => number(x, serializer),
        None => serializer.serialize_none(),
    }
}
