//! The exact k-fold composition of a pair with a few outcomes: a multinomial over its atoms.
//!
//! A pair with m finite-loss atoms `(lⱼ, pⱼ, qⱼ)` composed k times has the atoms
//! ```text
//! loss Σ nⱼ lⱼ,   P = C(n)·Π pⱼ^{nⱼ},   Q = C(n)·Π qⱼ^{nⱼ},   C(n) = k!/Π nⱼ!,   Σ nⱼ = k,
//! ```
//! one per count vector n: C(k+m−1, m−1) of them. Rounding the composed atoms onto the grid
//! once costs one rounding's error; rounding the single pair and composing on the grid costs
//! k of them, and for the lower bound of atoms off the grid that error is first order in the
//! step (an isolated atom can only be moved down to the grid point below it): Poisson-sampled
//! randomized response composed 200 times gave a bracket 15% wide at a step of 5e-4 nats.
//!
//! Two-atom pairs (Poisson-sampled binary randomized response or `eps_delta`) have a
//! binomial composition, computed around its modes by a ratio recurrence for counts far
//! beyond the multinomial's, with the far tails kept as bounded masses
//! ([`LossAtoms::binomial_power`]).
//!
//! Multinomial masses are computed in log space, `ln C(n)` from a compensated table of `ln i!`, so every
//! atom's P- and Q-mass is within a few ulps of its logarithm's magnitude (≲ 1e-12 relative
//! for the counts accepted here); masses below the smallest positive double underflow to 0:
//! their P-mass (at most one such double per atom) is charged to loss +∞ in the result, so no
//! upper bound loses it.

use crate::discretize::loss_atoms::{LossAtom, LossAtoms};
use crate::numeric::integer_search::first_holding;
use crate::numeric::summation::{neumaier_sum, NeumaierSum};

/// Largest count composed exactly: `ln k!` and the products stay within ~1e-12 relative.
pub const MAX_EXACT_COUNT: u64 = 10_000;

impl LossAtoms {
    /// The largest k for which [`LossAtoms::power`] composes this pair exactly within
    /// `max_atoms` count vectors (at most [`MAX_EXACT_COUNT`]); `None` when it composes no
    /// count exactly (tails, or no or more than four finite atoms).
    pub fn largest_exact_count(&self, max_atoms: usize) -> Option<u64> {
        let m = self.atoms().len();
        if m == 0 || m > 4 || self.has_tails() {
            return None;
        }
        let fits = |k: u64| count_vectors(k, m).is_some_and(|c| c <= max_atoms as u64);
        if !fits(1) {
            return None;
        }
        // fits(1) holds and fits is monotone in k: the last k up to MAX_EXACT_COUNT that
        // fits is one before the first that does not (MAX_EXACT_COUNT + 1 stands for "none").
        Some(first_holding(1, MAX_EXACT_COUNT + 1, |k| !fits(k)) - 1)
    }

    /// The exact k-fold composition of this pair as atoms, when it has no tails, at most
    /// four finite atoms, and at most `max_atoms` count vectors (`C(k+m−1, m−1)`); `None`
    /// otherwise (or for k = 0 or k > [`MAX_EXACT_COUNT`]).
    ///
    /// Infinite losses compose as runs: P-mass at +∞ is `1 − (1 − m_∞)^k`, Q-mass at −∞
    /// `1 − (1 − m_{−∞})^k` (computed as `−expm1(k·ln1p(−m))`).
    ///
    /// # Guarantee
    /// The composed pair's exact PLD up to rounding (a few ulps of each mass's logarithm),
    /// with the P-mass of underflowed atoms moved to +∞.
    pub fn power(&self, k: u64, max_atoms: usize) -> Option<LossAtoms> {
        let atoms = self.atoms();
        let m = atoms.len();
        if k == 0 || k > MAX_EXACT_COUNT || m == 0 || m > 4 || self.has_tails() {
            return None;
        }
        if count_vectors(k, m)? > max_atoms as u64 {
            return None;
        }
        let k_index = k as usize;
        // ln i! for i ≤ k, each a compensated running sum of ln 2, …, ln i.
        let mut ln_factorial = Vec::with_capacity(k_index + 1);
        let mut sum = NeumaierSum::default();
        ln_factorial.push(0.0);
        for i in 1..=k_index {
            sum.add((i as f64).ln());
            ln_factorial.push(sum.value());
        }
        let ln_p: Vec<f64> = atoms.iter().map(|a| a.p.ln()).collect();
        let ln_q: Vec<f64> = atoms.iter().map(|a| a.q.ln()).collect();
        let mut out = Vec::new();
        let mut underflowed = Vec::new();
        let mut counts = vec![0usize; m];
        enumerate(&mut counts, 0, k_index, &mut |n: &[usize]| {
            let ln_c = ln_factorial[k_index] - n.iter().map(|&c| ln_factorial[c]).sum::<f64>();
            let dot = |logs: &[f64]| -> f64 {
                n.iter()
                    .zip(logs)
                    .filter(|(&c, _)| c > 0)
                    .map(|(&c, &l)| c as f64 * l)
                    .sum::<f64>()
            };
            let loss = n
                .iter()
                .zip(atoms)
                .filter(|(&c, _)| c > 0)
                .map(|(&c, a)| c as f64 * a.loss)
                .sum::<f64>();
            let (p, q) =
                consistent_masses((ln_c + dot(&ln_p)).exp(), (ln_c + dot(&ln_q)).exp(), loss);
            if p > 0.0 {
                // Q may have underflowed (q = 0): the atom keeps its finite loss all the
                // same. Charging its P-mass to +∞ instead would be right for an upper bound
                // only: the lower PMF built from these atoms would then read δ ≈ 1 at every
                // ε (a pair run 40 times, losses up to 845 nats, gave δ(2000) ≥ 0.9999 where
                // the truth is 0).
                out.push(LossAtom { loss, p, q });
            } else if loss > 0.0 {
                // Both underflowed above loss 0: masses below 1e-308 (Q ≤ P there), kept as
                // a bounded top tail, which the upper rounding charges to +∞ and the lower
                // one drops. (As P-mass at +∞ they lifted a lower δ above the truth: 2,700
                // such atoms of a sampled randomized response run 5.8e8 times gave
                // δ(0.159) ≥ 1.04e-297 where every loss is below 2.1e-5 and δ is 0.)
                underflowed.push(f64::MIN_POSITIVE);
            }
        });
        let underflowed = neumaier_sum(underflowed.iter().copied());
        Some(
            LossAtoms::from_atoms(
                out,
                runs_at_infinity(self.p_infinity(), k),
                runs_at_infinity(self.q_neg_infinity(), k),
            )
            .with_tails((underflowed, underflowed), (0.0, 0.0)),
        )
    }
}

impl LossAtoms {
    /// For the lower bound only: the exact composition of `runs` = 2^j runs of this pair, its
    /// tails left out, by j squarings of its finite atoms, for the
    /// largest j with 2^j ≤ `count` whose squarings each form at most `max_products`
    /// products; with `runs`. `None` when not even one squaring fits (or `count` < 2).
    ///
    /// Why: the lower rounding can move an atom onto the grid only by merging it with part
    /// of a neighbour (a post-processing, see [`LossAtoms::lower_pmf`]), which costs about
    /// its mass × its distance to the grid point × the distance to that neighbour. Where the
    /// atoms lie far apart on the grid's scale (a Poisson-sampled discrete Gaussian at small
    /// rates: atoms about q/σ² apart, grid steps of 1e-5), that is a first-order error per
    /// run, and composed k times it left the lower end far behind the upper one (σ 1.629,
    /// q 7.71e-4, 611 runs, δ 1e-10: [0.074500, 0.075686] at a step of 1e-5 nats). The atoms
    /// of 4 runs lie about a thousand times closer together: rounded once per group of runs,
    /// the same grid gave 0.075660.
    ///
    /// A squaring pairs atoms i ≤ j: loss lᵢ + lⱼ, masses pᵢpⱼ (twice that for i ≠ j, the
    /// two orders being distinct outcomes of equal loss); atoms of bit-for-bit equal loss are
    /// merged.
    ///
    /// # Guarantee
    /// Every atom is a set of outcomes of the `runs`-fold pair, with masses at most their true
    /// values: each product's and sum's rounding is covered by scaling the larger mass down by
    /// `1 − (n + 4)·2⁻⁵²` (n the terms summed), the other derived from it
    /// and the loss (`consistent_masses`). Leaving outcomes out only lowers every δ, in this
    /// pair and in its compositions, so every δ read from the result is at most the truth.
    /// It is no upper bound: the tails are gone.
    pub fn lower_power_by_squaring(
        &self,
        count: u64,
        max_products: usize,
    ) -> Option<(LossAtoms, u64)> {
        let products = |n: usize| n.checked_mul(n + 1).map(|twice| twice / 2);
        let mut atoms = self.atoms().to_vec();
        let mut runs = 1u64;
        while runs.checked_mul(2).is_some_and(|next| next <= count)
            && !atoms.is_empty()
            && products(atoms.len()).is_some_and(|n| n <= max_products)
        {
            atoms = squared(&atoms);
            runs *= 2;
        }
        // A run at an infinite loss makes the group's: 1 − (1 − m)^runs, rounded down.
        let lowered = |m: f64| runs_at_infinity(m, runs) * (1.0 - 16.0 * f64::EPSILON);
        (runs >= 2).then(|| {
            let infinite = (lowered(self.p_infinity()), lowered(self.q_neg_infinity()));
            (LossAtoms::from_atoms(atoms, infinite.0, infinite.1), runs)
        })
    }

    /// For the lower bound only: these atoms without their extremes, the largest losses
    /// while their P-mass sums to at most `mass` and the smallest while their Q-mass does
    /// (the infinite masses kept, any tail regions left out).
    ///
    /// Why: a group of runs ([`LossAtoms::lower_power_by_squaring`]) spans its runs' losses
    /// that many times over, out to combinations of masses far below any truncation, and a
    /// fine grid could not hold it: every run was then rounded on its own, and the lower end
    /// fell back to a first-order error per run (a Poisson-sampled discrete Gaussian, σ 1,
    /// q 0.01, 1000 runs, δ(1.83): groups of four runs spanning 24 nats did not fit a grid
    /// of 5.4e-6 nats, and its lower end dropped from 1.00094e-5 to 9.9798e-6).
    ///
    /// # Guarantee
    /// Leaving outcomes out only lowers every δ, here and in every composition: every δ read
    /// from the result is at most the truth. It is no upper bound.
    pub fn lower_trimmed(&self, mass: f64) -> LossAtoms {
        // (`atoms()` is sorted by increasing loss.)
        let atoms = self.atoms();
        let (mut low, mut high) = (0, atoms.len());
        let mut dropped = 0.0;
        while high > 0 && dropped + atoms[high - 1].p <= mass {
            dropped += atoms[high - 1].p;
            high -= 1;
        }
        dropped = 0.0;
        while low < high && dropped + atoms[low].q <= mass {
            dropped += atoms[low].q;
            low += 1;
        }
        LossAtoms::from_atoms(
            atoms[low..high].to_vec(),
            self.p_infinity(),
            self.q_neg_infinity(),
        )
    }
}

/// The atoms of two runs of a pair whose atoms are `atoms` (see
/// [`LossAtoms::lower_power_by_squaring`]), sorted by loss, masses rounded down.
fn squared(atoms: &[LossAtom]) -> Vec<LossAtom> {
    let mut pairs = Vec::with_capacity(atoms.len() * (atoms.len() + 1) / 2);
    for (i, a) in atoms.iter().enumerate() {
        for (j, b) in atoms.iter().enumerate().skip(i) {
            // (×2 is exact: the two orders of a distinct pair.)
            let twice = if i == j { 1.0 } else { 2.0 };
            pairs.push(LossAtom {
                loss: a.loss + b.loss,
                p: twice * a.p * b.p,
                q: twice * a.q * b.q,
            });
        }
    }
    pairs.sort_unstable_by(|x, y| x.loss.total_cmp(&y.loss));
    let mut out: Vec<LossAtom> = Vec::with_capacity(pairs.len());
    let mut start = 0;
    while start < pairs.len() {
        let loss = pairs[start].loss;
        let end = start + pairs[start..].partition_point(|x| x.loss == loss);
        let (p, q) = pairs[start..end]
            .iter()
            .fold((0.0, 0.0), |(p, q), x| (p + x.p, q + x.q));
        let terms = end - start;
        start = end;
        // The larger mass (P above loss 0, Q below) is kept and the other derived from it
        // (`consistent_masses`); an atom whose larger mass underflowed is left out (deriving
        // it from the other would overflow at losses of hundreds of nats; leaving it out is
        // safe for a lower bound, and it held less than 1e-308).
        let larger = if loss >= 0.0 { p } else { q };
        if larger.is_nan() || larger <= 0.0 {
            continue;
        }
        // Each term is within one rounding of its product, and the sum within n − 1 more.
        let lowered = 1.0 - (terms as f64 + 4.0) * f64::EPSILON;
        let (p, q) = if loss >= 0.0 {
            (p * lowered, q)
        } else {
            (p, q * lowered)
        };
        let (p, q) = consistent_masses(p, q, loss);
        if p > 0.0 && q > 0.0 && p.is_finite() && q.is_finite() {
            out.push(LossAtom { loss, p, q });
        }
    }
    out
}

/// An atom's masses made to agree with its loss: the larger of the two (P above loss 0, Q
/// below) is kept and the other is derived from it, `Q = P·e^{−loss}` or `P = Q·e^{loss}`.
///
/// Computed separately, the two masses of a composed atom carry the rounding of the pair's
/// masses k times over: `ln(P/Q)` then drifts from the loss, which is the sum of the pair's
/// (accurately computed) losses, by up to k ulps (1.3e-9 nats for 1.2e7 runs of a sampled
/// pure-DP pair, enough to lift a lower δ above the truth; the lower rounding merges atoms by
/// their masses). The mass kept is accurate to its computation's relative error; a derived
/// mass that underflows is kept at the smallest positive double, so the atom keeps its loss
/// in both directions (the overstatement, ≤ 5e-324 per atom, is far inside the δ allowance
/// of 1e-9·δ for any δ ≥ 1e-300).
fn consistent_masses(p: f64, q: f64, loss: f64) -> (f64, f64) {
    let tiny = f64::from_bits(1);
    if p <= 0.0 && q <= 0.0 {
        (p, q)
    } else if loss >= 0.0 && p > 0.0 || q <= 0.0 {
        (p, (p * (-loss).exp()).max(tiny))
    } else {
        ((q * loss.exp()).max(tiny), q)
    }
}

/// `F^k` for a pair whose finite atoms hold `finite` of the mass and its infinite loss
/// `infinite`: `(1 − infinite)^k` when the two add up to 1 within a few ulps (a normalized
/// pair, whose sum of rounded masses is off by those ulps: raised to the k-th power they would
/// become `k` ulps, and P- and Q-masses would disagree with the atoms' losses by as much),
/// `finite^k` otherwise.
fn runs_within(finite: f64, infinite: f64, k: u64) -> f64 {
    let log_finite = if (finite + infinite - 1.0).abs() <= 8.0 * f64::EPSILON {
        (-infinite).ln_1p()
    } else {
        (finite - 1.0).ln_1p()
    };
    (k as f64 * log_finite).exp()
}

/// `1 − (1 − m)^k`, as `−expm1(k·ln1p(−m))`: the probability that one of k runs lands on an
/// outcome of mass m (an infinite loss), without cancellation for tiny m or huge k.
fn runs_at_infinity(m: f64, k: u64) -> f64 {
    if m > 0.0 {
        -(k as f64 * (-m).ln_1p()).exp_m1()
    } else {
        0.0
    }
}

/// `C(k+m−1, m−1)`, the number of count vectors of m atoms summing to k; `None` on overflow.
fn count_vectors(k: u64, m: usize) -> Option<u64> {
    let mut c: u64 = 1;
    for i in 1..m as u64 {
        c = c.checked_mul(k + i)? / i;
    }
    Some(c)
}

/// Call `visit` with every vector of non-negative counts from index `at` on summing to `left`.
fn enumerate(counts: &mut [usize], at: usize, left: usize, visit: &mut impl FnMut(&[usize])) {
    if at + 1 == counts.len() {
        counts[at] = left;
        visit(counts);
        return;
    }
    for c in 0..=left {
        counts[at] = c;
        enumerate(counts, at + 1, left - c, visit);
    }
}

/// Most binomial terms computed on either side of a mode (beyond them the pair is left to
/// the grid).
const MAX_BINOMIAL_TERMS: usize = 1 << 20;

/// The terms of Binomial(k, s) around its mode down to `1e-306` of the mode's weight,
/// normalized: `(first index, masses, bound below, bound above)`, the bounds on the mass of
/// the terms left out on each side. The ratio recurrence
/// `w_{i+1} = w_i·(k−i)/(i+1)·s/(1−s)` accumulates a relative error of about one ulp per
/// term, and normalizing by the compensated sum removes the need for `ln C(k, i)` (whose
/// rounding, at k = 10⁸, would be ~1e-8 relative). `None` for more than
/// [`MAX_BINOMIAL_TERMS`] terms per side.
fn binomial_terms(k: u64, s: f64) -> Option<(u64, Vec<f64>, f64, f64)> {
    const FLOOR: f64 = 1e-306;
    if s <= 0.0 {
        return Some((0, vec![1.0], 0.0, 0.0));
    }
    if s >= 1.0 {
        return Some((k, vec![1.0], 0.0, 0.0));
    }
    let kf = k as f64;
    let mode = (((kf + 1.0) * s).floor() as u64).min(k);
    let odds = s / (1.0 - s);
    // w_{i+1}/w_i going up from i, and w_{i−1}/w_i going down from i: both shrink away from
    // the mode (the binomial is log-concave).
    let up_ratio = |i: u64| (kf - i as f64) / (i as f64 + 1.0) * odds;
    let down_ratio = |i: u64| i as f64 / (kf - i as f64 + 1.0) / odds;
    let mut up = vec![1.0_f64];
    let mut i = mode;
    let mut above = 0.0;
    while i < k {
        let next = up[up.len() - 1] * up_ratio(i);
        if next < FLOOR {
            above = tail_beyond(next, i + 1, true, |j| if j < k { up_ratio(j) } else { 0.0 });
            break;
        }
        if up.len() > MAX_BINOMIAL_TERMS {
            return None;
        }
        up.push(next);
        i += 1;
    }
    let mut down = Vec::new();
    let (mut i, mut w) = (mode, 1.0_f64);
    let mut below = 0.0;
    while i > 0 {
        w *= down_ratio(i);
        if w < FLOOR {
            below = tail_beyond(w, i - 1, false, |j| if j > 0 { down_ratio(j) } else { 0.0 });
            break;
        }
        if down.len() > MAX_BINOMIAL_TERMS {
            return None;
        }
        down.push(w);
        i -= 1;
    }
    let first = mode - down.len() as u64;
    let mut terms: Vec<f64> = down.into_iter().rev().collect();
    terms.extend(up);
    let total = neumaier_sum(terms.iter().copied());
    for t in &mut terms {
        *t /= total;
    }
    Some((first, terms, below / total, above / total))
}

/// An upper bound on `t + t·ρ(j) + t·ρ(j)ρ(j') + …`, the terms from `t` (at index `j`) on,
/// going up (`j' = j + 1`) or down, each the last times `ratio(index)` (the ratio from that
/// index to the next one out), where the ratios shrink step by step: summed term by
/// term while they stay above half, then closed by the geometric series of the last ratio.
/// Doubled, plus 1e-320, for the rounding of terms near and below the smallest normal double;
/// terms that underflow to 0 are bounded by 2.5e-324 each.
fn tail_beyond(t: f64, j: u64, upward: bool, ratio: impl Fn(u64) -> f64) -> f64 {
    // Terms that underflow to 0 are below 2.5e-324 each, and there are fewer than 2^53.
    const UNDERFLOWED: f64 = 2.5e-324 * 9.007_199_254_740_992e15;
    let (mut sum, mut term, mut index) = (0.0, t, j);
    for _ in 0..100_000 {
        if term <= 0.0 {
            return 2.0 * sum + UNDERFLOWED + 1e-320;
        }
        let r = ratio(index);
        if r < 0.5 {
            sum += term / (1.0 - r);
            return 2.0 * sum + 1e-320;
        }
        sum += term;
        term *= r;
        index = if upward {
            index.saturating_add(1)
        } else {
            index.saturating_sub(1)
        };
    }
    // Slowly shrinking ratios all the way: every remaining term is at most the current one
    // (the ratios are below 1 here), and there are fewer than 2^53 of them.
    2.0 * (sum + term * 9.007_199_254_740_992e15) + 1e-320
}

/// The indices `[start, end]` of a binomial's normalized `terms` (from index `first`, scaled
/// by `scale`) outside which at most `budget` of its mass lies on each side.
fn kept_range(first: u64, terms: &[f64], scale: f64, budget: f64) -> (u64, u64) {
    let (mut below, mut start) = (0.0, 0);
    while start + 1 < terms.len() && below + terms[start] * scale <= budget {
        below += terms[start] * scale;
        start += 1;
    }
    let (mut above, mut end) = (0.0, terms.len() - 1);
    while end > start && above + terms[end] * scale <= budget {
        above += terms[end] * scale;
        end -= 1;
    }
    (first + start as u64, first + end as u64)
}

impl LossAtoms {
    /// The k-fold composition of a pair with exactly two finite atoms, its binomial masses
    /// computed around their modes (see `binomial_terms`), for counts far beyond
    /// [`MAX_EXACT_COUNT`]. Composed atom i (i runs of the higher-loss atom) has loss
    /// `k·l₀ + i·(l₁ − l₀)`; atoms whose P- and Q-mass both lie in a tail of at most
    /// `tail_mass / 2000` (each, at each end) are left out as bounded tails (see
    /// [`LossAtoms::with_tails`]: the upper rounding charges the top one to +∞ and moves the
    /// bottom one up, the lower rounding drops them). `None` when the pair has tails or not
    /// two finite atoms, or more than `max_atoms` atoms would be kept.
    ///
    /// # Guarantee
    /// The composed pair's PLD up to rounding (≲ 1e-12 relative per mass for up to 10⁸
    /// runs), with tail masses bounded from above (including a geometric bound on the terms not
    /// computed).
    pub fn binomial_power(&self, k: u64, tail_mass: f64, max_atoms: usize) -> Option<LossAtoms> {
        let atoms = self.atoms();
        if atoms.len() != 2 || self.has_tails() || k == 0 || tail_mass.is_nan() || tail_mass <= 0.0
        {
            return None;
        }
        let (a, b) = (atoms[0], atoms[1]);
        let (p_finite, q_finite) = (a.p + b.p, a.q + b.q);
        let (first_p, terms_p, below_p, above_p) = binomial_terms(k, b.p / p_finite)?;
        let (first_q, terms_q, below_q, above_q) = binomial_terms(k, b.q / q_finite)?;
        // F^k: the mass of all-finite runs, F = p_a + p_b (Q: q_a + q_b).
        let scale_p = runs_within(p_finite, self.p_infinity(), k);
        let scale_q = runs_within(q_finite, self.q_neg_infinity(), k);
        let mass = |first: u64, terms: &[f64], scale: f64, i: u64| -> f64 {
            i.checked_sub(first)
                .and_then(|j| terms.get(j as usize))
                .map_or(0.0, |&t| t * scale)
        };
        // The range kept: where either distribution has more than a two-thousandth of the
        // tail mass on either side; each end's trimmed mass is then at most that, for P and
        // for Q. (Far below the tail mass, which at δ = 1e-300 is δ itself: the trimmed
        // masses go to +∞ in the upper bound.)
        let budget = 5e-4 * tail_mass;
        let (start_p, end_p) = kept_range(first_p, &terms_p, scale_p, budget);
        let (start_q, end_q) = kept_range(first_q, &terms_q, scale_q, budget);
        let (start, end) = (start_p.min(start_q), end_p.max(end_q));
        if end - start >= max_atoms as u64 {
            return None;
        }
        let outside = |first: u64, terms: &[f64], scale: f64, below: bool| -> f64 {
            let masses = terms.iter().enumerate().filter(|&(j, _)| {
                let i = first + j as u64;
                if below {
                    i < start
                } else {
                    i > end
                }
            });
            neumaier_sum(masses.map(|(_, &t)| t * scale))
        };
        let (bottom_p, bottom_q) = (
            outside(first_p, &terms_p, scale_p, true),
            outside(first_q, &terms_q, scale_q, true),
        );
        let (top_p, top_q) = (
            outside(first_p, &terms_p, scale_p, false),
            outside(first_q, &terms_q, scale_q, false),
        );
        let step = b.loss - a.loss;
        let base = k as f64 * a.loss;
        let mut out = Vec::with_capacity((end - start + 1) as usize);
        for i in start..=end {
            let (p, q) = (
                mass(first_p, &terms_p, scale_p, i),
                mass(first_q, &terms_q, scale_q, i),
            );
            let loss = base + i as f64 * step;
            // Where one binomial was not computed (beyond its 1e-306 floor), its mass follows
            // from the other's by the atom's exact loss: Q = P·e^{−loss}. Where that
            // underflows it is kept at the smallest positive double, so the atom keeps its
            // loss in both directions (the overstatement, ≤ 5e-324 per atom, is far inside
            // the δ allowance of 1e-9·δ for any δ ≥ 1e-300).
            let (p, q) = consistent_masses(p, q, loss);
            if p > 0.0 {
                out.push(LossAtom { loss, p, q });
            }
        }
        // Tails: trimmed masses and bounds on the masses beyond the computed terms.
        let top = (top_p + above_p * scale_p, top_q + above_q * scale_q);
        let bottom = (bottom_p + below_p * scale_p, bottom_q + below_q * scale_q);
        Some(
            LossAtoms::from_atoms(
                out,
                runs_at_infinity(self.p_infinity(), k),
                runs_at_infinity(self.q_neg_infinity(), k),
            )
            .with_tails(top, bottom),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// δ(ε) of `runs` runs of the pair (p, q) by brute force over every tuple of outcomes
    /// (products of the pair's own masses, no atoms, no losses).
    fn brute_force_delta(p: &[f64], q: &[f64], runs: u32, epsilon: f64) -> f64 {
        let n = p.len();
        let mut terms = Vec::new();
        for mut index in 0..n.pow(runs) {
            let (mut pp, mut qq) = (1.0, 1.0);
            for _ in 0..runs {
                pp *= p[index % n];
                qq *= q[index % n];
                index /= n;
            }
            terms.push((pp - epsilon.exp() * qq).max(0.0));
        }
        neumaier_sum(terms)
    }

    /// Squarings compose the pair exactly: every δ of the group (both directions, with mass
    /// at ±∞ losses) matches the brute-force δ of that many runs to 1e-12 and never exceeds
    /// it by more than the summation's rounding; the runs are the largest power of two that
    /// the count and the product budget allow.
    #[test]
    fn squarings_compose_the_runs_exactly_and_round_masses_down() {
        // Seven outcomes: five finite losses off any lattice, one with Q = 0 (+∞), one with
        // P = 0 (−∞).
        let p = [0.31, 0.22, 0.17, 0.149, 0.1, 0.0, 0.051];
        let q = [0.27, 0.25, 0.13, 0.2, 0.07, 0.08, 0.0];
        let pair = LossAtoms::from_pair(&p, &q);
        let swapped = pair.swapped();
        for (count, budget, runs) in [
            (4, 1 << 19, 4),
            (7, 1 << 19, 4),
            (3, 1 << 19, 2),
            (8, 15, 2),
        ] {
            let (group, got) = pair.lower_power_by_squaring(count, budget).unwrap();
            assert_eq!(got, runs, "count {count}, budget {budget}");
            let (group_add, _) = swapped.lower_power_by_squaring(count, budget).unwrap();
            for epsilon in [-2.0, -0.3, 0.0, 0.05, 0.4, 1.3, 3.0] {
                for (ours, truth) in [
                    (
                        group.hockey_stick(epsilon),
                        brute_force_delta(&p, &q, runs as u32, epsilon),
                    ),
                    (
                        group_add.hockey_stick(epsilon),
                        brute_force_delta(&q, &p, runs as u32, epsilon),
                    ),
                ] {
                    assert!(
                        ours <= truth * (1.0 + 1e-13) && ours >= truth * (1.0 - 1e-12),
                        "count {count} ε {epsilon}: {ours} against {truth}"
                    );
                }
            }
        }
        // A pair whose heavy atom's Q-mass underflows (loss 992 nats, Q = e^{−992}·0.93 stored
        // as the smallest double): squared nine times, the atom that stays there in every run
        // keeps its P-mass 0.93^512 (its Q-mass is derived, never overflowing from it), the
        // atoms whose P-mass underflows below loss 0 are left out, and no mass is NaN or
        // infinite. (It once made the group's masses NaN, and a sampled discrete Gaussian's
        // lower δ −∞.)
        let heavy = LossAtoms::from_atoms(
            vec![
                LossAtom {
                    loss: 992.0,
                    p: 0.93,
                    q: f64::from_bits(1),
                },
                LossAtom::from_masses(0.07, 1.0),
            ],
            0.0,
            0.0,
        );
        let (group, runs) = heavy.lower_power_by_squaring(512, 1 << 19).unwrap();
        assert_eq!(runs, 512);
        assert!(group
            .atoms()
            .iter()
            .all(|a| a.p.is_finite() && a.q.is_finite() && a.p > 0.0 && a.q > 0.0));
        let top = group.atoms().last().unwrap();
        assert!(top.loss == 992.0 * 512.0 && (top.p / 0.93_f64.powi(512) - 1.0).abs() < 1e-12);
        // δ(0) is the P-mass at positive losses: every tuple with more heavy runs than
        // light ones, all but the ones short of representable masses.
        let delta = group.hockey_stick(0.0);
        assert!(delta > 0.99 && delta <= 1.0, "{delta}");
        // No squaring fits: one run, or a budget below one squaring's products (5 finite
        // atoms: 15 pairs).
        assert!(pair.lower_power_by_squaring(1, 1 << 19).is_none());
        assert!(pair.lower_power_by_squaring(4, 14).is_none());
    }

    /// The largest exact count is the last k whose count vectors fit (checked against the
    /// next one by `power` itself), capped at MAX_EXACT_COUNT; none for pairs with tails.
    #[test]
    fn largest_exact_count_is_the_last_count_power_accepts() {
        let pairs: [(&[f64], &[f64]); 3] = [
            (&[0.6, 0.4], &[0.4, 0.6]),
            (&[0.5, 0.3, 0.2], &[0.4, 0.35, 0.25]),
            (&[0.4, 0.3, 0.2, 0.1], &[0.1, 0.2, 0.3, 0.4]),
        ];
        for max_atoms in [3000, 1 << 16] {
            for (p, q) in pairs {
                let atoms = LossAtoms::from_pair(p, q);
                let k = atoms.largest_exact_count(max_atoms).unwrap();
                assert!(atoms.power(k, max_atoms).is_some(), "{p:?}: {k}");
                if k < MAX_EXACT_COUNT {
                    assert!(atoms.power(k + 1, max_atoms).is_none(), "{p:?}: {k}");
                }
            }
        }
        let three = LossAtoms::from_pair(pairs[1].0, pairs[1].1);
        assert_eq!(three.largest_exact_count(1 << 16), Some(360));
        let two = LossAtoms::from_pair(pairs[0].0, pairs[0].1);
        assert_eq!(two.largest_exact_count(1 << 16), Some(MAX_EXACT_COUNT));
        let tailed = three.with_tails((1e-9, 1e-12), (1e-12, 1e-9));
        assert_eq!(tailed.largest_exact_count(1 << 16), None);
    }

    /// Two atoms composed k times: the binomial, checked against a direct product of the
    /// pair with itself, and the exact hockey stick against a brute-force sum.
    #[test]
    fn two_atoms_compose_to_the_binomial() {
        let pair = LossAtoms::from_pair(&[0.7, 0.3], &[0.4, 0.6]);
        let k = 12;
        let composed = pair.power(k, 1000).unwrap();
        assert_eq!(composed.atoms().len(), k as usize + 1);
        let total_p: f64 = composed.atoms().iter().map(|a| a.p).sum();
        let total_q: f64 = composed.atoms().iter().map(|a| a.q).sum();
        assert!((total_p - 1.0).abs() < 1e-14 && (total_q - 1.0).abs() < 1e-14);
        // δ(ε) by brute force over the 2^12 outcome sequences.
        for epsilon in [0.0_f64, 0.5, 1.5, 3.0] {
            let mut delta = 0.0_f64;
            for bits in 0u32..(1 << k) {
                let (mut p, mut q) = (1.0_f64, 1.0_f64);
                for i in 0..k {
                    if bits >> i & 1 == 1 {
                        p *= 0.7;
                        q *= 0.4;
                    } else {
                        p *= 0.3;
                        q *= 0.6;
                    }
                }
                delta += (p - epsilon.exp() * q).max(0.0);
            }
            let exact = composed.hockey_stick(epsilon);
            assert!(
                (exact - delta).abs() <= 1e-13 * delta.max(1e-300),
                "ε {epsilon}: {exact} vs {delta}"
            );
        }
    }

    /// Three atoms with infinite masses: totals and the +∞ run probability.
    #[test]
    fn infinite_masses_compose_as_runs() {
        let pair = LossAtoms::from_pair(&[0.45, 0.3, 0.2, 0.05, 0.0], &[0.3, 0.3, 0.3, 0.0, 0.1]);
        let k = 30;
        let composed = pair.power(k, 10_000).unwrap();
        let expected_inf = 1.0 - 0.95f64.powi(k as i32);
        assert!((composed.p_infinity() - expected_inf).abs() < 1e-14);
        let finite_p: f64 = composed.atoms().iter().map(|a| a.p).sum();
        assert!((finite_p + composed.p_infinity() - 1.0).abs() < 1e-13);
        let finite_q: f64 = composed.atoms().iter().map(|a| a.q).sum();
        let expected_neg_inf = 1.0 - 0.9f64.powi(k as i32);
        assert!((composed.q_neg_infinity() - expected_neg_inf).abs() < 1e-14);
        assert!((finite_q + composed.q_neg_infinity() - 1.0).abs() < 1e-13);
    }

    /// The binomial path agrees with the multinomial one where both apply, and at a million
    /// runs its masses agree with log-gamma binomial probabilities and sum to 1.
    #[test]
    fn binomial_power_matches_the_multinomial_and_log_gamma() {
        let pair = LossAtoms::from_pair(&[0.6, 0.4], &[0.45, 0.55]);
        let exact = pair.power(500, 1000).unwrap();
        let binomial = pair.binomial_power(500, 1e-300, 1000).unwrap();
        for epsilon in [0.0, 1.0, 3.0, 6.0] {
            let (a, b) = (exact.hockey_stick(epsilon), binomial.hockey_stick(epsilon));
            assert!((a - b).abs() <= 1e-12 * a, "ε {epsilon}: {a} vs {b}");
        }
        let k = 1_000_000u64;
        let pair = LossAtoms::from_pair(&[0.4, 0.6], &[0.41, 0.59]);
        let big = pair.binomial_power(k, 1e-15, 1 << 16).unwrap();
        let total: f64 = big.atoms().iter().map(|a| a.p).sum();
        assert!((total - 1.0).abs() < 1e-13, "{total}");
        // P-mass of the atom with i high-loss runs: C(k, i)·0.6^i·0.4^(k−i), by lgamma.
        let l0 = (0.4_f64 / 0.41).ln();
        let l1 = (0.6_f64 / 0.59).ln();
        for atom in big.atoms().iter().step_by(97) {
            let i = ((atom.loss - k as f64 * l0) / (l1 - l0)).round();
            let ln_mass = libm::lgamma(k as f64 + 1.0)
                - libm::lgamma(i + 1.0)
                - libm::lgamma(k as f64 - i + 1.0)
                + i * 0.6_f64.ln()
                + (k as f64 - i) * 0.4_f64.ln();
            let reference = ln_mass.exp();
            assert!(
                (atom.p - reference).abs() <= 1e-7 * reference,
                "i {i}: {} vs {reference}",
                atom.p
            );
        }
    }

    /// Composed atoms' masses agree with their losses (`P = e^loss·Q`) even where the pair's
    /// rounded masses do not add up to 1 exactly: the pure 0.434-DP pair Poisson-sampled at
    /// 3.8e-6 (P-masses 1 − 1.1e-16 in floats) run 11,718,284 times was off by 1.3e-9 nats at
    /// every atom (its P-masses scaled by (1 − 1.1e-16)^k), which lifted a lower δ above the
    /// truth. And the masses stay those of the binomial: the P-mass of the atom at the mode
    /// against a log-gamma evaluation with the sampled pair's exact parameters.
    #[test]
    fn composed_masses_agree_with_the_losses() {
        let (epsilon, rate, k) = (0.43405138679836136_f64, 3.813448638606014e-6, 11_718_284);
        let pair = crate::mechanism::discrete::eps_delta(epsilon, 0.0).poisson_subsampled(rate);
        let (p_sum, q_sum) = pair
            .atoms()
            .iter()
            .fold((0.0, 0.0), |(p, q), a| (p + a.p, q + a.q));
        assert!(
            p_sum != 1.0 || q_sum != 1.0,
            "the case must have rounded sums"
        );
        let check = |composed: &LossAtoms, limit: f64| {
            // (Masses that underflow are clamped to the smallest double instead.)
            for atom in composed.atoms().iter().filter(|a| a.p.min(a.q) > 1e-300) {
                let drift = atom.p.ln() - atom.q.ln() - atom.loss;
                assert!(drift.abs() <= limit, "{atom:?}: ln(P/Q) − loss = {drift:e}");
            }
        };
        let composed = pair.binomial_power(k, 1e-20, 1 << 16).unwrap();
        check(&composed, 1e-13);
        check(&composed.swapped(), 1e-13);
        // The mode's P-mass: i high-loss runs, s = P(high) = (1 − q)·e^{−ε}/(1 + e^{−ε}) + q/(1 + e^{−ε}).
        let e = (-epsilon).exp();
        let s = ((1.0 - rate) * e + rate) / (1.0 + e);
        let (l0, l1) = (pair.atoms()[0].loss, pair.atoms()[1].loss);
        let mode = composed
            .atoms()
            .iter()
            .max_by(|a, b| a.p.total_cmp(&b.p))
            .unwrap();
        let i = ((mode.loss - k as f64 * l0) / (l1 - l0)).round();
        let kf = k as f64;
        let ln_mass = libm::lgamma(kf + 1.0) - libm::lgamma(i + 1.0) - libm::lgamma(kf - i + 1.0)
            + i * s.ln()
            + (kf - i) * (-s).ln_1p();
        // lgamma at 1.2e7 carries ~1e-8 relative rounding.
        assert!((mode.p / ln_mass.exp() - 1.0).abs() < 1e-7, "{mode:?}");
        // The multinomial path: three atoms whose masses add up to 1 − 1 ulp, 3000 runs.
        let pair = LossAtoms::from_pair(&[0.1, 0.2, 0.7 - 1e-16], &[0.3, 0.3, 0.4]);
        let composed = pair.power(3000, 1 << 23).unwrap();
        check(&composed, 1e-12);
    }

    #[test]
    fn too_many_count_vectors_or_atoms_is_none() {
        let pair = LossAtoms::from_pair(&[0.5, 0.3, 0.2], &[0.3, 0.3, 0.4]);
        assert!(pair.power(1000, 1000).is_none()); // C(1002, 2) = 501501
        assert!(pair.power(0, 1000).is_none());
        let five = LossAtoms::from_pair(&[0.2; 5], &[0.1, 0.2, 0.2, 0.2, 0.3]);
        assert!(five.power(2, 1000).is_none());
    }

    /// Trimming drops the largest losses up to `mass` of P and the smallest up to `mass`
    /// of Q, nothing else: every δ(ε) (brute force over the four runs) is at least the
    /// trimmed pair's, and by at most the P-mass dropped; the span narrows.
    #[test]
    fn trimming_drops_only_the_extremes_and_lowers_delta() {
        // A rare outcome of loss ln 100 and one of loss ln 0.1.
        let p = [1e-3, 0.5, 0.4989, 1e-4];
        let q = [1e-5, 0.5, 0.49899, 1e-3];
        let (grouped, runs) = LossAtoms::from_pair(&p, &q)
            .lower_power_by_squaring(4, 1 << 10)
            .unwrap();
        assert_eq!(runs, 4);
        let mass = 1e-6;
        let trimmed = grouped.lower_trimmed(mass);
        let span = |a: &LossAtoms| {
            let losses = a.atoms().iter().map(|x| x.loss);
            losses.clone().fold(f64::NEG_INFINITY, f64::max) - losses.fold(f64::INFINITY, f64::min)
        };
        assert!(trimmed.atoms().len() < grouped.atoms().len());
        assert!(span(&trimmed) < span(&grouped));
        let dropped_p: f64 = grouped.atoms().iter().map(|a| a.p).sum::<f64>()
            - trimmed.atoms().iter().map(|a| a.p).sum::<f64>();
        let dropped_q: f64 = grouped.atoms().iter().map(|a| a.q).sum::<f64>()
            - trimmed.atoms().iter().map(|a| a.q).sum::<f64>();
        assert!(dropped_p <= 2.0 * mass + 1e-15 && dropped_q <= 2.0 * mass + 1e-15);
        for epsilon in [-2.0, -0.5, 0.0, 0.3, 1.0, 3.0, 6.0] {
            let exact = brute_force_delta(&p, &q, 4, epsilon);
            let lower = trimmed.hockey_stick(epsilon);
            assert!(
                lower <= exact * (1.0 + 1e-12) && lower >= exact - dropped_p - 1e-12,
                "ε {epsilon}: trimmed {lower:e}, exact {exact:e}"
            );
        }
    }
}
