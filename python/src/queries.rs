//! The questions `pld epsilon`, `delta`, `curve`, `compare` and `calibrate` answer, asked
//! from Python: a specification as JSON text in, the report as the CLI's JSON text (and its
//! one-line or table `Display`) out. Inputs are checked in the order the CLI checks them, so
//! that the first error reported is the one the CLI would report.

use crate::guard::compute;
use crate::json_text::{number, optional_number, to_json};
use crate::options::{accountant_options, Target, ToleranceArg, UpperGridStepArg};
use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{IntoPyArray, PyArrayDyn, PyReadonlyArrayDyn};
use pld_accountant::comparison::{NotApplicableRow, PLD_UPPER};
use pld_accountant::{
    Accountant, Calibration, CalibrationProblem, CompositionSpec, Error, Kind, Result,
};
use pyo3::prelude::*;
use serde::Serialize;
use std::time::Instant;

/// `pld epsilon --format json` (without `inputs`), the answer's one-line `Display`
/// (`ε ∈ [lower, upper] at δ = …`), and the specification's caveats (why its bracket may be
/// wide by nature: the CLI's `note:` lines).
#[allow(clippy::too_many_arguments)] // one argument per Python keyword
#[pyfunction]
#[pyo3(signature = (spec, delta, *, tolerance=None, grid_step=None, tail_mass=None, memory_budget=None, upper_grid_step=None))]
pub fn epsilon(
    py: Python<'_>,
    spec: String,
    delta: f64,
    tolerance: Option<ToleranceArg>,
    grid_step: Option<f64>,
    tail_mass: Option<f64>,
    memory_budget: Option<f64>,
    upper_grid_step: Option<UpperGridStepArg>,
) -> PyResult<(String, String, Vec<String>)> {
    compute(py, move || {
        let spec = CompositionSpec::from_json_str(&spec)?;
        let options = accountant_options(
            tolerance,
            grid_step,
            tail_mass,
            memory_budget,
            upper_grid_step,
            Target::Epsilon,
        )?;
        let answer = Accountant::new(&spec, options)?.epsilon_for_delta(delta)?;
        let caveats = spec.caveats_for_answer(Some(delta), answer.settings.tolerance_met);
        Ok((to_json(&answer), answer.to_string(), caveats))
    })
}

/// `pld delta --format json` (without `inputs`), the answer's `Display`, and the
/// specification's caveats.
#[allow(clippy::too_many_arguments)] // one argument per Python keyword
#[pyfunction]
#[pyo3(signature = (spec, epsilon, *, tolerance=None, grid_step=None, tail_mass=None, memory_budget=None, upper_grid_step=None))]
pub fn delta(
    py: Python<'_>,
    spec: String,
    epsilon: f64,
    tolerance: Option<ToleranceArg>,
    grid_step: Option<f64>,
    tail_mass: Option<f64>,
    memory_budget: Option<f64>,
    upper_grid_step: Option<UpperGridStepArg>,
) -> PyResult<(String, String, Vec<String>)> {
    compute(py, move || {
        let spec = CompositionSpec::from_json_str(&spec)?;
        let options = accountant_options(
            tolerance,
            grid_step,
            tail_mass,
            memory_budget,
            upper_grid_step,
            Target::Delta,
        )?;
        let answer = Accountant::new(&spec, options)?.delta_for_epsilon(epsilon)?;
        let caveats =
            spec.caveats_for_answer(Some(answer.delta.upper), answer.settings.tolerance_met);
        Ok((to_json(&answer), answer.to_string(), caveats))
    })
}

/// The ends of a curve's brackets: (uppers, lowers), each of the query values' shape.
type Arrays<'py> = (Bound<'py, PyArrayDyn<f64>>, Bound<'py, PyArrayDyn<f64>>);

/// Two arrays of `deltas`' shape: the upper and lower ends of the bracket on ε at each δ
/// (`pld curve --deltas`). Every δ is checked before any work.
#[allow(clippy::too_many_arguments)] // one argument per Python keyword
#[pyfunction]
#[pyo3(signature = (spec, deltas, *, tolerance=None, grid_step=None, tail_mass=None, memory_budget=None, upper_grid_step=None))]
pub fn epsilons<'py>(
    py: Python<'py>,
    spec: String,
    deltas: PyReadonlyArrayDyn<'py, f64>,
    tolerance: Option<ToleranceArg>,
    grid_step: Option<f64>,
    tail_mass: Option<f64>,
    memory_budget: Option<f64>,
    upper_grid_step: Option<UpperGridStepArg>,
) -> PyResult<Arrays<'py>> {
    let (shape, values) = copied(&deltas);
    let points = Points {
        name: "deltas",
        shape: &shape,
        values: &values,
    };
    let (upper, lower) = compute(py, || {
        points.check(|d| d > 0.0 && d < 1.0, "a number in (0, 1)")?;
        let spec = CompositionSpec::from_json_str(&spec)?;
        let options = accountant_options(
            tolerance,
            grid_step,
            tail_mass,
            memory_budget,
            upper_grid_step,
            Target::Epsilon,
        )?;
        let accountant = Accountant::new(&spec, options)?;
        points.answer(|d| accountant.epsilon_for_delta(d).map(|a| a.epsilon))
    })?;
    Ok((array(py, &shape, upper)?, array(py, &shape, lower)?))
}

/// Two arrays of `epsilons`' shape: the upper and lower ends of the bracket on δ at each ε
/// (`pld curve --epsilons`).
#[allow(clippy::too_many_arguments)] // one argument per Python keyword
#[pyfunction]
#[pyo3(signature = (spec, epsilons, *, tolerance=None, grid_step=None, tail_mass=None, memory_budget=None, upper_grid_step=None))]
pub fn deltas<'py>(
    py: Python<'py>,
    spec: String,
    epsilons: PyReadonlyArrayDyn<'py, f64>,
    tolerance: Option<ToleranceArg>,
    grid_step: Option<f64>,
    tail_mass: Option<f64>,
    memory_budget: Option<f64>,
    upper_grid_step: Option<UpperGridStepArg>,
) -> PyResult<Arrays<'py>> {
    let (shape, values) = copied(&epsilons);
    let points = Points {
        name: "epsilons",
        shape: &shape,
        values: &values,
    };
    let (upper, lower) = compute(py, || {
        points.check(|e| e >= 0.0, "a number ≥ 0")?;
        let spec = CompositionSpec::from_json_str(&spec)?;
        let options = accountant_options(
            tolerance,
            grid_step,
            tail_mass,
            memory_budget,
            upper_grid_step,
            Target::Delta,
        )?;
        let accountant = Accountant::new(&spec, options)?;
        points.answer(|e| accountant.delta_for_epsilon(e).map(|a| a.delta))
    })?;
    Ok((array(py, &shape, upper)?, array(py, &shape, lower)?))
}

/// The array's shape and its values in logical (C) order, copied so that the computation
/// can run without the GIL.
fn copied(values: &PyReadonlyArrayDyn<'_, f64>) -> (Vec<usize>, Vec<f64>) {
    let view = values.as_array();
    (view.shape().to_vec(), view.iter().copied().collect())
}

/// `values` (in C order) as an array of `shape`.
fn array<'py>(
    py: Python<'py>,
    shape: &[usize],
    values: Vec<f64>,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let array = ArrayD::from_shape_vec(IxDyn(shape), values)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Ok(array.into_pyarray(py))
}

/// The points of a curve: an array's values with its shape, for error messages.
struct Points<'a> {
    name: &'static str,
    shape: &'a [usize],
    values: &'a [f64],
}

impl Points<'_> {
    /// The first value that is not `valid`, as the CLI names a bad `--deltas` entry (with the
    /// index in the array: `deltas[3]`, `deltas[1, 2]`).
    fn check(&self, valid: impl Fn(f64) -> bool, requirement: &str) -> Result<()> {
        match self.values.iter().position(|&v| !valid(v)) {
            Some(flat) => Err(Error::invalid(
                self.index_name(flat),
                self.values[flat],
                requirement,
            )),
            None => Ok(()),
        }
    }

    /// `name[i, j, …]` of the `flat`-th value in C order (`name` alone for a 0-d array).
    fn index_name(&self, flat: usize) -> String {
        if self.shape.is_empty() {
            return self.name.to_string();
        }
        let mut rest = flat;
        let mut index = vec![0; self.shape.len()];
        for (axis, &size) in self.shape.iter().enumerate().rev() {
            index[axis] = rest % size.max(1);
            rest /= size.max(1);
        }
        let index: Vec<String> = index.iter().map(usize::to_string).collect();
        format!("{}[{}]", self.name, index.join(", "))
    }

    /// The bracket at every value: (uppers, lowers).
    fn answer(
        &self,
        bracket: impl Fn(f64) -> Result<pld_accountant::Bracket>,
    ) -> Result<(Vec<f64>, Vec<f64>)> {
        let mut upper = Vec::with_capacity(self.values.len());
        let mut lower = Vec::with_capacity(self.values.len());
        for &value in self.values {
            let b = bracket(value)?;
            upper.push(b.upper);
            lower.push(b.lower);
        }
        Ok((upper, lower))
    }
}

/// `pld compare --format json`: the documented keys (`delta`, `rows[].method`, `epsilon`,
/// `kind`, `seconds`) and the CLI's extras (`ratio_to_pld_upper`, `detail`,
/// `not_applicable`), in the CLI's order.
#[derive(Debug, Serialize)]
struct CompareReport {
    #[serde(serialize_with = "number")]
    delta: f64,
    rows: Vec<CompareRow>,
    not_applicable: Vec<NotApplicableRow>,
}

#[derive(Debug, Serialize)]
struct CompareRow {
    method: String,
    #[serde(serialize_with = "number")]
    epsilon: f64,
    kind: Kind,
    seconds: f64,
    #[serde(serialize_with = "optional_number")]
    ratio_to_pld_upper: Option<f64>,
    detail: String,
}

/// `pld compare --format json` (without `source` and `inputs`), and the library's table.
#[allow(clippy::too_many_arguments)] // one argument per Python keyword
#[pyfunction]
#[pyo3(signature = (spec, delta, *, tolerance=None, grid_step=None, tail_mass=None, memory_budget=None, upper_grid_step=None))]
pub fn compare(
    py: Python<'_>,
    spec: String,
    delta: f64,
    tolerance: Option<ToleranceArg>,
    grid_step: Option<f64>,
    tail_mass: Option<f64>,
    memory_budget: Option<f64>,
    upper_grid_step: Option<UpperGridStepArg>,
) -> PyResult<(String, String, Vec<String>)> {
    compute(py, move || {
        let spec = CompositionSpec::from_json_str(&spec)?;
        let options = accountant_options(
            tolerance,
            grid_step,
            tail_mass,
            memory_budget,
            upper_grid_step,
            Target::Epsilon,
        )?;
        // Bad options are named before δ, as by the CLI.
        Accountant::new(&spec, options)?;
        let comparison = pld_accountant::compare(&spec, delta, options)?;
        let reference = comparison
            .row(PLD_UPPER)
            .map(|r| r.epsilon)
            .filter(|e| e.is_finite() && *e > 0.0);
        let rows = comparison
            .rows
            .iter()
            .map(|r| CompareRow {
                method: r.method.to_string(),
                epsilon: r.epsilon,
                kind: r.kind,
                seconds: r.seconds,
                ratio_to_pld_upper: reference
                    .map(|u| r.epsilon / u)
                    .filter(|ratio| !ratio.is_nan()),
                detail: r.detail.clone(),
            })
            .collect();
        let report = CompareReport {
            delta: comparison.delta,
            rows,
            not_applicable: comparison.not_applicable.clone(),
        };
        let caveats = spec.caveats_at_delta(Some(comparison.delta));
        Ok((to_json(&report), comparison.to_string(), caveats))
    })
}

/// `pld calibrate --format json`: the library's [`Calibration`] and the time it took.
#[derive(Debug, Serialize)]
struct CalibrationReport {
    #[serde(flatten)]
    calibration: Calibration,
    #[serde(serialize_with = "number")]
    seconds: f64,
    source: String,
}

/// `pld calibrate --format json`, and the library's `Display` of the calibration.
#[pyfunction]
#[pyo3(signature = (spec, epsilon, delta, *, tolerance=None, grid_step=None, tail_mass=None, memory_budget=None, upper_grid_step=None))]
#[allow(clippy::too_many_arguments)]
pub fn calibrate(
    py: Python<'_>,
    spec: String,
    epsilon: f64,
    delta: f64,
    tolerance: Option<ToleranceArg>,
    grid_step: Option<f64>,
    tail_mass: Option<f64>,
    memory_budget: Option<f64>,
    upper_grid_step: Option<UpperGridStepArg>,
) -> PyResult<(String, String)> {
    compute(py, move || {
        // The target first, as the CLI checks it before reading the specification.
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
        }
        let problem = CalibrationProblem::from_json_str(&spec)?;
        let options = accountant_options(
            tolerance,
            grid_step,
            tail_mass,
            memory_budget,
            upper_grid_step,
            Target::Epsilon,
        )?;
        let start = Instant::now();
        let calibration =
            pld_accountant::calibrate(&problem, epsilon, delta, options, &mut |_| {})?;
        let text = calibration.to_string();
        let report = CalibrationReport {
            calibration,
            seconds: start.elapsed().as_secs_f64(),
            source: "specification given to pld_accountant.calibrate".into(),
        };
        Ok((to_json(&report), text))
    })
}

/// The specification validated and written back in the JSON format (every event with its
/// `count`, keys in the documented order): what the accountant will account.
#[pyfunction]
pub fn normalize_spec(py: Python<'_>, spec: String) -> PyResult<String> {
    compute(py, move || {
        Ok(to_json(&CompositionSpec::from_json_str(&spec)?))
    })
}
