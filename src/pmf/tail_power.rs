//! The k-fold self-composition of an upper PMF that will only be read in its upper tail:
//! one FFT power of the exponentially tilted PMF, over a circular buffer about half as long
//! as the plain power's window (see [`GridPmf::upper_tail_power`]).
//!
//! A plain power must hold the whole composed loss, both Chernoff tails cut at the
//! truncation mass: about ±8 standard deviations. An ε(δ) query at δ = 1e-5 reads only the
//! losses above the answer, a few standard deviations above the mean. Tilting by θ
//! (`p̃ᵢ = pᵢ e^{θ lᵢ − a}`, `a = ln Σ pᵢ e^{θ lᵢ}`) commutes with convolution, so
//!
//! ```text
//! p^{∗k}(L) = e^{k·a − θ·L} · p̃^{∗k}(L)              (L the composed loss)
//! ```
//!
//! and in a circular buffer of period N·h every entry holds its own mass plus the mass
//! N·h, 2N·h, … above and below it, all non-negative. Untilted, a copy from r periods away
//! weighs `e^{θ·r·N·h}` times its mass: copies from below are damped, copies from above
//! amplified. Every copy only adds mass where it lands, so the buffer, untilted, is at least
//! the true PMF at every loss it holds (up to the transform's round-off, bounded per entry):
//! what an upper PMF may be. What it misses is charged: the mass above the buffer to +∞
//! (Chernoff), the mass below it onto its lowest loss (as 1, a bound on any mass). The
//! period is chosen so that the copies landing at or above `from_loss` weigh at most
//! [`COPIES_PER_TRUNCATION`] times the truncation mass in all: there the PMF is as tight as
//! the plain power's but for that much δ. Both the tilt (near the Chernoff saddle point of
//! the expected answer) and the period are chosen together, for the shortest period.
//!
//! Sources: exponential tilting is the Esscher transform of saddle-point methods (e.g.
//! Butler, "Saddlepoint Approximations with Applications", 2007). Koskela, Jälkö and
//! Honkela, "Computing Tight Differential Privacy Guarantees Using FFT" (AISTATS 2020),
//! bound the aliasing of the periodic convolution with the same exponential moments; using
//! the tilt to shorten the period, with the copies kept as extra mass, is this crate's.

use crate::bound::Bound;
use crate::numeric::exponential::exp_non_positive_each;
use crate::numeric::fft_convolution::self_convolve_window;
use crate::numeric::pieces::spread_map;
use crate::numeric::summation::compensated_sum;
use crate::pmf::composition::{chernoff_window, power_infinity_mass, NEGLIGIBLE_SHORTFALL};
use crate::pmf::grid_pmf::{GridPmf, LOSS_LIMIT};
use crate::pmf::tail_moments::{TailMoments, TILTS};
use std::cell::OnceCell;

/// The tilted buffer is used only when it is at most this share of the plain window.
const MAX_SHARE_OF_PLAIN: f64 = 0.8;

/// The share of the plain window a tilted buffer must be predicted within (see
/// [`GridPmf::upper_tail_power_applies`]): the prediction's answer is a Chernoff estimate
/// from above, and the buffer from the true answer, lower, comes out longer or shorter. On
/// DP-SGD σ 1, q 0.01, 10³ steps at grid step 1e-4 it predicted 0.77 where the buffer was
/// 0.83 (declined, after its anchor had been computed for nothing: the engine took 3.3–3.5×
/// the floor of its transforms instead of 2.7×); σ 1.1, q 256/60000, 14,063 steps predicts
/// 0.77 too (0.64 found); the other two benchmarks predict 0.44 and 0.49.
const PREDICTED_SHARE_OF_PLAIN: f64 = 0.7;

/// The copies of mass that land in a tilted power's buffer from `from_loss` up weigh at most
/// this many times the truncation mass (see [`GridPmf::upper_tail_power`]). They only add to
/// δ(ε), by at most that much: for an ε(δ) query (truncation at most 1e-9·δ) at most 1e-7·δ,
/// which moves ε by at most 1e-7·δ / |δ′(ε)|, about 1e-7 / θ nats at the saddle point θ of
/// the answer (σ 0.8, q 0.004, 10⁵ steps: θ ≈ 1.5, 7e-8 nats of 13.07). Each factor of 10
/// shortens the period by ln 10 / θ (1.5 nats there, 7% of the buffer); at 1 (the
/// truncation mass itself) that benchmark's buffer was 22.5 nats long, at 100 19.2.
pub const COPIES_PER_TRUNCATION: f64 = 100.0;

/// The tilts [`shortest_period`] considers, as factors of the table's saddle point: the
/// table's tilts are up to 1.67 apart, and a tilt far from the saddle point leaves the
/// entries near the answer a smaller share of the tilted mass (more round-off relative).
const TILT_RANGE: (f64, f64) = (2.0 / 3.0, 1.5);

/// Bisections of [`shortest_period`]'s search (the range shrinks to 2⁻⁴⁰ of itself).
const PERIOD_BISECTIONS: usize = 40;

/// The tilted power's buffer (see [`GridPmf::upper_tail_power`]).
struct TiltPlan {
    /// The tilt θ (nats⁻¹).
    theta: f64,
    /// The buffer's top index and length (indices of the k-fold sum, from its lowest).
    top: u64,
    len: u64,
    /// The plain window's Chernoff bound on the mass above its top (charged to +∞).
    mass_above: f64,
}

/// Entries untilted per `exp` (the others by a table of `e^{−θhj}`).
const UNTILT_BLOCK: usize = 64;

/// Blocks of [`UNTILT_BLOCK`] entries per piece of the untilting (see
/// [`crate::numeric::pieces`]): at the end of a DP-SGD query's finer upper grid the other
/// thread is often idle and takes half of a long buffer.
const UNTILT_PIECE: usize = 256;

/// Running minima side by side in the tilting's search for its smallest term (see
/// `GridPmf::tilted_for_power`).
const MIN_LANES: usize = 8;

impl GridPmf {
    /// The k-fold self-composition of this upper PMF, nearly as tight as
    /// [`GridPmf::self_compose`]'s at losses from `from_loss` up, from one tilted FFT power
    /// over a shorter buffer (see the module docs), but for at most
    /// [`COPIES_PER_TRUNCATION`]·`tail_mass` of δ. `aim_loss`: where the answer is expected
    /// (the tilt is near the Chernoff saddle point there); `tail_mass`: as for
    /// [`GridPmf::self_compose`], the bound on the mass charged to +∞ (and, times
    /// [`COPIES_PER_TRUNCATION`], on the copies that land from `from_loss` up).
    ///
    /// `None` when it does not apply (a lower PMF, k < 2, a PMF carrying round-off or folds
    /// of an earlier composition, a lattice) or would not be at most 0.8 of the plain
    /// window: the caller composes plainly then.
    ///
    /// # Guarantee
    /// An upper PMF: δ(ε) read from it is at least the true one at every ε. Below
    /// `from_loss` it may be far looser (extra mass, and mass 1 lumped onto its lowest loss,
    /// so its total exceeds 1): meant to be read, not composed further (which stays an
    /// upper bound, but carries that extra mass along).
    pub fn upper_tail_power(
        &self,
        k: u64,
        tail_mass: f64,
        from_loss: f64,
        aim_loss: f64,
    ) -> Option<GridPmf> {
        self.upper_tail_power_sharing(k, tail_mass, from_loss, aim_loss, &OnceCell::new())
    }

    /// [`GridPmf::upper_tail_power`], leaving in `moments` this PMF's tail moments once
    /// computed (`TailMoments::of(&self.probs, self.step)`): a caller that composes plainly
    /// when the tilted power is declined needs them too.
    pub(crate) fn upper_tail_power_sharing(
        &self,
        k: u64,
        tail_mass: f64,
        from_loss: f64,
        aim_loss: f64,
        moments: &OnceCell<TailMoments>,
    ) -> Option<GridPmf> {
        // A PMF short of total mass 1 is made whole first (see `GridPmf::with_restored_mass`),
        // its moments scaled from this PMF's (which `moments` keeps).
        if let Some((restored, scale)) = self.with_restored_mass(k, NEGLIGIBLE_SHORTFALL) {
            let own = moments.get_or_init(|| TailMoments::of(&self.probs, self.step));
            let scaled = OnceCell::from(own.scaled(scale));
            return restored.tail_power_restored(k, tail_mass, from_loss, aim_loss, &scaled);
        }
        self.tail_power_restored(k, tail_mass, from_loss, aim_loss, moments)
    }

    /// The body of [`GridPmf::upper_tail_power_sharing`], on a PMF whose mass is restored.
    fn tail_power_restored(
        &self,
        k: u64,
        tail_mass: f64,
        from_loss: f64,
        aim_loss: f64,
        moments: &OnceCell<TailMoments>,
    ) -> Option<GridPmf> {
        let plan = self.tilt_plan(
            k,
            tail_mass,
            (from_loss, aim_loss),
            MAX_SHARE_OF_PLAIN,
            moments,
        )?;
        let TiltPlan {
            theta,
            top,
            len,
            mass_above,
        } = plan;
        let (step, kf) = (self.step, k as f64);
        let base = self.offset as f64 * kf;
        let (f, m) = (self.finite_mass(), self.infinity_mass);
        let bottom = top + 1 - len;
        let (tilted, log_normalizer) = self.tilted_for_power(theta)?;
        let conv = self_convolve_window(&tilted, k, bottom, len as usize);
        if conv.lattice.is_some() {
            return None;
        }
        // Each entry untilted by e^{k·a − θ·L}, with its error bound added (the entries are
        // then at least the exact buffer's, which is at least the true PMF): the transform's
        // worst-case bound, and relative errors (1 + ε_rel) on the value: the tilted input's
        // (each entry within ρ of pᵢe^{θlᵢ−a}, from the exponents' rounding and the
        // exponentials', see `tilted_for_power`, compounded k times) and the untilting's (its exponent's rounding, and the factor
        // taken as an anchor e^{k·a − θ·L_b} per block times e^{−θhj} from a table).
        let u = f64::EPSILON;
        let largest_exponent = [self.loss(0), self.loss(self.probs.len() - 1)]
            .iter()
            .map(|l| (theta * l).abs())
            .fold(0.0, f64::max);
        let rho = (4.0 * largest_exponent + 2.0 * log_normalizer.abs() + 8.0) * u;
        let k_log_normalizer = kf * log_normalizer;
        let loss_of = |j: u64| (base + j as f64) * step;
        let widest_untilt = (theta * loss_of(top))
            .abs()
            .max((theta * loss_of(bottom)).abs());
        let untilt_rounding = (2.0 * k_log_normalizer.abs() + 4.0 * widest_untilt + 16.0) * u;
        let inflation = 1.0 - (kf * (-rho).ln_1p()).exp_m1() + untilt_rounding;
        let per_entry = conv.entry_bound.max(conv.roundoff_floor);
        let decay: Vec<f64> = (0..UNTILT_BLOCK)
            .map(|j| (-theta * step * j as f64).exp())
            .collect();
        let mut probs = conv.values;
        // In pieces of UNTILT_PIECE blocks that idle threads may take (each entry's
        // arithmetic is the same on any thread).
        let pieces: Vec<(usize, &mut [f64])> = probs
            .chunks_mut(UNTILT_PIECE * UNTILT_BLOCK)
            .enumerate()
            .collect();
        let finite = spread_map(pieces, |(c, piece)| {
            for (b, block) in piece.chunks_mut(UNTILT_BLOCK).enumerate() {
                let first = bottom + ((c * UNTILT_PIECE + b) * UNTILT_BLOCK) as u64;
                let anchor = (k_log_normalizer - theta * loss_of(first)).exp();
                for (value, r) in block.iter_mut().zip(&decay) {
                    *value = (*value * inflation + per_entry) * (anchor * r);
                }
            }
            piece.iter().all(|p| p.is_finite())
        });
        if !finite.iter().all(|&finite| finite) {
            return None;
        }
        // The mass below the buffer, lumped onto its lowest loss (a move up: pessimistic).
        probs[0] += 1.0;
        let stored = power_infinity_mass(f, m, k);
        let infinity_mass = (stored.max(power_infinity_mass(1.0 - m, m, k)) + mass_above).min(1.0);
        let out = GridPmf {
            step,
            offset: self.offset * k as i64 + bottom as i64,
            probs,
            infinity_mass,
            bound: Bound::Upper,
            roundoff_l2: 0.0,
            roundoff_floor: 0.0,
            excess_mass: 0.0,
            folded_top: 0,
            folded_bottom: 0,
            folded_error: 0.0,
            half_offset: false,
            loss_allowance: 0.0,
            entry_errors: None,
            rounding_runs: k as f64 * self.rounding_runs,
        };
        out.check_range().ok()?;
        Some(out)
    }

    /// The largest `θ·lᵢ` over the entries with mass (−∞ when none has): the losses
    /// increase with the index, so for θ > 0 it is the last such entry's and for θ < 0 the
    /// first's, found from that end (a pass over every entry only for θ = 0 or NaN).
    fn largest_tilted_loss(&self, theta: f64) -> f64 {
        let exponent = |i: usize| theta * self.loss(i);
        let with_mass = |&i: &usize| self.probs[i] > 0.0;
        let indices = 0..self.probs.len();
        if theta > 0.0 {
            indices
                .rev()
                .find(with_mass)
                .map_or(f64::NEG_INFINITY, exponent)
        } else if theta < 0.0 {
            indices
                .into_iter()
                .find(with_mass)
                .map_or(f64::NEG_INFINITY, exponent)
        } else {
            indices
                .filter(with_mass)
                .map(exponent)
                .fold(f64::NEG_INFINITY, f64::max)
        }
    }

    /// The PMF tilted by θ for [`GridPmf::upper_tail_power`], `p̃ᵢ = pᵢ e^{θ lᵢ − a}`, and
    /// `a = ln Σ pᵢ e^{θ lᵢ}` as a double (the untilting multiplies by `e^{k·a}` with this
    /// same `a`, so only the entries' rounding matters, not that of `a`); `None` when `a` is
    /// not finite.
    ///
    /// With `s` the largest exponent θlᵢ, the terms `tᵢ = pᵢ e^{θlᵢ − s} ≤ pᵢ` come from the
    /// vectorized exponential of non-positive arguments (within 4 ulps), `a = s + ln Σ tᵢ`,
    /// and `p̃ᵢ = tᵢ · e^{s − a}` (a factor ≥ 1: Σ tᵢ ≤ ‖p‖₁ ≤ 1). Each entry is then within
    /// `(2.5·E + 0.5·|a| + 6)·u` relative of `pᵢ e^{θlᵢ − a}`, E the largest |θlᵢ| and u
    /// = 2⁻⁵²: the loss and its product by θ (E·u), the difference with s (E·u), that of s
    /// and a (`(E + |a|)·u/2`), the two exponentials (4u and u) and two products (u): inside
    /// the ρ of [`GridPmf::upper_tail_power`]. (The per-entry library `exp(θlᵢ − a)` before
    /// took 2 exponentials per entry, a sixth of a DP-SGD query's tilted power at 10⁵ steps.)
    /// Where some term is subnormal (its relative rounding unbounded) each entry is
    /// `pᵢ · exp(θlᵢ − a)` by the library instead, as before.
    fn tilted_for_power(&self, theta: f64) -> Option<(Vec<f64>, f64)> {
        let exponents = |i: usize| theta * self.loss(i);
        let shift = self.largest_tilted_loss(theta);
        // (Entries without mass get e^{−∞} = 0: their exponents may exceed the shift.)
        let mut tilted: Vec<f64> = (0..self.probs.len())
            .map(|i| match self.probs[i] {
                p if p > 0.0 => exponents(i) - shift,
                _ => f64::NEG_INFINITY,
            })
            .collect();
        exp_non_positive_each(&mut tilted);
        // The terms, and the smallest of those of entries with mass (branch-free loops; the
        // minimum in MIN_LANES running minima, exact in any order: one chain of dependent
        // `min` took 0.1 ms of the tilted power of 49,453 entries).
        let mut smallest = [f64::INFINITY; MIN_LANES];
        let mut terms = tilted.chunks_exact_mut(MIN_LANES);
        let mut probs = self.probs.chunks_exact(MIN_LANES);
        for (lane_terms, lane_probs) in (&mut terms).zip(&mut probs) {
            for ((term, &p), least) in lane_terms.iter_mut().zip(lane_probs).zip(&mut smallest) {
                *term *= p;
                *least = least.min(if p > 0.0 { *term } else { f64::INFINITY });
            }
        }
        for (term, &p) in terms.into_remainder().iter_mut().zip(probs.remainder()) {
            *term *= p;
            smallest[0] = smallest[0].min(if p > 0.0 { *term } else { f64::INFINITY });
        }
        let smallest = smallest.into_iter().fold(f64::INFINITY, f64::min);
        let log_normalizer = shift + compensated_sum(&tilted).ln();
        if !log_normalizer.is_finite() {
            return None;
        }
        let terms_normal = smallest >= f64::MIN_POSITIVE;
        if terms_normal {
            let factor = (shift - log_normalizer).exp();
            for term in &mut tilted {
                *term *= factor;
            }
        } else {
            for (i, term) in tilted.iter_mut().enumerate() {
                *term = match self.probs[i] {
                    p if p > 0.0 => p * (exponents(i) - log_normalizer).exp(),
                    _ => 0.0,
                };
            }
        }
        Some((tilted, log_normalizer))
    }

    /// Whether [`GridPmf::upper_tail_power`] with these arguments, `from_loss` and
    /// `aim_loss` estimated, is predicted to tilt (rather than decline): the same test,
    /// without the power, asking a buffer of at most [`PREDICTED_SHARE_OF_PLAIN`] of the
    /// plain window for the estimate's error. `moments` as for
    /// [`GridPmf::upper_tail_power_sharing`].
    pub(crate) fn upper_tail_power_applies(
        &self,
        k: u64,
        tail_mass: f64,
        from_loss: f64,
        aim_loss: f64,
        moments: &OnceCell<TailMoments>,
    ) -> bool {
        let share = PREDICTED_SHARE_OF_PLAIN;
        self.tilt_plan(k, tail_mass, (from_loss, aim_loss), share, moments)
            .is_some()
    }

    /// A Chernoff estimate from above of the answer of an ε(δ) query on this PMF's k-fold
    /// self-composition (its finite part): for every tilt θ > 0,
    ///
    /// ```text
    /// δ(ε) = E[(1 − e^{ε−L})₊] ≤ c(θ)·E[e^{θ(L−ε)}],   c(θ) = max_{x≥0} (1 − e^{−x})e^{−θx}
    ///                                                         = θ^θ / (1 + θ)^{1+θ}
    /// ```
    ///
    /// so the smallest ε at which that bound, at the best tilt of the moments' table, falls
    /// to `delta` has δ(ε) ≤ `delta`. (c(θ) brings the estimate about a nat closer than the
    /// mass above ε alone on DP-SGD σ 1, q 0.01, 10³ steps: 2.35 and 2.89 against 1.83.)
    /// An estimate, for choosing how to compute, not a bound any answer relies on. `None`
    /// when no moment is finite.
    pub(crate) fn chernoff_epsilon(
        &self,
        k: u64,
        delta: f64,
        moments: &OnceCell<TailMoments>,
    ) -> Option<f64> {
        let moments = moments.get_or_init(|| TailMoments::of(&self.probs, self.step));
        let kf = k as f64;
        let index = (0..TILTS)
            .filter(|&t| moments.up[t].is_finite())
            .map(|t| {
                let theta = moments.tilts[t];
                let log_c = theta * theta.ln() - (1.0 + theta) * theta.ln_1p();
                (kf * moments.up[t] + log_c - delta.ln()) / moments.lambdas[t]
            })
            .fold(f64::INFINITY, f64::min);
        let estimate = kf * self.loss(0) + index * self.step;
        estimate.is_finite().then_some(estimate)
    }

    /// The buffer [`GridPmf::upper_tail_power`] would tilt into, or `None` when it does not
    /// apply or would not pay (longer than `max_share` of the plain window).
    fn tilt_plan(
        &self,
        k: u64,
        tail_mass: f64,
        (from_loss, aim_loss): (f64, f64),
        max_share: f64,
        moments: &OnceCell<TailMoments>,
    ) -> Option<TiltPlan> {
        let plain_input = self.entry_errors.is_none()
            && self.roundoff_l2 == 0.0
            && self.roundoff_floor == 0.0
            && self.excess_mass == 0.0
            && self.folded_bottom == 0
            && self.folded_top == 0
            && self.folded_error == 0.0
            && self.loss_allowance == 0.0
            && !self.half_offset;
        let m = self.infinity_mass;
        if self.bound != Bound::Upper
            || k < 2
            || !plain_input
            || !(0.0..1.0).contains(&m)
            || !(from_loss.is_finite() && aim_loss.is_finite())
            || !(tail_mass > 0.0 && tail_mass < 1.0)
            || self.probs.len() < 2
        {
            return None;
        }
        let f = self.finite_mass();
        if !(f > 0.0 && f + m <= 1.0 + 1e-9) {
            return None;
        }
        let (step, kf) = (self.step, k as f64);
        let full_top = k.checked_mul(self.probs.len() as u64 - 1)?;
        // Index of the k-fold sum (relative to its lowest, k·offset) of a loss.
        let base = self.offset as f64 * kf;
        let index_of = |loss: f64| loss / step - base;
        let cap = |loss: f64, round: fn(f64) -> f64| -> u64 {
            round(index_of(loss)).clamp(0.0, full_top as f64) as u64
        };
        let caps = (cap(-LOSS_LIMIT, f64::ceil), cap(LOSS_LIMIT, f64::floor));
        let moments = moments.get_or_init(|| TailMoments::of(&self.probs, step));
        let plain = chernoff_window(moments, k, tail_mass, full_top, caps);
        let top = plain.top;
        let plain_len = (top - plain.bottom + 1) as f64;
        let from = index_of(from_loss).floor().clamp(0.0, top as f64);
        // The tilt: near the table's Chernoff saddle point at the aimed loss, where the
        // period is shortest (see `shortest_period`).
        let aim = index_of(aim_loss);
        let (saddle, _) = (0..TILTS)
            .filter(|&t| moments.up[t].is_finite())
            .map(|t| (t, kf * moments.up[t] - moments.lambdas[t] * aim))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        let copies = (COPIES_PER_TRUNCATION * tail_mass).min(0.5);
        let (lambda, period) = shortest_period(moments, kf, from, copies, moments.lambdas[saddle]);
        let period = period.max(top as f64 - from + 1.0).ceil();
        let theta = lambda / step;
        // (NaN or infinite periods fail too.)
        let worth_it = period <= max_share * plain_len && theta.is_finite();
        worth_it.then_some(TiltPlan {
            theta,
            top,
            len: period as u64,
            mass_above: plain.mass_above,
        })
    }
}

/// The period N (indices) a power tilted by λ (per index) needs so that the copies landing
/// from index `from` up weigh at most `copies` in all: at most half from below (each damped
/// by e^{−λN} at least, of mass at most 1: N ≥ −ln(copies/2)/λ) and half from above
/// (Σ_r e^{λrN}·P(S ≥ from + rN) ≤ 2·e^{k·up_s − λ_s·from − (λ_s − λ)·N} for any steeper
/// table tilt s, the ratio of the geometric series at most ½). ∞ when no table tilt is
/// steeper with a finite moment.
fn period_for(moments: &TailMoments, kf: f64, from: f64, copies: f64, lambda: f64) -> f64 {
    let log_half = (0.5 * copies).ln();
    let from_below = -log_half / lambda;
    let from_above = (0..TILTS)
        .filter(|&s| moments.lambdas[s] > lambda && moments.up[s].is_finite())
        .map(|s| {
            let gap = moments.lambdas[s] - lambda;
            let needed =
                (kf * moments.up[s] - moments.lambdas[s] * from - (log_half - 2f64.ln())) / gap;
            needed.max(2f64.ln() / gap)
        })
        .fold(f64::INFINITY, f64::min);
    from_below.max(from_above)
}

/// The tilt λ (per index) within [`TILT_RANGE`] of `saddle` whose [`period_for`] is shortest,
/// and that period. The copies from below need less the steeper the tilt, those from above
/// more (each of its terms grows with λ): the shortest is where the two meet, found by
/// bisection, or at an end of the range. Never longer than `saddle`'s own period.
fn shortest_period(
    moments: &TailMoments,
    kf: f64,
    from: f64,
    copies: f64,
    saddle: f64,
) -> (f64, f64) {
    let period = |lambda: f64| period_for(moments, kf, from, copies, lambda);
    let log_half = (0.5 * copies).ln();
    let from_below = |lambda: f64| -log_half / lambda;
    let (mut low, mut high) = (saddle * TILT_RANGE.0, saddle * TILT_RANGE.1);
    // Below the meeting point the copies from below decide the period, above it those from
    // above.
    for _ in 0..PERIOD_BISECTIONS {
        let middle = 0.5 * (low + high);
        if period(middle) > from_below(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    [saddle, low, high]
        .into_iter()
        .map(|lambda| (lambda, period(lambda)))
        .filter(|(_, p)| !p.is_nan())
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((saddle, f64::INFINITY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::binomial::Binomial;

    /// The largest tilted loss found from one end is the largest over every entry with
    /// mass, bit for bit: θ of both signs and 0, masses with zeros at both ends and inside,
    /// losses below and above 0, and a PMF without mass (−∞).
    #[test]
    fn the_largest_tilted_loss_is_the_largest_over_the_entries_with_mass() {
        let probs = vec![0.0, 0.0, 0.1, 0.0, 0.3, 0.2, 0.0, 0.4, 0.0, 0.0];
        for offset in [-7, -4, 0, 3] {
            let pmf = GridPmf::new(0.37, offset, probs.clone(), 0.0, Bound::Upper).expect("valid");
            for theta in [-30.0, -1.5, -0.0, 0.0, 0.05, 1.5, 1000.0] {
                let every: f64 = (0..probs.len())
                    .filter(|&i| probs[i] > 0.0)
                    .map(|i| theta * pmf.loss(i))
                    .fold(f64::NEG_INFINITY, f64::max);
                let found = pmf.largest_tilted_loss(theta);
                assert_eq!(
                    found.to_bits(),
                    every.to_bits(),
                    "offset {offset}, θ {theta}"
                );
            }
        }
        let empty = GridPmf::new(0.1, -3, vec![0.0; 5], 0.0, Bound::Upper).expect("valid");
        for theta in [-1.0, 0.0, 1.0] {
            assert_eq!(empty.largest_tilted_loss(theta), f64::NEG_INFINITY);
        }
    }

    /// δ(ε) of the k-fold sum of a binomial PMF (a binomial of k·m trials) on the grid of
    /// step `step` from offset `k·offset`: the exact hockey-stick sum in log space.
    fn exact_delta(trials: u64, rate: f64, offset: i64, step: f64, epsilon: f64) -> f64 {
        let composed = Binomial::new(trials, rate).expect("valid");
        (0..=trials)
            .map(|j| ((offset + j as i64) as f64 * step, j))
            .filter(|&(loss, _)| loss > epsilon)
            .map(|(loss, j)| composed.ln_pmf(j).exp() * -(epsilon - loss).exp_m1())
            .sum()
    }

    fn binomial_pmf(trials: u64, rate: f64, step: f64, offset: i64) -> GridPmf {
        let single = Binomial::new(trials, rate).expect("valid");
        let probs = (0..=trials).map(|i| single.ln_pmf(i).exp()).collect();
        GridPmf::new(step, offset, probs, 0.0, Bound::Upper).expect("valid")
    }

    /// REMOVE's upper PMF of one DP-SGD step (σ 0.8, q 0.004) on the grid `step`, truncated
    /// at 1e-14, its tails merged within `merge_budget`.
    fn dp_sgd_step(step: f64, merge_budget: f64) -> GridPmf {
        use crate::mechanism::{Gaussian, PoissonSubsampled};
        use crate::pld::{PrivacyLossDistribution, Symmetry};
        let step_mechanism =
            PoissonSubsampled::new(Gaussian::new(0.8, 1.0).expect("σ"), 0.004).expect("q");
        PrivacyLossDistribution::with_merged_tails(
            &step_mechanism,
            Symmetry::Asymmetric,
            step,
            1e-14,
            Bound::Upper,
            merge_budget,
        )
        .expect("discretizes")
        .remove()
        .clone()
    }

    /// The Chernoff estimate of an ε(δ) answer is at least the exact answer of the k-fold
    /// binomial (δ there at most the one asked, summed exactly) and within a few standard
    /// deviations of it (δ there at least a millionth of the one asked), for k from 1 to
    /// 10⁴ and δ from 1e-3 to 1e-12.
    #[test]
    fn chernoff_estimate_is_at_least_the_exact_answer() {
        let (trials, rate, step, offset) = (40, 0.3, 0.01, -12);
        let single = binomial_pmf(trials, rate, step, offset);
        for k in [1u64, 10, 300, 10_000] {
            for delta in [1e-3, 1e-6, 1e-12] {
                let estimate = single
                    .chernoff_epsilon(k, delta, &OnceCell::new())
                    .expect("finite moments");
                let at_estimate = exact_delta(trials * k, rate, offset * k as i64, step, estimate);
                assert!(
                    at_estimate <= delta,
                    "k {k}, δ {delta}: {at_estimate} at {estimate}"
                );
                assert!(
                    at_estimate >= 1e-6 * delta,
                    "k {k}, δ {delta}: {at_estimate} at {estimate}"
                );
            }
        }
    }

    /// A binomial PMF composed 5000 times is a binomial of 5000 times the trials, whose
    /// δ(ε) is summed exactly: the tilted power's δ is at least that at every ε (also far
    /// below `from_loss`, where it is loose), and from `from_loss` up within the
    /// floating-point allowance of it plus the copies' budget, down to δ below 1e-10; its
    /// buffer is at most 0.8 of the plain window.
    #[test]
    fn binomial_power_bounds_the_exact_tail_and_matches_it_from_the_cut_up() {
        let (trials, rate, step, offset, k) = (40, 0.3, 0.01, -12, 5000u64);
        let single = binomial_pmf(trials, rate, step, offset);
        // Composed: mean loss 0, standard deviation 2.05 nats.
        let (from_loss, aim_loss) = (4.0, 6.0);
        let tail = single
            .upper_tail_power(k, 1e-14, from_loss, aim_loss)
            .expect("applies");
        let plain = single.self_compose(k, 1e-14).expect("composes");
        assert!(
            (tail.len() as f64) <= 0.8 * plain.len() as f64,
            "{} vs {}",
            tail.len(),
            plain.len()
        );
        let composed_offset = offset * k as i64;
        for epsilon in [
            -6.0, -2.0, 0.0, 2.0, 3.9, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 14.0,
        ] {
            let exact = exact_delta(trials * k, rate, composed_offset, step, epsilon);
            let got = tail.delta_for_epsilon(epsilon);
            assert!(
                got >= exact * (1.0 - 1e-12),
                "ε {epsilon}: {got:e} < exact {exact:e}"
            );
            if epsilon >= from_loss {
                // (The copies landing there may add up to COPIES_PER_TRUNCATION times the
                // truncation mass, 1e-14.)
                let copies = COPIES_PER_TRUNCATION * 1e-14;
                assert!(
                    got <= exact * (1.0 + 3e-9) + copies,
                    "ε {epsilon}: {got:e} ≫ exact {exact:e}"
                );
                assert!(
                    got <= plain.delta_for_epsilon(epsilon) + copies,
                    "ε {epsilon}: looser than the plain power"
                );
            }
        }
        let far = exact_delta(trials * k, rate, composed_offset, step, 14.0);
        assert!(far < 1e-10, "{far:e}");
    }

    /// A Poisson-sampled Gaussian step (σ 0.8, q 0.004: the DP-SGD benchmark of 10⁵ steps,
    /// on a grid of 2e-3 nats) composed 10⁵ times, in two thirds of the plain window: from
    /// the cut up, the tilted power's δ agrees with the plain power's (itself checked by the
    /// soundness suite) within what the plain power charges for round-off plus the copies'
    /// budget ([`COPIES_PER_TRUNCATION`] times the truncation mass), and is never above it by
    /// more than that budget.
    #[test]
    fn sampled_gaussian_power_agrees_with_the_plain_power_from_the_cut_up() {
        let single = dp_sgd_step(2e-3, 0.0);
        let k = 100_000;
        let (from_loss, aim_loss) = (12.0, 13.0);
        let plain = single.self_compose(k, 1e-14).expect("composes");
        let tail = single
            .upper_tail_power(k, 1e-14, from_loss, aim_loss)
            .expect("applies");
        assert!(
            (tail.len() as f64) <= 0.7 * plain.len() as f64,
            "{} {}",
            tail.len(),
            plain.len()
        );
        for epsilon in [12.0, 12.5, 13.0, 14.0, 15.0, 16.0] {
            let (got, reference) = (
                tail.delta_for_epsilon(epsilon),
                plain.delta_for_epsilon(epsilon),
            );
            let copies = COPIES_PER_TRUNCATION * 1e-14;
            let allowance = plain.charged_at(epsilon) + 2e-9 * reference + copies;
            assert!(
                (got - reference).abs() <= allowance,
                "ε {epsilon}: tilted {got:e}, plain {reference:e} (allowance {allowance:e})"
            );
            assert!(
                got <= reference + copies,
                "ε {epsilon}: {got:e} > {reference:e}"
            );
            assert!(reference > 1e-12, "ε {epsilon}: {reference:e}");
        }
    }

    /// The tilted input of the power: every entry within its stated bound
    /// `(2.5·E + 0.5·|a| + 6)·u` of `pᵢ e^{θlᵢ − a}` as the library's exponential gives it
    /// (itself within `(1.5·E + 0.5·|a| + 1.5)·u`), for tilts up to exponents of several
    /// hundred; zero where p is; the normalizer that of the terms. And where some term is
    /// subnormal, each entry is the library's, bit for bit.
    #[test]
    fn tilted_entries_are_within_their_bound() {
        let u = f64::EPSILON;
        for (pmf, thetas) in [
            (binomial_pmf(40, 0.3, 0.01, -12), vec![0.5, 3.0, 40.0]),
            (binomial_pmf(400, 0.02, 0.5, -100), vec![0.1, 1.0, 3.0]),
        ] {
            for theta in thetas {
                let (tilted, a) = pmf.tilted_for_power(theta).expect("finite");
                let largest = [pmf.loss(0), pmf.loss(pmf.len() - 1)]
                    .iter()
                    .map(|l| (theta * l).abs())
                    .fold(0.0, f64::max);
                let bound = (4.0 * largest + a.abs() + 7.5) * u;
                let mut normal_terms = true;
                for (i, (&value, &p)) in tilted.iter().zip(&pmf.probs).enumerate() {
                    let library = p * (theta * pmf.loss(i) - a).exp();
                    if p == 0.0 {
                        assert_eq!(value, 0.0);
                    } else if library >= f64::MIN_POSITIVE {
                        let relative = (value - library).abs() / library;
                        assert!(relative <= bound, "θ {theta} entry {i}: {relative:e}");
                    } else {
                        normal_terms = false;
                    }
                }
                if !normal_terms {
                    // (Tiny entries: the library's path, bit for bit.)
                    for (i, (&value, &p)) in tilted.iter().zip(&pmf.probs).enumerate() {
                        let library = p * (theta * pmf.loss(i) - a).exp();
                        assert_eq!(value.to_bits(), library.to_bits(), "θ {theta} entry {i}");
                    }
                }
                let total: f64 = tilted.iter().sum();
                assert!((total - 1.0).abs() < 1e-12, "θ {theta}: {total}");
            }
        }
    }

    /// The tilted power is the same bit for bit on a pool of two threads (its transforms
    /// and its untilting in pieces) as on the caller's thread, for a buffer of several
    /// untilting pieces.
    #[test]
    fn the_tilted_power_is_the_same_on_any_thread() {
        let single = dp_sgd_step(5e-4, 1e-15);
        let power = || {
            single
                .upper_tail_power(100_000, 1e-14, 12.0, 13.0)
                .expect("applies")
        };
        let here = power();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool of two threads");
        let pooled = pool.install(power);
        assert!(
            here.len() > 2 * UNTILT_PIECE * UNTILT_BLOCK,
            "{}",
            here.len()
        );
        let bits = |pmf: &GridPmf| -> Vec<u64> { pmf.probs.iter().map(|p| p.to_bits()).collect() };
        assert_eq!(bits(&here), bits(&pooled));
        assert_eq!(here.infinity_mass.to_bits(), pooled.infinity_mass.to_bits());
    }

    /// Declined because the answer is read from far below the mean (the buffer would be the
    /// whole window), the tilted power leaves the moments it computed, which are this PMF's,
    /// and the plain power given them is the plain power.
    #[test]
    fn a_declined_power_leaves_its_moments_for_the_plain_one() {
        let single = binomial_pmf(40, 0.3, 0.01, -12);
        let moments = OnceCell::new();
        let declined = single.upper_tail_power_sharing(50, 1e-14, -10.0, -5.0, &moments);
        assert!(declined.is_none());
        let shared = moments.get().expect("the moments were computed");
        let own = TailMoments::of(&single.probs, single.step);
        assert_eq!((shared.up, shared.down), (own.up, own.down));
        assert_eq!(shared.lambdas, own.lambdas);
        assert_eq!(
            single.self_compose_tilted_with(50, 1e-14, 0, Some(shared)),
            single.self_compose_tilted(50, 1e-14, 0)
        );
    }

    /// Lower PMFs, single runs and PMFs carrying an earlier composition's round-off are
    /// left to the plain power.
    #[test]
    fn declines_what_it_cannot_bound() {
        let single = binomial_pmf(40, 0.3, 0.01, -12);
        assert!(single.upper_tail_power(1, 1e-14, 4.0, 6.0).is_none());
        let lower =
            GridPmf::new(0.01, -12, single.probs.clone(), 0.0, Bound::Lower).expect("valid");
        assert!(lower.upper_tail_power(5000, 1e-14, 4.0, 6.0).is_none());
        let composed = single.self_compose(10, 1e-14).expect("composes");
        assert!(composed.upper_tail_power(500, 1e-14, 4.0, 6.0).is_none());
        for bad in [f64::NAN, f64::INFINITY] {
            assert!(single.upper_tail_power(5000, 1e-14, bad, 6.0).is_none());
            assert!(single.upper_tail_power(5000, 1e-14, 4.0, bad).is_none());
        }
    }

    /// The tilt of the shortest period, against a scan of 4001 tilts across the range: no
    /// scanned tilt's period is shorter (beyond the bisection's last step), none is shorter
    /// than the saddle point's, and the period is where the copies from below and from
    /// above meet, or at an end of the range. On the moments of the DP-SGD step of 10⁵
    /// steps and of a binomial, at several starts and budgets.
    #[test]
    fn the_shortest_period_is_the_shortest_of_a_scan() {
        let cases = [
            (dp_sgd_step(2e-3, 0.0), 100_000.0, [12.0, 13.0, 20.0]),
            (binomial_pmf(40, 0.3, 0.01, -12), 5000.0, [4.0, 6.0, 9.0]),
        ];
        for (pmf, kf, from_losses) in cases {
            let moments = TailMoments::of(&pmf.probs, pmf.step);
            let base = pmf.offset as f64 * kf;
            for from_loss in from_losses {
                let from = from_loss / pmf.step - base;
                for copies in [1e-14, 1e-12, 1e-6] {
                    for saddle in moments.lambdas.iter().copied().filter(|l| *l < 0.5) {
                        let (lambda, period) = shortest_period(&moments, kf, from, copies, saddle);
                        let at = |l: f64| period_for(&moments, kf, from, copies, l);
                        assert!(period <= at(saddle), "from {from_loss}: saddle {saddle}");
                        assert_eq!(period.to_bits(), at(lambda).to_bits());
                        let (low, high) = (saddle * TILT_RANGE.0, saddle * TILT_RANGE.1);
                        assert!((low..=high).contains(&lambda) || lambda == saddle);
                        let scanned = (0..=4000)
                            .map(|i| at(low + (high - low) * i as f64 / 4000.0))
                            .fold(f64::INFINITY, f64::min);
                        assert!(
                            period <= scanned * (1.0 + 1e-9),
                            "from {from_loss}, copies {copies:e}, saddle {saddle}: \
                             {period} against {scanned}"
                        );
                    }
                }
            }
        }
    }
}
