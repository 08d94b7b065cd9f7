//! Second step of trust: FFT composition against direct convolution.
//!
//! Random PMFs come from a seeded ChaCha8 generator. The FFT result must agree with direct
//! convolution to [`support::CONVOLUTION_ABS`], and the round-off bound it reports must cover
//! its actual error, measured against a double-double reference.

mod support;

use pld_accountant::numeric::fft_convolution::{convolve, convolve_direct, convolve_fft};
use pld_accountant::numeric::summation::neumaier_sum;
use pld_accountant::pmf::product::compose_product;
use pld_accountant::{Bound, GridPmf};
use rand::Rng;
use support::{
    convolve_reference, l2_diff, max_abs_diff, max_abs_diff_by_loss, random_pmf, rng, Shape,
    CONVOLUTION_ABS, MASS_ABS, SHAPES,
};

/// The length pairs (na, nb) tested: every na in 1..=40 against a few fixed nb, plus random
/// pairs up to 2000 (always including the extremes).
fn length_pairs(rng: &mut rand_chacha::ChaCha8Rng) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for na in 1..=40 {
        for nb in [1, 2, 17, 40] {
            pairs.push((na, nb));
        }
    }
    pairs.extend([(1, 2000), (2000, 1), (2000, 2000), (1999, 2), (1024, 1025)]);
    while pairs.len() < 220 {
        let na = rng.gen_range(1..=2000);
        let nb = rng.gen_range(1..=2000);
        pairs.push((na, nb));
    }
    pairs
}

/// Check one FFT convolution against direct convolution and the double-double reference.
fn check_fft_against_direct(a: &[f64], b: &[f64], context: &str) {
    let fft = convolve_fft(a, b);
    let direct = convolve_direct(a, b);
    let exact = convolve_reference(a, b);
    let params = format!(
        "{context}, na={}, nb={}, mass_a={:e}, mass_b={:e}",
        a.len(),
        b.len(),
        a.iter().sum::<f64>(),
        b.iter().sum::<f64>()
    );
    assert_eq!(
        fft.values.len(),
        a.len() + b.len() - 1,
        "FFT output length, {params}"
    );
    assert_eq!(
        direct.values.len(),
        a.len() + b.len() - 1,
        "direct output length, {params}"
    );
    assert!(
        fft.values.iter().all(|v| v.is_finite() && *v >= 0.0),
        "FFT output must be finite and non-negative, {params}"
    );
    let max_diff = max_abs_diff(&fft.values, &direct.values);
    assert!(
        max_diff <= CONVOLUTION_ABS,
        "max |fft − direct| = {max_diff:e} > {CONVOLUTION_ABS:e}, {params}"
    );
    // The reported bound must cover the real error of the FFT result ...
    let fft_err = l2_diff(&fft.values, &exact);
    assert!(
        fft.roundoff_l2.is_finite() && fft_err <= fft.roundoff_l2,
        "FFT ℓ2 error vs exact {fft_err:e} exceeds its reported roundoff_l2 {:e}, {params}",
        fft.roundoff_l2
    );
    // The per-entry round-off floor estimate, which δ is charged with, must cover the worst
    // entry's actual error.
    let worst = max_abs_diff(&fft.values, &exact);
    assert!(
        worst <= fft.roundoff_floor,
        "FFT max error vs exact {worst:e} exceeds its round-off floor estimate {:e}, {params}",
        fft.roundoff_floor
    );
    // ... and therefore the measured difference from direct convolution, up to the direct
    // result's own (reported) error.
    let measured = l2_diff(&fft.values, &direct.values);
    assert!(
        measured <= fft.roundoff_l2 + direct.roundoff_l2,
        "‖fft − direct‖₂ = {measured:e} exceeds fft.roundoff_l2 {:e} + direct.roundoff_l2 {:e}, \
         {params}",
        fft.roundoff_l2,
        direct.roundoff_l2
    );
    let direct_err = l2_diff(&direct.values, &exact);
    assert!(
        direct_err <= direct.roundoff_l2,
        "direct ℓ2 error vs exact {direct_err:e} exceeds its reported roundoff_l2 {:e}, {params}",
        direct.roundoff_l2
    );
    // The dispatcher picks one of the two; either way it must agree.
    let chosen = convolve(a, b);
    let chosen_diff = max_abs_diff(&chosen.values, &direct.values);
    assert!(
        chosen_diff <= CONVOLUTION_ABS,
        "max |convolve − direct| = {chosen_diff:e} > {CONVOLUTION_ABS:e}, {params}"
    );
}

#[test]
fn fft_equals_direct_convolution_on_seeded_random_pmfs() {
    let mut rng = rng(1);
    let pairs = length_pairs(&mut rng);
    for (case, &(na, nb)) in pairs.iter().enumerate() {
        let shape_a = SHAPES[case % SHAPES.len()];
        let shape_b = SHAPES[(case / SHAPES.len()) % SHAPES.len()];
        let mass_a = if case % 3 == 0 {
            1.0
        } else {
            rng.gen_range(0.5..=1.0)
        };
        let mass_b = if case % 5 == 0 {
            1.0
        } else {
            rng.gen_range(0.5..=1.0)
        };
        let a = random_pmf(&mut rng, na, shape_a, mass_a);
        let b = random_pmf(&mut rng, nb, shape_b, mass_b);
        check_fft_against_direct(
            &a,
            &b,
            &format!("case={case}, shapes=({shape_a:?}, {shape_b:?}), seed stream 1"),
        );
    }
}

#[test]
fn fft_equals_direct_convolution_with_huge_dynamic_range() {
    // Both operands spread over 30 orders of magnitude: the small entries of the result are
    // far below the FFT noise floor, so only the absolute error is meaningful here.
    let mut rng = rng(2);
    for case in 0..40 {
        let na = rng.gen_range(1..=2000);
        let nb = rng.gen_range(1..=2000);
        let a = random_pmf(&mut rng, na, Shape::HugeRange, 1.0);
        let mass_b = rng.gen_range(0.5..=1.0);
        let b = random_pmf(&mut rng, nb, Shape::HugeRange, mass_b);
        check_fft_against_direct(&a, &b, &format!("case={case}, HugeRange, seed stream 2"));
    }
}

/// A PMF of total mass exactly 1 (finite part `1 − m`), on the grid `(offset + i)·step`
/// (or the half-step grid for a lower PMF).
fn grid_pmf(
    rng: &mut rand_chacha::ChaCha8Rng,
    n: usize,
    shape: Shape,
    infinity_mass: f64,
    bound: Bound,
) -> GridPmf {
    let step = rng.gen_range(0.01..0.1);
    let offset = rng.gen_range(-30..=30);
    let probs = random_pmf(rng, n, shape, 1.0 - infinity_mass);
    let pmf = GridPmf::new(step, offset, probs, infinity_mass, bound)
        .unwrap_or_else(|e| panic!("GridPmf::new(step={step}, offset={offset}, n={n}): {e}"));
    match bound {
        Bound::Upper => pmf,
        Bound::Lower => pmf.with_half_offset(true),
    }
}

#[test]
fn self_compose_without_truncation_equals_repeated_direct_convolution() {
    let mut rng = rng(3);
    let mut case = 0;
    for k in [2u64, 3, 5, 8, 13] {
        for trial in 0..12 {
            case += 1;
            let n = if trial == 0 { 1 } else { rng.gen_range(1..=60) };
            let shape = SHAPES[trial % SHAPES.len()];
            let infinity_mass = match trial % 3 {
                0 => 0.0,
                1 => rng.gen_range(0.0..1e-3),
                _ => rng.gen_range(0.0..0.3),
            };
            let bound = if trial % 2 == 0 {
                Bound::Upper
            } else {
                Bound::Lower
            };
            let pmf = grid_pmf(&mut rng, n, shape, infinity_mass, bound);
            let params = format!(
                "case={case}, k={k}, n={n}, shape={shape:?}, bound={bound:?}, step={}, \
                 offset={}, half_offset={}, infinity_mass={infinity_mass:e}, seed stream 3",
                pmf.step(),
                pmf.offset(),
                pmf.half_offset()
            );
            let composed = pmf
                .self_compose(k, 0.0)
                .unwrap_or_else(|e| panic!("self_compose failed: {e}, {params}"));

            // k-fold repeated direct convolution, and its double-double twin.
            let mut direct = pmf.probs().to_vec();
            let mut exact = pmf.probs().to_vec();
            for _ in 1..k {
                direct = convolve_direct(&direct, pmf.probs()).values;
                exact = convolve_reference(&exact, pmf.probs());
            }
            assert_eq!(
                composed.len(),
                direct.len(),
                "no truncation: length must be k(n−1)+1, {params}"
            );
            // Loss alignment: entry i of the k-fold sum has loss k·l₀ + i·step.
            let first_loss = k as f64 * pmf.loss(0);
            for i in [0, composed.len() / 2, composed.len() - 1] {
                let want = first_loss + i as f64 * pmf.step();
                let got = composed.loss(i);
                assert!(
                    (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "loss({i}) = {got} but the k-fold sum puts {want} there, {params}"
                );
            }
            // (An upper PMF short of total mass 1 by more than 1e-11/k relative would be
            // scaled up first; these are short by a few ulps at most.)
            let probs = composed.probs().to_vec();
            let diff = max_abs_diff(&probs, &direct);
            assert!(
                diff <= CONVOLUTION_ABS,
                "max |self_compose − repeated direct| = {diff:e} > {CONVOLUTION_ABS:e}, {params}"
            );
            let err = l2_diff(&probs, &exact);
            assert!(
                err <= composed.roundoff_l2(),
                "ℓ2 error vs exact {err:e} exceeds the PMF's roundoff_l2 {:e}, {params}",
                composed.roundoff_l2()
            );
            let worst = max_abs_diff(&probs, &exact);
            assert!(
                worst <= composed.roundoff_floor(),
                "max error vs exact {worst:e} exceeds the round-off floor estimate {:e}, {params}",
                composed.roundoff_floor()
            );
            let want_inf = 1.0 - (1.0 - infinity_mass).powi(k as i32);
            let got_inf = composed.infinity_mass();
            assert!(
                (got_inf - want_inf).abs() <= MASS_ABS,
                "infinity mass {got_inf:e}, want 1 − (1 − m)^k = {want_inf:e}, {params}"
            );
        }
    }
}

/// 1 − (Σ probs + m), by a compensated (Neumaier) sum: how far the total falls short of 1.
fn mass_deficit(probs: &[f64], infinity_mass: f64) -> f64 {
    -neumaier_sum(probs.iter().copied().chain([infinity_mass, -1.0]))
}

/// Compose with no truncation, panicking with the context on error.
fn compose(a: &GridPmf, b: &GridPmf, context: &str) -> GridPmf {
    a.compose(b, 0.0)
        .unwrap_or_else(|e| panic!("compose failed: {e}, {context}"))
}

#[test]
fn compose_is_commutative_and_associative() {
    let mut rng = rng(4);
    for case in 0..30 {
        let bound = if case % 2 == 0 {
            Bound::Upper
        } else {
            Bound::Lower
        };
        let step = 0.05;
        // Short and long operands, so both the direct and the FFT paths of `convolve` are hit.
        let make = |rng: &mut rand_chacha::ChaCha8Rng, which: usize| {
            let n = if (case + which).is_multiple_of(3) {
                rng.gen_range(1..=16)
            } else {
                rng.gen_range(100..=600)
            };
            let shape = SHAPES[(case + which) % SHAPES.len()];
            let m = if which == 1 {
                0.0
            } else {
                rng.gen_range(0.0..0.1)
            };
            let offset = rng.gen_range(-200..=0);
            let probs = random_pmf(rng, n, shape, 1.0 - m);
            let pmf = GridPmf::new(step, offset, probs, m, bound)
                .unwrap_or_else(|e| panic!("GridPmf::new(case={case}, n={n}): {e}"));
            if bound == Bound::Lower && which == 2 {
                pmf.with_half_offset(true)
            } else {
                pmf
            }
        };
        let a = make(&mut rng, 0);
        let b = make(&mut rng, 1);
        let c = make(&mut rng, 2);
        let params = format!(
            "case={case}, bound={bound:?}, lengths=({}, {}, {}), offsets=({}, {}, {}), \
             infinity masses=({:e}, {:e}, {:e}), seed stream 4",
            a.len(),
            b.len(),
            c.len(),
            a.offset(),
            b.offset(),
            c.offset(),
            a.infinity_mass(),
            b.infinity_mass(),
            c.infinity_mass()
        );
        let ab = compose(&a, &b, &params);
        let ba = compose(&b, &a, &params);
        let diff = max_abs_diff_by_loss(&ab, &ba);
        assert!(
            diff <= CONVOLUTION_ABS,
            "a∘b vs b∘a: max difference by loss {diff:e} > {CONVOLUTION_ABS:e}, {params}"
        );
        let inf_diff = (ab.infinity_mass() - ba.infinity_mass()).abs();
        assert!(
            inf_diff <= MASS_ABS,
            "a∘b vs b∘a: infinity masses {:e} and {:e}, {params}",
            ab.infinity_mass(),
            ba.infinity_mass()
        );
        // a∘b against the exact convolution, placed by loss.
        let exact = convolve_reference(a.probs(), b.probs());
        let exact_pmf = GridPmf::new(
            step,
            a.offset() + b.offset(),
            exact,
            0.0,
            Bound::Upper, // only the grid matters for the comparison
        )
        .unwrap_or_else(|e| panic!("reference PMF: {e}, {params}"));
        let diff = max_abs_diff_by_loss(&ab, &exact_pmf);
        assert!(
            diff <= CONVOLUTION_ABS,
            "a∘b vs exact convolution: max difference by loss {diff:e}, {params}"
        );

        let ab_c = compose(&ab, &c, &params);
        let bc = compose(&b, &c, &params);
        let a_bc = compose(&a, &bc, &params);
        let diff = max_abs_diff_by_loss(&ab_c, &a_bc);
        assert!(
            diff <= CONVOLUTION_ABS,
            "(a∘b)∘c vs a∘(b∘c): max difference by loss {diff:e} > {CONVOLUTION_ABS:e}, \
             {params}"
        );
        let inf_diff = (ab_c.infinity_mass() - a_bc.infinity_mass()).abs();
        assert!(
            inf_diff <= MASS_ABS,
            "(a∘b)∘c vs a∘(b∘c): infinity masses {:e} and {:e}, {params}",
            ab_c.infinity_mass(),
            a_bc.infinity_mass()
        );
        let want_inf =
            1.0 - (1.0 - a.infinity_mass()) * (1.0 - b.infinity_mass()) * (1.0 - c.infinity_mass());
        assert!(
            (ab_c.infinity_mass() - want_inf).abs() <= MASS_ABS,
            "(a∘b)∘c infinity mass {:e}, want 1 − Π(1 − mᵢ) = {want_inf:e}, {params}",
            ab_c.infinity_mass()
        );
    }
}

/// The round-off floor estimate on a realistic PMF (a discretized Poisson-subsampled Gaussian
/// step) composed 32 and 64 times, against an exact double-double repeated squaring.
#[test]
fn roundoff_floor_covers_a_composed_dp_sgd_step() {
    use pld_accountant::{Gaussian, LossBins, PoissonSubsampled};
    let mechanism = PoissonSubsampled::new(Gaussian::new(1.0, 1.0).expect("σ"), 0.05).expect("q");
    let single = LossBins::from_mechanism(&mechanism, 0.02, 1e-12)
        .expect("bins")
        .connect_the_dots();
    for k in [32u64, 64] {
        let composed = single.self_compose(k, 0.0).expect("self_compose");
        let mut exact = single.probs().to_vec();
        let mut power = 1;
        while power < k {
            exact = convolve_reference(&exact, &exact);
            power *= 2;
        }
        let worst = max_abs_diff(composed.probs(), &exact);
        assert!(
            worst <= composed.roundoff_floor(),
            "k={k}: max error {worst:e} exceeds the round-off floor estimate {:e} ({} points)",
            composed.roundoff_floor(),
            composed.len()
        );
    }
}

/// Tilted heterogeneous composition: in the far upper tail (exact δ from 8e-10 down to
/// 1e-37) the upper PMF's δ(ε) stays above the exact δ of the convolution (direct sums of
/// non-negative terms) and within 1% of it (measured: 1e-8 relative), where the untilted
/// composition's round-off charge keeps δ above 5e-15.
#[test]
fn tilted_composition_is_accurate_in_the_far_tail() {
    let step = 0.01;
    let gaussian = |n: usize, centre: f64, width: f64| -> Vec<f64> {
        let v: Vec<f64> = (0..n)
            .map(|i| (-0.5 * ((i as f64 - centre) / width).powi(2)).exp())
            .collect();
        let total: f64 = v.iter().sum();
        v.iter().map(|x| x / total).collect()
    };
    let a_probs = gaussian(400, 150.0, 30.0);
    let b_probs = gaussian(300, 100.0, 20.0);
    let a = GridPmf::new(step, -200, a_probs.clone(), 0.0, Bound::Upper).unwrap();
    let b = GridPmf::new(step, -150, b_probs.clone(), 0.0, Bound::Upper).unwrap();
    let exact = convolve_direct(&a_probs, &b_probs).values;
    let exact_offset = -350i64;
    let exact_delta = |epsilon: f64| -> f64 {
        exact
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let loss = (exact_offset + i as i64) as f64 * step;
                if loss > epsilon {
                    p * -(epsilon - loss).exp_m1()
                } else {
                    0.0
                }
            })
            .sum()
    };
    let plain = a.compose_tilted(&b, 0.0, 0).unwrap();
    let tilted = a.compose_tilted(&b, 0.0, 3).unwrap();
    let mut improved = 0;
    for epsilon in [1.0, 1.5, 2.0, 2.5, 3.0, 3.3] {
        let truth = exact_delta(epsilon);
        let got = tilted.delta_for_epsilon(epsilon);
        assert!(
            got >= truth,
            "ε {epsilon}: tilted δ {got:e} below the exact {truth:e}"
        );
        assert!(
            got <= truth * 1.01 + 1e-300,
            "ε {epsilon}: tilted δ {got:e} far above the exact {truth:e}"
        );
        let untilted = plain.delta_for_epsilon(epsilon);
        assert!(untilted >= truth);
        if untilted > 10.0 * got {
            improved += 1;
        }
    }
    assert!(improved >= 2, "tilting never helped");
}

/// The FFT product of several distinct PMFs, each repeated, with no truncation, against the
/// double-double convolution of all of them: same losses, round-off within the bounds the
/// result reports, +∞ mass by the run rule (upper) or the product rule (lower).
#[test]
fn product_without_truncation_equals_repeated_direct_convolution() {
    let mut rng = rng(5);
    for case in 0..40 {
        let bound = if case % 2 == 0 {
            Bound::Upper
        } else {
            Bound::Lower
        };
        let step = rng.gen_range(0.01..0.1);
        let parts_count = rng.gen_range(2..=5);
        let mut parts = Vec::new();
        for p in 0..parts_count {
            let n = if p == 0 && case % 5 == 0 {
                1
            } else {
                rng.gen_range(1..=40)
            };
            let shape = SHAPES[(case + p) % SHAPES.len()];
            let infinity_mass = match (case + p) % 3 {
                0 => 0.0,
                1 => rng.gen_range(0.0..1e-3),
                _ => rng.gen_range(0.0..0.2),
            };
            let offset = rng.gen_range(-30..=30);
            let probs = random_pmf(&mut rng, n, shape, 1.0 - infinity_mass);
            let pmf = GridPmf::new(step, offset, probs, infinity_mass, bound)
                .unwrap_or_else(|e| panic!("GridPmf::new: {e}, case {case}"));
            let pmf = match bound {
                Bound::Upper => pmf,
                Bound::Lower => pmf.with_half_offset(true),
            };
            parts.push((pmf, rng.gen_range(1..=6u64)));
        }
        let params = format!(
            "case={case}, bound={bound:?}, step={step}, parts={:?}, seed stream 5",
            parts
                .iter()
                .map(|(p, k)| (p.len(), p.offset(), p.infinity_mass(), *k))
                .collect::<Vec<_>>()
        );
        let factors: Vec<(&GridPmf, u64)> = parts.iter().map(|(p, k)| (p, *k)).collect();
        let Some(composed) = compose_product(&factors, 0.0, 0) else {
            // Only a part with no finite mass may decline (none here has).
            panic!("compose_product declined, {params}");
        };
        let composed = composed.unwrap_or_else(|e| panic!("compose_product: {e}, {params}"));

        let mut exact = vec![1.0];
        let mut first_loss = 0.0;
        for (pmf, k) in &parts {
            for _ in 0..*k {
                exact = convolve_reference(&exact, pmf.probs());
            }
            first_loss += *k as f64 * pmf.loss(0);
        }
        assert_eq!(composed.len(), exact.len(), "no truncation, {params}");
        for i in [0, composed.len() / 2, composed.len() - 1] {
            let want = first_loss + i as f64 * step;
            let got = composed.loss(i);
            assert!(
                (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                "loss({i}) = {got}, the sum puts {want} there, {params}"
            );
        }
        let mut probs = composed.probs().to_vec();
        if bound == Bound::Upper {
            // The stored totals' shortfall, put back at the lowest loss (see the
            // self-composition test): at most Σ k·deficit, to first order.
            let added: f64 = parts
                .iter()
                .map(|(p, k)| *k as f64 * mass_deficit(p.probs(), p.infinity_mass()).max(0.0))
                .sum::<f64>()
                * (1.0 + 1e-6);
            assert!(
                probs[0] - exact[0] <= added + 1e-28 + composed.roundoff_floor(),
                "entry 0 gained {:e}, more than the deficits' {added:e}, {params}",
                probs[0] - exact[0]
            );
            probs[0] = exact[0] + (probs[0] - exact[0] - added).max(-composed.roundoff_floor());
        }
        let worst = max_abs_diff(&probs, &exact);
        assert!(
            worst <= composed.roundoff_floor(),
            "max error vs exact {worst:e} exceeds the round-off floor {:e}, {params}",
            composed.roundoff_floor()
        );
        let err = l2_diff(&probs, &exact);
        assert!(
            err <= composed.roundoff_l2(),
            "ℓ2 error {err:e} exceeds roundoff_l2 {:e}, {params}",
            composed.roundoff_l2()
        );
        let kept: f64 = parts
            .iter()
            .map(|(p, k)| (1.0 - p.infinity_mass()).powi(*k as i32))
            .product();
        let want_inf = match bound {
            Bound::Upper => 1.0 - kept,
            Bound::Lower => {
                let finite: f64 = parts
                    .iter()
                    .map(|(p, k)| p.finite_mass().powi(*k as i32))
                    .product();
                let total: f64 = parts
                    .iter()
                    .map(|(p, k)| p.total_mass().min(1.0).powi(*k as i32))
                    .product();
                total - finite
            }
        };
        let got_inf = composed.infinity_mass();
        assert!(
            (got_inf - want_inf).abs() <= MASS_ABS,
            "infinity mass {got_inf:e}, want {want_inf:e}, {params}"
        );
    }
}

/// The product declines what it does not handle, for the pairwise path to take.
#[test]
fn product_declines_single_parts_and_mixed_grids() {
    let a = GridPmf::new(0.1, 0, vec![0.5, 0.5], 0.0, Bound::Upper).unwrap();
    let b = GridPmf::new(0.2, 0, vec![0.5, 0.5], 0.0, Bound::Upper).unwrap();
    let c = GridPmf::new(0.1, 0, vec![0.5, 0.5], 0.0, Bound::Lower).unwrap();
    let empty = GridPmf::new(0.1, 0, vec![0.0], 1.0, Bound::Upper).unwrap();
    assert!(compose_product(&[(&a, 5)], 1e-12, 0).is_none(), "one part");
    assert!(
        compose_product(&[(&a, 1), (&b, 1)], 1e-12, 0).is_none(),
        "steps"
    );
    assert!(
        compose_product(&[(&a, 1), (&c, 1)], 1e-12, 0).is_none(),
        "bounds"
    );
    assert!(
        compose_product(&[(&a, 1), (&empty, 1)], 1e-12, 0).is_none(),
        "no finite mass"
    );
    assert!(
        compose_product(&[(&a, 0), (&a, 1)], 1e-12, 0).is_none(),
        "count 0"
    );
    assert!(
        compose_product(&[(&a, 2), (&a, 3)], 1e-12, 0).is_some(),
        "two parts"
    );
}
