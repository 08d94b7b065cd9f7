//! Every applicable accountant on one specification: the data behind `pld compare`.
//!
//! [`compare`] runs the PLD accountant and each analytic accountant on the same composition
//! and δ, and returns one row per method with its ε, what kind of number it is (upper bound,
//! lower bound, estimate) and how long it took; methods that cannot handle the composition
//! are listed with the reason.
//!
//! It sits on top of the pipeline: the [`crate::accountant`] for the PLD rows and the
//! [`crate::analytic`] accountants for the others. `Display` prints a [`Comparison`] as a small
//! table.

use crate::accountant::{Accountant, AccountantOptions};
use crate::analytic::composition_theorems::{ApproxDp, CompositionTheorem};
use crate::analytic::event_bounds::{self, NotApplicable};
use crate::analytic::rdp::{default_orders, RdpCurve};
use crate::analytic::{clt, optimal_composition, zcdp};
use crate::error::{Error, Result};
use crate::spec::CompositionSpec;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::time::Instant;

/// What a reported number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Guaranteed: the true ε is at most this.
    UpperBound,
    /// Guaranteed: the true ε is at least this.
    LowerBound,
    /// Neither: an approximation (the CLT).
    Estimate,
}

/// One method's answer, displayed as `rdp: ε = 2.101365 (upper bound)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodRow {
    /// Stable method name, e.g. `"rdp"`.
    pub method: Cow<'static, str>,
    /// ε at the δ of the comparison (`"inf"` in JSON when infinite).
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub epsilon: f64,
    /// Upper bound, lower bound or estimate.
    pub kind: Kind,
    /// Wall-clock computing time of this method (for the PLD rows: of the one computation
    /// that gives both).
    pub seconds: f64,
    /// How the value was obtained (optimal order, conversion, grid, ...).
    pub detail: String,
}

/// A method that does not apply, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotApplicableRow {
    /// Stable method name.
    pub method: Cow<'static, str>,
    /// One sentence.
    pub reason: String,
}

/// All methods on one composition at one δ.
///
/// Displayed as a table (computing times left out):
///
/// ```text
/// ε at δ = 1e-5
/// method               ε  kind
/// pld_upper     1.828244  upper bound
/// pld_lower     1.826776  lower bound
/// rdp           2.101366  upper bound
/// clt_estimate  1.617712  estimate
/// not applicable:
///   zcdp: zCDP has no useful amplification by subsampling (use RDP or the PLD)
///   optimal_composition, basic_composition, …: gaussian noise has no pure ε; …
/// ```
///
/// Methods refused for the same reason share a line.
///
/// Bounds are rounded outward (upper bounds up, lower bounds down), estimates to nearest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The δ every row answers for.
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub delta: f64,
    /// The methods that apply, in report order.
    pub rows: Vec<MethodRow>,
    /// The methods that do not apply.
    pub not_applicable: Vec<NotApplicableRow>,
}

impl Comparison {
    /// The row of `method`, if it applies.
    pub fn row(&self, method: &str) -> Option<&MethodRow> {
        self.rows.iter().find(|r| r.method == method)
    }
}

/// Method name of the PLD upper bound row.
pub const PLD_UPPER: &str = "pld_upper";
/// Method name of the PLD lower bound row.
pub const PLD_LOWER: &str = "pld_lower";
/// Method name of the RDP row.
pub const RDP: &str = "rdp";
/// Method name of the zCDP row.
pub const ZCDP: &str = "zcdp";
/// Method name of the exact optimal (KOV) composition row.
pub const OPTIMAL_COMPOSITION: &str = "optimal_composition";
/// Method name of the CLT row.
pub const CLT_ESTIMATE: &str = "clt_estimate";
/// Method name of the row "what Poisson accounting would claim" (non-Poisson sampling only).
pub const POISSON_CLAIM: &str = "poisson_claim";

/// A method's name for people (legends, reports), e.g. `"RDP (Rényi DP)"` for `"rdp"`; an
/// unknown name is returned as it is.
///
/// ```
/// use pld_accountant::comparison::{method_title, RDP};
/// assert_eq!(method_title(RDP), "RDP (Rényi DP)");
/// assert_eq!(method_title("something_else"), "something_else");
/// ```
pub fn method_title(method: &str) -> &str {
    match method {
        PLD_UPPER => "PLD upper bound",
        PLD_LOWER => "PLD lower bound",
        RDP => "RDP (Rényi DP)",
        ZCDP => "zCDP",
        OPTIMAL_COMPOSITION => "optimal composition (Kairouz–Oh–Viswanath)",
        CLT_ESTIMATE => "CLT estimate (no guarantee)",
        POISSON_CLAIM => "what Poisson accounting would claim",
        other => CompositionTheorem::ALL
            .iter()
            .find(|t| t.name() == other)
            .map_or(other, |t| t.title()),
    }
}

/// Run every accountant on `spec` at `delta`.
///
/// # Guarantee
/// Each row's `kind` says what its ε is: `upper_bound` rows are guaranteed upper bounds on
/// the smallest ε for which the composition is (ε, δ)-DP, `lower_bound` rows guaranteed lower
/// bounds, `estimate` rows neither.
///
/// # Errors
/// [`Error::InvalidParameter`] for δ outside (0, 1) and for invalid PLD options. A method that
/// cannot handle the composition is listed in `not_applicable`, not an error.
pub fn compare(
    spec: &CompositionSpec,
    delta: f64,
    options: AccountantOptions,
) -> Result<Comparison> {
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
    }
    let mut comparison = Comparison {
        delta,
        rows: Vec::new(),
        not_applicable: Vec::new(),
    };
    pld_rows(spec, delta, options, &mut comparison)?;
    let analytic: [(&'static str, Kind, Method); 3] = [
        (RDP, Kind::UpperBound, rdp_epsilon),
        (ZCDP, Kind::UpperBound, zcdp_epsilon),
        (
            OPTIMAL_COMPOSITION,
            Kind::UpperBound,
            optimal_composition_epsilon,
        ),
    ];
    for (method, kind, run) in analytic {
        comparison.push(method, kind, || run(spec, delta));
    }
    for theorem in CompositionTheorem::ALL {
        comparison.push(theorem.name(), Kind::UpperBound, || {
            let events = approximate_dp_events(spec)?;
            Ok((theorem.epsilon(&events, delta), String::new()))
        });
    }
    comparison.push(CLT_ESTIMATE, Kind::Estimate, || {
        let estimate = clt::estimate(spec, delta)?;
        Ok((estimate.epsilon, format!("μ = {:.6}", estimate.mu)))
    });
    if let Some((poisson, how)) = poisson_counterpart(spec) {
        comparison.push(POISSON_CLAIM, Kind::Estimate, || {
            let answer = Accountant::new(&poisson, options)
                .and_then(|a| a.epsilon_for_delta(delta))
                .map_err(|e| NotApplicable::new(e.to_string()))?;
            Ok((
                answer.epsilon.upper,
                format!(
                    "NOT a guarantee for this sampling: the PLD upper bound of {how}, what \
                     accounting as if batches were Poisson-sampled would claim"
                ),
            ))
        });
    }
    Ok(comparison)
}

/// The composition as Poisson accounting would see it, when its sampling is not Poisson:
/// random allocation of k of t steps becomes Poisson sampling at rate k/t over t steps per
/// epoch, shuffling into t batches (under add/remove) Poisson sampling at rate 1/t over t
/// steps per epoch, truncated Poisson sampling the same Poisson sampling without the cut; fixed batches
/// of B out of N (every event Gaussian, under replace-one, the per-record bound half the
/// replace-one shift) become
/// Poisson sampling at rate B/N under add/remove, Opacus' accounting of a fixed-size loader.
/// `None` when every event is already Poisson-sampled or unsampled, or for mixes this does
/// not cover.
fn poisson_counterpart(spec: &CompositionSpec) -> Option<(CompositionSpec, String)> {
    let add_remove = spec.neighbouring == crate::spec::Neighbouring::AddRemove;
    let allocation = spec.events.iter().any(|e| {
        e.sampling.random_allocation_steps().is_some()
            || e.sampling.truncated_poisson_parameters().is_some()
            || (add_remove && e.sampling.shuffle_steps().is_some())
    });
    let batches = spec.events.iter().all(|e| e.sampling.batch().is_some())
        && spec.neighbouring == crate::spec::Neighbouring::Replace;
    if allocation {
        let mut events = Vec::with_capacity(spec.events.len());
        for event in &spec.events {
            let truncated = event.sampling.truncated_poisson_parameters();
            let allocated = event
                .sampling
                .random_allocation_steps()
                .or_else(|| event.sampling.shuffle_steps().map(|t| (t, 1)));
            events.push(match (allocated, truncated) {
                (Some((t, k)), _) => crate::spec::Event::new(event.mechanism.clone())
                    .poisson(k as f64 / t as f64)
                    .ok()?
                    .repeat(event.count.checked_mul(t)?)
                    .ok()?,
                (None, Some((rate, _, _))) => crate::spec::Event::new(event.mechanism.clone())
                    .poisson(rate)
                    .ok()?
                    .repeat(event.count)
                    .ok()?,
                _ => event.clone(),
            });
        }
        let poisson = CompositionSpec::new(spec.neighbouring, events).ok()?;
        return Some((
            poisson,
            "Poisson sampling at rate k/t over t steps per epoch".into(),
        ));
    }
    if batches {
        let mut events = Vec::with_capacity(spec.events.len());
        for event in &spec.events {
            let (b, n) = event.sampling.batch()?;
            // The Gaussian with the per-record bound: half the replace-one shift (as given
            // by `sensitivity`, or `replace_sensitivity` / 2).
            let crate::spec::MechanismKind::Gaussian { sigma, sensitivity } = event.mechanism.kind
            else {
                return None;
            };
            let per_record = sensitivity.pair_shift(crate::spec::Neighbouring::Replace) / 2.0;
            let mechanism = crate::spec::MechanismSpec::gaussian(sigma)
                .and_then(|g| g.with_sensitivity(per_record))
                .ok()?;
            events.push(
                crate::spec::Event::new(mechanism)
                    .poisson(b as f64 / n as f64)
                    .ok()?
                    .repeat(event.count)
                    .ok()?,
            );
        }
        let poisson = CompositionSpec::new(crate::spec::Neighbouring::AddRemove, events).ok()?;
        return Some((
            poisson,
            "Poisson sampling at rate B/N under add/remove".into(),
        ));
    }
    None
}

/// One analytic method's answer: ε and how it was obtained, or why it does not apply.
pub type MethodResult = std::result::Result<(f64, String), NotApplicable>;

/// One analytic method, e.g. [`rdp_epsilon`].
pub type Method = fn(&CompositionSpec, f64) -> MethodResult;

impl Comparison {
    fn push(
        &mut self,
        method: &'static str,
        kind: Kind,
        run: impl FnOnce() -> std::result::Result<(f64, String), NotApplicable>,
    ) {
        let start = Instant::now();
        let outcome = run();
        let seconds = start.elapsed().as_secs_f64();
        match outcome {
            Ok((epsilon, detail)) => self.rows.push(MethodRow {
                method: method.into(),
                // A NaN would mean a bug; as an upper bound it can only be reported as ∞.
                epsilon: if epsilon.is_nan() {
                    f64::INFINITY
                } else {
                    epsilon
                },
                kind,
                seconds,
                detail,
            }),
            Err(NotApplicable { reason }) => self.not_applicable.push(NotApplicableRow {
                method: method.into(),
                reason,
            }),
        }
    }
}

fn pld_rows(
    spec: &CompositionSpec,
    delta: f64,
    options: AccountantOptions,
    comparison: &mut Comparison,
) -> Result<()> {
    let start = Instant::now();
    let answer = Accountant::new(spec, options).and_then(|a| a.epsilon_for_delta(delta));
    let seconds = start.elapsed().as_secs_f64();
    match answer {
        Ok(answer) => {
            let s = &answer.settings;
            let detail = match s.grid_step {
                Some(h) => format!("{}, grid step {h:.3e}", s.method),
                None => s.method.to_string(),
            };
            // The upper end may come from a finer grid (`AccountantOptions::upper_grid_step`).
            let upper_detail = match s.upper_grid_step {
                Some(fine) => format!("{detail}; upper bound on grid step {fine:.3e}"),
                None => detail.clone(),
            };
            // Or from a closed form below the grid's, or beside it (`Settings::upper_method`,
            // `lower_method`).
            let upper_detail = match &s.upper_method {
                Some(how) => format!("{upper_detail}; upper bound: {how}"),
                None => upper_detail,
            };
            let detail = match &s.lower_method {
                Some(how) => format!("{detail}; lower bound: {how}"),
                None => detail,
            };
            for (method, epsilon, kind, detail) in [
                (
                    PLD_UPPER,
                    answer.epsilon.upper,
                    Kind::UpperBound,
                    upper_detail,
                ),
                (PLD_LOWER, answer.epsilon.lower, Kind::LowerBound, detail),
            ] {
                comparison.rows.push(MethodRow {
                    method: method.into(),
                    epsilon,
                    kind,
                    seconds,
                    detail,
                });
            }
            Ok(())
        }
        Err(e @ (Error::InvalidParameter { .. } | Error::MissingParameter { .. })) => Err(e),
        Err(other) => {
            for method in [PLD_UPPER, PLD_LOWER] {
                comparison.not_applicable.push(NotApplicableRow {
                    method: method.into(),
                    reason: other.to_string(),
                });
            }
            Ok(())
        }
    }
}

/// RDP accountant: the events' curves added over dp_accounting's orders, converted at δ by
/// the better of Mironov's and Canonne–Kamath–Steinke's conversions.
///
/// # Guarantee
/// Upper bound on ε.
///
/// # Errors
/// [`NotApplicable`] when an event has no RDP curve ([`event_bounds::rdp_curve`]).
pub fn rdp_epsilon(spec: &CompositionSpec, delta: f64) -> MethodResult {
    let orders = default_orders();
    let mut total = RdpCurve::zero(orders.clone());
    for event in &spec.events {
        let curve = event_bounds::rdp_curve(event, spec.neighbouring, &orders)?;
        total.compose(&curve, event.count);
    }
    let best = total.epsilon(delta);
    Ok((
        best.epsilon,
        format!("order {}, {:?} conversion", best.order, best.conversion),
    ))
}

/// zCDP accountant: ρ added over the events (their δ added too, for `eps_delta`), then the
/// better zCDP conversion at the remaining δ.
///
/// # Guarantee
/// Upper bound on ε (+∞ when the events' own δ uses up δ).
///
/// # Errors
/// [`NotApplicable`] for sampled events ([`event_bounds::zcdp`]).
pub fn zcdp_epsilon(spec: &CompositionSpec, delta: f64) -> MethodResult {
    let (mut rho, mut spent) = (0.0, 0.0);
    for event in &spec.events {
        let (r, d) = event_bounds::zcdp(event, spec.neighbouring)?;
        rho += event.count as f64 * r;
        spent += event.count as f64 * d;
    }
    let remaining = delta - spent;
    if remaining.is_nan() || remaining <= 0.0 {
        return Ok((
            f64::INFINITY,
            format!("the events' own δ ({spent:e}) uses up δ"),
        ));
    }
    let best = zcdp::epsilon_for_delta(rho, remaining);
    Ok((
        best.epsilon,
        format!("ρ = {rho:.6e}, {:?} conversion", best.conversion),
    ))
}

fn approximate_dp_events(
    spec: &CompositionSpec,
) -> std::result::Result<Vec<(ApproxDp, u64)>, NotApplicable> {
    spec.events
        .iter()
        .map(|e| Ok((event_bounds::approximate_dp(e, spec.neighbouring)?, e.count)))
        .collect()
}

/// Optimal composition of the events' (ε, δ) guarantees: the smallest ε that holds for every
/// adaptive composition of mechanisms with these guarantees.
///
/// - Identical events: Kairouz–Oh–Viswanath's exact formula for k copies of (ε₀, δ₀).
/// - Distinct events: the optimum is the composition of each event's worst-case pair, the
///   "leaky randomized response" of its (εᵢ, δᵢ) (Kairouz, Oh & Viswanath 2015, Lemma 3.1;
///   Murtagh & Vadhan 2016), composed here in the PLD engine (`eps_delta` events, pessimistic
///   grid). The row is the smallest of that PLD upper bound, the homogeneous formula at the
///   worst event's guarantee, and the composition theorems, all upper bounds on the same
///   optimum, so it is never worse than basic or advanced composition.
///
/// # Guarantee
/// Upper bound on ε (exact up to the grid's discretization for distinct events).
///
/// # Errors
/// [`NotApplicable`] when an event has no (ε, δ) guarantee ([`event_bounds::approximate_dp`]).
pub fn optimal_composition_epsilon(spec: &CompositionSpec, delta: f64) -> MethodResult {
    let events = approximate_dp_events(spec)?;
    // Every event is (max ε, max δ)-DP, so the homogeneous optimum for that pair is an upper
    // bound; it is the exact optimum over (ε, δ)-DP mechanisms when the events are identical.
    let epsilon0 = events.iter().map(|e| e.0.epsilon).fold(0.0, f64::max);
    let delta0 = events.iter().map(|e| e.0.delta).fold(0.0, f64::max);
    let k: u64 = events.iter().fold(0u64, |k, e| k.saturating_add(e.1));
    let worst = optimal_composition::epsilon_for_delta(epsilon0, delta0, k, delta);
    if events.iter().all(|e| e.0 == events[0].0) {
        return Ok((worst, format!("{k} × (ε₀ = {epsilon0}, δ₀ = {delta0})")));
    }
    let mut candidates = vec![(
        worst,
        format!("the worst event's guarantee (ε₀ = {epsilon0}, δ₀ = {delta0}) for all {k}"),
    )];
    let mut failure = String::new();
    match worst_case_pairs_epsilon(spec, &events, delta) {
        Ok(epsilon) => candidates.push((
            epsilon,
            format!(
                "{} distinct (εᵢ, δᵢ) worst-case pairs composed in the PLD (grid upper bound)",
                events.len()
            ),
        )),
        Err(e) => failure = format!("; the PLD of the worst-case pairs failed: {e}"),
    }
    for theorem in CompositionTheorem::ALL {
        candidates.push((
            theorem.epsilon(&events, delta),
            format!("{} of the events' (εᵢ, δᵢ)", theorem.name()),
        ));
    }
    // Every candidate is an upper bound on the same optimum: keep the smallest (the first on
    // ties, so the PLD wins over a theorem that matches it).
    let mut best = candidates.remove(0);
    for candidate in candidates {
        if candidate.0 < best.0 {
            best = candidate;
        }
    }
    best.1.push_str(&failure);
    Ok(best)
}

/// ε upper bound of the composition of each event's worst-case (εᵢ, δᵢ) pair, in the PLD
/// engine at default settings.
fn worst_case_pairs_epsilon(
    spec: &CompositionSpec,
    events: &[(ApproxDp, u64)],
    delta: f64,
) -> Result<f64> {
    let mut pairs = Vec::with_capacity(events.len());
    for (guarantee, count) in events {
        let mechanism = crate::spec::MechanismSpec::eps_delta(guarantee.epsilon, guarantee.delta)?;
        pairs.push(crate::spec::Event::new(mechanism).repeat(*count)?);
    }
    let pairs = CompositionSpec::new(spec.neighbouring, pairs)?;
    let answer = Accountant::new(&pairs, AccountantOptions::default())?.epsilon_for_delta(delta)?;
    Ok(answer.epsilon.upper)
}
