//! Compensated summation.
//!
//! Neumaier's improved Kahan summation: error about 2u·Σ|xᵢ|, independent of the count;
//! for slices, four branch-free chains side by side (`compensated_sum`); and, for hot
//! loops, two such sums side by side without branches (`PairedSum`).
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

    /// The state after some terms: the running sums and their accumulated rounding errors
    /// (as a vector implementation of [`PairedSum::add`] leaves them).
    pub(crate) fn from_parts(sum: [f64; 2], error: [f64; 2]) -> PairedSum {
        PairedSum { sum, error }
    }

    /// The running sums and their accumulated rounding errors (see
    /// [`PairedSum::from_parts`]).
    #[cfg(test)]
    pub(crate) fn parts(&self) -> [[f64; 2]; 2] {
        [self.sum, self.error]
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

/// The compensated sum of a slice, within `u·|Σ| + (γ_BLOCK·γₙ + 16u²)·Σ|xᵢ|` of the exact
/// sum of its n terms: below 2u·Σ|xᵢ| for any n up to 2⁴⁰, as [`neumaier_sum`], and about
/// four times faster on long slices.
///
/// Four running sums side by side, each term's rounding error recovered exactly by Knuth's
/// branch-free TwoSum (Ogita, Rump & Oishi's Sum2 in four independent chains, which the
/// processor overlaps and the compiler vectorizes). The recovered errors are summed plainly
/// within blocks of `BLOCK` = 2¹⁶ terms (an error of at most `γ_BLOCK` of their absolute sum,
/// which is at most `γₙ·Σ|xᵢ|`, Ogita, Rump & Oishi, Lemma 4.2 and Proposition 4.5), and
/// the block totals, the four sums and the last errors are added by [`NeumaierSum`].
pub fn compensated_sum(values: &[f64]) -> f64 {
    let [sum, compensation] = compensated_sum_pair(values);
    sum + compensation
}

crate::numeric::wide_loops::dispatch_wide! {
    /// [`compensated_sum`] before its last rounding: `[s, c]` with `s + c` (as real numbers)
    /// within `(γ_BLOCK·γₙ + 16u²)·Σ|xᵢ|` of the exact sum ([`compensated_sum_pair_error`];
    /// about 4e-20·Σ|xᵢ| for n = 2²⁶), for callers that need more than a double's precision of
    /// it (the k-th power of a probability vector's mass for huge k).
    ///
    /// (The four chains side by side in one vector where the processor has AVX2 or
    /// AVX-512: the same operations in each lane, the same bits.)
    pub(crate) fn compensated_sum_pair(values: &[f64]) -> [f64; 2] = compensated_sum_pair_kernel;
}

/// The body of [`compensated_sum_pair`].
#[inline(always)]
fn compensated_sum_pair_kernel(values: &[f64]) -> [f64; 2] {
    let mut error_total = NeumaierSum::default();
    let mut sums = [0.0_f64; 4];
    for block in values.chunks(BLOCK) {
        let mut errors = [0.0_f64; 4];
        let chunks = block.chunks_exact(4);
        let rest = chunks.remainder();
        for chunk in chunks {
            for lane in 0..4 {
                let x = chunk[lane];
                let s = sums[lane] + x;
                let back = s - sums[lane];
                errors[lane] += (sums[lane] - (s - back)) + (x - back);
                sums[lane] = s;
            }
        }
        for (lane, &x) in rest.iter().enumerate() {
            let s = sums[lane] + x;
            let back = s - sums[lane];
            errors[lane] += (sums[lane] - (s - back)) + (x - back);
            sums[lane] = s;
        }
        for e in errors {
            error_total.add(e);
        }
    }
    let mut total = NeumaierSum::default();
    for s in sums {
        total.add(s);
    }
    total.add(error_total.value());
    [total.sum, total.compensation]
}

/// The relative error bound of [`compensated_sum_pair`] for n terms: `γ_BLOCK·γₙ + 16u²`
/// (`γₘ = m·u/(1 − m·u)`, u = 2⁻⁵³), for n·u < 1/2.
pub(crate) fn compensated_sum_pair_error(n: usize) -> f64 {
    let u = f64::EPSILON / 2.0;
    let gamma = |m: f64| m * u / (1.0 - m * u);
    gamma(BLOCK as f64) * gamma(n as f64) + 16.0 * u * u
}

/// Terms per block whose recovered rounding errors [`compensated_sum`] adds up plainly
/// (`γ_BLOCK ≈ 7.3e-12`).
const BLOCK: usize = 1 << 16;

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
        assert_eq!(compensated_sum(&terms), exact);
        assert_ne!(
            terms.iter().sum::<f64>(),
            exact,
            "the plain sum should fail here"
        );
    }

    /// The sum as dispatched, in every build the processor can run (AVX2, AVX-512), is the
    /// baseline build's bit for bit: both parts, on terms of mixed signs and sizes over
    /// several blocks, and on lengths around the vector width.
    #[test]
    fn the_wide_builds_give_the_same_bits() {
        let mut next = crate::numeric::xorshift(0x2545_f491_4f6c_dd1d);
        let terms: Vec<f64> = (0..200_003)
            .map(|_| {
                let m = (next() >> 11) as f64 * if next().is_multiple_of(2) { 1.0 } else { -1.0 };
                m * 2f64.powi(-80 + (next() % 60) as i32)
            })
            .collect();
        crate::numeric::wide_loops::for_each_tier(|tier| {
            for len in [terms.len(), BLOCK + 5, 7, 4, 1, 0] {
                let wide = compensated_sum_pair(&terms[..len]);
                let plain = compensated_sum_pair_kernel(&terms[..len]);
                assert_eq!(
                    wide.map(f64::to_bits),
                    plain.map(f64::to_bits),
                    "{tier:?}, {len} terms"
                );
            }
        });
    }

    /// Against an exact integer sum: 300,000 terms (several blocks of recovered errors)
    /// `m·2^e`, m a signed 53-bit integer and e in [−60, −10], heavy cancellation between
    /// huge and tiny ones. Scaled by 2⁶⁰ each term is an integer below 2¹⁰³, so their sum
    /// is exact in i128; the compensated sum must be within u·|Σ| + 16u²·Σ|xᵢ| of it (plus
    /// u·|Σ| for rounding the exact sum to f64).
    #[test]
    fn compensated_sum_matches_an_exact_integer_sum() {
        let mut next = crate::numeric::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut terms = Vec::new();
        let mut exact: i128 = 0;
        for _ in 0..300_000 {
            let m = (next() >> 11) as i64 * if next().is_multiple_of(2) { 1 } else { -1 };
            let e = -60 + (next() % 51) as i32;
            terms.push(m as f64 * 2f64.powi(e));
            exact += (m as i128) << (e + 60);
        }
        // The plain sum cancels the big terms against each other with errors of their size.
        let exact_value = exact as f64 * 2f64.powi(-60);
        let absolute: f64 = terms.iter().map(|x| x.abs()).sum();
        let u = f64::EPSILON / 2.0;
        let bound = 2.0 * u * exact_value.abs() + 16.0 * u * u * absolute * 1.01;
        for computed in [neumaier_sum(terms.iter().copied()), compensated_sum(&terms)] {
            assert!(
                (computed - exact_value).abs() <= bound,
                "{computed} against {exact_value} (bound {bound:e})"
            );
        }
        let plain: f64 = terms.iter().sum();
        assert!(
            (plain - exact_value).abs() > bound,
            "the plain sum should miss the bound here"
        );
    }
}
