//! `pld sweep`: the guaranteed ε over a grid of two DP-SGD parameters (e.g. noise multiplier ×
//! epochs), every cell an independent accountant run, computed in parallel.
//!
//! An axis is `NAME=START..END:COUNT` (COUNT values evenly spaced, ends included),
//! `NAME=START..END:COUNT:log` (evenly spaced logarithms), generated values rounded to four
//! significant digits, or `NAME=V1,V2,…` taken as typed. Whole-number
//! parameters (batch size, dataset size, steps) are rounded to the nearest whole number and
//! repeated values dropped; the axis printed is the one computed.

use crate::args::SpecArgs;
use crate::commands::Failure;
use crate::dp_sgd_flags::DpSgd;
use crate::parallel;
use crate::plot::heatmap::Heatmap;
use crate::progress::Progress;
use crate::render::number;
use pld_accountant::{Accountant, AccountantOptions, Bound, Bracket, CompositionSpec, Error};
use serde::Serialize;
use std::time::Instant;

/// Most values on one axis.
pub const MAX_AXIS_VALUES: usize = 100;

/// A DP-SGD parameter a sweep can vary, named by its flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Parameter {
    NoiseMultiplier,
    Sigma,
    SamplingRate,
    BatchSize,
    DatasetSize,
    Steps,
    Epochs,
    MaxGradNorm,
}

impl Parameter {
    const ALL: [Parameter; 8] = [
        Parameter::NoiseMultiplier,
        Parameter::Sigma,
        Parameter::SamplingRate,
        Parameter::BatchSize,
        Parameter::DatasetSize,
        Parameter::Steps,
        Parameter::Epochs,
        Parameter::MaxGradNorm,
    ];

    /// The flag's name without dashes, e.g. `noise-multiplier`.
    pub fn name(self) -> &'static str {
        match self {
            Parameter::NoiseMultiplier => "noise-multiplier",
            Parameter::Sigma => "sigma",
            Parameter::SamplingRate => "sampling-rate",
            Parameter::BatchSize => "batch-size",
            Parameter::DatasetSize => "dataset-size",
            Parameter::Steps => "steps",
            Parameter::Epochs => "epochs",
            Parameter::MaxGradNorm => "max-grad-norm",
        }
    }

    fn whole(self) -> bool {
        matches!(
            self,
            Parameter::BatchSize | Parameter::DatasetSize | Parameter::Steps
        )
    }

    /// Whether the fixed flags already give this parameter.
    fn given_in(self, args: &SpecArgs) -> bool {
        match self {
            Parameter::NoiseMultiplier => args.noise_multiplier.is_some(),
            Parameter::Sigma => args.sigma.is_some(),
            Parameter::SamplingRate => args.sampling_rate.is_some(),
            Parameter::BatchSize => args.batch_size.is_some(),
            Parameter::DatasetSize => args.dataset_size.is_some(),
            Parameter::Steps => args.steps.is_some(),
            Parameter::Epochs => args.epochs.is_some(),
            Parameter::MaxGradNorm => args.sensitivity.is_some(),
        }
    }

    /// `args` with this parameter set to `value` (whole for whole-number parameters).
    fn set(self, args: &mut SpecArgs, value: f64) {
        match self {
            Parameter::NoiseMultiplier => args.noise_multiplier = Some(value),
            Parameter::Sigma => args.sigma = Some(value),
            Parameter::SamplingRate => args.sampling_rate = Some(value),
            Parameter::BatchSize => args.batch_size = Some(value as u64),
            Parameter::DatasetSize => args.dataset_size = Some(value as u64),
            Parameter::Steps => args.steps = Some(value as u64),
            Parameter::Epochs => args.epochs = Some(value),
            Parameter::MaxGradNorm => args.sensitivity = Some(value),
        }
    }
}

/// One axis of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepAxis {
    /// The parameter varied (its flag's name).
    pub parameter: Parameter,
    /// Its values, in the order given (always finite).
    pub values: Vec<f64>,
}

/// What a text like `noise-multiplier=0.5..2:16` asks for.
///
/// # Errors
/// [`Error::InvalidParameter`] naming `flag` with the text and the accepted forms.
pub fn parse_axis(flag: &str, text: &str) -> Result<SweepAxis, Error> {
    let forms = format!(
        "NAME=START..END:COUNT[:log] or NAME=V1,V2,... (at most {MAX_AXIS_VALUES} values) with \
         NAME one of {}",
        Parameter::ALL.map(Parameter::name).join(", ")
    );
    let invalid = || Error::invalid(flag, text, &forms);
    let (name, values) = text.split_once('=').ok_or_else(invalid)?;
    let parameter = Parameter::ALL
        .into_iter()
        .find(|p| p.name() == name.trim())
        .ok_or_else(invalid)?;
    let number = |t: &str| t.trim().parse::<f64>().ok().filter(|v| v.is_finite());
    let mut values: Vec<f64> = if let Some((start, rest)) = values.split_once("..") {
        let mut parts = rest.split(':');
        let end = parts.next().and_then(number).ok_or_else(invalid)?;
        let count = parts
            .next()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|c| (1..=MAX_AXIS_VALUES).contains(c))
            .ok_or_else(invalid)?;
        let log = match parts.next() {
            None => false,
            Some("log") => true,
            Some(_) => return Err(invalid()),
        };
        if parts.next().is_some() {
            return Err(invalid());
        }
        let start = number(start).ok_or_else(invalid)?;
        if log && !(start > 0.0 && end > 0.0) {
            return Err(Error::invalid(
                flag,
                text,
                "START and END > 0 for a log axis",
            ));
        }
        (0..count)
            .map(|i| {
                let t = if count == 1 {
                    0.0
                } else {
                    i as f64 / (count - 1) as f64
                };
                let v = if log {
                    start * (end / start).powf(t)
                } else {
                    start + (end - start) * t
                };
                four_significant_digits(v)
            })
            .collect()
    } else {
        values
            .split(',')
            .map(|v| number(v).ok_or_else(invalid))
            .collect::<Result<_, _>>()?
    };
    if values.is_empty() || values.len() > MAX_AXIS_VALUES {
        return Err(invalid());
    }
    if parameter.whole() {
        for v in &mut values {
            *v = v.round();
        }
    }
    let mut seen: Vec<f64> = Vec::new();
    values.retain(|v| {
        let new = !seen.contains(v);
        seen.push(*v);
        new
    });
    Ok(SweepAxis { parameter, values })
}

/// `v` rounded to four significant digits (a generated axis value, readable as printed).
fn four_significant_digits(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    format!("{v:.3e}").parse().unwrap_or(v)
}

/// One cell: ε at the sweep's δ for `x` and `y`.
#[derive(Debug, Clone, Serialize)]
pub struct SweepCell {
    #[serde(serialize_with = "number::serialize")]
    pub x: f64,
    #[serde(serialize_with = "number::serialize")]
    pub y: f64,
    /// Steps of the run (epochs of random allocation and shuffling).
    pub steps: u64,
    /// Guaranteed bracket on ε.
    pub epsilon: Bracket,
    /// Whether the bracket is as narrow as the tolerance asks.
    pub tolerance_met: bool,
}

/// ε over a grid of two parameters.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// The δ every cell answers for.
    #[serde(serialize_with = "number::serialize")]
    pub delta: f64,
    /// Across (table columns, heatmap x).
    pub x: SweepAxis,
    /// Down (table rows, heatmap y).
    pub y: SweepAxis,
    /// Row-major: every x for the first y, then the next y.
    pub cells: Vec<SweepCell>,
    /// The DP-SGD flags held fixed.
    pub fixed: String,
    /// Wall-clock time of the whole grid.
    pub seconds: f64,
}

impl SweepReport {
    /// Build every cell's composition (refusing the first invalid one, naming its
    /// coordinates, before any accountant runs), then the brackets in parallel.
    ///
    /// # Errors
    /// Exit code 2 for flags or cells that do not describe a DP-SGD run; the accountant's
    /// errors otherwise.
    pub fn new(
        args: &SpecArgs,
        x: SweepAxis,
        y: SweepAxis,
        delta: f64,
        options: AccountantOptions,
        progress: &Progress,
    ) -> Result<SweepReport, Failure> {
        check_fixed(args, &x, &y)?;
        let started = Instant::now();
        let mut specs: Vec<(f64, f64, CompositionSpec, u64)> = Vec::new();
        for &yv in &y.values {
            for &xv in &x.values {
                let mut cell = args.clone();
                x.parameter.set(&mut cell, xv);
                y.parameter.set(&mut cell, yv);
                let at = || {
                    format!(
                        "at {} = {}, {} = {}",
                        x.parameter.name(),
                        number::input(xv),
                        y.parameter.name(),
                        number::input(yv)
                    )
                };
                let built = DpSgd::from_args(&cell).and_then(|run| match run {
                    Some(run) => run.spec(&cell).map(|spec| (spec, run.steps)),
                    None => Err(Error::MissingParameter {
                        name: "--noise-multiplier".into(),
                        hint: "a sweep needs the noise: give --noise-multiplier or --sigma, or \
                               sweep one of them"
                            .into(),
                    }),
                });
                let (spec, steps) = built.map_err(|e| Failure {
                    message: format!("{} ({})", e, at()),
                    code: 2,
                })?;
                specs.push((xv, yv, spec, steps));
            }
        }
        let task = progress.task(
            format!("ε at δ = {delta:e} for {} settings", specs.len()),
            specs.len(),
        );
        let answers = parallel::map(&specs, |(_, _, spec, _)| {
            let answer = Accountant::new(spec, options)?.epsilon_for_delta(delta);
            task.advance();
            answer
        });
        drop(task);
        let cells = specs
            .iter()
            .zip(answers)
            .map(|((xv, yv, _, steps), answer)| {
                answer.map(|a| SweepCell {
                    x: *xv,
                    y: *yv,
                    steps: *steps,
                    epsilon: a.epsilon,
                    tolerance_met: a.settings.tolerance_met,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(SweepReport {
            delta,
            fixed: fixed_flags(args),
            x,
            y,
            cells,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// The cell at column `i`, row `j`.
    pub fn cell(&self, i: usize, j: usize) -> Option<&SweepCell> {
        self.cells.get(j * self.x.values.len() + i)
    }
}

impl SweepReport {
    /// The ε upper bounds as a heatmap, values written in the cells (rounded up).
    pub fn heatmap(&self) -> Heatmap {
        let values = (0..self.y.values.len())
            .map(|j| {
                (0..self.x.values.len())
                    .map(|i| self.cell(i, j).map_or(f64::NAN, |c| c.epsilon.upper))
                    .collect()
            })
            .collect();
        let ticks = |axis: &SweepAxis| axis.values.iter().map(|&v| number::input(v)).collect();
        Heatmap {
            title: format!("Guaranteed ε upper bound at δ = {:e}", self.delta),
            subtitle: format!("DP-SGD, fixed: {}", self.fixed),
            x_label: self.x.parameter.name().into(),
            y_label: self.y.parameter.name().into(),
            x_ticks: ticks(&self.x),
            y_ticks: ticks(&self.y),
            values,
            cell_text: |v| Bound::Upper.text_with_decimals(v, if v < 10.0 { 2 } else { 1 }),
            value_label: "ε upper bound".into(),
            notes: vec![format!(
                "Each cell: the PLD upper bound on ε, rounded up ({} accountant runs).",
                self.cells.len()
            )],
        }
    }
}

/// Refuse a sweep that varies one parameter twice, or one the fixed flags also give, and a
/// specification file or preset (they have no flags to vary).
fn check_fixed(args: &SpecArgs, x: &SweepAxis, y: &SweepAxis) -> Result<(), Error> {
    if args.spec.is_some() || args.preset.is_some() {
        return Err(Error::Incompatible {
            field: if args.spec.is_some() {
                "--spec"
            } else {
                "--preset"
            }
            .into(),
            reason: "pld sweep varies DP-SGD flags; describe the run with them (e.g. \
                     --batch-size 256 --dataset-size 60000) and sweep two of them"
                .into(),
        });
    }
    if x.parameter == y.parameter {
        return Err(Error::Incompatible {
            field: "--y".into(),
            reason: format!("--x already varies {}", x.parameter.name()),
        });
    }
    for (flag, axis) in [("--x", x), ("--y", y)] {
        if axis.parameter.given_in(args) {
            return Err(Error::Incompatible {
                field: format!("--{}", axis.parameter.name()),
                reason: format!(
                    "{flag} varies {}; leave the fixed flag out",
                    axis.parameter.name()
                ),
            });
        }
    }
    Ok(())
}

/// The fixed DP-SGD flags as typed, e.g. `--batch-size 256 --dataset-size 60000`.
fn fixed_flags(args: &SpecArgs) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut float = |name: &str, v: Option<f64>| {
        if let Some(v) = v {
            parts.push(format!("--{name} {}", number::input(v)));
        }
    };
    float("noise-multiplier", args.noise_multiplier);
    float("sigma", args.sigma);
    float("sampling-rate", args.sampling_rate);
    float("epochs", args.epochs);
    float("max-grad-norm", args.sensitivity);
    for (name, v) in [
        ("batch-size", args.batch_size),
        ("dataset-size", args.dataset_size),
        ("steps", args.steps),
        ("max-batch-size", args.max_batch_size),
    ] {
        if let Some(v) = v {
            parts.push(format!("--{name} {v}"));
        }
    }
    if let Some(name) = args
        .sampling
        .and_then(|s| clap::ValueEnum::to_possible_value(&s))
    {
        parts.push(format!("--sampling {}", name.get_name()));
    }
    if parts.is_empty() {
        "no fixed flags".into()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_parse_in_every_form() {
        let a = parse_axis("--x", "noise-multiplier=0.5..2:4").unwrap();
        assert_eq!(a.parameter, Parameter::NoiseMultiplier);
        assert_eq!(a.values, [0.5, 1.0, 1.5, 2.0]);
        let b = parse_axis("--y", "sampling-rate=1e-3..1e-1:3:log").unwrap();
        assert!((b.values[1] - 1e-2).abs() < 1e-15, "{:?}", b.values);
        let c = parse_axis("--y", "epochs=1,2,5").unwrap();
        assert_eq!(c.values, [1.0, 2.0, 5.0]);
        // Whole numbers rounded, repeats dropped.
        let d = parse_axis("--x", "batch-size=100..101:5").unwrap();
        assert_eq!(d.values, [100.0, 101.0]);
        let e = parse_axis("--x", "noise-multiplier=0.5..2:20").unwrap();
        assert_eq!(e.values[1], 0.5789);
        assert_eq!(e.values[19], 2.0);
        let single = parse_axis("--x", "steps=1000..5000:1").unwrap();
        assert_eq!(single.values, [1000.0]);
    }

    #[test]
    fn bad_axes_name_the_flag_and_the_text() {
        for text in [
            "noise-multiplier",
            "noise=1,2",
            "epochs=1..10",
            "epochs=1..10:0",
            "epochs=1..10:101",
            "epochs=1..10:5:lin",
            "epochs=0..10:5:log",
            "epochs=1,x",
            "epochs=1,NaN",
            "epochs=1..inf:3",
        ] {
            let message = parse_axis("--y", text).unwrap_err().to_string();
            assert!(
                message.contains("--y") && message.contains(text),
                "{text}: {message}"
            );
        }
    }
}
