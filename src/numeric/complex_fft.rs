//! The forward complex DFT of one length, planned cheaply: long lengths by the four-step
//! (Cooley–Tukey two-factor) algorithm over two short rustfft plans.
//!
//! Why: rustfft plans a long length by computing its whole outer twiddle table, one
//! `sin_cos` per entry. For the half lengths a DP-SGD query at grid step 1e-4 uses
//! (m ≈ 1e5–2e5) that took 2–3.3 ms per plan against 0.5–1.3 ms per transform, and a one-off
//! query runs each plan only twice (forward, then inverse on the conjugate). Here a length
//! m = m₁·m₂ with m₁ ≈ m₂ ≈ √m is planned as two rustfft plans of lengths m₁ and m₂ (a few
//! hundred `sin_cos` each) and the m outer twiddles are products of two table entries
//! ([`Twiddles`], about 2√m `sin_cos`): planning ≈ 50 µs. Each transform makes more passes
//! over memory than rustfft's own mixed-radix step (three transposes, one twiddle pass),
//! about 1.5× its time.
//!
//! With index `j = m₂·j₁ + j₂` and frequency `k = k₁ + m₁·k₂` (`j₁, k₁ < m₁`, `j₂, k₂ < m₂`),
//! ```text
//! X[k₁ + m₁k₂] = Σ_{j₂} ω_{m₂}^{j₂k₂} · ω_m^{j₂k₁} · Σ_{j₁} ω_{m₁}^{j₁k₁} · x[m₂j₁ + j₂],
//! ```
//! `ω_L = e^{−2πi/L}`: length-m₁ transforms of the m₂ columns, the twiddles `ω_m^{j₂k₁}`, then
//! length-m₂ transforms of the m₁ rows (e.g. Van Loan, "Computational Frameworks for the Fast
//! Fourier Transform", §3.3.1, or Bailey, "FFTs in external or hierarchical memory", 1990).
//!
//! Accuracy: the two inner transforms take log₂m₁ + log₂m₂ = log₂m butterfly stages, as one
//! transform of length m; the twiddle stage adds one complex product with a twiddle within
//! about 11 ulp (a product of two [`Twiddles`] entries) — one more stage inside the
//! `C·log₂N·u` model of [`crate::numeric::fft_convolution`] (C = 5, against about 2 needed).

use crate::numeric::real_fft::Twiddles;
use num_complex::Complex64;
use rustfft::{Fft, FftPlanner};
use std::sync::Arc;

/// Lengths from this one up are planned by four steps; shorter ones by rustfft alone (their
/// plans cost under 0.2 ms).
const FOUR_STEP_MIN_LEN: usize = 1 << 13;

/// Rows of the first step transformed (and twiddled) per rustfft call: a block of about
/// 32 KiB, so that the twiddle pass finds it in cache.
const BLOCK_BYTES: usize = 1 << 15;

/// Twiddles of one row of the four steps come in runs of this length: one table product for
/// the run's base, the rest from a per-row table (each twiddle within about 11 ulp).
const TWIDDLE_RUN: usize = 16;

/// A planned forward complex DFT of length m: `x ← Σ_j x_j e^{−2πi·jk/m}`, unnormalized.
pub(crate) struct ComplexFft {
    len: usize,
    kind: Kind,
}

enum Kind {
    /// rustfft's own plan.
    Direct(Arc<dyn Fft<f64>>),
    /// Four steps over length-m₁ and length-m₂ plans.
    FourStep(FourStep),
}

struct FourStep {
    rows: usize,
    columns: usize,
    /// Length-m₁ plan (`rows` = m₁).
    column_fft: Arc<dyn Fft<f64>>,
    /// Length-m₂ plan (`columns` = m₂).
    row_fft: Arc<dyn Fft<f64>>,
    /// `ω_m^t` for `t < m`.
    twiddles: Twiddles,
}

impl ComplexFft {
    /// Plan length `m ≥ 1`: four steps when m ≥ [`FOUR_STEP_MIN_LEN`] has a divisor within a
    /// factor 4 of √m, else rustfft alone. Fresh planners: the algorithm, and so the last bits
    /// of every result, depend on m alone.
    pub(crate) fn new(m: usize) -> ComplexFft {
        let factors = (m >= FOUR_STEP_MIN_LEN)
            .then(|| balanced_factors(m))
            .flatten();
        match factors {
            Some((rows, columns)) => ComplexFft::four_step(rows, columns),
            None => ComplexFft {
                len: m,
                kind: Kind::Direct(FftPlanner::new().plan_fft_forward(m)),
            },
        }
    }

    /// Plan length `rows·columns` by four steps with these factors (both ≥ 1).
    pub(crate) fn four_step(rows: usize, columns: usize) -> ComplexFft {
        let m = rows * columns;
        ComplexFft {
            len: m,
            kind: Kind::FourStep(FourStep {
                rows,
                columns,
                column_fft: FftPlanner::new().plan_fft_forward(rows),
                row_fft: FftPlanner::new().plan_fft_forward(columns),
                twiddles: Twiddles::new(m, m),
            }),
        }
    }

    /// The transform length m.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Scratch length [`ComplexFft::process`] needs.
    pub(crate) fn scratch_len(&self) -> usize {
        match &self.kind {
            Kind::Direct(fft) => fft.get_inplace_scratch_len(),
            Kind::FourStep(plan) => plan.inner_scratch_len() + self.len,
        }
    }

    /// Transform `buffer` (m entries) in place; `scratch` holds at least
    /// [`ComplexFft::scratch_len`] entries (contents unspecified on entry and exit).
    pub(crate) fn process(&self, buffer: &mut [Complex64], scratch: &mut [Complex64]) {
        assert!(
            buffer.len() == self.len && scratch.len() >= self.scratch_len(),
            "buffer lengths"
        );
        match &self.kind {
            Kind::Direct(fft) => {
                let needed = fft.get_inplace_scratch_len();
                fft.process_with_scratch(buffer, &mut scratch[..needed]);
            }
            Kind::FourStep(plan) => plan.process(buffer, scratch),
        }
    }
}

impl FourStep {
    fn inner_scratch_len(&self) -> usize {
        self.column_fft
            .get_inplace_scratch_len()
            .max(self.row_fft.get_outofplace_scratch_len())
            .max(1)
    }

    fn process(&self, buffer: &mut [Complex64], scratch: &mut [Complex64]) {
        let (rows, columns) = (self.rows, self.columns);
        let m = rows * columns;
        let (work, inner) = scratch.split_at_mut(m);
        let inner = &mut inner[..self.inner_scratch_len()];
        // buffer[m₂j₁ + j₂] → work[m₁j₂ + j₁]: the columns become rows.
        transpose::transpose(buffer, work, columns, rows);
        // Length-m₁ transforms over j₁, then the twiddles ω_m^{j₂k₁}, a cached block at a time.
        // With k₁ = Rq + r (R = TWIDDLE_RUN): ω_m^{j₂k₁} = ω_m^{R·j₂q} · ω_m^{j₂r}, the second
        // from a row table.
        let block_rows = (BLOCK_BYTES / (16 * rows)).max(1);
        let mut row_table = [Complex64::new(1.0, 0.0); TWIDDLE_RUN];
        for (block_index, block) in work.chunks_mut(block_rows * rows).enumerate() {
            self.column_fft.process_with_scratch(block, inner);
            for (r, row) in block.chunks_exact_mut(rows).enumerate() {
                let j2 = block_index * block_rows + r;
                for (t, entry) in row_table.iter_mut().enumerate().take(rows) {
                    *entry = self.twiddles.at(j2 * t);
                }
                for (q, run) in row.chunks_mut(TWIDDLE_RUN).enumerate() {
                    let base = self.twiddles.at(j2 * q * TWIDDLE_RUN);
                    for (value, entry) in run.iter_mut().zip(&row_table) {
                        *value *= base * entry;
                    }
                }
            }
        }
        // work[m₁j₂ + k₁] → buffer[m₂k₁ + j₂], then length-m₂ transforms over j₂ into work.
        transpose::transpose(work, buffer, rows, columns);
        self.row_fft
            .process_outofplace_with_scratch(buffer, work, inner);
        // work[m₂k₁ + k₂] = X[k₁ + m₁k₂] → natural order.
        transpose::transpose(work, buffer, columns, rows);
    }
}

/// The factor pair `(m₁, m₂)` of m with m₁ ≤ m₂ and m₁ the largest divisor ≤ √m, if
/// `m₂ ≤ 16·m₁` (factors within 4× of √m); `None` otherwise (e.g. m prime).
fn balanced_factors(m: usize) -> Option<(usize, usize)> {
    let mut root = (m as f64).sqrt() as usize;
    while root * root > m {
        root -= 1;
    }
    while (root + 1) * (root + 1) <= m {
        root += 1;
    }
    let rows = (1..=root).rev().find(|d| m % d == 0)?;
    let columns = m / rows;
    (columns <= 16 * rows).then_some((rows, columns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::summation::PairedSum;

    /// `Σ_j x_j e^{−2πi·jk/m}` by compensated sums with one `sin_cos` per term.
    fn direct(x: &[Complex64], k: usize) -> Complex64 {
        let m = x.len();
        let mut sum = PairedSum::default();
        for (j, v) in x.iter().enumerate() {
            let angle = -2.0 * std::f64::consts::PI * ((j * k) % m) as f64 / m as f64;
            let (s, c) = angle.sin_cos();
            let term = v * Complex64::new(c, s);
            sum.add([term.re, term.im]);
        }
        let [re, im] = sum.value();
        Complex64::new(re, im)
    }

    fn signal(m: usize) -> Vec<Complex64> {
        (0..m)
            .map(|j| {
                let t = j as f64;
                Complex64::new(
                    ((t * 0.37).sin() + 1.1) * (-t / m as f64).exp(),
                    (t * 0.11).cos() + 1.05,
                )
            })
            .collect()
    }

    /// Every bin (or every `stride`-th) within `20·log₂m·ε·‖x‖₁` of the direct DFT.
    fn check(plan: &ComplexFft, stride: usize) {
        let m = plan.len();
        let x = signal(m);
        let mut y = x.clone();
        let mut scratch = vec![Complex64::new(f64::NAN, f64::NAN); plan.scratch_len()];
        plan.process(&mut y, &mut scratch);
        let norm: f64 = x.iter().map(|v| v.norm()).sum();
        let tolerance = 20.0 * (m as f64).log2().max(1.0) * f64::EPSILON * norm;
        for k in (0..m).step_by(stride).chain([m - 1]) {
            let exact = direct(&x, k);
            assert!(
                (y[k] - exact).norm() <= tolerance,
                "m = {m}, bin {k}: {} against {exact}",
                y[k]
            );
        }
    }

    /// Four steps with every shape of factors (1 × m, m × 1, square, unequal, odd) against
    /// the direct DFT at every bin.
    #[test]
    fn four_steps_match_the_direct_dft() {
        for (rows, columns) in [
            (1, 1),
            (1, 7),
            (7, 1),
            (2, 2),
            (3, 5),
            (8, 8),
            (12, 35),
            (35, 12),
        ] {
            check(&ComplexFft::four_step(rows, columns), 1);
        }
    }

    /// Lengths past the four-step threshold, planned as the accountant plans them, at a
    /// spread of bins.
    #[test]
    fn long_lengths_match_the_direct_dft() {
        for m in [
            FOUR_STEP_MIN_LEN,
            3 * 5 * 7 * 2 * 2 * 2 * 2 * 2 * 2 * 2,
            108_000,
        ] {
            let plan = ComplexFft::new(m);
            assert!(matches!(plan.kind, Kind::FourStep(_)), "m = {m}");
            check(&plan, m / 61);
        }
    }

    /// The factor pairs: the largest divisor below √m, refused when too unbalanced.
    #[test]
    fn balanced_factors_pick_the_divisor_nearest_the_root() {
        assert_eq!(balanced_factors(108_000), Some((300, 360)));
        assert_eq!(balanced_factors(1 << 17), Some((256, 512)));
        assert_eq!(balanced_factors(16), Some((4, 4)));
        assert_eq!(balanced_factors(2 * 8191), None);
        assert_eq!(balanced_factors(8191), None);
        assert!(matches!(ComplexFft::new(8191).kind, Kind::Direct(_)));
    }
}
