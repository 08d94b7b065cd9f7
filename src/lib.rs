#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod accountant;
pub mod analytic;
pub mod bound;
pub mod calibration;
pub mod comparison;
pub mod discretize;
mod display;
pub mod error;
pub mod mechanism;
pub mod numeric;
pub mod pld;
pub mod pmf;
mod report_number;
pub mod spec;

pub use accountant::{
    Accountant, AccountantOptions, DeltaAnswer, EpsilonAnswer, Settings, Tolerance,
};
pub use bound::{Bound, Bracket};
pub use calibration::{calibrate, Calibration, CalibrationProblem, CalibrationProgress};
pub use comparison::{compare, Comparison, Kind, MethodRow};
pub use discretize::loss_atoms::{LossAtom, LossAtoms};
pub use discretize::loss_bins::LossBins;
pub use discretize::lumped_atoms::LumpedAtoms;
pub use error::{Error, Result};
pub use mechanism::{
    Gaussian, Laplace, MixtureOfGaussians, MonotonePrivacyLoss, PoissonSubsampled,
};
pub use pld::{BracketedPld, PrivacyLossDistribution, Symmetry};
pub use pmf::GridPmf;
pub use spec::presets::Preset;
pub use spec::{CompositionSpec, Event, MechanismSpec, Neighbouring, Sampling};
