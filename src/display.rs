//! `Display` for the answers, so they print as people read them.
//!
//! Numbers are written with 6 digits after the decimal point (or the formatter's precision,
//! `{:.3}`): fixed-point when `10⁻³ ≤ |x| < 10⁶` (`1.828779`), scientific otherwise
//! (`9.876543e-6`), `0.000000` for zero and `inf` for infinity. Guaranteed bounds are rounded
//! **outward**: a printed upper bound, read back, is never below the bound computed, and a
//! printed lower bound never above it, so the text is as safe to publish as the number.
//! Estimates are rounded to nearest. Inputs (the δ or ε asked about, a calibration target) are
//! written as given, in their shortest form (`1e-5`, `0.01`, `2`).
//!
//! | type | example |
//! | --- | --- |
//! | [`Bracket`] | `[1.827804, 1.828779]` |
//! | [`EpsilonAnswer`] | `ε ∈ [1.827804, 1.828779] at δ = 1e-5` |
//! | [`DeltaAnswer`] | `δ ∈ [9.876543e-6, 9.876544e-6] at ε = 2` |
//! | [`Kind`] | `upper bound`, `lower bound`, `estimate` |
//! | [`MethodRow`] | `rdp: ε = 2.101365 (upper bound)` |
//! | [`Comparison`] | a table: a title line, one line per method, the methods that do not apply |
//! | [`Calibration`] | the value found, the bracket there, the nearest failing value |
//!
//! Computing times are left out of the text, so the same answer always prints the same.

use crate::accountant::{DeltaAnswer, EpsilonAnswer};
use crate::bound::Bracket;
use crate::calibration::{Calibration, Parameter};
use crate::comparison::{Comparison, Kind, MethodRow, NotApplicableRow};
use std::fmt;

/// Digits after the decimal point when the formatter gives no precision.
const DEFAULT_DECIMALS: usize = 6;

/// Most digits after the decimal point honoured (the mantissa must fit in a `u128`).
const MAX_DECIMALS: usize = 30;

/// Which way a printed number may differ from the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rounding {
    /// To nearest (estimates, values that are not bounds).
    Nearest,
    /// Never below (upper bounds).
    Up,
    /// Never above (lower bounds).
    Down,
}

fn decimals(f: &fmt::Formatter<'_>) -> usize {
    f.precision().unwrap_or(DEFAULT_DECIMALS).min(MAX_DECIMALS)
}

/// `x` with `decimals` digits after the point, fixed-point for `10⁻³ ≤ |x| < 10⁶` and
/// scientific otherwise, rounded as asked.
///
/// The text is first rounded to nearest (Rust's formatting is exact); if that text, read back
/// as an `f64`, lies on the wrong side of `x`, it is moved by one unit in its last digit.
fn number(x: f64, decimals: usize, rounding: Rounding) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return format!("{:.decimals$}", 0.0);
    }
    let scientific = !(1e-3..1e6).contains(&x.abs());
    let text = if scientific {
        format!("{x:.decimals$e}")
    } else {
        format!("{x:.decimals$}")
    };
    let back: f64 = text.parse().unwrap_or(x);
    let wrong_side = match rounding {
        Rounding::Nearest => false,
        Rounding::Up => back < x,
        Rounding::Down => back > x,
    };
    if wrong_side {
        // Towards +∞ for an upper bound: a larger magnitude for positive numbers.
        step(&text, decimals, (rounding == Rounding::Up) == (x > 0.0)).unwrap_or(text)
    } else {
        text
    }
}

/// `text` (as written by [`number`]) moved by one unit in its last digit, away from zero when
/// `away` and towards it otherwise. `None` if the text has an unexpected shape.
fn step(text: &str, decimals: usize, away: bool) -> Option<String> {
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (mantissa, exponent) = match unsigned.split_once('e') {
        Some((m, e)) => (m, Some(e.parse::<i32>().ok()?)),
        None => (unsigned, None),
    };
    let digits: u128 = mantissa.replace('.', "").parse().ok()?;
    let digits = if away {
        digits + 1
    } else {
        digits.checked_sub(1)?
    };
    let body = match exponent {
        None => fixed(digits, decimals),
        Some(mut exponent) => {
            let one = 10u128.pow(decimals as u32);
            let mut digits = digits;
            if digits >= 10 * one {
                // 9.999999e-6 + one unit = 1.000000e-5.
                digits /= 10;
                exponent += 1;
            } else if digits < one {
                // 1.000000e-5 − one unit: the largest 7-digit mantissa one decade down.
                digits = 10 * one - 1;
                exponent -= 1;
            }
            format!("{}e{exponent}", fixed(digits, decimals))
        }
    };
    Some(format!("{sign}{body}"))
}

/// The whole number `digits` divided by `10^decimals`, written with `decimals` decimals.
fn fixed(digits: u128, decimals: usize) -> String {
    let text = format!("{digits:0>width$}", width = decimals + 1);
    if decimals == 0 {
        return text;
    }
    let (whole, fraction) = text.split_at(text.len() - decimals);
    format!("{whole}.{fraction}")
}

/// A value the caller gave (δ or ε asked about, a target), in its shortest exact form.
fn input(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 || (1e-3..1e6).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

fn bracket(b: &Bracket, decimals: usize) -> String {
    format!(
        "[{}, {}]",
        number(b.lower, decimals, Rounding::Down),
        number(b.upper, decimals, Rounding::Up)
    )
}

/// `[lower, upper]`, the lower end rounded down and the upper end rounded up (6 decimals, or
/// the formatter's precision); infinite ends as `inf`.
impl crate::bound::Bound {
    /// `x` written as a bound in this direction: 6 decimals, fixed-point for
    /// `10⁻³ ≤ |x| < 10⁶` and scientific otherwise, rounded outward, so that an `Upper` text
    /// read back is never below `x` and a `Lower` text never above it (`inf` for infinity).
    ///
    /// ```
    /// use pld_accountant::Bound;
    ///
    /// assert_eq!(Bound::Upper.text(1.8287781), "1.828779");
    /// assert_eq!(Bound::Lower.text(1.8287789), "1.828778");
    /// assert_eq!(Bound::Upper.text(9.87654321e-6), "9.876544e-6");
    /// ```
    pub fn text(self, x: f64) -> String {
        self.text_with_decimals(x, DEFAULT_DECIMALS)
    }

    /// As [`Self::text`] with `decimals` decimals (at most 30), for compact tables.
    ///
    /// ```
    /// use pld_accountant::Bound;
    ///
    /// assert_eq!(Bound::Upper.text_with_decimals(2.38261, 3), "2.383");
    /// assert_eq!(Bound::Lower.text_with_decimals(2.38261, 3), "2.382");
    /// ```
    pub fn text_with_decimals(self, x: f64, decimals: usize) -> String {
        let rounding = match self {
            crate::bound::Bound::Upper => Rounding::Up,
            crate::bound::Bound::Lower => Rounding::Down,
        };
        number(x, decimals.min(MAX_DECIMALS), rounding)
    }
}

impl fmt::Display for Bracket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&bracket(self, decimals(f)))
    }
}

/// `ε ∈ [lower, upper] at δ = D`.
impl fmt::Display for EpsilonAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ε ∈ {} at δ = {}",
            bracket(&self.epsilon, decimals(f)),
            input(self.delta)
        )
    }
}

/// `δ ∈ [lower, upper] at ε = E`.
impl fmt::Display for DeltaAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "δ ∈ {} at ε = {}",
            bracket(&self.delta, decimals(f)),
            input(self.epsilon)
        )
    }
}

/// `upper bound`, `lower bound` or `estimate`.
impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::UpperBound => "upper bound",
            Kind::LowerBound => "lower bound",
            Kind::Estimate => "estimate",
        })
    }
}

/// How a row's ε is rounded: outward for bounds, to nearest for estimates.
fn row_epsilon(row: &MethodRow, decimals: usize) -> String {
    let rounding = match row.kind {
        Kind::UpperBound => Rounding::Up,
        Kind::LowerBound => Rounding::Down,
        Kind::Estimate => Rounding::Nearest,
    };
    number(row.epsilon, decimals, rounding)
}

/// `method: ε = X (kind)`.
impl fmt::Display for MethodRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: ε = {} ({})",
            self.method,
            row_epsilon(self, decimals(f)),
            self.kind
        )
    }
}

/// `method: reason`.
impl fmt::Display for NotApplicableRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.method, self.reason)
    }
}

/// A table: the title `ε at δ = D`, a header, one line per method (name, ε, kind), then
/// `not applicable:` and one indented line per reason, naming the methods it applies to.
impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decimals = decimals(f);
        let epsilons: Vec<String> = self.rows.iter().map(|r| row_epsilon(r, decimals)).collect();
        let method_width = self
            .rows
            .iter()
            .map(|r| r.method.chars().count())
            .chain(["method".len()])
            .max()
            .unwrap_or(0);
        let epsilon_width = epsilons
            .iter()
            .map(|e| e.chars().count())
            .max()
            .unwrap_or(1);
        write!(f, "ε at δ = {}", input(self.delta))?;
        if !self.rows.is_empty() {
            write!(
                f,
                "\n{:<method_width$}  {:>epsilon_width$}  kind",
                "method", "ε"
            )?;
            for (row, epsilon) in self.rows.iter().zip(&epsilons) {
                write!(
                    f,
                    "\n{:<method_width$}  {epsilon:>epsilon_width$}  {}",
                    row.method, row.kind
                )?;
            }
        }
        if !self.not_applicable.is_empty() {
            f.write_str("\nnot applicable:")?;
            // Methods refused for the same reason share a line, in order of first appearance.
            let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
            for row in &self.not_applicable {
                match reasons.iter_mut().find(|(reason, _)| *reason == row.reason) {
                    Some((_, methods)) => methods.push(&row.method),
                    None => reasons.push((&row.reason, vec![&row.method])),
                }
            }
            for (reason, methods) in reasons {
                write!(f, "\n  {}: {reason}", methods.join(", "))?;
            }
        }
        Ok(())
    }
}

/// A calibrated value, written safe side out: noise rounded up, a sampling rate rounded down,
/// a count exactly.
fn calibrated_value(parameter: Parameter, value: f64, decimals: usize) -> String {
    match parameter {
        Parameter::Count => format!("{value:.0}"),
        p if p.larger_is_more_private() => number(value, decimals, Rounding::Up),
        _ => number(value, decimals, Rounding::Down),
    }
}

/// Four lines:
///
/// ```text
/// events[0].sigma = 0.959330: the smallest value found with ε ≤ 2 at δ = 1e-5
///   at that value: ε ∈ [1.997845, 1.999800]
///   nearest failing value: 0.959282, ε ∈ [1.997912, 2.000019]
///   8 accountant calls
/// ```
///
/// The value is rounded toward more privacy (noise up, a rate down; a count is whole), so it
/// is safe as printed. Without a failing value (the end of the searched range meets the
/// target) the third line says so.
impl fmt::Display for Calibration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decimals = decimals(f);
        let extreme = if self.parameter.larger_is_more_private() {
            "smallest"
        } else {
            "largest"
        };
        writeln!(
            f,
            "{} = {}: the {extreme} value found with ε ≤ {} at δ = {}",
            self.location,
            calibrated_value(self.parameter, self.value, decimals),
            input(self.target_epsilon),
            input(self.delta)
        )?;
        writeln!(
            f,
            "  at that value: ε ∈ {}",
            bracket(&self.epsilon, decimals)
        )?;
        match (self.failing_value, &self.failing_epsilon) {
            (Some(value), Some(epsilon)) => writeln!(
                f,
                "  nearest failing value: {}, ε ∈ {}",
                match self.parameter {
                    Parameter::Count => format!("{value:.0}"),
                    _ => number(value, decimals, Rounding::Nearest),
                },
                bracket(epsilon, decimals)
            )?,
            (Some(value), None) => writeln!(
                f,
                "  nearest failing value: {}",
                number(value, decimals, Rounding::Nearest)
            )?,
            (None, _) => writeln!(
                f,
                "  no failing value: the end of the searched range meets the target"
            )?,
        }
        write!(
            f,
            "  {} accountant call{}",
            self.evaluations,
            if self.evaluations == 1 { "" } else { "s" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::{Settings, Tolerance};

    fn settings() -> Settings {
        Settings {
            method: "pld".into(),
            grid_step: Some(1e-3),
            tail_mass: Some(1e-14),
            refinements: 1,
            tolerance: Tolerance::default(),
            bracket_width: 1e-3,
            target_width: 2e-3,
            tolerance_met: true,
            worse_direction: "remove".into(),
            stopped_by: None,
            upper_method: None,
            lower_method: None,
            upper_grid_step: None,
        }
    }

    #[test]
    fn numbers_round_outward_and_switch_to_scientific() {
        assert_eq!(number(1.8287791, 6, Rounding::Up), "1.828780");
        assert_eq!(number(1.8287791, 6, Rounding::Down), "1.828779");
        assert_eq!(number(1.8287791, 6, Rounding::Nearest), "1.828779");
        // Exactly representable at 6 decimals (as read back): no step.
        assert_eq!(number(2.0, 6, Rounding::Up), "2.000000");
        assert_eq!(number(2.0, 6, Rounding::Down), "2.000000");
        // Carries.
        assert_eq!(number(9.9999991, 6, Rounding::Up), "10.000000");
        assert_eq!(number(9.87654321e-6, 6, Rounding::Up), "9.876544e-6");
        assert_eq!(number(9.87654321e-6, 6, Rounding::Down), "9.876543e-6");
        assert_eq!(number(9.9999999e-6, 6, Rounding::Up), "1.000000e-5");
        assert_eq!(number(1.00000001e-5, 6, Rounding::Up), "1.000001e-5");
        assert_eq!(number(1.00000001e-5, 6, Rounding::Down), "1.000000e-5");
        assert_eq!(number(9.9999996e-6, 6, Rounding::Down), "9.999999e-6");
        assert_eq!(number(1.0e6, 2, Rounding::Nearest), "1.00e6");
        assert_eq!(number(-1.5e-7, 2, Rounding::Up), "-1.50e-7");
        assert_eq!(number(-1.5012e-7, 2, Rounding::Up), "-1.50e-7");
        assert_eq!(number(-1.5012e-7, 2, Rounding::Down), "-1.51e-7");
        assert_eq!(number(0.0, 6, Rounding::Up), "0.000000");
        assert_eq!(number(f64::INFINITY, 6, Rounding::Up), "inf");
        assert_eq!(number(f64::NEG_INFINITY, 6, Rounding::Down), "-inf");
        assert_eq!(number(0.4, 0, Rounding::Up), "1");
        assert_eq!(number(0.6, 0, Rounding::Down), "0");
    }

    #[test]
    fn outward_rounding_never_crosses_the_number() {
        let mut x = 1.234_567_890_123e-9;
        while x < 1e9 {
            for decimals in [0, 1, 3, 6, 9] {
                let up: f64 = number(x, decimals, Rounding::Up).parse().unwrap();
                let down: f64 = number(x, decimals, Rounding::Down).parse().unwrap();
                assert!(down <= x && x <= up, "{x} at {decimals}: [{down}, {up}]");
            }
            x *= 1.618_033_988_7;
        }
    }

    #[test]
    fn inputs_are_written_as_given() {
        assert_eq!(input(1e-5), "1e-5");
        assert_eq!(input(0.01), "0.01");
        assert_eq!(input(2.0), "2");
        assert_eq!(input(1e-12), "1e-12");
        assert_eq!(input(f64::INFINITY), "inf");
    }

    #[test]
    fn brackets_and_answers() {
        let b = Bracket {
            lower: 1.8278041,
            upper: 1.8287791,
        };
        assert_eq!(b.to_string(), "[1.827804, 1.828780]");
        assert_eq!(format!("{b:.2}"), "[1.82, 1.83]");
        let infinite = Bracket {
            lower: 599.999_99,
            upper: f64::INFINITY,
        };
        assert_eq!(infinite.to_string(), "[599.999990, inf]");
        let epsilon = EpsilonAnswer {
            delta: 1e-5,
            epsilon: b,
            settings: settings(),
        };
        assert_eq!(epsilon.to_string(), "ε ∈ [1.827804, 1.828780] at δ = 1e-5");
        let delta = DeltaAnswer {
            epsilon: 2.0,
            delta: Bracket {
                lower: 9.87654321e-6,
                upper: 9.87654399e-6,
            },
            settings: settings(),
        };
        assert_eq!(delta.to_string(), "δ ∈ [9.876543e-6, 9.876544e-6] at ε = 2");
        assert_eq!(format!("{delta:.3}"), "δ ∈ [9.876e-6, 9.877e-6] at ε = 2");
    }

    fn row(method: &'static str, epsilon: f64, kind: Kind) -> MethodRow {
        MethodRow {
            method: method.into(),
            epsilon,
            kind,
            seconds: 0.0123,
            detail: String::new(),
        }
    }

    #[test]
    fn comparisons_print_as_a_table() {
        let comparison = Comparison {
            delta: 1e-5,
            rows: vec![
                row("pld_upper", 1.8287781, Kind::UpperBound),
                row("pld_lower", 1.8278049, Kind::LowerBound),
                row("rdp", 2.101365, Kind::UpperBound),
                row("clt_estimate", 1.6177124, Kind::Estimate),
            ],
            not_applicable: vec![
                NotApplicableRow {
                    method: "zcdp".into(),
                    reason: "zCDP has no useful amplification by subsampling".into(),
                },
                NotApplicableRow {
                    method: "basic_composition".into(),
                    reason: "no pure ε".into(),
                },
                NotApplicableRow {
                    method: "kov_closed_form".into(),
                    reason: "no pure ε".into(),
                },
            ],
        };
        assert_eq!(
            comparison.to_string(),
            "ε at δ = 1e-5\n\
             method               ε  kind\n\
             pld_upper     1.828779  upper bound\n\
             pld_lower     1.827804  lower bound\n\
             rdp           2.101365  upper bound\n\
             clt_estimate  1.617712  estimate\n\
             not applicable:\n  \
             zcdp: zCDP has no useful amplification by subsampling\n  \
             basic_composition, kov_closed_form: no pure ε"
        );
        assert_eq!(
            comparison.rows[2].to_string(),
            "rdp: ε = 2.101365 (upper bound)"
        );
        assert_eq!(
            format!("{:.2}", comparison.rows[0]),
            "pld_upper: ε = 1.83 (upper bound)"
        );
        assert_eq!(Kind::Estimate.to_string(), "estimate");
        let empty = Comparison {
            delta: 0.5,
            rows: vec![],
            not_applicable: vec![],
        };
        assert_eq!(empty.to_string(), "ε at δ = 0.5");
        let infinite = Comparison {
            delta: 1e-5,
            rows: vec![row("basic_composition", f64::INFINITY, Kind::UpperBound)],
            not_applicable: vec![],
        };
        assert_eq!(
            infinite.to_string(),
            "ε at δ = 1e-5\n\
             method               ε  kind\n\
             basic_composition  inf  upper bound"
        );
    }

    fn calibration(parameter: Parameter, value: f64, failing: Option<f64>) -> Calibration {
        Calibration {
            parameter,
            location: format!("events[0].{}", parameter.name()),
            value,
            epsilon: Bracket {
                lower: 1.997845,
                upper: 1.9998,
            },
            delta: 1e-5,
            target_epsilon: 2.0,
            failing_value: failing,
            failing_epsilon: failing.map(|_| Bracket {
                lower: 1.99791,
                upper: 2.000019,
            }),
            search_range: [1e-6, 1e9],
            evaluations: 8,
            settings: settings(),
        }
    }

    #[test]
    fn calibrations_print_the_value_safe_side_out() {
        assert_eq!(
            calibration(Parameter::Sigma, 0.95932912, Some(0.9592817)).to_string(),
            "events[0].sigma = 0.959330: the smallest value found with ε ≤ 2 at δ = 1e-5\n  \
             at that value: ε ∈ [1.997845, 1.999800]\n  \
             nearest failing value: 0.959282, ε ∈ [1.997910, 2.000019]\n  \
             8 accountant calls"
        );
        assert_eq!(
            calibration(Parameter::PoissonRate, 0.01234567891, Some(0.0123469)).to_string(),
            "events[0].poisson = 0.012345: the largest value found with ε ≤ 2 at δ = 1e-5\n  \
             at that value: ε ∈ [1.997845, 1.999800]\n  \
             nearest failing value: 0.012347, ε ∈ [1.997910, 2.000019]\n  \
             8 accountant calls"
        );
        let mut count = calibration(Parameter::Count, 1201.0, None);
        count.evaluations = 1;
        assert_eq!(
            count.to_string(),
            "events[0].count = 1201: the largest value found with ε ≤ 2 at δ = 1e-5\n  \
             at that value: ε ∈ [1.997845, 1.999800]\n  \
             no failing value: the end of the searched range meets the target\n  \
             1 accountant call"
        );
    }
}
