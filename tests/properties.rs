//! Third step of trust: properties over parameter sweeps (proptest, fixed seed).
//!
//! Poisson-subsampled Gaussian (DP-SGD) with σ ∈ [0.5, 20], q ∈ [1e-4, 1], steps ∈ [1, 10⁴],
//! δ ∈ [1e-10, 1e-2], on a fixed coarse grid so that every case is fast. Checked:
//! - brackets are ordered and never NaN (accountant and raw PMFs);
//! - mass conservation and validity `Σ p e^{−l} ≤ 1` of the discretized and composed PMFs;
//! - δ(ε) is non-increasing;
//! - the sandwich `lower ≤ exact ≤ upper` for one step against the closed form;
//! - the add/remove identity `δ_add(ε) = 1 − e^ε + e^ε δ_remove(−ε)` (the ADD pair is the REMOVE pair swapped).
//!
//! Parameter combinations whose composed privacy loss cannot be represented (beyond ±700 nats)
//! are skipped: the library refuses them with a typed error, which is checked.

mod support;

use pld_accountant::{
    Accountant, AccountantOptions, Bracket, BracketedPld, CompositionSpec, Error, Gaussian,
    GridPmf, MonotonePrivacyLoss, PoissonSubsampled, Symmetry,
};
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, RngSeed};
use support::{swapped_pair_delta, EXACT_DELTA_ABS, MONOTONE_RELATIVE, SEED, TOTAL_MASS_ABS};

/// Grid step (nats) of every PLD built here: coarse, so each case takes milliseconds.
const GRID_STEP: f64 = 2e-3;

/// Truncation mass of the single-step discretization and of each composition.
const TAIL_MASS: f64 = 1e-14;

/// Composed losses are kept below this (nats) when choosing parameters; the library's hard
/// limit is 700.
const REPRESENTABLE_LOSS: f64 = 500.0;

/// Deterministic proptest configuration: fixed seed, no regression files, few cases.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 48,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(SEED),
        max_shrink_iters: 32,
        ..ProptestConfig::default()
    }
}

/// Log-uniform on [lo, hi].
fn log_uniform(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    (lo.ln()..=hi.ln()).prop_map(f64::exp)
}

fn sigma() -> impl Strategy<Value = f64> {
    log_uniform(0.5, 20.0)
}

/// Mostly log-uniform on [1e-4, 1], sometimes exactly 1 (no sampling).
fn sampling_rate() -> impl Strategy<Value = f64> {
    prop_oneof![9 => log_uniform(1e-4, 1.0), 1 => Just(1.0)]
}

fn steps() -> impl Strategy<Value = u64> {
    (0.0f64..=4.0).prop_map(|x| 10f64.powf(x).round() as u64)
}

fn target_delta() -> impl Strategy<Value = f64> {
    log_uniform(1e-10, 1e-2)
}

fn mechanism(sigma: f64, q: f64) -> PoissonSubsampled<Gaussian> {
    let gaussian = Gaussian::new(sigma, 1.0)
        .unwrap_or_else(|e| panic!("Gaussian::new(sigma={sigma}, 1): {e}"));
    PoissonSubsampled::new(gaussian, q)
        .unwrap_or_else(|e| panic!("PoissonSubsampled::new(sigma={sigma}, q={q}): {e}"))
}

fn single_step(sigma: f64, q: f64) -> BracketedPld {
    BracketedPld::from_mechanism(
        &mechanism(sigma, q),
        Symmetry::Asymmetric,
        GRID_STEP,
        TAIL_MASS,
    )
    .unwrap_or_else(|e| panic!("from_mechanism(sigma={sigma}, q={q}, h={GRID_STEP}): {e}"))
}

/// Whether the k-fold composition of this PMF plausibly stays within the representable loss
/// range: mean ± 15 standard deviations of the k-fold sum, plus one step's extreme loss.
fn composition_fits(pmf: &GridPmf, k: u64) -> bool {
    let (mut mean, mut second) = (0.0, 0.0);
    for (i, p) in pmf.probs().iter().enumerate() {
        let l = pmf.loss(i);
        mean += p * l;
        second += p * l * l;
    }
    let variance = (second - mean * mean).max(0.0);
    let extreme = pmf.loss(0).abs().max(pmf.loss(pmf.len() - 1).abs());
    let k = k as f64;
    (k * mean).abs() + 15.0 * (k * variance).sqrt() + extreme < REPRESENTABLE_LOSS
}

/// Whether an error is the library's refusal of an unrepresentable composition.
fn is_range_refusal(error: &Error) -> bool {
    match error {
        Error::GridTooLarge { .. } => true,
        Error::InvalidParameter { name, .. } => name.contains("range"),
        _ => false,
    }
}

/// ε values at which δ curves are compared: negatives, the subsampling edges ±ln(1−q) and
/// points just beside them, and positives up to where δ vanishes.
fn epsilon_grid(q: f64) -> Vec<f64> {
    let mut grid = vec![
        -3.0, -1.0, -0.3, -0.05, -1e-3, 0.0, 1e-3, 0.05, 0.3, 1.0, 2.0, 4.0, 8.0,
    ];
    let edge = (-q).ln_1p(); // ln(1 − q) < 0, −∞ for q = 1
    if edge.is_finite() {
        for x in [edge, -edge] {
            grid.extend([x * (1.0 - 1e-6), x, x * (1.0 + 1e-6)]);
        }
    }
    grid.sort_by(f64::total_cmp);
    grid
}

/// Allowance for the rounding of an exact δ reference at ε (a few ulps of `max(1, e^ε)`).
fn exact_tolerance(epsilon: f64) -> f64 {
    EXACT_DELTA_ABS * epsilon.exp().max(1.0)
}

/// The four PMFs of a bracketed PLD with their names.
fn pmfs(pld: &BracketedPld) -> [(&'static str, &GridPmf); 4] {
    [
        ("upper REMOVE", pld.upper.remove()),
        ("upper ADD", pld.upper.add()),
        ("lower REMOVE", pld.lower.remove()),
        ("lower ADD", pld.lower.add()),
    ]
}

/// Total mass of every PMF of `pld`: 1 for upper PMFs (truncation moves mass, never drops
/// it), at most 1 for lower PMFs.
fn check_total_mass(pld: &BracketedPld, params: &str) -> Result<(), TestCaseError> {
    for (name, pmf) in pmfs(pld) {
        let total = pmf.total_mass();
        prop_assert!(!total.is_nan(), "{name}: total mass is NaN, {params}");
        if name.starts_with("upper") {
            prop_assert!(
                (total - 1.0).abs() <= TOTAL_MASS_ABS,
                "{name}: total mass {total:.17} ≠ 1 ± {TOTAL_MASS_ABS:e} (finite {:e}, ∞ {:e}), \
                 {params}",
                pmf.finite_mass(),
                pmf.infinity_mass()
            );
        } else {
            prop_assert!(
                total <= 1.0 + TOTAL_MASS_ABS,
                "{name}: total mass {total:.17} > 1 + {TOTAL_MASS_ABS:e}, {params}"
            );
        }
    }
    Ok(())
}

/// Validity `Σ p e^{−l} ≤ 1` (the Q-mass covered by P is at most 1) of the upper PMFs of `pld`.
fn check_validity(pld: &BracketedPld, params: &str) -> Result<(), TestCaseError> {
    for (name, pmf) in [
        ("upper REMOVE", pld.upper.remove()),
        ("upper ADD", pld.upper.add()),
    ] {
        let q_mass = pmf.q_mass();
        prop_assert!(
            q_mass <= 1.0 + TOTAL_MASS_ABS,
            "{name}: Σ p·e^(−l) = {q_mass:.17} > 1 + {TOTAL_MASS_ABS:e} ({} points, losses \
             [{}, {}], roundoff_l2 {:e}), {params}",
            pmf.len(),
            pmf.loss(0),
            pmf.loss(pmf.len() - 1),
            pmf.roundoff_l2()
        );
    }
    Ok(())
}

/// The k-fold self-composition of the single step, or a rejection of the case when the
/// library refuses it as unrepresentable (checked to be that refusal and nothing else).
fn composed(sigma: f64, q: f64, steps: u64, params: &str) -> Result<BracketedPld, TestCaseError> {
    let single = single_step(sigma, q);
    prop_assume!(
        composition_fits(single.upper.remove(), steps)
            && composition_fits(single.upper.add(), steps)
    );
    match single.self_compose(steps, TAIL_MASS) {
        Ok(pld) => Ok(pld),
        Err(e) => {
            prop_assert!(
                is_range_refusal(&e),
                "self_compose: unexpected {e}, {params}"
            );
            Err(TestCaseError::reject(format!("refused: {e}")))
        }
    }
}

/// δ(ε) of every PMF of `pld` is non-increasing on `grid`, never NaN, and within [0, 1].
fn check_monotone(pld: &BracketedPld, grid: &[f64], params: &str) -> Result<(), TestCaseError> {
    for (name, pmf) in pmfs(pld) {
        let mut previous: Option<(f64, f64)> = None;
        for &epsilon in grid {
            let delta = pmf.delta_for_epsilon(epsilon);
            prop_assert!(
                (0.0..=1.0).contains(&delta),
                "{name}: δ({epsilon}) = {delta} outside [0, 1], {params}"
            );
            if let Some((e0, d0)) = previous {
                prop_assert!(
                    delta <= d0 * (1.0 + MONOTONE_RELATIVE),
                    "{name}: δ increases from δ({e0}) = {d0:e} to δ({epsilon}) = {delta:e}, \
                     {params}"
                );
            }
            previous = Some((epsilon, delta));
        }
    }
    Ok(())
}

/// ε values at which the accountant is asked for δ (increasing).
const ACCOUNTANT_EPSILONS: [f64; 6] = [0.0, 0.1, 0.5, 1.0, 4.0, 16.0];

/// An accountant for DP-SGD on the fixed grid, or a rejection of the case when its
/// composition is clearly unrepresentable.
fn accountant(sigma: f64, q: f64, steps: u64, params: &str) -> Result<Accountant, TestCaseError> {
    let single = single_step(sigma, q);
    prop_assume!(
        composition_fits(single.upper.remove(), steps)
            && composition_fits(single.upper.add(), steps)
    );
    let spec = CompositionSpec::dp_sgd(sigma, q, steps, 1.0)
        .unwrap_or_else(|e| panic!("dp_sgd spec: {e}, {params}"));
    let options = AccountantOptions {
        grid_step: Some(GRID_STEP),
        ..Default::default()
    };
    Ok(
        Accountant::new(&spec, options)
            .unwrap_or_else(|e| panic!("Accountant::new: {e}, {params}")),
    )
}

/// The value of a library answer, or a rejection of the case if the library refused it as
/// unrepresentable (any other error fails the test).
fn answer<T>(result: Result<T, Error>, params: &str) -> Result<T, TestCaseError> {
    match result {
        Ok(value) => Ok(value),
        Err(e) => {
            prop_assert!(is_range_refusal(&e), "unexpected error {e}, {params}");
            Err(TestCaseError::reject(format!("refused: {e}")))
        }
    }
}

/// The accountant's δ(ε) brackets are consistent with a non-increasing δ on
/// [`ACCOUNTANT_EPSILONS`]: for ε₁ < ε₂, lower(ε₂) ≤ true δ(ε₂) ≤ true δ(ε₁) ≤ upper(ε₁).
///
/// Each query picks its own truncation and tail accuracy (they depend on the δ found), so
/// the two ends are not each monotone to the last digit when δ is tiny; what must hold is that
/// no bracket proves a larger δ at a larger ε. (The curves of fixed PMFs are checked for plain
/// monotonicity in `pmf_delta_curves_are_non_increasing`.)
fn check_accountant_delta_non_increasing(
    sigma: f64,
    q: f64,
    steps: u64,
) -> Result<(), TestCaseError> {
    let params = format!("sigma={sigma}, q={q}, steps={steps}, grid_step={GRID_STEP}");
    let accountant = accountant(sigma, q, steps, &params)?;
    let mut brackets: Vec<(f64, Bracket)> = Vec::new();
    for eps in ACCOUNTANT_EPSILONS {
        let bracket = answer(accountant.delta_for_epsilon(eps).map(|a| a.delta), &params)?;
        for &(e0, b0) in &brackets {
            prop_assert!(
                bracket.lower <= b0.upper * (1.0 + MONOTONE_RELATIVE),
                "accountant δ brackets contradict monotonicity: lower δ({eps}) = {:e} exceeds \
                 upper δ({e0}) = {:e} (brackets {b0:?} and {bracket:?}), {params}",
                bracket.lower,
                b0.upper
            );
        }
        brackets.push((eps, bracket));
    }
    Ok(())
}

/// Total masses of the composed PMFs.
fn check_composed_total_mass(sigma: f64, q: f64, steps: u64) -> Result<(), TestCaseError> {
    let params = format!(
        "self_compose({steps}, {TAIL_MASS:e}), sigma={sigma}, q={q}, grid_step={GRID_STEP}"
    );
    check_total_mass(&composed(sigma, q, steps, &params)?, &params)
}

/// Validity of the composed upper PMFs.
fn check_composed_validity(sigma: f64, q: f64, steps: u64) -> Result<(), TestCaseError> {
    let params = format!(
        "self_compose({steps}, {TAIL_MASS:e}), sigma={sigma}, q={q}, grid_step={GRID_STEP}"
    );
    check_validity(&composed(sigma, q, steps, &params)?, &params)
}

proptest! {
    #![proptest_config(config())]

    /// The accountant's brackets on ε(δ) and δ(ε) are ordered and never NaN; ε lower bounds
    /// are finite (upper ones may be +∞), δ brackets lie in [0, 1].
    #[test]
    fn accountant_brackets_are_ordered(
        sigma in sigma(), q in sampling_rate(), steps in steps(), delta in target_delta()
    ) {
        let params = format!(
            "sigma={sigma}, q={q}, steps={steps}, delta={delta:e}, grid_step={GRID_STEP}"
        );
        let accountant = accountant(sigma, q, steps, &params)?;
        let epsilon = answer(accountant.epsilon_for_delta(delta).map(|a| a.epsilon), &params)?;
        prop_assert!(
            !epsilon.lower.is_nan() && !epsilon.upper.is_nan(),
            "ε({delta:e}) bracket has NaN: {epsilon:?}, {params}"
        );
        prop_assert!(
            epsilon.lower.is_finite() && epsilon.lower >= 0.0,
            "ε({delta:e}) lower bound must be finite and ≥ 0: {epsilon:?}, {params}"
        );
        prop_assert!(
            epsilon.lower <= epsilon.upper,
            "ε({delta:e}) bracket out of order: {epsilon:?}, {params}"
        );
        for eps in ACCOUNTANT_EPSILONS {
            let bracket = answer(accountant.delta_for_epsilon(eps).map(|a| a.delta), &params)?;
            prop_assert!(
                bracket.lower.is_finite() && bracket.upper.is_finite(),
                "δ({eps}) bracket not finite: {bracket:?}, {params}"
            );
            prop_assert!(
                0.0 <= bracket.lower && bracket.lower <= bracket.upper && bracket.upper <= 1.0,
                "δ({eps}) bracket not 0 ≤ lower ≤ upper ≤ 1: {bracket:?}, {params}"
            );
        }
    }

    /// The same composition's raw PMFs (`Accountant::pld`), with no clamping of the lower
    /// bound to the upper one: a lower curve above the upper curve means one of them is wrong.
    #[test]
    fn accountant_raw_pmfs_are_ordered(
        sigma in sigma(), q in sampling_rate(), steps in steps(), delta in target_delta()
    ) {
        let params = format!(
            "sigma={sigma}, q={q}, steps={steps}, delta={delta:e}, grid_step={GRID_STEP}, \
             tail={TAIL_MASS:e}"
        );
        let accountant = accountant(sigma, q, steps, &params)?;
        let pld = answer(accountant.pld(GRID_STEP, TAIL_MASS), &params)?;
        for eps in ACCOUNTANT_EPSILONS {
            let upper = pld.upper.delta_for_epsilon(eps);
            let lower = pld.lower.delta_for_epsilon(eps);
            prop_assert!(
                lower <= upper,
                "raw PMFs: lower δ({eps}) = {lower:e} > upper δ({eps}) = {upper:e}, {params}"
            );
        }
        let upper = pld.upper.epsilon_for_delta(delta);
        let lower = pld.lower.epsilon_for_delta(delta);
        prop_assert!(
            !upper.is_nan() && !lower.is_nan() && lower <= upper,
            "raw PMFs: lower ε({delta:e}) = {lower} vs upper ε({delta:e}) = {upper}, {params}"
        );
    }

    /// The accountant's δ(ε) brackets never prove a larger δ at a larger ε.
    #[test]
    fn accountant_delta_is_non_increasing(
        sigma in sigma(), q in sampling_rate(), steps in steps()
    ) {
        check_accountant_delta_non_increasing(sigma, q, steps)?;
    }

    /// One step: upper PMFs conserve mass and are valid, lower PMFs have mass ≤ 1.
    #[test]
    fn single_step_pmfs_conserve_mass_and_are_valid(sigma in sigma(), q in sampling_rate()) {
        let params = format!("single step, sigma={sigma}, q={q}, grid_step={GRID_STEP}");
        let single = single_step(sigma, q);
        check_total_mass(&single, &params)?;
        check_validity(&single, &params)?;
    }

    /// Composed: upper PMFs keep total mass 1, lower PMFs at most 1.
    #[test]
    fn composed_pmfs_conserve_mass(sigma in sigma(), q in sampling_rate(), steps in steps()) {
        check_composed_total_mass(sigma, q, steps)?;
    }

    /// Composed: upper PMFs stay valid, `Σ p e^{−l} ≤ 1`.
    #[test]
    fn composed_upper_pmfs_are_valid(sigma in sigma(), q in sampling_rate(), steps in steps()) {
        check_composed_validity(sigma, q, steps)?;
    }

    /// δ(ε) read from every PMF (both bounds, both directions) is non-increasing, single step
    /// and composed.
    #[test]
    fn pmf_delta_curves_are_non_increasing(
        sigma in sigma(), q in sampling_rate(), steps in steps()
    ) {
        let params = format!("sigma={sigma}, q={q}, steps={steps}, grid_step={GRID_STEP}");
        let grid = epsilon_grid(q);
        check_monotone(&single_step(sigma, q), &grid, &format!("single step, {params}"))?;
        let mut wide_grid = grid;
        wide_grid.extend([16.0, 32.0, 64.0, 128.0]);
        check_monotone(
            &composed(sigma, q, steps, &params)?,
            &wide_grid,
            &format!("self_compose({steps}, {TAIL_MASS:e}), {params}"),
        )?;
    }

    /// One step: lower ≤ exact ≤ upper for REMOVE against the closed form, and for the
    /// bracket (worse of ADD and REMOVE) against the exact worse direction.
    #[test]
    fn single_step_sandwiches_the_exact_delta(sigma in sigma(), q in sampling_rate()) {
        let params = format!("sigma={sigma}, q={q}, grid_step={GRID_STEP}, tail={TAIL_MASS:e}");
        let m = mechanism(sigma, q);
        let pld = single_step(sigma, q);
        for eps in epsilon_grid(q) {
            let tolerance = exact_tolerance(eps);
            let exact = m.hockey_stick(eps);
            let lower = pld.lower.remove().delta_for_epsilon(eps);
            let upper = pld.upper.remove().delta_for_epsilon(eps);
            prop_assert!(
                lower <= exact + tolerance,
                "REMOVE lower δ({eps}) = {lower:e} > exact {exact:e}, {params}"
            );
            prop_assert!(
                exact <= upper + tolerance,
                "REMOVE upper δ({eps}) = {upper:e} < exact {exact:e}, {params}"
            );
            let exact_add = swapped_pair_delta(eps, m.hockey_stick(-eps));
            let exact_worse = exact.max(exact_add);
            let bracket = pld.delta_for_epsilon(eps);
            prop_assert!(
                bracket.lower <= exact_worse + tolerance
                    && exact_worse <= bracket.upper + tolerance,
                "bracket {bracket:?} does not contain the exact max(δ_remove, δ_add)({eps}) = \
                 {exact_worse:e}, {params}"
            );
        }
    }

    /// One step: the ADD PMFs bracket `1 − e^ε + e^ε δ_remove(−ε)` (the exact δ_add).
    #[test]
    fn single_step_add_direction_brackets_the_swapped_identity(
        sigma in sigma(), q in sampling_rate()
    ) {
        let params = format!("sigma={sigma}, q={q}, grid_step={GRID_STEP}, tail={TAIL_MASS:e}");
        let m = mechanism(sigma, q);
        let pld = single_step(sigma, q);
        for eps in epsilon_grid(q) {
            let tolerance = exact_tolerance(eps);
            let exact_add = swapped_pair_delta(eps, m.hockey_stick(-eps));
            let lower = pld.lower.add().delta_for_epsilon(eps);
            let upper = pld.upper.add().delta_for_epsilon(eps);
            prop_assert!(
                lower <= exact_add + tolerance,
                "ADD lower δ({eps}) = {lower:e} > 1 − e^ε + e^ε·δ_remove(−ε) = {exact_add:e}, \
                 {params}"
            );
            prop_assert!(
                exact_add <= upper + tolerance,
                "ADD upper δ({eps}) = {upper:e} < 1 − e^ε + e^ε·δ_remove(−ε) = {exact_add:e}, \
                 {params}"
            );
        }
    }

    /// Three composed steps: the identity `δ_add(ε) = 1 − e^ε + e^ε δ_remove(−ε)` (and the
    /// same with the directions exchanged) holds for the exact curves, which each PMF bounds:
    /// ```text
    /// ADD upper(ε)    ≥ δ_add(ε) = 1 − e^ε + e^ε δ_remove(−ε) ≥ 1 − e^ε + e^ε·REMOVE lower(−ε)
    /// ADD lower(ε)    ≤ δ_add(ε) = 1 − e^ε + e^ε δ_remove(−ε) ≤ 1 − e^ε + e^ε·REMOVE upper(−ε)
    /// ```
    /// (e^ε > 0 keeps the direction of each inequality.)
    #[test]
    fn composed_directions_respect_the_swapped_identity(
        sigma in sigma(), q in sampling_rate()
    ) {
        let k = 3;
        let params = format!(
            "sigma={sigma}, q={q}, k={k}, grid_step={GRID_STEP}, tail={TAIL_MASS:e}"
        );
        let pld = single_step(sigma, q)
            .self_compose(k, TAIL_MASS)
            .unwrap_or_else(|e| panic!("self_compose: {e}, {params}"));
        let directions = [
            ("ADD", pld.upper.add(), pld.lower.add(), "REMOVE", pld.upper.remove(),
             pld.lower.remove()),
            ("REMOVE", pld.upper.remove(), pld.lower.remove(), "ADD", pld.upper.add(),
             pld.lower.add()),
        ];
        for (name, upper, lower, other, other_upper, other_lower) in directions {
            for eps in epsilon_grid(q) {
                let tolerance = exact_tolerance(eps);
                let from_other_lower =
                    swapped_pair_delta(eps, other_lower.delta_for_epsilon(-eps));
                let from_other_upper =
                    swapped_pair_delta(eps, other_upper.delta_for_epsilon(-eps));
                let up = upper.delta_for_epsilon(eps);
                let low = lower.delta_for_epsilon(eps);
                prop_assert!(
                    up + tolerance >= from_other_lower,
                    "{name} upper δ({eps}) = {up:e} < 1 − e^ε + e^ε·({other} lower δ(−ε)) = \
                     {from_other_lower:e}, {params}"
                );
                prop_assert!(
                    low <= from_other_upper + tolerance,
                    "{name} lower δ({eps}) = {low:e} > 1 − e^ε + e^ε·({other} upper δ(−ε)) = \
                     {from_other_upper:e}, {params}"
                );
            }
        }
    }
}

/// A deterministic sweep of the single-step sandwich over small sampling rates and several
/// grid steps, REMOVE direction, with the exact Balle–Wang-type closed form.
#[test]
fn single_step_remove_sandwich_at_small_sampling_rates() {
    let mut failures = Vec::new();
    for sigma in [0.5, 2.0, 20.0] {
        for q in [1e-4, 3e-4, 1e-3, 3e-3, 1e-2] {
            for step in [1e-3, 2e-3, 1e-2] {
                let m = mechanism(sigma, q);
                let pld = BracketedPld::from_mechanism(&m, Symmetry::Asymmetric, step, TAIL_MASS)
                    .unwrap_or_else(|e| panic!("from_mechanism(σ={sigma}, q={q}, h={step}): {e}"));
                for eps in [-0.01, 0.0, 1e-3, 0.01, 0.1, 1.0] {
                    let exact = m.hockey_stick(eps);
                    let lower = pld.lower.remove().delta_for_epsilon(eps);
                    let upper = pld.upper.remove().delta_for_epsilon(eps);
                    let tolerance = exact_tolerance(eps);
                    if lower > exact + tolerance || exact > upper + tolerance {
                        failures.push(format!(
                            "sigma={sigma}, q={q}, grid_step={step}, eps={eps}: lower \
                             {lower:e}, exact {exact:e}, upper {upper:e} (lower PMF has {} \
                             point(s), first loss {})",
                            pld.lower.remove().len(),
                            pld.lower.remove().loss(0)
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} violations of lower ≤ exact ≤ upper:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Parameters (σ, q, steps) on which the proptests above once failed, replayed every run.
const REGRESSIONS: [(f64, f64, u64); 3] = [
    (1.0, 0.038209135845349226, 5343),
    (1.7149688345464877, 0.00018332950842347965, 3621),
    (6.197700366709206, 0.10619529221217276, 57),
];

/// Run a property on every regression case, collecting all failures before panicking.
fn replay(property: fn(f64, f64, u64) -> Result<(), TestCaseError>) {
    let failures: Vec<String> = REGRESSIONS
        .iter()
        .filter_map(|&(sigma, q, steps)| property(sigma, q, steps).err())
        .map(|e| e.to_string())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} regression cases fail:\n{}",
        failures.len(),
        REGRESSIONS.len(),
        failures.join("\n")
    );
}

#[test]
fn regressions_composed_pmfs_conserve_mass() {
    replay(check_composed_total_mass);
}

#[test]
fn regressions_composed_upper_pmfs_are_valid() {
    replay(check_composed_validity);
}

#[test]
fn regressions_accountant_delta_is_non_increasing() {
    replay(check_accountant_delta_non_increasing);
}
