//! Where the composition comes from: a specification file (or standard input), a built-in
//! preset, or the DP-SGD flags. Exactly one of the three. (`pld calibrate` reads only a
//! file, with [`SpecText`].)

use crate::args::SpecArgs;
use crate::dp_sgd_flags::DpSgd;
use crate::echo::Inputs;
use pld_accountant::{spec::presets, CompositionSpec, Error};
use std::io::Read;

/// A validated composition and what it was read from.
#[derive(Debug, Clone)]
pub struct Input {
    /// The composition.
    pub spec: CompositionSpec,
    /// A few words naming the source, e.g. `preset mnist-dp-sgd`.
    pub source: String,
    /// What the source describes, when it says (a preset's description).
    pub about: Option<String>,
    /// The δ to use when `--delta` is not given (the preset's).
    pub default_delta: Option<f64>,
    /// What to echo beside the answer.
    pub inputs: Inputs,
}

/// Hint given when nothing says what was released.
const NO_INPUT_HINT: &str = "give a specification file (--spec FILE, or - for standard input), \
                             a built-in example (--preset NAME, see `pld presets`) or DP-SGD \
                             flags (--sigma or --noise-multiplier, with --sampling-rate and \
                             --steps)";

impl Input {
    /// Read and validate the composition the arguments describe.
    ///
    /// # Errors
    /// [`Error`] naming the flag for conflicting or missing sources, [`Error::Io`] for an
    /// unreadable file, the specification's validation errors otherwise.
    pub fn from_args(args: &SpecArgs) -> Result<Input, Error> {
        let flags_given = args.sigma.is_some() || args.noise_multiplier.is_some();
        let given: Vec<&str> = [
            (args.spec.is_some(), "--spec"),
            (args.preset.is_some(), "--preset"),
            (
                flags_given,
                if args.sigma.is_some() {
                    "--sigma"
                } else {
                    "--noise-multiplier"
                },
            ),
        ]
        .into_iter()
        .filter_map(|(present, flag)| present.then_some(flag))
        .collect();
        if given.len() > 1 {
            return Err(Error::Incompatible {
                field: given.join(" and "),
                reason: format!(
                    "give only one of them: {} describe the composition in different ways",
                    given.join(" and ")
                ),
            });
        }
        // Conflicting sources are named before any one flag is checked.
        let dp_sgd = DpSgd::from_args(args)?;
        if dp_sgd.is_none() {
            if let Some(flag) = dp_sgd_only_flag(args) {
                return Err(if given.is_empty() {
                    Error::MissingParameter {
                        name: "--noise-multiplier".into(),
                        hint: format!(
                            "{flag} describes a DP-SGD run: add --noise-multiplier or --sigma"
                        ),
                    }
                } else {
                    Error::Incompatible {
                        field: flag.into(),
                        reason: format!(
                            "{flag} describes a DP-SGD run given by --sigma or \
                             --noise-multiplier; it cannot change {} (to edit a preset, \
                             start from `pld presets NAME > spec.json`)",
                            given[0]
                        ),
                    }
                });
            }
        }
        if let Some(run) = dp_sgd {
            let spec = run.spec(args)?;
            return Ok(Input {
                inputs: Inputs::new(&run.summary, &spec, Some(&run)),
                spec,
                source: run.summary,
                about: None,
                default_delta: None,
            });
        }
        if let Some(name) = &args.preset {
            let preset = presets::find(name).map_err(|e| match e {
                Error::InvalidParameter {
                    value, requirement, ..
                } => Error::InvalidParameter {
                    name: "--preset".into(),
                    value,
                    requirement,
                },
                other => other,
            })?;
            let spec = preset.spec()?;
            let source = format!("preset {}", preset.name());
            return Ok(Input {
                inputs: Inputs::new(&source, &spec, None),
                spec,
                source,
                about: Some(preset.description().to_string()),
                default_delta: Some(preset.delta()),
            });
        }
        if let Some(path) = &args.spec {
            let SpecText { text, source } = SpecText::read(path)?;
            let spec = CompositionSpec::from_json_str(&text)?;
            return Ok(Input {
                inputs: Inputs::new(&source, &spec, None),
                spec,
                source,
                about: None,
                default_delta: None,
            });
        }
        Err(Error::MissingParameter {
            name: "--spec".into(),
            hint: NO_INPUT_HINT.into(),
        })
    }

    /// `--delta` if given, else the preset's δ.
    ///
    /// # Errors
    /// [`Error::MissingParameter`] when neither exists.
    pub fn delta(&self, flag: Option<f64>) -> Result<f64, Error> {
        flag.or(self.default_delta)
            .ok_or_else(|| Error::MissingParameter {
                name: "--delta".into(),
                hint: "give the target δ, e.g. --delta 1e-5 (only presets carry a default)".into(),
            })
    }
}

/// The text of a specification file (`-`: standard input), not yet parsed.
#[derive(Debug, Clone)]
pub struct SpecText {
    /// The JSON text.
    pub text: String,
    /// A few words naming the source, e.g. `specification training.json`.
    pub source: String,
}

impl SpecText {
    /// Read the file `path`, or standard input for `-`.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file (or standard input).
    pub fn read(path: &str) -> Result<SpecText, Error> {
        if path == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Error::Io {
                    path: "standard input".into(),
                    message: e.to_string(),
                })?;
            Ok(SpecText {
                text,
                source: "specification from standard input".into(),
            })
        } else {
            let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
                path: path.into(),
                message: e.to_string(),
            })?;
            Ok(SpecText {
                text,
                source: format!("specification {path}"),
            })
        }
    }
}

/// The first DP-SGD flag given, if any, among those that need `--sigma`/`--noise-multiplier`.
fn dp_sgd_only_flag(args: &SpecArgs) -> Option<&'static str> {
    [
        (args.sampling_rate.is_some(), "--sampling-rate"),
        (args.batch_size.is_some(), "--batch-size"),
        (args.dataset_size.is_some(), "--dataset-size"),
        (args.steps.is_some(), "--steps"),
        (args.epochs.is_some(), "--epochs"),
        (args.sensitivity.is_some(), "--sensitivity"),
    ]
    .into_iter()
    .find_map(|(present, flag)| present.then_some(flag))
}
