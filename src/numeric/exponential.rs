//! The exponential of non-positive arguments in plain arithmetic (a table of 2^{j/64} and a
//! polynomial, no library call), so that loops of it run on vector lanes: inside erfc
//! ([`super::erfc`]) and over whole slices ([`exp_non_positive_each`]).

use super::exp_table::{EXP2_SIXTY_FOURTHS, LN2_64_HEAD, LN2_64_TAIL};

/// e^x for −1000 ≤ x ≤ 0, in plain arithmetic (no library call, so that a loop of it
/// compiles to vector instructions):
/// ```text
/// e^x = 2^m · 2^{j/64} · e^r,   n = round(64x/ln 2) = 64m + j (0 ≤ j < 64),   r = x − n·ln(2)/64
/// ```
/// with |r| ≤ ln(2)/128 (plus the rounding of 64x/ln 2), `x − n·LN2_64_HEAD` exact
/// (Sterbenz; the head has 36 bits and |n| < 2¹⁷), e^r by its Taylor polynomial of degree 6
/// (truncation below 3e-20 relative) and 2^{j/64} from a correctly rounded table.
///
/// # Accuracy
/// About 2 ulps relative where the result is normal (x ≥ −708): the table (½ ulp), the
/// polynomial's rounding (about ½ ulp) and their product (½ ulp); the scaling by 2^m is exact
/// there. Below, the result is subnormal and rounded once, at the last product.
#[inline(always)]
pub(crate) fn exp_non_positive(x: f64) -> f64 {
    // Adding 1.5·2⁵² rounds to the nearest integer n (|64x/ln 2| < 2⁵¹), which then sits in
    // the low bits of the sum (two's complement, as 2⁵¹ is a multiple of 64).
    const SHIFTER: f64 = 6_755_399_441_055_744.0;
    let shifted = x * (64.0 / std::f64::consts::LN_2) + SHIFTER;
    let n = shifted - SHIFTER;
    let r = (x - n * LN2_64_HEAD) - n * LN2_64_TAIL;
    let j = shifted.to_bits() & 63;
    let er = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // 2^{m+512} from its bits, m = (n − j)/64 ≥ −1443 (exponent field m + 1535 > 0), and then
    // 2^{−512}: exact while the result is normal, its only rounding where it is subnormal.
    let n_bits = shifted.to_bits().wrapping_sub(SHIFTER.to_bits());
    let scale = f64::from_bits((n_bits.wrapping_sub(j) << 46).wrapping_add(1535 << 52));
    const TWO_TO_MINUS_512: f64 = 7.458340731200207e-155;
    EXP2_SIXTY_FOURTHS[j as usize] * er * scale * TWO_TO_MINUS_512
}

crate::numeric::wide_loops::dispatch_wide! {
    /// `values[i] = e^{values[i]}` for arguments ≤ 0, each as [`exp_non_positive`] gives it
    /// (arguments below −1000 taken as −1000: the result is 0 either way; NaN stays NaN):
    /// the loop has no library call, so it runs on vector lanes (four on AVX2, eight on
    /// AVX-512) with the same values bit for bit.
    ///
    /// # Guarantee
    /// Within 4 ulps of e^x relative where the result is a normal double (x ≥ −708): 3 ulps
    /// of the platform's exponential (tested on a dense grid), itself within an ulp.
    pub(crate) fn exp_non_positive_each(values: &mut [f64]) = exp_non_positive_each_kernel;
}

/// The body of [`exp_non_positive_each`].
#[inline(always)]
fn exp_non_positive_each_kernel(values: &mut [f64]) {
    for value in values {
        // (A comparison, not `max`: NaN must stay NaN.)
        let x = if *value < -1000.0 { -1000.0 } else { *value };
        *value = exp_non_positive(x);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Relative difference, in units of the result's ulp (2⁻⁵² relative).
    pub(crate) fn ulps(ours: f64, reference: f64) -> f64 {
        if ours == reference {
            return 0.0;
        }
        (ours - reference).abs() / (reference.abs() * f64::EPSILON)
    }

    /// The largest [`ulps`] of `ours` from `reference` over the n + 1 evenly spaced points
    /// of [from, to], and where.
    pub(crate) fn largest_ulps(
        from: f64,
        to: f64,
        n: usize,
        ours: impl Fn(f64) -> f64,
        reference: impl Fn(f64) -> f64,
    ) -> (f64, f64) {
        let mut worst = (0.0, from);
        for i in 0..=n {
            let x = from + (to - from) * i as f64 / n as f64;
            let difference = ulps(ours(x), reference(x));
            if difference > worst.0 {
                worst = (difference, x);
            }
        }
        worst
    }

    /// The exponential against the platform's (within an ulp) on a dense grid of 2·10⁶
    /// points over [−708, 0] where e^x is normal (within 3 ulps), and over [−1000, −708] in
    /// absolute terms (subnormal results, within two of the smallest subnormal).
    #[test]
    fn exponential_agrees_with_the_platform() {
        let worst = largest_ulps(0.0, -708.0, 2_000_000, exp_non_positive, f64::exp);
        println!(
            "largest difference from exp: {:.2} ulps at x = {}",
            worst.0, worst.1
        );
        assert!(worst.0 <= 3.0, "{worst:?}");
        for i in 0..=100_000 {
            let x = -708.0 - 292.0 * i as f64 / 100_000.0;
            let (ours, platform) = (exp_non_positive(x), x.exp());
            assert!(
                (ours - platform).abs() <= 2.0 * f64::from_bits(1),
                "{x}: {ours} {platform}"
            );
        }
        // Small arguments, both exact ends, and the table's steps.
        for x in [
            0.0, -1e-300, -1e-20, -1e-10, -1e-5, -0.005, -1.0, -700.0, -708.0, -1000.0,
        ] {
            assert!(
                ulps(exp_non_positive(x), x.exp()) <= 3.0 || x < -708.0,
                "{x}"
            );
        }
        assert_eq!(exp_non_positive(0.0), 1.0);
        assert_eq!(exp_non_positive(-0.0), 1.0);
        for j in 0..64 {
            let x = -(j as f64) * std::f64::consts::LN_2 / 64.0;
            assert!(ulps(exp_non_positive(x), x.exp()) <= 3.0, "{x}");
        }
    }

    /// The batch gives every point's value bit for bit (a dense grid over [−1100, 0], the
    /// table's steps, both zeros, −1000 and below, NaN), in every build the processor can run
    /// (baseline, AVX2, AVX-512).
    #[test]
    fn the_batch_is_one_call_per_point() {
        crate::numeric::wide_loops::for_each_tier(|_| {
            let mut points: Vec<f64> = (0..=110_003)
                .map(|i| -1100.0 * i as f64 / 110_003.0)
                .collect();
            points.extend((0..64).map(|j| -(j as f64) * std::f64::consts::LN_2 / 64.0));
            points.extend([0.0, -0.0, -1000.0, -1000.5, -1e300, f64::NEG_INFINITY]);
            let mut batch = points.clone();
            exp_non_positive_each(&mut batch);
            for (&x, &value) in points.iter().zip(&batch) {
                let one = exp_non_positive(if x < -1000.0 { -1000.0 } else { x });
                assert_eq!(value.to_bits(), one.to_bits(), "{x}");
                if x < -1000.0 {
                    assert_eq!(value, 0.0, "{x}");
                }
            }
            let mut nan = [f64::NAN, -1.0];
            exp_non_positive_each(&mut nan);
            assert!(nan[0].is_nan());
            assert_eq!(nan[1], exp_non_positive(-1.0));
        });
    }
}
