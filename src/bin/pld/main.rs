//! `pld`: tight differential-privacy accounting from the command line.
//!
//! A thin layer: arguments become library types ([`input`], [`dp_sgd_flags`]), the library
//! computes, [`commands`] assemble a report, and [`render`] prints it as a table, JSON, CSV
//! or Markdown. Exit codes: 0 success, 2 invalid input or usage, 1 anything else.

mod allocator;
mod args;
mod calibrate;
mod calibrate_dp_sgd;
mod commands;
mod compare;
mod curve;
mod dp_sgd_flags;
mod echo;
mod input;
mod ledger;
mod over_epochs;
mod parallel;
mod plot;
mod progress;
mod render;
mod sweep;
mod tradeoff;
mod usage_error;

use args::Cli;
use clap::Parser;
use commands::Failure;
use progress::Progress;
use std::io::Write;
use std::process::ExitCode;

#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: allocator::LargeBlocks = allocator::LargeBlocks;

fn main() -> ExitCode {
    allocator::keep_freed_memory();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error::report(error),
    };
    let progress = Progress::new(cli.quiet, cli.verbose);
    match commands::run(cli.command, &progress) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`pld presets | head -1`) is not an error worth reporting.
            match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: cannot write to standard output: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Err(Failure { message, code }) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}
