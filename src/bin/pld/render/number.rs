//! How numbers are written: for people (tables, Markdown) and for machines (CSV, JSON).
//! Infinities are `inf` everywhere; a NaN is never printed as a number.

use pld_accountant::Bound;
use serde::Serializer;

/// A result for people (an estimate, or a value that is no bound): six decimals, scientific notation when tiny or huge, and an exact
/// zero as `0` (never `0.000000`, which would read as a rounded small number).
pub fn value(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.is_nan() {
        "n/a".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) {
        format!("{x:.6e}")
    } else {
        format!("{x:.6}")
    }
}

/// A guaranteed upper bound for people: as [`value`], but rounded up (the printed number,
/// read back, is never below the bound), so that the text is as safe to publish.
pub fn upper(x: f64) -> String {
    bound(x, Bound::Upper)
}

/// A guaranteed lower bound for people: as [`value`], but rounded down.
pub fn lower(x: f64) -> String {
    bound(x, Bound::Lower)
}

fn bound(x: f64, direction: Bound) -> String {
    if x == 0.0 || x.is_nan() {
        value(x)
    } else {
        direction.text(x)
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

/// A count that may be fractional (epochs): whole numbers as integers, others to six
/// significant digits.
pub fn epochs(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        significant(x, 6)
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

/// `x` to `digits` significant digits (rounded to nearest): plain for 1e-3 ≤ |x| < 1e6,
/// scientific otherwise.
pub fn significant(x: f64, digits: usize) -> String {
    if !x.is_finite() {
        return raw(x);
    }
    if x == 0.0 {
        return "0".into();
    }
    let digits = digits.max(1);
    let exponent = x.abs().log10().floor() as i32;
    if (-3..6).contains(&exponent) {
        let decimals = (digits as i32 - 1 - exponent).max(0) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.precision$e}", precision = digits - 1)
    }
}

/// Which way a printed value may move from the computed one without losing the guarantee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toward {
    /// Rounding up is safe (more noise).
    Larger,
    /// Rounding down is safe (a smaller sampling rate).
    Smaller,
}

/// A calibrated value for people: whole numbers exactly, other values to 6 significant digits
/// rounded `toward` the safe side, so that the number printed is itself safe to use (the
/// exact ε is monotone in the noise and in the sampling rate).
pub fn calibrated(x: f64, toward: Toward) -> String {
    if !x.is_finite() || (x.fract() == 0.0 && x.abs() < 1e15) {
        return raw(x);
    }
    let mut text = significant(x, 6);
    for _ in 0..4 {
        let Ok(shown) = text.parse::<f64>() else {
            break;
        };
        let safe = match toward {
            Toward::Larger => shown >= x,
            Toward::Smaller => shown <= x,
        };
        if safe {
            return text;
        }
        // One unit in the last printed digit further, printed with the same precision.
        let exponent = shown.abs().log10().floor() as i32;
        let unit = 10f64.powi(exponent - 5);
        let next = match toward {
            Toward::Larger => shown + unit,
            Toward::Smaller => shown - unit,
        };
        text = significant(next, 6);
    }
    // Not reached for finite values; full precision is exact.
    raw(x)
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

/// Serde: a finite number as a JSON number, ±∞ as `"inf"` / `"-inf"` (the JSON convention), NaN as
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits_plain_and_scientific() {
        assert_eq!(significant(0.917_325_6, 6), "0.917326");
        assert_eq!(significant(12.345_678, 6), "12.3457");
        assert_eq!(significant(1.234_567e-5, 6), "1.23457e-5");
        assert_eq!(significant(2.5e7, 3), "2.50e7");
    }

    #[test]
    fn calibrated_values_round_to_the_safe_side() {
        // Nearest would be 0.917325 (down); noise rounds up.
        assert_eq!(calibrated(0.917_325_1, Toward::Larger), "0.917326");
        assert_eq!(calibrated(0.917_325_9, Toward::Smaller), "0.917325");
        assert_eq!(calibrated(0.5, Toward::Larger), "0.500000");
        assert_eq!(calibrated(1.234_561e-5, Toward::Larger), "1.23457e-5");
        assert_eq!(calibrated(1.234_569e-5, Toward::Smaller), "1.23456e-5");
        // Counts are whole numbers and printed exactly.
        assert_eq!(calibrated(1234.0, Toward::Smaller), "1234");
        assert_eq!(calibrated(1e12, Toward::Smaller), "1000000000000");
        for x in [0.1, 0.3, 0.999_999_7, 9.999_999_5, 123_456.75, 3e-9] {
            let up: f64 = calibrated(x, Toward::Larger).parse().unwrap();
            let down: f64 = calibrated(x, Toward::Smaller).parse().unwrap();
            assert!(down <= x && x <= up, "{x}: [{down}, {up}]");
        }
    }
}
