//! The inputs an answer was computed from, echoed beside it (table and JSON), so that a
//! printed or saved answer says what it is about: no number without its σ, q and steps, or
//! without the specification's size.

use crate::dp_sgd_flags::{DpSgd, Scheme};
use crate::render::Report;
use pld_accountant::mechanism::truncated_poisson::truncation_probability;
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
    /// truncated Poisson sampling whose batches are expected to be cut).
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
        let mut caveats = Vec::new();
        if sampling.contains(&"shuffle") {
            caveats.push(SHUFFLE_CAVEAT.to_string());
        }
        let several = spec.events().iter().any(|event| {
            event
                .sampling()
                .random_allocation_steps()
                .is_some_and(|(t, k)| 1 < k && k < t)
        });
        if several {
            caveats.push(SEVERAL_PARTICIPATIONS_CAVEAT.to_string());
        }
        caveats.extend(spec.events().iter().filter_map(|event| {
            let (rate, max_batch_size, dataset_size) =
                event.sampling().truncated_poisson_parameters()?;
            truncation_caveat(rate, max_batch_size, dataset_size, event.count())
        }));
        Inputs {
            source: source.to_string(),
            total_count: spec.total_count(),
            total_runs,
            epochs,
            sampling,
            caveats,
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

/// Why random allocation with several participations per epoch has a bracket a few
/// percent wide.
pub const SEVERAL_PARTICIPATIONS_CAVEAT: &str = "random allocation with 1 < k < t \
     participations per epoch: no exact construction is known. The upper bound splits each \
     epoch into k allocations of one step (Feldman & Shenfeld 2025); the lower bound is what \
     a statistic of the outputs provably leaks. Brackets of 0.1% to a few percent are \
     expected and do not narrow with the grid.";

/// Expected number of cut steps below which truncated Poisson sampling gets no caveat (on
/// MNIST-sized runs the bracket is then within 1e-4 of plain Poisson sampling's; README,
/// "Truncated Poisson sampling").
const NEGLIGIBLE_CUT_STEPS: f64 = 0.01;

/// Why a truncated Poisson event's bracket is wide, when its batches are expected to be cut
/// in at least [`NEGLIGIBLE_CUT_STEPS`] of its `count` steps: how many, what the two ends
/// assume, and the smallest cap that would make cuts negligible. `None` when they already
/// are.
fn truncation_caveat(
    rate: f64,
    max_batch_size: u64,
    dataset_size: u64,
    count: u64,
) -> Option<String> {
    // P(Bin(n, q) ≥ B), from above: the chance that a step's batch is cut on the larger
    // neighbour (n + 1 records; the n-record dataset's own chance is at most this).
    let larger = dataset_size.saturating_add(1);
    let cut = |cap: u64| truncation_probability(rate, cap, larger).upper;
    let steps = count as f64;
    let expected = steps * cut(max_batch_size);
    // (A NaN tail gives no note either.)
    if expected.is_nan() || expected < NEGLIGIBLE_CUT_STEPS {
        return None;
    }
    // The smallest cap with negligible cuts: doubling, then bisection (the tail falls with
    // the cap; a cap above n never cuts).
    let negligible = |cap: u64| cap >= larger || steps * cut(cap) < NEGLIGIBLE_CUT_STEPS;
    let mut high = max_batch_size.max(1);
    while !negligible(high) {
        high = high.saturating_mul(2).min(larger);
    }
    let mut low = max_batch_size;
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if negligible(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    Some(format!(
        "truncated Poisson sampling (q {rate}, B {max_batch_size}, n {dataset_size}): about \
         {} of the {count} steps are expected to cut their batch (P(Bin(n, q) ≥ B) = \
         {:.2e}). The upper bound lets each cut step expose the record at twice the clipping \
         norm; the lower bound is Poisson sampling at the chance of being kept. The truth lies \
         between, and only the upper end may be published. A larger cap narrows the \
         bracket: with B ≥ {high}, fewer than {NEGLIGIBLE_CUT_STEPS} cut steps are expected.",
        significant(expected),
        cut(max_batch_size),
    ))
}

/// A count for prose: two significant figures below 100, whole numbers above.
fn significant(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{}", format!("{x:.2e}").parse::<f64>().unwrap_or(x))
    }
}

/// Why a shuffled composition's bracket is wide.
pub const SHUFFLE_CAVEAT: &str = "shuffled batches: no bound with amplification is known. \
     The upper bound counts each epoch as one unamplified step; the lower bound is what two \
     neighbouring datasets provably leak (Chua et al., ICML 2024). The truth lies between. \
     Poisson accounting at rate 1/t is not a guarantee here, and can lie below the proven \
     lower bound (pld compare, row poisson_claim).";

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The cap named is the smallest with negligible cuts, checked against the tail itself
    /// (P(Bin(n, q) ≥ B) by the library, which the truncated Poisson tests hold against
    /// direct sums and scipy); rare cuts get no note.
    #[test]
    fn truncation_note_names_the_smallest_cap_with_negligible_cuts() {
        let (q, n, steps) = (256.0 / 60_000.0, 60_000, 14_063);
        let note = truncation_caveat(q, 300, n, steps).expect("cuts matter at B 300");
        assert!(note.contains("about 54.5 of the 14063 steps"), "{note}");
        let cap: u64 = note
            .rsplit("B ≥ ")
            .next()
            .and_then(|rest| rest.split(',').next())
            .and_then(|number| number.parse().ok())
            .expect("the note names a cap");
        let expected = |b: u64| steps as f64 * truncation_probability(q, b, n + 1).upper;
        assert!(expected(cap) < NEGLIGIBLE_CUT_STEPS, "{note}");
        assert!(expected(cap - 1) >= NEGLIGIBLE_CUT_STEPS, "{note}");
        assert_eq!(truncation_caveat(q, cap, n, steps), None);
        // A cap above the dataset never cuts.
        assert_eq!(truncation_caveat(0.5, 101, 100, 1_000), None);
        // Every batch cut (q = 1): only a cap above n makes cuts negligible.
        let all = truncation_caveat(1.0, 10, 100, 5).expect("every step cuts");
        assert!(all.contains("B ≥ 101,"), "{all}");
        // Huge datasets and counts end (doubling, then bisection, both bounded).
        let huge =
            truncation_caveat(1e-6, 1, 1_000_000_000_000, 1_000_000_000_000).expect("cuts matter");
        assert!(huge.contains("B ≥ "), "{huge}");
    }
}
