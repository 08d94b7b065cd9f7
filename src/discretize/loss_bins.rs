//! The exact P- and Q-masses of a mechanism's privacy loss, binned on a uniform grid.

use crate::error::{Error, Result};
use crate::mechanism::MonotonePrivacyLoss;
use crate::numeric::pieces::{spread, spread_map};
use crate::pmf::grid_pmf::LOSS_LIMIT;

/// Largest number of grid points a single mechanism may be discretized onto.
pub const MAX_GRID_POINTS: usize = 1 << 22;

/// A privacy loss distribution before rounding: exact masses between grid nodes.
///
/// Nodes are the losses `ε_j = (first + j)·step`, `j = 0..nodes`. The bins are the intervals
/// between consecutive entries of `ends` (grid offsets, increasing from 0 to the last node):
/// bin k holds the losses in `[ε_{ends[k]}, ε_{ends[k+1]})` with P-mass `p[k]` and Q-mass
/// `q[k]`. Every bin is one step wide unless tails were merged (see
/// [`LossBins::with_merged_tails`]). Losses below `ε_0` and at or above the top node are kept
/// as separate `(P, Q)` totals, and so are the infinite losses.
///
/// Knowing both P- and Q-masses is what makes connect-the-dots exact per bin (each bin's
/// mass is split between its two end nodes keeping both masses; Doroshenko et al., PETS 2022)
/// and it makes the other direction free: the ADD pair is the REMOVE pair swapped, see
/// [`LossBins::swapped`].
///
/// What connect-the-dots actually uses is the excess `P_I − e^{ε} Q_I` of a bin at one of its
/// end nodes, and that is stored too, computed by the mechanism: as a difference of the stored
/// masses it would cancel when δ is far below the bin's mass (small sampling rates), and its
/// absolute rounding error would not be covered by the relative floating-point allowance.
#[derive(Debug, Clone, PartialEq)]
pub struct LossBins {
    pub(crate) step: f64,
    pub(crate) first: i64,
    /// Grid offsets of the bins' end nodes: `0 = ends[0] < ends[1] < … = nodes − 1`.
    pub(crate) ends: Vec<usize>,
    pub(crate) p: Vec<f64>,
    pub(crate) q: Vec<f64>,
    /// `p[k] − e^{ε_lo}·q[k] ≥ 0`: the excess of bin k at its lower node, computed by the
    /// mechanism without cancellation ([`MonotonePrivacyLoss::excess_between`]).
    pub(crate) excess_low: Vec<f64>,
    /// `p[k] − e^{ε_hi}·q[k] ≤ 0`: the excess at its upper node (what the swapped pair
    /// needs, see [`LossBins::swapped`]).
    pub(crate) excess_high: Vec<f64>,
    /// (P, Q) mass of the finite losses below `ε_0`.
    pub(crate) below: (f64, f64),
    /// (P, Q) mass of the finite losses at or above the top node.
    pub(crate) above: (f64, f64),
    /// P-mass of loss +∞ (Q = 0 there).
    pub(crate) p_infinity: f64,
    /// Q-mass of loss −∞ (P = 0 there).
    pub(crate) q_neg_infinity: f64,
}

/// Smallest `|P_I − e^c Q_I| / (P_I + e^c Q_I)` at which the excess is taken as the direct
/// difference: its rounding is then below about `2u/1e-5 ≈ 4e-11` of the excess. (What that
/// and every other rounding of a run leaves in δ is bounded per run, see
/// [`crate::pmf::run_rounding`].)
const DIRECT_EXCESS_MARGIN: f64 = 1e-5;

/// `P_I − e^c·Q_I` of an interval with masses `(p, q)` and `scale = e^c`: the direct
/// difference where it cancels little (error a few ulps of `p + e^c q`, below 4e-11 of the
/// result), else `stable()`, the mechanism's cancellation-free form
/// ([`MonotonePrivacyLoss::excess_between`], which costs more CDF work).
pub(crate) fn excess_between(p: f64, q: f64, scale: f64, stable: impl FnOnce() -> f64) -> f64 {
    let direct = p - scale * q;
    if direct.abs() >= DIRECT_EXCESS_MARGIN * (p + scale * q) {
        direct
    } else {
        stable()
    }
}

impl LossBins {
    /// Bin the privacy loss of `mechanism` on the grid of step `step`, cutting the outcome
    /// space where P and Q have at most `tail_mass / 2` left on each side.
    ///
    /// # Errors
    /// [`Error::GridTooLarge`] if more than [`MAX_GRID_POINTS`] points would be needed, and
    /// [`Error::InvalidParameter`] if the loss at a truncation point is not finite. Losses
    /// beyond ±[`LOSS_LIMIT`] are not an error: they join the tails.
    pub fn from_mechanism<M: MonotonePrivacyLoss>(
        mechanism: &M,
        step: f64,
        tail_mass: f64,
    ) -> Result<LossBins> {
        Self::with_merged_tails(mechanism, step, tail_mass, 0.0)
    }

    /// As [`LossBins::from_mechanism`], but bins of little mass are merged into wider ones: the
    /// bins are the largest dyadic blocks of grid nodes (aligned on multiples of 2^s in absolute
    /// node index) whose [`merge_cost`] (from the larger of their P- and Q-mass) is at most
    /// `budget`, and single steps where even those exceed it. `budget = 0` gives one-step bins
    /// everywhere.
    ///
    /// What merging costs, at every ε and after any composition: connect-the-dots on a bin
    /// `I = [a, b]` instead of on its grid nodes raises the hockey-stick curve only on
    /// `e^ε ∈ (e^a, e^b)`, and by at most [`merge_cost`]`(P_I, b − a)` there; the bins' ranges
    /// are disjoint, so δ(ε) of the event rises by at most `budget` at every ε (also for the
    /// swapped pair, with Q_I). Since
    /// `δ_{A⊗C}(ε) = E_{y∼P_C}[δ_A(ε − L_C(y))]`, composing k events each within `budget`
    /// raises the composed δ by at most k·budget. The rounding stays an upper bound whatever
    /// the budget: only its tightness depends on it. A block of step h is a block of step h/2
    /// with the same masses and width, so where the two grids' ranges agree, halving the step
    /// never coarsens a bin.
    ///
    /// # Errors
    /// As [`LossBins::from_mechanism`]; [`Error::InvalidParameter`] unless `budget` is finite
    /// and ≥ 0.
    pub fn with_merged_tails<M: MonotonePrivacyLoss>(
        mechanism: &M,
        step: f64,
        tail_mass: f64,
        budget: f64,
    ) -> Result<LossBins> {
        check_merge_budget(budget)?;
        let (x_lo, x_hi) = mechanism.truncation_points(tail_mass);
        // Beyond ±LOSS_LIMIT the mass joins the tails (above: +∞ for the upper bound).
        let top_loss = mechanism.privacy_loss(x_lo).min(LOSS_LIMIT);
        let bottom_loss = mechanism.privacy_loss(x_hi).max(-LOSS_LIMIT);
        if !(top_loss.is_finite() && bottom_loss.is_finite()) {
            return Err(Error::invalid(
                "privacy loss range to represent",
                format!("[{bottom_loss}, {top_loss}] nats"),
                "finite",
            ));
        }
        // With loss atoms at the ends of the range (Laplace's ±ε₀), one spare node beyond each
        // end: the atom then lies inside a bin and is split, rather than left in the tails
        // (where the top would go to +∞).
        let pad = i64::from(mechanism.constant_loss_regions() != (None, None));
        // Sizes in f64 first: a tiny step must give an error, not a saturated or wrapped index.
        let first = (bottom_loss / step).floor() - pad as f64;
        let last = (top_loss / step).ceil() + pad as f64;
        let nodes = (last - first + 1.0).max(2.0);
        if !(nodes <= MAX_GRID_POINTS as f64 && first.abs() < 1e15 && last.abs() < 1e15) {
            return Err(Error::GridTooLarge {
                points: if nodes < u64::MAX as f64 {
                    nodes as u64
                } else {
                    u64::MAX
                },
                limit: MAX_GRID_POINTS as u64,
                hint: format!("use a grid step larger than {step:e}"),
            });
        }
        let first = first as i64;
        let nodes = nodes as usize;
        let node_loss = |j: usize| (first + j as i64) as f64 * step;
        let edge_at = |j: usize| mechanism.edge(mechanism.inverse_privacy_loss(node_loss(j)));
        // (grid offset, edge) of every bin end, increasing: the concatenation of `runs`.
        let bottom = (0, edge_at(0));
        let top = (nodes - 1, edge_at(nodes - 1));
        let runs: Vec<Vec<(usize, M::Edge)>> = if budget > 0.0 {
            let mut runs = vec![vec![bottom]];
            let merging = BlockMerge {
                mechanism,
                first,
                step,
                budget,
            };
            merging.ends_in_pieces(bottom, top, &mut runs, &edge_at);
            runs
        } else {
            vec![(0..nodes).map(|j| (j, edge_at(j))).collect()]
        };
        let bins = runs.iter().map(Vec::len).sum::<usize>() - 1;
        let (mut p, mut q) = (vec![0.0; bins], vec![0.0; bins]);
        let (mut excess_low, mut excess_high) = (vec![0.0; bins], vec![0.0; bins]);
        // The bins' masses and excesses, in pieces of MASS_PIECE bins that idle threads may
        // take (each bin's values depend on its two ends alone).
        let pieces = mass_pieces(
            &runs,
            MassSlices {
                p: &mut p,
                q: &mut q,
                excess_low: &mut excess_low,
                excess_high: &mut excess_high,
            },
        );
        let segment = |(previous, closing, out): MassSegment<'_, '_, M::Edge>| {
            let MassSlices {
                p,
                q,
                excess_low: low,
                excess_high: high,
            } = out;
            let (mut lo, mut lo_edge) = previous;
            let mut scale_high = node_loss(lo).exp();
            for (k, &(hi, hi_edge)) in closing.iter().enumerate() {
                // The lower node sits at larger x than the upper one: L is non-increasing.
                let (pj, qj) = mechanism.masses_between(lo_edge, hi_edge);
                p[k] = pj;
                q[k] = qj;
                // The direct difference where it cancels little; the mechanism's stable form
                // (more CDF work) only where it would lose more than ~17 bits (tiny sampling
                // rates, tiny shifts, very fine grids).
                let excess = |node: usize, scale: f64| {
                    excess_between(pj, qj, scale, || {
                        mechanism.excess_between(lo_edge, hi_edge, node_loss(node))
                    })
                };
                let scale_low = scale_high;
                scale_high = node_loss(hi).exp();
                low[k] = excess(lo, scale_low);
                high[k] = excess(hi, scale_high);
                (lo, lo_edge) = (hi, hi_edge);
            }
        };
        spread(pieces, |piece| piece.into_iter().for_each(segment));
        let (p_infinity, q_neg_infinity) = mechanism.infinite_masses();
        let bins = LossBins {
            step,
            first,
            below: mechanism.masses_above(bottom.1),
            above: mechanism.masses_below(top.1),
            ends: runs.iter().flatten().map(|&(j, _)| j).collect(),
            p,
            q,
            excess_low,
            excess_high,
            p_infinity,
            q_neg_infinity,
        };
        Ok(bins)
    }

    /// The bins of the swapped pair (Q, P), whose privacy loss is the negated one.
    ///
    /// ```text
    /// bin [ε_j, ε_{j+1}) with (P, Q)  ↦  bin (−ε_{j+1}, −ε_j] with (Q, P)
    /// ```
    /// Losses exactly on a node change side of the half-open bins; connect-the-dots treats a
    /// bin's mass as spread over the closed bin, so nothing depends on it. The excesses follow
    /// without any subtraction:
    /// ```text
    /// Q_I − e^{−ε_{j+1}} P_I = −e^{−ε_{j+1}}·(P_I − e^{ε_{j+1}} Q_I)      (new lower node −ε_{j+1})
    /// Q_I − e^{−ε_j} P_I     = −e^{−ε_j}·(P_I − e^{ε_j} Q_I)              (new upper node −ε_j)
    /// ```
    pub fn swapped(&self) -> LossBins {
        let last = self.nodes() - 1;
        // Bin k (ends lo < hi) becomes the bin between the mirrored offsets last − hi and
        // last − lo, in reverse order.
        let scaled = |excess: &[f64], node_of: fn(&[usize], usize) -> usize| -> Vec<f64> {
            excess
                .iter()
                .enumerate()
                .rev()
                .map(|(k, &e)| -(-self.node_loss(node_of(&self.ends, k))).exp() * e)
                .collect()
        };
        LossBins {
            step: self.step,
            first: -(self.first + last as i64),
            ends: self.ends.iter().rev().map(|&j| last - j).collect(),
            p: self.q.iter().rev().copied().collect(),
            q: self.p.iter().rev().copied().collect(),
            excess_low: scaled(&self.excess_high, |ends, k| ends[k + 1]),
            excess_high: scaled(&self.excess_low, |ends, k| ends[k]),
            below: (self.above.1, self.above.0),
            above: (self.below.1, self.below.0),
            p_infinity: self.q_neg_infinity,
            q_neg_infinity: self.p_infinity,
        }
    }

    /// Grid step in nats.
    pub fn step(&self) -> f64 {
        self.step
    }

    /// Number of grid nodes (one more than the number of bins when none were merged).
    pub fn nodes(&self) -> usize {
        self.ends.last().map_or(1, |&j| j + 1)
    }

    /// Index of the first grid node: node j sits at loss `(first_node() + j)·step`.
    pub fn first_node(&self) -> i64 {
        self.first
    }

    /// Grid offsets of the bins' end nodes, increasing from 0 to `nodes() − 1`.
    pub fn bin_ends(&self) -> &[usize] {
        &self.ends
    }

    /// Number of bins (fewer than `nodes() − 1` when tails were merged).
    pub fn bins(&self) -> usize {
        self.p.len()
    }

    /// The loss of node j.
    pub(crate) fn node_loss(&self, j: usize) -> f64 {
        (self.first + j as i64) as f64 * self.step
    }
}

/// The budget of [`LossBins::with_merged_tails`] and
/// [`crate::discretize::lumped_atoms::LumpedAtoms::with_merged_tails`]: finite and ≥ 0.
pub(crate) fn check_merge_budget(budget: f64) -> Result<()> {
    if budget.is_finite() && budget >= 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(
            "merge budget",
            budget,
            "a finite number ≥ 0",
        ))
    }
}

/// The most that keeping an interval of losses of width `width` (nats) and mass `mass` (P-
/// mass; Q-mass for the swapped pair) as one bin or one atom moves the hockey-stick curve at
/// any ε, against the curve of its exact losses: `mass·tanh(width/4) ≤ mass·width/4`, and the
/// right side is returned.
///
/// Connect-the-dots splits an atom at loss l ∈ [a, b] into atoms at a and b with the same P-
/// and Q-mass, which keeps its curve `p·(1 − e^{ε−l})₊` outside `e^ε ∈ (e^a, e^b)` and makes
/// it linear in `e^ε` inside. The rise is largest at `ε = l`:
/// ```text
/// p·(1 − e^{a−l})(1 − e^{l−b}) / (1 − e^{a−b})  ≤  p·tanh((b − a)/4)     (equality at l = (a+b)/2)
/// ```
/// and the masses of an interval add up. The split depends only on the interval's (P, Q)
/// masses, so the single atom at the merged loss `ln(P_I/Q_I)` (the lower rounding) has the
/// same split: its curve lies at most as far below the exact one (the lower rounding keeps
/// four times this margin, see [`crate::discretize::lumped_atoms::LumpedAtoms::with_merged_tails`]).
pub fn merge_cost(mass: f64, width: f64) -> f64 {
    mass * (0.25 * width)
}

/// Bins per piece of [`LossBins::with_merged_tails`]' mass loop (see
/// [`crate::numeric::pieces`]): fixed, so the pieces depend on the sizes alone.
const MASS_PIECE: usize = 2048;

/// The output of [`LossBins::with_merged_tails`]' mass loop for some bins.
struct MassSlices<'a> {
    p: &'a mut [f64],
    q: &'a mut [f64],
    excess_low: &'a mut [f64],
    excess_high: &'a mut [f64],
}

impl<'a> MassSlices<'a> {
    /// The first `bins` bins' slices, the rest left in `self`.
    fn split_off_front(&mut self, bins: usize) -> MassSlices<'a> {
        let front = |slice: &mut &'a mut [f64]| {
            let (head, tail) = std::mem::take(slice).split_at_mut(bins);
            *slice = tail;
            head
        };
        MassSlices {
            p: front(&mut self.p),
            q: front(&mut self.q),
            excess_low: front(&mut self.excess_low),
            excess_high: front(&mut self.excess_high),
        }
    }
}

/// Bins of the mass loop between the end `.0` and the last of the ends `.1`, with their
/// outputs.
type MassSegment<'r, 'o, E> = ((usize, E), &'r [(usize, E)], MassSlices<'o>);

/// The mass loop's pieces over the bin ends `runs` (their concatenation, increasing): each
/// about [`MASS_PIECE`] bins, as segments of consecutive bins within a run. (The runs are
/// not copied into one list of ends: at grid step 1e-4 a DP-SGD step has some 15,000 ends
/// of 48 bytes, and that list was fresh memory filled on one thread.)
fn mass_pieces<'r, 'o, E: Copy>(
    runs: &'r [Vec<(usize, E)>],
    mut out: MassSlices<'o>,
) -> Vec<Vec<MassSegment<'r, 'o, E>>> {
    let mut pieces = Vec::new();
    let (mut piece, mut piece_bins) = (Vec::new(), 0);
    let mut previous: Option<(usize, E)> = None;
    for run in runs {
        let (mut below, mut closing) = match (previous, run.split_first()) {
            (Some(below), _) => (below, &run[..]),
            (None, Some((&bottom, rest))) => (bottom, rest),
            (None, None) => continue,
        };
        while !closing.is_empty() {
            let (segment, rest) = closing.split_at(closing.len().min(MASS_PIECE - piece_bins));
            piece.push((below, segment, out.split_off_front(segment.len())));
            piece_bins += segment.len();
            if piece_bins == MASS_PIECE {
                pieces.push(std::mem::take(&mut piece));
                piece_bins = 0;
            }
            below = segment.last().copied().unwrap_or(below);
            closing = rest;
        }
        // (`below` is now the run's last end.)
        previous = Some(below);
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}

/// Widest block that [`BlockMerge::ends_in_pieces`] leaves to [`BlockMerge::merge`] as one piece (23
/// pieces for a DP-SGD step at σ 1, q 0.01, grid step 1e-4, most of the work in 8 of them).
const PIECE_WIDTH: usize = 1 << 10;

/// A block of [`BlockMerge::merge`]'s recursion: its upper end alone when it is one bin,
/// else the block, to be merged (or split) as a piece of its own.
enum TopBlock<E> {
    End((usize, E)),
    Open((usize, E), (usize, E)),
}

/// How the bin ends of [`LossBins::with_merged_tails`] are chosen: blocks of grid offsets
/// (nodes `first + j` at losses `(first + j)·step`) merged into one bin while their
/// [`merge_cost`] is at most `budget`, else halved.
struct BlockMerge<'a, M> {
    mechanism: &'a M,
    first: i64,
    step: f64,
    budget: f64,
}

impl<M: MonotonePrivacyLoss> BlockMerge<'_, M> {
    /// The block `(lo, hi]`'s larger mass (P or Q), and whether it is one bin: one step wide
    /// or at most the budget's cost (NaN masses fail the test and are split down to single
    /// steps, as without a budget).
    fn one_bin(&self, lo: (usize, M::Edge), hi: (usize, M::Edge)) -> (f64, bool) {
        let width = hi.0 - lo.0;
        let (p, q) = self.mechanism.masses_between(lo.1, hi.1);
        let mass = p.max(q);
        let merged = width == 1 || merge_cost(mass, width as f64 * self.step) <= self.budget;
        (mass, merged)
    }

    /// The node a block `(lo, hi]` is split at (see [`split_point`]).
    fn middle_node(&self, lo: usize, hi: usize) -> usize {
        let first = self.first;
        (split_point(first + lo as i64, first + hi as i64) - first) as usize
    }

    /// [`BlockMerge::middle_node`] with its edge.
    fn middle<F: Fn(usize) -> M::Edge + ?Sized>(
        &self,
        lo: usize,
        hi: usize,
        edge_at: &F,
    ) -> (usize, M::Edge) {
        let middle = self.middle_node(lo, hi);
        (middle, edge_at(middle))
    }

    /// Append to `runs` the bin ends that [`BlockMerge::merge`] appends for the block
    /// `(lo, hi]`, the same ones bit for bit (a run per piece, and a run for the ends
    /// between two pieces: see [`mass_pieces`]), with the work cut into pieces that idle threads
    /// may take (see [`crate::numeric::pieces`]): the recursion is taken here, deciding as it
    /// does, down to blocks that are one bin or at most [`PIECE_WIDTH`] wide, and each block
    /// of the latter kind is merged as a piece. The pieces depend on the sizes alone, never
    /// on the threads. (The connect-the-dots PMF of a DP-SGD step at grid step 1e-4, 36,701
    /// nodes, spends most of its 0.6 ms here, nearly all of it within some 8,000 nodes where
    /// the mass is.)
    fn ends_in_pieces<F: Fn(usize) -> M::Edge + Sync>(
        &self,
        lo: (usize, M::Edge),
        hi: (usize, M::Edge),
        runs: &mut Vec<Vec<(usize, M::Edge)>>,
        edge_at: &F,
    ) where
        M: Sync,
    {
        let mut blocks = Vec::new();
        let mut pending = vec![(lo, hi)];
        // Depth first, lower half first: the blocks come out in increasing order. (Blocks
        // wider than a piece are never tabulated by `merge`: DENSE_BLOCK is the pieces' width.)
        while let Some((lo, hi)) = pending.pop() {
            if hi.0 - lo.0 <= PIECE_WIDTH {
                blocks.push(TopBlock::Open(lo, hi));
            } else if self.one_bin(lo, hi).1 {
                blocks.push(TopBlock::End(hi));
            } else {
                let middle = self.middle(lo.0, hi.0, edge_at);
                pending.push((middle, hi));
                pending.push((lo, middle));
            }
        }
        let open: Vec<_> = blocks
            .iter()
            .filter_map(|block| match block {
                TopBlock::Open(lo, hi) => Some((*lo, *hi)),
                TopBlock::End(_) => None,
            })
            .collect();
        let mut merged = spread_map(open, |(lo, hi)| {
            let mut piece = Vec::with_capacity(hi.0 - lo.0);
            self.merge(lo, hi, &mut piece);
            piece
        })
        .into_iter();
        // The ends between pieces gathered into runs of their own.
        let mut between = Vec::new();
        for block in blocks {
            match block {
                TopBlock::End(hi) => between.push(hi),
                TopBlock::Open(..) => {
                    if !between.is_empty() {
                        runs.push(std::mem::take(&mut between));
                    }
                    runs.extend(merged.next());
                }
            }
        }
        if !between.is_empty() {
            runs.push(between);
        }
    }

    /// Append to `ends` the bin ends of the grid offsets `(lo, hi]` (the end `hi` last): the
    /// block is one bin if its [`merge_cost`] is at most `budget` (or it is one step wide),
    /// otherwise it is split at its most aligned interior node (see [`split_point`]) and both
    /// halves are treated alike. Every node split at becomes a bin end, so the ends are the
    /// nodes split at, in increasing order, and then `hi`.
    ///
    /// The halving goes level by level (every block of a level decided, then the middles of
    /// those that split get their edges in one [`MonotonePrivacyLoss::edges`] batch, a
    /// Gaussian's CDFs in vector instructions), not one block after the other: where the
    /// tails thin out the blocks split down to a few steps, and there the edges one at a time
    /// took two thirds of the time of the bins they made. The decisions are the same (each
    /// depends on its block's two ends alone) and so are the edges, bit for bit.
    ///
    /// A block at most [`DENSE_BLOCK`] wide whose halving would go on down to single steps
    /// were its mass spread evenly (see [`splits_to_single_steps`]) has the edges of all its
    /// interior nodes computed first, in one batch, and is then split with its edges read
    /// from that table ([`BlockMerge::merge_tabulated`]): a DP-SGD step at grid step 1e-4
    /// took 0.61 ms instead of 0.92 ms with the table computed one edge at a time. Only where
    /// the mass is uneven are a few edges computed that no bin uses.
    fn merge(&self, lo: (usize, M::Edge), hi: (usize, M::Edge), ends: &mut Vec<(usize, M::Edge)>) {
        // A block that is one bin, or tabulated whole (most blocks where the mass is), as
        // they come; otherwise its first halving.
        let mut halved = match self.decide(lo, hi) {
            Halving::OneBin => {
                ends.push(hi);
                return;
            }
            Halving::Tabulated => {
                self.merge_tabulated(lo, hi, ends);
                return;
            }
            Halving::At(middle) => vec![(lo, middle, hi)],
        };
        // The nodes split at with their edges, sorted at the end (a list, not a slot per node
        // of the block: a block is up to a piece wide, and writing every slot of such a table
        // faulted its pages in for a few splits).
        let mut split_at: Vec<(usize, M::Edge)> = Vec::new();
        let (mut level, mut points, mut tabulated) = (Vec::new(), Vec::new(), Vec::new());
        while !halved.is_empty() {
            // The middles of this level, their edges in one batch.
            points.clear();
            points.extend(halved.iter().map(|&(_, middle, _)| self.inverse_at(middle)));
            let edges = self.mechanism.edges(&points);
            level.clear();
            for (&(lo, middle, hi), edge) in halved.iter().zip(edges) {
                split_at.push((middle, edge));
                let middle = (middle, edge);
                level.push((lo, middle));
                level.push((middle, hi));
            }
            // The next level's decisions.
            halved.clear();
            for &(lo, hi) in &level {
                match self.decide(lo, hi) {
                    Halving::OneBin => {}
                    Halving::Tabulated => {
                        tabulated.clear();
                        self.merge_tabulated(lo, hi, &mut tabulated);
                        // Its ends but the last (`hi`, a node split at above).
                        tabulated.pop();
                        split_at.extend_from_slice(&tabulated);
                    }
                    Halving::At(middle) => halved.push((lo, middle, hi)),
                }
            }
        }
        // (Each node is split at once at most: the blocks at one level are disjoint.)
        split_at.sort_unstable_by_key(|&(node, _)| node);
        debug_assert!(split_at.windows(2).all(|pair| pair[0].0 < pair[1].0));
        ends.extend_from_slice(&split_at);
        ends.push(hi);
    }

    /// What [`BlockMerge::merge`] does with the block `(lo, hi]`: keep it as one bin,
    /// tabulate its interior edges and halve it from that table (see
    /// [`splits_to_single_steps`]), or halve it at its middle node.
    fn decide(&self, lo: (usize, M::Edge), hi: (usize, M::Edge)) -> Halving {
        let width = hi.0 - lo.0;
        let (mass, merged) = self.one_bin(lo, hi);
        if merged {
            Halving::OneBin
        } else if width <= DENSE_BLOCK
            && splits_to_single_steps(mass, width, self.step, self.budget)
        {
            Halving::Tabulated
        } else {
            Halving::At(self.middle_node(lo.0, hi.0))
        }
    }

    /// `x*(ε)` at node j's loss `(first + j)·step`: where its edge is taken.
    fn inverse_at(&self, j: usize) -> f64 {
        self.mechanism
            .inverse_privacy_loss((self.first + j as i64) as f64 * self.step)
    }

    /// [`BlockMerge::merge`] for a block whose interior edges are computed first, in one
    /// batch, and read from that table as it is halved (one block after the other: the table
    /// is there already).
    fn merge_tabulated(
        &self,
        lo: (usize, M::Edge),
        hi: (usize, M::Edge),
        ends: &mut Vec<(usize, M::Edge)>,
    ) {
        let base = lo.0 + 1;
        let points: Vec<f64> = (base..hi.0).map(|j| self.inverse_at(j)).collect();
        let edges = self.mechanism.edges(&points);
        self.halve_from_table(lo, hi, ends, &|j| edges[j - base]);
    }

    /// The halving of [`BlockMerge::merge`], one block after the other, with the edges of
    /// the nodes split at from `edge_at` (a table of the block's interior edges).
    fn halve_from_table(
        &self,
        lo: (usize, M::Edge),
        hi: (usize, M::Edge),
        ends: &mut Vec<(usize, M::Edge)>,
        edge_at: &dyn Fn(usize) -> M::Edge,
    ) {
        if self.one_bin(lo, hi).1 {
            ends.push(hi);
            return;
        }
        let middle = self.middle(lo.0, hi.0, edge_at);
        self.halve_from_table(lo, middle, ends, edge_at);
        self.halve_from_table(middle, hi, ends, edge_at);
    }
}

/// [`BlockMerge::decide`]'s verdict on a block.
enum Halving {
    /// The block is one bin.
    OneBin,
    /// Its interior edges are computed in one batch and it is halved from that table.
    Tabulated,
    /// It is halved at this node.
    At(usize),
}

/// Widest block whose interior edges [`BlockMerge::merge`] computes in one loop (1024 nodes: some
/// 40 KB of Gaussian edges, freed when the block is done): the pieces' width, so that a
/// piece tabulates at most once.
const DENSE_BLOCK: usize = PIECE_WIDTH;

/// Whether a block of `width` steps and (larger) mass `mass`, too costly to be one bin, would
/// be halved down to single steps were its mass spread evenly, with a factor 4 to spare: a
/// sub-block of 2 steps then holds `2·mass/width` and costs `mass·step/width`, i.e. the
/// block's cost times `4/width²`.
fn splits_to_single_steps(mass: f64, width: usize, step: f64, budget: f64) -> bool {
    let width = width as f64;
    merge_cost(mass, width * step) * 4.0 / (width * width) > 4.0 * budget
}

/// The most aligned node strictly between the absolute node indices `a < b − 1`: the one
/// divisible by the largest power of two (0 if the interval contains it). A dyadic block
/// `[m·2^s, (m+1)·2^s]` splits at its middle.
fn split_point(a: i64, b: i64) -> i64 {
    let (lo, hi) = (a + 1, b - 1);
    if lo >= hi {
        return lo;
    }
    if lo <= 0 && hi >= 0 {
        return 0;
    }
    // Same sign: they agree above their highest differing bit d, where hi has a 1 and lo a 0.
    // Every node in between shares that prefix; the most aligned is lo itself if its bits
    // d..0 are all 0, otherwise the prefix followed by a 1 and zeros.
    let d = 63 - ((lo ^ hi) as u64).leading_zeros();
    let below = |bits: u32| {
        if bits >= 63 {
            i64::MAX
        } else {
            (1i64 << bits) - 1
        }
    };
    if lo & below(d + 1) == 0 {
        lo
    } else {
        hi & !below(d)
    }
}

#[cfg(test)]
mod tests {
    use super::{excess_between, merge_cost, split_point, LossBins};
    use crate::mechanism::{Gaussian, Laplace, MonotonePrivacyLoss, PoissonSubsampled};

    /// The bin ends of [`LossBins::with_merged_tails`] and their (P, Q) masses by the plain
    /// recursion: halve every block whose merge cost exceeds the budget at its most aligned
    /// node, computing each edge alone when it is reached (no batches).
    fn ends_one_edge_at_a_time<M: MonotonePrivacyLoss>(
        mechanism: &M,
        bins: &LossBins,
        budget: f64,
    ) -> (Vec<usize>, Vec<(f64, f64)>) {
        let (ends, bins) = bins_one_edge_at_a_time(mechanism, bins, budget);
        (ends, bins.into_iter().map(|(p, q, _, _)| (p, q)).collect())
    }

    /// A bin of [`bins_one_edge_at_a_time`]: `(p, q, excess at the lower node, excess at the
    /// upper node)`.
    type ReferenceBin = (f64, f64, f64, f64);

    /// [`ends_one_edge_at_a_time`] with each bin's excesses at its two end nodes, as
    /// [`super::excess_between`] takes them from the bin's masses and the mechanism.
    fn bins_one_edge_at_a_time<M: MonotonePrivacyLoss>(
        mechanism: &M,
        bins: &LossBins,
        budget: f64,
    ) -> (Vec<usize>, Vec<ReferenceBin>) {
        let node_loss = |j: usize| bins.node_loss(j);
        let (first, step) = (bins.first, bins.step);
        let edge_at = |j: usize| {
            mechanism.edge(mechanism.inverse_privacy_loss((first + j as i64) as f64 * step))
        };
        let mut ends = vec![0];
        let mut masses = Vec::new();
        let mut pending = vec![(
            (0, edge_at(0)),
            (bins.nodes() - 1, edge_at(bins.nodes() - 1)),
        )];
        // Depth first, lower half first: the ends come out increasing.
        while let Some((lo, hi)) = pending.pop() {
            let (p, q) = mechanism.masses_between(lo.1, hi.1);
            if hi.0 - lo.0 == 1 || merge_cost(p.max(q), (hi.0 - lo.0) as f64 * step) <= budget {
                ends.push(hi.0);
                let excess = |node: usize| {
                    excess_between(p, q, node_loss(node).exp(), || {
                        mechanism.excess_between(lo.1, hi.1, node_loss(node))
                    })
                };
                masses.push((p, q, excess(lo.0), excess(hi.0)));
                continue;
            }
            let middle = (split_point(first + lo.0 as i64, first + hi.0 as i64) - first) as usize;
            let middle = (middle, edge_at(middle));
            pending.push((middle, hi));
            pending.push((lo, middle));
        }
        (ends, masses)
    }

    /// Blocks whose edges are computed ahead in one batch (dense regions, see `BlockMerge::merge`)
    /// give the bins, masses and excesses of the plain recursion, bit for bit, also where the
    /// mass is uneven enough inside such a block that parts of it merge (budgets from 0 to far
    /// above the bins' masses, grid steps from 1e-4 to 0.05); the mass loop's pieces, which
    /// cross the runs of ends that the merge leaves, pair every bin with its own two ends.
    #[test]
    fn computing_a_dense_blocks_edges_ahead_gives_the_same_bins() {
        let sampled = |sigma: f64, rate: f64| {
            PoissonSubsampled::new(Gaussian::new(sigma, 1.0).expect("σ"), rate).expect("q")
        };
        let mut dense_blocks_seen = 0;
        for (sigma, rate) in [
            (1.0, 0.01),
            (0.5, 0.3),
            (2.0, 1e-4),
            (0.8, 0.004),
            (40.0, 1.0),
        ] {
            let mechanism = sampled(sigma, rate);
            for step in [1e-4, 1e-3, 0.05] {
                for budget in [0.0, 1e-13, 1e-9, 1e-5] {
                    let bins =
                        LossBins::with_merged_tails(&mechanism, step, 1e-15, budget).expect("bins");
                    let (ends, masses) = bins_one_edge_at_a_time(&mechanism, &bins, budget);
                    let case = format!("σ {sigma}, q {rate}, h {step}, b {budget}");
                    assert_eq!(bins.ends, ends, "{case}");
                    assert_eq!(bins.p.len(), masses.len(), "{case}");
                    for (k, &(p, q, low, high)) in masses.iter().enumerate() {
                        assert_eq!(bins.p[k].to_bits(), p.to_bits(), "{case}, bin {k}");
                        assert_eq!(bins.q[k].to_bits(), q.to_bits(), "{case}, bin {k}");
                        let excesses = (bins.excess_low[k], bins.excess_high[k]);
                        assert_eq!(
                            (excesses.0.to_bits(), excesses.1.to_bits()),
                            (low.to_bits(), high.to_bits()),
                            "{case}, bin {k}: excesses {excesses:?}, expected {:?}",
                            (low, high)
                        );
                    }
                    let single_steps = bins.ends.windows(2).filter(|w| w[1] - w[0] == 1).count();
                    if budget > 0.0 && single_steps > 64 && bins.ends.len() < bins.nodes() {
                        dense_blocks_seen += 1;
                    }
                }
            }
        }
        let laplace = Laplace::new(1.0, 0.7).expect("laplace");
        for budget in [0.0, 1e-12, 1e-6] {
            let bins = LossBins::with_merged_tails(&laplace, 1e-3, 1e-15, budget).expect("bins");
            assert_eq!(
                bins.ends,
                ends_one_edge_at_a_time(&laplace, &bins, budget).0
            );
        }
        // (Merged tails beside a single-step body: the dense path was taken.)
        assert!(dense_blocks_seen >= 10, "{dense_blocks_seen}");
    }

    /// Computed on a pool of two threads, which share the pieces of the bin ends and of the
    /// mass loop (see `BlockMerge::ends_in_pieces`), the bins are those computed on one thread,
    /// bit for bit (ends, masses, excesses and the tails' totals), on DP-SGD steps whose
    /// bodies span many pieces and on Laplace's atoms.
    #[test]
    fn bins_computed_in_pieces_on_two_threads_are_those_of_one_thread() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool of two threads");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let same = |a: &LossBins, b: &LossBins, case: &str| {
            assert_eq!(a.ends, b.ends, "{case}");
            for (x, y) in [
                (&a.p, &b.p),
                (&a.q, &b.q),
                (&a.excess_low, &b.excess_low),
                (&a.excess_high, &b.excess_high),
            ] {
                assert_eq!(bits(x), bits(y), "{case}");
            }
            assert_eq!(a, b, "{case}");
        };
        let mut many_pieces = 0;
        for (sigma, rate) in [(1.0, 0.01), (0.8, 0.004), (0.5, 0.3), (2.0, 1e-4)] {
            let mechanism =
                PoissonSubsampled::new(Gaussian::new(sigma, 1.0).expect("σ"), rate).expect("q");
            for step in [1e-4, 1e-3] {
                for budget in [0.0, 1e-13, 1e-9] {
                    let alone =
                        LossBins::with_merged_tails(&mechanism, step, 1e-15, budget).expect("bins");
                    let shared = pool.install(|| {
                        LossBins::with_merged_tails(&mechanism, step, 1e-15, budget).expect("bins")
                    });
                    same(
                        &alone,
                        &shared,
                        &format!("σ {sigma}, q {rate}, h {step}, b {budget}"),
                    );
                    if alone.nodes() > 8 * super::PIECE_WIDTH
                        && alone.bins() > 4 * super::MASS_PIECE
                    {
                        many_pieces += 1;
                    }
                }
            }
        }
        assert!(many_pieces >= 6, "{many_pieces}");
        let laplace = Laplace::new(1.0, 0.7).expect("laplace");
        for budget in [0.0, 1e-12] {
            let alone = LossBins::with_merged_tails(&laplace, 1e-4, 1e-15, budget).expect("bins");
            let shared = pool.install(|| {
                LossBins::with_merged_tails(&laplace, 1e-4, 1e-15, budget).expect("bins")
            });
            same(&alone, &shared, &format!("Laplace, b {budget}"));
        }
    }

    /// The rise of an atom's hockey-stick curve when connect-the-dots splits it onto the ends
    /// of its bin, brute force over a fine ε grid: never above [`merge_cost`], and close to it
    /// for a narrow bin with the atom in the middle (so the factor ¼ is not loose).
    #[test]
    fn splitting_an_atom_onto_its_bin_ends_costs_at_most_the_merge_cost() {
        for (a, b) in [
            (-0.3, -0.2999),
            (0.0, 0.01),
            (1.0, 1.5),
            (-2.0, 1.0),
            (5.0, 9.0),
        ] {
            let width: f64 = b - a;
            let mut largest_ratio: f64 = 0.0;
            for i in 1..200 {
                let l = a + width * f64::from(i) / 200.0;
                // Mass 1 at loss l: P = 1, Q = e^{−l}; split keeping both masses.
                let p_b = (-(a - l).exp_m1()) / (-(a - b).exp_m1());
                let p_a = 1.0 - p_b;
                let curve = |e: f64, p: f64, at: f64| p * (-(e - at).exp_m1()).max(0.0);
                let rise = (0..=4000)
                    .map(|j| a + width * f64::from(j) / 4000.0)
                    .chain([l])
                    .map(|e| curve(e, p_a, a) + curve(e, p_b, b) - curve(e, 1.0, l))
                    .fold(f64::NEG_INFINITY, f64::max);
                let cost = merge_cost(1.0, width);
                assert!(
                    rise <= cost * (1.0 + 1e-9) + 1e-15,
                    "[{a}, {b}] atom at {l}: rise {rise:e} above the merge cost {cost:e}"
                );
                largest_ratio = largest_ratio.max(rise / cost);
            }
            // tanh(w/4)/(w/4): 1 − w²/48 for narrow bins.
            let expected = (0.25 * width).tanh() / (0.25 * width);
            assert!(
                largest_ratio >= expected * (1.0 - 1e-6) && largest_ratio <= 1.0,
                "[{a}, {b}]: largest rise {largest_ratio} of the merge cost, expected {expected}"
            );
        }
    }

    /// The split point lies strictly inside and no point inside has more trailing zeros
    /// (brute force over small ranges of both signs).
    #[test]
    fn split_point_is_the_most_aligned_interior_node() {
        let alignment = |x: i64| if x == 0 { 64 } else { x.trailing_zeros() };
        for a in -70i64..70 {
            for b in a + 2..a + 80 {
                let c = split_point(a, b);
                assert!(a < c && c < b, "({a}, {b}) → {c}");
                let best = (a + 1..b).map(alignment).max().unwrap();
                assert_eq!(alignment(c), best, "({a}, {b}) → {c}");
            }
        }
        // Dyadic blocks split at their middle.
        assert_eq!(split_point(1024, 2048), 1536);
        assert_eq!(split_point(-2048, -1024), -1536);
    }
}
