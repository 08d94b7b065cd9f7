//! `pld presets`: the built-in examples, one line each.

use super::number::input;
use super::text_table::{Align, Column, TextTable};
use super::{csv, markdown, Report};
use pld_accountant::spec::presets::PRESETS;
use serde::Serialize;

/// The list of presets as printed.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct PresetList(Vec<PresetEntry>);

/// One preset.
#[derive(Debug, Clone, Serialize)]
pub struct PresetEntry {
    name: &'static str,
    description: &'static str,
    delta: f64,
    source: &'static str,
    spec: serde_json::Value,
}

impl PresetList {
    /// Every built-in preset.
    pub fn all() -> PresetList {
        PresetList(
            PRESETS
                .iter()
                .map(|p| PresetEntry {
                    name: p.name(),
                    description: p.description(),
                    delta: p.delta(),
                    source: p.source(),
                    spec: p.spec_json(),
                })
                .collect(),
        )
    }

    fn rows(&self, machines: bool) -> TextTable {
        let mut table = TextTable::new(vec![
            Column::new("name", Align::Left),
            Column::new(if machines { "delta" } else { "δ" }, Align::Right),
            Column::new("description", Align::Left),
        ]);
        for p in &self.0 {
            table.push(vec![p.name.into(), input(p.delta), p.description.into()]);
        }
        table
    }
}

impl Report for PresetList {
    fn table(&self) -> String {
        let width = self.0.iter().map(|p| p.name.len()).max().unwrap_or(0);
        let mut lines: Vec<String> = self
            .0
            .iter()
            .map(|p| format!("{:<width$}  {}", p.name, p.description))
            .collect();
        lines.push(String::new());
        let delta = match self.0.first() {
            Some(first) if self.0.iter().all(|p| p.delta == first.delta) => {
                format!("δ = {}", input(first.delta))
            }
            _ => "the preset's δ".into(),
        };
        lines.push(format!(
            "Use: pld compare --preset NAME ({delta} unless --delta); \
             pld presets NAME prints its specification."
        ));
        lines.join("\n")
    }

    fn csv(&self) -> String {
        csv::csv(&self.rows(true))
    }

    fn markdown(&self) -> String {
        markdown::table(&self.rows(false))
    }
}
