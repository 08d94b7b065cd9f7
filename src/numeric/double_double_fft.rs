//! FFT powers in double-double arithmetic ([`crate::numeric::double_double`]), with a
//! rigorous bound on every entry's error: about 1e-28 times the count, against about 1e-16
//! for the double-precision powers of [`crate::numeric::fft_convolution`].
//!
//! A double-precision FFT's round-off is absolute, near 1e-16 of the largest entry, so the
//! far tail of a composition (the entries a δ of 1e-15 reads) drowns in it unless the PMF is
//! tilted first. Tilting fails where one step's own far tail dominates its normalizer (a
//! sampled Gaussian at a small rate and small σ): there the accountant asks for this power
//! instead, about 30 times slower per point.
//!
//! Speed without changing a bit: each product's rounding error is found by one fused
//! multiply-add where the processor has FMA ([`crate::numeric::double_double::Fused`],
//! exact like Dekker's split, so the same results), the short stages run block by block in
//! cache, and every loop is cut into pieces that idle threads take (fixed by the length, so
//! the same results on any number of threads). A power on 2^20 points: about 0.7 s on one
//! thread of the 2-core test machine, 0.35 s on both (the longest buffer, 2^21 points, a
//! little over twice that).
//!
//! # Error bound
//! A radix-2 transform of length n = 2^m applies m stages of butterflies `(u, v) ↦ (u + w·v,
//! u − w·v)`, |w| = 1. With twiddles within μ of the exact ones and operations within
//! [`UNIT`] (U) relative, each computed butterfly output is within η·(|u| + |v|) of the
//! exact butterfly of the computed inputs, η = μ + 6U. By induction over the stages,
//! componentwise, every output of the computed transform of x is within
//!
//! ```text
//! ((1 + η)^m − 1) · ‖x‖₁
//! ```
//!
//! of the exact one (each output depends on each input through exactly one path of unit
//! weights). For the k-th power of bin j, computed by repeated squaring from X̂ⱼ (within E
//! of Xⱼ): `|X̂ⱼ^k − Xⱼ^k| ≤ k·(|X̂ⱼ| + E)^{k−1}·E`, and the products round the power by at
//! most `(1 + 3U)^{k + 2·log₂k + 2} − 1` relative. An inverse output is the mean of the bins
//! times unit phases (the division by n = 2^m is exact), so every entry is within
//!
//! ```text
//! (1/n)·Σⱼ |Ŷⱼ − Yⱼ| + ((1 + η)^m − 1)·(1/n)·Σⱼ |Ŷⱼ|
//! ```
//!
//! of the exact circular power, plus the final rounding to a double (u relative).
//!
//! # References
//! Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM (2002), §24.1
//! (the FFT's error analysis, normwise; the componentwise form above follows the same
//! induction).

use crate::numeric::double_double::{
    Dd, DdComplex, Dekker, Fused, TwoProduct, COMPLEX_PRODUCT_UNIT, UNDERFLOW_SLACK, UNIT,
};
use crate::numeric::pieces::spread;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// 2π as a double-double (within 2^-104 relative).
const TWO_PI: Dd = Dd {
    hi: std::f64::consts::TAU,
    lo: 2.449_293_598_294_706_4e-16,
};

/// A bound on each twiddle's error (|ŵ − w|): 16 U (argument 3U·π/4, series 8U, see
/// [`octant_cos_sin`], times √2 for the two parts).
const TWIDDLE_ERROR: f64 = 16.0 * UNIT;

/// η: a bound on a computed butterfly's error relative to |u| + |v| (see the module docs).
const BUTTERFLY_UNIT: f64 = TWIDDLE_ERROR + 6.0 * UNIT;

/// Powers below this are taken as 0 (with that error) without computing them.
const NEGLIGIBLE_POWER: f64 = 1e-250;

/// The longest transform this module computes (2^22 points): its time grows past seconds.
pub(crate) const MAX_LEN: usize = 1 << 22;

/// `(cos x, sin x)` for `x = 2π·j/n` in [0, π/4] (j ≤ n/8), each within 10 U absolute.
///
/// x is within 3U·x of its value (2π's representation, one product, one division); the Taylor series are summed to 14 terms in Horner's form (truncated after
/// x^{29}/29!, below 1e-36), each of the 3 operations per term within U relative of
/// values near 1 and the error of the inner terms damped by t/((2i)(2i+1)) ≤ 0.11.
fn octant_cos_sin(j: usize, n: usize) -> (Dd, Dd) {
    let x = (TWO_PI * Dd::from_f64(j as f64)).div_f64(n as f64);
    let t = x * x;
    let (mut s, mut c) = (Dd::ONE, Dd::ONE);
    for i in (1..=14).rev() {
        let i = i as f64;
        s = Dd::ONE - (t * s).div_f64((2.0 * i) * (2.0 * i + 1.0));
        c = Dd::ONE - (t * c).div_f64((2.0 * i - 1.0) * (2.0 * i));
    }
    (c, x * s)
}

/// `e^{−2πij/n}` for j < n/2, n a multiple of 8, from the first octant by symmetry
/// (exact sign changes and swaps): cached per length.
fn twiddles(n: usize) -> Arc<Vec<DdComplex>> {
    static CACHE: OnceLock<Mutex<HashMap<usize, Arc<Vec<DdComplex>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(found) = cache.lock().ok().and_then(|c| c.get(&n).cloned()) {
        return found;
    }
    let eighth = n / 8;
    let octant: Vec<(Dd, Dd)> = (0..=eighth).map(|j| octant_cos_sin(j, n)).collect();
    let quarter = n / 4;
    let table: Vec<DdComplex> = (0..n / 2)
        .map(|j| {
            // (cos, sin) of 2πj/n for j in [0, n/2).
            let (c, s) = if j <= eighth {
                octant[j]
            } else if j <= quarter {
                let (c, s) = octant[quarter - j];
                (s, c)
            } else if j <= quarter + eighth {
                let (c, s) = octant[j - quarter];
                (-s, c)
            } else {
                let (c, s) = octant[n / 2 - j];
                (-c, s)
            };
            DdComplex { re: c, im: -s }
        })
        .collect();
    let table = Arc::new(table);
    if let Ok(mut c) = cache.lock() {
        // Keep the cache small: a few lengths at most are in use at a time.
        if c.len() >= 8 {
            c.clear();
        }
        c.insert(n, Arc::clone(&table));
    }
    table
}

/// Points of one piece of work (see [`crate::numeric::pieces`]): a transform's stages up to
/// this length run block by block, each block a piece (128 KiB, which stays in cache), and
/// a longer stage, like the per-bin loops, is cut into runs of this many. Fixed by the
/// length alone: the results are the same bit for bit on any number of threads.
const PIECE: usize = 1 << 12;

/// The [`TwoProduct`] of the build that runs when [`dispatch_fused`]'s fused build cannot:
/// Dekker's on x86-64 (whose baseline has no FMA), the fused one on aarch64 (where FMA is
/// part of the baseline). Every choice gives the same bits.
#[cfg(target_arch = "aarch64")]
type Portable = Fused;
#[cfg(not(target_arch = "aarch64"))]
type Portable = Dekker;

/// Define `$name`, which runs `$kernel::<Fused>` compiled for AVX2 and FMA when the
/// processor has them ([`crate::numeric::wide_loops::fma`]), else `$kernel::<Portable>`:
/// the same arguments, the same results bit for bit (both products are exact), about
/// twice as fast.
macro_rules! dispatch_fused {
    ($(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) = $kernel:ident;) => {
        $(#[$meta])*
        #[allow(clippy::too_many_arguments)]
        fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn fused($($arg: $ty),*) {
                    $kernel::<Fused>($($arg),*)
                }
                if crate::numeric::wide_loops::fma() {
                    // SAFETY: `fused` only needs AVX2 and FMA, which the processor has
                    // (checked just above).
                    return unsafe { fused($($arg),*) };
                }
            }
            $kernel::<Portable>($($arg),*)
        }
    };
}

/// One stage's butterflies `(u, v) ↦ (u + w·v, u − w·v)` on the pairs `(low[i], high[i])`,
/// the twiddle of pair i being table entry `(first + i)·stride` (conjugated for the
/// inverse).
#[inline(always)]
fn butterfly_run<T: TwoProduct>(
    low: &mut [DdComplex],
    high: &mut [DdComplex],
    table: &[DdComplex],
    first: usize,
    stride: usize,
    inverse: bool,
) {
    for (i, (u, v)) in low.iter_mut().zip(high.iter_mut()).enumerate() {
        let w = table[(first + i) * stride];
        let w = if inverse { w.conj() } else { w };
        let t = v.mul_with::<T>(w);
        let a = *u;
        *u = a + t;
        *v = a - t;
    }
}

/// Every stage of length 2 … `block.len()` within `block` (the transforms of its own
/// sub-blocks), for a twiddle table of a transform of length `full`.
#[inline(always)]
fn block_stages<T: TwoProduct>(
    block: &mut [DdComplex],
    table: &[DdComplex],
    full: usize,
    inverse: bool,
) {
    let mut len = 2;
    while len <= block.len() {
        let half = len / 2;
        for sub in block.chunks_exact_mut(len) {
            let (low, high) = sub.split_at_mut(half);
            butterfly_run::<T>(low, high, table, 0, full / len, inverse);
        }
        len *= 2;
    }
}

dispatch_fused! {
    /// [`butterfly_run`] in the fastest build.
    fn butterflies(
        low: &mut [DdComplex],
        high: &mut [DdComplex],
        table: &[DdComplex],
        first: usize,
        stride: usize,
        inverse: bool,
    ) = butterfly_run;
}

dispatch_fused! {
    /// [`block_stages`] in the fastest build.
    fn stages_within(block: &mut [DdComplex], table: &[DdComplex], full: usize, inverse: bool) =
        block_stages;
}

/// In-place radix-2 transform of `data` (length h = 2^m ≥ 8, `table` the twiddles of a
/// length that is a multiple of h): forward `Σ xᵢ e^{−2πijk/h}`, or with `inverse` the
/// unnormalized inverse (conjugate twiddles). The stages up to [`PIECE`] points run block
/// by block, the longer ones in runs of [`PIECE`] butterflies, spread over idle threads
/// (every butterfly does the same operations either way).
fn transform(data: &mut [DdComplex], table: &[DdComplex], inverse: bool) {
    let n = data.len();
    // The table holds e^{−2πij/N} for j < N/2: the twiddle j of length len is entry j·N/len.
    let full = 2 * table.len();
    let bits = n.trailing_zeros();
    for i in 0..n {
        let r = i.reverse_bits() >> (usize::BITS - bits);
        if i < r {
            data.swap(i, r);
        }
    }
    let block = PIECE.min(n);
    spread(data.chunks_mut(block).collect(), |chunk| {
        stages_within(chunk, table, full, inverse)
    });
    let mut len = 2 * block;
    while len <= n {
        let half = len / 2;
        let stride = full / len;
        let mut runs = Vec::with_capacity(n / 2 / PIECE);
        for sub in data.chunks_exact_mut(len) {
            let (low, high) = sub.split_at_mut(half);
            let pairs = low.chunks_mut(PIECE).zip(high.chunks_mut(PIECE));
            runs.extend(pairs.enumerate().map(|(r, (l, h))| (l, h, r * PIECE)));
        }
        spread(runs, |(low, high, first)| {
            butterflies(low, high, table, first, stride, inverse)
        });
        len *= 2;
    }
}

/// `(1 + x)^count − 1` for small x ≥ 0, rounded up.
fn compound(x: f64, count: f64) -> f64 {
    (count * x.ln_1p()).exp_m1() * (1.0 + 1e-12) + f64::MIN_POSITIVE
}

/// A window of an FFT power and a bound on each entry's error.
#[derive(Debug, Clone)]
pub(crate) struct DdPower {
    /// The entries (negatives, pure round-off, clamped to 0).
    pub(crate) values: Vec<f64>,
    /// A bound on each entry's absolute error against the exact circular power.
    pub(crate) errors: Vec<f64>,
    /// The circular buffer's length: mass of the exact power at `window_start + period` and
    /// above, or below `window_start`, wraps into the window.
    pub(crate) period: usize,
}

/// Entries `window_start .. window_start + window_len` of the k-fold self-convolution of
/// the non-negative vector `p`: [`product_window`] of the one factor `(p, k)`.
#[cfg(test)]
pub(crate) fn power_window(
    p: &[f64],
    k: u64,
    window_start: u64,
    window_len: usize,
    min_period: usize,
) -> Option<DdPower> {
    product_window(&[(p, k)], window_start, window_len, min_period)
}

/// Entries `window_start .. window_start + window_len` of the convolution of the kᵢ-fold
/// self-convolutions of the non-negative vectors pᵢ (`factors`: (pᵢ, kᵢ)), on a circular
/// buffer of `period ≥ min_period` (a power of two, also ≥ every pᵢ's length and
/// window_len), with per-entry error bounds (see the module docs).
///
/// Each real input of length n is transformed as n/2 complex numbers (even entries the
/// real parts, odd ones the imaginary parts) and untangled into the n/2 + 1 bins of the
/// real transform, `Xₖ = Eₖ + e^{−2πik/n}·Oₖ` with `Eₖ = (Zₖ + Z̄_{h−k})/2` and `Oₖ =
/// −i(Zₖ − Z̄_{h−k})/2`; the inverse packs `Aₖ + iBₖ` with `Aₖ = Yₖ + Ȳ_{h−k}` and `Bₖ =
/// (Yₖ − Ȳ_{h−k})·e^{2πik/n}`, whose transform holds the even outputs in its real parts and
/// the odd ones in its imaginary parts (times n). Each step is a butterfly of unit weights
/// on two bins: the error bounds of the module docs hold with each term doubled.
///
/// Per bin, the running product's modulus bound S and error bound D are carried through
/// the factors: with the factor's power bounded by Sᵢ within Dᵢ, the product is bounded
/// by S·Sᵢ within `S·Dᵢ + D·Sᵢ + D·Dᵢ` plus the product's rounding, 3U·(S + D)(Sᵢ + Dᵢ).
///
/// `None` when the buffer would exceed [`MAX_LEN`], a count is 0, or the bound is not
/// finite.
pub(crate) fn product_window(
    factors: &[(&[f64], u64)],
    window_start: u64,
    window_len: usize,
    min_period: usize,
) -> Option<DdPower> {
    let longest = factors.iter().map(|(p, _)| p.len()).max()?;
    let n = min_period
        .max(longest)
        .max(window_len)
        .max(16)
        .checked_next_power_of_two()?;
    if n > MAX_LEN || factors.iter().any(|&(_, k)| k == 0) {
        return None;
    }
    let h = n / 2;
    let table = twiddles(n);
    // The half-length transforms' bound, (1 + η)^{m−1} − 1, and the untangling's rounding
    // relative to the two bins it combines (a product by a twiddle and two sums).
    let stages = compound(BUTTERFLY_UNIT, h.trailing_zeros() as f64);
    let untangle = BUTTERFLY_UNIT + 2.0 * UNIT;
    // Each output is reached from 2^d nodes at depth d, each a few operations: 16n operations
    // in all, each with at most UNDERFLOW_SLACK of absolute error lost to underflow.
    let underflow = 16.0 * n as f64 * UNDERFLOW_SLACK * (1.0 + stages);

    // Per bin j ≤ h: the running product, its modulus bound S and its error bound D.
    let mut product = vec![DdComplex::ONE; h + 1];
    let mut sizes = vec![1.0_f64; h + 1];
    let mut errors = vec![0.0_f64; h + 1];
    let mut data = vec![DdComplex::ZERO; h];
    for &(p, k) in factors {
        data.fill(DdComplex::ZERO);
        for (slot, pair) in data.iter_mut().zip(p.chunks(2)) {
            slot.re = Dd::from_f64(pair[0]);
            slot.im = Dd::from_f64(pair.get(1).copied().unwrap_or(0.0));
        }
        let l1 =
            p.iter().map(|x| x.abs()).sum::<f64>() * (1.0 + (p.len() as f64 + 2.0) * f64::EPSILON);
        transform(&mut data, &table, false);
        // Every packed bin is within stages·‖z‖₁ ≤ stages·‖p‖₁ of its value; every
        // untangled bin within twice that (Eₖ and Oₖ each take half of two bins' errors)
        // plus the untangling's rounding of bins of modulus at most ‖p‖₁ plus their error.
        let packed = stages * l1;
        let forward = 2.0 * packed + 2.0 * untangle * (l1 + packed) + underflow;
        let kf = k as f64;
        let rounding = compound(COMPLEX_PRODUCT_UNIT, kf + 2.0 * kf.log2() + 2.0);
        // A bound on every bin's power, exact or computed: (‖p‖₁ + E)^k.
        let growth = (kf * (l1 + forward).ln()).exp() * (1.0 + 1e-12);
        let factor = FactorBounds {
            k,
            forward,
            rounding,
            growth,
        };
        let runs = product
            .chunks_mut(PIECE)
            .zip(sizes.chunks_mut(PIECE))
            .zip(errors.chunks_mut(PIECE))
            .enumerate()
            .map(|(r, ((product, sizes), errors))| (r * PIECE, product, sizes, errors))
            .collect();
        let (data, table) = (&data, &table[..]);
        spread(runs, |(first, product, sizes, errors)| {
            times_power(product, sizes, errors, first, data, table, factor)
        });
    }
    // Σⱼ |Ŷⱼ − Yⱼ| and Σⱼ |Ŷⱼ| over all n bins (the bins above h are the conjugates of those
    // below: weight 2).
    let weight = |j: usize| if j == 0 || j == h { 1.0 } else { 2.0 };
    let spectral_error = (0..=h).map(|j| weight(j) * errors[j]).sum::<f64>() * (1.0 + 1e-12);
    let spectral_l1 = (0..=h)
        .map(|j| weight(j) * product[j].abs_upper())
        .sum::<f64>()
        * (1.0 + 1e-12);
    let runs = data
        .chunks_mut(PIECE)
        .enumerate()
        .map(|(r, slots)| (r * PIECE, slots))
        .collect();
    let (product, table) = (&product, &table[..]);
    spread(runs, |(first, slots)| pack(slots, first, product, table));
    transform(&mut data, table, true);
    // Every entry: (1/n)·(Σ over the packed bins of their errors, at most 2·Σⱼ|Ŷⱼ − Yⱼ|,
    // plus their rounding, 2·untangle·Σⱼ|Ŷⱼ| doubled for the two parts, plus the inverse
    // transform's, stages times the packed bins' ℓ1 norm, at most 2·Σⱼ|Ŷⱼ| grown by that
    // rounding).
    let inverse_n = 1.0 / n as f64;
    let packed_l1 = 2.0 * spectral_l1 * (1.0 + 4.0 * untangle);
    let uniform = ((2.0 * spectral_error + 4.0 * untangle * spectral_l1 + stages * packed_l1)
        * inverse_n
        + underflow)
        * (1.0 + 1e-12);
    if !uniform.is_finite() {
        return None;
    }
    let start = (window_start % n as u64) as usize;
    let mut values = Vec::with_capacity(window_len);
    let mut entry_errors = Vec::with_capacity(window_len);
    for i in 0..window_len {
        let r = (start + i) % n;
        let z = data[r / 2];
        let part = if r.is_multiple_of(2) { z.re } else { z.im };
        let v = part.scale(inverse_n).to_f64();
        values.push(v.max(0.0));
        entry_errors.push(uniform + v.abs() * f64::EPSILON);
    }
    Some(DdPower {
        values,
        errors: entry_errors,
        period: n,
    })
}

/// What [`product_window`] knows of one factor `(p, k)` for every bin: the count, the
/// bound on each untangled bin's error, the rounding of a k-th power, and a bound on every
/// bin's power.
#[derive(Debug, Clone, Copy)]
struct FactorBounds {
    k: u64,
    forward: f64,
    rounding: f64,
    growth: f64,
}

/// One factor's step of [`product_window`]'s per-bin loop, for the bins `first ..` of the
/// slices given (the running product, its modulus bounds and error bounds): untangle bin j
/// from the half-length transform `data` (twiddles `table`), raise it to the k-th power and
/// multiply it in, carrying the bounds.
#[inline(always)]
fn times_power_run<T: TwoProduct>(
    product: &mut [DdComplex],
    sizes: &mut [f64],
    errors: &mut [f64],
    first: usize,
    data: &[DdComplex],
    table: &[DdComplex],
    factor: FactorBounds,
) {
    let FactorBounds {
        k,
        forward,
        rounding,
        growth,
    } = factor;
    let h = data.len();
    let kf = k as f64;
    let half = DdComplex {
        re: Dd::from_f64(0.5),
        im: Dd::ZERO,
    };
    let bins = product
        .iter_mut()
        .zip(sizes.iter_mut())
        .zip(errors.iter_mut());
    for (i, ((product, size_j), error_j)) in bins.enumerate() {
        let j = first + i;
        if *size_j == 0.0 {
            // Set to 0 by an earlier factor: the exact product stays within the bound
            // times this factor's growth.
            *error_j *= growth;
            continue;
        }
        let z = data[j % h];
        let conj = data[(h - j) % h].conj();
        let even = (z + conj).mul_with::<T>(half);
        let d = z - conj;
        // −i·d/2 = (d.im/2, −d.re/2).
        let odd = DdComplex {
            re: d.im.mul_with::<T>(half.re),
            im: -(d.re.mul_with::<T>(half.re)),
        };
        let x = if j == h {
            even - odd
        } else {
            even + table[j].mul_with::<T>(odd)
        };
        // a + E bounds both |X̂ⱼ| and |Xⱼ|; `size` bounds both their k-th powers (from
        // the logarithm, rounded up).
        let reach = x.abs_upper() + forward;
        let size = (kf * reach.ln()).exp() * (1.0 + 1e-12);
        let (s, e) = (*size_j, *error_j);
        if size * (s + e) < NEGLIGIBLE_POWER {
            // The exact and computed products are both below it: 0 within it (most
            // bins at large counts).
            *product = DdComplex::ZERO;
            *size_j = 0.0;
            *error_j = size * (s + e) * (1.0 + 1e-12);
            continue;
        }
        // The computed power is within k·(a + E)^{k−1}·E + rounding·a^k of the exact
        // one, and at most size·(1 + rounding) in modulus.
        let power_error = (kf * (size / reach) * forward + rounding * size) * (1.0 + 1e-12)
            + 128.0 * UNDERFLOW_SLACK;
        let power_size = size * (1.0 + rounding);
        *product = product.mul_with::<T>(power::<T>(x, k));
        *error_j = (s * power_error
            + e * power_size
            + e * power_error
            + 3.0 * UNIT * (s + e) * (power_size + power_error)
            + UNDERFLOW_SLACK)
            * (1.0 + 1e-12);
        *size_j = s * power_size;
    }
}

dispatch_fused! {
    /// [`times_power_run`] in the fastest build.
    fn times_power(
        product: &mut [DdComplex],
        sizes: &mut [f64],
        errors: &mut [f64],
        first: usize,
        data: &[DdComplex],
        table: &[DdComplex],
        factor: FactorBounds,
    ) = times_power_run;
}

/// The inverse's packing of [`product_window`] for the slots `first ..` given: `Aⱼ + i·Bⱼ`
/// from the bins `product` (0 ..= h) and the twiddles `table`.
#[inline(always)]
fn pack_run<T: TwoProduct>(
    slots: &mut [DdComplex],
    first: usize,
    product: &[DdComplex],
    table: &[DdComplex],
) {
    let h = product.len() - 1;
    for (i, slot) in slots.iter_mut().enumerate() {
        let j = first + i;
        let y = product[j];
        let conj = product[h - j].conj();
        let a = y + conj;
        // e^{+2πij/n}: the conjugate twiddle.
        let b = (y - conj).mul_with::<T>(table[j].conj());
        // a + i·b.
        *slot = DdComplex {
            re: a.re - b.im,
            im: a.im + b.re,
        };
    }
}

dispatch_fused! {
    /// [`pack_run`] in the fastest build.
    fn pack(slots: &mut [DdComplex], first: usize, product: &[DdComplex], table: &[DdComplex]) =
        pack_run;
}

/// `x^k` by repeated squaring.
#[inline(always)]
fn power<T: TwoProduct>(x: DdComplex, mut k: u64) -> DdComplex {
    let mut result = DdComplex::ONE;
    let mut base = x;
    loop {
        if k & 1 == 1 {
            result = result.mul_with::<T>(base);
        }
        k >>= 1;
        if k == 0 {
            return result;
        }
        base = base.mul_with::<T>(base);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twiddles_are_the_roots_of_unity() {
        // cos² + sin² = 1, and the known values at 1/8, 1/12 and 1/6 of a turn.
        let n = 1 << 12;
        let table = twiddles(n);
        for w in table.iter() {
            let norm = w.re * w.re + w.im * w.im - Dd::ONE;
            assert!(norm.to_f64().abs() < 4.0 * TWIDDLE_ERROR, "{w:?}");
        }
        let half_root_two = Dd {
            hi: std::f64::consts::FRAC_1_SQRT_2,
            lo: -4.833646656726457e-17,
        };
        let eighth = table[n / 8];
        assert!((eighth.re - half_root_two).to_f64().abs() < TWIDDLE_ERROR);
        assert!((eighth.im + half_root_two).to_f64().abs() < TWIDDLE_ERROR);
        let table = twiddles(3 << 10); // any multiple of 8
        let sixth = table[(3 << 10) / 6];
        assert!((sixth.re - Dd::from_f64(0.5)).to_f64().abs() < TWIDDLE_ERROR);
        let twelfth = table[(3 << 10) / 12];
        assert!((twelfth.im + Dd::from_f64(0.5)).to_f64().abs() < TWIDDLE_ERROR);
    }

    /// The exact k-fold circular self-convolution (period n) of integer weights.
    fn exact_circular_power(weights: &[u128], k: u32, n: usize) -> Vec<u128> {
        let mut result = vec![0u128; n];
        result[0] = 1;
        for _ in 0..k {
            let mut next = vec![0u128; n];
            for (i, &r) in result.iter().enumerate() {
                if r == 0 {
                    continue;
                }
                for (j, &w) in weights.iter().enumerate() {
                    next[(i + j) % n] += r * w;
                }
            }
            result = next;
        }
        result
    }

    #[test]
    fn powers_match_exact_integer_convolutions_within_their_bounds() {
        // p = weights / 2^s with integer weights: the exact power is an integer over 2^{sk},
        // computed in 128-bit integers. Weights span many orders of magnitude (the far tail
        // a small δ reads), and the window wraps.
        let mut next = crate::numeric::xorshift(20261201);
        for (len, k, window) in [(9, 3, 20), (40, 4, 64), (33, 5, 100), (100, 2, 150)] {
            let weights: Vec<u128> = (0..len)
                .map(|i| {
                    let r = next();
                    if i % 7 == 3 {
                        0
                    } else {
                        ((r >> 50) as u128 + 1) >> (r % 12)
                    }
                })
                .collect();
            // p sums to at most 1.
            let s = 128 - weights.iter().sum::<u128>().leading_zeros();
            let p: Vec<f64> = weights
                .iter()
                .map(|&w| w as f64 / 2f64.powi(s as i32))
                .collect();
            let got = power_window(&p, k as u64, 5, window, 0).expect("small");
            let n = got.period;
            let exact = exact_circular_power(&weights, k, n);
            let scale = 2f64.powi(-((s * k) as i32));
            let mut worst: f64 = 0.0;
            for i in 0..window {
                let truth = exact[(5 + i) % n] as f64 * scale;
                let error = (got.values[i] - truth).abs();
                // Exact integers below 2^53 · 2^{-sk} round to the same double; above,
                // the comparison itself rounds (within u of the truth).
                let slack = truth * f64::EPSILON;
                assert!(
                    error <= got.errors[i] + slack,
                    "len {len} k {k} entry {i}: {} against {truth:e}, bound {:e}",
                    got.values[i],
                    got.errors[i]
                );
                worst = worst.max(got.errors[i] - truth * f64::EPSILON);
            }
            // The bound is tiny: near 1e-28, not a vacuous one.
            assert!(worst < 1e-26, "len {len} k {k}: bound {worst:e}");
        }
    }

    #[test]
    fn products_match_exact_integer_convolutions_within_their_bounds() {
        // Two and three factors with their own counts, windows wrapping.
        let mut next = crate::numeric::xorshift(7_2026_1201);
        for (lens, counts, window) in [
            (vec![9, 20], vec![3, 2], 70),
            (vec![30, 5, 12], vec![1, 4, 2], 40),
        ] {
            let weights: Vec<Vec<u128>> = lens
                .iter()
                .map(|&len| {
                    (0..len)
                        .map(|_| ((next() >> 52) as u128) >> (next() % 9))
                        .collect()
                })
                .collect();
            let shifts: Vec<u32> = weights
                .iter()
                .map(|w| 128 - w.iter().sum::<u128>().max(1).leading_zeros())
                .collect();
            let vectors: Vec<Vec<f64>> = weights
                .iter()
                .zip(&shifts)
                .map(|(w, &s)| w.iter().map(|&x| x as f64 / 2f64.powi(s as i32)).collect())
                .collect();
            let factors: Vec<(&[f64], u64)> = vectors
                .iter()
                .zip(&counts)
                .map(|(v, &k)| (v.as_slice(), k as u64))
                .collect();
            let got = product_window(&factors, 3, window, 0).expect("small");
            let n = got.period;
            // The exact product: each factor's power, convolved circularly, in integers.
            let mut exact = vec![0u128; n];
            exact[0] = 1;
            let mut scale_bits = 0;
            for ((w, &k), &s) in weights.iter().zip(&counts).zip(&shifts) {
                let power = exact_circular_power(w, k, n);
                let mut next_exact = vec![0u128; n];
                for (i, &a) in exact.iter().enumerate() {
                    for (j, &b) in power.iter().enumerate() {
                        next_exact[(i + j) % n] += a * b;
                    }
                }
                exact = next_exact;
                scale_bits += s * k;
            }
            let scale = 2f64.powi(-(scale_bits as i32));
            for i in 0..window {
                let truth = exact[(3 + i) % n] as f64 * scale;
                let error = (got.values[i] - truth).abs();
                assert!(
                    error <= got.errors[i] + truth * f64::EPSILON,
                    "{lens:?} entry {i}: {} against {truth:e}, bound {:e}",
                    got.values[i],
                    got.errors[i]
                );
                assert!(got.errors[i] - truth * f64::EPSILON < 1e-26);
            }
        }
    }

    #[test]
    fn tiny_entries_keep_their_relative_accuracy() {
        // p = (1, 0, …, 0, 1e-20 at 30): the 3-fold power's entries at 30, 60 and 90 are
        // 3e-20, 3e-40 and 1e-60 (to double precision); a double FFT would bury the last
        // two under 1e-16.
        let mut p = vec![0.0; 31];
        p[0] = 1.0;
        p[30] = 1e-20;
        let got = power_window(&p, 3, 0, 91, 0).expect("small");
        for (i, want) in [(30, 3e-20), (60, 3e-40), (90, 1e-60)] {
            let error = (got.values[i] - want).abs();
            assert!(
                error <= got.errors[i] + want * 4.0 * f64::EPSILON,
                "entry {i}"
            );
        }
        assert!((got.values[30] / 3e-20 - 1.0).abs() < 1e-15);
        assert!(got.errors[60] < 1e-26, "bound {:e}", got.errors[60]);
        // Entries that are exactly 0 are within their (tiny) bounds of 0.
        assert!(got.values[45] <= got.errors[45]);
    }

    /// The bits of a power's values and error bounds.
    fn bits(power: &DdPower) -> Vec<u64> {
        let entries = power.values.iter().chain(&power.errors);
        entries.map(|x| x.to_bits()).collect()
    }

    /// The fused build (where the processor has FMA) and the portable one, on one thread or
    /// spread over a pool of two, give the same values and bounds bit for bit: a product of
    /// two factors on 2^15 points (eight blocks, four runs per long stage).
    #[test]
    fn every_build_and_sharing_gives_the_same_bits() {
        let gaussian = |width: f64| -> Vec<f64> {
            let raw: Vec<f64> = (0..700)
                .map(|i| (-((i as f64 - 350.0) / width).powi(2)).exp())
                .collect();
            let total: f64 = raw.iter().sum();
            raw.iter().map(|x| x / total).collect()
        };
        let (a, b) = (gaussian(60.0), gaussian(25.0));
        let product = || product_window(&[(&a, 13), (&b, 7)], 1000, 9000, 1 << 15);
        let mut builds = Vec::new();
        crate::numeric::wide_loops::for_each_tier(|_| builds.push(product().expect("small")));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool of two threads");
        let spread = pool.install(product).expect("small");
        let reference = bits(&builds[0]);
        for build in builds.iter().chain([&spread]) {
            assert_eq!(bits(build), reference);
        }
        // And right: against the direct convolution (non-negative terms, so every entry is
        // within 40u of its own value), entry by entry within the bounds, on a window that
        // holds the bulk of the product.
        let mut direct = vec![1.0];
        for (p, k) in [(&a, 13), (&b, 7)] {
            for _ in 0..k {
                let mut next = vec![0.0; direct.len() + p.len() - 1];
                for (i, &x) in direct.iter().enumerate() {
                    for (j, &y) in p.iter().enumerate() {
                        next[i + j] += x * y;
                    }
                }
                direct = next;
            }
        }
        let got = &builds[0];
        for (i, (&value, &bound)) in got.values.iter().zip(&got.errors).enumerate() {
            let want = direct.get(1000 + i).copied().unwrap_or(0.0);
            assert!(
                (value - want).abs() <= bound + 40.0 * f64::EPSILON * want,
                "entry {}: {value:e} against {want:e}",
                1000 + i
            );
        }
        let mass: f64 = got.values.iter().sum();
        assert!((mass - 1.0).abs() < 1e-9, "{mass}");
    }

    #[test]
    fn huge_counts_keep_a_finite_bound() {
        let p = [0.25, 0.5, 0.25];
        let got = power_window(&p, 1_000_000_000, 999_999_990, 20, 64).expect("finite");
        assert!(got.errors.iter().all(|e| e.is_finite() && *e < 1e-15));
        // A binomial(2e9, 1/2) wrapped onto 64 points (its spread, 22,360, is far wider):
        // every entry is 1/64 to many digits.
        for v in &got.values {
            assert!((v - 1.0 / 64.0).abs() < 1e-12, "{v:e}");
        }
    }
}
