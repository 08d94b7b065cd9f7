//! Fuzzing of the public library API: every numeric parameter of every public constructor and
//! query gets arbitrary doubles and integers — NaN, ±∞, ±0, subnormals (5e-324, 1e-310), tiny
//! and huge magnitudes (1e-300, 1e308, `f64::MAX`), negative numbers, `u64::MAX` — mixed with
//! ordinary values. Each call must
//! - not panic (calls are wrapped in `catch_unwind`, so the failure names the call and input);
//! - return `Err` whose `InvalidParameter` names one of the call's parameters, or
//! - return `Ok` with no NaN anywhere: brackets ordered (`lower ≤ upper`), δ in [0, 1],
//!   ε ≥ 0 (+∞ allowed).
//!
//! Functions without a `Result` (the analytic accountants, `LossAtoms::from_pair`) must not
//! panic for any input, and must not return NaN where their documentation says "never NaN"
//! or where the input is in their documented domain.
//!
//! Deterministic: proptest with a fixed ChaCha seed and no failure persistence. The number of
//! cases per property is small so the file runs in seconds under `cargo test --release`;
//! `PLD_FUZZ_CASES=N` multiplies the case counts by N for a longer run, and
//! `PLD_FUZZ_REPORT_ONLY=1` prints every failure (`FUZZ FAILURE: ...`) instead of stopping at
//! the first, for a survey; `PLD_FUZZ_TRACE=1` prints every call before making it (an abort
//! cannot be caught: the last call printed caused it).
//!
//! The bugs this fuzzing found have named regression tests at the end of the file.

mod support;

use pld_accountant::analytic::composition_theorems::{ApproxDp, CompositionTheorem};
use pld_accountant::analytic::rdp::{default_orders, RdpCurve};
use pld_accountant::analytic::{clt, optimal_composition, rdp_mechanisms, rdp_subsampled, zcdp};
use pld_accountant::{
    calibrate, compare, mechanism::analytic_gaussian, Accountant, AccountantOptions, Bound,
    Bracket, BracketedPld, CalibrationProblem, CompositionSpec, Error, Gaussian, GridPmf, Laplace,
    LossAtom, LossAtoms, MixtureOfGaussians, MonotonePrivacyLoss, PoissonSubsampled,
    PrivacyLossDistribution, Symmetry, Tolerance,
};
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, RngSeed, TestCaseError};
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};

// ---------------------------------------------------------------------------------------------
// Configuration and the checking harness

/// Deterministic configuration with `cases` cases (times `PLD_FUZZ_CASES`, default 1).
fn config(cases: u32) -> ProptestConfig {
    let scale = std::env::var("PLD_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    ProptestConfig {
        cases: cases * scale,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(support::SEED),
        max_shrink_iters: 64,
        ..ProptestConfig::default()
    }
}

/// Whether failures are printed instead of failing the test (`PLD_FUZZ_REPORT_ONLY=1`).
fn report_only() -> bool {
    std::env::var_os("PLD_FUZZ_REPORT_ONLY").is_some()
}

type Check = std::result::Result<(), String>;

/// Fail (or, in report-only mode, print) with this message.
fn failure(message: String) -> std::result::Result<(), TestCaseError> {
    if report_only() {
        eprintln!("FUZZ FAILURE: {message}");
        Ok(())
    } else {
        Err(TestCaseError::fail(message))
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(non-string panic payload)".into())
}

/// Run `f` (described by `call`, whose parameters are `params`): it must not panic; an
/// `InvalidParameter` error must name one of `params`; an `Ok` value must pass `ok`.
fn guarded<T>(
    call: &str,
    params: &[&str],
    f: impl FnOnce() -> pld_accountant::Result<T>,
    ok: impl FnOnce(&T) -> Check,
) -> std::result::Result<Option<T>, TestCaseError> {
    if std::env::var_os("PLD_FUZZ_TRACE").is_some() {
        // An abort (a failed allocation) cannot be caught: the last call printed is the culprit.
        eprintln!("FUZZ CALL: {call}");
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Err(payload) => {
            failure(format!("{call} panicked: {}", panic_message(&*payload)))?;
            Ok(None)
        }
        Ok(Err(error)) => {
            if let Error::InvalidParameter { name, .. } = &error {
                if !params.iter().any(|p| name.contains(p)) {
                    failure(format!(
                        "{call}: the error names {name:?}, none of the parameters {params:?}: \
                         {error}"
                    ))?;
                }
            }
            if error.to_string().is_empty() {
                failure(format!("{call}: empty error message"))?;
            }
            Ok(None)
        }
        Ok(Ok(value)) => match ok(&value) {
            Ok(()) => Ok(Some(value)),
            Err(why) => {
                failure(format!("{call} returned Ok with {why}"))?;
                Ok(None)
            }
        },
    }
}

/// As [`guarded`] for a function without a `Result`.
fn guarded_value<T>(
    call: &str,
    f: impl FnOnce() -> T,
    ok: impl FnOnce(&T) -> Check,
) -> std::result::Result<Option<T>, TestCaseError> {
    guarded(call, &[], || Ok(f()), ok)
}

fn not_nan(x: f64, what: &str) -> Check {
    if x.is_nan() {
        Err(format!("{what} = NaN"))
    } else {
        Ok(())
    }
}

fn probability(x: f64, what: &str) -> Check {
    if (0.0..=1.0).contains(&x) {
        Ok(())
    } else {
        Err(format!("{what} = {x}, not in [0, 1]"))
    }
}

fn epsilon_value(x: f64, what: &str) -> Check {
    if x >= 0.0 {
        Ok(())
    } else {
        Err(format!("{what} = {x}, not ≥ 0"))
    }
}

fn ordered(b: &Bracket, what: &str) -> Check {
    not_nan(b.upper, &format!("{what}.upper"))?;
    not_nan(b.lower, &format!("{what}.lower"))?;
    if b.lower <= b.upper {
        Ok(())
    } else {
        Err(format!(
            "{what} = [{}, {}] with lower > upper",
            b.lower, b.upper
        ))
    }
}

fn delta_bracket(b: &Bracket, what: &str) -> Check {
    ordered(b, what)?;
    probability(b.lower, &format!("{what}.lower"))?;
    probability(b.upper, &format!("{what}.upper"))
}

fn epsilon_bracket(b: &Bracket, what: &str) -> Check {
    ordered(b, what)?;
    epsilon_value(b.lower, &format!("{what}.lower"))
}

// ---------------------------------------------------------------------------------------------
// Strategies

/// The values that break numerical code.
const SPECIAL: [f64; 30] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    5e-324,
    1e-310,
    f64::MIN_POSITIVE,
    1e-300,
    1e-100,
    1e-20,
    1e-12,
    1e-5,
    0.01,
    0.5,
    1.0 - 1e-16,
    1.0,
    1.0 + 2.2e-16,
    2.0,
    10.0,
    700.0,
    1e6,
    1e20,
    1e308,
    f64::MAX,
    -1.0,
    -1e-300,
    -5e-324,
    -1e308,
    f64::MIN,
];

/// Log-uniform on [lo, hi].
fn log_uniform(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    (lo.ln()..=hi.ln()).prop_map(f64::exp)
}

/// Special values, ordinary ones, and any double at all.
fn nasty_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => prop::sample::select(SPECIAL.to_vec()),
        2 => log_uniform(1e-30, 1e30),
        2 => -10.0..10.0f64,
        1 => log_uniform(1e-300, 1e300).prop_map(|x| -x),
        1 => any::<f64>(),
    ]
}

/// A value that is mostly ordinary (so that later checks are reached), sometimes nasty.
fn mostly(ordinary: impl Strategy<Value = f64> + 'static) -> impl Strategy<Value = f64> {
    prop_oneof![3 => ordinary, 1 => nasty_f64()]
}

/// Integers at the edges: 0, 1, the largest accepted count, 2⁵³ ± 1, `u64::MAX`.
fn nasty_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => prop::sample::select(vec![
            0,
            1,
            2,
            3,
            1000,
            1_000_000_000_000,
            1_000_000_000_001,
            1 << 53,
            (1 << 53) + 1,
            u64::MAX / 2,
            u64::MAX - 1,
            u64::MAX,
        ]),
        2 => 0..20u64,
        1 => any::<u64>(),
    ]
}

fn nasty_list() -> impl Strategy<Value = Vec<f64>> {
    prop_oneof![
        4 => prop::collection::vec(nasty_f64(), 0..5),
        2 => prop::collection::vec(0.0..1.0f64, 1..6).prop_map(normalized),
        1 => (1usize..3000).prop_map(|n| vec![1.0 / n as f64; n]),
    ]
}

fn normalized(v: Vec<f64>) -> Vec<f64> {
    let total: f64 = v.iter().sum();
    if total > 0.0 {
        v.iter().map(|x| x / total).collect()
    } else {
        v
    }
}

fn bound() -> impl Strategy<Value = Bound> {
    prop::sample::select(vec![Bound::Upper, Bound::Lower])
}

fn symmetry() -> impl Strategy<Value = Symmetry> {
    prop::sample::select(vec![Symmetry::Symmetric, Symmetry::Asymmetric])
}

/// Grid steps: mostly coarse enough to be fast, sometimes anything.
fn grid_step() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => prop::sample::select(vec![1.0, 0.5, 0.1, 0.05, 1e-2]),
        1 => nasty_f64(),
    ]
}

fn tail_mass() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => prop::sample::select(vec![1e-14, 1e-10, 1e-300]),
        1 => nasty_f64(),
    ]
}

// ---------------------------------------------------------------------------------------------
// Mechanisms and single-event PLDs

fn check_pmf(pmf: &GridPmf, what: &str) -> Check {
    if let Some((i, p)) = pmf.probs().iter().enumerate().find(|(_, p)| p.is_nan()) {
        return Err(format!("{what}.probs[{i}] = {p}"));
    }
    not_nan(pmf.infinity_mass(), &format!("{what}.infinity_mass"))?;
    for epsilon in [0.0, 1.0, 50.0] {
        probability(
            pmf.delta_for_epsilon(epsilon),
            &format!("{what}.delta_for_epsilon({epsilon})"),
        )?;
    }
    for delta in [1e-12, 1e-5, 0.5] {
        epsilon_value(
            pmf.epsilon_for_delta(delta),
            &format!("{what}.epsilon_for_delta({delta})"),
        )?;
    }
    Ok(())
}

fn check_pld(pld: &PrivacyLossDistribution, what: &str) -> Check {
    check_pmf(pld.remove(), &format!("{what}.remove"))?;
    check_pmf(pld.add(), &format!("{what}.add"))?;
    for epsilon in [0.0, 1.0] {
        probability(
            pld.delta_for_epsilon(epsilon),
            &format!("{what}.delta_for_epsilon({epsilon})"),
        )?;
    }
    epsilon_value(
        pld.epsilon_for_delta(1e-5),
        &format!("{what}.epsilon_for_delta"),
    )
}

fn check_bracketed(pld: &BracketedPld, what: &str) -> Check {
    check_pld(&pld.upper, &format!("{what}.upper"))?;
    check_pld(&pld.lower, &format!("{what}.lower"))?;
    for epsilon in [0.0, 0.5, 3.0] {
        delta_bracket(
            &pld.delta_for_epsilon(epsilon),
            &format!("{what}.delta_for_epsilon({epsilon})"),
        )?;
    }
    for delta in [1e-10, 1e-3] {
        epsilon_bracket(
            &pld.epsilon_for_delta(delta),
            &format!("{what}.epsilon_for_delta({delta})"),
        )?;
    }
    Ok(())
}

/// Both discretizations of a mechanism, and the bracketed one, at (step, tail mass).
fn discretize<M: MonotonePrivacyLoss>(
    name: &str,
    mechanism: &M,
    symmetry: Symmetry,
    step: f64,
    tail: f64,
    bound: Bound,
) -> std::result::Result<(), TestCaseError> {
    let params = ["step", "tail_mass", "tail mass"];
    guarded(
        &format!("PrivacyLossDistribution::from_mechanism({name}, {symmetry:?}, step={step:e}, tail_mass={tail:e}, {bound:?})"),
        &params,
        || PrivacyLossDistribution::from_mechanism(mechanism, symmetry, step, tail, bound),
        |pld| check_pld(pld, "pld"),
    )?;
    guarded(
        &format!(
            "BracketedPld::from_mechanism({name}, {symmetry:?}, step={step:e}, tail_mass={tail:e})"
        ),
        &params,
        || BracketedPld::from_mechanism(mechanism, symmetry, step, tail),
        |pld| check_bracketed(pld, "bracketed"),
    )?;
    Ok(())
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn gaussian_and_laplace(
        sigma in nasty_f64(),
        sensitivity in mostly(log_uniform(0.1, 10.0)),
        rate in mostly(log_uniform(1e-4, 1.0)),
        step in grid_step(),
        tail in tail_mass(),
        bound in bound(),
        symmetry in symmetry(),
    ) {
        let call = format!("Gaussian::new({sigma:e}, {sensitivity:e})");
        let gaussian = guarded(&call, &["sigma", "sensitivity"],
            || Gaussian::new(sigma, sensitivity),
            |g| { not_nan(g.mu(), "mu")?; epsilon_value(g.mu(), "mu") })?;
        guarded(&format!("Gaussian::from_mu({sigma:e})"), &["mu"],
            || Gaussian::from_mu(sigma), |g| not_nan(g.mu(), "mu"))?;
        let laplace = guarded(&format!("Laplace::new({sigma:e}, {sensitivity:e})"),
            &["scale", "sensitivity"], || Laplace::new(sigma, sensitivity),
            |l| { not_nan(l.epsilon0(), "epsilon0")?; epsilon_value(l.epsilon0(), "epsilon0") })?;
        if let Some(g) = gaussian {
            discretize(&call, &g, Symmetry::Symmetric, step, tail, bound)?;
            let sub = guarded(&format!("PoissonSubsampled::new({call}, {rate:e})"),
                &["sampling.poisson", "rate"], || PoissonSubsampled::new(g, rate), |_| Ok(()))?;
            if let Some(s) = sub {
                discretize(&format!("subsampled {call} at {rate:e}"), &s, symmetry, step, tail,
                    bound)?;
            }
        }
        if let Some(l) = laplace {
            let call = format!("Laplace::new({sigma:e}, {sensitivity:e})");
            discretize(&call, &l, Symmetry::Symmetric, step, tail, bound)?;
            let sub = guarded(&format!("PoissonSubsampled::new({call}, {rate:e})"),
                &["sampling.poisson", "rate"], || PoissonSubsampled::new(l, rate), |_| Ok(()))?;
            if let Some(s) = sub {
                discretize(&format!("subsampled {call} at {rate:e}"), &s, symmetry, step, tail,
                    bound)?;
            }
        }
    }

    #[test]
    fn mixture_of_gaussians(
        sigma in mostly(log_uniform(0.3, 30.0)),
        sensitivities in nasty_list(),
        probabilities in nasty_list(),
        step in grid_step(),
        tail in tail_mass(),
        bound in bound(),
    ) {
        let call = format!("MixtureOfGaussians::new({sigma:e}, {sensitivities:?}, {probabilities:?})");
        let mixture = guarded(&call, &["sigma", "sensitivities", "probabilities"],
            || MixtureOfGaussians::new(sigma, &sensitivities, &probabilities),
            |m| not_nan(m.largest_shift(), "largest_shift"))?;
        if let Some(m) = mixture {
            if m.largest_shift() > 0.0 {
                discretize(&call, &m, Symmetry::Asymmetric, step, tail, bound)?;
            }
        }
    }

    #[test]
    fn loss_atoms_and_grid_pmfs(
        p in nasty_list(),
        q in nasty_list(),
        losses in prop::collection::vec(nasty_f64(), 0..4),
        p_infinity in mostly(0.0..0.1f64),
        step in grid_step(),
        offset in prop_oneof![-2000i64..2000, any::<i64>(),
            prop::sample::select(vec![i64::MIN, i64::MAX, 0])],
        bound in bound(),
        symmetry in symmetry(),
    ) {
        // From a pair: any input is accepted; valid pairs must give valid answers.
        let valid = p.len() == q.len()
            && p.iter().chain(&q).all(|x| (0.0..=1.0).contains(x))
            && p.iter().sum::<f64>() <= 1.0 + 1e-9
            && q.iter().sum::<f64>() <= 1.0 + 1e-9;
        let call = format!("LossAtoms::from_pair({p:?}, {q:?})");
        let atoms = guarded_value(&call, || LossAtoms::from_pair(&p, &q), |a| {
            if !valid { return Ok(()); }
            for epsilon in [0.0, 1.0, 100.0] {
                probability(a.hockey_stick(epsilon), &format!("hockey_stick({epsilon})"))?;
            }
            Ok(())
        })?;
        if let (Some(atoms), true) = (atoms, valid) {
            guarded(&format!("PrivacyLossDistribution::from_atoms({call}, {symmetry:?}, step={step:e}, {bound:?})"),
                &["step"], || PrivacyLossDistribution::from_atoms(&atoms, symmetry, step, bound),
                |pld| check_pld(pld, "pld"))?;
        }
        // From atoms.
        let list: Vec<LossAtom> = losses.iter().zip(p.iter().zip(&q))
            .map(|(&loss, (&p, &q))| LossAtom { loss, p, q }).collect();
        let call = format!("LossAtoms::from_atoms({list:?}, {p_infinity:e}, 0)");
        guarded_value(&call, || LossAtoms::from_atoms(list.clone(), p_infinity, 0.0), |_| Ok(()))?;
        // A grid PMF from explicit probabilities.
        let call = format!("GridPmf::new({step:e}, {offset}, {p:?}, {p_infinity:e}, {bound:?})");
        let pmf = guarded(&call, &["step", "probs", "infinity_mass", "offset", "total mass"],
            || GridPmf::new(step, offset, p.clone(), p_infinity, bound),
            |pmf| check_pmf(pmf, "pmf"))?;
        if let Some(pmf) = pmf {
            for (k, tail) in [(2u64, 1e-14), (u64::MAX, 1e-14), (1000, 0.0), (3, f64::NAN)] {
                guarded(&format!("{call}.self_compose({k}, {tail:e})"),
                    &["k", "count", "tail_mass", "tail mass", "privacy loss range"],
                    || pmf.self_compose(k, tail),
                    |c| check_pmf(c, "composed"))?;
            }
            guarded(&format!("{call}.compose(itself, 1e-14)"),
                &["tail_mass", "privacy loss range"],
                || pmf.compose(&pmf, 1e-14), |c| check_pmf(c, "composed"))?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Specifications, the accountant, compare and calibrate

/// A JSON number (or null for NaN and ±∞, which JSON cannot carry) or, sometimes, a string.
fn number(x: f64) -> Value {
    json!(x)
}

/// One event of a specification with fuzzed fields.
fn event() -> impl Strategy<Value = Value> {
    (
        0usize..9,
        (mostly(log_uniform(0.2, 20.0)), mostly(log_uniform(0.2, 5.0))),
        (nasty_u64(), nasty_list(), nasty_list()),
        prop_oneof![
            2 => Just(None),
            2 => mostly(log_uniform(1e-3, 1.0)).prop_map(|q| Some(json!({"poisson": number(q)}))),
            1 => (nasty_u64(), nasty_u64()).prop_map(|(m, n)| Some(
                json!({"fixed_batch": {"batch_size": m, "dataset_size": n}}))),
        ],
        prop_oneof![
            3 => prop::sample::select(vec![1u64, 2, 10, 100]).prop_map(|k| json!(k)),
            1 => nasty_u64().prop_map(|k| json!(k)),
            1 => nasty_f64().prop_map(number),
        ],
    )
        .prop_map(|(kind, (a, b), (k, list_a, list_b), sampling, count)| {
            let mut event = match kind {
                0 => json!({"mechanism": "gaussian", "sigma": number(a), "sensitivity": number(b)}),
                1 => json!({"mechanism": "laplace", "scale": number(a), "sensitivity": number(b)}),
                2 => json!({"mechanism": "discrete_laplace", "scale": number(a), "sensitivity": k}),
                3 => json!({"mechanism": "discrete_gaussian", "sigma": number(a), "sensitivity": k}),
                4 => json!({"mechanism": "randomized_response", "epsilon": number(b), "categories": k}),
                5 => json!({"mechanism": "eps_delta", "epsilon": number(a), "delta": number(b)}),
                6 => json!({"mechanism": "mixture_of_gaussians", "sigma": number(a),
                             "sensitivities": list_a, "probabilities": list_b}),
                7 => json!({"mechanism": "pmf_pair", "p": list_a, "q": list_b}),
                _ => json!({"mechanism": "gaussian", "sigma": number(a)}),
            };
            if let Some(s) = sampling {
                event["sampling"] = s;
            }
            event["count"] = count;
            event
        })
}

fn spec_json() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(event(), 1..3),
        prop::sample::select(vec!["add_remove", "replace"]),
    )
        .prop_map(|(events, relation)| json!({"neighbouring": relation, "events": events}))
}

/// Spec fields and accountant option names an error may name.
const SPEC_PARAMS: [&str; 12] = [
    "events",
    "neighbouring",
    "tolerance",
    "grid_step",
    "tail_mass",
    "delta",
    "epsilon",
    "sigma",
    "count",
    "sampling",
    "sensitivit",
    "scale",
];

fn options() -> impl Strategy<Value = AccountantOptions> {
    (
        prop_oneof![
            4 => prop::sample::select(vec![0.5, 0.1, 0.05]).prop_map(Some),
            1 => nasty_f64().prop_map(Some),
        ],
        prop_oneof![3 => Just(None), 1 => nasty_f64().prop_map(Some)],
        prop_oneof![3 => Just(None), 1 => (0..4usize, nasty_f64()).prop_map(Some)],
        prop_oneof![
            3 => Just(Some(1e-4)),
            1 => Just(None),
            1 => nasty_f64().prop_map(Some),
        ],
    )
        .prop_map(|(grid_step, tail_mass, tolerance, upper_grid_step)| {
            let mut t = Tolerance::default();
            if let Some((i, x)) = tolerance {
                match i {
                    0 => t.relative = x,
                    1 => t.absolute_epsilon = x,
                    2 => t.relative_delta = x,
                    _ => t.absolute_delta = x,
                }
            }
            AccountantOptions {
                tolerance: t,
                grid_step,
                tail_mass,
                memory_budget: None,
                upper_grid_step,
            }
        })
}

/// Parse a fuzzed specification (errors must name a field).
fn parse_spec(json: &Value) -> std::result::Result<Option<CompositionSpec>, TestCaseError> {
    let text = json.to_string();
    guarded(
        &format!("CompositionSpec::from_json_str({text})"),
        &SPEC_PARAMS,
        || CompositionSpec::from_json_str(&text),
        |_| Ok(()),
    )
}

fn check_accountant(
    json: &Value,
    spec: &CompositionSpec,
    options: AccountantOptions,
    delta: f64,
    epsilon: f64,
) -> std::result::Result<(), TestCaseError> {
    let about = format!("spec {json}, {options:?}");
    let Some(accountant) = guarded(
        &format!("Accountant::new({about})"),
        &SPEC_PARAMS,
        || Accountant::new(spec, options),
        |_| Ok(()),
    )?
    else {
        return Ok(());
    };
    guarded(
        &format!("epsilon_for_delta({delta:e}) of {about}"),
        &SPEC_PARAMS,
        || accountant.epsilon_for_delta(delta),
        |a| epsilon_bracket(&a.epsilon, "epsilon"),
    )?;
    guarded(
        &format!("delta_for_epsilon({epsilon:e}) of {about}"),
        &SPEC_PARAMS,
        || accountant.delta_for_epsilon(epsilon),
        |a| delta_bracket(&a.delta, "delta"),
    )?;
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn specifications_and_the_accountant(
        json in spec_json(),
        options in options(),
        delta in mostly(log_uniform(1e-12, 0.5)),
        epsilon in mostly(0.0..20.0f64),
    ) {
        if let Some(spec) = parse_spec(&json)? {
            check_accountant(&json, &spec, options, delta, epsilon)?;
        }
    }

    #[test]
    fn accountant_pld(
        json in spec_json(),
        step in grid_step(),
        tail in tail_mass(),
    ) {
        let Some(spec) = parse_spec(&json)? else { return Ok(()) };
        let options = AccountantOptions { grid_step: Some(0.1), ..Default::default() };
        let Ok(accountant) = Accountant::new(&spec, options) else { return Ok(()) };
        guarded(&format!("Accountant::pld({step:e}, {tail:e}) of spec {json}"),
            &["step", "tail_mass", "tail mass", "events"],
            || accountant.pld(step, tail), |pld| check_bracketed(pld, "pld"))?;
    }

    #[test]
    fn dp_sgd_constructor(
        sigma in nasty_f64(),
        rate in nasty_f64(),
        steps in nasty_u64(),
        sensitivity in nasty_f64(),
    ) {
        guarded(&format!("CompositionSpec::dp_sgd({sigma:e}, {rate:e}, {steps}, {sensitivity:e})"),
            &["sigma", "sampling_rate", "steps", "sensitivity"],
            || CompositionSpec::dp_sgd(sigma, rate, steps, sensitivity), |_| Ok(()))?;
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// The accountant in its accuracy-driven mode (no fixed grid step), fuzzed tolerances.
    #[test]
    fn tolerance_driven_accountant(
        json in spec_json(),
        which in 0..4usize,
        value in nasty_f64(),
        delta in mostly(log_uniform(1e-12, 0.5)),
        epsilon in mostly(0.0..20.0f64),
    ) {
        let Some(spec) = parse_spec(&json)? else { return Ok(()) };
        let mut options = AccountantOptions::default();
        // Tolerances this fine are legitimate but take seconds; they are refused or met by
        // the refinement limit, which is what is checked with the nasty values.
        let value = if value.is_finite() && value > 0.0 { value.max(1e-6) } else { value };
        match which {
            0 => options.tolerance.relative = value,
            1 => options.tolerance.absolute_epsilon = value,
            2 => options.tolerance.relative_delta = value,
            _ => options.tolerance.absolute_delta = value,
        }
        check_accountant(&json, &spec, options, delta, epsilon)?;
    }

    #[test]
    fn compare_every_method(
        json in spec_json(),
        options in options(),
        delta in mostly(log_uniform(1e-12, 0.5)),
    ) {
        let Some(spec) = parse_spec(&json)? else { return Ok(()) };
        guarded(&format!("compare(spec {json}, {delta:e}, {options:?})"), &SPEC_PARAMS,
            || compare(&spec, delta, options),
            |c| {
                for row in &c.rows {
                    not_nan(row.epsilon, &row.method)?;
                    if row.epsilon < 0.0 {
                        return Err(format!("{} = {} < 0", row.method, row.epsilon));
                    }
                }
                Ok(())
            })?;
    }
}

proptest! {
    #![proptest_config(config(10))]

    #[test]
    fn calibrate_one_field(
        json in spec_json(),
        which in 0..3usize,
        epsilon in mostly(log_uniform(0.5, 20.0)),
        delta in mostly(log_uniform(1e-10, 1e-2)),
    ) {
        // Write the first event's noise, count or Poisson rate as null.
        let mut json = json;
        let event = &mut json["events"][0];
        match which {
            0 if event.get("sigma").is_some() => event["sigma"] = Value::Null,
            0 if event.get("scale").is_some() => event["scale"] = Value::Null,
            1 if event.get("sampling").is_some_and(|s| s.get("poisson").is_some()) =>
                event["sampling"]["poisson"] = Value::Null,
            _ => event["count"] = Value::Null,
        }
        let text = json.to_string();
        let Some(problem) = guarded(&format!("CalibrationProblem::from_json_str({text})"),
            &SPEC_PARAMS, || CalibrationProblem::from_json_str(&text), |_| Ok(()))?
            else { return Ok(()) };
        let options = AccountantOptions { grid_step: Some(0.05), ..Default::default() };
        guarded(&format!("calibrate({text}, {epsilon:e}, {delta:e})"), &SPEC_PARAMS,
            || calibrate(&problem, epsilon, delta, options, &mut |_| {}),
            |c| {
                not_nan(c.value, "value")?;
                epsilon_bracket(&c.epsilon, "epsilon")
            })?;
    }
}

// ---------------------------------------------------------------------------------------------
// Analytic accountants (no Result: never a panic; "never NaN" where documented)

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn analytic_gaussian_closed_form(mu in nasty_f64(), x in nasty_f64()) {
        let valid_mu = mu.is_finite() && mu >= 0.0;
        guarded_value(&format!("analytic_gaussian::delta_for_epsilon({mu:e}, {x:e})"),
            || analytic_gaussian::delta_for_epsilon(mu, x),
            |b| if valid_mu && !x.is_nan() { delta_bracket(b, "delta") } else { Ok(()) })?;
        guarded_value(&format!("analytic_gaussian::epsilon_for_delta({mu:e}, {x:e})"),
            || analytic_gaussian::epsilon_for_delta(mu, x),
            |b| if valid_mu && x > 0.0 && x < 1.0 { epsilon_bracket(b, "epsilon") } else { Ok(()) })?;
    }

    #[test]
    fn optimal_composition_and_zcdp(
        e0 in nasty_f64(),
        d0 in nasty_f64(),
        k in prop_oneof![nasty_u64(), 0..200u64],
        x in nasty_f64(),
    ) {
        let args = format!("({e0:e}, {d0:e}, {k}, {x:e})");
        guarded_value(&format!("optimal_composition::delta_for_epsilon{args}"),
            || optimal_composition::delta_for_epsilon(e0, d0, k, x), |&d| probability(d, "delta"))?;
        guarded_value(&format!("optimal_composition::delta_for_epsilon_bracket{args}"),
            || optimal_composition::delta_for_epsilon_bracket(e0, d0, k, x),
            |b| delta_bracket(b, "delta"))?;
        guarded_value(&format!("optimal_composition::epsilon_for_delta{args}"),
            || optimal_composition::epsilon_for_delta(e0, d0, k, x),
            |&e| { not_nan(e, "epsilon")?; epsilon_value(e, "epsilon") })?;
        guarded_value(&format!("zcdp::epsilon_for_delta({e0:e}, {x:e})"),
            || zcdp::epsilon_for_delta(e0, x), |z| not_nan(z.epsilon, "epsilon"))?;
        guarded_value(&format!("zcdp::delta_for_epsilon({e0:e}, {x:e})"),
            || zcdp::delta_for_epsilon(e0, x), |&d| probability(d, "delta"))?;
        guarded_value(&format!("zcdp::gaussian_rho({e0:e})"),
            || zcdp::gaussian_rho(e0), |&r| not_nan(r, "rho"))?;
        guarded_value(&format!("zcdp::pure_dp_rho({e0:e})"),
            || zcdp::pure_dp_rho(e0), |&r| not_nan(r, "rho"))?;
        let events = [(ApproxDp { epsilon: e0, delta: d0 }, k)];
        for theorem in CompositionTheorem::ALL {
            guarded_value(&format!("{}.epsilon({events:?}, {x:e})", theorem.name()),
                || theorem.epsilon(&events, x), |_| Ok(()))?;
        }
    }

    #[test]
    fn rdp_mechanisms_and_curves(
        alpha in prop_oneof![2 => log_uniform(1.0 + 1e-9, 2048.0), 1 => nasty_f64()],
        a in nasty_f64(),
        b in mostly(log_uniform(1e-4, 1.0)),
        k in nasty_u64(),
        p in nasty_list(),
        q in nasty_list(),
        x in nasty_f64(),
    ) {
        // In the domain (α > 1, parameters ≥ 0) a value is never NaN; outside, never a panic.
        let domain = alpha > 1.0 && a >= 0.0 && (0.0..=1.0).contains(&b);
        let in_domain = |v: &f64| if domain { not_nan(*v, "divergence") } else { Ok(()) };
        let args = format!("({alpha:e}, {a:e}, {b:e}, {k})");
        guarded_value(&format!("rdp_mechanisms::gaussian{args}"),
            || rdp_mechanisms::gaussian(alpha, a), in_domain)?;
        guarded_value(&format!("rdp_mechanisms::laplace{args}"),
            || rdp_mechanisms::laplace(alpha, a), in_domain)?;
        guarded_value(&format!("rdp_mechanisms::pure_dp{args}"),
            || rdp_mechanisms::pure_dp(alpha, a), in_domain)?;
        guarded_value(&format!("rdp_mechanisms::randomized_response{args}"),
            || rdp_mechanisms::randomized_response(alpha, a, k), in_domain)?;
        guarded_value(&format!("rdp_mechanisms::pmf_pair({alpha:e}, {p:?}, {q:?})"),
            || rdp_mechanisms::pmf_pair(alpha, &p, &q), |_| Ok(()))?;
        guarded_value(&format!("rdp_subsampled::poisson_gaussian{args}"),
            || rdp_subsampled::poisson_gaussian(alpha, b, a), in_domain)?;
        guarded_value(&format!("rdp_subsampled::poisson_generic{args}"),
            || rdp_subsampled::poisson_generic(alpha, b, &|al| rdp_mechanisms::laplace(al, a)),
            in_domain)?;
        guarded_value(&format!("rdp_subsampled::without_replacement_gaussian{args}"),
            || rdp_subsampled::without_replacement_gaussian(alpha, b, a), in_domain)?;
        // Curves: "no input makes [the conversions] return NaN".
        let orders = default_orders();
        let mut curve = RdpCurve::from_fn(orders.clone(), |al| rdp_mechanisms::gaussian(al, a));
        let other = RdpCurve::from_fn(orders, |al| rdp_subsampled::poisson_gaussian(al, b, a));
        let composed = guarded_value(&format!("RdpCurve::compose{args}"),
            || { curve.compose(&other, k); curve }, |_| Ok(()))?;
        if let Some(curve) = composed {
            guarded_value(&format!("RdpCurve::epsilon({x:e}) of {args}"),
                || curve.epsilon(x), |e| not_nan(e.epsilon, "epsilon"))?;
            guarded_value(&format!("RdpCurve::delta({x:e}) of {args}"),
                || curve.delta(x), |d| not_nan(d.delta, "delta"))?;
        }
    }

    #[test]
    fn clt_estimate(json in spec_json(), delta in nasty_f64()) {
        let Some(spec) = parse_spec(&json)? else { return Ok(()) };
        guarded_value(&format!("clt::estimate(spec {json}, {delta:e})"),
            || clt::estimate(&spec, delta),
            |r| match r {
                Ok(e) if delta > 0.0 && delta < 1.0 => not_nan(e.epsilon, "epsilon"),
                _ => Ok(()),
            })?;
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions: inputs that panicked or gave NaN before (each a named test)

/// `src/lumped_atoms.rs` / `src/loss_bins.rs`: a tiny positive grid step panics ("index out of
/// bounds: the len is 0 but the index is 18446744073709551615") or aborts on a huge allocation
/// instead of returning `GridTooLarge`.
#[test]
fn regression_tiny_grid_step_in_discretization_is_an_error() {
    let gaussian = Gaussian::new(1.0, 1.0).unwrap();
    for step in [1e-310, 2.2250738585072014e-308, 1e-300, 1e-20] {
        let result = catch_unwind(|| {
            PrivacyLossDistribution::from_mechanism(
                &gaussian,
                Symmetry::Symmetric,
                step,
                1e-14,
                Bound::Lower,
            )
        });
        assert!(
            result.is_ok(),
            "from_mechanism(Gaussian(1, 1), step = {step:e}) panicked"
        );
    }
}

/// `src/loss_atoms.rs` (`grid_from_placed`): randomized response on a grid of 1e-20 nats panics.
#[test]
fn regression_tiny_grid_step_for_atoms_is_an_error() {
    let atoms = LossAtoms::from_pair(
        &[0.7310585786300049, 0.2689414213699951],
        &[0.2689414213699951, 0.7310585786300049],
    );
    for bound in [Bound::Upper, Bound::Lower] {
        let result = catch_unwind(|| {
            PrivacyLossDistribution::from_atoms(&atoms, Symmetry::Symmetric, 1e-20, bound)
        });
        assert!(
            result.is_ok(),
            "from_atoms(randomized response ε = 1, 1e-20, {bound:?}) panicked"
        );
    }
}

/// `src/composition.rs`: self-composing a valid PMF with an infinity mass gives NaN.
#[test]
fn regression_self_compose_infinity_mass_is_never_nan() {
    let cases = [
        (
            0.1,
            767,
            vec![0.0, 1e-310],
            1.9030248741591104e-2,
            Bound::Upper,
            2,
            1e-14,
        ),
        (
            0.5,
            0,
            vec![0.0023985441893418966, 6.950370198039475e-5],
            8.79918377178101e-2,
            Bound::Lower,
            1000,
            1e-14,
        ),
    ];
    for (step, offset, probs, infinity, bound, k, tail) in cases {
        let pmf = GridPmf::new(step, offset, probs.clone(), infinity, bound).unwrap();
        let composed = pmf.self_compose(k, tail).unwrap();
        assert!(
            !composed.infinity_mass().is_nan(),
            "GridPmf::new({step}, {offset}, {probs:?}, {infinity}, {bound:?}).self_compose({k}, \
             {tail:e}).infinity_mass() is NaN"
        );
    }
}
