//! The binomial distribution: log-probabilities accurate at any number of trials, and
//! certified brackets on its tails.
//!
//! For X ~ Binomial(n, p):
//! ```text
//! P(X = k) = C(n, k) pᵏ (1−p)ⁿ⁻ᵏ
//! ln P(X = k) = stirlerr(n) − stirlerr(k) − stirlerr(n−k) − bd0(k, np) − bd0(n−k, n(1−p))
//!               − ½ ln(2π k (n−k)/n)                                   (0 < k < n)
//! ```
//! Loader's saddle-point form: `stirlerr` is the error of Stirling's formula and `bd0` the
//! deviance `x ln(x/m) + m − x`, both computed without cancellation, so the log-probability
//! keeps a few ulps per nat at n = 10¹², where differences of `lgamma` would lose six digits.
//!
//! Tails are sums of the probability mass function from k outward on the side where it
//! decreases (upward above the mode, downward below it), terms by the ratio recurrence
//! `P(X=j+1)/P(X=j) = (n−j)/(j+1) · p/(1−p)`. The sum stops once the omitted terms, bounded by
//! a geometric series of the current ratio (the ratios only fall further out), are below
//! 2⁻⁶⁰ of what was summed, or after [`MAX_TAIL_TERMS`] terms; the bound on what was left is
//! added to the upper end of the bracket. A tail on the side of the mode is one minus the
//! other tail.
//!
//! # Guarantee
//! [`Binomial::ln_upper_tail`] brackets `ln P(X ≥ k)`: the omitted terms are bounded
//! rigorously, and floating-point error by a budget from the analysis of the steps (Loader's
//! log-probability to 512 ulps of the size of its terms, 4 ulps per recurrence step), not a
//! machine-checked proof; checked against direct log-space sums in the tests.
//!
//! # References
//! Loader, "Fast and accurate computation of binomial probabilities", 2000 (the `dbinom`
//! algorithm of R).

use crate::bound::Bracket;
use crate::error::{Error, Result};

/// Unit round-off of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// Omitted tail mass is below this fraction of what was summed (2⁻⁶⁰).
const TAIL_TRUNCATION: f64 = 8.673_617_379_884_035e-19;

/// Most terms summed for one tail; past it the geometric bound covers the rest (valid, looser).
pub const MAX_TAIL_TERMS: u64 = 1 << 24;

/// Largest number of trials: every count is then exact in f64.
pub const MAX_TRIALS: u64 = 1 << 53;

/// Stirling-series error `ln n! − (n + ½) ln n + n − ½ ln(2π)` for n = 0..=15 (mpmath at 40
/// digits, rounded to the nearest double; 0 for n = 0 as in Loader's table).
const STIRLERR_TABLE: [f64; 16] = [
    0.0,
    0.08106146679532726,
    0.0413406959554093,
    0.02767792568499834,
    0.020790672103765093,
    0.016644691189821193,
    0.013876128823070748,
    0.01189670994589177,
    0.010411265261972096,
    0.009255462182712733,
    0.00833056343336287,
    0.007573675487951841,
    0.00694284010720953,
    0.006408994188004207,
    0.0059513701127588475,
    0.005554733551962801,
];

/// `ln n! − (n + ½) ln n + n − ½ ln(2π)` (Loader 2000).
pub(crate) fn stirlerr(n: u64) -> f64 {
    const S0: f64 = 1.0 / 12.0;
    const S1: f64 = 1.0 / 360.0;
    const S2: f64 = 1.0 / 1260.0;
    const S3: f64 = 1.0 / 1680.0;
    const S4: f64 = 1.0 / 1188.0;
    if n <= 15 {
        return STIRLERR_TABLE[n as usize];
    }
    let n = n as f64;
    let nn = n * n;
    if n > 500.0 {
        (S0 - S1 / nn) / n
    } else if n > 80.0 {
        (S0 - (S1 - S2 / nn) / nn) / n
    } else if n > 35.0 {
        (S0 - (S1 - (S2 - S3 / nn) / nn) / nn) / n
    } else {
        (S0 - (S1 - (S2 - (S3 - S4 / nn) / nn) / nn) / nn) / n
    }
}

/// The deviance term `x ln(x/m) + m − x ≥ 0` without cancellation (Loader 2000); `ln_m` is
/// used when `m` is below the normal range.
pub(crate) fn bd0(x: f64, m: f64, ln_m: f64) -> f64 {
    if m >= f64::MIN_POSITIVE && (x - m).abs() < 0.1 * (x + m) {
        let mut v = (x - m) / (x + m);
        let mut s = (x - m) * v;
        let mut ej = 2.0 * x * v;
        v *= v;
        for j in 1..1000 {
            ej *= v;
            let s1 = s + ej / (2 * j + 1) as f64;
            if s1 == s {
                return s1;
            }
            s = s1;
        }
        s
    } else if m >= 1e-300 {
        x * (x / m).ln() + m - x
    } else {
        x * (x.ln() - ln_m) + m - x
    }
}

/// X ~ Binomial(n, p): the number of successes in n independent trials of probability p.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Binomial {
    trials: u64,
    p: f64,
    /// ln p and ln(1 − p).
    ln_p: f64,
    ln_not_p: f64,
    /// np, n(1 − p) and their logarithms (Loader's deviances need them below f64's range).
    mean: f64,
    ln_mean: f64,
    mean_not: f64,
    ln_mean_not: f64,
    /// p/(1 − p), the odds in the ratio recurrence (+∞ at p = 1).
    odds: f64,
    /// ⌊(n + 1)p⌋ capped at n: a mode (the pmf rises up to it and falls after it).
    mode: u64,
}

impl Binomial {
    /// The binomial distribution of `trials` trials of success probability `p`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `p` unless 0 ≤ p ≤ 1, or `trials` above
    /// [`MAX_TRIALS`].
    pub fn new(trials: u64, p: f64) -> Result<Binomial> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid("p", p, "a probability in [0, 1]"));
        }
        if trials > MAX_TRIALS {
            return Err(Error::invalid(
                "trials",
                trials,
                "at most 2^53 (exact in floating point)",
            ));
        }
        let n = trials as f64;
        let ln_p = p.ln();
        let ln_not_p = (-p).ln_1p();
        // 1 − p is exact for p ≥ ½ (Sterbenz) and within an ulp below.
        let not_p = 1.0 - p;
        let mode = (((n + 1.0) * p).floor() as u64).min(trials);
        Ok(Binomial {
            trials,
            p,
            ln_p,
            ln_not_p,
            mean: n * p,
            ln_mean: n.ln() + ln_p,
            mean_not: n * not_p,
            ln_mean_not: n.ln() + ln_not_p,
            odds: p / not_p,
            mode,
        })
    }

    /// The number of trials n.
    pub fn trials(&self) -> u64 {
        self.trials
    }

    /// The success probability p.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// `ln P(X = k)` (−∞ for k > n).
    pub fn ln_pmf(&self, k: u64) -> f64 {
        self.ln_pmf_with_error(k).0
    }

    /// `ln P(X = k)` and a bound on its absolute floating-point error.
    fn ln_pmf_with_error(&self, k: u64) -> (f64, f64) {
        let n = self.trials;
        if k > n {
            return (f64::NEG_INFINITY, 0.0);
        }
        // The degenerate ends: a product of n equal factors.
        if self.p == 0.0 || self.p == 1.0 || k == 0 || k == n {
            let value = match (k == 0, k == n) {
                (true, true) => 0.0,
                (true, false) => n as f64 * self.ln_not_p,
                (false, true) => n as f64 * self.ln_p,
                (false, false) => f64::NEG_INFINITY,
            };
            // (0·ln 0 is a certain event here, not NaN.)
            let value = if value.is_nan() { 0.0 } else { value };
            return (value, 4.0 * UNIT_ROUNDOFF * value.abs());
        }
        let x = k as f64;
        let y = (n - k) as f64;
        let d1 = bd0(x, self.mean, self.ln_mean);
        let d2 = bd0(y, self.mean_not, self.ln_mean_not);
        let lc = stirlerr(n) - stirlerr(k) - stirlerr(n - k) - d1 - d2;
        let lf = (2.0 * std::f64::consts::PI).ln() + x.ln() + (-x / n as f64).ln_1p();
        let value = lc - 0.5 * lf;
        let error = 512.0 * UNIT_ROUNDOFF * (d1 + d2 + lf.abs() + 1.0);
        (value, error)
    }

    /// A bracket on `ln P(X ≥ k)`.
    ///
    /// # Guarantee
    /// `lower ≤ ln P(X ≥ k) ≤ upper` (module docs); both ends are 0 for k = 0 and −∞ for
    /// k > n.
    pub fn ln_upper_tail(&self, k: u64) -> Bracket {
        if k == 0 {
            return Bracket {
                upper: 0.0,
                lower: 0.0,
            };
        }
        if k > self.trials || self.p == 0.0 {
            return Bracket {
                upper: f64::NEG_INFINITY,
                lower: f64::NEG_INFINITY,
            };
        }
        if self.p == 1.0 {
            // X = n surely, and k ≤ n here.
            return Bracket {
                upper: 0.0,
                lower: 0.0,
            };
        }
        if k > self.mode {
            return self.summed_tail(k, Direction::Up);
        }
        // P(X ≥ k) = 1 − P(X ≤ k − 1), the latter below the mode.
        let below = self.summed_tail(k - 1, Direction::Down);
        Bracket {
            upper: ln_one_minus(below.lower.exp()),
            lower: ln_one_minus(below.upper.exp()),
        }
    }

    /// A bracket on `P(X ≥ k)` (the log bracket exponentiated, rounded outward).
    pub fn upper_tail(&self, k: u64) -> Bracket {
        let ln = self.ln_upper_tail(k);
        if ln.upper == ln.lower {
            // Exact (a certain or impossible event): e⁰ and e^{−∞} are exact too.
            let p = ln.upper.exp();
            return Bracket { upper: p, lower: p };
        }
        Bracket {
            upper: (ln.upper.exp() * (1.0 + 4.0 * UNIT_ROUNDOFF)).min(1.0),
            lower: (ln.lower.exp() * (1.0 - 4.0 * UNIT_ROUNDOFF)).min(1.0),
        }
    }

    /// A bracket on ln of `P(X ≥ k)` (`Up`) or `P(X ≤ k)` (`Down`) summed from k outward; k
    /// must lie on the side of the mode where the terms fall (checked by the ratios: the
    /// geometric bound is used only once a ratio is below 1).
    fn summed_tail(&self, k: u64, direction: Direction) -> Bracket {
        let (ln_first, first_error) = self.ln_pmf_with_error(k);
        if ln_first == f64::NEG_INFINITY {
            return Bracket {
                upper: f64::NEG_INFINITY,
                lower: f64::NEG_INFINITY,
            };
        }
        let n = self.trials;
        let mut sum = 0.0;
        let mut term = 1.0;
        let mut j = k;
        let mut steps = 0u64;
        let remainder = loop {
            sum += term;
            let ratio = match direction {
                Direction::Up if j < n => (n - j) as f64 / (j + 1) as f64 * self.odds,
                Direction::Down if j > 0 => j as f64 / (n - j + 1) as f64 / self.odds,
                _ => break 0.0,
            };
            term *= ratio;
            j = match direction {
                Direction::Up => j + 1,
                Direction::Down => j - 1,
            };
            steps += 1;
            // Every later ratio is at most this one (computed within a few ulps).
            let room = 1.0 - ratio - 8.0 * UNIT_ROUNDOFF;
            let bound = if room > 0.0 {
                term / room
            } else {
                f64::INFINITY
            };
            if term == 0.0 || bound <= TAIL_TRUNCATION * sum {
                break bound;
            }
            if steps >= MAX_TAIL_TERMS {
                break bound;
            }
        };
        // Each term carries at most 4 roundings per step, the sum one more per term.
        let relative = 5.0 * UNIT_ROUNDOFF * (steps as f64 + 1.0);
        let ln_sum = sum.ln();
        Bracket {
            upper: ln_first + first_error + ln_sum + relative.ln_1p() + (remainder / sum).ln_1p(),
            lower: ln_first - first_error + ln_sum + (-relative).ln_1p(),
        }
    }
}

/// Which way a tail runs from its first term.
#[derive(Debug, Clone, Copy)]
enum Direction {
    Up,
    Down,
}

/// `ln(1 − x)` for x ≥ 0 (−∞ for x ≥ 1).
fn ln_one_minus(x: f64) -> f64 {
    if x >= 1.0 {
        f64::NEG_INFINITY
    } else {
        (-x).ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ln P(X ≥ k)` by a direct log-space sum of `ln C(n, j) + j ln p + (n−j) ln(1−p)`
    /// with `ln C` from exact factorial logarithms (small n only).
    fn direct_ln_upper_tail(n: u64, p: f64, k: u64) -> f64 {
        let ln_fact: Vec<f64> = std::iter::once(0.0)
            .chain((1..=n).scan(0.0, |acc, i| {
                *acc += (i as f64).ln();
                Some(*acc)
            }))
            .collect();
        let terms: Vec<f64> = (k..=n)
            .map(|j| {
                ln_fact[n as usize] - ln_fact[j as usize] - ln_fact[(n - j) as usize]
                    + j as f64 * p.ln()
                    + (n - j) as f64 * (-p).ln_1p()
            })
            .collect();
        crate::numeric::log_space::log_sum_exp(&terms)
    }

    #[test]
    fn tails_match_direct_sums_for_small_n() {
        for n in [1u64, 2, 5, 17, 60, 200] {
            for p in [1e-9, 0.003, 0.1, 0.5, 0.77, 0.999] {
                let b = Binomial::new(n, p).unwrap();
                for k in 0..=n + 1 {
                    let bracket = b.ln_upper_tail(k);
                    if k > n {
                        assert_eq!(bracket.upper, f64::NEG_INFINITY);
                        continue;
                    }
                    let direct = direct_ln_upper_tail(n, p, k);
                    let slack = 1e-12 * (1.0 + direct.abs());
                    assert!(
                        bracket.lower <= direct + slack && direct - slack <= bracket.upper,
                        "n {n} p {p} k {k}: {bracket:?} vs {direct}"
                    );
                    assert!(
                        bracket.upper - bracket.lower < 1e-9 * (1.0 + direct.abs()),
                        "n {n} p {p} k {k}: bracket {bracket:?} too wide"
                    );
                }
            }
        }
    }

    #[test]
    fn known_values() {
        let b = Binomial::new(10, 0.5).unwrap();
        let t = b.upper_tail(8);
        let exact = 56.0 / 1024.0;
        assert!(
            t.lower <= exact && exact <= t.upper && t.upper - t.lower < 1e-11,
            "{t:?}"
        );
        let certain = Binomial::new(7, 1.0).unwrap();
        assert_eq!(certain.upper_tail(7).lower, 1.0);
        assert_eq!(certain.upper_tail(8).upper, 0.0);
    }

    #[test]
    fn huge_counts_stay_finite_and_ordered() {
        let b = Binomial::new(1_000_000_000_000, 256.0 / 60_000.0).unwrap();
        let mean = 1e12 * 256.0 / 60_000.0;
        let mut previous = 0.0;
        for k in [
            1u64,
            mean as u64 - 100_000,
            mean as u64,
            mean as u64 + 200_000,
        ] {
            let t = b.ln_upper_tail(k);
            assert!(
                t.lower <= t.upper && t.upper <= previous + 1e-12,
                "k {k}: {t:?}"
            );
            assert!(t.lower.is_finite(), "k {k}: {t:?}");
            previous = t.upper;
        }
        // About one half at the mean (within the normal approximation's accuracy).
        let half = b.upper_tail(mean as u64);
        assert!((half.upper - 0.5).abs() < 1e-3, "{half:?}");
    }
}
