//! The JSON parser: reads values, then calls the checked constructors.

use super::*;

/// The message of a JSON parse error, naming the field whose value could not be read when
/// serde_json does not (a number beyond the range of a double, `1e400`, is rejected by the
/// tokenizer, which only knows its position): `field "sigma": 1e400 is out of the range …`.
pub(crate) fn json_error_message(text: &str, error: &serde_json::Error) -> String {
    let message = error.to_string();
    if !message.starts_with("number out of range") {
        return message;
    }
    // The byte just past the number (serde_json's column is 1-based, in bytes).
    let Some(line) = text
        .split_inclusive('\n')
        .nth(error.line().saturating_sub(1))
    else {
        return message;
    };
    let line_start = line.as_ptr() as usize - text.as_ptr() as usize;
    let end = (line_start + error.column()).min(text.len());
    let bytes = text.as_bytes();
    let is_number_byte =
        |b: u8| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-');
    let mut start = end;
    while start > 0 && is_number_byte(bytes[start - 1]) {
        start -= 1;
    }
    let mut end = end;
    while end < bytes.len() && is_number_byte(bytes[end]) {
        end += 1;
    }
    let problem = format!(
        "{} is out of the range of a double (about ±1.8e308), at line {} column {}",
        &text[start..end],
        error.line(),
        error.column()
    );
    match enclosing_key(&text[..start]) {
        Some(key) => format!("field \"{key}\": {problem}"),
        None => problem,
    }
}

/// The key of the innermost `"key": value` pair that text (everything before a value)
/// leaves open: the last `"…"` followed by `:` (an array value names its key too).
fn enclosing_key(before: &str) -> Option<&str> {
    let bytes = before.as_bytes();
    let mut i = bytes.len();
    while i > 0 {
        i -= 1;
        if bytes[i] != b':' {
            continue;
        }
        // Skip whitespace back to the key's closing quote, then find its opening quote.
        let close = before[..i].trim_end();
        let Some(inner) = close.strip_suffix('"') else {
            continue;
        };
        let open = inner.rfind('"')?;
        return Some(&inner[open + 1..]);
    }
    None
}

pub(super) fn reject_unknown_keys(object: &Map<String, Value>, allowed: &[&str]) -> Result<()> {
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
pub(super) fn parse_event(value: &Value) -> Result<Event> {
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
pub(super) fn parse_mechanism(
    object: &Map<String, Value>,
    extra: &[&str],
) -> Result<MechanismSpec> {
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
        "zcdp" => {
            keys(&["rho"])?;
            MechanismSpec::zcdp(json_number(object, "rho", POSITIVE)?)?
        }
        "exponential" => {
            keys(&["epsilon"])?;
            MechanismSpec::exponential(json_number(object, "epsilon", POSITIVE)?)?
        }
        "laplace_log_normal" => {
            keys(&["sigma", "s", "t"])?;
            MechanismSpec::laplace_log_normal(
                json_number(object, "sigma", POSITIVE)?,
                json_number(object, "s", POSITIVE)?,
                json_number(object, "t", POSITIVE)?,
            )?
        }
        "student_t" => {
            keys(&["degrees", "s", "t"])?;
            MechanismSpec::student_t(
                json_number(object, "degrees", POSITIVE)?,
                json_number(object, "s", POSITIVE)?,
                json_number(object, "t", NON_NEGATIVE)?,
            )?
        }
        "cauchy" => {
            keys(&["s", "t"])?;
            MechanismSpec::cauchy(
                json_number(object, "s", POSITIVE)?,
                json_number(object, "t", NON_NEGATIVE)?,
            )?
        }
        "rdp_curve" => {
            keys(&["orders", "values"])?;
            MechanismSpec::rdp_curve(json_list(object, "orders")?, json_list(object, "values")?)?
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
pub(super) fn json_number(
    object: &Map<String, Value>,
    key: &str,
    requirement: &str,
) -> Result<f64> {
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
pub(super) fn json_whole(value: &Value, name: &str, min: u64, max: u64) -> Result<u64> {
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(k) => check_whole(name, k, min, max),
            None => check_whole_f64(name, n.as_f64().unwrap_or(f64::NAN), min, max),
        },
        other => Err(Error::invalid(name, other, &whole_requirement(min, max))),
    }
}

/// A required list of numbers (its entries are checked by the constructor).
pub(super) fn json_list(object: &Map<String, Value>, key: &str) -> Result<Vec<f64>> {
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
pub(super) fn null_default(name: &str, default: impl std::fmt::Display) -> Error {
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
pub(super) fn parse_sampling(value: &Value) -> Result<Sampling> {
    let object = match value {
        Value::Object(o) => o,
        other => return Err(Error::invalid("sampling", other, SAMPLING_REQUIREMENT)),
    };
    let exactly_one = || {
        Error::invalid(
            "sampling",
            Value::Object(object.clone()),
            "exactly one of \"poisson\", \"fixed_batch\", \"random_allocation\", \
             \"truncated_poisson\" or \"shuffle\"",
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
    if let Some(allocation) = object.get("random_allocation") {
        let field = "sampling.random_allocation";
        let allocation = allocation.as_object().ok_or_else(|| {
            Error::invalid(
                field,
                allocation,
                "{\"steps_per_epoch\": t, \"participations\": k} (k optional, default 1)",
            )
        })?;
        reject_unknown_keys(allocation, &["steps_per_epoch", "participations"])
            .map_err(|e| relocate(e, field))?;
        let steps_name = format!("{field}.steps_per_epoch");
        let steps = match allocation.get("steps_per_epoch") {
            None | Some(Value::Null) => {
                return Err(Error::MissingParameter {
                    name: steps_name,
                    hint: "give the number of steps in one epoch (batches per pass over the \
                           data)"
                        .into(),
                })
            }
            Some(value) => json_whole(value, &steps_name, 1, MAX_STEPS_PER_EPOCH)?,
        };
        // Participations default to 1 (balls-in-bins), as documented; an explicit null is
        // refused rather than read as the default.
        let participations = match allocation.get("participations") {
            None => 1,
            Some(Value::Null) => {
                return Err(null_default(
                    &format!("{field}.participations"),
                    "1 (balls-in-bins)",
                ))
            }
            Some(value) => json_whole(value, &format!("{field}.participations"), 1, u64::MAX)?,
        };
        return Sampling::random_allocation(steps, participations);
    }
    if let Some(truncated) = object.get("truncated_poisson") {
        let field = "sampling.truncated_poisson";
        let truncated = truncated.as_object().ok_or_else(|| {
            Error::invalid(
                field,
                truncated,
                "{\"rate\": q, \"max_batch_size\": B, \"dataset_size\": n}",
            )
        })?;
        reject_unknown_keys(truncated, &["rate", "max_batch_size", "dataset_size"])
            .map_err(|e| relocate(e, field))?;
        let missing = |key: &str, hint: &str| Error::MissingParameter {
            name: format!("{field}.{key}"),
            hint: hint.into(),
        };
        let rate = match truncated.get("rate") {
            None | Some(Value::Null) => {
                return Err(missing(
                    "rate",
                    "give the Poisson rate q with 0 < q ≤ 1 (each record's chance to be drawn \
                     before the cut)",
                ))
            }
            Some(Value::Number(q)) => q.as_f64().unwrap_or(f64::NAN),
            Some(other) => {
                return Err(Error::invalid(
                    format!("{field}.rate"),
                    other,
                    RATE_REQUIREMENT,
                ))
            }
        };
        let whole = |key: &str, max: u64, hint: &str| match truncated.get(key) {
            None | Some(Value::Null) => Err(missing(key, hint)),
            Some(value) => json_whole(value, &format!("{field}.{key}"), 1, max),
        };
        let max_batch_size = whole(
            "max_batch_size",
            u64::MAX,
            "give the largest batch B the sample is cut to",
        )?;
        let dataset_size = whole(
            "dataset_size",
            MAX_DATASET_SIZE,
            "give the number of records n the sample is drawn from",
        )?;
        return Sampling::truncated_poisson(rate, max_batch_size, dataset_size);
    }
    if let Some(shuffle) = object.get("shuffle") {
        let field = "sampling.shuffle";
        let shuffle = shuffle
            .as_object()
            .ok_or_else(|| Error::invalid(field, shuffle, "{\"steps_per_epoch\": t}"))?;
        reject_unknown_keys(shuffle, &["steps_per_epoch"]).map_err(|e| relocate(e, field))?;
        let steps_name = format!("{field}.steps_per_epoch");
        let steps = match shuffle.get("steps_per_epoch") {
            None | Some(Value::Null) => {
                return Err(Error::MissingParameter {
                    name: steps_name,
                    hint: "give the number of batches the shuffled data are cut into each epoch"
                        .into(),
                })
            }
            Some(value) => json_whole(value, &steps_name, 1, MAX_STEPS_PER_EPOCH)?,
        };
        return Sampling::shuffle(steps);
    }
    Err(exactly_one())
}

/// The mechanism's keys of an event, in the JSON format, in the order they are written.
pub(super) fn mechanism_fields(mechanism: &MechanismSpec) -> Vec<(&'static str, Value)> {
    let mut fields = vec![("mechanism", Value::from(mechanism.name()))];
    pub(super) fn shift<T: SensitivityValue + Into<Value>>(
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
        &MechanismKind::Zcdp { rho } => fields.push(("rho", rho.into())),
        &MechanismKind::Exponential { epsilon } => fields.push(("epsilon", epsilon.into())),
        &MechanismKind::LaplaceLogNormal { sigma, s, t } => {
            fields.push(("sigma", sigma.into()));
            fields.push(("s", s.into()));
            fields.push(("t", t.into()));
        }
        &MechanismKind::StudentT { degrees, s, t } => {
            fields.push(("degrees", degrees.into()));
            fields.push(("s", s.into()));
            fields.push(("t", t.into()));
        }
        &MechanismKind::Cauchy { s, t } => {
            fields.push(("s", s.into()));
            fields.push(("t", t.into()));
        }
        MechanismKind::RdpCurve { orders, values } => {
            fields.push(("orders", orders.clone().into()));
            fields.push(("values", values.clone().into()));
        }
    }
    fields
}

/// An event's keys in the order they are written: mechanism, parameters, sampling, count.
pub(super) fn event_fields(event: &Event) -> Vec<(&'static str, Value)> {
    let mut fields = mechanism_fields(&event.mechanism);
    if !event.sampling.is_none() {
        fields.push(("sampling", event.sampling.to_json_value()));
    }
    fields.push(("count", Value::from(event.count)));
    fields
}

/// Write `fields` as a JSON object in their order.
pub(super) fn serialize_fields<S: Serializer>(
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
pub(super) struct OrderedEvents<'a>(pub(super) &'a [Event]);

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

pub(super) struct OrderedEvent<'a>(pub(super) &'a Event);

impl Serialize for OrderedEvent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serialize_fields(event_fields(self.0), serializer)
    }
}
