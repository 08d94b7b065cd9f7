//! The optimal ADAPTIVE composition of k ε-bounded-range mechanisms (k exponential
//! mechanisms at one ε), bracketed by dynamic programming on a lattice of losses.
//!
//! **The class.** Every ε-BR pair is a post-processing of a binary pair `B(t)`, t ∈ [0, ε],
//! with losses t (P-mass `p_t = (1 − e^{t−ε})/(1 − e^{−ε})`) and t − ε (Dong, Durfee & Rogers,
//! "Optimal differential privacy composition for exponential mechanisms", ICML 2020). An
//! adaptive analyst picks each step's t from what it has seen, so the optimal δ at ε_g is
//! `V_k(ε_g)` for the value functions
//! ```text
//! V_0(c) = (1 − e^{c})₊,
//! V_j(c) = sup_t  p_t·V_{j−1}(c − t) + (1 − p_t)·V_{j−1}(c − t + ε),
//! ```
//! (δ = E_P[(1 − e^{ε_g − L})₊]; condition on the first output). Dong, Durfee & Rogers show
//! that adaptivity costs more than the best fixed t; this module computes the adaptive value.
//!
//! **Lattice.** With ε = M·h and t restricted to multiples of h, every loss lies on hℤ, and
//! so does c when ε_g does: the recursion is then exact on the lattice.
//! - *Lower bound*: t ∈ {h, 2h, …, (M−1)h}, each `B(mh)` itself (an exponential mechanism with
//!   two candidates attains every B(t)). A strategy that an analyst can run: its δ is below
//!   the optimum.
//! - *Upper bound*: for t ∈ [a, a + h] (a = mh, b = a + h), the pair `H_m` whose trade-off
//!   (ROC) curve is the tangent polygon of the arc of best tests `K(t) = (q_t, p_t)`:
//!   (0,0) → K(b) → V → K(a) → (1,1), the arc's slope at K(t) being `e^{2t−ε}` and V where the
//!   tangents at K(b) and K(a) cross. The arc is concave, so `H_m` dominates every B(t) on the
//!   interval; its losses b, 2b − ε, 2a − ε, a − ε are on the lattice, with P-masses
//!   ```text
//!   (1 − e^{b−ε})/D,  e^{b−ε}·tanh(h/2)/D,  e^{a−ε}·tanh(h/2)/D,  e^{−ε}(e^{a} − 1)/D,
//!   D = 1 − e^{−ε}  (they sum to 1).
//!   ```
//!   `x ↦ x·V(c − ln x)` is convex (a supremum of `E(x − e^{c−L})₊`), so `E_P[V(c − L)]` is an
//!   f-divergence of the step's pair and can only grow from an ε-BR pair to B(t) to `H_m`;
//!   maximizing over m at each lattice point then bounds `V_j` above by induction.
//!
//! Between lattice points δ(ε_g) is, for every strategy, linear in `e^{ε_g}`, so the optimum is
//! convex there: the upper bound interpolates the lattice values linearly in `e^{ε_g}` and the
//! lower bound takes the next lattice point up (δ is non-increasing).
//!
//! **Cost and accuracy.** About `6·k²·M²` operations for all ε_g at once; the lower bound is
//! within O(k·h²) of the optimum, the upper bound O(k·h) above it (`H_m` moves O(h) of mass to
//! the tangent losses): 100 selections at ε = 1, M = 40, δ = 10⁻⁶ give ε ∈ [34.85, 35.43]
//! against [33.29, 48.80] for the composed dominating pair. Rounding: every value is a sum
//! of products of non-negative numbers, a few ulps per level; the ends are widened by
//! 64·(k + 1) ulps.

use crate::bound::Bracket;
use crate::error::{Error, Result};

/// Unit round-off of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// Work budget (multiply-adds) of one bracket: about half a second on one core.
pub const WORK_BUDGET: f64 = 1.5e9;

/// Fewest lattice steps per ε worth running (coarser gives a bracket no better than others).
pub const MIN_INTERVALS: usize = 4;

/// Most lattice steps per ε (finer gains little at the cost of k²·M²).
pub const MAX_INTERVALS: usize = 2048;

/// One lattice's value function at the top level: `values[n]` bounds δ at ε_g = n·h.
#[derive(Debug, Clone, PartialEq)]
struct LatticeDeltas {
    step: f64,
    values: Vec<f64>,
}

impl LatticeDeltas {
    fn at(&self, n: usize) -> f64 {
        self.values.get(n).copied().unwrap_or(0.0)
    }
}

/// Bracket on the optimal adaptive composition of `count` ε-bounded-range mechanisms, for every
/// ε_g at once.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundedRangeComposition {
    epsilon: f64,
    count: u64,
    intervals: usize,
    upper: LatticeDeltas,
    lower: LatticeDeltas,
}

/// The P-masses and lattice losses of the pairs one step may use.
type Choice = Vec<(f64, i64)>;

impl BoundedRangeComposition {
    /// The bracket for `count` mechanisms of ε-BR with `intervals` lattice steps per ε.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `epsilon` (finite, > 0), `count` (≥ 1) or
    /// `intervals` (between [`MIN_INTERVALS`] and [`MAX_INTERVALS`]), or `count` when the
    /// work `6·count²·intervals²` exceeds 50 × [`WORK_BUDGET`].
    pub fn new(epsilon: f64, count: u64, intervals: usize) -> Result<Self> {
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
        }
        if count == 0 {
            return Err(Error::invalid("count", count, "at least 1"));
        }
        if !(MIN_INTERVALS..=MAX_INTERVALS).contains(&intervals) {
            return Err(Error::invalid(
                "intervals",
                intervals,
                &format!("between {MIN_INTERVALS} and {MAX_INTERVALS}"),
            ));
        }
        if work(count, intervals) > 50.0 * WORK_BUDGET {
            return Err(Error::invalid(
                "count",
                count,
                "few enough that 6·count²·intervals² stays within the work budget",
            ));
        }
        let m = intervals as i64;
        // Upper: a lattice with M·h ≥ ε (the class of ε′-BR, ε′ ≥ ε, contains ε-BR).
        let h_up = epsilon / intervals as f64 * (1.0 + 4.0 * UNIT_ROUNDOFF);
        let e_up = h_up * intervals as f64;
        let d_up = -(-e_up).exp_m1();
        let tanh = (0.5 * h_up).tanh();
        let upper_choices: Vec<Choice> = (0..m)
            .map(|j| {
                let a = j as f64 * h_up;
                let b = (j + 1) as f64 * h_up;
                vec![
                    (-(b - e_up).exp_m1() / d_up, j + 1),
                    ((b - e_up).exp() * tanh / d_up, 2 * j + 2 - m),
                    ((a - e_up).exp() * tanh / d_up, 2 * j - m),
                    ((-e_up).exp() * a.exp_m1() / d_up, j - m),
                ]
            })
            .collect();
        // Lower: M·h ≤ ε, so every B(mh) is ε-BR.
        let h_low = epsilon / intervals as f64 * (1.0 - 4.0 * UNIT_ROUNDOFF);
        let e_low = h_low * intervals as f64;
        let d_low = -(-e_low).exp_m1();
        let lower_choices: Vec<Choice> = (1..m)
            .map(|j| {
                let t = j as f64 * h_low;
                vec![
                    (-(t - e_low).exp_m1() / d_low, j),
                    ((-e_low).exp() * t.exp_m1() / d_low, j - m),
                ]
            })
            .collect();
        let margin = 64.0 * (count as f64 + 1.0) * UNIT_ROUNDOFF;
        let mut upper = run(&upper_choices, count, intervals, h_up);
        for v in &mut upper {
            *v = (*v * (1.0 + margin)).min(1.0);
        }
        let mut lower = run(&lower_choices, count, intervals, h_low);
        for v in &mut lower {
            *v = (*v * (1.0 - margin)).max(0.0);
        }
        Ok(BoundedRangeComposition {
            epsilon,
            count,
            intervals,
            upper: LatticeDeltas {
                step: h_up,
                values: upper,
            },
            lower: LatticeDeltas {
                step: h_low,
                values: lower,
            },
        })
    }

    /// The bracket with the most lattice steps (at most [`MAX_INTERVALS`]) that fit
    /// [`WORK_BUDGET`]; `None` when fewer than [`MIN_INTERVALS`] fit (count above about 4000) or
    /// the parameters are invalid.
    pub fn within_budget(epsilon: f64, count: u64) -> Option<Self> {
        let intervals = (WORK_BUDGET / (6.0 * (count as f64).powi(2)))
            .sqrt()
            .floor();
        if intervals.is_nan() || intervals < MIN_INTERVALS as f64 {
            return None;
        }
        let intervals = (intervals as usize).min(MAX_INTERVALS);
        Self::new(epsilon, count, intervals).ok()
    }

    /// ε of each mechanism.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// Number of mechanisms composed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Lattice steps per ε.
    pub fn intervals(&self) -> usize {
        self.intervals
    }

    /// δ(ε_g) of the optimal adaptive composition.
    ///
    /// # Guarantee
    /// `lower ≤ δ_opt(ε_g) ≤ upper`: the upper bound holds for every adaptive composition of
    /// `count` ε-BR mechanisms; the lower bound is attained by one (exponential mechanisms
    /// with two candidates, chosen adaptively). NaN ε_g gives [0, 1].
    pub fn delta(&self, epsilon_g: f64) -> Bracket {
        if epsilon_g.is_nan() {
            return Bracket {
                upper: 1.0,
                lower: 0.0,
            };
        }
        let e = epsilon_g.max(0.0);
        // Upper: linear in e^{ε_g} between the lattice points around ε_g.
        let x = e / self.upper.step;
        let upper = if x >= self.upper.values.len() as f64 {
            0.0
        } else {
            let n = x.floor() as usize;
            let (left, right) = (self.upper.at(n), self.upper.at(n + 1));
            // Fraction of the way in e^{ε}, rounded up towards the larger (left) value.
            let step = self.upper.step;
            let offset = e - n as f64 * step;
            let w = (offset.exp_m1() / step.exp_m1()).clamp(0.0, 1.0);
            let w = (w * (1.0 - 4.0 * UNIT_ROUNDOFF) - 4.0 * UNIT_ROUNDOFF).max(0.0);
            ((1.0 - w) * left + w * right) * (1.0 + 4.0 * UNIT_ROUNDOFF)
        };
        // Lower: δ is non-increasing, so at least its value at the next lattice point up.
        let y = (e / self.lower.step * (1.0 + 4.0 * UNIT_ROUNDOFF)).ceil();
        let lower = if y >= self.lower.values.len() as f64 {
            0.0
        } else {
            self.lower.at(y as usize)
        };
        Bracket {
            upper: upper.clamp(0.0, 1.0),
            lower: lower.min(upper).max(0.0),
        }
    }

    /// ε(δ) of the optimal adaptive composition: the smallest ε_g with δ(ε_g) ≤ δ.
    ///
    /// # Guarantee
    /// `lower ≤ ε_opt(δ) ≤ upper`. δ ≥ 1 gives 0; δ ≤ 0 or NaN gives `[lower, k·ε]` with the
    /// lower end where the lattice still sees loss (never NaN).
    pub fn epsilon_for_delta(&self, delta: f64) -> Bracket {
        let full = self.count as f64 * self.epsilon * (1.0 + 8.0 * UNIT_ROUNDOFF);
        if delta >= 1.0 {
            return Bracket {
                upper: 0.0,
                lower: 0.0,
            };
        }
        let delta = if delta.is_nan() { 0.0 } else { delta };
        // Upper: the first lattice point with an upper value ≤ δ, then the chord before it.
        let values = &self.upper.values;
        let upper = match values.iter().position(|&v| v <= delta) {
            None => full,
            Some(0) => 0.0,
            Some(n) => {
                let (left, right) = (values[n - 1], values[n]);
                let step = self.upper.step;
                // (1 − w)·left + w·right = δ, w = (e^{x} − 1)/(e^{h} − 1).
                let w = ((left - delta) / (left - right)).clamp(0.0, 1.0);
                let w = (w * (1.0 + 8.0 * UNIT_ROUNDOFF) + 8.0 * UNIT_ROUNDOFF).min(1.0);
                let x = (w * step.exp_m1()).ln_1p() * (1.0 + 8.0 * UNIT_ROUNDOFF);
                ((n - 1) as f64 * step + x.min(step)) * (1.0 + 4.0 * UNIT_ROUNDOFF)
            }
        };
        // Lower: the last lattice point whose lower value is still above δ.
        let lower = match self.lower.values.iter().rposition(|&v| v > delta) {
            None => 0.0,
            Some(n) => n as f64 * self.lower.step * (1.0 - 4.0 * UNIT_ROUNDOFF),
        };
        Bracket {
            upper: upper.min(full),
            lower: lower.min(upper.min(full)),
        }
    }
}

/// `6·k²·M²`: the multiply-adds of one bracket.
fn work(count: u64, intervals: usize) -> f64 {
    6.0 * (count as f64).powi(2) * (intervals as f64).powi(2)
}

/// The top-level value function on the lattice `n·step`, n = 0..=k·M: `V_k` maximized over the
/// choices at each level (each choice a list of (P-mass, loss in steps)).
fn run(choices: &[Choice], count: u64, intervals: usize, step: f64) -> Vec<f64> {
    let k = count as i64;
    let m = intervals as i64;
    // Level j (j steps to go) is needed on n ∈ [−(k − j)·M, j·M): below, the start (n ≥ 0)
    // cannot reach; above, V_j = 0. One array over [−k·M − M, k·M + M] serves every level.
    let offset = k * m + m;
    let len = (2 * offset + 1) as usize;
    let index = |n: i64| (n + offset) as usize;
    let mut previous: Vec<f64> = (0..len as i64)
        .map(|i| {
            let n = i - offset;
            if n < 0 {
                -(n as f64 * step).exp_m1()
            } else {
                0.0
            }
        })
        .collect();
    let mut current = vec![0.0; len];
    let mut acc = vec![0.0; len];
    for j in 1..=k {
        let lo = -(k - j) * m;
        let hi = j * m; // exclusive: V_j(n) = 0 from here up
        let (a, b) = (index(lo), index(hi));
        current[a..b].fill(0.0);
        for choice in choices {
            acc[a..b].fill(0.0);
            for &(p, loss) in choice {
                if p <= 0.0 {
                    continue;
                }
                // acc[n] += p·V_{j−1}(n − loss); V_{j−1} is 0 from (j − 1)·M up.
                let src_a = index(lo - loss);
                let zero_from = index((j - 1) * m);
                let valid = (b - a).min(zero_from.saturating_sub(src_a));
                for (dst, src) in acc[a..a + valid]
                    .iter_mut()
                    .zip(&previous[src_a..src_a + valid])
                {
                    *dst += p * src;
                }
            }
            for (best, &value) in current[a..b].iter_mut().zip(&acc[a..b]) {
                if value > *best {
                    *best = value;
                }
            }
        }
        std::mem::swap(&mut previous, &mut current);
        // Outside this level's range the array keeps stale values: clear what the next level
        // reads above its range (V = 0 there) — everything from hi up.
        previous[b..].fill(0.0);
    }
    (0..=(k * m)).map(|n| previous[index(n)]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// δ of B(t)^{⊗k} at ε_g by the binomial sum in log space (the non-adaptive value of t).
    fn binary_power_delta(epsilon: f64, t: f64, k: u64, eg: f64) -> f64 {
        let d = -(-epsilon).exp_m1();
        let p = -(t - epsilon).exp_m1() / d;
        let ln_choose =
            |n: u64, i: u64| -> f64 { (1..=i).map(|x| ((n - i + x) as f64 / x as f64).ln()).sum() };
        (0..=k)
            .map(|i| {
                let loss = k as f64 * t - i as f64 * epsilon;
                if loss <= eg {
                    return 0.0;
                }
                let ln_p = ln_choose(k, i)
                    + (k - i) as f64 * p.ln()
                    + if i > 0 { i as f64 * (-p).ln_1p() } else { 0.0 };
                ln_p.exp() * -(eg - loss).exp_m1()
            })
            .sum()
    }

    /// Brute force over adaptive strategies for two steps: the first t on a grid, the second
    /// t chosen per outcome of the first (on the same grid), exact.
    fn two_step_adaptive(epsilon: f64, eg: f64, grid: usize) -> f64 {
        let d = -(-epsilon).exp_m1();
        let pair = |t: f64| (-(t - epsilon).exp_m1() / d, t);
        let one = |c: f64| -> f64 {
            // sup over the last t of p·(1 − e^{c−t})₊ + (1 − p)·(1 − e^{c−t+ε})₊
            (0..=grid)
                .map(|i| {
                    let (p, t) = pair(epsilon * i as f64 / grid as f64);
                    p * (-(c - t).exp_m1()).max(0.0)
                        + (1.0 - p) * (-(c - t + epsilon).exp_m1()).max(0.0)
                })
                .fold(0.0, f64::max)
        };
        (0..=grid)
            .map(|i| {
                let (p, t) = pair(epsilon * i as f64 / grid as f64);
                p * one(eg - t) + (1.0 - p) * one(eg - t + epsilon)
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn one_step_is_the_best_binary_pair() {
        // One mechanism: the optimum is max_t δ_{B(t)}(ε_g).
        for epsilon in [0.1, 1.0, 4.0] {
            let c = BoundedRangeComposition::new(epsilon, 1, 256).unwrap();
            for i in 0..10 {
                let eg = epsilon * i as f64 / 10.0;
                let best = (0..=4000)
                    .map(|j| binary_power_delta(epsilon, epsilon * j as f64 / 4000.0, 1, eg))
                    .fold(0.0, f64::max);
                let b = c.delta(eg);
                assert!(
                    b.lower <= best * (1.0 + 1e-9) && best <= b.upper,
                    "{b:?} vs {best}"
                );
                assert!(b.upper - b.lower <= 0.05 * best + 1e-12, "{b:?}");
            }
        }
    }

    #[test]
    fn two_steps_bracket_the_brute_force_adaptive_optimum() {
        for epsilon in [0.5, 2.0] {
            let c = BoundedRangeComposition::new(epsilon, 2, 512).unwrap();
            for i in 0..8 {
                let eg = 2.0 * epsilon * i as f64 / 8.0;
                let brute = two_step_adaptive(epsilon, eg, 400);
                let b = c.delta(eg);
                assert!(
                    b.lower <= brute * (1.0 + 1e-6) + 1e-12 && brute <= b.upper,
                    "ε {epsilon} ε_g {eg}: {b:?} vs {brute}"
                );
            }
        }
    }

    #[test]
    fn adaptivity_costs_more_than_the_best_fixed_t_and_less_than_generic_dp() {
        // 10 selections at ε = 1: the adaptive lower bound is above every non-adaptive value
        // (Dong, Durfee & Rogers' gap), and the whole bracket is far below 10 × ε-DP.
        let (epsilon, k) = (1.0, 10);
        let c = BoundedRangeComposition::new(epsilon, k, 400).unwrap();
        for eg in [1.0, 3.0, 5.0] {
            let fixed = (1..400)
                .map(|j| binary_power_delta(epsilon, epsilon * j as f64 / 400.0, k, eg))
                .fold(0.0, f64::max);
            let b = c.delta(eg);
            assert!(
                b.lower >= fixed * 0.999,
                "ε_g {eg}: {b:?} vs fixed t {fixed}"
            );
            let generic =
                crate::analytic::optimal_composition::delta_for_epsilon(epsilon, 0.0, k, eg);
            assert!(b.upper < generic, "ε_g {eg}: {b:?} vs ε-DP {generic}");
        }
        let e = c.epsilon_for_delta(1e-6);
        assert!(e.lower <= e.upper && e.upper - e.lower < 0.05, "{e:?}");
        let generic = crate::analytic::optimal_composition::epsilon_for_delta(1.0, 0.0, 10, 1e-6);
        assert!(e.upper < generic, "{e:?} vs {generic}");
    }

    #[test]
    fn epsilon_and_delta_agree_and_edges_are_clean() {
        let c = BoundedRangeComposition::new(0.3, 40, 128).unwrap();
        for delta in [1e-2, 1e-6, 1e-12, 1e-30] {
            let e = c.epsilon_for_delta(delta);
            assert!(e.lower <= e.upper, "{e:?}");
            // At the upper ε the upper δ is ≤ δ.
            assert!(
                c.delta(e.upper).upper <= delta * (1.0 + 1e-9),
                "{delta} {e:?}"
            );
            // Below the lower ε the lower δ is above δ.
            assert!(c.delta(e.lower * 0.99).lower > delta, "{delta} {e:?}");
            assert!(e.upper - e.lower < 0.05 * e.upper, "{delta} {e:?}");
        }
        assert_eq!(c.epsilon_for_delta(1.0).upper, 0.0);
        assert!(c.epsilon_for_delta(0.0).upper <= 40.0 * 0.3 * (1.0 + 1e-12));
        let nan = c.delta(f64::NAN);
        assert!(nan.upper == 1.0 && nan.lower == 0.0);
        assert_eq!(c.delta(100.0).upper, 0.0);
        assert!(BoundedRangeComposition::new(0.0, 1, 64).is_err());
        assert!(BoundedRangeComposition::new(1.0, 0, 64).is_err());
        assert!(BoundedRangeComposition::new(1.0, 1, 2).is_err());
        assert!(BoundedRangeComposition::within_budget(1.0, 100_000).is_none());
    }
}

#[cfg(test)]
mod timing {
    use super::*;

    #[test]
    #[ignore = "timing and figures: cargo test --release --lib bounded_range_timing -- --ignored --nocapture"]
    fn bounded_range_timing() {
        for (epsilon, k) in [(1.0, 10u64), (1.0, 100), (0.1, 100), (1.0, 300), (0.5, 600)] {
            let start = std::time::Instant::now();
            let Some(c) = BoundedRangeComposition::within_budget(epsilon, k) else {
                eprintln!("ε {epsilon} k {k}: over budget");
                continue;
            };
            let e = c.epsilon_for_delta(1e-6);
            eprintln!(
                "ε {epsilon} k {k} M {}: ε(1e-6) ∈ [{:.4}, {:.4}] in {:.2?}",
                c.intervals(),
                e.lower,
                e.upper,
                start.elapsed()
            );
        }
    }
}
