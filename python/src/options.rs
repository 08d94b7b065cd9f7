//! The accuracy options (`tolerance`, `grid_step`, `tail_mass`, `memory_budget`,
//! `upper_grid_step`) as the library's
//! [`AccountantOptions`], with the command line's meaning of `tolerance`.

use crate::guard;
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec, Error, Tolerance};
use pyo3::prelude::*;
use std::collections::BTreeMap;

/// `tolerance=`: a relative width, as `pld --tolerance REL`, or the library's
/// [`Tolerance`] fields by name.
#[derive(Debug, Clone, FromPyObject)]
pub enum ToleranceArg {
    /// `--tolerance REL`.
    Relative(f64),
    /// `{"relative": …, "absolute_epsilon": …, "relative_delta": …, "absolute_delta": …}`,
    /// any subset; the others keep their defaults.
    Fields(BTreeMap<String, f64>),
}

/// `upper_grid_step=`: a grid step in nats, or `"off"` (as `pld --upper-grid-step`).
#[derive(Debug, Clone, FromPyObject)]
pub enum UpperGridStepArg {
    /// A step in nats (checked by the accountant, which names `upper_grid_step`).
    Step(f64),
    /// `"off"`; any other text is refused.
    Word(String),
}

/// Which quantity a relative `tolerance` applies to (as on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// ε queries: `Tolerance::epsilon_relative(REL)` (the absolute floor for small ε
    /// scales with it).
    Epsilon,
    /// δ queries: `relative_delta = REL`.
    Delta,
}

/// The options the `pld` command line would use for `--tolerance` and `--grid-step` (and the
/// library's `tail_mass`), not yet checked: the accountant checks them, naming the field.
pub fn accountant_options(
    tolerance: Option<ToleranceArg>,
    grid_step: Option<f64>,
    tail_mass: Option<f64>,
    memory_budget: Option<f64>,
    upper_grid_step: Option<UpperGridStepArg>,
    target: Target,
) -> Result<AccountantOptions, Error> {
    let mut options = AccountantOptions::default();
    match upper_grid_step {
        None => {}
        Some(UpperGridStepArg::Step(h)) => options.upper_grid_step = Some(h),
        Some(UpperGridStepArg::Word(word)) if word == "off" => options.upper_grid_step = None,
        Some(UpperGridStepArg::Word(word)) => {
            return Err(Error::invalid(
                "upper_grid_step",
                format!("{word:?}"),
                "a number of nats in [1e-12, 1], or \"off\"",
            ))
        }
    }
    if let Some(mib) = memory_budget {
        // In MiB, as `pld --memory-budget`; the accountant checks the minimum (16 MiB).
        if !(mib.is_finite() && mib > 0.0 && mib <= 1e9) {
            return Err(Error::invalid(
                "memory_budget",
                mib,
                "a number of MiB in [16, 1e9]",
            ));
        }
        options.memory_budget = Some((mib * (1u64 << 20) as f64) as u64);
    }
    match tolerance {
        None => {}
        Some(ToleranceArg::Relative(relative)) => match target {
            Target::Epsilon => options.tolerance = Tolerance::epsilon_relative(relative),
            Target::Delta => options.tolerance.relative_delta = relative,
        },
        Some(ToleranceArg::Fields(fields)) => {
            let t = &mut options.tolerance;
            for (name, value) in fields {
                match name.as_str() {
                    "relative" => t.relative = value,
                    "absolute_epsilon" => t.absolute_epsilon = value,
                    "relative_delta" => t.relative_delta = value,
                    "absolute_delta" => t.absolute_delta = value,
                    _ => {
                        return Err(Error::Incompatible {
                            field: format!("tolerance.{name}"),
                            reason: "unknown field; expected one of: relative, \
                                     absolute_epsilon, relative_delta, absolute_delta"
                                .into(),
                        })
                    }
                }
            }
        }
    }
    options.grid_step = grid_step;
    options.tail_mass = tail_mass;
    Ok(options)
}

/// Check options as the accountant does (on a trivial composition), so that an object that
/// keeps options (`PLDAccountant`) refuses bad ones when it is made, not at its first query.
///
/// Raises `pld_accountant.Error` naming the option, e.g. `invalid grid_step = 2: must be a
/// number in [1e-12, 1] (nats)`.
#[pyfunction]
#[pyo3(signature = (*, tolerance=None, grid_step=None, tail_mass=None, memory_budget=None, upper_grid_step=None))]
pub fn check_options(
    tolerance: Option<ToleranceArg>,
    grid_step: Option<f64>,
    tail_mass: Option<f64>,
    memory_budget: Option<f64>,
    upper_grid_step: Option<UpperGridStepArg>,
) -> PyResult<()> {
    guard::check(|| {
        let options = accountant_options(
            tolerance,
            grid_step,
            tail_mass,
            memory_budget,
            upper_grid_step,
            Target::Epsilon,
        )?;
        Accountant::new(&CompositionSpec::dp_sgd(1.0, 1.0, 1, 1.0)?, options).map(|_| ())
    })
}
