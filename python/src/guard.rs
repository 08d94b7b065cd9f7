//! Running the library from Python: the GIL released, panics caught, errors raised as
//! `pld_accountant.Error` with the library's message.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

create_exception!(
    pld_accountant,
    Error,
    PyValueError,
    "Invalid input or a limit of the computation, with the same one-line message as the `pld` \
     command line (e.g. `invalid events[0].sigma = -1: must be a finite number > 0`). A \
     subclass of ValueError."
);

/// The library's error as a Python exception: its `Display` text, as the CLI prints it
/// after `error: `.
pub fn raise(error: pld_accountant::Error) -> PyErr {
    Error::new_err(error.to_string())
}

/// Run `work` without the GIL (other Python threads go on meanwhile), turning a library
/// error into [`Error`] and a panic — a bug, never expected on any input — into a
/// `RuntimeError` rather than an aborted interpreter.
pub fn compute<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> pld_accountant::Result<T> + Send,
{
    match py.allow_threads(|| catch_unwind(AssertUnwindSafe(work))) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(raise(error)),
        Err(panic) => Err(internal(panic)),
    }
}

/// Run `work` holding the GIL (for quick checks), with panics caught as in [`compute`].
pub fn check<T>(work: impl FnOnce() -> pld_accountant::Result<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(raise(error)),
        Err(panic) => Err(internal(panic)),
    }
}

fn internal(panic: Box<dyn std::any::Any + Send>) -> PyErr {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    PyRuntimeError::new_err(format!(
        "internal error in pld-accountant (a bug: please report it with the input): {message}"
    ))
}
