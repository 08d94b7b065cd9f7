//! From a mechanism to atoms on a uniform loss grid, in both rounding directions.
//!
//! The step between [`crate::mechanism`] (exact pairs of distributions) and [`crate::pmf`]
//! (grid PMFs that can be composed): every error made here is one-sided, up for the upper
//! bound and down for the lower one.
//!
//! - [`loss_bins`]: the exact P- and Q-masses of a continuous mechanism's privacy loss, binned
//!   on the grid (the common input of both roundings).
//! - [`connect_the_dots`]: the pessimistic rounding (an upper bound on every δ(ε)).
//! - [`lumped_atoms`]: the optimistic rounding (a lower bound), by merging outcomes so that
//!   each merged atom lands on a grid node.
//! - [`loss_atoms`]: both roundings for mechanisms with finitely many outcomes (discrete
//!   noise, randomized response, (ε, δ) pairs, listed PMF pairs).
//! - [`random_allocation`]: one epoch of random allocation (each record in exactly one of t
//!   steps), from the law of the sum of t per-step likelihood ratios.
//! - [`shuffle_max`]: a lower bound for one epoch of shuffled batches, from the law of the
//!   epoch's largest output under two neighbouring datasets.
//! - [`atom_power`]: the exact k-fold composition of such a pair with a few atoms, rounded
//!   onto the grid once instead of k times.

pub mod atom_power;
pub mod connect_the_dots;
pub mod loss_atoms;
pub mod loss_bins;
pub mod lumped_atoms;
pub mod random_allocation;
pub mod shuffle_max;
