//! The k-th powers of the bins near frequency 0 of a real DFT, accurate enough that a huge k
//! does not blow their round-off up: for FFT powers (`fft_convolution::power_window`).
//!
//! Why: the bins x_j of a probability vector near frequency 0 have |x_j| ≈ 1, and the k-th
//! power multiplies an error e of x_j by `A = k·|x_j|^{k−1}` (93,000 for the first bin of a
//! DP-SGD step at σ 0.8, q 0.004, k = 10⁵). Recomputed by a direct sum with error
//! `10u·‖p‖₁`, those bins carried almost all of the power's round-off bound: 7.9e-10 in the
//! spectrum, 2e-15 charged per entry, 2e-10 of δ above ε = 13 at grid step 1e-4, which moved
//! the published ε up by 1.4e-5 nats (more than the difference between our upper bound and
//! dp_accounting's value at the same grid). Binary powering itself errs by about `2.25·k·u`
//! relative, and the zero-frequency bin `M^k` by `2k·u`.
//!
//! How: with a centre index c (the split atom's, or the mean's),
//! ```text
//! x_j = ω^{(c−r)j}·(M − d_j),   M = Σᵢ pᵢ,   d_j = Σᵢ pᵢ·(1 − ω^{(i−c)j}),   ω = e^{−2πi/n}
//! x_j^k = ω^{(c−r)jk mod n} · exp(k·ln M + k·Log1p(−d_j/M))
//! ```
//! (r the buffer's rotation). Each `1 − ω^m` comes from tables of `1 − cos θ = 2 sin²(θ/2)`
//! and `sin θ` (no cancellation), so its error is a few u relative to `|1 − ω^m|`, and d_j's
//! error is `O(u)·S_j` with `S_j = Σᵢ pᵢ·|1 − ω^{(i−c)j}| ≈ (2πj/n)·E|i − c|`, far below
//! `u·M` when the vector is narrow in its buffer. The exponent is formed in log space, where
//! its error is absolute (`k·O(u)·S_j` plus the logarithms' rounding), M from the unrounded
//! compensated sum, and the phase `(c − r)jk mod n` in integers, exactly. The bound on each
//! power is `|y|·expm1(error of the exponent) + O(u)·|y|`.
//!
//! Error constants (u = 2⁻⁵³; glibc's sin, cos, exp, log, log1p and atan2 are within one ulp):
//! a table angle `2πm/n` is within 3u relative, so sin θ and 2 sin²(θ/2) are within 4u·θ and
//! 9u·(1 − cos θ), i.e. `|(1 − ω^m)^ − (1 − ω^m)| ≤ 11u·|1 − ω^m|` (|1 − ω^m| ≥ 2θ/π on
//! [0, π]) and `|ω̂^m − ω^m| ≤ 17u`. The two-level product `1 − HL = (1 − H) + H(1 − L)`
//! then errs by at most `32u·(|1 − H| + |1 − L|)`, the term `pᵢ·(1 − HL)` by `34u·pᵢτᵢ`
//! (`τᵢ = |1 − H| + |1 − L|`, bounded by the tables' `(1 − cos) + sin` sums), and the
//! compensated sum adds `u·|d_j| + γ²ₙ·Σ` : `|d̂_j − d_j| ≤ 37u·S_j`.

use crate::numeric::pieces::spread_map;
use crate::numeric::real_fft::Twiddles;
use crate::numeric::summation::PairedSum;
use num_complex::Complex64;

/// Unit round-off of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// Error of a deviation sum `d_j` in units of `u·S_j` (see the module docs).
const DEVIATION_ERROR: f64 = 37.0;

/// `cos θ`, `sin θ` and `1 − cos θ` of one table angle θ = 2πm/n ∈ [0, π]. (In this order
/// and `repr(C)`: the AVX2 pass gathers each field at a fixed offset.)
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct Unit {
    cos: f64,
    sin: f64,
    versine: f64,
}

impl Unit {
    fn at(m: usize, n: usize) -> Unit {
        let theta = 2.0 * std::f64::consts::PI * (m as f64) / (n as f64);
        let (sin, cos) = theta.sin_cos();
        let half = (0.5 * theta).sin();
        Unit {
            cos,
            sin,
            versine: 2.0 * half * half,
        }
    }
}

/// `1 − e^{−2πi·m/n}` for `|m| ≤ n/2` as `(1 − H) + H·(1 − L)`, `H` and `L` the units of
/// `m = a·B + b` (`b < B`, B the power of two ≥ √(n/2)) from two tables of about √n entries.
struct DeviationTables {
    shift: u32,
    low: Vec<Unit>,
    high: Vec<Unit>,
}

impl DeviationTables {
    fn new(n: usize) -> DeviationTables {
        let half = n / 2;
        let block = (((half + 1) as f64).sqrt().ceil() as usize)
            .max(1)
            .next_power_of_two();
        DeviationTables {
            shift: block.trailing_zeros(),
            low: (0..block).map(|b| Unit::at(b, n)).collect(),
            high: (0..=half / block).map(|a| Unit::at(a * block, n)).collect(),
        }
    }

    /// `1 − e^{−2πi·m/n}` for `|m| ≤ n/2`; its error is at most `32u·(|1 − H| + |1 − L|)
    /// ≤ 32u·2π|m|/n` (see the module docs: `|1 − e^{−iθ}| ≤ θ`, and the two angles add up
    /// to `2π|m|/n`).
    #[inline]
    fn deviation(&self, m: i64) -> Complex64 {
        let a = m.unsigned_abs() as usize;
        let high = self.high[a >> self.shift];
        let low = self.low[a & ((1 << self.shift) - 1)];
        // 1 − e^{−iθ} = (1 − cos θ, sin θ) and (1 − H) + H·(1 − L) with H = (cos, −sin):
        let re = high.versine + high.cos * low.versine + high.sin * low.sin;
        let im = high.sin + high.cos * low.sin - high.sin * low.versine;
        // 1 − e^{+iθ} = conj(1 − e^{−iθ}).
        Complex64::new(re, if m < 0 { -im } else { im })
    }
}

/// The tables [`NearZeroPowers::compute`] reads for one transform length n: the two-level
/// deviations `1 − ω^m` and the twiddles `ω^m` for `m < n`. Built once per planned length
/// (see `RealFft::near_zero_tables`): about 1,200 `sin_cos` for n = 86,016, which took
/// 0.045 ms of every power of that length.
pub(crate) struct NearZeroTables {
    n: usize,
    deviations: DeviationTables,
    twiddles: Twiddles,
}

impl NearZeroTables {
    /// The tables for transforms of length `n`.
    pub(crate) fn new(n: usize) -> NearZeroTables {
        NearZeroTables {
            n,
            deviations: DeviationTables::new(n),
            twiddles: Twiddles::new(n, n),
        }
    }
}

/// The k-th powers of bins 0..=`last` of the real DFT of a non-negative vector held rotated
/// in a circular buffer, with bounds on their errors against the exact powers.
pub(crate) struct NearZeroPowers {
    /// `(x_j^k, bound)` for j = 0, 1, …, last; `None` for a bin whose power could not be
    /// bounded this way (its modulus is too close to 0 for the logarithm: take it from the
    /// transform instead).
    pub(crate) bins: Vec<Option<(Complex64, f64)>>,
}

impl NearZeroPowers {
    /// Bins `0..=last` of `y_j = x_j^k`, `x_j = Σᵢ pᵢ ω^{(i − rotation)·j}` (the vector `p`
    /// rotated left by `rotation` in a buffer of length `n`, the length of `tables`), given
    /// `p`'s mass as the unrounded pair of
    /// [`crate::numeric::summation::compensated_sum_pair`] and a centre index (any; the split
    /// atom's or the mean's keeps the deviations small).
    ///
    /// # Guarantee
    /// `|ŷ_j − y_j| ≤ bound_j` for every bin returned (see the module docs for the
    /// constants).
    pub(crate) fn compute(
        p: &[f64],
        mass: [f64; 2],
        rotation: usize,
        center: usize,
        tables: &NearZeroTables,
        k: u64,
        last: usize,
    ) -> NearZeroPowers {
        let n = tables.n;
        let u = UNIT_ROUNDOFF;
        let kf = k as f64;
        let (hi, lo) = (mass[0], mass[1]);
        let total = hi + lo;
        let mut bins = Vec::with_capacity(last + 1);
        if !(hi > 0.0 && total > 0.0 && total.is_finite()) {
            bins.resize(last + 1, None);
            return NearZeroPowers { bins };
        }
        // ln M = ln(hi) + ln1p(lo/hi): each part within an ulp of itself, the pair within
        // its compensated sum's bound of M (relative, p being non-negative), the sum's
        // rounding.
        let ln_hi = hi.ln();
        let ln_rest = (lo / hi).ln_1p();
        let ln_mass = ln_hi + ln_rest;
        let pair_error = crate::numeric::summation::compensated_sum_pair_error(p.len());
        let ln_mass_error =
            u * ln_hi.abs() + 3.0 * u * ln_rest.abs() + u * ln_mass.abs() + 1.01 * pair_error;
        // The zero-frequency bin: M^k.
        let a0 = kf * ln_mass;
        let a0_error = kf * ln_mass_error + 2.0 * u * a0.abs();
        bins.push(bounded(Complex64::new(a0.exp(), 0.0), a0_error + 3.0 * u));
        if last == 0 {
            return NearZeroPowers { bins };
        }
        for (j, (d, scale)) in deviations(p, center, n, last, &tables.deviations)
            .into_iter()
            .enumerate()
        {
            let j = j + 1;
            let d_error = DEVIATION_ERROR * u * scale;
            // z = −d/M: the division's and M's roundings.
            let z = -d / total;
            let z_error = (d_error / total + 4.0 * u * z.norm()) * (1.0 + 1e-9);
            let one_plus = Complex64::new(1.0 + z.re, z.im);
            let modulus = one_plus.norm();
            let reach = modulus * (1.0 - 4.0 * u) - z_error;
            if !(reach > 0.25 * modulus && reach > 0.0) {
                bins.push(None);
                continue;
            }
            // Log1p(z) = ½·log1p(2 Re z + |z|²) + i·atan2(Im z, 1 + Re z); its change from
            // the error of z is at most z_error / reach (log is 1/reach-Lipschitz there).
            let w_terms = 2.0 * z.re.abs() + z.norm_sqr();
            let w = 2.0 * z.re + z.norm_sqr();
            let w_error = 4.0 * u * w_terms;
            let room = 1.0 + w - w_error;
            if room.is_nan() || room <= 0.0 {
                bins.push(None);
                continue;
            }
            let re_log = 0.5 * w.ln_1p();
            let im_log = z.im.atan2(1.0 + z.re);
            let propagated = z_error / reach;
            let re_error = propagated + 0.5 * w_error / room + 2.0 * u * re_log.abs();
            let im_error = propagated + 2.0 * u * im_log.abs() + u;
            let a = kf * (ln_mass + re_log);
            let b = kf * im_log;
            let a_error = kf * (ln_mass_error + re_error) + 3.0 * u * a.abs();
            let b_error = kf * im_error + 2.0 * u * b.abs();
            // The phase of the rotation and centre, (c − r)·j·k mod n, in integers.
            let shift = (center as i128 - rotation as i128) * j as i128 % n as i128;
            let phase = (shift * (k % n as u64) as i128).rem_euclid(n as i128) as usize;
            let (sin_b, cos_b) = b.sin_cos();
            let y = Complex64::new(cos_b, sin_b) * a.exp() * tables.twiddles.at(phase);
            // exp, cos, sin, the twiddle (two table entries and their product) and the two
            // products' roundings: 18u relative.
            bins.push(bounded(y, a_error + b_error + 18.0 * u));
        }
        NearZeroPowers { bins }
    }
}

/// `(y, bound)` for a computed power `ŷ` whose exponent errs by at most `exponent_error`
/// (its real and imaginary parts together) plus rounding `rounding` relative:
/// `|ŷ − y| ≤ |y|·(expm1(exponent_error) + rounding)`, with `|y| ≤ |ŷ|/(1 − that)`; `None`
/// when that relative error is not below ½.
fn bounded(y: Complex64, relative: f64) -> Option<(Complex64, f64)> {
    let relative = relative.exp_m1() * (1.0 + 1e-12);
    if !(relative < 0.5 && y.re.is_finite() && y.im.is_finite()) {
        return None;
    }
    Some((
        y,
        y.norm() * relative / (1.0 - relative) + f64::MIN_POSITIVE,
    ))
}

/// Independent partial sums of the spread `Σ pᵢ·|i − c|` in [`deviations`].
const SPREAD_LANES: usize = 8;

/// Bins decided per pass over `p` in [`deviations`]: the eight lanes of an AVX-512 vector
/// (two AVX2 passes of [`AVX2_LANES`] where there is no AVX-512).
const BINS_PER_PASS: usize = 8;

/// Bins of one AVX2 pass ([`deviation_pass_avx2`]).
const AVX2_LANES: usize = 4;

/// `(d_j, S_j)` for j = 1..=last: `d_j = Σᵢ pᵢ·(1 − ω^{(i−c)j})` by compensated sums, and
/// `S_j = (2πj/n)·Σᵢ pᵢ·|i − c|` (rounded up), which bounds `Σᵢ pᵢ·(|1 − H| + |1 − L|)`:
/// the error of `d_j` is at most `37u·S_j` (see the module docs). Eight bins per pass.
fn deviations(
    p: &[f64],
    center: usize,
    n: usize,
    last: usize,
    tables: &DeviationTables,
) -> Vec<(Complex64, f64)> {
    let u = UNIT_ROUNDOFF;
    // The non-zero entries (merged tails leave many zeros), with the gap to the previous
    // one.
    let mut previous = center;
    let first = p.iter().position(|&pi| pi != 0.0);
    let terms: Vec<(usize, f64)> = p
        .iter()
        .enumerate()
        .filter(|&(_, &pi)| pi != 0.0)
        .map(|(i, &pi)| {
            let gap = i.wrapping_sub(previous);
            previous = i;
            (gap, pi)
        })
        .collect();
    // Σ pᵢ·|i − c| in SPREAD_LANES independent sums (one chain of dependent additions, one
    // per entry, waits on every addition's latency); |i − c| is exact in f64.
    let center_index = center as f64;
    let mut lanes = [0.0; SPREAD_LANES];
    let whole = p.len() / SPREAD_LANES * SPREAD_LANES;
    for (c, chunk) in p[..whole].chunks_exact(SPREAD_LANES).enumerate() {
        for (l, (lane, &pi)) in lanes.iter_mut().zip(chunk).enumerate() {
            let distance = ((c * SPREAD_LANES + l) as f64 - center_index).abs();
            *lane += pi * distance;
        }
    }
    for (i, &pi) in p.iter().enumerate().skip(whole) {
        lanes[0] += pi * (i as f64 - center_index).abs();
    }
    // Plain sums of non-negative terms, each rounded: within (count + 2)u relative, the
    // lanes' own sum adding SPREAD_LANES − 1 more additions (zero terms add nothing).
    let spread: f64 = lanes.iter().sum();
    let spread = spread * (1.0 + 2.0 * (terms.len() as f64 + SPREAD_LANES as f64 + 4.0) * u);
    let unit_angle = 2.0 * std::f64::consts::PI / n as f64 * (1.0 + 4.0 * u);
    // The passes, each over the whole vector: in pieces for idle threads when long.
    let passes: Vec<usize> = (1..=last).step_by(BINS_PER_PASS).collect();
    let pass = |j: usize| {
        let width = BINS_PER_PASS.min(last + 1 - j);
        let sums = deviation_pass(&terms, first, center, n, j, width, tables);
        sums.iter()
            .enumerate()
            .take(width)
            .map(|(b, sum)| {
                let [re, im] = sum.value();
                let scale = unit_angle * (j + b) as f64 * spread * (1.0 + 4.0 * u);
                (Complex64::new(re, im), scale)
            })
            .collect::<Vec<_>>()
    };
    let results = if terms.len() * last >= SPREAD_MIN_WORK {
        spread_map(passes, pass)
    } else {
        passes.into_iter().map(pass).collect()
    };
    results.into_iter().flatten().collect()
}

/// Fewest entries times bins for which [`deviations`] hands its passes to idle threads
/// (see [`crate::numeric::pieces`]): about 0.1 ms of work.
const SPREAD_MIN_WORK: usize = 1 << 16;

/// The compensated sums `d_j` of bins `j .. j + width` (`width ≤` [`BINS_PER_PASS`]) in
/// one pass over the non-zero entries `terms` (gap to the previous entry, value; the first
/// at index `first`): eight bins in the eight lanes of AVX-512 vectors when the processor
/// has AVX-512 ([`deviation_pass_avx512`]), else four at a time in AVX2 vectors
/// ([`deviation_pass_avx2`]), else one after the other. Every lane does the scalar
/// operations in the same order: the same sums bit for bit, whichever runs.
///
/// Why eight: a pass's cost is mostly per entry (its phases stepped, its table entries
/// gathered, its terms added), and an FFT power recomputes at most 16 bins, 8 for a DP-SGD
/// step at 10³ steps: one AVX-512 pass instead of two AVX2 passes.
fn deviation_pass(
    terms: &[(usize, f64)],
    first: Option<usize>,
    center: usize,
    n: usize,
    j: usize,
    width: usize,
    tables: &DeviationTables,
) -> [PairedSum; BINS_PER_PASS] {
    let start = PassStart::<BINS_PER_PASS>::new(first, center, n, j, width);
    #[cfg(target_arch = "x86_64")]
    {
        if crate::numeric::wide_loops::avx512() {
            // SAFETY: the processor has AVX-512F (checked just above).
            return unsafe { deviation_pass_avx512(terms, start, n, tables) };
        }
        if crate::numeric::wide_loops::avx2() {
            // SAFETY: the processor has AVX2 (checked just above).
            let low = unsafe { deviation_pass_avx2(terms, start.lanes(0), n, tables) };
            // (Lanes past `width` are not read: no second pass when all are in the first.)
            let high = if width > AVX2_LANES {
                // SAFETY: as above.
                unsafe { deviation_pass_avx2(terms, start.lanes(AVX2_LANES), n, tables) }
            } else {
                low
            };
            return std::array::from_fn(|b| {
                if b < AVX2_LANES {
                    low[b]
                } else {
                    high[b - AVX2_LANES]
                }
            });
        }
    }
    deviation_pass_scalar(terms, start, n, tables)
}

/// Where a pass of `L` bins starts: per bin, its frequency `stride` and the phase index
/// `m = (i₀ − c)·stride mod n` of the first entry. All `L` bins are summed, the ones past
/// `width` repeating the last valid frequency (a fixed count keeps the sums in registers).
#[derive(Clone, Copy)]
struct PassStart<const L: usize> {
    m: [usize; L],
    steps: [usize; L],
}

impl<const L: usize> PassStart<L> {
    fn new(first: Option<usize>, center: usize, n: usize, j: usize, width: usize) -> Self {
        let mut m = [0usize; L];
        let mut steps = [0usize; L];
        for b in 0..L {
            steps[b] = (j + b.min(width - 1)) % n;
            if let Some(i0) = first {
                m[b] = ((i0 as i128 - center as i128) * steps[b] as i128).rem_euclid(n as i128)
                    as usize;
            }
        }
        PassStart { m, steps }
    }

    /// The phase steps of a gap of `gap` indices, `gap·stride mod n` per bin.
    fn gap_steps(&self, gap: usize, n: usize) -> [usize; L] {
        self.steps.map(|stride| (gap % n) * stride % n)
    }
}

impl PassStart<BINS_PER_PASS> {
    /// The bins `from .. from + AVX2_LANES` of the pass, as a pass of their own.
    #[cfg(target_arch = "x86_64")]
    fn lanes(&self, from: usize) -> PassStart<AVX2_LANES> {
        PassStart {
            m: std::array::from_fn(|b| self.m[from + b]),
            steps: std::array::from_fn(|b| self.steps[from + b]),
        }
    }
}

/// [`deviation_pass`] one bin after the other: m is stepped by gap·stride (mod n) from one
/// entry to the next (recomputed only when the gap changes: gaps repeat along merged
/// blocks).
fn deviation_pass_scalar<const L: usize>(
    terms: &[(usize, f64)],
    start: PassStart<L>,
    n: usize,
    tables: &DeviationTables,
) -> [PairedSum; L] {
    let half = n / 2;
    let mut sums = [PairedSum::default(); L];
    let mut m = start.m;
    let mut gap_steps = (1, start.steps);
    for (index, &(gap, pi)) in terms.iter().enumerate() {
        if index > 0 && gap != gap_steps.0 {
            gap_steps = (gap, start.gap_steps(gap, n));
        }
        for b in 0..L {
            if index > 0 {
                m[b] += gap_steps.1[b];
                if m[b] >= n {
                    m[b] -= n;
                }
            }
            // Centred in (−n/2, n/2].
            let centred = m[b] as i64 - if m[b] > half { n as i64 } else { 0 };
            let t = tables.deviation(centred);
            sums[b].add([pi * t.re, pi * t.im]);
        }
    }
    sums
}

/// [`deviation_pass_scalar`] with bin b in lane b of AVX2 vectors: the phases as 64-bit
/// integers, the table entries gathered, and [`DeviationTables::deviation`]'s products and
/// sums and [`PairedSum::add`]'s TwoSum as the same IEEE operations in the same order (no
/// fused multiply-add), so each lane's sum is the scalar one bit for bit.
///
/// # Safety
/// The processor must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn deviation_pass_avx2(
    terms: &[(usize, f64)],
    start: PassStart<AVX2_LANES>,
    n: usize,
    tables: &DeviationTables,
) -> [PairedSum; AVX2_LANES] {
    use std::arch::x86_64::*;
    // Every index below is under n ≤ 2⁶², so signed 64-bit comparisons are exact.
    let load = |v: [usize; AVX2_LANES]| _mm256_loadu_si256(v.as_ptr().cast::<__m256i>());
    let n_v = _mm256_set1_epi64x(n as i64);
    let n_less_one = _mm256_set1_epi64x(n as i64 - 1);
    let half = _mm256_set1_epi64x((n / 2) as i64);
    let low_mask = _mm256_set1_epi64x(((1usize << tables.shift) - 1) as i64);
    let shift = _mm_cvtsi64_si128(i64::from(tables.shift));
    let sign_bit = _mm256_set1_pd(-0.0);
    // Unit is three f64 (repr(C)): entry e's field f is the f64 at 3e + f.
    let high = tables.high.as_ptr().cast::<f64>();
    let low = tables.low.as_ptr().cast::<f64>();
    let times_three = |x: __m256i| _mm256_add_epi64(_mm256_slli_epi64::<1>(x), x);
    let mut m = load(start.m);
    let mut gap_steps = (1, load(start.steps));
    let zero = _mm256_setzero_pd();
    // The high table's entries of the lanes, gathered again only when one of them moves to
    // another entry (every block/(j·gap) entries or so: rarely, for bins near 0).
    let mut high_index = _mm256_set1_epi64x(-1);
    let (mut h_cos, mut h_sin, mut h_versine) = (zero, zero, zero);
    let (mut sum_re, mut error_re, mut sum_im, mut error_im) = (zero, zero, zero, zero);
    for (index, &(gap, pi)) in terms.iter().enumerate() {
        if index > 0 {
            if gap != gap_steps.0 {
                gap_steps = (gap, load(start.gap_steps(gap, n)));
            }
            m = _mm256_add_epi64(m, gap_steps.1);
            let wrapped = _mm256_cmpgt_epi64(m, n_less_one);
            m = _mm256_sub_epi64(m, _mm256_and_si256(wrapped, n_v));
        }
        // |centred| and its sign: m − n when m > n/2.
        let negative = _mm256_cmpgt_epi64(m, half);
        let a = _mm256_blendv_epi8(m, _mm256_sub_epi64(n_v, m), negative);
        let high_now = _mm256_srl_epi64(a, shift);
        let low_at = times_three(_mm256_and_si256(a, low_mask));
        // SAFETY (the gathers): a ≤ n/2, so a >> shift indexes `high` and a & mask `low`
        // (see `DeviationTables::new`); fields 0, 1, 2 are cos, sin, versine (the low
        // table's cos is not needed).
        let unmoved = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(
            high_now, high_index,
        )));
        if unmoved != 0b1111 {
            high_index = high_now;
            let high_at = times_three(high_now);
            h_cos = _mm256_i64gather_pd::<8>(high, high_at);
            h_sin = _mm256_i64gather_pd::<8>(high.add(1), high_at);
            h_versine = _mm256_i64gather_pd::<8>(high.add(2), high_at);
        }
        let l_sin = _mm256_i64gather_pd::<8>(low.add(1), low_at);
        let l_versine = _mm256_i64gather_pd::<8>(low.add(2), low_at);
        // As `DeviationTables::deviation`: re = (hv + hc·lv) + hs·ls, im = (hs + hc·ls) − hs·lv,
        // im negated for a negative centred index.
        let re = _mm256_add_pd(
            _mm256_add_pd(h_versine, _mm256_mul_pd(h_cos, l_versine)),
            _mm256_mul_pd(h_sin, l_sin),
        );
        let im = _mm256_sub_pd(
            _mm256_add_pd(h_sin, _mm256_mul_pd(h_cos, l_sin)),
            _mm256_mul_pd(h_sin, l_versine),
        );
        let im = _mm256_xor_pd(im, _mm256_and_pd(_mm256_castsi256_pd(negative), sign_bit));
        let p = _mm256_set1_pd(pi);
        // As `PairedSum::add`: Knuth's TwoSum, the error accumulated apart.
        let two_sum = |sum: &mut __m256d, error: &mut __m256d, x: __m256d| {
            let s = _mm256_add_pd(*sum, x);
            let back = _mm256_sub_pd(s, *sum);
            let lost = _mm256_add_pd(
                _mm256_sub_pd(*sum, _mm256_sub_pd(s, back)),
                _mm256_sub_pd(x, back),
            );
            *error = _mm256_add_pd(*error, lost);
            *sum = s;
        };
        two_sum(&mut sum_re, &mut error_re, _mm256_mul_pd(p, re));
        two_sum(&mut sum_im, &mut error_im, _mm256_mul_pd(p, im));
    }
    let lanes = |v: __m256d| {
        let mut out = [0.0; AVX2_LANES];
        _mm256_storeu_pd(out.as_mut_ptr(), v);
        out
    };
    paired_sums([sum_re, sum_im].map(lanes), [error_re, error_im].map(lanes))
}

/// [`deviation_pass_scalar`] with bin b in lane b of AVX-512 vectors: as
/// [`deviation_pass_avx2`], eight lanes at once (lane masks for the comparisons, the sign
/// of a negative centred index flipped on the integer bits), so each lane's sum is the
/// scalar one bit for bit.
///
/// # Safety
/// The processor must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn deviation_pass_avx512(
    terms: &[(usize, f64)],
    start: PassStart<BINS_PER_PASS>,
    n: usize,
    tables: &DeviationTables,
) -> [PairedSum; BINS_PER_PASS] {
    use std::arch::x86_64::*;
    const _: () = assert!(BINS_PER_PASS == 8);
    // Every index below is under n ≤ 2⁶², so signed 64-bit comparisons are exact.
    let load = |v: [usize; BINS_PER_PASS]| _mm512_loadu_epi64(v.as_ptr().cast::<i64>());
    let n_v = _mm512_set1_epi64(n as i64);
    let n_less_one = _mm512_set1_epi64(n as i64 - 1);
    let half = _mm512_set1_epi64((n / 2) as i64);
    let low_mask = _mm512_set1_epi64(((1usize << tables.shift) - 1) as i64);
    let shift = _mm_cvtsi64_si128(i64::from(tables.shift));
    let sign_bit = _mm512_set1_epi64(i64::MIN);
    // Unit is three f64 (repr(C)): entry e's field f is the f64 at 3e + f.
    let high = tables.high.as_ptr().cast::<f64>();
    let low = tables.low.as_ptr().cast::<f64>();
    let times_three = |x: __m512i| _mm512_add_epi64(_mm512_slli_epi64::<1>(x), x);
    let mut m = load(start.m);
    let mut gap_steps = (1, load(start.steps));
    let zero = _mm512_setzero_pd();
    // The high table's entries of the lanes, gathered again only when one of them moves to
    // another entry.
    let mut high_index = _mm512_set1_epi64(-1);
    let (mut h_cos, mut h_sin, mut h_versine) = (zero, zero, zero);
    let (mut sum_re, mut error_re, mut sum_im, mut error_im) = (zero, zero, zero, zero);
    for (index, &(gap, pi)) in terms.iter().enumerate() {
        if index > 0 {
            if gap != gap_steps.0 {
                gap_steps = (gap, load(start.gap_steps(gap, n)));
            }
            m = _mm512_add_epi64(m, gap_steps.1);
            let wrapped = _mm512_cmpgt_epi64_mask(m, n_less_one);
            m = _mm512_mask_sub_epi64(m, wrapped, m, n_v);
        }
        // |centred| and its sign: m − n when m > n/2.
        let negative = _mm512_cmpgt_epi64_mask(m, half);
        let a = _mm512_mask_sub_epi64(m, negative, n_v, m);
        let high_now = _mm512_srl_epi64(a, shift);
        let low_at = times_three(_mm512_and_si512(a, low_mask));
        // SAFETY (the gathers): as in `deviation_pass_avx2`.
        if _mm512_cmpeq_epi64_mask(high_now, high_index) != 0xff {
            high_index = high_now;
            let high_at = times_three(high_now);
            h_cos = _mm512_i64gather_pd::<8>(high_at, high);
            h_sin = _mm512_i64gather_pd::<8>(high_at, high.add(1));
            h_versine = _mm512_i64gather_pd::<8>(high_at, high.add(2));
        }
        let l_sin = _mm512_i64gather_pd::<8>(low_at, low.add(1));
        let l_versine = _mm512_i64gather_pd::<8>(low_at, low.add(2));
        // As `DeviationTables::deviation`: re = (hv + hc·lv) + hs·ls, im = (hs + hc·ls) − hs·lv,
        // im negated for a negative centred index.
        let re = _mm512_add_pd(
            _mm512_add_pd(h_versine, _mm512_mul_pd(h_cos, l_versine)),
            _mm512_mul_pd(h_sin, l_sin),
        );
        let im = _mm512_sub_pd(
            _mm512_add_pd(h_sin, _mm512_mul_pd(h_cos, l_sin)),
            _mm512_mul_pd(h_sin, l_versine),
        );
        let im = _mm512_castsi512_pd(_mm512_mask_xor_epi64(
            _mm512_castpd_si512(im),
            negative,
            _mm512_castpd_si512(im),
            sign_bit,
        ));
        let p = _mm512_set1_pd(pi);
        // As `PairedSum::add`: Knuth's TwoSum, the error accumulated apart.
        let two_sum = |sum: &mut __m512d, error: &mut __m512d, x: __m512d| {
            let s = _mm512_add_pd(*sum, x);
            let back = _mm512_sub_pd(s, *sum);
            let lost = _mm512_add_pd(
                _mm512_sub_pd(*sum, _mm512_sub_pd(s, back)),
                _mm512_sub_pd(x, back),
            );
            *error = _mm512_add_pd(*error, lost);
            *sum = s;
        };
        two_sum(&mut sum_re, &mut error_re, _mm512_mul_pd(p, re));
        two_sum(&mut sum_im, &mut error_im, _mm512_mul_pd(p, im));
    }
    let lanes = |v: __m512d| {
        let mut out = [0.0; BINS_PER_PASS];
        _mm512_storeu_pd(out.as_mut_ptr(), v);
        out
    };
    paired_sums([sum_re, sum_im].map(lanes), [error_re, error_im].map(lanes))
}

/// The per-lane sums of a wide pass as [`PairedSum`]s: lane b of the running sums
/// `[re, im]` and of their accumulated errors.
#[cfg(target_arch = "x86_64")]
fn paired_sums<const L: usize>(sums: [[f64; L]; 2], errors: [[f64; L]; 2]) -> [PairedSum; L] {
    std::array::from_fn(|b| {
        PairedSum::from_parts([sums[0][b], sums[1][b]], [errors[0][b], errors[1][b]])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-level deviations against the direct formula at the full angle, within the
    /// documented 32u·τ (plus the direct formula's own few ulps), for angles of both signs,
    /// small and up to π.
    #[test]
    fn deviations_match_the_direct_formula() {
        for n in [8, 1000, 405_000, 1 << 20] {
            let tables = DeviationTables::new(n);
            let half = (n / 2) as i64;
            for m in (-half + 1..=half)
                .step_by((n / 1999).max(1))
                .chain([1, -1, half])
            {
                let t = tables.deviation(m);
                let theta = 2.0 * std::f64::consts::PI * (m as f64) / (n as f64);
                let h = (0.5 * theta).sin();
                let exact = Complex64::new(2.0 * h * h, theta.sin());
                let tolerance =
                    32.0 * UNIT_ROUNDOFF * theta.abs() + 12.0 * UNIT_ROUNDOFF * exact.norm();
                assert!(
                    (t - exact).norm() <= tolerance,
                    "n = {n}, m = {m}: {t} against {exact}"
                );
            }
        }
    }

    /// The AVX2 passes (two of four bins) and the AVX-512 pass (eight bins) give the sums of
    /// the one-bin-at-a-time pass bit for bit (both running sums and their accumulated
    /// errors): vectors with runs of gap 1 and gaps from 2 to 2¹⁵ (as merged tails leave),
    /// buffers from 16 to 2²⁰ long, centres below, inside and above the entries, bins from 1
    /// up to the half length, every width 1 to 8, and no entries at all. (Each wide pass only
    /// where the processor has its instructions.)
    #[test]
    fn the_wide_passes_give_the_scalar_sums() {
        let (avx2, avx512) = (
            crate::numeric::wide_loops::avx2(),
            crate::numeric::wide_loops::avx512(),
        );
        if !avx2 && !avx512 {
            return;
        }
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut compared = 0;
        for n in [16usize, 1000, 4800, 86_016, 1 << 20] {
            let tables = DeviationTables::new(n);
            for case in 0..6 {
                // Entries at increasing indices below n: mostly gap 1, some long gaps.
                let mut terms = Vec::new();
                let mut index = (next() % 8) as usize;
                let first = index;
                let mut previous = 0;
                while index < n && terms.len() < 3000 {
                    let value = (next() >> 11) as f64 * 2f64.powi(-53 - (next() % 40) as i32);
                    terms.push((index.wrapping_sub(previous), value));
                    previous = index;
                    let gap = match next() % 10 {
                        0 => 1 << (1 + next() % 15),
                        1 => 2 + (next() % 9) as usize,
                        _ => 1,
                    };
                    index += gap;
                }
                let center = match case % 3 {
                    0 => 0,
                    1 => previous / 2,
                    _ => n - 1,
                };
                let (terms, first) = if case == 5 {
                    (Vec::new(), None)
                } else {
                    (terms, Some(first))
                };
                for j in [1, 2, 5, n / 3 + 1, n / 2 - 3] {
                    for width in 1..=BINS_PER_PASS {
                        if j + width - 1 > n / 2 {
                            continue;
                        }
                        let start = PassStart::<BINS_PER_PASS>::new(first, center, n, j, width);
                        let scalar = deviation_pass_scalar(&terms, start, n, &tables);
                        let mut wide = Vec::new();
                        if avx2 {
                            // SAFETY: the processor has AVX2 (checked above).
                            let halves = [0, AVX2_LANES].map(|from| unsafe {
                                deviation_pass_avx2(&terms, start.lanes(from), n, &tables)
                            });
                            wide.push(("AVX2", halves.concat()));
                        }
                        if avx512 {
                            // SAFETY: the processor has AVX-512F (checked above).
                            let sums = unsafe { deviation_pass_avx512(&terms, start, n, &tables) };
                            wide.push(("AVX-512", sums.to_vec()));
                        }
                        for (name, sums) in wide {
                            for (a, b) in scalar.iter().zip(&sums) {
                                assert_eq!(
                                    a.parts().map(|v| v.map(f64::to_bits)),
                                    b.parts().map(|v| v.map(f64::to_bits)),
                                    "{name}: n {n}, case {case}, j {j}, width {width}"
                                );
                            }
                            compared += 1;
                        }
                    }
                }
            }
        }
        assert!(compared > 500, "{compared}");
    }

    /// Every bin's power within its bound of the exact value (mpmath, 60 digits; the fixture
    /// and the script that makes it are under fixtures/near_zero_powers and
    /// fixtures/scripts), for a smooth vector with a long tail (as a DP-SGD step), the same
    /// with mass 0.999, a dominant atom held rotated, and two points, k from 2 to 1e10; and
    /// the bounds far below what a direct sum's `10u·‖p‖₁` times the amplification gave
    /// (within 1e-9 of |y| where |y| > 1e-200).
    #[test]
    fn powers_are_within_their_bounds_of_exact_values() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/near_zero_powers/cases.json"
        );
        let text = std::fs::read_to_string(path).expect("fixture");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let vectors: std::collections::HashMap<&str, Vec<f64>> = doc["vectors"]
            .as_array()
            .expect("vectors")
            .iter()
            .map(|v| {
                let p = v["p"].as_array().expect("p");
                (
                    v["label"].as_str().expect("label"),
                    p.iter().map(|x| x.as_f64().expect("entry")).collect(),
                )
            })
            .collect();
        let mut checked = 0;
        for case in doc["cases"].as_array().expect("cases") {
            let label = case["vector"].as_str().expect("vector");
            let p = &vectors[label];
            let n = case["n"].as_u64().expect("n") as usize;
            let rotation = case["rotation"].as_u64().expect("rotation") as usize;
            let k = case["k"].as_u64().expect("k");
            let center = if rotation > 0 {
                rotation
            } else {
                crate::numeric::fft_convolution::mean_index(p)
            };
            let mass = crate::numeric::summation::compensated_sum_pair(p);
            let exact: Vec<Complex64> = case["bins"]
                .as_array()
                .expect("bins")
                .iter()
                .map(|b| {
                    let part =
                        |i: usize| b[i].as_str().expect("number").parse::<f64>().expect("f64");
                    Complex64::new(part(0), part(1))
                })
                .collect();
            let last = exact.len() - 1;
            let tables = NearZeroTables::new(n);
            let powers = NearZeroPowers::compute(p, mass, rotation, center, &tables, k, last);
            for (j, (bin, want)) in powers.bins.iter().zip(&exact).enumerate() {
                let Some((got, bound)) = bin else { continue };
                let error = (got - want).norm();
                assert!(
                    error <= bound + 2.0 * UNIT_ROUNDOFF * want.norm(),
                    "{label}, n {n}, k {k}, bin {j}: {got} against {want}, error {error:e} > bound {bound:e}"
                );
                if want.norm() > 1e-200 {
                    assert!(
                        *bound <= 1e-9 * want.norm(),
                        "{label}, k {k}, bin {j}: bound {bound:e} for |y| = {:e}",
                        want.norm()
                    );
                }
                checked += 1;
            }
        }
        assert!(checked > 150, "only {checked} bins checked");
    }
}
