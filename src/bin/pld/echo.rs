//! The inputs an answer was computed from, echoed beside it (table and JSON), so that a
//! printed or saved answer says what it is about: no number without its σ, q and steps, or
//! without the specification's size.

use crate::dp_sgd_flags::DpSgd;
use crate::render::Report;
use pld_accountant::CompositionSpec;
use serde::Serialize;

/// What was accounted, as given or derived from the flags.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inputs {
    /// Where the composition came from, e.g. `preset mnist-dp-sgd`.
    pub source: String,
    /// Total number of mechanism runs in the composition (Σ count over its events).
    pub total_count: u64,
    /// The DP-SGD run, when it was given by flags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dp_sgd: Option<DpSgdInputs>,
}

/// A DP-SGD run given by flags, with every default made explicit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DpSgdInputs {
    /// Noise standard deviation σ (noise multiplier × clipping norm).
    pub sigma: f64,
    /// Clipping norm (the per-record L2 sensitivity).
    pub sensitivity: f64,
    /// Poisson sampling rate q.
    pub sampling_rate: f64,
    /// Number of noisy steps.
    pub steps: u64,
}

impl Inputs {
    /// The echo of a composition read from `source`, and of the DP-SGD flags if any.
    pub fn new(source: &str, spec: &CompositionSpec, dp_sgd: Option<&DpSgd>) -> Inputs {
        Inputs {
            source: source.to_string(),
            total_count: spec.total_count(),
            dp_sgd: dp_sgd.map(|run| DpSgdInputs {
                sigma: run.sigma,
                sensitivity: run.sensitivity,
                sampling_rate: run.sampling_rate,
                steps: run.steps,
            }),
        }
    }

    /// One line for tables: `inputs: <source>; 1000 mechanism runs`.
    pub fn line(&self) -> String {
        let runs = if self.total_count == 1 {
            "1 mechanism run".to_string()
        } else {
            format!("{} mechanism runs", self.total_count)
        };
        format!("inputs: {}; {runs}", self.source)
    }
}

/// A report with its inputs: JSON gets an `"inputs"` object beside the report's keys, tables
/// an `inputs:` line below; CSV and Markdown stay plain tables of the rows.
#[derive(Debug, Serialize)]
pub struct Echoed<'a, R: Report> {
    /// The report.
    #[serde(flatten)]
    pub report: &'a R,
    /// What it was computed from.
    pub inputs: &'a Inputs,
}

impl<R: Report> Report for Echoed<'_, R> {
    fn table(&self) -> String {
        format!(
            "{}\n\n{}",
            self.report.table().trim_end(),
            self.inputs.line()
        )
    }

    fn csv(&self) -> String {
        self.report.csv()
    }

    fn markdown(&self) -> String {
        self.report.markdown()
    }
}
