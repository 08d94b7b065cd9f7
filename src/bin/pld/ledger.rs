//! `pld ledger`: a ledger file read, changed through the library's [`Ledger`], and written
//! back whole (to a temporary file renamed over it, so a failure never leaves half a file).

use crate::args::{
    LedgerCommand, LedgerDeltaArgs, LedgerEpsilonArgs, LedgerInitArgs, LedgerRecordArgs,
    LedgerShowArgs, NeighbouringArg,
};
use crate::commands::{accountant_options, Failure};
use crate::progress::Progress;
use crate::render::{self, LedgerReport};
use pld_accountant::{Budget, Error, Ledger, Neighbouring};
use std::path::Path;

/// Run one `pld ledger` subcommand.
pub fn run(command: LedgerCommand, progress: &Progress) -> Result<String, Failure> {
    match command {
        LedgerCommand::Init(a) => init(a, progress),
        LedgerCommand::Record(a) => record(a, progress),
        LedgerCommand::Epsilon(a) => epsilon(a, progress),
        LedgerCommand::Delta(a) => delta(a, progress),
        LedgerCommand::Show(a) => show(a, progress),
    }
}

fn init(a: LedgerInitArgs, progress: &Progress) -> Result<String, Failure> {
    if Path::new(&a.file).exists() {
        return Err(Error::Incompatible {
            field: a.file.clone(),
            reason: "the file exists; `pld ledger init` never overwrites a ledger (remove it \
                     or choose another name)"
                .into(),
        }
        .into());
    }
    let neighbouring = match a.neighbouring {
        NeighbouringArg::AddRemove => Neighbouring::AddRemove,
        NeighbouringArg::Replace => Neighbouring::Replace,
    };
    let options = accountant_options(&a.accuracy, progress)?;
    let mut ledger = Ledger::new(neighbouring, options)?;
    if let (Some(epsilon), Some(delta)) = (a.budget_epsilon, a.budget_delta) {
        ledger.set_budget(Some(Budget::new(epsilon, delta)?));
    }
    write(&a.file, &ledger, progress)?;
    let report = LedgerReport::new(&a.file, &ledger, None, None);
    Ok(render::render(&report, a.output.format))
}

fn record(a: LedgerRecordArgs, progress: &Progress) -> Result<String, Failure> {
    let mut ledger = read(&a.file, progress)?;
    let mut event = ledger.event_from_json(&a.event)?;
    if let Some(count) = a.count {
        event = event.repeat(count).map_err(|e| match e {
            Error::InvalidParameter {
                value, requirement, ..
            } => Error::InvalidParameter {
                name: "--count".into(),
                value,
                requirement,
            },
            other => other,
        })?;
    }
    let recorded = event.clone();
    let spent = {
        let _task = progress.task("checking the budget".to_string(), 0);
        ledger.record_checked(event)?
    };
    write(&a.file, &ledger, progress)?;
    let report = LedgerReport::new(&a.file, &ledger, Some(&recorded), spent.map(|s| s.epsilon));
    Ok(render::render(&report, a.output.format))
}

fn epsilon(a: LedgerEpsilonArgs, progress: &Progress) -> Result<String, Failure> {
    let ledger = read(&a.file, progress)?;
    let delta = match (a.delta, ledger.budget()) {
        (Some(delta), _) => delta,
        (None, Some(budget)) => budget.delta,
        (None, None) => {
            return Err(Error::MissingParameter {
                name: "--delta".into(),
                hint: "give --delta (the ledger has no budget whose δ could serve)".into(),
            }
            .into())
        }
    };
    let answer = {
        let _task = progress.task(format!("ε at δ = {delta:e}"), 0);
        ledger.epsilon_for_delta(delta)?
    };
    Ok(render::render(&answer, a.output.format))
}

fn delta(a: LedgerDeltaArgs, progress: &Progress) -> Result<String, Failure> {
    let ledger = read(&a.file, progress)?;
    let answer = {
        let _task = progress.task(format!("δ at ε = {}", a.epsilon), 0);
        ledger.delta_for_epsilon(a.epsilon)?
    };
    Ok(render::render(&answer, a.output.format))
}

fn show(a: LedgerShowArgs, progress: &Progress) -> Result<String, Failure> {
    let ledger = read(&a.file, progress)?;
    let spent = match ledger.budget() {
        Some(budget) => Some(ledger.epsilon_for_delta(budget.delta)?.epsilon),
        None => None,
    };
    let report = LedgerReport::new(&a.file, &ledger, None, spent);
    Ok(render::render(&report, a.output.format))
}

fn read(path: &str, progress: &Progress) -> Result<Ledger, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        path: path.to_string(),
        message: e.to_string(),
    })?;
    progress.note(format!("ledger: {path}"));
    Ok(Ledger::from_json_str(&text)?)
}

/// Write the ledger to a temporary file beside `path`, then rename it over `path`.
fn write(path: &str, ledger: &Ledger, progress: &Progress) -> Result<(), Failure> {
    let target = Path::new(path);
    let temporary = {
        let name = target
            .file_name()
            .map_or("ledger".into(), |n| n.to_string_lossy().into_owned());
        target.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
    };
    let failure = |e: std::io::Error| Failure {
        message: format!("cannot write the ledger {path}: {e}"),
        code: 1,
    };
    std::fs::write(&temporary, ledger.to_json() + "\n").map_err(failure)?;
    std::fs::rename(&temporary, target).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        failure(e)
    })?;
    progress.note(format!("ledger written to {path}"));
    Ok(())
}
