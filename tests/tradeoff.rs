//! The certified trade-off bracket against closed forms computed here independently (the
//! Gaussian's G_μ and the Laplace mechanism's trade-off, with libm's erfc), and its
//! consistency with the δ brackets of `Accountant::delta_for_epsilon`.

use pld_accountant::tradeoff::{self, log_alphas, TPR_AT_FPR};
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};

fn accountant(json: &str) -> Accountant {
    let spec = CompositionSpec::from_json_str(json).expect("test spec is valid");
    Accountant::new(&spec, AccountantOptions::default()).expect("valid options")
}

/// Φ(x) from libm's erfc.
fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Φ⁻¹(p) by bisection on Φ, to 1e-15.
fn phi_inverse(p: f64) -> f64 {
    let (mut low, mut high) = (-40.0, 40.0);
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if phi(mid) < p {
            low = mid;
        } else {
            high = mid;
        }
    }
    0.5 * (low + high)
}

/// The Gaussian trade-off G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong, Roth & Su 2022).
fn gaussian_tradeoff(mu: f64, alpha: f64) -> f64 {
    if alpha <= 0.0 {
        return 1.0;
    }
    if alpha >= 1.0 {
        return 0.0;
    }
    // Φ⁻¹(1 − α) = −Φ⁻¹(α), accurate for tiny α.
    phi(-phi_inverse(alpha) - mu)
}

/// The trade-off of the Laplace mechanism with ε₀ = sensitivity / scale (Dong, Roth & Su
/// 2022, the Laplace example): 1 − e^{ε₀}α below e^{−ε₀}/2, e^{−ε₀}/(4α) up to 1/2, then
/// e^{−ε₀}(1 − α).
fn laplace_tradeoff(epsilon0: f64, alpha: f64) -> f64 {
    let e = (-epsilon0).exp();
    if alpha < e / 2.0 {
        1.0 - alpha / e
    } else if alpha <= 0.5 {
        e / (4.0 * alpha)
    } else {
        e * (1.0 - alpha)
    }
}

fn check_against(
    name: &str,
    curve: &tradeoff::Tradeoff,
    exact: impl Fn(f64) -> f64,
    max_width: f64,
) {
    for point in &curve.points {
        let truth = exact(point.alpha);
        let beta = point.beta;
        assert!(
            beta.lower <= truth && truth <= beta.upper,
            "{name}, α {}: exact {truth} outside [{}, {}]",
            point.alpha,
            beta.lower,
            beta.upper
        );
        assert!(
            beta.upper - beta.lower <= max_width,
            "{name}, α {}: bracket [{}, {}] wider than {max_width}",
            point.alpha,
            beta.lower,
            beta.upper
        );
    }
}

#[test]
fn gaussian_bracket_contains_the_closed_form_at_every_alpha() {
    let mut alphas = log_alphas(1e-8, 81);
    alphas.extend([0.0, 0.25, 0.5, 0.75, 0.999, 1.0]);
    for mu in [0.5, 1.0, 2.0, 4.0] {
        // μ = √k / σ over k = 4 runs.
        let sigma = 2.0 / mu;
        let accountant = accountant(&format!(
            r#"{{"events": [{{"mechanism": "gaussian", "sigma": {sigma}, "count": 4}}]}}"#
        ));
        let curve = tradeoff::tradeoff(&accountant, &alphas).expect("tradeoff");
        check_against(
            &format!("gaussian μ {mu}"),
            &curve,
            |a| gaussian_tradeoff(mu, a),
            2e-3,
        );
        // The advantage is the total variation distance 2Φ(μ/2) − 1.
        let tv = 2.0 * phi(mu / 2.0) - 1.0;
        assert!(
            curve.advantage.lower <= tv && tv <= curve.advantage.upper,
            "μ {mu}: TV {tv} outside {:?}",
            curve.advantage
        );
        for t in &curve.tpr_at_fpr {
            let truth = 1.0 - gaussian_tradeoff(mu, t.fpr);
            assert!(
                t.tpr.lower <= truth && truth <= t.tpr.upper,
                "μ {mu}: {t:?}"
            );
        }
    }
}

#[test]
fn laplace_bracket_contains_the_closed_form_on_the_grid_path() {
    // One Laplace run: the profile comes from a grid PLD, not a closed form.
    let alphas = log_alphas(1e-6, 61);
    for scale in [0.5, 1.0, 4.0] {
        let accountant = accountant(&format!(
            r#"{{"events": [{{"mechanism": "laplace", "scale": {scale}}}]}}"#
        ));
        let curve = tradeoff::tradeoff(&accountant, &alphas).expect("tradeoff");
        assert!(curve.grid_step.is_some(), "read from a grid");
        check_against(
            &format!("laplace scale {scale}"),
            &curve,
            |a| laplace_tradeoff(1.0 / scale, a),
            5e-3,
        );
    }
}

/// TPR − e^ε·FPR ≤ δ(ε) for every test: the lower end of each TPR bracket respects every δ
/// upper bound that `delta_for_epsilon` gives (refined at that ε on its own grid), and the
/// advantage bracket overlaps the δ bracket at ε = 0.
#[test]
fn tpr_brackets_agree_with_delta_brackets() {
    let specs = [
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01},
            "count": 1000}]}"#,
        r#"{"neighbouring": "replace", "events": [{"mechanism": "laplace", "scale": 3,
            "count": 10}, {"mechanism": "randomized_response", "epsilon": 0.3, "count": 5}]}"#,
    ];
    let alphas = log_alphas(1e-6, 25);
    for json in specs {
        let accountant = accountant(json);
        let curve = tradeoff::tradeoff(&accountant, &alphas).expect("tradeoff");
        for epsilon in [0.0, 0.25, 0.5, 1.0, 2.0, 4.0] {
            let delta = accountant.delta_for_epsilon(epsilon).expect("δ").delta;
            for point in &curve.points {
                let tpr_lower = 1.0 - point.beta.upper;
                assert!(
                    tpr_lower <= epsilon.exp() * point.alpha + delta.upper + 1e-12,
                    "{json}: α {} TPR ≥ {tpr_lower} contradicts δ({epsilon}) ≤ {}",
                    point.alpha,
                    delta.upper
                );
            }
            if epsilon == 0.0 {
                assert!(
                    curve.advantage.lower <= delta.upper && delta.lower <= curve.advantage.upper,
                    "{json}: advantage {:?} vs δ(0) {delta:?}",
                    curve.advantage
                );
            }
        }
        assert_eq!(curve.tpr_at_fpr.len(), TPR_AT_FPR.len());
        for t in &curve.tpr_at_fpr {
            assert!(
                t.tpr.lower <= t.tpr.upper && t.tpr.lower >= t.fpr - 1e-12,
                "{t:?}"
            );
        }
        // β is non-increasing in α at both ends (the α list is increasing).
        for pair in curve.points.windows(2) {
            assert!(pair[1].beta.lower <= pair[0].beta.lower + 1e-12);
        }
    }
}

#[test]
fn bad_alphas_are_refused_with_their_position() {
    let accountant = accountant(r#"{"events": [{"mechanism": "gaussian", "sigma": 1}]}"#);
    for (alphas, name) in [
        (vec![], "alphas"),
        (vec![0.1, f64::NAN], "alphas[1]"),
        (vec![-0.1], "alphas[0]"),
        (vec![0.5, 1.5], "alphas[1]"),
    ] {
        let error = tradeoff::tradeoff(&accountant, &alphas).expect_err("refused");
        assert!(error.to_string().contains(name), "{error}");
    }
}
