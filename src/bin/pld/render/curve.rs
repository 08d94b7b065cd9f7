//! `pld curve`: one bracket row per requested value.

use super::bracket::{delta_rows, epsilon_rows, Reader};
use super::text_table::{wrap, TextTable};
use super::{csv, markdown, Report};
use crate::curve::{CurveReport, Points};

impl CurveReport {
    fn rows(&self, reader: Reader) -> TextTable {
        match &self.points {
            Points::Epsilon(answers) => epsilon_rows(answers, reader),
            Points::Delta(answers) => delta_rows(answers, reader),
        }
    }

    fn title(&self) -> String {
        let what = match self.points {
            Points::Epsilon(_) => "guaranteed bracket on ε for each δ",
            Points::Delta(_) => "guaranteed bracket on δ for each ε",
        };
        format!("privacy curve of {}: {what}", self.source)
    }

    fn about(&self) -> String {
        self.about.clone().unwrap_or_default()
    }
}

impl Report for CurveReport {
    fn table(&self) -> String {
        let mut text = wrap("", &self.title(), 100, "  ");
        if self.about.is_some() {
            text.push('\n');
            text.push_str(&wrap("  ", &self.about(), 100, "  "));
        }
        text.push_str("\n\n");
        text.push_str(&self.rows(Reader::People).aligned(""));
        text
    }

    fn csv(&self) -> String {
        csv::csv(&self.rows(Reader::Machines))
    }

    fn markdown(&self) -> String {
        let about = match &self.about {
            Some(a) => format!(" ({})", markdown::cell(a)),
            None => String::new(),
        };
        format!(
            "**{}**{about}\n\n{}",
            markdown::cell(&self.title()),
            markdown::table(&self.rows(Reader::People))
        )
    }
}
