//! serde both ways, in the JSON format and through the same validation.

use super::*;

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
    /// `{"poisson": q}`, `{"fixed_batch": {...}}`, `{"random_allocation": {...}}`,
    /// `{"truncated_poisson": {...}}`, `{"shuffle": {...}}`, or `null` for no sampling.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Null => Ok(Sampling::none()),
            value => parse_sampling(&value).map_err(serde::de::Error::custom),
        }
    }
}
