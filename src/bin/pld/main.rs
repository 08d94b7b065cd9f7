//! `pld`: tight differential-privacy accounting from the command line.
//!
//! A thin layer: arguments become library types, the library computes, and a small renderer
//! prints JSON or a table. Exit codes: 0 success, 2 invalid input or usage, 1 anything else.

mod args;
mod render;

use args::{Cli, Command, Format, SpecArgs};
use clap::Parser;
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec, Error};
use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(exit_code(&error))
        }
    }
}

/// 2 for anything the user can fix in the input; 1 for limits of the computation.
fn exit_code(error: &Error) -> u8 {
    match error {
        Error::GridTooLarge { .. } | Error::IncompatibleDistributions { .. } => 1,
        _ => 2,
    }
}

fn run(cli: Cli) -> Result<String, Error> {
    match cli.command {
        Command::Epsilon(a) => {
            let accountant = accountant(&a.spec, &a.accuracy, Query::Epsilon)?;
            let answer = accountant.epsilon_for_delta(a.delta)?;
            Ok(match a.format {
                Format::Json => render::json(&answer),
                Format::Table => render::epsilon_table(&answer),
            })
        }
        Command::Delta(a) => {
            let accountant = accountant(&a.spec, &a.accuracy, Query::Delta)?;
            let answer = accountant.delta_for_epsilon(a.epsilon)?;
            Ok(match a.format {
                Format::Json => render::json(&answer),
                Format::Table => render::delta_table(&answer),
            })
        }
    }
}

/// Which quantity `--tolerance` applies to.
enum Query {
    Epsilon,
    Delta,
}

fn accountant(
    spec: &SpecArgs,
    accuracy: &args::AccuracyArgs,
    query: Query,
) -> Result<Accountant, Error> {
    let spec = load_spec(spec)?;
    let mut options = AccountantOptions::default();
    if let Some(relative) = accuracy.tolerance {
        match query {
            Query::Epsilon => options.tolerance.relative = relative,
            Query::Delta => options.tolerance.relative_delta = relative,
        }
    }
    options.grid_step = accuracy.grid_step;
    Accountant::new(&spec, options)
}

fn load_spec(args: &SpecArgs) -> Result<CompositionSpec, Error> {
    match (&args.spec, args.sigma) {
        (Some(_), Some(_)) => Err(Error::Incompatible {
            field: "--spec".into(),
            reason: "give either --spec or the --sigma/--sampling-rate/--steps flags, not both"
                .into(),
        }),
        (Some(path), None) => {
            let text = if path == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| Error::Io {
                        path: "standard input".into(),
                        message: e.to_string(),
                    })?;
                text
            } else {
                std::fs::read_to_string(path).map_err(|e| Error::Io {
                    path: path.clone(),
                    message: e.to_string(),
                })?
            };
            CompositionSpec::from_json_str(&text)
        }
        (None, Some(sigma)) => CompositionSpec::dp_sgd(
            sigma,
            args.sampling_rate.unwrap_or(1.0),
            args.steps.unwrap_or(1),
            args.sensitivity.unwrap_or(1.0),
        ),
        (None, None) => Err(Error::MissingParameter {
            name: "--spec".into(),
            hint: "give a specification file (--spec FILE, or - for standard input) or \
                   --sigma with optional --sampling-rate and --steps"
                .into(),
        }),
    }
}
