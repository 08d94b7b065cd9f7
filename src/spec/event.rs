//! An event: a mechanism, a sampling scheme and a count.

use super::*;

/// One released event: a mechanism, how its input is sampled, and how many times it runs.
///
/// ```
/// use pld_accountant::{Event, MechanismSpec, Sampling};
///
/// let event = MechanismSpec::laplace(2.0)?.fixed_batch(256, 60_000)?.repeat(1000)?;
/// assert_eq!((event.count(), event.sampling().batch()), (1000, Some((256, 60_000))));
/// // Randomized response has no pair under sampling without replacement:
/// let rr = MechanismSpec::randomized_response(1.0, 2)?;
/// assert!(Event::new(rr).with_sampling(Sampling::fixed_batch(1, 2)?).is_err());
/// # Ok::<(), pld_accountant::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub(crate) mechanism: MechanismSpec,
    pub(crate) sampling: Sampling,
    pub(crate) count: u64,
}

impl From<MechanismSpec> for Event {
    fn from(mechanism: MechanismSpec) -> Self {
        Event::new(mechanism)
    }
}

impl Event {
    /// One run of `mechanism` on every record.
    pub fn new(mechanism: MechanismSpec) -> Self {
        Event {
            mechanism,
            sampling: Sampling::none(),
            count: 1,
        }
    }

    /// The same event on inputs chosen by `sampling`.
    ///
    /// # Errors
    /// [`Error::Incompatible`] naming `sampling` when the scheme has no worst-case pair for
    /// the mechanism (Poisson sampling of `mixture_of_gaussians` or `pmf_pair`; fixed batches
    /// of anything but additive noise; random allocation or truncated Poisson sampling of
    /// anything but the Gaussian).
    pub fn with_sampling(mut self, sampling: Sampling) -> Result<Self> {
        check_sampling_applies(&self.mechanism, sampling)?;
        self.sampling = sampling;
        Ok(self)
    }

    /// The same event on a Poisson sample at rate `rate` (add/remove neighbouring).
    ///
    /// # Errors
    /// As [`Sampling::poisson`] and [`Event::with_sampling`].
    pub fn poisson(self, rate: f64) -> Result<Self> {
        self.with_sampling(Sampling::poisson(rate)?)
    }

    /// The same event on a uniformly random batch of `batch_size` out of `dataset_size`
    /// records (replace neighbouring, additive noise).
    ///
    /// # Errors
    /// As [`Sampling::fixed_batch`] and [`Event::with_sampling`].
    pub fn fixed_batch(self, batch_size: u64, dataset_size: u64) -> Result<Self> {
        self.with_sampling(Sampling::fixed_batch(batch_size, dataset_size)?)
    }

    /// The same event on a truncated Poisson sample: rate `rate` over `dataset_size` records,
    /// the batch cut to `max_batch_size` (add/remove neighbouring, Gaussian noise).
    ///
    /// # Errors
    /// As [`Sampling::truncated_poisson`] and [`Event::with_sampling`].
    pub fn truncated_poisson(
        self,
        rate: f64,
        max_batch_size: u64,
        dataset_size: u64,
    ) -> Result<Self> {
        self.with_sampling(Sampling::truncated_poisson(
            rate,
            max_batch_size,
            dataset_size,
        )?)
    }

    /// The same event on shuffled batches: `steps_per_epoch` batches per epoch, the count
    /// then being epochs (Gaussian noise).
    ///
    /// # Errors
    /// As [`Sampling::shuffle`] and [`Event::with_sampling`].
    pub fn shuffle(self, steps_per_epoch: u64) -> Result<Self> {
        self.with_sampling(Sampling::shuffle(steps_per_epoch)?)
    }

    /// The same event run `count` times.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `count` unless 1 ≤ count ≤ [`MAX_COUNT`].
    pub fn repeat(mut self, count: u64) -> Result<Self> {
        self.count = check_count(count)?;
        Ok(self)
    }

    /// The mechanism.
    pub fn mechanism(&self) -> &MechanismSpec {
        &self.mechanism
    }

    /// How its input is sampled.
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// How many times it runs (≥ 1).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Refuse an event that does not fit the relation (names relative to the event).
    pub(super) fn check_relation(&self, neighbouring: Neighbouring) -> Result<()> {
        match (self.sampling.kind, neighbouring) {
            (SamplingKind::Poisson(_), Neighbouring::Replace) => {
                return Err(Error::Incompatible {
                    field: "sampling.poisson".into(),
                    reason: "Poisson sampling is accounted under \"add_remove\" neighbouring; \
                             use \"fixed_batch\" sampling for \"replace\""
                        .into(),
                })
            }
            (SamplingKind::RandomAllocation { .. }, Neighbouring::Replace) => {
                return Err(Error::Incompatible {
                    field: "sampling.random_allocation".into(),
                    reason: "random allocation is accounted under \"add_remove\" neighbouring \
                             (the relation its worst-case pair is proven for)"
                        .into(),
                })
            }
            (SamplingKind::TruncatedPoisson { .. }, Neighbouring::Replace) => {
                return Err(Error::Incompatible {
                    field: "sampling.truncated_poisson".into(),
                    reason: "truncated Poisson sampling is accounted under \"add_remove\" \
                             neighbouring (the relation its worst-case pair is proven for)"
                        .into(),
                })
            }
            (SamplingKind::FixedBatch { .. }, Neighbouring::AddRemove) => {
                return Err(Error::Incompatible {
                    field: "sampling.fixed_batch".into(),
                    reason: "sampling without replacement is accounted under \"replace\" \
                             neighbouring; set \"neighbouring\": \"replace\""
                        .into(),
                })
            }
            _ => {}
        }
        if neighbouring == Neighbouring::Replace {
            if let MechanismKind::MixtureOfGaussians { .. } = self.mechanism.kind {
                return Err(Error::Incompatible {
                    field: "mechanism".into(),
                    reason: "mixture_of_gaussians describes an add/remove pair; use \
                             \"neighbouring\": \"add_remove\""
                        .into(),
                });
            }
        }
        if neighbouring == Neighbouring::AddRemove && self.mechanism.replace_sensitivity().is_some()
        {
            return Err(Error::Incompatible {
                field: "replace_sensitivity".into(),
                reason: "allowed only with \"neighbouring\": \"replace\"; under \
                         \"add_remove\" give sensitivity (one record's contribution)"
                    .into(),
            });
        }
        Ok(())
    }

    /// The event in the JSON format (what serde writes).
    pub(crate) fn to_json_value(&self) -> Value {
        Value::Object(
            event_fields(self)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }
}
