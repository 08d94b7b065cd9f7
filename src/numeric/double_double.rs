//! Double-double arithmetic: a number held as the unevaluated sum `hi + lo` of two doubles
//! (`|lo| ≤ ulp(hi)/2`), about 106 significant bits, from error-free transformations of
//! IEEE double operations.
//!
//! Used by [`crate::numeric::double_double_fft`], whose FFT powers carry absolute errors
//! near 1e-30 instead of 1e-16: small enough to read a δ of 1e-15 from the far tail of a
//! composition without tilting.
//!
//! # Guarantee
//! Without underflow (every operand and result either 0 or of magnitude above 2^-900),
//! [`Dd::add`] and [`Dd::mul`] return the exact result times (1 + ρ), |ρ| ≤ [`UNIT`]
//! (= 2^-100; the published bounds are 3u² for the sum and 5u² for the product, u = 2^-53,
//! below 2^-104). Below 2^-900, error-free transformations may lose exactness: the absolute
//! error is then below [`UNDERFLOW_SLACK`] per operation, which callers add to their bounds.
//!
//! Products use Dekker's splitting (no fused multiply-add: the crate is built for the
//! baseline instruction set), valid for operands below 2^995 in magnitude.
//!
//! # References
//! Dekker, "A floating-point technique for extending the available precision", Numer.
//! Math. 18 (1971). Joldes, Muller & Popescu, "Tight and rigorous error bounds for basic
//! building blocks of double-word arithmetic", ACM TOMS 44(2) (2017): Algorithm 6
//! (AccurateDWPlusDW, relative error ≤ 3u² + 13u³) and Algorithm 10 (DWTimesDW2, ≤ 5u²).

use std::ops::{Add, Mul, Neg, Sub};

/// A bound on the relative error of one [`Dd`] addition or multiplication (2^-100).
pub(crate) const UNIT: f64 = 7.888609052210118e-31;

/// A bound on the absolute error one operation may add when its operands or result lie
/// below 2^-900, where the error-free transformations may lose exactness (2^-890).
pub(crate) const UNDERFLOW_SLACK: f64 = 1.2e-268;

/// A double-double number `hi + lo`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Dd {
    pub(crate) hi: f64,
    pub(crate) lo: f64,
}

/// `(s, e)` with `s = fl(a + b)` and `s + e = a + b` exactly (Knuth's TwoSum).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// [`two_sum`] when `|a| ≥ |b|` (or a = 0): three operations.
#[inline(always)]
fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

/// Veltkamp's split of `a` into two halves of 26 bits each: `a = h + l` exactly.
#[inline(always)]
fn split(a: f64) -> (f64, f64) {
    const FACTOR: f64 = 134_217_729.0; // 2^27 + 1
    let c = FACTOR * a;
    let h = c - (c - a);
    (h, a - h)
}

/// `(p, e)` with `p = fl(a·b)` and `p + e = a·b` exactly (Dekker's TwoProduct).
#[inline(always)]
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    let e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    (p, e)
}

/// How a product's rounding error is found: [`Dekker`]'s splitting (17 operations, any
/// CPU) or a [`Fused`] multiply-add (2 operations, on CPUs with FMA). Both are exact, `p +
/// e = a·b` (away from underflow, see [`UNDERFLOW_SLACK`]), so every result computed with
/// either is the same bit for bit: the choice is speed only.
pub(crate) trait TwoProduct: Copy + Send + Sync {
    /// `(fl(a·b), a·b − fl(a·b))`.
    fn two_prod(a: f64, b: f64) -> (f64, f64);
}

/// [`TwoProduct`] by Veltkamp's split and Dekker's product ([`two_prod`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dekker;

/// [`TwoProduct`] by one fused multiply-add, `e = fma(a, b, −p)`: fast only where the code
/// is compiled for a CPU with FMA (otherwise `mul_add` is a library call, still exact).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fused;

impl TwoProduct for Dekker {
    #[inline(always)]
    fn two_prod(a: f64, b: f64) -> (f64, f64) {
        two_prod(a, b)
    }
}

impl TwoProduct for Fused {
    #[inline(always)]
    fn two_prod(a: f64, b: f64) -> (f64, f64) {
        let p = a * b;
        (p, a.mul_add(b, -p))
    }
}

impl Dd {
    pub(crate) const ZERO: Dd = Dd { hi: 0.0, lo: 0.0 };
    pub(crate) const ONE: Dd = Dd { hi: 1.0, lo: 0.0 };

    /// An exact double.
    #[inline(always)]
    pub(crate) const fn from_f64(x: f64) -> Dd {
        Dd { hi: x, lo: 0.0 }
    }

    /// The nearest double (`hi + lo` rounded: within u·|x| of the value).
    #[inline(always)]
    pub(crate) fn to_f64(self) -> f64 {
        self.hi + self.lo
    }

    /// `self / d` for a double `d ≠ 0` (two correction steps: relative error within a few
    /// u², counted as one [`UNIT`]).
    #[inline]
    pub(crate) fn div_f64(self, d: f64) -> Dd {
        let q1 = self.hi / d;
        let (p, e) = two_prod(q1, d);
        let r = (self.hi - p - e) + self.lo;
        let q2 = r / d;
        let (hi, lo) = fast_two_sum(q1, q2);
        Dd { hi, lo }
    }

    /// Multiplication by a power of two (exact).
    #[inline(always)]
    pub(crate) fn scale(self, power_of_two: f64) -> Dd {
        Dd {
            hi: self.hi * power_of_two,
            lo: self.lo * power_of_two,
        }
    }

    /// |self| as a double, rounded up a little (for error bounds).
    #[inline]
    pub(crate) fn abs_upper(self) -> f64 {
        (self.hi.abs() + self.lo.abs()) * (1.0 + f64::EPSILON)
    }
}

impl Add for Dd {
    type Output = Dd;
    /// AccurateDWPlusDW.
    #[inline(always)]
    fn add(self, other: Dd) -> Dd {
        let (sh, sl) = two_sum(self.hi, other.hi);
        let (th, tl) = two_sum(self.lo, other.lo);
        let c = sl + th;
        let (vh, vl) = fast_two_sum(sh, c);
        let w = tl + vl;
        let (hi, lo) = fast_two_sum(vh, w);
        Dd { hi, lo }
    }
}

impl Neg for Dd {
    type Output = Dd;
    #[inline(always)]
    fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }
}

impl Sub for Dd {
    type Output = Dd;
    #[inline(always)]
    fn sub(self, other: Dd) -> Dd {
        self + (-other)
    }
}

impl Dd {
    /// DWTimesDW2 (the cross terms summed in doubles), the exact product of the high parts
    /// found by `T` (the same bits for every `T`).
    #[inline(always)]
    pub(crate) fn mul_with<T: TwoProduct>(self, other: Dd) -> Dd {
        let (ch, cl1) = T::two_prod(self.hi, other.hi);
        let tl0 = self.lo * other.lo;
        let tl1 = self.hi * other.lo + tl0;
        let cl2 = self.lo * other.hi + tl1;
        let cl3 = cl1 + cl2;
        let (hi, lo) = fast_two_sum(ch, cl3);
        Dd { hi, lo }
    }
}

impl Mul for Dd {
    type Output = Dd;
    /// [`Dd::mul_with`] by [`Dekker`]'s product.
    #[inline(always)]
    fn mul(self, other: Dd) -> Dd {
        self.mul_with::<Dekker>(other)
    }
}

/// A complex number with double-double parts.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct DdComplex {
    pub(crate) re: Dd,
    pub(crate) im: Dd,
}

/// A bound on the relative error of one [`DdComplex`] product, `√2·(2·UNIT + UNIT²)`
/// rounded up (each part is two rounded products and a rounded sum).
pub(crate) const COMPLEX_PRODUCT_UNIT: f64 = 3.0 * UNIT;

impl DdComplex {
    pub(crate) const ZERO: DdComplex = DdComplex {
        re: Dd::ZERO,
        im: Dd::ZERO,
    };
    pub(crate) const ONE: DdComplex = DdComplex {
        re: Dd::ONE,
        im: Dd::ZERO,
    };

    /// The complex conjugate (exact).
    #[inline(always)]
    pub(crate) fn conj(self) -> DdComplex {
        DdComplex {
            re: self.re,
            im: -self.im,
        }
    }

    /// |self| as a double, rounded up a little (for error bounds).
    #[inline]
    pub(crate) fn abs_upper(self) -> f64 {
        self.re.abs_upper().hypot(self.im.abs_upper()) * (1.0 + 2.0 * f64::EPSILON)
    }
}

impl Add for DdComplex {
    type Output = DdComplex;
    #[inline(always)]
    fn add(self, other: DdComplex) -> DdComplex {
        DdComplex {
            re: self.re + other.re,
            im: self.im + other.im,
        }
    }
}

impl Sub for DdComplex {
    type Output = DdComplex;
    #[inline(always)]
    fn sub(self, other: DdComplex) -> DdComplex {
        DdComplex {
            re: self.re - other.re,
            im: self.im - other.im,
        }
    }
}

impl DdComplex {
    /// The product, each real product by [`Dd::mul_with`] (the same bits for every `T`).
    #[inline(always)]
    pub(crate) fn mul_with<T: TwoProduct>(self, other: DdComplex) -> DdComplex {
        DdComplex {
            re: self.re.mul_with::<T>(other.re) - self.im.mul_with::<T>(other.im),
            im: self.re.mul_with::<T>(other.im) + self.im.mul_with::<T>(other.re),
        }
    }
}

impl Mul for DdComplex {
    type Output = DdComplex;
    /// [`DdComplex::mul_with`] by [`Dekker`]'s product.
    #[inline(always)]
    fn mul(self, other: DdComplex) -> DdComplex {
        self.mul_with::<Dekker>(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A double-double made of dyadic parts (`hi = a·2^-52`, `lo = b·2^-110`, a < 2^53,
    /// b < 2^50) and its exact value as an integer multiple of 2^-110.
    fn dyadic(next: &mut impl FnMut() -> u64) -> (Dd, i128) {
        let a = (next() >> 11) | (1 << 52); // 53 bits, leading bit set: hi in [1, 2)
        let b = (next() >> 14) as i128 - (1i128 << 49); // |b| < 2^49
        let hi = a as f64 / (1u64 << 52) as f64;
        let lo = b as f64 * 2f64.powi(-110);
        ((Dd { hi, lo }), ((a as i128) << 58) + b)
    }

    /// The exact value of a double-double of magnitude below 4 as a multiple of 2^-110,
    /// or None if it is not such a multiple.
    fn exact(x: Dd) -> Option<i128> {
        let scale = 2f64.powi(110);
        let (h, l) = (x.hi * scale, x.lo * scale);
        (h.fract() == 0.0 && l.fract() == 0.0).then(|| h as i128 + l as i128)
    }

    #[test]
    fn sums_are_within_the_unit_of_the_exact_sum() {
        let mut next = crate::numeric::xorshift(0x5eed_d00b);
        for _ in 0..10_000 {
            let (a, ea) = dyadic(&mut next);
            let (b, eb) = dyadic(&mut next);
            for (x, want) in [(a + b, ea + eb), (a - b, ea - eb)] {
                let got = exact(x).expect("a sum of multiples of 2^-110 below 4 is one");
                let error = (got - want).abs() as f64;
                assert!(
                    error <= UNIT * (want.abs() as f64),
                    "{a:?} ± {b:?}: off by {error:e} units of 2^-110 on {want}"
                );
            }
        }
    }

    /// An integer below 2^63 in magnitude as an exact double-double (`hi` its nearest
    /// double, `lo` the exact remainder, up to 10 bits).
    fn integer(next: &mut impl FnMut() -> u64) -> (Dd, i128) {
        let n = (next() >> 1) as i128 * if next() & 1 == 0 { 1 } else { -1 };
        let hi = n as f64;
        let lo = (n - hi as i128) as f64;
        (Dd { hi, lo }, n)
    }

    #[test]
    fn products_are_within_the_unit_of_the_exact_product() {
        let mut next = crate::numeric::xorshift(0xfeed_beef);
        for _ in 0..10_000 {
            let (a, ea) = integer(&mut next);
            let (b, eb) = integer(&mut next);
            let want = ea * eb; // below 2^126: exact
            let got = a * b;
            // hi is an integer (it is above 2^53); the error is (hi − want) + lo.
            let error = ((got.hi as i128 - want) as f64 + got.lo).abs();
            assert!(
                error <= UNIT * (want as f64).abs(),
                "{a:?}·{b:?}: off by {error:e} on {want}"
            );
        }
    }

    #[test]
    fn division_by_a_double_inverts_the_product() {
        let mut next = crate::numeric::xorshift(7);
        for _ in 0..10_000 {
            let (a, _) = dyadic(&mut next);
            let d = ((next() >> 40) | 1) as f64;
            let q = a.div_f64(d);
            let back = q * Dd::from_f64(d) - a;
            assert!(
                back.to_f64().abs() <= 3.0 * UNIT * a.hi.abs(),
                "{a:?}/{d}: residual {:e}",
                back.to_f64()
            );
        }
    }

    #[test]
    fn complex_products_are_within_their_unit() {
        // (1 + 2^-60 i)·(3 − 2^-70 i) = 3 + 2^-130 + (3·2^-60 − 2^-70) i: exact parts.
        let x = DdComplex {
            re: Dd::ONE,
            im: Dd::from_f64(2f64.powi(-60)),
        };
        let y = DdComplex {
            re: Dd::from_f64(3.0),
            im: Dd::from_f64(-(2f64.powi(-70))),
        };
        let z = x * y;
        assert_eq!(z.re, Dd::from_f64(3.0) + Dd::from_f64(2f64.powi(-130)));
        let im = Dd::from_f64(3.0 * 2f64.powi(-60)) - Dd::from_f64(2f64.powi(-70));
        assert!((z.im - im).to_f64().abs() <= COMPLEX_PRODUCT_UNIT * im.hi.abs());
    }
}
