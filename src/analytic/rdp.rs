//! Rényi-DP curves: composition by order-wise addition and conversion to (ε, δ).
//!
//! A mechanism is (α, D_α)-RDP if `D_α(M(x)‖M(x')) ≤ D_α` for all neighbours. Rényi divergences
//! add under adaptive composition, so a composition's curve is the order-wise sum of the
//! curves, and each order then gives an (ε, δ) guarantee:
//! ```text
//! simple (Mironov 2017, Prop. 3):      ε = D_α + ln(1/δ)/(α−1)
//! CKS (Canonne–Kamath–Steinke 2020):   ε = D_α + ln(1 − 1/α) − (ln δ + ln α)/(α−1)
//!                                      δ = exp((α−1)(D_α − ε)) · (1 − 1/α)^{α−1} / α
//! Kullback–Leibler (α ≥ 1):            δ(0) = TV ≤ sqrt(1 − e^{−KL}) ≤ sqrt(1 − e^{−D_α})
//! ```
//! All values are in nats. The reported bound is the minimum over orders and conversions.

use crate::numeric::log_space::ln_neg_expm1_neg;
use serde::Serialize;

/// Orders below this do not use the CKS conversion (it is numerically unstable as α → 1 and
/// never the best there); dp_accounting uses the same cut.
const CKS_MIN_ORDER: f64 = 1.01;

/// dp_accounting's default orders: 1.1, 1.2, …, 10.9, 11, …, 63, 128, 256, 512, 1024.
///
/// ```text
/// 1 + x/10 for x = 1..=99,  then 11..=63,  then 128, 256, 512, 1024      (156 orders)
/// ```
/// Computed as `1 + x/10` (not `0.1·x`) so the orders are the same doubles as
/// dp_accounting 0.6.0's `DEFAULT_RDP_ORDERS`.
///
/// # References
/// dp_accounting 0.6.0, `rdp/rdp_privacy_accountant.py`, `DEFAULT_RDP_ORDERS`.
pub fn default_orders() -> Vec<f64> {
    let mut orders: Vec<f64> = (1..100).map(|x| 1.0 + f64::from(x) / 10.0).collect();
    orders.extend((11..64).map(f64::from));
    orders.extend([128.0, 256.0, 512.0, 1024.0]);
    orders
}

/// Which RDP → (ε, δ) conversion gave the reported value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RdpConversion {
    /// Mironov 2017: ε = D_α + ln(1/δ)/(α−1).
    Simple,
    /// Canonne–Kamath–Steinke 2020: ε = D_α + ln(1 − 1/α) − (ln δ + ln α)/(α−1).
    CanonneKamathSteinke,
    /// δ ≥ sqrt(1 − e^{−D_α}) (TV ≤ sqrt(1 − e^{−KL})), so ε = 0.
    KullbackLeibler,
}

/// Upper bound on ε at a given δ from an RDP curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RdpEpsilon {
    /// Guaranteed upper bound on ε (may be +∞).
    pub epsilon: f64,
    /// The order α that attains it.
    pub order: f64,
    /// The conversion that attains it.
    pub conversion: RdpConversion,
    /// The best value of the simple conversion alone (for comparison).
    pub epsilon_simple: f64,
}

/// Upper bound on δ at a given ε from an RDP curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RdpDelta {
    /// Guaranteed upper bound on δ (in [0, 1]).
    pub delta: f64,
    /// The order α that attains it.
    pub order: f64,
    /// The conversion that attains it.
    pub conversion: RdpConversion,
}

/// An RDP curve: an upper bound D_α on the Rényi divergence at each order α > 1.
///
/// Entries may be +∞ (no guarantee at that order). Orders ≤ 1 are kept but only the
/// Kullback–Leibler conversion uses them (at α = 1); NaN entries are read as +∞ and negative
/// ones as 0 by the conversions, so no input makes them return NaN.
#[derive(Debug, Clone, PartialEq)]
pub struct RdpCurve {
    orders: Vec<f64>,
    divergences: Vec<f64>,
}

impl RdpCurve {
    /// The curve D_α = 0 (no release).
    pub fn zero(orders: Vec<f64>) -> Self {
        let divergences = vec![0.0; orders.len()];
        RdpCurve {
            orders,
            divergences,
        }
    }
    /// The curve with D_α = f(α) at each order.
    pub fn from_fn(orders: Vec<f64>, f: impl Fn(f64) -> f64) -> Self {
        let divergences = orders.iter().map(|&a| f(a)).collect();
        RdpCurve {
            orders,
            divergences,
        }
    }
    /// The orders.
    pub fn orders(&self) -> &[f64] {
        &self.orders
    }
    /// D_α at each order.
    pub fn divergences(&self) -> &[f64] {
        &self.divergences
    }

    /// Add `count` copies of `other` order-wise (adaptive composition).
    ///
    /// ```text
    /// D_α ← D_α + count · D'_α          (count · D'_α = 0 when count = 0, even if D'_α = ∞)
    /// ```
    /// If `other` has different orders, each order α of `self` uses the smallest `D'` over the
    /// orders `α' ≥ α` of `other` (valid since `D_α` is non-decreasing in α), and +∞ if `other`
    /// has no such order. So mismatched curves still compose soundly, never panic, and never
    /// produce NaN (NaN entries of `other` count as +∞).
    ///
    /// # Guarantee
    /// If both curves are upper bounds, the result is an upper bound on the RDP of the
    /// composition (up to one rounding per order, which is far below any other error here).
    ///
    /// # References
    /// Mironov, "Rényi differential privacy", CSF 2017, Prop. 1; Lemma 33 of Steinke,
    /// arXiv:2210.00597 (monotonicity in α).
    pub fn compose(&mut self, other: &RdpCurve, count: u64) {
        if count == 0 {
            return;
        }
        let scale = count as f64;
        let same_orders = self.orders == other.orders;
        for (k, (&alpha, d)) in self.orders.iter().zip(&mut self.divergences).enumerate() {
            let other_d = if same_orders {
                other.divergences[k]
            } else {
                other.at_or_above(alpha)
            };
            let other_d = if other_d.is_nan() {
                f64::INFINITY
            } else {
                other_d
            };
            if other_d != 0.0 {
                *d += scale * other_d;
            }
        }
    }

    /// The smallest D over the orders ≥ α (+∞ if there is none): an upper bound on D_α.
    fn at_or_above(&self, alpha: f64) -> f64 {
        self.orders
            .iter()
            .zip(&self.divergences)
            .filter(|(&a, _)| a >= alpha)
            .map(|(_, &d)| if d.is_nan() { f64::INFINITY } else { d })
            .fold(f64::INFINITY, f64::min)
    }

    /// Best valid upper bound on ε at δ.
    ///
    /// For each order α > 1 (and the KL check also at α = 1):
    /// ```text
    /// simple:  ε = D_α − ln δ/(α−1)
    /// CKS:     ε = D_α + ln(1 − 1/α) − (ln δ + ln α)/(α−1)            (α > 1.01 only)
    /// KL:      ε = 0   if  δ > sqrt(1 − e^{−D_α})                     (α ≥ 1)
    /// ε(δ) = max(0, min over orders and conversions)
    /// ```
    /// The KL test is dp_accounting's `δ² + expm1(−D) > 0`, evaluated as
    /// `2 ln δ > ln(−expm1(−D))` so that it does not underflow for tiny δ (D = 0 passes it).
    /// δ ≥ 1 gives 0; δ ≤ 0 (or NaN) gives +∞ unless every D is 0. A curve with no usable
    /// order gives +∞ (reported at order +∞). Valid for any δ, including 1e-300, and D = +∞
    /// entries; never NaN. Ties keep the first order, and at one order the conversion order
    /// KL, CKS, simple.
    ///
    /// # Guarantee
    /// Upper bound on the ε of the composition at δ, given that the curve is an upper bound.
    ///
    /// # References
    /// Mironov 2017, Prop. 3; Canonne, Kamath & Steinke, "The discrete Gaussian for
    /// differential privacy", NeurIPS 2020, Prop. 12 (also Asoodeh et al. 2020, eq. 20);
    /// dp_accounting 0.6.0 `compute_epsilon`.
    pub fn epsilon(&self, delta: f64) -> RdpEpsilon {
        let first_order = self.orders.first().copied().unwrap_or(f64::INFINITY);
        if delta >= 1.0 {
            return RdpEpsilon {
                epsilon: 0.0,
                order: first_order,
                conversion: RdpConversion::KullbackLeibler,
                epsilon_simple: 0.0,
            };
        }
        if delta.is_nan() || delta <= 0.0 {
            let all_zero =
                !self.divergences.is_empty() && self.divergences.iter().all(|&d| d <= 0.0);
            let epsilon = if all_zero { 0.0 } else { f64::INFINITY };
            return RdpEpsilon {
                epsilon,
                order: first_order,
                conversion: if all_zero {
                    RdpConversion::KullbackLeibler
                } else {
                    RdpConversion::Simple
                },
                epsilon_simple: epsilon,
            };
        }
        let log_delta = delta.ln();
        let mut best = RdpEpsilon {
            epsilon: f64::INFINITY,
            order: f64::INFINITY,
            conversion: RdpConversion::Simple,
            epsilon_simple: f64::INFINITY,
        };
        for (&alpha, &raw) in self.orders.iter().zip(&self.divergences) {
            if alpha.is_nan() || alpha < 1.0 {
                continue;
            }
            let d = sanitize(raw);
            let mut candidates = [(f64::INFINITY, RdpConversion::KullbackLeibler); 3];
            if kl_suffices(d, 2.0 * log_delta) {
                candidates[0].0 = 0.0;
            }
            if alpha > CKS_MIN_ORDER && alpha.is_finite() {
                let am1 = alpha - 1.0;
                candidates[1] = (
                    d + (-1.0 / alpha).ln_1p() - (log_delta + alpha.ln()) / am1,
                    RdpConversion::CanonneKamathSteinke,
                );
            }
            if alpha > 1.0 {
                let simple = if alpha.is_finite() {
                    d - log_delta / (alpha - 1.0)
                } else {
                    d
                };
                candidates[2] = (simple, RdpConversion::Simple);
                best.epsilon_simple = best.epsilon_simple.min(simple);
            }
            for (epsilon, conversion) in candidates {
                // Compared after the clamp at 0, so that among bounds ≤ 0 the first one wins
                // (at one order: KL, then CKS, then simple).
                let epsilon = epsilon.max(0.0);
                if epsilon < best.epsilon {
                    best.epsilon = epsilon;
                    best.order = alpha;
                    best.conversion = conversion;
                }
            }
        }
        best.epsilon = best.epsilon.max(0.0);
        best.epsilon_simple = best.epsilon_simple.max(0.0);
        if best.order == f64::INFINITY && best.epsilon == f64::INFINITY {
            best.order = first_order;
        }
        best
    }

    /// Best valid upper bound on δ at ε.
    ///
    /// For each order α ≥ 1:
    /// ```text
    /// KL:      ln δ = ½ ln(1 − e^{−D_α})                               (α ≥ 1)
    /// CKS:     ln δ = (α−1)(D_α − ε + ln(1 − 1/α)) − ln α              (α > 1.01)
    /// simple:  ln δ = (α−1)(D_α − ε)                                   (α > 1; never better
    ///                                                                   than CKS where both apply)
    /// δ(ε) = min(1, exp(min over orders and conversions))
    /// ```
    /// This is dp_accounting's `compute_delta` plus the simple bound for 1 < α ≤ 1.01.
    /// ε = +∞ gives 0 unless every D is +∞; ε < 0 or NaN gives the trivial bound 1 (the
    /// conversions are stated for ε ≥ 0). Never NaN.
    ///
    /// # Guarantee
    /// Upper bound on the δ of the composition at ε, given that the curve is an upper bound.
    ///
    /// # References
    /// Mironov 2017, Prop. 3; Canonne, Kamath & Steinke 2020, Prop. 12; dp_accounting 0.6.0
    /// `compute_delta`.
    pub fn delta(&self, epsilon: f64) -> RdpDelta {
        let first_order = self.orders.first().copied().unwrap_or(f64::INFINITY);
        let trivial = RdpDelta {
            delta: 1.0,
            order: first_order,
            conversion: RdpConversion::KullbackLeibler,
        };
        if epsilon.is_nan() || epsilon < 0.0 {
            return trivial;
        }
        let mut best_log = f64::INFINITY;
        let mut best = trivial;
        for (&alpha, &raw) in self.orders.iter().zip(&self.divergences) {
            if alpha.is_nan() || alpha < 1.0 {
                continue;
            }
            let d = sanitize(raw);
            // D − ε, with ∞ − ∞ read as ∞ (no guarantee at this order).
            let gap = if d == f64::INFINITY {
                f64::INFINITY
            } else {
                d - epsilon
            };
            let mut candidates = [(f64::INFINITY, RdpConversion::KullbackLeibler); 3];
            candidates[0].0 = if d == 0.0 {
                f64::NEG_INFINITY
            } else {
                0.5 * ln_neg_expm1_neg(d)
            };
            if alpha > CKS_MIN_ORDER && alpha.is_finite() {
                let am1 = alpha - 1.0;
                candidates[1] = (
                    am1 * (gap + (-1.0 / alpha).ln_1p()) - alpha.ln(),
                    RdpConversion::CanonneKamathSteinke,
                );
            }
            if alpha > 1.0 && alpha.is_finite() {
                candidates[2] = ((alpha - 1.0) * gap, RdpConversion::Simple);
            }
            for (log_delta, conversion) in candidates {
                if log_delta < best_log {
                    best_log = log_delta;
                    best = RdpDelta {
                        delta: 0.0,
                        order: alpha,
                        conversion,
                    };
                }
            }
        }
        best.delta = if best_log == f64::INFINITY {
            1.0
        } else if best_log == f64::NEG_INFINITY {
            // A divergence of 0: the pair is one distribution, δ = 0 exactly.
            0.0
        } else {
            // A bound below the smallest double (e^{−900}) is still a positive one: it rounds
            // up to that double, never to 0, which would claim pure DP.
            best_log.exp().clamp(f64::from_bits(1), 1.0)
        };
        best
    }
}

/// A curve entry as the conversions read it: NaN → +∞ (no guarantee), negative → 0 (a Rényi
/// divergence is never negative, so 0 is the smallest value consistent with the bound).
fn sanitize(d: f64) -> f64 {
    if d.is_nan() {
        f64::INFINITY
    } else {
        d.max(0.0)
    }
}

/// dp_accounting's KL test `δ² + expm1(−D) > 0`, i.e. `δ > sqrt(1 − e^{−D})`, in log form
/// (`two_log_delta = 2 ln δ`).
fn kl_suffices(d: f64, two_log_delta: f64) -> bool {
    d == 0.0 || two_log_delta > ln_neg_expm1_neg(d)
}
