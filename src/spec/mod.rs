//! The composition specification: what was released, validated where it is built.
//!
//! The first stage of the pipeline: everything after it ([`crate::mechanism`],
//! [`crate::accountant`], …) takes a validated [`CompositionSpec`]. `docs/spec.md` documents
//! the format, every convention and the pair of distributions accounted for each mechanism.
//!
//! A [`CompositionSpec`] is a neighbouring relation and a non-empty list of [`Event`]s; an
//! event is a [`MechanismSpec`], a [`Sampling`] scheme and a `count`. None of these types can
//! hold an invalid value: their fields are private and every way in is checked — the
//! constructors and builder methods below, the JSON parser ([`CompositionSpec::from_json_str`])
//! and serde's `Deserialize` all go through the same checks and return the same
//! [`Error`], naming the parameter and the value. Nothing here panics on any
//! input.
//!
//! # Building a specification in Rust
//!
//! A mechanism is made by its constructor ([`MechanismSpec::gaussian`],
//! [`MechanismSpec::laplace`], ...), optionally given a sensitivity, sampled
//! ([`MechanismSpec::poisson`], [`MechanismSpec::fixed_batch`]) and repeated
//! ([`Event::repeat`]); the events are collected by a [`SpecBuilder`], which checks that each
//! fits the neighbouring relation:
//!
//! ```
//! use pld_accountant::{Accountant, AccountantOptions, CompositionSpec, MechanismSpec};
//!
//! // DP-SGD: 1000 steps of a Gaussian with σ = 1, Poisson rate 0.01, plus 10 Laplace counts.
//! let spec = CompositionSpec::add_remove()
//!     .event(MechanismSpec::gaussian(1.0)?.poisson(0.01)?.repeat(1000)?)
//!     .event(MechanismSpec::laplace(2.0)?.repeat(10)?)
//!     .build()?;
//! assert_eq!(spec.total_count(), 1010);
//!
//! // Invalid values are refused where they are given, naming the parameter.
//! let error = MechanismSpec::gaussian(-1.0).unwrap_err();
//! assert_eq!(error.to_string(), "invalid sigma = -1: must be a finite number > 0");
//!
//! // The same specification as JSON: identical after parsing, and serialized back to it.
//! let json = r#"{"neighbouring": "add_remove", "events": [
//!     {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 1000},
//!     {"mechanism": "laplace", "scale": 2.0, "count": 10}]}"#;
//! assert_eq!(CompositionSpec::from_json_str(json)?, spec);
//! let text = serde_json::to_string(&spec).expect("serializable");
//! assert_eq!(serde_json::from_str::<CompositionSpec>(&text).expect("valid"), spec);
//!
//! let answer = Accountant::new(&spec, AccountantOptions::default())?.epsilon_for_delta(1e-5)?;
//! assert!(answer.epsilon.lower <= answer.epsilon.upper);
//! # Ok::<(), pld_accountant::Error>(())
//! ```
//!
//! # The JSON format
//!
//! ```json
//! {
//!   "neighbouring": "add_remove",
//!   "events": [
//!     {"mechanism": "gaussian", "sigma": 1.0, "sensitivity": 1.0,
//!      "sampling": {"poisson": 0.01}, "count": 1000},
//!     {"mechanism": "laplace", "scale": 2.0, "count": 10},
//!     {"mechanism": "randomized_response", "epsilon": 0.5, "categories": 4},
//!     {"mechanism": "eps_delta", "epsilon": 0.1, "delta": 1e-6, "count": 100}
//!   ]
//! }
//! ```
//!
//! - `neighbouring`: `"add_remove"` (the default) or `"replace"`.
//! - `count`: how many times the event runs, a whole number in [1, 10¹²] (default 1).
//! - `sampling` (optional): `{"poisson": q}` with 0 < q ≤ 1 (needs `"add_remove"`),
//!   `{"fixed_batch": {"batch_size": m, "dataset_size": n}}`, 1 ≤ m ≤ n, a uniformly random
//!   batch drawn without replacement (needs `"replace"`, additive noise only), or
//!   `{"random_allocation": {"steps_per_epoch": t, "participations": k}}`, 1 ≤ k ≤ t ≤ 10¹²
//!   (k optional, default 1): in every epoch of t steps each record takes part in exactly k
//!   of them, chosen uniformly at random; k = 1 is balls-in-bins batching (needs
//!   `"add_remove"`, Gaussian noise only). With random allocation `count` is the number of
//!   epochs. Or `{"truncated_poisson": {"rate": q, "max_batch_size": B, "dataset_size": n}}`,
//!   0 < q ≤ 1, B ≥ 1, 1 ≤ n ≤ 10¹²: Poisson sampling at rate q over n records whose batch
//!   is cut to a uniformly random B of them when larger (needs `"add_remove"`, Gaussian noise
//!   only; the accounting covers both neighbours of the n-record dataset, n − 1 and n + 1).
//!   Or `{"shuffle": {"steps_per_epoch": t}}`, 1 ≤ t ≤ 10¹²: every epoch the data are
//!   shuffled and cut into t batches (Gaussian noise only, either relation; under
//!   `"add_remove"` the removed record is replaced by one that contributes nothing, so batch
//!   sizes stay fixed). `count` is the number of epochs. No bound with amplification is known:
//!   the upper bound is the epoch without amplification (each record in one step), the lower
//!   bound that of two datasets computed exactly (see [`crate::discretize::shuffle_max`]), so
//!   the bracket is wide by nature.
//! - The mechanisms and their parameters:
//!
//! | mechanism | parameters |
//! | --- | --- |
//! | `gaussian` | `sigma` > 0, `sensitivity` > 0 (default 1) or `replace_sensitivity` > 0 |
//! | `laplace` | `scale` > 0, `sensitivity` > 0 (default 1) or `replace_sensitivity` > 0 |
//! | `discrete_laplace` | `scale` > 0, whole `sensitivity` ≥ 1 (default 1) or `replace_sensitivity` ≥ 1 |
//! | `discrete_gaussian` | `sigma` > 0, whole `sensitivity` ≥ 1 (default 1) or `replace_sensitivity` ≥ 1 |
//! | `randomized_response` | `epsilon` > 0, whole `categories` ≥ 2 (default 2) |
//! | `eps_delta` | `epsilon` ≥ 0 (finite), 0 ≤ `delta` ≤ 1 |
//! | `mixture_of_gaussians` | `sigma` > 0, `sensitivities` (each ≥ 0), `probabilities` (summing to 1); add/remove only |
//! | `pmf_pair` | `p`, `q`: probabilities of the same outcomes on the two datasets (each list summing to 1) |
//! | `zcdp` | `rho` > 0: any ρ-zCDP mechanism; no sampling |
//! | `rdp_curve` | `orders` (each > 1), `values` (each ≥ 0): any mechanism with `D_α ≤ value` at each order; no sampling |
//! | `exponential` | `epsilon` > 0: the exponential mechanism (or report-noisy-max with Gumbel noise) calibrated to ε-DP, accounted as ε-bounded range; no sampling |
//! | `laplace_log_normal` | `sigma`, `s`, `t` > 0: smooth-sensitivity noise, ½(t/σ + e^{3σ²/2}s)²-zCDP; no sampling |
//! | `student_t` | `degrees`, `s` > 0, `t` ≥ 0: smooth-sensitivity Student's t noise, ε-DP with ε = (d+1)/2·ln(1 + s(s + √(s²+4d))/(2d)) + max(d, 1)·t; no sampling |
//! | `cauchy` | `s` > 0, `t` ≥ 0: smooth-sensitivity Cauchy noise (`student_t` with d = 1), ε = 2·asinh(s/2) + t; no sampling |
//!
//! **Sensitivity.** `sensitivity` is one record's contribution (the add/remove sensitivity;
//! for DP-SGD the clipping norm). Under `"replace"` an additive query can then move by twice
//! that, and twice that is accounted. A query that moves by less when a record is replaced (a
//! count moves by 1) says so with `replace_sensitivity` instead: it is allowed only under
//! `"replace"`, cannot be given together with `sensitivity`, and is used as the shift between
//! the two outputs as given (not doubled).
//!
//! Unknown keys are refused; a key written `null` is refused too (a `null` marks the field
//! `pld calibrate` solves for). Probability lists may be off 1 by at most
//! [`PROBABILITY_SUM_TOLERANCE`]; they are then divided by their total for the accounting,
//! and serialized back as given.

// One concept per file: `mechanism`, `sampling`, `event` and `composition` hold the public
// types and their checked constructors (and the builder), `sensitivity` how a sensitivity was
// given, `checks` the validation they share with the JSON parser in `json`, and `serde_impls`
// serde both ways through that parser.
mod caveats;
mod checks;
mod composition;
mod event;
mod json;
mod mechanism;
pub mod presets;
mod sampling;
mod sensitivity;
mod serde_impls;

pub use caveats::{CUTS_AGAINST_DELTA, NEGLIGIBLE_CUT_STEPS};
use checks::*;
pub use composition::*;
pub use event::*;
pub(crate) use json::*;
pub use mechanism::*;
pub use sampling::*;
pub(crate) use sensitivity::*;

use crate::error::{Error, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Largest number of outcomes (or mixture components) a listed distribution may have.
pub const MAX_OUTCOMES: usize = 1_000_000;

/// How far a listed distribution's total may be from 1 before it is refused (it is then
/// divided by its total).
pub const PROBABILITY_SUM_TOLERANCE: f64 = 1e-9;

/// Largest accepted `count`.
pub const MAX_COUNT: u64 = 1_000_000_000_000;

/// The number of steps that `exact` (epochs / sampling rate, or epochs·N/B) stands for: a
/// value within 1e-9 relative of a whole number is that number (rounding in the division
/// must not add a step), any other is rounded up (never fewer steps than were run). `None`
/// outside 1..=[`MAX_COUNT`]. Shared by the CLI's `--epochs` and the Python package.
pub fn steps_from_epochs(exact: f64) -> Option<u64> {
    let nearest = exact.round();
    let steps = if (exact - nearest).abs() <= 1e-9 * nearest.max(1.0) {
        nearest
    } else {
        exact.ceil()
    };
    (1.0..=MAX_COUNT as f64)
        .contains(&steps)
        .then_some(steps as u64)
}

/// Mechanism names the specification accepts.
const MECHANISMS: [&str; 14] = [
    "gaussian",
    "laplace",
    "discrete_laplace",
    "discrete_gaussian",
    "randomized_response",
    "eps_delta",
    "mixture_of_gaussians",
    "pmf_pair",
    "zcdp",
    "rdp_curve",
    "laplace_log_normal",
    "exponential",
    "student_t",
    "cauchy",
];

const POSITIVE: &str = "a finite number > 0";
const NON_NEGATIVE: &str = "a finite number ≥ 0";
const COUNT_REQUIREMENT: &str = "a whole number ≥ 1 (at most 10^12)";
const RATE_REQUIREMENT: &str = "a number in (0, 1]";
const SAMPLING_REQUIREMENT: &str = "{\"poisson\": q}, {\"fixed_batch\": {\"batch_size\": m, \
     \"dataset_size\": n}}, {\"random_allocation\": {\"steps_per_epoch\": t, \
     \"participations\": k}}, {\"truncated_poisson\": {\"rate\": q, \"max_batch_size\": B, \
     \"dataset_size\": n}} or {\"shuffle\": {\"steps_per_epoch\": t}}";

// ---------------------------------------------------------------------------------------------
// Neighbouring
// ---------------------------------------------------------------------------------------------

/// Which datasets count as neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Neighbouring {
    /// D and D ∪ {z} (the default). Sensitivity is one record's contribution.
    #[default]
    AddRemove,
    /// D and D with one record changed. For additive noise the outputs can then differ by
    /// twice the per-record bound Δ (unless the event gives `replace_sensitivity`).
    Replace,
}

impl Neighbouring {
    /// The name used in the specification: `"add_remove"` or `"replace"`.
    pub fn name(self) -> &'static str {
        match self {
            Neighbouring::AddRemove => "add_remove",
            Neighbouring::Replace => "replace",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_shown_as_json_writes_them() {
        assert_eq!(show(-1.0), "-1");
        assert_eq!(show(0.5), "0.5");
        assert_eq!(show(-0.0), "-0");
        assert_eq!(show(1e300), "1e300");
        assert_eq!(show(5e-324), "5e-324");
        assert_eq!(show(f64::NAN), "NaN");
        assert_eq!(show(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn shifts_double_only_per_record_sensitivities_under_replace() {
        let s = Shift::PerRecord(0.5);
        assert_eq!(s.pair_shift(Neighbouring::AddRemove), 0.5);
        assert_eq!(s.pair_shift(Neighbouring::Replace), 1.0);
        assert_eq!(Shift::Replace(0.5).pair_shift(Neighbouring::Replace), 0.5);
        assert_eq!(Shift::<f64>::Default.pair_shift(Neighbouring::Replace), 2.0);
        assert_eq!(Shift::<f64>::Default, Shift::PerRecord(1.0));
        assert!(Shift::PerRecord(u64::MAX)
            .integer_pair_shift(Neighbouring::Replace)
            .is_err());
    }
}
