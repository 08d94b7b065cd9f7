//! Built-in compositions: the lecture's three DP-SGD scenarios and a standard DP-SGD run, ready
//! to use without writing a specification (`pld compare --preset NAME`).
//!
//! Each preset is library data: a name, a one-line description, where its numbers come from,
//! the specification (as the JSON of `docs/spec.md`, so `pld presets NAME` can print it as a
//! starting point for `--spec`) and the δ it is usually asked at.
//!
//! The lecture is S. Yıldırım, "Differential Privacy" (Trustworthy AI, Galatasaray
//! Üniversitesi, 30 March 2024), section "Differentially private SGD". It calibrates σ with
//! formulas but gives no numbers; the dataset size n = 60,000 (MNIST's training set), the batch
//! size, the number of iterations and the targets below are this crate's choices, stated in
//! each preset's `source`.
//!
//! ```
//! use pld_accountant::{spec::presets, Accountant, AccountantOptions};
//!
//! let preset = presets::find("poisson-dp-sgd")?;
//! let spec = preset.spec()?;
//! let answer = Accountant::new(&spec, AccountantOptions::default())?
//!     .epsilon_for_delta(preset.delta())?;
//! assert!(answer.epsilon.lower <= 1.82825 && 1.82824 <= answer.epsilon.upper);
//! # Ok::<(), pld_accountant::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::spec::CompositionSpec;
use serde_json::{json, Value};

/// One built-in composition (the crate's data: [`PRESETS`] lists them all, [`find`] finds one
/// by name; its fields are read through the accessors).
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// The name given to `--preset`, e.g. `"mnist-dp-sgd"`.
    name: &'static str,
    /// One line saying what was released.
    description: &'static str,
    /// Where the numbers come from (document, section, and the parameters chosen here).
    source: &'static str,
    /// The δ this composition is usually reported at (the default of `pld compare`).
    delta: f64,
    /// The specification, in the JSON format of [`crate::spec`].
    json: fn() -> Value,
}

impl Preset {
    /// The name given to `--preset`, e.g. `"mnist-dp-sgd"`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// One line saying what was released.
    pub fn description(&self) -> &'static str {
        self.description
    }

    /// Where the numbers come from (document, section, and the parameters chosen here).
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The δ this composition is usually reported at (the default of `pld compare`).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The specification in the JSON format of [`crate::spec`] (what `--spec` would read).
    pub fn spec_json(&self) -> Value {
        (self.json)()
    }

    /// The validated specification.
    ///
    /// # Errors
    /// None for the built-in presets (a test parses every one); the specification's
    /// validation errors otherwise.
    pub fn spec(&self) -> Result<CompositionSpec> {
        CompositionSpec::from_json_value(&self.spec_json())
    }
}

/// Dataset size of the lecture scenarios and of `mnist-dp-sgd` (MNIST's training set).
pub const DATASET_SIZE: u64 = 60_000;

/// Scenario 1's noise scale: the lecture's pure-DP calibration
///
/// ```text
/// σ = B1 / (m ln[1 + (e^{ε/T} − 1) n/m])
/// ```
///
/// for ε = 1, T = 1000 iterations, batches of m = 256 out of n = 60,000, clipping bound
/// B1 = 1 (amplification by sampling without replacement, Balle, Barthe & Gaboardi 2018, then
/// basic composition).
pub fn scenario_1_scale() -> f64 {
    let (epsilon, steps, m, n, b1) = (1.0_f64, 1000.0, 256.0, DATASET_SIZE as f64, 1.0);
    b1 / (m * ((epsilon / steps).exp_m1() * n / m).ln_1p())
}

/// Scenario 2's noise standard deviation: the lecture's zCDP calibration
///
/// ```text
/// ρ = (sqrt(ln(1/δ) + ε) − sqrt(ln(1/δ)))²,   ρ/T = B2²/(n²σ²)  ⇒  σ = B2·sqrt(T/ρ)/n
/// ```
///
/// for (ε, δ) = (1, 1e-5), T = 100 full-batch iterations, n = 60,000, B2 = 1.
pub fn scenario_2_sigma() -> f64 {
    let (epsilon, delta, steps, n, b2) = (1.0_f64, 1e-5_f64, 100.0_f64, DATASET_SIZE as f64, 1.0);
    let log = (1.0 / delta).ln();
    let rho = ((log + epsilon).sqrt() - log.sqrt()).powi(2);
    b2 * (steps / rho).sqrt() / n
}

fn scenario_1() -> Value {
    // Per-example L1 norm ≤ B1/2 on the average of m gradients: one record moves the batch
    // average by at most B1/(2m), and by B1/m when it is replaced (the crate doubles Δ under
    // "replace").
    json!({
        "neighbouring": "replace",
        "events": [{
            "mechanism": "laplace",
            "scale": scenario_1_scale(),
            "sensitivity": 1.0 / (2.0 * 256.0),
            "sampling": {"fixed_batch": {"batch_size": 256, "dataset_size": DATASET_SIZE}},
            "count": 1000
        }]
    })
}

fn scenario_2() -> Value {
    // Per-example L2 norm ≤ B2/2 on the average of all n gradients: Δ = B2/(2n) per record,
    // B2/n when replaced.
    json!({
        "neighbouring": "replace",
        "events": [{
            "mechanism": "gaussian",
            "sigma": scenario_2_sigma(),
            "sensitivity": 1.0 / (2.0 * DATASET_SIZE as f64),
            "count": 100
        }]
    })
}

fn scenario_3() -> Value {
    json!({
        "neighbouring": "add_remove",
        "events": [{
            "mechanism": "gaussian",
            "sigma": 1.0,
            "sensitivity": 1.0,
            "sampling": {"poisson": 0.01},
            "count": 1000
        }]
    })
}

/// Steps of `mnist-dp-sgd`: ⌈60 epochs · 60,000 / 256⌉.
pub const MNIST_STEPS: u64 = 14_063;

fn mnist() -> Value {
    json!({
        "neighbouring": "add_remove",
        "events": [{
            "mechanism": "gaussian",
            "sigma": 1.1,
            "sensitivity": 1.0,
            "sampling": {"poisson": 256.0 / DATASET_SIZE as f64},
            "count": MNIST_STEPS
        }]
    })
}

/// Batches per epoch of the MNIST presets with per-epoch batches: ⌈60,000 / 256⌉.
pub const MNIST_BATCHES_PER_EPOCH: u64 = 235;

/// Epochs of the MNIST presets.
pub const MNIST_EPOCHS: u64 = 60;

/// `mnist-dp-sgd` with the batches a data loader really draws per epoch: `sampling` is the
/// event's sampling value for t = 235 batches, and `count` the 60 epochs.
fn mnist_epochs(sampling: Value) -> Value {
    json!({
        "neighbouring": "add_remove",
        "events": [{
            "mechanism": "gaussian",
            "sigma": 1.1,
            "sensitivity": 1.0,
            "sampling": sampling,
            "count": MNIST_EPOCHS
        }]
    })
}

fn mnist_balls_in_bins() -> Value {
    mnist_epochs(json!({"random_allocation": {"steps_per_epoch": MNIST_BATCHES_PER_EPOCH}}))
}

fn mnist_shuffle() -> Value {
    mnist_epochs(json!({"shuffle": {"steps_per_epoch": MNIST_BATCHES_PER_EPOCH}}))
}

fn mixed_release() -> Value {
    // A smooth-sensitivity median with Laplace-log-normal noise (σ 0.6, s 0.2, t 0.2:
    // ε = t/σ + e^{3σ²/2}s ≈ 0.676, ρ = ε²/2 ≈ 0.229), 100 DP-SGD steps (σ 1, q 0.01) and
    // one exponential-mechanism model selection at ε = 0.5.
    json!({
        "events": [
            {"mechanism": "laplace_log_normal", "sigma": 0.6, "s": 0.2, "t": 0.2},
            {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 100},
            {"mechanism": "exponential", "epsilon": 0.5}
        ]
    })
}

/// Every preset, in the order `pld presets` lists them.
pub const PRESETS: [Preset; 7] = [
    Preset {
        name: "laplace-fixed-batch",
        description: "lecture Scenario 1: Laplace DP-SGD, fixed batches 256 of 60,000, 1000 steps",
        source: "Yıldırım, \"Differential Privacy\" (2024), DP-SGD Scenario 1: ε-DP by \
                 amplification (BBG18) and basic composition; n = 60,000, m = 256, T = 1000, \
                 B1 = 1, target ε = 1 give σ = B1/(m ln[1 + (e^(ε/T) − 1) n/m]) = 0.018543 \
                 (replace neighbouring)",
        delta: 1e-5,
        json: scenario_1,
    },
    Preset {
        name: "full-batch-gaussian",
        description:
            "lecture Scenario 2: full-batch Gaussian gradient descent, 100 steps, n = 60,000",
        source: "Yıldırım, \"Differential Privacy\" (2024), DP-SGD Scenario 2: ρ from \
                 ε = ρ + 2 sqrt(ρ ln(1/δ)) at (ε, δ) = (1, 1e-5), ρ/T = B2²/(n²σ²); n = 60,000, \
                 T = 100, B2 = 1 give σ = B2 sqrt(T/ρ)/n = 1.1551e-3 (replace neighbouring)",
        delta: 1e-5,
        json: scenario_2,
    },
    Preset {
        name: "poisson-dp-sgd",
        description: "lecture Scenario 3: Poisson DP-SGD, noise multiplier 1, q = 0.01, 1000 steps",
        source: "Yıldırım, \"Differential Privacy\" (2024), DP-SGD Scenario 3 (add/remove, \
                 Poisson subsampling, accounted there by RDP); σ = 1, q = 0.01, T = 1000 \
                 (the README's example)",
        delta: 1e-5,
        json: scenario_3,
    },
    Preset {
        name: "mnist-dp-sgd",
        description:
            "DP-SGD on 60,000 examples (MNIST): σ = 1.1, batch 256, 60 epochs = 14,063 steps",
        source: "Abadi et al. 2016 / TensorFlow Privacy's MNIST tutorial: N = 60,000, \
                 Poisson rate q = 256/60,000, σ = 1.1, steps = ⌈60 N/B⌉ = 14,063, δ = 1e-5",
        delta: 1e-5,
        json: mnist,
    },
    Preset {
        name: "mnist-balls-in-bins",
        description: "mnist-dp-sgd with balls-in-bins batches: 235 per epoch, 60 epochs",
        source: "mnist-dp-sgd's run (σ = 1.1, batch 256 of N = 60,000, 60 epochs, δ = 1e-5) \
                 with every record in one of t = ⌈N/B⌉ = 235 batches per epoch, uniformly \
                 at random (random allocation, Feldman & Shenfeld 2025; balls-in-bins \
                 sampling, Chua et al. 2025)",
        delta: 1e-5,
        json: mnist_balls_in_bins,
    },
    Preset {
        name: "mnist-shuffle",
        description: "mnist-dp-sgd with shuffled batches: 235 per epoch, 60 epochs (wide)",
        source: "mnist-dp-sgd's run (σ = 1.1, batch 256 of N = 60,000, 60 epochs, δ = 1e-5) \
                 with the data shuffled and cut into t = ⌈N/B⌉ = 235 batches every epoch, \
                 what most data loaders do. No bound with amplification is known: the \
                 bracket is wide by nature (Chua et al., ICML 2024)",
        delta: 1e-5,
        json: mnist_shuffle,
    },
    Preset {
        name: "mixed-release",
        description: "smooth-sensitivity median + 100 DP-SGD steps + exponential selection (wide)",
        source: "the data-dependent lecture's Laplace-log-normal median (σ = 0.6, s = t = 0.2: \
                 ½(t/σ + e^{3σ²/2}s)²-zCDP, Bun & Steinke 2019), 100 Poisson DP-SGD steps \
                 (σ = 1, q = 0.01) and one exponential-mechanism selection at ε = 0.5 \
                 (ε-bounded range), δ = 1e-6. The median is known only by its guarantee, so \
                 the lower bound cannot see it: the bracket is wide by nature",
        delta: 1e-6,
        json: mixed_release,
    },
];

/// The preset called `name`.
///
/// # Errors
/// [`Error::InvalidParameter`] naming `preset` and listing the known names.
pub fn find(name: &str) -> Result<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        Error::invalid(
            "preset",
            name,
            &format!("one of {} (see `pld presets`)", names.join(", ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_a_valid_specification() {
        for preset in &PRESETS {
            let spec = preset
                .spec()
                .unwrap_or_else(|e| panic!("{}: {e}", preset.name));
            assert!(!spec.events.is_empty(), "{}", preset.name);
            assert!(preset.delta > 0.0 && preset.delta < 1.0, "{}", preset.name);
            // `pld presets` prints `name  description` within 100 columns.
            let width = 21 + preset.description.chars().count();
            assert!(width <= 100, "{}: {width} columns", preset.name);
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        for preset in &PRESETS {
            assert_eq!(find(preset.name).expect("found").name, preset.name);
            assert_eq!(
                PRESETS.iter().filter(|p| p.name == preset.name).count(),
                1,
                "{} twice",
                preset.name
            );
        }
        let error = find("nope").unwrap_err().to_string();
        assert!(
            error.contains("preset") && error.contains("nope"),
            "{error}"
        );
    }

    #[test]
    fn lecture_calibrations_reproduce_their_targets() {
        // Scenario 1: T·ln[1 + (m/n)(e^{B1/(mσ)} − 1)] = ε = 1.
        let sigma = scenario_1_scale();
        let gamma = 256.0 / DATASET_SIZE as f64;
        let epsilon = 1000.0 * (gamma * (1.0 / (256.0 * sigma)).exp_m1()).ln_1p();
        assert!((epsilon - 1.0).abs() < 1e-12, "scenario 1 ε = {epsilon}");
        // Scenario 2: T·B2²/(n²σ²) = ρ, and ρ + 2 sqrt(ρ ln(1/δ)) = ε = 1.
        let sigma = scenario_2_sigma();
        let rho = 100.0 / (DATASET_SIZE as f64 * sigma).powi(2);
        let epsilon = rho + 2.0 * (rho * (1e5_f64).ln()).sqrt();
        assert!((epsilon - 1.0).abs() < 1e-12, "scenario 2 ε = {epsilon}");
        // mnist-dp-sgd: ⌈60 · 60000 / 256⌉ steps; ⌈60000 / 256⌉ batches per epoch.
        assert_eq!(MNIST_STEPS, (60.0_f64 * 60_000.0 / 256.0).ceil() as u64);
        assert_eq!(MNIST_BATCHES_PER_EPOCH, DATASET_SIZE.div_ceil(256));
    }
}
