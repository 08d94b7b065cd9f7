//! A lower bound for one epoch of shuffled batches: the law of the epoch's largest output
//! under two neighbouring datasets (the test of Chua et al., "How private are DP-SGD
//! implementations?", ICML 2024, §4).
//!
//! **The pair.** Shuffling cuts the data into t batches of fixed size every epoch, so each
//! record lands in exactly one batch, uniformly at random. Let one record contribute `+Δ`
//! and every other record `−Δ` (all steps ask the same linear query). In the neighbouring
//! dataset the record contributes `a·Δ` instead (a = 0 when it is zeroed out, a = −1 when
//! it is replaced). Subtracting the known `−(batch size)·Δ` from every noisy batch sum, the
//! epoch's t outputs are, in units of the noise σ,
//!
//! `P = (1/t) Σ_j N(μ_P e_j, I)` and `Q = (1/t) Σ_j N(μ_Q e_j, I)`,
//!
//! with `μ_P = 2Δ/σ` and `μ_Q = (1 + a)Δ/σ`. This is an exact pair of output laws, so its
//! hockey-stick divergence in either direction is at most the mechanism's.
//!
//! **The statistic.** `M = max_j y_j` has `Pr[M ≤ c] = Φ(c − μ)·Φ(c)^{t−1}` under the mixture
//! of shift μ. Reporting only which of a set of intervals holds M is a post-processing, so
//! the finite pair of interval masses has divergence at most the pair's at every ε, in both
//! directions, and so has its composition over epochs (the datasets stay fixed, each epoch
//! is shuffled afresh). The intervals cover the whole line, the outer two unbounded: nothing
//! is truncated.
//!
//! **Floating point.** Interval masses are differences of `F` (lower half) or of `1 − F`
//! (upper half), in log space, with relative error far below [`MASS_SLACK`]; the atoms keep P
//! shrunk and Q grown by that much (Q shrunk and P grown for the swapped direction), so the
//! computed divergence stays below the exact interval pair's.
//!
//! **Guarantee:** lower bound, both directions.

use crate::bound::Bound;
use crate::discretize::loss_atoms::{LossAtom, LossAtoms};
use crate::error::{Error, Result};
use crate::numeric::normal::log_cdf;
use crate::pld::PrivacyLossDistribution;
use crate::pmf::grid_pmf::LOSS_LIMIT;

/// Relative margin taken off P-masses and added to Q-masses (see the module notes).
pub const MASS_SLACK: f64 = 1e-9;

/// Most intervals the range of M is cut into (coarser intervals lose tightness only).
pub const MAX_INTERVALS: usize = 200_000;

/// ln of the mass left in each outer interval when choosing the range (it stays an atom).
const OUTER_LOG_MASS: f64 = -60.0;

/// The mixture law of M: shift `mu` (in noise units) on one of `steps` coordinates.
#[derive(Debug, Clone, Copy)]
struct MaxLaw {
    mu: f64,
    others: f64,
}

impl MaxLaw {
    fn new(mu: f64, steps: u64) -> MaxLaw {
        MaxLaw {
            mu,
            others: (steps - 1) as f64,
        }
    }

    /// `ln Pr[M ≤ c] = ln Φ(c − μ) + (t − 1)·ln Φ(c)`.
    fn log_cdf(&self, c: f64) -> f64 {
        let rest = if self.others == 0.0 {
            0.0
        } else {
            self.others * log_cdf(c)
        };
        log_cdf(c - self.mu) + rest
    }

    /// `ln Pr[M > c]`.
    fn log_sf(&self, c: f64) -> f64 {
        (-(self.log_cdf(c).exp_m1())).ln()
    }

    /// `ln Pr[a < M ≤ b]` for `a < b` (either may be infinite).
    fn log_mass(&self, a: f64, b: f64) -> f64 {
        let (la, lb) = (self.log_cdf(a), self.log_cdf(b));
        if lb <= -std::f64::consts::LN_2 {
            // Lower half: F(b)·(1 − F(a)/F(b)).
            lb + (-(la - lb).exp_m1()).ln()
        } else {
            // Upper half: S(a)·(1 − S(b)/S(a)) with S = 1 − F.
            let (sa, sb) = (self.log_sf(a), self.log_sf(b));
            if sb == f64::NEG_INFINITY {
                sa
            } else {
                sa + (-(sb - sa).exp_m1()).ln()
            }
        }
    }
}

/// The smallest c (by bisection, to 1e-9) with `f(c) ≥ target`, f increasing on [lo, hi].
fn solve_increasing(f: impl Fn(f64) -> f64, target: f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..200 {
        if hi - lo < 1e-9 {
            break;
        }
        let mid = 0.5 * (lo + hi);
        if f(mid) >= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The atoms of the interval pair of M: REMOVE direction `(P, Q)` when `swapped` is false,
/// `(Q, P)` when true, with the masses moved by [`MASS_SLACK`] in the safe direction.
fn interval_atoms(p: MaxLaw, q: MaxLaw, edges: &[f64], swapped: bool) -> LossAtoms {
    let (first, second) = if swapped { (q, p) } else { (p, q) };
    let shrink = (1.0 - MASS_SLACK).ln();
    let grow = (1.0 + MASS_SLACK).ln();
    let mut atoms = Vec::with_capacity(edges.len() + 1);
    let bounds = std::iter::once(f64::NEG_INFINITY)
        .chain(edges.iter().copied())
        .chain(std::iter::once(f64::INFINITY))
        .collect::<Vec<_>>();
    for w in bounds.windows(2) {
        let lp = first.log_mass(w[0], w[1]) + shrink;
        let lq = second.log_mass(w[0], w[1]) + grow;
        if lp.is_nan() || lq.is_nan() || lp == f64::NEG_INFINITY {
            continue;
        }
        // Both masses are positive (every interval has positive mass under both mixtures):
        // a loss beyond the grid's range (Q's log-mass underflowed to −∞, or is merely far
        // below P's) is moved down to the range's top, Q raised to match. Moving a loss down
        // only lowers δ: still a lower bound, and never an infinite loss that is not there.
        let loss = (lp - lq).min(LOSS_LIMIT);
        atoms.push(LossAtom {
            loss,
            p: lp.exp(),
            q: (lp - loss).exp(),
        });
    }
    LossAtoms::from_atoms(atoms, 0.0, 0.0)
}

/// One epoch's lower-bound PLD from the largest of `steps` outputs, under mixtures of shifts
/// `mu_p` (dataset D) and `mu_q` (its neighbour), both in units of the noise σ and
/// `mu_p > mu_q ≥ 0`, on the grid of step `grid_step`.
///
/// # Guarantee
/// Lower bound on the pair's δ(ε) in both directions (see the module notes).
///
/// # Errors
/// [`Error::InvalidParameter`] naming `steps_per_epoch`, `shift` or `grid_step` when out of
/// range; the grid's errors when the losses span too many grid points.
pub fn max_statistic_pld(
    mu_p: f64,
    mu_q: f64,
    steps: u64,
    grid_step: f64,
) -> Result<PrivacyLossDistribution> {
    if steps == 0 {
        return Err(Error::invalid("steps_per_epoch", 0, "at least 1"));
    }
    if !(mu_q >= 0.0 && mu_p > mu_q && mu_p.is_finite()) {
        return Err(Error::invalid(
            "shift",
            mu_p,
            "finite and above the neighbour's shift, itself ≥ 0",
        ));
    }
    if !(grid_step > 0.0 && grid_step.is_finite()) {
        return Err(Error::invalid(
            "grid_step",
            grid_step,
            "a finite number > 0",
        ));
    }
    let (p, q) = (MaxLaw::new(mu_p, steps), MaxLaw::new(mu_q, steps));
    // Below c_lo both laws have at most e^−60 (Q is the smaller shift, so the larger CDF);
    // above c_hi both at most e^−60 (P the larger shift, so the larger tail).
    let lo = solve_increasing(|c| q.log_cdf(c), OUTER_LOG_MASS, -60.0, mu_p + 60.0);
    let hi = solve_increasing(|c| -p.log_sf(c), -OUTER_LOG_MASS, lo, mu_p + 60.0);
    // The loss of the two laws moves by about (μ_P − μ_Q) per unit of c: intervals of
    // grid_step/(μ_P − μ_Q) keep the interval pair about as fine as the grid.
    let width = grid_step / (mu_p - mu_q);
    let intervals = (((hi - lo) / width).ceil() as usize).clamp(16, MAX_INTERVALS);
    let h = (hi - lo) / intervals as f64;
    let edges: Vec<f64> = (0..=intervals).map(|i| lo + h * i as f64).collect();
    let remove = interval_atoms(p, q, &edges, false).lower_pmf(grid_step)?;
    let add = interval_atoms(p, q, &edges, true).lower_pmf(grid_step)?;
    debug_assert_eq!(remove.bound(), Bound::Lower);
    PrivacyLossDistribution::from_pmfs(remove, Some(add))
}

/// `Pr_P[M > c] − e^ε·Pr_Q[M > c]`: the divergence the threshold test "M > c" reaches (the
/// quantity Chua et al. maximise over c). Exposed for tests and reports.
pub fn threshold_test(mu_p: f64, mu_q: f64, steps: u64, c: f64, epsilon: f64) -> f64 {
    let (p, q) = (MaxLaw::new(mu_p, steps), MaxLaw::new(mu_q, steps));
    p.log_sf(c).exp() - (epsilon + q.log_sf(c)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::normal::{cdf, sf};

    #[test]
    fn one_step_is_the_gaussian_pair() {
        // t = 1: M is the single output, N(μ_P, 1) against N(μ_Q, 1).
        let law = MaxLaw::new(1.5, 1);
        for c in [-3.0, 0.0, 1.5, 4.0, 9.0] {
            let exact = cdf(c - 1.5);
            assert!((law.log_cdf(c).exp() - exact).abs() <= 1e-15 * exact.max(1e-300));
            let tail = sf(c - 1.5);
            assert!((law.log_sf(c).exp() - tail).abs() <= 1e-9 * tail);
        }
    }

    #[test]
    fn interval_masses_sum_to_one_and_match_differences() {
        for &(mu, t) in &[(2.0, 10u64), (5.7, 1000), (0.5, 1_000_000_000_000)] {
            let law = MaxLaw::new(mu, t);
            let edges: Vec<f64> = (0..=400).map(|i| -8.0 + 0.05 * i as f64).collect();
            let mut total = law.log_mass(f64::NEG_INFINITY, edges[0]).exp();
            for w in edges.windows(2) {
                let m = law.log_mass(w[0], w[1]).exp();
                // Against the plain difference of CDFs where that is accurate.
                let plain = law.log_cdf(w[1]).exp() - law.log_cdf(w[0]).exp();
                if plain > 1e-6 {
                    assert!((m - plain).abs() <= 1e-9 * plain, "{mu} {t} {w:?}");
                }
                total += m;
            }
            total += law.log_mass(*edges.last().unwrap(), f64::INFINITY).exp();
            assert!((total - 1.0).abs() < 1e-12, "{mu} {t}: {total}");
        }
    }

    #[test]
    fn the_pld_is_at_least_every_threshold_test_and_at_most_the_unshuffled_gaussian() {
        // Lower bound: at least the best threshold on the interval edges' scale (the
        // intervals refine every threshold up to one interval width), and at most the pair
        // without shuffling (N(μ_P) vs N(μ_Q), the t = 1 case), which bounds every t.
        let (mu_p, mu_q, t) = (2.0 / 0.5, 1.0 / 0.5, 100);
        let pld = max_statistic_pld(mu_p, mu_q, t, 1e-3).unwrap();
        for eps in [0.5, 1.0, 2.0, 3.0] {
            let best = (0..2000)
                .map(|i| threshold_test(mu_p, mu_q, t, i as f64 * 0.005, eps))
                .fold(0.0, f64::max);
            let ours = pld.delta_for_epsilon(eps);
            assert!(ours >= best * (1.0 - 1e-3), "ε {eps}: {ours} < {best}");
            let mu = mu_p - mu_q;
            let gaussian = cdf(-eps / mu + mu / 2.0) - eps.exp() * cdf(-eps / mu - mu / 2.0);
            assert!(ours <= gaussian, "ε {eps}: {ours} > {gaussian}");
        }
    }

    #[test]
    fn losses_beyond_the_grid_stay_finite() {
        // σ = 0.01 against shifts 2 and 1 (μ = 200 and 100): Q's interval masses underflow
        // where P's do not. The lower bound must not put mass at +∞ (the pair has none), so
        // its ε at δ 1e-5 is finite: at most the grid's top (600 nats), below the truth
        // (the pair's ε is in the thousands).
        let pld = max_statistic_pld(200.0, 100.0, 10, 1e-2).unwrap();
        for direction in [pld.remove(), pld.add()] {
            assert_eq!(direction.infinity_mass(), 0.0);
        }
        let eps = pld.epsilon_for_delta(1e-5);
        assert!(eps.is_finite() && eps <= LOSS_LIMIT, "{eps}");
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(max_statistic_pld(1.0, 1.0, 10, 1e-3).is_err());
        assert!(max_statistic_pld(1.0, -0.5, 10, 1e-3).is_err());
        assert!(max_statistic_pld(f64::INFINITY, 0.0, 10, 1e-3).is_err());
        assert!(max_statistic_pld(2.0, 1.0, 0, 1e-3).is_err());
        assert!(max_statistic_pld(2.0, 1.0, 10, 0.0).is_err());
    }
}
