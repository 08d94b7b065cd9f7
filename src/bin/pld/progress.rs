//! Progress on standard error for anything that takes more than a second.
//!
//! A [`Task`] draws one status line (`pld: curve 5/12 … 2.3 s`, or with a status text
//! `pld: calibration: evaluation 7, sigma = 0.92 … 1.4 s`) from a background thread,
//! starting only after [`DELAY`], so quick commands print nothing. Nothing is drawn when
//! standard error is not a terminal or with `--quiet`; `--verbose` adds settings and timings
//! (as plain lines, also when standard error is redirected).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a task runs before its status line appears.
const DELAY: Duration = Duration::from_secs(1);
/// How often the status line is redrawn.
const REFRESH: Duration = Duration::from_millis(100);

/// What to report on standard error.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Draw status lines (standard error is a terminal and not `--quiet`).
    live: bool,
    /// Print settings and timings (`--verbose`).
    verbose: bool,
}

impl Progress {
    /// From the global flags and whether standard error is a terminal.
    pub fn new(quiet: bool, verbose: bool) -> Progress {
        Progress {
            live: !quiet && std::io::stderr().is_terminal(),
            verbose,
        }
    }

    /// A line for `--verbose` (clearing a status line that may be drawn).
    pub fn note(&self, text: impl AsRef<str>) {
        if self.verbose {
            let clear = if self.live { "\r\x1b[2K" } else { "" };
            eprintln!("{clear}pld: {}", text.as_ref());
        }
    }

    /// Start a task of `total` steps (0: a single computation of unknown length).
    pub fn task(&self, label: impl Into<String>, total: usize) -> Task {
        let label = label.into();
        let state = Arc::new(State {
            done: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            status: Mutex::new(String::new()),
        });
        let drawer = self.live.then(|| {
            let state = Arc::clone(&state);
            let label = label.clone();
            std::thread::spawn(move || draw(&label, total, &state))
        });
        Task {
            label,
            start: Instant::now(),
            state,
            drawer,
            progress: *self,
        }
    }
}

struct State {
    done: AtomicUsize,
    stop: AtomicBool,
    /// Shown after the label (empty: nothing).
    status: Mutex<String>,
}

/// A running task; dropping it clears its status line.
pub struct Task {
    label: String,
    start: Instant,
    state: Arc<State>,
    drawer: Option<JoinHandle<()>>,
    progress: Progress,
}

impl Task {
    /// One more step done.
    pub fn advance(&self) {
        self.state.done.fetch_add(1, Ordering::Relaxed);
    }

    /// What the task is doing now, shown after its label (e.g. the value being tried).
    pub fn status(&self, text: impl Into<String>) {
        if self.drawer.is_some() {
            // A poisoned lock only means a panic elsewhere; the text is still a string.
            let mut status = self.state.status.lock().unwrap_or_else(|e| e.into_inner());
            *status = text.into();
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
        if let Some(drawer) = self.drawer.take() {
            drawer.thread().unpark();
            // The drawer never panics; if it did, there is nothing left to clean up.
            let _ = drawer.join();
        }
        // (Only for `--verbose`: reading the process's status costs a system call and a
        // file the kernel formats, for a line nobody sees otherwise.)
        if self.progress.verbose {
            let peak = peak_resident_mib().map_or(String::new(), |mib| {
                format!(" (process peak resident memory so far {mib:.0} MiB)")
            });
            self.progress.note(format!(
                "{} took {:.3} s{peak}",
                self.label,
                self.start.elapsed().as_secs_f64()
            ));
        }
    }
}

/// The process's peak resident memory in MiB, where the system reports it (`VmHWM` in
/// `/proc/self/status` on Linux); `None` elsewhere.
fn peak_resident_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Redraw the status line until the task stops; clear it if it was drawn.
fn draw(label: &str, total: usize, state: &State) {
    let start = Instant::now();
    let mut drawn = false;
    while !state.stop.load(Ordering::Relaxed) {
        // Woken early when the task stops.
        std::thread::park_timeout(REFRESH);
        let elapsed = start.elapsed();
        if elapsed < DELAY || state.stop.load(Ordering::Relaxed) {
            continue;
        }
        let count = if total > 0 {
            format!(" {}/{total}", state.done.load(Ordering::Relaxed).min(total))
        } else {
            String::new()
        };
        let status = {
            let status = state.status.lock().unwrap_or_else(|e| e.into_inner());
            if status.is_empty() {
                String::new()
            } else {
                format!(": {status}")
            }
        };
        let mut stderr = std::io::stderr().lock();
        // Progress is best effort: a failed write to the terminal is not an error.
        let _ = write!(
            stderr,
            "\r\x1b[2Kpld: {label}{count}{status} … {:.1} s",
            elapsed.as_secs_f64()
        );
        let _ = stderr.flush();
        drawn = true;
    }
    if drawn {
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2K");
        let _ = stderr.flush();
    }
}
