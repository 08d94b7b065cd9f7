//! DP-SGD in Opacus' words: a step's `(noise_multiplier, sample_rate)`, an accountant's
//! `history` of `(noise_multiplier, sample_rate, num_steps)`, and epochs as steps.
//!
//! A history entry is `num_steps` runs of the Poisson-subsampled Gaussian with σ =
//! `noise_multiplier` (the clipping norm is the unit, sensitivity 1) at rate `sample_rate`,
//! under add/remove neighbouring: exactly what `pld epsilon --noise-multiplier Z
//! --sampling-rate Q --steps T` accounts, and what Opacus' own accountants assume.

use crate::guard;
use pld_accountant::spec::{steps_from_epochs, MAX_COUNT};
use pld_accountant::{CompositionSpec, Error, Event, MechanismSpec};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyInt;

/// The library's names for a history entry's fields, in Opacus' words.
fn opacus_name(name: String) -> String {
    match name.as_str() {
        "sigma" => "noise_multiplier".into(),
        "sampling.poisson" => "sample_rate".into(),
        "count" => "num_steps".into(),
        _ => name,
    }
}

/// `num_steps` runs of the subsampled Gaussian, errors named in Opacus' words.
fn step_event(noise_multiplier: f64, sample_rate: f64, num_steps: u64) -> Result<Event, Error> {
    MechanismSpec::gaussian(noise_multiplier)
        .and_then(|m| m.with_sensitivity(1.0))
        .and_then(|m| m.poisson(sample_rate))
        .and_then(|e| e.repeat(num_steps))
        .map_err(|e| e.rename_fields(opacus_name))
}

/// Check one optimizer step's parameters (an accountant records only valid steps).
///
/// Raises `pld_accountant.Error`, e.g. `invalid noise_multiplier = 0: must be a finite number
/// > 0` or `invalid sample_rate = 1.5: must be a number in (0, 1]`.
#[pyfunction]
#[pyo3(signature = (noise_multiplier, sample_rate))]
pub fn check_step(noise_multiplier: f64, sample_rate: f64) -> PyResult<()> {
    guard::check(|| step_event(noise_multiplier, sample_rate, 1).map(|_| ()))
}

/// The specification of an accountant's history (a sequence of `(noise_multiplier,
/// sample_rate, num_steps)`), as JSON text; `None` for an empty history (nothing released).
///
/// Raises `pld_accountant.Error` naming the entry, e.g. `invalid history[2].num_steps = 0:
/// must be a whole number ≥ 1 (at most 10^12)`, and `TypeError` for an entry that is not
/// three numbers.
#[pyfunction]
pub fn history_spec(history: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let mut events = Vec::new();
    for (i, entry) in history.try_iter()?.enumerate() {
        let entry = entry?;
        let name = |field: &str| format!("history[{i}].{field}");
        let fields: Vec<Bound<'_, PyAny>> = match entry.try_iter() {
            Ok(items) => items.collect::<PyResult<_>>()?,
            Err(_) => Vec::new(),
        };
        let [z, q, n] = fields.as_slice() else {
            return Err(PyTypeError::new_err(format!(
                "{} must be a tuple (noise_multiplier, sample_rate, num_steps), got {}",
                format_args!("history[{i}]"),
                entry.repr()?
            )));
        };
        let (z, q): (f64, f64) = (z.extract()?, q.extract()?);
        let steps = whole_number(n, &name("num_steps"))?;
        let event = guard::check(|| {
            step_event(z, q, steps).map_err(|e| e.rename_fields(|f| format!("history[{i}].{f}")))
        })?;
        events.push(event);
    }
    if events.is_empty() {
        return Ok(None);
    }
    let spec = guard::check(|| CompositionSpec::add_remove().events(events).build())?;
    Ok(Some(crate::json_text::to_json(&spec)))
}

/// A whole number given as a Python int (or a whole float, as JSON allows for counts);
/// out of range → the library's count error naming `name`; anything else → `TypeError`.
fn whole_number(value: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    if let Ok(k) = value.extract::<u64>() {
        return Ok(k);
    }
    let shown = if value.is_instance_of::<PyInt>() || value.hasattr("__index__")? {
        // Negative or beyond u64: out of range whatever the limit.
        value.str()?.to_string()
    } else if let Ok(x) = value.extract::<f64>() {
        if x.is_finite() && x.fract() == 0.0 && (1.0..=MAX_COUNT as f64).contains(&x) {
            return Ok(x as u64);
        }
        x.to_string()
    } else {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a whole number, got {}",
            value.get_type().name()?
        )));
    };
    Err(guard::raise(count_error(name, shown)))
}

/// The library's error for an invalid count, naming `name` and showing `value`.
fn count_error(name: &str, value: String) -> Error {
    match step_event(1.0, 1.0, 0) {
        Err(Error::InvalidParameter { requirement, .. }) => {
            Error::invalid(name, value, &requirement)
        }
        _ => Error::invalid(name, value, "a whole number ≥ 1"),
    }
}

/// The number of steps of `epochs` passes at Poisson rate `sample_rate`, as `pld --epochs`
/// counts them: `⌈epochs / q⌉` (TensorFlow Privacy's convention: an epoch is one expected pass
/// over the data, and rounding up never under-counts), values within 10⁻⁹ of a whole number
/// snapped to it.
///
/// Raises `pld_accountant.Error` naming `sample_rate` or `epochs` when out of range.
#[pyfunction]
pub fn steps_for_epochs(epochs: f64, sample_rate: f64) -> PyResult<u64> {
    guard::check(|| {
        step_event(1.0, sample_rate, 1)?;
        if !(epochs.is_finite() && epochs > 0.0) {
            return Err(Error::invalid("epochs", epochs, "a finite number > 0"));
        }
        let exact = epochs / sample_rate;
        steps_from_epochs(exact).ok_or_else(|| {
            Error::invalid(
                "epochs",
                epochs,
                &format!("at most {MAX_COUNT} steps (epochs / sample_rate = {exact:e})"),
            )
        })
    })
}

/// The calibration problem of Opacus' `get_noise_multiplier`: `steps` runs of the Gaussian
/// at Poisson rate `sample_rate` with σ unknown (`null`), as JSON text for `calibrate`.
///
/// Raises `pld_accountant.Error` naming `sample_rate` or `steps` when out of range.
#[pyfunction]
pub fn noise_multiplier_problem(sample_rate: f64, steps: &Bound<'_, PyAny>) -> PyResult<String> {
    let steps = whole_number(steps, "steps")?;
    guard::check(|| {
        step_event(1.0, sample_rate, steps).map_err(|e| {
            e.rename_fields(|name| match name.as_str() {
                "num_steps" => "steps".into(),
                _ => name,
            })
        })
    })?;
    let problem = serde_json::json!({
        "neighbouring": "add_remove",
        "events": [{
            "mechanism": "gaussian",
            "sigma": null,
            "sensitivity": 1.0,
            "sampling": {"poisson": sample_rate},
            "count": steps,
        }],
    });
    Ok(problem.to_string())
}
