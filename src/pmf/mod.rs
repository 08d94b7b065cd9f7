//! A privacy loss PMF on a uniform grid, its composition and its conversion to (ε, δ).
//!
//! The stage after [`crate::discretize`]: one PMF per event and bound direction, composed by
//! FFT, with every truncated or aliased mass and the FFT round-off charged to the safe side;
//! [`crate::pld`] pairs them up by neighbouring direction.
//!
//! - [`grid_pmf`]: the PMF itself ([`GridPmf`]): masses on the grid, the mass at +∞ loss,
//!   and the bookkeeping of what truncation and round-off moved where.
//! - [`composition`]: self-composition by one FFT power and heterogeneous composition, with
//!   truncated mass charged to +∞ (upper bound) or dropped (lower bound).
//! - [`mixture`]: the PMF of a revealed mixture of pairs (the weighted sum).
//! - [`product`]: many distinct PMFs, each repeated, composed by one FFT product.
//! - [`hockey_stick`]: δ(ε) and ε(δ) from the hockey-stick divergence of the PMF.
//! - [`run_rounding`]: the bound on each run's rounding that every δ read is widened by,
//!   compounded over the runs composed.
//! - [`tail_moments`]: exponential moments at fixed tilts, for the Chernoff bounds that size
//!   self-composition windows.
//! - [`tail_power`]: a self-composition read only in its upper tail, by one tilted FFT
//!   power over a shorter buffer.

pub mod composition;
pub mod grid_pmf;
pub mod hockey_stick;
pub mod mixture;
pub mod product;
pub mod run_rounding;
pub mod tail_moments;
pub mod tail_power;

pub use grid_pmf::GridPmf;
