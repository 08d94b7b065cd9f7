//! Random allocation (`{"random_allocation": {"steps_per_epoch": t, "participations": k}}`)
//! through the spec and the accountant.
//!
//! What is independent of the code under test:
//! - k = t (every record in every step) and t = 1 are plain compositions of t·epochs
//!   Gaussian steps: the closed form of `analytic_gaussian`.
//! - For k < t every epoch lies between two Gaussians (both proven, module docs of the
//!   accountant's allocation): it is at least as leaky as the sum of its t outputs,
//!   `N(kΔ, tσ²)` against `N(0, tσ²)` (a post-processing), and at most as leaky as the
//!   record's k steps without amplification. Every answer must lie between them.
//! - One epoch of k = 1 against the two-step closed form is tested beside the construction
//!   (`discretize::random_allocation`).

use pld_accountant::mechanism::analytic_gaussian;
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec, Error, Sampling};

fn spec(sigma: f64, t: u64, k: u64, epochs: u64) -> CompositionSpec {
    CompositionSpec::from_json_str(&format!(
        r#"{{"events": [{{"mechanism": "gaussian", "sigma": {sigma},
            "sampling": {{"random_allocation": {{"steps_per_epoch": {t}, "participations": {k}}}}},
            "count": {epochs}}}]}}"#
    ))
    .unwrap()
}

fn epsilon(spec: &CompositionSpec, delta: f64) -> (f64, f64) {
    let a = Accountant::new(spec, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(delta)
        .unwrap();
    (a.epsilon.lower, a.epsilon.upper)
}

/// ε(δ) of the Gaussian with this μ, in closed form: (lower, upper) around the exact value.
fn gaussian_epsilon(mu: f64, delta: f64) -> (f64, f64) {
    let b = analytic_gaussian::epsilon_for_delta(mu, delta);
    (b.lower, b.upper)
}

#[test]
fn the_spec_reads_and_writes_random_allocation() {
    let s = spec(1.0, 100, 3, 7);
    let event = &s.events()[0];
    assert_eq!(event.sampling().random_allocation_steps(), Some((100, 3)));
    assert!(event.sampling().counts_epochs());
    assert_eq!(event.sampling().name(), "random_allocation");
    let text = s.to_json_value().to_string();
    assert!(
        text.contains(r#""random_allocation":{"participations":3,"steps_per_epoch":100}"#)
            || text.contains(r#""random_allocation":{"steps_per_epoch":100,"participations":3}"#)
    );
    assert_eq!(CompositionSpec::from_json_str(&text).unwrap(), s);
    // Participations default to 1.
    let one = CompositionSpec::from_json_str(
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1,
            "sampling": {"random_allocation": {"steps_per_epoch": 10}}}]}"#,
    )
    .unwrap();
    assert_eq!(
        one.events()[0].sampling().random_allocation_steps(),
        Some((10, 1))
    );
    assert_eq!(
        Sampling::random_allocation(10, 1).unwrap(),
        one.events()[0].sampling()
    );
}

#[test]
fn bad_allocations_are_refused_by_name() {
    let refused = |sampling: &str, extra: &str| {
        let text = format!(
            r#"{{{extra}"events": [{{"mechanism": "gaussian", "sigma": 1, "sampling": {sampling}}}]}}"#
        );
        CompositionSpec::from_json_str(&text)
            .unwrap_err()
            .to_string()
    };
    let cases = [
        (
            r#"{"random_allocation": {"steps_per_epoch": 0}}"#,
            "",
            "steps_per_epoch",
        ),
        (r#"{"random_allocation": {}}"#, "", "steps_per_epoch"),
        (
            r#"{"random_allocation": {"steps_per_epoch": 10, "participations": 11}}"#,
            "",
            "participations",
        ),
        (
            r#"{"random_allocation": {"steps_per_epoch": 10, "participations": 0}}"#,
            "",
            "participations",
        ),
        (
            r#"{"random_allocation": {"steps_per_epoch": 10, "participations": null}}"#,
            "",
            "participations",
        ),
        (
            r#"{"random_allocation": {"steps_per_epoch": 10, "batch": 3}}"#,
            "",
            "batch",
        ),
        (r#"{"random_allocation": 10}"#, "", "random_allocation"),
        (
            r#"{"random_allocation": {"steps_per_epoch": 1e13}}"#,
            "",
            "steps_per_epoch",
        ),
        (
            r#"{"random_allocation": {"steps_per_epoch": 10}}"#,
            r#""neighbouring": "replace", "#,
            "add_remove",
        ),
    ];
    for (sampling, extra, named) in cases {
        let message = refused(sampling, extra);
        assert!(message.contains(named), "{sampling}: {message}");
    }
    let laplace = CompositionSpec::from_json_str(
        r#"{"events": [{"mechanism": "laplace", "scale": 1,
            "sampling": {"random_allocation": {"steps_per_epoch": 10}}}]}"#,
    )
    .unwrap_err();
    assert!(matches!(laplace, Error::Incompatible { .. }), "{laplace}");
    assert!(Sampling::random_allocation(0, 1).is_err());
    assert!(Sampling::random_allocation(5, 6).is_err());
}

#[test]
fn every_step_allocated_is_the_plain_gaussian_composition() {
    for (sigma, t, epochs) in [(1.0, 50, 3), (2.0, 1, 10), (0.7, 1000, 1000), (30.0, 7, 1)] {
        let (lower, upper) = epsilon(&spec(sigma, t, t, epochs), 1e-5);
        let exact = gaussian_epsilon(((t * epochs) as f64).sqrt() / sigma, 1e-5);
        assert!(
            lower <= exact.1 && exact.0 <= upper && upper - lower <= 1e-9 * exact.1.max(1.0),
            "σ {sigma} t {t} epochs {epochs}: [{lower}, {upper}] vs {exact:?}"
        );
    }
}

#[test]
fn balls_in_bins_is_narrow_and_between_its_two_gaussians() {
    // The speed target's case: σ 1, t 1000, k 1, 10 epochs.
    let (lower, upper) = epsilon(&spec(1.0, 1000, 1, 10), 1e-5);
    let sum = gaussian_epsilon((10.0f64 / 1000.0).sqrt(), 1e-5).0;
    let plain = gaussian_epsilon(10.0f64.sqrt(), 1e-5).1;
    assert!(sum <= lower && lower <= upper && upper <= plain);
    assert!(upper - lower <= 1e-3 * upper, "[{lower}, {upper}]");
    // Amplification is real: far below the plain bound.
    assert!(upper < 0.1 * plain, "{upper} vs {plain}");
}

#[test]
fn every_allocation_lies_between_its_two_gaussians() {
    let cases = [
        (1.0, 1000, 1, 10),
        (2.0, 100, 1, 1),
        (1.0, 100, 5, 10),
        (2.0, 1000, 10, 3),
        (1.0, 10, 9, 2),
        (0.05, 1000, 1, 2),
        (5.0, 1_000_000_000_000, 1, 1),
        (1.0, 1_000_000, 1, 1_000_000_000_000),
        (100.0, 2, 1, 1),
    ];
    for (sigma, t, k, epochs) in cases {
        // Steps with σ well below 1 cost seconds a query (the plain bound wins there).
        let deltas: &[f64] = if sigma < 0.5 {
            &[1e-5]
        } else {
            &[1e-3, 1e-5, 1e-10]
        };
        for &delta in deltas {
            let (lower, upper) = epsilon(&spec(sigma, t, k, epochs), delta);
            let e = epochs as f64;
            let sum = gaussian_epsilon(e.sqrt() * k as f64 / (sigma * (t as f64).sqrt()), delta).0;
            let plain = gaussian_epsilon((e * k as f64).sqrt() / sigma, delta).1;
            let slack = 1e-9 * plain.max(1.0);
            // Grids hold losses up to 700 nats: beyond, the upper bound is +∞. Known limit: at
            // δ 1e-10 the round-off allowance of short allocations (t ≤ 2 in the k > 1 split)
            // can exceed δ, and the upper bound is +∞ (valid, not useful).
            assert!(
                lower.is_finite() && (upper.is_finite() || plain > 500.0 || delta < 1e-9),
                "σ {sigma} t {t} k {k} epochs {epochs} δ {delta}: [{lower}, {upper}]"
            );
            assert!(
                sum <= upper + slack && lower <= plain + slack && lower <= upper,
                "σ {sigma} t {t} k {k} epochs {epochs} δ {delta}: [{lower}, {upper}] vs \
                 sum {sum}, plain {plain}"
            );
            // The fallbacks keep the bracket within the two Gaussians' (to grid precision;
            // grids hold losses up to 700 nats, beyond which an upper bound is +∞).
            let representable = plain < 500.0;
            assert!(
                (!representable || delta < 1e-9 || upper <= plain * (1.0 + 1e-2) + 1e-2)
                    && (sum > 100.0 || lower + 1e-2 >= sum * (1.0 - 1e-2)),
                "σ {sigma} t {t} k {k} epochs {epochs} δ {delta}: [{lower}, {upper}] vs \
                 sum {sum}, plain {plain}"
            );
        }
    }
}

/// Heavy-tailed steps (σ 0.5 to 0.55): both ends of the bracket are certified by their own
/// constructions (the spread above, the landed cells below), so a bracket a percent wide
/// shows both are tight. Before, the lower bound's lattice was too coarse for any cell to
/// land (ε(1e-5) ≥ 0.21 against 3.134 for one epoch of σ 0.5), and the upper bound's spread
/// too coarse for composed epochs (ten epochs: ε ≤ 5.197, now ≤ 5.065 with the lower
/// end at 5.049).
#[test]
fn heavy_tailed_steps_keep_both_ends_tight() {
    for (sigma, epochs, delta) in [(0.5, 1, 1e-5), (0.55, 1, 1e-10), (0.5, 10, 1e-5)] {
        let (lower, upper) = epsilon(&spec(sigma, 1000, 1, epochs), delta);
        let e = epochs as f64;
        let sum = gaussian_epsilon((e / 1000.0).sqrt() / sigma, delta).0;
        let plain = gaussian_epsilon(e.sqrt() / sigma, delta).1;
        assert!(
            sum <= lower && lower <= upper && upper <= plain,
            "σ {sigma}, {epochs} epochs, δ {delta}: [{lower}, {upper}] vs sum {sum}, plain {plain}"
        );
        assert!(
            upper - lower <= 1e-2 * upper,
            "σ {sigma}, {epochs} epochs, δ {delta}: [{lower}, {upper}]"
        );
    }
}

/// A heavy-tailed allocation whose lower end stays put over several grids (the lattice, not
/// the grid, limits it: 10.0760 from grid step 0.02 to 0.008, 10.0820 at 0.005) still
/// refines to its tolerance, instead of stopping as if the bracket had converged (before:
/// [10.0762, 10.0907], 1.45e-2 wide against 1.01e-2 asked).
#[test]
fn heavy_tailed_allocations_refine_past_a_lattice_limited_lower_end() {
    let answer = Accountant::new(&spec(0.6, 100, 1, 5), AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-10)
        .unwrap();
    let (lower, upper) = (answer.epsilon.lower, answer.epsilon.upper);
    let sum = gaussian_epsilon(5f64.sqrt() / (0.6 * 10.0), 1e-10).0;
    let plain = gaussian_epsilon(5f64.sqrt() / 0.6, 1e-10).1;
    assert!(sum <= lower && lower <= upper && upper <= plain);
    assert!(
        answer.settings.tolerance_met,
        "[{lower}, {upper}], {:?}",
        answer.settings
    );
}

/// Epoch counts whose losses lie far beyond the grid's range (ε in the millions): the answer
/// is the bracket of the two Gaussians, from their closed forms, not [0, ∞], and at once.
/// (Before, 10¹² epochs of t = 10 read ε ∈ [0, ∞] and 10⁶ epochs of t = 100 [5425.5, ∞]
/// after 5 s; 2·10¹⁰ epochs of t = 15697 read δ(0.39) ∈ [0, 1] after 13 s; 10¹² epochs at
/// σ 0.3 read ε ∈ [5.6e9, ∞], the closed form's search stopping at 1e12.)
#[test]
fn huge_epoch_counts_are_bracketed_by_the_two_gaussians() {
    for (sigma, t, k, epochs) in [
        (10.0, 10u64, 1u64, 1_000_000_000_000u64),
        (3.0, 1000, 2, 10_000_000_000),
        // The unamplified Gaussian's ε is about 5.6e12, past where the closed form's search
        // used to stop (1e12): the upper end was ∞.
        (0.3, 1000, 1, 1_000_000_000_000),
    ] {
        let s = spec(sigma, t, k, epochs);
        let answer = Accountant::new(&s, AccountantOptions::default())
            .unwrap()
            .epsilon_for_delta(1e-5)
            .unwrap();
        let e = epochs as f64;
        let mu_sum = e.sqrt() * k as f64 / (sigma * (t as f64).sqrt());
        let mu_plain = (e * k as f64).sqrt() / sigma;
        let (sum_lo, sum_hi) = gaussian_epsilon(mu_sum, 1e-5);
        let (plain_lo, plain_hi) = gaussian_epsilon(mu_plain, 1e-5);
        let (lower, upper) = (answer.epsilon.lower, answer.epsilon.upper);
        assert!(
            lower >= sum_lo * (1.0 - 1e-9) && lower <= sum_hi,
            "t {t}: lower {lower} vs [{sum_lo}, {sum_hi}]"
        );
        assert!(
            upper >= plain_lo && upper <= plain_hi * (1.0 + 1e-9),
            "t {t}: upper {upper} vs [{plain_lo}, {plain_hi}]"
        );
        assert_eq!(
            answer.settings.lower_method.as_deref(),
            Some("sum_statistic")
        );
        assert_eq!(
            answer.settings.upper_method.as_deref(),
            Some("analytic_gaussian")
        );
        // Past the grid's loss range (600 nats) no grid is composed at all.
        assert_eq!(answer.settings.method, "closed_form");
        assert_eq!(answer.settings.grid_step, None);
        // δ at the sum Gaussian's ε: at least its δ there (δ = 1e-5 up to its bracket).
        let d = Accountant::new(&s, AccountantOptions::default())
            .unwrap()
            .delta_for_epsilon(sum_lo)
            .unwrap();
        assert!(d.delta.lower >= 0.99e-5 && d.delta.upper <= 1.0, "{d:?}");
        // Far past the grid's range, where no grid could narrow it (σ 0.3 took 7 s on a
        // grid for the same bracket).
        assert_eq!(d.settings.method, "closed_form", "{d:?}");
    }
}

/// The closed-form shortcut leaves ordinary allocations to the grid, and answers δ alone
/// when the two Gaussians already pin it down.
#[test]
fn closed_forms_answer_only_where_the_grid_cannot_add() {
    let ordinary = Accountant::new(&spec(1.0, 1000, 1, 10), AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    assert_eq!(ordinary.settings.method, "pld");
    let huge = spec(0.9721466775808411, 15697, 1, 21_740_869_117);
    let start = std::time::Instant::now();
    let d = Accountant::new(&huge, AccountantOptions::default())
        .unwrap()
        .delta_for_epsilon(0.39)
        .unwrap();
    assert!(start.elapsed().as_secs_f64() < 1.0);
    assert_eq!(d.settings.method, "closed_form");
    // The sum Gaussian: μ = √E/(σ√t) ≈ 1210, δ(0.39) = 1 to double precision.
    assert!(d.delta.lower > 0.999_999 && d.delta.upper <= 1.0, "{d:?}");
}

/// Allocated epochs beside events without a Gaussian closed form (Laplace, randomized
/// response; shuffled epochs beside Laplace): the grid answers. Before, the closed-form
/// shortcut had no upper end for them (∞, whose tolerance target is ∞ as well) and took
/// ∞ ≤ ∞ for a met tolerance: ε(1e-5) was [0.988364, ∞] without a grid. The mix leaks at
/// least what its allocated epochs alone leak.
#[test]
fn allocations_beside_other_mechanisms_reach_the_grid() {
    let mix = |sampling: &str| {
        CompositionSpec::from_json_str(&format!(
            r#"{{"events": [
                {{"mechanism": "gaussian", "sigma": 1.1, "sampling": {sampling}, "count": 20}},
                {{"mechanism": "laplace", "scale": 2.0, "count": 3}},
                {{"mechanism": "randomized_response", "epsilon": 0.3, "count": 3}}]}}"#
        ))
        .unwrap()
    };
    let allocated = mix(r#"{"random_allocation": {"steps_per_epoch": 235}}"#);
    let alone = epsilon(&spec(1.1, 235, 1, 20), 1e-5);
    for delta in [1e-5, 1e-12] {
        let answer = Accountant::new(&allocated, AccountantOptions::default())
            .unwrap()
            .epsilon_for_delta(delta)
            .unwrap();
        let e = answer.epsilon;
        assert_eq!(answer.settings.method, "pld", "δ {delta:e}: {e}");
        assert!(
            answer.settings.tolerance_met && e.upper.is_finite(),
            "δ {delta:e}: {e}"
        );
        if delta == 1e-5 {
            assert!(
                e.upper >= alone.0,
                "{e} below the epochs' own lower end {}",
                alone.0
            );
        }
    }
    let shuffled = mix(r#"{"shuffle": {"steps_per_epoch": 235}}"#);
    let answer = Accountant::new(&shuffled, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    assert!(answer.epsilon.upper.is_finite(), "{}", answer.epsilon);
}

/// Where the grid's upper end is lost (random allocation of 1 < k < t steps below δ ≈ 1e-12,
/// see the allocation docs), the answer is never looser than the RDP conversion, in either
/// query. RDP used
/// to be consulted only when the bracket's upper end lay past the grid's range *after* the
/// closed-form Gaussian without amplification had replaced it: beside 300 Poisson-sampled
/// Gaussian steps that closed form is finite (272.9 at δ 1e-12) and RDP (13.0) was skipped.
#[test]
fn a_lost_grid_upper_end_is_never_looser_than_rdp() {
    let mix = CompositionSpec::from_json_str(
        r#"{"events": [
            {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 300},
            {"mechanism": "gaussian", "sigma": 1.5, "count": 3,
             "sampling": {"random_allocation": {"steps_per_epoch": 50, "participations": 2}}}]}"#,
    )
    .unwrap();
    let accountant = Accountant::new(&mix, AccountantOptions::default()).unwrap();
    for delta in [1e-12, 1e-13] {
        let answer = accountant.epsilon_for_delta(delta).unwrap();
        let (rdp, _) = pld_accountant::comparison::rdp_epsilon(&mix, delta).unwrap();
        let e = answer.epsilon;
        // (The accountant's curve widens each divergence by a bound on its rounding.)
        assert!(
            e.upper <= rdp * (1.0 + 1e-12),
            "δ {delta:e}: {e}, RDP {rdp}"
        );
        // The RDP value itself: far below the Gaussian without amplification of every step
        // (μ² = 300 + 6/1.5², about 273 nats at 1e-12).
        assert!(rdp < 20.0, "δ {delta:e}: RDP {rdp}");
        assert!(e.lower <= e.upper && e.lower > 3.0, "δ {delta:e}: {e}");
        // δ(ε) likewise: RDP says the release is (ε_RDP, δ)-DP, so δ's upper end there is at
        // most δ. (The grid's own stays at its round-off floor, 1.1e-12 from ε 8 to 20.)
        let at = rdp * (1.0 + 1e-9);
        let d = accountant.delta_for_epsilon(at).unwrap().delta;
        assert!(
            d.upper <= delta && d.lower <= d.upper,
            "δ at ε {at}: {d}, RDP's δ {delta:e}"
        );
    }
}

/// At small δ the k > 1 split's plain convolution leaves every entry of an epoch's PLD an
/// absolute round-off near 1e-15, which composed epochs charge at every ε: the grid's upper
/// end was lost to the Gaussian without amplification (3 epochs of 2-out-of-50 at σ 1.5:
/// ε(1e-12) ≤ 12.43 with the lower end at 2.63). The retry composes the split blocks tilted
/// and keeps the better upper end; where the plain split is the better (δ 3e-12), it stays.
#[test]
fn small_deltas_of_several_participations_retry_with_a_tilted_split() {
    let s = spec(1.5, 50, 2, 3);
    let e = 3.0_f64;
    for (delta, at_most) in [(1e-12, 3.91), (3e-12, 2.6001)] {
        let (lower, upper) = epsilon(&s, delta);
        let sum = gaussian_epsilon(e.sqrt() * 2.0 / (1.5 * 50f64.sqrt()), delta).0;
        let plain = gaussian_epsilon((e * 2.0).sqrt() / 1.5, delta).1;
        assert!(
            sum <= lower && lower <= upper && upper <= at_most && at_most < plain,
            "δ {delta}: [{lower}, {upper}], sum {sum}, plain {plain}"
        );
    }
}

/// A δ(ε) query truncates its finer grids for the δ its bracket has found (1e-9 of it over
/// the events), not at the 1e-20 its first grid starts from before δ is known: that put the
/// cut of each epoch's lattice so high that the lattice hit its size limit, and the lower
/// end stopped converging (this case took 25 s and 1 GB and missed its tolerance at
/// [2.076331e-4, 2.076722e-4]). Checked against what does not depend on the truncation:
/// the two Gaussians around every allocation, and the ε(δ) queries at the two ends.
#[test]
fn delta_queries_truncate_for_the_delta_they_find() {
    let spec = spec(1.1, 235, 1, 20);
    let accountant = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    let start = std::time::Instant::now();
    let answer = accountant.delta_for_epsilon(1.0).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let d = answer.delta;
    assert!(answer.settings.tolerance_met, "{d} {:?}", answer.settings);
    assert!(
        answer.settings.tail_mass.unwrap() > 1e-20,
        "{:?}",
        answer.settings
    );
    assert!(seconds < 10.0, "{seconds} s");
    // Between the sum of each epoch's outputs and the record's steps without amplification.
    let sum = analytic_gaussian::delta_for_epsilon((20.0f64 / 235.0).sqrt() / 1.1, 1.0).lower;
    let plain = analytic_gaussian::delta_for_epsilon(20.0f64.sqrt() / 1.1, 1.0).upper;
    assert!(sum <= d.lower && d.upper <= plain, "{sum} {d} {plain}");
    agrees_with_epsilon_queries(&accountant, 1.0, d);
}

/// A δ(ε) bracket against the ε(δ) queries at its ends: δ(ε) ≤ d.upper, so ε(d.upper) ≤ ε;
/// δ(ε) ≥ d.lower, so ε(d.lower) ≥ ε.
fn agrees_with_epsilon_queries(accountant: &Accountant, epsilon: f64, d: pld_accountant::Bracket) {
    let at_upper = accountant.epsilon_for_delta(d.upper).unwrap().epsilon;
    let at_lower = accountant.epsilon_for_delta(d.lower).unwrap().epsilon;
    assert!(
        at_upper.lower <= epsilon && epsilon <= at_lower.upper,
        "{at_upper} {at_lower}"
    );
}

/// A δ(ε) query whose finer grids move both ends of their own bracket outwards stops at the
/// first such grid: the `mnist-balls-in-bins` preset at ε 2.34 (δ near its 1e-5) stops
/// about 2.2e-4 of δ wide, short of the tolerance (a known limit of the lattice), and took
/// 13.5 s refining two grids further for nothing (24.6 s before its truncation followed δ).
/// Both ends are checked against the ε(δ) queries at them, as above.
#[test]
fn delta_queries_stop_when_finer_grids_move_both_ends_outwards() {
    let spec = pld_accountant::spec::presets::find("mnist-balls-in-bins")
        .unwrap()
        .spec()
        .unwrap();
    let accountant = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    let start = std::time::Instant::now();
    let answer = accountant.delta_for_epsilon(2.34).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let d = answer.delta;
    // Refinements, not seconds, decide (tests share the machine): the grid 2.6e-4 is the
    // last, the third refinement.
    assert!(
        answer.settings.refinements <= 3,
        "{:?} ({seconds} s)",
        answer.settings
    );
    assert!(d.width() < 5e-4 * d.upper, "{d} {:?}", answer.settings);
    agrees_with_epsilon_queries(&accountant, 2.34, d);
}
