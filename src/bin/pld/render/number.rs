//! How numbers are written: for people (tables, Markdown) and for machines (CSV, JSON).
//! Infinities are `inf` everywhere; a NaN is never printed as a number.

use serde::Serializer;

/// A result for people: six decimals, scientific notation when tiny or huge.
pub fn value(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) {
        format!("{x:.6e}")
    } else {
        format!("{x:.6}")
    }
}

/// A number the user typed, shown the way they would type it (1e-5, not 0.00001).
pub fn input(x: f64) -> String {
    if x != 0.0 && x.is_finite() && (x.abs() < 1e-3 || x.abs() >= 1e6) {
        format!("{x:e}")
    } else {
        raw(x)
    }
}

/// Three significant digits in scientific notation (widths, grid steps).
pub fn short(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2e}")
    } else {
        raw(x)
    }
}

/// A ratio: four decimals.
pub fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.4}")
    } else {
        raw(x)
    }
}

/// A duration for people: milliseconds below a second, seconds above.
pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        raw(seconds)
    } else if seconds < 1.0 {
        format!("{:.1} ms", seconds * 1e3)
    } else {
        format!("{seconds:.2} s")
    }
}

/// Full precision for machines: the shortest text that reads back to the same f64.
pub fn raw(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x}")
    }
}

/// Serde: a finite number as a JSON number, ±∞ as `"inf"` / `"-inf"` (INTERFACE.md), NaN as
/// `null`.
pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_nan() {
        serializer.serialize_none()
    } else if value.is_infinite() {
        serializer.serialize_str(if *value > 0.0 { "inf" } else { "-inf" })
    } else {
        serializer.serialize_f64(*value)
    }
}

/// Serde: as [`serialize`], `None` as `null`.
pub fn serialize_option<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(x) => serialize(x, serializer),
        None => serializer.serialize_none(),
    }
}
