//! Comma-separated values (RFC 4180 quoting).

use super::text_table::TextTable;

/// One CSV field: quoted when it holds a comma, a quote or a line break.
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The header line and one line per row, each ending with a line break removed at the end.
pub fn csv(table: &TextTable) -> String {
    let line =
        |cells: Vec<&str>| -> String { cells.into_iter().map(field).collect::<Vec<_>>().join(",") };
    let mut lines = vec![line(
        table.columns.iter().map(|c| c.header.as_str()).collect(),
    )];
    for row in &table.rows {
        lines.push(line(row.iter().map(String::as_str).collect()));
    }
    lines.join("\n")
}
