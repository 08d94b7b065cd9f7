//! The CLI's plots: line plots ([`line::Plot`]) and heatmaps ([`heatmap::Heatmap`]), each
//! written as SVG by hand (deterministic, never a NaN coordinate), and PNG rasterized from
//! that SVG ([`png`]) with the font bundled in `assets/fonts`, so the same input gives the
//! same file on every machine. [`mod@file`] checks `--plot FILE` before any work and writes the
//! format its extension names.

pub mod file;
pub mod heatmap;
pub mod line;
mod png;
mod text;

pub use line::{Axis, Band, Marker, Plot, Scale, Series};
