//! The one error type of the crate.
//!
//! Every stage of the pipeline reports through [`enum@Error`]: invalid input is caught where a value
//! is built (mostly in [`crate::spec`]) and named by its field, and the computation's own limits
//! (a grid too large) are errors too, never panics.

use thiserror::Error;

/// Everything that can go wrong, with the offending values attached.
///
/// Invalid user input is always reported through this type, never by a panic. The `Display`
/// text names the parameter and its value and says what would be accepted.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum Error {
    /// A numeric parameter is NaN, infinite or outside its valid range.
    #[error("invalid {name} = {value}: must be {requirement}")]
    InvalidParameter {
        /// Parameter name as the user wrote it (e.g. `events[0].sigma`).
        name: String,
        /// The value that was given, as text.
        value: String,
        /// What would have been accepted, e.g. `a finite number > 0`.
        requirement: String,
    },
    /// A required field is absent from the specification.
    #[error("missing {name}: {hint}")]
    MissingParameter {
        /// The field's path, e.g. `events[0].sigma`.
        name: String,
        /// What to write instead.
        hint: String,
    },
    /// The mechanism name is not one this crate knows.
    #[error("unknown mechanism {name:?} in {field}: expected one of {expected}")]
    UnknownMechanism {
        /// Where it was found, e.g. `events[2].mechanism`.
        field: String,
        /// The name given.
        name: String,
        /// The accepted names.
        expected: String,
    },
    /// A mechanism, sampling scheme or relation is valid but not implemented yet.
    #[error("{what} in {field} is not implemented yet{detail}")]
    NotImplemented {
        /// Where it was found, e.g. `events[1].mechanism`.
        field: String,
        /// What was asked for, e.g. `mechanism "laplace"`.
        what: String,
        /// Extra explanation (may be empty; starts with ": " otherwise).
        detail: String,
    },
    /// Two parameters that are valid alone do not fit together.
    #[error("incompatible {field}: {reason}")]
    Incompatible {
        /// Where it was found.
        field: String,
        /// Why the combination is refused.
        reason: String,
    },
    /// The specification is not valid JSON or does not have the expected shape.
    #[error("malformed specification: {message}")]
    MalformedSpec {
        /// The parser's message, with line and column.
        message: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The path as given.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// Two privacy loss distributions cannot be composed as they are.
    #[error("cannot compose: {reason}")]
    IncompatibleDistributions {
        /// E.g. different grid steps or different bounds.
        reason: String,
    },
    /// No value of a calibrated parameter meets the privacy target (see
    /// [`crate::calibration`]): the target is out of reach within the searched range.
    #[error("cannot calibrate {field} for ε ≤ {epsilon} at δ = {delta}: {reason}")]
    Infeasible {
        /// The calibrated field, e.g. `events[0].sigma`.
        field: String,
        /// The target ε.
        epsilon: f64,
        /// The δ of the target.
        delta: f64,
        /// Why no value can meet it, with the accountant's numbers.
        reason: String,
    },
    /// The grids of a fixed grid step would need more memory than the budget allows
    /// ([`crate::AccountantOptions::memory_budget`]).
    #[error(
        "memory budget exceeded: the grid step {grid_step:e} needs about {needed_mib:.0} MiB, \
         the memory budget is {budget_mib:.0} MiB; use a larger grid step or a larger memory \
         budget (--memory-budget)"
    )]
    MemoryBudget {
        /// The fixed grid step (nats).
        grid_step: f64,
        /// Estimated need (MiB).
        needed_mib: f64,
        /// The budget (MiB).
        budget_mib: f64,
    },
    /// The requested grid would be larger than the accountant allows.
    #[error("grid too large: {points} points needed (limit {limit}); {hint}")]
    GridTooLarge {
        /// Points the grid would need.
        points: u64,
        /// The limit.
        limit: u64,
        /// What to change.
        hint: String,
    },
    /// A ledger file written in a format version this build does not read.
    #[error(
        "unsupported ledger format version {version}: this build reads version {supported} \
         (was the file written by a newer pld-accountant?)"
    )]
    UnsupportedVersion {
        /// The version found in the file, as text.
        version: String,
        /// The version this build reads and writes.
        supported: u32,
    },
    /// A release refused by a privacy filter: recording it would exceed the budget. Nothing
    /// was recorded.
    #[error(
        "refused by the {filter} filter: ε would reach {epsilon} at δ = {delta}, over the \
         budget ε = {budget}; nothing was recorded"
    )]
    BudgetExceeded {
        /// Which filter refused: `"pld"`, `"rdp"` or `"gdp"`.
        filter: String,
        /// The guaranteed (upper-bound) ε the composition would have with the release.
        epsilon: f64,
        /// The δ of the budget.
        delta: f64,
        /// The budget's ε.
        budget: f64,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidParameter`]. Numbers written in plain decimal with a
    /// long run of zeros (how Rust prints `-1e-5` or `1e20`) are shown in exponent form, as
    /// users write them.
    pub fn invalid(name: impl Into<String>, value: impl ToString, requirement: &str) -> Self {
        Error::InvalidParameter {
            name: name.into(),
            value: readable_number(value.to_string()),
            requirement: requirement.to_string(),
        }
    }
}

impl Error {
    /// The same error with every field or parameter name it carries passed through `rename`
    /// (e.g. to prefix `events[2].`); other errors unchanged.
    pub fn rename_fields(self, rename: impl Fn(String) -> String) -> Error {
        match self {
            Error::InvalidParameter {
                name,
                value,
                requirement,
            } => Error::InvalidParameter {
                name: rename(name),
                value,
                requirement,
            },
            Error::MissingParameter { name, hint } => Error::MissingParameter {
                name: rename(name),
                hint,
            },
            Error::UnknownMechanism {
                field,
                name,
                expected,
            } => Error::UnknownMechanism {
                field: rename(field),
                name,
                expected,
            },
            Error::Incompatible { field, reason } => Error::Incompatible {
                field: rename(field),
                reason,
            },
            Error::NotImplemented {
                field,
                what,
                detail,
            } => Error::NotImplemented {
                field: rename(field),
                what,
                detail,
            },
            other => other,
        }
    }
}

/// `text` in exponent form if it is a decimal number below 1e-4 or at least 1e16 in
/// magnitude (`-0.00001` → `-1e-5`), else unchanged.
fn readable_number(text: String) -> String {
    let is_decimal = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '-');
    match text.parse::<f64>() {
        Ok(x) if is_decimal && x != 0.0 && (x.abs() < 1e-4 || x.abs() >= 1e16) => {
            format!("{x:e}")
        }
        _ => text,
    }
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_and_huge_values_are_shown_in_exponent_form() {
        let shown = |v: f64| Error::invalid("delta", v, "a number in (0, 1)").to_string();
        assert_eq!(
            shown(-1e-5),
            "invalid delta = -1e-5: must be a number in (0, 1)"
        );
        assert!(shown(1e20).contains("= 1e20:"));
        assert!(shown(0.5).contains("= 0.5:"));
        assert!(shown(0.0).contains("= 0:"));
        assert!(shown(f64::NAN).contains("= NaN:"));
        assert!(Error::invalid("count", 0u64, "at least 1")
            .to_string()
            .contains("= 0:"));
        assert!(Error::invalid("name", "abc", "x")
            .to_string()
            .contains("= abc:"));
    }
}
