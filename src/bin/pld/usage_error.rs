//! Argument-parser errors as one line on standard error, exit code 2 (help and version are
//! printed as usual).

use clap::error::ErrorKind;
use std::process::ExitCode;

/// Print `error` and return the exit code.
pub fn report(error: clap::Error) -> ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Printing help can only fail on a closed stdout; nothing to add then.
            let _ = error.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            ExitCode::from(2)
        }
        _ => {
            eprintln!("{}", one_line(&error.render().to_string()));
            ExitCode::from(2)
        }
    }
}

/// clap's message without the usage block, on one line: `error: ... (see --help)`.
fn one_line(rendered: &str) -> String {
    let text: Vec<&str> = rendered
        .lines()
        .take_while(|line| !line.starts_with("Usage:"))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("For more information"))
        .collect();
    // Lines that continue a sentence (indented argument lists) join with a space, new
    // sentences (`tip: ...`) with a semicolon.
    let text = text
        .iter()
        .enumerate()
        .fold(String::new(), |mut joined, (i, line)| {
            if i > 0 {
                joined.push_str(if line.starts_with("tip:") { "; " } else { " " });
            }
            joined.push_str(line);
            joined
        });
    let text = if text.starts_with("error:") {
        text
    } else {
        format!("error: {text}")
    };
    format!("{text} (see --help)")
}
