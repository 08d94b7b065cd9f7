//! Linear and repeated convolution of non-negative vectors by real FFT, with a rigorous-style
//! bound on the round-off error of the result.
//!
//! Error model (standard FFT error analysis, e.g. Higham, "Accuracy and Stability of Numerical
//! Algorithms", §24.1): a length-N transform computed in log₂N butterfly stages has per-bin
//! absolute error at most `C·log₂N·u·‖a‖₁` and ℓ2 error at most `C·log₂N·u·‖y‖₂`, with `u` the
//! unit round-off and `C` a small constant (we use [`FFT_ERROR_CONSTANT`] = 5, well above the
//! ≈ 2 that rustfft's radix-2/3/4/5 butterflies with accurately precomputed twiddles need).
//! Spectral errors are propagated through the pointwise product or k-th power bin by bin, and
//! Parseval turns them into an ℓ2 bound on the output: `‖err‖₂ ≤ ‖E‖₂/√N + C log₂N u ‖y‖₂`.

use crate::numeric::near_zero_powers::NearZeroPowers;
use crate::numeric::pieces::spread_map;
use crate::numeric::real_fft::{RealFft, Twiddles};
use num_complex::Complex64;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Unit round-off of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// Constant C of the FFT error model above.
pub const FFT_ERROR_CONSTANT: f64 = 5.0;

/// Below this product of lengths, convolution is done directly (exact to n·u relative).
const DIRECT_CONVOLUTION_MAX_WORK: usize = 1 << 15;

/// Plans by length, built once per length and shared by every thread and every later call.
///
/// Each length is planned by a fresh planner ([`RealFft::new`]): rustfft's planner builds a
/// length's algorithm from the sub-transforms it has already cached, so with one shared
/// planner the algorithm chosen for a length — and with it the last bits of every result —
/// would depend on which lengths the process had planned before (a query answered after
/// another could differ from the same query in a new process, 1e-9 relative). With a planner
/// per length, a result depends on its inputs only.
///
/// The map is locked only to find a length's slot; the plan itself is built outside that
/// lock (threads wanting the same length wait for the one building it, the others go on).
static PLANS: OnceLock<Mutex<HashMap<usize, PlanSlot>>> = OnceLock::new();

/// One length's plan, built by the first thread that needs it.
type PlanSlot = Arc<OnceLock<Arc<RealFft>>>;

fn plans(n: usize) -> Arc<RealFft> {
    let slot = {
        let plans = PLANS.get_or_init(|| Mutex::new(HashMap::new()));
        // A poisoned lock only means another thread panicked while using it; the map is intact.
        let mut plans = plans
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(plans.entry(n).or_default())
    };
    Arc::clone(slot.get_or_init(|| Arc::new(RealFft::new(n))))
}

/// The kept buffer of one FFT power or product: the half spectrum, which also holds the real
/// signal, packed in pairs, before the forward transform and after the inverse. (The
/// transforms' scratch is the result's own buffer, see [`output_buffer`].)
#[derive(Default)]
struct Workspace {
    spectrum: Vec<Complex64>,
}

impl Workspace {
    /// Size the buffer for transforms of length `n` (contents unspecified).
    fn prepare(&mut self, n: usize) {
        self.spectrum.resize(n / 2 + 1, Complex64::new(0.0, 0.0));
    }

    /// Bytes held.
    fn bytes(&self) -> usize {
        self.spectrum.capacity() * 16
    }
}

/// The buffer of one FFT power or product's result: first the transforms' scratch (viewed as
/// complex numbers by [`as_scratch`]), then the window of the result. One fresh allocation
/// instead of two: on this project's test machines first touching memory costs about
/// 0.55 ms per MB (page faults), a tenth of a DP-SGD query at grid step 1e-4.
fn output_buffer(n: usize, plan: &RealFft) -> Vec<f64> {
    let len = n.max(2 * plan.scratch_len());
    match take_recycled(len) {
        Some(mut buffer) => {
            buffer.clear();
            buffer.resize(len, 0.0);
            buffer
        }
        None => vec![0.0; len],
    }
}

/// A buffer of `len` doubles whose contents do not matter to its user (it writes every
/// entry it reads): a kept one as it is, else a fresh zeroed allocation (whose pages the
/// system maps when they are first touched).
fn transform_buffer(len: usize) -> Vec<f64> {
    match take_recycled(len) {
        Some(mut buffer) => {
            buffer.resize(len, 0.0);
            buffer
        }
        None => vec![0.0; len],
    }
}

/// Buffers of dropped PMFs and of finished transforms, kept for the next [`output_buffer`]
/// or [`transform_buffer`] (any thread takes any). Freed, a buffer of a few hundred
/// kilobytes or more often goes back to the system (or is trimmed off the allocator's heap),
/// and the next one of its size is faulted in again page by page: in a DP-SGD query repeated
/// in one process that varied its time by 15% from one build to the next, with the
/// allocator's thresholds.
static RECYCLED: Mutex<Vec<Vec<f64>>> = Mutex::new(Vec::new());
/// At most this many buffers are kept …
const KEPT_BUFFERS: usize = 4;
/// … each with a capacity of at least this many bytes (smaller ones are cheap to allocate;
/// σ 1, q 0.01, 10³ steps at grid step 1e-4 transforms in a buffer of 0.72 MB and reads its
/// lower end from one of 0.36 MB) and at most [`KEPT_WORKSPACE_BYTES`] …
const RECYCLED_MIN_BYTES: usize = 1 << 18;
/// … and at most this many bytes in all (the largest buffers are kept).
const RECYCLED_TOTAL_BYTES: usize = 2 * KEPT_WORKSPACE_BYTES;

/// Keep `buffer`'s memory for a later [`output_buffer`] or [`transform_buffer`] if it is
/// large enough to be worth it and there is room: the largest buffers are kept, at most
/// [`KEPT_BUFFERS`] of them and [`RECYCLED_TOTAL_BYTES`] in all.
pub(crate) fn recycle(buffer: Vec<f64>) {
    let bytes = buffer.capacity() * std::mem::size_of::<f64>();
    if !(RECYCLED_MIN_BYTES..=KEPT_WORKSPACE_BYTES).contains(&bytes) {
        return;
    }
    let released = {
        let mut kept = RECYCLED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        kept.push(buffer);
        keep_largest(&mut kept, KEPT_BUFFERS, RECYCLED_TOTAL_BYTES)
    };
    // (Freed outside the lock.)
    drop(released);
}

/// Sort `kept` by capacity, largest first, and split off (returned) all but the longest
/// prefix of at most `count` buffers holding at most `total_bytes` in all.
fn keep_largest(kept: &mut Vec<Vec<f64>>, count: usize, total_bytes: usize) -> Vec<Vec<f64>> {
    kept.sort_unstable_by_key(|kept| std::cmp::Reverse(kept.capacity()));
    let mut total = 0;
    let keep = kept
        .iter()
        .take(count)
        .take_while(|kept| {
            total += kept.capacity() * std::mem::size_of::<f64>();
            total <= total_bytes
        })
        .count();
    kept.split_off(keep)
}

/// The smallest kept buffer that holds `len` entries without being more than four times
/// larger (a result keeps its buffer's capacity), if any.
fn take_recycled(len: usize) -> Option<Vec<f64>> {
    if len * std::mem::size_of::<f64>() < RECYCLED_MIN_BYTES / 4 {
        return None;
    }
    let mut kept = RECYCLED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let fitting = fitting_buffer(&kept, len)?;
    Some(kept.swap_remove(fitting))
}

/// Index of the smallest of `kept` with a capacity in `[len, 4·len]`.
fn fitting_buffer(kept: &[Vec<f64>], len: usize) -> Option<usize> {
    kept.iter()
        .enumerate()
        .filter(|(_, buffer)| buffer.capacity() >= len && buffer.capacity() / 4 <= len)
        .min_by_key(|(_, buffer)| buffer.capacity())
        .map(|(index, _)| index)
}

/// The first `plan.scratch_len()` complex numbers of an [`output_buffer`].
fn as_scratch<'a>(buffer: &'a mut [f64], plan: &RealFft) -> &'a mut [Complex64] {
    bytemuck::cast_slice_mut(&mut buffer[..2 * plan.scratch_len()])
}

/// Workspaces kept between calls (any thread takes any). Fresh multi-megabyte buffers cost a
/// page fault per 4 KiB touched: reusing them made a DP-SGD query about a third faster.
static WORKSPACES: Mutex<Vec<Workspace>> = Mutex::new(Vec::new());
/// At most this many workspaces are kept …
const KEPT_WORKSPACES: usize = 4;
/// … each at most this large (bytes); larger ones are freed after use.
const KEPT_WORKSPACE_BYTES: usize = 64 << 20;

fn take_workspace() -> Workspace {
    WORKSPACES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .pop()
        .unwrap_or_default()
}

fn return_workspace(workspace: Workspace) {
    if workspace.bytes() <= KEPT_WORKSPACE_BYTES {
        let mut kept = WORKSPACES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if kept.len() < KEPT_WORKSPACES {
            kept.push(workspace);
        }
    }
}

/// The smallest even n' ≥ n whose prime factors are all in {2, 3, 5, 7} (fast for rustfft).
pub fn fast_len(n: usize) -> usize {
    let mut candidate = n.max(2);
    loop {
        if candidate.is_multiple_of(2) {
            let mut m = candidate;
            for f in [2, 3, 5, 7] {
                while m.is_multiple_of(f) {
                    m /= f;
                }
            }
            if m == 1 {
                return candidate;
            }
        }
        candidate += 1;
    }
}

/// A convolution result and a bound on the ℓ2 norm of its absolute round-off error.
#[derive(Debug, Clone)]
pub struct Convolved {
    /// The result, negatives (pure round-off) clamped to 0.
    pub values: Vec<f64>,
    /// Bound on `‖computed − exact‖₂` (clamping negatives only reduces the error).
    pub roundoff_l2: f64,
    /// The absolute round-off charged to every entry: the larger of `entry_bound` (a worst-case
    /// bound) and the estimate `max(4·max|negative output|, 8·log₂N·u·max output)` (FFT
    /// errors spread evenly over the output).
    ///
    /// In the estimate, negative outputs are pure error (the true outputs are non-negative)
    /// and show the noise's size; the second term covers outputs with no negatives. The
    /// estimate alone is not a bound: it misses errors that are not spread like noise (see
    /// `entry_bound`), and with it an 8-ary randomized response composed 1.27e8 times gave
    /// an ε bracket whose ends crossed.
    pub roundoff_floor: f64,
    /// A worst-case bound on every entry's absolute error, `Σ_j |E_j| / N` over the spectral
    /// error bounds `E_j` plus the inverse transform's rounding `γ·Σ_j |Y_j| / N` (an
    /// inverse DFT output is the mean of the bins times unit phases). It also covers errors
    /// that are not spread like noise: a k-th power multiplies the forward transform's error
    /// in the bins near frequency 0 by k, which shifts a whole smooth stretch of entries the
    /// same way (1e-10 per entry at k ≈ 1e8). Typically 1e-15 at k = 1e4.
    pub entry_bound: f64,
    /// Self-convolution only: mass of the exact result at entries `window_start + period`
    /// and above may have wrapped around into the window (the circular buffer's period on
    /// the plain path); 0 for other convolutions, `u64::MAX` when nothing can wrap.
    pub period: u64,
    /// Self-convolution of a vector supported on a lattice (`first + j·stride`, stride > 1):
    /// `(first window entry on the result's lattice, stride)`. The other entries are exactly
    /// 0, with no error: the round-off bounds above hold for the lattice entries only.
    pub lattice: Option<(usize, usize)>,
}

fn l1(v: &[f64]) -> f64 {
    lane_sum(v, f64::abs)
}

fn l2(v: &[f64]) -> f64 {
    l2_squared(v).sqrt()
}

fn l2_squared(v: &[f64]) -> f64 {
    lane_sum(v, |x| x * x)
}

/// Σ f(xᵢ) by four running sums (vectorizable): a rounding error below (n/4 + 3)·u of the
/// sum of the |f(xᵢ)|, less than one running sum's.
#[inline(always)]
fn lane_sum(v: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    let mut sums = [0.0; 4];
    let chunks = v.chunks_exact(4);
    let rest: f64 = chunks.remainder().iter().map(|&x| f(x)).sum();
    for c in chunks {
        for (s, &x) in sums.iter_mut().zip(c) {
            *s += f(x);
        }
    }
    sums.iter().sum::<f64>() + rest
}

/// The largest entry of a non-negative vector (0 if it is empty or all zero), by four
/// branch-free running maxima (vectorizable).
fn largest(v: &[f64]) -> f64 {
    let larger = |a: f64, b: f64| if b > a { b } else { a };
    let mut most = [0.0_f64; 4];
    let chunks = v.chunks_exact(4);
    let rest = chunks.remainder().iter().fold(0.0, |a, &b| larger(a, b));
    for c in chunks {
        for (m, &x) in most.iter_mut().zip(c) {
            *m = larger(*m, x);
        }
    }
    larger(
        larger(larger(most[0], most[1]), larger(most[2], most[3])),
        rest,
    )
}

/// Σ x² over the entries of the circular `out` outside the window `start .. start + len`
/// (`start < out.len()`, `len ≤ out.len()`).
fn outside_squares(out: &[f64], start: usize, len: usize) -> f64 {
    let n = out.len();
    if start + len <= n {
        l2_squared(&out[..start]) + l2_squared(&out[start + len..])
    } else {
        l2_squared(&out[start + len - n..start])
    }
}

/// What [`inverse_and_bound`] needs of the window it reads, gathered in the pass that
/// scales it and clamps its negative entries to 0, in four lanes (independent chains that
/// the processor overlaps and the compiler can vectorize).
#[derive(Default)]
struct WindowStats {
    /// Σ x² of the raw (unscaled) outputs.
    squares: [f64; 4],
    /// Σ y² of the negative scaled outputs.
    negative_sq: [f64; 4],
    /// The most negative scaled output (0 if none).
    lowest: [f64; 4],
    /// The largest scaled output (0 if none is positive).
    largest: [f64; 4],
}

impl WindowStats {
    /// `values[i] = max(values[i]·scale, 0)`, recording the statistics. (The running sums
    /// are local copies, written back at the end: updated through `self`, they went to
    /// memory at every entry, a store-to-load chain.)
    fn scale_and_clamp(&mut self, values: &mut [f64], scale: f64) {
        scale_and_clamp_wide(self, values, scale);
    }

    /// Add the statistics of a later part of the window (lane by lane).
    fn merge(&mut self, later: &WindowStats) {
        for l in 0..4 {
            self.squares[l] += later.squares[l];
            self.negative_sq[l] += later.negative_sq[l];
            self.lowest[l] = self.lowest[l].min(later.lowest[l]);
            self.largest[l] = self.largest[l].max(later.largest[l]);
        }
    }
}

crate::numeric::wide_loops::dispatch_wide! {
    /// [`WindowStats::scale_and_clamp`] (its four lanes at once on AVX2).
    fn scale_and_clamp_wide(stats: &mut WindowStats, values: &mut [f64], scale: f64) =
        scale_and_clamp_kernel;
}

/// The body of [`WindowStats::scale_and_clamp`].
#[inline(always)]
fn scale_and_clamp_kernel(stats: &mut WindowStats, values: &mut [f64], scale: f64) {
    let (mut squares, mut negative_sq) = (stats.squares, stats.negative_sq);
    let (mut lowest, mut largest) = (stats.lowest, stats.largest);
    let mut lane = |v: &mut f64, l: usize| {
        let x = *v;
        let y = x * scale;
        let negative = if y < 0.0 { y } else { 0.0 };
        squares[l] += x * x;
        negative_sq[l] += negative * negative;
        lowest[l] = if negative < lowest[l] {
            negative
        } else {
            lowest[l]
        };
        largest[l] = if y > largest[l] { y } else { largest[l] };
        // (A NaN stays NaN, for the checks downstream to catch.)
        *v = if y < 0.0 { 0.0 } else { y };
    };
    let mut chunks = values.chunks_exact_mut(4);
    for chunk in &mut chunks {
        for (l, v) in chunk.iter_mut().enumerate() {
            lane(v, l);
        }
    }
    for v in chunks.into_remainder() {
        lane(v, 0);
    }
    (stats.squares, stats.negative_sq) = (squares, negative_sq);
    (stats.lowest, stats.largest) = (lowest, largest);
}

/// Direct linear convolution; each entry is a sum of at most min(len) non-negative products,
/// so its relative error is at most `γ_m = m·u/(1 − m·u)`.
pub fn convolve_direct(a: &[f64], b: &[f64]) -> Convolved {
    if a.is_empty() || b.is_empty() {
        return Convolved {
            values: Vec::new(),
            roundoff_l2: 0.0,
            roundoff_floor: 0.0,
            entry_bound: 0.0,
            period: 0,
            lattice: None,
        };
    }
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, &ai) in a.iter().enumerate() {
        if ai == 0.0 {
            continue;
        }
        for (o, &bj) in out[i..].iter_mut().zip(b) {
            *o += ai * bj;
        }
    }
    let m = a.len().min(b.len()) as f64 + 1.0;
    let gamma = m * UNIT_ROUNDOFF / (1.0 - m * UNIT_ROUNDOFF);
    let roundoff_l2 = gamma * l2(&out);
    // Direct sums of non-negative terms: every entry within γ of itself, so γ·max bounds all.
    let roundoff_floor = gamma * out.iter().fold(0.0_f64, |m, &v| m.max(v));
    Convolved {
        values: out,
        roundoff_l2,
        roundoff_floor,
        entry_bound: roundoff_floor,
        period: 0,
        lattice: None,
    }
}

/// Linear convolution of two non-negative vectors, directly when small, else by real FFT.
pub fn convolve(a: &[f64], b: &[f64]) -> Convolved {
    if a.is_empty() || b.is_empty() {
        return convolve_direct(a, b);
    }
    if a.len().saturating_mul(b.len()) <= DIRECT_CONVOLUTION_MAX_WORK || a.len().min(b.len()) <= 16
    {
        return convolve_direct(a, b);
    }
    convolve_fft(a, b)
}

/// Linear convolution by real FFT (always), for testing against [`convolve_direct`].
pub fn convolve_fft(a: &[f64], b: &[f64]) -> Convolved {
    let out_len = a.len() + b.len() - 1;
    let n = fast_len(out_len);
    let plan = plans(n);
    let mut buffer = output_buffer(n, &plan);
    // The zero-padded signal packed in pairs straight into its spectrum's buffer (as
    // `RealFft::forward` packs it), transformed in place: no padded copy of the input.
    let mut spectrum_of = |v: &[f64]| {
        let mut spectrum = vec![Complex64::new(0.0, 0.0); n / 2 + 1];
        for (z, pair) in spectrum.iter_mut().zip(v.chunks(2)) {
            *z = Complex64::new(pair[0], pair.get(1).copied().unwrap_or(0.0));
        }
        plan.forward_packed(&mut spectrum, as_scratch(&mut buffer, &plan));
        spectrum
    };
    let mut product = spectrum_of(a);
    let sb = spectrum_of(b);
    let stages = (n as f64).log2().ceil();
    let ea = FFT_ERROR_CONSTANT * stages * UNIT_ROUNDOFF * l1(a);
    let eb = FFT_ERROR_CONSTANT * stages * UNIT_ROUNDOFF * l1(b);
    let mut spectral = SpectralError::default();
    // a's spectrum times b's, in place.
    for (j, (x, y)) in product.iter_mut().zip(&sb).enumerate() {
        let z = *x * y;
        let e = modulus(*x) * eb + modulus(*y) * ea + ea * eb + 4.0 * UNIT_ROUNDOFF * modulus(z);
        spectral.add(hermitian_weight(j, n), e);
        spectral.add_magnitude(hermitian_weight(j, n), modulus(z));
        *x = z;
    }
    drop(sb);
    inverse_and_bound(&mut product, buffer, out_len, &spectral, &plan, 0)
}

/// Weight of half-spectrum bin j in the full spectrum's sum of squares.
fn hermitian_weight(j: usize, n: usize) -> f64 {
    if j == 0 || (n.is_multiple_of(2) && j == n / 2) {
        1.0
    } else {
        2.0
    }
}

/// Sum over the full spectrum of the squared per-bin error bounds (for the ℓ2 bound via
/// Parseval).
#[derive(Debug, Default)]
struct SpectralError {
    squares: f64,
    /// Σ weight·error over the full spectrum (for the per-entry bound).
    sum: f64,
    /// Σ weight·|bin| of the spectrum that is inverted (for the inverse's rounding).
    magnitudes: f64,
}

impl SpectralError {
    fn add(&mut self, weight: f64, error: f64) {
        self.squares += weight * error * error;
        self.sum += weight * error;
    }

    /// Record the modulus of a bin that will be inverted.
    fn add_magnitude(&mut self, weight: f64, modulus: f64) {
        self.magnitudes += weight * modulus;
    }

    /// Add the sums of another part of the spectrum.
    fn merge(&mut self, other: &SpectralError) {
        self.squares += other.squares;
        self.sum += other.sum;
        self.magnitudes += other.magnitudes;
    }
}

/// Invert a half spectrum, take `len` values starting at circular index `start` (into
/// `buffer`, an [`output_buffer`] that first serves as the scratch), clamp negatives, and
/// bound the error from the spectral errors.
fn inverse_and_bound(
    spectrum: &mut [Complex64],
    mut buffer: Vec<f64>,
    len: usize,
    spectral: &SpectralError,
    plan: &RealFft,
    start: usize,
) -> Convolved {
    let n = plan.len();
    // The DC and Nyquist bins of a real signal's spectrum are real.
    spectrum[0].im = 0.0;
    if let Some(last) = spectrum.last_mut() {
        if n.is_multiple_of(2) {
            last.im = 0.0;
        }
    }
    plan.inverse_packed(spectrum, as_scratch(&mut buffer, plan));
    bound_window(spectrum, buffer, len, spectral, n, start)
}

/// Read the window of an inverse transform's output (`spectrum`, packed in pairs, n real
/// entries): `len` values from circular index `start` into `buffer` (reused), negatives
/// clamped, and the error bounds from the spectral errors (see [`inverse_and_bound`]).
fn bound_window(
    spectrum: &[Complex64],
    buffer: Vec<f64>,
    len: usize,
    spectral: &SpectralError,
    n: usize,
    start: usize,
) -> Convolved {
    // The output, packed in pairs x_{2j} + i·x_{2j+1}: as doubles, x itself.
    let out: &[f64] = bytemuck::cast_slice(&spectrum[..n / 2]);
    // The window, circular indices start .. start + len (len ≤ n), as at most two slices.
    let start = start % n;
    let (head, tail) = if start + len <= n {
        (&out[start..start + len], &out[..0])
    } else {
        (&out[start..], &out[..start + len - n])
    };
    let mut values = buffer;
    values.truncate(len);
    let (first, second) = values.split_at_mut(head.len());
    first.copy_from_slice(head);
    second.copy_from_slice(tail);
    let outside = outside_squares(out, start, len);
    window_bounds(values, head.len(), outside, spectral, n)
}

/// [`bound_window`] for an output left in `buffer[..n]` itself (the n real outputs of
/// [`RealFft::inverse_from_permuted`] on the packed spectrum at the front of the buffer):
/// the window is moved (rotated, when it wraps) to the front and read in place, so that the result needs no
/// memory of its own. (A buffer for it cost a page fault per 4 KiB in a fresh process,
/// about a tenth of the first ε query of σ 0.8, q 0.004, 10⁵ steps.)
fn bound_window_in_place(
    mut buffer: Vec<f64>,
    len: usize,
    spectral: &SpectralError,
    n: usize,
    start: usize,
) -> Convolved {
    let start = start % n;
    let outside = outside_squares(&buffer[..n], start, len);
    if start + len <= n {
        // No wrap: one move of the window alone (a rotation moves all n entries).
        buffer.copy_within(start..start + len, 0);
    } else if len <= start {
        // A wrap whose part from the front lands clear of the part from the end: that part
        // first (its source, before `start`, may be overwritten next), then the end's.
        let tail = n - start;
        buffer.copy_within(..len - tail, tail);
        buffer.copy_within(start..n, 0);
    } else {
        buffer.truncate(n);
        buffer.rotate_left(start);
    }
    buffer.truncate(len);
    window_bounds(buffer, (n - start).min(len), outside, spectral, n)
}

/// Entries per piece of the window pass over long windows ([`scale_and_clamp_window`]; a
/// multiple of the four lanes): fixed, so the pieces depend on the sizes alone.
const WINDOW_PIECE: usize = 1 << 15;

/// [`WindowStats::scale_and_clamp`] over a window (its first `head` entries before the
/// wrap, then the rest): one pass over each part for windows shorter than two pieces; else
/// pieces of [`WINDOW_PIECE`] entries within each part that idle threads may take (see
/// [`crate::numeric::pieces`]), their statistics combined in the pieces' order (sums added,
/// extremes kept), the same bits on any number of threads. (At the end of a DP-SGD query's
/// longest power the other thread is often done: the pass over 2·10⁵ entries is then
/// shared.)
fn scale_and_clamp_window(values: &mut [f64], head: usize, scale: f64) -> WindowStats {
    let (first, second) = values.split_at_mut(head);
    let mut window = WindowStats::default();
    if first.len() + second.len() < 2 * WINDOW_PIECE {
        window.scale_and_clamp(first, scale);
        window.scale_and_clamp(second, scale);
        return window;
    }
    let pieces: Vec<&mut [f64]> = first
        .chunks_mut(WINDOW_PIECE)
        .chain(second.chunks_mut(WINDOW_PIECE))
        .collect();
    let stats = spread_map(pieces, |piece| {
        let mut stats = WindowStats::default();
        stats.scale_and_clamp(piece, scale);
        stats
    });
    for piece in &stats {
        window.merge(piece);
    }
    window
}

/// The window `values` of an inverse transform of length n (unscaled outputs in circular
/// order, the first `head` of them before the wrap) scaled by 1/n with negatives clamped to
/// 0, and its error bounds from the spectral errors and `outside` (Σ x² of the outputs
/// outside the window).
fn window_bounds(
    mut values: Vec<f64>,
    head: usize,
    outside: f64,
    spectral: &SpectralError,
    n: usize,
) -> Convolved {
    let scale = 1.0 / n as f64;
    let window = scale_and_clamp_window(&mut values, head, scale);
    let negative_sq = window.negative_sq.iter().sum::<f64>();
    let most_negative = -window.lowest.iter().fold(0.0_f64, |a, &b| a.min(b));
    let largest = window.largest.iter().fold(0.0_f64, |a, &b| a.max(b));
    // ‖out‖₂: the window's part summed above, the rest of the circular output in `outside`.
    let stages = (n as f64).log2().ceil();
    let inverse_rounding = (FFT_ERROR_CONSTANT * stages + 1.0) * UNIT_ROUNDOFF;
    let full_l2 = (window.squares.iter().sum::<f64>() + outside).sqrt() * scale;
    let model = (spectral.squares / n as f64).sqrt() + inverse_rounding * full_l2;
    // Negative outputs are pure error: the bound must cover them, with margin.
    let roundoff_l2 = model.max(2.0 * negative_sq.sqrt());
    let roundoff_floor = (4.0 * most_negative).max(8.0 * stages * UNIT_ROUNDOFF * largest);
    // Each output is (1/N)·Σ_j Y_j ω^{ij}: its error from the spectral errors is at most
    // (1/N)·Σ_j |E_j|, and the inverse transform's own rounding at most γ·(1/N)·Σ_j |Y_j|.
    // Only meaningful when every bin's magnitude was recorded (self-convolution).
    let entry_bound =
        ((spectral.sum + inverse_rounding * spectral.magnitudes) * scale) * (1.0 + 1e-6);
    // The floor charged per entry must be a bound: the estimate alone fails at huge k
    // (8-ary randomized response × 1.27e8 gave an ε bracket with its ends crossed).
    let roundoff_floor = roundoff_floor.max(entry_bound);
    Convolved {
        values,
        roundoff_l2,
        roundoff_floor,
        entry_bound,
        period: n as u64,
        lattice: None,
    }
}

/// Length of the circular buffer [`self_convolve_window`] uses for a window of `window_len`
/// entries of the powers of a vector of `input_len` entries: the exact result's entry i lands
/// at position `i mod period`.
pub fn self_convolution_period(window_len: usize, input_len: usize) -> usize {
    fast_len(window_len.max(input_len))
}

/// Entries `window_start .. window_start + window_len` of the k-fold self-convolution of the
/// non-negative vector `p` (indices relative to the start of the full `k(n−1)+1` result),
/// computed by one FFT power over a circular buffer of length `N ≥ max(window_len, n)`.
///
/// Mass of the exact result outside the window wraps around into it (aliasing); the caller
/// accounts for it with a tail bound.
pub fn self_convolve_window(p: &[f64], k: u64, window_start: u64, window_len: usize) -> Convolved {
    match lattice_of(p) {
        Some((first, stride)) => lattice_power(p, first, stride, k, window_start, window_len),
        None => power_window(p, k, window_start, window_len),
    }
}

/// `(first, stride)` when the non-zero entries of `p` are `first + j·stride` with stride > 1
/// (at least two of them); `None` otherwise.
pub(crate) fn lattice_of(p: &[f64]) -> Option<(usize, usize)> {
    let first = p.iter().position(|&v| v != 0.0)?;
    let mut stride = 0usize;
    for (i, &v) in p.iter().enumerate().skip(first + 1) {
        if v != 0.0 {
            stride = gcd(stride, i - first);
            if stride == 1 {
                return None;
            }
        }
    }
    (stride > 1).then_some((first, stride))
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// [`self_convolve_window`] for `p` supported on `first + j·stride`: the k-fold result is
/// supported on `k·first + J·stride`, and its entries there are those of the k-fold power of
/// the compressed vector `q_j = p[first + j·stride]` (a transform `stride` times shorter,
/// and no round-off at all between the lattice points, where the result is exactly 0).
fn lattice_power(
    p: &[f64],
    first: usize,
    stride: usize,
    k: u64,
    window_start: u64,
    window_len: usize,
) -> Convolved {
    let compressed: Vec<f64> = p[first..].iter().step_by(stride).copied().collect();
    let s = stride as i128;
    let base = k as i128 * first as i128;
    let (lo, hi) = (
        window_start as i128,
        window_start as i128 + window_len as i128 - 1,
    );
    // Lattice indices J with lo ≤ base + J·s ≤ hi.
    let j_lo = ((lo - base).max(0) + s - 1) / s;
    let j_hi = if hi < base { -1 } else { (hi - base) / s };
    let mut values = vec![0.0; window_len];
    if j_hi < j_lo {
        return Convolved {
            values,
            roundoff_l2: 0.0,
            roundoff_floor: 0.0,
            entry_bound: 0.0,
            // Nothing was transformed: every entry is exactly 0 and nothing wraps.
            period: u64::MAX,
            lattice: None,
        };
    }
    let count = (j_hi - j_lo + 1) as usize;
    let inner = power_window(&compressed, k, j_lo as u64, count);
    let first_entry = (base + j_lo * s - lo) as usize;
    for (j, v) in inner.values.iter().enumerate() {
        values[first_entry + j * stride] = *v;
    }
    Convolved {
        values,
        roundoff_l2: inner.roundoff_l2,
        roundoff_floor: inner.roundoff_floor,
        entry_bound: inner.entry_bound,
        // The compressed buffer wraps lattice index j_lo + period onto j_lo, i.e. the exact
        // result from base + (j_lo + period)·stride on.
        period: u64::try_from(base + (j_lo + inner.period as i128) * s - lo).unwrap_or(u64::MAX),
        lattice: Some((first_entry, stride)),
    }
}

/// [`self_convolve_window`] by one FFT power over the full vector, in one pass over the
/// spectrum between the transforms: the half transform is left in its permuted order (no
/// transposes, see [`crate::numeric::complex_fft`]), each bin is unpacked, powered with its
/// error bound and packed for the inverse at once ([`RealFft::map_permuted`]), and only the
/// rows of the buffer that hold `p` are read (no clearing pass). Long transforms do the
/// passes, the map and the recomputed bins in pieces that idle threads of the caller's pool
/// may take (see [`crate::numeric::pieces`]; the same result bit for bit).
fn power_window(p: &[f64], k: u64, window_start: u64, window_len: usize) -> Convolved {
    let n = self_convolution_period(window_len, p.len());
    let plan = plans(n);
    // One buffer for all of it: the packed spectrum (n/2 + 1 complex numbers), the
    // transforms' scratch after it, and in the end the window, read in place.
    let spectrum_len = n + 2;
    let mut buffer = transform_buffer(spectrum_len + 2 * plan.permuted_scratch_len());
    let (packed, scratch) = buffer.split_at_mut(spectrum_len);
    let spectrum: &mut [Complex64] = bytemuck::cast_slice_mut(packed);
    let scratch: &mut [Complex64] = bytemuck::cast_slice_mut(scratch);
    let factor = load_factor(p, spectrum, n);
    plan.forward_permuted(spectrum, scratch, &factor.data);
    let atom = if factor.split { factor.atom } else { 0.0 };
    // The bins near frequency 0 whose power would amplify the transform's error the most
    // (while k·|x_j|^{k−1} ≥ RECOMPUTED_AMPLIFICATION, at most NEAR_ZERO_BINS), and the
    // zero-frequency bin, powered from the vector itself with far smaller errors.
    let last = amplified_bins(
        |j| plan.bin_from_permuted(spectrum, j) + atom,
        n / 2 + 1,
        k,
        RECOMPUTED_AMPLIFICATION,
    );
    let center = if factor.split {
        factor.rotation
    } else {
        mean_index(p)
    };
    let near_zero = NearZeroPowers::compute(
        p,
        factor.mass_pair,
        factor.rotation,
        center,
        plan.near_zero_tables(),
        k,
        last,
    );
    let transformed = TransformedFactor {
        rotation: factor.rotation,
        e_fwd: factor.e_fwd,
        direct_bins: 0,
        e_direct: factor.e_fwd,
        mass: factor.mass,
    };
    let rule = PowerRule::new(k);
    // Most bins' powers fall below e^-690 at large k: tested first, on the squared modulus
    // (as `PowerRule::power` does).
    let dropped_below = rule.dropped_below(transformed.e_fwd);
    let slow_path = SlowPath {
        recomputed: &near_zero.bins[..near_zero.bins.len().min(last + 1)],
        rule: &rule,
        transformed: &transformed,
        dropped_below,
    };
    // Pairs of bins past the recomputed ones that both fall under the drop threshold are
    // skipped unpacked (see `pair_below`), with the weight the per-bin test would count.
    let pair_vanishes = |(_, dropped_weight): &mut (SpectralError, u64),
                         low: usize,
                         high: usize,
                         a: Complex64,
                         b: Complex64| {
        let vanishes = low > last && pair_below(a, b, atom, dropped_below);
        if vanishes {
            *dropped_weight += (hermitian_weight(low, n) + hermitian_weight(high, n)) as u64;
        }
        vanishes
    };
    // Per piece of the map (see `RealFft::map_permuted`): its spectral errors, and Σ weight
    // of the bins dropped by the fast path, each charged the same bound (an integer count:
    // a float sum here was a store-to-load chain through every bin).
    let pieces = plan.map_permuted(
        spectrum,
        || (SpectralError::default(), 0u64),
        pair_vanishes,
        |(spectral, dropped_weight), j, x| {
            let weight = hermitian_weight(j, n);
            // The fast path (most bins at large k), inlined into the map's loop.
            if j > last {
                let x = x + atom;
                if x.re * x.re + x.im * x.im < dropped_below {
                    *dropped_weight += weight as u64;
                    return Complex64::new(0.0, 0.0);
                }
            }
            slow_path.bin(spectral, dropped_weight, j, x + atom, weight)
        },
    );
    // The pieces' sums, in their order (fixed by n).
    let mut spectral = SpectralError::default();
    let mut dropped_weight: u64 = 0;
    for (piece, dropped) in pieces {
        spectral.merge(&piece);
        dropped_weight += dropped;
    }
    spectral.add(
        dropped_weight as f64,
        DROPPED_POWER_BOUND + f64::MIN_POSITIVE,
    );
    plan.inverse_from_permuted(spectrum, scratch);
    // The rotation by `rotation` shifted the k-fold result by k·rotation (mod n).
    let shift = ((transformed.rotation as u128 * k as u128) % n as u128) as u64;
    let start = ((window_start % n as u64 + n as u64 - shift) % n as u64) as usize;
    bound_window_in_place(buffer, window_len, &spectral, n, start)
}

/// Whether both bins unpacked from the packed pair `(a, b)` ([`RealFft::map_permuted`]),
/// each plus `atom`, have squared moduli below `dropped_below` as the map computes them, so
/// that the per-bin test would drop both. Unpacked, `X_k` and `X_{m−k}` are a half sum
/// plus or minus a unit twiddle times a half difference, so `|X| ≤ |a| + |b| ≤ ‖a‖₁ + ‖b‖₁`,
/// and as computed within about 20u of that; the 1e-9 margins cover it.
fn pair_below(a: Complex64, b: Complex64, atom: f64, dropped_below: f64) -> bool {
    let size = (a.re.abs() + a.im.abs() + b.re.abs() + b.im.abs() + atom.abs()) * (1.0 + 1e-9);
    size * size < dropped_below * (1.0 - 1e-9)
}

/// What [`power_window`]'s map needs past its inlined fast path (kept out of line: with the
/// whole power inlined, the map's loop spilled its registers at every bin).
struct SlowPath<'a> {
    /// The recomputed powers of bins 0..=last ([`NearZeroPowers`]).
    recomputed: &'a [Option<(Complex64, f64)>],
    rule: &'a PowerRule,
    transformed: &'a TransformedFactor,
    /// Squared moduli below this are dropped ([`PowerRule::dropped_below`]).
    dropped_below: f64,
}

impl SlowPath<'_> {
    /// Bin j's power (`x`: the transformed bin with the split atom added back; `weight`: its
    /// Hermitian weight): the recomputed one when there is one, 0 when negligible (its weight
    /// counted in `dropped_weight`), else the rule's power; its error bound goes into
    /// `spectral`.
    #[inline(never)]
    fn bin(
        &self,
        spectral: &mut SpectralError,
        dropped_weight: &mut u64,
        j: usize,
        x: Complex64,
        weight: f64,
    ) -> Complex64 {
        if let Some(&Some((value, error))) = self.recomputed.get(j) {
            spectral.add(weight, error);
            spectral.add_magnitude(weight, modulus(value));
            return value;
        }
        if x.re * x.re + x.im * x.im < self.dropped_below {
            *dropped_weight += weight as u64;
            return Complex64::new(0.0, 0.0);
        }
        match self.rule.power(j, x, self.transformed) {
            PoweredBin::Kept {
                value,
                modulus,
                error,
            } => {
                spectral.add(weight, error);
                spectral.add_magnitude(weight, modulus);
                value
            }
            PoweredBin::Dropped => {
                *dropped_weight += weight as u64;
                Complex64::new(0.0, 0.0)
            }
        }
    }
}

/// How many bins j = 1, 2, … (of `bins`, at most [`NEAR_ZERO_BINS`]) a k-th power amplifies
/// by more than `at_least`: while `k·|x_j|^{k−1} > at_least` (`bin(j)` the transform's value).
fn amplified_bins(bin: impl Fn(usize) -> Complex64, bins: usize, k: u64, at_least: f64) -> usize {
    let kf = k as f64;
    let threshold = at_least.ln();
    (1..bins.min(NEAR_ZERO_BINS + 1))
        .take_while(|&j| {
            let r = modulus(bin(j));
            r > 0.0 && (kf.ln() + (kf - 1.0) * r.ln()) > threshold
        })
        .last()
        .unwrap_or(0)
}

/// A bin of an FFT power is taken from [`NearZeroPowers`] while the power amplifies its
/// transformed value's error by at least this much. Below it the transform's error, about
/// `97u·A` for amplification A (its bound `95u·‖p‖₁` times A, plus binary powering's), is
/// far below what the recomputed bins leave (3e-12 of spectrum on DP-SGD σ 0.8, q 0.004,
/// k = 10⁵, whose bins have A = 93,009, 74,840, … 288, 73, 16, 3: the last two add 2e-13),
/// and each recomputed bin costs a pass over the vector.
const RECOMPUTED_AMPLIFICATION: f64 = 32.0;

/// The index nearest the mean of a non-negative vector (0 if it is all zero).
pub(crate) fn mean_index(p: &[f64]) -> usize {
    let (mut weighted, mut total) = (0.0, 0.0);
    for (i, &v) in p.iter().enumerate() {
        weighted += i as f64 * v;
        total += v;
    }
    if total > 0.0 {
        ((weighted / total).round() as usize).min(p.len().saturating_sub(1))
    } else {
        0
    }
}

/// A vector packed into a spectrum buffer by [`load_factor`], and what the error bounds of
/// its transform need.
struct LoadedFactor {
    /// The packed positions that hold the vector (the rest of the buffer is zero).
    data: Vec<std::ops::Range<usize>>,
    rotation: usize,
    /// Whether the largest atom was left out of the transform, to be added to every bin.
    split: bool,
    atom: f64,
    /// ‖p‖₁.
    norm: f64,
    e_fwd: f64,
    mass: f64,
    /// The compensated sum of `p` before its last rounding (see [`NearZeroPowers`]).
    mass_pair: [f64; 2],
}

/// Pack `p` into `spectrum` (n real entries in pairs), rotated so that a dominant atom sits
/// at index 0 and left out when that lowers the transform's error (see [`transform_factor`]),
/// writing only the vector's own entries and the halves of the pairs at its ends: the rest
/// of the buffer is not touched, and the returned ranges say where the data are
/// ([`RealFft::forward_permuted`] reads the rest as zero).
fn load_factor(p: &[f64], spectrum: &mut [Complex64], n: usize) -> LoadedFactor {
    let stages = (n as f64).log2().ceil();
    let norm = l1(p);
    // The first largest entry (0 for an empty or all-zero p): its value by a branch-free
    // maximum, then its position.
    let atom = largest(p);
    let atom_index = if atom > 0.0 {
        p.iter().position(|&v| v == atom).unwrap_or(0)
    } else {
        0
    };
    // ‖r‖₁ summed directly (not ‖p‖₁ − atom, which could cancel).
    let rest_norm: f64 = match p.len() {
        0 => 0.0,
        _ => l1(&p[..atom_index]) + l1(&p[atom_index + 1..]),
    };
    let split_error = (FFT_ERROR_CONSTANT * stages * rest_norm + norm) * UNIT_ROUNDOFF;
    let plain_error = FFT_ERROR_CONSTANT * stages * UNIT_ROUNDOFF * norm;
    let split = split_error < 0.5 * plain_error;
    let rotation = if split { atom_index } else { 0 };
    // x = p[rotation..] from 0 on, p[..rotation] at the end, zero between; x_{2j} + i·x_{2j+1}
    // at packed position j.
    let (low, high) = p.split_at(rotation.min(p.len()));
    let (h, l) = (high.len(), low.len());
    let x: &mut [f64] = bytemuck::cast_slice_mut(&mut spectrum[..n / 2]);
    // The halves of the boundary pairs that are not data, cleared before the data are
    // written (a data entry there overwrites the 0).
    if h % 2 == 1 {
        x[h] = 0.0;
    }
    if l > 0 && (n - l) % 2 == 1 {
        x[n - l - 1] = 0.0;
    }
    x[..h].copy_from_slice(high);
    x[n - l..].copy_from_slice(low);
    if split {
        x[0] = 0.0;
    }
    let m = n / 2;
    let head = 0..h.div_ceil(2).min(m);
    let tail = (n - l) / 2..m;
    let data = if l == 0 {
        Vec::from([head])
    } else if tail.start <= head.end {
        // The two ends meet: one range over the whole buffer.
        let whole = 0..m;
        Vec::from([whole])
    } else {
        Vec::from([head, tail])
    };
    // The zero-frequency bin is the total mass: taken from a compensated sum, so that the
    // result's mass is exact up to the inverse transform's rounding instead of carrying
    // k·(rounding of the sum) spread evenly over every entry.
    let mass_pair = crate::numeric::summation::compensated_sum_pair(p);
    LoadedFactor {
        data,
        rotation,
        split,
        atom,
        norm,
        e_fwd: if split { split_error } else { plain_error },
        mass: mass_pair[0] + mass_pair[1],
        mass_pair,
    }
}

/// The circular sum of independent draws: `factors` = (vector, k) pairs, each vector
/// convolved with itself k times and the results convolved together, by one forward
/// transform per factor and one inverse: `IFFT(Π_f FFT(p_f)^{k_f})`. Entry i of the exact
/// result (relative to the sum of the vectors' first indices) lands at `i mod period`; the
/// window `window_start .. window_start + window_len` is returned.
///
/// # Error bound
/// Every factor's powered bins carry the bounds of [`self_convolve_window`]'s plain path
/// (forward transform, direct recomputation near frequency 0, power). A running product
/// `Z` with bound `E` times a factor bin `y` with bound `e` has the bound
/// ```text
/// E' = E·(|y| + e) + |Z|·e + 2.3·u·|Z|·|y|
/// ```
/// (the true product differs from `Z·y` by at most the first two terms; the complex
/// product's own rounding is within √5·u of it, Brent, Percival & Zimmermann 2007). The
/// per-bin bounds then give the output's bounds as in [`self_convolve_window`]. `period`
/// is the buffer length, which is at least the window and every vector's length.
///
/// Two savings keep a thousand factors cheap, neither weakening the bound. A bin whose
/// product falls below 1e-290 (value plus bound) can only shrink further, each later factor's
/// true bin being at most its vector's mass to the k-th power: it is set to 0, charged
/// that much (times the masses' product, when above 1), and skipped. The leading bins are
/// recomputed directly (the plain path's remedy for bins near modulus 1) only while the
/// product so far is at least 0.1 there: below that the saving is scaled down as much.
///
/// # Panics
/// Never for valid inputs; an empty `factors` gives an all-zero window.
pub fn product_window(
    factors: &[(&[f64], u64)],
    window_start: u64,
    window_len: usize,
) -> Convolved {
    let longest = factors.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
    let n = self_convolution_period(window_len, longest);
    let plan = plans(n);
    let mut workspace = take_workspace();
    workspace.prepare(n);
    let spectrum = &mut workspace.spectrum;
    let mut buffer = output_buffer(n, &plan);
    let bins = n / 2 + 1;
    // The running product starts at 1 (the empty sum's point mass at 0), exactly.
    let mut product = vec![Complex64::new(1.0, 0.0); bins];
    let mut bounds = vec![0.0_f64; bins];
    let mut shift: u128 = 0;
    // A bin whose product is below FROZEN_BIN (value plus bound) stays below it times the
    // remaining factors' bins, each at most its vector's mass to the power k: it is set to 0
    // with that as its bound, and skipped from then on. With a thousand factors most bins
    // die within the first few, and the powers are then computed for the few live ones.
    let growth = factors
        .iter()
        .map(|&(p, k)| k as f64 * (l1(p) * (1.0 + 1e-9)).max(1.0).ln())
        .sum::<f64>()
        .exp();
    let freeze = growth.is_finite() && growth < 1e10;
    let mut live: Vec<usize> = (0..bins).collect();
    for &(p, k) in factors {
        // Direct recomputation pays where the error it saves is not scaled down by the
        // product so far: the leading bins whose product is still at least DIRECT_WORTH.
        let direct_limit = product[1..]
            .iter()
            .take(NEAR_ZERO_BINS)
            .take_while(|z| modulus(**z) >= DIRECT_WORTH)
            .count();
        let transformed = transform_factor(
            p,
            k,
            spectrum,
            as_scratch(&mut buffer, &plan),
            &plan,
            direct_limit,
        );
        shift = (shift + transformed.rotation as u128 * k as u128) % n as u128;
        let rule = PowerRule::new(k);
        live.retain(|&j| {
            let (y, ry, e) = match rule.power(j, spectrum[j], &transformed) {
                PoweredBin::Kept {
                    value,
                    modulus,
                    error,
                } => (value, modulus, error),
                PoweredBin::Dropped => (
                    Complex64::new(0.0, 0.0),
                    0.0,
                    DROPPED_POWER_BOUND + f64::MIN_POSITIVE,
                ),
            };
            let z = product[j];
            let rz = modulus(z);
            let bound =
                (bounds[j] * (ry + e) + rz * e + PRODUCT_ROUNDING * UNIT_ROUNDOFF * rz * ry)
                    * (1.0 + 4.0 * UNIT_ROUNDOFF)
                    + f64::MIN_POSITIVE;
            let z = z * y;
            let outer = modulus(z) + bound;
            if freeze && j > 0 && outer < FROZEN_BIN {
                product[j] = Complex64::new(0.0, 0.0);
                bounds[j] = outer * growth * (1.0 + 1e-9) + f64::MIN_POSITIVE;
                false
            } else {
                product[j] = z;
                bounds[j] = bound;
                true
            }
        });
    }
    let mut spectral = SpectralError::default();
    for (j, (z, e)) in product.iter().zip(&bounds).enumerate() {
        let weight = hermitian_weight(j, n);
        spectral.add(weight, *e);
        spectral.add_magnitude(weight, modulus(*z));
    }
    spectrum.copy_from_slice(&product);
    let start = ((window_start as u128 % n as u128 + n as u128 - shift) % n as u128) as usize;
    let result = inverse_and_bound(spectrum, buffer, window_len, &spectral, &plan, start);
    return_workspace(workspace);
    result
}
/// A factor of [`product_window`] has its leading bins recomputed directly (see
/// `near_zero_bins`) only while the product so far is at least this large there: below it,
/// the error saved is scaled down as much, and the recomputation costs as much as the FFT.
const DIRECT_WORTH: f64 = 0.1;

/// Below this (value plus bound), a bin of [`product_window`] is set to 0 and skipped.
const FROZEN_BIN: f64 = 1e-290;

/// Rounding of one complex product relative to `|Z|·|y|`: √5·u (Brent, Percival &
/// Zimmermann 2007), with margin.
const PRODUCT_ROUNDING: f64 = 2.3;

/// A vector loaded into the FFT buffer and transformed, with what its bins' bounds need.
struct TransformedFactor {
    /// The buffer holds the vector rotated left by this many places (its largest atom at 0).
    rotation: usize,
    /// Per-bin error bound of the forward transform.
    e_fwd: f64,
    /// Bins 1..=direct_bins were recomputed directly, with error bound `e_direct`.
    direct_bins: usize,
    e_direct: f64,
    /// Compensated sum of the vector (the exact DC bin, up to 2u).
    mass: f64,
}

/// Load `p` into `spectrum` ([`load_factor`]) and transform it in natural order, recomputing
/// the bins that a k-th power would amplify (see `near_zero_bins`).
///
/// A large atom (e.g. the zero loss of a mechanism that rarely samples the record) keeps
/// every bin's modulus near its mass, so every bin's error is amplified by the power, and
/// the transform's error is proportional to ‖p‖₁. The buffer is rotated so the atom sits at
/// index 0 (a circular shift: the power is shifted by k times as much, undone when the
/// window is read), the rest r is transformed, and the atom is added to every bin exactly
/// as the real number it is there: the error is 5·log₂N·u·‖r‖₁ + u·‖p‖₁ (the addition's
/// rounding) instead of 5·log₂N·u·‖p‖₁, smaller whenever the atom outweighs ‖p‖₁/(5·log₂N).
fn transform_factor(
    p: &[f64],
    k: u64,
    spectrum: &mut [Complex64],
    scratch: &mut [Complex64],
    plan: &RealFft,
    direct_limit: usize,
) -> TransformedFactor {
    let n = plan.len();
    let LoadedFactor {
        data,
        rotation,
        split,
        atom,
        norm,
        e_fwd,
        mass,
        ..
    } = load_factor(p, spectrum, n);
    // The natural-order transform reads the whole buffer: clear what is not data.
    let mut cursor = 0;
    for range in data.iter().chain(std::iter::once(&(n / 2..n / 2))) {
        spectrum[cursor..range.start].fill(Complex64::new(0.0, 0.0));
        cursor = range.end;
    }
    plan.forward_packed(spectrum, scratch);
    if split {
        for x in spectrum.iter_mut() {
            x.re += atom;
        }
    }
    // The bins near frequency 0 keep |x| ≈ 1, so the k-th power multiplies their error by
    // about k: those (while k·|x|^{k−1} > 1, at most NEAR_ZERO_BINS) are recomputed directly,
    // with error DIRECT_DFT_ERROR·u·‖p‖₁ instead of the transform's e_fwd, when smaller.
    let direct_bins = if DIRECT_DFT_ERROR * UNIT_ROUNDOFF * norm < e_fwd {
        let recomputed = near_zero_bins(
            |j| spectrum[j],
            spectrum.len(),
            k,
            n,
            p,
            rotation,
            direct_limit,
        );
        spectrum[1..=recomputed.len()].copy_from_slice(&recomputed);
        recomputed.len()
    } else {
        0
    };
    TransformedFactor {
        rotation,
        e_fwd,
        direct_bins,
        e_direct: DIRECT_DFT_ERROR * UNIT_ROUNDOFF * norm,
        mass,
    }
}

/// One bin of a powered spectrum, as [`PowerRule::power`] gives it.
enum PoweredBin {
    /// The bin's k-th power, its modulus and a bound on its error.
    Kept {
        value: Complex64,
        modulus: f64,
        error: f64,
    },
    /// The bin's power is below e^-690: set to 0, its error within
    /// `DROPPED_POWER_BOUND + f64::MIN_POSITIVE`.
    Dropped,
}

/// The k-th power of a transformed factor's bins, with error bounds (see [`PowerRule::power`]).
struct PowerRule {
    k: u64,
    kf: f64,
    /// Bins whose k-th power is below 1e-300 are set to 0 (and their error still bounded).
    negligible: f64,
    /// Rounding of the DC bin's power, computed in log space.
    power_rounding: f64,
    /// Relative error of z^k by binary powering: a complex product is within √5·u of the
    /// exact one (Brent, Percival & Zimmermann, Math. Comp. 2007), squaring doubles the
    /// relative error so far, so the s-th square is within √5·u·(2^s − 1) and the product
    /// of the squares for k's bits within √5·u·(k + log₂k + 1), to first order; the factor
    /// (1 + 4ku) covers the second-order terms while k·u ≪ 1.
    binary_power_error: f64,
}

impl PowerRule {
    fn new(k: u64) -> PowerRule {
        let kf = k as f64;
        PowerRule {
            k,
            kf,
            negligible: (-690.0 / kf).exp(),
            power_rounding: (2.0 * kf.log2().max(1.0) + 4.0) * UNIT_ROUNDOFF,
            binary_power_error: 2.25
                * (kf + kf.log2().max(1.0) + 2.0)
                * UNIT_ROUNDOFF
                * (1.0 + 4.0 * kf * UNIT_ROUNDOFF),
        }
    }

    /// Squared moduli below this (for a bin whose transform errs by at most `e_fwd`) give a
    /// power below e^-690 even at the error's edge, `(|x| + e_fwd)^k < negligible^k`: the
    /// bin is dropped, its bound [`DROPPED_POWER_BOUND`]. With a margin for the squares'
    /// rounding, and only where the threshold's square is far above the subnormals (−1,
    /// nothing dropped, otherwise).
    fn dropped_below(&self, e_fwd: f64) -> f64 {
        let threshold = self.negligible - e_fwd;
        if threshold > 1e-140 {
            threshold * threshold * (1.0 - 1e-12)
        } else {
            -1.0
        }
    }

    /// Bin j (value `x` as transformed) raised to the k-th power, with a bound on the
    /// power's error against the exact transform's bin to the k-th power.
    #[inline]
    fn power(&self, j: usize, x: Complex64, factor: &TransformedFactor) -> PoweredBin {
        let (k, kf, negligible) = (self.k, self.kf, self.negligible);
        let binary_power_error = self.binary_power_error;
        if j == 0 {
            // The DC bin is not the transform's: it is the compensated sum (within 2u of
            // the mass, its terms being non-negative), powered in log space.
            let mass = factor.mass;
            let y = if mass > 0.0 {
                (kf * (mass - 1.0).ln_1p()).exp()
            } else {
                0.0
            };
            let e = (2.0 * kf * UNIT_ROUNDOFF + self.power_rounding) * y;
            return PoweredBin::Kept {
                value: Complex64::new(y, 0.0),
                modulus: y.abs(),
                error: e,
            };
        }
        let e_fwd = if j <= factor.direct_bins {
            factor.e_direct
        } else {
            factor.e_fwd
        };
        // Fast path for the (many, at large k) bins whose power is negligible: r + e_fwd <
        // negligible, tested on the squared modulus with a margin for its rounding (no square
        // root, and no `hypot` for the tiny bins whose squares underflow). Only for thresholds
        // whose square is far above the subnormals (the squares' absolute rounding).
        if j > 0 && x.re * x.re + x.im * x.im < self.dropped_below(e_fwd) {
            return PoweredBin::Dropped;
        }
        let r = modulus(x);
        let outer = r + e_fwd;
        // A bin set to 0 drops its true power, at most max(r, outer)^k < e^-690.
        let (y, dropped) = if r < negligible {
            (Complex64::new(0.0, 0.0), DROPPED_POWER_BOUND)
        } else {
            (complex_pow(x, k), 0.0)
        };
        let ry = modulus(y);
        let propagated = if outer < negligible {
            0.0
        } else if r >= 100.0 * kf * e_fwd {
            // (r + e)^{k−1} ≤ r^{k−1}·exp((k−1)e/r) ≤ 1.011·r^{k−1}, and r^{k−1} from the
            // computed power when it is accurate (|y| ≥ r^k·(1 − ε_pow), so r^{k−1} ≤
            // |y|/r·(1 + 2ε_pow) while ε_pow ≤ ½, plus the division's and the moduli's
            // rounding): no `powf` per bin.
            let r_km1 = if dropped == 0.0 && binary_power_error < 0.25 {
                ry / r * (1.0 + 2.0 * binary_power_error + 8.0 * UNIT_ROUNDOFF)
            } else {
                r.powf(kf - 1.0)
            };
            1.011 * kf * r_km1 * e_fwd
        } else {
            kf * outer.powf(kf - 1.0) * e_fwd
        };
        let e = propagated + dropped + binary_power_error * ry + f64::MIN_POSITIVE;
        PoweredBin::Kept {
            value: y,
            modulus: ry,
            error: e,
        }
    }
}

/// Most bins near frequency 0 that [`self_convolve_window`] recomputes directly.
const NEAR_ZERO_BINS: usize = 16;
/// Error of a directly computed bin, in units of `u·‖p‖₁`: each term `pᵢ·ω^{ij}` carries the
/// twiddle's error (two table entries, each within 1.5u after `sin_cos` of a reduced angle,
/// and their product's rounding, ≤ 5u in all) and the product's (≤ 2u); the compensated sum
/// adds 2u of the total and O(N u²) of ‖p‖₁.
const DIRECT_DFT_ERROR: f64 = 10.0;

/// Recompute the bins j = 1, 2, … of the forward real DFT of `p` (length `n`; `current(j)`
/// its bin j as transformed, `bins` how many there are) while the k-th power amplifies their
/// error (`k·|x_j|^{k−1} > 1`), by a compensated direct sum `Σᵢ pᵢ e^{−2πi·ij/n}`; returns
/// them, bin j at index j − 1 (none when bin 1 is not amplified). The twiddle
/// `ω^{m}`, m = ij mod n, is the product of two table entries ([`Twiddles`]: `sin_cos` of
/// exact multiples of 2π/n), so every twiddle is within a few ulps.
fn near_zero_bins(
    current: impl Fn(usize) -> Complex64,
    bins: usize,
    k: u64,
    n: usize,
    p: &[f64],
    rotation: usize,
    limit: usize,
) -> Vec<Complex64> {
    let last = amplified_bins(current, bins.min(limit.saturating_add(1)), k, 1.0);
    let mut recomputed = vec![Complex64::new(0.0, 0.0); last];
    if last == 0 {
        return recomputed;
    }
    let twiddles = Twiddles::new(n, n);
    // Two bins per pass over `p`: four independent compensated sums (re and im of each)
    // that the processor overlaps, instead of one latency-bound chain.
    let start = (n - rotation % n) % n;
    // The non-zero entries (merged tails leave many zeros), with the gap to the previous one.
    let mut previous = 0;
    let terms: Vec<(usize, f64)> = p
        .iter()
        .enumerate()
        .filter(|&(_, &pi)| pi != 0.0)
        .map(|(i, &pi)| {
            let gap = i - previous;
            previous = i;
            (gap, pi)
        })
        .collect();
    let mut j = 1;
    while j <= last {
        let pair = if j < last { 2 } else { 1 };
        let mut sums = [crate::numeric::summation::PairedSum::default(); 2];
        // m = (i − rotation)·j mod n, stepped by gap·j (a division only for gaps > 1).
        let mut m = [(start * j) % n, (start * (j + 1)) % n];
        for &(gap, pi) in &terms {
            for b in 0..2 {
                let stride = j + b;
                m[b] += if gap == 1 {
                    stride
                } else {
                    (gap % n) * stride % n
                };
                if m[b] >= n {
                    m[b] -= n;
                }
                let w = twiddles.at(m[b]);
                sums[b].add([pi * w.re, pi * w.im]);
            }
        }
        for (b, sum) in sums.iter().enumerate().take(pair) {
            let [re, im] = sum.value();
            recomputed[j + b - 1] = Complex64::new(re, im);
        }
        j += pair;
    }
    recomputed
}

/// Bound on the modulus of a spectrum bin that [`self_convolve_window`] sets to 0:
/// `e^-690 ≈ 2.2e-300` (its k-th power is below `negligible^k`).
const DROPPED_POWER_BOUND: f64 = 2.3e-300;

/// `|z|` as `sqrt(re² + im²)`, within 2 ulp, several times cheaper than `hypot`; falls back
/// to `hypot` where the squares could underflow or overflow (|z| outside about [1e-145, 1e150]).
#[inline]
fn modulus(z: Complex64) -> f64 {
    let squares = z.re * z.re + z.im * z.im;
    if (1e-290..1e300).contains(&squares) {
        squares.sqrt()
    } else {
        z.norm()
    }
}

/// `z^k` by binary powering.
fn complex_pow(z: Complex64, mut k: u64) -> Complex64 {
    let mut base = z;
    let mut acc = Complex64::new(1.0, 0.0);
    while k > 0 {
        if k & 1 == 1 {
            acc *= base;
        }
        k >>= 1;
        if k > 0 {
            base = base * base;
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scaling and clamping as dispatched, in every build the processor can run (AVX2,
    /// AVX-512), gives the baseline build's outputs and statistics bit for bit (negative and
    /// positive entries, a remainder past the last four).
    #[test]
    fn the_wide_scale_and_clamp_gives_the_same_bits() {
        crate::numeric::wide_loops::for_each_tier(|_| check_wide_scale_and_clamp());
    }

    fn check_wide_scale_and_clamp() {
        let src: Vec<f64> = (0..1003).map(|i| (i as f64 * 0.73).sin() * 1e-3).collect();
        let (mut wide, mut plain) = (WindowStats::default(), WindowStats::default());
        let (mut dst_wide, mut dst_plain) = (src.clone(), src.clone());
        wide.scale_and_clamp(&mut dst_wide, 0.37);
        scale_and_clamp_kernel(&mut plain, &mut dst_plain, 0.37);
        let bits = |v: &[f64]| -> Vec<u64> { v.iter().map(|x| x.to_bits()).collect() };
        assert_eq!(bits(&dst_wide), bits(&dst_plain));
        for (a, b) in [
            (wide.squares, plain.squares),
            (wide.negative_sq, plain.negative_sq),
            (wide.lowest, plain.lowest),
            (wide.largest, plain.largest),
        ] {
            assert_eq!(bits(&a), bits(&b));
        }
        assert!(wide.lowest.iter().all(|&l| l < 0.0) && dst_wide.iter().all(|&d| d >= 0.0));
    }

    /// The recycler keeps the largest buffers, at most as many and as many bytes in all as
    /// it is allowed, and hands the others back to be freed.
    #[test]
    fn the_largest_buffers_are_kept_within_the_count_and_the_bytes() {
        let capacities =
            |buffers: &[Vec<f64>]| -> Vec<usize> { buffers.iter().map(|b| b.capacity()).collect() };
        let buffers = |sizes: &[usize]| -> Vec<Vec<f64>> {
            sizes.iter().map(|&n| Vec::with_capacity(n)).collect()
        };
        // The count binds: the four largest stay, largest first.
        let mut kept = buffers(&[300, 100, 500, 200, 400]);
        let released = keep_largest(&mut kept, 4, usize::MAX);
        assert_eq!(capacities(&kept), [500, 400, 300, 200]);
        assert_eq!(capacities(&released), [100]);
        // The bytes bind: 500 + 400 doubles fit in 7200 bytes, a third buffer would not.
        let mut kept = buffers(&[300, 100, 500, 200, 400]);
        let released = keep_largest(&mut kept, 4, 7200);
        assert_eq!(capacities(&kept), [500, 400]);
        assert_eq!(capacities(&released), [300, 200, 100]);
        // A buffer larger than the bytes allowed is not kept, nor any after it.
        let mut kept = buffers(&[2000, 10]);
        let released = keep_largest(&mut kept, 4, 8000);
        assert!(kept.is_empty());
        assert_eq!(capacities(&released), [2000, 10]);
    }

    /// A kept buffer is taken only for a length it holds without being more than four times
    /// larger, the smallest such; and whatever it held, an output buffer comes out zeroed.
    #[test]
    fn recycled_buffers_fit_and_come_back_zeroed() {
        let kept: Vec<Vec<f64>> = [1000, 4000, 2500]
            .iter()
            .map(|&n| Vec::with_capacity(n))
            .collect();
        assert_eq!(fitting_buffer(&kept, 900), Some(0));
        assert_eq!(fitting_buffer(&kept, 1000), Some(0));
        assert_eq!(fitting_buffer(&kept, 1001), Some(2));
        assert_eq!(fitting_buffer(&kept, 3000), Some(1));
        assert_eq!(fitting_buffer(&kept, 4001), None);
        assert_eq!(fitting_buffer(&kept, 249), None);
        // NaN-filled buffers handed back (taken or not by other tests meanwhile): every output
        // buffer of about their size is all zeros.
        let n = 3 << 17;
        let plan = plans(n);
        for _ in 0..3 {
            recycle(vec![f64::NAN; n + 17]);
            let buffer = output_buffer(n, &plan);
            assert!(buffer.len() >= n);
            assert!(buffer.iter().all(|&x| x == 0.0 && x.is_sign_positive()));
        }
    }

    /// `pair_below` never skips a pair the per-bin drop test would keep: for packed pairs
    /// of every size around the threshold, any twiddle and any atom, whenever it holds, both
    /// bins as the map unpacks them (plus the atom) have squared moduli below the threshold;
    /// and it does hold for pairs a little below it.
    #[test]
    fn pair_below_implies_both_bins_drop() {
        let n = 405_000;
        let twiddles = Twiddles::new(n, n / 2 + 1);
        // A fixed pseudo-random stream (xorshift), uniform in [0, 1).
        let mut uniform = crate::numeric::xorshift_uniform(0x9e37_79b9_7f4a_7c15);
        let mut accepted = 0;
        for threshold in [1e-280_f64, 1e-30, 1e-6, 0.25, 0.9862] {
            for _ in 0..20_000 {
                let radius = threshold.sqrt() * (0.2 + 1.2 * uniform());
                let atom = if uniform() < 0.5 {
                    0.0
                } else {
                    radius * uniform()
                };
                let part = |share: f64, turn: f64| {
                    let angle = 2.0 * std::f64::consts::PI * turn;
                    let r = (radius - atom) * share;
                    Complex64::new(r * angle.cos(), r * angle.sin())
                };
                let (share, turn_a, turn_b) = (uniform(), uniform(), uniform());
                let (a, b) = (part(share, turn_a), part(1.0 - share, turn_b));
                if !pair_below(a, b, atom, threshold) {
                    continue;
                }
                accepted += 1;
                let w = twiddles.at(1 + (uniform() * (n / 2 - 2) as f64) as usize);
                let (low, high) = crate::numeric::real_fft::unpack_pair(a, b, w);
                for x in [low, high] {
                    let x = x + atom;
                    assert!(
                        x.re * x.re + x.im * x.im < threshold,
                        "threshold {threshold:e}: {a}, {b}, atom {atom:e} -> {x}"
                    );
                }
            }
        }
        assert!(
            accepted > 10_000,
            "only {accepted} pairs below their threshold"
        );
    }

    /// The window pass and the outside sum together give ‖out‖₂² and the window's
    /// statistics, for windows that wrap around the end of the buffer and windows that do
    /// not, against a direct computation over the circular indices.
    #[test]
    fn window_statistics_match_a_direct_computation() {
        let out: Vec<f64> = (0..37)
            .map(|i| ((i * 7919) % 23) as f64 - 9.5 + 0.25 * i as f64)
            .collect();
        let n = out.len();
        let scale = 0.5;
        for (start, len) in [(0, 37), (5, 10), (30, 7), (30, 12), (36, 37), (11, 0)] {
            let window: Vec<f64> = (0..len).map(|j| out[(start + j) % n]).collect();
            let split = (n - start).min(len);
            let mut dst = window.clone();
            let (first, second) = dst.split_at_mut(split);
            let mut stats = WindowStats::default();
            stats.scale_and_clamp(first, scale);
            stats.scale_and_clamp(second, scale);
            let total = stats.squares.iter().sum::<f64>() + outside_squares(&out, start, len);
            let direct: f64 = out.iter().map(|x| x * x).sum();
            assert!((total - direct).abs() <= 1e-12 * direct, "{start} {len}");
            let scaled: Vec<f64> = window.iter().map(|x| x * scale).collect();
            let clamped: Vec<f64> = scaled.iter().map(|y| y.max(0.0)).collect();
            assert_eq!(dst, clamped);
            let negative_sq: f64 = scaled.iter().filter(|y| **y < 0.0).map(|y| y * y).sum();
            let got = stats.negative_sq.iter().sum::<f64>();
            assert!((got - negative_sq).abs() <= 1e-12 * negative_sq.max(1.0));
            let lowest = scaled.iter().fold(0.0_f64, |a, &b| a.min(b));
            assert_eq!(stats.lowest.iter().fold(0.0_f64, |a, &b| a.min(b)), lowest);
            let largest = scaled.iter().fold(0.0_f64, |a, &b| a.max(b));
            assert_eq!(
                stats.largest.iter().fold(0.0_f64, |a, &b| a.max(b)),
                largest
            );
        }
    }

    /// Reading the window in place (a power's output left in its own buffer) gives what
    /// reading it into another buffer gives, bit for bit: the values and every bound, for
    /// windows that wrap around the end of the output and windows that do not.
    #[test]
    fn the_window_read_in_place_is_the_window_read_out() {
        let n = 38;
        let out: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 23) as f64 - 9.5 + 0.25 * i as f64)
            .collect();
        let spectral = SpectralError {
            squares: 3.0,
            sum: 0.5,
            magnitudes: 40.0,
        };
        for (start, len) in [
            (0, 38),
            (5, 10),
            (28, 10),
            (30, 8),
            (30, 12),
            (37, 38),
            (11, 0),
        ] {
            let spectrum: Vec<Complex64> = bytemuck::cast_slice(&out).to_vec();
            let read_out = bound_window(&spectrum, vec![f64::NAN; n], len, &spectral, n, start);
            // The outputs at the front of a longer buffer (the spectrum's extra pair and
            // the scratch after them), as a power leaves them.
            let mut buffer = out.clone();
            buffer.extend([f64::NAN; 6]);
            let in_place = bound_window_in_place(buffer, len, &spectral, n, start);
            let bits = |v: &[f64]| -> Vec<u64> { v.iter().map(|x| x.to_bits()).collect() };
            assert_eq!(
                bits(&in_place.values),
                bits(&read_out.values),
                "{start} {len}"
            );
            for (a, b) in [
                (in_place.roundoff_l2, read_out.roundoff_l2),
                (in_place.roundoff_floor, read_out.roundoff_floor),
                (in_place.entry_bound, read_out.entry_bound),
            ] {
                assert_eq!(a.to_bits(), b.to_bits(), "{start} {len}");
            }
            assert_eq!(in_place.period, read_out.period);
        }
    }

    /// The window pass in pieces (windows of two pieces or more, wrapping or not): the
    /// values of one pass over each part, the extremes equal, the sums within rounding of
    /// one pass's, and the same bits on a pool of two threads as on the caller's thread.
    #[test]
    fn the_window_pass_in_pieces_is_one_pass() {
        let len = 5 * WINDOW_PIECE + 1234;
        let raw: Vec<f64> = (0..len)
            .map(|i| ((i as f64 * 0.37).sin() + 0.3) * 1e-3 * (1.0 + (i % 7) as f64))
            .collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool of two threads");
        for head in [len, 3 * WINDOW_PIECE + 17, 100] {
            let mut pieces = raw.clone();
            let stats = scale_and_clamp_window(&mut pieces, head, 0.25);
            let mut pooled = raw.clone();
            let pooled_stats = pool.install(|| scale_and_clamp_window(&mut pooled, head, 0.25));
            let mut one = raw.clone();
            let mut one_stats = WindowStats::default();
            let (first, second) = one.split_at_mut(head);
            one_stats.scale_and_clamp(first, 0.25);
            one_stats.scale_and_clamp(second, 0.25);
            let bits = |v: &[f64]| -> Vec<u64> { v.iter().map(|x| x.to_bits()).collect() };
            assert_eq!(bits(&pieces), bits(&one));
            assert_eq!(bits(&pooled), bits(&one));
            for (a, b) in [
                (stats.squares, pooled_stats.squares),
                (stats.negative_sq, pooled_stats.negative_sq),
                (stats.lowest, pooled_stats.lowest),
                (stats.largest, pooled_stats.largest),
            ] {
                assert_eq!(bits(&a), bits(&b));
            }
            let total = |lanes: [f64; 4]| lanes.iter().sum::<f64>();
            for (a, b) in [
                (stats.squares, one_stats.squares),
                (stats.negative_sq, one_stats.negative_sq),
            ] {
                assert!((total(a) - total(b)).abs() <= 1e-12 * total(b), "{head}");
            }
            let low = |lanes: [f64; 4]| lanes.iter().fold(0.0_f64, |m, &x| m.min(x));
            let high = |lanes: [f64; 4]| lanes.iter().fold(0.0_f64, |m, &x| m.max(x));
            assert_eq!(low(stats.lowest), low(one_stats.lowest));
            assert_eq!(high(stats.largest), high(one_stats.largest));
            assert!(low(stats.lowest) < 0.0 && high(stats.largest) > 0.0);
        }
    }

    /// A power's buffer may come back from a dropped PMF holding anything: the power read
    /// from buffers handed back full of NaN is the one computed in fresh memory, bit for bit
    /// (the transform reads only the entries it wrote).
    #[test]
    fn a_power_ignores_what_its_recycled_buffer_held() {
        // (An odd length: the pair holding the last entry is half data, half not.)
        let p: Vec<f64> = (0..3001)
            .map(|i| (-(i as f64 - 1500.0).powi(2) / 2e5).exp())
            .collect();
        let total: f64 = p.iter().sum();
        let p: Vec<f64> = p.iter().map(|x| x / total).collect();
        // (A window long enough for its buffers to be kept: over 1 MiB.)
        let (k, start, len) = (60, 20_000, 150_000);
        let fresh = power_window(&p, k, start, len);
        let n = self_convolution_period(len, p.len());
        for _ in 0..3 {
            // (Taken by this power unless another test takes them first.)
            recycle(vec![f64::NAN; n + 4_096]);
            recycle(vec![f64::NAN; n + 8_192]);
            let again = power_window(&p, k, start, len);
            let bits = |v: &[f64]| -> Vec<u64> { v.iter().map(|x| x.to_bits()).collect() };
            assert_eq!(bits(&again.values), bits(&fresh.values));
            assert_eq!(again.roundoff_l2.to_bits(), fresh.roundoff_l2.to_bits());
            assert_eq!(again.entry_bound.to_bits(), fresh.entry_bound.to_bits());
        }
    }

    #[test]
    fn fast_len_is_smooth_and_even() {
        assert_eq!(fast_len(1), 2);
        assert_eq!(fast_len(11), 12);
        assert_eq!(fast_len(1025), 1050);
        for n in 1..3000 {
            let m = fast_len(n);
            assert!(m >= n && m.is_multiple_of(2));
        }
    }

    /// The index nearest the mean, against the mean computed in exact rational arithmetic
    /// (integer masses): lengths 1 to 9 (every remainder of the four lanes), a one-sided
    /// vector, a two-point vector whose mean lies a quarter step off a half index, and an
    /// all-zero vector (0).
    #[test]
    fn mean_index_is_the_index_nearest_the_mean() {
        let nearest = |masses: &[u64]| -> usize {
            let total: u64 = masses.iter().sum();
            let weighted: u64 = masses.iter().enumerate().map(|(i, &m)| i as u64 * m).sum();
            // round(weighted / total), halves up, in integers.
            ((2 * weighted + total) / (2 * total)) as usize
        };
        let mut cases: Vec<Vec<u64>> = (1..=9)
            .map(|n| (0..n).map(|i| (i * 7 + 3) % 11 + 1).collect())
            .collect();
        cases.push(
            (0..1000)
                .map(|i| if i < 40 { 1000 - i } else { 0 })
                .collect(),
        );
        cases.push(vec![3, 0, 0, 0, 0, 1]);
        for masses in &cases {
            let p: Vec<f64> = masses.iter().map(|&m| m as f64 / 1024.0).collect();
            assert_eq!(mean_index(&p), nearest(masses), "{masses:?}");
        }
        assert_eq!(mean_index(&[0.0; 7]), 0);
    }

    /// The directly recomputed near-zero bins agree with an independent direct sum (one
    /// `sin_cos` per term) within the error bound claimed for them plus that sum's own.
    #[test]
    fn near_zero_bins_match_a_direct_sum() {
        let p: Vec<f64> = (0..3001)
            .map(|i| {
                let x = (i as f64 - 1500.0) / 30.0;
                (-0.5 * x * x).exp() * (1.0 + 0.3 * (i as f64 * 0.7).sin())
            })
            .collect();
        let total: f64 = p.iter().sum();
        let p: Vec<f64> = p.iter().map(|v| v / total).collect();
        let n = fast_len(2 * p.len());
        let plan = plans(n);
        let mut input = vec![0.0; n];
        input[..p.len()].copy_from_slice(&p);
        let mut spectrum = vec![Complex64::new(0.0, 0.0); n / 2 + 1];
        let mut scratch = vec![Complex64::new(0.0, 0.0); plan.scratch_len()];
        plan.forward(&input, &mut spectrum, &mut scratch);
        let claimed = DIRECT_DFT_ERROR * UNIT_ROUNDOFF * l1(&p);
        let mut lasts = Vec::new();
        // Bins in pairs (an even and an odd count of bins), with and without a rotation.
        for (k, rotation) in [(1000, 0), (1000, 1234), (100, 0), (100, 77), (10, 5)] {
            let mut spectrum = spectrum.clone();
            // The rotated buffer's spectrum: bin j times ω^{rotation·j}.
            for (j, bin) in spectrum.iter_mut().enumerate() {
                let angle = 2.0 * std::f64::consts::PI * ((rotation * j) % n) as f64 / n as f64;
                *bin *= Complex64::new(angle.cos(), angle.sin());
            }
            let recomputed = near_zero_bins(
                |j| spectrum[j],
                spectrum.len(),
                k,
                n,
                &p,
                rotation,
                NEAR_ZERO_BINS,
            );
            let last = recomputed.len();
            spectrum[1..=last].copy_from_slice(&recomputed);
            assert!(last >= 1, "no bin recomputed");
            lasts.push(last);
            for (j, bin) in spectrum.iter().enumerate().take(last + 1).skip(1) {
                let (mut re, mut im) = (
                    crate::numeric::summation::NeumaierSum::default(),
                    crate::numeric::summation::NeumaierSum::default(),
                );
                for (i, &pi) in p.iter().enumerate() {
                    let m = ((i + n - rotation) * j) % n;
                    let angle = -2.0 * std::f64::consts::PI * m as f64 / n as f64;
                    let (s, c) = angle.sin_cos();
                    re.add(pi * c);
                    im.add(pi * s);
                }
                let exact = Complex64::new(re.value(), im.value());
                let reference_error = 6.0 * UNIT_ROUNDOFF * l1(&p);
                assert!(
                    (bin - exact).norm() <= claimed + reference_error,
                    "k {k}, rotation {rotation}, bin {j}: {bin} vs {exact}"
                );
            }
        }
        assert!(
            lasts.iter().any(|l| l % 2 == 1) && lasts.iter().any(|l| l % 2 == 0),
            "{lasts:?}"
        );
    }

    /// A PMF with a large atom away from index 0 (0.96 of the mass: the buffer is rotated and
    /// the atom added to every bin): every window entry of the FFT power is within the
    /// claimed per-entry bound of repeated direct convolution (whose own error is far
    /// smaller), whatever the window's start.
    #[test]
    fn power_with_a_large_atom_matches_direct_convolution() {
        let mut p: Vec<f64> = (0..40)
            .map(|i| 1e-3 * (1.0 + (i as f64 * 0.37).sin()))
            .collect();
        p[17] = 0.0;
        let rest: f64 = p.iter().sum();
        p[17] = 1.0 - rest;
        let k = 7u64;
        let full_len = (p.len() - 1) * k as usize + 1;
        let mut exact = vec![1.0];
        for _ in 0..k {
            exact = convolve_direct(&exact, &p).values;
        }
        assert_eq!(exact.len(), full_len);
        // Windows at least as long as the support (shorter ones alias, which the caller
        // bounds separately); entries past the support are exactly 0.
        for (start, len) in [
            (0u64, full_len),
            (3, full_len),
            (0, full_len + 50),
            (7, 400),
        ] {
            let got = self_convolve_window(&p, k, start, len);
            for (i, v) in got.values.iter().enumerate() {
                let e = exact.get(start as usize + i).copied().unwrap_or(0.0);
                assert!(
                    (v - e).abs() <= got.roundoff_floor + 1e-15 * e,
                    "window {start}+{i}: {v} vs {e} (bound {})",
                    got.roundoff_floor
                );
            }
        }
    }

    /// A power long enough to be computed in pieces (its transforms' passes and its map, see
    /// `numeric::pieces`): the 80th power of the Bin(999, ½) distribution is Bin(79,920, ½),
    /// in closed form; the result matches it within the claimed bound, and inside a pool of
    /// two threads (idle threads take pieces) it is the one computed on the calling thread,
    /// bit for bit.
    #[test]
    fn power_in_pieces_matches_the_binomial_and_is_the_same_on_any_thread() {
        use crate::numeric::binomial::Binomial;
        let single = Binomial::new(999, 0.5).expect("valid");
        let p: Vec<f64> = (0..1000).map(|i| single.ln_pmf(i).exp()).collect();
        let k = 80u64;
        let powered = Binomial::new(999 * k, 0.5).expect("valid");
        let full_len = 999 * k as usize + 1;
        assert!(
            self_convolution_period(full_len, p.len()) / 2 >= 1 << 15,
            "long enough for pieces"
        );
        let here = self_convolve_window(&p, k, 0, full_len);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool of two threads");
        for _ in 0..3 {
            let pooled = pool.install(|| self_convolve_window(&p, k, 0, full_len));
            assert_eq!(pooled.values, here.values);
            assert_eq!(
                pooled.roundoff_floor.to_bits(),
                here.roundoff_floor.to_bits()
            );
            assert_eq!(pooled.roundoff_l2.to_bits(), here.roundoff_l2.to_bits());
            assert_eq!(pooled.entry_bound.to_bits(), here.entry_bound.to_bits());
        }
        // Every entry from 8 standard deviations below the mode to 8 above (σ ≈ 141).
        let mode = full_len / 2;
        for i in mode - 1130..=mode + 1130 {
            let e = powered.ln_pmf(i as u64).exp();
            let v = here.values[i];
            assert!(
                (v - e).abs() <= here.roundoff_floor + 1e-12 * e,
                "entry {i}: {v} against {e} (bound {})",
                here.roundoff_floor
            );
        }
    }

    /// A vector on a lattice (stride 3 after two leading zeros): the power is computed on
    /// the compressed vector, is exactly 0 between the lattice points, and matches repeated
    /// direct convolution on them within the claimed bound, for windows that start on or
    /// off the lattice and below the support.
    #[test]
    fn lattice_power_matches_direct_convolution() {
        let mut p = vec![0.0; 62];
        for (j, i) in (2..62).step_by(3).enumerate() {
            p[i] = 1.0 + 0.5 * (j as f64 * 0.9).sin();
        }
        let total: f64 = p.iter().sum();
        p.iter_mut().for_each(|v| *v /= total);
        assert_eq!(lattice_of(&p), Some((2, 3)));
        let k = 9u64;
        let full_len = (p.len() - 1) * k as usize + 1;
        let mut exact = vec![1.0];
        for _ in 0..k {
            exact = convolve_direct(&exact, &p).values;
        }
        for (start, len) in [
            (0u64, full_len),
            (1, full_len),
            (19, full_len),
            (0, full_len + 7),
        ] {
            let got = self_convolve_window(&p, k, start, len);
            let (first, stride) = got.lattice.expect("lattice path taken");
            assert_eq!(stride, 3);
            assert!(got.period >= len as u64);
            for (i, v) in got.values.iter().enumerate() {
                let e = exact.get(start as usize + i).copied().unwrap_or(0.0);
                if i >= first && (i - first) % stride == 0 {
                    assert!(
                        (v - e).abs() <= got.roundoff_floor + 1e-15 * e,
                        "window {start}+{i}: {v} vs {e}"
                    );
                } else {
                    assert_eq!(*v, 0.0, "window {start}+{i} off the lattice");
                    assert_eq!(e, 0.0, "exact result off the lattice at {start}+{i}");
                }
            }
        }
        // A vector off any lattice takes the plain path.
        assert_eq!(lattice_of(&[0.2, 0.3, 0.5]), None);
        assert_eq!(lattice_of(&[0.0, 1.0]), None);
    }

    #[test]
    fn complex_pow_matches_repeated_multiplication() {
        let z = Complex64::new(0.3, -0.8);
        let mut expected = Complex64::new(1.0, 0.0);
        for k in 0..40u64 {
            let got = complex_pow(z, k);
            assert!((got - expected).norm() < 1e-14, "k={k}");
            expected *= z;
        }
    }
}
