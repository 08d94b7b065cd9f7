//! The composition regrouped for computing: how a spec's events become the components the
//! accountant discretizes and composes.

use super::allocation::Allocation;
use super::shuffle::ShuffleEpoch;
use super::*;
use crate::discretize::random_allocation::{epoch_lattice_points, LATTICE_BYTES_PER_POINT};
use crate::mechanism::TruncatedPoissonGaussian;
use crate::spec::Shift;

/// The composition regrouped for computing: unsampled Gaussians merged analytically,
/// identical events merged into one self-composition.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan {
    /// μ of all unsampled (or q = 1) Gaussian events together, if any.
    pub(super) gaussian_mu: Option<f64>,
    /// Bound on the relative rounding error of `gaussian_mu` (see [`Plan::analytic_mu`]).
    pub(super) gaussian_mu_relative_error: f64,
    /// The other events, identical ones merged.
    pub(super) groups: Vec<Group>,
    /// The RDP accountant's curve of the whole composition (each divergence widened by a
    /// bound on its rounding) when some event is known only by a guarantee and every event
    /// has an RDP curve: the worst-case pairs of guarantees make the PLD lose to RDP in some
    /// mixes, and the conversion is a valid upper bound, so the accountant takes it too.
    pub(super) mixed_rdp: Option<crate::analytic::rdp::RdpCurve>,
    /// Lower bounds on the composition's mass at infinite loss (a floor under every δ(ε),
    /// see [`infinite_loss_floor`]).
    pub(super) infinite_loss: InfiniteLossFloor,
    /// The spec, for the RDP curve of the whole composition computed when first asked for
    /// ([`Plan::rdp_fallback`]).
    spec: CompositionSpec,
    rdp_fallback: std::sync::OnceLock<Option<crate::analytic::rdp::RdpCurve>>,
}

/// The RDP curve of the composition `spec`: every event's curve added at dp_accounting's
/// orders, each divergence then widened by a bound on the rounding of the additions
/// (`(4·events + 64)·2⁻⁵²` relative); `None` when some event has no RDP curve.
///
/// # Guarantee
/// Upper bound on the composition's Rényi divergence at every order.
fn composition_rdp(spec: &CompositionSpec) -> Option<crate::analytic::rdp::RdpCurve> {
    let orders = crate::analytic::rdp::default_orders();
    let mut total = crate::analytic::rdp::RdpCurve::zero(orders.clone());
    for event in &spec.events {
        let curve =
            crate::analytic::event_bounds::rdp_curve(event, spec.neighbouring, &orders).ok()?;
        total.compose(&curve, event.count);
    }
    let terms = 4.0 * spec.events.len() as f64 + 64.0;
    let values = total.divergences().to_vec();
    Some(crate::analytic::rdp::RdpCurve::from_fn(
        orders.clone(),
        |alpha| {
            let i = orders.iter().position(|&o| o == alpha).unwrap_or(0);
            values[i] * (1.0 + terms * f64::EPSILON)
        },
    ))
}

/// Identical events, composed `count` times.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Group {
    pub(super) component: Component,
    pub(super) count: u64,
}

/// One event's pair, in the form the discretization needs.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Component {
    SubsampledGaussian(PoissonSubsampled<Gaussian>),
    Mixture(MixtureOfGaussians),
    Laplace(Laplace),
    SubsampledLaplace(PoissonSubsampled<Laplace>),
    /// Built per truncation mass (its tails depend on it).
    DiscreteGaussian {
        sigma: f64,
        sensitivity: u64,
        pair: IntegerPair,
    },
    /// One epoch of random allocation (k < t) of Gaussian steps.
    RandomAllocation(Allocation),
    /// One epoch of shuffled batches (t ≥ 2) of Gaussian steps: different pairs per bound.
    Shuffle(ShuffleEpoch),
    /// Gaussian noise on a truncated Poisson sample that may be cut (B ≤ n): a revealed
    /// mixture of Poisson-subsampled Gaussians above, an attained one below.
    TruncatedPoisson(TruncatedPoissonGaussian),
    /// A mechanism known only by a Rényi guarantee (see [`GuaranteePair`]).
    Guarantee(Box<GuaranteePair>),
    /// Exact atoms of a finite pair (REMOVE direction), with the lattice their losses lie on
    /// when it is known (every loss an integer multiple of it).
    Atoms {
        atoms: LossAtoms,
        symmetry: Symmetry,
        lattice: Option<f64>,
    },
}

/// Most grid points across the widest single event on the first grid of a tolerance-driven
/// search (see [`Plan::initial_step`]).
pub(super) const FIRST_GRID_POINTS: usize = 1 << 16;

/// Share of δ that merging the tail bins of single events may move an ε(δ) query's composed
/// δ by (see [`Plan::merge_budget`]): ε moves by at most about this share of δ over the
/// slope of δ(ε). Measured at grid step 1e-4, δ 1e-5, against 1e-6: the upper ends of the
/// DP-SGD benchmarks rose by 2.8e-8 (σ 1, q 0.01, 10³ steps), 1.5e-9 (10⁴), 1.9e-10 (σ 0.8,
/// q 0.004, 10⁵) and 5.4e-9 (σ 1.1, q 256/60000, 14,063) relative, while the queries took
/// 0.90, 0.92, 0.98 and 0.93 of their time (fewer CDF evaluations in the far tails).
pub(super) const TAIL_MERGE_SHARE: f64 = 1e-5;

/// Share of δ a query's truncation is set to: an ε(δ) query truncates at this share of δ
/// (at most 1e-14), and a δ(ε) query, once its bracket bounds δ from below, at this share
/// spread over the events composed (see [`Plan::delta_query_truncation`]).
pub(super) const TRUNCATION_SHARE: f64 = 1e-9;

/// μ = Δ/σ above which a random allocation's steps count as heavy-tailed (see
/// [`Plan::has_heavy_tailed_allocation`]): σ below 2/3 at Δ = 1.
const HEAVY_TAILED_ALLOCATION_MU: f64 = 1.5;

/// How much narrower than the first grid's step (by the h² rule) a sampled Gaussian's
/// per-run loss spread must be for the first grid to start at that spread instead (see
/// [`Plan::initial_step`]). Within a factor of ten the h² rule still converges: with a
/// threshold of 1, 59 of the 150 queries of `scripts/ab_answers.py 150 45` moved within
/// their tolerance for no gain; with 0.1, 25 moved, and the one that gained (from "not
/// narrowing" to met) still does.
const NARROW_SPREAD: f64 = 0.1;

/// Most grid points across the widest single event's truncated loss range plus
/// [`WIDTH_SLACK`] on a first grid started at a narrow per-run spread (see
/// [`Plan::initial_step`]): 2¹⁸.
///
/// It was 2²⁰, a step of about 1e-6 nats for the narrow ranges of small sampling rates, which
/// the memory estimate put at about 0.5 GiB. At tiny δ that grid's tilted powers carried a
/// round-off charge far above δ, and it was the answer's: σ 0.661, q 3.78e-6, 212,635 steps,
/// δ 1e-15 gave [0.186, 1.221] in 2.4 s (1.3 GB, stopped by the memory budget), and gives
/// [0.844384, 0.844456] in 1.2 s from 2e-5 nats. With 2¹⁶ (as [`FIRST_GRID_POINTS`] allows
/// other first grids) it took 0.3 s, but a mix of three sampled Gaussians (one at q 1.79e-5)
/// at δ 1e-12 started at 1.7e-5 nats instead of its spread, 1.03e-5, whose lower end was
/// 0.0911 against 0.0939, and stopped "not narrowing".
const NARROW_FIRST_GRID_POINTS: usize = 1 << 18;

/// Nats added to every event's loss range in the first grid's size and memory estimates
/// (see [`Plan::widest_loss_width`], [`Plan::memory_estimate`]).
const WIDTH_SLACK: f64 = 1.0;

/// Most events listed for which [`Plan::rdp_is_cheap`].
const RDP_CHEAP_EVENTS: usize = 100;

/// Largest lattice refinement tried when aligning the grid to several lattices.
pub(super) const MAX_LATTICE_DIVISOR: u32 = 1000;

/// Finest aligned step [`Plan::aligned_step`] may take to bring heavy atoms off the lattice
/// near grid points, relative to the largest aligned step: a grid at most 25% longer.
const ALIGNMENT_RANGE: f64 = 0.8;

/// Most candidate steps [`Plan::aligned_step`] compares (and, without a lattice, the number
/// of lattice units the step is divided into).
const ALIGNMENT_CANDIDATES: f64 = 1000.0;

/// Fewest candidates beyond the largest aligned step that [`Plan::aligned_step`] compares
/// when few steps span the lattice (0.8 of the largest would leave one or none): an atom
/// a few steps from zero has few grid points to choose from.
const ALIGNMENT_EXTRA: f64 = 3.0;

/// At most this many steps spanning the lattice count as few for [`Plan::aligned_step`]'s
/// wider search: the heavy atom is then a few steps from zero, and each step it sits beyond
/// a grid point is a large share of its loss.
const FEW_LATTICE_STEPS: f64 = 32.0;

/// How much finer than the largest aligned step the wider search of [`Plan::aligned_step`]
/// may go (a grid up to this many times longer).
const WIDER_ALIGNMENT: f64 = 4.0;

/// Largest share of a step a heavy atom may sit beyond a grid point for the wider search of
/// [`Plan::aligned_step`] to take a finer step.
const NEAR_GRID_POINT: f64 = 0.05;

/// Spread of the unsampled bulk of a Poisson-sampled Gaussian step's losses above
/// `ln(1 − q)`, in grid steps, below which [`Plan::aligned_step`] treats it as an atom to
/// align (see `Plan::near_atom_aligned`), for μ of at least [`NEAR_ATOM_MIN_MU`].
/// Measured on the lower PMF's mean loss (relative error, eight unaligned steps in
/// [0.8h, h] against the aligned one): σ 0.3, q 1e-3, h 1e-3 (spread 0.004 steps): 0.52
/// against 2.7e-5; σ 0.4, q 0.01, h 1e-3 (0.44): 0.011 against 2.2e-5; σ 0.5, q 1e-3,
/// h 1e-4 (1.4): 7.9e-5 against 7.7e-5, no gain; σ 0.5, q 0.01, h 1e-3 (1.4): 1.0e-4
/// against 1.2e-4.
const NEAR_ATOM_SPREAD: f64 = 1.0;

/// Smallest μ = Δ/σ whose unsampled bulk [`Plan::aligned_step`] aligns. Below it the bulk's
/// losses are spread less unevenly and the landing copes: at σ 1 (q 1e-3, h 1e-3, spread
/// 0.6 steps) aligned steps erred more (0.13 against 0.10), and an A/B of 150 random DP-SGD
/// queries moved answers at σ up to 4 with nothing gained.
const NEAR_ATOM_MIN_MU: f64 = 2.0;

/// Where the aligned step puts `ln(1 − q)`: this share of a step below a node `(i + ½)·h`
/// of the lower bound's grid, i.e. at `(i + 0.4)·h`. Measured at σ 0.3, q 1e-3 and steps
/// near 1e-4: shares from 0.06 to 0.25 give the lower PMF's mean within 2e-6 relative of
/// the truth, 0 (on the node) 1.3% low, 0.5 (midway) 7% low.
const NEAR_ATOM_BELOW_NODE: f64 = 0.4;

impl Plan {
    pub(super) fn from_spec(spec: &CompositionSpec) -> Result<Plan> {
        let mut mu_squared = 0.0;
        let mut any_unsampled = false;
        let mut unsampled_events = 0usize;
        let mut groups: Vec<Group> = Vec::new();
        let relation = spec.neighbouring;
        // Guarantees compose exactly before any pair is built: zCDP adds ρ, RDP adds at each
        // order. One worst-case pair of the total is much tighter than the composition of
        // the events' worst-case pairs (each is the worst case of its own event alone).
        let mut zcdp_rho = 0.0;
        // The part of ρ whose class a Gaussian attains (`zcdp`; not `laplace_log_normal`, a
        // specific mechanism with no known lower bound).
        let mut attained_rho = 0.0;
        let mut rdp_curves: Vec<(Vec<f64>, Vec<f64>)> = Vec::new();
        for event in &spec.events {
            if event.sampling.kind != SamplingKind::None {
                continue;
            }
            let n = event.count as f64;
            match &event.mechanism.kind {
                kind @ (MechanismKind::Zcdp { .. } | MechanismKind::LaplaceLogNormal { .. }) => {
                    let rho = kind.zcdp_rho().unwrap_or(f64::INFINITY);
                    zcdp_rho += n * rho;
                    if let MechanismKind::Zcdp { .. } = kind {
                        attained_rho += n * rho;
                    }
                }
                MechanismKind::RdpCurve { orders, values } => {
                    match rdp_curves.iter_mut().find(|(o, _)| o == orders) {
                        Some((_, total)) => {
                            for (t, v) in total.iter_mut().zip(values) {
                                *t += n * v;
                            }
                        }
                        None => rdp_curves
                            .push((orders.clone(), values.iter().map(|v| n * v).collect())),
                    }
                }
                _ => {}
            }
        }
        let mut merged: Vec<(MechanismKind, Option<f64>)> = Vec::new();
        if zcdp_rho > 0.0 {
            merged.push((
                MechanismKind::Zcdp { rho: zcdp_rho },
                Some((2.0 * attained_rho).sqrt()),
            ));
        }
        merged.extend(
            rdp_curves
                .into_iter()
                .map(|(orders, values)| (MechanismKind::RdpCurve { orders, values }, None)),
        );
        for (kind, attained_mu) in &merged {
            let pair = guarantee_component(kind, *attained_mu).map_err(|e| match e {
                Error::InvalidParameter { .. } => Error::invalid(
                    "events",
                    "the guarantees' total",
                    "a finite total ρ (or RDP value) over the zcdp, laplace_log_normal \
                     (rdp_curve) events",
                ),
                other => other,
            })?;
            groups.push(Group {
                component: Component::Guarantee(Box::new(pair)),
                count: 1,
            });
        }
        for (i, event) in spec.events.iter().enumerate() {
            if event.mechanism.kind.is_guarantee() && event.sampling.kind == SamplingKind::None {
                continue;
            }
            let field = |name: &str| format!("events[{i}].{name}");
            let located = |e: Error| match e {
                Error::InvalidParameter {
                    name,
                    value,
                    requirement,
                } => Error::InvalidParameter {
                    name: field(&name),
                    value,
                    requirement,
                },
                other => other,
            };
            // Poisson sampling at rate 1, a batch of the whole dataset and allocation to every
            // step are no sampling (allocation then counts epochs of t steps each).
            let mut runs_per_count = 1u64;
            let sampling = match event.sampling.kind {
                SamplingKind::RandomAllocation {
                    steps_per_epoch,
                    participations,
                } if participations >= steps_per_epoch => {
                    runs_per_count = steps_per_epoch;
                    SamplingKind::None
                }
                // One batch per epoch: every record in every step.
                SamplingKind::Shuffle { steps_per_epoch: 1 } => SamplingKind::None,
                SamplingKind::Poisson(rate) if rate >= 1.0 => SamplingKind::None,
                // A batch that can never exceed B (both neighbours have at most n + 1 ≤ B
                // records) is never cut: plain Poisson sampling, the very same component.
                SamplingKind::TruncatedPoisson {
                    rate,
                    max_batch_size,
                    dataset_size,
                } if max_batch_size > dataset_size => {
                    if rate >= 1.0 {
                        SamplingKind::None
                    } else {
                        SamplingKind::Poisson(rate)
                    }
                }
                SamplingKind::FixedBatch {
                    batch_size,
                    dataset_size,
                } if batch_size >= dataset_size => SamplingKind::None,
                other => other,
            };
            // The shift between the two outputs of additive noise: one record's contribution
            // Δ under Poisson sampling (add/remove); otherwise the pair shift of the relation,
            // Δ under add/remove and, under replace-one, 2Δ or the replace_sensitivity as
            // given (unsampled, and the pair a fixed batch is accounted with).
            let component = match (&event.mechanism.kind, sampling) {
                (&MechanismKind::Gaussian { sigma, sensitivity }, SamplingKind::None) => {
                    let gaussian =
                        Gaussian::new(sigma, sensitivity.pair_shift(relation)).map_err(located)?;
                    mu_squared +=
                        event.count as f64 * runs_per_count as f64 * gaussian.mu().powi(2);
                    any_unsampled = true;
                    unsampled_events += 1;
                    continue;
                }
                (&MechanismKind::Gaussian { sigma, sensitivity }, SamplingKind::Poisson(rate)) => {
                    let gaussian =
                        Gaussian::new(sigma, sensitivity.per_record()).map_err(located)?;
                    Component::SubsampledGaussian(
                        PoissonSubsampled::new(gaussian, rate).map_err(located)?,
                    )
                }
                // Sampling without replacement (m of n) under replace-one: the worst case is
                // Poisson sampling at rate γ = m/n of the pair with the replace-one shift (2Δ),
                // in both directions. It is attained (record i contributes −v in D, every
                // other record +v in D and D′: when i is not drawn both outputs coincide) and
                // dominating (Zhu, Dong & Wang, AISTATS 2022, Thm 10 on subset sampling). The
                // symmetric pair (1−γ)μ + γμ(·±Δ) is not an upper bound here.
                (
                    &MechanismKind::Gaussian { sigma, sensitivity },
                    SamplingKind::FixedBatch { .. },
                ) => {
                    let gaussian =
                        Gaussian::new(sigma, sensitivity.pair_shift(relation)).map_err(located)?;
                    Component::SubsampledGaussian(
                        PoissonSubsampled::new(gaussian, gamma(sampling)).map_err(located)?,
                    )
                }
                // Random allocation of k < t steps: counts epochs; its pair in
                // `allocation.rs`. Add/remove only: one record's contribution Δ.
                (
                    &MechanismKind::Gaussian { sigma, sensitivity },
                    SamplingKind::RandomAllocation {
                        steps_per_epoch,
                        participations,
                    },
                ) => Component::RandomAllocation(Allocation {
                    gaussian: Gaussian::new(sigma, sensitivity.per_record()).map_err(located)?,
                    steps_per_epoch,
                    participations,
                }),
                // Truncated Poisson sampling that may cut the batch: its pairs in
                // `mechanism::truncated_poisson`. Add/remove only: one record's contribution Δ.
                (
                    &MechanismKind::Gaussian { sigma, sensitivity },
                    SamplingKind::TruncatedPoisson {
                        rate,
                        max_batch_size,
                        dataset_size,
                    },
                ) => {
                    let gaussian =
                        Gaussian::new(sigma, sensitivity.per_record()).map_err(located)?;
                    Component::TruncatedPoisson(
                        TruncatedPoissonGaussian::new(gaussian, rate, max_batch_size, dataset_size)
                            .map_err(located)?,
                    )
                }
                // Shuffling (t ≥ 2): its pairs in `shuffle.rs`. Either relation: the upper
                // bound's shift is the relation's; the zero-out test of Chua et al. needs
                // add/remove (the record's contribution Δ against nothing).
                (
                    &MechanismKind::Gaussian { sigma, sensitivity },
                    SamplingKind::Shuffle { steps_per_epoch },
                ) => Component::Shuffle(ShuffleEpoch {
                    step: Gaussian::new(sigma, sensitivity.pair_shift(relation))
                        .map_err(located)?,
                    zero_out_shift: (relation == Neighbouring::AddRemove)
                        .then(|| sensitivity.per_record()),
                    steps_per_epoch,
                }),
                // The spec refuses these; kept as errors, never a silent unsampled pair.
                (_, SamplingKind::Shuffle { .. }) => {
                    return Err(Error::Incompatible {
                        field: field("sampling.shuffle"),
                        reason: format!(
                            "shuffling is accounted for the gaussian mechanism only, not {}",
                            event.mechanism.name()
                        ),
                    })
                }
                (_, SamplingKind::TruncatedPoisson { .. }) => {
                    return Err(Error::Incompatible {
                        field: field("sampling.truncated_poisson"),
                        reason: format!(
                            "truncated Poisson sampling is accounted for the gaussian mechanism \
                             only, not {}",
                            event.mechanism.name()
                        ),
                    })
                }
                (_, SamplingKind::RandomAllocation { .. }) => {
                    return Err(Error::Incompatible {
                        field: field("sampling.random_allocation"),
                        reason: format!(
                            "random allocation is accounted for the gaussian mechanism only, \
                             not {}",
                            event.mechanism.name()
                        ),
                    })
                }
                (&MechanismKind::Laplace { scale, sensitivity }, SamplingKind::None) => {
                    Component::Laplace(
                        Laplace::new(scale, sensitivity.pair_shift(relation)).map_err(located)?,
                    )
                }
                (&MechanismKind::Laplace { scale, sensitivity }, SamplingKind::Poisson(rate)) => {
                    let laplace = Laplace::new(scale, sensitivity.per_record()).map_err(located)?;
                    Component::SubsampledLaplace(
                        PoissonSubsampled::new(laplace, rate).map_err(located)?,
                    )
                }
                (
                    &MechanismKind::Laplace { scale, sensitivity },
                    SamplingKind::FixedBatch { .. },
                ) => {
                    let laplace =
                        Laplace::new(scale, sensitivity.pair_shift(relation)).map_err(located)?;
                    Component::SubsampledLaplace(
                        PoissonSubsampled::new(laplace, gamma(sampling)).map_err(located)?,
                    )
                }
                (&MechanismKind::DiscreteLaplace { scale, sensitivity }, _) => {
                    let (sensitivity, pair) =
                        integer_pair(sensitivity, relation, sampling).map_err(located)?;
                    let atoms = discrete::discrete_laplace(scale, sensitivity, pair)?;
                    Component::Atoms {
                        atoms,
                        symmetry: pair_symmetry(pair),
                        lattice: (pair == IntegerPair::Plain).then_some(1.0 / scale),
                    }
                }
                (&MechanismKind::DiscreteGaussian { sigma, sensitivity }, _) => {
                    let (sensitivity, pair) =
                        integer_pair(sensitivity, relation, sampling).map_err(located)?;
                    Component::DiscreteGaussian {
                        sigma,
                        sensitivity,
                        pair,
                    }
                }
                (
                    &MechanismKind::RandomizedResponse {
                        epsilon,
                        categories,
                    },
                    _,
                ) => atoms_component(
                    discrete::randomized_response(epsilon, categories),
                    epsilon,
                    sampling,
                ),
                (&MechanismKind::EpsDelta { epsilon, delta }, _) => {
                    atoms_component(discrete::eps_delta(epsilon, delta), epsilon, sampling)
                }
                (
                    MechanismKind::MixtureOfGaussians {
                        sigma,
                        sensitivities,
                        probabilities,
                        ..
                    },
                    _,
                ) => {
                    let mixture = MixtureOfGaussians::new(*sigma, sensitivities, probabilities)
                        .map_err(located)?;
                    if mixture.largest_shift() == 0.0 {
                        // Both outputs have the same distribution: no privacy loss at all.
                        atoms_component(discrete::eps_delta(0.0, 0.0), 0.0, SamplingKind::None)
                    } else {
                        Component::Mixture(mixture)
                    }
                }
                (MechanismKind::PmfPair { p, q, .. }, _) => Component::Atoms {
                    atoms: discrete::pmf_pair(p, q),
                    symmetry: Symmetry::Asymmetric,
                    lattice: None,
                },
                (&MechanismKind::Exponential { epsilon }, SamplingKind::None) => {
                    Component::Guarantee(Box::new(GuaranteePair {
                        upper: crate::mechanism::bounded_range::dominating_atoms(epsilon)
                            .map_err(located)?,
                        lower: GuaranteeLower::Atoms(discrete::eps_delta(epsilon / 2.0, 0.0)),
                        rho: None,
                        guarantee: event.mechanism.kind.clone(),
                    }))
                }
                (
                    kind @ (MechanismKind::StudentT { .. } | MechanismKind::Cauchy { .. }),
                    SamplingKind::None,
                ) => {
                    // ε-DP: randomized response with ε above, no loss below (no lower bound
                    // is known for the mechanism itself).
                    let epsilon = kind.smooth_sensitivity_epsilon().unwrap_or(f64::INFINITY);
                    Component::Guarantee(Box::new(GuaranteePair {
                        upper: discrete::eps_delta(epsilon, 0.0),
                        lower: GuaranteeLower::NoLoss,
                        rho: None,
                        guarantee: kind.clone(),
                    }))
                }
                (
                    MechanismKind::Zcdp { .. }
                    | MechanismKind::LaplaceLogNormal { .. }
                    | MechanismKind::RdpCurve { .. }
                    | MechanismKind::Exponential { .. }
                    | MechanismKind::StudentT { .. }
                    | MechanismKind::Cauchy { .. },
                    sampling,
                ) => {
                    if sampling != SamplingKind::None {
                        // The specification refuses these; kept as an error, never a silent
                        // unsampled pair.
                        return Err(Error::Incompatible {
                            field: field("sampling"),
                            reason: format!(
                                "{} is known only by its guarantee: no sampled pair",
                                event.mechanism.name()
                            ),
                        });
                    }
                    Component::Guarantee(Box::new(guarantee_component(
                        &event.mechanism.kind,
                        None,
                    )?))
                }
            };
            // Only the Gaussian takes random allocation, and it never reaches a group when
            // every step is allocated; the product is checked all the same.
            let count = event.count.checked_mul(runs_per_count).ok_or_else(|| {
                Error::invalid(
                    field("count"),
                    event.count,
                    &format!("at most {} epochs", u64::MAX / runs_per_count),
                )
            })?;
            if let Some(group) = groups.iter_mut().find(|g| g.component == component) {
                group.count += count;
            } else {
                groups.push(Group { component, count });
            }
        }
        let gaussian_mu = if any_unsampled {
            let mu = mu_squared.sqrt();
            if !mu.is_finite() {
                return Err(Error::invalid(
                    "events",
                    format!("μ = {mu}"),
                    "a composition whose total Gaussian μ = √Σ(count·Δ²/σ²) is finite",
                ));
            }
            Some(mu)
        } else {
            None
        };
        // Each term count·(shift/σ)² carries three roundings, the sum of n positive terms
        // n − 1 more, and the square root halves that and adds one: (n/2 + 2)·2⁻⁵³ in all,
        // below (n + 4)·2⁻⁵² with room for second-order terms (and an inexact count > 2⁵³).
        let gaussian_mu_relative_error = (unsampled_events as f64 + 4.0) * f64::EPSILON;
        let any_guarantee = spec.events.iter().any(|e| {
            matches!(
                e.mechanism.kind,
                MechanismKind::Zcdp { .. }
                    | MechanismKind::RdpCurve { .. }
                    | MechanismKind::LaplaceLogNormal { .. }
                    | MechanismKind::Exponential { .. }
                    | MechanismKind::StudentT { .. }
                    | MechanismKind::Cauchy { .. }
            )
        });
        let mixed_rdp = if any_guarantee {
            composition_rdp(spec)
        } else {
            None
        };
        Ok(Plan {
            gaussian_mu,
            gaussian_mu_relative_error,
            groups,
            mixed_rdp,
            infinite_loss: infinite_loss_floor(spec),
            spec: spec.clone(),
            rdp_fallback: std::sync::OnceLock::new(),
        })
    }

    /// The RDP accountant's curve of the whole composition (as [`Plan::mixed_rdp`], which it
    /// is when there is one), computed on first use; `None` when some event has no RDP curve.
    /// For answers past the grid's range (a composed ε beyond [`LOSS_LIMIT`]): its conversion
    /// is a valid upper bound there, often far below the other closed forms.
    pub(super) fn rdp_fallback(&self) -> Option<&crate::analytic::rdp::RdpCurve> {
        if let Some(curve) = &self.mixed_rdp {
            return Some(curve);
        }
        self.rdp_fallback
            .get_or_init(|| composition_rdp(&self.spec))
            .as_ref()
    }

    /// `[μ_lo, μ_hi]` around the exact μ when the whole composition is one Gaussian (no grid
    /// needed): the computed μ widened by its rounding error bound. δ(ε) and ε(δ) increase
    /// with μ, so lower bounds are taken at `μ_lo` and upper bounds at `μ_hi`.
    pub(super) fn analytic_mu(&self) -> Option<(f64, f64)> {
        if self.groups.is_empty() {
            let r = self.gaussian_mu_relative_error;
            self.gaussian_mu.map(|mu| (mu * (1.0 - r), mu * (1.0 + r)))
        } else {
            None
        }
    }

    /// Whether every event's ADD pair has the same PLD as its REMOVE pair.
    pub(super) fn is_symmetric(&self) -> bool {
        self.groups
            .iter()
            .all(|g| g.component.symmetry() == Symmetry::Symmetric)
    }

    /// First grid step. Both discretizations err by about `0.3·k·h²` in ε after k
    /// compositions (measured on DP-SGD; second order), so this step gives a bracket of about
    /// 0.01 nats: coarse enough to be cheap, and refinement rescales it in one go. When every
    /// event is a finite pair on a common lattice, the lattice itself is the grid (exact).
    ///
    /// The first grid is also kept cheap: at most [`FIRST_GRID_POINTS`] points across the
    /// widest single event (by its rough width). A huge count would otherwise ask for a step
    /// of 1e-5 on a wide event (millions of points, minutes for a mixture) even when the
    /// composition lies far beyond the representable loss range and a coarse grid already
    /// answers; when a finer grid is needed, refinement gets there in a step or two.
    ///
    /// That error model needs each run's losses to spread over many steps. A sampled
    /// Gaussian at a small rate q spreads them over only about `s = q·√(e^{μ²} − 1)` nats
    /// (their standard deviation), and on coarser grids both ends converge like √h instead
    /// of h² (σ 1, q 1e-6, 10⁴ runs: a bracket of 8e-3 at 1.4e-3 nats, 4e-4 at 1e-5, 1.5e-5
    /// at 1e-6), so refinement by the h² rule ran out of refinements at [0, 1.8e-4]. Plans
    /// whose smallest s is below [`NARROW_SPREAD`] times that step start at s instead, and
    /// never coarser than before, nor finer than [`NARROW_FIRST_GRID_POINTS`] across the
    /// widest truncated loss range at `tail_mass` plus [`WIDTH_SLACK`] (the memory estimate's
    /// width: without that floor, σ 30, q 1e-9 started at 1.4e-7 nats and was refused as
    /// over the memory budget). Since the lower bound's nodes shift onto the unsampled bulk
    /// (see `discretize::lumped_atoms`), grids far coarser than s give tight lower ends, and
    /// refinements sized by the measured order of the width take the rest.
    pub(super) fn initial_step(&self, tail_mass: Option<f64>) -> f64 {
        let k: u64 = self.groups.iter().map(|g| g.count).sum::<u64>() + 1;
        let cheap = self.widest_loss_width() / FIRST_GRID_POINTS as f64;
        let rough = (0.02 / k as f64).sqrt().clamp(1e-5, 2e-2);
        let step = match (self.narrowest_sampled_spread(), tail_mass) {
            (Some(spread), Some(truncation)) if spread < NARROW_SPREAD * rough => {
                let finest = (self.widest_loss_range(tail_mass, truncation) + WIDTH_SLACK)
                    / NARROW_FIRST_GRID_POINTS as f64;
                spread.max(finest).min(rough.max(cheap.min(1.0)))
            }
            _ => rough.max(cheap.min(1.0)),
        };
        let all_on_lattice = self.gaussian_mu.is_none()
            && self.groups.iter().all(|g| {
                matches!(g.component, Component::Atoms { lattice: Some(u), .. } if u > 0.0)
                    || matches!(
                        g.component,
                        Component::Atoms { ref atoms, .. } if atoms.atoms().iter().all(|a| a.loss == 0.0)
                    )
            });
        if all_on_lattice {
            if let Some(unit) = self.common_lattice(0.0) {
                return unit.min(1.0);
            }
        }
        self.aligned_step(step)
    }

    /// The smallest standard deviation of one run's loss among the sampled Gaussians,
    /// `q·√(e^{μ²} − 1)` (the loss of a run at a small rate is about q times its likelihood
    /// ratio's deviation from 1, whose variance is e^{μ²} − 1); `None` without them.
    /// Truncated Poisson sampling counts by its lower bound's pair (Poisson sampling at the
    /// chance of being kept), whose rate is the bulk part's up to rare cuts.
    fn narrowest_sampled_spread(&self) -> Option<f64> {
        let spread = |m: &PoissonSubsampled<Gaussian>| {
            let mu = m.base().mu();
            (m.rate() < 1.0 && mu < NEAR_ATOM_MIN_MU).then(|| m.rate() * (mu * mu).exp_m1().sqrt())
        };
        self.groups
            .iter()
            .filter_map(|g| match &g.component {
                Component::SubsampledGaussian(m) => spread(m),
                Component::TruncatedPoisson(tp) => tp.lower().as_ref().and_then(spread),
                _ => None,
            })
            .filter(|s| s.is_finite() && *s > 0.0)
            .min_by(f64::total_cmp)
    }

    /// The largest step ≤ `step` that divides the common lattice of the events whose atoms
    /// are spaced at least `step` apart, so those atoms sit exactly on grid points (both
    /// roundings are then exact for them); `step` itself if there is no common lattice.
    ///
    /// Alignment only makes the bracket tighter (every grid gives valid bounds), so it may
    /// not shrink the step below `step / 4`: events whose lattice would force that (two
    /// Laplace events with ε₀ = 17.18 and 0.00813 have a common lattice of 6e-6 nats, and a
    /// grid of 46 million points) are left off the grid, and coarsening can always proceed.
    ///
    /// Heavy atoms left off that lattice (the lower constant-loss region of subsampled
    /// Laplace noise, an event whose lattice did not fit) cost the lower bound in proportion
    /// to how far they sit beyond the grid point next to them on zero's side (the optimistic
    /// rounding merges such an atom with outcomes nearer zero until it lands there, or rounds
    /// it down by the rest of the step: see [`crate::discretize::LossAtoms::lower_pmf`]).
    /// Among the aligned steps down to [`ALIGNMENT_RANGE`] of the largest (and at least
    /// [`ALIGNMENT_EXTRA`] more, at most twice as fine, when few steps span the lattice), the
    /// one leaving the largest such distance (nats) smallest is taken. Measured on the
    /// `laplace-fixed-batch` preset at δ 1e-6: the bracket at step 0.001/48 (its bottom atom
    /// 0.92 of a step beyond a grid point) is 2.5e-4 wide, at 0.001/58 (0.025 of a step) 5e-6.
    pub(super) fn aligned_step(&self, step: f64) -> f64 {
        let lattice = self.common_lattice_at_least(step, step / 4.0);
        let largest = |unit: f64| (unit / step * (1.0 - 1e-12)).ceil().max(1.0);
        let aligned = match lattice {
            Some(unit) => unit / largest(unit),
            None => step,
        };
        let off_lattice: Vec<f64> = self
            .heavy_atoms()
            .into_iter()
            .filter(|&a| overshoot(a, aligned) > 0.0)
            .collect();
        if off_lattice.is_empty() {
            return match lattice {
                None => self.near_atom_aligned(aligned),
                Some(_) => aligned,
            };
        }
        // The candidates unit/n, n from `first` to `last`: the lattice's, at least
        // [`ALIGNMENT_EXTRA`] more (at most twice as fine) when few steps span the lattice;
        // without one, steps·N/n for N = [`ALIGNMENT_CANDIDATES`].
        let (unit, first, last) = match lattice {
            Some(unit) => {
                let first = largest(unit);
                let last = (first / ALIGNMENT_RANGE)
                    .floor()
                    .max((first + ALIGNMENT_EXTRA).min(2.0 * first))
                    .min(first + ALIGNMENT_CANDIDATES);
                (unit, first, last)
            }
            None => (
                step * ALIGNMENT_CANDIDATES,
                ALIGNMENT_CANDIDATES,
                (ALIGNMENT_CANDIDATES / ALIGNMENT_RANGE).floor(),
            ),
        };
        // The farthest heavy atom from its grid point, in nats.
        let distance = |h: f64| {
            off_lattice
                .iter()
                .map(|&a| overshoot(a, h) * h)
                .fold(0.0, f64::max)
        };
        let mut best = (distance(aligned), first);
        let mut n = first + 1.0;
        while n <= last {
            // (Atoms within the first step are their own loss away from 0 whatever the step:
            // ties keep the larger step.)
            let d = distance(unit / n);
            if d < best.0 * (1.0 - 1e-9) {
                best = (d, n);
            }
            n += 1.0;
        }
        // Few steps spanning the lattice, and the heavy atoms still well off their grid
        // points: a step up to WIDER_ALIGNMENT times finer that puts them within
        // NEAR_GRID_POINT of a step of one. The lower bound's loss per run is then a small
        // share of the atom's loss, where a share of a step piles up over many runs.
        // (Poisson-sampled Laplace noise, scale 27.9, q 1.17e-4, 158,384 runs: its atoms at
        // 4.263e-6 and −4.113e-6 nats, 9 steps apart at the grid asked for, the lower one
        // 0.68 of a step beyond its grid point; ε(1e-5) stopped at [0, 0.003528], not
        // narrowing. At 28 steps, 0.015 beyond: [0.003518, 0.003524].)
        let share = |h: f64| {
            off_lattice
                .iter()
                .map(|&a| overshoot(a, h))
                .fold(0.0, f64::max)
        };
        if lattice.is_some() && first <= FEW_LATTICE_STEPS && share(unit / best.1) > NEAR_GRID_POINT
        {
            let finest = (WIDER_ALIGNMENT * first).floor();
            let wider = (last as u64 + 1..=finest as u64)
                .map(|n| (share(unit / n as f64), n as f64))
                .filter(|&(s, _)| s <= NEAR_GRID_POINT)
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((_, n)) = wider {
                return unit / n;
            }
        }
        if best.1 == first {
            aligned
        } else {
            unit / best.1
        }
    }

    /// `step`, or a step at most 4 times finer that puts the unsampled bulk of Poisson-sampled
    /// Gaussian steps just below a node of the lower bound's half-step grid.
    ///
    /// Under REMOVE a sampled step's loss is `ln(1 − q + q·e^{ℓ(x)})`: without the record
    /// (probability 1 − q) it lies within about `m₀ = q/(1 − q)·e^{−μ²/2}` of `ln(1 − q)`,
    /// times a log-normal factor of log-spread μ. When m₀ is below
    /// [`NEAR_ATOM_SPREAD`] steps, that mass is a near-atom which the lower bound's merged
    /// atoms cannot land on a node (see [`crate::discretize::LumpedAtoms`]): it is rounded down
    /// to the node below, as much as a step, on almost all the mass, and the composed mean
    /// loss drifts by that much per run (σ 0.3, q 1e-3: the lower PMF's mean was 5.7e-6
    /// against 6.56e-4 at step 1.117e-3; 10⁴ runs stopped at ε(1e-5) ∈ [41.32, 41.50], grid
    /// size limit). With `ln(1 − q) = −(n − 0.4)·h` the node `−(n − ½)·h` lies a tenth of
    /// a step above it, and the lowest merged atom lands there: the mean is then right to
    /// O(h²) (6.556962e-4 against the true 6.556966e-4 at h ≈ 1.04e-4; 10⁴ runs meet the
    /// tolerance at once). ADD's atoms are the same ones negated, so one alignment serves
    /// both. Nothing changes unless every such sharp bulk has the same q, and none where the
    /// nearest aligned step would be more than 4 times finer (q far below the step).
    fn near_atom_aligned(&self, step: f64) -> f64 {
        let Some(a) = self.sharp_unsampled_bulk(step, NEAR_ATOM_SPREAD) else {
            return step;
        };
        let n = (a / step + NEAR_ATOM_BELOW_NODE).ceil().max(1.0);
        let aligned = a / (n - NEAR_ATOM_BELOW_NODE);
        if aligned <= step && aligned >= step / WIDER_ALIGNMENT && aligned.is_finite() {
            aligned
        } else {
            step
        }
    }

    /// `−ln(1 − q)` of the Poisson-sampled Gaussian steps whose unsampled bulk is a near-atom
    /// on a grid of step `step` (μ ≥ [`NEAR_ATOM_MIN_MU`], spread below `spread_in_steps`
    /// steps, [`NEAR_ATOM_SPREAD`] for the alignment; see `Plan::near_atom_aligned`), when
    /// there are such steps and they all have the same q.
    pub(super) fn sharp_unsampled_bulk(&self, step: f64, spread_in_steps: f64) -> Option<f64> {
        let mut atom: Option<f64> = None;
        for group in &self.groups {
            let Component::SubsampledGaussian(m) = &group.component else {
                continue;
            };
            let q = m.rate();
            if q >= 1.0 {
                continue;
            }
            let mu = m.base().mu();
            let spread = q / (1.0 - q) * (-0.5 * mu * mu).exp();
            if !(mu >= NEAR_ATOM_MIN_MU && spread < spread_in_steps * step) {
                continue;
            }
            let a = -(-q).ln_1p();
            match atom {
                Some(b) if b != a => return None,
                _ => atom = Some(a),
            }
        }
        atom.filter(|a| *a > 0.0 && a.is_finite())
    }

    /// Whether some event has heavy atoms that no lattice of the grid holds, whose distance
    /// to the grid matters to the lower bound (see [`Plan::aligned_step`]): subsampled
    /// Laplace noise's lower constant-loss region, a finite pair without a lattice, a
    /// sampled discrete Gaussian (its losses `ln(1 − q + q·e^{…})` lie on no lattice).
    ///
    /// (The sampled discrete Gaussian was missing: a mixture of Gaussians twice with a
    /// Poisson-sampled discrete Gaussian 87 times, δ 1e-3, stopped "not narrowing" at
    /// [0.037056, 0.037313] against a target width of 1e-4, its lower end jumping with the
    /// grid; given the erratic plans' patience it meets it, [0.037274, 0.037313].)
    pub(super) fn has_heavy_atoms(&self) -> bool {
        self.groups.iter().any(|g| match g.component {
            Component::SubsampledLaplace(_) | Component::Atoms { lattice: None, .. } => true,
            Component::DiscreteGaussian { pair, .. } => pair != IntegerPair::Plain,
            _ => false,
        })
    }

    /// Whether an event is balls-in-bins batching (one participation) of heavy-tailed steps
    /// (μ = Δ/σ above 1.5: the likelihood ratio's variance under Q, e^{μ²} − 1, above 8),
    /// whose lattice, capped in size, rather than the grid limits the lower end: it improves
    /// only once the grid is fine enough for the lattice to follow it, in jumps.
    pub(super) fn has_heavy_tailed_allocation(&self) -> bool {
        self.groups.iter().any(|g| {
            matches!(&g.component, Component::RandomAllocation(a)
                if a.participations == 1 && a.gaussian.mu() > HEAVY_TAILED_ALLOCATION_MU)
        })
    }

    /// |loss| of the heavy atoms of single events whose distance to the grid matters to the
    /// lower bound: Laplace noise's ±ε₀, subsampled Laplace noise's two constant-loss regions
    /// and the largest loss of a finite pair without a lattice (the atoms
    /// [`Plan::common_lattice`] tries to put on the grid, and the lower constant-loss region).
    fn heavy_atoms(&self) -> Vec<f64> {
        let mut losses = Vec::new();
        for group in &self.groups {
            match group.component {
                Component::Laplace(laplace) => losses.push(laplace.epsilon0()),
                Component::SubsampledLaplace(m) => {
                    let (top, bottom) = constant_losses(&m);
                    losses.extend([top, bottom.abs()]);
                }
                Component::Atoms {
                    ref atoms,
                    lattice: None,
                    ..
                } => losses.extend(atoms.atoms().last().map(|a| a.loss.abs())),
                _ => {}
            }
        }
        losses.retain(|a| *a > 0.0 && a.is_finite());
        losses
    }

    /// The largest g such that every lattice unit of at least `smallest` is a whole multiple
    /// of g (within 1e-9 relative), trying g = u_min/n for n up to 1000. The losses that are
    /// merely worth keeping on the grid (the largest atom of a pair without a lattice) are
    /// added one by one where they fit.
    pub(super) fn common_lattice(&self, smallest: f64) -> Option<f64> {
        self.common_lattice_at_least(smallest, 0.0)
    }

    /// [`Plan::common_lattice`] of the units that keep it at least `floor`: taken one by one
    /// (the lattices events require, then the losses worth keeping), each dropped if the
    /// common lattice with it would be finer than `floor` or would not exist. With
    /// `floor = 0` every required unit is kept when they have a common lattice at all.
    fn common_lattice_at_least(&self, smallest: f64, floor: f64) -> Option<f64> {
        let keep = |u: &f64| *u > 0.0 && *u >= smallest && u.is_finite();
        let (mut required, mut optional) = (Vec::new(), Vec::new());
        for group in &self.groups {
            match group.component {
                Component::Atoms {
                    lattice: Some(u), ..
                } => required.push(u),
                Component::Laplace(laplace) => required.push(laplace.epsilon0()),
                Component::DiscreteGaussian {
                    sigma,
                    sensitivity,
                    pair: IntegerPair::Plain,
                } => required.push(sensitivity as f64 / (2.0 * sigma * sigma)),
                // No lattice: keep at least the largest loss on the grid, the atom that weighs
                // most in δ(ε) for ε > 0 (an isolated atom off the grid costs the lower bound
                // first-order error).
                Component::Atoms {
                    ref atoms,
                    lattice: None,
                    ..
                } => optional.extend(atoms.atoms().last().map(|a| a.loss)),
                Component::SubsampledLaplace(m) => optional.push(constant_losses(&m).0),
                _ => {}
            }
        }
        required.retain(keep);
        optional.retain(keep);
        if floor <= 0.0 {
            // Every required unit, or none: the caller needs a lattice of all of them.
            let mut units = required;
            let mut lattice = lattice_of(&units);
            if lattice.is_none() && !units.is_empty() {
                return None;
            }
            for u in optional {
                units.push(u);
                match lattice_of(&units) {
                    Some(g) => lattice = Some(g),
                    None => {
                        units.pop();
                    }
                }
            }
            return lattice;
        }
        let mut units = Vec::new();
        let mut lattice = None;
        for u in required.into_iter().chain(optional) {
            units.push(u);
            match lattice_of(&units) {
                Some(g) if g >= floor => lattice = Some(g),
                _ => {
                    units.pop();
                }
            }
        }
        lattice
    }

    /// Whether the RDP curve of the whole composition is cheap to compute (at most
    /// [`RDP_CHEAP_EVENTS`] events listed: each takes about 2 ms, 10,000 took 18 s).
    pub(super) fn rdp_is_cheap(&self) -> bool {
        self.spec.events.len() <= RDP_CHEAP_EVENTS
    }

    /// Whether a grid of this step, truncated at `tail_mass`, stays within the size limits
    /// (rough, per mechanism): twice the widest single event's loss range
    /// ([`Plan::widest_loss_range`]) in fewer than [`MAX_GRID_POINTS`] steps. (The composed
    /// grids are checked from their measured sizes.)
    pub(super) fn fits(&self, step: f64, tail_mass: Option<f64>, truncation: f64) -> bool {
        2.0 * self.widest_loss_range(tail_mass, truncation) / step < MAX_GRID_POINTS as f64
    }

    /// The step below which [`Plan::fits`] fails.
    pub(super) fn finest_fitting_step(&self, tail_mass: Option<f64>, truncation: f64) -> f64 {
        2.0 * self.widest_loss_range(tail_mass, truncation) / MAX_GRID_POINTS as f64
    }

    /// Estimated peak bytes of an evaluation on a grid of step `step`, truncated at
    /// `tail_mass`, before any has run: every group's PMF as wide as its single event's loss
    /// range there ([`Component::loss_range`]) plus [`WIDTH_SLACK`], [`CONCURRENT_TASKS`]
    /// tasks at once (see [`super::task_bytes`]). (With a sampled Gaussian's unsampled
    /// width, σ 1, q 1e-6, 10⁴ steps at a fixed step of 2e-6 nats was refused as needing
    /// 2 GiB; its PMFs hold about 700 points.)
    pub(super) fn memory_estimate(
        &self,
        step: f64,
        tilts: usize,
        tail_mass: Option<f64>,
        truncation: f64,
    ) -> f64 {
        // No grid holds losses beyond ±LOSS_LIMIT.
        let points = |width: f64| {
            (width.min(2.0 * crate::pmf::grid_pmf::LOSS_LIMIT + 1.0) / step)
                .min(MAX_GRID_POINTS as f64) as usize
                + 1
        };
        let widths: Vec<usize> = self
            .groups
            .iter()
            .map(|g| points(g.component.loss_range(tail_mass, truncation) + WIDTH_SLACK))
            .chain(
                self.gaussian_mu
                    .map(|mu| points(gaussian_range(mu) + WIDTH_SLACK)),
            )
            .collect();
        let longest = widths.iter().copied().max().unwrap_or(0);
        // Distinct events are multiplied in chunks of bounded size (see `Accountant::composed`).
        let held = widths
            .iter()
            .sum::<usize>()
            .min(super::PRODUCT_CHUNK_POINTS + longest);
        CONCURRENT_TASKS as f64 * super::task_bytes(held, longest, tilts)
    }

    /// Estimated peak bytes of the random allocation (and shuffling) epochs' lattices on a
    /// grid of step `step` at truncation `truncation`, beyond the grids
    /// [`Plan::memory_estimate`] counts: the largest epoch's lattice points times
    /// [`LATTICE_BYTES_PER_POINT`] (both bounds at once), and with more than one such event
    /// the laws `laws` may keep of the others. 0 without such events.
    pub(super) fn lattice_bytes(
        &self,
        step: f64,
        truncation: f64,
        laws: &EpochLaws<Gaussian>,
    ) -> f64 {
        let max_points = laws.max_points();
        let points = |gaussian: &Gaussian, steps: u64| {
            epoch_lattice_points(gaussian, steps, step, truncation, max_points)
        };
        let lattices: Vec<usize> = self
            .groups
            .iter()
            .filter_map(|g| match &g.component {
                // (k > 1: the upper bound's single allocations over ⌊t/k⌋ and ⌊t/k⌋ + 1
                // steps, the lower bound's lattice over t.)
                Component::RandomAllocation(a) => Some(
                    [a.steps_per_epoch, a.steps_per_epoch / a.participations + 1]
                        .into_iter()
                        .map(|steps| points(&a.gaussian, steps))
                        .max()
                        .unwrap_or(0),
                ),
                Component::Shuffle(epoch) => Some(points(&epoch.step, epoch.steps_per_epoch)),
                _ => None,
            })
            .collect();
        let largest = lattices.iter().copied().max().unwrap_or(0);
        let kept = if lattices.len() > 1 {
            laws.max_kept_bytes() as f64
        } else {
            0.0
        };
        largest as f64 * LATTICE_BYTES_PER_POINT as f64 + kept
    }

    /// A rough width (nats) of the widest single event's loss range, plus `slack`.
    fn widest_loss(&self, slack: f64) -> f64 {
        self.groups
            .iter()
            .map(|g| g.component.loss_width(slack))
            .chain(self.gaussian_mu.map(|mu| gaussian_range(mu) + slack))
            .fold(0.0, f64::max)
    }

    /// [`Plan::widest_loss`] with [`WIDTH_SLACK`]: the first grid's size (see
    /// [`Plan::initial_step`]).
    fn widest_loss_width(&self) -> f64 {
        self.widest_loss(WIDTH_SLACK)
    }

    /// What the widest single PMF spans ([`Component::loss_range`]: no slack). With the
    /// slack, the finest step that fits was 4.8e-7 nats for every event, however narrow its
    /// losses: Poisson-sampled Laplace noise with losses within ±4.3e-6 nats, whose heavy
    /// atoms need a step of 1.5e-7 (see [`Plan::aligned_step`]), could not get it.
    fn widest_loss_range(&self, tail_mass: Option<f64>, truncation: f64) -> f64 {
        self.groups
            .iter()
            .map(|g| g.component.loss_range(tail_mass, truncation))
            .chain(self.gaussian_mu.map(gaussian_range))
            .fold(0.0, f64::max)
    }
}

/// The largest g = u_min/n (n ≤ 1000) of which every unit is a whole multiple (within 1e-9
/// relative); `None` for no units or no such g.
pub(super) fn lattice_of(units: &[f64]) -> Option<f64> {
    let smallest = units.iter().copied().fold(f64::INFINITY, f64::min);
    if !smallest.is_finite() {
        return None;
    }
    (1..=MAX_LATTICE_DIVISOR).find_map(|n| {
        let g = smallest / n as f64;
        units
            .iter()
            .all(|u| {
                let r = u / g;
                (r - r.round()).abs() <= 1e-9 * r
            })
            .then_some(g)
    })
}

/// γ = m/n of a fixed batch.
pub(super) fn gamma(sampling: SamplingKind) -> f64 {
    match sampling {
        SamplingKind::FixedBatch {
            batch_size,
            dataset_size,
        } => batch_size as f64 / dataset_size as f64,
        _ => 1.0,
    }
}

/// The integer pair of discrete noise under a sampling scheme: one record's contribution
/// under Poisson sampling (add/remove); otherwise the relation's pair shift (doubled under
/// replace-one unless a replace_sensitivity was given), and a fixed batch is accounted as
/// Poisson sampling at γ = m/n (its worst case, see `Plan::from_spec`).
pub(super) fn integer_pair(
    sensitivity: Shift<u64>,
    relation: Neighbouring,
    sampling: SamplingKind,
) -> Result<(u64, IntegerPair)> {
    Ok(match sampling {
        SamplingKind::None => (
            sensitivity.integer_pair_shift(relation)?,
            IntegerPair::Plain,
        ),
        SamplingKind::Poisson(rate) => (sensitivity.per_record(), IntegerPair::Poisson(rate)),
        SamplingKind::FixedBatch { .. } => (
            sensitivity.integer_pair_shift(relation)?,
            IntegerPair::Poisson(gamma(sampling)),
        ),
        SamplingKind::RandomAllocation { .. } => {
            return Err(Error::Incompatible {
                field: "sampling.random_allocation".into(),
                reason: "random allocation is accounted for the gaussian mechanism only".into(),
            })
        }
        SamplingKind::TruncatedPoisson { .. } => {
            return Err(Error::Incompatible {
                field: "sampling.truncated_poisson".into(),
                reason: "truncated Poisson sampling is accounted for the gaussian mechanism only"
                    .into(),
            })
        }
        SamplingKind::Shuffle { .. } => {
            return Err(Error::Incompatible {
                field: "sampling.shuffle".into(),
                reason: "shuffling is accounted for the gaussian mechanism only".into(),
            })
        }
    })
}

pub(super) fn pair_symmetry(pair: IntegerPair) -> Symmetry {
    match pair {
        IntegerPair::Poisson(_) => Symmetry::Asymmetric,
        IntegerPair::Plain => Symmetry::Symmetric,
    }
}

/// A symmetric finite pair with losses on the lattice `epsilon·ℤ`, Poisson-subsampled if asked
/// (REMOVE `((1−q)Q + qP, Q)`, ADD its swap; the spec refuses other sampling).
pub(super) fn atoms_component(atoms: LossAtoms, epsilon: f64, sampling: SamplingKind) -> Component {
    match sampling {
        SamplingKind::Poisson(rate) => Component::Atoms {
            atoms: atoms.poisson_subsampled(rate),
            symmetry: Symmetry::Asymmetric,
            lattice: None,
        },
        _ => Component::Atoms {
            atoms,
            symmetry: Symmetry::Symmetric,
            lattice: (epsilon > 0.0).then_some(epsilon),
        },
    }
}

impl Plan {
    /// The composition's zCDP guarantee when every event has one (as the zCDP accountant of
    /// [`crate::comparison`] adds them: ρ-zCDP composes by adding ρ, an unsampled Gaussian is
    /// μ²/2-zCDP, an ε-DP pair ε²/2-zCDP, ε-bounded range ε²/8-zCDP, and an (ε, δ₀) pair is
    /// δ₀-approximately ε²/2-zCDP, the δ₀ adding up); `None` when some event has none
    /// (sampled events: zCDP has no useful amplification). The accountant takes the smaller
    /// of its conversion and the PLD's upper bound: both are upper bounds, and where the PLD
    /// holds an event only by a pair that dominates its guarantee (`zcdp`, `rdp_curve` within
    /// ~0.3% of the optimal conversion in δ; an exponential selection beside other events by
    /// the ε-DP pair, four times its ε²/8) the conversion can be the tighter: 23 Gaussians
    /// (σ 0.915) beside 82 exponential selections (ε 0.642) and a few more events, δ 1e-8,
    /// gave a PLD upper end of 58.07 against the conversion's 55.01.
    ///
    /// # Guarantee
    /// ρ and the spent δ₀ are rounded up: widened by `4·(n + 4)` units of round-off for n
    /// events, above the relative error of their summed terms (each a few ulps).
    pub(super) fn upper_zcdp(&self) -> Option<ZcdpBound> {
        let (mut rho, mut spent) = (0.0, 0.0);
        for event in &self.spec.events {
            let (r, d) = crate::analytic::event_bounds::zcdp(event, self.spec.neighbouring).ok()?;
            rho += event.count as f64 * r;
            spent += event.count as f64 * d;
        }
        let widen = 1.0 + 4.0 * (self.spec.events.len() as f64 + 4.0) * f64::EPSILON;
        let (rho, spent) = (rho * widen, spent * widen);
        (rho.is_finite() && rho > 0.0 && spent.is_finite()).then_some(ZcdpBound { rho, spent })
    }

    /// Every event's (ε, δ) guarantee with its count, for the composition theorems; `None`
    /// when some event has none (Gaussian noise, Rényi guarantees, sampling without
    /// replacement of anything but pure-ε pairs).
    ///
    /// The accountant takes the smallest of the theorems and the PLD's upper bound: all are
    /// upper bounds, and at a δ so small that ε nears the largest loss the composition can
    /// have, Σεᵢ, the grid's upper end, rounded up by up to a step, can lie above basic
    /// composition (4 binary pairs at ε 0.0375 and one ε-DP pair at 0.00113, δ 1e-10: PLD
    /// [0.150893, 0.150968], Σεᵢ = 0.150903).
    pub(super) fn approximate_dp_events(
        &self,
    ) -> Option<Vec<(crate::analytic::composition_theorems::ApproxDp, u64)>> {
        self.spec
            .events
            .iter()
            .map(|event| {
                crate::analytic::event_bounds::approximate_dp(event, self.spec.neighbouring)
                    .ok()
                    .map(|guarantee| (guarantee, event.count))
            })
            .collect()
    }

    /// `(ε₀, k)` when the composition is k runs of guarantee events (and nothing else) for
    /// which `epsilon_of` gives one and the same finite ε₀; `None` otherwise.
    fn uniform_guarantee_epsilon(
        &self,
        epsilon_of: impl Fn(&MechanismKind) -> Option<f64>,
    ) -> Option<(f64, u64)> {
        if self.groups.is_empty() || self.gaussian_mu.is_some() {
            return None;
        }
        let mut epsilon0: Option<f64> = None;
        let mut k = 0u64;
        for group in &self.groups {
            let Component::Guarantee(pair) = &group.component else {
                return None;
            };
            let e = epsilon_of(&pair.guarantee)?;
            if epsilon0.is_some_and(|e0| e0 != e) {
                return None;
            }
            epsilon0 = Some(e);
            k = k.checked_add(group.count)?;
        }
        epsilon0.filter(|e| e.is_finite()).map(|e| (e, k))
    }

    /// `(ε₀, k)` when the composition is k runs of mechanisms that are all ε₀-DP: by their
    /// guarantee (`exponential`, `student_t`, `cauchy`, with one ε₀), or else every event
    /// pure ε-DP by its own parameters (Laplace and discrete Laplace noise, randomized
    /// response, a `pmf_pair` without one-sided mass; amplified by its sampling, see
    /// [`crate::analytic::event_bounds::approximate_dp`]), ε₀ then the largest event's,
    /// widened by 32 ulps for its rounding. The accountant then also takes the exact optimal
    /// composition of k ε₀-DP mechanisms (Kairouz, Oh & Viswanath), a valid upper bound:
    /// for exact mechanisms the grid's is usually the tighter, but not where its upper end
    /// is lost. (Poisson-sampled Laplace noise, scale 27.9, q 1.17e-4, 158,384 runs, at δ
    /// 1e-10: the grid's upper end 0.0250, the optimal composition's 0.0085; randomized
    /// response at ε 0.01 run 10⁹ times, past the grid's range, at δ 1e-10: RDP's 55226.3,
    /// the optimal composition's 52010.2.) `None` otherwise.
    pub(super) fn upper_pure_dp(&self) -> Option<(f64, u64)> {
        self.uniform_guarantee_epsilon(|kind| match *kind {
            MechanismKind::Exponential { epsilon } => Some(epsilon),
            ref kind => kind.smooth_sensitivity_epsilon(),
        })
        .or_else(|| self.largest_pure_epsilon())
    }

    /// `(ε₀, δ₀, k)` when the composition is k unsampled runs of `eps_delta` at one (ε₀, δ₀)
    /// and nothing else: its pair is then the worst (ε₀, δ₀)-DP pair, whose k-fold
    /// composition Kairouz, Oh & Viswanath's sum gives exactly, from both sides. (For a
    /// composition too large for any grid: 10¹² runs at ε₀ 1e-9, δ₀ 1e-20.)
    pub(super) fn uniform_eps_delta(&self) -> Option<(f64, f64, u64)> {
        let mut pair = None;
        let mut k = 0u64;
        for event in &self.spec.events {
            let MechanismKind::EpsDelta { epsilon, delta } = event.mechanism.kind else {
                return None;
            };
            if !matches!(event.sampling.kind, SamplingKind::None)
                || pair.is_some_and(|p| p != (epsilon, delta))
            {
                return None;
            }
            pair = Some((epsilon, delta));
            k = k.checked_add(event.count)?;
        }
        pair.map(|(epsilon, delta)| (epsilon, delta, k))
    }

    /// `(ε/2, k)` when the composition is k exponential selections at one ε and nothing
    /// else: their lower bound is the exponential mechanism over two outputs, randomized
    /// response at ε/2, whose k-fold composition is the optimal composition of k (ε/2)-DP
    /// runs, computed exactly (Kairouz, Oh & Viswanath). Where the lattice of the optimal
    /// adaptive composition is out of reach (more than about 4000 selections), the grid's
    /// lower end of that pair collapses once its losses are tiny against the step: 10⁷
    /// selections at ε 0.001, δ 1e-5, gave 0 where the pair's exact ε is about 6.9.
    pub(super) fn exponential_lower_pair(&self) -> Option<(f64, u64)> {
        self.uniform_guarantee_epsilon(|kind| match *kind {
            MechanismKind::Exponential { epsilon } => Some(epsilon),
            _ => None,
        })
        .map(|(epsilon, k)| (0.5 * epsilon, k))
    }

    /// `(ε₀, k)`: the largest pure ε of the events (see [`Plan::upper_pure_dp`]) and the
    /// number of runs, when every event has one (δ = 0); `None` otherwise.
    fn largest_pure_epsilon(&self) -> Option<(f64, u64)> {
        let mut epsilon0 = 0.0f64;
        let mut k = 0u64;
        for event in &self.spec.events {
            let guarantee =
                crate::analytic::event_bounds::approximate_dp(event, self.spec.neighbouring)
                    .ok()?;
            if guarantee.delta != 0.0 || !guarantee.epsilon.is_finite() {
                return None;
            }
            epsilon0 = epsilon0.max(guarantee.epsilon);
            k = k.checked_add(event.count)?;
        }
        let widened = epsilon0 * (1.0 + 32.0 * f64::EPSILON);
        (k > 0 && widened.is_finite()).then_some((widened, k))
    }

    /// The optimal adaptive composition's lattice bracket when the composition is k
    /// exponential mechanisms at one ε (and nothing else) and it fits its work budget
    /// (k up to about 4000): both of its ends are valid, and far tighter than the composed
    /// dominating pair (100 selections at ε = 1, δ = 10⁻⁶: [34.85, 35.0] against
    /// [33.29, 48.80]). Cached: a process builds it once per (ε, k). `None` otherwise.
    pub(super) fn bounded_range_composition(
        &self,
    ) -> Option<std::sync::Arc<crate::analytic::bounded_range_optimal::BoundedRangeComposition>>
    {
        use crate::analytic::bounded_range_optimal::BoundedRangeComposition;
        use std::sync::{Arc, Mutex};
        let (epsilon, k) = self.uniform_guarantee_epsilon(|kind| match *kind {
            MechanismKind::Exponential { epsilon } => Some(epsilon),
            _ => None,
        })?;
        type Cache = Vec<((u64, u64), Option<Arc<BoundedRangeComposition>>)>;
        static CACHE: Mutex<Cache> = Mutex::new(Vec::new());
        let key = (epsilon.to_bits(), k);
        if let Ok(cache) = CACHE.lock() {
            if let Some((_, found)) = cache.iter().find(|(key2, _)| *key2 == key) {
                return found.clone();
            }
        }
        let built = BoundedRangeComposition::within_budget(epsilon, k).map(Arc::new);
        if let Ok(mut cache) = CACHE.lock() {
            if cache.len() >= 8 {
                cache.remove(0);
            }
            cache.push((key, built.clone()));
        }
        built
    }

    /// `μ_hi` of a closed-form upper bound when every group is a shuffled or
    /// random-allocation epoch or a Poisson-subsampled Gaussian step: each is at most its
    /// record's steps without amplification (one Gaussian step for shuffling, see
    /// [`ShuffleEpoch`]; k steps, `μ_epoch² = k·μ_step²`, for allocation, see [`Allocation`];
    /// the step itself for sampling), so the composition is at most the Gaussian of
    /// `μ² = μ_unsampled² + Σ count·μ_epoch²`. For shuffling that is the upper composition
    /// itself; for allocation and sampling it is looser than the grid's amplified bound
    /// wherever the grid can represent the losses. The computed μ is widened by its rounding
    /// bound as in [`Plan::analytic_mu`]. `None` otherwise (or for a non-finite μ).
    ///
    /// Sampling at rate γ: the pair `((1−γ)Q + γP, Q)` and its swap are dominated by (P, Q) at
    /// every ε, by joint convexity of the hockey-stick divergence,
    /// `H_{e^ε}((1−γ)Q + γP ‖ Q) ≤ (1−γ)·(1 − e^ε)₊ + γ·H_{e^ε}(P ‖ Q) ≤ H_{e^ε}(P ‖ Q)` (the
    /// last step as `H_{e^ε}(P ‖ Q) ≥ 1 − e^ε`), and the Gaussian pair is its own swap; a
    /// domination at every ε survives composition.
    ///
    /// On the grid an upper bound is lost past the loss limit (ε above 600 nats reads ∞);
    /// the closed form has no such limit: DP-SGD with σ 0.01, q 0.01, 10 steps had ε(1e-5) ∈
    /// [0, ∞].
    pub(super) fn upper_gaussian_mu(&self) -> Option<f64> {
        if self.groups.is_empty() {
            return None;
        }
        let mut mu_squared = self.gaussian_mu.map_or(0.0, |mu| mu * mu);
        for group in &self.groups {
            let (mu, steps) = match &group.component {
                Component::Shuffle(epoch) => (epoch.step.mu(), 1.0),
                Component::RandomAllocation(a) => (a.gaussian.mu(), a.participations as f64),
                Component::SubsampledGaussian(step) => (step.base().mu(), 1.0),
                _ => return None,
            };
            mu_squared += group.count as f64 * steps * mu * mu;
        }
        let mu = mu_squared.sqrt();
        // The terms of `gaussian_mu` (see `Plan::new`), four roundings per group's term, one
        // per addition, and the root: within (terms + 4)·2⁻⁵² relative.
        let terms = 3.0 * self.groups.len() as f64 + 1.0;
        let relative_error = self.gaussian_mu_relative_error + (terms + 4.0) * f64::EPSILON;
        (mu.is_finite() && mu > 0.0).then_some(mu * (1.0 + relative_error))
    }

    /// μ of a Gaussian whose composition the plan is at least as leaky as, when the plan
    /// has random-allocation or shuffled epochs (whose grid lower bounds are loose by
    /// nature, and can be lost at huge counts): the unsampled Gaussians (exact) composed with,
    /// for each epoch, the post-processing that reports only the sum of its t outputs,
    /// `N(k·s, tσ²)` against `N(0, tσ²)` (k participations of a step with shift s; k = 1
    /// for shuffling, whose pair with every other record equal to the neighbour's is random
    /// allocation's). Other events are left out: a sub-composition is never leakier. The μ
    /// is narrowed by its rounding bound. `None` without such epochs.
    pub(super) fn lower_gaussian_mu(&self) -> Option<f64> {
        let mut mu_squared = self.gaussian_mu.map_or(0.0, |mu| mu * mu);
        let mut epochs = false;
        for group in &self.groups {
            let (mu_step, k, t) = match &group.component {
                Component::RandomAllocation(a) => {
                    (a.gaussian.mu(), a.participations, a.steps_per_epoch)
                }
                Component::Shuffle(epoch) => (epoch.step.mu(), 1, epoch.steps_per_epoch),
                _ => continue,
            };
            epochs = true;
            let mu_epoch = k as f64 * mu_step / (t as f64).sqrt();
            mu_squared += group.count as f64 * mu_epoch * mu_epoch;
        }
        let mu = mu_squared.sqrt();
        // The terms of `gaussian_mu`, five roundings per group's term, one per addition, and
        // the root: within (6·groups + 4)·2⁻⁵² relative.
        let terms = 6.0 * self.groups.len() as f64 + 4.0;
        let relative_error = self.gaussian_mu_relative_error + terms * f64::EPSILON;
        (epochs && mu.is_finite() && mu > 0.0).then_some(mu * (1.0 - relative_error))
    }

    /// The δ each single event's discretization may add by merging tail bins, for an ε(δ)
    /// query at `delta`: [`TAIL_MERGE_SHARE`]·δ over the number of events composed, so that
    /// all of them together move the composed δ by at most that share of δ (see
    /// [`PrivacyLossDistribution::with_merged_tails`]). Either bound stays guaranteed
    /// whatever the budget; the share only decides how much tightness merging may cost.
    pub(super) fn merge_budget(&self, delta: f64) -> f64 {
        let events = self.event_count();
        if events >= 1.0 && delta.is_finite() && delta > 0.0 {
            TAIL_MERGE_SHARE * delta / events
        } else {
            0.0
        }
    }

    /// The events composed (the unsampled Gaussians, composed in closed form, count as one).
    fn event_count(&self) -> f64 {
        self.groups
            .iter()
            .fold(f64::from(u8::from(self.gaussian_mu.is_some())), |n, g| {
                n + g.count as f64
            })
    }

    /// The truncation mass of a δ(ε) query's grids once its bracket bounds δ from below by
    /// `delta_lower`: [`TRUNCATION_SHARE`]·δ over the number of events composed, rounded
    /// down to a power of ten (so that queries at nearby ε share their discretizations),
    /// so that what all the truncations together charge to the infinite loss (upper bound)
    /// or leave out (lower bound) stays within that share of δ. `None` without events or
    /// for a `delta_lower` that is not positive and finite. Either bound stays guaranteed
    /// whatever the truncation; the share only decides how much tightness it may cost.
    pub(super) fn delta_query_truncation(&self, delta_lower: f64) -> Option<f64> {
        let events = self.event_count();
        let share = TRUNCATION_SHARE * delta_lower / events;
        (events >= 1.0 && share > 0.0 && share.is_finite())
            .then(|| 10f64.powf(share.log10().floor()).min(share))
            .filter(|&tail| tail > 0.0)
    }

    /// Whether every event's single PMF costs a few CDF evaluations per grid point (a
    /// mechanism, a mixture, a pair of atoms), so that a grid's cost follows its composed
    /// size (not so for the epochs of random allocation and shuffling, nor for pairs built
    /// from a guarantee).
    pub(super) fn discretizes_per_point(&self) -> bool {
        self.groups.iter().all(|g| {
            !matches!(
                g.component,
                Component::RandomAllocation(_) | Component::Shuffle(_) | Component::Guarantee(_)
            )
        })
    }

    /// Whether every event's privacy loss is continuous (Gaussian noise, possibly sampled):
    /// no atoms, no lattice, so a grid's upper bound improves steadily as its step shrinks
    /// (pairs with atoms are exact on grids aligned to their lattice, which a finer grid
    /// need not be).
    pub(super) fn continuous_losses(&self) -> bool {
        self.groups.iter().all(|g| {
            matches!(
                g.component,
                Component::SubsampledGaussian(_)
                    | Component::Mixture(_)
                    | Component::TruncatedPoisson(_)
            )
        })
    }

    /// Whether a retry's tail-accuracy measures change some event's PLD (see
    /// [`Component::tilts_when_reaching`]), not only how the events are composed.
    pub(super) fn has_tilted_split(&self) -> bool {
        self.groups
            .iter()
            .any(|group| group.component.tilts_when_reaching())
    }

    /// Number of distinct single PMFs a composition multiplies (groups, and the merged
    /// unsampled Gaussians).
    pub(super) fn distinct_factors(&self) -> usize {
        self.groups.len() + usize::from(self.gaussian_mu.is_some())
    }

    /// Whether a lower bound in the plan may stay loose whatever the grid: loose by nature
    /// ([`Plan::loose_by_nature`]), or truncated Poisson sampling, whose lower bound ignores
    /// what a cut batch exposes (loose where cut steps are not negligible, tight where they
    /// are). The refinement stops on such plans once the upper end has settled and the lower
    /// end cannot catch up (see `Accountant::refine`).
    pub(super) fn lower_may_be_loose(&self) -> bool {
        self.loose_by_nature()
            || self
                .groups
                .iter()
                .any(|g| matches!(g.component, Component::TruncatedPoisson(_)))
    }

    /// Whether a lower bound in the plan is loose by nature (shuffling; random allocation of
    /// 1 < k < t steps; a mechanism known only by its guarantee), so that a bracket that stops
    /// narrowing will not narrow further.
    pub(super) fn loose_by_nature(&self) -> bool {
        self.groups.iter().any(|g| match &g.component {
            Component::Shuffle(_) | Component::Guarantee(_) => true,
            Component::RandomAllocation(a) => a.participations > 1,
            _ => false,
        })
    }
}

/// The lower-bound pair of a mechanism known by its guarantee.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum GuaranteeLower {
    /// A Gaussian that has the guarantee.
    Gaussian(Gaussian),
    /// Exact atoms of a mechanism that has it (symmetric).
    Atoms(LossAtoms),
    /// None known: no loss.
    NoLoss,
}

/// A mechanism known only by a Rényi guarantee (zCDP or an RDP curve), both directions alike
/// (the guarantee holds for ordered pairs of neighbours either way round).
///
/// - **Upper**: the guarantee's worst-case pair
///   ([`crate::mechanism::renyi_worst_case`]): it dominates every mechanism with the
///   guarantee.
/// - **Lower**: a Gaussian that has the guarantee (zCDP: μ = √(2ρ), which is exactly ρ-zCDP;
///   an RDP curve: the largest μ with αμ²/2 ≤ value at every listed order), or no loss when
///   only μ = 0 has it. This is a lower bound on the worst case over mechanisms with the
///   guarantee, not on the user's own mechanism, which may do better: the bracket is wide by
///   nature.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct GuaranteePair {
    pub(super) upper: LossAtoms,
    pub(super) lower: GuaranteeLower,
    /// ρ of a zCDP guarantee (for the closed-form conversion of a pure-zCDP composition).
    pub(super) rho: Option<f64>,
    /// The guarantee itself: `zcdp` or `rdp_curve`.
    pub(super) guarantee: MechanismKind,
}

/// An approximate zCDP guarantee of a whole composition ([`Plan::upper_zcdp`]): ρ-zCDP once
/// `spent` of δ is set aside.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ZcdpBound {
    pub(super) rho: f64,
    pub(super) spent: f64,
}

impl ZcdpBound {
    /// Upper bound on ε at `delta` (+∞ when the events' own δ₀ uses it up).
    pub(super) fn epsilon(&self, delta: f64) -> f64 {
        let remaining = delta - self.spent;
        if remaining.is_nan() || remaining <= 0.0 {
            return f64::INFINITY;
        }
        crate::analytic::zcdp::epsilon_for_delta(self.rho, remaining).epsilon
    }

    /// Upper bound on δ at `epsilon` (at most 1), the spent δ₀ included.
    pub(super) fn delta(&self, epsilon: f64) -> f64 {
        let converted = crate::analytic::zcdp::delta_for_epsilon(self.rho, epsilon);
        // (Rounded up: a sum of two non-negative terms errs by at most one ulp of it.)
        ((converted + self.spent) * (1.0 + f64::EPSILON)).min(1.0)
    }
}

/// The worst-case pair and the attaining Gaussian of a `zcdp` or `rdp_curve` mechanism
/// (`attained_mu` overrides the Gaussian's μ; 0 for none).
fn guarantee_component(kind: &MechanismKind, attained_mu: Option<f64>) -> Result<GuaranteePair> {
    use crate::mechanism::renyi_worst_case::RenyiGuarantee;
    let rho = match *kind {
        MechanismKind::Zcdp { rho } => Some(rho),
        _ => None,
    };
    let (guarantee, mu) = match kind {
        &MechanismKind::Zcdp { rho } => (RenyiGuarantee::zcdp(rho)?, (2.0 * rho).sqrt()),
        MechanismKind::RdpCurve { orders, values } => {
            let mu_squared = orders
                .iter()
                .zip(values)
                .map(|(a, v)| 2.0 * v / a)
                .fold(f64::INFINITY, f64::min);
            (RenyiGuarantee::curve(orders, values)?, mu_squared.sqrt())
        }
        _ => {
            return Err(Error::invalid(
                "mechanism",
                "not a guarantee",
                "zcdp or rdp_curve",
            ))
        }
    };
    let mu = attained_mu.unwrap_or(mu);
    let lower = if mu.is_finite() && mu > 0.0 {
        GuaranteeLower::Gaussian(Gaussian::new(1.0, mu)?)
    } else {
        GuaranteeLower::NoLoss
    };
    Ok(GuaranteePair {
        upper: cached_worst_case_atoms(kind, &guarantee),
        lower,
        rho,
        guarantee: kind.clone(),
    })
}

/// Worst-case pairs built recently (about 0.1 s each): a process that asks many accountants
/// about the same guarantee (a curve, a sweep, a calibration, a Python loop) builds it once.
const GUARANTEE_CACHE_SIZE: usize = 16;

fn cached_worst_case_atoms(
    kind: &MechanismKind,
    guarantee: &crate::mechanism::renyi_worst_case::RenyiGuarantee,
) -> LossAtoms {
    use std::sync::Mutex;
    static CACHE: Mutex<Vec<(MechanismKind, LossAtoms)>> = Mutex::new(Vec::new());
    if let Ok(cache) = CACHE.lock() {
        if let Some((_, atoms)) = cache.iter().find(|(k, _)| k == kind) {
            return atoms.clone();
        }
    }
    let atoms = guarantee.worst_case_atoms();
    if let Ok(mut cache) = CACHE.lock() {
        if cache.len() >= GUARANTEE_CACHE_SIZE {
            cache.remove(0);
        }
        cache.push((kind.clone(), atoms.clone()));
    }
    atoms
}

impl Component {
    pub(super) fn symmetry(&self) -> Symmetry {
        match self {
            Component::Laplace(_) | Component::Guarantee(_) => Symmetry::Symmetric,
            Component::SubsampledGaussian(_)
            | Component::SubsampledLaplace(_)
            | Component::Mixture(_) => Symmetry::Asymmetric,
            Component::DiscreteGaussian { pair, .. } => pair_symmetry(*pair),
            Component::Atoms { symmetry, .. } => *symmetry,
            Component::RandomAllocation(_)
            | Component::TruncatedPoisson(_)
            | Component::Shuffle(_) => Symmetry::Asymmetric,
        }
    }

    /// Whether [`Component::off_lattice_atoms`] has atoms for this component (a cheap test).
    pub(super) fn has_off_lattice_atoms(&self) -> bool {
        matches!(
            self,
            Component::DiscreteGaussian {
                pair: IntegerPair::Poisson(_),
                ..
            } | Component::Atoms { lattice: None, .. }
        ) || matches!(self, Component::Guarantee(pair) if matches!(pair.lower, GuaranteeLower::Atoms(_)))
    }

    /// The exact atoms of a pair whose losses lie off any lattice the grid is aligned to, for
    /// the lower bound's groups of runs (see [`LossAtoms::lower_power_by_squaring`]): a
    /// sampled discrete Gaussian's (its tails at `tail_mass`), or atoms without a known
    /// lattice; `None` for every other component.
    pub(super) fn off_lattice_atoms(&self, tail_mass: f64) -> Result<Option<LossAtoms>> {
        match self {
            &Component::DiscreteGaussian {
                sigma,
                sensitivity,
                pair: pair @ IntegerPair::Poisson(_),
            } => discrete::discrete_gaussian(sigma, sensitivity, pair, tail_mass).map(Some),
            Component::Atoms {
                atoms,
                lattice: None,
                ..
            } => Ok(Some(atoms.clone())),
            // (The lower pair of an exponential selection: randomized response at ε/2, whose
            // tiny losses a grid would otherwise round away run by run: 10⁷ selections at
            // ε 0.001 beside ten Gaussians, δ 1e-5, had a lower end of 0.)
            Component::Guarantee(pair) => match &pair.lower {
                GuaranteeLower::Atoms(atoms) => Ok(Some(atoms.clone())),
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// Whether the event's PLD depends on [`super::Grid::reaching`] (a retry's tail-accuracy
    /// measures): random allocation with 1 < k < t then composes its split blocks with
    /// tilted convolutions (see [`Allocation::split_into_single_allocations`]).
    pub(super) fn tilts_when_reaching(&self) -> bool {
        matches!(self, Component::RandomAllocation(a) if a.participations > 1)
    }

    /// Whether discretizing the event costs far more than holding its PLD: an epoch of
    /// random allocation or shuffling builds a lattice of up to millions of points (seconds
    /// at σ < 1) for a PMF on the loss grid. Such PLDs are kept by the accountant (see
    /// [`super::Accountant::group_single`]).
    pub(super) fn costly_to_discretize(&self) -> bool {
        matches!(self, Component::RandomAllocation(_) | Component::Shuffle(_))
    }

    /// The single-event PLD in one bound.
    ///
    /// `merge_budget`: the δ the discretization of a continuous mechanism may add by merging
    /// tail bins (see [`PrivacyLossDistribution::with_merged_tails`]); the other components
    /// ignore it.
    pub(super) fn pld(
        &self,
        bound: Bound,
        step: f64,
        tail_mass: f64,
        merge_budget: f64,
        reaching: bool,
        epoch_laws: &EpochLaws<Gaussian>,
    ) -> Result<PrivacyLossDistribution> {
        let symmetry = self.symmetry();
        let grid = (step, tail_mass, bound, merge_budget);
        fn continuous<M: MonotonePrivacyLoss>(
            m: &M,
            symmetry: Symmetry,
            (step, tail_mass, bound, merge_budget): (f64, f64, Bound, f64),
        ) -> Result<PrivacyLossDistribution> {
            PrivacyLossDistribution::with_merged_tails(
                m,
                symmetry,
                step,
                tail_mass,
                bound,
                merge_budget,
            )
        }
        match self {
            Component::SubsampledGaussian(m) => continuous(m, symmetry, grid),
            Component::Mixture(m) => continuous(m, symmetry, grid),
            Component::Laplace(m) => continuous(m, symmetry, grid),
            Component::SubsampledLaplace(m) => continuous(m, symmetry, grid),
            &Component::DiscreteGaussian {
                sigma,
                sensitivity,
                pair,
            } => {
                let atoms = discrete::discrete_gaussian(sigma, sensitivity, pair, tail_mass)?;
                PrivacyLossDistribution::from_atoms(&atoms, symmetry, step, bound)
            }
            Component::Atoms { atoms, .. } => {
                PrivacyLossDistribution::from_atoms(atoms, symmetry, step, bound)
            }
            Component::Guarantee(pair) => match (bound, &pair.lower) {
                (Bound::Upper, _) => {
                    PrivacyLossDistribution::from_atoms(&pair.upper, symmetry, step, bound)
                }
                (Bound::Lower, GuaranteeLower::Gaussian(gaussian)) => {
                    PrivacyLossDistribution::from_mechanism(
                        gaussian, symmetry, step, tail_mass, bound,
                    )
                }
                (Bound::Lower, GuaranteeLower::Atoms(atoms)) => {
                    PrivacyLossDistribution::from_atoms(atoms, symmetry, step, bound)
                }
                (Bound::Lower, GuaranteeLower::NoLoss) => no_loss_lower(step),
            },
            Component::RandomAllocation(allocation) => {
                allocation.pld(bound, step, tail_mass, reaching, epoch_laws)
            }
            Component::Shuffle(epoch) => epoch.pld(bound, step, tail_mass, epoch_laws),
            Component::TruncatedPoisson(tp) => {
                truncated_poisson_pld(tp, bound, step, tail_mass, merge_budget)
            }
        }
    }

    /// The single event's loss range (nats) on a grid truncated at `tail_mass`, for the
    /// finest step a grid can hold ([`Plan::fits`]): [`Component::loss_width`] without
    /// slack, except that a sampled Gaussian's range (also each part of truncated Poisson
    /// sampling's) is its truncated one, which sampling narrows (never wider than the
    /// unsampled one's). With the unsampled Gaussian's width, refinements of σ 1, q 1e-5,
    /// 10⁶ steps stopped at a step of 1e-5 nats (41 nats across 2²² points, "grid size
    /// limit", ε in [0.03557, 0.03886]) where the losses span 0.013 nats at the ε query's
    /// tail mass 1e-14.
    ///
    /// `tail_mass` is `Some` only for grids whose far tails are merged (a merge budget, as
    /// ε(δ) queries have, and δ(ε) queries once unmerged ranges would stop a refinement, see
    /// the accountant's `TailMerging`): a grid then costs about what its bulk holds. `None`
    /// (grids that merge nothing) keeps the rough width: every far-tail node then costs a
    /// landing of the lower bound's atoms, and σ 0.6, q 1e-6, 10⁶ steps, δ(0.0097) took
    /// 16.8 s on the grid the truncated range allowed when δ(ε) queries merged nothing.
    ///
    /// A Poisson-sampled discrete Gaussian's range is that of its atoms at the grid's
    /// truncation mass `truncation`, which sampling narrows too: with the unsampled
    /// Gaussian's rough width (5.03 nats at σ 4, where the atoms span 0.00965 at a truncation
    /// of 1e-16), σ 4, q 1e-3, 1000 runs, δ(0.0216) stopped at a step of 2.4e-6 nats, "grid
    /// size limit", 5.9e-4 of δ wide against the tolerance of 1e-4.
    fn loss_range(&self, tail_mass: Option<f64>, truncation: f64) -> f64 {
        match (self, tail_mass) {
            // Its atoms at the grid's truncation mass `truncation`.
            (
                &Component::DiscreteGaussian {
                    sigma,
                    sensitivity,
                    pair: pair @ IntegerPair::Poisson(_),
                },
                _,
            ) => discrete::discrete_gaussian_loss_span(sigma, sensitivity, pair, truncation),
            (Component::SubsampledGaussian(m), Some(tail_mass)) => {
                sampled_gaussian_range(m, tail_mass)
            }
            // Its parts are sampled Gaussians too (shifts Δ and 2Δ).
            (Component::TruncatedPoisson(tp), Some(tail_mass)) => tp
                .upper()
                .iter()
                .map(|part| {
                    let tail = part_tail_mass(tail_mass, part.weight, tp.upper().len());
                    sampled_gaussian_range(&part.pair, tail)
                })
                .chain(tp.lower().map(|m| sampled_gaussian_range(&m, tail_mass)))
                .fold(0.0, f64::max),
            _ => self.loss_width(0.0),
        }
    }

    /// A rough width (nats) of the single-event loss range plus `slack`, for grid-size
    /// estimates.
    pub(super) fn loss_width(&self, slack: f64) -> f64 {
        let gaussian_width = |mu: f64| gaussian_range(mu) + slack;
        match self {
            Component::SubsampledGaussian(m) => gaussian_width(m.base().mu()),
            Component::Mixture(m) => truncated_width(m) + slack,
            Component::Laplace(m) => truncated_width(m) + slack,
            Component::SubsampledLaplace(m) => truncated_width(m) + slack,
            Component::DiscreteGaussian {
                sigma, sensitivity, ..
            } => gaussian_width(*sensitivity as f64 / sigma),
            // No wider than the epoch without amplification.
            Component::RandomAllocation(a) => {
                gaussian_width(a.gaussian.mu() * (a.participations as f64).sqrt())
            }
            // The upper bound's single step is the widest.
            Component::Shuffle(epoch) => gaussian_width(epoch.step.mu()),
            // The widest part: a shift of 2Δ.
            Component::TruncatedPoisson(tp) => tp
                .upper()
                .iter()
                .map(|part| gaussian_width(part.pair.base().mu()))
                .fold(0.0, f64::max),
            Component::Atoms { atoms, .. } => atoms_range(atoms) + slack,
            Component::Guarantee(pair) => atoms_range(&pair.upper) + slack,
        }
    }
}

/// The rough loss range (nats) of a Gaussian pair with shift μ (in units of σ): ±10σ of
/// its loss, whose mean is μ²/2.
fn gaussian_range(mu: f64) -> f64 {
    mu * mu / 2.0 + 20.0 * mu
}

/// The loss range of finite atoms (nats).
fn atoms_range(atoms: &LossAtoms) -> f64 {
    let a = atoms.atoms();
    let (lo, hi) = a
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x.loss), hi.max(x.loss))
        });
    if lo <= hi {
        hi.min(700.0) - lo.max(-700.0)
    } else {
        0.0
    }
}

/// One step of truncated Poisson sampling in one bound: upper, the revealed mixture of its
/// parts' upper PLDs (each part truncated at `tail_mass`, so the mixture is too); lower, the
/// attained Poisson pair, or no loss at all when its rate underflows.
fn truncated_poisson_pld(
    tp: &TruncatedPoissonGaussian,
    bound: Bound,
    step: f64,
    tail_mass: f64,
    merge_budget: f64,
) -> Result<PrivacyLossDistribution> {
    // A mixture of parts each within `merge_budget` of its own δ is within it too.
    let discretize = |pair: &PoissonSubsampled<Gaussian>, tail_mass: f64| {
        PrivacyLossDistribution::with_merged_tails(
            pair,
            Symmetry::Asymmetric,
            step,
            tail_mass,
            bound,
            merge_budget,
        )
    };
    match bound {
        Bound::Upper => {
            let count = tp.upper().len();
            let parts = tp
                .upper()
                .iter()
                .map(|part| {
                    let tail = part_tail_mass(tail_mass, part.weight, count);
                    Ok((part.weight, discretize(&part.pair, tail)?))
                })
                .collect::<Result<Vec<_>>>()?;
            if let [(weight, only)] = parts.as_slice() {
                if *weight == 1.0 {
                    return Ok(only.clone());
                }
            }
            let refs: Vec<(f64, &PrivacyLossDistribution)> =
                parts.iter().map(|(w, pld)| (*w, pld)).collect();
            PrivacyLossDistribution::mixture(&refs)
        }
        Bound::Lower => match tp.lower() {
            Some(pair) => discretize(&pair, tail_mass),
            None => no_loss_lower(step),
        },
    }
}

/// The lower bound "no loss at all" (δ(ε) = max(0, 1 − e^ε)), valid for every pair: the
/// fallback when a component's lower-bound pair cannot be built.
pub(super) fn no_loss_lower(step: f64) -> Result<PrivacyLossDistribution> {
    PrivacyLossDistribution::from_atoms(
        &discrete::eps_delta(0.0, 0.0),
        Symmetry::Symmetric,
        step,
        Bound::Lower,
    )
}

/// The losses of the regions of largest and smallest constant loss, 0 where there is none
/// (e.g. `ln(1 + q(e^{±ε₀} − 1))` for subsampled Laplace noise).
pub(super) fn constant_losses<M: MonotonePrivacyLoss>(m: &M) -> (f64, f64) {
    let (top, bottom) = m.constant_loss_regions();
    let loss = |x: Option<f64>| x.map_or(0.0, |x| m.privacy_loss(x));
    (loss(top), loss(bottom))
}

/// How far an atom at loss ±`a` (a > 0) sits beyond the grid point of step `h` next to it
/// on zero's side, in steps: `frac(a/h)`, and 0 within 1e-9 of a grid point (where the
/// optimistic rounding keeps it as it is).
fn overshoot(a: f64, h: f64) -> f64 {
    let r = a / h;
    let frac = r - r.floor();
    if frac <= 1e-9 * r.max(1.0) || 1.0 - frac <= 1e-9 * r.max(1.0) {
        0.0
    } else {
        frac
    }
}

/// The loss range of a continuous mechanism between its widest truncation points.
pub(super) fn truncated_width<M: MonotonePrivacyLoss>(m: &M) -> f64 {
    truncated_width_at(m, 1e-300)
}

/// Largest tail mass a part of a revealed mixture is truncated at (see [`part_tail_mass`]).
const MAX_PART_TAIL_MASS: f64 = 0.5;

/// The tail mass at which a part of weight `weight` among `parts` of a revealed mixture is
/// discretized, so that the parts together cut at most `tail_mass` of the mixture:
/// `tail_mass / (weight · parts)`, at most [`MAX_PART_TAIL_MASS`]. The upper bound stays
/// guaranteed at any tail mass (cut mass goes to +∞ or up to the range); this only keeps the
/// rare parts of truncated Poisson sampling (cut batches, weight about P(Bin(n, q) ≥ B), 1e-11
/// at q 1e-5, n 10⁶, B 40), whose shift of 2Δ spreads their losses over nats, from widening
/// every composed grid: σ 1 over 10⁶ such steps stopped at [0.036305, 0.037212], the
/// composed upper PMF 4.2 nats wide against its lower's 0.22 ("grid size limit").
fn part_tail_mass(tail_mass: f64, weight: f64, parts: usize) -> f64 {
    let tail = tail_mass / (weight * parts as f64);
    if tail.is_finite() && tail > tail_mass {
        tail.min(MAX_PART_TAIL_MASS)
    } else {
        tail_mass
    }
}

/// The loss range of a Poisson-sampled Gaussian truncated at `tail_mass`, at most the
/// unsampled Gaussian's rough range.
fn sampled_gaussian_range(m: &PoissonSubsampled<Gaussian>, tail_mass: f64) -> f64 {
    gaussian_range(m.base().mu()).min(truncated_width_at(m, tail_mass))
}

/// The loss range of a continuous mechanism between its truncation points at `tail_mass`.
fn truncated_width_at<M: MonotonePrivacyLoss>(m: &M, tail_mass: f64) -> f64 {
    let (lo, hi) = m.truncation_points(tail_mass);
    (m.privacy_loss(lo) - m.privacy_loss(hi)).abs().min(1400.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(json: &str) -> Plan {
        Plan::from_spec(&CompositionSpec::from_json_str(json).expect("valid spec")).expect("plans")
    }

    /// Subsampled Laplace noise: the step keeps the upper constant loss on a grid point, and
    /// among such steps down to 0.8 of the largest takes the one whose lower constant loss
    /// sits least beyond a grid point (0.001/48 left it 0.92 of a step beyond; 0.001/58
    /// leaves it 0.025). The search is exhaustive: no candidate does better.
    #[test]
    fn aligned_steps_keep_the_lower_atom_near_a_grid_point() {
        let laplace = plan(
            r#"{"neighbouring":"replace","events":[{"mechanism":"laplace",
            "scale":0.018542936256036893,"sensitivity":0.001953125,
            "sampling":{"fixed_batch":{"batch_size":256,"dataset_size":60000}},"count":1000}]}"#,
        );
        let Component::SubsampledLaplace(m) = laplace.groups[0].component else {
            panic!("subsampled Laplace");
        };
        let (top, bottom) = constant_losses(&m);
        let bottom = bottom.abs();
        assert!((top - 1e-3).abs() < 1e-15 && (bottom - 8.1078e-4).abs() < 1e-8);
        for wanted in [2.2e-5, 1e-5, 3.7e-6, 4e-4] {
            let step = laplace.aligned_step(wanted);
            let largest = (top / wanted * (1.0 - 1e-12)).ceil();
            let last = (largest / 0.8)
                .floor()
                .max((largest + 3.0).min(2.0 * largest));
            assert!(
                step <= wanted && step >= top / last * (1.0 - 1e-12),
                "{wanted:e}: {step:e}"
            );
            assert_eq!(overshoot(top, step), 0.0, "{wanted:e}: {step:e}");
            let distance = |h: f64| overshoot(bottom, h) * h;
            let best = (largest as u64..=last as u64)
                .map(|n| distance(top / n as f64))
                .fold(f64::INFINITY, f64::min);
            assert_eq!(distance(step), best, "{wanted:e}: {step:e}");
        }
        // The default search's fourth grid asked for 0.001/47.6 and took 0.001/48.
        assert_eq!(laplace.aligned_step(2.1e-5), top / 58.0);
        assert!(overshoot(bottom, top / 58.0) < 0.03);
        // Steps above the atoms keep no lattice (it would be finer than the step): candidates
        // step·1000/n. Just above the upper atom, the step equal to it is among them (the
        // upper atom on a grid point, the lower 0.81 of a step beyond 0, against 0.83 and
        // 0.68 at the step asked for); far above, every candidate leaves both atoms about
        // a/h beyond 0, least at the largest step, the step itself.
        assert_eq!(laplace.aligned_step(1.2e-3), 1e-3);
        for wanted in [0.01, 0.3] {
            assert_eq!(laplace.aligned_step(wanted), wanted);
        }
    }

    /// Poisson-sampled Gaussian steps at μ ≥ 2 whose unsampled bulk sits within a step of
    /// ln(1 − q): the aligned step puts ln(1 − q) at (i + 0.4)·h, a tenth of a step below a
    /// node (i + ½)·h of the lower bound's grid, never finer than a quarter of the step
    /// asked for; where no such step exists (q far below the step), or the bulk is spread
    /// (σ 1, or q 0.05 at σ 0.4 on a fine step), the step is unchanged.
    #[test]
    fn sharp_unsampled_bulks_sit_just_below_a_node() {
        let dp_sgd = |sigma: f64, q: f64| {
            plan(&format!(
                r#"{{"neighbouring":"add_remove","events":[{{"mechanism":"gaussian",
                "sigma":{sigma},"sampling":{{"poisson":{q}}},"count":1000}}]}}"#
            ))
        };
        let sharp = dp_sgd(0.3, 1e-3);
        let a = -(-1e-3f64).ln_1p();
        for wanted in [1.117e-3, 3e-4, 1e-4, 2.2e-5] {
            let h = sharp.aligned_step(wanted);
            let r = a / h + NEAR_ATOM_BELOW_NODE;
            assert!(h <= wanted && h >= wanted / 4.0, "{wanted:e}: {h:e}");
            assert!(
                (r - r.round()).abs() < 1e-9 && r.round() >= 1.0,
                "{wanted:e}: {h:e}"
            );
        }
        // Step 1.117e-3 (the first grid of 10⁴ runs): ln(1 − q) is 0.896 steps from 0, and
        // the aligned step is a/1.6 (node −1.5h, ln(1 − q) = −1.6h).
        assert_eq!(sharp.aligned_step(1.117e-3), a / 1.6);
        // q far below the step: an aligned step would be more than 4 times finer.
        assert_eq!(dp_sgd(0.3, 1e-6).aligned_step(1e-3), 1e-3);
        // Spread bulks, or μ below 2.
        assert_eq!(dp_sgd(0.4, 0.05).aligned_step(1e-4), 1e-4);
        assert_eq!(dp_sgd(1.0, 1e-4).aligned_step(1e-3), 1e-3);
        // Two sharp bulks at different rates: no step serves both.
        let two = plan(
            r#"{"neighbouring":"add_remove","events":[
            {"mechanism":"gaussian","sigma":0.3,"sampling":{"poisson":0.001},"count":10},
            {"mechanism":"gaussian","sigma":0.3,"sampling":{"poisson":0.002},"count":10}]}"#,
        );
        assert_eq!(two.aligned_step(3e-4), 3e-4);
    }

    /// Without heavy atoms off the lattice the step is what it was: the largest aligned step,
    /// or the step itself without a lattice (bit for bit: DP-SGD answers do not move).
    #[test]
    fn steps_without_atoms_off_the_lattice_are_unchanged() {
        let gaussian = plan(
            r#"{"neighbouring":"add_remove","events":[{"mechanism":"gaussian","sigma":1.0,
            "sampling":{"poisson":0.01},"count":1000}]}"#,
        );
        for step in [1e-4, 3.3e-5, 0.0123] {
            assert_eq!(gaussian.aligned_step(step), step);
        }
        let laplace = plan(
            r#"{"neighbouring":"add_remove","events":[{"mechanism":"laplace","scale":2.0,
            "count":10}]}"#,
        );
        // ε₀ = 0.5: the largest step ≤ 0.03 dividing it is 0.5/17.
        assert_eq!(laplace.aligned_step(0.03), 0.5 / 17.0);
    }

    /// A δ query's truncation is 1e-9·δ over the events, rounded down to a power of ten
    /// (never above it), and none for a δ that bounds nothing.
    #[test]
    fn delta_query_truncations_are_powers_of_ten_below_the_share() {
        let twenty = plan(
            r#"{"neighbouring":"add_remove","events":[{"mechanism":"gaussian","sigma":1.0,
            "sampling":{"poisson":0.01},"count":20}]}"#,
        );
        // 1e-9 · 2.07e-4 / 20 = 1.035e-14.
        assert_eq!(twenty.delta_query_truncation(2.07e-4), Some(1e-14));
        // 1e-9 · 1e-5 / 20 = 5e-16.
        assert_eq!(twenty.delta_query_truncation(1e-5), Some(1e-16));
        for delta in [1e-300, 1e-12, 0.3, 1.0] {
            let tail = twenty.delta_query_truncation(delta).expect("a truncation");
            let share = TRUNCATION_SHARE * delta / 20.0;
            assert!(
                tail <= share && tail > 0.1 * share * (1.0 - 1e-12),
                "{delta}: {tail}"
            );
        }
        for delta in [0.0, -1.0, f64::NAN, f64::INFINITY, 5e-324] {
            assert_eq!(twenty.delta_query_truncation(delta), None, "{delta}");
        }
    }

    /// The distance beyond a grid point, in steps: 0 on a grid point, within 1e-9 of one.
    #[test]
    fn overshoot_is_the_fraction_beyond_a_grid_point() {
        assert_eq!(overshoot(0.3, 0.1), 0.0);
        assert_eq!(overshoot(1.0, 1.0 / 3.0), 0.0);
        assert!((overshoot(0.25, 0.1) - 0.5).abs() < 1e-12);
        assert!((overshoot(0.39, 0.1) - 0.9).abs() < 1e-12);
        assert_eq!(overshoot(1e-3 * (1.0 - 1e-13), 1e-4), 0.0);
    }

    /// A sampled Gaussian's loss range for the finest grid ([`Component::loss_range`]) is
    /// far narrower than the unsampled one's at small rates, yet never narrower than what its
    /// upper and lower PMFs span at that tail mass (the ε query's 1e-14 and the δ query's
    /// 1e-20; far below, the unsampled width it is capped by, ±10σ of the loss, is short),
    /// from σ 0.3 to 30 and q 1e-9 to 0.5.
    #[test]
    fn sampled_gaussian_ranges_cover_their_pmfs() {
        use crate::pld::{PrivacyLossDistribution, Symmetry};
        for sigma in [0.3, 1.0, 30.0] {
            for rate in [1e-9, 1e-5, 0.01, 0.5] {
                let spec = CompositionSpec::dp_sgd(sigma, rate, 10, 1.0).expect("valid");
                let plan = Plan::from_spec(&spec).expect("plans");
                let component = &plan.groups[0].component;
                let Component::SubsampledGaussian(m) = component else {
                    panic!("sampled Gaussian");
                };
                let unsampled = gaussian_range(m.base().mu());
                for tail_mass in [1e-14, 1e-20] {
                    let range = component.loss_range(Some(tail_mass), tail_mass);
                    let at = format!("σ {sigma}, q {rate}, tail {tail_mass}");
                    assert!(range <= unsampled, "{at}: {range}");
                    if rate <= 1e-5 && sigma >= 1.0 {
                        assert!(range < 0.02 * unsampled, "{at}: {range}");
                    }
                    let step = (range / 2000.0).max(1e-12);
                    for bound in [Bound::Upper, Bound::Lower] {
                        let pld = PrivacyLossDistribution::with_merged_tails(
                            m,
                            Symmetry::Asymmetric,
                            step,
                            tail_mass,
                            bound,
                            0.0,
                        )
                        .expect("discretizes");
                        for pmf in [pld.remove(), pld.add()] {
                            let span = (pmf.len() as f64 - 3.0) * step;
                            assert!(span <= range, "{at}, {bound:?}: {span} > {range}");
                        }
                    }
                }
            }
        }
    }
}
