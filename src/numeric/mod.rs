//! Numerical building blocks, kept apart from the privacy logic that uses them.
//!
//! The bottom of the pipeline: every later stage ([`crate::mechanism`] tails,
//! [`crate::discretize`] masses, [`crate::pmf`] composition) builds on these.
//!
//! - [`binomial`]: binomial log-probabilities (Loader's saddle-point form) and certified
//!   brackets on binomial tails.
//! - [`erfc`]: the complementary error function (one `exp` and a polynomial from the table
//!   `erfcx_table`, generated at high precision).
//! - `exponential`: e^x for x ≤ 0 without a library call (a table of 2^{j/64}, `exp_table`,
//!   and a polynomial), for erfc and for loops over slices on vector lanes.
//! - [`normal`]: the standard normal CDF, its logarithm and tails, accurate in relative terms
//!   far into the tails.
//! - [`log_space`]: sums and differences of numbers held as logarithms.
//! - [`summation`]: compensated (Neumaier) summation.
//! - [`fft_convolution`]: real-FFT convolution and FFT powers with rigorous round-off bounds,
//!   the bins near frequency 0 of a power taken accurately by `near_zero_powers`,
//!   on the real transforms of `real_fft` (both directions from one complex plan, long
//!   lengths planned in four steps by `complex_fft`).
//! - `double_double` and `double_double_fft`: FFT powers in double-double arithmetic
//!   (about 106 bits), whose entries are within about 1e-28 of the exact ones: the far
//!   tails that tilting cannot reach (see [`crate::pmf`]'s composition).
//! - `pieces`: long transforms' passes and recomputed bins cut into pieces that idle
//!   evaluation threads may take (results the same bit for bit).
//! - `integer_search`: bisection over integers for monotone yes/no questions.
//! - [`transform_log`]: an optional record of the transforms computed, for benchmarks.
//! - `wide_loops`: a few hot elementwise loops also compiled for AVX2 and AVX-512, chosen at run time
//!   (the same results bit for bit).
//!
//! None of these know about privacy; each documents its accuracy.

pub mod binomial;
pub(crate) mod complex_fft;
pub(crate) mod double_double;
pub(crate) mod double_double_fft;
pub mod erfc;
mod erfcx_table;
mod exp_table;
pub(crate) mod exponential;
pub mod fft_convolution;
pub(crate) mod integer_search;
pub mod log_space;
pub(crate) mod near_zero_powers;
pub mod normal;
pub(crate) mod pieces;
pub(crate) mod real_fft;
pub mod summation;
pub mod transform_log;
pub(crate) mod wide_loops;

/// `len` zeros whose memory has been written, for a buffer that is then accumulated into
/// (`v[i] += x`) rather than written first.
///
/// A fresh zeroed allocation (`vec![0.0; len]`) is memory the system maps only when first
/// touched. Touched first by a read, as `+=` does, a page is mapped to the system's shared
/// page of zeros, and the write that follows copies it into a page of its own, at the cost
/// of flushing the mapping from every processor running the process (an interrupt each, and
/// on a virtual machine an exit to the host). Written first, a page is mapped once.
pub(crate) fn written_zeros(len: usize) -> Vec<f64> {
    // (The black box keeps the compiler from turning the allocation and the write of its
    // zeros into a zeroed allocation, which would leave the pages untouched again.)
    let mut zeros = std::hint::black_box(Vec::with_capacity(len));
    zeros.resize(len, 0.0);
    zeros
}

/// A fixed pseudo-random stream for unit tests (xorshift64 from `seed`): the raw 64-bit
/// states.
#[cfg(test)]
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// [`xorshift`]'s stream as uniform numbers in [0, 1) (its top 53 bits).
#[cfg(test)]
pub(crate) fn xorshift_uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut next = xorshift(seed);
    move || (next() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    /// `written_zeros` gives exactly `len` zeros (none for 0), that can be added to.
    #[test]
    fn written_zeros_are_zeros() {
        for len in [0, 1, 7, 1 << 18] {
            let mut zeros = super::written_zeros(len);
            assert_eq!(zeros.len(), len);
            assert!(zeros.iter().all(|&x| x == 0.0 && x.is_sign_positive()));
            if let Some(last) = zeros.last_mut() {
                *last += 0.5;
                assert_eq!(zeros[len - 1], 0.5);
            }
        }
    }
}
