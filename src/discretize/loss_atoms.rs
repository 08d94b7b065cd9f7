//! Finite privacy loss distributions with both masses, and their two roundings onto a grid.
//!
//! A mechanism with finitely many outcomes (randomized response, discrete noise, a generic
//! (ε, δ) pair, a listed pair) has an exact PLD made of atoms `(l, P-mass, Q-mass)` with
//! `P = e^l·Q`. Knowing both masses gives both roundings without a cliff (rounding each loss up to
//! the grid would move a loss that is on the grid up by a whole step whenever float noise puts
//! it a hair above its node):
//!
//! - **upper** ([`LossAtoms::upper_pmf`]): connect-the-dots on the non-uniform candidate
//!   points `{⌊l/h⌋, ⌈l/h⌉}` (Doroshenko et al., PETS 2022, §3), i.e. each atom split between its two grid neighbours
//!   so that its P- and Q-mass are both kept;
//! - **lower** ([`LossAtoms::lower_pmf`]): merging outcomes (a post-processing) from the top
//!   down so that every merged atom lands exactly on a grid point. Atoms already on the grid
//!   stay where they are, dense atoms merge with second-order error, and an isolated atom off
//!   the grid borrows just enough mass from below to land on the point beneath it.

use crate::bound::Bound;
use crate::discretize::loss_bins::MAX_GRID_POINTS;
use crate::error::{Error, Result};
use crate::mechanism::MonotonePrivacyLoss;
use crate::pmf::grid_pmf::{GridPmf, LOSS_LIMIT};

/// One atom of a PLD: the outcomes whose privacy loss is `loss`, with their P- and Q-mass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossAtom {
    /// Privacy loss `ln(P/Q)` in nats (finite).
    pub loss: f64,
    /// P-mass.
    pub p: f64,
    /// Q-mass.
    pub q: f64,
}

impl LossAtom {
    /// The atom of an outcome with P-mass `p` and Q-mass `q` (both > 0): loss `ln p − ln q`.
    pub fn from_masses(p: f64, q: f64) -> LossAtom {
        LossAtom {
            loss: p.ln() - q.ln(),
            p,
            q,
        }
    }
}

/// The exact PLD of a pair with finitely many outcomes (or a merge of one: every atom is a
/// set of outcomes, so every δ read from it is at most the pair's).
///
/// `tails` hold outcome regions left out of the atoms whose masses are only bounded from
/// above (a discrete Gaussian's far tails): their losses lie above every atom (`top`) or below
/// every atom (`bottom`). The upper rounding charges them in the safe direction, the lower one
/// drops them. An exact power also keeps in `top` the atoms whose P- and Q-masses both
/// underflowed (below 1e-308 each, at positive losses): charged to +∞ or dropped, like the
/// rest of it.
#[derive(Debug, Clone, PartialEq)]
pub struct LossAtoms {
    /// Sorted by increasing loss.
    atoms: Vec<LossAtom>,
    /// P-mass where Q = 0 (loss +∞).
    p_infinity: f64,
    /// Q-mass where P = 0 (loss −∞).
    q_neg_infinity: f64,
    /// Upper bounds on the (P, Q) mass of the regions with losses above every atom.
    top_tail: (f64, f64),
    /// Upper bounds on the (P, Q) mass of the regions with losses below every atom.
    bottom_tail: (f64, f64),
}

/// Relative step by which a merged atom stops short of its grid point, so that rounding in
/// the merge can never put it above its true loss.
const MERGE_MARGIN: f64 = 1e-12;

impl LossAtoms {
    /// The PLD of `p` vs `q` (two distributions over the same outcomes).
    pub fn from_pair(p: &[f64], q: &[f64]) -> LossAtoms {
        let mut atoms = Vec::with_capacity(p.len());
        let (mut p_infinity, mut q_neg_infinity) = (0.0, 0.0);
        for (&a, &b) in p.iter().zip(q) {
            match (a > 0.0, b > 0.0) {
                (true, true) => atoms.push(LossAtom {
                    loss: a.ln() - b.ln(),
                    p: a,
                    q: b,
                }),
                (true, false) => p_infinity += a,
                (false, true) => q_neg_infinity += b,
                (false, false) => {}
            }
        }
        LossAtoms::from_atoms(atoms, p_infinity, q_neg_infinity)
    }

    /// The pair whose best tests trace the upper concave hull of `points`, as (false-positive
    /// rate, true-positive rate) pairs that include (0, 0) and (1, 1): each hull segment is an
    /// outcome with Q-mass its FPR length, P-mass its TPR rise and loss ln(slope); a vertical
    /// segment is P-mass at loss +∞, a flat one Q-mass at −∞. Its trade-off curve is
    /// `1 − hull`, so the pair dominates every mechanism whose TPR at each FPR is below the
    /// points' hull. A point kept by rounding in the hull test only makes the pair more
    /// pessimistic.
    pub fn from_tpr_curve(mut points: Vec<(f64, f64)>) -> Self {
        points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let mut hull: Vec<(f64, f64)> = Vec::with_capacity(points.len());
        for &c in &points {
            while hull.len() >= 2 {
                let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
                // b clearly below the chord a → c: drop it.
                let (left, right) = ((b.1 - a.1) * (c.0 - a.0), (c.1 - a.1) * (b.0 - a.0));
                if left < right - 16.0 * f64::EPSILON * (left.abs() + right.abs()) {
                    hull.pop();
                } else {
                    break;
                }
            }
            hull.push(c);
        }
        let mut atoms = Vec::new();
        let (mut p_infinity, mut q_neg_infinity) = (0.0, 0.0);
        for s in hull.windows(2) {
            let (dq, dp) = (s[1].0 - s[0].0, s[1].1 - s[0].1);
            match (dq > 0.0, dp > 0.0) {
                (true, true) => atoms.push(LossAtom {
                    loss: dp.ln() - dq.ln(),
                    p: dp,
                    q: dq,
                }),
                (false, true) => p_infinity += dp,
                (true, false) => q_neg_infinity += dq,
                (false, false) => {}
            }
        }
        LossAtoms::from_atoms(atoms, p_infinity, q_neg_infinity)
    }

    /// A PLD from atoms (in any order) and the infinite masses.
    ///
    /// An atom whose P-mass is 0 (it underflowed: e.g. `e^{−ε}` for ε > 745) or whose loss is
    /// −∞ has its Q-mass moved to loss −∞, where it still counts under subsampling and in the
    /// swapped (ADD) pair; its P-mass, below the smallest positive double, is dropped. An atom
    /// at loss +∞ has its P-mass moved to `p_infinity`. Atoms without mass are dropped.
    pub fn from_atoms(mut atoms: Vec<LossAtom>, p_infinity: f64, q_neg_infinity: f64) -> Self {
        use crate::numeric::summation::neumaier_sum;
        let to_neg_infinity =
            |a: &&LossAtom| (a.p <= 0.0 || a.loss == f64::NEG_INFINITY) && a.q > 0.0;
        let q_neg_infinity =
            q_neg_infinity + neumaier_sum(atoms.iter().filter(to_neg_infinity).map(|a| a.q));
        let p_infinity = p_infinity
            + neumaier_sum(
                atoms
                    .iter()
                    .filter(|a| a.p > 0.0 && a.loss == f64::INFINITY)
                    .map(|a| a.p),
            );
        atoms.retain(|a| a.p > 0.0 && a.loss.is_finite());
        atoms.sort_by(|a, b| a.loss.total_cmp(&b.loss));
        LossAtoms {
            atoms,
            p_infinity,
            q_neg_infinity,
            top_tail: (0.0, 0.0),
            bottom_tail: (0.0, 0.0),
        }
    }

    /// The same PLD with tail regions whose masses are bounded by `top` (losses above every
    /// atom) and `bottom` (below every atom), as (P, Q) pairs.
    pub fn with_tails(mut self, top: (f64, f64), bottom: (f64, f64)) -> Self {
        self.top_tail = top;
        self.bottom_tail = bottom;
        self
    }

    /// The atoms, by increasing loss.
    pub fn atoms(&self) -> &[LossAtom] {
        &self.atoms
    }

    /// P-mass at loss +∞.
    pub fn p_infinity(&self) -> f64 {
        self.p_infinity
    }

    /// Q-mass at loss −∞.
    pub fn q_neg_infinity(&self) -> f64 {
        self.q_neg_infinity
    }

    /// Whether tail regions with only bounded masses were left out of the atoms.
    pub fn has_tails(&self) -> bool {
        self.top_tail != (0.0, 0.0) || self.bottom_tail != (0.0, 0.0)
    }

    /// The PLD of the swapped pair (Q, P): losses negated, masses exchanged.
    pub fn swapped(&self) -> LossAtoms {
        LossAtoms {
            atoms: self
                .atoms
                .iter()
                .rev()
                .filter(|a| a.q > 0.0)
                .map(|a| LossAtom {
                    loss: -a.loss,
                    p: a.q,
                    q: a.p,
                })
                .collect(),
            p_infinity: self.q_neg_infinity,
            q_neg_infinity: self.p_infinity,
            top_tail: (self.bottom_tail.1, self.bottom_tail.0),
            bottom_tail: (self.top_tail.1, self.top_tail.0),
        }
    }

    /// The pair after Poisson subsampling at `rate` (REMOVE direction): every outcome's P-mass
    /// becomes `(1 − rate)·Q + rate·P`, its Q-mass stays.
    ///
    /// ```text
    /// l ↦ ln(1 − rate + rate·e^l),   P-only mass ↦ rate·(P-only mass),   Q-only ↦ loss ln(1−rate)
    /// ```
    pub fn poisson_subsampled(&self, rate: f64) -> LossAtoms {
        let log_keep_out = (-rate).ln_1p();
        let log_rate = rate.ln();
        let mut atoms: Vec<LossAtom> = self
            .atoms
            .iter()
            .map(|a| LossAtom {
                loss: crate::numeric::log_space::log_add_exp(log_keep_out, log_rate + a.loss),
                p: (1.0 - rate) * a.q + rate * a.p,
                q: a.q,
            })
            .collect();
        if self.q_neg_infinity > 0.0 && rate < 1.0 {
            atoms.push(LossAtom {
                loss: log_keep_out,
                p: (1.0 - rate) * self.q_neg_infinity,
                q: self.q_neg_infinity,
            });
        }
        let q_neg_infinity = if rate < 1.0 { 0.0 } else { self.q_neg_infinity };
        let mut out = LossAtoms::from_atoms(atoms, rate * self.p_infinity, q_neg_infinity);
        out.top_tail = (
            (1.0 - rate) * self.top_tail.1 + rate * self.top_tail.0,
            self.top_tail.1,
        );
        out.bottom_tail = (
            (1.0 - rate) * self.bottom_tail.1 + rate * self.bottom_tail.0,
            self.bottom_tail.1,
        );
        out
    }

    /// The exact hockey-stick divergence `δ(ε) = m_∞ + Σ_{l > ε} (P − e^ε Q)` (tails excluded).
    ///
    /// # Guarantee
    /// Exact up to rounding for the atoms given (a lower bound when tails were left out).
    pub fn hockey_stick(&self, epsilon: f64) -> f64 {
        let sum = crate::numeric::summation::neumaier_sum(
            self.atoms
                .iter()
                .filter(|a| a.loss > epsilon)
                .map(|a| a.p * -(epsilon - a.loss).exp_m1()),
        );
        (self.p_infinity + sum).clamp(0.0, 1.0)
    }

    /// Pessimistic PMF on the grid of step `step`: each atom split between its grid
    /// neighbours `a ≤ l < a + h` as
    /// ```text
    /// w_{a+h} = P·expm1(−(l − a))/expm1(−h),   w_a = P − w_{a+h}
    /// ```
    /// which keeps both its P- and Q-mass (connect-the-dots by mass splitting). Losses are first raised by four
    /// ulps so rounding in l cannot move mass down. Atoms above `LOSS_LIMIT` go to +∞, those
    /// below `−LOSS_LIMIT` up to it; the top tail goes to +∞ and the bottom tail up to the
    /// lowest atom.
    ///
    /// # Guarantee
    /// Upper bound at every ε (the chord through the grid points of a convex curve lies above
    /// it), exact at every grid point; mass conserved; valid (`Σ p e^{−l} ≤ 1`).
    ///
    /// # Errors
    /// [`Error::GridTooLarge`] if the atoms span more than [`MAX_GRID_POINTS`] points.
    pub fn upper_pmf(&self, step: f64) -> Result<GridPmf> {
        connect_the_dots(
            step,
            || self.atoms.iter().map(|a| (a.loss, a.p)),
            self.bottom_tail.0,
            self.p_infinity + self.top_tail.0,
        )
    }

    /// `self.swapped().upper_pmf(step)` (the ADD direction's pessimistic PMF), the same bit
    /// for bit, without copying the atoms: an epoch of random allocation has millions.
    ///
    /// # Errors
    /// As [`LossAtoms::upper_pmf`].
    pub fn swapped_upper_pmf(&self, step: f64) -> Result<GridPmf> {
        // The swapped atoms: those with Q-mass, losses negated, P and Q exchanged, in
        // increasing order of the negated loss; its bottom tail is this one's top tail.
        let swapped = || {
            self.atoms
                .iter()
                .rev()
                .filter(|a| a.q > 0.0)
                .map(|a| (-a.loss, a.q))
        };
        connect_the_dots(
            step,
            swapped,
            self.top_tail.1,
            self.q_neg_infinity + self.bottom_tail.1,
        )
    }

    /// Optimistic PMF on the grid of step `step`, by merging outcomes towards loss 0 from
    /// both ends.
    ///
    /// An atom on a grid point (within `1e-9·h`) is kept there. Otherwise, above loss 0, a
    /// merged atom is started at it and aimed at the grid point `g` just below its loss; atoms
    /// below `g` are added, the last one only in the fraction `t` that brings the merged loss
    /// down to g:
    /// ```text
    /// t = (P − e^g Q)/(e^g q − p) = P·(1 − e^{g−m}) / (p·(e^{g−l} − 1))     (m = ln(P/Q))
    /// ```
    /// (taken a relative `1e-12` short, so the merged loss stays at or above g). The rest of
    /// that atom goes on down. Below loss 0 the mirror image: merged atoms are aimed at the
    /// grid point just above their lowest atom and filled from above (t taken `1e-12` long).
    /// The two open merged atoms left where the walks meet are walked down once more (the
    /// upper borrowing from the lower), and the final remainder is rounded down; or, when
    /// that keeps more P-mass-weighted loss, each of their atoms is rounded down on its own
    /// (a merged atom that swallowed the outcomes of many steps without landing would
    /// otherwise take them all down to its own grid point); tails are dropped. The walks
    /// meet at loss 0, or, when that keeps more P-mass-weighted loss at a cost of at most a
    /// thousandth of δ(0), where either walk closes its merged atom after going on past 0
    /// (only tried when it is still open at 0): a heavy atom nearest 0 just beyond a grid
    /// point, with little mass between it and 0, then borrows from the losses on the other
    /// side of 0 instead of being rounded towards 0 by almost a step (a Laplace step's
    /// ln(1 − γ(1 − e^{−ε₀})) atom at 1.0002 steps below 0 landed at −2 steps, now at −1;
    /// four runs of a Poisson-sampled discrete Gaussian, σ 2, q 0.01, have an atom of P-mass
    /// 0.012 at 3.6e-5 nats, 0.71 of a step beyond its grid point at a step of 4.7e-6
    /// nats). An isolated atom off the grid costs first-order error (no lower PMF on the
    /// grid can do better for it), which is why the accountant aligns the grid to the atoms.
    ///
    /// # Guarantee
    /// Lower bound at every ε: each output atom is a merge of true outcomes (a post-processing
    /// of the pair), placed at or below its merged loss; an atom kept on a grid point that
    /// is up to `1e-9·h` above it is accounted for in the PMF's loss allowance.
    ///
    /// # Errors
    /// [`Error::GridTooLarge`] if the atoms span more than [`MAX_GRID_POINTS`] points.
    pub fn lower_pmf(&self, step: f64) -> Result<GridPmf> {
        check_index_range(step)?;
        // The atoms from −LOSS_LIMIT up, losses above LOSS_LIMIT clamped to it, split at loss
        // 0: slices of the sorted atoms, not copies (an epoch of random allocation has
        // millions, and collecting them took a seventh of its lower bound's time, most of it
        // faulting in fresh pages as the vectors grew).
        let start = self.atoms.partition_point(|a| a.loss < -LOSS_LIMIT);
        let split = self.atoms.partition_point(|a| a.loss < 0.0).max(start);
        let (low, high) = (&self.atoms[start..split], &self.atoms[split..]);
        let clamp = |a: &LossAtom| LossAtom {
            loss: a.loss.min(LOSS_LIMIT),
            ..*a
        };
        let never = |_: &LossAtom| false;
        // Walks meeting at loss 0.
        let up = merge_onto_grid(low.iter().map(clamp), step, Direction::Up, never);
        let down = merge_onto_grid(high.iter().rev().map(clamp), step, Direction::Down, never);
        let (up_open, down_open) = (!up.open.is_empty(), !down.open.is_empty());
        let at_zero = meet(down, up, step);
        // Either walk going on past 0 while its merged atom is open: a heavy atom nearest 0
        // just beyond a grid point, with little mass between it and 0, then borrows from
        // the losses on the other side of 0 instead of being rounded towards 0 by almost a
        // step. (Going on past 0 with nothing open would walk the same atoms the same way.)
        let mut candidates = Vec::new();
        if up_open {
            let mut up = merge_onto_grid(
                low.iter().chain(high.iter()).map(clamp),
                step,
                Direction::Up,
                |a: &LossAtom| a.loss >= 0.0,
            );
            let rest = std::mem::take(&mut up.rest);
            candidates.push(meet(
                merge_onto_grid(rest.into_iter().rev(), step, Direction::Down, never),
                up,
                step,
            ));
        }
        if down_open {
            let mut down = merge_onto_grid(
                high.iter().rev().chain(low.iter().rev()).map(clamp),
                step,
                Direction::Down,
                |a: &LossAtom| a.loss < 0.0,
            );
            let rest = std::mem::take(&mut down.rest);
            candidates.push(meet(
                down,
                merge_onto_grid(rest.into_iter().rev(), step, Direction::Up, never),
                step,
            ));
        }
        // All are merges and roundings down. Going on past 0 is taken when it keeps more
        // P-mass-weighted loss (the mean loss drives long compositions) at the cost of at
        // most a thousandth of δ(0) (which a single run's answer may rest on): it moves mass
        // across 0.
        let floor = at_zero.delta_at_zero * (1.0 - 1e-3);
        let best = candidates
            .into_iter()
            .filter(|c| c.delta_at_zero >= floor)
            .fold(at_zero, |best, c| if c.kept > best.kept { c } else { best });
        let (placed, allowance) = (best.placed, best.allowance);
        grid_from_placed(step, placed, self.p_infinity, Bound::Lower, allowance)
    }

    /// The atoms of a continuous mechanism for the lower bound: its constant-loss regions
    /// (atoms of the PLD) kept whole, and the loss range between them cut into bins of width
    /// at most `fine_step`, each merged into one atom at its merged loss `ln(P_I/Q_I)` (a
    /// post-processing). Tails beyond the truncation points are dropped.
    ///
    /// # Guarantee
    /// Every atom is a merge of true outcomes: any δ read from the result is a lower bound.
    ///
    /// # Errors
    /// [`Error::GridTooLarge`] beyond [`MAX_GRID_POINTS`] bins; [`Error::InvalidParameter`] if
    /// the loss range is not finite.
    pub fn merged_from_mechanism<M: MonotonePrivacyLoss>(
        mechanism: &M,
        fine_step: f64,
        tail_mass: f64,
    ) -> Result<LossAtoms> {
        let (x_lo, x_hi) = mechanism.truncation_points(tail_mass);
        let (region_top, region_bottom) = mechanism.constant_loss_regions();
        let x_top = region_top.unwrap_or(x_lo);
        let x_bottom = region_bottom.unwrap_or(x_hi);
        let top = mechanism.privacy_loss(x_top);
        let bottom = mechanism.privacy_loss(x_bottom);
        if !(top.is_finite() && bottom.is_finite()) {
            return Err(Error::invalid(
                "privacy loss range to represent",
                format!("[{bottom}, {top}] nats"),
                "finite",
            ));
        }
        let mut atoms = Vec::new();
        let top_edge = mechanism.edge(x_top);
        let bottom_edge = mechanism.edge(x_bottom);
        if region_top.is_some() {
            let (p, q) = mechanism.masses_below(top_edge);
            atoms.push(LossAtom { loss: top, p, q });
        }
        if region_bottom.is_some() {
            let (p, q) = mechanism.masses_above(bottom_edge);
            atoms.push(LossAtom { loss: bottom, p, q });
        }
        let bins = ((top - bottom) / fine_step).ceil().max(1.0);
        if bins > MAX_GRID_POINTS as f64 {
            return Err(Error::GridTooLarge {
                points: bins as u64,
                limit: MAX_GRID_POINTS as u64,
                hint: format!("use a grid step larger than {fine_step:e}"),
            });
        }
        let bins = bins as usize;
        let width = (top - bottom) / bins as f64;
        let mut upper_edge = bottom_edge;
        let mut upper_loss = bottom;
        for k in 1..=bins {
            let (loss, edge) = if k == bins {
                (top, top_edge)
            } else {
                let loss = bottom + k as f64 * width;
                (loss, mechanism.edge(mechanism.inverse_privacy_loss(loss)))
            };
            // x decreases as the loss grows: this bin is (x(loss), x(upper_loss)].
            let (p, q) = mechanism.masses_between(upper_edge, edge);
            if p > 0.0 && q > 0.0 {
                atoms.push(LossAtom {
                    loss: (p.ln() - q.ln()).clamp(upper_loss, loss),
                    p,
                    q,
                });
            }
            upper_edge = edge;
            upper_loss = loss;
        }
        let (p_infinity, q_neg_infinity) = mechanism.infinite_masses();
        Ok(LossAtoms::from_atoms(atoms, p_infinity, q_neg_infinity))
    }
}

/// Refuse a grid step so small that the indices of losses within ±`LOSS_LIMIT` (plus a few
/// steps) would not fit in an `i64` (steps below about 1.3e-16 nats).
fn check_index_range(step: f64) -> Result<()> {
    const MAX_INDEX: f64 = (1u64 << 60) as f64;
    if step.is_finite() && step > 0.0 && LOSS_LIMIT / step + 4.0 < MAX_INDEX {
        return Ok(());
    }
    Err(Error::GridTooLarge {
        points: (2.0 * LOSS_LIMIT / step).min(u64::MAX as f64) as u64,
        limit: MAX_GRID_POINTS as u64,
        hint: format!("the grid step {step:e} is too small to index losses within ±{LOSS_LIMIT} nats; use a larger grid step"),
    })
}

/// [`LossAtoms::upper_pmf`] of the atoms `atoms()` gives, as (loss, P-mass) in increasing
/// order of loss, with the bottom tail's P-mass `bottom_tail` placed at the lowest atom (at
/// loss 0 when there is none) and `infinity` the P-mass at +∞ so far.
///
/// The masses are added in place, in the same order as a list of placed pairs would add
/// them (that list was 32 bytes per atom: for an epoch of random allocation hundreds of MB,
/// allocated, zeroed by the kernel and dropped on every grid). In increasing order of loss
/// the atoms' nodes never decrease, so one pass grows the grid at its top; atoms out of
/// order (or a grid too large) take a first pass for the range, then the same placement.
pub(crate) fn connect_the_dots<I: Iterator<Item = (f64, f64)>>(
    step: f64,
    atoms: impl Fn() -> I,
    bottom_tail: f64,
    infinity: f64,
) -> Result<GridPmf> {
    check_index_range(step)?;
    let rounding = Rounding::new(step);
    let lowest = atoms().next().map_or(0.0, |(loss, _)| loss);
    let tail = (bottom_tail > 0.0).then_some((lowest, bottom_tail));
    // Every atom placed on a grid starting at `range`'s first node (of `range`'s length), or
    // at the first atom's node and grown at the top; `None` when an atom falls below the
    // grid or past its limit.
    let place = |range: Option<(i64, usize)>| -> Option<GridPmf> {
        let (mut first, mut probs) = match range {
            Some((first, points)) => (Some(first), vec![0.0; points]),
            None => (None, Vec::new()),
        };
        let mut infinity = infinity;
        for (loss, p) in atoms().chain(tail) {
            let Some((node, offset)) = rounding.node_of(loss) else {
                infinity += p;
                continue;
            };
            // Indices are below 2^60 in magnitude (see `check_index_range`): no overflow.
            let index = node - *first.get_or_insert(node);
            if index < 0 || index as u64 + 2 > MAX_GRID_POINTS as u64 {
                return None;
            }
            let index = index as usize;
            if index + 2 > probs.len() {
                probs.resize(index + 2, 0.0);
            }
            let up = rounding.up(p, offset);
            probs[index] += p - up;
            probs[index + 1] += up;
        }
        if probs.is_empty() {
            probs.push(0.0);
        }
        probs.shrink_to_fit();
        let first = first.unwrap_or(0);
        Some(GridPmf::from_parts(
            step,
            first,
            probs,
            infinity.min(1.0),
            Bound::Upper,
        ))
    };
    if let Some(pmf) = place(None) {
        return Ok(pmf);
    }
    // The range: every atom placed adds its node and the node above.
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for (loss, _) in atoms().chain(tail) {
        if let Some((node, _)) = rounding.node_of(loss) {
            first = first.min(node);
            last = last.max(node + 1);
        }
    }
    if first > last {
        (first, last) = (0, 0);
    }
    let points = (last - first + 1) as u64;
    let too_large = || Error::GridTooLarge {
        points,
        limit: MAX_GRID_POINTS as u64,
        hint: format!("use a grid step larger than {step:e}"),
    };
    if points > MAX_GRID_POINTS as u64 {
        return Err(too_large());
    }
    // (Every node lies in the range: the placement cannot fail.)
    place(Some((first, points as usize))).ok_or_else(too_large)
}

/// [`connect_the_dots`] for atoms given by their masses `(P, Q)` (loss `ln(P/Q)`), in
/// increasing order of P/Q, with the atoms of each grid cell summed before the split: a few
/// flops per atom instead of a logarithm and an `expm1` (an epoch of random allocation has
/// millions of atoms per direction).
///
/// Connect-the-dots is linear in the masses within a cell: an atom at loss `l ∈ [kh, (k+1)h)`
/// sends `(P − e^{kh}·Q)/(1 − e^{−h})` of its P-mass to node k + 1 and the rest to node k
/// (the share [`LossAtoms::upper_pmf`] writes `P·expm1(−(l − kh))/expm1(−h)`), so a cell's
/// atoms split as their sums do. The rounding keeps an upper bound at every ε:
/// - Cell edges: `E_k ≤ e^{kh}`, from `exp(k·h)` lowered by `(|kh| + 8)u` (u = 2⁻⁵³: the
///   product's rounding, `exp`'s ulp and the factor's rounding). An atom stays in cell k
///   only while `P < E_{k+1}·Q` in floating point, so its loss is below `(k+1)h`; an atom
///   just below `kh` that joins cell k is placed at node k or above (moved up).
/// - Shares: each atom's `max(P − E_k·Q, 0)` in one fused multiply-add (one rounding, which
///   keeps the sign: within 2u relative of at least its exact share times `1 − e^{−h}`),
///   summed with Neumaier's compensation (within `u·|S| + γ²ₙ·S`, the terms being
///   non-negative), inflated and divided by `1 − e^{−h}` lowered by 4u: at least the cell's
///   exact share.
/// - Masses: the cell's P-mass (its Neumaier sum) inflated by 6u and γ²ₙ, so that node k's
///   remainder (rounded) and the share (each then added to its node, rounded once more)
///   together hold at least the cell's mass.
///
/// A placement with at least the exact share at node k + 1 and at least the exact total is
/// the exact one with mass moved up a node and mass added, and neither lowers a δ (every δ
/// is a sum of masses times weights `(1 − e^{ε − l})₊`, non-decreasing in l). Atoms out of
/// order are placed in the cell the walk has reached or above (moved up): still an upper
/// bound, only looser. Atoms with `P ≥ E·Q` for `E ≤ e^{LOSS_LIMIT}` go to +∞ with those of
/// zero Q-mass, and atoms below `−LOSS_LIMIT` are placed at its node, as
/// [`LossAtoms::upper_pmf`] places them; atoms without P-mass are left out.
///
/// # Errors
/// [`Error::GridTooLarge`] if the atoms span more than [`MAX_GRID_POINTS`] points;
/// [`Error::InvalidParameter`] for a step that is not finite and positive (through
/// `check_index_range`).
pub(crate) fn connect_the_dots_by_cells(
    step: f64,
    atoms: impl Iterator<Item = (f64, f64)>,
    infinity: f64,
) -> Result<GridPmf> {
    use crate::numeric::summation::NeumaierSum;
    check_index_range(step)?;
    let u = f64::EPSILON / 2.0;
    // E_k, a lower bound on e^{kh}.
    let edge = |k: i64| {
        let x = k as f64 * step;
        x.exp() * (1.0 - (x.abs() + 8.0) * u)
    };
    // A lower bound on e^{LOSS_LIMIT} (as E_k's).
    let to_infinity = LOSS_LIMIT.exp() * (1.0 - (LOSS_LIMIT + 8.0) * u);
    let lowest = (-LOSS_LIMIT / step).floor() as i64;
    let highest = (LOSS_LIMIT / step).ceil() as i64 + 1;
    // The cell of an atom from k = `at_least` up (one logarithm per cell entered, not per
    // atom), checked against the edges themselves.
    let cell_of = |p: f64, q: f64, at_least: i64| {
        let from_log = ((p / q).ln() / step).floor();
        let mut k = if from_log.is_nan() {
            at_least
        } else {
            (from_log.clamp(-2e15, 2e15) as i64).clamp(at_least, highest)
        };
        while k > at_least && p < edge(k) * q {
            k -= 1;
        }
        while k < highest && p >= edge(k + 1) * q {
            k += 1;
        }
        k
    };
    let denominator = -(-step).exp_m1() * (1.0 - 4.0 * u);
    let mut to_top = NeumaierSum::default();
    to_top.add(infinity);
    let mut top_count = 1u64;
    // The open cell: its k, edges E_k and E_{k+1}, P-mass, shares and count.
    struct Cell {
        k: i64,
        low: f64,
        high: f64,
        mass: NeumaierSum,
        share: NeumaierSum,
        count: u64,
    }
    let open = |k: i64| Cell {
        k,
        low: edge(k),
        high: edge(k + 1),
        mass: NeumaierSum::default(),
        share: NeumaierSum::default(),
        count: 0,
    };
    let mut first: Option<i64> = None;
    let mut probs: Vec<f64> = Vec::new();
    let mut close = |cell: &Cell, probs: &mut Vec<f64>| -> Result<()> {
        let first = *first.get_or_insert(cell.k);
        // Indices are below 2^60 in magnitude (see `check_index_range`): no overflow.
        let index = (cell.k - first) as u64;
        if index + 2 > MAX_GRID_POINTS as u64 {
            return Err(Error::GridTooLarge {
                points: index + 2,
                limit: MAX_GRID_POINTS as u64,
                hint: format!("use a grid step larger than {step:e}"),
            });
        }
        let index = index as usize;
        if index + 2 > probs.len() {
            probs.resize(index + 2, 0.0);
        }
        let n = cell.count as f64;
        let gamma = n * u / (1.0 - n * u);
        let slack = 2.0 * gamma * gamma;
        let mass = cell.mass.value() * (1.0 + 6.0 * u + slack);
        let share = (cell.share.value() * (1.0 + 8.0 * u + slack) / denominator) * (1.0 + 6.0 * u);
        let up = share.clamp(0.0, mass);
        probs[index] += mass - up;
        probs[index + 1] += up;
        Ok(())
    };
    let mut cell: Option<Cell> = None;
    for (p, q) in atoms {
        if p.is_nan() || p <= 0.0 {
            continue;
        }
        let limit = to_infinity * q;
        if limit.is_nan() || p >= limit {
            // Loss at least about LOSS_LIMIT, or no Q-mass (or a NaN): +∞.
            to_top.add(p);
            top_count += 1;
            continue;
        }
        let mut current = match cell.take() {
            None => open(cell_of(p, q, lowest)),
            Some(current) if p >= current.high * q => {
                close(&current, &mut probs)?;
                open(cell_of(p, q, current.k + 1))
            }
            Some(current) => current,
        };
        current.mass.add(p);
        current.share.add((-current.low).mul_add(q, p).max(0.0));
        current.count += 1;
        cell = Some(current);
    }
    if let Some(current) = cell {
        close(&current, &mut probs)?;
    }
    if probs.is_empty() {
        probs.push(0.0);
    }
    probs.shrink_to_fit();
    let n = top_count as f64;
    let gamma = n * u / (1.0 - n * u);
    let infinity = to_top.value() * (1.0 + 4.0 * u + 2.0 * gamma * gamma);
    Ok(GridPmf::from_parts(
        step,
        first.unwrap_or(0),
        probs,
        infinity.min(1.0),
        Bound::Upper,
    ))
}

/// The connect-the-dots split of an atom between its two grid neighbours (see
/// [`LossAtoms::upper_pmf`]).
struct Rounding {
    step: f64,
    /// `expm1(−h)`.
    denominator: f64,
}

impl Rounding {
    fn new(step: f64) -> Rounding {
        Rounding {
            step,
            denominator: (-step).exp_m1(),
        }
    }

    /// The grid node at or below `loss` (raised by four ulps so rounding in it cannot move
    /// mass down) and the offset above it, or `None` for a loss above LOSS_LIMIT (+∞).
    #[inline]
    fn node_of(&self, loss: f64) -> Option<(i64, f64)> {
        if loss > LOSS_LIMIT {
            return None;
        }
        let step = self.step;
        let loss = loss.max(-LOSS_LIMIT);
        let raised = loss + 4.0 * f64::EPSILON * loss.abs();
        let mut node = (raised / step).floor() as i64;
        let mut offset = raised - node as f64 * step;
        if offset >= step {
            node += 1;
            offset -= step;
        }
        Some((node, offset.max(0.0)))
    }

    /// The share of P-mass `p` at `offset` above its node that goes to the node above:
    /// `p·expm1(−offset)/expm1(−h)`, within [0, p].
    #[inline]
    fn up(&self, p: f64, offset: f64) -> f64 {
        (p * (-offset).exp_m1() / self.denominator).clamp(0.0, p)
    }
}

/// A grid PMF from (grid index, mass) pairs.
fn grid_from_placed(
    step: f64,
    placed: Vec<(i64, f64)>,
    infinity_mass: f64,
    bound: Bound,
    loss_allowance: f64,
) -> Result<GridPmf> {
    let first = placed.iter().map(|p| p.0).min().unwrap_or(0);
    let last = placed.iter().map(|p| p.0).max().unwrap_or(0);
    // Indices are below 2^60 in magnitude (see `check_index_range`): no overflow.
    let points = (last - first + 1) as u64;
    if points > MAX_GRID_POINTS as u64 {
        return Err(Error::GridTooLarge {
            points,
            limit: MAX_GRID_POINTS as u64,
            hint: format!("use a grid step larger than {step:e}"),
        });
    }
    let mut probs = vec![0.0; points as usize];
    for (node, mass) in placed {
        probs[(node - first) as usize] += mass;
    }
    let mut pmf = GridPmf::from_parts(step, first, probs, infinity_mass.min(1.0), bound);
    pmf.loss_allowance = loss_allowance;
    Ok(pmf)
}

/// Which way [`merge_onto_grid`] walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// From the largest loss down; merged atoms land on the grid point below.
    Down,
    /// From the smallest loss up; merged atoms land on the grid point above their start.
    Up,
}

/// What [`merge_onto_grid`] produced.
struct Merged {
    /// (grid index, P-mass) of the atoms placed.
    placed: Vec<(i64, f64)>,
    /// (P, Q) of the merged atom still open at the end.
    left: (f64, f64),
    /// How far (nats) an atom kept on the grid may sit below its grid point.
    allowance: f64,
    /// The atoms not walked (in walking order) when the walk stopped early.
    rest: Vec<LossAtom>,
    /// The atoms (or their parts) that make up the merged atom still open at the end.
    open: Vec<LossAtom>,
}

/// A lower PMF's placed atoms: (grid index, P-mass), the loss allowance,
/// `kept = Σ index·P-mass` and its δ(0) = Σ_{index > 0} P-mass·(1 − e^{−index·h}).
struct Placed {
    placed: Vec<(i64, f64)>,
    allowance: f64,
    kept: f64,
    delta_at_zero: f64,
}

/// The walk down (from the largest losses) and the walk up (from the smallest) meet: their
/// two open merged atoms are walked down once more (the upper one borrowing from the lower
/// one), and what is finally left is rounded down.
fn meet(down: Merged, up: Merged, step: f64) -> Placed {
    if down.open.is_empty() && up.open.is_empty() {
        return meet_merged(down, up, step);
    }
    // Or each atom of the two open merged atoms rounded down on its own: a merged atom that
    // swallowed the outcomes of many steps without landing loses less that way.
    let mut alone: Vec<(i64, f64)> = down.placed.iter().chain(&up.placed).copied().collect();
    alone.extend(
        down.open
            .iter()
            .chain(&up.open)
            .filter(|a| a.p > 0.0)
            .map(|a| {
                (
                    (a.loss.clamp(-LOSS_LIMIT, LOSS_LIMIT) / step).floor() as i64,
                    a.p,
                )
            }),
    );
    let merged = meet_merged(down, up, step);
    let alone = placed_with(alone, merged.allowance, step);
    if alone.kept > merged.kept {
        alone
    } else {
        merged
    }
}

/// [`Placed`] of placed atoms.
fn placed_with(placed: Vec<(i64, f64)>, allowance: f64, step: f64) -> Placed {
    let kept = placed.iter().map(|&(node, p)| node as f64 * p).sum();
    let delta_at_zero = placed
        .iter()
        .filter(|&&(node, _)| node > 0)
        .map(|&(node, p)| -p * (-(node as f64) * step).exp_m1())
        .sum();
    Placed {
        placed,
        allowance,
        kept,
        delta_at_zero,
    }
}

/// [`meet`] by walking the two open merged atoms down once more.
fn meet_merged(down: Merged, up: Merged, step: f64) -> Placed {
    let mut placed = down.placed;
    placed.extend(up.placed);
    let left: Vec<LossAtom> = [down.left, up.left]
        .into_iter()
        // A lump whose Q-mass underflowed to 0 has a merged loss above the top of the
        // grid: it is clamped to the top (moved down), never dropped.
        .filter(|&(p, _)| p > 0.0)
        .map(|(p, q)| LossAtom {
            loss: (p.ln() - q.ln()).clamp(-LOSS_LIMIT, LOSS_LIMIT),
            p,
            q,
        })
        .collect();
    let last = merge_onto_grid(left.into_iter(), step, Direction::Down, |_| false);
    placed.extend(last.placed);
    let (p, q) = last.left;
    if p > 0.0 {
        // Nothing left to merge with: round the merged loss down.
        let merged = if q > 0.0 { p.ln() - q.ln() } else { LOSS_LIMIT };
        placed.push(((merged.min(LOSS_LIMIT) / step).floor() as i64, p));
    }
    placed_with(
        placed,
        down.allowance.max(up.allowance).max(last.allowance),
        step,
    )
}

/// The greedy merge of [`LossAtoms::lower_pmf`] over atoms in walking order (decreasing loss
/// for `Down`, increasing for `Up`), stopping before an atom that `stop` picks when no merged
/// atom is open (the atoms not walked are returned).
fn merge_onto_grid(
    atoms: impl Iterator<Item = LossAtom>,
    step: f64,
    direction: Direction,
    stop: impl Fn(&LossAtom) -> bool,
) -> Merged {
    let snap_tolerance = 1e-9 * step;
    let mut out = Merged {
        placed: Vec::new(),
        left: (0.0, 0.0),
        allowance: 0.0,
        rest: Vec::new(),
        open: Vec::new(),
    };
    let mut atoms = atoms.peekable();
    // The merged atom being built: (P, Q, target grid point, e^{its loss}).
    let mut lump: Option<(f64, f64, i64, f64)> = None;
    // Its atoms.
    let mut members: Vec<LossAtom> = Vec::new();
    let mut carry: Option<LossAtom> = None;
    while let Some(atom) = carry.take().or_else(|| atoms.next()) {
        if lump.is_none() && stop(&atom) {
            out.rest.push(atom);
            out.rest.extend(atoms);
            break;
        }
        let Some((p, q, target, scale)) = lump else {
            let nearest = (atom.loss / step).round();
            let gap = nearest * step - atom.loss;
            if gap.abs() <= snap_tolerance {
                // On the grid: keep it (allowing for the few ulps it may sit below).
                out.allowance = out
                    .allowance
                    .max(gap + 4.0 * f64::EPSILON * atom.loss.abs());
                out.placed.push((nearest as i64, atom.p));
            } else {
                let node = match direction {
                    Direction::Down => (atom.loss / step).floor(),
                    Direction::Up => (atom.loss / step).ceil(),
                };
                lump = Some((atom.p, atom.q, node as i64, (node * step).exp()));
                members.clear();
                members.push(atom);
            }
            continue;
        };
        let g = target as f64 * step;
        let same_side = match direction {
            Direction::Down => atom.loss >= g,
            Direction::Up => atom.loss <= g,
        };
        if same_side {
            lump = Some((p + atom.p, q + atom.q, target, scale));
            members.push(atom);
            continue;
        }
        // An atom that cannot bring the merged loss to g even whole is merged whole, as the
        // split below would decide (`t ≥ 1`), but from the masses alone: the fraction it
        // takes is `(P − e^g·Q)/(e^g·Q_a − P_a)`, and a clear excess over 1 (a millionth,
        // far above the round-off of either form) spares the two logarithms and two
        // exponentials of the split. (A random allocation epoch's millions of atoms cross
        // a grid point this way about every other atom.) Merging whole is a post-processing
        // whatever the fraction: where the test is unsure, the split below decides.
        let reach = (p - scale * q) / (scale * atom.q - atom.p);
        if reach.is_finite() && reach >= 1.0 + 1e-6 {
            lump = Some((p + atom.p, q + atom.q, target, scale));
            members.push(atom);
            continue;
        }
        // The fraction of this atom that brings the merged loss m to g exactly.
        let merged = p.ln() - q.ln();
        let needed = p * -(g - merged).exp_m1() / (atom.p * (g - atom.loss).exp_m1());
        // Down: stop short (merged stays ≥ g); Up: go a little further (merged ends ≥ g).
        let t = match direction {
            Direction::Down => needed * (1.0 - MERGE_MARGIN),
            Direction::Up => needed * (1.0 + MERGE_MARGIN),
        };
        if t.is_nan() || t >= 1.0 {
            lump = Some((p + atom.p, q + atom.q, target, scale));
            members.push(atom);
            continue;
        }
        let t = t.max(0.0);
        out.placed.push((target, p + t * atom.p));
        lump = None;
        carry = Some(LossAtom {
            loss: atom.loss,
            p: (1.0 - t) * atom.p,
            q: (1.0 - t) * atom.q,
        });
    }
    if let Some((p, q, _, _)) = lump {
        out.left = (p, q);
        out.open = members;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An outcome of loss `loss` and P-mass `p` (its Q-mass p·e^{−loss}).
    fn atom(loss: f64, p: f64) -> LossAtom {
        LossAtom {
            loss,
            p,
            q: p * (-loss).exp(),
        }
    }

    /// The lower PMF's δ(ε) is at most the atoms' exact δ(ε) at each of `epsilons`.
    fn assert_below_exact(atoms: &LossAtoms, pmf: &GridPmf, epsilons: impl Iterator<Item = f64>) {
        for epsilon in epsilons {
            let exact = atoms.hockey_stick(epsilon);
            let lower = pmf.delta_for_epsilon(epsilon);
            assert!(
                lower <= exact * (1.0 + 1e-12) + 1e-300,
                "ε {epsilon}: lower {lower:e} above exact {exact:e}"
            );
        }
    }

    /// A heavy atom just beyond a grid point with a heavy atom just above it (as the lower
    /// constant-loss region of subsampled Laplace noise and the outcomes next to it): the
    /// second one cannot reach the grid point above it and swallows every outcome up to 0
    /// without landing. Rounded down as one merged atom, all of them went to the heavy
    /// atom's grid point, up to 17 steps below where they were; each rounded down on its
    /// own, every outcome moves less than a step. Still below the exact δ(ε) at every ε.
    #[test]
    fn a_merged_atom_that_never_lands_is_rounded_down_atom_by_atom() {
        let h = 0.01;
        let mut list = vec![atom(-17.0021 * h, 0.5), atom(-16.895 * h, 0.36)];
        list.extend((1..=32).map(|i| atom((-16.3 + 0.5 * i as f64) * h, 5e-4)));
        list.push(atom(600.0 * h, 0.002));
        let atoms = LossAtoms::from_atoms(list.clone(), 0.0, 0.0);
        let pmf = atoms.lower_pmf(h).unwrap();
        // The small outcomes from −10 steps up (19 of 5e-4) keep their place within a step.
        let near_zero: f64 = (0..pmf.len())
            .filter(|&i| pmf.loss(i) > -10.5 * h && pmf.loss(i) < 0.0)
            .map(|i| pmf.probs()[i])
            .sum();
        assert!(near_zero >= 18.0 * 5e-4, "{near_zero:e} left near 0");
        assert_below_exact(&atoms, &pmf, (0..=100).map(|i| -0.2 + i as f64 * 0.05));
    }

    /// A heavy atom above a grid point, a run of tiny atoms below it and then a heavy one
    /// (as an epoch of random allocation has millions): walking down, none of the tiny ones
    /// can bring the merged loss to the grid point, so each is merged whole (decided from
    /// the masses alone); the heavy one then gives exactly the fraction that lands the merge
    /// on the grid point. The mass placed there is the merge's, to the split's margin.
    #[test]
    fn tiny_atoms_that_cannot_land_a_merge_join_it_whole() {
        let h = 0.01;
        let mut list = vec![atom(3.9 * h, 0.3)];
        list.extend((0..2000).map(|i| atom((2.999 - 4e-4 * i as f64) * h, 1e-12)));
        let heavy = atom(1.5 * h, 0.4);
        list.push(heavy);
        list.push(atom(-2.0 * h, 0.3));
        let atoms = LossAtoms::from_atoms(list.clone(), 0.0, 0.0);
        let pmf = atoms.lower_pmf(h).unwrap();
        let at = |node: i64| {
            (0..pmf.len())
                .find(|&i| (pmf.loss(i) / h).round() as i64 == node)
                .map_or(0.0, |i| pmf.probs()[i])
        };
        // The merge of the first atom and every tiny one, then the fraction of the heavy one
        // that brings it to 3 steps: (P − e^g·Q)/(e^g·Q_b − P_b).
        let (p, q) = list[..2001]
            .iter()
            .fold((0.0, 0.0), |(p, q), a| (p + a.p, q + a.q));
        let scale = (3.0 * h).exp();
        let fraction = (p - scale * q) / (scale * heavy.q - heavy.p);
        assert!(fraction > 0.01 && fraction < 0.99, "fraction {fraction}");
        let expected = p + fraction * (1.0 - MERGE_MARGIN) * heavy.p;
        assert!(
            (at(3) - expected).abs() <= 1e-12 * expected,
            "3 steps hold {:e}, the merge {expected:e}",
            at(3)
        );
        assert_below_exact(&atoms, &pmf, (0..=80).map(|i| -0.03 + i as f64 * 1e-3));
    }

    /// A heavy lowest atom just beyond a grid point (−1.0002 steps), with almost no mass
    /// between it and 0: the walk up borrows from the smallest positive loss and lands it on
    /// −1 step (meeting at 0, it was rounded down to −2 steps). The result stays a lower
    /// bound: below the exact δ(ε) at every ε, and the heavy atom's P-mass keeps its place.
    #[test]
    fn a_heavy_lowest_atom_borrows_past_zero() {
        let h = 0.01;
        let atoms = LossAtoms::from_atoms(
            vec![
                atom(-1.0002 * h, 0.5),
                atom(-0.4 * h, 1e-6),
                atom(0.3 * h, 0.05),
                atom(0.7 * h, 0.05),
                atom(5.0 * h, 0.3),
            ],
            0.0,
            0.0,
        );
        let pmf = atoms.lower_pmf(h).unwrap();
        let at = |node: i64| {
            (0..pmf.len())
                .find(|&i| (pmf.loss(i) / h).round() as i64 == node)
                .map_or(0.0, |i| pmf.probs()[i])
        };
        assert!(at(-1) >= 0.5, "−1 step holds {}", at(-1));
        assert_eq!(at(-2), 0.0);
        assert_below_exact(&atoms, &pmf, (0..=80).map(|i| -0.02 + i as f64 * 1e-3));
    }

    /// The mirror image: a heavy atom nearest 0 on the positive side, 0.71 of a step beyond
    /// its grid point, with almost no mass between it and 0 (four runs of a Poisson-sampled
    /// discrete Gaussian, σ 2, q 0.01, have such an atom, P-mass 0.012 at 3.6e-5 nats).
    /// Meeting at 0 it was rounded down by 0.71 of a step, which lowers the P-mean loss by
    /// 0.3 × 0.71 steps; the walk down going on past 0 lands it on its grid point by
    /// borrowing from the loss −20 steps, which keeps that mean to second order (1.4% of
    /// the rounding's loss here). Still below the exact δ(ε) at every ε.
    #[test]
    fn a_heavy_atom_nearest_zero_borrows_past_zero_from_above() {
        let h = 1e-3;
        let atoms = LossAtoms::from_atoms(
            vec![
                atom(-60.0 * h, 0.2),
                atom(-20.0 * h, 0.3),
                atom(-0.4 * h, 1e-7),
                atom(7.71 * h, 0.3),
                atom(30.0 * h, 0.2),
            ],
            0.0,
            0.0,
        );
        let exact_mean: f64 = atoms.atoms().iter().map(|a| a.p * a.loss).sum();
        let pmf = atoms.lower_pmf(h).unwrap();
        let mean: f64 = (0..pmf.len()).map(|i| pmf.probs()[i] * pmf.loss(i)).sum();
        let rounded_down = 0.3 * 0.71 * h;
        assert!(
            exact_mean - mean >= 0.0 && exact_mean - mean < 0.05 * rounded_down,
            "P-mean loss {mean:e} against the exact {exact_mean:e}"
        );
        assert_below_exact(&atoms, &pmf, (0..=120).map(|i| -0.07 + i as f64 * 1e-3));
    }

    /// An atom whose P-mass underflowed keeps its Q-mass (at −∞): Poisson subsampling then
    /// turns it into the outcome where the record is not sampled, loss ln(1 − q) with
    /// P-mass (1 − q)·Q, instead of losing it.
    #[test]
    fn underflowed_p_mass_keeps_its_q_mass() {
        let atoms = LossAtoms::from_atoms(
            vec![
                LossAtom {
                    loss: 800.0,
                    p: 1.0,
                    q: 0.0,
                },
                LossAtom {
                    loss: -800.0,
                    p: 0.0,
                    q: 1.0,
                },
            ],
            0.0,
            0.0,
        );
        assert_eq!(atoms.atoms().len(), 1);
        assert_eq!(atoms.q_neg_infinity, 1.0);
        let sampled = atoms.poisson_subsampled(0.25);
        let masses: f64 = sampled.atoms().iter().map(|a| a.p).sum();
        assert!((masses - 1.0).abs() < 1e-15, "{sampled:?}");
        let stay = sampled.atoms()[0];
        assert!((stay.loss - 0.75f64.ln()).abs() < 1e-15 && (stay.p - 0.75).abs() < 1e-15);
    }

    /// `eps_delta` (ε, 0) keeps both masses whole at every ε: the −ε atom's P-mass is
    /// e^{−ε}/(1 + e^{−ε}) (not a cancelled 1 − 1/(1 + e^{−ε})), and past ε ≈ 745, where
    /// it underflows, its Q-mass sits at −∞.
    #[test]
    fn eps_delta_masses_are_whole_at_large_epsilon() {
        for epsilon in [1.0, 40.0, 100.0, 700.0, 800.0] {
            let atoms = crate::mechanism::discrete::eps_delta(epsilon, 0.0);
            let p: f64 = atoms.atoms().iter().map(|a| a.p).sum::<f64>() + atoms.p_infinity;
            let q: f64 = atoms.atoms().iter().map(|a| a.q).sum::<f64>() + atoms.q_neg_infinity;
            assert!(
                (p - 1.0).abs() < 1e-15 && (q - 1.0).abs() < 1e-15,
                "{atoms:?}"
            );
            let bottom = atoms.atoms()[0];
            if epsilon < 700.0 {
                let expected = -epsilon - (-epsilon).exp().ln_1p();
                assert!((bottom.p.ln() - expected).abs() < 1e-12, "{atoms:?}");
            }
        }
    }

    /// The connect-the-dots rounding as a list of placed (node, mass) pairs summed into a
    /// grid afterwards, the way `upper_pmf` computed it before it added in place: of the
    /// (loss, P-mass) pairs `list` in their order, then the bottom tail at `lowest`.
    fn placed_pairs(
        step: f64,
        list: &[(f64, f64)],
        (lowest, tail): (f64, f64),
        mut infinity: f64,
    ) -> GridPmf {
        let mut placed: Vec<(i64, f64)> = Vec::new();
        let denominator = (-step).exp_m1();
        let mut place = |loss: f64, p: f64, infinity: &mut f64| {
            if loss > LOSS_LIMIT {
                *infinity += p;
                return;
            }
            let loss = loss.max(-LOSS_LIMIT);
            let raised = loss + 4.0 * f64::EPSILON * loss.abs();
            let mut node = (raised / step).floor() as i64;
            let mut offset = raised - node as f64 * step;
            if offset >= step {
                node += 1;
                offset -= step;
            }
            let up = (p * (-offset.max(0.0)).exp_m1() / denominator).clamp(0.0, p);
            placed.push((node, p - up));
            placed.push((node + 1, up));
        };
        for &(loss, p) in list {
            place(loss, p, &mut infinity);
        }
        if tail > 0.0 {
            place(lowest, tail, &mut infinity);
        }
        grid_from_placed(step, placed, infinity, Bound::Upper, 0.0).expect("small grid")
    }

    /// [`placed_pairs`] of a PLD's atoms, as `upper_pmf` takes them.
    fn upper_by_placed_pairs(atoms: &LossAtoms, step: f64) -> GridPmf {
        let list: Vec<(f64, f64)> = atoms.atoms.iter().map(|a| (a.loss, a.p)).collect();
        let lowest = atoms.atoms.first().map_or(0.0, |a| a.loss);
        placed_pairs(
            step,
            &list,
            (lowest, atoms.bottom_tail.0),
            atoms.p_infinity + atoms.top_tail.0,
        )
    }

    /// Atoms out of order take the two-pass path, with the same result as the placed
    /// pairs; in order, the one-pass path gives the same too.
    #[test]
    fn atoms_out_of_order_are_placed_as_in_order() {
        let step = 0.01;
        let unordered: [(f64, f64); 5] = [
            (0.3, 0.1),
            (-0.2, 0.2),
            (0.05, 0.05),
            (0.7, 0.01),
            (-0.5, 0.3),
        ];
        let mut ordered = unordered;
        ordered.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (list, lowest) in [(&unordered[..], 0.3), (&ordered[..], -0.5)] {
            let rounded =
                connect_the_dots(step, || list.iter().copied(), 1e-3, 0.02).expect("small grid");
            assert_eq!(rounded, placed_pairs(step, list, (lowest, 1e-3), 0.02));
        }
        // No atoms placed at all: a single zero point at 0, the masses at +∞.
        let beyond = [(LOSS_LIMIT + 1.0, 0.5)];
        let rounded =
            connect_the_dots(step, || beyond.iter().copied(), 0.0, 0.1).expect("small grid");
        assert_eq!(rounded, placed_pairs(step, &beyond, (0.0, 0.0), 0.1));
        assert_eq!(
            (rounded.probs(), rounded.infinity_mass()),
            (&[0.0][..], 0.6)
        );
    }

    /// The in-place rounding gives the placed pairs' PMF bit for bit, and the swapped one
    /// (no copy of the atoms) the copied swap's: on atoms on and off the grid, beyond
    /// ±LOSS_LIMIT, with Q-mass 0, with and without tails, and none at all.
    #[test]
    fn in_place_rounding_matches_the_placed_pairs_in_both_directions() {
        let mut uniform = crate::numeric::xorshift_uniform(0x2545_f491_4f6c_dd1d);
        for case in 0..40 {
            let step = [1e-4, 0.003, 0.05, 0.7][case % 4];
            let count = [0, 1, 7, 300][(case / 4) % 4];
            let mut atoms: Vec<LossAtom> = (0..count)
                .map(|i| {
                    let loss = match i % 5 {
                        // On a grid point.
                        0 => (uniform() * 40.0 - 20.0).round() * step,
                        1 if case % 3 == 0 && step > 1e-3 => LOSS_LIMIT + 1.0 + uniform(),
                        2 if case % 3 == 1 && step > 1e-3 => -LOSS_LIMIT - 1.0 - uniform(),
                        _ => uniform() * 6.0 - 3.0,
                    };
                    atom(loss, uniform() * 0.01)
                })
                .collect();
            if count > 1 && case % 2 == 0 {
                atoms[0].q = 0.0;
            }
            let tails = match case % 4 {
                0 => ((0.0, 0.0), (0.0, 0.0)),
                1 => ((1e-6, 2e-9), (3e-5, 4e-4)),
                2 => ((0.0, 1e-7), (2e-6, 0.0)),
                _ => ((5e-3, 0.0), (0.0, 1e-3)),
            };
            let pld = LossAtoms::from_atoms(atoms, 0.01 * uniform(), 0.02 * uniform())
                .with_tails(tails.0, tails.1);
            let direct = pld.upper_pmf(step).expect("small grid");
            assert_eq!(direct, upper_by_placed_pairs(&pld, step), "case {case}");
            let swapped = pld.swapped_upper_pmf(step).expect("small grid");
            assert_eq!(swapped, pld.swapped().upper_pmf(step).expect("small grid"));
            assert_eq!(swapped, upper_by_placed_pairs(&pld.swapped(), step));
        }
    }

    /// δ(ε) of a grid PMF summed directly from its masses, `m_∞ + Σ pⱼ·(1 − e^{ε − lⱼ})₊`
    /// (without the reading allowances of `GridPmf::delta_for_epsilon`).
    fn grid_delta(pmf: &GridPmf, epsilon: f64) -> f64 {
        // (From a node or two below ε, not from the bottom: grids of 10⁵ nodes are read at
        // hundreds of ε.)
        let below = ((epsilon / pmf.step()).floor() - 2.0 - pmf.offset() as f64).max(0.0);
        let start = (below.min(pmf.len() as f64)) as usize;
        let sum = crate::numeric::summation::neumaier_sum(
            (start..pmf.len())
                .filter(|&j| pmf.loss(j) > epsilon)
                .map(|j| pmf.probs()[j] * -(epsilon - pmf.loss(j)).exp_m1()),
        );
        pmf.infinity_mass() + sum
    }

    /// Summed per cell, connect-the-dots gives what it gives atom by atom (`connect_the_dots`,
    /// the split [`LossAtoms::upper_pmf`] makes): at every ε its δ is at least the atoms'
    /// exact δ and within 1e-12 (relative) of the atom-by-atom PMF's, on grids of steps from
    /// 1e-4 to 0.7, with atoms on grid points, a few ulps either side of the cell edges
    /// `e^{kh}`, beyond ±LOSS_LIMIT, without Q-mass and without P-mass.
    #[test]
    fn cells_split_as_their_atoms_do() {
        let mut uniform = crate::numeric::xorshift_uniform(0x9e37_79b9_7f4a_7c15);
        for case in 0..32 {
            let step = [1e-4, 0.003, 0.05, 0.7][case % 4];
            let count = [1, 7, 300, 2000][(case / 4) % 4];
            let mut atoms: Vec<(f64, f64)> = (0..count)
                .map(|i| {
                    // (Total P-mass below 1/2: +∞'s mass is capped at 1.)
                    let p = uniform() * 0.5 / count as f64;
                    let ratio = match i % 7 {
                        0 => ((uniform() * 40.0 - 20.0).round() * step).exp(),
                        1 => {
                            let edge = ((uniform() * 40.0 - 20.0).round() * step).exp();
                            edge * (1.0 + (uniform() * 8.0 - 4.0).round() * f64::EPSILON)
                        }
                        2 if case % 3 == 0 && step > 1e-3 => (LOSS_LIMIT + 1.0 + uniform()).exp(),
                        3 if case % 3 == 1 && step > 1e-3 => (-LOSS_LIMIT - 1.0 - uniform()).exp(),
                        4 if case % 5 == 0 => f64::INFINITY,
                        _ => (uniform() * 6.0 - 3.0).exp(),
                    };
                    let p = if i % 11 == 5 { 0.0 } else { p };
                    (p, p / ratio)
                })
                .collect();
            atoms.sort_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)));
            let infinity = 0.01 * uniform();
            let by_cells = connect_the_dots_by_cells(step, atoms.iter().copied(), infinity)
                .expect("small grid");
            // The same atoms as (loss, P-mass), with the exact δ they define.
            let listed: Vec<LossAtom> = atoms
                .iter()
                .filter(|&&(p, _)| p > 0.0)
                .map(|&(p, q)| LossAtom {
                    loss: if q > 0.0 { (p / q).ln() } else { f64::INFINITY },
                    p,
                    q,
                })
                .collect();
            let by_atoms =
                connect_the_dots(step, || listed.iter().map(|a| (a.loss, a.p)), 0.0, infinity)
                    .expect("small grid");
            let exact_atoms = LossAtoms::from_atoms(listed.clone(), infinity, 0.0);
            let exact = |epsilon: f64| exact_atoms.hockey_stick(epsilon);
            let total: f64 = infinity + listed.iter().map(|a| a.p).sum::<f64>();
            // Grid points over the atoms' range, points between them and a few ulps off them.
            let stride = ((7.0 / step / 80.0).ceil() as i64).max(1);
            for j in (-40i64..=40).flat_map(|m| [3 * m, 3 * m + 1, 3 * m + 2]) {
                let node = (j.div_euclid(3) * stride) as f64;
                let epsilon = match j.rem_euclid(3) {
                    0 => node * step,
                    1 => (node + 0.37) * step,
                    _ => node * step * (1.0 + 3.0 * f64::EPSILON),
                };
                let (cells, atomwise, truth) = (
                    grid_delta(&by_cells, epsilon),
                    grid_delta(&by_atoms, epsilon),
                    exact(epsilon),
                );
                assert!(
                    cells >= truth * (1.0 - 1e-14),
                    "case {case}, ε {epsilon}: by cells {cells:e} below the exact {truth:e}"
                );
                assert!(
                    (cells - atomwise).abs() <= 1e-12 * total,
                    "case {case}, ε {epsilon}: by cells {cells:e}, atom by atom {atomwise:e}"
                );
            }
        }
    }

    /// An atom clearly above a cell edge `e^{kh}` (by 1e-13) is placed at node k and above,
    /// never below; one clearly below it gives node k − 1 only its share (at most its
    /// distance to the edge over the cell's width); one far below every node
    /// (−LOSS_LIMIT) is raised to the lowest node, and one above LOSS_LIMIT goes to +∞.
    #[test]
    fn atoms_by_cells_are_never_placed_below_their_loss() {
        for step in [1e-4, 0.01, 0.3] {
            for k in [-7000i64, -31, -1, 0, 1, 2, 45, 2500] {
                if (k as f64 * step).abs() > 100.0 {
                    continue;
                }
                let edge = (k as f64 * step).exp();
                let above =
                    connect_the_dots_by_cells(step, [(edge * (1.0 + 1e-13), 1.0)].into_iter(), 0.0)
                        .expect("small grid");
                let node = (above.offset()..)
                    .zip(above.probs())
                    .find(|(_, &m)| m > 0.0);
                assert!(
                    node.is_some_and(|(j, _)| j >= k),
                    "step {step}, k {k}: first mass at node {node:?}"
                );
                let below =
                    connect_the_dots_by_cells(step, [(edge * (1.0 - 1e-13), 1.0)].into_iter(), 0.0)
                        .expect("small grid");
                let low: f64 = (below.offset()..)
                    .zip(below.probs())
                    .filter(|&(j, _)| j < k)
                    .map(|(_, &m)| m)
                    .sum();
                let share = 1e-13 * edge / -(-step).exp_m1();
                assert!(
                    low <= 1.01 * share + 1e-15 * edge,
                    "step {step}, k {k}: {low:e} placed below the edge"
                );
            }
            if step < 1e-3 {
                // (±LOSS_LIMIT are millions of such steps apart.)
                continue;
            }
            let far = connect_the_dots_by_cells(
                step,
                [(1e-300, 1.0), (0.2, 0.2), (0.25, 0.0), (0.25, 1e-300)].into_iter(),
                0.0,
            )
            .expect("small grid");
            assert_eq!(far.offset(), (-LOSS_LIMIT / step).floor() as i64);
            // (Less than 1e-313 of it may be moved up a node by the share's allowance.)
            assert!(far.probs()[0] + far.probs()[1] >= 1e-300);
            let infinity = far.infinity_mass();
            assert!(
                (0.5..=0.5 * (1.0 + 1e-14)).contains(&infinity),
                "{infinity}"
            );
        }
    }
}
