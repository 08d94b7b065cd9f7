//! GitHub-flavoured Markdown tables.

use super::text_table::{Align, TextTable};

/// One cell: pipes escaped, line breaks flattened.
pub fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The table, numbers right-aligned.
pub fn table(table: &TextTable) -> String {
    let line = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let mut lines = vec![
        line(table.columns.iter().map(|c| cell(&c.header)).collect()),
        line(
            table
                .columns
                .iter()
                .map(|c| match c.align {
                    Align::Left => "---".to_string(),
                    Align::Right => "---:".to_string(),
                })
                .collect(),
        ),
    ];
    for row in &table.rows {
        lines.push(line(row.iter().map(|c| cell(c)).collect()));
    }
    lines.join("\n")
}
