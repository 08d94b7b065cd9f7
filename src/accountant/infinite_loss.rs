//! The mass at infinite privacy loss: a floor under δ(ε) at every ε, known before any grid.
//!
//! An outcome that the neighbour without the record (Q) never produces has loss +∞, and
//! `δ(ε) = P(L = ∞) + E_P[(1 − e^{ε−L}); ε < L < ∞] ≥ P(L = ∞)` at every ε. A composition
//! reaches +∞ when any of its runs does, so with independent runs of masses mᵢ at +∞,
//!
//! ```text
//! P(L = ∞) = 1 − Πᵢ (1 − mᵢ)
//! ```
//!
//! and when that exceeds δ, no finite ε makes the composition (ε, δ)-DP: ε(δ) = ∞, both ends.
//! The grid finds the same, but only after building it (an `eps_delta` event with δ₀ = 1e-4
//! beside ten epochs of random allocation at σ 0.6 took 4.1 s to answer ε(1e-5) = ∞).
//!
//! The masses are those of the pairs the accountant builds (see `Plan::from_spec`): δ₀ of
//! `eps_delta` in both directions, the mass one list of a `pmf_pair` puts where the other has
//! none, times q under Poisson sampling in the REMOVE direction (in the ADD direction the
//! sampled distribution `qP + (1 − q)Q` has mass wherever Q has, so none at +∞ unless q = 1).
//! Other events and sampling schemes count as 0, which keeps the floor a lower bound.

use crate::spec::{CompositionSpec, MechanismKind, SamplingKind};

/// Lower bounds on the composition's P-mass at loss +∞, by neighbouring direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct InfiniteLossFloor {
    /// REMOVE: P the outputs with the record.
    pub(crate) remove: f64,
    /// ADD: the pair swapped.
    pub(crate) add: f64,
}

/// Relative margin taken off each mass and off the composed floor, covering their rounding
/// (a few ulps each) many times over.
const ROUNDING_MARGIN: f64 = 1e-12;

/// The floor of `spec`'s composition (see the module docs).
pub(crate) fn infinite_loss_floor(spec: &CompositionSpec) -> InfiniteLossFloor {
    // Σ count·ln(1 − m) for each direction, each term rounded towards 0 (a smaller floor).
    let (mut remove, mut add) = (0.0, 0.0);
    for event in &spec.events {
        let (m_remove, m_add) = event_masses(&event.mechanism.kind);
        let (m_remove, m_add) = match event.sampling.kind {
            SamplingKind::None => (m_remove, m_add),
            SamplingKind::Poisson(rate) if rate >= 1.0 => (m_remove, m_add),
            SamplingKind::Poisson(rate) => (rate * m_remove, 0.0),
            _ => (0.0, 0.0),
        };
        let count = event.count as f64;
        remove += count * log_survival(m_remove);
        add += count * log_survival(m_add);
    }
    let floor = |log_survival: f64| {
        let floor = -(log_survival * (1.0 - ROUNDING_MARGIN)).exp_m1() * (1.0 - ROUNDING_MARGIN);
        if floor.is_finite() {
            floor.clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    InfiniteLossFloor {
        remove: floor(remove),
        add: floor(add),
    }
}

/// `ln(1 − m)` for m lowered by [`ROUNDING_MARGIN`] (0 for m ≤ 0, −∞ for m ≥ 1).
fn log_survival(mass: f64) -> f64 {
    let mass = mass * (1.0 - ROUNDING_MARGIN);
    if mass > 0.0 {
        (-mass).ln_1p()
    } else {
        0.0
    }
}

/// One run's (REMOVE, ADD) masses at +∞ before sampling.
fn event_masses(kind: &MechanismKind) -> (f64, f64) {
    match kind {
        &MechanismKind::EpsDelta { delta, .. } => (delta, delta),
        MechanismKind::PmfPair { p, q, .. } => {
            let one_sided = |a: &[f64], b: &[f64]| -> f64 {
                a.iter()
                    .zip(b)
                    .filter(|&(&x, &y)| x > 0.0 && y == 0.0)
                    .map(|(&x, _)| x)
                    .sum()
            };
            (one_sided(p, q), one_sided(q, p))
        }
        _ => (0.0, 0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> CompositionSpec {
        CompositionSpec::from_json_str(json).expect("valid")
    }

    /// `eps_delta` events: 1 − Π(1 − δᵢ)^{countᵢ}, against the product computed directly,
    /// within the margins; counts up to 10¹² (1 − (1 − 1e-15)^{10¹²} ≈ 1e-3).
    #[test]
    fn eps_delta_masses_compose_as_independent_runs() {
        let floor = infinite_loss_floor(&spec(
            r#"{"events":[{"mechanism":"eps_delta","epsilon":0.1,"delta":1e-4,"count":3},
            {"mechanism":"eps_delta","epsilon":1.0,"delta":0.02}]}"#,
        ));
        let direct = 1.0 - (1.0 - 1e-4f64).powi(3) * 0.98;
        for got in [floor.remove, floor.add] {
            assert!(
                got <= direct && got >= direct * (1.0 - 1e-10),
                "{got} {direct}"
            );
        }
        let many = infinite_loss_floor(&spec(
            r#"{"events":[{"mechanism":"eps_delta","epsilon":0.1,"delta":1e-15,
            "count":1000000000000}]}"#,
        ));
        // 1 − e^{10¹²·ln(1 − 1e-15)} = 1 − e^{−1e-3 − 5e-19} ≈ 9.995001666e-4.
        let expected = -(-1e-3f64).exp_m1();
        assert!(many.remove <= expected && many.remove >= expected * (1.0 - 1e-10));
    }

    /// A `pmf_pair`'s one-sided outcomes, each direction its own; Poisson sampling scales
    /// REMOVE's by q and leaves ADD none; other sampling and mechanisms count as 0.
    #[test]
    fn one_sided_outcomes_and_sampling() {
        let pair = infinite_loss_floor(&spec(
            r#"{"events":[{"mechanism":"pmf_pair","p":[0.5,0.3,0.2,0.0],"q":[0.6,0.4,0.0,0.0]}]}"#,
        ));
        assert!((pair.remove - 0.2).abs() < 1e-12 && pair.remove <= 0.2);
        assert_eq!(pair.add, 0.0);
        let sampled = infinite_loss_floor(&spec(
            r#"{"events":[{"mechanism":"eps_delta","epsilon":1.0,"delta":0.01,
            "sampling":{"poisson":0.1},"count":2}]}"#,
        ));
        let direct = 1.0 - (1.0 - 0.001f64).powi(2);
        assert!(sampled.remove <= direct && sampled.remove >= direct * (1.0 - 1e-10));
        assert_eq!(sampled.add, 0.0);
        let other = infinite_loss_floor(&spec(
            r#"{"events":[{"mechanism":"gaussian","sigma":1.0,"count":5},
            {"mechanism":"randomized_response","epsilon":1.0,"count":5}]}"#,
        ));
        assert_eq!((other.remove, other.add), (0.0, 0.0));
    }

    /// The accountant answers ∞ at once where the floor exceeds δ, and the grid agrees: its
    /// guaranteed lower end of δ(ε) at ε = 50 nats is the floor up to its allowances (so no
    /// ε up to 50 has δ(ε) ≤ 1e-5, and δ(ε) falls with ε). Just above the floor the grid
    /// answers, finite.
    #[test]
    fn the_accountant_answers_infinity_where_the_floor_exceeds_delta() {
        use crate::accountant::{Accountant, AccountantOptions};
        let spec = spec(
            r#"{"events":[{"mechanism":"eps_delta","epsilon":0.5,"delta":1e-4,"count":2},
            {"mechanism":"gaussian","sigma":1.0,"sampling":{"poisson":0.01},"count":100}]}"#,
        );
        let accountant = Accountant::new(&spec, AccountantOptions::default()).expect("valid");
        let answer = accountant.epsilon_for_delta(1e-5).expect("answers");
        assert_eq!(answer.epsilon.upper, f64::INFINITY);
        assert_eq!(answer.epsilon.lower, f64::INFINITY);
        assert_eq!(
            answer.settings.upper_method.as_deref(),
            Some("infinite_loss")
        );
        assert_eq!(answer.settings.worse_direction, "both");
        let floor = infinite_loss_floor(&spec).remove;
        assert!(floor > 1.99e-4 && floor < 2e-4, "{floor}");
        let grid = accountant.delta_for_epsilon(50.0).expect("answers");
        // Within the reading's allowances: the fixed 1e-9 and 102 runs' rounding (about 5e-12
        // of δ, see `pmf::run_rounding`).
        assert!(
            grid.delta.lower >= floor * (1.0 - 1.1e-9),
            "{:?}",
            grid.delta
        );
        let above = accountant.epsilon_for_delta(3e-4).expect("answers");
        assert!(above.epsilon.upper.is_finite(), "{:?}", above.epsilon);
        assert_eq!(above.settings.method, "pld");
    }
}
