//! Analytic accountants: the bounds people already know, as cross-checks of the PLD answer.
//!
//! Each submodule is a small exact formula set with its references (RDP of the base and
//! subsampled mechanisms and its conversions, zCDP, the composition theorems, the exact optimal
//! composition of Kairouz, Oh & Viswanath, the CLT estimate of Dong, Roth & Su). Every
//! function that returns a privacy number says whether it is an upper bound or an estimate.
//!
//! They stand beside the PLD pipeline rather than in it: they read the same
//! [`crate::CompositionSpec`] and are run next to the PLD accountant by
//! [`crate::comparison::compare`].

pub mod bounded_range_optimal;
pub mod clt;
pub mod composition_theorems;
pub mod event_bounds;
pub mod optimal_composition;
pub mod rdp;
pub mod rdp_mechanisms;
pub mod rdp_subsampled;
pub mod zcdp;
