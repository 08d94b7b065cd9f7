//! Exponential moments of a grid PMF at a fixed set of tilts, for the Chernoff bounds that
//! size self-composition windows and bound the mass that wraps around in them.
//!
//! For a non-negative vector p of length n on a grid of step h and a tilt t (nats⁻¹), with
//! λ = t·h (per index):
//!
//! ```text
//! up(t)   = ln Σᵢ pᵢ e^{λ i}     (upper tail: P(S_k ≥ j) ≤ exp(k·up − λ j))
//! down(t) = ln Σᵢ pᵢ e^{−λ i}    (lower tail: P(S_k ≤ j) ≤ exp(k·down + λ j))
//! ```
//!
//! for the k-fold sum S_k in index units (Chernoff). Both are computed for every tilt in one
//! pass over p, the upper one by Horner's rule from the bottom (`S ← S·e^{−λ} + pᵢ`, then
//! `up = ln S + λ(n − 1)`), the lower one with running weights `e^{−λ i}`; runs of zeros
//! are stepped over at once (`e^{−λ g}` for a gap of g, by `powi`). Every value is an
//! upper bound on the exact moment: the sums of non-negative terms are within 4n·u relative
//! (the inflation applied is the larger of 1e-9 and 8n·u), and values below 1e-290 that are
//! flushed to 0 (to keep subnormals out of the loop, which would slow it a hundredfold) are
//! covered by an absolute n·1e-290 added to each sum.

/// Tilts (in nats⁻¹) tried by the Chernoff tail bounds, for per-step losses of order a nat.
pub const CHERNOFF_TILTS: [f64; 14] = [
    0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 15.0, 30.0,
];

/// Tilts relative to the PMF's span (λ·span, span = its length − 1 in index units), tried as
/// well: a PMF whose losses span 2e-3 nats (a rarely sampled record with a small ε₀) has
/// its saddle points at thousands of nats⁻¹, far beyond [`CHERNOFF_TILTS`], and without
/// them its windows are the whole support and its tilted tails no more accurate than the
/// untilted ones.
pub const SPAN_TILTS: [f64; 7] = [1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0];

/// Number of tilts tried.
pub const TILTS: usize = CHERNOFF_TILTS.len() + SPAN_TILTS.len();

/// Smallest relative inflation covering the rounding of the sums (4n·u ≤ 1e-9 for
/// n ≤ 2²¹; above that 8n·u is applied).
const ROUNDING_INFLATION: f64 = 1e-9;
/// Gaps between non-zero entries whose powers are kept once computed (see `moments_kernel`).
const SMALL_GAPS: usize = 8;

/// Values below this are flushed to 0 inside the sums.
const FLUSH: f64 = 1e-290;

/// `up(t)`, `down(t)` and `λ = t·h` at every tilt of [`CHERNOFF_TILTS`] and [`SPAN_TILTS`]
/// (see the module docs).
#[derive(Debug, Clone)]
pub struct TailMoments {
    /// The tilts t (nats⁻¹).
    pub tilts: [f64; TILTS],
    /// λ = t·h per index, by tilt.
    pub lambdas: [f64; TILTS],
    /// Upper bounds on `ln Σᵢ pᵢ e^{λ i}` (−∞ for an all-zero p).
    pub up: [f64; TILTS],
    /// Upper bounds on `ln Σᵢ pᵢ e^{−λ i}` (−∞ for an all-zero p).
    pub down: [f64; TILTS],
}

impl TailMoments {
    /// The moments of `p` on a grid of step `step` (nats).
    pub fn of(p: &[f64], step: f64) -> TailMoments {
        TailMoments::with_span(p, step, p.len().max(2) - 1)
    }

    /// The moments of `p` with the span tilts taken relative to `span` entries instead of
    /// p's own (so that the moments of two PMFs share their tilts and add up to those of
    /// their convolution).
    pub fn with_span(p: &[f64], step: f64, span: usize) -> TailMoments {
        moments_with_span(p, step, span)
    }

    /// The moments of `p` scaled by `factor` ≥ 1 (every entry multiplied by it), from those
    /// of `p`: each bound raised by an upper bound on `ln factor` (`factor − 1`, rounded up).
    pub fn scaled(&self, factor: f64) -> TailMoments {
        let ln_factor = ((factor - 1.0).max(0.0) * (1.0 + 2.0 * f64::EPSILON)).next_up();
        let raise = |bound: f64| {
            if bound.is_finite() {
                (bound + ln_factor).next_up()
            } else {
                bound
            }
        };
        TailMoments {
            up: self.up.map(raise),
            down: self.down.map(raise),
            ..self.clone()
        }
    }
}

crate::numeric::wide_loops::dispatch_wide! {
    /// [`TailMoments::with_span`] (its 21 lanes four at a time on AVX2).
    fn moments_with_span(p: &[f64], step: f64, span: usize) -> TailMoments = moments_kernel;
}

/// `(r^g, r^{g−1})` at every tilt's ratio r, for one gap g between non-zero entries.
type GapPowers = ([f64; TILTS], [f64; TILTS]);

/// The body of [`TailMoments::with_span`].
#[inline(always)]
fn moments_kernel(p: &[f64], step: f64, span: usize) -> TailMoments {
    let span = span.max(1) as f64;
    let mut lambdas = [0.0; TILTS];
    for (lambda, t) in lambdas.iter_mut().zip(CHERNOFF_TILTS) {
        *lambda = t * step;
    }
    for (lambda, c) in lambdas[CHERNOFF_TILTS.len()..].iter_mut().zip(SPAN_TILTS) {
        *lambda = c / span;
    }
    let tilts = lambdas.map(|l| l / step);
    let ratios = lambdas.map(|l| (-l).exp());
    // Horner's rule and the running weights, stepping from one non-zero entry to the
    // next: a gap of g indices multiplies by r^g (the zeros in between add nothing).
    // Single-event PMFs with merged tails are about 90% zeros.
    let mut horner = [0.0_f64; TILTS];
    let mut down = [0.0_f64; TILTS];
    // r^{i} before entry i (flushed to 0 below FLUSH), starting at r^0 = 1.
    let mut weights = [1.0_f64; TILTS];
    // r^g and r^{g−1}: for each gap up to SMALL_GAPS once it occurs (lumped atoms leave
    // gaps of 1 and 2 in turn, which one cached gap recomputed every time, 42 `powi` at each
    // entry), and for the last larger gap seen (gaps repeat along merged blocks).
    let mut small_gaps: [Option<GapPowers>; SMALL_GAPS + 1] = [None; SMALL_GAPS + 1];
    let mut gap_powers: Option<(usize, GapPowers)> = None;
    let powers_of = |gap: usize| {
        let exponent = i32::try_from(gap).unwrap_or(i32::MAX);
        (
            ratios.map(|r| r.powi(exponent)),
            ratios.map(|r| r.powi(exponent - 1)),
        )
    };
    // Index after the last entry processed (the next entry's weight is r^{next}).
    let mut next = 0usize;
    for (i, &v) in p.iter().enumerate().filter(|(_, &v)| v != 0.0) {
        let gap = i + 1 - next;
        // (Borrowed, not copied: two arrays of TILTS per entry.)
        let (full, skipped) = if gap <= SMALL_GAPS {
            &*small_gaps[gap].get_or_insert_with(|| powers_of(gap))
        } else {
            match &mut gap_powers {
                Some((g, powers)) if *g == gap => &*powers,
                slot => &slot.insert((gap, powers_of(gap))).1,
            }
        };
        for t in 0..TILTS {
            let h = horner[t] * full[t] + v;
            horner[t] = if h < FLUSH { 0.0 } else { h };
            let w = weights[t] * skipped[t];
            down[t] += v * if w < FLUSH { 0.0 } else { w };
            let w = w * ratios[t];
            weights[t] = if w < FLUSH { 0.0 } else { w };
        }
        next = i + 1;
    }
    // The trailing zeros: Horner's sum is taken at the last index.
    if next > 0 && next < p.len() {
        let exponent = i32::try_from(p.len() - next).unwrap_or(i32::MAX);
        for t in 0..TILTS {
            let h = horner[t] * ratios[t].powi(exponent);
            horner[t] = if h < FLUSH { 0.0 } else { h };
        }
    }
    let n = p.len() as f64;
    let slack = n * FLUSH;
    // Each sum is within (2n + 2·Σ⌈log₂ g⌉)·u ≤ 4n·u of its value (the powers' roundings
    // are at most two per doubling of a gap), to first order; 8n·u covers it.
    let inflation = ROUNDING_INFLATION.max(8.0 * n * f64::EPSILON / 2.0);
    // A sum flushed all the way to 0 still had mass: its bound is the slack, not −∞.
    let any_mass = p.iter().any(|&v| v > 0.0);
    let log = |sum: f64| {
        if any_mass {
            ((sum + slack) * (1.0 + inflation)).ln()
        } else {
            f64::NEG_INFINITY
        }
    };
    let top = (p.len().max(1) - 1) as f64;
    let mut up = [0.0; TILTS];
    for t in 0..TILTS {
        up[t] = log(horner[t]) + lambdas[t] * top;
        down[t] = log(down[t]);
    }
    TailMoments {
        tilts,
        lambdas,
        up,
        down,
    }
}

impl TailMoments {
    /// The Chernoff upper quantile of the k-fold sum (k real, so a sum of distinct PMFs with
    /// the same tilts can pass `k = 1` and their moments in `with`): the smallest bound
    /// `(k·up(t) [+ with.up(t)] − log_level)/λ` over the tilts, on the index (relative to the
    /// sum's lowest) above which the sum holds at most `e^{log_level}`, and the tilt that
    /// gives it (the saddle point there). `None` when no moment is finite.
    pub fn upper_quantile(
        &self,
        k: f64,
        log_level: f64,
        with: Option<&TailMoments>,
    ) -> Option<(f64, f64)> {
        debug_assert!(with.is_none_or(|w| w.lambdas == self.lambdas));
        (0..TILTS)
            .map(|t| (k * self.up[t] + with.map_or(0.0, |w| w.up[t]), t))
            .filter(|(up, _)| up.is_finite())
            .map(|(up, t)| ((up - log_level) / self.lambdas[t], self.tilts[t]))
            // The first of equal bounds, as a strict comparison in a loop would keep.
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The moments as dispatched, in every build the processor can run (AVX2, AVX-512), are
    /// the baseline build's bit for bit, on a vector with gaps, flushed tails and all 21 tilts.
    #[test]
    fn the_wide_build_gives_the_same_bits() {
        let p: Vec<f64> = (0..5000)
            .map(|i| match i % 7 {
                0 | 3 => 0.0,
                _ => (-(i as f64) * 0.05).exp() * (1.0 + (i as f64).sin().abs()),
            })
            .collect();
        crate::numeric::wide_loops::for_each_tier(|tier| {
            for (step, span) in [(1e-4, 4999), (0.3, 100), (2.0, 4999)] {
                let wide = TailMoments::with_span(&p, step, span);
                let plain = moments_kernel(&p, step, span);
                let bits = |v: [f64; TILTS]| v.map(f64::to_bits);
                assert_eq!(bits(wide.up), bits(plain.up), "{tier:?}, step {step}");
                assert_eq!(bits(wide.down), bits(plain.down), "{tier:?}, step {step}");
            }
        });
    }

    /// `TailMoments::of(p, step)` bounds the direct sums in log space (each term's
    /// logarithm, then log-sum-exp) from above, within 2e-9 relative.
    fn check_against_log_space(p: &[f64], step: f64) {
        let m = TailMoments::of(p, step);
        let log_sum_exp = |terms: Vec<f64>| {
            let top = terms.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            top + terms.iter().map(|t| (t - top).exp()).sum::<f64>().ln()
        };
        for (t, &lambda) in m.lambdas.iter().enumerate() {
            let terms = |sign: f64| -> Vec<f64> {
                p.iter()
                    .enumerate()
                    .filter(|(_, &v)| v > 0.0)
                    .map(|(i, &v)| v.ln() + sign * lambda * i as f64)
                    .collect()
            };
            let exact_up = log_sum_exp(terms(1.0));
            let exact_down = log_sum_exp(terms(-1.0));
            for (got, exact) in [(m.up[t], exact_up), (m.down[t], exact_down)] {
                assert!(
                    got >= exact - 1e-12 * exact.abs().max(1.0),
                    "tilt {t}: {got} < {exact}"
                );
                assert!(
                    got <= exact + 2e-9 * exact.abs().max(1.0),
                    "tilt {t}: {got} ≫ {exact}"
                );
            }
        }
    }

    #[test]
    fn moments_bound_a_log_space_sum_from_above_and_tightly() {
        let p: Vec<f64> = (0..5000)
            .map(|i| {
                let x = (i as f64 - 2500.0) / 300.0;
                (-0.5 * x * x).exp() * 1e-3
            })
            .chain(std::iter::repeat_n(1e-300, 50))
            .chain([0.0, 3e-310, 0.2])
            .collect();
        check_against_log_space(&p, 0.01);
    }

    /// Sparse vectors, as merged tails make them (runs of zeros stepped over at once): gaps
    /// that grow, repeat and vary, zeros at both ends, and tiny entries after long gaps.
    #[test]
    fn sparse_moments_bound_a_log_space_sum() {
        let mut p = vec![0.0; 40_000];
        let mut i = 7;
        let mut gap = 1;
        while i < p.len() - 100 {
            let x = (i as f64 - 3000.0) / 900.0;
            p[i] = (-0.5 * x * x).exp() * 1e-2;
            i += gap;
            gap = if i % 3 == 0 {
                gap
            } else {
                (gap * 5 / 4).max(gap + 1) % 997 + 1
            };
        }
        p[39_800] = 1e-290;
        p[39_899] = 0.3;
        check_against_log_space(&p, 0.001);
        check_against_log_space(&p[..20_000], 0.05);
    }

    /// Mass followed by a long run of zeros: the upper sum, built by Horner's rule from the
    /// bottom, decays below the flush level on the way up. It was once reported as −∞ (no
    /// mass), which made every Chernoff bound at that tilt 0 instead of an upper bound.
    #[test]
    fn mass_before_a_long_run_of_zeros_is_not_lost() {
        let mut p = vec![0.0; 200_000];
        p[0] = 0.5;
        p[1] = 0.5;
        let m = TailMoments::of(&p, 0.5);
        for (t, &lambda) in m.lambdas.iter().enumerate() {
            // Σ pᵢ e^{λi} = 0.5·(1 + e^λ).
            let exact = (0.5 * (1.0 + lambda.exp())).ln();
            assert!(m.up[t] >= exact - 1e-12, "tilt {t}: {} < {exact}", m.up[t]);
            assert!(m.down[t].is_finite());
        }
    }

    #[test]
    fn an_all_zero_vector_has_no_mass() {
        let m = TailMoments::of(&[0.0, 0.0], 0.1);
        assert!(m.up.iter().chain(&m.down).all(|&v| v == f64::NEG_INFINITY));
    }
}
