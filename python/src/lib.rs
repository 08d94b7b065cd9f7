//! `pld_accountant._native`: the Rust side of the Python package.
//!
//! A thin layer over the `pld-accountant` library, in the same spirit as the `pld` command
//! line: Python values become library types ([`options`], specifications as JSON text), the
//! library computes with the GIL released ([`guard`]), and answers go back to Python as the
//! library's own serde form ([`json_text`]), so every number and message is the one the CLI
//! prints. The public Python API (argument handling, result classes, the Opacus-style
//! accountant, `from_dp_event`) is in `pld_accountant/__init__.py`, which calls these
//! functions.

mod dp_sgd;
mod guard;
mod json_text;
mod options;
mod queries;

use pyo3::prelude::*;

/// The native module. Its functions take a specification as JSON text (the Python layer
/// turns dicts into it) and raise `pld_accountant.Error` (a `ValueError`) with the library's
/// one-line message on invalid input.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<guard::Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(queries::epsilon, m)?)?;
    m.add_function(wrap_pyfunction!(queries::delta, m)?)?;
    m.add_function(wrap_pyfunction!(queries::epsilons, m)?)?;
    m.add_function(wrap_pyfunction!(queries::deltas, m)?)?;
    m.add_function(wrap_pyfunction!(queries::compare, m)?)?;
    m.add_function(wrap_pyfunction!(queries::calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(queries::normalize_spec, m)?)?;
    m.add_function(wrap_pyfunction!(options::check_options, m)?)?;
    m.add_function(wrap_pyfunction!(dp_sgd::check_step, m)?)?;
    m.add_function(wrap_pyfunction!(dp_sgd::history_spec, m)?)?;
    m.add_function(wrap_pyfunction!(dp_sgd::steps_for_epochs, m)?)?;
    m.add_function(wrap_pyfunction!(dp_sgd::noise_multiplier_problem, m)?)?;
    Ok(())
}
