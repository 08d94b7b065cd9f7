//! The DP-SGD flags in Opacus' words, turned into σ, q and a number of steps.
//!
//! ```text
//! σ     = --sigma,  or  --noise-multiplier × --sensitivity (the clipping norm)
//! q     = --sampling-rate,  or  --batch-size / --dataset-size      (Poisson, default 1)
//! steps = --steps,  or  ⌈--epochs / q⌉ = ⌈epochs · N / B⌉          (required)
//! ```
//!
//! `--sampling` says how the batches are drawn:
//! - `poisson` (default): q as above, `steps` Poisson-subsampled Gaussians (add/remove).
//! - `fixed-batch`: B of N without replacement every step (needs --batch-size and
//!   --dataset-size; replace-one neighbours, the relation under which the batch size is
//!   public).
//! - `balls-in-bins`: every epoch each record goes to one of t = ⌈N/B⌉ batches (or t = 1/q,
//!   which must then be a whole number) chosen uniformly at random: random allocation,
//!   counted in whole epochs (`⌈epochs⌉`, or `⌈steps / t⌉`): a partial epoch releases part
//!   of a whole one's outputs, so counting it whole never under-counts.
//! - `truncated-poisson`: Poisson sampling at q over N = --dataset-size records, each batch
//!   cut to at most --max-batch-size (add/remove).
//! - `shuffle`: every epoch the data are shuffled and cut into t = ⌈N/B⌉ batches (or t = 1/q):
//!   each record in one batch per epoch, at a place that depends on the others. Counted in
//!   whole epochs like balls-in-bins; add/remove read as zero-out (the record replaced by
//!   one contributing nothing, batch sizes fixed). The answer is a wide bracket by nature:
//!   no bound with amplification is known.
//!
//! q = B/N is Opacus' Poisson sampling with expected batch size B. Epochs become
//! `⌈epochs / q⌉` steps, TensorFlow Privacy's `compute_dp_sgd_privacy` convention: one epoch is
//! one expected pass over the data, and rounding up never under-counts. (Opacus runs
//! `⌈N/B⌉` steps per epoch at rate `1/⌈N/B⌉`; the two agree when B divides N. For Opacus'
//! exact numbers otherwise, give `--sampling-rate` and `--steps`.)

use crate::args::{BatchSampling, SpecArgs};
use pld_accountant::spec::{steps_from_epochs, MAX_COUNT};
use pld_accountant::{CompositionSpec, Error, MechanismSpec, Sampling};

/// How the run's batches are drawn, with what that scheme needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scheme {
    /// Poisson sampling at `DpSgd::sampling_rate`, `DpSgd::steps` steps.
    Poisson,
    /// `batch_size` of `dataset_size` records without replacement, `DpSgd::steps` steps.
    FixedBatch { batch_size: u64, dataset_size: u64 },
    /// Random allocation to one of `steps_per_epoch` steps, `epochs` times.
    BallsInBins { steps_per_epoch: u64, epochs: u64 },
    /// Shuffled into `steps_per_epoch` batches, `epochs` times.
    Shuffle { steps_per_epoch: u64, epochs: u64 },
    /// Poisson sampling at `DpSgd::sampling_rate` over `dataset_size` records, batches cut
    /// to `max_batch_size`; `DpSgd::steps` steps.
    TruncatedPoisson {
        max_batch_size: u64,
        dataset_size: u64,
    },
}

impl Scheme {
    /// The `--sampling` value it came from.
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::Poisson => "poisson",
            Scheme::FixedBatch { .. } => "fixed-batch",
            Scheme::BallsInBins { .. } => "balls-in-bins",
            Scheme::Shuffle { .. } => "shuffle",
            Scheme::TruncatedPoisson { .. } => "truncated-poisson",
        }
    }
}

/// A DP-SGD run described by flags, and how each number was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgd {
    /// Noise standard deviation.
    pub sigma: f64,
    /// Clipping norm.
    pub sensitivity: f64,
    /// Sampling rate: Poisson's q, B/N for a fixed batch, 1/t for balls-in-bins.
    pub sampling_rate: f64,
    /// Number of steps (balls-in-bins: epochs × steps per epoch).
    pub steps: u64,
    /// How batches are drawn.
    pub scheme: Scheme,
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
        let chosen = args.sampling.unwrap_or(BatchSampling::Poisson);
        if args.max_batch_size.is_some() && chosen != BatchSampling::TruncatedPoisson {
            return Err(Error::Incompatible {
                field: "--max-batch-size".into(),
                reason: "--max-batch-size is the cap of --sampling truncated-poisson".into(),
            });
        }
        let (sampling_rate, rate_text, steps, steps_text, scheme) = match chosen {
            BatchSampling::Poisson => {
                let (rate, rate_text) = sampling_rate(args)?;
                let (steps, steps_text) = steps(args, rate)?;
                (rate, rate_text, steps, steps_text, Scheme::Poisson)
            }
            BatchSampling::FixedBatch => {
                let (batch_size, dataset_size) = batch_and_dataset(args, "fixed-batch")?;
                let (rate, _) = sampling_rate(args)?;
                let (steps, steps_text) = steps(args, rate)?;
                (
                    rate,
                    format!("fixed batches of {batch_size} out of {dataset_size}"),
                    steps,
                    steps_text,
                    Scheme::FixedBatch {
                        batch_size,
                        dataset_size,
                    },
                )
            }
            BatchSampling::BallsInBins => epochs_of_batches(args, BatchSampling::BallsInBins)?,
            BatchSampling::Shuffle => epochs_of_batches(args, BatchSampling::Shuffle)?,
            BatchSampling::TruncatedPoisson => {
                let Some(max_batch_size) = args.max_batch_size else {
                    return Err(Error::MissingParameter {
                        name: "--max-batch-size".into(),
                        hint: "--sampling truncated-poisson cuts every batch to at most \
                               --max-batch-size records"
                            .into(),
                    });
                };
                let Some(dataset_size) = args.dataset_size else {
                    return Err(Error::MissingParameter {
                        name: "--dataset-size".into(),
                        hint: "--sampling truncated-poisson needs the number of records N \
                               (with --batch-size for q = B/N, or with --sampling-rate)"
                            .into(),
                    });
                };
                let (rate, rate_text) = match (args.sampling_rate, args.batch_size) {
                    (Some(q), None) => {
                        if !(q.is_finite() && q > 0.0 && q <= 1.0) {
                            return Err(Error::invalid("--sampling-rate", q, "a number in (0, 1]"));
                        }
                        (q, format!("sampling rate {q}"))
                    }
                    _ => sampling_rate(args)?,
                };
                let (steps, steps_text) = steps(args, rate)?;
                (
                    rate,
                    format!("{rate_text}, batches cut to {max_batch_size} of {dataset_size}"),
                    steps,
                    steps_text,
                    Scheme::TruncatedPoisson {
                        max_batch_size,
                        dataset_size,
                    },
                )
            }
        };
        let noise_text = match noise_multiplier {
            Some(z) => format!("noise multiplier {z} (σ = {sigma})"),
            None => format!("σ = {sigma}"),
        };
        Ok(Some(DpSgd {
            sigma,
            sensitivity,
            sampling_rate,
            steps,
            scheme,
            summary: format!(
                "DP-SGD, {noise_text}, clipping norm {sensitivity}, {rate_text}, {steps_text}"
            ),
        }))
    }

    /// The specification: `steps` Poisson-subsampled Gaussians (add/remove), `steps` fixed
    /// batches (replace-one), or `epochs` epochs of random allocation (add/remove).
    ///
    /// # Errors
    /// The specification's validation errors, renamed to the flags.
    pub fn spec(&self, args: &SpecArgs) -> Result<CompositionSpec, Error> {
        let gaussian = || MechanismSpec::gaussian(self.sigma)?.with_sensitivity(self.sensitivity);
        let built = match self.scheme {
            Scheme::Poisson => CompositionSpec::dp_sgd(
                self.sigma,
                self.sampling_rate,
                self.steps,
                self.sensitivity,
            ),
            Scheme::FixedBatch {
                batch_size,
                dataset_size,
            } => gaussian().and_then(|g| {
                CompositionSpec::replace()
                    .event(
                        g.fixed_batch(batch_size, dataset_size)?
                            .repeat(self.steps)?,
                    )
                    .build()
            }),
            Scheme::TruncatedPoisson {
                max_batch_size,
                dataset_size,
            } => gaussian().and_then(|g| {
                CompositionSpec::add_remove()
                    .event(
                        g.once()
                            .with_sampling(Sampling::truncated_poisson(
                                self.sampling_rate,
                                max_batch_size,
                                dataset_size,
                            )?)?
                            .repeat(self.steps)?,
                    )
                    .build()
            }),
            Scheme::BallsInBins {
                steps_per_epoch,
                epochs,
            } => gaussian().and_then(|g| {
                CompositionSpec::add_remove()
                    .event(
                        g.once()
                            .with_sampling(Sampling::random_allocation(steps_per_epoch, 1)?)?
                            .repeat(epochs)?,
                    )
                    .build()
            }),
            Scheme::Shuffle {
                steps_per_epoch,
                epochs,
            } => gaussian().and_then(|g| {
                CompositionSpec::add_remove()
                    .event(g.shuffle(steps_per_epoch)?.repeat(epochs)?)
                    .build()
            }),
        };
        built.map_err(|e| match e {
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

/// B and N, both required by `--sampling NAME`.
fn batch_and_dataset(args: &SpecArgs, name: &str) -> Result<(u64, u64), Error> {
    match (args.batch_size, args.dataset_size) {
        (Some(batch), Some(dataset)) => {
            if args.sampling_rate.is_some() {
                return Err(Error::Incompatible {
                    field: "--sampling-rate".into(),
                    reason: format!(
                        "--sampling {name} draws batches of --batch-size out of \
                         --dataset-size records: give those, not a rate"
                    ),
                });
            }
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
            Ok((batch, dataset))
        }
        (None, _) => Err(Error::MissingParameter {
            name: "--batch-size".into(),
            hint: format!("--sampling {name} needs --batch-size and --dataset-size"),
        }),
        (_, None) => Err(Error::MissingParameter {
            name: "--dataset-size".into(),
            hint: format!("--sampling {name} needs --batch-size and --dataset-size"),
        }),
    }
}

/// Balls-in-bins or shuffling: t batches per epoch (⌈N/B⌉, or 1/q when that is a whole
/// number), and the number of epochs (`⌈--epochs⌉`, or `⌈--steps / t⌉`).
fn epochs_of_batches(
    args: &SpecArgs,
    sampling: BatchSampling,
) -> Result<(f64, String, u64, String, Scheme), Error> {
    let name = if sampling == BatchSampling::Shuffle {
        "shuffle"
    } else {
        "balls-in-bins"
    };
    let (t, t_text) = match (args.sampling_rate, args.batch_size, args.dataset_size) {
        (Some(q), None, None) => {
            if !(q.is_finite() && q > 0.0 && q <= 1.0) {
                return Err(Error::invalid("--sampling-rate", q, "a number in (0, 1]"));
            }
            let t = (1.0 / q).round();
            if (t * q - 1.0).abs() > 1e-9 {
                return Err(Error::invalid(
                    "--sampling-rate",
                    q,
                    &format!(
                        "1/t for a whole number t of batches per epoch with --sampling \
                         {name} (or give --batch-size and --dataset-size)"
                    ),
                ));
            }
            (t as u64, format!("{t} batches per epoch (= 1/q)"))
        }
        _ => {
            let (batch, dataset) = batch_and_dataset(args, name)?;
            let t = dataset.div_ceil(batch);
            (
                t,
                format!("{t} batches per epoch (= ⌈{dataset}/{batch}⌉, each record in one)"),
            )
        }
    };
    let (epochs, epochs_text) = match (args.steps, args.epochs) {
        (Some(_), Some(_)) => {
            return Err(Error::Incompatible {
                field: "--epochs".into(),
                reason: "give either --steps or --epochs, not both".into(),
            })
        }
        (None, None) => {
            return Err(Error::MissingParameter {
                name: "--epochs".into(),
                hint: "DP-SGD flags need the length of the run: give --epochs E (passes \
                       over the data) or --steps N"
                    .into(),
            })
        }
        (Some(steps), None) => {
            if steps == 0 {
                return Err(Error::invalid("--steps", steps, "an integer ≥ 1"));
            }
            let epochs = steps.div_ceil(t);
            let text = if epochs * t == steps {
                format!("{epochs} epochs ({steps} steps)")
            } else {
                format!("{epochs} epochs ({steps} steps, the last epoch counted whole)")
            };
            (epochs, text)
        }
        (None, Some(e)) => {
            if !(e.is_finite() && e > 0.0 && e <= MAX_COUNT as f64) {
                return Err(Error::invalid(
                    "--epochs",
                    e,
                    &format!("a number in (0, {MAX_COUNT}]"),
                ));
            }
            let epochs = e.ceil() as u64;
            let text = if epochs as f64 == e {
                format!("{epochs} epochs")
            } else {
                format!("{epochs} epochs (⌈{e}⌉, a partial epoch counted whole)")
            };
            (epochs, text)
        }
    };
    let steps = epochs.saturating_mul(t);
    let (text, scheme) = if sampling == BatchSampling::Shuffle {
        (
            format!("shuffled batches, {t_text}"),
            Scheme::Shuffle {
                steps_per_epoch: t,
                epochs,
            },
        )
    } else {
        (
            format!("balls-in-bins batches, {t_text}"),
            Scheme::BallsInBins {
                steps_per_epoch: t,
                epochs,
            },
        )
    };
    Ok((1.0 / t as f64, text, steps, epochs_text, scheme))
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
