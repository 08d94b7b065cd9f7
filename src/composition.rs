//! Composition of grid PMFs: convolution of the finite parts, product rule for the infinite
//! atoms, and tail truncation whose mass is always accounted for.

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::fft_convolution::{convolve, self_convolve_window};
use crate::grid_pmf::{GridPmf, MAX_ABS_LOSS};

/// Largest number of points a composed PMF may hold.
pub const MAX_COMPOSED_POINTS: u64 = 1 << 25;

/// Tilts (in nats⁻¹) tried by the Chernoff tail bound that sizes a self-composition window.
const CHERNOFF_TILTS: [f64; 14] = [
    0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 15.0, 30.0,
];

impl GridPmf {
    /// The PMF of the sum of independent losses from `self` and `other` (the PLD of the
    /// composed mechanism), with both tails truncated to at most `tail_mass / 2` each.
    ///
    /// ```text
    /// p = p_A ∗ p_B,   m_∞ = m_A·(f_B + m_B) + f_A·m_B      (f = finite mass)
    /// ```
    /// # Guarantee
    /// Keeps the bound of its inputs: an upper PMF moves truncated low-loss mass up to the
    /// first kept point and high-loss mass to +∞; a lower PMF drops the low tail and moves the
    /// high tail down to the last kept point (ALGORITHMS.md §4).
    ///
    /// # Errors
    /// [`Error::IncompatibleDistributions`] if the steps or bounds differ;
    /// [`Error::GridTooLarge`] if the result would exceed [`MAX_COMPOSED_POINTS`].
    pub fn compose(&self, other: &GridPmf, tail_mass: f64) -> Result<GridPmf> {
        self.check_compatible(other)?;
        let points = (self.len() + other.len()) as u64;
        if points > MAX_COMPOSED_POINTS {
            return Err(Error::GridTooLarge {
                points,
                limit: MAX_COMPOSED_POINTS,
                hint: "use a larger grid step".into(),
            });
        }
        let conv = convolve(&self.probs, &other.probs);
        let (fa, fb) = (self.finite_mass(), other.finite_mass());
        let (ma, mb) = (self.infinity_mass, other.infinity_mass);
        let halves = self.half_offset as i64 + other.half_offset as i64;
        let mut out = GridPmf {
            step: self.step,
            offset: self.offset + other.offset + halves / 2,
            probs: conv.values,
            infinity_mass: ma * (fb + mb) + fa * mb,
            bound: self.bound,
            roundoff_l2: self.roundoff_l2 * fb.max(1.0)
                + other.roundoff_l2 * fa.max(1.0)
                + self.roundoff_l2 * other.roundoff_l2
                + conv.roundoff_l2,
            excess_mass: self.excess_mass + other.excess_mass,
            folded_entries: self.folded_entries + other.folded_entries,
            half_offset: halves % 2 == 1,
            loss_allowance: self.loss_allowance + other.loss_allowance,
        };
        out.truncate_tails(tail_mass);
        out.check_range()?;
        Ok(out)
    }

    /// The k-fold composition of `self` with itself, by one FFT power over a window chosen
    /// from a Chernoff bound so that at most `tail_mass / 2` lies beyond each end.
    ///
    /// ```text
    /// P(S_k ≥ t) ≤ exp(k ln M(λ) − λt),  P(S_k ≤ t) ≤ exp(k ln M(−λ) + λt),  M(λ) = Σ pᵢ e^{λ lᵢ}
    /// m_∞ = (f + m)^k − f^k = f^k · expm1(k · ln1p(m/f))
    /// ```
    /// # Guarantee
    /// Mass outside the window wraps around into it (circular convolution). For an upper PMF
    /// the bound on the mass beyond the top is added to `m_∞` (its wrapped copy only adds more
    /// δ); for a lower PMF the bound on the mass below the bottom, which may have wrapped to
    /// higher losses, is recorded in `excess_mass` and subtracted from every δ read.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if k = 0; [`Error::GridTooLarge`] if the window is too wide.
    pub fn self_compose(&self, k: u64, tail_mass: f64) -> Result<GridPmf> {
        if k == 0 {
            return Err(Error::invalid("count", 0, "at least 1"));
        }
        if k == 1 || self.probs.is_empty() {
            let mut out = self.clone();
            if k > 1 {
                out.infinity_mass = power_infinity_mass(0.0, self.infinity_mass, k);
            }
            return Ok(out);
        }
        let n = self.len() as u64;
        let full_top = k.checked_mul(n - 1).ok_or_else(|| Error::GridTooLarge {
            points: u64::MAX,
            limit: MAX_COMPOSED_POINTS,
            hint: "too many compositions for this grid".into(),
        })?;
        let window = chernoff_window(&self.probs, self.step, k, tail_mass, full_top);
        let len = window.top - window.bottom + 1;
        if len > MAX_COMPOSED_POINTS {
            return Err(Error::GridTooLarge {
                points: len,
                limit: MAX_COMPOSED_POINTS,
                hint: "use a larger grid step or a larger truncation mass".into(),
            });
        }
        let conv = self_convolve_window(&self.probs, k, window.bottom, len as usize);
        let f = self.finite_mass();
        let kf = k as f64;
        let mut infinity_mass = power_infinity_mass(f, self.infinity_mass, k);
        let mut excess_mass = kf * self.excess_mass;
        match self.bound {
            Bound::Upper => infinity_mass += window.mass_above,
            Bound::Lower => excess_mass += window.mass_below,
        }
        let halves = if self.half_offset { k } else { 0 };
        let out = GridPmf {
            step: self.step,
            offset: self.offset * k as i64 + window.bottom as i64 + (halves / 2) as i64,
            probs: conv.values,
            infinity_mass,
            bound: self.bound,
            roundoff_l2: kf * self.roundoff_l2 * f.max(1.0).powf(kf - 1.0) + conv.roundoff_l2,
            excess_mass,
            folded_entries: k * self.folded_entries,
            half_offset: halves % 2 == 1,
            loss_allowance: kf * self.loss_allowance,
        };
        out.check_range()?;
        Ok(out)
    }

    /// Drop (or fold) the largest prefix and suffix with mass at most `tail_mass / 2` each,
    /// in the pessimistic or optimistic direction of the PMF's bound.
    pub(crate) fn truncate_tails(&mut self, tail_mass: f64) {
        let half = 0.5 * tail_mass;
        let n = self.probs.len();
        let mut lo = 0;
        let mut mass_lo = 0.0;
        while lo < n && mass_lo + self.probs[lo] <= half {
            mass_lo += self.probs[lo];
            lo += 1;
        }
        let mut hi = n;
        let mut mass_hi = 0.0;
        while hi > lo + 1 && mass_hi + self.probs[hi - 1] <= half {
            mass_hi += self.probs[hi - 1];
            hi -= 1;
        }
        if lo >= hi {
            // Everything is negligible: keep one point so the grid is not empty.
            lo = hi.saturating_sub(1);
            mass_lo = self.probs[..lo].iter().sum();
        }
        let folded = (lo + (n - hi)) as u64;
        if folded == 0 {
            return;
        }
        let mut kept = self.probs[lo..hi].to_vec();
        match self.bound {
            Bound::Upper => {
                kept[0] += mass_lo;
                self.infinity_mass += mass_hi;
            }
            Bound::Lower => {
                let last = kept.len() - 1;
                kept[last] += mass_hi;
            }
        }
        self.offset += lo as i64;
        self.probs = kept;
        self.folded_entries += folded;
    }

    fn check_compatible(&self, other: &GridPmf) -> Result<()> {
        if self.bound != other.bound {
            return Err(Error::IncompatibleDistributions {
                reason: format!("bounds differ ({:?} and {:?})", self.bound, other.bound),
            });
        }
        if (self.step - other.step).abs() > 1e-12 * self.step {
            return Err(Error::IncompatibleDistributions {
                reason: format!("grid steps differ ({} and {})", self.step, other.step),
            });
        }
        Ok(())
    }

    fn check_range(&self) -> Result<()> {
        let top = self.loss(self.probs.len());
        let bottom = self.loss(0);
        if top.abs() > MAX_ABS_LOSS || bottom.abs() > MAX_ABS_LOSS {
            return Err(Error::invalid(
                "composed privacy loss range",
                format!("[{bottom}, {top}] nats"),
                "within ±700 nats (reduce the number of compositions or add noise)",
            ));
        }
        Ok(())
    }
}

/// `(f + m)^k − f^k`: the probability that at least one of k losses is infinite.
fn power_infinity_mass(finite: f64, infinity: f64, k: u64) -> f64 {
    let kf = k as f64;
    if infinity == 0.0 {
        return 0.0;
    }
    if finite <= 0.0 {
        return infinity.powf(kf);
    }
    finite.powf(kf) * (kf * (infinity / finite).ln_1p()).exp_m1()
}

/// The index window kept by a self-composition, relative to the start of the full result.
struct Window {
    bottom: u64,
    top: u64,
    /// Bound on the mass of the k-fold sum above `top`.
    mass_above: f64,
    /// Bound on the mass of the k-fold sum below `bottom`.
    mass_below: f64,
}

/// Chernoff window for the k-fold sum of the PMF `p` (index units, relative to its start).
fn chernoff_window(p: &[f64], step: f64, k: u64, tail_mass: f64, full_top: u64) -> Window {
    let full = Window {
        bottom: 0,
        top: full_top,
        mass_above: 0.0,
        mass_below: 0.0,
    };
    if tail_mass <= 0.0 {
        return full;
    }
    let kf = k as f64;
    let log_half_tail = (0.5 * tail_mass).ln();
    let n = p.len();
    let mut best_top = f64::INFINITY;
    let mut best_bottom = f64::NEG_INFINITY;
    let mut tilts = Vec::with_capacity(CHERNOFF_TILTS.len());
    for &tilt in &CHERNOFF_TILTS {
        let lambda = tilt * step; // per index
                                  // ln Σ pᵢ e^{λ(i − (n−1))} + λ(n−1), summed from the top down.
        let up = log_moment(p.iter().rev(), -lambda) + lambda * (n - 1) as f64;
        // ln Σ pᵢ e^{−λ i}, summed from the bottom up.
        let down = log_moment(p.iter(), -lambda);
        if up.is_finite() {
            best_top = best_top.min((kf * up - log_half_tail) / lambda);
        }
        if down.is_finite() {
            best_bottom = best_bottom.max((log_half_tail - kf * down) / lambda);
        }
        tilts.push((lambda, up, down));
    }
    let top = if best_top.is_finite() && best_top < full_top as f64 {
        (best_top.ceil() as u64).saturating_sub(1).min(full_top)
    } else {
        full_top
    };
    let bottom = if best_bottom > 0.0 {
        ((best_bottom.floor() as u64) + 1).min(top)
    } else {
        0
    };
    let bound_above = |t: f64| {
        tilts
            .iter()
            .map(|&(lambda, up, _)| (kf * up - lambda * t).exp())
            .fold(f64::INFINITY, f64::min)
    };
    let bound_below = |t: f64| {
        tilts
            .iter()
            .map(|&(lambda, _, down)| (kf * down + lambda * t).exp())
            .fold(f64::INFINITY, f64::min)
    };
    Window {
        bottom,
        top,
        mass_above: if top < full_top {
            bound_above((top + 1) as f64).min(1.0)
        } else {
            0.0
        },
        mass_below: if bottom > 0 {
            bound_below((bottom - 1) as f64).min(1.0)
        } else {
            0.0
        },
    }
}

/// `ln Σ_j v_j r^j` for `r = e^{log_ratio}` (≤ 1), over the values in the order given.
fn log_moment<'a>(values: impl Iterator<Item = &'a f64>, log_ratio: f64) -> f64 {
    let ratio = log_ratio.exp();
    let mut weight = 1.0;
    let mut sum = 0.0;
    for &v in values {
        sum += v * weight;
        weight *= ratio;
        if weight < 1e-300 {
            break;
        }
    }
    // Relative rounding of the running product is at most n·u; inflate by 1e-9 to cover it.
    (sum * (1.0 + 1e-9)).ln()
}

/// Compose many PMFs in a balanced tree (keeps intermediate lengths and errors small).
///
/// # Errors
/// As [`GridPmf::compose`]; [`Error::IncompatibleDistributions`] for an empty list.
pub fn compose_all(mut pmfs: Vec<GridPmf>, tail_mass: f64) -> Result<GridPmf> {
    if pmfs.is_empty() {
        return Err(Error::IncompatibleDistributions {
            reason: "nothing to compose".into(),
        });
    }
    while pmfs.len() > 1 {
        let mut next = Vec::with_capacity(pmfs.len().div_ceil(2));
        let mut iter = pmfs.into_iter();
        while let Some(a) = iter.next() {
            match iter.next() {
                Some(b) => next.push(a.compose(&b, tail_mass)?),
                None => next.push(a),
            }
        }
        pmfs = next;
    }
    Ok(pmfs.pop().expect("non-empty"))
}
