//! What each subcommand does: read the input, compute with the library, build the report,
//! write the plot, and return the text for standard output.

use crate::args::{
    AccuracyArgs, CalibrateArgs, Command, CompareArgs, CurveArgs, DeltaArgs, EpsilonArgs,
    PresetsArgs, StepOrOff, SweepArgs, TradeoffArgs,
};
use crate::calibrate::{self, CalibrationReport};
use crate::compare::{self, CompareReport};
use crate::curve::{self, CurveReport, Query};
use crate::echo::Echoed;
use crate::input::{Input, SpecText};
use crate::over_epochs::OverEpochsReport;
use crate::plot;
use crate::progress::Progress;
use crate::render::{self, number, PresetList};
use crate::sweep::{self, SweepReport};
use crate::tradeoff::TradeoffReport;
use pld_accountant::{
    spec::presets, Accountant, AccountantOptions, CalibrationProblem, Error, Tolerance,
    MIN_MEMORY_BUDGET,
};

/// A failed command: the one-line message and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub code: u8,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure {
            message: error.to_string(),
            code: exit_code(&error),
        }
    }
}

/// 2 for anything the user can fix in the input (an infeasible calibration target
/// included); 1 for limits of the computation.
fn exit_code(error: &Error) -> u8 {
    match error {
        Error::GridTooLarge { .. }
        | Error::IncompatibleDistributions { .. }
        | Error::MemoryBudget { .. } => 1,
        Error::Infeasible { .. } => 2,
        // A release refused by the budget: the input is valid, the answer is no.
        Error::BudgetExceeded { .. } => 1,
        _ => 2,
    }
}

/// Run one subcommand; the text to print on success.
pub fn run(command: Command, progress: &Progress) -> Result<String, Failure> {
    match command {
        Command::Epsilon(a) => epsilon(a, progress),
        Command::Delta(a) => delta(a, progress),
        Command::Compare(a) => compare(a, progress),
        Command::Curve(a) => curve(a, progress),
        Command::Tradeoff(a) => tradeoff(a, progress),
        Command::Calibrate(a) => calibrate(a, progress),
        Command::Sweep(a) => sweep(a, progress),
        Command::Presets(a) => presets(a),
        Command::Ledger(c) => crate::ledger::run(c, progress),
    }
}

fn epsilon(a: EpsilonArgs, progress: &Progress) -> Result<String, Failure> {
    let mut input = read(&a.spec, progress)?;
    let delta = input.delta(a.delta)?;
    let accountant = Accountant::new(
        &input.spec,
        options(&a.accuracy, Target::Epsilon, progress)?,
    )?;
    let answer = {
        let _task = progress.task(format!("ε at δ = {delta:e}"), 0);
        accountant.epsilon_for_delta(delta)?
    };
    input.inputs.caveats = input
        .spec
        .caveats_for_answer(Some(delta), answer.settings.tolerance_met);
    Ok(render::render(
        &Echoed {
            report: &answer,
            inputs: &input.inputs,
        },
        a.output.format,
    ))
}

fn delta(a: DeltaArgs, progress: &Progress) -> Result<String, Failure> {
    let mut input = read(&a.spec, progress)?;
    let accountant = Accountant::new(&input.spec, options(&a.accuracy, Target::Delta, progress)?)?;
    let answer = {
        let _task = progress.task(format!("δ at ε = {}", a.epsilon), 0);
        accountant.delta_for_epsilon(a.epsilon)?
    };
    // (The notes at the δ found: its upper end, the one to publish.)
    input.inputs.caveats = input
        .spec
        .caveats_for_answer(Some(answer.delta.upper), answer.settings.tolerance_met);
    Ok(render::render(
        &Echoed {
            report: &answer,
            inputs: &input.inputs,
        },
        a.output.format,
    ))
}

fn compare(a: CompareArgs, progress: &Progress) -> Result<String, Failure> {
    let plot_file = plot::file::target(a.plot.as_deref())?;
    let mut input = read(&a.spec, progress)?;
    let delta = input.delta(a.delta)?;
    if a.delta.is_none() {
        progress.note(format!("δ = {delta:e} (the preset's; --delta changes it)"));
    }
    input.inputs.caveats = input.spec.caveats_at_delta(Some(delta));
    let options = options(&a.accuracy, Target::Epsilon, progress)?;
    // Checked here so that bad options fail before the plot's work.
    Accountant::new(&input.spec, options)?;
    let report = {
        let _task = progress.task(format!("every method at δ = {delta:e}"), 0);
        CompareReport::new(&input.spec, delta, options, &input)?
    };
    if let Some(file) = plot_file {
        let plot = compare::plot(&input.spec, options, &report, progress)?;
        file.write(&plot.svg(), progress)?;
    }
    Ok(render::render(
        &Echoed {
            report: &report,
            inputs: &input.inputs,
        },
        a.output.format,
    ))
}

fn curve(a: CurveArgs, progress: &Progress) -> Result<String, Failure> {
    let plot_file = plot::file::target(a.plot.as_deref())?;
    if a.over.is_some() {
        return over_epochs(a, plot_file, progress);
    }
    let (query, values) = match (a.deltas, a.epsilons) {
        (_, Some(epsilons)) => (Query::DeltaForEpsilon, epsilons),
        (Some(deltas), None) => (Query::EpsilonForDelta, deltas),
        (None, None) => (Query::EpsilonForDelta, curve::default_deltas()),
    };
    curve::validate(query, &values)?;
    let input = read(&a.spec, progress)?;
    let target = match query {
        Query::EpsilonForDelta => Target::Epsilon,
        Query::DeltaForEpsilon => Target::Delta,
    };
    let accountant = Accountant::new(&input.spec, options(&a.accuracy, target, progress)?)?;
    let report = CurveReport::new(&accountant, query, &values, &input, progress)?;
    if let Some(file) = plot_file {
        let dense = curve::plot_values(query, &values);
        let plotted = CurveReport::new(&accountant, query, &dense, &input, progress)?;
        file.write(&plotted.plot().svg(), progress)?;
    }
    Ok(render::render(
        &Echoed {
            report: &report,
            inputs: &input.inputs,
        },
        a.output.format,
    ))
}

/// `pld curve --over epochs`.
fn over_epochs(
    a: CurveArgs,
    plot_file: Option<plot::file::PlotFile>,
    progress: &Progress,
) -> Result<String, Failure> {
    let input = read(&a.spec, progress)?;
    let delta = input.delta(a.delta)?;
    let options = options(&a.accuracy, Target::Epsilon, progress)?;
    let report = OverEpochsReport::new(&input, delta, options, progress)?;
    if let Some(file) = plot_file {
        file.write(&report.plot().svg(), progress)?;
    }
    Ok(render::render(
        &Echoed {
            report: &report,
            inputs: &input.inputs,
        },
        a.output.format,
    ))
}

fn sweep(a: SweepArgs, progress: &Progress) -> Result<String, Failure> {
    let plot_file = plot::file::target(a.plot.as_deref())?;
    let x = sweep::parse_axis("--x", &a.x)?;
    let y = sweep::parse_axis("--y", &a.y)?;
    if !(a.delta > 0.0 && a.delta < 1.0) {
        return Err(Error::invalid("--delta", a.delta, "a number in (0, 1)").into());
    }
    let options = options(&a.accuracy, Target::Epsilon, progress)?;
    let report = SweepReport::new(&a.spec, x, y, a.delta, options, progress)?;
    if let Some(file) = plot_file {
        file.write(&report.heatmap().svg(), progress)?;
    }
    Ok(render::render(&report, a.output.format))
}

fn tradeoff(a: TradeoffArgs, progress: &Progress) -> Result<String, Failure> {
    let plot_file = plot::file::target(a.plot.as_deref())?;
    let alphas = a
        .alphas
        .unwrap_or_else(pld_accountant::tradeoff::default_alphas);
    pld_accountant::tradeoff::validate_alphas(&alphas)?;
    let input = read(&a.spec, progress)?;
    let accountant = Accountant::new(
        &input.spec,
        options(&a.accuracy, Target::Epsilon, progress)?,
    )?;
    let (report, plotted) = {
        let _task = progress.task("trade-off curve", 0);
        TradeoffReport::new(&accountant, &alphas, plot_file.is_some(), &input)?
    };
    if let Some(file) = plot_file {
        file.write(&crate::tradeoff::plot(&report, &plotted).svg(), progress)?;
    }
    Ok(render::render(
        &Echoed {
            report: &report,
            inputs: &input.inputs,
        },
        a.output.format,
    ))
}

fn calibrate(a: CalibrateArgs, progress: &Progress) -> Result<String, Failure> {
    calibrate::validate_target(a.epsilon, a.delta)?;
    let s = &a.spec;
    let dp_sgd_flag = [
        (s.sigma.is_some(), "--sigma"),
        (s.noise_multiplier.is_some(), "--noise-multiplier"),
        (s.sampling_rate.is_some(), "--sampling-rate"),
        (s.batch_size.is_some(), "--batch-size"),
        (s.dataset_size.is_some(), "--dataset-size"),
        (s.steps.is_some(), "--steps"),
        (s.epochs.is_some(), "--epochs"),
        (s.sampling.is_some(), "--sampling"),
        (s.max_batch_size.is_some(), "--max-batch-size"),
        (s.sensitivity.is_some(), "--sensitivity"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag));
    let dp_sgd_flags = dp_sgd_flag.is_some();
    if let Some(solve) = a.solve {
        if a.spec.spec.is_some() || a.spec.preset.is_some() {
            return Err(Error::Incompatible {
                field: "--solve".into(),
                reason: "--solve goes with DP-SGD flags; with --spec, write the field to \
                         calibrate as null instead"
                    .into(),
            }
            .into());
        }
        let options = options(&a.accuracy, Target::Epsilon, progress)?;
        let report = crate::calibrate_dp_sgd::calibrate(
            &a.spec,
            solve,
            (a.epsilon, a.delta),
            options,
            progress,
        )?;
        return Ok(render::render(&report, a.output.format));
    }
    if dp_sgd_flags && a.spec.spec.is_none() && a.spec.preset.is_none() {
        return Err(Error::MissingParameter {
            name: "--solve".into(),
            hint: "with DP-SGD flags, say what to find: --solve noise-multiplier, epochs, \
                   steps or batch-size (and leave that flag out)"
                .into(),
        }
        .into());
    }
    if let Some(flag) = dp_sgd_flag {
        return Err(Error::Incompatible {
            field: flag.into(),
            reason: format!(
                "{flag} is a DP-SGD flag: give either a specification with one field written \
                 null (--spec), or DP-SGD flags with --solve"
            ),
        }
        .into());
    }
    let Some(path) = a.spec.spec.as_deref().filter(|_| a.spec.preset.is_none()) else {
        if a.spec.preset.is_none() {
            return Err(Error::MissingParameter {
                name: "--spec".into(),
                hint: "a specification with one field written null, or DP-SGD flags with \
                       --solve"
                    .into(),
            }
            .into());
        }
        return Err(Error::Incompatible {
            field: "--preset".into(),
            reason: "calibrate reads a specification with the field to calibrate written \
                     null: `pld presets NAME > spec.json`, write one field as null, then \
                     --spec spec.json"
                .into(),
        }
        .into());
    };
    let SpecText { text, source } = SpecText::read(path)?;
    progress.note(format!("input: {source}"));
    let problem = CalibrationProblem::from_json_str(&text)?;
    progress.note(format!(
        "calibrating {} for ε ≤ {} at δ = {}",
        problem.location(),
        number::input(a.epsilon),
        number::input(a.delta)
    ));
    let options = options(&a.accuracy, Target::Epsilon, progress)?;
    let report = CalibrationReport::new(&problem, (a.epsilon, a.delta), options, source, progress)?;
    Ok(render::render(&report, a.output.format))
}

fn presets(a: PresetsArgs) -> Result<String, Failure> {
    match a.name {
        Some(name) => {
            let preset = presets::find(&name).map_err(|e| match e {
                Error::InvalidParameter {
                    value, requirement, ..
                } => Error::InvalidParameter {
                    name: "preset name".into(),
                    value,
                    requirement,
                },
                other => other,
            })?;
            Ok(render::json(&preset.spec_json()))
        }
        None => Ok(render::render(&PresetList::all(), a.format)),
    }
}

/// The composition, with its source noted for `--verbose`.
fn read(args: &crate::args::SpecArgs, progress: &Progress) -> Result<Input, Failure> {
    let input = Input::from_args(args)?;
    match &input.about {
        Some(about) => progress.note(format!("input: {} ({about})", input.source)),
        None => progress.note(format!("input: {}", input.source)),
    }
    Ok(input)
}

/// Which quantity `--tolerance` applies to.
enum Target {
    Epsilon,
    Delta,
}

/// The options of `--tolerance` (for ε) and `--grid-step`.
pub fn accountant_options(
    accuracy: &AccuracyArgs,
    progress: &Progress,
) -> Result<AccountantOptions, Error> {
    options(accuracy, Target::Epsilon, progress)
}

fn options(
    accuracy: &AccuracyArgs,
    target: Target,
    progress: &Progress,
) -> Result<AccountantOptions, Error> {
    let mut options = AccountantOptions::default();
    if let Some(mib) = accuracy.memory_budget {
        if !(mib.is_finite() && mib * (1u64 << 20) as f64 >= MIN_MEMORY_BUDGET as f64 && mib <= 1e9)
        {
            return Err(Error::invalid(
                "--memory-budget",
                mib,
                "a number of MiB in [16, 1e9]",
            ));
        }
        options.memory_budget = Some((mib * (1u64 << 20) as f64) as u64);
    }
    // Freed FFT buffers kept for reuse count against the budget too.
    crate::allocator::keep_within_budget(options.memory_budget_bytes());
    if let Some(relative) = accuracy.tolerance {
        match target {
            // The absolute floor for small ε scales too, so it never caps the request.
            Target::Epsilon => options.tolerance = Tolerance::epsilon_relative(relative),
            Target::Delta => options.tolerance.relative_delta = relative,
        }
    }
    options.grid_step = accuracy.grid_step;
    match accuracy.upper_grid_step {
        None => {}
        Some(StepOrOff::Off) => options.upper_grid_step = None,
        Some(StepOrOff::Step(h)) => {
            if !(h.is_finite() && (pld_accountant::accountant::MIN_GRID_STEP..=1.0).contains(&h)) {
                return Err(Error::invalid(
                    "--upper-grid-step",
                    h,
                    "a number of nats in [1e-12, 1], or off",
                ));
            }
            options.upper_grid_step = Some(h);
        }
    }
    let t = options.tolerance;
    let grid = match (options.grid_step, options.upper_grid_step) {
        (Some(h), _) => format!("{h} nats"),
        (None, Some(h)) => format!(
            "chosen by the accountant (the upper bound on a grid of {h} nats too, when cheap)"
        ),
        (None, None) => "chosen by the accountant".to_string(),
    };
    progress.note(format!(
        "accuracy: ε bracket width ≤ max({}·ε, {}), δ bracket width ≤ max({}·δ, {}), grid \
         step {grid}, memory budget {} MiB",
        number::input(t.relative),
        number::input(t.absolute_epsilon),
        number::input(t.relative_delta),
        number::input(t.absolute_delta),
        options.memory_budget_bytes() >> 20
    ));
    Ok(options)
}
