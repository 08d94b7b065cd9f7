//! The real FFT of even length n, both directions on ONE complex forward transform of
//! length n/2.
//!
//! Planning, not transforming, dominated the FFT cost of a one-off query: rustfft computes a
//! twiddle table (one `sin_cos` per entry) for every plan, and a real transform pair planned
//! the usual way (a forward and an inverse complex plan of length n/2, plus two tables of
//! n/4 post-processing twiddles) took 8.5 ms for n = 216,000 against 2 ms to run both
//! transforms. Here the inverse runs the forward plan on the conjugate
//! (`IFFT(Z) = conj(FFT(conj Z))`), and the n/4 + 1 packing twiddles are products of two
//! tables of about √(n/4) exact `sin_cos` values each ([`Twiddles`]), formed as they are used:
//! planning costs one complex plan, itself cheap for long lengths
//! ([`crate::numeric::complex_fft`]).
//!
//! The packing is the textbook one (e.g. Press et al., "Numerical Recipes", §12.3): with
//! `z_j = x_{2j} + i·x_{2j+1}` (m = n/2 points), `Z = FFT_m(z)` and `W = e^{−2πi/n}`,
//! ```text
//! X_k = E_k + W^k·O_k,   E_k = (Z_k + conj Z_{m−k})/2,   O_k = −i·(Z_k − conj Z_{m−k})/2
//! ```
//! and, backwards, `Z_k = E_k + i·O_k` from `X_k ± conj X_{m−k}`. Both directions are
//! unnormalized, as realfft's: `inverse(forward(x)) = n·x`.
//!
//! For FFT powers the half transform stays in the permuted layout of the four-step plan
//! ([`RealFft::forward_permuted`]): [`RealFft::map_permuted`] unpacks each pair of bins
//! `(k, m − k)` where they sit (row k₁ pairs with row m₁ − k₁ read backwards), maps them, and
//! packs the inverse's input in their place, in one pass; [`RealFft::inverse_from_permuted`]
//! transforms back to natural order.
//!
//! Accuracy: the packing adds one butterfly-like stage (a few roundings per entry, twiddles
//! within about 4 ulps) to the complex transform's log₂(n/2) stages, inside the
//! `C·log₂N·u` model of [`crate::numeric::fft_convolution`] (C = 5, against about 2 needed).

use crate::numeric::complex_fft::ComplexFft;
use crate::numeric::near_zero_powers::NearZeroTables;
use crate::numeric::pieces::spread_map;
use num_complex::Complex64;
use std::sync::OnceLock;

/// `e^{−2πi·m/n}` for `0 ≤ m < n`, as the product of two table entries: `high[m / B]` and
/// `low[m mod B]`, B the power of two ≥ √n. Each entry is one `sin_cos` of an exact multiple
/// of 2π/n (within 1.5 ulp after rounding the angle), so each twiddle is within about 5 ulp.
pub(crate) struct Twiddles {
    shift: u32,
    low: Vec<Complex64>,
    high: Vec<Complex64>,
}

impl Twiddles {
    /// Tables for `e^{−2πi·m/n}` with `m < limit` (`limit ≤ n`).
    pub(crate) fn new(n: usize, limit: usize) -> Twiddles {
        let block = ((limit as f64).sqrt().ceil() as usize)
            .max(1)
            .next_power_of_two();
        let angle = |m: usize| -2.0 * std::f64::consts::PI * (m as f64) / (n as f64);
        let unit = |m: usize| {
            let (s, c) = angle(m).sin_cos();
            Complex64::new(c, s)
        };
        Twiddles {
            shift: block.trailing_zeros(),
            low: (0..block).map(unit).collect(),
            high: (0..limit.div_ceil(block).max(1))
                .map(|a| unit(a * block))
                .collect(),
        }
    }

    /// `e^{−2πi·m/n}` (`m` below the table's limit).
    #[inline]
    pub(crate) fn at(&self, m: usize) -> Complex64 {
        self.high[m >> self.shift] * self.low[m & ((1 << self.shift) - 1)]
    }
}

/// A row k₁ of the permuted half transform (its index and entries) with its partner row
/// m₁ − k₁ (`None` when k₁ is its own partner) for [`RealFft::map_permuted`].
type PairedRows<'a> = (usize, &'a mut [Complex64], Option<&'a mut [Complex64]>);

/// Complex half lengths from this one up are mapped by [`RealFft::map_permuted`] in
/// [`MAP_PIECES`] pieces that idle evaluation threads may take.
const MAP_PIECES_MIN_LEN: usize = 1 << 15;

/// Pieces of a long [`RealFft::map_permuted`] (groups of paired rows): fixed, so that the
/// pieces and their states depend on the length alone.
const MAP_PIECES: usize = 8;

/// A planned real FFT of even length n (forward and inverse).
pub(crate) struct RealFft {
    n: usize,
    half: ComplexFft,
    /// `W^k` for `k = 0..=n/4`, each a product of two small tables' entries, formed where it
    /// is used: a table of all n/4 + 1 of them was a fresh 1.6 MB for n = 405,000 (its page
    /// faults alone about 0.7 ms per plan), for two passes over it.
    twiddles: Twiddles,
    /// The tables of the near-zero bins' powers of FFT powers of this length, built by the
    /// first power that needs them ([`RealFft::near_zero_tables`]).
    near_zero: OnceLock<NearZeroTables>,
}

impl RealFft {
    /// Plan length `n` (even, ≥ 2) with fresh planners ([`ComplexFft::new`]), so that the
    /// algorithm (and the last bits of every result) depends on n alone.
    pub(crate) fn new(n: usize) -> RealFft {
        assert!(
            n >= 2 && n.is_multiple_of(2),
            "real FFT length must be even, got {n}"
        );
        let m = n / 2;
        RealFft {
            n,
            half: ComplexFft::new(m),
            twiddles: Twiddles::new(n, m / 2 + 1),
            near_zero: OnceLock::new(),
        }
    }

    /// The tables the near-zero powers (`numeric::near_zero_powers`) read for
    /// this length, built on first use and kept with the plan.
    pub(crate) fn near_zero_tables(&self) -> &NearZeroTables {
        self.near_zero.get_or_init(|| NearZeroTables::new(self.n))
    }

    /// Scratch length both directions need.
    pub(crate) fn scratch_len(&self) -> usize {
        self.half.scratch_len()
    }

    /// The transform length n.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// `spectrum[k] = Σ_j x_j e^{−2πi·jk/n}` for `k = 0..=n/2`. `spectrum` holds n/2 + 1
    /// entries and `scratch` at least [`RealFft::scratch_len`]; `x` is left unchanged. (The
    /// engine packs its inputs itself and calls [`RealFft::forward_packed`]; the tests check
    /// the transform through this form.)
    #[cfg(test)]
    pub(crate) fn forward(&self, x: &[f64], spectrum: &mut [Complex64], scratch: &mut [Complex64]) {
        let m = self.n / 2;
        assert!(
            x.len() == self.n && spectrum.len() == m + 1,
            "buffer lengths"
        );
        for (z, pair) in spectrum.iter_mut().zip(x.chunks_exact(2)) {
            *z = Complex64::new(pair[0], pair[1]);
        }
        self.forward_packed(spectrum, scratch);
    }

    /// [`RealFft::forward`] of the signal held packed in `spectrum` itself:
    /// `spectrum[j] = x_{2j} + i·x_{2j+1}` for `j < n/2` on entry (the last entry is
    /// ignored). Saves the real signal's own buffer (a fresh page costs a fault on first
    /// touch, about a millisecond per 2 MB on this project's test machines).
    pub(crate) fn forward_packed(&self, spectrum: &mut [Complex64], scratch: &mut [Complex64]) {
        super::transform_log::record(self.n, super::transform_log::Direction::Forward);
        let m = self.n / 2;
        assert!(spectrum.len() == m + 1, "buffer lengths");
        self.half.process(&mut spectrum[..m], scratch);
        let z0 = spectrum[0];
        spectrum[0] = Complex64::new(z0.re + z0.im, 0.0);
        spectrum[m] = Complex64::new(z0.re - z0.im, 0.0);
        for k in 1..=m / 2 {
            let (low, high) = unpack_pair(spectrum[k], spectrum[m - k], self.twiddles.at(k));
            spectrum[k] = low;
            spectrum[m - k] = high;
        }
    }

    /// `x_j = Σ_k X_k e^{+2πi·jk/n}` over the full (Hermitian) spectrum whose first half is
    /// `spectrum` (n/2 + 1 entries; the imaginary parts of its first and last entries are
    /// ignored): n times the inverse DFT. `spectrum` is used as work space.
    #[cfg(test)]
    pub(crate) fn inverse(
        &self,
        spectrum: &mut [Complex64],
        x: &mut [f64],
        scratch: &mut [Complex64],
    ) {
        assert!(x.len() == self.n, "buffer lengths");
        self.inverse_packed(spectrum, scratch);
        for (pair, w) in x.chunks_exact_mut(2).zip(&spectrum[..self.n / 2]) {
            pair[0] = w.re;
            pair[1] = w.im;
        }
    }

    /// [`RealFft::inverse`] with the result left packed in `spectrum`:
    /// `spectrum[j] = x_{2j} + i·x_{2j+1}` for `j < n/2` (the last entry is left over).
    pub(crate) fn inverse_packed(&self, spectrum: &mut [Complex64], scratch: &mut [Complex64]) {
        super::transform_log::record(self.n, super::transform_log::Direction::Inverse);
        let m = self.n / 2;
        assert!(spectrum.len() == m + 1, "buffer lengths");
        // Z'_k = 2·Z_k, stored conjugated: the inverse is conj(FFT(conj Z')).
        let (first, last) = (spectrum[0].re, spectrum[m].re);
        spectrum[0] = Complex64::new(first + last, -(first - last));
        for k in 1..=m / 2 {
            let (low, high) = pack_pair(spectrum[k], spectrum[m - k], self.twiddles.at(k));
            spectrum[k] = low;
            spectrum[m - k] = high;
        }
        self.half.process(&mut spectrum[..m], scratch);
        for w in &mut spectrum[..m] {
            w.im = -w.im;
        }
    }

    /// Scratch length of the permuted path ([`RealFft::forward_permuted`],
    /// [`RealFft::inverse_from_permuted`]).
    pub(crate) fn permuted_scratch_len(&self) -> usize {
        self.half.permuted_scratch_len()
    }

    /// The half-length complex transform `Z = FFT_{n/2}(z)` of the packed signal
    /// `spectrum[j] = x_{2j} + i·x_{2j+1}`, left in the permuted layout of
    /// [`ComplexFft::forward_to_permuted`] (read it with [`RealFft::bin_from_permuted`] and
    /// [`RealFft::map_permuted`]). The signal is the entries in the sorted, disjoint ranges
    /// `data` of `spectrum[..n/2]` and zero elsewhere: the caller need not clear the rest.
    pub(crate) fn forward_permuted(
        &self,
        spectrum: &mut [Complex64],
        scratch: &mut [Complex64],
        data: &[std::ops::Range<usize>],
    ) {
        super::transform_log::record(self.n, super::transform_log::Direction::Forward);
        let m = self.n / 2;
        assert!(spectrum.len() == m + 1, "buffer lengths");
        self.half
            .forward_to_permuted(&mut spectrum[..m], scratch, data);
    }

    /// Where frequency `k < n/2` of the half transform sits in the permuted layout.
    #[inline]
    fn position(&self, k: usize) -> usize {
        self.half.position(k)
    }

    /// Bin `k` (0 ≤ k ≤ n/2) of the real signal's spectrum, from the permuted half transform
    /// left by [`RealFft::forward_permuted`] (as [`RealFft::forward`] computes it).
    pub(crate) fn bin_from_permuted(&self, spectrum: &[Complex64], k: usize) -> Complex64 {
        let m = self.n / 2;
        let z0 = spectrum[0];
        if k == 0 {
            return Complex64::new(z0.re + z0.im, 0.0);
        }
        if k == m {
            return Complex64::new(z0.re - z0.im, 0.0);
        }
        let small = k.min(m - k);
        let (low, high) = unpack_pair(
            spectrum[self.position(small)],
            spectrum[self.position(m - small)],
            self.twiddles.at(small),
        );
        if k == small {
            low
        } else {
            high
        }
    }

    /// One pass over the permuted half transform left by [`RealFft::forward_permuted`]:
    /// every bin X_k of the real spectrum (k = 0..=n/2) is formed, mapped to `Y_k = f(state,
    /// k, X_k)` (called once per bin, in no particular order), and the packed input of the
    /// inverse transform of Y is stored in its place, for [`RealFft::inverse_from_permuted`].
    /// This is [`RealFft::forward_packed`]'s unpacking, the map, and
    /// [`RealFft::inverse_packed`]'s packing in one pass over memory (the imaginary parts of
    /// Y₀ and Y_{n/2} are ignored).
    ///
    /// Long transforms are mapped in pieces (groups of paired rows, see
    /// [`crate::numeric::pieces`]), each with its own `state()`; the states come back in the
    /// pieces' order, which depends on n alone (one state for short transforms).
    ///
    /// `vanish(state, k, m − k, z_k, z_{m−k})` is asked first for each pair of distinct bins
    /// 0 < k < m − k, with their two packed entries: when it returns true, both Y are taken
    /// as 0 and `f` is not called for them (no unpacking). It must return true
    /// only where `f` would have returned 0 for both bins; it records in `state` what `f`
    /// would have.
    pub(crate) fn map_permuted<S: Send>(
        &self,
        spectrum: &mut [Complex64],
        state: impl Fn() -> S + Sync,
        vanish: impl Fn(&mut S, usize, usize, Complex64, Complex64) -> bool + Sync,
        f: impl Fn(&mut S, usize, Complex64) -> Complex64 + Sync,
    ) -> Vec<S> {
        let map = PairMap { vanish, f };
        let m = self.n / 2;
        let (rows, columns) = self.half.shape();
        let twiddles = &self.twiddles;
        let mut first_state = state();
        let z0 = spectrum[0];
        let first = (map.f)(&mut first_state, 0, Complex64::new(z0.re + z0.im, 0.0)).re;
        let last = (map.f)(&mut first_state, m, Complex64::new(z0.re - z0.im, 0.0)).re;
        spectrum[0] = Complex64::new(first + last, -(first - last));
        // Row 0 holds the frequencies m₁k₂: k₂ pairs with m₂ − k₂ (entries 1.. reversed).
        {
            let rest = &mut spectrum[1..columns];
            let half = rest.len() / 2;
            let (left, right) = rest.split_at_mut(half);
            let (middle, right) = right.split_at_mut(right.len() - half);
            for (i, (zk, zmk)) in left.iter_mut().zip(right.iter_mut().rev()).enumerate() {
                map_pair(zk, zmk, rows * (i + 1), m, twiddles, &mut first_state, &map);
            }
            if let Some(z) = middle.first_mut() {
                pair_self(z, m, twiddles, &mut first_state, &map.f);
            }
        }
        // Row k₁ > 0 pairs with row m₁ − k₁ reversed: (k₁, k₂) with (m₁ − k₁, m₂ − 1 − k₂);
        // (k₁, k₂) holds frequency k₁ + m₁k₂. The rows k₁ = 1..=m₁/2 in groups, each group
        // with the partner rows of its own.
        let paired = rows / 2;
        if paired == 0 {
            return vec![first_state];
        }
        // (The first group goes on with row 0's state: one group maps every bin in the
        // order of one pass.)
        let groups = if rows * columns >= MAP_PIECES_MIN_LEN {
            MAP_PIECES.min(paired)
        } else {
            1
        };
        let mut all_rows: Vec<Option<&mut [Complex64]>> = spectrum[..rows * columns]
            .chunks_exact_mut(columns)
            .map(Some)
            .collect();
        // Group g holds k₁ in 1 + g·P/G .. 1 + (g + 1)·P/G, P the paired rows.
        let pieces: Vec<Vec<PairedRows>> = (0..groups)
            .map(|g| {
                (1 + g * paired / groups..1 + (g + 1) * paired / groups)
                    .map(|k1| {
                        let partner = rows - k1;
                        let row = all_rows[k1].take().expect("each row in one group");
                        let other = (k1 < partner)
                            .then(|| all_rows[partner].take().expect("each row in one group"));
                        (k1, row, other)
                    })
                    .collect()
            })
            .collect();
        let mut first_state = Some(first_state);
        let pieces: Vec<_> = pieces
            .into_iter()
            .map(|group| (group, first_state.take()))
            .collect();
        let map_group = |(group, carried): (Vec<PairedRows>, Option<S>)| {
            let mut piece_state = carried.unwrap_or_else(&state);
            for (k1, row, other) in group {
                match other {
                    Some(other) => {
                        for (k2, (zk, zmk)) in
                            row.iter_mut().zip(other.iter_mut().rev()).enumerate()
                        {
                            map_pair(zk, zmk, k1 + rows * k2, m, twiddles, &mut piece_state, &map);
                        }
                    }
                    None => {
                        let half = columns / 2;
                        let (left, right) = row.split_at_mut(half);
                        let (middle, right) = right.split_at_mut(right.len() - half);
                        for (k2, (zk, zmk)) in
                            left.iter_mut().zip(right.iter_mut().rev()).enumerate()
                        {
                            map_pair(zk, zmk, k1 + rows * k2, m, twiddles, &mut piece_state, &map);
                        }
                        if let Some(z) = middle.first_mut() {
                            pair_self(z, m, twiddles, &mut piece_state, &map.f);
                        }
                    }
                }
            }
            piece_state
        };
        spread_map(pieces, map_group)
    }

    /// The inverse of the spectrum packed by [`RealFft::map_permuted`]:
    /// `spectrum[j] = x_{2j} + i·x_{2j+1}` with `x_j = Σ_k Y_k e^{+2πi·jk/n}` over the
    /// Hermitian spectrum of the Y passed to it (n times the inverse DFT), as
    /// [`RealFft::inverse_packed`] leaves it.
    pub(crate) fn inverse_from_permuted(
        &self,
        spectrum: &mut [Complex64],
        scratch: &mut [Complex64],
    ) {
        super::transform_log::record(self.n, super::transform_log::Direction::Inverse);
        let m = self.n / 2;
        assert!(spectrum.len() == m + 1, "buffer lengths");
        self.half
            .permuted_to_natural(&mut spectrum[..m], scratch, true);
    }
}

/// The two maps of [`RealFft::map_permuted`]: the test for pairs that vanish, and the map.
struct PairMap<V, F> {
    vanish: V,
    f: F,
}

/// One step of [`RealFft::map_permuted`]: `zk` holds frequency k and `zmk` frequency
/// m − k (k ≠ m − k) of the half transform; both are unpacked, mapped and packed for the
/// inverse in place (both mapped to 0 unread when `map.vanish` says so).
#[inline(always)]
fn map_pair<S, V, F>(
    zk: &mut Complex64,
    zmk: &mut Complex64,
    k: usize,
    m: usize,
    twiddles: &Twiddles,
    state: &mut S,
    map: &PairMap<V, F>,
) where
    V: Fn(&mut S, usize, usize, Complex64, Complex64) -> bool,
    F: Fn(&mut S, usize, Complex64) -> Complex64,
{
    let swap = k > m - k;
    let small = if swap { m - k } else { k };
    let (zs, zl) = if swap { (*zmk, *zk) } else { (*zk, *zmk) };
    let (z_low, z_high) = if (map.vanish)(state, small, m - small, zs, zl) {
        // Packed as the map's zeros would be: the signs of the zeros follow those of w's
        // parts, which are the same for every 0 < small < m/2 (w = e^{−iπ·small/m}, in the
        // fourth quadrant), so no twiddle is looked up.
        pack_pair(
            Complex64::new(0.0, 0.0),
            Complex64::new(0.0, 0.0),
            Complex64::new(1.0, -1.0),
        )
    } else {
        let w = twiddles.at(small);
        let (low, high) = unpack_pair(zs, zl, w);
        let mapped = ((map.f)(state, small, low), (map.f)(state, m - small, high));
        pack_pair(mapped.0, mapped.1, w)
    };
    if swap {
        (*zmk, *zk) = (z_low, z_high);
    } else {
        (*zk, *zmk) = (z_low, z_high);
    }
}

/// [`map_pair`] for the entry holding frequency m/2 (m even), its own partner.
fn pair_self<S, F: Fn(&mut S, usize, Complex64) -> Complex64>(
    z: &mut Complex64,
    m: usize,
    twiddles: &Twiddles,
    state: &mut S,
    f: &F,
) {
    let w = twiddles.at(m / 2);
    let (low, _) = unpack_pair(*z, *z, w);
    let y = f(state, m / 2, low);
    *z = pack_pair(y, y, w).0;
}

/// `(X_k, X_{m−k})` of a real signal's spectrum from `Z_k`, `Z_{m−k}` of its packed half
/// transform and `w = W^k` (see the module docs).
#[inline]
pub(crate) fn unpack_pair(zk: Complex64, zmk: Complex64, w: Complex64) -> (Complex64, Complex64) {
    let (a, b) = (zk, zmk.conj());
    let even = 0.5 * (a + b);
    let odd = Complex64::new(0.0, -0.5) * (a - b);
    let turned = w * odd;
    (even + turned, (even - turned).conj())
}

/// The inverse's packed input `(Z'_k, Z'_{m−k})`, stored conjugated, from `Y_k`, `Y_{m−k}`
/// and `w = W^k` (see [`RealFft::inverse_packed`]).
#[inline]
fn pack_pair(yk: Complex64, ymk: Complex64, w: Complex64) -> (Complex64, Complex64) {
    let (a, b) = (yk, ymk.conj());
    let even = a + b;
    let odd = (a - b) * w.conj();
    let i_odd = Complex64::new(-odd.im, odd.re);
    // Z'_{m−k} = conj(E'_k) + i·conj(O'_k), stored conjugated: E'_k − i·O'_k.
    ((even + i_odd).conj(), even - i_odd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::summation::PairedSum;

    /// `Σ_j x_j e^{sign·2πi·jk/n}` by compensated sums with one `sin_cos` per term.
    fn direct(x: &[f64], k: usize, sign: f64) -> Complex64 {
        let n = x.len();
        let mut sum = PairedSum::default();
        for (j, &v) in x.iter().enumerate() {
            let angle = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
            let (s, c) = angle.sin_cos();
            sum.add([v * c, v * s]);
        }
        let [re, im] = sum.value();
        Complex64::new(re, im)
    }

    fn signal(n: usize) -> Vec<f64> {
        (0..n)
            .map(|j| ((j as f64 * 0.37).sin() + 1.1) * (-(j as f64) / n as f64).exp())
            .collect()
    }

    /// The test signal of length n, its plan, its half spectrum and the plan's scratch.
    fn transformed(n: usize) -> (Vec<f64>, RealFft, Vec<Complex64>, Vec<Complex64>) {
        let x = signal(n);
        let plan = RealFft::new(n);
        let mut spectrum = vec![Complex64::new(0.0, 0.0); n / 2 + 1];
        let mut scratch = vec![Complex64::new(0.0, 0.0); plan.scratch_len()];
        plan.forward(&x, &mut spectrum, &mut scratch);
        (x, plan, spectrum, scratch)
    }

    /// Forward against the direct DFT, for lengths with n/2 odd and even, tiny and large.
    #[test]
    fn forward_matches_the_direct_dft() {
        for n in [2, 4, 6, 10, 12, 30, 64, 210, 1000, 4802] {
            let (x, _, spectrum, _) = transformed(n);
            let norm: f64 = x.iter().map(|v| v.abs()).sum();
            let tolerance = 20.0 * (n as f64).log2().max(1.0) * f64::EPSILON * norm;
            for (k, bin) in spectrum.iter().enumerate() {
                let exact = direct(&x, k, -1.0);
                assert!(
                    (bin - exact).norm() <= tolerance,
                    "n = {n}, bin {k}: {bin} against {exact}"
                );
            }
        }
    }

    /// Inverse against the direct sum over the full Hermitian spectrum, and the round trip.
    #[test]
    fn inverse_matches_the_direct_sum_and_round_trips() {
        for n in [2, 4, 6, 10, 12, 30, 64, 210, 1000, 4802] {
            let (x, plan, spectrum, mut scratch) = transformed(n);
            // The full spectrum, for the direct inverse sum.
            let full: Vec<Complex64> = (0..n)
                .map(|k| {
                    if k <= n / 2 {
                        spectrum[k]
                    } else {
                        spectrum[n - k].conj()
                    }
                })
                .collect();
            let mut back = vec![0.0; n];
            plan.inverse(&mut spectrum.clone(), &mut back, &mut scratch);
            let norm: f64 = full.iter().map(|v| v.norm()).sum();
            let tolerance = 20.0 * (n as f64).log2().max(1.0) * f64::EPSILON * norm;
            for j in 0..n {
                let mut sum = PairedSum::default();
                for (k, bin) in full.iter().enumerate() {
                    let angle = 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                    let (s, c) = angle.sin_cos();
                    let term = bin * Complex64::new(c, s);
                    sum.add([term.re, term.im]);
                }
                let exact = sum.value()[0];
                assert!(
                    (back[j] - exact).abs() <= tolerance,
                    "n = {n}, entry {j}: {} against {exact}",
                    back[j]
                );
                assert!(
                    (back[j] / n as f64 - x[j]).abs() <= tolerance / n as f64 + 1e-15 * x[j],
                    "n = {n}, round trip at {j}"
                );
            }
        }
    }

    /// The permuted path against the natural one: the bins read from the permuted half
    /// transform (data given by ranges, garbage elsewhere), and the one-pass map and inverse
    /// against mapping the natural spectrum and [`RealFft::inverse_packed`]; the map is
    /// called once per bin.
    #[test]
    fn permuted_path_matches_the_natural_one() {
        for n in [
            2,
            4,
            6,
            10,
            30,
            210,
            1000,
            4802,
            2 * 8192,
            2 * 12 * 35 * 40,
            216_000,
        ] {
            let (x, plan, spectrum, mut scratch) = transformed(n);
            let m = n / 2;
            let (head, tail) = (m / 3, m - m / 4);
            // The signal with zeros between its head and tail (as the powers rotate it).
            let x: Vec<f64> = x
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    if i / 2 < head || i / 2 >= tail {
                        *v
                    } else {
                        0.0
                    }
                })
                .collect();
            let mut natural = vec![Complex64::new(0.0, 0.0); m + 1];
            plan.forward(&x, &mut natural, &mut scratch);
            let _ = spectrum;
            let mut permuted: Vec<Complex64> = (0..=m)
                .map(|j| {
                    if j < m && (j < head || j >= tail) {
                        Complex64::new(x[2 * j], x[2 * j + 1])
                    } else {
                        Complex64::new(f64::NAN, -1e300)
                    }
                })
                .collect();
            let mut small = vec![Complex64::new(f64::NAN, 0.0); plan.permuted_scratch_len()];
            plan.forward_permuted(&mut permuted, &mut small, &[0..head, tail..m]);
            let norm: f64 = x.iter().map(|v| v.abs()).sum();
            let tolerance = 20.0 * (n as f64).log2().max(1.0) * f64::EPSILON * norm;
            for (k, want) in natural.iter().enumerate() {
                let got = plan.bin_from_permuted(&permuted, k);
                assert!(
                    (got - want).norm() <= tolerance,
                    "n = {n}, bin {k}: {got} against {want}"
                );
            }
            let map = |k: usize, v: Complex64| v * (1.0 + 0.25 * k as f64 / m as f64);
            let mut calls = vec![0u32; m + 1];
            let pieces = plan.map_permuted(
                &mut permuted,
                Vec::new,
                |_, _, _, _, _| false,
                |seen, k, v| {
                    seen.push(k);
                    map(k, v)
                },
            );
            for k in pieces.into_iter().flatten() {
                calls[k] += 1;
            }
            assert!(
                calls.iter().all(|&c| c == 1),
                "n = {n}: bins mapped {calls:?}"
            );
            plan.inverse_from_permuted(&mut permuted, &mut small);
            let mut mapped: Vec<Complex64> = natural
                .iter()
                .enumerate()
                .map(|(k, v)| map(k, *v))
                .collect();
            plan.inverse_packed(&mut mapped, &mut scratch);
            let out_norm: f64 = mapped[..m].iter().map(|v| v.norm()).sum::<f64>() + norm * n as f64;
            let out_tolerance = 40.0 * (n as f64).log2().max(1.0) * f64::EPSILON * out_norm;
            for j in 0..m {
                assert!(
                    (permuted[j] - mapped[j]).norm() <= out_tolerance,
                    "n = {n}, output {j}: {} against {}",
                    permuted[j],
                    mapped[j]
                );
            }
        }
    }

    /// Pairs that `vanish` declares zero are stored as the map of two zeros would store them,
    /// bit for bit (signed zeros too), at either position of the pair, and `f` is not called
    /// for them: the
    /// same transform mapped with `f` alone (zero above a cut) and with `vanish` skipping
    /// the pairs above the cut gives the same buffer.
    #[test]
    fn vanishing_pairs_are_stored_as_mapped_zeros() {
        for n in [30, 1000, 2 * 12 * 35 * 40, 216_000] {
            let (x, plan, _, _) = transformed(n);
            let m = n / 2;
            let cut = m / 5;
            let f = |calls: &mut Vec<usize>, k: usize, v: Complex64| {
                calls.push(k);
                if k > cut && k < m - cut {
                    Complex64::new(0.0, 0.0)
                } else {
                    v * 0.5
                }
            };
            let run = |skip: bool| {
                let mut buffer: Vec<Complex64> = (0..=m)
                    .map(|j| {
                        if j < m {
                            Complex64::new(x[2 * j], x[2 * j + 1])
                        } else {
                            Complex64::new(0.0, 0.0)
                        }
                    })
                    .collect();
                let mut small = vec![Complex64::new(0.0, 0.0); plan.permuted_scratch_len()];
                let whole = 0..m;
                plan.forward_permuted(&mut buffer, &mut small, std::slice::from_ref(&whole));
                let calls: Vec<usize> = plan
                    .map_permuted(
                        &mut buffer,
                        Vec::new,
                        |_, low, _, _, _| skip && low > cut,
                        f,
                    )
                    .concat();
                (buffer, calls)
            };
            let (plain, all_calls) = run(false);
            let (skipped, calls) = run(true);
            assert_eq!(all_calls.len(), m + 1, "n = {n}");
            assert!(
                // (The bin m/2, its own partner, is never asked about.)
                calls
                    .iter()
                    .all(|&k| k <= cut || k >= m - cut || 2 * k == m),
                "n = {n}: f called on a vanishing pair"
            );
            assert!(calls.len() < all_calls.len(), "n = {n}: nothing skipped");
            for (j, (a, b)) in plain.iter().zip(&skipped).enumerate() {
                assert!(
                    a.re.to_bits() == b.re.to_bits() && a.im.to_bits() == b.im.to_bits(),
                    "n = {n}, entry {j}: {a} against {b}"
                );
            }
        }
    }

    /// Two-table twiddles agree with one `sin_cos` per entry within a few ulps.
    #[test]
    fn twiddles_match_sin_cos() {
        for n in [8, 1000, 216_000] {
            let table = Twiddles::new(n, n);
            for m in (0..n).step_by((n / 997).max(1)) {
                let angle = -2.0 * std::f64::consts::PI * m as f64 / n as f64;
                let (s, c) = angle.sin_cos();
                let error = (table.at(m) - Complex64::new(c, s)).norm();
                assert!(error <= 8.0 * f64::EPSILON, "n = {n}, m = {m}: {error:e}");
            }
        }
    }
}
