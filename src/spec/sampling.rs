//! Sampling schemes: how the records that take part in a run are chosen.

use super::*;

/// The sampling schemes, with validated parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SamplingKind {
    /// Every record, every time.
    None,
    /// Each record independently with this probability (0 < q ≤ 1).
    Poisson(f64),
    /// A uniformly random batch of `batch_size` out of `dataset_size` records.
    FixedBatch { batch_size: u64, dataset_size: u64 },
    /// Each record in exactly `participations` of every `steps_per_epoch` steps, chosen
    /// uniformly at random; the event's count is the number of epochs.
    RandomAllocation {
        steps_per_epoch: u64,
        participations: u64,
    },
    /// Poisson sampling at rate `rate` over `dataset_size` records, the batch cut to
    /// `max_batch_size` records (a uniformly random subset) when it is larger.
    TruncatedPoisson {
        rate: f64,
        max_batch_size: u64,
        dataset_size: u64,
    },
    /// Every epoch the records are shuffled and cut into `steps_per_epoch` batches; the
    /// event's count is the number of epochs.
    Shuffle { steps_per_epoch: u64 },
}

/// Most steps per epoch of random allocation.
pub const MAX_STEPS_PER_EPOCH: u64 = 1_000_000_000_000;

/// Largest dataset of truncated Poisson sampling (its binomial tails are summed term by term).
pub const MAX_DATASET_SIZE: u64 = 1_000_000_000_000;

/// How the records entering an event are chosen: every record ([`Sampling::none`], the
/// default), Poisson sampling ([`Sampling::poisson`], add/remove neighbouring), a uniformly
/// random fixed batch drawn without replacement ([`Sampling::fixed_batch`], replace
/// neighbouring, additive noise only), random allocation ([`Sampling::random_allocation`],
/// balls-in-bins batching: add/remove neighbouring, Gaussian noise, the event's count is the
/// number of epochs) or truncated Poisson sampling ([`Sampling::truncated_poisson`]: Poisson
/// sampling whose batch is cut to a maximum size; add/remove neighbouring, Gaussian noise)
/// or shuffling ([`Sampling::shuffle`]: each epoch the data are shuffled and cut into t
/// batches; Gaussian noise, either relation, the count is the number of epochs).
///
/// serde writes it as the event's `sampling` value: `{"poisson": q}`,
/// `{"fixed_batch": {"batch_size": m, "dataset_size": n}}`,
/// `{"random_allocation": {"steps_per_epoch": t, "participations": k}}` or
/// `{"truncated_poisson": {"rate": q, "max_batch_size": B, "dataset_size": n}}` or
/// `{"shuffle": {"steps_per_epoch": t}}`, and no sampling as `null` (an event leaves the key
/// out instead).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub(crate) kind: SamplingKind,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling::none()
    }
}

impl Sampling {
    /// Every record, every time.
    pub fn none() -> Self {
        Sampling {
            kind: SamplingKind::None,
        }
    }

    /// Each record independently with probability `rate`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sampling.poisson` unless 0 < rate ≤ 1.
    pub fn poisson(rate: f64) -> Result<Self> {
        if rate > 0.0 && rate <= 1.0 {
            Ok(Sampling {
                kind: SamplingKind::Poisson(rate),
            })
        } else {
            Err(invalid_number("sampling.poisson", rate, RATE_REQUIREMENT))
        }
    }

    /// A uniformly random batch of `batch_size` out of `dataset_size` records (without
    /// replacement).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sampling.fixed_batch.batch_size` or
    /// `.dataset_size` when 0; [`Error::Incompatible`] when the batch exceeds the dataset.
    pub fn fixed_batch(batch_size: u64, dataset_size: u64) -> Result<Self> {
        let m = check_whole("sampling.fixed_batch.batch_size", batch_size, 1, u64::MAX)?;
        let n = check_whole(
            "sampling.fixed_batch.dataset_size",
            dataset_size,
            1,
            u64::MAX,
        )?;
        if m > n {
            return Err(Error::Incompatible {
                field: "sampling.fixed_batch".into(),
                reason: format!("batch_size {m} exceeds dataset_size {n}"),
            });
        }
        Ok(Sampling {
            kind: SamplingKind::FixedBatch {
                batch_size: m,
                dataset_size: n,
            },
        })
    }

    /// Random allocation: in every epoch of `steps_per_epoch` steps, each record takes part
    /// in exactly `participations` of them, chosen uniformly at random (Feldman & Shenfeld,
    /// "Privacy amplification by random allocation", 2025). `participations = 1` is
    /// balls-in-bins batching: every record lands in one batch of the epoch. An event with
    /// this sampling counts epochs, not steps.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sampling.random_allocation.steps_per_epoch` unless
    /// 1 ≤ t ≤ [`MAX_STEPS_PER_EPOCH`], or `.participations` unless 1 ≤ k ≤ t.
    pub fn random_allocation(steps_per_epoch: u64, participations: u64) -> Result<Self> {
        let t = check_whole(
            "sampling.random_allocation.steps_per_epoch",
            steps_per_epoch,
            1,
            MAX_STEPS_PER_EPOCH,
        )?;
        let k = check_whole(
            "sampling.random_allocation.participations",
            participations,
            1,
            t,
        )?;
        Ok(Sampling {
            kind: SamplingKind::RandomAllocation {
                steps_per_epoch: t,
                participations: k,
            },
        })
    }

    /// Truncated Poisson sampling: each of the `dataset_size` records is drawn independently
    /// with probability `rate`, and a batch of more than `max_batch_size` records is cut to a
    /// uniformly random subset of `max_batch_size` of them (dp_accounting's
    /// `TruncatedSubsampledGaussianDpEvent`; Ganesh, "Tighter privacy analysis for truncated
    /// Poisson sampling", arXiv:2508.15089, 2025). The accounting covers both neighbours of a
    /// dataset of n records: one record fewer (n − 1) and one more (n + 1).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sampling.truncated_poisson.rate` unless
    /// 0 < rate ≤ 1, `.max_batch_size` unless ≥ 1, or `.dataset_size` unless
    /// 1 ≤ n ≤ [`MAX_DATASET_SIZE`].
    pub fn truncated_poisson(rate: f64, max_batch_size: u64, dataset_size: u64) -> Result<Self> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(invalid_number(
                "sampling.truncated_poisson.rate",
                rate,
                RATE_REQUIREMENT,
            ));
        }
        let max_batch_size = check_whole(
            "sampling.truncated_poisson.max_batch_size",
            max_batch_size,
            1,
            u64::MAX,
        )?;
        let dataset_size = check_whole(
            "sampling.truncated_poisson.dataset_size",
            dataset_size,
            1,
            MAX_DATASET_SIZE,
        )?;
        Ok(Sampling {
            kind: SamplingKind::TruncatedPoisson {
                rate,
                max_batch_size,
                dataset_size,
            },
        })
    }

    /// Shuffling: every epoch the records are shuffled and cut into `steps_per_epoch`
    /// batches, so each record is in exactly one step of the epoch, at a position that
    /// depends on every other record's. An event with this sampling counts epochs.
    ///
    /// No bound with amplification is proven for shuffling: the accountant brackets it
    /// between the epoch without amplification (upper) and a lower bound from two
    /// neighbouring datasets whose outputs it computes exactly (Chua et al., "How private
    /// are DP-SGD implementations?", ICML 2024). Under `add_remove` neighbouring the removed
    /// record is replaced by one that contributes nothing (batch sizes stay fixed: the
    /// "zero-out" relation those authors use).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sampling.shuffle.steps_per_epoch` unless
    /// 1 ≤ t ≤ [`MAX_STEPS_PER_EPOCH`].
    pub fn shuffle(steps_per_epoch: u64) -> Result<Self> {
        let t = check_whole(
            "sampling.shuffle.steps_per_epoch",
            steps_per_epoch,
            1,
            MAX_STEPS_PER_EPOCH,
        )?;
        Ok(Sampling {
            kind: SamplingKind::Shuffle { steps_per_epoch: t },
        })
    }

    /// `"none"`, `"poisson"`, `"fixed_batch"`, `"random_allocation"`,
    /// `"truncated_poisson"` or `"shuffle"`.
    pub fn name(&self) -> &'static str {
        match self.kind {
            SamplingKind::None => "none",
            SamplingKind::Poisson(_) => "poisson",
            SamplingKind::FixedBatch { .. } => "fixed_batch",
            SamplingKind::RandomAllocation { .. } => "random_allocation",
            SamplingKind::TruncatedPoisson { .. } => "truncated_poisson",
            SamplingKind::Shuffle { .. } => "shuffle",
        }
    }

    /// `(rate, max_batch_size, dataset_size)` of truncated Poisson sampling.
    pub fn truncated_poisson_parameters(&self) -> Option<(f64, u64, u64)> {
        match self.kind {
            SamplingKind::TruncatedPoisson {
                rate,
                max_batch_size,
                dataset_size,
            } => Some((rate, max_batch_size, dataset_size)),
            _ => None,
        }
    }

    /// `(steps_per_epoch, participations)` of random allocation.
    pub fn random_allocation_steps(&self) -> Option<(u64, u64)> {
        match self.kind {
            SamplingKind::RandomAllocation {
                steps_per_epoch,
                participations,
            } => Some((steps_per_epoch, participations)),
            _ => None,
        }
    }

    /// Steps per epoch of shuffling.
    pub fn shuffle_steps(&self) -> Option<u64> {
        match self.kind {
            SamplingKind::Shuffle { steps_per_epoch } => Some(steps_per_epoch),
            _ => None,
        }
    }

    /// Steps per epoch when the event's count is a number of epochs (random allocation,
    /// shuffling).
    pub fn steps_per_epoch(&self) -> Option<u64> {
        match self.kind {
            SamplingKind::RandomAllocation {
                steps_per_epoch, ..
            }
            | SamplingKind::Shuffle { steps_per_epoch } => Some(steps_per_epoch),
            _ => None,
        }
    }

    /// Whether the event's count is a number of epochs (random allocation, shuffling)
    /// rather than of runs.
    pub fn counts_epochs(&self) -> bool {
        self.steps_per_epoch().is_some()
    }

    /// Whether every record takes part.
    pub fn is_none(&self) -> bool {
        self.kind == SamplingKind::None
    }

    /// The Poisson rate q.
    pub fn poisson_rate(&self) -> Option<f64> {
        match self.kind {
            SamplingKind::Poisson(q) => Some(q),
            _ => None,
        }
    }

    /// `(batch_size, dataset_size)` of a fixed batch.
    pub fn batch(&self) -> Option<(u64, u64)> {
        match self.kind {
            SamplingKind::FixedBatch {
                batch_size,
                dataset_size,
            } => Some((batch_size, dataset_size)),
            _ => None,
        }
    }

    pub(super) fn to_json_value(self) -> Value {
        match self.kind {
            SamplingKind::None => Value::Null,
            SamplingKind::Poisson(q) => serde_json::json!({ "poisson": q }),
            SamplingKind::FixedBatch {
                batch_size,
                dataset_size,
            } => serde_json::json!({
                "fixed_batch": {"batch_size": batch_size, "dataset_size": dataset_size}
            }),
            SamplingKind::RandomAllocation {
                steps_per_epoch,
                participations,
            } => serde_json::json!({
                "random_allocation": {
                    "steps_per_epoch": steps_per_epoch,
                    "participations": participations
                }
            }),
            SamplingKind::TruncatedPoisson {
                rate,
                max_batch_size,
                dataset_size,
            } => serde_json::json!({
                "truncated_poisson": {
                    "rate": rate,
                    "max_batch_size": max_batch_size,
                    "dataset_size": dataset_size
                }
            }),
            SamplingKind::Shuffle { steps_per_epoch } => serde_json::json!({
                "shuffle": { "steps_per_epoch": steps_per_epoch }
            }),
        }
    }
}

/// Refuse sampling schemes that have no proven worst-case pair for the mechanism.
///
/// Poisson sampling applies to additive noise, randomized response and `eps_delta`, whose
/// pairs are symmetric; sampling without replacement to additive noise only; random
/// allocation, truncated Poisson sampling and shuffling to the Gaussian only. A mixture of
/// Gaussians already describes a sampled mechanism, and a pmf_pair should list the sampled
/// mechanism's own pair.
pub(super) fn check_sampling_applies(mechanism: &MechanismSpec, sampling: Sampling) -> Result<()> {
    let name = mechanism.name();
    match sampling.kind {
        SamplingKind::None => Ok(()),
        _ if mechanism.kind.is_guarantee()
            || matches!(
                mechanism.kind,
                MechanismKind::Exponential { .. }
                    | MechanismKind::StudentT { .. }
                    | MechanismKind::Cauchy { .. }
            ) =>
        {
            Err(Error::Incompatible {
                field: "sampling".into(),
                reason: if !mechanism.kind.is_guarantee() {
                    format!(
                        "{name} is accounted unsampled; for a sampled run state its \
                     amplified guarantee as eps_delta"
                    )
                } else {
                    format!(
                        "{name} is known only by its Rényi guarantee, which says nothing about a \
                     sampled run: state the guarantee of the sampled mechanism itself (its \
                     own zcdp or rdp_curve)"
                    )
                },
            })
        }
        SamplingKind::Poisson(_) => match mechanism.kind {
            MechanismKind::MixtureOfGaussians { .. } | MechanismKind::PmfPair { .. } => {
                Err(Error::Incompatible {
                    field: "sampling".into(),
                    reason: format!(
                        "{name} cannot be sampled: {}",
                        if matches!(mechanism.kind, MechanismKind::PmfPair { .. }) {
                            "list the pair of the sampled mechanism itself"
                        } else {
                            "put the sampling into the mixture (e.g. sensitivities [0, 1] \
                             with probabilities [1 − q, q])"
                        }
                    ),
                })
            }
            _ => Ok(()),
        },
        SamplingKind::FixedBatch { .. } if mechanism.is_additive_noise() => Ok(()),
        SamplingKind::FixedBatch { .. } => Err(Error::Incompatible {
            field: "sampling.fixed_batch".into(),
            reason: format!(
                "sampling without replacement is accounted for additive-noise mechanisms \
                 (gaussian, laplace, discrete_laplace, discrete_gaussian), not {name}; \
                 for a generic mechanism state its amplified guarantee as eps_delta"
            ),
        }),
        SamplingKind::RandomAllocation { .. }
            if matches!(mechanism.kind, MechanismKind::Gaussian { .. }) =>
        {
            Ok(())
        }
        SamplingKind::RandomAllocation { .. } => Err(Error::Incompatible {
            field: "sampling.random_allocation".into(),
            reason: format!(
                "random allocation is accounted for the gaussian mechanism only, not {name}"
            ),
        }),
        SamplingKind::TruncatedPoisson { .. }
            if matches!(mechanism.kind, MechanismKind::Gaussian { .. }) =>
        {
            Ok(())
        }
        SamplingKind::TruncatedPoisson { .. } => Err(Error::Incompatible {
            field: "sampling.truncated_poisson".into(),
            reason: format!(
                "truncated Poisson sampling is accounted for the gaussian mechanism only \
                 (the DP-SGD case), not {name}"
            ),
        }),
        SamplingKind::Shuffle { .. }
            if matches!(mechanism.kind, MechanismKind::Gaussian { .. }) =>
        {
            Ok(())
        }
        SamplingKind::Shuffle { .. } => Err(Error::Incompatible {
            field: "sampling.shuffle".into(),
            reason: format!(
                "shuffling is accounted for the gaussian mechanism only (its lower bound is \
                 built from Gaussian outputs), not {name}"
            ),
        }),
    }
}
