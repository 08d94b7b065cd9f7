//! `pld compare`: one row per method, then the methods that do not apply and why.

use super::number::{duration, input, lower, ratio, raw, upper, value};
use super::text_table::{wrap, Align, Column, TextTable};
use super::{csv, markdown, Report};
use crate::compare::CompareReport;
use pld_accountant::Kind;

/// Width the people's table is kept within.
const COLUMNS: usize = 100;
/// Width of the time column, fixed so that timings do not shift the table.
const TIME_WIDTH: usize = 10;

fn kind(kind: Kind) -> &'static str {
    match kind {
        Kind::UpperBound => "upper bound",
        Kind::LowerBound => "lower bound",
        Kind::Estimate => "estimate",
    }
}

fn kind_key(kind: Kind) -> &'static str {
    match kind {
        Kind::UpperBound => "upper_bound",
        Kind::LowerBound => "lower_bound",
        Kind::Estimate => "estimate",
    }
}

impl CompareReport {
    fn title(&self) -> String {
        format!(
            "ε at δ = {} for every method: {}",
            input(self.delta),
            self.source
        )
    }

    /// The applicable methods, for people; `with_detail` adds how each value was obtained.
    fn people_rows(&self, with_detail: bool) -> TextTable {
        let mut columns = vec![
            Column::new("method", Align::Left),
            Column::new("ε", Align::Right),
            Column::new("kind", Align::Left),
            Column::new("ratio to PLD upper", Align::Right),
            Column::new("time", Align::Right).min_width(TIME_WIDTH),
        ];
        if with_detail {
            columns.push(Column::new("how", Align::Left));
        }
        let mut table = TextTable::new(columns);
        for row in &self.rows {
            let mut cells = vec![
                row.method.to_string(),
                match row.kind {
                    Kind::UpperBound => upper(row.epsilon),
                    Kind::LowerBound => lower(row.epsilon),
                    Kind::Estimate => value(row.epsilon),
                },
                kind(row.kind).to_string(),
                row.ratio_to_pld_upper
                    .map(ratio)
                    .unwrap_or_else(|| "-".into()),
                duration(row.seconds),
            ];
            if with_detail {
                cells.push(row.detail.clone());
            }
            table.push(cells);
        }
        table
    }
}

impl CompareReport {
    /// The methods that do not apply, those with the same reason together, in report order.
    fn not_applicable_groups(&self) -> Vec<(Vec<&str>, &str)> {
        let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
        for row in &self.not_applicable {
            match groups.iter_mut().find(|g| g.1 == row.reason) {
                Some(group) => group.0.push(&row.method),
                None => groups.push((vec![&row.method], &row.reason)),
            }
        }
        groups
    }
}

impl Report for CompareReport {
    fn table(&self) -> String {
        let mut text = wrap("", &self.title(), COLUMNS, "  ");
        if let Some(about) = &self.about {
            text.push('\n');
            text.push_str(&wrap("  ", about, COLUMNS, "  "));
        }
        text.push_str(&format!("\n\n{}\n", self.people_rows(false).aligned("")));
        let groups = self.not_applicable_groups();
        if !groups.is_empty() {
            text.push_str("\nnot applicable\n");
            for (methods, reason) in groups {
                let entry = format!("{}: {reason}", methods.join(", "));
                text.push_str(&wrap("  ", &entry, COLUMNS, "      "));
                text.push('\n');
            }
        }
        text.push('\n');
        text.push_str(&wrap(
            "",
            "ratio: ε divided by the PLD upper bound's ε. Upper and lower bounds are \
             guaranteed; an estimate is neither. `--format markdown` or `json` also says how \
             each value was obtained.",
            COLUMNS,
            "",
        ));
        text
    }

    fn csv(&self) -> String {
        let headers = [
            "delta",
            "method",
            "epsilon",
            "kind",
            "ratio_to_pld_upper",
            "seconds",
            "detail",
            "not_applicable_reason",
        ];
        let mut table = TextTable::new(
            headers
                .iter()
                .map(|h| Column::new(h, Align::Left))
                .collect(),
        );
        for row in &self.rows {
            table.push(vec![
                raw(self.delta),
                row.method.to_string(),
                raw(row.epsilon),
                kind_key(row.kind).to_string(),
                row.ratio_to_pld_upper.map(raw).unwrap_or_default(),
                raw(row.seconds),
                row.detail.clone(),
                String::new(),
            ]);
        }
        for row in &self.not_applicable {
            let mut cells = vec![raw(self.delta), row.method.to_string()];
            cells.extend(std::iter::repeat_n(String::new(), 5));
            cells.push(row.reason.clone());
            table.push(cells);
        }
        csv::csv(&table)
    }

    fn markdown(&self) -> String {
        let about = self
            .about
            .as_ref()
            .map(|a| format!(" ({})", markdown::cell(a)))
            .unwrap_or_default();
        let mut text = format!(
            "**{}**{about}\n\n{}\n",
            markdown::cell(&self.title()),
            markdown::table(&self.people_rows(true))
        );
        let groups = self.not_applicable_groups();
        if !groups.is_empty() {
            text.push_str("\nNot applicable:\n\n");
            for (methods, reason) in groups {
                let names: Vec<String> = methods.iter().map(|m| format!("`{m}`")).collect();
                text.push_str(&format!(
                    "- {}: {}\n",
                    names.join(", "),
                    markdown::cell(reason)
                ));
            }
        }
        text.trim_end().to_string()
    }
}
