//! The composition specification (the JSON format of `docs/spec.md`): what was released,
//! validated at the boundary.
//!
//! The first stage of the pipeline: everything after it ([`crate::mechanism`],
//! [`crate::accountant`], …) takes a validated [`CompositionSpec`].

pub mod presets;

use crate::error::{Error, Result};
use serde_json::{Map, Value};

/// Which datasets count as neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Neighbouring {
    /// D and D ∪ {z} (the default). Sensitivity is one record's contribution.
    AddRemove,
    /// D and D with one record changed. For additive noise the outputs can then differ by
    /// twice the per-record bound Δ (dp_accounting's convention).
    Replace,
}

/// How the records entering an event are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// Every record, every time.
    None,
    /// Each record independently with this probability (0 < q ≤ 1).
    Poisson(f64),
    /// A uniformly random batch of `batch_size` out of `dataset_size` records.
    FixedBatch {
        /// m.
        batch_size: u64,
        /// n.
        dataset_size: u64,
    },
}

/// A mechanism with validated parameters (the mechanisms of `docs/spec.md`).
#[derive(Debug, Clone, PartialEq)]
pub enum MechanismSpec {
    /// Gaussian noise N(0, σ²) on a query of L2 sensitivity Δ.
    Gaussian {
        /// σ > 0.
        sigma: f64,
        /// Δ > 0.
        sensitivity: f64,
    },
    /// Laplace noise with density e^{−|x|/b}/(2b) on a query of L1 sensitivity Δ.
    Laplace {
        /// b > 0.
        scale: f64,
        /// Δ > 0.
        sensitivity: f64,
    },
    /// Integer noise with P(k) ∝ e^{−|k|/scale} on an integer query.
    DiscreteLaplace {
        /// scale > 0 (the noise is `c·e^{−a|k|}` with `a = 1/scale`).
        scale: f64,
        /// Integer Δ ≥ 1.
        sensitivity: u64,
    },
    /// Integer noise with P(k) ∝ e^{−k²/(2σ²)} on an integer query.
    DiscreteGaussian {
        /// σ > 0.
        sigma: f64,
        /// Integer Δ ≥ 1.
        sensitivity: u64,
    },
    /// k-ary randomized response: the truth w.p. e^ε/(k−1+e^ε), otherwise one of the other
    /// k−1 answers uniformly.
    RandomizedResponse {
        /// ε > 0.
        epsilon: f64,
        /// k ≥ 2.
        categories: u64,
    },
    /// Any mechanism known only to be (ε, δ)-DP (accounted by its worst-case pair).
    EpsDelta {
        /// ε ≥ 0.
        epsilon: f64,
        /// 0 ≤ δ ≤ 1.
        delta: f64,
    },
    /// Gaussian noise N(0, σ²) on a query whose sensitivity is random: `c_i` with probability
    /// `p_i` (e.g. a record that may be sampled more than once, as in DP-FTRL or shuffled
    /// batches). REMOVE pair `Σ p_i N(−c_i, σ²)` vs `N(0, σ²)`; add/remove only.
    MixtureOfGaussians {
        /// σ > 0.
        sigma: f64,
        /// The possible sensitivities `c_i ≥ 0`.
        sensitivities: Vec<f64>,
        /// Their probabilities `p_i ≥ 0`, summing to 1.
        probabilities: Vec<f64>,
    },
    /// Any mechanism with finitely many outcomes, given by its worst-case neighbouring pair:
    /// the output distributions `p = M(D)` and `q = M(D')` over the same outcomes. Both
    /// orders (p‖q and q‖p) are accounted.
    PmfPair {
        /// Probabilities of the outcomes on D (≥ 0, summing to 1).
        p: Vec<f64>,
        /// Probabilities of the same outcomes on D' (≥ 0, summing to 1).
        q: Vec<f64>,
    },
}

impl MechanismSpec {
    /// The name used in the specification.
    pub fn name(&self) -> &'static str {
        match self {
            MechanismSpec::Gaussian { .. } => "gaussian",
            MechanismSpec::Laplace { .. } => "laplace",
            MechanismSpec::DiscreteLaplace { .. } => "discrete_laplace",
            MechanismSpec::DiscreteGaussian { .. } => "discrete_gaussian",
            MechanismSpec::RandomizedResponse { .. } => "randomized_response",
            MechanismSpec::EpsDelta { .. } => "eps_delta",
            MechanismSpec::MixtureOfGaussians { .. } => "mixture_of_gaussians",
            MechanismSpec::PmfPair { .. } => "pmf_pair",
        }
    }

    /// Whether the mechanism adds noise to a numeric query (the sampling schemes of
    /// [`Sampling`] are defined for these).
    pub fn is_additive_noise(&self) -> bool {
        matches!(
            self,
            MechanismSpec::Gaussian { .. }
                | MechanismSpec::Laplace { .. }
                | MechanismSpec::DiscreteLaplace { .. }
                | MechanismSpec::DiscreteGaussian { .. }
        )
    }
}

/// One released event, possibly repeated.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The mechanism.
    pub mechanism: MechanismSpec,
    /// How its input is sampled.
    pub sampling: Sampling,
    /// How many times it runs (≥ 1).
    pub count: u64,
}

/// Everything that was released, in any order (composition is commutative).
#[derive(Debug, Clone, PartialEq)]
pub struct CompositionSpec {
    /// The neighbouring relation the guarantee is stated for.
    pub neighbouring: Neighbouring,
    /// The events.
    pub events: Vec<Event>,
}

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

/// Largest number of outcomes (or mixture components) a listed distribution may have.
pub const MAX_OUTCOMES: usize = 1_000_000;

/// How far a listed distribution's total may be from 1 before it is refused (it is then
/// divided by its total).
pub const PROBABILITY_SUM_TOLERANCE: f64 = 1e-9;

/// Largest accepted `count`.
pub const MAX_COUNT: u64 = 1_000_000_000_000;

impl CompositionSpec {
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
        reject_unknown_keys(object, "", &["neighbouring", "events"])?;
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
        if events.is_empty() {
            return Err(Error::invalid("events", "[]", "a non-empty list"));
        }
        let events = events
            .iter()
            .enumerate()
            .map(|(i, e)| parse_event(e, &format!("events[{i}]"), neighbouring))
            .collect::<Result<Vec<_>>>()?;
        Ok(CompositionSpec {
            neighbouring,
            events,
        })
    }

    /// `steps` runs of a Poisson-subsampled Gaussian (DP-SGD), add/remove neighbouring.
    ///
    /// # Errors
    /// As the corresponding JSON fields.
    pub fn dp_sgd(sigma: f64, sampling_rate: f64, steps: u64, sensitivity: f64) -> Result<Self> {
        // Checked here, under the flags' names: JSON cannot carry NaN or ∞.
        for (name, value) in [
            ("sigma", sigma),
            ("sampling_rate", sampling_rate),
            ("sensitivity", sensitivity),
        ] {
            if !value.is_finite() {
                return Err(Error::invalid(name, value, "a finite number"));
            }
        }
        let value = serde_json::json!({
            "neighbouring": "add_remove",
            "events": [{
                "mechanism": "gaussian", "sigma": sigma, "sensitivity": sensitivity,
                "sampling": {"poisson": sampling_rate}, "count": steps
            }]
        });
        Self::from_json_value(&value).map_err(|e| match e {
            // Report the flag-level names for values that came from flags.
            Error::InvalidParameter {
                name,
                value,
                requirement,
            } => Error::InvalidParameter {
                name: name
                    .replace("events[0].", "")
                    .replace("sampling.poisson", "sampling_rate")
                    .replace("count", "steps"),
                value,
                requirement,
            },
            other => other,
        })
    }

    /// Total number of mechanism runs (Σ count).
    pub fn total_count(&self) -> u64 {
        self.events.iter().map(|e| e.count).sum()
    }
}

fn reject_unknown_keys(object: &Map<String, Value>, path: &str, allowed: &[&str]) -> Result<()> {
    for key in object.keys() {
        if !allowed.contains(&key.as_str()) {
            let field = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            return Err(Error::Incompatible {
                field,
                reason: format!("unknown field; expected one of: {}", allowed.join(", ")),
            });
        }
    }
    Ok(())
}

/// Validate one event of a specification as its `index`-th event (errors name
/// `events[index].…`), exactly as [`CompositionSpec::from_json_value`] does.
pub(crate) fn event_from_json(
    value: &Value,
    index: usize,
    neighbouring: Neighbouring,
) -> Result<Event> {
    parse_event(value, &format!("events[{index}]"), neighbouring)
}

fn parse_event(value: &Value, path: &str, neighbouring: Neighbouring) -> Result<Event> {
    let object = value.as_object().ok_or_else(|| Error::MalformedSpec {
        message: format!("{path} must be a JSON object, got {value}"),
    })?;
    let name = match object.get("mechanism") {
        Some(Value::String(name)) => name.as_str(),
        Some(other) => {
            return Err(Error::invalid(
                format!("{path}.mechanism"),
                other,
                "a mechanism name such as \"gaussian\"",
            ))
        }
        None => {
            return Err(Error::MissingParameter {
                name: format!("{path}.mechanism"),
                hint: "name the mechanism, e.g. \"gaussian\"".into(),
            })
        }
    };
    let mechanism = match name {
        "gaussian" => {
            reject_unknown_keys(object, path, &event_keys(&["sigma", "sensitivity"]))?;
            MechanismSpec::Gaussian {
                sigma: positive(object, path, "sigma", None)?,
                sensitivity: positive(object, path, "sensitivity", Some(1.0))?,
            }
        }
        "laplace" => {
            reject_unknown_keys(object, path, &event_keys(&["scale", "sensitivity"]))?;
            MechanismSpec::Laplace {
                scale: positive(object, path, "scale", None)?,
                sensitivity: positive(object, path, "sensitivity", Some(1.0))?,
            }
        }
        "discrete_laplace" => {
            reject_unknown_keys(object, path, &event_keys(&["scale", "sensitivity"]))?;
            MechanismSpec::DiscreteLaplace {
                scale: positive(object, path, "scale", None)?,
                sensitivity: whole(object, path, "sensitivity", 1, 1)?,
            }
        }
        "discrete_gaussian" => {
            reject_unknown_keys(object, path, &event_keys(&["sigma", "sensitivity"]))?;
            MechanismSpec::DiscreteGaussian {
                sigma: positive(object, path, "sigma", None)?,
                sensitivity: whole(object, path, "sensitivity", 1, 1)?,
            }
        }
        "randomized_response" => {
            reject_unknown_keys(object, path, &event_keys(&["epsilon", "categories"]))?;
            MechanismSpec::RandomizedResponse {
                epsilon: positive(object, path, "epsilon", None)?,
                categories: whole(object, path, "categories", 2, 2)?,
            }
        }
        "eps_delta" => {
            reject_unknown_keys(object, path, &event_keys(&["epsilon", "delta"]))?;
            MechanismSpec::EpsDelta {
                epsilon: in_range(object, path, "epsilon", 0.0, f64::INFINITY)?,
                delta: in_range(object, path, "delta", 0.0, 1.0)?,
            }
        }
        "mixture_of_gaussians" => {
            reject_unknown_keys(
                object,
                path,
                &event_keys(&["sigma", "sensitivities", "probabilities"]),
            )?;
            let sigma = positive(object, path, "sigma", None)?;
            let sensitivities = number_list(object, path, "sensitivities")?;
            let probabilities = probability_list(object, path, "probabilities")?;
            if sensitivities.len() != probabilities.len() {
                return Err(Error::Incompatible {
                    field: format!("{path}.probabilities"),
                    reason: format!(
                        "{} probabilities for {} sensitivities; give one per sensitivity",
                        probabilities.len(),
                        sensitivities.len()
                    ),
                });
            }
            if neighbouring == Neighbouring::Replace {
                return Err(Error::Incompatible {
                    field: format!("{path}.mechanism"),
                    reason: "mixture_of_gaussians describes an add/remove pair; use \
                             \"neighbouring\": \"add_remove\""
                        .into(),
                });
            }
            MechanismSpec::MixtureOfGaussians {
                sigma,
                sensitivities,
                probabilities,
            }
        }
        "pmf_pair" => {
            reject_unknown_keys(object, path, &event_keys(&["p", "q"]))?;
            let p = probability_list(object, path, "p")?;
            let q = probability_list(object, path, "q")?;
            if p.len() != q.len() {
                return Err(Error::Incompatible {
                    field: format!("{path}.q"),
                    reason: format!(
                        "{} outcomes in q but {} in p; list the same outcomes in both",
                        q.len(),
                        p.len()
                    ),
                });
            }
            MechanismSpec::PmfPair { p, q }
        }
        unknown => {
            return Err(Error::UnknownMechanism {
                field: format!("{path}.mechanism"),
                name: unknown.to_string(),
                expected: MECHANISMS.join(", "),
            })
        }
    };
    let sampling = parse_sampling(object.get("sampling"), path, neighbouring)?;
    check_sampling_applies(&mechanism, sampling, path)?;
    let count = parse_count(object.get("count"), path)?;
    Ok(Event {
        mechanism,
        sampling,
        count,
    })
}

fn positive(
    object: &Map<String, Value>,
    path: &str,
    key: &str,
    default: Option<f64>,
) -> Result<f64> {
    let name = format!("{path}.{key}");
    match (object.get(key), default) {
        (None, Some(d)) => Ok(d),
        (Some(Value::Null), Some(d)) => Err(null_default(&name, d)),
        (None, None) | (Some(Value::Null), None) => Err(Error::MissingParameter {
            name,
            hint: format!("give {key} as a number > 0"),
        }),
        (Some(Value::Number(n)), _) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x.is_finite() && x > 0.0 {
                Ok(x)
            } else {
                Err(Error::invalid(name, x, "a finite number > 0"))
            }
        }
        (Some(other), _) => Err(Error::invalid(name, other, "a finite number > 0")),
    }
}

/// Refuse sampling schemes that have no proven worst-case pair for the mechanism.
///
/// Poisson sampling (add/remove) applies to additive noise, randomized response and
/// `eps_delta`, whose pairs are symmetric; sampling without replacement (replace) to additive
/// noise only. A mixture of Gaussians already describes a sampled mechanism, and a pmf_pair
/// should list the sampled mechanism's own pair.
fn check_sampling_applies(mechanism: &MechanismSpec, sampling: Sampling, path: &str) -> Result<()> {
    let name = mechanism.name();
    match sampling {
        Sampling::None => Ok(()),
        Sampling::Poisson(_) => match mechanism {
            MechanismSpec::MixtureOfGaussians { .. } | MechanismSpec::PmfPair { .. } => {
                Err(Error::Incompatible {
                    field: format!("{path}.sampling"),
                    reason: format!(
                        "{name} cannot be sampled: {}",
                        if matches!(mechanism, MechanismSpec::PmfPair { .. }) {
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
        Sampling::FixedBatch { .. } if mechanism.is_additive_noise() => Ok(()),
        Sampling::FixedBatch { .. } => Err(Error::Incompatible {
            field: format!("{path}.sampling.fixed_batch"),
            reason: format!(
                "sampling without replacement is accounted for additive-noise mechanisms \
                 (gaussian, laplace, discrete_laplace, discrete_gaussian), not {name}; \
                 for a generic mechanism state its amplified guarantee as eps_delta"
            ),
        }),
    }
}

/// A required non-empty list of finite numbers ≥ 0.
fn number_list(object: &Map<String, Value>, path: &str, key: &str) -> Result<Vec<f64>> {
    let name = format!("{path}.{key}");
    let requirement = "a non-empty list of finite numbers ≥ 0";
    let list = match object.get(key) {
        None | Some(Value::Null) => {
            return Err(Error::MissingParameter {
                name,
                hint: format!("give {key} as {requirement}"),
            })
        }
        Some(Value::Array(list)) => list,
        Some(other) => return Err(Error::invalid(name, other, requirement)),
    };
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
    list.iter()
        .enumerate()
        .map(|(i, v)| match v.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => Err(Error::invalid(
                format!("{name}[{i}]"),
                v,
                "a finite number ≥ 0",
            )),
        })
        .collect()
}

/// A required list of probabilities: numbers ≥ 0 whose total is 1 within
/// [`PROBABILITY_SUM_TOLERANCE`]; returned divided by their total.
fn probability_list(object: &Map<String, Value>, path: &str, key: &str) -> Result<Vec<f64>> {
    let mut list = number_list(object, path, key)?;
    if let Some((i, x)) = list.iter().enumerate().find(|(_, x)| **x > 1.0) {
        return Err(Error::invalid(
            format!("{path}.{key}[{i}]"),
            x,
            "a probability in [0, 1]",
        ));
    }
    let total = crate::numeric::summation::neumaier_sum(list.iter().copied());
    if (total - 1.0).abs() > PROBABILITY_SUM_TOLERANCE {
        return Err(Error::invalid(
            format!("{path}.{key}"),
            format!("a list summing to {total}"),
            "probabilities summing to 1",
        ));
    }
    list.iter_mut().for_each(|x| *x /= total);
    Ok(list)
}

/// The keys an event with these mechanism parameters may have.
fn event_keys<'a>(parameters: &[&'a str]) -> Vec<&'a str> {
    let mut keys = vec!["mechanism", "sampling", "count"];
    keys.extend_from_slice(parameters);
    keys
}

/// A required (or defaulted) whole number ≥ `min`.
fn whole(
    object: &Map<String, Value>,
    path: &str,
    key: &str,
    default: u64,
    min: u64,
) -> Result<u64> {
    let name = format!("{path}.{key}");
    let requirement = format!("a whole number ≥ {min}");
    match object.get(key) {
        None => Ok(default),
        Some(Value::Null) => Err(null_default(&name, default)),
        Some(Value::Number(n)) => {
            let value = n.as_u64().or_else(|| {
                let x = n.as_f64()?;
                (x.fract() == 0.0 && x >= 0.0 && x < 2f64.powi(63)).then_some(x as u64)
            });
            match value {
                Some(v) if v >= min => Ok(v),
                _ => Err(Error::invalid(name, n, &requirement)),
            }
        }
        Some(other) => Err(Error::invalid(name, other, &requirement)),
    }
}

/// A required number in `[low, high]` (finite).
fn in_range(
    object: &Map<String, Value>,
    path: &str,
    key: &str,
    low: f64,
    high: f64,
) -> Result<f64> {
    let name = format!("{path}.{key}");
    let requirement = if high.is_finite() {
        format!("a number in [{low}, {high}]")
    } else {
        format!("a finite number ≥ {low}")
    };
    match object.get(key) {
        None | Some(Value::Null) => Err(Error::MissingParameter {
            name,
            hint: format!("give {key} as {requirement}"),
        }),
        Some(Value::Number(n)) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x.is_finite() && x >= low && x <= high {
                Ok(x)
            } else {
                Err(Error::invalid(name, n, &requirement))
            }
        }
        Some(other) => Err(Error::invalid(name, other, &requirement)),
    }
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

fn parse_count(value: Option<&Value>, path: &str) -> Result<u64> {
    let name = format!("{path}.count");
    let requirement = "a whole number ≥ 1 (at most 10^12)";
    match value {
        None => Ok(1),
        Some(Value::Null) => Err(null_default(&name, 1)),
        Some(Value::Number(n)) => {
            if let Some(k) = n.as_u64() {
                if (1..=MAX_COUNT).contains(&k) {
                    return Ok(k);
                }
                return Err(Error::invalid(name, k, requirement));
            }
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x.fract() == 0.0 && x >= 1.0 && x <= MAX_COUNT as f64 {
                Ok(x as u64)
            } else {
                Err(Error::invalid(name, n, requirement))
            }
        }
        Some(other) => Err(Error::invalid(name, other, requirement)),
    }
}

fn parse_sampling(
    value: Option<&Value>,
    path: &str,
    neighbouring: Neighbouring,
) -> Result<Sampling> {
    let name = format!("{path}.sampling");
    let object =
        match value {
            None => return Ok(Sampling::None),
            Some(Value::Null) => return Err(null_default(&name, "no sampling")),
            Some(Value::Object(o)) => o,
            Some(other) => return Err(Error::invalid(
                name,
                other,
                "{\"poisson\": q} or {\"fixed_batch\": {\"batch_size\": m, \"dataset_size\": n}}",
            )),
        };
    if object.len() != 1 {
        return Err(Error::invalid(
            name,
            Value::Object(object.clone()),
            "exactly one of \"poisson\" or \"fixed_batch\"",
        ));
    }
    if let Some(q) = object.get("poisson") {
        let field = format!("{name}.poisson");
        let q = match q {
            Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
            Value::Null => {
                return Err(Error::MissingParameter {
                    name: field,
                    hint: "give the sampling rate q with 0 < q ≤ 1".into(),
                })
            }
            other => return Err(Error::invalid(field, other, "a number in (0, 1]")),
        };
        if !(q > 0.0 && q <= 1.0) {
            return Err(Error::invalid(field, q, "a number in (0, 1]"));
        }
        if neighbouring == Neighbouring::Replace {
            return Err(Error::Incompatible {
                field,
                reason: "Poisson sampling is accounted under \"add_remove\" neighbouring; \
                         use \"fixed_batch\" sampling for \"replace\""
                    .into(),
            });
        }
        return Ok(Sampling::Poisson(q));
    }
    if let Some(batch) = object.get("fixed_batch") {
        let field = format!("{name}.fixed_batch");
        let batch = batch.as_object().ok_or_else(|| {
            Error::invalid(
                field.clone(),
                batch,
                "{\"batch_size\": m, \"dataset_size\": n}",
            )
        })?;
        reject_unknown_keys(batch, &field, &["batch_size", "dataset_size"])?;
        let whole = |key: &str| -> Result<u64> {
            match batch.get(key).and_then(Value::as_u64) {
                Some(v) if v >= 1 => Ok(v),
                _ => Err(Error::invalid(
                    format!("{field}.{key}"),
                    batch.get(key).cloned().unwrap_or(Value::Null),
                    "a whole number ≥ 1",
                )),
            }
        };
        let (m, n) = (whole("batch_size")?, whole("dataset_size")?);
        if m > n {
            return Err(Error::Incompatible {
                field,
                reason: format!("batch_size {m} exceeds dataset_size {n}"),
            });
        }
        if neighbouring != Neighbouring::Replace {
            return Err(Error::Incompatible {
                field,
                reason: "sampling without replacement is accounted under \"replace\" \
                         neighbouring; set \"neighbouring\": \"replace\""
                    .into(),
            });
        }
        return Ok(Sampling::FixedBatch {
            batch_size: m,
            dataset_size: n,
        });
    }
    Err(Error::invalid(
        name,
        Value::Object(object.clone()),
        "exactly one of \"poisson\" or \"fixed_batch\"",
    ))
}
