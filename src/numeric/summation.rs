//! Compensated summation.
//!
//! Neumaier's improved Kahan summation: error about 2u·Σ|xᵢ|, independent of the count.
//!
//! # References
//! Neumaier, "Rundungsfehleranalyse einiger Verfahren zur Summation endlicher Summen",
//! ZAMM 54 (1974).

/// A running compensated sum, for loops that need the partial sums.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct NeumaierSum {
    sum: f64,
    compensation: f64,
}

impl NeumaierSum {
    /// Add one term.
    pub fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.compensation += (self.sum - t) + x;
        } else {
            self.compensation += (x - t) + self.sum;
        }
        self.sum = t;
    }

    /// The sum so far.
    pub fn value(&self) -> f64 {
        self.sum + self.compensation
    }
}

/// The compensated sum of `values`.
pub fn neumaier_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut sum = NeumaierSum::default();
    values.into_iter().for_each(|x| sum.add(x));
    sum.value()
}
