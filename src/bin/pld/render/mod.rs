//! Exporters: every report is a `Serialize` struct computed once, then printed as JSON, an
//! aligned table, CSV or Markdown (hyperfine's model). A new report implements [`Report`] in
//! its own file here.

mod bracket;
mod calibration;
mod comparison;
mod csv;
mod curve;
mod ledger;
mod markdown;
pub mod number;
mod over_epochs;
mod presets;
mod sweep;
mod text_table;
mod tradeoff;

use crate::args::Format;
use serde::Serialize;

pub use ledger::LedgerReport;
pub use presets::PresetList;

/// A result that can be printed in every [`Format`].
pub trait Report: Serialize {
    /// Aligned text for people (at most 100 columns where the data allows).
    fn table(&self) -> String;
    /// Comma-separated values: a header line, then one line per row, numbers in full
    /// precision.
    fn csv(&self) -> String;
    /// GitHub-flavoured Markdown.
    fn markdown(&self) -> String;
}

/// `report` in `format`.
pub fn render<R: Report>(report: &R, format: Format) -> String {
    match format {
        Format::Json => json(report),
        Format::Table => report.table(),
        Format::Csv => report.csv(),
        Format::Markdown => report.markdown(),
    }
}

/// Pretty JSON; infinities are already strings (`"inf"`) in every report.
pub fn json<T: Serialize>(value: &T) -> String {
    // Serializing plain structs of numbers and strings to a String cannot fail; should it,
    // the message still ends up on standard output rather than in a panic.
    serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize: {e}\"}}"))
}
