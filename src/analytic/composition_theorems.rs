//! The classical composition theorems for (ε, δ)-DP guarantees.
//!
//! Each theorem turns a list of events — an (εᵢ, δᵢ)-DP guarantee used `countᵢ` times — and a
//! total δ into an upper bound on ε. They are cross-checks for the PLD accountant (which knows
//! the mechanisms, not only their (ε, δ)), and the exact optimal composition of
//! [`super::optimal_composition`] is below every one of them.
//!
//! With `k = Σ countᵢ` and the slack `δ'` (the part of the total δ left after the δᵢ):
//! ```text
//! Basic:          ε = Σ countᵢ εᵢ,                                     δ = Σ countᵢ δᵢ
//! DRV 2010:       ε = ε₀ sqrt(2k ln(1/δ')) + k ε₀ (e^{ε₀} − 1),         δ = kδ₀ + δ'
//! tanh form:      ε = ε₀ sqrt(2k ln(1/δ')) + k ε₀ tanh(ε₀/2),          δ = kδ₀ + δ'
//! KOV closed:     ε = min{ kε₀,
//!                          k ε₀ tanh(ε₀/2) + ε₀ sqrt(2k ln(e + sqrt(kε₀²)/δ')),
//!                          k ε₀ tanh(ε₀/2) + ε₀ sqrt(2k ln(1/δ')) },  δ = 1 − (1 − δ₀)^k (1 − δ')
//! via zCDP:       ρ = ½ Σ countᵢ εᵢ²,  ε = zCDP→(ε, δ') conversion of ρ, δ = Σ countᵢ δᵢ + δ'
//! ```
//! (`tanh(ε₀/2) = (e^{ε₀} − 1)/(e^{ε₀} + 1)`.)
//!
//! Conventions shared by all theorems:
//! - **Heterogeneous inputs to homogeneous theorems** (DRV, tanh, KOV) use `k = Σ countᵢ`,
//!   `ε₀ = max εᵢ`, `δ₀ = max δᵢ`: every event is then also (ε₀, δ₀)-DP, so the theorem applies.
//! - **Slack:** the whole remaining budget is used: `δ' = δ − kδ₀` (DRV, tanh),
//!   `δ' = 1 − (1 − δ)/(1 − δ₀)^k` (KOV), `δ' = δ − Σ countᵢδᵢ` (zCDP). Each is rounded down.
//!   If it is ≤ 0 the theorem gives nothing: +∞ (KOV still allows `kε₀` when `δ' = 0`).
//! - **Cap by basic composition:** whenever `Σ countᵢ δᵢ ≤ δ`, the basic bound `Σ countᵢ εᵢ` is
//!   also valid at the same δ, so every theorem returns the smaller of the two.
//! - `k = 0` (no events, or all counts 0) gives 0; δ ≥ 1 gives 0; NaN or negative inputs,
//!   or δᵢ outside [0, 1], give +∞ (conservative). Sums, products and slacks are rounded in
//!   the safe direction, and stay exact when no rounding happened (so a budget spent exactly,
//!   e.g. 2 × 0.25 = 0.5, is accepted). Never NaN.
//!
//! # Guarantee
//! Every value is an upper bound: the composition is (ε, δ)-DP with the returned ε.
//!
//! # References
//! - Dwork, Rothblum & Vadhan, "Boosting and differential privacy", FOCS 2010, Thm III.3;
//!   Dwork & Roth, "The algorithmic foundations of differential privacy", 2014, Thm 3.20.
//! - Smith & Ullman, "Advanced composition", lecture 10 of Privacy in Statistics and
//!   Machine Learning (spring 2023), Thm 1.1 and Claim 3.4.
//! - Kairouz, Oh & Viswanath, "The composition theorem for differential privacy", ICML 2015
//!   (arXiv:1311.0776), Thm 3.4.
//! - Steinke, "Composition of differential privacy & privacy amplification by subsampling",
//!   2022 (arXiv:2210.00597), Thms 18 and 22, Props. 14 and 16.

use super::zcdp;

/// Unit round-off of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// An (ε, δ)-DP guarantee.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ApproxDp {
    /// ε ≥ 0.
    pub epsilon: f64,
    /// δ in [0, 1].
    pub delta: f64,
}

/// The composition theorems.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompositionTheorem {
    /// (Σε_i, Σδ_i).
    Basic,
    /// Dwork–Rothblum–Vadhan 2010.
    AdvancedDworkRothblumVadhan,
    /// The tanh form of Smith & Ullman's lecture notes "Advanced composition".
    AdvancedTanh,
    /// Kairouz–Oh–Viswanath closed form.
    KairouzOhViswanath,
    /// Via zCDP (Steinke Thms 18, 22), heterogeneous.
    ViaZcdp,
}

/// The summary of a list of events that the theorems need.
#[derive(Debug, Clone, Copy)]
struct Summary {
    /// k = Σ countᵢ (exact up to 2⁵³).
    k: f64,
    /// max εᵢ over events with a positive count.
    epsilon0: f64,
    /// max δᵢ over events with a positive count.
    delta0: f64,
    /// Σ countᵢ εᵢ, rounded up.
    sum_epsilon: f64,
    /// Σ countᵢ δᵢ, rounded up.
    sum_delta: f64,
    /// Σ countᵢ εᵢ², rounded up.
    sum_epsilon_squared: f64,
}

impl Summary {
    /// `None` when an event is invalid (NaN, negative ε, δ outside [0, 1]).
    fn new(events: &[(ApproxDp, u64)]) -> Option<Summary> {
        let mut k: u128 = 0;
        let mut epsilon0 = 0.0_f64;
        let mut delta0 = 0.0_f64;
        for (g, count) in events {
            if g.epsilon.is_nan() || g.delta.is_nan() || g.epsilon < 0.0 {
                return None;
            }
            if !(0.0..=1.0).contains(&g.delta) {
                return None;
            }
            if *count == 0 {
                continue;
            }
            k += u128::from(*count);
            epsilon0 = epsilon0.max(g.epsilon);
            delta0 = delta0.max(g.delta);
        }
        let used = || events.iter().filter(|(_, c)| *c > 0);
        let sum_epsilon = sum_up(used().map(|(g, c)| (*c as f64, g.epsilon)));
        let sum_delta = sum_up(used().map(|(g, c)| (*c as f64, g.delta)));
        // c·ε² = c·fl(ε²) + c·err(ε²), both parts summed exactly-aware.
        let sum_epsilon_squared = sum_up(used().flat_map(|(g, c)| {
            let sq = g.epsilon * g.epsilon;
            let err = g.epsilon.mul_add(g.epsilon, -sq);
            [(*c as f64, sq), (*c as f64, err)]
        }));
        Some(Summary {
            k: k as f64,
            epsilon0,
            delta0,
            sum_epsilon,
            sum_delta,
            sum_epsilon_squared,
        })
    }

    /// The basic bound if it is valid at total δ, else +∞.
    fn basic(&self, delta: f64) -> f64 {
        if self.sum_delta <= delta {
            self.sum_epsilon
        } else {
            f64::INFINITY
        }
    }

    /// δ' = δ − kδ₀ rounded down (≤ 0 when nothing is left).
    fn additive_slack(&self, delta: f64) -> f64 {
        sub_down(delta, mul_up(self.k, self.delta0))
    }

    /// δ' with 1 − (1 − δ₀)^k (1 − δ') = δ, i.e. `δ' = −expm1(ln(1 − δ) − k ln(1 − δ₀))`,
    /// rounded down; negative when δ < 1 − (1 − δ₀)^k.
    fn multiplicative_slack(&self, delta: f64) -> f64 {
        let a = (-delta).ln_1p();
        let b = self.k * (-self.delta0).ln_1p();
        let x = a - b;
        if x.is_nan() {
            // −∞ − (−∞): δ = 1 and δ₀ = 1; nothing is left.
            return -1.0;
        }
        let x_up = x + 8.0 * UNIT_ROUNDOFF * (a.abs() + b.abs());
        if x_up > 0.0 {
            return -1.0;
        }
        -x_up.exp_m1() * (1.0 - 4.0 * UNIT_ROUNDOFF)
    }
}

/// The next double above a finite x ≥ 0.
fn next_up(x: f64) -> f64 {
    if !x.is_finite() {
        x
    } else if x == 0.0 {
        f64::from_bits(1)
    } else {
        f64::from_bits(x.to_bits() + 1)
    }
}

/// The next double below a finite x > 0 (0 stays 0; negative x moves away from 0).
fn next_down(x: f64) -> f64 {
    if x > 0.0 {
        f64::from_bits(x.to_bits() - 1)
    } else if x < 0.0 {
        f64::from_bits(x.to_bits() + 1)
    } else {
        -f64::from_bits(1)
    }
}

/// `a·b ≥ 0` rounded up: exact products stay exact (the fused multiply-add gives the error).
fn mul_up(a: f64, b: f64) -> f64 {
    let p = a * b;
    if !p.is_finite() {
        return p;
    }
    if a.mul_add(b, -p) > 0.0 {
        next_up(p)
    } else {
        p
    }
}

/// `a − b` rounded down (Knuth's two-sum gives the error); exact differences stay exact.
fn sub_down(a: f64, b: f64) -> f64 {
    let d = a - b;
    if !d.is_finite() {
        return d;
    }
    let bv = a - d;
    let err = (a - (d + bv)) + (bv - b);
    if err < 0.0 {
        next_down(d)
    } else {
        d
    }
}

/// `Σ cᵢ xᵢ` (all terms ≥ 0 or tiny error terms) rounded up: error-free products and sums
/// (two-product by FMA, Knuth's two-sum) collect every rounding error; if there was none the
/// plain sum is returned, otherwise the corrected sum plus a bound on what is left
/// (n·u² of the total for the error terms' own rounding, u for the final addition).
fn sum_up(terms: impl IntoIterator<Item = (f64, f64)>) -> f64 {
    let (mut hi, mut lo, mut total) = (0.0_f64, 0.0_f64, 0.0_f64);
    let mut n = 0.0_f64;
    let mut exact = true;
    for (c, x) in terms {
        let p = c * x;
        let e = c.mul_add(x, -p);
        let s = hi + p;
        let bv = s - hi;
        let t = (hi - (s - bv)) + (p - bv);
        hi = s;
        lo += t + e;
        exact &= t == 0.0 && e == 0.0;
        total += p.abs();
        n += 1.0;
    }
    if !hi.is_finite() || exact {
        return hi;
    }
    let r = hi + lo;
    next_up(r + 2.0 * UNIT_ROUNDOFF * r.abs() + (n + 2.0) * UNIT_ROUNDOFF * UNIT_ROUNDOFF * total)
}

/// `ε₀ sqrt(2k ln(1/δ')) + k ε₀ g` (the advanced-composition shape), rounded up.
fn advanced(k: f64, epsilon0: f64, slack: f64, g: f64) -> f64 {
    let value = epsilon0 * (2.0 * k * -slack.ln()).sqrt() + k * epsilon0 * g;
    if value.is_nan() {
        return f64::INFINITY;
    }
    value * (1.0 + 16.0 * UNIT_ROUNDOFF)
}

impl CompositionTheorem {
    /// All theorems, in report order.
    pub const ALL: [CompositionTheorem; 5] = [
        CompositionTheorem::Basic,
        CompositionTheorem::AdvancedDworkRothblumVadhan,
        CompositionTheorem::AdvancedTanh,
        CompositionTheorem::KairouzOhViswanath,
        CompositionTheorem::ViaZcdp,
    ];

    /// Method name for reports (stable, snake_case).
    pub fn name(self) -> &'static str {
        match self {
            CompositionTheorem::Basic => "basic_composition",
            CompositionTheorem::AdvancedDworkRothblumVadhan => "advanced_composition_drv",
            CompositionTheorem::AdvancedTanh => "advanced_composition_tanh",
            CompositionTheorem::KairouzOhViswanath => "kov_closed_form",
            CompositionTheorem::ViaZcdp => "zcdp_composition",
        }
    }

    /// Name for people (legends, reports).
    pub fn title(self) -> &'static str {
        match self {
            CompositionTheorem::Basic => "basic composition",
            CompositionTheorem::AdvancedDworkRothblumVadhan => {
                "advanced composition (Dwork–Rothblum–Vadhan)"
            }
            CompositionTheorem::AdvancedTanh => "advanced composition (tanh form)",
            CompositionTheorem::KairouzOhViswanath => "Kairouz–Oh–Viswanath closed form",
            CompositionTheorem::ViaZcdp => "composition through zCDP",
        }
    }

    /// Upper bound on δ at `epsilon` by basic composition: `Σ countᵢ δᵢ` (rounded up) when
    /// `epsilon ≥ Σ countᵢ εᵢ` (rounded up), else 1 (nothing known below).
    ///
    /// # Guarantee
    /// Upper bound: the adaptive composition is (ε, δ)-DP with the returned δ.
    pub fn basic_delta(events: &[(ApproxDp, u64)], epsilon: f64) -> f64 {
        match Summary::new(events) {
            Some(s) if s.k == 0.0 => 0.0,
            Some(s) if epsilon >= s.sum_epsilon => s.sum_delta.min(1.0),
            _ => 1.0,
        }
    }

    /// Upper bound on ε at total δ for the composition of `events` ((guarantee, count)).
    ///
    /// See the module documentation for the formulas and conventions. Returns +∞ when the
    /// theorem cannot reach δ (e.g. `Σ countᵢ δᵢ > δ` for basic composition).
    ///
    /// # Guarantee
    /// Upper bound: the adaptive composition is (ε, δ)-DP with the returned ε.
    pub fn epsilon(self, events: &[(ApproxDp, u64)], delta: f64) -> f64 {
        let Some(s) = Summary::new(events) else {
            return f64::INFINITY;
        };
        if delta.is_nan() || delta < 0.0 {
            return f64::INFINITY;
        }
        if s.k == 0.0 || delta >= 1.0 {
            return 0.0;
        }
        let basic = s.basic(delta);
        let bound = match self {
            CompositionTheorem::Basic => basic,
            CompositionTheorem::AdvancedDworkRothblumVadhan => {
                let slack = s.additive_slack(delta);
                if slack <= 0.0 {
                    f64::INFINITY
                } else {
                    advanced(s.k, s.epsilon0, slack, s.epsilon0.exp_m1())
                }
            }
            CompositionTheorem::AdvancedTanh => {
                let slack = s.additive_slack(delta);
                if slack <= 0.0 {
                    f64::INFINITY
                } else {
                    advanced(s.k, s.epsilon0, slack, (0.5 * s.epsilon0).tanh())
                }
            }
            CompositionTheorem::KairouzOhViswanath => kov(&s, delta),
            CompositionTheorem::ViaZcdp => {
                let slack = sub_down(delta, s.sum_delta);
                if slack <= 0.0 {
                    f64::INFINITY
                } else {
                    let rho = 0.5 * s.sum_epsilon_squared;
                    zcdp::epsilon_for_delta(rho, slack).epsilon
                }
            }
        };
        let eps = bound.min(basic);
        if eps.is_nan() {
            f64::INFINITY
        } else {
            eps
        }
    }
}

/// KOV Thm 3.4 with the slack δ' = 1 − (1 − δ)/(1 − δ₀)^k.
fn kov(s: &Summary, delta: f64) -> f64 {
    let slack = s.multiplicative_slack(delta);
    if slack < 0.0 {
        return f64::INFINITY;
    }
    let first = s.k * s.epsilon0 * (1.0 + 2.0 * UNIT_ROUNDOFF);
    if slack == 0.0 {
        return first;
    }
    let (k, e0) = (s.k, s.epsilon0);
    let mean = k * e0 * (0.5 * e0).tanh();
    let third = advanced(k, e0, slack, (0.5 * e0).tanh());
    // ln(e + sqrt(k ε₀²)/δ') as a log-sum-exp of 1 and ln y, y = sqrt(k) ε₀/δ'.
    let ln_y = 0.5 * k.ln() + e0.ln() - slack.ln();
    let ln_sum = if ln_y.is_nan() || ln_y == f64::NEG_INFINITY {
        1.0
    } else {
        ln_y.max(1.0) + (-(ln_y - 1.0).abs()).exp().ln_1p()
    };
    let second = (mean + e0 * (2.0 * k * ln_sum).sqrt()) * (1.0 + 16.0 * UNIT_ROUNDOFF);
    let second = if second.is_nan() {
        f64::INFINITY
    } else {
        second
    };
    first.min(second).min(third)
}
