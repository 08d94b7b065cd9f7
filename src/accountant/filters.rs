//! Privacy filters valid under fully adaptive composition: the next mechanism and its
//! parameters may be chosen from everything released before (and a refused release may be
//! followed by a cheaper one). See [`crate::Ledger`] for the PLD filter, valid for sequences
//! fixed in advance only.

use super::ledger::{parse_event, Budget};
use crate::analytic::event_bounds;
#[cfg(doc)]
use crate::analytic::rdp::default_orders;
use crate::analytic::rdp::RdpCurve;
use crate::error::{Error, Result};
use crate::mechanism::analytic_gaussian;
use crate::spec::{Event, MechanismKind, Neighbouring, SamplingKind};

/// The orders of [`RdpFilter::new`]: fewer than an RDP accountant's usual 156
/// ([`default_orders`]) because every order costs the filter's union bound `ln(m/δ)`:
/// 20 orders cost `ln 20 ≈ 3` nats of `(α − 1)·ε`, 156 orders `ln 156 ≈ 5`.
pub const FILTER_ORDERS: [f64; 20] = [
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0, 48.0,
    64.0, 128.0, 256.0,
];

/// A Rényi-DP privacy filter (Feldman & Zrnic, "Individual privacy accounting via a Rényi
/// filter", NeurIPS 2021, Thm 3.1): valid whatever the order and parameters of the events,
/// chosen adaptively from past outputs.
///
/// The orders α₁ … α_m are fixed in advance. The filter keeps, at each order, the sum
/// `S(α)` of the accepted events' RDP bounds `ε_i(α)` (from the crate's RDP accountant:
/// [`event_bounds::rdp_curve`]), and accepts the next event iff at some order
///
/// ```text
/// S(α) + ε_new(α) ≤ B(α) = ε − ln(m/δ)/(α − 1)
/// ```
///
/// # Guarantee
/// The accepted events together are (ε, δ)-DP. For one order this is Feldman & Zrnic's
/// filter: the stopped composition is (α, B(α))-RDP, and the RDP-to-DP conversion
/// `P(L > ε) ≤ e^{(α−1)(B(α) − ε)} = δ` gives the rest. With m orders, whichever order
/// holds at the end, the accepted events are exactly those the one-order filter of that
/// order would have accepted (every event it would refuse is refused, since its sum only
/// grows, and every accepted event fits it); so the privacy loss exceeds ε only where one of
/// the m one-order filters' losses does, each with probability at most δ/m (a union bound:
/// hence `ln(m/δ)`; with one order the budget is exactly `ε − ln(1/δ)/(α − 1)`).
///
/// ```
/// use pld_accountant::{Budget, MechanismSpec, Neighbouring, RdpFilter};
///
/// let mut filter = RdpFilter::new(Budget::new(3.0, 1e-5)?, Neighbouring::AddRemove)?;
/// let step = MechanismSpec::gaussian(1.0)?.with_sensitivity(1.0)?.poisson(0.01)?;
/// let mut steps = 0;
/// while filter.try_record(&step).is_ok() {
///     steps += 1;
/// }
/// assert!(steps > 500 && filter.epsilon_spent() <= 3.0);
/// # Ok::<(), pld_accountant::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RdpFilter {
    neighbouring: Neighbouring,
    budget: Budget,
    orders: Vec<f64>,
    spent: Vec<f64>,
    accepted: u64,
}

impl RdpFilter {
    /// A filter at [`FILTER_ORDERS`] (20 orders from 1.25 to 256).
    ///
    /// # Errors
    /// As [`RdpFilter::with_orders`].
    pub fn new(budget: Budget, neighbouring: Neighbouring) -> Result<RdpFilter> {
        RdpFilter::with_orders(budget, neighbouring, FILTER_ORDERS.to_vec())
    }

    /// A filter at the given orders, fixed for its whole life.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid budget, no orders, or an order that is not
    /// a finite number > 1.
    pub fn with_orders(
        budget: Budget,
        neighbouring: Neighbouring,
        orders: Vec<f64>,
    ) -> Result<RdpFilter> {
        let budget = Budget::new(budget.epsilon, budget.delta)?;
        if orders.is_empty() {
            return Err(Error::invalid("orders", "[]", "a non-empty list"));
        }
        if let Some(bad) = orders.iter().find(|a| !(a.is_finite() && **a > 1.0)) {
            return Err(Error::invalid("orders", bad, "finite numbers > 1"));
        }
        let spent = vec![0.0; orders.len()];
        Ok(RdpFilter {
            neighbouring,
            budget,
            orders,
            spent,
            accepted: 0,
        })
    }

    /// The orders.
    pub fn orders(&self) -> &[f64] {
        &self.orders
    }

    /// The budget.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The RDP budget at each order: `B(α) = ε − ln(m/δ)/(α − 1)` (may be negative: that
    /// order can accept nothing).
    pub fn rdp_budget(&self) -> Vec<f64> {
        let m = self.orders.len() as f64;
        let log_term = (m / self.budget.delta).ln();
        self.orders
            .iter()
            .map(|&a| self.budget.epsilon - log_term / (a - 1.0))
            .collect()
    }

    /// The sum of the accepted events' RDP bounds at each order.
    pub fn spent(&self) -> &[f64] {
        &self.spent
    }

    /// Number of accepted runs (Σ of the accepted events' counts).
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    /// The guaranteed ε at the budget's δ of what was accepted, by the filter's own
    /// conversion: `min_α S(α) + ln(m/δ)/(α − 1)` (at most the budget's ε; 0 while nothing
    /// is accepted).
    pub fn epsilon_spent(&self) -> f64 {
        if self.accepted == 0 {
            return 0.0;
        }
        self.epsilon_with(&self.spent)
    }

    /// Accept `event` (`count` runs of it) if some order stays within its RDP budget;
    /// otherwise refuse it and change nothing.
    ///
    /// # Errors
    /// [`Error::BudgetExceeded`] with the would-be ε (the conversion above with the event);
    /// [`Error::NotImplemented`] for an event without an RDP curve (e.g. `eps_delta` with
    /// δ > 0); the specification's errors for an invalid event.
    pub fn try_record(&mut self, event: &Event) -> Result<()> {
        let event = validated(event, self.neighbouring)?;
        let single = Event {
            count: 1,
            ..event.clone()
        };
        let curve = event_bounds::rdp_curve(&single, self.neighbouring, &self.orders).map_err(
            |reason| Error::NotImplemented {
                field: "event".into(),
                what: format!(
                    "the RDP filter for mechanism \"{}\"",
                    event.mechanism.name()
                ),
                detail: format!(": {}", reason.reason),
            },
        )?;
        let mut total = RdpCurve::from_fn(self.orders.clone(), |_| 0.0);
        total.compose(&curve, event.count);
        let with: Vec<f64> = self
            .spent
            .iter()
            .zip(total.divergences())
            .map(|(s, d)| s + if d.is_nan() { f64::INFINITY } else { *d })
            .collect();
        let fits = with.iter().zip(self.rdp_budget()).any(|(s, b)| *s <= b);
        if !fits {
            return Err(Error::BudgetExceeded {
                filter: "rdp".into(),
                epsilon: self.epsilon_with(&with),
                delta: self.budget.delta,
                budget: self.budget.epsilon,
            });
        }
        self.spent = with;
        self.accepted += event.count;
        Ok(())
    }

    fn epsilon_with(&self, sums: &[f64]) -> f64 {
        let log_term = (self.orders.len() as f64 / self.budget.delta).ln();
        sums.iter()
            .zip(&self.orders)
            .map(|(s, a)| s + log_term / (a - 1.0))
            .fold(f64::INFINITY, f64::min)
    }
}

/// A Gaussian-DP privacy filter (Smith & Thakurta, "Fully adaptive composition for Gaussian
/// differential privacy", 2022): for unsampled Gaussian events, accepted while
/// `Σ μᵢ² ≤ μ_B²`, μᵢ = Δᵢ/σᵢ (2Δᵢ/σᵢ under replace-one), whatever the order and
/// parameters of the events, chosen adaptively from past outputs.
///
/// `μ_B` is the largest μ (up to a relative 1e-12) whose Gaussian trade-off curve is
/// (ε, δ)-DP by the certified closed form: `δ_μ(ε) ≤ δ` of the budget.
///
/// # Guarantee
/// The accepted events together are μ_B-GDP, hence (ε, δ)-DP.
#[derive(Debug, Clone, PartialEq)]
pub struct GdpFilter {
    neighbouring: Neighbouring,
    budget: Budget,
    mu_budget: f64,
    mu_squared: f64,
    accepted: u64,
}

impl GdpFilter {
    /// A filter for `budget`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid budget.
    pub fn new(budget: Budget, neighbouring: Neighbouring) -> Result<GdpFilter> {
        let budget = Budget::new(budget.epsilon, budget.delta)?;
        Ok(GdpFilter {
            neighbouring,
            budget,
            mu_budget: mu_for_budget(budget),
            mu_squared: 0.0,
            accepted: 0,
        })
    }

    /// The budget.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// μ_B: the largest GDP parameter within the budget.
    pub fn mu_budget(&self) -> f64 {
        self.mu_budget
    }

    /// μ of what was accepted: `sqrt(Σ μᵢ²)`.
    pub fn mu_spent(&self) -> f64 {
        self.mu_squared.sqrt()
    }

    /// Number of accepted runs.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    /// Guaranteed ε at the budget's δ of what was accepted (0 while nothing is).
    pub fn epsilon_spent(&self) -> f64 {
        if self.mu_squared == 0.0 {
            return 0.0;
        }
        analytic_gaussian::epsilon_upper_for_delta(self.mu_spent(), self.budget.delta)
    }

    /// Accept `event` (`count` runs) if `Σ μᵢ²` stays at most `μ_B²`; otherwise refuse it and
    /// change nothing.
    ///
    /// # Errors
    /// [`Error::BudgetExceeded`] with the would-be ε; [`Error::NotImplemented`] for anything
    /// but an unsampled Gaussian; the specification's errors for an invalid event.
    pub fn try_record(&mut self, event: &Event) -> Result<()> {
        let event = validated(event, self.neighbouring)?;
        let mu = match (&event.mechanism.kind, event.sampling.kind) {
            (&MechanismKind::Gaussian { sigma, sensitivity }, SamplingKind::None) => {
                sensitivity.pair_shift(self.neighbouring) / sigma
            }
            _ => {
                return Err(Error::NotImplemented {
                    field: "event".into(),
                    what: "the GDP filter for anything but an unsampled Gaussian".into(),
                    detail: ": use the RDP filter".into(),
                })
            }
        };
        let with = self.mu_squared + event.count as f64 * mu * mu;
        // NaN (an overflowing μ²) is refused too.
        let fits = with <= self.mu_budget * self.mu_budget;
        if !fits {
            return Err(Error::BudgetExceeded {
                filter: "gdp".into(),
                epsilon: analytic_gaussian::epsilon_upper_for_delta(with.sqrt(), self.budget.delta),
                delta: self.budget.delta,
                budget: self.budget.epsilon,
            });
        }
        self.mu_squared = with;
        self.accepted += event.count;
        Ok(())
    }
}

/// The largest μ with certified `δ_μ(ε) ≤ δ` (bisection; the lower end always certified).
fn mu_for_budget(budget: Budget) -> f64 {
    let fits =
        |mu: f64| analytic_gaussian::delta_for_epsilon(mu, budget.epsilon).upper <= budget.delta;
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while fits(hi) && hi < 1e6 {
        lo = hi;
        hi *= 2.0;
    }
    while hi - lo > 1e-12 * hi {
        let mid = 0.5 * (lo + hi);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The event validated as a specification's (through its JSON form).
fn validated(event: &Event, neighbouring: Neighbouring) -> Result<Event> {
    parse_event(&super::ledger::event_json(event), neighbouring)
}
