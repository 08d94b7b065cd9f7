//! The forward complex DFT of one length, planned cheaply: long lengths by the four-step
//! (Cooley–Tukey two-factor) algorithm over two short rustfft plans.
//!
//! Why: rustfft plans a long length by computing its whole outer twiddle table, one
//! `sin_cos` per entry. For the half lengths a DP-SGD query at grid step 1e-4 uses
//! (m ≈ 1e5–2e5) that took 2–3.3 ms per plan against 0.5–1.3 ms per transform, and a one-off
//! query runs each plan only twice (forward, then inverse on the conjugate). Here a length
//! m = m₁·m₂ with m₁ ≈ m₂ ≈ √m is planned as two rustfft plans of lengths m₁ and m₂ (a few
//! hundred `sin_cos` each) and the m outer twiddles are products of two table entries
//! ([`Twiddles`], about 2√m `sin_cos`): planning ≈ 50 µs.
//!
//! With index `j = m₂·j₁ + j₂` and frequency `k = k₁ + m₁·k₂` (`j₁, k₁ < m₁`, `j₂, k₂ < m₂`),
//! ```text
//! X[k₁ + m₁k₂] = Σ_{j₂} ω_{m₂}^{j₂k₂} · ω_m^{j₂k₁} · Σ_{j₁} ω_{m₁}^{j₁k₁} · x[m₂j₁ + j₂],
//! ```
//! `ω_L = e^{−2πi/L}`: length-m₁ transforms of the m₂ columns, the twiddles `ω_m^{j₂k₁}`, then
//! length-m₂ transforms of the m₁ rows (e.g. Van Loan, "Computational Frameworks for the Fast
//! Fourier Transform", §3.3.1, or Bailey, "FFTs in external or hierarchical memory", 1990).
//!
//! Memory passes: the column transforms gather a strip of columns (about 32 KiB) into a
//! small buffer, transform and twiddle it there, and scatter it back in place, so the first
//! step is one pass over the matrix; the row transforms are a second, in place. That leaves
//! the spectrum in the *permuted* layout `X[k₁ + m₁k₂]` at `m₂k₁ + k₂`
//! ([`ComplexFft::forward_to_permuted`]); natural order costs one transpose more
//! ([`ComplexFft::process`]). An FFT power needs no natural order: it maps every bin
//! wherever it sits and transforms back from the permuted layout by the same steps in
//! reverse, rows first ([`ComplexFft::permuted_to_natural`]), with no transpose at all.
//!
//! Long transforms (m ≥ 2¹⁵) cut each pass into [`PASS_PIECES`] pieces, groups of strips
//! for the column pass and groups of rows for the row pass, which an idle thread of the
//! caller's pool may take ([`crate::numeric::pieces`]); each piece does exactly what the
//! uncut pass does on its entries, so the result is the same bit for bit.
//!
//! Accuracy: the two inner transforms take log₂m₁ + log₂m₂ = log₂m butterfly stages, as one
//! transform of length m; the twiddle stage adds one complex product with a twiddle within
//! about 11 ulp (a product of two [`Twiddles`] entries) — one more stage inside the
//! `C·log₂N·u` model of [`crate::numeric::fft_convolution`] (C = 5, against about 2 needed).

use crate::numeric::pieces::spread;
use crate::numeric::real_fft::Twiddles;
use num_complex::Complex64;
use rustfft::{Fft, FftPlanner};
use std::ops::Range;
use std::sync::Arc;

/// Lengths from this one up are planned by four steps; shorter ones by rustfft alone (their
/// plans cost under 0.2 ms).
const FOUR_STEP_MIN_LEN: usize = 1 << 13;

/// Rows of the first step transformed (and twiddled) per rustfft call: a block of about
/// 32 KiB, so that the twiddle pass finds it in cache.
const BLOCK_BYTES: usize = 1 << 15;

/// Fewest columns gathered per strip of the first step: four complex numbers fill a
/// 64-byte cache line.
const MIN_STRIP_COLUMNS: usize = 4;

/// Complex lengths from this one up have each pass of the four steps cut into
/// [`PASS_PIECES`] pieces that an idle evaluation thread may take (see [`crate::numeric::pieces`]); below
/// it a pass takes well under a millisecond and stays on its thread.
const PARALLEL_MIN_LEN: usize = 1 << 15;

/// Pieces a pass of a long transform is cut into: groups of column strips for the column
/// transforms, groups of rows for the row transforms. A fixed number, so that the pieces,
/// and with them every result bit for bit, do not depend on how many threads take them
/// (each piece does exactly the arithmetic the whole pass would do on its entries).
const PASS_PIECES: usize = 8;

/// Twiddles of one row of the four steps come in runs of this length: one table product for
/// the run's base, the rest from a per-row table (each twiddle within about 11 ulp).
const TWIDDLE_RUN: usize = 16;

/// A planned forward complex DFT of length m: `x ← Σ_j x_j e^{−2πi·jk/m}`, unnormalized.
pub(crate) struct ComplexFft {
    len: usize,
    kind: Kind,
}

enum Kind {
    /// rustfft's own plan.
    Direct(Arc<dyn Fft<f64>>),
    /// Four steps over length-m₁ and length-m₂ plans.
    FourStep(FourStep),
}

struct FourStep {
    rows: usize,
    columns: usize,
    /// Length-m₁ plan (`rows` = m₁).
    column_fft: Arc<dyn Fft<f64>>,
    /// Length-m₂ plan (`columns` = m₂).
    row_fft: Arc<dyn Fft<f64>>,
    /// `ω_m^t` for `t < m`.
    twiddles: Twiddles,
}

impl ComplexFft {
    /// Plan length `m ≥ 1`: four steps when m ≥ [`FOUR_STEP_MIN_LEN`] has a divisor within a
    /// factor 4 of √m, else rustfft alone. Fresh planners: the algorithm, and so the last bits
    /// of every result, depend on m alone.
    pub(crate) fn new(m: usize) -> ComplexFft {
        let factors = (m >= FOUR_STEP_MIN_LEN)
            .then(|| balanced_factors(m))
            .flatten();
        match factors {
            Some((rows, columns)) => ComplexFft::four_step(rows, columns),
            None => ComplexFft {
                len: m,
                kind: Kind::Direct(FftPlanner::new().plan_fft_forward(m)),
            },
        }
    }

    /// Plan length `rows·columns` by four steps with these factors (both ≥ 1).
    pub(crate) fn four_step(rows: usize, columns: usize) -> ComplexFft {
        let m = rows * columns;
        ComplexFft {
            len: m,
            kind: Kind::FourStep(FourStep {
                rows,
                columns,
                column_fft: FftPlanner::new().plan_fft_forward(rows),
                row_fft: FftPlanner::new().plan_fft_forward(columns),
                twiddles: Twiddles::new(m, m),
            }),
        }
    }

    /// The transform length m.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Scratch length [`ComplexFft::process`] needs.
    pub(crate) fn scratch_len(&self) -> usize {
        match &self.kind {
            Kind::Direct(fft) => fft.get_inplace_scratch_len(),
            Kind::FourStep(plan) => self.len + plan.strip() * plan.rows + plan.inner_scratch_len(),
        }
    }

    /// Transform `buffer` (m entries) in place; `scratch` holds at least
    /// [`ComplexFft::scratch_len`] entries (contents unspecified on entry and exit).
    pub(crate) fn process(&self, buffer: &mut [Complex64], scratch: &mut [Complex64]) {
        assert!(
            buffer.len() == self.len && scratch.len() >= self.scratch_len(),
            "buffer lengths"
        );
        match &self.kind {
            Kind::Direct(fft) => {
                let needed = fft.get_inplace_scratch_len();
                fft.process_with_scratch(buffer, &mut scratch[..needed]);
            }
            Kind::FourStep(plan) => plan.process(buffer, scratch),
        }
    }

    /// Where [`ComplexFft::forward_to_permuted`] leaves frequency `k < m`: `m₂·(k mod m₁) +
    /// ⌊k/m₁⌋` for four steps (the rows are the frequencies k₁ + m₁k₂ of one k₁), `k` itself
    /// for a direct plan.
    #[inline]
    pub(crate) fn position(&self, k: usize) -> usize {
        let (rows, columns) = self.shape();
        columns * (k % rows) + k / rows
    }

    /// `(m₁, m₂)`: the permuted layout is m₁ rows of m₂ entries, frequency `k₁ + m₁k₂` at
    /// `m₂k₁ + k₂`; `(1, m)` (natural order) for a direct plan.
    pub(crate) fn shape(&self) -> (usize, usize) {
        match &self.kind {
            Kind::Direct(_) => (1, self.len),
            Kind::FourStep(plan) => (plan.rows, plan.columns),
        }
    }

    /// Scratch length the permuted transforms need (less than [`ComplexFft::scratch_len`]:
    /// no whole-matrix work buffer).
    pub(crate) fn permuted_scratch_len(&self) -> usize {
        match &self.kind {
            Kind::Direct(fft) => fft.get_inplace_scratch_len(),
            Kind::FourStep(plan) => plan.strip() * plan.rows + plan.inner_scratch_len(),
        }
    }

    /// The forward DFT of `buffer`, left in the permuted layout of [`ComplexFft::shape`]
    /// (no transpose). The input is the entries of `buffer` in the sorted, disjoint ranges
    /// `data`, and zero elsewhere: what `buffer` holds outside them is ignored (the rows of
    /// the four steps' matrix that no range touches are never read), so the caller need not
    /// clear a mostly empty buffer. `scratch` holds at least
    /// [`ComplexFft::permuted_scratch_len`] entries.
    pub(crate) fn forward_to_permuted(
        &self,
        buffer: &mut [Complex64],
        scratch: &mut [Complex64],
        data: &[Range<usize>],
    ) {
        assert!(
            buffer.len() == self.len && scratch.len() >= self.permuted_scratch_len(),
            "buffer lengths"
        );
        match &self.kind {
            Kind::Direct(fft) => {
                zero_outside(buffer, 0..self.len, data);
                let needed = fft.get_inplace_scratch_len();
                fft.process_with_scratch(buffer, &mut scratch[..needed]);
            }
            Kind::FourStep(plan) => plan.forward_to_permuted(buffer, scratch, data),
        }
    }

    /// The forward DFT of `buffer` held in the permuted layout (as
    /// [`ComplexFft::forward_to_permuted`] leaves a spectrum), into natural order, conjugated
    /// when `conjugate` (so that `conj(DFT(conj Y))`, the inverse DFT times m, takes one
    /// pass less). `scratch` as for [`ComplexFft::forward_to_permuted`].
    pub(crate) fn permuted_to_natural(
        &self,
        buffer: &mut [Complex64],
        scratch: &mut [Complex64],
        conjugate: bool,
    ) {
        assert!(
            buffer.len() == self.len && scratch.len() >= self.permuted_scratch_len(),
            "buffer lengths"
        );
        match &self.kind {
            Kind::Direct(fft) => {
                let needed = fft.get_inplace_scratch_len();
                fft.process_with_scratch(buffer, &mut scratch[..needed]);
                if conjugate {
                    for w in buffer.iter_mut() {
                        w.im = -w.im;
                    }
                }
            }
            Kind::FourStep(plan) => plan.permuted_to_natural(buffer, scratch, conjugate),
        }
    }
}

/// Set the entries of `buffer[span]` outside the sorted, disjoint ranges `data` to 0.
fn zero_outside(buffer: &mut [Complex64], span: Range<usize>, data: &[Range<usize>]) {
    let mut cursor = span.start;
    for range in data {
        let (start, end) = (range.start.max(span.start), range.end.min(span.end));
        if start < end {
            buffer[cursor..start.max(cursor)].fill(Complex64::new(0.0, 0.0));
            cursor = cursor.max(end);
        }
    }
    if cursor < span.end {
        buffer[cursor..span.end].fill(Complex64::new(0.0, 0.0));
    }
}

impl FourStep {
    fn inner_scratch_len(&self) -> usize {
        self.column_fft
            .get_inplace_scratch_len()
            .max(self.row_fft.get_inplace_scratch_len())
            .max(self.row_fft.get_outofplace_scratch_len())
            .max(1)
    }

    /// Columns gathered per strip of the column passes: about [`BLOCK_BYTES`] of them, so a
    /// strip stays in cache.
    fn strip(&self) -> usize {
        (BLOCK_BYTES / (16 * self.rows))
            .max(MIN_STRIP_COLUMNS)
            .min(self.columns)
            .max(1)
    }

    /// Natural order in, natural order out: the column pass, the row transforms out of place,
    /// then one transpose.
    fn process(&self, buffer: &mut [Complex64], scratch: &mut [Complex64]) {
        let m = self.rows * self.columns;
        let (work, rest) = scratch.split_at_mut(m);
        let (strip_buffer, inner) = rest.split_at_mut(self.strip() * self.rows);
        let inner = &mut inner[..self.inner_scratch_len()];
        let whole = 0..m;
        self.column_pass(buffer, strip_buffer, inner, std::slice::from_ref(&whole));
        self.row_fft
            .process_outofplace_with_scratch(buffer, work, inner);
        // work[m₂k₁ + k₂] = X[k₁ + m₁k₂] → natural order.
        transpose::transpose(work, buffer, self.columns, self.rows);
    }

    /// Multiply the rows of a gathered strip (row b holds column `first + b` of the matrix,
    /// indexed by k₁) by the twiddles `ω_m^{j₂k₁}`, j₂ = first + b. With k₁ = Rq + r
    /// (R = TWIDDLE_RUN): `ω_m^{j₂k₁} = ω_m^{R·j₂q} · ω_m^{j₂r}`, the second from a row table.
    fn twiddle_strip(&self, block: &mut [Complex64], first: usize) {
        twiddle_strip_wide(self, block, first);
    }

    /// Forward DFT, natural order in (only the rows touching `data` read), permuted out:
    /// the column pass, then each row transformed over j₂ (length m₂) in place:
    /// buffer[m₂k₁ + k₂] = X[k₁ + m₁k₂]. Two passes over the buffer, no transpose.
    fn forward_to_permuted(
        &self,
        buffer: &mut [Complex64],
        scratch: &mut [Complex64],
        data: &[Range<usize>],
    ) {
        let (strip_buffer, inner) = scratch.split_at_mut(self.strip() * self.rows);
        let inner = &mut inner[..self.inner_scratch_len()];
        self.column_pass(buffer, strip_buffer, inner, data);
        self.row_pass(buffer, inner);
    }

    /// Whether the passes are cut into pieces for idle threads ([`PARALLEL_MIN_LEN`]).
    fn in_pieces(&self) -> bool {
        self.rows * self.columns >= PARALLEL_MIN_LEN
    }

    /// Every row transformed over its m₂ entries, in place: in [`PASS_PIECES`] groups of
    /// rows for long transforms (each with its own scratch), else in one call.
    fn row_pass(&self, buffer: &mut [Complex64], inner: &mut [Complex64]) {
        if !self.in_pieces() {
            self.row_fft.process_with_scratch(buffer, inner);
            return;
        }
        let rows_per_piece = self.rows.div_ceil(PASS_PIECES);
        let scratch_len = self.inner_scratch_len();
        spread(
            buffer.chunks_mut(rows_per_piece * self.columns).collect(),
            |piece| {
                let mut scratch = vec![Complex64::new(0.0, 0.0); scratch_len];
                self.row_fft.process_with_scratch(piece, &mut scratch);
            },
        );
    }

    /// The buffer's rows cut at the column boundaries of the column passes' pieces:
    /// `(first column, one slice per row)` for each piece, its columns whole strips (the
    /// last may be short), so that every strip is the one the uncut pass would form. One
    /// piece (the whole rows) unless the transform is long.
    fn column_pieces<'a>(
        &self,
        buffer: &'a mut [Complex64],
    ) -> Vec<(usize, Vec<&'a mut [Complex64]>)> {
        let strip = self.strip();
        let strips = self.columns.div_ceil(strip);
        let pieces = if self.in_pieces() {
            PASS_PIECES.min(strips)
        } else {
            1
        };
        // Piece g holds strips g·S/G .. (g + 1)·S/G.
        let bounds: Vec<usize> = (0..=pieces)
            .map(|g| (g * strips / pieces * strip).min(self.columns))
            .collect();
        let mut out: Vec<(usize, Vec<&mut [Complex64]>)> = bounds[..pieces]
            .iter()
            .map(|&first| (first, Vec::with_capacity(self.rows)))
            .collect();
        for row in buffer.chunks_exact_mut(self.columns) {
            let mut rest = row;
            for (g, piece) in out.iter_mut().enumerate() {
                let (head, tail) = rest.split_at_mut(bounds[g + 1] - bounds[g]);
                piece.1.push(head);
                rest = tail;
            }
        }
        out
    }

    /// The first step of the forward DFT, in place: the columns of buffer[m₂j₁ + j₂] (fixed
    /// j₂), a strip of columns at a time, gathered as rows, transformed over j₁ (length m₁),
    /// twiddled by `ω_m^{j₂k₁}` and scattered back to buffer[m₂k₁ + j₂]. A strip stays in
    /// cache: one pass over the buffer instead of two whole-matrix transposes. The input is
    /// the entries in the sorted, disjoint ranges `data` and zero elsewhere (rows no range
    /// touches are not read). Long transforms: the strips in [`PASS_PIECES`] groups (see
    /// [`FourStep::column_pieces`]).
    fn column_pass(
        &self,
        buffer: &mut [Complex64],
        strip_buffer: &mut [Complex64],
        inner: &mut [Complex64],
        data: &[Range<usize>],
    ) {
        let columns = self.columns;
        // Rows that hold data; their entries outside the data are cleared here.
        let live: Vec<bool> = (0..self.rows)
            .map(|r| {
                let span = r * columns..(r + 1) * columns;
                let touched = data
                    .iter()
                    .any(|d| d.start < span.end && span.start < d.end);
                if touched {
                    zero_outside(buffer, span, data);
                }
                touched
            })
            .collect();
        self.in_column_pieces(buffer, strip_buffer, inner, |rows, first, strip, inner| {
            self.forward_strips(rows, first, &live, strip, inner)
        });
    }

    /// Run `strips(rows, first, strip_buffer, inner)` on the pieces of
    /// [`FourStep::column_pieces`]: on the given scratch when there is one piece, else each
    /// piece with scratch of its own, spread over idle threads.
    fn in_column_pieces(
        &self,
        buffer: &mut [Complex64],
        strip_buffer: &mut [Complex64],
        inner: &mut [Complex64],
        strips: impl Fn(&mut [&mut [Complex64]], usize, &mut [Complex64], &mut [Complex64]) + Sync,
    ) {
        let mut pieces = self.column_pieces(buffer);
        if pieces.len() == 1 {
            let (first, rows) = &mut pieces[0];
            strips(rows, *first, strip_buffer, inner);
            return;
        }
        let (strip_len, inner_len) = (strip_buffer.len(), inner.len());
        spread(pieces, |(first, mut rows)| {
            let mut strip_buffer = vec![Complex64::new(0.0, 0.0); strip_len];
            let mut inner = vec![Complex64::new(0.0, 0.0); inner_len];
            strips(&mut rows, first, &mut strip_buffer, &mut inner);
        });
    }

    /// The column pass of the forward DFT on the columns `first ..` held by `rows` (one
    /// slice per row of the matrix, all of the same length).
    fn forward_strips(
        &self,
        rows: &mut [&mut [Complex64]],
        first: usize,
        live: &[bool],
        strip_buffer: &mut [Complex64],
        inner: &mut [Complex64],
    ) {
        let m1 = self.rows;
        let held = rows.first().map_or(0, |row| row.len());
        for local in (0..held).step_by(self.strip()) {
            let width = self.strip().min(held - local);
            let block = &mut strip_buffer[..width * m1];
            for (j1, source) in rows.iter().enumerate() {
                if live[j1] {
                    for (b, value) in source[local..local + width].iter().enumerate() {
                        block[b * m1 + j1] = *value;
                    }
                } else {
                    for b in 0..width {
                        block[b * m1 + j1] = Complex64::new(0.0, 0.0);
                    }
                }
            }
            self.column_fft.process_with_scratch(block, inner);
            self.twiddle_strip(block, first + local);
            for (k1, target) in rows.iter_mut().enumerate() {
                for (b, value) in target[local..local + width].iter_mut().enumerate() {
                    *value = block[b * m1 + k1];
                }
            }
        }
    }

    /// Forward DFT, permuted order in (buffer[m₂k₁ + k₂] = Y[k₁ + m₁k₂]), natural out: with
    /// j = m₂j₁ + j₂, `ω_m^{jk} = ω_{m₁}^{j₁k₁}·ω_m^{j₂k₁}·ω_{m₂}^{j₂k₂}`, so each row is
    /// transformed over k₂ in place (to j₂), twiddled by `ω_m^{j₂k₁}`, and each column
    /// transformed over k₁ (to j₁), a strip of columns at a time: buffer[m₂j₁ + j₂] = y_j,
    /// conjugated when `conjugate`. Long transforms: both passes in pieces.
    fn permuted_to_natural(
        &self,
        buffer: &mut [Complex64],
        scratch: &mut [Complex64],
        conjugate: bool,
    ) {
        let (strip_buffer, inner) = scratch.split_at_mut(self.strip() * self.rows);
        let inner = &mut inner[..self.inner_scratch_len()];
        self.row_pass(buffer, inner);
        self.in_column_pieces(buffer, strip_buffer, inner, |rows, first, strip, inner| {
            self.inverse_strips(rows, first, conjugate, strip, inner)
        });
    }

    /// The column pass of [`FourStep::permuted_to_natural`] on the columns `first ..` held
    /// by `rows` (one slice per row of the matrix, all of the same length).
    fn inverse_strips(
        &self,
        rows: &mut [&mut [Complex64]],
        first: usize,
        conjugate: bool,
        strip_buffer: &mut [Complex64],
        inner: &mut [Complex64],
    ) {
        let m1 = self.rows;
        let held = rows.first().map_or(0, |row| row.len());
        for local in (0..held).step_by(self.strip()) {
            let width = self.strip().min(held - local);
            let block = &mut strip_buffer[..width * m1];
            for (k1, source) in rows.iter().enumerate() {
                for (b, value) in source[local..local + width].iter().enumerate() {
                    block[b * m1 + k1] = *value;
                }
            }
            self.twiddle_strip(block, first + local);
            self.column_fft.process_with_scratch(block, inner);
            for (j1, target) in rows.iter_mut().enumerate() {
                for (b, value) in target[local..local + width].iter_mut().enumerate() {
                    let v = block[b * m1 + j1];
                    *value = if conjugate { v.conj() } else { v };
                }
            }
        }
    }
}

/// The factor pair `(m₁, m₂)` of m with m₁ ≤ m₂ and m₁ the largest divisor ≤ √m, if
/// `m₂ ≤ 16·m₁` (factors within 4× of √m); `None` otherwise (e.g. m prime).
fn balanced_factors(m: usize) -> Option<(usize, usize)> {
    let mut root = (m as f64).sqrt() as usize;
    while root * root > m {
        root -= 1;
    }
    while (root + 1) * (root + 1) <= m {
        root += 1;
    }
    let rows = (1..=root).rev().find(|d| m.is_multiple_of(*d))?;
    let columns = m / rows;
    (columns <= 16 * rows).then_some((rows, columns))
}

crate::numeric::wide_loops::dispatch_wide! {
    /// [`FourStep::twiddle_strip`] (two complex products at a time on AVX2).
    fn twiddle_strip_wide(four: &FourStep, block: &mut [Complex64], first: usize) =
        twiddle_strip_kernel;
}

/// The body of [`FourStep::twiddle_strip`].
#[inline(always)]
fn twiddle_strip_kernel(four: &FourStep, block: &mut [Complex64], first: usize) {
    let rows = four.rows;
    let mut row_table = [Complex64::new(1.0, 0.0); TWIDDLE_RUN];
    for (b, row) in block.chunks_exact_mut(rows).enumerate() {
        let j2 = first + b;
        for (t, entry) in row_table.iter_mut().enumerate().take(rows) {
            *entry = four.twiddles.at(j2 * t);
        }
        for (q, run) in row.chunks_mut(TWIDDLE_RUN).enumerate() {
            let base = four.twiddles.at(j2 * q * TWIDDLE_RUN);
            for (value, entry) in run.iter_mut().zip(&row_table) {
                *value *= base * entry;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::summation::PairedSum;

    /// `Σ_j x_j e^{−2πi·jk/m}` by compensated sums with one `sin_cos` per term.
    fn direct(x: &[Complex64], k: usize) -> Complex64 {
        let m = x.len();
        let mut sum = PairedSum::default();
        for (j, v) in x.iter().enumerate() {
            let angle = -2.0 * std::f64::consts::PI * ((j * k) % m) as f64 / m as f64;
            let (s, c) = angle.sin_cos();
            let term = v * Complex64::new(c, s);
            sum.add([term.re, term.im]);
        }
        let [re, im] = sum.value();
        Complex64::new(re, im)
    }

    fn signal(m: usize) -> Vec<Complex64> {
        (0..m)
            .map(|j| {
                let t = j as f64;
                Complex64::new(
                    ((t * 0.37).sin() + 1.1) * (-t / m as f64).exp(),
                    (t * 0.11).cos() + 1.05,
                )
            })
            .collect()
    }

    /// Every bin (or every `stride`-th) within `20·log₂m·ε·‖x‖₁` of the direct DFT.
    fn check(plan: &ComplexFft, stride: usize) {
        let m = plan.len();
        let x = signal(m);
        let mut y = x.clone();
        let mut scratch = vec![Complex64::new(f64::NAN, f64::NAN); plan.scratch_len()];
        plan.process(&mut y, &mut scratch);
        let norm: f64 = x.iter().map(|v| v.norm()).sum();
        let tolerance = 20.0 * (m as f64).log2().max(1.0) * f64::EPSILON * norm;
        for k in (0..m).step_by(stride).chain([m - 1]) {
            let exact = direct(&x, k);
            assert!(
                (y[k] - exact).norm() <= tolerance,
                "m = {m}, bin {k}: {} against {exact}",
                y[k]
            );
        }
    }

    /// Four steps with every shape of factors (1 × m, m × 1, square, unequal, odd) against
    /// the direct DFT at every bin.
    #[test]
    fn four_steps_match_the_direct_dft() {
        for (rows, columns) in [
            (1, 1),
            (1, 7),
            (7, 1),
            (2, 2),
            (3, 5),
            (8, 8),
            (12, 35),
            (35, 12),
        ] {
            check(&ComplexFft::four_step(rows, columns), 1);
        }
    }

    /// Lengths past the four-step threshold, planned as the accountant plans them, at a
    /// spread of bins.
    #[test]
    fn long_lengths_match_the_direct_dft() {
        for m in [
            FOUR_STEP_MIN_LEN,
            3 * 5 * 7 * 2 * 2 * 2 * 2 * 2 * 2 * 2,
            108_000,
        ] {
            let plan = ComplexFft::new(m);
            assert!(matches!(plan.kind, Kind::FourStep(_)), "m = {m}");
            check(&plan, m / 61);
        }
    }

    /// The permuted transforms: forward from data ranges (garbage outside them ignored)
    /// against the direct DFT at the documented positions, and back to natural order.
    #[test]
    fn permuted_transforms_match_the_direct_dft() {
        for plan in [
            ComplexFft::four_step(12, 35),
            ComplexFft::four_step(35, 12),
            ComplexFft::four_step(8, 8),
            ComplexFft::four_step(1, 7),
            ComplexFft::new(1000),
            ComplexFft::new(108_000),
        ] {
            let m = plan.len();
            let full = signal(m);
            // Data in two ranges (a head and a tail, as a rotated vector), zero between.
            let (head, tail) = (m / 3, m - m / 5);
            let x: Vec<Complex64> = full
                .iter()
                .enumerate()
                .map(|(j, v)| {
                    if j < head || j >= tail {
                        *v
                    } else {
                        Complex64::new(0.0, 0.0)
                    }
                })
                .collect();
            let mut y: Vec<Complex64> = full
                .iter()
                .enumerate()
                .map(|(j, v)| {
                    if j < head || j >= tail {
                        *v
                    } else {
                        Complex64::new(f64::NAN, 1e300)
                    }
                })
                .collect();
            let mut scratch = vec![Complex64::new(f64::NAN, f64::NAN); plan.permuted_scratch_len()];
            plan.forward_to_permuted(&mut y, &mut scratch, &[0..head, tail..m]);
            let norm: f64 = x.iter().map(|v| v.norm()).sum();
            let tolerance = 20.0 * (m as f64).log2().max(1.0) * f64::EPSILON * norm;
            let stride = (m / 61).max(1);
            for k in (0..m).step_by(stride).chain([1, m - 1]) {
                let exact = direct(&x, k);
                let got = y[plan.position(k)];
                assert!(
                    (got - exact).norm() <= tolerance,
                    "m = {m}, bin {k}: {got} against {exact}"
                );
            }
            // Back: DFT of the permuted spectrum in natural order, conjugated; conj(DFT(conj X))
            // of X = DFT(x) is m·x.
            for v in y.iter_mut() {
                *v = v.conj();
            }
            plan.permuted_to_natural(&mut y, &mut scratch, true);
            let scale = m as f64;
            for (j, (got, want)) in y.iter().zip(&x).enumerate() {
                assert!(
                    (got / scale - want).norm() <= 2.0 * tolerance,
                    "m = {m}, entry {j}: {} against {want}",
                    got / scale
                );
            }
        }
    }

    /// The twiddle pass as dispatched, in every build the processor can run (AVX2, AVX-512),
    /// gives the baseline build's bits.
    #[test]
    fn the_wide_twiddle_pass_gives_the_same_bits() {
        crate::numeric::wide_loops::for_each_tier(|_| check_wide_twiddle_pass());
    }

    fn check_wide_twiddle_pass() {
        let plan = ComplexFft::four_step(36, 50);
        let Kind::FourStep(four) = &plan.kind else {
            panic!("a four-step plan");
        };
        let block: Vec<Complex64> = (0..4 * 36)
            .map(|i| Complex64::new((i as f64 * 0.37).sin(), (i as f64 * 0.11).cos()))
            .collect();
        let (mut wide, mut plain) = (block.clone(), block);
        four.twiddle_strip(&mut wide, 7);
        twiddle_strip_kernel(four, &mut plain, 7);
        let bits = |v: &[Complex64]| -> Vec<(u64, u64)> {
            v.iter().map(|z| (z.re.to_bits(), z.im.to_bits())).collect()
        };
        assert_eq!(bits(&wide), bits(&plain));
        assert!(wide
            .iter()
            .zip(0..)
            .any(|(z, i)| *z != Complex64::new((i as f64 * 0.37).sin(), (i as f64 * 0.11).cos())));
    }

    /// The factor pairs: the largest divisor below √m, refused when too unbalanced.
    #[test]
    fn balanced_factors_pick_the_divisor_nearest_the_root() {
        assert_eq!(balanced_factors(108_000), Some((300, 360)));
        assert_eq!(balanced_factors(1 << 17), Some((256, 512)));
        assert_eq!(balanced_factors(16), Some((4, 4)));
        assert_eq!(balanced_factors(2 * 8191), None);
        assert_eq!(balanced_factors(8191), None);
        assert!(matches!(ComplexFft::new(8191).kind, Kind::Direct(_)));
    }
}
