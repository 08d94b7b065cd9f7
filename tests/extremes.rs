//! Compositions far beyond the representable loss range (±700 nats per composition): they
//! must be answered quickly and with a useful lower bound, not by minutes of discretization
//! on a grid no answer needs, nor with a lower bound of 0 where the truth is about 1.
//!
//! The truths here are lower bounds on δ(ε) that follow from one event alone (see each test).

use pld_accountant::{Accountant, AccountantOptions, Bracket, CompositionSpec};
use std::time::Instant;

fn delta(spec: &str, epsilon: f64) -> (f64, f64, f64) {
    let spec = CompositionSpec::from_json_str(spec).unwrap();
    let start = Instant::now();
    let answer = Accountant::new(&spec, AccountantOptions::default())
        .unwrap()
        .delta_for_epsilon(epsilon)
        .unwrap();
    (
        answer.delta.lower,
        answer.delta.upper,
        start.elapsed().as_secs_f64(),
    )
}

/// Sweep seed 11, case 13: discrete Laplace with ε₀ = 389/40.1 = 9.7 nats per run, 2.3e8
/// runs, plus 1.2e8 runs of a Gaussian mixture. The composed loss is about 2e9 nats with
/// probability ≈ 1, so δ(0.0295) ≈ 1. The first grid used to be 1e-5 nats across the
/// mixture's ~30-nat range (3 million points, each a Newton solve): 229 s, and the lower
/// bound was 0 because the window cut at +700 nats kept almost none of the mass.
#[test]
fn far_beyond_the_loss_range_is_answered_fast_and_tight() {
    let spec = r#"{"events":[
        {"count":229774164,"mechanism":"discrete_laplace","scale":40.14740025894023,"sensitivity":389},
        {"count":122972312,"mechanism":"mixture_of_gaussians","probabilities":[0.000016616728997113528,2.110604476740018e-6,0.9999812726665261],"sensitivities":[0.0,19.990381575391012,16.400300309371872],"sigma":9.30448220979966}],
        "neighbouring":"add_remove"}"#;
    let (lower, upper, seconds) = delta(spec, 0.0295);
    assert_eq!(upper, 1.0);
    assert!(lower > 0.999, "lower {lower}");
    // Generous (about 0.2 s on a 2-core machine): it catches the minutes-long first grid.
    assert!(seconds < 20.0, "{seconds} s");
}

/// One Laplace run with ε₀ = 10 has loss 10 with probability 1 − e^{−10}/2 ≈ 0.99998 (the
/// REMOVE pair's P-mass where x ≤ 0): 1000 runs put the loss at ≥ 700 nats with probability
/// above 1 − 1e-300 by a Chernoff bound, so δ(1) ≥ 0.9999 is a safe truth floor.
#[test]
fn laplace_composed_past_the_limit_keeps_its_lower_bound() {
    let (lower, upper, _) = delta(
        r#"{"events":[{"mechanism":"laplace","scale":0.1,"count":1000}]}"#,
        1.0,
    );
    assert_eq!(upper, 1.0);
    assert!((0.9999..=1.0).contains(&lower), "lower {lower}");
}

/// Sweep seed 11, case 11: Laplace events with ε₀ = 17.18 (× 8) and 0.00813 under replace.
/// Their common lattice is 6e-6 nats; aligning every grid to it asked for 46 million points,
/// and the default search refused the spec with GridTooLarge instead of coarsening. The
/// Laplace pair with ε₀ = 17.18 alone has δ(0) = 1 − e^{−ε₀/2} = 0.99981 (its total variation
/// distance), which bounds the composition's δ(0) from below.
#[test]
fn incommensurable_lattices_do_not_force_a_huge_grid() {
    let spec = r#"{"events":[
        {"count":265501,"delta":2.1235336662859398e-131,"epsilon":0.0,"mechanism":"eps_delta"},
        {"count":8,"mechanism":"laplace","scale":4.538110586896151,"sensitivity":38.98549413906396},
        {"count":1,"mechanism":"laplace","scale":371.6744737370114,"sensitivity":1.5102338874295052}],
        "neighbouring":"replace"}"#;
    let (lower, upper, _) = delta(spec, 1.9782953603719263e-11);
    let epsilon0: f64 = 2.0 * 38.98549413906396 / 4.538110586896151;
    // δ(ε) ≥ δ(0) − (e^ε − 1) for this tiny ε.
    let one_event = -(-epsilon0 / 2.0).exp_m1() - 1e-10;
    assert!(upper >= one_event && upper <= 1.0, "upper {upper}");
    assert!(lower <= upper, "[{lower}, {upper}]");
}

/// Sweep seed 20261124, case 1491: a discrete Gaussian with σ = 670287 cannot be listed on
/// any grid of at most 1 nat. The default search coarsened the grid step ×4 at a time
/// without limit and reached 2502 nats, where the composition failed as an *invalid
/// parameter* (exit 2, the user's fault) instead of the clean `GridTooLarge` refusal. Every
/// event has an RDP curve, so the closed forms now answer where no grid fits: the RDP
/// conversion's upper end, at least the truth, which is at least the randomized response's
/// k·ε₀ (each of its runs has loss ε₀ with probability 1 − 903·e^{−332}, so all of them
/// together with probability ≈ 1 − 1e-138).
#[test]
fn coarsening_stops_at_the_coarsest_grid() {
    let spec = CompositionSpec::from_json_str(
        r#"{"events":[
        {"categories":904,"count":1174235,"epsilon":332.2943019764827,"mechanism":"randomized_response"},
        {"count":365218337,"mechanism":"discrete_gaussian","sensitivity":1,"sigma":670287.1341127601},
        {"count":1,"mechanism":"discrete_gaussian","sensitivity":371,"sigma":0.12175666666021367}],
        "neighbouring":"replace"}"#,
    )
    .unwrap();
    let answer = Accountant::new(&spec, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(3.062228250966507e-12)
        .unwrap();
    let sum = 1174235.0 * 332.2943019764827;
    let epsilon = answer.epsilon;
    assert!(
        epsilon.upper >= sum && epsilon.upper.is_finite(),
        "{epsilon:?}"
    );
    assert!(0.0 <= epsilon.lower && epsilon.lower <= epsilon.upper);
    assert_eq!(answer.settings.method, "closed_form");
    assert_eq!(
        answer.settings.stopped_by.as_deref(),
        Some("grid size limit")
    );
    // (The RDP conversion, 4.106e8: within 6% of the truth's lower bound.)
    assert_eq!(
        answer.settings.upper_method.as_deref(),
        Some("rdp_conversion")
    );
    assert!(epsilon.upper <= 1.06 * sum, "{epsilon:?}");
}

/// 10¹² runs of an (ε₀ 1e-9, δ₀ 1e-20) pair: the first grid would hold 1.7e7 points, past
/// the limit, and the query was refused. The closed forms answer (the optimal composition,
/// within the tolerance, as every run is the same eps_delta pair): the upper end at least the
/// truth (the exact optimal composition's δ there, from below, at most δ) and at most the
/// zCDP conversion of ρ = k·ε₀²/2 at δ − k·δ₀; δ(ε) at least the mass at infinite loss,
/// 1 − (1 − δ₀)^k, and at most the optimal composition's upper δ plus a rounding margin.
#[test]
fn a_first_grid_past_the_size_limits_is_answered_by_the_closed_forms() {
    use pld_accountant::analytic::{optimal_composition, zcdp};
    let spec = CompositionSpec::from_json_str(
        r#"{"events":[{"mechanism":"eps_delta","epsilon":1e-9,"delta":1e-20,"count":1000000000000}]}"#,
    )
    .unwrap();
    let accountant = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    let (epsilon0, delta0, k) = (1e-9, 1e-20, 1_000_000_000_000u64);
    let answer = accountant.epsilon_for_delta(1e-5).unwrap();
    let epsilon = answer.epsilon;
    let conversion = zcdp::epsilon_for_delta(k as f64 * epsilon0 * epsilon0 / 2.0, 1e-5 - 1e-8);
    assert!(
        epsilon.upper <= conversion.epsilon * (1.0 + 1e-9),
        "{epsilon:?}"
    );
    let truth_delta_from_below =
        optimal_composition::delta_for_epsilon_lower(epsilon0, delta0, k, epsilon.upper);
    assert!(truth_delta_from_below <= 1e-5, "{truth_delta_from_below}");
    assert!(0.0 <= epsilon.lower && epsilon.lower <= epsilon.upper);
    // (Every run the same eps_delta pair, the worst (ε₀, δ₀) pair: the optimal composition
    // brackets the composition from both sides; at its lower end the exact δ, from above,
    // still exceeds δ.)
    assert_eq!(answer.settings.method, "closed_form");
    assert!(answer.settings.tolerance_met, "{epsilon:?}");
    let above = optimal_composition::delta_for_epsilon(epsilon0, delta0, k, epsilon.lower);
    assert!(above >= 1e-5, "δ at the lower end {above}");
    for at in [0.001, 0.01] {
        let answer = accountant.delta_for_epsilon(at).unwrap();
        let floor = -(k as f64 * (-delta0).ln_1p()).exp_m1();
        let truth_from_above = optimal_composition::delta_for_epsilon(epsilon0, delta0, k, at);
        assert!(
            answer.delta.lower <= truth_from_above,
            "ε {at}: {:?}",
            answer.delta
        );
        assert!(
            answer.delta.lower >= floor * (1.0 - 1e-9),
            "ε {at}: {:?}",
            answer.delta
        );
        assert!(answer.delta.upper >= answer.delta.lower && answer.delta.upper < 1.0);
    }
}

/// DP-SGD at the corners of the documented range (σ 0.3 to 1e4, q 1e-9 to 1, up to 1e9
/// steps): every corner is answered with a valid bracket (no error, no NaN, lower ≤ upper),
/// and more steps never give a guaranteed ε below fewer steps' lower bound.
/// `scripts/extremes.sh` prints the times (all under 2 s on the development machine).
#[test]
fn dp_sgd_corners_are_answered_with_valid_brackets() {
    let epsilon = |sigma: f64, q: f64, steps: u64| {
        let spec = CompositionSpec::dp_sgd(sigma, q, steps, 1.0).unwrap();
        let answer = Accountant::new(&spec, AccountantOptions::default())
            .unwrap()
            .epsilon_for_delta(1e-5)
            .unwrap_or_else(|e| panic!("σ {sigma} q {q} T {steps}: {e}"));
        let e = answer.epsilon;
        assert!(
            e.lower >= 0.0 && e.lower <= e.upper && !e.upper.is_nan(),
            "σ {sigma} q {q} T {steps}: {e}"
        );
        e
    };
    let sigmas = [0.3, 30.0, 1e4];
    let rates = [1e-9, 1e-3, 1.0];
    let counts = [1, 1_000_000, 1_000_000_000];
    for &sigma in &sigmas {
        for &q in &rates {
            let brackets: Vec<_> = counts.iter().map(|&t| epsilon(sigma, q, t)).collect();
            // More steps: the guarantee cannot improve past the fewer steps' lower bound.
            for pair in brackets.windows(2) {
                assert!(pair[1].upper >= pair[0].lower, "σ {sigma} q {q}: {pair:?}");
            }
        }
    }
}

/// Subsampled Gaussian steps whose composed loss lies far past the grid's ±600 nats: the
/// grid's upper bound is +∞ there, and the answer's upper end is the composition without
/// amplification instead (the sampled pair is dominated by the unsampled one at every ε),
/// which is the unsampled Gaussian of μ = √T/σ: answered by the same accountant's exact
/// Gaussian path, and checked here against the Gaussian's δ(ε) in closed form (log space:
/// `δ = Φ(μ/2 − ε/μ) − e^ε·Φ(−μ/2 − ε/μ)`, the second term far below the first here).
/// Sampling never leaks more than not sampling, so that upper end must also hold for every
/// rate, and more sampled steps never give less than fewer.
#[test]
fn sampled_steps_past_the_loss_limit_keep_a_finite_upper_bound() {
    let epsilon = |spec: CompositionSpec| {
        Accountant::new(&spec, AccountantOptions::default())
            .unwrap()
            .epsilon_for_delta(1e-5)
            .unwrap()
            .epsilon
    };
    let (sigma, steps) = (0.01, 10u64);
    let sampled = epsilon(CompositionSpec::dp_sgd(sigma, 0.01, steps, 1.0).unwrap());
    let unsampled =
        epsilon(CompositionSpec::dp_sgd(sigma / (steps as f64).sqrt(), 1.0, 1, 1.0).unwrap());
    assert!(sampled.upper.is_finite(), "{sampled}");
    assert!(
        (sampled.upper - unsampled.upper).abs() <= 1e-9 * unsampled.upper,
        "{sampled} vs {unsampled}"
    );
    assert!(sampled.lower <= sampled.upper, "{sampled}");
    // The Gaussian's δ at the upper end, δ = Φ(−x₁) − e^ε·Φ(−x₂) with x₁ = ε/μ − μ/2 ≈ 4.3
    // (by erfc) and x₂ = ε/μ + μ/2 ≈ 320 (in log space by the asymptotic series
    // `ln Φ(−x) = −x²/2 − ln(x√(2π)) + ln(1 − 1/x² + 3/x⁴ − …)`, exact to ~1e-12 there):
    // at most 1e-5 (an upper bound on ε) and not far below it (tight for this pair).
    let mu = (steps as f64).sqrt() / sigma;
    let e = sampled.upper;
    let (x1, x2) = (e / mu - mu / 2.0, e / mu + mu / 2.0);
    let first = 0.5 * libm::erfc(x1 / std::f64::consts::SQRT_2);
    let series = 1.0 - 1.0 / (x2 * x2) + 3.0 / x2.powi(4);
    let ln_second =
        e - 0.5 * x2 * x2 - (x2 * (2.0 * std::f64::consts::PI).sqrt()).ln() + series.ln();
    let delta_at_upper = first - ln_second.exp();
    assert!(
        delta_at_upper <= 1e-5 * (1.0 + 1e-6),
        "δ(ε upper) = {delta_at_upper:e} ({first:e} − e^{ln_second})"
    );
    assert!(
        delta_at_upper >= 0.99e-5,
        "δ(ε upper) = {delta_at_upper:e}: not tight"
    );
    for (q, t) in [(1e-3, 1_000_000u64), (0.5, 1_000_000)] {
        let answer = epsilon(CompositionSpec::dp_sgd(0.3, q, t, 1.0).unwrap());
        let bound = epsilon(CompositionSpec::dp_sgd(0.3 / (t as f64).sqrt(), 1.0, 1, 1.0).unwrap());
        assert!(
            answer.upper.is_finite() && answer.upper <= bound.upper * (1.0 + 1e-12),
            "σ 0.3 q {q} T {t}: {answer} vs {bound}"
        );
        assert!(answer.lower <= answer.upper, "{answer}");
    }
}

/// DP-SGD with σ = 0.05, q = 0.01, 10 steps, δ at ε = 10. A sampled step's loss is
/// `ln(1 − q + q·e^{(1 + 2σz)/(2σ²)}) ≈ 195 + 20z` nats (z standard normal), an unsampled
/// one's about ln(1 − q) ≈ −0.01 (it passes 1 nat only when z > 10.2). So, with N the number
/// of sampled steps, δ(10) = E[(1 − e^{10 − L})₊] lies in `[P(N ≥ 1)·(1 − 2e-7), P(N ≥ 1) +
/// 1e-20]` (below: N ≥ 1 and z > −5.2 give L ≥ 100; above: N = 0 needs some step past
/// 1 nat, at most 10·Φ(−10.2)), `P(N ≥ 1) = 1 − 0.99¹⁰`.
///
/// The losses of four sampled steps (≈ 780 nats) pass the window and wrap around the
/// power's circular buffer; the Chernoff bound on that mass (5.6e-3, the truth about 2e-6)
/// used to be charged in full: the upper end was 0.1012 against 0.0956. A coarse exact power
/// now bounds it (see `GridPmf::self_compose_tilted`).
#[test]
fn multimodal_steps_wrapping_around_the_buffer_keep_a_tight_upper_bound() {
    let spec = CompositionSpec::dp_sgd(0.05, 0.01, 10, 1.0).unwrap();
    let answer = Accountant::new(&spec, AccountantOptions::default())
        .unwrap()
        .delta_for_epsilon(10.0)
        .unwrap()
        .delta;
    let some_sampled = -(10.0 * (-0.01_f64).ln_1p()).exp_m1();
    assert!(
        answer.upper >= some_sampled * (1.0 - 2e-7),
        "{answer} below the truth ≥ {some_sampled}"
    );
    assert!(
        answer.lower <= some_sampled + 1e-20,
        "{answer} above the truth ≤ {some_sampled}"
    );
    assert!(
        answer.upper <= some_sampled * (1.0 + 1e-3),
        "{answer} loose against {some_sampled}"
    );
}

/// Poisson-sampled Gaussian steps with little noise and a small rate (σ 0.3, q 1e-3):
/// without the record a step's loss lies within about 4e-6 nats of ln(1 − q), a near-atom
/// that the lower bound rounded down by up to a step on unaligned grids. 10⁴ steps stopped at
/// the grid size limit with ε(1e-5) ∈ [41.32, 41.50]; on grid steps that put ln(1 − q) just
/// below a node the bracket meets the tolerance on the first grid. The answer must agree
/// with the bracket at an unaligned fixed step (both are guaranteed) and stay below RDP's;
/// and the upper end, from the finer upper grid that the time saved pays for, stays within
/// 1e-6 of dp_accounting 0.6.0's default (`pld.privacy_loss_distribution
/// .from_gaussian_mechanism(σ, sampling_prob=1e-3, use_connect_dots=True,
/// value_discretization_interval=1e-4).self_compose(steps).get_epsilon_for_delta(1e-5)`,
/// CPython 3.11.7, numpy 2.4.6, scipy 1.17.1: 41.49958193435764 and 72.26814060033696),
/// which lies inside our bracket.
#[test]
fn sharp_unsampled_bulks_meet_the_tolerance_on_coarse_grids() {
    for (steps, sigma, dp_accounting) in [
        (10_000u64, 0.3, 41.49958193435764),
        (100_000, 0.35, 72.26814060033696),
    ] {
        let spec = CompositionSpec::dp_sgd(sigma, 1e-3, steps, 1.0).unwrap();
        let answer = Accountant::new(&spec, AccountantOptions::default())
            .unwrap()
            .epsilon_for_delta(1e-5)
            .unwrap();
        let e = answer.epsilon;
        assert!(answer.settings.tolerance_met, "{e} {:?}", answer.settings);
        assert!(
            answer.settings.grid_step.unwrap() > 1e-4,
            "{:?}",
            answer.settings
        );
        let fixed = AccountantOptions {
            grid_step: Some(4e-5),
            ..AccountantOptions::default()
        };
        let other = Accountant::new(&spec, fixed)
            .unwrap()
            .epsilon_for_delta(1e-5)
            .unwrap()
            .epsilon;
        assert!(
            e.lower <= other.upper && other.lower <= e.upper,
            "{e} vs {other}"
        );
        let (rdp, _) = pld_accountant::comparison::rdp_epsilon(&spec, 1e-5).unwrap();
        assert!(e.upper <= rdp, "{e} against RDP {rdp}");
        assert!(
            e.lower <= dp_accounting && e.upper <= dp_accounting * (1.0 + 1e-6),
            "{e} against dp_accounting {dp_accounting}"
        );
    }
}

/// A grid bracket of [0, ∞] after a retry with tilted powers: intersecting the passes took
/// its width ∞ against its target ∞ for a met tolerance, so the answer did not count as past
/// the loss range and kept the Gaussian without amplification (σ 0.3, q 1e-3, 10⁹ steps:
/// ε(1e-5) ≤ 5.556e9 nats, where RDP guarantees 8.43e5).
#[test]
fn an_open_bracket_never_counts_as_meeting_the_tolerance() {
    let spec = CompositionSpec::dp_sgd(0.3, 1e-3, 1_000_000_000, 1.0).unwrap();
    let accountant = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    let delta = 1e-5;
    let (rdp, _) = pld_accountant::comparison::rdp_epsilon(&spec, delta).unwrap();
    let answer = accountant.epsilon_for_delta(delta).unwrap();
    let e = answer.epsilon;
    assert!(rdp > 1e5 && rdp < 1e7, "RDP {rdp}");
    assert!(e.upper <= rdp * (1.0 + 1e-9), "{e} against RDP {rdp}");
    assert!(e.lower <= e.upper, "{e}");
    assert!(!answer.settings.tolerance_met, "{:?}", answer.settings);
}

/// DP-SGD whose ε lies beyond the representable loss range (σ 1.385, q 0.05817, 848,219
/// steps: about 1000 nats at δ 1e-8). The grid can say no more than "at least the top of its
/// range"; the upper end used to be the Gaussian without amplification (224,826 nats), 184
/// times RDP's guaranteed 1219.8. The answer's upper end is now RDP's conversion, for ε(δ)
/// and δ(ε) alike, and named so; a case the grid answers within its tolerance does not take
/// it (it is tighter there, and RDP would only cost time), nor does a loose bracket within
/// the range (tiny divergences, where RDP curves lose digits).
#[test]
fn beyond_the_loss_range_the_upper_end_is_no_looser_than_rdp() {
    let spec = CompositionSpec::dp_sgd(1.385, 0.05817, 848_219, 1.0).unwrap();
    let accountant = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    let delta = 1e-8;
    let (rdp, _) = pld_accountant::comparison::rdp_epsilon(&spec, delta).unwrap();
    let answer = accountant.epsilon_for_delta(delta).unwrap();
    let e = answer.epsilon;
    assert!(rdp > 1000.0 && rdp < 1300.0, "RDP {rdp}");
    // (The accountant widens each divergence by a bound on its additions' rounding.)
    assert!(e.upper <= rdp * (1.0 + 1e-9), "{e} against RDP {rdp}");
    assert!(e.lower >= 599.0 && e.lower <= e.upper, "{e}");
    assert_eq!(
        answer.settings.upper_method.as_deref(),
        Some("rdp_conversion")
    );
    // δ at an ε between the ends: at most RDP's δ there (and far below the 1 the grid
    // alone would have to say).
    let orders = pld_accountant::analytic::rdp::default_orders();
    let mut curve = pld_accountant::analytic::rdp::RdpCurve::zero(orders.clone());
    for event in spec.events() {
        let one =
            pld_accountant::analytic::event_bounds::rdp_curve(event, spec.neighbouring(), &orders)
                .unwrap();
        curve.compose(&one, event.count());
    }
    let rdp_delta = curve.delta(1300.0).delta;
    let delta_answer = accountant.delta_for_epsilon(1300.0).unwrap();
    assert!(
        delta_answer.delta.upper <= rdp_delta * (1.0 + 1e-9) && rdp_delta < 1e-8,
        "{} against RDP {rdp_delta:e}",
        delta_answer.delta
    );
    // Within the loss range the grid's answer stands (RDP is looser there).
    let small = CompositionSpec::dp_sgd(1.0, 0.01, 1000, 1.0).unwrap();
    let answer = Accountant::new(&small, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    assert!(answer.settings.tolerance_met);
    assert_ne!(
        answer.settings.upper_method.as_deref(),
        Some("rdp_conversion")
    );
}

/// Small sampling rates over many steps (large datasets, small batches): all but 1e-14 of a
/// step's losses lie within 0.013 nats (σ 1, q 1e-5), and the tolerance needs a grid step
/// near 1e-6. Refinement stopped at 1e-5 ("grid size limit"), because the finest step a grid was
/// thought to hold came from the unsampled Gaussian's range (41 nats across 2²² points): σ 1,
/// q 1e-5, 10⁶ steps answered [0.03557, 0.03886], σ 1, q 1e-6, 10⁷ steps [0, 0.02365]
/// (2.3 times the upper end now). Each bracket must now meet the tolerance and overlap the
/// guaranteed interval of an independent accountant: prv_accountant 0.2.0,
/// `PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=σ,
/// sampling_probability=q)], max_self_compositions=[T], eps_error=1e-3, delta_error=1e-8)
/// .compute_epsilon(delta=1e-5, num_self_compositions=[T])` gave (lower, estimate, upper) =
/// (0.035880, 0.036884, 0.037888) for σ 1 and (0.012460, 0.013461, 0.014463) for σ 2. (For
/// 10⁷ steps it ran out of memory; that case is checked against RDP only.)
///
/// At q 1e-6 and 10⁴ steps (ε about 1.4e-4) the first grid was 1.4e-3 nats, a thousand times
/// one step's loss spread, where the bracket narrows like √h: refining by the h² rule ran
/// out of refinements at [0, 1.8e-4]. The bracket must now contain dp_accounting 0.6.0's
/// value at a step of 3e-8 nats, 1.3931566578870064e-4
/// (`from_gaussian_mechanism(1.0, sampling_prob=1e-6, use_connect_dots=True,
/// value_discretization_interval=3e-8).self_compose(10000).get_epsilon_for_delta(1e-5)`;
/// 1.394049e-4 at 1e-7: converged to 1e-3 relative).
#[test]
fn small_sampling_rates_refine_to_the_tolerance() {
    let dp_accounting = 1.3931566578870064e-4;
    for (sigma, q, steps, reference) in [
        (1.0, 1e-5, 1_000_000u64, Some((0.035880, 0.037888))),
        (2.0, 1e-5, 1_000_000, Some((0.012460, 0.014463))),
        (1.0, 1e-6, 10_000_000, None),
        (1.0, 1e-6, 10_000, Some((dp_accounting, dp_accounting))),
    ] {
        let spec = CompositionSpec::dp_sgd(sigma, q, steps, 1.0).unwrap();
        let e = met_in_two_seconds_within_rdp(&spec, &format!("σ {sigma}, q {q}, {steps} steps"));
        assert!(e.lower > 0.0, "σ {sigma}: {e}");
        if let Some((lower, upper)) = reference {
            assert!(
                e.lower <= upper && lower <= e.upper,
                "σ {sigma}: {e} against prv_accountant [{lower}, {upper}]"
            );
        }
    }
}

/// A refinement the grid size limit allows only by a little is taken when a bracket
/// narrowing like h² would meet the tolerance there: σ 2, q 1e-3, 10⁸ steps stopped at a step
/// of 3.75e-5 nats, 0.03631 wide against a target of 0.03622 ("grid size limit"), where a
/// step of 3.53e-5 fitted (a refinement by less than the fifth required) and meets it.
#[test]
fn a_small_last_refinement_that_meets_the_tolerance_is_taken() {
    let spec = CompositionSpec::dp_sgd(2.0, 1e-3, 100_000_000, 1.0).unwrap();
    met_in_two_seconds_within_rdp(&spec, "σ 2, q 1e-3, 10⁸ steps");
}

/// ε(1e-5) of `spec` at default settings, after checking that it meets the tolerance, takes
/// under 2 s and has an upper end no looser than RDP's (`what` names the case).
fn met_in_two_seconds_within_rdp(spec: &CompositionSpec, what: &str) -> Bracket {
    let start = Instant::now();
    let answer = Accountant::new(spec, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let e = answer.epsilon;
    assert!(
        answer.settings.tolerance_met,
        "{what}: {e} {:?}",
        answer.settings
    );
    assert!(seconds < 2.0, "{what}: {e} in {seconds} s");
    let (rdp, _) = pld_accountant::comparison::rdp_epsilon(spec, 1e-5).unwrap();
    assert!(e.upper <= rdp, "{what}: {e} against RDP {rdp}");
    e
}

/// δ(ε) queries at small sampling rates: δ is not known in advance, so the first grid merges
/// no far-tail bins; the refinements that the unmerged ranges would stop merge them with the
/// budget of the bracket so far and reach the grids the rate needs. They stopped at "grid
/// size limit" with [7.0e-6, 1.6e-5] (σ 1, q 1e-5, 10⁶ steps) and [0, 5.5e-4] (σ 1, q 1e-6,
/// 10⁷ steps). Each bracket must agree with the ε query's (at its upper end δ ≤ 1e-5, at its
/// lower end δ ≥ 1e-5), be narrow, and come within seconds (landing the unmerged far tails
/// node by node on the finer grids took up to 16.8 s, σ 0.6, q 1e-6).
#[test]
fn delta_queries_at_small_rates_are_narrow() {
    for (sigma, rate, steps, width) in [(1.0, 1e-5, 1_000_000, 2e-3), (1.0, 1e-6, 10_000_000, 1e-2)]
    {
        let spec = CompositionSpec::dp_sgd(sigma, rate, steps, 1.0).unwrap();
        let accountant = Accountant::new(&spec, AccountantOptions::default()).unwrap();
        let e = accountant.epsilon_for_delta(1e-5).unwrap().epsilon;
        let what = format!("σ {sigma}, q {rate}, {steps} steps, ε(1e-5) = {e}");
        let start = Instant::now();
        let d = accountant.delta_for_epsilon(e.upper).unwrap().delta;
        let seconds = start.elapsed().as_secs_f64();
        // (About 1.7 s alone for 10⁷ steps; the limit leaves room for the other tests of
        // this file running beside it.)
        assert!(
            seconds < 10.0,
            "{what}: δ({}) = {d} in {seconds} s",
            e.upper
        );
        assert!(
            0.0 < d.lower && d.lower <= 1e-5 && d.width() <= width * d.upper,
            "{what}: δ({}) = {d}",
            e.upper
        );
        let below = accountant.delta_for_epsilon(e.lower).unwrap().delta;
        assert!(below.upper >= 1e-5, "{what}: δ({}) = {below}", e.lower);
    }
}

/// The slowest corner of `scripts/extremes.sh` (σ 0.3, q 1e-9, 10⁶ steps, δ 1e-5): at a rate
/// far below every grid step the upper end converges about like h, not h² (9.7e-4, 4.0e-4,
/// 2.0e-4 wide at steps of 1.9e-4, 6.9e-5 and 3.3e-5 nats), and refinements sized for h² took
/// six grids (1.8 s of the 2 s allowed). Sized by the order measured from the last
/// refinement, three. (Once the lower end was 0 on every grid; now it is about 2.9e-4.)
#[test]
fn a_width_converging_like_the_step_is_refined_in_few_grids() {
    let spec = CompositionSpec::dp_sgd(0.3, 1e-9, 1_000_000, 1.0).unwrap();
    let answer = Accountant::new(&spec, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    let (e, settings) = (answer.epsilon, &answer.settings);
    assert!(settings.tolerance_met, "{e} {settings:?}");
    assert!(settings.refinements <= 4, "{settings:?}");
    assert!(e.lower > 2.5e-4 && e.upper < 4e-4, "{e}");
}
