//! Shared tolerances and small helpers for the integration tests.
//!
//! Every tolerance used by an assertion is defined here, once, with the reason for its size.
//! Each test file includes this module with `mod support;` and uses only part of it.
#![allow(dead_code)]

use pld_accountant::GridPmf;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Absolute agreement of two ways of computing the same convolution (FFT vs direct, tree
/// shape, order) on PMFs of total mass ≤ 1. The FFT round-off floor is ≈ 1e-16 per entry
/// (measured on binomial and DP-SGD powers), so 1e-12 leaves four orders of magnitude.
pub const CONVOLUTION_ABS: f64 = 1e-12;

/// Absolute agreement of probabilities that are products/powers of masses ≤ 1 computed in two
/// algebraically equal ways (e.g. the infinity mass `1 − (1 − m)^k`).
pub const MASS_ABS: f64 = 1e-12;

/// How far the total mass of an upper PMF may be from 1 (mass is conserved up to rounding), and how far a
/// lower PMF's total mass, or any PMF's `Σ p e^{−l}`, may exceed 1.
pub const TOTAL_MASS_ABS: f64 = 1e-12;

/// Rounding allowance on an *exact* δ reference computed in f64, per unit of `max(1, e^ε)`:
/// closed forms such as `F_P(x*) − e^ε F_Q(x*)` and `1 − e^ε + e^ε δ(−ε)` cancel, leaving an
/// absolute error of a few ulps of `max(1, e^ε)` (plus the CDFs' own relative error ≲ 1e-15).
pub const EXACT_DELTA_ABS: f64 = 1e-14;

/// Slack allowed when checking that a δ(ε) curve read from a PMF is non-increasing: only
/// floating-point summation noise, relative to the value.
pub const MONOTONE_RELATIVE: f64 = 1e-12;

/// Seed of every random number generator in the test suite.
pub const SEED: u64 = 0x5eed_0fd0_7a11;

/// A ChaCha8 generator with a fixed seed derived from [`SEED`] and a per-test stream id, so
/// tests do not share random streams.
pub fn rng(stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    rng.set_stream(stream);
    rng
}

/// How the entries of a random PMF are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Independent uniform(0, 1) entries.
    Uniform,
    /// Entries `10^{−U(0, 30)}`: thirty orders of magnitude of dynamic range.
    HugeRange,
    /// Mostly exact zeros, a few uniform spikes.
    Sparse,
    /// A discretized bell `exp(−(i − c)²/(2w²))`, like a Gaussian PLD (smooth, deep tails).
    Bell,
}

/// All shapes, to cycle through.
pub const SHAPES: [Shape; 4] = [Shape::Uniform, Shape::HugeRange, Shape::Sparse, Shape::Bell];

/// A random non-negative vector of length `n` with total mass `mass` (≤ 1).
pub fn random_pmf(rng: &mut ChaCha8Rng, n: usize, shape: Shape, mass: f64) -> Vec<f64> {
    let mut v: Vec<f64> = match shape {
        Shape::Uniform => (0..n).map(|_| rng.gen::<f64>()).collect(),
        Shape::HugeRange => (0..n)
            .map(|_| 10f64.powf(-rng.gen_range(0.0..30.0)))
            .collect(),
        Shape::Sparse => (0..n)
            .map(|_| {
                if rng.gen_bool(0.1) {
                    rng.gen::<f64>()
                } else {
                    0.0
                }
            })
            .collect(),
        Shape::Bell => {
            let centre = rng.gen_range(0.0..n as f64);
            let width = rng.gen_range(0.5..(n as f64 / 4.0).max(1.0));
            (0..n)
                .map(|i| (-((i as f64 - centre) / width).powi(2) / 2.0).exp())
                .collect()
        }
    };
    if v.iter().all(|&x| x == 0.0) {
        let i = rng.gen_range(0..n);
        v[i] = 1.0;
    }
    let total: f64 = v.iter().sum();
    for x in &mut v {
        *x *= mass / total;
    }
    v
}

/// Double-double number `hi + lo` (|lo| ≤ ulp(hi)/2), for exact-to-~1e-32 reference sums.
#[derive(Debug, Clone, Copy, Default)]
struct DoubleDouble {
    hi: f64,
    lo: f64,
}

impl DoubleDouble {
    /// `self + a·b`, with the product and the sum each error-free up to ~2^-106 relative.
    fn add_product(self, a: f64, b: f64) -> DoubleDouble {
        let p = a * b;
        let p_err = a.mul_add(b, -p);
        // TwoSum(hi, p).
        let s = self.hi + p;
        let bb = s - self.hi;
        let s_err = (self.hi - (s - bb)) + (p - bb);
        let lo = self.lo + p_err + s_err;
        let hi = s + lo;
        DoubleDouble {
            hi,
            lo: lo - (hi - s),
        }
    }
}

/// Linear convolution computed in double-double arithmetic and rounded once: a reference
/// whose entries are correctly rounded up to a relative error of about 1e-30.
pub fn convolve_reference(a: &[f64], b: &[f64]) -> Vec<f64> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let mut out = vec![DoubleDouble::default(); a.len() + b.len() - 1];
    for (i, &ai) in a.iter().enumerate() {
        if ai == 0.0 {
            continue;
        }
        for (o, &bj) in out[i..].iter_mut().zip(b) {
            *o = o.add_product(ai, bj);
        }
    }
    out.iter().map(|d| d.hi + d.lo).collect()
}

/// Largest absolute entry-wise difference of two equally long vectors.
pub fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "vectors to compare differ in length");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// ℓ2 norm of the difference of two equally long vectors.
pub fn l2_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "vectors to compare differ in length");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// The grid of a PMF in half-step units: entry i has loss `(start + 2i)·step/2`.
fn half_step_start(pmf: &GridPmf) -> i64 {
    2 * pmf.offset() + i64::from(pmf.half_offset())
}

/// Largest difference between two PMFs on the same grid, compared by loss value (not by
/// index): losses present in only one of them count against probability 0 in the other.
/// Also checks that both PMFs' `loss(i)` agree with their grid description.
///
/// # Panics
/// If the steps differ or the two grids are not aligned (a loss of one PMF lies between grid
/// points of the other).
pub fn max_abs_diff_by_loss(a: &GridPmf, b: &GridPmf) -> f64 {
    assert_eq!(a.step(), b.step(), "PMFs to compare have different steps");
    let (sa, sb) = (half_step_start(a), half_step_start(b));
    assert!(
        (sa - sb) % 2 == 0,
        "PMF grids are shifted by half a step: offsets {} (half {}) and {} (half {})",
        a.offset(),
        a.half_offset(),
        b.offset(),
        b.half_offset()
    );
    let lo = sa.min(sb);
    let hi = (sa + 2 * a.len() as i64).max(sb + 2 * b.len() as i64);
    let at = |pmf: &GridPmf, start: i64, half_index: i64| -> f64 {
        let i = (half_index - start) / 2;
        if half_index < start || i >= pmf.len() as i64 {
            0.0
        } else {
            pmf.probs()[i as usize]
        }
    };
    let mut worst = 0.0f64;
    let mut x = lo;
    while x < hi {
        worst = worst.max((at(a, sa, x) - at(b, sb, x)).abs());
        x += 2;
    }
    worst
}

/// `1 − e^ε + e^ε·δ_other(−ε)`: the hockey-stick identity `δ_{P‖Q}(ε) = 1 − e^ε + e^ε·δ_{Q‖P}(−ε)` that turns
/// δ of the swapped pair at −ε into δ of this pair at ε.
pub fn swapped_pair_delta(epsilon: f64, other_delta_at_minus_epsilon: f64) -> f64 {
    -epsilon.exp_m1() + epsilon.exp() * other_delta_at_minus_epsilon
}

/// Relative accuracy required of the upper bound against exact δ values (the issue's
/// acceptance: upper − exact ≤ 1e-4·exact wherever δ ≥ 1e-12).
pub const EXACT_DELTA_UPPER_RELATIVE: f64 = 1e-4;

/// Smallest exact δ at which [`EXACT_DELTA_UPPER_RELATIVE`] is required.
pub const EXACT_DELTA_FLOOR: f64 = 1e-12;

/// Accuracy of our standard normal functions against mpmath (a few ulps of musl's erfc,
/// propagated through ln and the asymptotic series).
pub const NORMAL_RELATIVE: f64 = 1e-13;

/// Our upper ε may exceed dp_accounting 0.6.0's connect-the-dots value (same grid, 1e-4) by
/// at most this relative amount; our lower ε must be at least (1 − DP_ACCOUNTING_LOWER) times it.
pub const DP_ACCOUNTING_UPPER: f64 = 1e-6;
/// See [`DP_ACCOUNTING_UPPER`].
pub const DP_ACCOUNTING_LOWER: f64 = 1e-3;
/// Below δ = 1e-6 round-off, which dp_accounting ignores and we charge, dominates both
/// results; ours may then exceed theirs by this relative amount.
pub const DP_ACCOUNTING_TINY_DELTA: f64 = 1e-3;

/// Read a fixture file (path relative to `fixtures/`) as JSON.
pub fn fixture(path: &str) -> serde_json::Value {
    let full = format!("{}/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// A number field of a fixture case; `*_str` (30 digits) is preferred when present, and the
/// string "inf" means +∞.
pub fn number(case: &serde_json::Value, key: &str) -> f64 {
    if let Some(s) = case.get(format!("{key}_str")).and_then(|v| v.as_str()) {
        return s.parse().unwrap_or_else(|e| panic!("{key}_str = {s}: {e}"));
    }
    match &case[key] {
        serde_json::Value::Number(n) => n.as_f64().expect("f64"),
        serde_json::Value::String(s) if s == "inf" => f64::INFINITY,
        other => panic!("{key} is not a number: {other}"),
    }
}

/// ln C(n, k), as a sum of logarithms of ratios.
pub fn log_binomial(n: u64, k: u64) -> f64 {
    (1..=k).map(|i| ((n - k + i) as f64 / i as f64).ln()).sum()
}

/// Smallest ε with Σ mass·(1 − e^{ε − loss})₊ ≤ δ, to 1e-12.
pub fn epsilon_by_bisection(atoms: &[(f64, f64)], delta: f64) -> f64 {
    let delta_at = |epsilon: f64| -> f64 {
        atoms
            .iter()
            .filter(|(loss, _)| *loss > epsilon)
            .map(|(loss, mass)| mass * -(epsilon - loss).exp_m1())
            .sum()
    };
    if delta_at(0.0) <= delta {
        return 0.0;
    }
    let (mut low, mut high) = (0.0, atoms.iter().map(|a| a.0).fold(0.0, f64::max));
    while high - low > 1e-12 {
        let mid = 0.5 * (low + high);
        if delta_at(mid) > delta {
            low = mid;
        } else {
            high = mid;
        }
    }
    low
}

/// Binary randomized response composed `k` times, exactly: the loss is `(k − 2j)ε₀` with
/// probability `C(k, j) p^{k−j} (1−p)^j`, `p = e^{ε₀}/(1 + e^{ε₀})`; ε(δ) by bisection.
pub fn exact_binary_rr_epsilon(epsilon0: f64, k: u64, delta: f64) -> f64 {
    let p = 1.0 / (1.0 + (-epsilon0).exp());
    let atoms: Vec<(f64, f64)> = (0..=k)
        .map(|j| {
            let log_mass = log_binomial(k, j) + (k - j) as f64 * p.ln() + j as f64 * (1.0 - p).ln();
            ((k as f64 - 2.0 * j as f64) * epsilon0, log_mass.exp())
        })
        .collect();
    epsilon_by_bisection(&atoms, delta)
}
