//! The inputs an answer was computed from, echoed beside it (table and JSON), so that a
//! printed or saved answer says what it is about: no number without its σ, q and steps, or
//! without the specification's size.

use crate::dp_sgd_flags::{DpSgd, Scheme};
use crate::render::Report;
use pld_accountant::CompositionSpec;
use serde::Serialize;

/// What was accounted, as given or derived from the flags.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inputs {
    /// Where the composition came from, e.g. `preset mnist-dp-sgd`.
    pub source: String,
    /// Σ count over the composition's events (an event's count is its number of runs, or of
    /// epochs for random allocation).
    pub total_count: u64,
    /// Total number of mechanism runs: Σ count, with each epoch of random allocation or
    /// shuffling counted as its t steps.
    pub total_runs: u64,
    /// Epochs of random allocation or shuffling among them (0 when none).
    pub epochs: u64,
    /// The sampling schemes of the composition's events (`"none"`, `"poisson"`, ...), each
    /// once, in order of appearance.
    pub sampling: Vec<&'static str>,
    /// Why the bracket is wide by nature, when it is (shuffling: no bound with
    /// amplification is known; random allocation with 1 < k < t: no exact construction;
    /// truncated Poisson sampling whose batches are expected to be cut, at the answer's δ for
    /// `epsilon`, `delta` and `compare`; mechanisms accounted through a guarantee).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
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
    /// How batches are drawn (`--sampling`: poisson, fixed-batch, balls-in-bins, shuffle,
    /// truncated-poisson).
    pub sampling: &'static str,
    /// Sampling rate: Poisson's q, B/N for fixed batches, 1/t for balls-in-bins.
    pub sampling_rate: f64,
    /// Number of noisy steps.
    pub steps: u64,
    /// Balls-in-bins and shuffling: batches per epoch and epochs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps_per_epoch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u64>,
}

impl Inputs {
    /// The echo of a composition read from `source`, and of the DP-SGD flags if any.
    pub fn new(source: &str, spec: &CompositionSpec, dp_sgd: Option<&DpSgd>) -> Inputs {
        let mut total_runs: u64 = 0;
        let mut epochs: u64 = 0;
        let mut sampling: Vec<&'static str> = Vec::new();
        for event in spec.events() {
            let name = event.sampling().name();
            if !sampling.contains(&name) {
                sampling.push(name);
            }
            match event.sampling().steps_per_epoch() {
                Some(t) => {
                    total_runs = total_runs.saturating_add(event.count().saturating_mul(t));
                    epochs = epochs.saturating_add(event.count());
                }
                None => total_runs = total_runs.saturating_add(event.count()),
            }
        }
        Inputs {
            source: source.to_string(),
            total_count: spec.total_count(),
            total_runs,
            epochs,
            sampling,
            caveats: spec.caveats(),
            dp_sgd: dp_sgd.map(|run| {
                let allocation = match run.scheme {
                    Scheme::BallsInBins {
                        steps_per_epoch,
                        epochs,
                    }
                    | Scheme::Shuffle {
                        steps_per_epoch,
                        epochs,
                    } => Some((steps_per_epoch, epochs)),
                    _ => None,
                };
                DpSgdInputs {
                    sigma: run.sigma,
                    sensitivity: run.sensitivity,
                    sampling: run.scheme.name(),
                    sampling_rate: run.sampling_rate,
                    steps: run.steps,
                    steps_per_epoch: allocation.map(|a| a.0),
                    epochs: allocation.map(|a| a.1),
                }
            }),
        }
    }

    /// One line for tables: `inputs: <source>; 1000 mechanism runs` (with `, 10 epochs of
    /// random allocation` when there are some).
    pub fn line(&self) -> String {
        let mut runs = if self.total_runs == 1 {
            "1 mechanism run".to_string()
        } else {
            format!("{} mechanism runs", self.total_runs)
        };
        if self.epochs > 0 {
            let unit = if self.epochs == 1 { "epoch" } else { "epochs" };
            let schemes: Vec<&str> = self
                .sampling
                .iter()
                .filter_map(|&s| match s {
                    "random_allocation" => Some("random allocation"),
                    "shuffle" => Some("shuffled batches"),
                    _ => None,
                })
                .collect();
            runs.push_str(&format!(
                " in {} {unit} of {}",
                self.epochs,
                schemes.join(" and ")
            ));
        }
        let mut line = format!("inputs: {}; {runs}", self.source);
        for caveat in &self.caveats {
            line.push_str(&format!("\nnote: {caveat}"));
        }
        line
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
