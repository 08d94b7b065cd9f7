//! Optimistic rounding with second-order error: merge the outcomes of consecutive loss
//! intervals into single atoms that land exactly on the half-step nodes `(i + ½)·h`.
//!
//! Merging all outcomes whose privacy loss falls in an interval I into one outcome is a
//! post-processing of the mechanism, so the merged pair is dominated by the true one and every
//! δ read from it is a lower bound (data-processing inequality). The merged outcome has loss
//! `b = ln(P_I/Q_I) ∈ I`. Rounding b down to a fixed grid would cost up to a step per atom
//! (first order, and it drifts under composition: ALGORITHMS.md §3.3). Instead the intervals
//! are chosen so that b lands on a node: going up from the bottom, each interval
//! `[t_i, t_{i+1})` is closed where its merged loss equals its node `g_i` (solved by a
//! bracketed secant iteration on exact CDFs). A node that an interval cannot reach (its start
//! is already within 0.05·h of it) is skipped.
//!
//! The curve of the result is the maximum of the tangents of the true curve at the interval
//! ends, whose gap is second order in h, and both P- and Q-mass are kept exactly, so the mean
//! privacy loss, which drives the error of long compositions, moves only by the O(h²) loss of
//! merging. The same atoms, with P and Q exchanged and losses negated, are the merged ADD pair
//! on the nodes `−g_i`, which are half-step nodes again.

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::grid_pmf::{GridPmf, LOSS_LIMIT};
use crate::loss_bins::MAX_GRID_POINTS;
use crate::mechanism::MonotonePrivacyLoss;

/// How far above its node a merged atom may land, relative to h²: the tolerance is
/// `max(1e-3·h², 1e-12)` nats.
///
/// REMOVE atoms are at or above their node (moving them down is safe, and costs at most this
/// much loss per atom: a thousandth of the O(h²) error of merging itself). The ADD atoms, the
/// same atoms negated, may therefore sit up to this much too high; the ADD lower PMF records it
/// in `loss_allowance`, which every ε and δ read from it takes into account.
pub const LANDING_TOLERANCE: f64 = 1e-3;

/// The landing tolerance in nats for grid step `step` (see [`LANDING_TOLERANCE`]).
pub fn landing_tolerance(step: f64) -> f64 {
    (LANDING_TOLERANCE * step * step).max(1e-12)
}

/// Largest number of CDF evaluations spent on landing one atom.
const MAX_ITERATIONS: usize = 50;

/// Merged atoms on the half-step grid `(first + i + ½)·step`, for both directions.
#[derive(Debug, Clone, PartialEq)]
pub struct LumpedAtoms {
    step: f64,
    first: i64,
    /// P-mass of the atom at node i (REMOVE).
    p: Vec<f64>,
    /// Q-mass of the atom at node i (the ADD atom's P-mass).
    q: Vec<f64>,
    /// Q-mass of the losses below the first interval (ADD: above its top node).
    q_below: f64,
    p_infinity: f64,
    q_neg_infinity: f64,
}

impl LumpedAtoms {
    /// Merge the privacy loss of `mechanism` into atoms on the half-step grid of step `step`,
    /// after cutting P and Q tails of at most `tail_mass/2` per side.
    ///
    /// # Errors
    /// [`Error::GridTooLarge`] beyond [`MAX_GRID_POINTS`] nodes; [`Error::InvalidParameter`]
    /// if the loss at a truncation point is not finite (losses beyond ±[`LOSS_LIMIT`] join the
    /// tails).
    pub fn from_mechanism<M: MonotonePrivacyLoss>(
        mechanism: &M,
        step: f64,
        tail_mass: f64,
    ) -> Result<LumpedAtoms> {
        let (x_lo, x_hi) = mechanism.truncation_points(tail_mass);
        // Beyond ±LOSS_LIMIT: the top is merged and rounded down, the bottom dropped.
        let bottom = mechanism.privacy_loss(x_hi).max(-LOSS_LIMIT);
        let top = mechanism.privacy_loss(x_lo).min(LOSS_LIMIT);
        if !(bottom.is_finite() && top.is_finite()) {
            return Err(Error::invalid(
                "privacy loss range to represent",
                format!("[{bottom}, {top}] nats"),
                "finite",
            ));
        }
        let x_hi = x_hi.min(mechanism.inverse_privacy_loss(bottom));
        let estimate = ((top - bottom) / step) as u64 + 2;
        if estimate > MAX_GRID_POINTS as u64 {
            return Err(Error::GridTooLarge {
                points: estimate,
                limit: MAX_GRID_POINTS as u64,
                hint: format!("use a grid step larger than {step:e}"),
            });
        }
        let first = (bottom / step - 0.5).ceil() as i64;
        let mut p = Vec::with_capacity(estimate as usize);
        let mut q = Vec::with_capacity(estimate as usize);
        let start_edge = mechanism.edge(x_hi);
        let q_below = mechanism.masses_above(start_edge).1;
        let mut lander = Lander {
            mechanism,
            start: bottom,
            start_edge,
            top,
            slope: 0.5,
        };
        let mut node = first;
        while lander.start < top && p.len() < MAX_GRID_POINTS {
            // Where Q has no mass left (it underflowed), the rest merges at +∞-like losses:
            // leave it to the final merge below.
            if mechanism.masses_below(lander.start_edge).1 <= 0.0 {
                break;
            }
            let target = (node as f64 + 0.5) * step;
            node += 1;
            if target - lander.start < 0.05 * step {
                p.push(0.0);
                q.push(0.0);
                continue;
            }
            match lander.land(target, step) {
                Some((pm, qm)) => {
                    p.push(pm);
                    q.push(qm);
                }
                None => break,
            }
        }
        // Mass above the last interval: merged, rounded down to a node (REMOVE only; for ADD
        // these are the lowest losses and are dropped). The node may lie below the first one
        // (when no interval could be closed at all): then the grid is extended downwards,
        // never the mass moved up.
        let mut first = first;
        // What the intervals did not reach: the finite part up to the top of the range is
        // merged and rounded down to the node below its merged loss; the part beyond the top
        // goes to the top node. Both only move mass down.
        let top_edge = mechanism.edge(x_lo.max(mechanism.inverse_privacy_loss(top)));
        let (p_mid, q_mid) = mechanism.masses_between(lander.start_edge, top_edge);
        let (p_above, _) = mechanism.masses_below(top_edge);
        let top_node = (top / step - 0.5).floor() as i64;
        for (mass, merged) in [
            (
                p_mid,
                if q_mid > 0.0 {
                    (p_mid / q_mid).ln().min(top)
                } else {
                    top
                },
            ),
            (p_above, top),
        ] {
            // Mass merging below the bottom of the range may simply be dropped.
            if mass <= 0.0 || merged < bottom {
                continue;
            }
            let node = ((merged / step - 0.5).floor() as i64).min(top_node);
            if node < first {
                let extra = (first - node) as usize;
                p.splice(0..0, std::iter::repeat_n(0.0, extra));
                q.splice(0..0, std::iter::repeat_n(0.0, extra));
                first = node;
            }
            let index = (node - first) as usize;
            if index >= p.len() {
                p.resize(index + 1, 0.0);
                q.resize(index + 1, 0.0);
            }
            p[index] += mass;
        }
        if p.is_empty() {
            p.push(0.0);
            q.push(0.0);
        }
        let (p_infinity, q_neg_infinity) = mechanism.infinite_masses();
        Ok(LumpedAtoms {
            step,
            first,
            p,
            q,
            q_below,
            p_infinity,
            q_neg_infinity,
        })
    }

    /// The lower PMF of the REMOVE pair (the mechanism as given).
    ///
    /// # Guarantee
    /// Lower bound: every atom is an exact merge of true outcomes, moved down by at most
    /// [`landing_tolerance`] (or, for the top tail, rounded down); the bottom tail is dropped.
    pub fn remove_pmf(&self) -> GridPmf {
        lower_pmf(self.step, self.first, self.p.clone(), self.p_infinity, 0.0)
    }

    /// The lower PMF of the ADD pair (P and Q exchanged, losses negated).
    ///
    /// # Guarantee
    /// Lower bound, with atoms possibly [`landing_tolerance`] too high (recorded as the PMF's
    /// loss allowance); the REMOVE bottom tail, ADD's top, is moved down to the top node.
    pub fn add_pmf(&self) -> GridPmf {
        let n = self.q.len() as i64;
        let mut probs: Vec<f64> = self.q.iter().rev().copied().collect();
        let last = probs.len() - 1;
        probs[last] += self.q_below;
        // Node i at (first + i + ½)h becomes −(first + i + ½)h = (−first − i − 1 + ½)h.
        lower_pmf(
            self.step,
            -self.first - n,
            probs,
            self.q_neg_infinity,
            landing_tolerance(self.step),
        )
    }
}

/// Closes intervals from the bottom up so that each merges exactly on its node.
struct Lander<'a, M: MonotonePrivacyLoss> {
    mechanism: &'a M,
    /// Loss where the next interval starts, and the CDF information there.
    start: f64,
    start_edge: M::Edge,
    /// Top of the represented loss range.
    top: f64,
    /// Last measured d(merged loss)/d(interval end), used as the secant's first slope.
    slope: f64,
}

impl<M: MonotonePrivacyLoss> Lander<'_, M> {
    /// Close the interval starting at `self.start` where its merged loss is in
    /// `[target, target + landing_tolerance(step)]`; return its (P, Q) masses, or `None` when the
    /// remaining mass cannot reach the target.
    fn land(&mut self, target: f64, step: f64) -> Option<(f64, f64)> {
        let m = self.mechanism;
        let tolerance = landing_tolerance(step).max(1e-15 * target.abs());
        // Bracket: merged(below) < target ≤ merged(above).
        let mut below = self.start;
        let mut above: Option<(f64, (f64, f64), M::Edge)> = None;
        let mut previous: Option<(f64, f64)> = None;
        let mut t = 2.0 * target - self.start;
        for _ in 0..MAX_ITERATIONS {
            let end = t.min(self.top);
            let edge = m.edge(m.inverse_privacy_loss(end));
            let (pm, qm) = m.masses_between(self.start_edge, edge);
            let merged = merged_loss(pm, qm);
            if merged >= target {
                if above.as_ref().is_none_or(|a| end < a.0) {
                    above = Some((end, (pm, qm), edge));
                }
                if merged - target <= tolerance {
                    break;
                }
            } else if end >= self.top {
                break;
            } else {
                below = below.max(end);
            }
            let secant = match previous {
                Some((tp, bp)) if merged.is_finite() && bp.is_finite() && end != tp => {
                    let s = (merged - bp) / (end - tp);
                    if s > 0.0 {
                        self.slope = s;
                    }
                    end - (merged - target) / self.slope
                }
                _ if merged.is_finite() => end - (merged - target) / self.slope,
                _ => f64::NAN,
            };
            previous = Some((end, merged));
            let upper = above.as_ref().map_or(f64::INFINITY, |a| a.0);
            // Aim a hair above the root so the iterate lands on the valid side.
            let next = secant + 0.25 * tolerance / self.slope;
            t = if next > below && next < upper {
                next
            } else if upper.is_finite() {
                0.5 * (below + upper)
            } else {
                below + step
            };
        }
        let (end, masses, edge) = above?;
        self.start = end;
        self.start_edge = edge;
        Some(masses)
    }
}

/// `ln(P/Q)`, with the limits for empty masses.
fn merged_loss(p: f64, q: f64) -> f64 {
    if p > 0.0 && q > 0.0 {
        (p / q).ln()
    } else if p > 0.0 {
        f64::INFINITY
    } else {
        f64::NEG_INFINITY
    }
}

fn lower_pmf(
    step: f64,
    offset: i64,
    probs: Vec<f64>,
    infinity_mass: f64,
    loss_allowance: f64,
) -> GridPmf {
    let mut pmf = GridPmf::from_parts(step, offset, probs, infinity_mass, Bound::Lower);
    pmf.half_offset = true;
    pmf.loss_allowance = loss_allowance;
    pmf
}
