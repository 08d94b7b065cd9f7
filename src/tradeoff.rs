//! Membership-inference risk: a certified bracket on the trade-off curve β(α), the TPR at
//! low FPR and the advantage, from the privacy profile.
//!
//! A membership-inference attack is a test between neighbouring datasets; α is its
//! false-positive rate (type I error) and β its false-negative rate (type II error), so
//! TPR = 1 − β. A mechanism that is (ε, δ(ε))-DP for every ε ≥ 0 is f-DP for the trade-off
//! function (Dong, Roth & Su 2022, Proposition 2.12)
//! ```text
//! f(α) = sup_{ε ≥ 0} max{ 0,  1 − δ(ε) − e^ε·α,  e^{−ε}·(1 − δ(ε) − α) }
//! ```
//! with δ(ε) the privacy profile of the worse direction: no test, with either dataset as the
//! null hypothesis, has β < f(α) at false-positive rate α. This module brackets f.
//!
//! # The bracket
//! The profile is read once on an ε grid 0 = ε₀ < ε₁ < … < ε_K with guaranteed brackets
//! `δ_lo(εⱼ) ≤ δ(εⱼ) ≤ δ_up(εⱼ)` ([`Accountant::delta_profile`]).
//! - **Lower end** (the guarantee to publish): the supremum restricted to the grid, with
//!   δ_up: every term is at most a term of the true supremum, so
//!   `β_lo(α) = maxⱼ max{0, 1 − δ_up(εⱼ) − e^{εⱼ}α, e^{−εⱼ}(1 − δ_up(εⱼ) − α)} ≤ f(α)`.
//!   The upper bound on δ (hence on ε) gives the lower bound on β.
//! - **Upper end**: δ(ε) does not increase with ε, so on `[εⱼ, εⱼ₊₁]` every term is at most
//!   `max{1 − δ_lo(εⱼ₊₁) − e^{εⱼ}α, e^{−εⱼ}(1 − δ_lo(εⱼ₊₁) − α)}`, and beyond ε_K at most
//!   `max{1 − e^{ε_K}α, e^{−ε_K}(1 − α)}`; the largest of these, capped at 1 − α, bounds f
//!   from above. ε_K is chosen so that e^{ε_K}·α ≥ 1 and e^{−ε_K} ≤ 1e-17.
//! - Both ends move by 1e-15 (absolute) in the safe direction for the rounding of the
//!   formulas (each term is a sum of three numbers of magnitude ≤ 1 where it is positive).
//!
//! The gap between the ends is the profile's bracket plus the ε grid's spacing Δ (about
//! 2·e^{ε*}·α·Δ, with ε* the maximizing ε).
//!
//! **Advantage** `max_α (TPR − FPR) = max_α (1 − α − f(α)) = δ(0)`, the total variation
//! distance: its bracket is the profile's at ε = 0.
//!
//! # References
//! - Dong, Roth & Su, "Gaussian differential privacy", JRSS B 2022 (f-DP, Prop. 2.12;
//!   the Gaussian trade-off `G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)`).
//! - Kairouz, Oh & Viswanath, "The composition theorem for differential privacy", ICML 2015
//!   (the hypothesis-testing view of (ε, δ)).

use crate::accountant::Accountant;
use crate::bound::Bracket;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// False-positive rates at which the TPR is reported: 1e-3, 1e-2, 1e-1.
pub const TPR_AT_FPR: [f64; 3] = [1e-3, 1e-2, 1e-1];

/// Largest number of α values one curve may ask for.
pub const MAX_ALPHAS: usize = 10_000;

/// Spacing of the ε grid the profile is read on (nats), unless the grid would exceed
/// [`MAX_PROFILE_POINTS`].
const EPSILON_SPACING: f64 = 2.5e-4;

/// Most ε values the profile is read at.
const MAX_PROFILE_POINTS: usize = 400_000;

/// Absolute rounding allowance on β.
const ROUNDING: f64 = 1e-15;

/// One point of the trade-off curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TradeoffPoint {
    /// False-positive rate α in [0, 1].
    pub alpha: f64,
    /// Guaranteed bracket on f(α), the lowest false-negative rate any test can reach at α:
    /// `lower` is the guarantee (no attack does better), `upper` how far it could improve.
    pub beta: Bracket,
}

/// The attack's true-positive rate at one false-positive rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TprAtFpr {
    /// False-positive rate.
    pub fpr: f64,
    /// Guaranteed bracket on the highest TPR any test reaches at that FPR: `1 − β`, so its
    /// `upper` end is `1 − beta.lower` (the guarantee) and its `lower` end `1 − beta.upper`.
    pub tpr: Bracket,
}

/// The trade-off curve of a composition, with TPR at low FPR and the advantage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tradeoff {
    /// One bracket on β per α asked for, in the order given.
    pub points: Vec<TradeoffPoint>,
    /// TPR at FPR 1e-3, 1e-2, 1e-1 ([`TPR_AT_FPR`]).
    pub tpr_at_fpr: Vec<TprAtFpr>,
    /// Guaranteed bracket on max over tests of (TPR − FPR) = δ(0).
    pub advantage: Bracket,
    /// Grid step of the PLD the profile was read from; `None` for the closed-form Gaussian.
    pub grid_step: Option<f64>,
    /// Spacing of the ε grid the profile was read on (nats).
    pub epsilon_spacing: f64,
    /// Largest ε of that grid (ε_K).
    pub epsilon_max: f64,
}

/// The α values reported by default: 1e-6, 1e-5, ..., 1e-1, then 0.2, 0.3, 0.5.
pub fn default_alphas() -> Vec<f64> {
    let mut alphas: Vec<f64> = (1..=6).rev().map(|k| 10f64.powi(-k)).collect();
    alphas.extend([0.2, 0.3, 0.5]);
    alphas
}

/// `count` values of α spaced evenly in log scale from `smallest` to 1 (for plots).
pub fn log_alphas(smallest: f64, count: usize) -> Vec<f64> {
    let count = count.max(2);
    let low = smallest.clamp(1e-300, 1.0).log10();
    (0..count)
        .map(|i| 10f64.powf(low * (1.0 - i as f64 / (count - 1) as f64)))
        .collect()
}

/// Check the α values before any work.
///
/// # Errors
/// [`Error::InvalidParameter`] naming `alphas` (or `alphas[i]`) for an empty or too long list
/// or a value outside [0, 1].
pub fn validate_alphas(alphas: &[f64]) -> Result<()> {
    if alphas.is_empty() || alphas.len() > MAX_ALPHAS {
        return Err(Error::invalid(
            "alphas",
            format!("a list of {} values", alphas.len()),
            &format!("between 1 and {MAX_ALPHAS} values"),
        ));
    }
    if let Some((i, &a)) = alphas
        .iter()
        .enumerate()
        .find(|(_, a)| !(**a >= 0.0 && **a <= 1.0))
    {
        return Err(Error::invalid(
            format!("alphas[{i}]"),
            a,
            "a false-positive rate in [0, 1]",
        ));
    }
    Ok(())
}

/// The δ of the reference ε the profile is read past (see [`tradeoff`]).
const REFERENCE_DELTA: f64 = 1e-12;

/// How far past the reference ε the profile is read (nats).
const REFERENCE_MARGIN: f64 = 10.0;

/// The certified trade-off curve of the accountant's composition at each α of `alphas`.
///
/// See the module documentation for the formula and why each end is a bound.
///
/// # Guarantee
/// `points[i].beta.lower ≤ f(alphas[i]) ≤ points[i].beta.upper`; TPR brackets are
/// `1 − β` at [`TPR_AT_FPR`]; `advantage` brackets δ(0).
///
/// # Errors
/// [`Error::InvalidParameter`] for bad α values ([`validate_alphas`]); the accountant's errors.
pub fn tradeoff(accountant: &Accountant, alphas: &[f64]) -> Result<Tradeoff> {
    validate_alphas(alphas)?;
    let smallest = alphas
        .iter()
        .chain(&TPR_AT_FPR)
        .copied()
        .filter(|&a| a > 0.0)
        .fold(1.0, f64::min);
    // Where the reference ε is large, read the profile past it; past ln(1/α) the first term
    // is ≤ 0 for every α, and e^{−40} < 1e-17 makes the second negligible.
    let floor = (-smallest.ln() + 1.0).max(40.0);
    // The reference is an upper bound on ε(1e-12). RDP's (no grid, a millisecond) settles
    // it when it leaves the range at its floor; otherwise the PLD's: a random-allocation
    // epoch's ε(1e-12) took 7 of a 23 s trade-off curve, only to leave the range at 40.
    // (A range cut short only lowers β's lower end: the curve stays guaranteed.)
    let reference = match accountant.rdp_epsilon_upper(REFERENCE_DELTA) {
        Some(rdp) if rdp + REFERENCE_MARGIN <= floor => rdp,
        _ => accountant
            .epsilon_for_delta(REFERENCE_DELTA)
            .map(|a| a.epsilon.upper)
            .unwrap_or(0.0),
    };
    let reference = if reference.is_finite() {
        reference
    } else {
        0.0
    };
    let epsilon_max = floor.max(reference + REFERENCE_MARGIN).min(700.0);
    let spacing = EPSILON_SPACING.max(epsilon_max / (MAX_PROFILE_POINTS - 1) as f64);
    let count = (epsilon_max / spacing).ceil() as usize + 1;
    let epsilons: Vec<f64> = (0..count).map(|j| j as f64 * spacing).collect();
    let epsilon_max = epsilons[count - 1];
    let profile = accountant.delta_profile(&epsilons)?;
    let curve = Curve::new(&epsilons, &profile.deltas);
    let points = alphas
        .iter()
        .map(|&alpha| TradeoffPoint {
            alpha,
            beta: curve.beta(alpha),
        })
        .collect();
    let tpr_at_fpr = TPR_AT_FPR
        .iter()
        .map(|&fpr| {
            let beta = curve.beta(fpr);
            TprAtFpr {
                fpr,
                tpr: Bracket {
                    upper: 1.0 - beta.lower,
                    lower: 1.0 - beta.upper,
                },
            }
        })
        .collect();
    Ok(Tradeoff {
        points,
        tpr_at_fpr,
        advantage: profile.deltas[0],
        grid_step: profile.grid_step,
        epsilon_spacing: spacing,
        epsilon_max,
    })
}

/// The profile on the ε grid, ready to be maximized over for any α.
struct Curve {
    /// e^{εⱼ}.
    growth: Vec<f64>,
    /// e^{−εⱼ}.
    decay: Vec<f64>,
    /// 1 − δ_up(εⱼ): the lower end's terms.
    keep_pessimistic: Vec<f64>,
    /// 1 − δ_lo(εⱼ₊₁) for the interval [εⱼ, εⱼ₊₁], the last one 1 (beyond ε_K, δ ≥ 0).
    keep_optimistic: Vec<f64>,
}

impl Curve {
    fn new(epsilons: &[f64], deltas: &[Bracket]) -> Curve {
        let n = epsilons.len();
        Curve {
            growth: epsilons.iter().map(|e| e.exp()).collect(),
            decay: epsilons.iter().map(|e| (-e).exp()).collect(),
            keep_pessimistic: deltas.iter().map(|d| 1.0 - d.upper).collect(),
            keep_optimistic: (0..n)
                .map(|j| {
                    if j + 1 < n {
                        1.0 - deltas[j + 1].lower
                    } else {
                        1.0
                    }
                })
                .collect(),
        }
    }

    /// The bracket on f(α) (module documentation).
    fn beta(&self, alpha: f64) -> Bracket {
        let mut lower: f64 = 0.0;
        let mut upper: f64 = 0.0;
        for j in 0..self.growth.len() {
            let (grow, shrink) = (self.growth[j], self.decay[j]);
            let keep = self.keep_pessimistic[j];
            lower = lower.max(keep - grow * alpha).max(shrink * (keep - alpha));
            let keep = self.keep_optimistic[j];
            upper = upper.max(keep - grow * alpha).max(shrink * (keep - alpha));
        }
        let cap = 1.0 - alpha;
        let upper = (upper + ROUNDING).min(cap).max(0.0);
        let lower = (lower - ROUNDING).max(0.0).min(upper);
        Bracket { upper, lower }
    }
}
