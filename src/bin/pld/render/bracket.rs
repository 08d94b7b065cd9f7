//! `pld epsilon` and `pld delta`: one guaranteed bracket, and the rows `pld curve` repeats.

use super::number::{input, lower, raw, short, upper};
use super::text_table::{Align, Column, TextTable};
use super::{csv, markdown, Report};
use pld_accountant::{Bracket, DeltaAnswer, EpsilonAnswer, Settings};

/// Who reads the cells: people (rounded, with units) or programs (full precision).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    People,
    Machines,
}

impl Report for EpsilonAnswer {
    fn table(&self) -> String {
        bracket_text(
            format!("epsilon for delta = {}", input(self.delta)),
            self.epsilon,
            &self.settings,
        )
    }

    fn csv(&self) -> String {
        csv::csv(&epsilon_rows(std::slice::from_ref(self), Reader::Machines))
    }

    fn markdown(&self) -> String {
        markdown::table(&epsilon_rows(std::slice::from_ref(self), Reader::People))
    }
}

impl Report for DeltaAnswer {
    fn table(&self) -> String {
        bracket_text(
            format!("delta for epsilon = {}", input(self.epsilon)),
            self.delta,
            &self.settings,
        )
    }

    fn csv(&self) -> String {
        csv::csv(&delta_rows(std::slice::from_ref(self), Reader::Machines))
    }

    fn markdown(&self) -> String {
        markdown::table(&delta_rows(std::slice::from_ref(self), Reader::People))
    }
}

/// One row per ε answer.
pub fn epsilon_rows(answers: &[EpsilonAnswer], reader: Reader) -> TextTable {
    bracket_rows(
        ["δ", "ε upper bound", "ε lower bound"],
        ["delta", "epsilon_upper", "epsilon_lower"],
        answers.iter().map(|a| (a.delta, a.epsilon, &a.settings)),
        reader,
    )
}

/// One row per δ answer.
pub fn delta_rows(answers: &[DeltaAnswer], reader: Reader) -> TextTable {
    bracket_rows(
        ["ε", "δ upper bound", "δ lower bound"],
        ["epsilon", "delta_upper", "delta_lower"],
        answers.iter().map(|a| (a.epsilon, a.delta, &a.settings)),
        reader,
    )
}

fn bracket_rows<'a>(
    people: [&str; 3],
    machines: [&str; 3],
    answers: impl Iterator<Item = (f64, Bracket, &'a Settings)>,
    reader: Reader,
) -> TextTable {
    let mut table = match reader {
        Reader::People => TextTable::new(vec![
            Column::new(people[0], Align::Right),
            Column::new(people[1], Align::Right),
            Column::new(people[2], Align::Right),
            Column::new("width", Align::Right),
            Column::new("tolerance", Align::Left),
            Column::new("method", Align::Left),
        ]),
        Reader::Machines => TextTable::new(
            machines
                .iter()
                .chain(&[
                    "method",
                    "grid_step",
                    "bracket_width",
                    "target_width",
                    "tolerance_met",
                    "worse_direction",
                ])
                .map(|h| Column::new(h, Align::Left))
                .collect(),
        ),
    };
    for (asked, bracket, settings) in answers {
        table.push(match reader {
            Reader::People => vec![
                input(asked),
                upper(bracket.upper),
                lower(bracket.lower),
                short(settings.bracket_width),
                tolerance(settings),
                method(settings),
            ],
            Reader::Machines => vec![
                raw(asked),
                raw(bracket.upper),
                raw(bracket.lower),
                settings.method.to_string(),
                settings.grid_step.map(raw).unwrap_or_default(),
                raw(settings.bracket_width),
                raw(settings.target_width),
                settings.tolerance_met.to_string(),
                settings.worse_direction.to_string(),
            ],
        });
    }
    table
}

/// Whether the bracket is as narrow as asked, in a few words ("NOT met" says why).
pub fn tolerance(s: &Settings) -> String {
    match (s.tolerance_met, s.stopped_by.as_deref()) {
        (true, _) => "met".into(),
        (false, Some("mass at infinite loss")) => "NOT met: mass at infinite loss (the grid's \
             upper bound charges more than δ to +∞ loss, mass it could not place; its lower \
             end lies far below the grid's 600 nats)"
            .into(),
        (false, Some(limit)) => format!("NOT met: {limit}"),
        (false, None) => "NOT met: wider than asked".into(),
    }
}

/// How the bracket was computed, in a few words (and where the upper end came from, when
/// not from the same computation).
pub fn method(s: &Settings) -> String {
    let method = match s.grid_step {
        Some(h) => format!("PLD, grid step {h:.3e}"),
        None if s.method == "closed_form" => "closed forms (no grid)".to_string(),
        None => "exact Gaussian (closed form)".to_string(),
    };
    match s.upper_method.as_deref() {
        Some(upper) if s.grid_step.is_some() => {
            format!("{method}; upper: {}", method_name(upper))
        }
        _ => method,
    }
}

/// A readable name of a settings' `upper_method` or `lower_method`.
fn method_name(upper_method: &str) -> &str {
    match upper_method {
        "analytic_gaussian" => "exact Gaussian (closed form)",
        "rdp_conversion" => "RDP conversion",
        "zcdp_conversion" => "zCDP conversion",
        "optimal_composition" => "optimal composition (Kairouz, Oh & Viswanath)",
        "bounded_range_adaptive" => "optimal adaptive composition (bounded range)",
        "two_output_exponential" => "exponential mechanism over two outputs, composed exactly",
        "infinite_loss" => "mass at infinite loss above δ",
        other => pld_accountant::analytic::composition_theorems::CompositionTheorem::ALL
            .iter()
            .find(|theorem| theorem.name() == other)
            .map_or(other, |theorem| theorem.title()),
    }
}

fn bracket_text(title: String, bracket: Bracket, settings_used: &Settings) -> String {
    format!(
        "{title}\n  upper bound (publish this)  {}\n  lower bound                 {}\n{}",
        upper(bracket.upper),
        lower(bracket.lower),
        settings(settings_used),
    )
}

/// `PLD (grid step h nats, n refinements)`, naming the finer grid of the upper bound when
/// there was one (`Settings::upper_grid_step`).
pub(super) fn grid_method(h: f64, s: &Settings) -> String {
    match s.upper_grid_step {
        None => format!(
            "PLD (grid step {h:.3e} nats, {} refinements)",
            s.refinements
        ),
        Some(fine) => format!(
            "PLD (grid step {h:.3e} nats, {} refinements; upper bound on {fine:.3e})",
            s.refinements
        ),
    }
}

fn settings(s: &Settings) -> String {
    let method = match s.grid_step {
        Some(h) => grid_method(h, s),
        None if s.method == "closed_form" => "closed forms (no grid)".to_string(),
        None => "exact Gaussian (closed form)".to_string(),
    };
    let method = match s.upper_method.as_deref() {
        Some(upper) => format!("{method}; upper bound: {}", method_name(upper)),
        None => method,
    };
    let method = match s.lower_method.as_deref() {
        // (A δ bracket's lower end at the mass at infinite loss: δ is at least that mass.)
        Some("infinite_loss") if s.upper_method.as_deref() != Some("infinite_loss") => {
            format!("{method}; lower bound: mass at infinite loss")
        }
        Some(other) => format!("{method}; lower bound: {}", method_name(other)),
        None => method,
    };
    let met = match (s.tolerance_met, s.stopped_by.as_deref()) {
        (true, _) => "met".to_string(),
        (false, Some("memory budget")) => {
            "NOT met: memory budget (a finer grid would exceed it; see --memory-budget)".into()
        }
        (false, Some("loss range")) => {
            "NOT met: loss range (ε lies past the grid's 600 nats; the lower end stops there)"
                .into()
        }
        (false, Some("mass at infinite loss")) => "NOT met: mass at infinite loss (the grid's \
             upper bound charges more than δ to +∞ loss, mass it could not place; its lower \
             end lies far below the grid's 600 nats)"
            .into(),
        (false, Some(limit)) => format!("NOT met: {limit}"),
        (false, None) => "NOT met: the bracket is wider than asked".into(),
    };
    format!(
        "  method                      {method}\n  bracket width               {} (target {}, {met})\n  worse direction             {}",
        short(s.bracket_width),
        short(s.target_width),
        s.worse_direction,
    )
}
