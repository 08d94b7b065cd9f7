//! How a sensitivity was given (`sensitivity` or `replace_sensitivity`) and the shift between the two outputs it implies.

use super::*;

/// A number type a sensitivity is given in (real for continuous noise, whole for integer
/// noise).
pub(crate) trait SensitivityValue: Copy + PartialEq + std::fmt::Debug {
    const ONE: Self;
    fn as_f64(self) -> f64;
}

impl SensitivityValue for f64 {
    const ONE: Self = 1.0;
    fn as_f64(self) -> f64 {
        self
    }
}

impl SensitivityValue for u64 {
    const ONE: Self = 1;
    fn as_f64(self) -> f64 {
        self as f64
    }
}

/// How an additive mechanism's sensitivity was given.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shift<T> {
    /// Not given: one record's contribution is 1.
    Default,
    /// `sensitivity`: one record's contribution (doubled under replace).
    PerRecord(T),
    /// `replace_sensitivity`: the shift between the two outputs under replace, as given.
    Replace(T),
}

impl<T: SensitivityValue> PartialEq for Shift<T> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Shift::Replace(a), Shift::Replace(b)) => a == b,
            (Shift::Replace(_), _) | (_, Shift::Replace(_)) => false,
            _ => self.per_record() == other.per_record(),
        }
    }
}

impl<T: SensitivityValue> Shift<T> {
    /// One record's contribution (the add/remove shift, used under Poisson sampling). For a
    /// `replace_sensitivity`, which only exists under replace, the value itself.
    pub(crate) fn per_record(self) -> T {
        match self {
            Shift::Default => T::ONE,
            Shift::PerRecord(x) | Shift::Replace(x) => x,
        }
    }

    /// The shift between the two outputs of the unsampled mechanism under `relation` (also
    /// the shift of the pair a fixed batch is accounted with, under replace): Δ under
    /// add/remove, 2Δ under replace, or `replace_sensitivity` as given.
    pub(crate) fn pair_shift(self, relation: Neighbouring) -> f64 {
        match (self, relation) {
            (Shift::Replace(x), _) => x.as_f64(),
            (_, Neighbouring::AddRemove) => self.per_record().as_f64(),
            (_, Neighbouring::Replace) => 2.0 * self.per_record().as_f64(),
        }
    }

    pub(super) fn given(x: T, replace: bool) -> Self {
        if replace {
            Shift::Replace(x)
        } else {
            Shift::PerRecord(x)
        }
    }

    pub(super) fn is_replace(self) -> bool {
        matches!(self, Shift::Replace(_))
    }
}

impl Shift<u64> {
    /// [`Shift::pair_shift`] in whole numbers.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sensitivity` when 2Δ does not fit in 64 bits.
    pub(crate) fn integer_pair_shift(self, relation: Neighbouring) -> Result<u64> {
        match (self, relation) {
            (Shift::Replace(x), _) => Ok(x),
            (_, Neighbouring::AddRemove) => Ok(self.per_record()),
            (_, Neighbouring::Replace) => {
                let x = self.per_record();
                x.checked_mul(2).ok_or_else(|| {
                    Error::invalid(
                        "sensitivity",
                        x,
                        "a whole number ≥ 1 whose double (the replace-one shift) is below 2^64",
                    )
                })
            }
        }
    }
}
