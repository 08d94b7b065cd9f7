//! `pld ledger init`, `record` and `show`: the recorded events, merged, and the budget.

use super::number::{input, lower, upper};
use super::text_table::{Align, Column, TextTable};
use super::{csv, markdown, Report};
use pld_accountant::spec::Event;
use pld_accountant::{Bracket, Ledger};
use serde::Serialize;
use serde_json::Value;

/// A ledger's contents, after a change or as it is.
#[derive(Debug, Serialize)]
pub struct LedgerReport {
    /// The ledger file.
    pub file: String,
    /// The event just recorded, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Value>,
    /// `"add_remove"` or `"replace"`.
    pub neighbouring: Value,
    /// Accepted `record` calls.
    pub releases: u64,
    /// Σ count.
    pub total_count: u64,
    /// The events, identical ones merged (as a specification writes them).
    pub events: Value,
    /// The budget and the guaranteed ε bracket at its δ, if there is a budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetReport>,
}

/// The budget and what is spent of it.
#[derive(Debug, Serialize)]
pub struct BudgetReport {
    #[serde(serialize_with = "super::number::serialize")]
    pub epsilon: f64,
    #[serde(serialize_with = "super::number::serialize")]
    pub delta: f64,
    /// ε of everything recorded at the budget's δ (absent when not computed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spent_epsilon: Option<Bracket>,
}

impl LedgerReport {
    pub fn new(
        file: &str,
        ledger: &Ledger,
        recorded: Option<&Event>,
        spent: Option<Bracket>,
    ) -> LedgerReport {
        let spec = ledger.spec_json();
        let recorded = recorded.and_then(|event| {
            // The recorded event as the specification writes it: its group, with its count.
            let groups = ledger.groups();
            let index = groups.iter().position(|g| {
                g.mechanism() == event.mechanism() && g.sampling() == event.sampling()
            })?;
            let mut json = spec["events"][index].clone();
            json["count"] = event.count().into();
            Some(json)
        });
        LedgerReport {
            file: file.to_string(),
            recorded,
            neighbouring: spec["neighbouring"].clone(),
            releases: ledger.releases(),
            total_count: ledger.total_count(),
            events: spec["events"].clone(),
            budget: ledger.budget().map(|b| BudgetReport {
                epsilon: b.epsilon,
                delta: b.delta,
                spent_epsilon: spent,
            }),
        }
    }

    fn rows(&self) -> TextTable {
        let mut table = TextTable::new(vec![
            Column::new("count", Align::Right),
            Column::new("event", Align::Left),
        ]);
        for event in self.events.as_array().into_iter().flatten() {
            let count = event["count"].to_string();
            let mut event = event.clone();
            if let Some(object) = event.as_object_mut() {
                object.remove("count");
            }
            table.push(vec![count, event.to_string()]);
        }
        table
    }
}

impl Report for LedgerReport {
    fn table(&self) -> String {
        let mut text = String::new();
        if let Some(recorded) = &self.recorded {
            text.push_str(&format!("recorded {recorded}\n"));
        }
        text.push_str(&format!(
            "ledger {} ({} neighbouring): {} releases, {} runs\n",
            self.file,
            self.neighbouring.as_str().unwrap_or("?"),
            self.releases,
            self.total_count
        ));
        if self.total_count > 0 {
            text.push_str(&self.rows().aligned("  "));
            text.push('\n');
        }
        match &self.budget {
            Some(budget) => {
                text.push_str(&format!(
                    "budget: epsilon {} at delta = {}",
                    input(budget.epsilon),
                    input(budget.delta)
                ));
                if let Some(spent) = budget.spent_epsilon {
                    text.push_str(&format!(
                        "; spent: epsilon <= {} (lower bound {})",
                        upper(spent.upper),
                        lower(spent.lower)
                    ));
                }
            }
            None => text.push_str("no budget"),
        }
        text
    }

    fn csv(&self) -> String {
        csv::csv(&self.rows())
    }

    fn markdown(&self) -> String {
        markdown::table(&self.rows())
    }
}
