//! Compensated summation.
//!
//! Neumaier's improved Kahan summation: error about 2u·Σ|xᵢ|, independent of the count;
//! and, for hot loops, two such sums side by side without branches (`PairedSum`).
//!
//! # References
//! Neumaier, "Rundungsfehleranalyse einiger Verfahren zur Summation endlicher Summen",
//! ZAMM 54 (1974). Ogita, Rump & Oishi, "Accurate sum and dot product", SIAM J. Sci.
//! Comput. 26 (2005), Algorithm 4.4 (Sum2).

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

/// Two compensated sums side by side (e.g. the real and imaginary parts of a complex sum):
/// Knuth's branch-free TwoSum per term, its rounding errors summed apart (Ogita, Rump &
/// Oishi's Sum2), with the error bound of [`NeumaierSum`]: `u·|Σ| + γ²ₙ·Σ|xᵢ|`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PairedSum {
    sum: [f64; 2],
    error: [f64; 2],
}

impl PairedSum {
    /// Add one term to each sum.
    #[inline(always)]
    pub(crate) fn add(&mut self, x: [f64; 2]) {
        for ((sum, error), x) in self.sum.iter_mut().zip(&mut self.error).zip(x) {
            let s = *sum + x;
            let back = s - *sum;
            *error += (*sum - (s - back)) + (x - back);
            *sum = s;
        }
    }

    /// The two sums so far.
    pub(crate) fn value(&self) -> [f64; 2] {
        [self.sum[0] + self.error[0], self.sum[1] + self.error[1]]
    }
}

/// The compensated sum of `values`.
pub fn neumaier_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut sum = NeumaierSum::default();
    values.into_iter().for_each(|x| sum.add(x));
    sum.value()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Terms whose plain sum loses everything: each pair of sums recovers the exact total,
    /// as Neumaier's does.
    #[test]
    fn paired_sum_is_compensated_like_neumaier() {
        let terms: Vec<f64> = (0..1000)
            .flat_map(|i| [1e16, 1.0 + (i % 7) as f64, -1e16])
            .collect();
        let exact: f64 = (0..1000).map(|i| 1.0 + (i % 7) as f64).sum();
        let mut paired = PairedSum::default();
        for &x in &terms {
            paired.add([x, -0.5 * x]);
        }
        let [a, b] = paired.value();
        assert_eq!(a, exact);
        assert_eq!(b, -0.5 * exact);
        assert_eq!(neumaier_sum(terms.iter().copied()), exact);
        assert_ne!(
            terms.iter().sum::<f64>(),
            exact,
            "the plain sum should fail here"
        );
    }
}
