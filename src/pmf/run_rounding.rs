//! What the rounding of each discretized run's masses can cost a δ read after many runs
//! are composed, and what every δ read from a PMF is widened by for it.
//!
//! **A bound on δ curves that composes.** Write `δ_A(t) = E[(1 − e^{t − L_A})₊]` (plus the
//! mass at +∞) and `S_A(t) = P(L_A > t)` for the PLD `L_A` of a run, at every real t. For
//! independent runs, `δ_{A⊗C}(ε) = E_{ℓ∼L_C}[δ_A(ε − ℓ)]` and `S_{A⊗C}(ε) = E_{ℓ∼L_C}[S_A(ε − ℓ)]`.
//! So if the PMF `Ã` that a run's rounded masses give satisfies, at every t,
//! ```text
//! δ_Ã(t) ≥ δ_A(t) − η·S_A(t) − θ         (an upper PMF; A: the same PMF in exact arithmetic)
//! ```
//! then `δ_{Ã⊗C}(ε) ≥ δ_{A⊗C}(ε) − η·S_{A⊗C}(ε) − θ` (take the expectation), and replacing the
//! runs one at a time, N runs composed have
//! ```text
//! δ̃ ≥ δ − N·(η·S* + θ),      S* the largest survival of any mix of exact and rounded runs at ε.
//! ```
//! S* is bounded two ways, and a read takes the smaller:
//! - **from the masses.** A run's survival is within a relative ρ of its rounded one (see
//!   [`SPLIT_SURVIVAL_ULPS`]), and that compounds: `S* ≤ (1 + ρ)^N·S̃`, with S̃ the composed
//!   PMF's own survival at ε as read (its entries moved up by their round-off bounds). On
//!   fine grids over many runs the growth explodes (10⁷ runs at a step of 3.3e-8: e³⁵);
//! - **from δ**, where that growth exceeds [`GROWTH_WORTH_A_DELTA_BOUND`]: any PLD has
//!   `S(t) ≤ δ(t − Δ)/(1 − e^{−Δ})`, and a mix's δ is at most the composed PMF's upper δ
//!   plus the charge ([`survival_bounds_from_delta`], at the lowest entry of every block of
//!   grid points, bottom up).
//!
//! A lower PMF is the mirror image:
//! `δ̃ ≤ δ + N·(η·S* + θ)`. A mixture's parts are within their own N, and the mixture within
//! the largest. The charge is added to an upper δ and taken off a lower one
//! ([`charge_for_survival`], [`rounding_charge`]). As the charge drops at each grid node
//! (S does), and at each block where S* is bounded from δ, a lower δ read at ε is the largest
//! of the lower bounds at ε, at the next node up and at the lowest node of every block above
//! (those last only where the bounds from δ are in use), valid as the true δ does not grow
//! with ε: the reported lower δ then does not rise where the charge drops.
//!
//! **Why relative to S and not to δ.** At ε just below the top of a loss range with an atom
//! there (Laplace's ε₀ = 1/b), δ is a small difference of masses near 1/2, and its rounding
//! is a few ulps of those masses: 5e-13 of δ one grid step under ε₀ at h = 1e-4, and more on
//! finer grids. Against the mass above ε it is always a few ulps.
//!
//! **The tiers.** One run's δ at its grid nodes is exact in exact arithmetic
//! (connect-the-dots passes through the mechanism's curve there), so before any allowance it
//! differs from the exact δ by rounding alone; between two nodes it is a chord (linear in
//! e^t) of its values there and S is the upper node's, so the nodes' bound holds at every t.
//! Against mpmath at 50 digits (`tests/grid_node_rounding.rs`: sampled Gaussians σ 0.5 to 2,
//! q 1e-5 to 1, Laplace runs b 0.1 to 10 and randomized response ε₀ 0.1 to 5, grid steps
//! 1e-3 and 1e-4, ε from −15 to 48) the difference is within 4.9e-15 of S where S ≥ 1e-6,
//! 8.7e-15 down to 1e-20, 3.2e-14 down to 1e-100 and 1.6e-13 down to 1e-290 (far in the
//! tails, the rounding of the CDFs' argument is amplified); on the side the bound covers,
//! below the exact δ, within 1.0e-15, 6.2e-15, 3.2e-14 and 6.6e-14 (the 4.9e-15 is
//! randomized response's atoms raised by four ulps, above it). Each [`RunRounding`] tier is
//! one such band's bound η (about twice the largest seen either side where measured first,
//! on the Gaussians and Laplace runs), with θ the next band's bound at this band's floor:
//! every tier then holds at every S, and a δ read takes the tightest.
//!
//! Measured, not proven: the tiers and ρ are what three mechanism families show at the nodes
//! sampled, with a margin, and are applied to every mechanism's runs, upper and lower; below
//! S 1e-290 the last tier is assumed to go on holding. A lower PMF's lumping is exact only
//! where a merged atom lands on a node, so its rounding is not measured apart; what the same
//! test checks is that one run's lower δ, as reported, stays at or below the exact δ at
//! every node (the median report 0.999986 of it for the sampled Gaussians, 1 − 1.0e-9 for
//! Laplace and randomized response).

/// One tier of the bound on one run's rounding: at every t, the run's δ as its rounded
/// masses give it is within `relative·S(t) + absolute` of the δ of the same PMF in exact
/// arithmetic (below it for an upper PMF, above it for a lower one), S(t) the run's mass at
/// losses above t.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunRounding {
    /// η: the part relative to the mass above t.
    pub relative: f64,
    /// θ: the absolute part (a probability).
    pub absolute: f64,
}

/// The tiers, from the bulk (S ≥ 1e-6) to the far tails; see the module documentation.
pub const RUN_ROUNDING_TIERS: [RunRounding; 4] = [
    RunRounding {
        relative: 5e-15,
        absolute: 2e-14 * 1e-6,
    },
    RunRounding {
        relative: 2e-14,
        absolute: 7e-14 * 1e-20,
    },
    RunRounding {
        relative: 7e-14,
        absolute: 3e-13 * 1e-100,
    },
    RunRounding {
        relative: 3e-13,
        absolute: 0.0,
    },
];

/// The bands of S the tiers were measured on: tier i's `relative` bound holds where
/// S ≥ `RUN_ROUNDING_FLOORS[i]` (the last one down to the smallest S measured, 1e-290).
pub const RUN_ROUNDING_FLOORS: [f64; 4] = [1e-6, 1e-20, 1e-100, 0.0];

/// A run's mass at or above each grid node, as its rounded masses give it, is within a
/// relative `ρ = SPLIT_SURVIVAL_ULPS·u/h + SURVIVAL_TAIL_ERROR` of the exact one (u = 2⁻⁵³,
/// h the grid step). Each bin is split between its two nodes by a difference that cancels,
/// divided by `1 − e^{−h}`: the first part. Measured against mpmath
/// (`tests/grid_node_rounding.rs`: the mass at or above a node from the exact δ there and
/// at the node below), at most about 100 u/h where that mass is at least 1e-20, at grid
/// steps 1e-3 and 1e-4.
pub const SPLIT_SURVIVAL_ULPS: f64 = 1024.0;

/// The part of ρ (see [`SPLIT_SURVIVAL_ULPS`]) that does not shrink with finer grids: far in
/// the tails (mass below 1e-20 at or above the node) the rounding of the CDFs' argument
/// leaves relative errors up to 1.8e-9 whatever the grid step (measured as above).
pub const SURVIVAL_TAIL_ERROR: f64 = 4e-9;

/// ρ at grid step `step` (see [`SPLIT_SURVIVAL_ULPS`]).
pub fn survival_rounding(step: f64) -> f64 {
    SPLIT_SURVIVAL_ULPS * (f64::EPSILON / 2.0) / step + SURVIVAL_TAIL_ERROR
}

/// `(1 + ρ)^N`: how far the composition of `runs` runs may put the mass above a loss above
/// the rounded PMF's own, ρ = [`survival_rounding`] of the grid `step` (+∞ when it
/// overflows, never NaN).
pub fn survival_growth(runs: f64, step: f64) -> f64 {
    let growth = (runs * survival_rounding(step).ln_1p()).exp();
    if growth.is_nan() {
        f64::INFINITY
    } else {
        growth
    }
}

/// The charge for the rounding of `runs` runs at ε where the largest mass above ε of any
/// mix of exact and rounded runs is at most `survival_bound` (S*, at most 1):
/// `N·min over tiers of (η·S* + θ)`, 0 where S* is 0. Never NaN: +∞ for so many runs that
/// nothing is left (the caller caps δ).
pub fn charge_for_survival(survival_bound: f64, runs: f64) -> f64 {
    if survival_bound <= 0.0 {
        return 0.0;
    }
    let bound = survival_bound.min(1.0);
    let per_run = RUN_ROUNDING_TIERS
        .iter()
        .map(|tier| tier.relative * bound + tier.absolute)
        .fold(f64::INFINITY, f64::min);
    if per_run == 0.0 {
        0.0
    } else {
        runs * per_run
    }
}

/// The charge for the rounding of `runs` runs at ε, from the survival read there
/// (`survival`: the composed PMF's mass above ε as read, its entries moved up by their
/// bounds, plus any mass whose bound is charged whole): [`charge_for_survival`] of
/// `S* = min(1, (1 + ρ)^N·survival)` ([`survival_growth`]).
pub fn rounding_charge(survival: f64, runs: f64, step: f64) -> f64 {
    if survival <= 0.0 {
        return 0.0;
    }
    let grown = survival * survival_growth(runs, step);
    charge_for_survival(if grown.is_nan() { 1.0 } else { grown }, runs)
}

/// Growth `(1 + ρ)^N` past which [`survival_bounds_from_delta`] is worth computing: the
/// mass read, grown by it, overstates S* by more than this factor.
pub const GROWTH_WORTH_A_DELTA_BOUND: f64 = 2.0;

/// Bounds on S*, the largest mass above a loss of any mix of exact and rounded runs, at
/// equally spaced losses `t_b = t_0 + b·span` (b = 0, 1, …), from δ rather than from the
/// masses read (whose compounded relative error `(1 + ρ)^N` explodes for many runs on fine
/// grids).
///
/// Any PLD has `S(t) ≤ δ(t − Δ)/(1 − e^{−Δ})` for Δ > 0 (the losses above t weigh at least
/// `1 − e^{−Δ}` in δ at t − Δ). A mix's δ is at most the rounded composition's upper δ plus
/// the charge for the runs it differs by (the telescoping of the module documentation), so
/// ```text
/// S*_b ≤ min(1, grown_b, min over k = 1, 2, 4, … ≤ b of
///            (delta_up_{b−k} + charge(S*_{b−k})) / (1 − e^{−k·span}))
/// ```
/// from the bottom up: `delta_up[b]`, an upper bound on the rounded composition's δ at `t_b`
/// (in exact arithmetic), and `grown[b]`, the bound the masses read give at `t_b`
/// (`(1 + ρ)^N` times them; +∞ for none).
pub fn survival_bounds_from_delta(
    delta_up: &[f64],
    grown: &[f64],
    span: f64,
    runs: f64,
) -> Vec<f64> {
    let mut bounds: Vec<f64> = Vec::with_capacity(delta_up.len());
    for (b, grown) in grown.iter().enumerate().take(delta_up.len()) {
        let mut bound = grown.min(1.0);
        let mut k = 1;
        while k <= b {
            let below = b - k;
            let weight = -(-(k as f64) * span).exp_m1();
            let from_delta = (delta_up[below] + charge_for_survival(bounds[below], runs)) / weight;
            if from_delta < bound {
                bound = from_delta;
            }
            k *= 2;
        }
        bounds.push(if bound.is_nan() { 1.0 } else { bound });
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tier holds wherever S is, given the bands' bounds: in band j (S ≥ floor_j), a
    /// tier i's `η_i·S + θ_i` is at least band j's bound `η_j·S` (θ_i covers the bands below
    /// it, η_i the bands above it).
    #[test]
    fn every_tier_covers_every_band() {
        for (i, tier) in RUN_ROUNDING_TIERS.iter().enumerate() {
            for (j, band) in RUN_ROUNDING_TIERS.iter().enumerate() {
                // S in band j: [floor_j, floor_{j−1}) (the first band up to 1).
                let low = RUN_ROUNDING_FLOORS[j];
                let high = if j == 0 {
                    1.0
                } else {
                    RUN_ROUNDING_FLOORS[j - 1]
                };
                for survival in [low, high] {
                    let allowed = tier.relative * survival + tier.absolute;
                    assert!(
                        allowed >= band.relative * survival * (1.0 - 1e-12),
                        "tier {i} at S {survival:e} (band {j}): {allowed:e}"
                    );
                }
            }
        }
    }

    /// The bounds from δ hold and are tight: on discrete PLDs (a Gaussian-shaped one, σ 0.3
    /// to 3 nats, and one with an atom at its top), from δ and S summed straight from their
    /// definitions at every block's lowest loss, each bound is at least the mass above that
    /// loss, within 12 times it (6.3 seen) where that mass is at least 1e-250 and the δ
    /// below it is known, no looser with the masses' own bound beside it, and larger with more runs
    /// charged (never NaN, 1 at most).
    #[test]
    fn survival_bounds_from_delta_hold_and_are_tight() {
        let (h, block) = (1e-3, 64);
        for (sigma, atom) in [(0.3, 0.0), (1.0, 0.0), (3.0, 0.0), (1.0, 0.3)] {
            // Losses l_i = (i − 4000)·h, masses ∝ exp(−l²/2σ²), a share `atom` at the top.
            let n = 8000;
            let loss = |i: usize| (i as f64 - 4000.0) * h;
            let mut masses: Vec<f64> = (0..n)
                .map(|i| (-loss(i) * loss(i) / (2.0 * sigma * sigma)).exp())
                .collect();
            let total: f64 = masses.iter().sum();
            masses.iter_mut().for_each(|m| *m *= (1.0 - atom) / total);
            masses[n - 1] += atom;
            let above =
                |t: f64| -> f64 { (0..n).filter(|&i| loss(i) > t).map(|i| masses[i]).sum() };
            let delta = |t: f64| -> f64 {
                (0..n)
                    .filter(|&i| loss(i) > t)
                    .map(|i| masses[i] * -(t - loss(i)).exp_m1())
                    .sum()
            };
            let points: Vec<f64> = (0..n).step_by(block).map(loss).collect();
            let delta_up: Vec<f64> = points.iter().map(|&t| delta(t)).collect();
            let exact: Vec<f64> = points.iter().map(|&t| above(t)).collect();
            let none = vec![f64::INFINITY; points.len()];
            let span = block as f64 * h;
            let alone = survival_bounds_from_delta(&delta_up, &none, span, 0.0);
            let grown: Vec<f64> = exact.iter().map(|s| 1.5 * s).collect();
            let beside = survival_bounds_from_delta(&delta_up, &grown, span, 0.0);
            let charged = survival_bounds_from_delta(&delta_up, &none, span, 1e9);
            for b in 0..points.len() {
                let what = format!("σ {sigma}, atom {atom}, t {}", points[b]);
                assert!(
                    alone[b] >= exact[b] * (1.0 - 1e-12),
                    "{what}: {:e} < {:e}",
                    alone[b],
                    exact[b]
                );
                assert!(alone[b] <= 1.0, "{what}");
                if b > 0 && exact[b] >= 1e-250 {
                    assert!(
                        alone[b] <= 12.0 * exact[b],
                        "{what}: {:e} against {:e}",
                        alone[b],
                        exact[b]
                    );
                }
                assert!(beside[b] <= alone[b] && beside[b] <= grown[b], "{what}");
                assert!(charged[b] >= alone[b] && charged[b] <= 1.0, "{what}");
            }
        }
    }

    /// The charge is the tightest tier's, times the runs, against the formula written out
    /// (the growth `(1 + ρ)^N` from the first terms of ln(1 + ρ)'s series); it grows with
    /// the survival and the runs; nothing is NaN even for absurd run counts.
    #[test]
    fn the_charge_takes_the_tightest_tier() {
        let u = f64::EPSILON / 2.0;
        for step in [1e-4, 1e-2] {
            let rho = SPLIT_SURVIVAL_ULPS * u / step + SURVIVAL_TAIL_ERROR;
            let growth = |runs: f64| (runs * (rho - rho * rho / 2.0 + rho * rho * rho / 3.0)).exp();
            let mut last = 0.0;
            for runs in [1.0, 1e5, 1e9] {
                for survival in [0.0, 1e-300, 1e-100, 1e-20, 1e-15, 1e-5, 0.5] {
                    let bound = (survival * growth(runs)).min(1.0);
                    let want = runs
                        * RUN_ROUNDING_TIERS
                            .iter()
                            .map(|t| t.relative * bound + t.absolute)
                            .fold(f64::INFINITY, f64::min);
                    let got = rounding_charge(survival, runs, step);
                    assert!(
                        (got - want).abs() <= 1e-12 * want,
                        "h {step} N {runs:e} S {survival:e}: {got:e} against {want:e}"
                    );
                    assert!(got >= last, "h {step} N {runs:e} S {survival:e}");
                    last = got;
                }
                last = 0.0;
            }
        }
        // At 10⁵ runs on a grid of 1e-4: for S 3e-5 (δ about 1e-5) a few 1e-15, the first
        // tier's; for S 3e-15 (δ about 1e-15) the second tier's, some 6e-24 (the first one's
        // N·θ alone would be 2e-15).
        let charge = rounding_charge(3e-5, 1e5, 1e-4);
        assert!(charge > 1e-14 && charge < 2e-14, "{charge:e}");
        let charge = rounding_charge(3e-15, 1e5, 1e-4);
        assert!(charge > 5e-24 && charge < 7e-24, "{charge:e}");
        // No mass above ε: nothing to charge (the last tier has no absolute part).
        for runs in [1.0, 1e300, f64::INFINITY] {
            assert_eq!(rounding_charge(0.0, runs, 1e-4), 0.0);
            assert!(rounding_charge(0.5, runs, 1e-4) >= 1.0 || runs == 1.0);
        }
    }
}
