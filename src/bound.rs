//! Which side of the truth a number is on.
//!
//! [`Bound`] is the direction every discretization and composition in the pipeline errs in
//! (upper or lower), and [`Bracket`] the pair of guaranteed bounds every answer carries.

use serde::{Deserialize, Serialize};

/// The direction in which a discretized distribution errs.
///
/// An `Upper` (pessimistic) distribution over-estimates δ(ε) at every ε, so every ε or δ read
/// from it is a guaranteed upper bound. A `Lower` (optimistic) one under-estimates δ(ε)
/// everywhere and yields guaranteed lower bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Pessimistic: δ is over-estimated everywhere.
    Upper,
    /// Optimistic: δ is under-estimated everywhere.
    Lower,
}

/// A guaranteed interval `[lower, upper]` around an unknown true privacy parameter.
///
/// # Guarantee
/// `lower ≤ truth ≤ upper`, where truth is the exact ε (or δ) of the composition described.
///
/// # Display
/// `[lower, upper]` with 6 decimals (or the formatter's precision, `{:.3}`), in scientific
/// notation outside [10⁻³, 10⁶), rounded outward: the printed upper end is never below
/// `upper` and the printed lower end never above `lower`. Infinity is `inf`.
///
/// ```
/// use pld_accountant::Bracket;
///
/// let epsilon = Bracket { lower: 1.8278041, upper: 1.8287791 };
/// assert_eq!(epsilon.to_string(), "[1.827804, 1.828780]");
/// let delta = Bracket { lower: 9.87654321e-6, upper: f64::INFINITY };
/// assert_eq!(format!("{delta:.2}"), "[9.87e-6, inf]");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bracket {
    /// Guaranteed upper bound (what to publish).
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub upper: f64,
    /// Guaranteed lower bound (how much the upper bound could still be improved).
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub lower: f64,
}

impl Bracket {
    /// `upper − lower`: how loose the bracket is.
    pub fn width(&self) -> f64 {
        if self.upper == self.lower {
            0.0
        } else {
            self.upper - self.lower
        }
    }

    /// The bracket of the worse of two directions (element-wise maximum).
    ///
    /// Valid because the true value is the maximum of the two directions' true values.
    pub fn max(self, other: Bracket) -> Bracket {
        Bracket {
            upper: self.upper.max(other.upper),
            lower: self.lower.max(other.lower),
        }
    }
}
