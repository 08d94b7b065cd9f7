//! `pld calibrate`: the value found, the ε bracket there against the target, and the nearest
//! value that misses (how tight the calibration is).

use super::bracket::{grid_method, method};
use super::number::{calibrated, duration, input, lower, raw, short, significant, upper, Toward};
use super::text_table::{Align, Column, TextTable};
use super::{csv, markdown, Report};
use crate::calibrate::CalibrationReport;
use crate::calibrate_dp_sgd::DpSgdAnswer;
use pld_accountant::calibration::Parameter;
use pld_accountant::Calibration;

/// The parameter in words, e.g. `sampling rate` for `poisson`.
fn noun(parameter: Parameter) -> &'static str {
    match parameter {
        Parameter::PoissonRate => "sampling rate",
        other => other.name(),
    }
}

/// Which way the printed value may be rounded and stay safe (counts are whole).
fn toward(parameter: Parameter) -> Toward {
    if parameter.larger_is_more_private() {
        Toward::Larger
    } else {
        Toward::Smaller
    }
}

/// `smallest` (noise) or `largest` (count, rate): what the search maximises for utility.
fn best(parameter: Parameter) -> &'static str {
    if parameter.larger_is_more_private() {
        "smallest"
    } else {
        "largest"
    }
}

/// The calibrated value for people: rounded to the safe side.
fn shown(c: &Calibration) -> String {
    calibrated(c.value, toward(c.parameter))
}

/// A value that was evaluated (not to be used): 6 significant digits, counts exactly.
fn evaluated(parameter: Parameter, x: f64) -> String {
    if parameter == Parameter::Count {
        raw(x)
    } else {
        significant(x, 6)
    }
}

/// The searched range, `1e-6, 1e9`.
fn range(c: &Calibration) -> String {
    format!("{}, {}", input(c.search_range[0]), input(c.search_range[1]))
}

/// How far the failing value is from the value found, in words: `1 more`, `0.0050% smaller`.
fn distance(c: &Calibration, failing: f64) -> String {
    if c.parameter == Parameter::Count {
        return format!("{} more", raw(failing - c.value));
    }
    let percent = 100.0 * (failing - c.value).abs() / c.value;
    let side = if failing < c.value {
        "smaller"
    } else {
        "larger"
    };
    format!("{}% {side}", significant(percent, 2))
}

impl CalibrationReport {
    fn title(&self) -> String {
        let c = &self.calibration;
        format!(
            "calibration of {} for epsilon <= {} at delta = {}",
            c.location,
            input(c.target_epsilon),
            input(c.delta)
        )
    }

    /// The nearest failing value and a comment on it (how far, its ε).
    fn failing(&self) -> (String, String) {
        let c = &self.calibration;
        match c.failing_value {
            Some(failing) => {
                let epsilon = match c.failing_epsilon {
                    Some(b) => format!("{} > {}", upper(b.upper), input(c.target_epsilon)),
                    None => format!("above {}", input(c.target_epsilon)),
                };
                (
                    evaluated(c.parameter, failing),
                    format!("{}; epsilon upper bound {epsilon}", distance(c, failing)),
                )
            }
            None => (
                "none".into(),
                format!(
                    "{} is the end of the searched range [{}]",
                    evaluated(c.parameter, c.value),
                    range(c)
                ),
            ),
        }
    }
}

impl CalibrationReport {
    /// The answer of `--solve` in DP-SGD words, as `(label, value, comment)` rows.
    fn dp_sgd_rows(&self, a: &DpSgdAnswer) -> (String, Vec<(String, String, String)>) {
        let c = &self.calibration;
        let (noun, best, verb, shown_value) = match a.solve {
            "noise_multiplier" => (
                "noise multiplier",
                "smallest",
                "meets",
                calibrated(a.value, Toward::Larger),
            ),
            "epochs" => ("epochs", "most whole", "meet", raw(a.value)),
            "steps" => ("steps", "most", "meet", raw(a.value)),
            _ => ("batch size", "largest expected", "meets", raw(a.value)),
        };
        let title = format!(
            "calibration of DP-SGD for epsilon <= {} at delta = {}: the {best} {noun}",
            input(c.target_epsilon),
            input(c.delta)
        );
        let met = if a.epsilon.upper <= c.target_epsilon {
            "met"
        } else {
            "NOT met"
        };
        let run = format!(
            "{} steps at sampling rate {} ({} epochs), noise multiplier {}",
            raw(a.steps as f64),
            trimmed(a.sampling_rate),
            trimmed(a.epochs),
            calibrated(a.noise_multiplier, Toward::Larger)
        );
        let mut rows = vec![
            (
                format!("{noun} (use this)"),
                shown_value,
                format!("the {best} {noun} that {verb} the target"),
            ),
            ("run".into(), run, String::new()),
            (
                "epsilon upper bound".into(),
                upper(a.epsilon.upper),
                format!("target {}, {met}", input(c.target_epsilon)),
            ),
            (
                "epsilon lower bound".into(),
                lower(a.epsilon.lower),
                String::new(),
            ),
        ];
        if let (Some(failing), Some(bracket)) = (a.failing_value, a.failing_epsilon) {
            let failing = if a.solve == "noise_multiplier" {
                significant(failing, 6)
            } else {
                raw(failing)
            };
            rows.push((
                format!("nearest failing {noun}"),
                failing,
                format!(
                    "epsilon upper bound {} > {}",
                    upper(bracket.upper),
                    input(c.target_epsilon)
                ),
            ));
        }
        if let Some(steps) = a.most_steps {
            rows.push((
                "steps, at most".into(),
                raw(steps as f64),
                format!(
                    "the most steps that meet the target ({} epochs)",
                    trimmed(steps as f64 * a.sampling_rate)
                ),
            ));
        }
        rows.push((
            "search".into(),
            format!(
                "{} in [{}]: {} accountant calls in {}",
                c.location,
                range(c),
                c.evaluations,
                duration(self.seconds)
            ),
            String::new(),
        ));
        (title, rows)
    }
}

/// 6 significant digits without trailing zeros (`0.01`, `155`, `60.0021`).
fn trimmed(x: f64) -> String {
    let text = significant(x, 6);
    if text.contains('.') && !text.contains('e') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Rows of `(label, value, comment)` under a title, aligned.
fn aligned_rows(title: String, rows: Vec<(String, String, String)>) -> String {
    let width = |text: &str| text.chars().count();
    let label_width = rows.iter().map(|r| width(&r.0)).max().unwrap_or(0);
    // The value column is as wide as the values that have a comment.
    let value_width = rows
        .iter()
        .filter(|r| !r.2.is_empty())
        .map(|r| width(&r.1))
        .max()
        .unwrap_or(0);
    let mut text = title;
    for (label, cell, comment) in rows {
        let line = if comment.is_empty() {
            format!("  {label:<label_width$}  {cell}")
        } else {
            format!("  {label:<label_width$}  {cell:<value_width$}  {comment}")
        };
        text.push('\n');
        text.push_str(line.trim_end());
    }
    text
}

impl Report for CalibrationReport {
    fn table(&self) -> String {
        if let Some(answer) = &self.dp_sgd {
            let (title, rows) = self.dp_sgd_rows(answer);
            return aligned_rows(title, rows);
        }
        let c = &self.calibration;
        let name = noun(c.parameter);
        let rounded = if c.parameter == Parameter::Count {
            ""
        } else if c.parameter.larger_is_more_private() {
            ", rounded up"
        } else {
            ", rounded down"
        };
        let met = if c.epsilon.upper <= c.target_epsilon {
            "met"
        } else {
            "NOT met"
        };
        let tolerance = match (c.settings.tolerance_met, c.settings.stopped_by.as_deref()) {
            (true, _) => String::new(),
            (false, Some(limit)) => limit.to_string(),
            (false, None) => "the bracket is wider than asked".into(),
        };
        let (failing, failing_comment) = self.failing();
        // (label, value, comment)
        let rows: Vec<(String, String, String)> = vec![
            (
                format!("{name} (use this)"),
                shown(c),
                format!("{} found that meets the target{rounded}", best(c.parameter)),
            ),
            (
                "epsilon upper bound".into(),
                upper(c.epsilon.upper),
                format!("at that {name}; target {}, {met}", input(c.target_epsilon)),
            ),
            (
                "epsilon lower bound".into(),
                lower(c.epsilon.lower),
                tolerance,
            ),
            (format!("nearest failing {name}"), failing, failing_comment),
            ("delta".into(), input(c.delta), String::new()),
            (
                "method".into(),
                match c.settings.grid_step {
                    Some(h) => grid_method(h, &c.settings),
                    None => "exact Gaussian (closed form)".into(),
                },
                String::new(),
            ),
            (
                "search".into(),
                format!(
                    "{name} in [{}]: {} accountant calls in {}",
                    range(c),
                    c.evaluations,
                    duration(self.seconds)
                ),
                String::new(),
            ),
        ];
        aligned_rows(self.title(), rows)
    }

    fn csv(&self) -> String {
        let c = &self.calibration;
        let headers = [
            "parameter",
            "location",
            "value",
            "target_epsilon",
            "delta",
            "epsilon_upper",
            "epsilon_lower",
            "failing_value",
            "failing_epsilon_upper",
            "failing_epsilon_lower",
            "search_min",
            "search_max",
            "evaluations",
            "seconds",
            "method",
            "grid_step",
            "bracket_width",
            "tolerance_met",
        ];
        let mut table = TextTable::new(
            headers
                .iter()
                .map(|h| Column::new(h, Align::Left))
                .collect(),
        );
        table.push(vec![
            c.parameter.name().to_string(),
            c.location.clone(),
            raw(c.value),
            raw(c.target_epsilon),
            raw(c.delta),
            raw(c.epsilon.upper),
            raw(c.epsilon.lower),
            c.failing_value.map(raw).unwrap_or_default(),
            c.failing_epsilon.map(|b| raw(b.upper)).unwrap_or_default(),
            c.failing_epsilon.map(|b| raw(b.lower)).unwrap_or_default(),
            raw(c.search_range[0]),
            raw(c.search_range[1]),
            c.evaluations.to_string(),
            raw(self.seconds),
            c.settings.method.to_string(),
            c.settings.grid_step.map(raw).unwrap_or_default(),
            raw(c.settings.bracket_width),
            c.settings.tolerance_met.to_string(),
        ]);
        csv::csv(&table)
    }

    fn markdown(&self) -> String {
        let c = &self.calibration;
        let mut table = TextTable::new(vec![
            Column::new("calibrated", Align::Left),
            Column::new("value", Align::Right),
            Column::new("ε upper bound", Align::Right),
            Column::new("ε lower bound", Align::Right),
            Column::new("target ε", Align::Right),
            Column::new("δ", Align::Right),
            Column::new("nearest failing value", Align::Right),
            Column::new("its ε upper bound", Align::Right),
            Column::new("accountant calls", Align::Right),
            Column::new("time", Align::Right),
            Column::new("method", Align::Left),
        ]);
        table.push(vec![
            format!("`{}`", c.location),
            shown(c),
            upper(c.epsilon.upper),
            lower(c.epsilon.lower),
            input(c.target_epsilon),
            input(c.delta),
            c.failing_value
                .map(|x| evaluated(c.parameter, x))
                .unwrap_or_else(|| "none".into()),
            c.failing_epsilon
                .map(|b| upper(b.upper))
                .unwrap_or_else(|| "-".into()),
            c.evaluations.to_string(),
            duration(self.seconds),
            format!(
                "{} (bracket width {})",
                method(&c.settings),
                short(c.settings.bracket_width)
            ),
        ]);
        format!(
            "**{}** ({})\n\n{}",
            markdown::cell(&self.title()),
            markdown::cell(&self.source),
            markdown::table(&table)
        )
    }
}
