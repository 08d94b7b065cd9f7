//! `pld curve --over epochs`: one bracket row per epoch.

use super::bracket::{method, tolerance, Reader};
use super::number::{epochs, lower, raw, upper};
use super::text_table::{wrap, Align, Column, TextTable};
use super::{csv, markdown, Report};
use crate::over_epochs::OverEpochsReport;

impl OverEpochsReport {
    fn title(&self) -> String {
        format!(
            "ε after each epoch of {}: guaranteed bracket at δ = {:e}",
            self.source, self.delta
        )
    }

    fn rows(&self, reader: Reader) -> TextTable {
        let mut table = match reader {
            Reader::People => TextTable::new(vec![
                Column::new("epochs", Align::Right),
                Column::new(self.count_unit, Align::Right),
                Column::new("ε upper bound", Align::Right),
                Column::new("ε lower bound", Align::Right),
                Column::new("tolerance", Align::Left),
                Column::new("method", Align::Left),
            ]),
            Reader::Machines => TextTable::new(
                [
                    "epochs",
                    "count",
                    "epsilon_upper",
                    "epsilon_lower",
                    "tolerance_met",
                    "grid_step",
                ]
                .iter()
                .map(|h| Column::new(h, Align::Left))
                .collect(),
            ),
        };
        for p in &self.points {
            table.push(match reader {
                Reader::People => vec![
                    epochs(p.epochs),
                    p.count.to_string(),
                    upper(p.epsilon.upper),
                    lower(p.epsilon.lower),
                    tolerance(&p.settings),
                    method(&p.settings),
                ],
                Reader::Machines => vec![
                    raw(p.epochs),
                    p.count.to_string(),
                    raw(p.epsilon.upper),
                    raw(p.epsilon.lower),
                    p.settings.tolerance_met.to_string(),
                    p.settings.grid_step.map(raw).unwrap_or_default(),
                ],
            });
        }
        table
    }
}

impl Report for OverEpochsReport {
    fn table(&self) -> String {
        let mut text = wrap("", &self.title(), 100, "  ");
        if let Some(about) = &self.about {
            text.push('\n');
            text.push_str(&wrap("  ", about, 100, "  "));
        }
        text.push_str("\n\n");
        text.push_str(&self.rows(Reader::People).aligned(""));
        text
    }

    fn csv(&self) -> String {
        csv::csv(&self.rows(Reader::Machines))
    }

    fn markdown(&self) -> String {
        format!(
            "**{}**\n\n{}",
            markdown::cell(&self.title()),
            markdown::table(&self.rows(Reader::People))
        )
    }
}
