//! The exponential mechanism as ε-bounded range (BR): a finite pair that dominates every
//! ε-BR mechanism, and the pair one exponential mechanism attains.
//!
//! A mechanism is ε-BR when, for all neighbours, its privacy loss `L(y) = ln(P(y)/Q(y))` has a
//! range of width at most ε (Durfee & Rogers, "Practical differentially private top-k
//! selection with pay-what-you-get composition", NeurIPS 2019). The exponential mechanism
//! calibrated to ε-DP, `P(y | D) ∝ exp(ε·u(D, y)/(2Δ))`, is ε-BR: `u(D, y) − u(D′, y)` lies in
//! [−Δ, Δ] for every y, so L spans at most ε (report-noisy-max with Gumbel noise is the same
//! mechanism).
//!
//! **Upper (dominating pair).** Dong, Durfee & Rogers ("Optimal differential privacy
//! composition for exponential mechanisms", ICML 2020) reduce every ε-BR pair to the binary
//! pairs `B(t)`, t ∈ [0, ε], with losses t and t − ε: on the test that rejects where L ≥ t
//! an ε-BR pair is a post-processing of `B(t)` for the right t. In (FPR, TPR) terms `B(t)`'s
//! best test sits at `K(t) = (q₁, p₁)`, `p₁ = (1 − e^{t−ε})/(1 − e^{−ε})`, `q₁ = e^{−t}p₁`,
//! both decreasing in t. A pair whose TPR curve is concave and above every `K(t)` dominates
//! every `B(t)`, hence every ε-BR mechanism: the concave hull of `(0, 0)`, `(1, 1)` and, for
//! each interval `[t_i, t_{i+1}]` of a grid, the corner `(q₁(t_{i+1}), p₁(t_i))` that lies
//! above-left of the whole arc `K([t_i, t_{i+1}])` (monotonicity). The class is closed under
//! swapping the neighbours (`B(t)` swapped is `B(ε − t)` mirrored), so the same pair serves
//! the ADD direction. It is safe for any mix (each event dominated, domination composes);
//! for k-fold composition it can be looser than Dong, Durfee & Rogers' optimum, which takes
//! the worst t for the composition as a whole.
//!
//! **Lower (attained).** The exponential mechanism with two outputs and utilities (Δ, 0) on D,
//! (0, Δ) on D′ is randomized response with ε/2 (losses ±ε/2): a valid lower bound for the
//! exponential mechanism itself, composed or not.

use crate::discretize::loss_atoms::LossAtoms;
use crate::error::{Error, Result};

/// Largest mean privacy loss (KL divergence) of an ε-BR pair:
/// `max_t KL(B(t)) = ln((e^ε − 1)/ε) − 1 + ε/(e^ε − 1)`, at `e^t = (e^ε − 1)/ε`, and at most
/// ε²/8 (Hoeffding's lemma at λ = −1, as `E_P[e^{−L}] = 1`); the smaller of the two, rounded
/// up. Every ε-BR pair is a post-processing of some B(t), and KL only shrinks under it.
///
/// # Guarantee
/// Upper bound on `KL(P‖Q)` of every ε-BR mechanism (exact up to rounding for the worst).
pub fn max_mean_loss(epsilon: f64) -> f64 {
    if epsilon.is_nan() || epsilon < 0.0 {
        return f64::INFINITY;
    }
    let hoeffding = epsilon * epsilon / 8.0 * (1.0 + 4.0 * f64::EPSILON);
    if epsilon == f64::INFINITY {
        return f64::INFINITY;
    }
    let em1 = epsilon.exp_m1();
    // ln(em1/ε) − 1 + ε/em1: terms of size ~ε/2 cancel to ~ε²/8; the rounding of each is
    // covered by a few ulps of the larger terms.
    let a = (em1 / epsilon).ln();
    let b = epsilon / em1;
    let exact = a - 1.0 + b;
    let slack = 16.0 * f64::EPSILON * (a.abs() + 1.0 + b);
    hoeffding.min(exact + slack)
}

/// Rényi divergence bound of every ε-BR pair at order α > 1:
/// `D_α ≤ min(KL_max + (α − 1)·ε²/8, D_α(RR_ε))`. The loss lies in an interval of width ε, so
/// Hoeffding's lemma gives `ln E_P[e^{(α−1)(L − E L)}] ≤ (α−1)²ε²/8`, and
/// `D_α = E_P L + (α−1)^{−1}·ln E_P[e^{(α−1)(L − E L)}]`; ε-BR is also ε-DP. With
/// `KL_max ≤ ε²/8` this makes ε-BR ε²/8-zCDP (as Cesar & Rogers 2021 state).
///
/// # Guarantee
/// Upper bound on `D_α` of every ε-BR mechanism, both orders of neighbours.
pub fn renyi_divergence_bound(epsilon: f64, alpha: f64) -> f64 {
    let hoeffding = (max_mean_loss(epsilon) + (alpha - 1.0) * epsilon * epsilon / 8.0)
        * (1.0 + 4.0 * f64::EPSILON);
    let pure = crate::analytic::rdp_mechanisms::pure_dp(alpha, epsilon);
    if hoeffding.is_nan() {
        pure
    } else {
        hoeffding.min(pure)
    }
}

/// Intervals of the t grid.
const T_INTERVALS: usize = 4096;

/// `(q₁, p₁)` of `B(t)`: `p₁ = (1 − e^{t−ε})/(1 − e^{−ε})`, `q₁ = e^{−t}·p₁`.
fn kink(epsilon: f64, t: f64) -> (f64, f64) {
    let p = (-(t - epsilon).exp_m1() / -(-epsilon).exp_m1()).clamp(0.0, 1.0);
    ((-t).exp() * p, p)
}

/// The pair dominating every ε-BR mechanism (REMOVE and ADD alike).
///
/// # Errors
/// [`Error::InvalidParameter`] naming `epsilon` unless it is finite and > 0.
pub fn dominating_atoms(epsilon: f64) -> Result<LossAtoms> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
    }
    // For each interval [t_i, t_{i+1}] the arc K(t) lies in the box of its end points and,
    // as p₁ = e^t·q₁ and 1 − p₁ = e^{t−ε}(1 − q₁), under the lines p = e^{t_{i+1}}·q and
    // p = 1 − e^{t_i−ε}(1 − q). The upper-left vertices of that convex region (rounded
    // outwards: FPR down, TPR up) are above every point of the arc.
    let up = |p: f64| (p * (1.0 + 8.0 * f64::EPSILON) + f64::MIN_POSITIVE).min(1.0);
    let down = |q: f64| {
        let q = q * (1.0 - 8.0 * f64::EPSILON);
        if q > 0.0 {
            q
        } else {
            0.0
        }
    };
    let mut points: Vec<(f64, f64)> = vec![(0.0, 0.0), (1.0, 1.0)];
    let ts: Vec<f64> = (0..=T_INTERVALS)
        .map(|i| epsilon * i as f64 / T_INTERVALS as f64)
        .collect();
    for w in ts.windows(2) {
        let (t_lo, t_hi) = (w[0], w[1]);
        let (q_lo, p_lo) = kink(epsilon, t_hi);
        let (q_hi, p_hi) = kink(epsilon, t_lo);
        let a = t_hi.exp();
        let b = (t_lo - epsilon).exp();
        let first_line = |q: f64| a * q;
        let second_line = |q: f64| 1.0 - b * (1.0 - q);
        // Left edge, top.
        let left = (
            q_lo,
            p_hi.min(first_line(q_lo)).min(second_line(q_lo)).max(p_lo),
        );
        // Top edge, left end.
        let top_q = (p_hi / a).max(1.0 - (1.0 - p_hi) / b).max(q_lo).min(q_hi);
        let top = (top_q, p_hi);
        // Where the two lines cross, if inside the box.
        let cross_q = -(t_lo - epsilon).exp_m1() / (a - b);
        for (q, p) in [left, top, (cross_q, first_line(cross_q))] {
            if q >= q_lo && q <= q_hi && p.is_finite() {
                points.push((down(q), up(p.clamp(p_lo, p_hi))));
            }
        }
    }
    Ok(LossAtoms::from_tpr_curve(points))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// δ of the binary pair B(t) at ε′, both directions.
    fn binary_delta(epsilon: f64, t: f64, e: f64) -> f64 {
        let (q1, p1) = kink(epsilon, t);
        let forward = (p1 - e.exp() * q1).max(0.0) + ((1.0 - p1) - e.exp() * (1.0 - q1)).max(0.0);
        let backward = (q1 - e.exp() * p1).max(0.0) + ((1.0 - q1) - e.exp() * (1.0 - p1)).max(0.0);
        forward.max(backward)
    }

    /// D_α of B(t) (natural log), by its two outcomes.
    fn binary_renyi(epsilon: f64, t: f64, alpha: f64) -> f64 {
        let (q1, p1) = kink(epsilon, t);
        let a = alpha * p1.ln() + (1.0 - alpha) * q1.ln();
        let b = alpha * (1.0 - p1).ln() + (1.0 - alpha) * (1.0 - q1).ln();
        let top = a.max(b);
        (top + ((a - top).exp() + (b - top).exp()).ln()) / (alpha - 1.0)
    }

    #[test]
    fn the_renyi_bound_is_above_every_binary_pair_and_kl_is_attained() {
        for epsilon in [1e-4, 0.01, 0.3, 1.0, 4.0, 20.0] {
            let kl = max_mean_loss(epsilon);
            let mut best_kl: f64 = 0.0;
            for j in 1..2000 {
                let t = epsilon * j as f64 / 2000.0;
                let (q1, p1) = kink(epsilon, t);
                let k = p1 * (p1 / q1).ln() + (1.0 - p1) * ((1.0 - p1) / (1.0 - q1)).ln();
                best_kl = best_kl.max(k);
                for alpha in [1.5, 2.0, 8.0, 64.0] {
                    let d = binary_renyi(epsilon, t, alpha);
                    let bound = renyi_divergence_bound(epsilon, alpha);
                    assert!(
                        d <= bound * (1.0 + 1e-9) + 1e-15,
                        "ε {epsilon} t {t} α {alpha}: {d} > {bound}"
                    );
                }
            }
            assert!(best_kl <= kl * (1.0 + 1e-6) + 1e-18, "{best_kl} > {kl}");
            assert!(best_kl >= kl * (1.0 - 1e-4) - 1e-12, "{best_kl} ≪ {kl}");
            assert!(kl <= epsilon * epsilon / 8.0 * (1.0 + 1e-12));
        }
        assert_eq!(max_mean_loss(f64::NAN), f64::INFINITY);
    }

    #[test]
    fn the_pair_dominates_every_binary_br_pair_and_beats_randomized_response() {
        for epsilon in [1e-3, 0.1, 1.0, 5.0, 30.0] {
            let atoms = dominating_atoms(epsilon).unwrap();
            let total_p: f64 = atoms.atoms().iter().map(|a| a.p).sum::<f64>() + atoms.p_infinity();
            assert!(
                (total_p - 1.0).abs() < 1e-9,
                "ε {epsilon}: total P {total_p}"
            );
            for k in 0..=50 {
                let e = epsilon * k as f64 / 50.0;
                let d = atoms.hockey_stick(e);
                // Every B(t) on a fine grid, off the pair's own grid.
                for j in 0..=997 {
                    let t = epsilon * j as f64 / 997.0;
                    let b = binary_delta(epsilon, t, e);
                    assert!(
                        b <= d * (1.0 + 1e-9) + 1e-15,
                        "ε {epsilon} t {t} ε′ {e}: {b} > {d}"
                    );
                }
                // Randomized response with ε (generic ε-DP) is never below it.
                let rr =
                    (e.exp() * 0.0 + (epsilon.exp() - e.exp()) / (1.0 + epsilon.exp())).max(0.0);
                assert!(
                    d <= rr * (1.0 + 1e-9) + 1e-15,
                    "ε {epsilon} ε′ {e}: {d} > RR {rr}"
                );
            }
            // Total variation: at least the best B(t)'s, tanh(ε/4) (at t = ε/2), and well
            // below randomized response's tanh(ε/2) (the hull of the family costs a little).
            let tv = atoms.hockey_stick(0.0);
            eprintln!(
                "ε {epsilon}: TV {tv:.6e} = {:.3} × tanh(ε/4), {:.3} × tanh(ε/2)",
                tv / (epsilon / 4.0).tanh(),
                tv / (epsilon / 2.0).tanh()
            );
            assert!(tv >= (epsilon / 4.0).tanh() * (1.0 - 1e-9), "{tv}");
            assert!(
                tv <= (epsilon / 2.0).tanh() * 0.95 || epsilon > 10.0,
                "{tv}"
            );
        }
        assert!(dominating_atoms(0.0).is_err() && dominating_atoms(f64::NAN).is_err());
    }
}
