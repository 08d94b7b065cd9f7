//! Tight differential-privacy accounting with privacy loss distributions (PLDs), with
//! **guaranteed** upper and lower bounds.
//!
//! Describe what was released — a [`CompositionSpec`]: mechanisms, how often each ran, how
//! its input was sampled, and the neighbouring relation — and ask for ε at a given δ (or δ at
//! a given ε). The answer is a [`Bracket`]: `upper` is a guaranteed upper bound on the
//! smallest ε for which the whole composition is (ε, δ)-differentially private, safe to
//! publish; `lower` is a guaranteed lower bound on that same ε, so no accountant, however
//! exact, can certify less. Every discretization, truncation and rounding error is charged to
//! the safe side of each end.
//!
//! # Computing ε from a specification
//!
//! A specification is JSON (the format, every mechanism and convention, and the exact pair
//! of distributions accounted for each, are in `docs/spec.md`), or built in Rust through the
//! same checks — with the builder (`CompositionSpec::add_remove().event(MechanismSpec::
//! gaussian(1.0)?.poisson(0.01)?.repeat(1000)?).build()?`, see [`spec`]) or a constructor
//! such as [`CompositionSpec::dp_sgd`]:
//!
//! ```
//! use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
//!
//! // DP-SGD: σ = 1 (noise multiplier × clipping norm), Poisson rate 0.01, 1000 steps,
//! // clipping norm 1; add/remove neighbouring.
//! let spec = CompositionSpec::dp_sgd(1.0, 0.01, 1000, 1.0)?;
//! let accountant = Accountant::new(&spec, AccountantOptions::default())?;
//! let answer = accountant.epsilon_for_delta(1e-5)?;
//! // The true ε is about 1.82824; the bracket contains it.
//! assert!(answer.epsilon.lower <= 1.82825 && 1.82824 <= answer.epsilon.upper);
//! println!("publish ε = {:.4} (at δ = 1e-5)", answer.epsilon.upper);
//! println!("{}", answer.epsilon); // [1.826776, 1.828244]: rounded outward, see `Bracket`
//! println!("{answer}"); // ε ∈ [1.826776, 1.828244] at δ = 1e-5
//!
//! // The other way round: δ at ε = 2.
//! let delta = accountant.delta_for_epsilon(2.0)?;
//! assert!(delta.delta.lower <= delta.delta.upper && delta.delta.upper < 1e-5);
//! # Ok::<(), pld_accountant::Error>(())
//! ```
//!
//! The same from JSON, with events of different kinds:
//!
//! ```
//! use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
//!
//! let spec = CompositionSpec::from_json_str(
//!     r#"{
//!       "neighbouring": "add_remove",
//!       "events": [
//!         {"mechanism": "gaussian", "sigma": 1.0, "sensitivity": 1.0,
//!          "sampling": {"poisson": 0.01}, "count": 1000},
//!         {"mechanism": "laplace", "scale": 20.0, "count": 4},
//!         {"mechanism": "randomized_response", "epsilon": 0.1, "count": 10}
//!       ]
//!     }"#,
//! )?;
//! let answer = Accountant::new(&spec, AccountantOptions::default())?.epsilon_for_delta(1e-5)?;
//! assert!(answer.epsilon.lower <= answer.epsilon.upper);
//! // `settings` says how the bracket was computed (grid step, refinements, width, …).
//! assert!(answer.settings.tolerance_met);
//! # Ok::<(), pld_accountant::Error>(())
//! ```
//!
//! Invalid input is an [`Error`] naming the field and its value, never a panic:
//!
//! ```
//! use pld_accountant::CompositionSpec;
//!
//! let error = CompositionSpec::from_json_str(
//!     r#"{"events": [{"mechanism": "gaussian", "sigma": -1}]}"#,
//! )
//! .unwrap_err();
//! assert!(error.to_string().contains("events[0].sigma"));
//! ```
//!
//! [`AccountantOptions`] sets how tight the bracket must be ([`Tolerance`]; by default its
//! width is at most 10⁻³·ε), or a fixed grid step. The accountant picks the grid itself and
//! refines it until the bracket is narrow enough; unsampled Gaussian compositions are
//! answered in closed form, with no grid.
//!
//! # Comparing accountants
//!
//! [`compare`] runs the PLD accountant and the analytic accountants people already know (RDP,
//! zCDP, the composition theorems, the exact optimal composition, the CLT estimate) on the
//! same composition and δ, and labels each number with its [`Kind`]: a guaranteed upper
//! bound, a guaranteed lower bound, or an estimate. Methods that do not apply are listed with
//! the reason.
//!
//! ```
//! use pld_accountant::{compare, AccountantOptions, CompositionSpec, Kind};
//!
//! let spec = CompositionSpec::dp_sgd(1.0, 0.01, 1000, 1.0)?;
//! let report = compare(&spec, 1e-5, AccountantOptions::default())?;
//! let pld = report.row("pld_upper").unwrap().epsilon;
//! let rdp = report.row("rdp").unwrap();
//! assert_eq!(rdp.kind, Kind::UpperBound);
//! assert!(rdp.epsilon > pld); // RDP pays about 15% more ε here
//! println!("{report}"); // a small table, one row per method
//! # Ok::<(), pld_accountant::Error>(())
//! ```
//!
//! # Calibration
//!
//! [`calibrate`] answers the question the other way round: write one field of a
//! specification as `null` (a noise `sigma` or `scale`, a `count`, or a Poisson rate) and it
//! finds the value best for utility — the least noise, the most runs, the largest rate — at
//! which the accountant's upper bound still meets a target (ε, δ), and verifies it with a
//! fresh accountant call.
//!
//! ```
//! use pld_accountant::{calibrate, AccountantOptions, CalibrationProblem};
//!
//! let problem = CalibrationProblem::from_json_str(
//!     r#"{"events": [{"mechanism": "gaussian", "sigma": null, "sensitivity": 1.0,
//!                     "sampling": {"poisson": 0.01}, "count": 1000}]}"#,
//! )?;
//! let found = calibrate(&problem, 2.0, 1e-5, AccountantOptions::default(), &mut |_| {})?;
//! assert!(found.epsilon.upper <= 2.0);
//! assert!((found.value - 0.9591).abs() < 1e-3); // σ ≈ 0.9591
//! println!("{found}");
//! # Ok::<(), pld_accountant::Error>(())
//! ```
//!
//! # A ledger for a running system
//!
//! A [`Ledger`] records releases as they happen (identical ones merged), answers the bracket
//! of everything recorded at any time without redoing the history, refuses a release that
//! would exceed a [`Budget`] ([`Ledger::try_record`], valid for releases fixed in advance),
//! and saves its state with a format version. For fully adaptive sequences, [`RdpFilter`]
//! and [`GdpFilter`] are privacy filters whose validity does not depend on how the next
//! release was chosen.
//!
//! ```
//! use pld_accountant::{AccountantOptions, Budget, Ledger, Neighbouring};
//!
//! let mut ledger = Ledger::new(Neighbouring::AddRemove, AccountantOptions::default())?;
//! let step = ledger.event_from_json(
//!     r#"{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01}, "count": 100}"#,
//! )?;
//! let answer = ledger.try_record(step, &Budget::new(2.0, 1e-5)?)?;
//! assert!(answer.epsilon.upper <= 2.0);
//! let restored = Ledger::from_json_str(&ledger.to_json())?;
//! assert_eq!(restored.total_count(), 100);
//! # Ok::<(), pld_accountant::Error>(())
//! ```
//!
//! # The modules, in pipeline order
//!
//! - [`numeric`]: numerical building blocks with documented accuracy (normal tails, log-space
//!   sums, compensated summation, real-FFT convolution with round-off bounds).
//! - [`spec`]: the specification, validated where it is read, and the built-in
//!   [`presets`](spec::presets).
//! - [`mechanism`]: each mechanism as a pair of output distributions (P, Q) with a monotone
//!   privacy loss, or as exact atoms when it has finitely many outcomes.
//! - [`discretize`]: a mechanism's privacy loss put on a uniform grid twice, rounded up
//!   (connect-the-dots, an upper bound) and down (merged outcomes, a lower bound).
//! - [`pmf`]: the grid PMF, its composition by FFT and its conversion to δ(ε) and ε(δ).
//! - [`pld`]: both neighbouring directions (ADD and REMOVE) and both bounds together.
//! - [`accountant`]: from a specification to a guaranteed bracket, choosing the grid itself.
//! - [`analytic`]: the analytic accountants (RDP, zCDP, composition theorems, exact optimal
//!   composition, CLT), used as cross-checks.
//! - [`calibration`]: the best value of one parameter for a target (ε, δ).
//! - [`comparison`]: every accountant side by side.
//! - [`mod@tradeoff`]: membership-inference risk (the f-DP trade-off curve, TPR at low FPR, the
//!   advantage), certified from the privacy profile.
//! - [`bound`] and [`error`]: the bracket and bound direction types, and the one error type.
//!
//! # The command line
//!
//! The crate also builds the `pld` binary (`pld epsilon`, `delta`, `compare`, `curve`,
//! `calibrate`, `presets`, `ledger`) on top of this library; the README gives the tour, and
//! `pld SUBCOMMAND --help` each command's flags.
//!
//! # From Python
//!
//! The repository's `python/` folder builds this library into the Python package
//! `pld-accountant` (`pip install ./python`; import `pld_accountant`): the same questions
//! with specifications as dicts, numpy arrays for curves, an accountant with Opacus'
//! interface and a converter from dp_accounting's event trees. It depends on this crate
//! with `default-features = false` and answers with its serde forms, so its numbers and
//! messages are the CLI's; the README's "From Python" section is its guide.
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
pub mod tradeoff;

// The front door: specifications, the accountant and its answers, comparison, calibration.
pub use accountant::{
    Accountant, AccountantOptions, Budget, DeltaAnswer, DeltaProfile, EpsilonAnswer, GdpFilter,
    Ledger, RdpFilter, Settings, Tolerance, DEFAULT_MEMORY_BUDGET, LEDGER_FORMAT_VERSION,
    MIN_MEMORY_BUDGET,
};
pub use bound::{Bound, Bracket};
pub use calibration::{calibrate, Calibration, CalibrationProblem, CalibrationProgress};
pub use comparison::{compare, Comparison, Kind, MethodRow, NotApplicableRow};
pub use error::{Error, Result};
pub use spec::presets::Preset;
pub use spec::{CompositionSpec, Event, MechanismSpec, Neighbouring, Sampling, SpecBuilder};
pub use tradeoff::{tradeoff, TprAtFpr, Tradeoff, TradeoffPoint};

// Building blocks, for composing PLDs by hand.
pub use discretize::loss_atoms::{LossAtom, LossAtoms};
pub use discretize::loss_bins::LossBins;
pub use discretize::lumped_atoms::LumpedAtoms;
pub use mechanism::{
    Gaussian, Laplace, MixtureOfGaussians, MonotonePrivacyLoss, PoissonSubsampled,
};
pub use pld::{BracketedPld, PrivacyLossDistribution, Symmetry};
pub use pmf::GridPmf;

/// The README's Rust examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme_doctests {}
