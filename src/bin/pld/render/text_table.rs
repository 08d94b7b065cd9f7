//! A table of text cells, aligned for people.

/// Which side a column's cells stick to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// One column: header, alignment and the smallest width (so that values of varying length,
/// such as timings, do not move the other columns).
#[derive(Debug, Clone)]
pub struct Column {
    pub header: String,
    pub align: Align,
    pub min_width: usize,
}

impl Column {
    pub fn new(header: &str, align: Align) -> Column {
        Column {
            header: header.into(),
            align,
            min_width: 0,
        }
    }

    pub fn min_width(mut self, width: usize) -> Column {
        self.min_width = width;
        self
    }
}

/// Header and rows; every row has one cell per column.
#[derive(Debug, Clone)]
pub struct TextTable {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<String>>,
}

/// Displayed width of a cell (the tables hold no double-width characters).
pub fn width(text: &str) -> usize {
    text.chars().count()
}

impl TextTable {
    pub fn new(columns: Vec<Column>) -> TextTable {
        TextTable {
            columns,
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The table with columns separated by two spaces, each line prefixed by `indent`,
    /// trailing spaces removed.
    pub fn aligned(&self, indent: &str) -> String {
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|cell| width(cell))
                    .chain([width(&c.header), c.min_width])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| -> String {
            let text: Vec<String> = cells
                .iter()
                .zip(&self.columns)
                .zip(&widths)
                .map(|((cell, column), &w)| {
                    let pad = " ".repeat(w.saturating_sub(width(cell)));
                    match column.align {
                        Align::Left => format!("{cell}{pad}"),
                        Align::Right => format!("{pad}{cell}"),
                    }
                })
                .collect();
            format!("{indent}{}", text.join("  "))
                .trim_end()
                .to_string()
        };
        let mut lines = vec![line(
            self.columns.iter().map(|c| c.header.as_str()).collect(),
        )];
        for row in &self.rows {
            lines.push(line(row.iter().map(String::as_str).collect()));
        }
        lines.join("\n")
    }
}

/// `first` followed by `text`, broken into lines of at most `width` characters (words longer
/// than that stay whole), every line after the first prefixed by `indent`. `first` is kept
/// as it is (alignment spaces included).
pub fn wrap(first: &str, text: &str, width: usize, indent: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut current = first.to_string();
    let mut fresh = true;
    for word in text.split_whitespace() {
        if !fresh && self::width(&current) + 1 + self::width(word) > width {
            lines.push(std::mem::take(&mut current));
            current.push_str(indent);
            fresh = true;
        }
        if !fresh {
            current.push(' ');
        }
        current.push_str(word);
        fresh = false;
    }
    lines.push(current);
    lines.join("\n")
}
