//! Renderers: JSON (the serialized answer) and tables for people.

use pld_accountant::{Bracket, DeltaAnswer, EpsilonAnswer, Settings};
use serde::Serialize;

pub fn json<T: Serialize>(answer: &T) -> String {
    serde_json::to_string_pretty(answer).expect("answers serialize")
}

pub fn epsilon_table(answer: &EpsilonAnswer) -> String {
    bracket_table(
        format!("epsilon for delta = {}", short_input(answer.delta)),
        answer.epsilon,
        &answer.settings,
    )
}

pub fn delta_table(answer: &DeltaAnswer) -> String {
    bracket_table(
        format!("delta for epsilon = {}", short_input(answer.epsilon)),
        answer.delta,
        &answer.settings,
    )
}

fn bracket_table(title: String, bracket: Bracket, settings_used: &Settings) -> String {
    format!(
        "{title}\n  upper bound (publish this)  {}\n  lower bound                 {}\n{}",
        number(bracket.upper),
        number(bracket.lower),
        settings(settings_used),
    )
}

fn settings(s: &Settings) -> String {
    let method = match s.grid_step {
        Some(h) => format!(
            "PLD (grid step {h:.3e} nats, {} refinements)",
            s.refinements
        ),
        None => "exact Gaussian (closed form)".to_string(),
    };
    let met = if s.tolerance_met {
        "met"
    } else {
        "NOT met: the bracket is wider than asked"
    };
    format!(
        "  method                      {method}\n  bracket width               {} (target {}, {met})\n  worse direction             {}",
        short(s.bracket_width),
        short(s.target_width),
        s.worse_direction,
    )
}

fn number(x: f64) -> String {
    if x.is_infinite() {
        "inf".into()
    } else if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) {
        format!("{x:.6e}")
    } else {
        format!("{x:.6}")
    }
}

/// A number the user typed, shown the way they would type it (1e-5, not 0.00001).
fn short_input(x: f64) -> String {
    if x != 0.0 && x.is_finite() && (x.abs() < 1e-3 || x.abs() >= 1e6) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

fn short(x: f64) -> String {
    if x.is_infinite() {
        "inf".into()
    } else {
        format!("{x:.2e}")
    }
}
