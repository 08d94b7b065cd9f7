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
    if will_account(std::env::args_os().skip(1)) {
        pld_accountant::accountant::start_evaluation_threads();
    }
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

/// Whether the command line names a command that accounts (its first word that is not an
/// option: the global options take no value), without asking for help or the version: the
/// evaluation threads are then started before the arguments are parsed, so that they have
/// settled by the time the first query needs them. Measured with `scripts/ab_timing.py 121`
/// on the four DP-SGD benchmark queries at the default tolerance: 0.97–0.99 of the time. A
/// command that does not account (`--version`, `presets`) would only pay for starting and
/// stopping the threads (0.4 ms of a 2 ms `pld --version`).
fn will_account(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    const ACCOUNTING: [&str; 8] = [
        "epsilon",
        "delta",
        "compare",
        "curve",
        "tradeoff",
        "calibrate",
        "sweep",
        "ledger",
    ];
    let mut command = None;
    for arg in args {
        let arg = arg.to_string_lossy().into_owned();
        if ["-h", "--help", "-V", "--version"].contains(&arg.as_str()) {
            return false;
        }
        if command.is_none() && !arg.starts_with('-') {
            command = Some(arg);
        }
    }
    command.is_some_and(|command| ACCOUNTING.contains(&command.as_str()))
}

#[cfg(test)]
mod tests {
    use super::will_account;

    fn accounts(line: &str) -> bool {
        will_account(line.split_whitespace().map(std::ffi::OsString::from))
    }

    #[test]
    fn threads_start_early_only_for_commands_that_account() {
        assert!(accounts("epsilon --sigma 1 --steps 10 --delta 1e-5"));
        assert!(accounts("-q compare --preset mnist-dp-sgd"));
        assert!(accounts("ledger ask --file l.json --delta 1e-5"));
        assert!(!accounts("epsilon --help"));
        assert!(!accounts("--version"));
        assert!(!accounts("presets"));
        assert!(!accounts("help epsilon"));
        assert!(!accounts(""));
    }
}
