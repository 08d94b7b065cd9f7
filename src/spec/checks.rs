//! Checks shared by the constructors and the JSON parser: one validation path, one message per
//! parameter.

use super::*;

/// A number as the error messages show it (as JSON would write it where JSON can).
pub(super) fn show(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x == 0.0 || (1e-4..1e16).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

pub(super) fn invalid_number(name: &str, x: f64, requirement: &str) -> Error {
    Error::invalid(name, show(x), requirement)
}

/// A finite number > 0.
pub(super) fn check_positive(name: &str, x: f64) -> Result<f64> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(invalid_number(name, x, POSITIVE))
    }
}

/// A number in `[low, high]` (finite).
pub(super) fn check_in_range(name: &str, x: f64, low: f64, high: f64) -> Result<f64> {
    if x.is_finite() && x >= low && x <= high {
        Ok(x)
    } else {
        let requirement = if high.is_finite() {
            format!("a number in [{low}, {high}]")
        } else {
            format!("a finite number ≥ {low}")
        };
        Err(invalid_number(name, x, &requirement))
    }
}

pub(super) fn whole_requirement(min: u64, max: u64) -> String {
    if max == MAX_COUNT && min == 1 {
        COUNT_REQUIREMENT.into()
    } else if max == u64::MAX {
        format!("a whole number ≥ {min}")
    } else {
        format!("a whole number from {min} to {max}")
    }
}

/// A whole number in `[min, max]`.
pub(super) fn check_whole(name: &str, k: u64, min: u64, max: u64) -> Result<u64> {
    if (min..=max).contains(&k) {
        Ok(k)
    } else {
        Err(Error::invalid(name, k, &whole_requirement(min, max)))
    }
}

/// A whole number in `[min, max]` given as a float.
pub(super) fn check_whole_f64(name: &str, x: f64, min: u64, max: u64) -> Result<u64> {
    if x.is_finite() && x.fract() == 0.0 && x >= min as f64 && x <= max as f64 && x < 2f64.powi(64)
    {
        Ok(x as u64)
    } else {
        Err(invalid_number(name, x, &whole_requirement(min, max)))
    }
}

pub(super) fn check_count(count: u64) -> Result<u64> {
    check_whole("count", count, 1, MAX_COUNT)
}

/// A non-empty list of at most [`MAX_OUTCOMES`] finite numbers ≥ 0.
pub(super) fn check_number_list(name: &str, list: &[f64]) -> Result<()> {
    let requirement = "a non-empty list of finite numbers ≥ 0";
    if list.is_empty() {
        return Err(Error::invalid(name, "[]", requirement));
    }
    if list.len() > MAX_OUTCOMES {
        return Err(Error::invalid(
            name,
            format!("a list of {} entries", list.len()),
            &format!("at most {MAX_OUTCOMES} entries"),
        ));
    }
    match list.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
        Some(i) => Err(invalid_number(
            &format!("{name}[{i}]"),
            list[i],
            "a finite number ≥ 0",
        )),
        None => Ok(()),
    }
}

/// A list of probabilities: numbers in [0, 1] whose total is 1 within
/// [`PROBABILITY_SUM_TOLERANCE`]; returned divided by their total, or as given when the total
/// is 1 up to the rounding of the entries themselves (`n·2⁻⁵²` for n entries).
///
/// Why as given then: dividing by a total a few ulps from 1 moves the entries by as much as
/// their own rounding, and a δ that is a difference such as `1 − p` (outcomes whose masses
/// nearly coincide) moves by that much relative to itself: for a `pmf_pair` whose p, rounded
/// to doubles, summed to 1 − 1.4e-16, the δ(0) of the divided pair was 2.6e-9 below that of
/// the pair as given (the soundness sweep's truth), beyond the 1e-9 every δ is read with.
pub(super) fn check_probability_list(name: &str, list: &[f64]) -> Result<Vec<f64>> {
    check_number_list(name, list)?;
    if let Some((i, x)) = list.iter().enumerate().find(|(_, x)| **x > 1.0) {
        return Err(invalid_number(
            &format!("{name}[{i}]"),
            *x,
            "a probability in [0, 1]",
        ));
    }
    let total = crate::numeric::summation::neumaier_sum(list.iter().copied());
    if total.is_nan() || (total - 1.0).abs() > PROBABILITY_SUM_TOLERANCE {
        return Err(Error::invalid(
            name,
            format!("a list summing to {total}"),
            "probabilities summing to 1",
        ));
    }
    if (total - 1.0).abs() <= list.len() as f64 * f64::EPSILON {
        return Ok(list.to_vec());
    }
    Ok(list.iter().map(|x| x / total).collect())
}

/// `e` with every parameter name prefixed by `prefix` (e.g. `events[2]`).
pub(super) fn relocate(e: Error, prefix: &str) -> Error {
    if prefix.is_empty() {
        return e;
    }
    e.rename_fields(|name| format!("{prefix}.{name}"))
}
