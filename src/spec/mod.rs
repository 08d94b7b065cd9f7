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
//! - `sampling` (optional): `{"poisson": q}` with 0 < q ≤ 1 (needs `"add_remove"`), or
//!   `{"fixed_batch": {"batch_size": m, "dataset_size": n}}`, 1 ≤ m ≤ n, a uniformly random
//!   batch drawn without replacement (needs `"replace"`, additive noise only).
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

pub mod presets;

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

/// Mechanism names the specification accepts.
const MECHANISMS: [&str; 8] = [
    "gaussian",
    "laplace",
    "discrete_laplace",
    "discrete_gaussian",
    "randomized_response",
    "eps_delta",
    "mixture_of_gaussians",
    "pmf_pair",
];

const POSITIVE: &str = "a finite number > 0";
const COUNT_REQUIREMENT: &str = "a whole number ≥ 1 (at most 10^12)";
const RATE_REQUIREMENT: &str = "a number in (0, 1]";
const SAMPLING_REQUIREMENT: &str =
    "{\"poisson\": q} or {\"fixed_batch\": {\"batch_size\": m, \"dataset_size\": n}}";

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

// ---------------------------------------------------------------------------------------------
// Sensitivity
// ---------------------------------------------------------------------------------------------

/// A number type a sensitivity is given in (real for continuous noise, whole for integer
/// noise).
pub(crate) trait SensitivityValue: Copy + PartialEq + std::fmt::Debug {
    const ONE: Self;
    fn as_f64(self) -> f64;
}

impl SensitivityValue for f64 {
    const ONE: Self = 1.0;
    fn as_f64(self) -> f64 {
        self
    }
}

impl SensitivityValue for u64 {
    const ONE: Self = 1;
    fn as_f64(self) -> f64 {
        self as f64
    }
}

/// How an additive mechanism's sensitivity was given.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shift<T> {
    /// Not given: one record's contribution is 1.
    Default,
    /// `sensitivity`: one record's contribution (doubled under replace).
    PerRecord(T),
    /// `replace_sensitivity`: the shift between the two outputs under replace, as given.
    Replace(T),
}

impl<T: SensitivityValue> PartialEq for Shift<T> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Shift::Replace(a), Shift::Replace(b)) => a == b,
            (Shift::Replace(_), _) | (_, Shift::Replace(_)) => false,
            _ => self.per_record() == other.per_record(),
        }
    }
}

impl<T: SensitivityValue> Shift<T> {
    /// One record's contribution (the add/remove shift, used under Poisson sampling). For a
    /// `replace_sensitivity`, which only exists under replace, the value itself.
    pub(crate) fn per_record(self) -> T {
        match self {
            Shift::Default => T::ONE,
            Shift::PerRecord(x) | Shift::Replace(x) => x,
        }
    }

    /// The shift between the two outputs of the unsampled mechanism under `relation` (also
    /// the shift of the pair a fixed batch is accounted with, under replace): Δ under
    /// add/remove, 2Δ under replace, or `replace_sensitivity` as given.
    pub(crate) fn pair_shift(self, relation: Neighbouring) -> f64 {
        match (self, relation) {
            (Shift::Replace(x), _) => x.as_f64(),
            (_, Neighbouring::AddRemove) => self.per_record().as_f64(),
            (_, Neighbouring::Replace) => 2.0 * self.per_record().as_f64(),
        }
    }

    fn given(x: T, replace: bool) -> Self {
        if replace {
            Shift::Replace(x)
        } else {
            Shift::PerRecord(x)
        }
    }

    fn is_replace(self) -> bool {
        matches!(self, Shift::Replace(_))
    }
}

impl Shift<u64> {
    /// [`Shift::pair_shift`] in whole numbers.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sensitivity` when 2Δ does not fit in 64 bits.
    pub(crate) fn integer_pair_shift(self, relation: Neighbouring) -> Result<u64> {
        match (self, relation) {
            (Shift::Replace(x), _) => Ok(x),
            (_, Neighbouring::AddRemove) => Ok(self.per_record()),
            (_, Neighbouring::Replace) => {
                let x = self.per_record();
                x.checked_mul(2).ok_or_else(|| {
                    Error::invalid(
                        "sensitivity",
                        x,
                        "a whole number ≥ 1 whose double (the replace-one shift) is below 2^64",
                    )
                })
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks shared by the constructors and the JSON parser
// ---------------------------------------------------------------------------------------------

/// A number as the error messages show it (as JSON would write it where JSON can).
fn show(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x == 0.0 || (1e-4..1e16).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

fn invalid_number(name: &str, x: f64, requirement: &str) -> Error {
    Error::invalid(name, show(x), requirement)
}

/// A finite number > 0.
fn check_positive(name: &str, x: f64) -> Result<f64> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(invalid_number(name, x, POSITIVE))
    }
}

/// A number in `[low, high]` (finite).
fn check_in_range(name: &str, x: f64, low: f64, high: f64) -> Result<f64> {
    if x.is_finite() && x >= low && x <= high {
        Ok(x)
    } else {
        let requirement = if high.is_finite() {
            format!("a number in [{low}, {high}]")
        } else {
            format!("a finite number ≥ {low}")
        };
        Err(invalid_number(name, x, &requirement))
    }
}

fn whole_requirement(min: u64, max: u64) -> String {
    if max == MAX_COUNT {
        COUNT_REQUIREMENT.into()
    } else {
        format!("a whole number ≥ {min}")
    }
}

/// A whole number in `[min, max]`.
fn check_whole(name: &str, k: u64, min: u64, max: u64) -> Result<u64> {
    if (min..=max).contains(&k) {
        Ok(k)
    } else {
        Err(Error::invalid(name, k, &whole_requirement(min, max)))
    }
}

/// A whole number in `[min, max]` given as a float.
fn check_whole_f64(name: &str, x: f64, min: u64, max: u64) -> Result<u64> {
    if x.is_finite() && x.fract() == 0.0 && x >= min as f64 && x <= max as f64 && x < 2f64.powi(64)
    {
        Ok(x as u64)
    } else {
        Err(invalid_number(name, x, &whole_requirement(min, max)))
    }
}

fn check_count(count: u64) -> Result<u64> {
    check_whole("count", count, 1, MAX_COUNT)
}

/// A non-empty list of at most [`MAX_OUTCOMES`] finite numbers ≥ 0.
fn check_number_list(name: &str, list: &[f64]) -> Result<()> {
    let requirement = "a non-empty list of finite numbers ≥ 0";
    if list.is_empty() {
        return Err(Error::invalid(name, "[]", requirement));
    }
    if list.len() > MAX_OUTCOMES {
        return Err(Error::invalid(
            name,
            format!("a list of {} entries", list.len()),
            &format!("at most {MAX_OUTCOMES} entries"),
        ));
    }
    match list.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
        Some(i) => Err(invalid_number(
            &format!("{name}[{i}]"),
            list[i],
            "a finite number ≥ 0",
        )),
        None => Ok(()),
    }
}

/// A list of probabilities: numbers in [0, 1] whose total is 1 within
/// [`PROBABILITY_SUM_TOLERANCE`]; returned divided by their total.
fn check_probability_list(name: &str, list: &[f64]) -> Result<Vec<f64>> {
    check_number_list(name, list)?;
    if let Some((i, x)) = list.iter().enumerate().find(|(_, x)| **x > 1.0) {
        return Err(invalid_number(
            &format!("{name}[{i}]"),
            *x,
            "a probability in [0, 1]",
        ));
    }
    let total = crate::numeric::summation::neumaier_sum(list.iter().copied());
    if total.is_nan() || (total - 1.0).abs() > PROBABILITY_SUM_TOLERANCE {
        return Err(Error::invalid(
            name,
            format!("a list summing to {total}"),
            "probabilities summing to 1",
        ));
    }
    Ok(list.iter().map(|x| x / total).collect())
}

/// `e` with every parameter name prefixed by `prefix` (e.g. `events[2]`).
fn relocate(e: Error, prefix: &str) -> Error {
    if prefix.is_empty() {
        return e;
    }
    let at = |name: String| format!("{prefix}.{name}");
    match e {
        Error::InvalidParameter {
            name,
            value,
            requirement,
        } => Error::InvalidParameter {
            name: at(name),
            value,
            requirement,
        },
        Error::MissingParameter { name, hint } => Error::MissingParameter {
            name: at(name),
            hint,
        },
        Error::UnknownMechanism {
            field,
            name,
            expected,
        } => Error::UnknownMechanism {
            field: at(field),
            name,
            expected,
        },
        Error::Incompatible { field, reason } => Error::Incompatible {
            field: at(field),
            reason,
        },
        Error::NotImplemented {
            field,
            what,
            detail,
        } => Error::NotImplemented {
            field: at(field),
            what,
            detail,
        },
        other => other,
    }
}

// ---------------------------------------------------------------------------------------------
// Mechanisms
// ---------------------------------------------------------------------------------------------

/// The mechanisms, with validated parameters (private: built only through [`MechanismSpec`]'s
/// checked constructors).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MechanismKind {
    /// Gaussian noise N(0, σ²) on a query of L2 sensitivity Δ.
    Gaussian { sigma: f64, sensitivity: Shift<f64> },
    /// Laplace noise with density e^{−|x|/b}/(2b) on a query of L1 sensitivity Δ.
    Laplace { scale: f64, sensitivity: Shift<f64> },
    /// Integer noise with P(k) ∝ e^{−|k|/scale} on an integer query.
    DiscreteLaplace { scale: f64, sensitivity: Shift<u64> },
    /// Integer noise with P(k) ∝ e^{−k²/(2σ²)} on an integer query.
    DiscreteGaussian { sigma: f64, sensitivity: Shift<u64> },
    /// k-ary randomized response.
    RandomizedResponse { epsilon: f64, categories: u64 },
    /// Any (ε, δ)-DP mechanism.
    EpsDelta { epsilon: f64, delta: f64 },
    /// Gaussian noise on a query of random sensitivity (`probabilities` normalized;
    /// `listed` the probabilities as given, for serialization).
    MixtureOfGaussians {
        sigma: f64,
        sensitivities: Vec<f64>,
        probabilities: Vec<f64>,
        listed: Vec<f64>,
    },
    /// A finite pair (`p`, `q` normalized; `listed` as given).
    PmfPair {
        p: Vec<f64>,
        q: Vec<f64>,
        listed: Box<[Vec<f64>; 2]>,
    },
}

/// A mechanism with validated parameters.
///
/// Built by one constructor per mechanism ([`MechanismSpec::gaussian`],
/// [`MechanismSpec::laplace`], [`MechanismSpec::discrete_laplace`],
/// [`MechanismSpec::discrete_gaussian`], [`MechanismSpec::randomized_response`],
/// [`MechanismSpec::eps_delta`], [`MechanismSpec::mixture_of_gaussians`],
/// [`MechanismSpec::pmf_pair`]), each returning `Err` for an invalid parameter; the additive
/// mechanisms then take [`MechanismSpec::with_sensitivity`] or
/// [`MechanismSpec::with_replace_sensitivity`]. The parameters are read back with the
/// accessors ([`MechanismSpec::name`], [`MechanismSpec::sigma`], ...) or through serde, which
/// writes the mechanism's part of an event: `{"mechanism": "gaussian", "sigma": 1.0}`.
///
/// ```
/// use pld_accountant::MechanismSpec;
///
/// let m = MechanismSpec::discrete_gaussian(3.0)?.with_sensitivity(2.0)?;
/// assert_eq!((m.name(), m.sigma(), m.sensitivity()), ("discrete_gaussian", Some(3.0), Some(2.0)));
/// assert!(MechanismSpec::discrete_gaussian(3.0)?.with_sensitivity(1.5).is_err());
/// assert!(MechanismSpec::randomized_response(1.0, 0).is_err());
/// # Ok::<(), pld_accountant::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MechanismSpec {
    pub(crate) kind: MechanismKind,
}

impl From<MechanismKind> for MechanismSpec {
    fn from(kind: MechanismKind) -> Self {
        MechanismSpec { kind }
    }
}

impl MechanismSpec {
    /// Gaussian noise N(0, σ²) on a query of L2 sensitivity 1 (see
    /// [`MechanismSpec::with_sensitivity`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sigma` unless σ is finite and > 0.
    pub fn gaussian(sigma: f64) -> Result<Self> {
        Ok(MechanismKind::Gaussian {
            sigma: check_positive("sigma", sigma)?,
            sensitivity: Shift::Default,
        }
        .into())
    }

    /// Laplace noise with density e^{−|x|/b}/(2b), b = `scale`, on a query of L1 sensitivity 1.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `scale` unless it is finite and > 0.
    pub fn laplace(scale: f64) -> Result<Self> {
        Ok(MechanismKind::Laplace {
            scale: check_positive("scale", scale)?,
            sensitivity: Shift::Default,
        }
        .into())
    }

    /// Integer noise with P(k) ∝ e^{−|k|/scale} on an integer query of sensitivity 1.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `scale` unless it is finite and > 0.
    pub fn discrete_laplace(scale: f64) -> Result<Self> {
        Ok(MechanismKind::DiscreteLaplace {
            scale: check_positive("scale", scale)?,
            sensitivity: Shift::Default,
        }
        .into())
    }

    /// Integer noise with P(k) ∝ e^{−k²/(2σ²)} on an integer query of sensitivity 1.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sigma` unless σ is finite and > 0.
    pub fn discrete_gaussian(sigma: f64) -> Result<Self> {
        Ok(MechanismKind::DiscreteGaussian {
            sigma: check_positive("sigma", sigma)?,
            sensitivity: Shift::Default,
        }
        .into())
    }

    /// k-ary randomized response: the truth with probability e^ε/(k−1+e^ε), otherwise one of
    /// the other k−1 answers uniformly (k = `categories`, 2 in the JSON format's default).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `epsilon` unless it is finite and > 0, or
    /// `categories` unless it is ≥ 2.
    pub fn randomized_response(epsilon: f64, categories: u64) -> Result<Self> {
        Ok(MechanismKind::RandomizedResponse {
            epsilon: check_positive("epsilon", epsilon)?,
            categories: check_whole("categories", categories, 2, u64::MAX)?,
        }
        .into())
    }

    /// Any mechanism known only to be (ε, δ)-DP (accounted by its worst-case pair).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `epsilon` unless it is finite and ≥ 0, or `delta`
    /// unless it is in [0, 1].
    pub fn eps_delta(epsilon: f64, delta: f64) -> Result<Self> {
        Ok(MechanismKind::EpsDelta {
            epsilon: check_in_range("epsilon", epsilon, 0.0, f64::INFINITY)?,
            delta: check_in_range("delta", delta, 0.0, 1.0)?,
        }
        .into())
    }

    /// Gaussian noise N(0, σ²) on a query whose sensitivity is random: `sensitivities[i]` with
    /// probability `probabilities[i]` (e.g. a record that may be sampled more than once).
    /// REMOVE pair `Σ p_i N(−c_i, σ²)` vs `N(0, σ²)`; add/remove only.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sigma`, `sensitivities[i]` or `probabilities[i]`
    /// for a value out of range (sensitivities finite ≥ 0, probabilities in [0, 1] summing to
    /// 1, at most [`MAX_OUTCOMES`] of them); [`Error::Incompatible`] naming `probabilities`
    /// when the two lists differ in length.
    pub fn mixture_of_gaussians(
        sigma: f64,
        sensitivities: Vec<f64>,
        probabilities: Vec<f64>,
    ) -> Result<Self> {
        let sigma = check_positive("sigma", sigma)?;
        check_number_list("sensitivities", &sensitivities)?;
        let normalized = check_probability_list("probabilities", &probabilities)?;
        if sensitivities.len() != probabilities.len() {
            return Err(Error::Incompatible {
                field: "probabilities".into(),
                reason: format!(
                    "{} probabilities for {} sensitivities; give one per sensitivity",
                    probabilities.len(),
                    sensitivities.len()
                ),
            });
        }
        Ok(MechanismKind::MixtureOfGaussians {
            sigma,
            sensitivities,
            probabilities: normalized,
            listed: probabilities,
        }
        .into())
    }

    /// Any mechanism with finitely many outcomes, given by its worst-case neighbouring pair:
    /// the output distributions `p = M(D)` and `q = M(D')` over the same outcomes. Both
    /// orders (p‖q and q‖p) are accounted.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `p`, `q` or an entry for a list that is not a
    /// probability distribution; [`Error::Incompatible`] naming `q` when the lengths differ.
    pub fn pmf_pair(p: Vec<f64>, q: Vec<f64>) -> Result<Self> {
        let p_normalized = check_probability_list("p", &p)?;
        let q_normalized = check_probability_list("q", &q)?;
        if p.len() != q.len() {
            return Err(Error::Incompatible {
                field: "q".into(),
                reason: format!(
                    "{} outcomes in q but {} in p; list the same outcomes in both",
                    q.len(),
                    p.len()
                ),
            });
        }
        Ok(MechanismKind::PmfPair {
            p: p_normalized,
            q: q_normalized,
            listed: Box::new([p, q]),
        }
        .into())
    }

    /// The same mechanism on a query of sensitivity Δ = `sensitivity`: one record's
    /// contribution (doubled under replace neighbouring). Real Δ > 0 for `gaussian` and
    /// `laplace`, a whole Δ ≥ 1 for `discrete_laplace` and `discrete_gaussian`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sensitivity` for a value out of range;
    /// [`Error::Incompatible`] for a mechanism without a sensitivity, or one already given a
    /// `replace_sensitivity`.
    pub fn with_sensitivity(self, sensitivity: f64) -> Result<Self> {
        self.set_sensitivity("sensitivity", sensitivity, false)
    }

    /// The same mechanism whose two outputs, under replace neighbouring, differ by exactly
    /// `replace_sensitivity` (used as given, not doubled: a count moves by 1 when a record is
    /// replaced). Only valid in a [`CompositionSpec`] with [`Neighbouring::Replace`].
    ///
    /// # Errors
    /// As [`MechanismSpec::with_sensitivity`], naming `replace_sensitivity`; and
    /// [`Error::Incompatible`] naming both when a `sensitivity` was given already.
    pub fn with_replace_sensitivity(self, replace_sensitivity: f64) -> Result<Self> {
        self.set_sensitivity("replace_sensitivity", replace_sensitivity, true)
    }

    fn set_sensitivity(mut self, key: &str, value: f64, replace: bool) -> Result<Self> {
        match &mut self.kind {
            MechanismKind::Gaussian { sensitivity, .. }
            | MechanismKind::Laplace { sensitivity, .. } => {
                check_not_both(sensitivity, replace)?;
                let x = check_positive(key, value)?;
                *sensitivity = Shift::given(x, replace);
            }
            MechanismKind::DiscreteLaplace { sensitivity, .. }
            | MechanismKind::DiscreteGaussian { sensitivity, .. } => {
                check_not_both(sensitivity, replace)?;
                let k = check_whole_f64(key, value, 1, u64::MAX)?;
                *sensitivity = Shift::given(k, replace);
            }
            _ => return Err(no_sensitivity(self.name(), key)),
        }
        Ok(self)
    }

    /// [`MechanismSpec::with_sensitivity`] with a whole number (the JSON parser's path for
    /// integer noise, exact above 2⁵³).
    fn set_integer_sensitivity(mut self, key: &str, value: u64, replace: bool) -> Result<Self> {
        match &mut self.kind {
            MechanismKind::DiscreteLaplace { sensitivity, .. }
            | MechanismKind::DiscreteGaussian { sensitivity, .. } => {
                check_not_both(sensitivity, replace)?;
                let k = check_whole(key, value, 1, u64::MAX)?;
                *sensitivity = Shift::given(k, replace);
                Ok(self)
            }
            _ => self.set_sensitivity(key, value as f64, replace),
        }
    }

    /// Whether a `sensitivity` was given (not the default).
    fn sensitivity_given(&self) -> bool {
        match &self.kind {
            MechanismKind::Gaussian { sensitivity, .. }
            | MechanismKind::Laplace { sensitivity, .. } => {
                matches!(sensitivity, Shift::PerRecord(_))
            }
            MechanismKind::DiscreteLaplace { sensitivity, .. }
            | MechanismKind::DiscreteGaussian { sensitivity, .. } => {
                matches!(sensitivity, Shift::PerRecord(_))
            }
            _ => false,
        }
    }

    /// The name used in the specification, e.g. `"gaussian"`.
    pub fn name(&self) -> &'static str {
        match self.kind {
            MechanismKind::Gaussian { .. } => "gaussian",
            MechanismKind::Laplace { .. } => "laplace",
            MechanismKind::DiscreteLaplace { .. } => "discrete_laplace",
            MechanismKind::DiscreteGaussian { .. } => "discrete_gaussian",
            MechanismKind::RandomizedResponse { .. } => "randomized_response",
            MechanismKind::EpsDelta { .. } => "eps_delta",
            MechanismKind::MixtureOfGaussians { .. } => "mixture_of_gaussians",
            MechanismKind::PmfPair { .. } => "pmf_pair",
        }
    }

    /// Whether the mechanism adds noise to a numeric query (the ones that take a
    /// sensitivity, and the ones fixed-batch sampling is accounted for).
    pub fn is_additive_noise(&self) -> bool {
        matches!(
            self.kind,
            MechanismKind::Gaussian { .. }
                | MechanismKind::Laplace { .. }
                | MechanismKind::DiscreteLaplace { .. }
                | MechanismKind::DiscreteGaussian { .. }
        )
    }

    /// σ of the Gaussian, discrete Gaussian and mixture of Gaussians.
    pub fn sigma(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::Gaussian { sigma, .. }
            | MechanismKind::DiscreteGaussian { sigma, .. }
            | MechanismKind::MixtureOfGaussians { sigma, .. } => Some(sigma),
            _ => None,
        }
    }

    /// The scale of (discrete) Laplace noise.
    pub fn scale(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::Laplace { scale, .. } | MechanismKind::DiscreteLaplace { scale, .. } => {
                Some(scale)
            }
            _ => None,
        }
    }

    /// One record's contribution Δ of an additive mechanism (1 unless given), or `None` for
    /// the other mechanisms and when a `replace_sensitivity` was given instead.
    pub fn sensitivity(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::Gaussian { sensitivity, .. }
            | MechanismKind::Laplace { sensitivity, .. } => {
                (!sensitivity.is_replace()).then(|| sensitivity.per_record())
            }
            MechanismKind::DiscreteLaplace { sensitivity, .. }
            | MechanismKind::DiscreteGaussian { sensitivity, .. } => {
                (!sensitivity.is_replace()).then(|| sensitivity.per_record() as f64)
            }
            _ => None,
        }
    }

    /// The `replace_sensitivity`, if one was given.
    pub fn replace_sensitivity(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::Gaussian {
                sensitivity: Shift::Replace(x),
                ..
            }
            | MechanismKind::Laplace {
                sensitivity: Shift::Replace(x),
                ..
            } => Some(x),
            MechanismKind::DiscreteLaplace {
                sensitivity: Shift::Replace(k),
                ..
            }
            | MechanismKind::DiscreteGaussian {
                sensitivity: Shift::Replace(k),
                ..
            } => Some(k as f64),
            _ => None,
        }
    }

    /// ε of randomized response and of `eps_delta`.
    pub fn epsilon(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::RandomizedResponse { epsilon, .. }
            | MechanismKind::EpsDelta { epsilon, .. } => Some(epsilon),
            _ => None,
        }
    }

    /// δ of `eps_delta`.
    pub fn delta(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::EpsDelta { delta, .. } => Some(delta),
            _ => None,
        }
    }

    /// The number of answers of randomized response.
    pub fn categories(&self) -> Option<u64> {
        match self.kind {
            MechanismKind::RandomizedResponse { categories, .. } => Some(categories),
            _ => None,
        }
    }

    /// An event running this mechanism once, on every record.
    pub fn once(self) -> Event {
        Event::new(self)
    }

    /// An event running this mechanism on a Poisson sample at rate `rate` (see
    /// [`Event::poisson`]).
    ///
    /// # Errors
    /// As [`Event::poisson`].
    pub fn poisson(self, rate: f64) -> Result<Event> {
        Event::new(self).poisson(rate)
    }

    /// An event running this mechanism on a fixed batch (see [`Event::fixed_batch`]).
    ///
    /// # Errors
    /// As [`Event::fixed_batch`].
    pub fn fixed_batch(self, batch_size: u64, dataset_size: u64) -> Result<Event> {
        Event::new(self).fixed_batch(batch_size, dataset_size)
    }

    /// An event running this mechanism `count` times on every record (see [`Event::repeat`]).
    ///
    /// # Errors
    /// As [`Event::repeat`].
    pub fn repeat(self, count: u64) -> Result<Event> {
        Event::new(self).repeat(count)
    }
}

/// Refuse a `sensitivity` after a `replace_sensitivity`, or the other way round.
fn check_not_both<T: SensitivityValue>(current: &Shift<T>, replace: bool) -> Result<()> {
    match (current, replace) {
        (Shift::PerRecord(_), true) | (Shift::Replace(_), false) => Err(both_sensitivities()),
        _ => Ok(()),
    }
}

fn both_sensitivities() -> Error {
    Error::Incompatible {
        field: "replace_sensitivity".into(),
        reason: "cannot be given together with sensitivity: give sensitivity (one record's \
                 contribution, doubled under replace) or replace_sensitivity (the shift \
                 under replace, as given), not both"
            .into(),
    }
}

fn no_sensitivity(name: &str, key: &str) -> Error {
    Error::Incompatible {
        field: key.into(),
        reason: format!(
            "{name} takes no {key} (only gaussian, laplace, discrete_laplace and \
             discrete_gaussian do)"
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------

/// The sampling schemes, with validated parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SamplingKind {
    /// Every record, every time.
    None,
    /// Each record independently with this probability (0 < q ≤ 1).
    Poisson(f64),
    /// A uniformly random batch of `batch_size` out of `dataset_size` records.
    FixedBatch { batch_size: u64, dataset_size: u64 },
}

/// How the records entering an event are chosen: every record ([`Sampling::none`], the
/// default), Poisson sampling ([`Sampling::poisson`], add/remove neighbouring) or a uniformly
/// random fixed batch drawn without replacement ([`Sampling::fixed_batch`], replace
/// neighbouring, additive noise only).
///
/// serde writes it as the event's `sampling` value: `{"poisson": q}` or
/// `{"fixed_batch": {"batch_size": m, "dataset_size": n}}`, and no sampling as `null` (an
/// event leaves the key out instead).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub(crate) kind: SamplingKind,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling::none()
    }
}

impl Sampling {
    /// Every record, every time.
    pub fn none() -> Self {
        Sampling {
            kind: SamplingKind::None,
        }
    }

    /// Each record independently with probability `rate`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sampling.poisson` unless 0 < rate ≤ 1.
    pub fn poisson(rate: f64) -> Result<Self> {
        if rate > 0.0 && rate <= 1.0 {
            Ok(Sampling {
                kind: SamplingKind::Poisson(rate),
            })
        } else {
            Err(invalid_number("sampling.poisson", rate, RATE_REQUIREMENT))
        }
    }

    /// A uniformly random batch of `batch_size` out of `dataset_size` records (without
    /// replacement).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sampling.fixed_batch.batch_size` or
    /// `.dataset_size` when 0; [`Error::Incompatible`] when the batch exceeds the dataset.
    pub fn fixed_batch(batch_size: u64, dataset_size: u64) -> Result<Self> {
        let m = check_whole("sampling.fixed_batch.batch_size", batch_size, 1, u64::MAX)?;
        let n = check_whole(
            "sampling.fixed_batch.dataset_size",
            dataset_size,
            1,
            u64::MAX,
        )?;
        if m > n {
            return Err(Error::Incompatible {
                field: "sampling.fixed_batch".into(),
                reason: format!("batch_size {m} exceeds dataset_size {n}"),
            });
        }
        Ok(Sampling {
            kind: SamplingKind::FixedBatch {
                batch_size: m,
                dataset_size: n,
            },
        })
    }

    /// `"none"`, `"poisson"` or `"fixed_batch"`.
    pub fn name(&self) -> &'static str {
        match self.kind {
            SamplingKind::None => "none",
            SamplingKind::Poisson(_) => "poisson",
            SamplingKind::FixedBatch { .. } => "fixed_batch",
        }
    }

    /// Whether every record takes part.
    pub fn is_none(&self) -> bool {
        self.kind == SamplingKind::None
    }

    /// The Poisson rate q.
    pub fn poisson_rate(&self) -> Option<f64> {
        match self.kind {
            SamplingKind::Poisson(q) => Some(q),
            _ => None,
        }
    }

    /// `(batch_size, dataset_size)` of a fixed batch.
    pub fn batch(&self) -> Option<(u64, u64)> {
        match self.kind {
            SamplingKind::FixedBatch {
                batch_size,
                dataset_size,
            } => Some((batch_size, dataset_size)),
            _ => None,
        }
    }

    fn to_json_value(self) -> Value {
        match self.kind {
            SamplingKind::None => Value::Null,
            SamplingKind::Poisson(q) => serde_json::json!({ "poisson": q }),
            SamplingKind::FixedBatch {
                batch_size,
                dataset_size,
            } => serde_json::json!({
                "fixed_batch": {"batch_size": batch_size, "dataset_size": dataset_size}
            }),
        }
    }
}

/// Refuse sampling schemes that have no proven worst-case pair for the mechanism.
///
/// Poisson sampling applies to additive noise, randomized response and `eps_delta`, whose
/// pairs are symmetric; sampling without replacement to additive noise only. A mixture of
/// Gaussians already describes a sampled mechanism, and a pmf_pair should list the sampled
/// mechanism's own pair.
fn check_sampling_applies(mechanism: &MechanismSpec, sampling: Sampling) -> Result<()> {
    let name = mechanism.name();
    match sampling.kind {
        SamplingKind::None => Ok(()),
        SamplingKind::Poisson(_) => match mechanism.kind {
            MechanismKind::MixtureOfGaussians { .. } | MechanismKind::PmfPair { .. } => {
                Err(Error::Incompatible {
                    field: "sampling".into(),
                    reason: format!(
                        "{name} cannot be sampled: {}",
                        if matches!(mechanism.kind, MechanismKind::PmfPair { .. }) {
                            "list the pair of the sampled mechanism itself"
                        } else {
                            "put the sampling into the mixture (e.g. sensitivities [0, 1] \
                             with probabilities [1 − q, q])"
                        }
                    ),
                })
            }
            _ => Ok(()),
        },
        SamplingKind::FixedBatch { .. } if mechanism.is_additive_noise() => Ok(()),
        SamplingKind::FixedBatch { .. } => Err(Error::Incompatible {
            field: "sampling.fixed_batch".into(),
            reason: format!(
                "sampling without replacement is accounted for additive-noise mechanisms \
                 (gaussian, laplace, discrete_laplace, discrete_gaussian), not {name}; \
                 for a generic mechanism state its amplified guarantee as eps_delta"
            ),
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

/// One released event: a mechanism, how its input is sampled, and how many times it runs.
///
/// ```
/// use pld_accountant::{Event, MechanismSpec, Sampling};
///
/// let event = MechanismSpec::laplace(2.0)?.fixed_batch(256, 60_000)?.repeat(1000)?;
/// assert_eq!((event.count(), event.sampling().batch()), (1000, Some((256, 60_000))));
/// // Randomized response has no pair under sampling without replacement:
/// let rr = MechanismSpec::randomized_response(1.0, 2)?;
/// assert!(Event::new(rr).with_sampling(Sampling::fixed_batch(1, 2)?).is_err());
/// # Ok::<(), pld_accountant::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub(crate) mechanism: MechanismSpec,
    pub(crate) sampling: Sampling,
    pub(crate) count: u64,
}

impl From<MechanismSpec> for Event {
    fn from(mechanism: MechanismSpec) -> Self {
        Event::new(mechanism)
    }
}

impl Event {
    /// One run of `mechanism` on every record.
    pub fn new(mechanism: MechanismSpec) -> Self {
        Event {
            mechanism,
            sampling: Sampling::none(),
            count: 1,
        }
    }

    /// The same event on inputs chosen by `sampling`.
    ///
    /// # Errors
    /// [`Error::Incompatible`] naming `sampling` when the scheme has no worst-case pair for
    /// the mechanism (Poisson sampling of `mixture_of_gaussians` or `pmf_pair`; fixed batches
    /// of anything but additive noise).
    pub fn with_sampling(mut self, sampling: Sampling) -> Result<Self> {
        check_sampling_applies(&self.mechanism, sampling)?;
        self.sampling = sampling;
        Ok(self)
    }

    /// The same event on a Poisson sample at rate `rate` (add/remove neighbouring).
    ///
    /// # Errors
    /// As [`Sampling::poisson`] and [`Event::with_sampling`].
    pub fn poisson(self, rate: f64) -> Result<Self> {
        self.with_sampling(Sampling::poisson(rate)?)
    }

    /// The same event on a uniformly random batch of `batch_size` out of `dataset_size`
    /// records (replace neighbouring, additive noise).
    ///
    /// # Errors
    /// As [`Sampling::fixed_batch`] and [`Event::with_sampling`].
    pub fn fixed_batch(self, batch_size: u64, dataset_size: u64) -> Result<Self> {
        self.with_sampling(Sampling::fixed_batch(batch_size, dataset_size)?)
    }

    /// The same event run `count` times.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `count` unless 1 ≤ count ≤ [`MAX_COUNT`].
    pub fn repeat(mut self, count: u64) -> Result<Self> {
        self.count = check_count(count)?;
        Ok(self)
    }

    /// The mechanism.
    pub fn mechanism(&self) -> &MechanismSpec {
        &self.mechanism
    }

    /// How its input is sampled.
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// How many times it runs (≥ 1).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Refuse an event that does not fit the relation (names relative to the event).
    fn check_relation(&self, neighbouring: Neighbouring) -> Result<()> {
        match (self.sampling.kind, neighbouring) {
            (SamplingKind::Poisson(_), Neighbouring::Replace) => {
                return Err(Error::Incompatible {
                    field: "sampling.poisson".into(),
                    reason: "Poisson sampling is accounted under \"add_remove\" neighbouring; \
                             use \"fixed_batch\" sampling for \"replace\""
                        .into(),
                })
            }
            (SamplingKind::FixedBatch { .. }, Neighbouring::AddRemove) => {
                return Err(Error::Incompatible {
                    field: "sampling.fixed_batch".into(),
                    reason: "sampling without replacement is accounted under \"replace\" \
                             neighbouring; set \"neighbouring\": \"replace\""
                        .into(),
                })
            }
            _ => {}
        }
        if neighbouring == Neighbouring::Replace {
            if let MechanismKind::MixtureOfGaussians { .. } = self.mechanism.kind {
                return Err(Error::Incompatible {
                    field: "mechanism".into(),
                    reason: "mixture_of_gaussians describes an add/remove pair; use \
                             \"neighbouring\": \"add_remove\""
                        .into(),
                });
            }
        }
        if neighbouring == Neighbouring::AddRemove && self.mechanism.replace_sensitivity().is_some()
        {
            return Err(Error::Incompatible {
                field: "replace_sensitivity".into(),
                reason: "allowed only with \"neighbouring\": \"replace\"; under \
                         \"add_remove\" give sensitivity (one record's contribution)"
                    .into(),
            });
        }
        Ok(())
    }

    /// The event in the JSON format (what serde writes).
    pub(crate) fn to_json_value(&self) -> Value {
        Value::Object(
            event_fields(self)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Compositions
// ---------------------------------------------------------------------------------------------

/// Everything that was released, in any order (composition is commutative): a neighbouring
/// relation and a non-empty list of events, each fitting the relation.
///
/// Built by [`CompositionSpec::new`], by the builder ([`CompositionSpec::add_remove`],
/// [`CompositionSpec::replace`]), from JSON ([`CompositionSpec::from_json_str`]) or through
/// serde; see the [module documentation](crate::spec) for the format.
///
/// ```
/// use pld_accountant::analytic::event_bounds::approximate_dp;
/// use pld_accountant::{CompositionSpec, MechanismSpec};
///
/// // 12 Laplace count queries (a count moves by 1 when a record is replaced), scale 2:
/// // each is 1/2-DP, 6-DP together by basic composition.
/// let spec = CompositionSpec::replace()
///     .event(MechanismSpec::laplace(2.0)?.with_replace_sensitivity(1.0)?.repeat(12)?)
///     .build()?;
/// let event = &spec.events()[0];
/// let guarantee = approximate_dp(event, spec.neighbouring()).expect("pure DP");
/// assert_eq!(event.count() as f64 * guarantee.epsilon, 6.0);
/// // replace_sensitivity is refused under add/remove:
/// let error = CompositionSpec::add_remove()
///     .event(MechanismSpec::laplace(2.0)?.with_replace_sensitivity(1.0)?)
///     .build()
///     .unwrap_err();
/// assert!(error.to_string().contains("events[0].replace_sensitivity"));
/// # Ok::<(), pld_accountant::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CompositionSpec {
    pub(crate) neighbouring: Neighbouring,
    pub(crate) events: Vec<Event>,
}

/// Collects the events of a [`CompositionSpec`]; [`SpecBuilder::build`] checks them.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "call .build() to get the specification"]
pub struct SpecBuilder {
    neighbouring: Neighbouring,
    events: Vec<Event>,
}

impl SpecBuilder {
    /// Add an event (a bare [`MechanismSpec`] is one unsampled run).
    pub fn event(mut self, event: impl Into<Event>) -> Self {
        self.events.push(event.into());
        self
    }

    /// Add several events.
    pub fn events(mut self, events: impl IntoIterator<Item = Event>) -> Self {
        self.events.extend(events);
        self
    }

    /// The specification.
    ///
    /// # Errors
    /// As [`CompositionSpec::new`].
    pub fn build(self) -> Result<CompositionSpec> {
        CompositionSpec::new(self.neighbouring, self.events)
    }
}

impl CompositionSpec {
    /// The composition of `events` under `neighbouring`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `events` for an empty list; [`Error::Incompatible`]
    /// naming the field (e.g. `events[2].sampling.poisson`) for an event that does not fit the
    /// relation: Poisson sampling under replace, fixed batches under add/remove,
    /// `mixture_of_gaussians` under replace, `replace_sensitivity` under add/remove.
    pub fn new(neighbouring: Neighbouring, events: Vec<Event>) -> Result<Self> {
        if events.is_empty() {
            return Err(Error::invalid("events", "[]", "a non-empty list"));
        }
        for (i, event) in events.iter().enumerate() {
            event
                .check_relation(neighbouring)
                .map_err(|e| relocate(e, &format!("events[{i}]")))?;
        }
        Ok(CompositionSpec {
            neighbouring,
            events,
        })
    }

    /// A builder for a composition under add/remove neighbouring.
    pub fn add_remove() -> SpecBuilder {
        Self::builder(Neighbouring::AddRemove)
    }

    /// A builder for a composition under replace neighbouring.
    pub fn replace() -> SpecBuilder {
        Self::builder(Neighbouring::Replace)
    }

    /// A builder for a composition under `neighbouring`.
    pub fn builder(neighbouring: Neighbouring) -> SpecBuilder {
        SpecBuilder {
            neighbouring,
            events: Vec::new(),
        }
    }

    /// The neighbouring relation the guarantee is stated for.
    pub fn neighbouring(&self) -> Neighbouring {
        self.neighbouring
    }

    /// The events.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Total number of mechanism runs (Σ count, saturating).
    pub fn total_count(&self) -> u64 {
        self.events
            .iter()
            .fold(0u64, |total, e| total.saturating_add(e.count))
    }

    /// Parse and validate a JSON specification.
    ///
    /// # Errors
    /// [`Error::MalformedSpec`] for invalid JSON or a wrong shape; otherwise the error of the
    /// first invalid field, naming its path (e.g. `events[0].sigma`) and value.
    pub fn from_json_str(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(|e| Error::MalformedSpec {
            message: e.to_string(),
        })?;
        Self::from_json_value(&value)
    }

    /// Validate an already-parsed JSON specification.
    ///
    /// # Errors
    /// As [`CompositionSpec::from_json_str`].
    pub fn from_json_value(value: &Value) -> Result<Self> {
        let object = value.as_object().ok_or_else(|| Error::MalformedSpec {
            message: "the specification must be a JSON object with an \"events\" list".into(),
        })?;
        reject_unknown_keys(object, &["neighbouring", "events"])?;
        let neighbouring = match object.get("neighbouring") {
            None => Neighbouring::AddRemove,
            Some(Value::Null) => return Err(null_default("neighbouring", "\"add_remove\"")),
            Some(Value::String(s)) if s == "add_remove" => Neighbouring::AddRemove,
            Some(Value::String(s)) if s == "replace" => Neighbouring::Replace,
            Some(other) => {
                return Err(Error::invalid(
                    "neighbouring",
                    other,
                    "\"add_remove\" or \"replace\"",
                ))
            }
        };
        let events = match object.get("events") {
            Some(Value::Array(events)) => events,
            Some(other) => return Err(Error::invalid("events", other, "a non-empty list")),
            None => return Err(Error::MissingParameter {
                name: "events".into(),
                hint:
                    "list the released events, e.g. [{\"mechanism\": \"gaussian\", \"sigma\": 1}]"
                        .into(),
            }),
        };
        let events = events
            .iter()
            .enumerate()
            .map(|(i, e)| event_from_json(e, i, neighbouring))
            .collect::<Result<Vec<_>>>()?;
        Self::new(neighbouring, events)
    }

    /// The specification as JSON, in the format [`CompositionSpec::from_json_value`] reads
    /// (and serde writes): every event with its `count`, and its sensitivity where one was
    /// given.
    pub fn to_json_value(&self) -> Value {
        serde_json::json!({
            "neighbouring": self.neighbouring.name(),
            "events": self.events.iter().map(Event::to_json_value).collect::<Vec<_>>(),
        })
    }

    /// `steps` runs of a Poisson-subsampled Gaussian (DP-SGD), add/remove neighbouring.
    ///
    /// ```
    /// use pld_accountant::{CompositionSpec, MechanismSpec};
    ///
    /// let spec = CompositionSpec::dp_sgd(1.0, 0.01, 1000, 1.0)?;
    /// let built = CompositionSpec::add_remove()
    ///     .event(MechanismSpec::gaussian(1.0)?.with_sensitivity(1.0)?.poisson(0.01)?.repeat(1000)?)
    ///     .build()?;
    /// assert_eq!(spec, built);
    /// let error = CompositionSpec::dp_sgd(1.0, 1.5, 1000, 1.0).unwrap_err();
    /// assert_eq!(error.to_string(), "invalid sampling_rate = 1.5: must be a number in (0, 1]");
    /// # Ok::<(), pld_accountant::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sigma`, `sensitivity`, `sampling_rate` or `steps`
    /// (the DP-SGD words) for a value out of range.
    pub fn dp_sgd(sigma: f64, sampling_rate: f64, steps: u64, sensitivity: f64) -> Result<Self> {
        let build = || {
            CompositionSpec::add_remove()
                .event(
                    MechanismSpec::gaussian(sigma)?
                        .with_sensitivity(sensitivity)?
                        .poisson(sampling_rate)?
                        .repeat(steps)?,
                )
                .build()
        };
        build().map_err(|e| match e {
            Error::InvalidParameter {
                name,
                value,
                requirement,
            } => Error::InvalidParameter {
                name: match name.as_str() {
                    "sampling.poisson" => "sampling_rate".into(),
                    "count" => "steps".into(),
                    _ => name,
                },
                value,
                requirement,
            },
            other => other,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// serde: the JSON format both ways, through the same validation
// ---------------------------------------------------------------------------------------------

/// Written as the JSON format, keys in the documented order (`neighbouring`, `events`; in an
/// event `mechanism`, its parameters, `sampling`, `count`).
impl Serialize for CompositionSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("neighbouring", &self.neighbouring)?;
        map.serialize_entry("events", &OrderedEvents(&self.events))?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for CompositionSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        CompositionSpec::from_json_value(&value).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serialize_fields(event_fields(self), serializer)
    }
}

impl<'de> Deserialize<'de> for Event {
    /// An event alone (error names relative to it: `sigma`, `sampling.poisson`, ...); the
    /// checks that need the neighbouring relation are made when it joins a
    /// [`CompositionSpec`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        parse_event(&value).map_err(serde::de::Error::custom)
    }
}

impl Serialize for MechanismSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serialize_fields(mechanism_fields(self), serializer)
    }
}

impl<'de> Deserialize<'de> for MechanismSpec {
    /// The mechanism's part of an event, e.g. `{"mechanism": "laplace", "scale": 2}`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let object = value.as_object().ok_or_else(|| {
            serde::de::Error::custom(Error::MalformedSpec {
                message: format!("a mechanism must be a JSON object, got {value}"),
            })
        })?;
        parse_mechanism(object, &[]).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Sampling {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Sampling {
    /// `{"poisson": q}`, `{"fixed_batch": {...}}`, or `null` for no sampling.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Null => Ok(Sampling::none()),
            value => parse_sampling(&value).map_err(serde::de::Error::custom),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The JSON parser (reads values, then calls the checked constructors above)
// ---------------------------------------------------------------------------------------------

fn reject_unknown_keys(object: &Map<String, Value>, allowed: &[&str]) -> Result<()> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(Error::Incompatible {
            field: key.clone(),
            reason: format!("unknown field; expected one of: {}", allowed.join(", ")),
        }),
        None => Ok(()),
    }
}

/// Validate one event of a specification as its `index`-th event (errors name
/// `events[index].…`), exactly as [`CompositionSpec::from_json_value`] does, including the
/// checks against the relation.
pub(crate) fn event_from_json(
    value: &Value,
    index: usize,
    neighbouring: Neighbouring,
) -> Result<Event> {
    let path = format!("events[{index}]");
    if !value.is_object() {
        return Err(Error::MalformedSpec {
            message: format!("{path} must be a JSON object, got {value}"),
        });
    }
    parse_event(value)
        .and_then(|event| event.check_relation(neighbouring).map(|()| event))
        .map_err(|e| relocate(e, &path))
}

/// One event, names relative to it.
fn parse_event(value: &Value) -> Result<Event> {
    let object = value.as_object().ok_or_else(|| Error::MalformedSpec {
        message: format!("an event must be a JSON object, got {value}"),
    })?;
    let mechanism = parse_mechanism(object, &["sampling", "count"])?;
    let sampling = match object.get("sampling") {
        None => Sampling::none(),
        Some(Value::Null) => return Err(null_default("sampling", "no sampling")),
        Some(value) => parse_sampling(value)?,
    };
    let event = Event::new(mechanism).with_sampling(sampling)?;
    let count = match object.get("count") {
        None => 1,
        Some(Value::Null) => return Err(null_default("count", 1)),
        Some(value) => json_whole(value, "count", 1, MAX_COUNT)?,
    };
    event.repeat(count)
}

/// The mechanism of an event object (which may also hold the keys `extra`).
fn parse_mechanism(object: &Map<String, Value>, extra: &[&str]) -> Result<MechanismSpec> {
    let name = match object.get("mechanism") {
        Some(Value::String(name)) => name.as_str(),
        Some(other) => {
            return Err(Error::invalid(
                "mechanism",
                other,
                "a mechanism name such as \"gaussian\"",
            ))
        }
        None => {
            return Err(Error::MissingParameter {
                name: "mechanism".into(),
                hint: "name the mechanism, e.g. \"gaussian\"".into(),
            })
        }
    };
    let keys = |parameters: &[&'static str]| -> Result<()> {
        let mut allowed = vec!["mechanism"];
        allowed.extend_from_slice(extra);
        allowed.extend_from_slice(parameters);
        reject_unknown_keys(object, &allowed)
    };
    let additive = ["sensitivity", "replace_sensitivity"];
    let mechanism = match name {
        "gaussian" => {
            keys(&["sigma", additive[0], additive[1]])?;
            MechanismSpec::gaussian(json_number(object, "sigma", POSITIVE)?)?
        }
        "laplace" => {
            keys(&["scale", additive[0], additive[1]])?;
            MechanismSpec::laplace(json_number(object, "scale", POSITIVE)?)?
        }
        "discrete_laplace" => {
            keys(&["scale", additive[0], additive[1]])?;
            MechanismSpec::discrete_laplace(json_number(object, "scale", POSITIVE)?)?
        }
        "discrete_gaussian" => {
            keys(&["sigma", additive[0], additive[1]])?;
            MechanismSpec::discrete_gaussian(json_number(object, "sigma", POSITIVE)?)?
        }
        "randomized_response" => {
            keys(&["epsilon", "categories"])?;
            let epsilon = check_positive("epsilon", json_number(object, "epsilon", POSITIVE)?)?;
            let categories = match object.get("categories") {
                None => 2,
                Some(Value::Null) => return Err(null_default("categories", 2)),
                Some(value) => json_whole(value, "categories", 2, u64::MAX)?,
            };
            MechanismSpec::randomized_response(epsilon, categories)?
        }
        "eps_delta" => {
            keys(&["epsilon", "delta"])?;
            MechanismSpec::eps_delta(
                json_number(object, "epsilon", "a finite number ≥ 0")?,
                json_number(object, "delta", "a number in [0, 1]")?,
            )?
        }
        "mixture_of_gaussians" => {
            keys(&["sigma", "sensitivities", "probabilities"])?;
            let sigma = json_number(object, "sigma", POSITIVE)?;
            check_positive("sigma", sigma)?;
            let sensitivities = json_list(object, "sensitivities")?;
            check_number_list("sensitivities", &sensitivities)?;
            MechanismSpec::mixture_of_gaussians(
                sigma,
                sensitivities,
                json_list(object, "probabilities")?,
            )?
        }
        "pmf_pair" => {
            keys(&["p", "q"])?;
            let p = json_list(object, "p")?;
            check_probability_list("p", &p)?;
            MechanismSpec::pmf_pair(p, json_list(object, "q")?)?
        }
        unknown => {
            return Err(Error::UnknownMechanism {
                field: "mechanism".into(),
                name: unknown.to_string(),
                expected: MECHANISMS.join(", "),
            })
        }
    };
    if !mechanism.is_additive_noise() {
        return Ok(mechanism);
    }
    let integer = matches!(
        mechanism.kind,
        MechanismKind::DiscreteLaplace { .. } | MechanismKind::DiscreteGaussian { .. }
    );
    let given = |key: &str| -> Result<Option<&Value>> {
        match object.get(key) {
            None => Ok(None),
            Some(Value::Null) => Err(null_default(key, 1)),
            Some(value) => Ok(Some(value)),
        }
    };
    // As the builder does: `sensitivity` first, then `replace_sensitivity` (refused after a
    // `sensitivity`).
    let mut mechanism = mechanism;
    for (key, is_replace) in [("sensitivity", false), ("replace_sensitivity", true)] {
        let Some(value) = given(key)? else { continue };
        mechanism = if integer {
            let k = match json_whole(value, key, 1, u64::MAX) {
                Ok(k) => k,
                // Both given: refused before the value is looked at, as in the builder.
                Err(_) if is_replace && mechanism.sensitivity_given() => {
                    return Err(both_sensitivities())
                }
                Err(e) => return Err(e),
            };
            mechanism.set_integer_sensitivity(key, k, is_replace)?
        } else {
            let x = match value {
                Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
                _ if is_replace && mechanism.sensitivity_given() => {
                    return Err(both_sensitivities())
                }
                other => return Err(Error::invalid(key, other, POSITIVE)),
            };
            mechanism.set_sensitivity(key, x, is_replace)?
        };
    }
    Ok(mechanism)
}

/// A required number (its range is checked by the constructor it is given to).
fn json_number(object: &Map<String, Value>, key: &str, requirement: &str) -> Result<f64> {
    match object.get(key) {
        None | Some(Value::Null) => Err(Error::MissingParameter {
            name: key.into(),
            hint: format!("give {key} as {requirement}"),
        }),
        Some(Value::Number(n)) => Ok(n.as_f64().unwrap_or(f64::NAN)),
        Some(other) => Err(Error::invalid(key, other, requirement)),
    }
}

/// A whole number in `[min, max]` written as a JSON number.
fn json_whole(value: &Value, name: &str, min: u64, max: u64) -> Result<u64> {
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(k) => check_whole(name, k, min, max),
            None => check_whole_f64(name, n.as_f64().unwrap_or(f64::NAN), min, max),
        },
        other => Err(Error::invalid(name, other, &whole_requirement(min, max))),
    }
}

/// A required list of numbers (its entries are checked by the constructor).
fn json_list(object: &Map<String, Value>, key: &str) -> Result<Vec<f64>> {
    let requirement = "a non-empty list of finite numbers ≥ 0";
    let list = match object.get(key) {
        None | Some(Value::Null) => {
            return Err(Error::MissingParameter {
                name: key.into(),
                hint: format!("give {key} as {requirement}"),
            })
        }
        Some(Value::Array(list)) => list,
        Some(other) => return Err(Error::invalid(key, other, requirement)),
    };
    if list.len() > MAX_OUTCOMES {
        return Err(Error::invalid(
            key,
            format!("a list of {} entries", list.len()),
            &format!("at most {MAX_OUTCOMES} entries"),
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_f64()
                .ok_or_else(|| Error::invalid(format!("{key}[{i}]"), v, "a finite number ≥ 0"))
        })
        .collect()
}

/// A `null` where the key has a default: refused rather than read as the default, since a
/// `null` marks the field `pld calibrate` solves for (a calibration file given to another
/// command must not silently run with the default).
fn null_default(name: &str, default: impl std::fmt::Display) -> Error {
    Error::invalid(
        name,
        "null",
        &format!(
            "a value (leave the key out for the default, {default}; null marks the field \
             `pld calibrate` solves for)"
        ),
    )
}

/// A `sampling` value (not `null`), names relative to the event.
fn parse_sampling(value: &Value) -> Result<Sampling> {
    let object = match value {
        Value::Object(o) => o,
        other => return Err(Error::invalid("sampling", other, SAMPLING_REQUIREMENT)),
    };
    let exactly_one = || {
        Error::invalid(
            "sampling",
            Value::Object(object.clone()),
            "exactly one of \"poisson\" or \"fixed_batch\"",
        )
    };
    if object.len() != 1 {
        return Err(exactly_one());
    }
    if let Some(q) = object.get("poisson") {
        return match q {
            Value::Number(n) => Sampling::poisson(n.as_f64().unwrap_or(f64::NAN)),
            Value::Null => Err(Error::MissingParameter {
                name: "sampling.poisson".into(),
                hint: "give the sampling rate q with 0 < q ≤ 1".into(),
            }),
            other => Err(Error::invalid("sampling.poisson", other, RATE_REQUIREMENT)),
        };
    }
    if let Some(batch) = object.get("fixed_batch") {
        let field = "sampling.fixed_batch";
        let batch = batch.as_object().ok_or_else(|| {
            Error::invalid(field, batch, "{\"batch_size\": m, \"dataset_size\": n}")
        })?;
        reject_unknown_keys(batch, &["batch_size", "dataset_size"])
            .map_err(|e| relocate(e, field))?;
        let whole = |key: &str| {
            let name = format!("{field}.{key}");
            match batch.get(key) {
                None | Some(Value::Null) => Err(Error::invalid(name, "null", "a whole number ≥ 1")),
                Some(value) => json_whole(value, &name, 1, u64::MAX),
            }
        };
        return Sampling::fixed_batch(whole("batch_size")?, whole("dataset_size")?);
    }
    Err(exactly_one())
}

/// The mechanism's keys of an event, in the JSON format, in the order they are written.
fn mechanism_fields(mechanism: &MechanismSpec) -> Vec<(&'static str, Value)> {
    let mut fields = vec![("mechanism", Value::from(mechanism.name()))];
    fn shift<T: SensitivityValue + Into<Value>>(
        shift: Shift<T>,
        fields: &mut Vec<(&'static str, Value)>,
    ) {
        match shift {
            Shift::Default => {}
            Shift::PerRecord(x) => fields.push(("sensitivity", x.into())),
            Shift::Replace(x) => fields.push(("replace_sensitivity", x.into())),
        }
    }
    match &mechanism.kind {
        &MechanismKind::Gaussian { sigma, sensitivity } => {
            fields.push(("sigma", sigma.into()));
            shift(sensitivity, &mut fields);
        }
        &MechanismKind::Laplace { scale, sensitivity } => {
            fields.push(("scale", scale.into()));
            shift(sensitivity, &mut fields);
        }
        &MechanismKind::DiscreteLaplace { scale, sensitivity } => {
            fields.push(("scale", scale.into()));
            shift(sensitivity, &mut fields);
        }
        &MechanismKind::DiscreteGaussian { sigma, sensitivity } => {
            fields.push(("sigma", sigma.into()));
            shift(sensitivity, &mut fields);
        }
        &MechanismKind::RandomizedResponse {
            epsilon,
            categories,
        } => {
            fields.push(("epsilon", epsilon.into()));
            fields.push(("categories", categories.into()));
        }
        &MechanismKind::EpsDelta { epsilon, delta } => {
            fields.push(("epsilon", epsilon.into()));
            fields.push(("delta", delta.into()));
        }
        MechanismKind::MixtureOfGaussians {
            sigma,
            sensitivities,
            listed,
            ..
        } => {
            fields.push(("sigma", (*sigma).into()));
            fields.push(("sensitivities", sensitivities.clone().into()));
            fields.push(("probabilities", listed.clone().into()));
        }
        MechanismKind::PmfPair { listed, .. } => {
            fields.push(("p", listed[0].clone().into()));
            fields.push(("q", listed[1].clone().into()));
        }
    }
    fields
}

/// An event's keys in the order they are written: mechanism, parameters, sampling, count.
fn event_fields(event: &Event) -> Vec<(&'static str, Value)> {
    let mut fields = mechanism_fields(&event.mechanism);
    if !event.sampling.is_none() {
        fields.push(("sampling", event.sampling.to_json_value()));
    }
    fields.push(("count", Value::from(event.count)));
    fields
}

/// Write `fields` as a JSON object in their order.
fn serialize_fields<S: Serializer>(
    fields: Vec<(&'static str, Value)>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(fields.len()))?;
    for (key, value) in &fields {
        map.serialize_entry(key, value)?;
    }
    map.end()
}

/// Events written in order, each as [`event_fields`].
struct OrderedEvents<'a>(&'a [Event]);

impl Serialize for OrderedEvents<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for event in self.0 {
            seq.serialize_element(&OrderedEvent(event))?;
        }
        seq.end()
    }
}

struct OrderedEvent<'a>(&'a Event);

impl Serialize for OrderedEvent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serialize_fields(event_fields(self.0), serializer)
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
