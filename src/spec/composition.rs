//! The composition: a neighbouring relation and its events, with the builder.

use super::*;

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
            message: super::json::json_error_message(text, &e),
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
