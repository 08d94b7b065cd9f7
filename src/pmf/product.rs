//! Composition of many distinct PMFs, each repeated, by one FFT product.
//!
//! The sum of independent losses, `k_f` draws from each PMF `p_f`, has the distribution
//!
//! ```text
//! p = ∗_f p_f^{∗k_f} = IFFT( Π_f FFT(p_f)^{k_f} )
//! ```
//!
//! computed over one circular buffer sized to a Chernoff window of the whole sum (see
//! [`GridPmf::self_compose`], of which this is the many-factor form). A balanced tree of
//! pairwise compositions does the same work with a transform per pair at every level, and
//! truncates (and charges) its tails at every level; the product truncates once. With a
//! thousand distinct events that is the difference between seconds and minutes.
//!
//! The window, its aliasing, the +∞ mass and inputs short of total mass 1 are handled exactly
//! as in [`GridPmf::self_compose_tilted`], with the moments, masses and logarithms summed over the
//! factors (`Σ k_f·ln M_f(λ)` for the moment generating function of the sum).

use crate::bound::Bound;
use crate::numeric::fft_convolution::product_window;
use crate::numeric::summation::{compensated_sum, neumaier_sum};
use crate::pmf::composition::{
    chernoff_mass_from, power_window_for, product_moments, quantile_tilts, remove_from_bottom,
    Window, MAX_COMPOSED_POINTS, NEGLIGIBLE_SHORTFALL,
};
use crate::pmf::grid_pmf::{whole_steps, GridPmf, LOSS_LIMIT};
use crate::Result;

/// Total mass above which an upper PMF is left to the pairwise path (which has the rule for
/// it, see [`GridPmf::self_compose_tilted`]).
const MASS_SLACK: f64 = 1e-9;

/// The composition of `parts` = (PMF, count), by one FFT product over a Chernoff window with
/// at most `tail_mass / 2` beyond each end, and `tilts` tilted products for the upper tail.
///
/// Returns `None` when the product does not apply and the caller should compose pairwise:
/// fewer than two parts, steps or bounds that differ, a part that already carries per-entry
/// error bounds (a composed PMF), a part with no finite mass or (upper) a total mass above
/// 1 + 1e-9, a sum lying wholly beyond ±[`LOSS_LIMIT`], or a window longer than
/// [`MAX_COMPOSED_POINTS`].
///
/// # Guarantee
/// As [`GridPmf::self_compose_tilted`]: an upper PMF keeps every truncated or wrapped mass on
/// the pessimistic side (+∞ or moved up), a lower one on the optimistic side (dropped, moved
/// down, or recorded in `excess_mass`); the FFT product's round-off is bounded per bin and
/// charged per entry.
pub fn compose_product(
    parts: &[(&GridPmf, u64)],
    tail_mass: f64,
    tilts: usize,
) -> Option<Result<GridPmf>> {
    compose_product_reaching(parts, tail_mass, tilts, false)
}

/// [`compose_product`], and with `reaching` (a retry held back by round-off) also the
/// product in double-double arithmetic, whose entries are within about 1e-28 of the exact
/// ones (see `GridPmf::replace_by_double_double_power`).
pub(crate) fn compose_product_reaching(
    parts: &[(&GridPmf, u64)],
    tail_mass: f64,
    tilts: usize,
    reaching: bool,
) -> Option<Result<GridPmf>> {
    let (first, _) = *parts.first()?;
    if parts.len() < 2 {
        return None;
    }
    let (step, bound) = (first.step, first.bound);
    for &(part, k) in parts {
        let usable = k > 0
            && part.step == step
            && part.bound == bound
            && part.entry_errors.is_none()
            && part.probs.iter().any(|&p| p > 0.0)
            && (bound == Bound::Lower || part.total_mass() <= 1.0 + MASS_SLACK);
        if !usable {
            return None;
        }
    }
    // Inputs short of total mass 1 are made whole first (see `GridPmf::with_restored_mass`).
    let negligible = NEGLIGIBLE_SHORTFALL / parts.len() as f64;
    let restored: Vec<Option<(GridPmf, f64)>> = parts
        .iter()
        .map(|&(part, k)| part.with_restored_mass(k, negligible))
        .collect();
    let parts: Vec<(&GridPmf, u64)> = parts
        .iter()
        .zip(&restored)
        .map(|(&(part, k), restored)| (restored.as_ref().map_or(part, |(pmf, _)| pmf), k))
        .collect();
    let parts = parts.as_slice();
    // Index arithmetic in i128: Σ k·(len − 1) and Σ k·offset overflow u64 only for absurd
    // inputs, which go to the pairwise path (and its errors).
    let mut full_top: i128 = 0;
    let mut base: i128 = 0;
    let mut halves: i128 = 0;
    for &(part, k) in parts {
        let k = i128::from(k);
        full_top += k * (part.probs.len() as i128 - 1);
        base += k * i128::from(part.offset);
        halves += k * i128::from(part.half_offset);
    }
    let full_top = u64::try_from(full_top).ok()?;
    // Losses of the full result: (base + halves/2 + i)·h, i = 0..=full_top, as read (less the
    // allowance's whole steps, which the result moves into its offset); the window may use
    // the indices whose losses lie within ±LOSS_LIMIT.
    let allowance: f64 = parts
        .iter()
        .map(|&(p, k)| k as f64 * p.loss_allowance)
        .sum();
    let first_index = base as f64 + 0.5 * halves as f64 - whole_steps(allowance, step) as f64;
    let lowest = first_index * step;
    let highest = lowest + full_top as f64 * step;
    if highest < -LOSS_LIMIT || lowest > LOSS_LIMIT {
        // Everything beyond the loss range: the pairwise path has the rule for that.
        return None;
    }
    let cap = |loss: f64, round: fn(f64) -> f64| -> u64 {
        round(loss / step - first_index).clamp(0.0, full_top as f64) as u64
    };
    let caps = (cap(-LOSS_LIMIT, f64::ceil), cap(LOSS_LIMIT, f64::floor));
    let factors: Vec<(&[f64], u64)> = parts
        .iter()
        .map(|&(p, k)| (p.probs.as_slice(), k))
        .collect();
    let moments = product_moments(&factors, step);
    // As in self-composition (k = 1: the moments are the sum's).
    let window = power_window_for(&moments, 1, tail_mass, full_top, caps, tilts);
    if window.top < caps.0 {
        return None;
    }
    let len = window.top - window.bottom + 1;
    if len > MAX_COMPOSED_POINTS {
        return None;
    }
    compose_in_window(
        parts, &factors, &moments, &window, base, halves, tail_mass, tilts, reaching,
    )
}

/// `ln x` for a mass x > 0, accurate near 1 (`ln1p(x − 1)`) and for tiny x alike.
fn ln_mass(x: f64) -> f64 {
    if x >= 0.5 {
        (x - 1.0).ln_1p()
    } else {
        x.ln()
    }
}

/// The body of [`compose_product`], once the window is known to fit; `None` (decline) if
/// the masses it derives are not finite.
#[allow(clippy::too_many_arguments)]
fn compose_in_window(
    parts: &[(&GridPmf, u64)],
    factors: &[(&[f64], u64)],
    moments: &crate::pmf::tail_moments::TailMoments,
    window: &Window,
    base: i128,
    halves: i128,
    tail_mass: f64,
    tilts: usize,
    reaching: bool,
) -> Option<Result<GridPmf>> {
    let (step, bound) = (parts[0].0.step, parts[0].0.bound);
    let len = (window.top - window.bottom + 1) as usize;
    let full_top: u64 = factors.iter().map(|&(p, k)| k * (p.len() as u64 - 1)).sum();
    // Per-part finite masses, +∞ masses and Σ k·ln f (the log of the exact finite total).
    let finite: Vec<f64> = parts.iter().map(|(p, _)| p.finite_mass()).collect();
    // Σ k·f(part), compensated while every term is finite (an infinite one, a run certain to
    // be infinite, makes the plain sum exact: ±∞).
    let sum_k = |f: &dyn Fn(usize, &GridPmf) -> f64| -> f64 {
        let terms: Vec<f64> = parts
            .iter()
            .enumerate()
            .map(|(i, &(p, k))| k as f64 * f(i, p))
            .collect();
        if terms.iter().all(|t| t.is_finite()) {
            neumaier_sum(terms)
        } else {
            terms.iter().sum()
        }
    };
    let log_finite = sum_k(&|i, _| ln_mass(finite[i]));
    let composed_mass = log_finite.exp();
    // +∞: stored Π(f + m)^k − Π f^k, and (upper) the chance that some run is infinite,
    // 1 − Π(1 − m)^k (see `self_compose_tilted` for why the larger one).
    let log_total = sum_k(&|i, p| (finite[i] + p.infinity_mass).min(1.0).ln());
    let log_kept_of_total = sum_k(&|i, p| {
        let t = finite[i] + p.infinity_mass;
        if t > 0.0 {
            (-p.infinity_mass / t).ln_1p()
        } else {
            0.0
        }
    });
    let stored = (log_total.exp() * -log_kept_of_total.exp_m1()).clamp(0.0, 1.0);
    // 1 − Π(1 − m)^k in log space (1 when some m = 1).
    let some_run_infinite =
        (-sum_k(&|_, p| (-p.infinity_mass.min(1.0)).ln_1p()).exp_m1()).clamp(0.0, 1.0);
    let mut infinity_mass = match bound {
        Bound::Upper => stored.max(some_run_infinite),
        Bound::Lower => stored,
    };
    if [composed_mass, infinity_mass]
        .iter()
        .any(|x| !x.is_finite())
    {
        return None;
    }
    let mut conv = product_window(factors, window.bottom, len);
    let mut excess_mass = sum_k(&|_, p| p.excess_mass);
    let total_k: f64 = parts.iter().map(|&(_, k)| k as f64).sum();
    match bound {
        Bound::Upper => {
            let window_mass = compensated_sum(&conv.values);
            let outside = (composed_mass - window_mass).max(0.0) + len as f64 * conv.roundoff_floor;
            let wrapped_above = match window.bottom.checked_add(conv.period) {
                Some(first) if first <= full_top => {
                    chernoff_mass_from(moments, 1, first).min(composed_mass)
                }
                _ => 0.0,
            };
            remove_from_bottom(&mut conv.values, wrapped_above);
            infinity_mass += window.mass_above.min(outside) + wrapped_above;
        }
        Bound::Lower => {
            excess_mass += window.mass_below;
            if window.top < full_top {
                // Mass above the window that did not wrap in: at least the exact total
                // (from below) minus what the window holds, the bound below and round-off;
                // moved down onto the top entry (see `self_compose_tilted`).
                let window_mass = compensated_sum(&conv.values);
                let roundoff = (len as f64).sqrt() * conv.roundoff_l2;
                let u = f64::EPSILON;
                let slack = (4.0 * total_k + 8.0 * parts.len() as f64) * u
                    + 4.0 * u * (log_finite.abs() + parts.len() as f64);
                let total_from_below = (log_finite - slack).exp();
                let above = total_from_below - window_mass - window.mass_below - roundoff;
                if above > 0.0 {
                    if let Some(top) = conv.values.last_mut() {
                        *top += above;
                    }
                }
            }
        }
    }
    // The parts' own round-off, spread by the others' (finite) masses: Σ k·r_f·Π max(F, 1)^k.
    let log_spread = sum_k(&|i, _| finite[i].max(1.0).ln());
    let spread = log_spread.exp();
    let base_index = base + halves / 2 + i128::from(window.bottom);
    let offset = i64::try_from(base_index).ok()?;
    let mut out = GridPmf {
        step,
        offset,
        probs: conv.values,
        infinity_mass,
        bound,
        roundoff_l2: sum_k(&|_, p| p.roundoff_l2) * spread + conv.roundoff_l2,
        roundoff_floor: sum_k(&|_, p| p.roundoff_floor) * spread + conv.roundoff_floor,
        excess_mass,
        folded_top: parts
            .iter()
            .map(|&(p, k)| k.saturating_mul(p.folded_top.saturating_add(p.folded_bottom)))
            .fold(0u64, u64::saturating_add),
        folded_bottom: 0,
        folded_error: sum_k(&|_, p| p.folded_error),
        half_offset: halves % 2 == 1,
        loss_allowance: sum_k(&|_, p| p.loss_allowance),
        entry_errors: None,
        rounding_runs: sum_k(&|_, p| p.rounding_runs),
    };
    if tilts > 0 {
        let extra = quantile_tilts(moments, 1, tail_mass, tilts, None);
        out.refine_tail(parts, window, tilts, &extra, reaching);
    }
    if tail_mass > 0.0 {
        out.fold_noise_floor(out.roundoff_floor);
        let log_q = sum_k(&|_, p| ln_mass(p.q_mass_from_below()));
        out.restore_validity(log_q.exp());
    }
    out.settle_loss_allowance();
    Some(out.check_range().map(|()| out))
}
