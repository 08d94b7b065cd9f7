//! Command-line arguments (clap derive). Nothing here computes.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Tight differential-privacy accounting with privacy loss distributions.
///
/// Every answer is a guaranteed bracket: the upper bound is safe to publish, the lower bound
/// shows how much tighter the truth could be.
#[derive(Debug, Parser)]
#[command(name = "pld", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The ε for a target δ: smallest ε such that the composition is (ε, δ)-DP.
    ///
    /// Example: pld epsilon --sigma 1 --sampling-rate 0.01 --steps 10000 --delta 1e-5
    #[command(
        after_help = "Examples:\n  pld epsilon --spec training.json --delta 1e-5\n  pld epsilon --sigma 1 --sampling-rate 0.01 --steps 10000 --delta 1e-5 --format json"
    )]
    Epsilon(EpsilonArgs),
    /// The δ for a target ε: smallest δ such that the composition is (ε, δ)-DP.
    ///
    /// Example: pld delta --sigma 1 --sampling-rate 0.01 --steps 1000 --epsilon 2
    #[command(
        after_help = "Examples:\n  pld delta --spec training.json --epsilon 2\n  pld delta --sigma 1 --sampling-rate 0.01 --steps 1000 --epsilon 2 --format json"
    )]
    Delta(DeltaArgs),
}

#[derive(Debug, Args)]
pub struct EpsilonArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Target δ, in (0, 1).
    #[arg(long, allow_negative_numbers = true)]
    pub delta: f64,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct DeltaArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Target ε, at least 0.
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon: f64,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// What was released: a JSON specification, or the common single-mechanism case as flags.
#[derive(Debug, Args)]
pub struct SpecArgs {
    /// Composition specification (JSON, see INTERFACE.md); `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<String>,
    /// Gaussian noise standard deviation (noise multiplier when --sensitivity is 1).
    #[arg(long, allow_negative_numbers = true)]
    pub sigma: Option<f64>,
    /// Poisson sampling rate q in (0, 1] (default 1: no sampling).
    #[arg(long, requires = "sigma", allow_negative_numbers = true)]
    pub sampling_rate: Option<f64>,
    /// Number of steps (default 1).
    #[arg(long, requires = "sigma")]
    pub steps: Option<u64>,
    /// L2 sensitivity, e.g. the clipping norm (default 1).
    #[arg(long, requires = "sigma", allow_negative_numbers = true)]
    pub sensitivity: Option<f64>,
}

/// How tight the answer must be.
#[derive(Debug, Args)]
pub struct AccuracyArgs {
    /// Relative bracket width to reach (ε: default 1e-3, absolute 1e-4 when ε is small;
    /// δ: default 1e-4).
    #[arg(long, value_name = "REL", allow_negative_numbers = true)]
    pub tolerance: Option<f64>,
    /// Fixed grid step in nats instead of refining to the tolerance.
    #[arg(long, value_name = "NATS", allow_negative_numbers = true)]
    pub grid_step: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Table,
    /// Machine-readable JSON (keys as INTERFACE.md).
    Json,
}
