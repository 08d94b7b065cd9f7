//! Named soundness reproducers: one test each, with the truth computed inside the test from
//! the independent oracles of `soundness_oracles` (formulas and references there). Each test
//! checks that the answer has no NaN and brackets the truth (`upper ≥ truth_lo`,
//! `lower ≤ truth_hi`).

mod soundness_oracles;

use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
use soundness_oracles as oracle;

fn accountant(spec: &str) -> Accountant {
    let spec = CompositionSpec::from_json_str(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    Accountant::new(&spec, AccountantOptions::default()).unwrap()
}

/// ε(δ) must bracket `[truth_lo, truth_hi]`.
fn check_epsilon(spec: &str, delta: f64, truth: (f64, f64)) {
    let answer = accountant(spec)
        .epsilon_for_delta(delta)
        .unwrap_or_else(|e| panic!("{spec}: ε({delta:e}): {e}"))
        .epsilon;
    let (lower, upper) = (answer.lower, answer.upper);
    assert!(
        !lower.is_nan() && !upper.is_nan() && 0.0 <= lower && lower <= upper,
        "{spec}: ε({delta:e}) = [{lower:e}, {upper:e}]"
    );
    assert!(
        upper >= truth.0 * (1.0 - 1e-13) && lower <= truth.1 * (1.0 + 1e-13),
        "{spec}: ε({delta:e}) = [{lower:e}, {upper:e}], truth in [{:e}, {:e}]",
        truth.0,
        truth.1
    );
}

/// δ(ε) must bracket `[truth_lo, truth_hi]`.
fn check_delta(spec: &str, epsilon: f64, truth: (f64, f64)) {
    let answer = accountant(spec)
        .delta_for_epsilon(epsilon)
        .unwrap_or_else(|e| panic!("{spec}: δ({epsilon:e}): {e}"))
        .delta;
    let (lower, upper) = (answer.lower, answer.upper);
    assert!(
        !lower.is_nan() && !upper.is_nan() && 0.0 <= lower && lower <= upper && upper <= 1.0,
        "{spec}: δ({epsilon:e}) = [{lower:e}, {upper:e}]"
    );
    assert!(
        upper >= truth.0 && lower <= truth.1,
        "{spec}: δ({epsilon:e}) = [{lower:e}, {upper:e}], truth in [{:e}, {:e}]",
        truth.0,
        truth.1
    );
}

/// Only a lower bound on the truth is known (a sub-composition): `(lo, 1)` / `(lo, ∞)`.
fn at_least(lo: f64) -> (f64, f64) {
    (lo, f64::INFINITY)
}

fn dl(scale: f64, shift: u64) -> oracle::Atoms {
    oracle::discrete_laplace_atoms(scale, shift).unwrap()
}

/// (1) Discrete Laplace, scale 0.001 (a = 1000 nats per unit): one run has loss +1000 with
/// P-mass ≈ 1, so ε(1e-5) = 1000 + ln(1 − 1e-5)-ish = 999.99999 and δ(1) ≈ 1.
#[test]
fn discrete_laplace_tiny_scale() {
    let spec = r#"{"events":[{"mechanism":"discrete_laplace","scale":0.001}]}"#;
    let atoms = dl(0.001, 1);
    let truth = oracle::invert(&|e| atoms.delta(e), 1e-5);
    assert!((truth.1 - 999.99999).abs() < 1e-4, "{truth:?}");
    check_epsilon(spec, 1e-5, truth);
    check_delta(spec, 1.0, atoms.delta(1.0));
}

/// (2) Discrete Gaussian σ = 2, Δ = 100: losses up to ≈ Δ²/(2σ²) + … ; ε(1e-5) ≈ 1449.98 by
/// the direct sum over the integers.
#[test]
fn discrete_gaussian_huge_sensitivity() {
    let spec = r#"{"events":[{"mechanism":"discrete_gaussian","sigma":2,"sensitivity":100}]}"#;
    let atoms = oracle::discrete_gaussian_atoms(2.0, 100, 1_000_000).unwrap();
    let truth = oracle::invert(&|e| atoms.delta(e), 1e-5);
    assert!((truth.1 - 1449.98).abs() < 0.01, "{truth:?}");
    check_epsilon(spec, 1e-5, truth);
}

/// (3) DP-SGD (σ 1, q 0.01, 1000 steps) plus the discrete Laplace of (1): composing more
/// never lowers ε, so the truth is at least (1)'s 999.99999.
#[test]
fn dp_sgd_plus_discrete_laplace() {
    let spec = r#"{"events":[
        {"mechanism":"gaussian","sigma":1,"sampling":{"poisson":0.01},"count":1000},
        {"mechanism":"discrete_laplace","scale":0.001}]}"#;
    let atoms = dl(0.001, 1);
    let truth = oracle::invert(&|e| atoms.delta(e), 1e-5);
    check_epsilon(spec, 1e-5, at_least(truth.0));
}

/// (4) Discrete Laplace scale 0.0014, Δ 7 (base loss 7/0.0014 = 5000 nats), Poisson
/// q = 0.001: the subsampled loss is ln(1 + q(e^5000 − 1)) ≈ 5000 + ln q ≈ 4993.09.
#[test]
fn subsampled_discrete_laplace_huge_loss() {
    let spec = r#"{"events":[{"mechanism":"discrete_laplace","scale":0.0014,"sensitivity":7,
        "sampling":{"poisson":0.001}}]}"#;
    let atoms = dl(0.0014, 7);
    let truth = oracle::invert(&|e| oracle::subsampled(0.001, e, &|x| atoms.delta(x)), 1e-5);
    // δ = q(1 − e^{x − 5000}) = 1e-5 at the base loss x = 5000 + ln 0.99, so
    // ε = 5000 + ln 0.99 + ln q.
    let expected = 5000.0 + 0.99f64.ln() + 0.001f64.ln();
    assert!((truth.1 - expected).abs() < 1e-6, "{truth:?}");
    check_epsilon(spec, 1e-5, truth);
}

/// (5) eps_delta (0.1, 1e-6) × 1e9: mass 1 − (1 − 1e-6)^1e9 ≈ 1 at +∞, so ε(0.5) = ∞ and
/// δ(1) ≈ 1; × 1e8: δ(1) = 1 − e^{−100}·(1 − δ_RR) ≈ 1 − 4e-44; (0, 0.5) × 1e12: ε(1e-5) = ∞.
#[test]
fn eps_delta_huge_counts() {
    let spec = |count: u64, d: f64| {
        format!(
            r#"{{"events":[{{"mechanism":"eps_delta","epsilon":0.1,"delta":{d},"count":{count}}}]}}"#
        )
    };
    check_epsilon(
        &spec(1_000_000_000, 1e-6),
        0.5,
        (f64::INFINITY, f64::INFINITY),
    );
    check_delta(
        &spec(1_000_000_000, 1e-6),
        1.0,
        oracle::eps_delta(1_000_000_000, 0.1, 1e-6, 1.0),
    );
    check_delta(
        &spec(100_000_000, 1e-6),
        1.0,
        oracle::eps_delta(100_000_000, 0.1, 1e-6, 1.0),
    );
    check_epsilon(
        &spec(1_000_000_000_000, 0.5),
        1e-5,
        (f64::INFINITY, f64::INFINITY),
    );
}

/// (6) Randomized response ε₀ = 745 × 1e12: every run is truthful except with probability
/// ≈ e^{−745}, so the loss is 745·1e12 = 7.45e14 with probability ≈ 1 and ε(1e-5) ≈ 7.45e14
/// (binomial sum); an upper bound of +∞ is acceptable.
#[test]
fn randomized_response_huge_epsilon_and_count() {
    let spec =
        r#"{"events":[{"mechanism":"randomized_response","epsilon":745,"count":1000000000000}]}"#;
    let rr = oracle::BinaryRr::new(1_000_000_000_000, 745.0);
    let truth = oracle::invert(&|e| rr.delta(e), 1e-5);
    assert!((truth.1 / 7.45e14 - 1.0).abs() < 1e-9, "{truth:?}");
    check_epsilon(spec, 1e-5, truth);
}

/// (7) Laplace scale 0.001 × 1e6 (ε₀ = 1000 per run): δ(500) ≥ one run's
/// 1 − e^{(500 − 1000)/2} ≈ 1.
#[test]
fn laplace_tiny_scale_many_runs() {
    let spec = r#"{"events":[{"mechanism":"laplace","scale":0.001,"count":1000000}]}"#;
    check_delta(spec, 500.0, (oracle::laplace(1000.0, 500.0).0, 1.0));
}

/// (8) One Poisson-subsampled Gaussian step at tiny rates: δ_remove(ε) =
/// q·δ_G(ln(1 + (e^ε − 1)/q)), the ADD direction likewise (see the oracle), the truth the
/// larger. σ 1, q 1e-12: δ(0) = q(2Φ(½) − 1) = 3.829249e-13; σ 1e6, q 1e-12: δ(0) ≈ 4.0e-19;
/// σ 1e9, q 1e-4; σ 3, q 1e-14: δ(1e-12) ≈ 1.6e-58 (lower must not exceed it).
#[test]
fn subsampled_gaussian_tiny_rates() {
    for (sigma, q, eps) in [
        (1.0, 1e-12, 0.0),
        (1e6, 1e-12, 0.0),
        (1e9, 1e-4, 0.0),
        (1e9, 1e-4, 1e-10),
        (3.0, 1e-14, 1e-12),
    ] {
        let spec = format!(
            r#"{{"events":[{{"mechanism":"gaussian","sigma":{sigma},"sampling":{{"poisson":{q}}}}}]}}"#
        );
        let truth = oracle::subsampled(q, eps, &|x| oracle::gaussian_delta(1.0 / sigma, x));
        check_delta(&spec, eps, truth);
    }
}

/// (9) Unsampled Gaussian σ = 1e10 (μ = 1e-10): δ(1e-9) by quadrature (the closed form
/// cancels); ε(1e-12) ≈ 1.93836e-10 by inverting it.
#[test]
fn gaussian_huge_sigma() {
    let spec = r#"{"events":[{"mechanism":"gaussian","sigma":1e10}]}"#;
    check_delta(spec, 1e-9, oracle::gaussian_delta(1e-10, 1e-9));
    let truth = oracle::invert(&|e| oracle::gaussian_delta(1e-10, e), 1e-12);
    assert!((truth.1 / 1.93836e-10 - 1.0).abs() < 1e-5, "{truth:?}");
    check_epsilon(spec, 1e-12, truth);
}

/// The Poisson-sampled pair `((1 − q)Q + qP, Q)` of a finite base pair, composed `k` times by
/// enumeration, both orders (the truth is the larger).
fn sampled_pair_delta(p: &[f64], q: &[f64], rate: f64, k: u64, epsilon: f64) -> (f64, f64) {
    let remove = oracle::sampled_pair_atoms(p, q, rate, false, k, 100_000).unwrap();
    let add = oracle::sampled_pair_atoms(p, q, rate, true, k, 100_000).unwrap();
    let (r, a) = (remove.delta(epsilon), add.delta(epsilon));
    (r.0.max(a.0), r.1.max(a.1))
}

/// (10) `eps_delta` ε₀ = 100, δ₀ = 0, Poisson q = 0.001, composed k ≥ 2 times. The −ε₀
/// atom's P-mass was computed as (1 − δ₀) − 1/(1 + e^{−ε₀}), which cancels to 0 once e^{−ε₀}
/// is below an ulp of 1, and the atom was dropped with its Q-mass ≈ 1: δ(1) came out q^k
/// (1e-6 for k = 2) instead of ≈ 1 − (1 − q)^k (2.0e-3). Same for randomized response at
/// ε₀ = 800 (e^{−ε₀} underflows). Sweep seed 7, case 137.
#[test]
fn sampled_eps_delta_large_epsilon_keeps_partial_hits() {
    for (eps0, k) in [
        (100.0f64, 2),
        (100.0, 10),
        (60.0, 3),
        (300.0, 2),
        (550.0, 5),
    ] {
        let spec = format!(
            r#"{{"events":[{{"mechanism":"eps_delta","epsilon":{eps0},"delta":0,"sampling":{{"poisson":0.001}},"count":{k}}}]}}"#
        );
        let e = (-eps0).exp();
        let (high, low) = (1.0 / (1.0 + e), e / (1.0 + e));
        let truth = sampled_pair_delta(&[high, low], &[low, high], 0.001, k, 1.0);
        assert!(truth.0 > 0.99 * -(k as f64 * (-0.001f64).ln_1p()).exp_m1());
        check_delta(&spec, 1.0, truth);
    }
    // ε₀ = 800: e^{−ε₀} = 0 in f64. Each hit's loss ≈ 800 + ln q ≫ 1, so δ(1) is at least
    // the chance of a hit, 1 − (1 − q)^k, times (1 − e^{1 − 793}).
    for mechanism in [
        r#""mechanism":"eps_delta","epsilon":800,"delta":0"#,
        r#""mechanism":"randomized_response","epsilon":800"#,
    ] {
        let spec =
            format!(r#"{{"events":[{{{mechanism},"sampling":{{"poisson":0.001}},"count":2}}]}}"#);
        check_delta(
            &spec,
            1.0,
            (-(2.0 * (-0.001f64).ln_1p()).exp_m1() * (1.0 - 1e-12), 1.0),
        );
    }
}

/// (11) Sweep seed 7, case 137 as found: `eps_delta` (119.2, 0) at q = 4.6e-12 composed
/// 8.6e10 times. The number of hits is Binomial(k, q) with mean 0.4; one hit has loss
/// ≈ 119.2 + ln q − (k−1)·q ≈ 92.8, so δ(ε) ≥ P(≥ 1 hit)·(1 − e^{ε − 92}) and ε(δ) stays
/// large for δ below P(≥ 1 hit) ≈ 0.33. The answer was [0, 0].
#[test]
fn sampled_eps_delta_huge_count_tiny_rate() {
    let (q, k): (f64, u64) = (4.6e-12, 86_000_000_000);
    let spec = format!(
        r#"{{"events":[{{"mechanism":"eps_delta","epsilon":119.2,"delta":0,"sampling":{{"poisson":{q}}},"count":{k}}}]}}"#
    );
    let hit = -(k as f64 * (-q).ln_1p()).exp_m1();
    assert!((0.32..0.34).contains(&hit), "{hit}");
    // Loss with one hit ≥ ln(1 − q + q·e^{119.2}·(1 − e^{−119.2})) + (k − 1)·ln(1 − q) > 92.
    check_delta(&spec, 50.0, (hit * -(50.0f64 - 92.0).exp_m1(), 1.0));
    check_epsilon(&spec, 0.2, at_least(50.0));
}

/// (12) Sweep seed 7, case 94: a mixture of Gaussians, `eps_delta` (119.16, 0) and discrete
/// Laplace scale 0.0353, at δ = 4.2e-294. The lower end came out 600 above an upper end of
/// 147.5 (the same cancellation as (10) put the `eps_delta` pair's Q-mass at 0). The truth
/// is at least the `eps_delta` run's ε(δ) = 119.16 and, each run adding its top loss, at
/// most ∞; the bracket must be ordered and contain 119.16-or-more.
#[test]
fn eps_delta_large_epsilon_in_a_mixed_composition() {
    let spec = r#"{"events":[
        {"mechanism":"mixture_of_gaussians","probabilities":[1.0],"sensitivities":[0.013219813693130992],"sigma":153.12282395316882},
        {"mechanism":"eps_delta","epsilon":119.15663263360145,"delta":0},
        {"mechanism":"discrete_laplace","scale":0.03533208245752974,"sensitivity":1}]}"#;
    let delta = 4.2096347744597055e-294;
    let eps0 = 119.15663263360145;
    let alone = oracle::invert(&|e| oracle::eps_delta(1, eps0, 0.0, e), delta).0;
    // The three top losses add up to 119.157 + 1/0.0353 + a hair: no lower end above that.
    let top = eps0 + 1.0 / 0.03533208245752974 + 1e-3;
    check_epsilon(spec, delta, (alone, top));
}

/// (13) Sweep seed 20261124, case 636: 8-ary randomized response ε₀ = 2.57e-4 composed
/// 1.27e8 times (replace), ε(4.81e-7). The answer was [7.70030671, 7.70030652]: the upper
/// end below the lower. At k ≈ 1e8 a tilted FFT power's near-zero frequencies multiply the
/// forward transform's error by k, which shifts whole stretches of entries (1e-10 each)
/// while the noise-floor estimate said 1e-18; tilted entries are now chosen by a worst-case
/// per-entry bound. The exact binomial oracle is too slow here to decide at 1e-7, so the
/// check is a cross-check: δ's own guaranteed lower bound at the reported upper ε must not
/// exceed the δ asked for (else the truth ε would lie above it), and likewise the other way.
#[test]
fn huge_count_tilted_power_keeps_the_bracket_ordered() {
    let spec = r#"{"events":[{"categories":8,"count":126631692,"epsilon":0.00025713669717142117,"mechanism":"randomized_response"}],"neighbouring":"replace"}"#;
    let delta = 4.811369708092348e-7;
    let answer = accountant(spec).epsilon_for_delta(delta).unwrap().epsilon;
    assert!(answer.lower <= answer.upper, "{answer:?}");
    let at_upper = accountant(spec)
        .delta_for_epsilon(answer.upper)
        .unwrap()
        .delta;
    assert!(
        at_upper.lower <= delta,
        "δ({}) ≥ {:e} > {delta:e}",
        answer.upper,
        at_upper.lower
    );
    let at_lower = accountant(spec)
        .delta_for_epsilon(answer.lower)
        .unwrap()
        .delta;
    assert!(
        at_lower.upper >= delta,
        "δ({}) ≤ {:e} < {delta:e}",
        answer.lower,
        at_lower.upper
    );
}

/// (14) Sweep seed 90210, case 342: a pair with P-mass 0.967 at loss +∞ (Q = 0 there)
/// composed 1.2e10 times, δ(1.3e-6). The probability that some run has infinite loss is
/// 1 − 0.033^k = 1, so δ = 1; the answer was 0.99999866. The stored PMF's finite total falls
/// a few ulps short of 1 − m, and `(f + m)^k − f^k` at k = 1.2e10 turned that into 1.3e-6 of
/// missing +∞ mass. The +∞ mass of an upper power is now at least `1 − (1 − m)^k`, and the
/// finite part's shortfall is put back at the lowest loss.
#[test]
fn infinite_loss_mass_survives_a_huge_count() {
    let spec = r#"{"events":[{"count":12032105720,"mechanism":"pmf_pair","p":[3.483162133354547e-6,0.9670121166153004,0.0,0.032984400222566386],"q":[0.032984400222566386,0.0,0.9670121166153004,3.483162133354547e-6]}],"neighbouring":"add_remove"}"#;
    let infinite_run = -(12032105720.0 * (-0.9670121166153004f64).ln_1p()).exp_m1();
    check_delta(spec, 1.3055555504979965e-6, (infinite_run, 1.0));
}

/// (15) Sweep seed 90210, case 195: a mixture of Gaussians composed 5.8e9 times beside a
/// `pmf_pair` with +∞ mass 0.995 composed 3 times, δ(78.6). The pair alone gives
/// δ ≥ 1 − 0.005^3; the answer was 0.9999995, 3.7e-7 below: the mixture's power had lost
/// 5.8e-7 of its total mass (5.8e9 times a one-ulp shortfall), and the composition's +∞ mass
/// was scaled down with it.
#[test]
fn a_huge_power_keeps_its_total_mass() {
    let spec = r#"{"events":[{"count":5772949616,"mechanism":"mixture_of_gaussians","probabilities":[0.9999999995301825,4.698174778776319e-10],"sensitivities":[9.43389015650809,0.17043813985879172],"sigma":60244697.80682631},{"count":3,"mechanism":"pmf_pair","p":[6.554673549148308e-7,0.0031161534814241995,0.9949753654171734,0.0019078256340476782],"q":[7.668089539506143e-7,1.0605024254467698e-7,0.0,0.9999991271408035]},{"count":11,"mechanism":"mixture_of_gaussians","probabilities":[3.0658069096915464e-6,0.04241516176663979,0.9575817724264505],"sensitivities":[0.0,0.6679378983090811,0.35455187866996335],"sigma":1201.923045101511}],"neighbouring":"add_remove"}"#;
    let pair = oracle::pmf_pair_atoms(
        &[
            6.554673549148308e-7,
            0.0031161534814241995,
            0.9949753654171734,
            0.0019078256340476782,
        ],
        &[
            7.668089539506143e-7,
            1.0605024254467698e-7,
            0.0,
            0.9999991271408035,
        ],
        3,
        10_000,
    )
    .unwrap();
    let epsilon = 78.61741858309195;
    check_delta(spec, epsilon, (pair.delta(epsilon).0, 1.0));
}

/// (Session 8, seed 9191 case 387) Random allocation, σ 1130, t 36075, 1.8e10 epochs: each
/// epoch's upper PMF carried ~4e-8 of round-off allowance above mass 1, compounded to
/// overflow by the self-composition (NaN, read as ε = 0). The truth is at least the sum
/// statistic's Gaussian, μ = √epochs/(σ√t) ≈ 0.63.
#[test]
fn random_allocation_many_epochs_of_tiny_steps() {
    let spec = r#"{"events":[{"count":18188362004,"mechanism":"gaussian","sigma":1129.6770584053568,
        "sampling":{"random_allocation":{"steps_per_epoch":36075}}}]}"#;
    let mu = (18188362004f64).sqrt() / (1129.6770584053568 * 36075f64.sqrt());
    let truth = oracle::invert(&|e| oracle::gaussian_delta(mu, e), 1.9536874371000533e-6);
    assert!(truth.0 > 2.8, "{truth:?}");
    check_epsilon(spec, 1.9536874371000533e-6, at_least(truth.0));
}

/// (Session 8, seed 9191 case 57) Random allocation, σ 80.8, t 3, 2e9 epochs: the same
/// compounding, a NaN upper δ.
#[test]
fn random_allocation_short_epochs_many_times() {
    let spec = r#"{"events":[{"count":1968664415,"mechanism":"gaussian","sigma":80.81682610512816,
        "sampling":{"random_allocation":{"steps_per_epoch":3}}}]}"#;
    let mu = (1968664415f64).sqrt() / (80.81682610512816 * 3f64.sqrt());
    check_delta(
        spec,
        2.6652451790278287e-10,
        at_least(oracle::gaussian_delta(mu, 2.6652451790278287e-10).0),
    );
}

/// (Session 8, seed 9191 case 406) A discrete Laplace whose every loss lies beyond the grid
/// (6293 nats a run, 2.8e9 runs) left an upper PMF with no finite mass; its self-composition
/// took the tail moments of an all-zero vector and stored a NaN. Composed with randomized
/// response, the upper δ was NaN. The truth is at least the discrete Laplace's single run.
#[test]
fn all_mass_beyond_the_grid_composes_without_nan() {
    let spec = r#"{"events":[
        {"count":2806449877,"mechanism":"discrete_laplace","scale":0.09820069077248383,"sensitivity":618},
        {"categories":2,"count":1352671,"epsilon":20.290060544068425,"mechanism":"randomized_response"}]}"#;
    let atoms = dl(0.09820069077248383, 618);
    check_delta(
        spec,
        5.593884030883012e-6,
        at_least(atoms.delta(5.593884030883012e-6).0),
    );
}

/// (Session 12, seed 0x1352905 case 223) A discrete Laplace of scale 0.0024 under replace
/// (±837 nats a run, beyond the grid: its upper PMF is all at +∞ but for 1e-182) composed
/// with a shuffled Gaussian epoch. The FFT product of distinct events summed k·ln1p(f − 1)
/// for that finite mass, −∞, in a compensated sum: NaN +∞ mass, and an upper ε of 0 where
/// the truth is above 16,000. The truth is at least the 21 discrete Laplace runs alone.
#[test]
fn event_beyond_the_grid_in_a_product_of_distinct_events() {
    let spec = r#"{"events":[
        {"count":21,"mechanism":"discrete_laplace","scale":0.002388061056804961,"sensitivity":1,
         "sampling":{"fixed_batch":{"batch_size":20,"dataset_size":20}}},
        {"count":1,"mechanism":"gaussian","sigma":8.274359550541682,"sensitivity":1.0,
         "sampling":{"shuffle":{"steps_per_epoch":643}}}],
        "neighbouring":"replace"}"#;
    // Replace shifts the count by up to 2: loss 0 at one point (mass r), ±2a elsewhere.
    let a: f64 = 1.0 / 0.002388061056804961;
    let ln_r = (-(-a).exp_m1()).ln() - (-a).exp().ln_1p() - a;
    let ln_not_r = (-2.0 * a).exp().ln_1p() - (-a).exp().ln_1p();
    let runs = oracle::ThreeAtom::new(21, 2.0 * a, ln_r, ln_not_r);
    let delta = 4.3384966007106116e-10;
    let truth = oracle::invert(&|e| runs.delta(e), delta);
    assert!(truth.0 > 16_000.0, "{truth:?}");
    check_epsilon(spec, delta, at_least(truth.0));
}

/// (Session 12, seed 4242 case 254) A three-atom pair run 94 times: the all-top-atom run has
/// loss 94·21.1 = 1987 nats and P-mass 0.33, but its Q-mass (6.5e-10)^94 underflows. The
/// exact atom power charged such atoms' P-mass to +∞ for both bounds, so the lower PMF read
/// δ ≥ 0.9999 at every ε (even past the largest loss, where δ = 0) and a lower ε of +∞.
/// An atom keeps its finite loss now; the lower PMF moves it down to the top of the grid.
#[test]
fn underflowed_q_mass_is_not_infinite_loss_for_the_lower_bound() {
    let p = [
        0.010810574274151405,
        0.0009454920697395307,
        0.9882439336561091,
    ];
    let q = [
        0.9999359970992622,
        0.0000640022468705379,
        6.538673698257823e-10,
    ];
    let spec = format!(
        r#"{{"events":[{{"count":94,"mechanism":"pmf_pair","p":{p:?},"q":{q:?}}}],
            "neighbouring":"add_remove"}}"#
    );
    let runs = oracle::pmf_pair_atoms(&p, &q, 94, 100_000).unwrap();
    let delta = 0.00015822295280554894;
    let truth = oracle::invert(&|e| runs.delta(e), delta);
    assert!((truth.0 - 1986.81).abs() < 0.01, "{truth:?}");
    check_epsilon(&spec, delta, truth);
    // Past the largest loss of either direction δ is 0.
    check_delta(&spec, 2000.0, (0.0, 0.0));
}

/// Soundness sweep seed 20261210, case 360 (its two events that matter): 11,718,284 runs of a
/// pure 0.434-DP step Poisson-sampled at 3.8e-6, and one pure 0.024-DP step (δ 5.8e-279).
/// The truths (ADD, the larger direction) are the exact lattice sums of
/// `fixtures/scripts/truth_sampled_eps_delta_pair.py` (mpmath, 40 digits). The answer's lower
/// end at ε = 1.379e-4 was 0.011917768082747, 6e-10 above the truth 0.011917767487108, and
/// 2.1e-10 above it at ε = 0.01: the composed atoms' P-masses were scaled by (Σ P-masses)^k
/// = (1 − 1.1e-16)^k and their Q-masses by 1, so ln(P/Q) sat 1.3e-9 nats above each atom's
/// loss, and the lower rounding, which merges atoms by their masses, placed them that much
/// too high. Fixed in `discretize::atom_power` (each atom's smaller mass derived from its
/// larger one and its loss).
#[test]
fn sampled_pure_dp_with_one_more_step_keeps_its_lower_end_below_the_truth() {
    let spec = r#"{"events":[
        {"count":11718284,"delta":0.0,"epsilon":0.43405138679836136,"mechanism":"eps_delta",
         "sampling":{"poisson":3.813448638606014e-6}},
        {"count":1,"delta":5.830636761039139e-279,"epsilon":0.02397293632653474,
         "mechanism":"eps_delta"}],"neighbouring":"add_remove"}"#;
    for (epsilon, truth) in [
        (1.3793068758729014e-4, 0.011917767487108217),
        (0.01, 0.0070278175740837446),
        (0.03, 0.00021707797242422064),
    ] {
        check_delta(
            spec,
            epsilon,
            (truth * (1.0 - 1e-15), truth * (1.0 + 1e-15)),
        );
    }
}

/// (16) Sweep seed 0x1352929 (20261161), case 482: 286-ary randomized response, ε₀ 2.13, sampled
/// at 4.69e-15, run 581,367,696 times (add/remove). One run's loss is at most
/// ln(1 + q(e^{ε₀} − 1)) ≈ 3.48e-14 (REMOVE; ADD's is smaller), so every composed loss is at
/// most 2.1e-5 and δ(0.159) = 0 exactly. The exact chunk powers kept atoms whose masses both
/// underflowed as P-mass at +∞, which gave a lower δ of 1.04e-297.
#[test]
fn sampled_randomized_response_underflowed_atoms() {
    let spec = r#"{"events":[{"categories":286,"count":581367696,"epsilon":2.130176502045871,"mechanism":"randomized_response","sampling":{"poisson":4.6914664249998954e-15}}],"neighbouring":"add_remove"}"#;
    let (q, epsilon0, runs) = (
        4.6914664249998954e-15_f64,
        2.130176502045871_f64,
        581_367_696.0,
    );
    let largest = runs * (q * epsilon0.exp_m1()).ln_1p();
    assert!(largest < 2.2e-5, "{largest}");
    check_delta(spec, 0.15875568000717377, (0.0, 0.0));
}

/// Soundness sweep seed 0x13529cc, case 674: one `pmf_pair` whose p, rounded to doubles,
/// sums to 1 − 1.4e-16, asked δ(0) under replacement. ADD's δ(0) is `1 − p₁` = 3.07e-8, a
/// difference of two numbers near 1: the spec's reading divided p by its computed total,
/// which moved p₁ by an ulp and the answer to 2.6e-9 below the δ of the pair as given. A
/// list summing to 1 up to its entries' rounding is now taken as given. The truth: the pair's
/// exact atoms, both orders (`soundness_oracles::pmf_pair_atoms`).
#[test]
fn a_pair_summing_to_one_up_to_rounding_is_read_as_given() {
    let p = [
        3.054143090682112e-8,
        0.9999999692563772,
        9.210455105924995e-12,
        1.9298125708842045e-10,
    ];
    let q = [0.0, 1.0, 0.0, 0.0];
    let spec = format!(
        r#"{{"events":[{{"count":1,"mechanism":"pmf_pair","p":{p:?},"q":{q:?}}}],"neighbouring":"replace"}}"#
    );
    let remove = oracle::pmf_pair_atoms(&p, &q, 1, 100).expect("four outcomes");
    let add = oracle::pmf_pair_atoms(&q, &p, 1, 100).expect("four outcomes");
    for epsilon in [0.0, 1e-9, 3e-8] {
        let (a, b) = (remove.delta(epsilon), add.delta(epsilon));
        check_delta(&spec, epsilon, (a.0.max(b.0), a.1.max(b.1)));
    }
}

/// Soundness sweep seed 0x1352933, case 412: Gaussian steps (σ 4.4e7) on truncated Poisson
/// batches, 6.2e8 of them. The RDP curve of the step's revealed mixture summed its parts'
/// `w·A_α` near 1 in log space, which lost the divergence (about 1e-18) entirely: 0 at every
/// order up to 9, so the RDP conversion's δ(ε) was 0, and once that conversion capped loose
/// answers the accountant answered δ = [0, 0]. The truth is at least one run's δ at the
/// probability π = E[min(Bin(n, q), B)]/n that the record is in the cut batch (a pair of
/// neighbouring datasets under this very sampling), summed here over the binomial.
#[test]
fn truncated_poisson_rdp_keeps_divergences_below_one_ulp() {
    let (q, b, n, sigma) = (0.06036304099382134_f64, 4u64, 19u64, 44449726.53207462_f64);
    let spec = format!(
        r#"{{"events":[{{"count":620523005,"mechanism":"gaussian","sampling":{{"truncated_poisson":{{"dataset_size":{n},"max_batch_size":{b},"rate":{q}}}}},"sensitivity":1.0,"sigma":{sigma}}}],"neighbouring":"add_remove"}}"#
    );
    // E[min(K, B)] for K ~ Bin(n, q), by the binomial pmf term by term.
    let mut pmf = (1.0 - q).powi(n as i32);
    let mut mean_kept = 0.0;
    for k in 0..=n {
        mean_kept += pmf * k.min(b) as f64;
        pmf *= (n - k) as f64 / (k + 1) as f64 * q / (1.0 - q);
    }
    let pi = mean_kept / n as f64 * (1.0 - 1e-9);
    let epsilon = 2.8417590450649988e-8;
    let truth = oracle::subsampled(pi, epsilon, &|e| oracle::gaussian_delta(1.0 / sigma, e));
    assert!(truth.0 > 0.0, "{truth:?}");
    check_delta(&spec, epsilon, (truth.0, 1.0));
}

/// Soundness sweep seed 0x1352937, case 149: one Gaussian step (σ 5.4e8) on a fixed batch of
/// 467 of 2,961,515 records, replace. Its RDP curve (sampling without replacement) took
/// `ln(e^{ε(2)} − 1)` as `ε(2) + ln(1 − e^{−ε(2)})`, −∞ once `e^{−ε(2)}` rounds to 1, so the
/// divergence was 0 at low orders and the RDP conversion's δ(ε) 0; capping the grid's loose
/// bracket with it answered δ = [0, 0]. The truth: the step's subsampled pair at rate
/// m/n with shift 2Δ, exactly.
#[test]
fn sampled_without_replacement_rdp_keeps_tiny_divergences() {
    let (m, n, sigma) = (467.0_f64, 2961515.0_f64, 541832903.6188228_f64);
    let spec = format!(
        r#"{{"events":[{{"count":1,"mechanism":"gaussian","sampling":{{"fixed_batch":{{"batch_size":{m},"dataset_size":{n}}}}},"sensitivity":1.0,"sigma":{sigma}}}],"neighbouring":"replace"}}"#
    );
    let epsilon = 7.357039550076186e-12;
    let truth = oracle::subsampled(m / n, epsilon, &|e| oracle::gaussian_delta(2.0 / sigma, e));
    assert!(truth.0 > 0.0, "{truth:?}");
    check_delta(&spec, epsilon, truth);
}
