//! The DP-SGD flags in Opacus' words, turned into σ, q and a number of steps.
//!
//! ```text
//! σ     = --sigma,  or  --noise-multiplier × --sensitivity (the clipping norm)
//! q     = --sampling-rate,  or  --batch-size / --dataset-size      (Poisson, default 1)
//! steps = --steps,  or  ⌈--epochs / q⌉ = ⌈epochs · N / B⌉          (required)
//! ```
//!
//! q = B/N is Opacus' Poisson sampling with expected batch size B. Epochs become
//! `⌈epochs / q⌉` steps, TensorFlow Privacy's `compute_dp_sgd_privacy` convention: one epoch is
//! one expected pass over the data, and rounding up never under-counts. (Opacus runs
//! `⌈N/B⌉` steps per epoch at rate `1/⌈N/B⌉`; the two agree when B divides N. For Opacus'
//! exact numbers otherwise, give `--sampling-rate` and `--steps`.)

use crate::args::SpecArgs;
use pld_accountant::spec::{steps_from_epochs, MAX_COUNT};
use pld_accountant::{CompositionSpec, Error};

/// A DP-SGD run described by flags, and how each number was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgd {
    /// Noise standard deviation.
    pub sigma: f64,
    /// Clipping norm.
    pub sensitivity: f64,
    /// Poisson sampling rate.
    pub sampling_rate: f64,
    /// Number of steps.
    pub steps: u64,
    /// One line for `--verbose` and table titles.
    pub summary: String,
}

impl DpSgd {
    /// The flags' DP-SGD run, or `None` when neither `--sigma` nor `--noise-multiplier` is
    /// given.
    ///
    /// # Errors
    /// [`Error`] naming the flag: conflicting flags, values out of range.
    pub fn from_args(args: &SpecArgs) -> Result<Option<DpSgd>, Error> {
        if args.sigma.is_none() && args.noise_multiplier.is_none() {
            return Ok(None);
        }
        let sensitivity = args.sensitivity.unwrap_or(1.0);
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(Error::invalid(
                "--sensitivity",
                sensitivity,
                "a finite number > 0",
            ));
        }
        let (sigma, noise_multiplier) = match (args.sigma, args.noise_multiplier) {
            (Some(_), Some(_)) => {
                return Err(Error::Incompatible {
                    field: "--noise-multiplier".into(),
                    reason: "give either --sigma (the noise standard deviation) or \
                             --noise-multiplier (σ divided by the clipping norm), not both"
                        .into(),
                })
            }
            (Some(sigma), None) => {
                // Checked before the run's length, so that a bad σ is named first.
                if !(sigma.is_finite() && sigma > 0.0) {
                    return Err(Error::invalid("--sigma", sigma, "a finite number > 0"));
                }
                (sigma, None)
            }
            (None, z) => {
                let z = z.unwrap_or(f64::NAN);
                if !(z.is_finite() && z > 0.0) {
                    return Err(Error::invalid(
                        "--noise-multiplier",
                        z,
                        "a finite number > 0",
                    ));
                }
                (z * sensitivity, Some(z))
            }
        };
        let (sampling_rate, rate_text) = sampling_rate(args)?;
        let (steps, steps_text) = steps(args, sampling_rate)?;
        let noise_text = match noise_multiplier {
            Some(z) => format!("noise multiplier {z} (σ = {sigma})"),
            None => format!("σ = {sigma}"),
        };
        Ok(Some(DpSgd {
            sigma,
            sensitivity,
            sampling_rate,
            steps,
            summary: format!(
                "DP-SGD, {noise_text}, clipping norm {sensitivity}, {rate_text}, {steps_text}"
            ),
        }))
    }

    /// The specification: `steps` Poisson-subsampled Gaussians, add/remove neighbouring.
    ///
    /// # Errors
    /// The specification's validation errors, renamed to the flags.
    pub fn spec(&self, args: &SpecArgs) -> Result<CompositionSpec, Error> {
        CompositionSpec::dp_sgd(self.sigma, self.sampling_rate, self.steps, self.sensitivity)
            .map_err(|e| match e {
                Error::InvalidParameter {
                    name,
                    value,
                    requirement,
                } => Error::InvalidParameter {
                    name: flag_name(&name, args),
                    value,
                    requirement,
                },
                other => other,
            })
    }
}

/// The flag a parameter of [`CompositionSpec::dp_sgd`] came from.
fn flag_name(parameter: &str, args: &SpecArgs) -> String {
    match parameter {
        "sigma" if args.sigma.is_some() => "--sigma".into(),
        "sigma" => "--noise-multiplier × --sensitivity".into(),
        "sampling_rate" if args.sampling_rate.is_some() => "--sampling-rate".into(),
        "sampling_rate" => "--batch-size / --dataset-size".into(),
        "steps" if args.epochs.is_some() => "--epochs (steps)".into(),
        "steps" => "--steps".into(),
        "sensitivity" => "--sensitivity".into(),
        other => other.into(),
    }
}

/// q from `--sampling-rate` or `--batch-size / --dataset-size` (default 1), and how.
fn sampling_rate(args: &SpecArgs) -> Result<(f64, String), Error> {
    match (args.sampling_rate, args.batch_size, args.dataset_size) {
        (Some(_), Some(_), _) | (Some(_), None, Some(_)) => Err(Error::Incompatible {
            field: if args.batch_size.is_some() {
                "--batch-size".into()
            } else {
                "--dataset-size".into()
            },
            reason: "give either --sampling-rate or --batch-size with --dataset-size \
                     (q = B/N), not both"
                .into(),
        }),
        (Some(q), None, None) => {
            if q.is_finite() && q > 0.0 && q <= 1.0 {
                Ok((q, format!("sampling rate {q}")))
            } else {
                Err(Error::invalid("--sampling-rate", q, "a number in (0, 1]"))
            }
        }
        (None, Some(_), None) => Err(Error::MissingParameter {
            name: "--dataset-size".into(),
            hint: "--batch-size needs --dataset-size (the sampling rate is q = B/N)".into(),
        }),
        (None, None, Some(_)) => Err(Error::MissingParameter {
            name: "--batch-size".into(),
            hint: "--dataset-size needs --batch-size (the sampling rate is q = B/N)".into(),
        }),
        (None, Some(batch), Some(dataset)) => {
            if dataset == 0 {
                return Err(Error::invalid("--dataset-size", dataset, "an integer ≥ 1"));
            }
            if batch == 0 || batch > dataset {
                return Err(Error::invalid(
                    "--batch-size",
                    batch,
                    &format!("an integer in [1, --dataset-size = {dataset}]"),
                ));
            }
            let q = batch as f64 / dataset as f64;
            Ok((q, format!("sampling rate {q:.6} (= {batch}/{dataset})")))
        }
        (None, None, None) => Ok((1.0, "full batch (q = 1)".into())),
    }
}

/// The number of steps from `--steps` or `--epochs` (one of them is required), and how.
fn steps(args: &SpecArgs, sampling_rate: f64) -> Result<(u64, String), Error> {
    match (args.steps, args.epochs) {
        (Some(_), Some(_)) => Err(Error::Incompatible {
            field: "--epochs".into(),
            reason: "give either --steps or --epochs (steps = ⌈epochs / q⌉), not both".into(),
        }),
        (Some(steps), None) => Ok((steps, format!("{steps} steps"))),
        // No silent default: a run's length changes ε more than anything else.
        (None, None) => Err(Error::MissingParameter {
            name: "--steps".into(),
            hint: "DP-SGD flags need the length of the run: give --steps N (noisy steps) or \
                   --epochs E (passes over the data)"
                .into(),
        }),
        (None, Some(epochs)) => {
            if !(epochs.is_finite() && epochs > 0.0) {
                return Err(Error::invalid("--epochs", epochs, "a finite number > 0"));
            }
            // With B and N given, epochs·N/B is computed from the integers (q = B/N rounded
            // would turn 60 epochs of 256 out of 60,000 into 14062.500000000002).
            let exact = match (args.batch_size, args.dataset_size) {
                (Some(batch), Some(dataset)) => epochs * dataset as f64 / batch as f64,
                _ => epochs / sampling_rate,
            };
            let steps = steps_from_epochs(exact).ok_or_else(|| {
                Error::invalid(
                    "--epochs",
                    epochs,
                    &format!("at most {MAX_COUNT} steps (epochs / q = {exact:e})"),
                )
            })?;
            Ok((steps, format!("{steps} steps (⌈{epochs} epochs / q⌉)")))
        }
    }
}
