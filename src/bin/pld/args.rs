//! Command-line arguments (clap derive). Nothing here computes.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Tight differential-privacy accounting with privacy loss distributions.
///
/// Every answer is a guaranteed bracket: the upper bound is safe to publish, the lower bound
/// shows how much tighter the truth could be.
#[derive(Debug, Parser)]
#[command(
    name = "pld",
    version,
    about,
    long_about = None,
    after_help = "Examples:\n  pld compare --preset mnist-dp-sgd\n  pld epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5\n  pld curve --spec training.json --plot curve.svg\n  pld calibrate --spec dp_sgd_sigma.json --epsilon 2 --delta 1e-5\n  pld sweep --x noise-multiplier=0.5..2:16 --y epochs=5..100:20 --batch-size 256 --dataset-size 60000 --delta 1e-5\n  pld presets"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// No progress display on standard error.
    #[arg(long, short, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print the settings used and the timings on standard error.
    #[arg(long, short, global = true)]
    pub verbose: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The ε for a target δ: smallest ε such that the composition is (ε, δ)-DP.
    ///
    /// Example: pld epsilon --sigma 1 --sampling-rate 0.01 --steps 10000 --delta 1e-5
    #[command(
        after_help = "Examples:\n  pld epsilon --spec training.json --delta 1e-5\n  pld epsilon --sigma 1 --sampling-rate 0.01 --steps 10000 --delta 1e-5 --format json\n  pld epsilon --preset mnist-dp-sgd   (δ defaults to the preset's, 1e-5)"
    )]
    Epsilon(EpsilonArgs),
    /// The δ for a target ε: smallest δ such that the composition is (ε, δ)-DP.
    ///
    /// Example: pld delta --sigma 1 --sampling-rate 0.01 --steps 1000 --epsilon 2
    #[command(
        after_help = "Examples:\n  pld delta --spec training.json --epsilon 2\n  pld delta --sigma 1 --sampling-rate 0.01 --steps 1000 --epsilon 2 --format json"
    )]
    Delta(DeltaArgs),
    /// Every accountant side by side: ε at one δ from the PLD (upper and lower bound), RDP,
    /// zCDP, the composition theorems and the CLT estimate.
    ///
    /// Example: pld compare --preset mnist-dp-sgd
    #[command(
        after_help = "Examples:\n  pld compare --preset mnist-dp-sgd                 (δ = the preset's, 1e-5)\n  pld compare --spec training.json --delta 1e-6 --format markdown\n  pld compare --noise-multiplier 1 --sampling-rate 0.01 --steps 1000 --delta 1e-5 --plot compare.svg\n\nThe ratio column is ε / ε of the PLD upper bound; rows that do not apply are listed\nbelow the table with the reason."
    )]
    Compare(CompareArgs),
    /// The privacy curve: the PLD bracket on ε for a list of δ, or on δ for a list of ε.
    ///
    /// Example: pld curve --preset poisson-dp-sgd --deltas 1e-3,1e-5,1e-7
    #[command(
        after_help = "Examples:\n  pld curve --preset poisson-dp-sgd                   (ε for δ = 1e-1, 1e-2, ..., 1e-12)\n  pld curve --spec training.json --epsilons 0.5,1,2,4 --format csv\n  pld curve --preset mnist-dp-sgd --plot curve.svg\n  pld curve --preset mnist-dp-sgd --over epochs --plot epsilon_over_epochs.png"
    )]
    Curve(CurveArgs),
    /// Membership-inference risk: the guaranteed bracket on the trade-off curve β(α) (the
    /// lowest false-negative rate any attack reaches at false-positive rate α), the TPR at
    /// FPR 1e-3, 1e-2, 1e-1 and the advantage max(TPR − FPR).
    ///
    /// Example: pld tradeoff --noise-multiplier 1 --sampling-rate 0.01 --steps 10000
    #[command(
        after_help = "Examples:\n  pld tradeoff --preset mnist-dp-sgd\n  pld tradeoff --spec training.json --alphas 1e-4,1e-3,0.01 --format json\n  pld tradeoff --noise-multiplier 1 --sampling-rate 0.01 --steps 10000 --plot roc.svg\n\nThe β lower bound is the guarantee (no attack has a lower false-negative rate at that\nfalse-positive rate); it comes from the upper bounds on δ(ε) through f-DP:\nβ(α) ≥ max(0, 1 − δ(ε) − e^ε·α, e^−ε·(1 − δ(ε) − α)) for every ε ≥ 0."
    )]
    Tradeoff(TradeoffArgs),
    /// Calibrate one parameter for a target (ε, δ): the smallest noise, the largest count or
    /// the largest sampling rate whose guaranteed ε stays within the target.
    ///
    /// Example: pld calibrate --spec dp_sgd_sigma.json --epsilon 2 --delta 1e-5
    #[command(
        override_usage = "pld calibrate --spec <FILE> --epsilon <EPSILON> --delta <DELTA> [OPTIONS]\n       pld calibrate --solve <WHAT> [DP-SGD flags] --epsilon <EPSILON> --delta <DELTA> [OPTIONS]",
        after_help = "With DP-SGD flags, --solve names what to find and the answer is in those words:\n  --solve noise-multiplier   the smallest noise multiplier (leave out --noise-multiplier)\n  --solve epochs             the most whole epochs (leave out --epochs and --steps)\n  --solve steps              the most steps (leave out --steps and --epochs)\n  --solve batch-size         the largest expected batch size (Poisson; leave out\n                             --batch-size; needs --dataset-size and --steps)\nFor example, how many epochs of MNIST-sized DP-SGD fit in ε = 8:\n  pld calibrate --solve epochs --noise-multiplier 1 --batch-size 600 --dataset-size 60000 --epsilon 8 --delta 1e-5\n\nThe specification is an ordinary one with exactly one field written null, the one to\ncalibrate: the noise (\"sigma\" of gaussian, discrete_gaussian, mixture_of_gaussians;\n\"scale\" of laplace, discrete_laplace), a \"count\", or a Poisson sampling rate\n(\"sampling\": {\"poisson\": null}). For example, dp_sgd_sigma.json:\n\n  {\"events\": [{\"mechanism\": \"gaussian\", \"sigma\": null,\n               \"sampling\": {\"poisson\": 0.01}, \"count\": 1000}]}\n\nThe value printed meets the target by the PLD upper bound on ε, re-verified by a fresh\naccountant call; the nearest value found to miss it is printed beside it.\n\nExamples:\n  pld calibrate --spec dp_sgd_sigma.json --epsilon 2 --delta 1e-5\n  pld calibrate --spec dp_sgd_steps.json --epsilon 8 --delta 1e-5 --format json\n  pld presets mnist-dp-sgd > spec.json   (a starting point: write one field as null)"
    )]
    Calibrate(CalibrateArgs),
    /// A table of the guaranteed ε upper bound over a grid of two DP-SGD parameters (one
    /// accountant run per cell).
    ///
    /// Example: pld sweep --x noise-multiplier=0.5..2:16 --y epochs=5..100:20 --batch-size 256 --dataset-size 60000 --delta 1e-5
    #[command(
        after_help = "An axis is NAME=START..END:COUNT (COUNT evenly spaced values, ends included),\nNAME=START..END:COUNT:log (evenly spaced on a log scale) or NAME=V1,V2,...; NAME is a\nDP-SGD flag: noise-multiplier, sigma, sampling-rate, batch-size, dataset-size, steps,\nepochs or max-grad-norm. The other DP-SGD flags are held fixed. Every cell is an\nindependent accountant run (in parallel); the table shows the guaranteed ε upper bound.\n\nExamples:\n  pld sweep --x noise-multiplier=0.5..2:20 --y epochs=1..100:20 --batch-size 256 --dataset-size 60000 --delta 1e-5\n  pld sweep --x sampling-rate=1e-3..1e-1:10:log --y noise-multiplier=0.8,1,1.2 --steps 10000 --delta 1e-5 --plot sweep.png\n  pld sweep --x noise-multiplier=0.6..1.6:11 --y epochs=10,20,50 --batch-size 512 --dataset-size 50000 --delta 1e-5 --format csv"
    )]
    Sweep(SweepArgs),
    /// The built-in examples for --preset, one line each; with a NAME, its specification.
    ///
    /// Example: pld presets mnist-dp-sgd > training.json
    #[command(
        after_help = "Examples:\n  pld presets\n  pld presets mnist-dp-sgd > training.json   (a starting point for --spec)\n  pld presets --format json"
    )]
    Presets(PresetsArgs),
    /// A ledger file: record releases as they happen, refuse those over a budget, ask ε or δ
    /// of everything recorded at any time.
    ///
    /// Example: pld ledger record run.json --event '{"mechanism":"gaussian","sigma":1}'
    #[command(
        subcommand,
        after_help = "Examples:\n  pld ledger init run.json --budget-epsilon 8 --budget-delta 1e-5\n  pld ledger record run.json --event '{\"mechanism\":\"gaussian\",\"sigma\":1,\"sampling\":{\"poisson\":0.01}}' --count 100\n  pld ledger epsilon run.json --delta 1e-5\n  pld ledger show run.json --format json\n\nWith a budget, `record` refuses (exit 1, the file unchanged) a release that would bring the\nguaranteed ε above it. That filter is valid for releases fixed in advance; when the next\nrelease depends on past outputs, use the library's RdpFilter or GdpFilter."
    )]
    Ledger(LedgerCommand),
}

/// `pld ledger` subcommands.
#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Create an empty ledger file (refused if the file exists).
    Init(LedgerInitArgs),
    /// Record a release (refused with exit 1, the file unchanged, if over the budget).
    Record(LedgerRecordArgs),
    /// The guaranteed ε bracket of everything recorded, for a δ (default: the budget's).
    Epsilon(LedgerEpsilonArgs),
    /// The guaranteed δ bracket of everything recorded, for an ε.
    Delta(LedgerDeltaArgs),
    /// The recorded events, merged, with the budget and what is spent of it.
    Show(LedgerShowArgs),
}

#[derive(Debug, Args)]
pub struct LedgerInitArgs {
    /// The ledger file to create (JSON).
    pub file: String,
    /// Budget ε (with --budget-delta): `record` refuses releases beyond it.
    #[arg(long, allow_negative_numbers = true, requires = "budget_delta")]
    pub budget_epsilon: Option<f64>,
    /// Budget δ, in (0, 1).
    #[arg(long, allow_negative_numbers = true, requires = "budget_epsilon")]
    pub budget_delta: Option<f64>,
    /// Neighbouring relation of every event.
    #[arg(long, value_enum, default_value_t = NeighbouringArg::AddRemove)]
    pub neighbouring: NeighbouringArg,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// How DP-SGD batches are drawn (`--sampling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BatchSampling {
    /// Each record independently with probability q = B/N (Opacus).
    Poisson,
    /// B of the N records, uniformly without replacement, every step.
    FixedBatch,
    /// Every epoch, each record in one of ⌈N/B⌉ batches chosen uniformly at random.
    BallsInBins,
    /// Every epoch, the data shuffled and cut into batches of B (a wide bracket: no bound
    /// with amplification is known).
    Shuffle,
    /// Poisson sampling whose batch is cut to at most --max-batch-size records.
    TruncatedPoisson,
}

/// What `pld calibrate --solve` finds with DP-SGD flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Solve {
    /// The smallest noise multiplier (σ / clipping norm).
    NoiseMultiplier,
    /// The most whole epochs.
    Epochs,
    /// The most steps.
    Steps,
    /// The largest expected batch size B (Poisson sampling at B / N, steps fixed).
    BatchSize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NeighbouringArg {
    /// D and D ∪ {z}.
    AddRemove,
    /// D and D with one record changed.
    Replace,
}

#[derive(Debug, Args)]
pub struct LedgerRecordArgs {
    /// The ledger file (JSON, from `pld ledger init`).
    pub file: String,
    /// The event, as in a specification's "events" list (JSON).
    #[arg(long, value_name = "JSON")]
    pub event: String,
    /// How many runs of it (instead of the event's own "count").
    #[arg(long)]
    pub count: Option<u64>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct LedgerEpsilonArgs {
    /// The ledger file.
    pub file: String,
    /// Target δ, in (0, 1) (default: the budget's δ).
    #[arg(long, allow_negative_numbers = true)]
    pub delta: Option<f64>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct LedgerDeltaArgs {
    /// The ledger file.
    pub file: String,
    /// Target ε, at least 0.
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon: f64,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct LedgerShowArgs {
    /// The ledger file.
    pub file: String,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct EpsilonArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Target δ, in (0, 1) (default with --preset: the preset's δ).
    #[arg(long, allow_hyphen_values = true)]
    pub delta: Option<f64>,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct DeltaArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Target ε, at least 0.
    #[arg(long, allow_hyphen_values = true)]
    pub epsilon: f64,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Target δ, in (0, 1) (default with --preset: the preset's δ).
    #[arg(long, allow_hyphen_values = true)]
    pub delta: Option<f64>,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also draw ε(δ) of every method for δ from 1e-12 to 1e-1: SVG or PNG by the extension.
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub plot: Option<String>,
}

#[derive(Debug, Args)]
pub struct CurveArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// The δ values to report ε for, comma-separated (default 1e-1, 1e-2, ..., 1e-12).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        allow_hyphen_values = true,
        conflicts_with = "epsilons"
    )]
    pub deltas: Option<Vec<f64>>,
    /// The ε values to report δ for instead, comma-separated.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub epsilons: Option<Vec<f64>>,
    /// Instead of a list of δ: ε at one δ (--delta) after each epoch of a training run (one
    /// event repeated; an epoch is 1/q steps of Poisson sampling at rate q).
    #[arg(long, value_enum, conflicts_with_all = ["deltas", "epsilons"])]
    pub over: Option<Over>,
    /// The δ of --over (default: the preset's).
    #[arg(long, allow_hyphen_values = true, requires = "over")]
    pub delta: Option<f64>,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also draw the curve (the PLD bracket shaded): SVG or PNG by the file's extension.
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub plot: Option<String>,
}

/// What `pld curve --over` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Over {
    /// ε after each epoch (pass over the data).
    Epochs,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// The parameter across (table columns): `NAME=START..END:COUNT[:log]` or `NAME=V1,V2,...`
    #[arg(long, value_name = "NAME=VALUES")]
    pub x: String,
    /// The parameter down (table rows), in the same form.
    #[arg(long, value_name = "NAME=VALUES")]
    pub y: String,
    /// Target δ, in (0, 1).
    #[arg(long, allow_hyphen_values = true)]
    pub delta: f64,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also draw the grid as a heatmap of the ε upper bound: SVG or PNG by the extension.
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub plot: Option<String>,
}

#[derive(Debug, Args)]
pub struct TradeoffArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// The false-positive rates α to report β for, comma-separated, each in [0, 1]
    /// (default 1e-6, 1e-5, ..., 1e-1, 0.2, 0.3, 0.5).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub alphas: Option<Vec<f64>>,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also draw the ROC curve (TPR against FPR, log-log, the bracket shaded): SVG or PNG.
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub plot: Option<String>,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// A specification with exactly one field written null (--spec FILE), or DP-SGD flags
    /// with --solve. (--preset is refused with a hint: a preset has no field written null.)
    #[command(flatten)]
    pub spec: SpecArgs,
    /// With DP-SGD flags: what to find, the flag(s) for it left out.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub solve: Option<Solve>,
    /// Target ε, > 0: the guaranteed (upper-bound) ε of the result is at most this.
    #[arg(long, allow_hyphen_values = true)]
    pub epsilon: f64,
    /// Target δ, in (0, 1).
    #[arg(long, allow_hyphen_values = true)]
    pub delta: f64,
    #[command(flatten)]
    pub accuracy: AccuracyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct PresetsArgs {
    /// Print this preset's specification (JSON, as --spec reads it).
    pub name: Option<String>,
    /// Output format of the list.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// A count as a whole number, also in exponent form (`1e9`, `2.5e6`), exact up to 2⁵³.
fn whole_number(text: &str) -> Result<u64, String> {
    if let Ok(n) = text.parse::<u64>() {
        return Ok(n);
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x <= 9_007_199_254_740_992.0 => {
            Ok(x as u64)
        }
        Ok(_) => Err(format!("{text} is not a whole number ≥ 0 (at most 2^53)")),
        Err(_) => Err(format!("{text} is not a number")),
    }
}

/// What was released: a JSON specification, a built-in preset, or the common DP-SGD case as
/// flags (Opacus' words: noise multiplier, sampling rate or batch and dataset size, steps or
/// epochs).
#[derive(Debug, Clone, Args)]
pub struct SpecArgs {
    /// Composition specification (JSON, format in docs/spec.md); `-` reads standard input.
    #[arg(long, value_name = "FILE", help_heading = "What was released")]
    pub spec: Option<String>,
    /// A built-in example (list them with `pld presets`).
    #[arg(long, value_name = "NAME", help_heading = "What was released")]
    pub preset: Option<String>,
    /// DP-SGD: Gaussian noise standard deviation (= noise multiplier × --sensitivity).
    #[arg(long, allow_hyphen_values = true, help_heading = "DP-SGD")]
    pub sigma: Option<f64>,
    /// DP-SGD: noise standard deviation divided by the clipping norm (Opacus'
    /// noise_multiplier); σ = noise multiplier × --sensitivity.
    #[arg(long, allow_hyphen_values = true, help_heading = "DP-SGD")]
    pub noise_multiplier: Option<f64>,
    /// DP-SGD: Poisson sampling rate q in (0, 1] (default 1: full batch).
    #[arg(long, allow_hyphen_values = true, help_heading = "DP-SGD")]
    pub sampling_rate: Option<f64>,
    /// DP-SGD: expected batch size B; with --dataset-size, q = B/N (Poisson sampling, as
    /// Opacus).
    #[arg(
        long,
        value_parser = whole_number,
        allow_hyphen_values = true,
        help_heading = "DP-SGD"
    )]
    pub batch_size: Option<u64>,
    /// DP-SGD: number of training examples N.
    #[arg(
        long,
        value_parser = whole_number,
        allow_hyphen_values = true,
        help_heading = "DP-SGD"
    )]
    pub dataset_size: Option<u64>,
    /// DP-SGD: number of noisy steps (this or --epochs is required).
    #[arg(
        long,
        value_parser = whole_number,
        allow_hyphen_values = true,
        help_heading = "DP-SGD"
    )]
    pub steps: Option<u64>,
    /// DP-SGD: passes over the data instead of --steps: steps = ⌈epochs / q⌉ (= ⌈epochs·N/B⌉).
    #[arg(long, allow_hyphen_values = true, help_heading = "DP-SGD")]
    pub epochs: Option<f64>,
    /// DP-SGD: how batches are drawn (default poisson, Opacus' assumption). fixed-batch: B of
    /// N without replacement each step (replace-one neighbours); balls-in-bins: every epoch
    /// each record goes to one of ⌈N/B⌉ batches at random (random allocation), counted in
    /// whole epochs; truncated-poisson: Poisson batches cut to --max-batch-size (needs
    /// --dataset-size); shuffle: every epoch the data shuffled into ⌈N/B⌉ batches, bracketed
    /// between no amplification and a proven lower bound (no tight bound is known).
    #[arg(long, value_enum, help_heading = "DP-SGD")]
    pub sampling: Option<BatchSampling>,
    /// DP-SGD with --sampling truncated-poisson: the largest batch kept.
    #[arg(
        long,
        value_parser = whole_number,
        allow_hyphen_values = true,
        help_heading = "DP-SGD"
    )]
    pub max_batch_size: Option<u64>,
    /// DP-SGD: L2 sensitivity, the clipping norm (Opacus' max_grad_norm; default 1).
    #[arg(
        long,
        visible_alias = "max-grad-norm",
        allow_hyphen_values = true,
        help_heading = "DP-SGD"
    )]
    pub sensitivity: Option<f64>,
}

/// How tight the answer must be.
#[derive(Debug, Args)]
pub struct AccuracyArgs {
    /// Relative bracket width to reach (ε: default 1e-3, and a tenth of it as an absolute
    /// width when ε is small; δ: default 1e-4).
    #[arg(long, value_name = "REL", allow_hyphen_values = true)]
    pub tolerance: Option<f64>,
    /// Fixed grid step in nats instead of refining to the tolerance: a number in [1e-12, 1]
    /// (others exit with code 2; a step too fine for the composition's grid exits with 1).
    #[arg(long, value_name = "NATS", allow_hyphen_values = true)]
    pub grid_step: Option<f64>,
    /// Memory the accountant's grids may use, in MiB (default 2048, at least 16). A grid
    /// finer than fits is not tried: the answer is the bracket of the finest grid that fits,
    /// marked "tolerance NOT met: memory budget" (with --grid-step, exit code 1).
    #[arg(long, value_name = "MIB", allow_hyphen_values = true)]
    pub memory_budget: Option<f64>,
    /// Grid step (nats) the upper bound is computed on once the tolerance is met, when that
    /// grid is cheap (default 1e-4, dp_accounting's default, so the upper bound is never
    /// looser than its default answer); `off`: the tolerance alone chooses the grid. Ignored
    /// with --grid-step.
    #[arg(long, value_name = "NATS|off", value_parser = step_or_off, allow_hyphen_values = true)]
    pub upper_grid_step: Option<StepOrOff>,
}

/// A grid step in nats, or `off`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepOrOff {
    /// A step in nats (checked by the accountant).
    Step(f64),
    /// Switched off.
    Off,
}

fn step_or_off(text: &str) -> Result<StepOrOff, String> {
    if text == "off" {
        return Ok(StepOrOff::Off);
    }
    text.parse::<f64>()
        .map(StepOrOff::Step)
        .map_err(|_| format!("{text} is neither a number of nats nor `off`"))
}

/// How to print the result.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Table,
    /// Machine-readable JSON (keys as in docs/spec.md).
    Json,
    /// Comma-separated values with a header line.
    Csv,
    /// A GitHub-flavoured Markdown table.
    Markdown,
}
