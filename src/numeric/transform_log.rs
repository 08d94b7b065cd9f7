//! A process-wide record of the real FFTs computed, for measuring the engine against the
//! cost of its transforms alone (`benches/fft_floor.rs` times the recorded lengths with the
//! `realfft` crate).
//!
//! Off by default; while off, a transform only reads one atomic flag. While on, every real
//! transform of every thread of the process is recorded, so measure one query at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static RECORDING: AtomicBool = AtomicBool::new(false);
static LENGTHS: Mutex<Vec<(usize, Direction)>> = Mutex::new(Vec::new());

/// Which way a recorded transform went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Real signal to half spectrum.
    Forward,
    /// Half spectrum to real signal.
    Inverse,
}

/// Start recording (clearing what was recorded before).
pub fn start() {
    if let Ok(mut lengths) = LENGTHS.lock() {
        lengths.clear();
    }
    RECORDING.store(true, Ordering::SeqCst);
}

/// Stop recording and return the transforms recorded since [`start`]: (real length, direction).
pub fn stop() -> Vec<(usize, Direction)> {
    RECORDING.store(false, Ordering::SeqCst);
    LENGTHS
        .lock()
        .map(|mut lengths| std::mem::take(&mut *lengths))
        .unwrap_or_default()
}

/// Record one transform of real length `n`, if recording.
pub(crate) fn record(n: usize, direction: Direction) {
    if RECORDING.load(Ordering::Relaxed) {
        if let Ok(mut lengths) = LENGTHS.lock() {
            lengths.push((n, direction));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-convolution records one forward and one inverse transform of the length it
    /// planned, and nothing is recorded once stopped.
    #[test]
    fn a_power_records_its_two_transforms() {
        let p = vec![0.25, 0.5, 0.25];
        start();
        let _ = crate::numeric::fft_convolution::self_convolve_window(&p, 3, 0, 7);
        let recorded = stop();
        // Other tests may run transforms at the same time: look for this one's pair.
        let n = crate::numeric::fft_convolution::self_convolution_period(7, 3);
        assert!(recorded.contains(&(n, Direction::Forward)), "{recorded:?}");
        assert!(recorded.contains(&(n, Direction::Inverse)), "{recorded:?}");
        let _ = crate::numeric::fft_convolution::self_convolve_window(&p, 3, 0, 7);
        assert!(!RECORDING.load(Ordering::SeqCst));
    }
}
