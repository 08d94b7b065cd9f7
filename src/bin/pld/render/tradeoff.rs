//! `pld tradeoff`: the β bracket per α, then TPR at low FPR and the advantage.

use super::number::{input, lower, raw, short, upper};
use super::text_table::{wrap, Align, Column, TextTable};
use super::{csv, markdown, Report};
use crate::tradeoff::TradeoffReport;

impl TradeoffReport {
    fn title(&self) -> String {
        format!(
            "membership-inference trade-off of {}: for each false-positive rate α, the lowest \
             false-negative rate β any attack can reach, guaranteed bracket",
            self.source
        )
    }

    fn people_rows(&self) -> TextTable {
        let mut table = TextTable::new(vec![
            Column::new("α (FPR)", Align::Right),
            Column::new("β at least (guarantee)", Align::Right),
            Column::new("β at most", Align::Right),
            Column::new("TPR at most", Align::Right),
        ]);
        for p in &self.curve.points {
            table.push(vec![
                input(p.alpha),
                lower(p.beta.lower),
                upper(p.beta.upper),
                upper(1.0 - p.beta.lower),
            ]);
        }
        table
    }

    fn summary(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .curve
            .tpr_at_fpr
            .iter()
            .map(|t| {
                format!(
                    "TPR at FPR {}: at most {} (at least {})",
                    input(t.fpr),
                    upper(t.tpr.upper),
                    lower(t.tpr.lower)
                )
            })
            .collect();
        lines.push(format!(
            "advantage max(TPR − FPR): at most {} (at least {})",
            upper(self.curve.advantage.upper),
            lower(self.curve.advantage.lower)
        ));
        lines
    }

    fn how(&self) -> String {
        let grid = match self.curve.grid_step {
            Some(h) => format!("a PLD on a grid of {} nats", short(h)),
            None => "the exact Gaussian closed form".into(),
        };
        format!(
            "β(α) ≥ sup over ε ≥ 0 of max(0, 1 − δ(ε) − e^ε·α, e^−ε·(1 − δ(ε) − α)) (f-DP from \
             the privacy profile): the lower end uses upper bounds on δ(ε), the upper end lower \
             bounds. δ(ε) read from {grid} at ε = 0, {}, ..., {}.",
            short(self.curve.epsilon_spacing),
            short(self.curve.epsilon_max)
        )
    }
}

impl Report for TradeoffReport {
    fn table(&self) -> String {
        let mut text = wrap("", &self.title(), 100, "  ");
        if let Some(about) = &self.about {
            text.push('\n');
            text.push_str(&wrap("  ", about, 100, "  "));
        }
        text.push_str("\n\n");
        text.push_str(&self.people_rows().aligned(""));
        text.push_str("\n\n");
        text.push_str(&self.summary().join("\n"));
        text.push_str("\n\n");
        text.push_str(&wrap("", &self.how(), 100, ""));
        text
    }

    fn csv(&self) -> String {
        let mut table = TextTable::new(
            [
                "alpha",
                "beta_lower",
                "beta_upper",
                "tpr_upper",
                "tpr_lower",
            ]
            .iter()
            .map(|h| Column::new(h, Align::Left))
            .collect(),
        );
        for p in &self.curve.points {
            table.push(vec![
                raw(p.alpha),
                raw(p.beta.lower),
                raw(p.beta.upper),
                raw(1.0 - p.beta.lower),
                raw(1.0 - p.beta.upper),
            ]);
        }
        csv::csv(&table)
    }

    fn markdown(&self) -> String {
        let lines: Vec<String> = self.summary().iter().map(|l| format!("- {l}")).collect();
        format!(
            "**{}**\n\n{}\n\n{}\n\n{}",
            markdown::cell(&self.title()),
            markdown::table(&self.people_rows()),
            lines.join("\n"),
            self.how()
        )
    }
}
