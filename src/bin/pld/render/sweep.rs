//! `pld sweep`: the ε upper bounds as a matrix (table, Markdown) or one line per cell (CSV).

use super::number::{input, raw};
use super::text_table::{wrap, Align, Column, TextTable};
use super::{csv, markdown, Report};
use crate::sweep::SweepReport;
use pld_accountant::Bound;

/// Decimals of the ε upper bounds in the matrix (rounded up).
const MATRIX_DECIMALS: usize = 3;

impl SweepReport {
    fn title(&self) -> String {
        format!(
            "guaranteed ε upper bound at δ = {:e}: {} across, {} down; fixed: {}",
            self.delta,
            self.x.parameter.name(),
            self.y.parameter.name(),
            self.fixed
        )
    }

    /// Rows = y values, columns = x values; a cell whose tolerance was not met ends in `*`.
    fn matrix(&self) -> TextTable {
        let corner = format!("{} \\ {}", self.y.parameter.name(), self.x.parameter.name());
        let mut columns = vec![Column::new(&corner, Align::Right)];
        columns.extend(
            self.x
                .values
                .iter()
                .map(|&v| Column::new(&input(v), Align::Right)),
        );
        let mut table = TextTable::new(columns);
        for (j, &yv) in self.y.values.iter().enumerate() {
            let mut row = vec![input(yv)];
            for i in 0..self.x.values.len() {
                row.push(self.cell(i, j).map_or_else(String::new, |c| {
                    let mut text =
                        Bound::Upper.text_with_decimals(c.epsilon.upper, MATRIX_DECIMALS);
                    if !c.tolerance_met {
                        text.push('*');
                    }
                    text
                }));
            }
            table.push(row);
        }
        table
    }

    fn footer(&self) -> String {
        let unmet = self.cells.iter().filter(|c| !c.tolerance_met).count();
        let mut text = format!(
            "Each value is rounded up: safe to publish ({} cells in {:.2} s).",
            self.cells.len(),
            self.seconds
        );
        if unmet > 0 {
            text.push_str(&format!(
                " * {unmet} cells did not meet the tolerance (their bracket is wider than asked; \
                 the upper bound still holds)."
            ));
        }
        text.push_str(" `--format csv` or `json` gives both ends of every bracket.");
        text
    }
}

impl Report for SweepReport {
    fn table(&self) -> String {
        format!(
            "{}\n\n{}\n\n{}\n",
            wrap("", &self.title(), 100, "  "),
            self.matrix().aligned(""),
            wrap("", &self.footer(), 100, "")
        )
    }

    fn csv(&self) -> String {
        let mut table = TextTable::new(
            [
                self.x.parameter.name(),
                self.y.parameter.name(),
                "steps",
                "epsilon_upper",
                "epsilon_lower",
                "tolerance_met",
            ]
            .iter()
            .map(|h| Column::new(h, Align::Left))
            .collect(),
        );
        for c in &self.cells {
            table.push(vec![
                raw(c.x),
                raw(c.y),
                c.steps.to_string(),
                raw(c.epsilon.upper),
                raw(c.epsilon.lower),
                c.tolerance_met.to_string(),
            ]);
        }
        csv::csv(&table)
    }

    fn markdown(&self) -> String {
        format!(
            "**{}**\n\n{}\n\n{}\n",
            markdown::cell(&self.title()),
            markdown::table(&self.matrix()),
            self.footer()
        )
    }
}
