//! A calibration problem: a composition specification with exactly one unknown, written `null`.
//!
//! ```text
//! {"events": [{"mechanism": "gaussian", "sigma": null, "sampling": {"poisson": 0.01},
//!              "count": 1000}]}
//! ```
//!
//! The fields that can be calibrated are the noise of a noise-adding mechanism (`sigma` of
//! `gaussian`, `discrete_gaussian` and `mixture_of_gaussians`; `scale` of `laplace` and
//! `discrete_laplace`), the `count` of any event, and the Poisson sampling rate
//! (`"sampling": {"poisson": null}`). Every other field is validated exactly as in a
//! [`CompositionSpec`]; a `null` anywhere else is refused rather than read as a default.

use crate::error::{Error, Result};
use crate::spec::{self, CompositionSpec, MechanismKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The kind of parameter a calibration solves for, and which way is better for utility.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Parameter {
    /// `sigma` of `gaussian`, `discrete_gaussian` or `mixture_of_gaussians` noise (smaller is
    /// better).
    #[serde(rename = "sigma")]
    Sigma,
    /// `scale` of `laplace` or `discrete_laplace` noise (smaller is better).
    #[serde(rename = "scale")]
    Scale,
    /// `count`, the number of runs of an event (larger is better).
    #[serde(rename = "count")]
    Count,
    /// The Poisson sampling rate q, `"sampling": {"poisson": null}` (larger is better).
    #[serde(rename = "poisson")]
    PoissonRate,
}

impl Parameter {
    /// The field name as written in the specification: `sigma`, `scale`, `count`, `poisson`.
    pub fn name(self) -> &'static str {
        match self {
            Parameter::Sigma => "sigma",
            Parameter::Scale => "scale",
            Parameter::Count => "count",
            Parameter::PoissonRate => "poisson",
        }
    }

    /// Whether a larger value is more private (noise), rather than less (count, rate).
    pub fn larger_is_more_private(self) -> bool {
        matches!(self, Parameter::Sigma | Parameter::Scale)
    }

    /// The valid range of the field, as the specification's parser words it.
    fn requirement(self) -> &'static str {
        match self {
            Parameter::Sigma | Parameter::Scale => "a finite number > 0",
            Parameter::Count => "a whole number ≥ 1 (at most 10^12)",
            Parameter::PoissonRate => "a number in (0, 1]",
        }
    }
}

impl fmt::Display for Parameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What may be written as `null`, for error messages.
const CALIBRATABLE: &str = "only sigma (gaussian, discrete_gaussian, mixture_of_gaussians), \
                            scale (laplace, discrete_laplace), count, or the sampling rate \
                            {\"poisson\": null} can be null, to be calibrated";

/// Value put in place of the `null` to validate the rest of the specification (valid for
/// every calibratable field: σ = 1, scale = 1, count = 1, q = 1).
const PROBE_VALUE: u64 = 1;

/// A composition specification with one unknown parameter.
///
/// Built from JSON with exactly one `null` field; [`CalibrationProblem::spec_with`] fills it
/// in and returns an ordinary [`CompositionSpec`], validated by the same parser.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationProblem {
    /// The specification with the unknown set to [`PROBE_VALUE`] (every other field validated).
    template: CompositionSpec,
    /// The JSON object of the event holding the unknown, with its `null`.
    event: Map<String, Value>,
    /// Index of that event in `events`.
    index: usize,
    parameter: Parameter,
    /// Path of the unknown, e.g. `events[0].sampling.poisson`.
    location: String,
}

/// One step of a path into a JSON document.
#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// A path as the specification's error messages write it, e.g. `events[0].sampling.poisson`.
fn path_text(path: &[Segment]) -> String {
    let mut text = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) if text.is_empty() => text.push_str(key),
            Segment::Key(key) => {
                text.push('.');
                text.push_str(key);
            }
            Segment::Index(i) => text.push_str(&format!("[{i}]")),
        }
    }
    text
}

/// Paths of every `null` in a JSON document, in document order.
fn null_paths(value: &Value, path: &mut Vec<Segment>, found: &mut Vec<Vec<Segment>>) {
    match value {
        Value::Null => found.push(path.clone()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Segment::Index(i));
                null_paths(item, path, found);
                path.pop();
            }
        }
        Value::Object(object) => {
            for (key, item) in object {
                path.push(Segment::Key(key.clone()));
                null_paths(item, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

impl CalibrationProblem {
    /// Parse a JSON calibration problem.
    ///
    /// # Errors
    /// As [`CalibrationProblem::from_json_value`]; [`Error::MalformedSpec`] for invalid JSON.
    pub fn from_json_str(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(|e| Error::MalformedSpec {
            message: e.to_string(),
        })?;
        Self::from_json_value(&value)
    }

    /// Validate a JSON calibration problem: a [`CompositionSpec`] with exactly one `null`.
    ///
    /// # Errors
    /// - [`Error::MissingParameter`] when nothing is `null` (nothing to calibrate);
    /// - [`Error::Incompatible`] naming every `null` field when there are several;
    /// - [`Error::InvalidParameter`] naming the field when the `null` is in a field that
    ///   cannot be calibrated (e.g. `events[0].epsilon`, `events[0].sensitivity`,
    ///   `"sampling": null`), with the list of fields that can;
    /// - otherwise the error [`CompositionSpec::from_json_value`] gives for the first invalid
    ///   field, with the unknown set to a valid placeholder.
    pub fn from_json_value(value: &Value) -> Result<Self> {
        if !value.is_object() {
            return Err(Error::MalformedSpec {
                message: "the specification must be a JSON object with an \"events\" list".into(),
            });
        }
        let mut found = Vec::new();
        null_paths(value, &mut Vec::new(), &mut found);
        let path = match found.as_slice() {
            [] => {
                return Err(Error::MissingParameter {
                    name: "calibration parameter".into(),
                    hint: format!(
                        "write the field to calibrate as null, e.g. \"sigma\": null; {CALIBRATABLE}"
                    ),
                })
            }
            [path] => path,
            several => {
                let names: Vec<String> = several.iter().map(|p| path_text(p)).collect();
                return Err(Error::Incompatible {
                    field: names.join(", "),
                    reason: format!(
                        "{} fields are null; calibrate one at a time: give values to all \
                         but the one to calibrate",
                        names.len()
                    ),
                });
            }
        };
        let location = path_text(path);
        let not_calibratable = |requirement: String| Error::InvalidParameter {
            name: location.clone(),
            value: "null".into(),
            requirement,
        };
        let (index, parameter) = match path.as_slice() {
            [Segment::Key(events), Segment::Index(i), rest @ ..] if events == "events" => {
                let mechanism = value["events"][*i]["mechanism"].as_str().unwrap_or("");
                let noise = match mechanism {
                    "gaussian" | "discrete_gaussian" | "mixture_of_gaussians" => {
                        Some(("sigma", Parameter::Sigma))
                    }
                    "laplace" | "discrete_laplace" => Some(("scale", Parameter::Scale)),
                    _ => None,
                };
                let parameter = match rest {
                    [Segment::Key(key)] if key == "count" => Some(Parameter::Count),
                    [Segment::Key(sampling), Segment::Key(poisson)]
                        if sampling == "sampling" && poisson == "poisson" =>
                    {
                        Some(Parameter::PoissonRate)
                    }
                    [Segment::Key(key)] => noise.filter(|(k, _)| k == key).map(|(_, p)| p),
                    _ => None,
                };
                match parameter {
                    Some(parameter) => (*i, parameter),
                    None => {
                        let own = match noise {
                            Some((name, _)) => format!(" (for {mechanism}: {name})"),
                            None => String::new(),
                        };
                        let sampling_hint = if rest == [Segment::Key("sampling".into())] {
                            "; to calibrate the sampling rate write \"sampling\": {\"poisson\": null}"
                        } else {
                            ""
                        };
                        return Err(not_calibratable(format!(
                            "a value: {CALIBRATABLE}{own}{sampling_hint}"
                        )));
                    }
                }
            }
            _ => return Err(not_calibratable(format!("a value: {CALIBRATABLE}"))),
        };
        // Validate everything else with the unknown set to a valid placeholder.
        let mut filled = value.clone();
        let event = &mut filled["events"][index];
        match parameter {
            Parameter::PoissonRate => event["sampling"]["poisson"] = Value::from(PROBE_VALUE),
            _ => event[parameter.name()] = Value::from(PROBE_VALUE),
        }
        let template = CompositionSpec::from_json_value(&filled)?;
        let event =
            value["events"][index]
                .as_object()
                .cloned()
                .ok_or_else(|| Error::MalformedSpec {
                    message: format!("events[{index}] must be a JSON object"),
                })?;
        Ok(CalibrationProblem {
            template,
            event,
            index,
            parameter,
            location,
        })
    }

    /// The field name of the unknown as written: `sigma`, `scale`, `count` or `poisson`.
    pub fn parameter(&self) -> &'static str {
        self.parameter.name()
    }

    /// The kind of the unknown (which way is better for utility).
    pub fn kind(&self) -> Parameter {
        self.parameter
    }

    /// The full path of the unknown, e.g. `events[0].sigma` or `events[0].sampling.poisson`.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Index of the event holding the unknown.
    pub fn event_index(&self) -> usize {
        self.index
    }

    /// The specification with the unknown set to `value`.
    ///
    /// The event is validated by the specification's own parser, so the ranges are those of
    /// [`CompositionSpec::from_json_value`]: σ and scale finite and > 0, count a whole number
    /// in [1, 10¹²], q in (0, 1].
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming [`CalibrationProblem::location`] and `value` when
    /// the value is out of range.
    pub fn spec_with(&self, value: f64) -> Result<CompositionSpec> {
        if !value.is_finite() {
            return Err(Error::invalid(
                self.location.clone(),
                value,
                self.parameter.requirement(),
            ));
        }
        let number = if self.parameter == Parameter::Count
            && value.fract() == 0.0
            && (0.0..9.0e15).contains(&value)
        {
            Value::from(value as u64)
        } else {
            Value::from(value)
        };
        let mut event = Value::Object(self.event.clone());
        match self.parameter {
            Parameter::PoissonRate => event["sampling"]["poisson"] = number,
            _ => event[self.parameter.name()] = number,
        }
        let event = spec::event_from_json(&event, self.index, self.template.neighbouring)?;
        let mut spec = self.template.clone();
        spec.events[self.index] = event;
        Ok(spec)
    }

    /// The specification without the event holding the unknown: the limit σ → ∞ (or
    /// scale → ∞, q → 0), where that event leaks nothing. `None` if it is the only event.
    pub(crate) fn spec_without_event(&self) -> Option<CompositionSpec> {
        if self.template.events.len() < 2 {
            return None;
        }
        let mut spec = self.template.clone();
        spec.events.remove(self.index);
        Some(spec)
    }

    /// The sensitivity the noise parameter is measured against (Δ of the event; the largest
    /// sensitivity of a mixture, or 1 if all are 0; 1 for count and rate). The noise search
    /// range is stated in multiples of it.
    pub(crate) fn noise_unit(&self) -> f64 {
        let mechanism = &self.template.events[self.index].mechanism;
        let unit = match &mechanism.kind {
            MechanismKind::MixtureOfGaussians { sensitivities, .. } => {
                sensitivities.iter().copied().fold(0.0, f64::max)
            }
            _ => mechanism
                .sensitivity()
                .or(mechanism.replace_sensitivity())
                .unwrap_or(1.0),
        };
        if unit.is_finite() && unit > 0.0 {
            unit
        } else {
            1.0
        }
    }
}
