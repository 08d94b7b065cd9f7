//! `--plot FILE`: checked before any work, written after it, SVG or PNG by the extension.

use super::png;
use crate::commands::Failure;
use crate::progress::Progress;
use pld_accountant::Error;
use std::path::{Path, PathBuf};

/// What `--plot` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

/// Where and how to write a plot.
#[derive(Debug, Clone)]
pub struct PlotFile {
    pub path: PathBuf,
    pub format: Format,
}

/// Check `--plot FILE` before any work: a name ending in `.svg` or `.png` in a directory
/// that exists.
///
/// # Errors
/// [`Error::InvalidParameter`] naming `--plot` and the value.
pub fn target(path: Option<&str>) -> Result<Option<PlotFile>, Error> {
    let Some(path) = path else {
        return Ok(None);
    };
    let file = PathBuf::from(path);
    let extension = file
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let format = match extension.as_deref() {
        Some("svg") => Format::Svg,
        Some("png") => Format::Png,
        _ => {
            return Err(Error::invalid(
                "--plot",
                path,
                "a file name ending in .svg or .png",
            ))
        }
    };
    let directory = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !directory.is_dir() {
        return Err(Error::invalid(
            "--plot",
            path,
            &format!(
                "a file in an existing directory ({} is not one)",
                directory.display()
            ),
        ));
    }
    if file.is_dir() || path.ends_with('/') || path.ends_with(std::path::MAIN_SEPARATOR) {
        return Err(Error::invalid("--plot", path, "a file, not a directory"));
    }
    Ok(Some(PlotFile { path: file, format }))
}

impl PlotFile {
    /// Write `svg`, rasterized when the file is a PNG; a failure here (after the work) is
    /// exit code 1.
    pub fn write(&self, svg: &str, progress: &Progress) -> Result<(), Failure> {
        let failure = |e: String| Failure {
            message: format!("cannot write --plot {}: {e}", self.path.display()),
            code: 1,
        };
        let bytes = match self.format {
            Format::Svg => svg.as_bytes().to_vec(),
            Format::Png => png::rasterize(svg).map_err(failure)?,
        };
        write_bytes(&self.path, &bytes).map_err(failure)?;
        progress.note(format!("plot written to {}", self.path.display()));
        Ok(())
    }
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| e.to_string())
}
