//! Pairs with a few atoms off any lattice (Poisson-sampled `eps_delta`, a `pmf_pair`),
//! composed many times: the accountant's bracket holds the exact ε, computed from the exact
//! multinomial composition (`LossAtoms::power`, itself checked against brute force over all
//! outcome sequences in its unit tests) by bisection on its hockey-stick divergence.
//!
//! Failure this guards against: such a pair rounded onto the grid and composed there lost up
//! to a grid step per run in the lower bound: Poisson-sampled randomized response run 200
//! times gave a bracket 15% wide at a step of 5e-4 nats, and a mix containing it missed the
//! default tolerance at δ = 0.1 after six refinements.

use pld_accountant::{Accountant, AccountantOptions, CompositionSpec, LossAtoms};

/// The smallest ε with max(δ_remove(ε), δ_add(ε)) ≤ δ, by bisection (80 halvings: far below
/// 1e-12).
fn exact_epsilon(remove: &LossAtoms, add: &LossAtoms, delta: f64) -> f64 {
    let delta_at = |e: f64| remove.hockey_stick(e).max(add.hockey_stick(e));
    if delta_at(0.0) <= delta {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    while delta_at(hi) > delta {
        hi *= 2.0;
    }
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if delta_at(mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The REMOVE and ADD pairs of `eps_delta` (ε, 0) under Poisson sampling at `rate`: with
/// δ₀ = 0 it is randomized response on one bit, P = (e^ε, 1)/(1 + e^ε) and Q the mirror;
/// REMOVE is (1 − rate)·Q + rate·P vs Q, ADD its swap.
fn sampled_eps_delta(epsilon: f64, rate: f64) -> (LossAtoms, LossAtoms) {
    let e = epsilon.exp();
    let (high, low) = (e / (1.0 + e), 1.0 / (1.0 + e));
    let remove = LossAtoms::from_pair(&[high, low], &[low, high]).poisson_subsampled(rate);
    let add = remove.swapped();
    (remove, add)
}

fn check(spec: &str, remove: &LossAtoms, add: &LossAtoms) {
    check_at(
        spec,
        remove,
        add,
        &[1e-1, 1e-3, 1e-6, 1e-10, 1e-100, 1e-300],
    );
}

/// As [`check`], at the δs given; at any other δ the bracket must still hold the exact ε.
fn check_at(spec: &str, remove: &LossAtoms, add: &LossAtoms, tight_at: &[f64]) {
    let spec = CompositionSpec::from_json_str(spec).unwrap();
    let default = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    let fixed = Accountant::new(
        &spec,
        AccountantOptions {
            grid_step: Some(5e-4),
            ..AccountantOptions::default()
        },
    )
    .unwrap();
    for delta in [1e-1, 1e-3, 1e-6, 1e-10, 1e-100, 1e-200, 1e-300] {
        let exact = exact_epsilon(remove, add, delta);
        for (name, accountant) in [("default", &default), ("grid 5e-4", &fixed)] {
            let answer = accountant.epsilon_for_delta(delta).unwrap();
            let e = answer.epsilon;
            assert!(
                e.lower <= exact + 1e-9 && exact <= e.upper + 1e-9,
                "{name} δ {delta:e}: {e} does not hold the exact {exact}"
            );
            if tight_at.contains(&delta) {
                assert!(
                    e.upper.is_finite() && e.width() <= 1e-3 * e.upper.max(0.1),
                    "{name} δ {delta:e}: {e} too wide around {exact}"
                );
            }
        }
    }
}

#[test]
fn poisson_sampled_eps_delta_pair_holds_the_exact_epsilon() {
    let (epsilon, rate, count) = (0.5_f64, 0.1, 100);
    let (remove, add) = sampled_eps_delta(epsilon, rate);
    let spec = format!(
        r#"{{"events":[{{"mechanism":"eps_delta","epsilon":{epsilon},"delta":0,
            "sampling":{{"poisson":{rate}}},"count":{count}}}]}}"#
    );
    check(
        &spec,
        &remove.power(count, 1 << 16).unwrap(),
        &add.power(count, 1 << 16).unwrap(),
    );
}

/// The three-atom `pmf_pair` of these tests run `count` times: its spec, and its exact REMOVE
/// and ADD compositions (the whole multinomial, up to 2²⁰ count vectors).
fn pmf_pair_case(count: u64) -> (String, LossAtoms, LossAtoms) {
    let (p, q) = ([0.5, 0.3, 0.2], [0.4, 0.35, 0.25]);
    let spec =
        format!(r#"{{"events":[{{"mechanism":"pmf_pair","p":{p:?},"q":{q:?},"count":{count}}}]}}"#);
    let remove = LossAtoms::from_pair(&p, &q).power(count, 1 << 20).unwrap();
    let add = LossAtoms::from_pair(&q, &p).power(count, 1 << 20).unwrap();
    (spec, remove, add)
}

#[test]
fn pmf_pair_composed_thirty_times_holds_the_exact_epsilon() {
    let (spec, remove, add) = pmf_pair_case(30);
    check(&spec, &remove, &add);
}

/// Past the count vectors the accountant composes at once (C(1002, 2) = 501,501 > 2¹⁶, at
/// most 360 runs of three atoms): exact chunks of 250 runs (the largest divisor of 1000 down
/// to 180), each rounded once and composed four times on the grid. The reference is the
/// whole multinomial (allowed here up to 2²⁰ count vectors). On the grid alone, a 4-ary
/// randomized response sampled at 0.1 and run 10⁵ times gave [51.79, 53.51] at δ 1e-5 ("grid
/// size limit"); with the chunks, [53.511954, 53.512168]. At δ 1e-300 (ε 222.75, 0.4 nats
/// below the largest loss, 1000·ln(0.5/0.4)) the bracket holds the exact ε but stops
/// narrowing at [221.53, 223.08], as it did before the chunks.
#[test]
fn pmf_pair_composed_a_thousand_times_in_exact_chunks_holds_the_exact_epsilon() {
    let (spec, remove, add) = pmf_pair_case(1000);
    let single = LossAtoms::from_pair(&[0.5, 0.3, 0.2], &[0.4, 0.35, 0.25]);
    assert_eq!(single.largest_exact_count(1 << 16), Some(360));
    check_at(
        &spec,
        &remove,
        &add,
        &[1e-1, 1e-3, 1e-6, 1e-10, 1e-100, 1e-200],
    );
}

/// 4-ary randomized response (ε₀ 0.3) Poisson-sampled at 0.1 and run 1001 times: three atoms
/// (the truth, the neighbour's answer, the two others), reached through the spec's sampling.
/// 1001 = 7·11·13 has no divisor from 180 to 360: two exact chunks of 360 runs and 281 runs
/// left over, in one FFT product. The reference is the whole multinomial of the sampled pair.
/// Below δ ≈ 1e-150 that product stops narrowing ([20.16, 22.02] at δ 1e-200, holding the
/// truth; per run on the grid it was [21.4578, 21.4598] for 1000 runs, but not met at 1e-10).
#[test]
fn sampled_four_ary_randomized_response_in_exact_chunks_holds_the_exact_epsilon() {
    let (epsilon, rate, count) = (0.3_f64, 0.1, 1001);
    let e = (-epsilon).exp();
    let d = 1.0 + 3.0 * e;
    let (truth, other, rest) = (1.0 / d, e / d, 2.0 * e / d);
    let remove =
        LossAtoms::from_pair(&[truth, other, rest], &[other, truth, rest]).poisson_subsampled(rate);
    let add = remove.swapped();
    assert_eq!(remove.largest_exact_count(1 << 16), Some(360));
    let spec = format!(
        r#"{{"events":[{{"mechanism":"randomized_response","epsilon":{epsilon},"categories":4,
            "sampling":{{"poisson":{rate}}},"count":{count}}}]}}"#
    );
    check_at(
        &spec,
        &remove.power(count, 1 << 20).unwrap(),
        &add.power(count, 1 << 20).unwrap(),
        &[1e-1, 1e-3, 1e-6, 1e-10, 1e-100],
    );
}

/// A hundred thousand runs (beyond the multinomial path: the binomial one, masses from the
/// ratio recurrence, checked against the multinomial and log-gamma in its unit tests): the
/// bracket holds the exact ε and is tight. On the grid this case gave [1.15, 2.61] at the
/// grid-size limit (δ 0.1).
#[test]
fn poisson_sampled_eps_delta_run_a_hundred_thousand_times() {
    let (epsilon, rate, count) = (0.5_f64, 0.01, 100_000);
    let (remove, add) = sampled_eps_delta(epsilon, rate);
    let spec = format!(
        r#"{{"events":[{{"mechanism":"eps_delta","epsilon":{epsilon},"delta":0,
            "sampling":{{"poisson":{rate}}},"count":{count}}}]}}"#
    );
    check(
        &spec,
        &remove.binomial_power(count, 1e-300, 1 << 20).unwrap(),
        &add.binomial_power(count, 1e-300, 1 << 20).unwrap(),
    );
}
