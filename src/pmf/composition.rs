//! Composition of grid PMFs: convolution of the finite parts, product rule for the infinite
//! atoms, and tail truncation whose mass is always accounted for.

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::numeric::double_double_fft;
use crate::numeric::fft_convolution::{
    convolve, lattice_of, product_window, self_convolution_period, self_convolve_window,
};
use crate::pmf::grid_pmf::{whole_steps, GridPmf, LOSS_LIMIT, MAX_ABS_LOSS};
use crate::pmf::tail_moments::{TailMoments, TILTS};

/// Largest number of points a composed PMF may hold.
pub const MAX_COMPOSED_POINTS: u64 = 1 << 23;

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
    /// high tail down to the last kept point (each truncation adds at most its mass to the upper
    /// δ and nothing to the lower one).
    ///
    /// # Errors
    /// [`Error::IncompatibleDistributions`] if the steps or bounds differ;
    /// [`Error::GridTooLarge`] if the result would exceed [`MAX_COMPOSED_POINTS`].
    pub fn compose(&self, other: &GridPmf, tail_mass: f64) -> Result<GridPmf> {
        self.compose_tilted(other, tail_mass, 0)
    }

    /// [`GridPmf::compose`] with extra convolutions of exponentially tilted copies (up to
    /// `2·tilts` of them), which make the upper tail accurate in relative terms, as
    /// [`GridPmf::self_compose_tilted`] does for self-composition: `tilts` fractions of the
    /// saddle point of the index above which the sum holds `tail_mass / 2`, and the saddle
    /// points of the sum's Chernoff quantiles at levels `(tail_mass / 2)^{j/tilts}`. (Where an
    /// input has a bounded support, such as a two-outcome pair's lattice, that first saddle
    /// point lies at its top and all its fractions aim above the losses a small δ reads.)
    ///
    /// Tilting both inputs by θ (`pᵢ ↦ pᵢ e^{θ lᵢ − A}`) tilts their convolution, so entry i
    /// of the tilted convolution times `e^{A_a + A_b − θ lᵢ}` is entry i of the plain one; its
    /// round-off bound is the tilted one times that factor, tiny in the upper tail. The
    /// inputs' own errors are carried entry by entry: `E_a ∗ b + (a + E_a) ∗ E_b` (computed by
    /// convolution, plus that convolution's own round-off bound), and every entry is taken
    /// from the computation whose total bound is smallest, recorded per entry.
    ///
    /// # Errors
    /// As [`GridPmf::compose`].
    pub fn compose_tilted(&self, other: &GridPmf, tail_mass: f64, tilts: usize) -> Result<GridPmf> {
        let negligible = NEGLIGIBLE_SHORTFALL / 2.0;
        let (a, b) = (
            self.with_restored_mass(1, negligible),
            other.with_restored_mass(1, negligible),
        );
        let a = a.as_ref().map_or(self, |(pmf, _)| pmf);
        let b = b.as_ref().map_or(other, |(pmf, _)| pmf);
        a.compose_restored(b, tail_mass, tilts)
    }

    /// The body of [`GridPmf::compose_tilted`], on inputs whose mass is restored (see
    /// [`GridPmf::with_restored_mass`]).
    fn compose_restored(&self, other: &GridPmf, tail_mass: f64, tilts: usize) -> Result<GridPmf> {
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
            // An upper PMF's +∞ mass is the probability that a run has infinite loss,
            // whatever rounding left its finite total short of 1 − m (see
            // `self_compose_tilted`); a lower one's is kept as computed.
            // (Totals may exceed 1 by a Chernoff slack: the larger of the two formulas, the
            // run formula on masses capped at 1.)
            infinity_mass: match self.bound {
                Bound::Upper => {
                    let (ca, cb) = (ma.min(1.0), mb.min(1.0));
                    (ma * (fb + mb) + fa * mb).max(ca + cb - ca * cb)
                }
                Bound::Lower => ma * (fb + mb) + fa * mb,
            },
            bound: self.bound,
            roundoff_l2: self.roundoff_l2 * fb.max(1.0)
                + other.roundoff_l2 * fa.max(1.0)
                + self.roundoff_l2 * other.roundoff_l2
                + conv.roundoff_l2,
            roundoff_floor: self.roundoff_floor * fb.max(1.0)
                + other.roundoff_floor * fa.max(1.0)
                + self.roundoff_floor * other.roundoff_floor
                + conv.roundoff_floor,
            excess_mass: self.excess_mass + other.excess_mass,
            // Earlier folds' errors are spread over the result by the convolution: charge
            // their total everywhere from now on.
            folded_top: self.folded_top
                + self.folded_bottom
                + other.folded_top
                + other.folded_bottom,
            folded_bottom: 0,
            folded_error: self.folded_error + other.folded_error,
            half_offset: halves % 2 == 1,
            loss_allowance: self.loss_allowance + other.loss_allowance,
            entry_errors: None,
            rounding_runs: self.rounding_runs + other.rounding_runs,
        };
        if tilts > 0 && out.probs.len() > 1 {
            out.tilt_tail(self, other, conv.roundoff_floor, tail_mass, tilts);
        }
        if tail_mass > 0.0 {
            out.fold_noise_floor(out.roundoff_floor);
            if out.bound == Bound::Upper {
                out.restore_validity(self.q_mass_from_below() * other.q_mass_from_below());
            }
        }
        out.settle_loss_allowance();
        out.truncate_tails(tail_mass);
        out.fold_outside_limit();
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
    /// Mass outside the window wraps around into it (circular convolution over a buffer of
    /// `period` ≥ window entries): mass above the window lands in it only from index
    /// `bottom + period` on, which a Chernoff bound `w` covers. For an upper PMF, `w` is taken
    /// off the lowest losses (see `remove_from_bottom`) and the mass above the window goes
    /// to `m_∞`: `w` plus the smaller of its Chernoff bound and what the buffer holds outside
    /// the window (exact total minus the window's mass, plus round-off), so the total mass is
    /// kept up to the Chernoff slack. For a lower PMF, mass from above wraps in below its true
    /// loss (a safe move down) and the bound on the mass below the bottom, which may have
    /// wrapped in above its loss, is recorded in `excess_mass` and subtracted from every δ
    /// read.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if k = 0; [`Error::GridTooLarge`] if the window is too wide.
    pub fn self_compose(&self, k: u64, tail_mass: f64) -> Result<GridPmf> {
        self.self_compose_tilted(k, tail_mass, 0)
    }

    /// [`GridPmf::self_compose`] with extra FFT powers of exponentially tilted copies, which
    /// make the upper tail accurate in relative terms (for δ down to ~1e-12 and below).
    ///
    /// Tilting by θ (`pᵢ ↦ pᵢ e^{θ lᵢ − a}`, `a = ln Σ pᵢ e^{θ lᵢ}`) commutes with
    /// convolution, so the k-fold power of the tilted PMF, untilted entry by entry, is the same
    /// result; its absolute round-off at loss l is the tilted round-off times `e^{k·a − θ l}`,
    /// tiny in the upper tail. With
    /// `tilts` = n > 0, n tilts spread up to the saddle point of the window's top end are
    /// computed and every entry is taken from the computation with the smallest error bound,
    /// which is recorded per entry.
    ///
    /// # Errors
    /// As [`GridPmf::self_compose`].
    pub fn self_compose_tilted(&self, k: u64, tail_mass: f64, tilts: usize) -> Result<GridPmf> {
        self.self_compose_tilted_with(k, tail_mass, tilts, None)
    }

    /// [`GridPmf::self_compose_tilted`], with this PMF's tail moments
    /// (`TailMoments::of(&self.probs, self.step)`) when the caller already has them.
    pub(crate) fn self_compose_tilted_with(
        &self,
        k: u64,
        tail_mass: f64,
        tilts: usize,
        known_moments: Option<&TailMoments>,
    ) -> Result<GridPmf> {
        self.self_compose_tilted_reaching(k, tail_mass, tilts, known_moments, false)
    }

    /// [`GridPmf::self_compose_tilted_with`], and with `reaching`, tilted powers also beyond
    /// the saddle point of the window's top where the PMF's upper tail is heavy (see
    /// `heavy_tail_tilts`), each computed on a window reaching up until the mass its tilted
    /// sum leaves above is negligible (see `tilted_window_top`). That narrows the brackets of
    /// small δ where one step's far tail dominates the sum's extremes (sampled Gaussians at
    /// small rates); it costs more transforms, so the accountant asks for it only when round-off
    /// keeps a bracket from its tolerance.
    ///
    /// # Errors
    /// As [`GridPmf::self_compose`].
    pub(crate) fn self_compose_tilted_reaching(
        &self,
        k: u64,
        tail_mass: f64,
        tilts: usize,
        known_moments: Option<&TailMoments>,
        reaching: bool,
    ) -> Result<GridPmf> {
        if k == 0 {
            return Err(Error::invalid("count", 0, "at least 1"));
        }
        if let Some((restored, scale)) = self.with_restored_mass(k, NEGLIGIBLE_SHORTFALL) {
            // The moments scaled from this PMF's, whether given or computed here (the same
            // bounds either way).
            let moments = match known_moments {
                Some(moments) => moments.scaled(scale),
                None => TailMoments::of(&self.probs, self.step).scaled(scale),
            };
            return restored.self_compose_restored(k, tail_mass, tilts, Some(&moments), reaching);
        }
        self.self_compose_restored(k, tail_mass, tilts, known_moments, reaching)
    }

    /// The body of [`GridPmf::self_compose_tilted_reaching`], on a PMF whose mass is restored
    /// (see [`GridPmf::with_restored_mass`]).
    fn self_compose_restored(
        &self,
        k: u64,
        tail_mass: f64,
        tilts: usize,
        known_moments: Option<&TailMoments>,
        reaching: bool,
    ) -> Result<GridPmf> {
        // An upper PMF may carry extra mass at its losses (T > 1: random allocation adds a
        // round-off allowance to every entry). That is valid, more P-mass at the same losses
        // never lowers a δ, but it compounds to Tᵏ, past f64 for counts of 10¹⁰. No rescaling
        // keeps such a PMF an upper bound (one of mass 1 with δ′ ≥ min(δ, 1) at every ε must
        // put everything at +∞), so past k·ln T > 1 (extra mass above e − 1, a weak bound
        // anyway) the answer is that one: δ ≡ 1.
        // (The finite mass is read again below: summed once.)
        let f = self.finite_mass();
        let total = f + self.infinity_mass;
        if self.bound == Bound::Upper && total > 1.0 + 1e-9 && k as f64 * total.ln() > 1.0 {
            return Ok(GridPmf::from_parts(
                self.step,
                0,
                vec![0.0],
                1.0,
                Bound::Upper,
            ));
        }
        // No finite mass stored (all of it at +∞, or dropped below the loss range): nothing to
        // convolve, and the tail moments of an all-zero vector would be −∞ (NaN windows).
        if k == 1 || self.probs.iter().all(|&p| p == 0.0) {
            let mut out = self.clone();
            if k > 1 {
                let m = self.infinity_mass.min(1.0);
                out.infinity_mass = match self.bound {
                    // As in `beyond_limit`: the chance that some run has infinite loss.
                    Bound::Upper => power_infinity_mass(0.0, self.infinity_mass, k)
                        .max(power_infinity_mass(1.0 - m, m, k)),
                    Bound::Lower => power_infinity_mass(0.0, self.infinity_mass, k),
                };
                out.rounding_runs = k as f64 * self.rounding_runs;
            }
            return Ok(out);
        }
        let n = self.len() as u64;
        let full_top = k.checked_mul(n - 1).ok_or_else(|| Error::GridTooLarge {
            points: u64::MAX,
            limit: MAX_COMPOSED_POINTS,
            hint: "too many compositions for this grid".into(),
        })?;
        // Relative indices whose losses stay within ±LOSS_LIMIT: losses as read, less the
        // allowance's whole steps (which the result moves into its offset).
        let base = (self.offset as f64) * k as f64
            + if self.half_offset {
                0.5 * k as f64
            } else {
                0.0
            }
            - whole_steps(k as f64 * self.loss_allowance, self.step) as f64;
        let cap = |loss: f64, round: fn(f64) -> f64| -> u64 {
            round(loss / self.step - base).clamp(0.0, full_top as f64) as u64
        };
        let caps = (cap(-LOSS_LIMIT, f64::ceil), cap(LOSS_LIMIT, f64::floor));
        let lowest = base * self.step;
        let highest = (base + full_top as f64) * self.step;
        if highest < -LOSS_LIMIT || lowest > LOSS_LIMIT {
            return Ok(self.beyond_limit(k, highest < -LOSS_LIMIT));
        }
        let moments = match known_moments {
            Some(moments) => moments.clone(),
            None => TailMoments::of(&self.probs, self.step),
        };
        let window = power_window_for(&moments, k, tail_mass, full_top, caps, tilts);

        if window.top < caps.0 {
            // Everything but a Chernoff-bounded tail lies below −LOSS_LIMIT.
            let mut out = self.beyond_limit(k, true);
            if self.bound == Bound::Upper {
                // Charge the mass above to +∞, taking it from the mass at −LOSS_LIMIT.
                remove_from_bottom(&mut out.probs, window.mass_above);
                out.infinity_mass += window.mass_above;
            }
            return Ok(out);
        }
        let len = window.top - window.bottom + 1;
        if len > MAX_COMPOSED_POINTS {
            return Err(Error::GridTooLarge {
                points: len,
                limit: MAX_COMPOSED_POINTS,
                hint: "use a larger grid step or a larger truncation mass".into(),
            });
        }
        let mut conv = self_convolve_window(&self.probs, k, window.bottom, len as usize);
        let kf = k as f64;
        let halves = if self.half_offset { k } else { 0 };
        let offset = self.offset * k as i64 + window.bottom as i64 + (halves / 2) as i64;
        let half_offset = halves % 2 == 1;
        // For an upper PMF, the +∞ mass is the probability that one of k runs has infinite
        // loss, 1 − (1 − m)^k, not (f + m)^k − f^k: the stored finite total f may fall a few
        // ulps short of 1 − m, and at k = 1.2e10 with m = 0.967 the latter came out 1.3e-6
        // below the former, an upper δ that much below the truth. (It is the larger: the
        // difference grows with f.)
        let stored = power_infinity_mass(f, self.infinity_mass, k);
        let mut infinity_mass = match self.bound {
            Bound::Upper => {
                let m = self.infinity_mass.min(1.0);
                stored.max(power_infinity_mass(1.0 - m, m, k))
            }
            Bound::Lower => stored,
        };
        let mut excess_mass = kf * self.excess_mass;
        match self.bound {
            Bound::Upper => {
                let composed_mass = f.powf(kf);
                // What the buffer holds outside the window (mass above it that did not wrap
                // in, and mass below it): the exact total minus the window, plus round-off.
                let window_mass = crate::numeric::summation::compensated_sum(&conv.values);
                let outside =
                    (composed_mass - window_mass).max(0.0) + len as f64 * conv.roundoff_floor;
                // The circular buffer is `period` long: mass above the window lands in it
                // from index bottom + period on (anywhere in it, after several turns).
                let period = conv.period;
                let wrapped_above = match window.bottom.checked_add(period) {
                    Some(first) if first <= full_top => {
                        let chernoff = chernoff_mass_from(&moments, k, first).min(composed_mass);
                        // The Chernoff bound is loose for multi-modal steps (a sampled
                        // Gaussian with σ 0.05: 5.6e-3 against about 2e-6): when it is
                        // more than the truncation budget, a coarse exact power bounds it.
                        if chernoff > WRAP_RECHECK * tail_mass {
                            coarse_mass_from(&self.probs, k, first)
                                .map_or(chernoff, |c| c.min(chernoff))
                        } else {
                            chernoff
                        }
                    }
                    _ => 0.0,
                };
                // The mass above the window goes to +∞: the part that stayed outside (at most
                // both `mass_above` and `outside`) and the part that wrapped in, taken off
                // the lowest losses (see `remove_from_bottom`).
                remove_from_bottom(&mut conv.values, wrapped_above);
                infinity_mass += window.mass_above.min(outside) + wrapped_above;
            }
            // Mass from above wraps in below its true loss (a move down: safe); mass from
            // below wraps in above it and adds δ: subtract its bound from every δ.
            Bound::Lower => {
                excess_mass += window.mass_below;
                if window.top < full_top {
                    // The mass above the window that did not wrap in is at least the exact
                    // total minus what the window holds (true mass plus everything wrapped
                    // in), minus the bound below and the window sum's round-off: move that
                    // much down onto the top entry (safe for a lower bound). When the window
                    // is cut at +LOSS_LIMIT with most of the mass above it, this is the
                    // difference between δ ≈ 1 and δ ≈ 0.
                    let window_mass = crate::numeric::summation::compensated_sum(&conv.values);
                    let roundoff = (len as f64).sqrt() * conv.roundoff_l2;
                    // f^k from below: f (a compensated sum of non-negative terms) is within
                    // 2u of its value relative, so f^k within about 2ku; ln1p, the product
                    // and exp add a few ulps of |k ln f| and of the result.
                    let u = f64::EPSILON;
                    let ln_power = kf * (f - 1.0).ln_1p();
                    let slack = (4.0 * kf + 8.0) * u + 4.0 * u * ln_power.abs();
                    let total_from_below = (ln_power - slack).exp();
                    let above = total_from_below - window_mass - window.mass_below - roundoff;
                    if above > 0.0 {
                        if let Some(top) = conv.values.last_mut() {
                            *top += above;
                        }
                    }
                }
            }
        }
        // On a lattice, the entries between its points are exactly 0 with no error.
        let lattice_errors = conv.lattice.map(|(first, stride)| {
            let mut errors = vec![0.0; conv.values.len()];
            for e in errors.iter_mut().skip(first).step_by(stride) {
                *e = conv.roundoff_floor;
            }
            // A lower PMF may have moved mass onto the top entry (see above).
            if let Some(last) = errors.last_mut() {
                *last = conv.roundoff_floor;
            }
            errors
        });
        let mut out = GridPmf {
            step: self.step,
            offset,
            probs: conv.values,
            infinity_mass,
            bound: self.bound,
            roundoff_l2: kf * self.roundoff_l2 * f.max(1.0).powf(kf - 1.0) + conv.roundoff_l2,
            roundoff_floor: kf * self.roundoff_floor * f.max(1.0).powf(kf - 1.0)
                + conv.roundoff_floor,
            excess_mass,
            folded_top: k * (self.folded_top + self.folded_bottom),
            folded_bottom: 0,
            folded_error: kf * self.folded_error,
            half_offset,
            loss_allowance: kf * self.loss_allowance,
            entry_errors: lattice_errors,
            rounding_runs: kf * self.rounding_runs,
        };
        if tilts > 0 && self.entry_errors.is_none() {
            let mut extra = quantile_tilts(&moments, k, tail_mass, tilts, None);
            if reaching {
                let heavy = self.heavy_tail_tilts(&moments, k, &window, tilts, &extra);
                extra.extend(heavy);
            }
            out.refine_tail(&[(self, k)], &window, tilts, &extra, reaching);
        }
        if tail_mass > 0.0 {
            out.fold_noise_floor(out.roundoff_floor);
            // (Only an upper PMF is restored: its Q-mass is needed only then.)
            if out.bound == Bound::Upper {
                let q_mass = self.q_mass_from_below();
                out.restore_validity((kf * (q_mass - 1.0).ln_1p()).exp());
            }
        }
        out.settle_loss_allowance();
        out.check_range()?;
        Ok(out)
    }

    /// An upper PMF whose stored total mass falls short of 1 made whole, and the factor its
    /// entries were multiplied by; `None` for a lower PMF or one that does not fall short.
    ///
    /// ```text
    /// pᵢ ↦ pᵢ·s,  s = (1 + d/f)(1 + 2u) ≥ (1 − m)/f   (d = 1 − f − m, the shortfall)
    /// ```
    /// # Guarantee
    /// More P-mass at the same losses never lowers a δ, so the result is an upper bound
    /// whenever `self` is; it is one on a PMF of total 1 whose entries exceed the stored ones
    /// by at most the factor s, which is how rounding leaves a discretizer's entries (each
    /// from its own formula, normalized by a computed total).
    ///
    /// Composing k copies multiplies every entry by s^k: a shortfall d of the stored PMF is
    /// a relative shortfall of about k·d at every loss of the composition. Putting the k·d
    /// back at the lowest loss of the result instead (as this crate did until 2026-12) left
    /// every δ above that loss about k·d·δ short: 3.8e-11 at δ 6.4e-4 for 314,462 sampled
    /// discrete Gaussian steps whose single step fell 1.65e-13 short.
    ///
    /// A shortfall above [`MAX_RESTORED_SHORTFALL`] of the finite mass is not rounding (most
    /// of the mass is at +∞): it goes to +∞ instead, which is pessimistic wherever it belongs.
    ///
    /// Composed `count` times, a relative shortfall of at most `negligible / count` (in all,
    /// at most `negligible`, a small share of the 1e-9 allowance every δ is read with) is
    /// left as it is: the scaling's own rounding, about 2u per copy, would add more.
    pub(crate) fn with_restored_mass(&self, count: u64, negligible: f64) -> Option<(GridPmf, f64)> {
        if self.bound != Bound::Upper {
            return None;
        }
        let deficit = self.mass_deficit();
        if deficit.is_nan() || deficit <= 0.0 {
            return None;
        }
        let finite = self.finite_mass();
        if count as f64 * deficit <= negligible * finite {
            return None;
        }
        let mut out = self.clone();
        let rounding = finite > 0.0 && deficit <= MAX_RESTORED_SHORTFALL * finite;
        if !rounding {
            out.infinity_mass = (out.infinity_mass + deficit).next_up();
            return Some((out, 1.0));
        }
        // s ≥ (1 + d/f)(1 + u) after its own roundings, so fl(pᵢ·s) ≥ pᵢ·(1 + d/f).
        let scale = (1.0 + deficit / finite) * (1.0 + 2.0 * f64::EPSILON);
        for p in &mut out.probs {
            *p *= scale;
        }
        out.roundoff_l2 *= scale;
        out.roundoff_floor *= scale;
        out.folded_error *= scale;
        if let Some(errors) = out.entry_errors.as_mut() {
            for e in errors.iter_mut() {
                *e *= scale;
            }
        }
        Some((out, scale))
    }

    /// How far the stored total P-mass (finite entries and +∞) falls short of 1, from a
    /// compensated sum (accurate to about `n·u²`, plus that as a margin); ≤ 0 when it does
    /// not.
    pub(super) fn mass_deficit(&self) -> f64 {
        // (Zeros skipped: adding 0 leaves a compensated sum unchanged.)
        let total_minus_one = crate::numeric::summation::neumaier_sum(
            self.probs
                .iter()
                .copied()
                .filter(|&p| p != 0.0)
                .chain([self.infinity_mass, -1.0]),
        );
        let margin = 4.0 * (self.probs.len() as f64 + 2.0) * f64::EPSILON * f64::EPSILON;
        -total_minus_one + margin
    }

    /// The per-entry error bounds of `self` (as a vector), and the part of its error charged
    /// to every δ (entries folded to the top or to +∞), as a total.
    fn entry_error_parts(&self) -> (Vec<f64>, f64) {
        match &self.entry_errors {
            Some(errors) => (
                errors.clone(),
                self.roundoff_floor * self.folded_top as f64 + self.folded_error,
            ),
            None => {
                let mut errors = vec![self.roundoff_floor; self.probs.len()];
                if let Some(first) = errors.first_mut() {
                    *first += self.roundoff_floor * self.folded_bottom as f64;
                }
                (
                    errors,
                    self.roundoff_floor * self.folded_top as f64 + self.folded_error,
                )
            }
        }
    }

    /// Per-entry error bounds for `self = a ∗ b` (just convolved, round-off bound `floor` per
    /// entry), replacing entries by those of tilted convolutions where that bounds their
    /// error better (see [`GridPmf::compose_tilted`]).
    fn tilt_tail(&mut self, a: &GridPmf, b: &GridPmf, floor: f64, tail_mass: f64, tilts: usize) {
        let (ea, always_a) = a.entry_error_parts();
        let (eb, always_b) = b.entry_error_parts();
        // The inputs' errors, spread by the convolution: E_a ∗ b + (a + E_a) ∗ E_b.
        let a_plus: Vec<f64> = a.probs.iter().zip(&ea).map(|(p, e)| p + e).collect();
        let first = convolve(&ea, &b.probs);
        let second = convolve(&a_plus, &eb);
        let inputs: Vec<f64> = first
            .values
            .iter()
            .zip(&second.values)
            .map(|(x, y)| x + y + first.roundoff_floor + second.roundoff_floor)
            .collect();
        let mut errors: Vec<f64> = inputs.iter().map(|e| e + floor).collect();
        // Totals charged to every δ: spread by the other PMF's (finite) mass.
        let (fa, fb) = (a.finite_mass().max(1.0), b.finite_mass().max(1.0));
        let always = (always_a * fb + always_b * fa) * (1.0 + 1e-9);
        // Tilts up to the saddle point of the index above which the result holds at most
        // `tail_mass / 2` (Chernoff), as the window of a self-composition is aimed.
        let span = a.probs.len() + b.probs.len() - 2;
        let ma = TailMoments::with_span(&a.probs, a.step, span);
        let mb = TailMoments::with_span(&b.probs, b.step, span);
        let log_half_tail = (0.5 * tail_mass).max(1e-300).ln();
        let saddle = ma
            .upper_quantile(1.0, log_half_tail, Some(&mb))
            .map_or(0.0, |(_, tilt)| tilt);
        let mut replaced_sq = 0.0;
        // (As a self-composition adds `quantile_tilts`: see `compose_tilted`. The two sets
        // may share tilts, both coming from the tilt table: each is convolved once.)
        let mut thetas: Vec<f64> = (1..=tilts)
            .map(|j| saddle * j as f64 / (tilts + 1) as f64)
            .chain(quantile_tilts(&ma, 1, tail_mass, tilts, Some(&mb)))
            .collect();
        thetas.sort_by(f64::total_cmp);
        thetas.dedup();
        for theta in thetas {
            let (Some((ta, la)), Some((tb, lb))) = (a.tilted(theta), b.tilted(theta)) else {
                continue;
            };
            let conv = convolve(&ta, &tb);
            let tilted_floor = conv.roundoff_floor;
            for (i, value) in conv.values.iter().enumerate().take(self.probs.len()) {
                let factor = (la + lb - theta * self.loss(i)).exp();
                let bound = tilted_floor * factor + inputs[i];
                if bound < errors[i] {
                    errors[i] = bound;
                    self.probs[i] = value * factor;
                }
            }
        }
        for (e, plain) in errors.iter().zip(&inputs) {
            if *e < plain + floor {
                replaced_sq += e * e;
            }
        }
        self.roundoff_l2 += replaced_sq.sqrt();
        self.folded_top = 0;
        self.folded_bottom = 0;
        self.folded_error = always;
        self.entry_errors = Some(errors);
    }

    /// `(p̃, ln Σ pᵢ e^{θ lᵢ})` with `p̃ᵢ = pᵢ e^{θ lᵢ − A}` (a probability vector when p is),
    /// or `None` if the normalizer is not finite.
    fn tilted(&self, theta: f64) -> Option<(Vec<f64>, f64)> {
        if !(theta > 0.0 && theta.is_finite()) {
            return None;
        }
        let exponents: Vec<f64> = (0..self.len()).map(|i| theta * self.loss(i)).collect();
        let shift = exponents.iter().fold(f64::NEG_INFINITY, |m, &e| m.max(e));
        let scaled_sum = crate::numeric::summation::neumaier_sum(
            self.probs
                .iter()
                .zip(&exponents)
                .map(|(p, e)| p * (e - shift).exp()),
        );
        let log_normalizer = shift + scaled_sum.ln();
        if !log_normalizer.is_finite() {
            return None;
        }
        let tilted = self
            .probs
            .iter()
            .zip(&exponents)
            .map(|(p, e)| p * (e - log_normalizer).exp())
            .collect();
        Some((tilted, log_normalizer))
    }

    /// Tilts for a heavy upper tail, beyond those spread up to the window top's saddle point
    /// and the quantile tilts (`chosen`), from the largest of those whose k-fold normalizer
    /// stays within [`HEAVY_TILT_NORMALIZER`]: when all of them do, `tilts` tilts evenly up to
    /// the largest tilt within the cap (found by bisection up to the first tilt of the table
    /// that passes it); otherwise `tilts` tilts evenly between it and the next one that passes
    /// the cap, each kept if its own normalizer stays within.
    ///
    /// (The bisection: the normalizer of a sampled Gaussian's step rises slowly and then at
    /// once, when the tilt reaches the step's far tail, which the table's next tilt was past.
    /// At σ 1.5, q 1e-3, 1,000 steps, grid step 6.2e-5, `k·a` is 0.44 at θ 38.6, 1.07 at 60
    /// and 137 at 80: spread towards the table's next tilt every tilt missed the cap and
    /// none was added, and δ 1e-15's entries above ε kept relative bounds of 4e-3.)
    ///
    /// Why: where one step's far tail dominates the top of the window (a sampled Gaussian
    /// at a small rate, whose extreme sums are one or two steps with large losses), the
    /// Chernoff saddle point of the top is small, while the losses a small δ reads (sums of
    /// many small steps) need larger tilts. σ 1.05, q 3.6e-4, 1,797 steps, δ 4.5e-12: with
    /// tilts up to 18 every entry above ε had a 7e-4 relative error bound, which the tilts
    /// near 27 that this adds cut several-fold. A light tail gets none: its normalizer
    /// passes the cap before the largest tilt it has.
    fn heavy_tail_tilts(
        &self,
        moments: &TailMoments,
        k: u64,
        window: &Window,
        tilts: usize,
        chosen: &[f64],
    ) -> Vec<f64> {
        let kf = k as f64;
        let within = |theta: f64| {
            self.log_normalizer(theta)
                .is_some_and(|a| kf * a <= HEAVY_TILT_NORMALIZER)
        };
        let mut existing: Vec<f64> = (1..=tilts)
            .map(|t| window.saddle_tilt * t as f64 / (tilts + 1) as f64)
            .chain(chosen.iter().copied())
            .filter(|theta| *theta > 0.0 && theta.is_finite())
            .collect();
        existing.sort_by(|a, b| b.total_cmp(a));
        existing.dedup();
        // The largest within the cap, and the smallest above it that passes the cap.
        let Some(position) = existing.iter().position(|&theta| within(theta)) else {
            return Vec::new();
        };
        let low = existing[position];
        let passing_existing = existing[..position].last().copied();
        // The moments are taken relative to the first entry: ln Σ pᵢ e^{θ lᵢ} is at most
        // up + θ·l₀.
        let lowest_loss = self.loss(0);
        let passing_table = (0..TILTS)
            .filter(|&t| moments.tilts[t] > low)
            .filter(|&t| {
                kf * (moments.up[t] + moments.tilts[t] * lowest_loss) > HEAVY_TILT_NORMALIZER
            })
            .map(|t| moments.tilts[t])
            .fold(f64::INFINITY, f64::min);
        let high = passing_existing.map_or(passing_table, |theta| theta.min(passing_table));
        if !high.is_finite() {
            return Vec::new();
        }
        if passing_existing.is_none() {
            // Every spread or chosen tilt is within the cap: the largest tilt within it, by
            // bisection (k·a grows with θ: its derivative is k times the tilted mean loss),
            // and `tilts` tilts evenly up to it.
            let (mut inside, mut outside) = (low, high);
            for _ in 0..HEAVY_TILT_BISECTIONS {
                let middle = 0.5 * (inside + outside);
                if within(middle) {
                    inside = middle;
                } else {
                    outside = middle;
                }
            }
            if inside > low {
                return (1..=tilts)
                    .map(|j| low + (inside - low) * j as f64 / tilts as f64)
                    .collect();
            }
        }
        (1..=tilts)
            .map(|j| low + (high - low) * j as f64 / (tilts + 1) as f64)
            .filter(|&theta| within(theta))
            .collect()
    }

    /// `ln Σ pᵢ e^{θ lᵢ}` (as [`GridPmf::tilted`] computes it), or `None` if not finite.
    fn log_normalizer(&self, theta: f64) -> Option<f64> {
        let shift = (0..self.len())
            .map(|i| theta * self.loss(i))
            .fold(f64::NEG_INFINITY, f64::max);
        let sum = crate::numeric::summation::neumaier_sum(
            self.probs
                .iter()
                .enumerate()
                .map(|(i, p)| p * (theta * self.loss(i) - shift).exp()),
        );
        let log_normalizer = shift + sum.ln();
        log_normalizer.is_finite().then_some(log_normalizer)
    }

    /// Replace entries by those of tilted FFT powers where that bounds their error better
    /// (see [`GridPmf::self_compose_tilted`]).
    ///
    /// `parts` = (PMF, count) pairs: one for a self-composition, several for a product
    /// composition (see [`crate::pmf::product`]); every part is tilted by the same θ.
    pub(super) fn refine_tail(
        &mut self,
        parts: &[(&GridPmf, u64)],
        window: &Window,
        tilts: usize,
        extra_tilts: &[f64],
        reaching: bool,
    ) {
        let untilted_per_entry = self.roundoff_floor;
        let len = self.probs.len();
        // Every entry's error: the untilted uniform bound, plus (upper PMFs) the mass below
        // the window, which may otherwise be lost when its wrapped copy is replaced.
        let mut errors = self
            .entry_errors
            .take()
            .unwrap_or_else(|| vec![untilted_per_entry; len]);
        if self.bound == Bound::Upper {
            self.probs[0] += window.mass_below;
        }
        let mut replaced_sq = 0.0;
        if reaching {
            self.replace_by_double_double_power(parts, window, &mut errors);
        }
        // Below the saddle tilt of the window top (at the saddle itself half the tilted mass
        // would lie beyond the window and wrap around), and the caller's.
        let mut thetas: Vec<f64> = (1..=tilts)
            .map(|t| window.saddle_tilt * t as f64 / (tilts + 1) as f64)
            .chain(extra_tilts.iter().copied())
            .collect();
        // The two sets may share tilts (both come from the same tilt table): power each once.
        thetas.sort_by(f64::total_cmp);
        thetas.dedup();
        for theta in thetas {
            let Some(tilted) = parts
                .iter()
                .map(|(part, _)| part.tilted(theta))
                .collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            // Σ k·a over the parts: the tilted sum's log normalizer.
            let log_normalizer: f64 = tilted
                .iter()
                .zip(parts)
                .map(|((_, a), &(_, k))| k as f64 * a)
                .sum();
            let (conv, aliased) = match (tilted.as_slice(), parts) {
                ([(single, _)], [(_, k)]) => {
                    // The tilted k-fold sum lies higher than the plain one: when reaching,
                    // computed on a window reaching up until the mass it leaves above is
                    // negligible (for a heavy upper tail, such as a sampled Gaussian's at a
                    // small rate, the tilts that make the answer's region accurate otherwise
                    // wrap a large part of their mass into the window), of which the first
                    // `len` entries are used.
                    let moments = TailMoments::of(single, self.step);
                    let top = if reaching {
                        tilted_window_top(&moments, *k, window, len)
                    } else {
                        window.top
                    };
                    let reach = Window {
                        bottom: window.bottom,
                        top,
                        mass_above: window.mass_above,
                        mass_below: window.mass_below,
                        saddle_tilt: window.saddle_tilt,
                    };
                    let reach_len = (top - window.bottom + 1) as usize;
                    (
                        self_convolve_window(single, *k, window.bottom, reach_len),
                        // Mass of the tilted k-fold sum outside that window wraps into it.
                        leak_outside(&moments, single, *k, &reach),
                    )
                }
                _ => {
                    let factors: Vec<(&[f64], u64)> = tilted
                        .iter()
                        .zip(parts)
                        .map(|((values, _), &(_, k))| (values.as_slice(), k))
                        .collect();
                    (
                        product_window(&factors, window.bottom, len),
                        product_window_leak(&factors, self.step, window),
                    )
                }
            };
            // The worst-case per-entry bound, not the noise-floor estimate: a tilted copy's
            // error is untilted by factors up to e^{k·a − θ·l}, and at huge k its near-zero
            // frequencies carry a smooth error far above the noise floor (sweep seed
            // 20261124, case 636: the estimate said 1e-18, entries were 1e-10 off).
            let per_entry = conv.entry_bound.max(conv.roundoff_floor) + aliased;
            for (i, value) in conv.values.iter().enumerate().take(len) {
                // Untilt: r = r̃ · e^{Σ k·a − θ l}.
                let factor = (log_normalizer - theta * self.loss(i)).exp();
                let bound = per_entry * factor;
                if bound < errors[i] {
                    errors[i] = bound;
                    self.probs[i] = value * factor;
                }
            }
        }
        for e in &errors {
            if *e < untilted_per_entry {
                replaced_sq += e * e;
            }
        }
        // The ℓ2 bound must cover the mixed vector: untilted errors plus replaced entries.
        self.roundoff_l2 += replaced_sq.sqrt();
        self.entry_errors = Some(errors);
    }

    /// Replace entries by those of the untilted power computed in double-double arithmetic
    /// ([`crate::numeric::double_double_fft`]) where its bound is the smaller: for a
    /// self-composition or a product of at most [`DOUBLE_DOUBLE_MAX_FACTORS`] parts, none on
    /// a lattice, on the same window, whose buffer is at least as long as the
    /// double-precision power's (so that no more mass wraps into the window than that
    /// power's accounting charged).
    ///
    /// Tilting reaches the far tail only while the tilted normalizer stays small; where one
    /// step's own far tail dominates it (a sampled Gaussian at a small rate and small σ, at
    /// δ of 1e-12 and below), every tilt within the cap leaves the entries above ε with
    /// errors far above δ's tolerance. This power's errors are about 1e-28 per entry times
    /// the count, with no tilt.
    ///
    /// Entry 0 is kept: an upper PMF holds there mass the power lacks (the mass below the
    /// window), and a lower PMF loses nothing by it.
    /// An upper PMF's entries may also have had wrapped mass taken off (it is charged to
    /// +∞): the power's entries hold it again, which only adds mass.
    fn replace_by_double_double_power(
        &mut self,
        parts: &[(&GridPmf, u64)],
        window: &Window,
        errors: &mut [f64],
    ) {
        if parts.is_empty()
            || parts.len() > DOUBLE_DOUBLE_MAX_FACTORS
            || parts
                .iter()
                .any(|(part, _)| lattice_of(&part.probs).is_some())
        {
            return;
        }
        let len = self.probs.len();
        let longest = parts
            .iter()
            .map(|(part, _)| part.probs.len())
            .max()
            .unwrap_or(0);
        let min_period = self_convolution_period(len, longest);
        if min_period > DOUBLE_DOUBLE_MAX_PERIOD {
            return;
        }
        let factors: Vec<(&[f64], u64)> = parts
            .iter()
            .map(|(part, k)| (part.probs.as_slice(), *k))
            .collect();
        let Some(power) =
            double_double_fft::product_window(&factors, window.bottom, len, min_period)
        else {
            return;
        };
        debug_assert!(power.period >= min_period);
        // The parts' own round-off, carried through the power as in `self_compose` and
        // `compose_product`: Σ kᵢ·floorᵢ times Π max(massᵢ, 1)^{kᵢ}.
        let spread: f64 = parts
            .iter()
            .map(|(part, k)| part.finite_mass().max(1.0).powf(*k as f64))
            .product();
        let inherited: f64 = parts
            .iter()
            .map(|(part, k)| *k as f64 * part.roundoff_floor)
            .sum::<f64>()
            * spread;
        let replaced = errors
            .iter_mut()
            .zip(self.probs.iter_mut())
            .zip(power.errors.iter().zip(&power.values))
            .skip(1);
        for ((error, prob), (&power_error, &value)) in replaced {
            let bound = power_error + inherited;
            if bound < *error {
                *error = bound;
                *prob = value;
            }
        }
    }

    /// Remove the FFT noise floor at the low-loss end, where `e^{−l}` would magnify it.
    ///
    /// Entries below the first one that exceeds 16× its round-off bound carry no information
    /// (their true values are smaller than the noise). An upper PMF moves their mass up onto
    /// that entry (always pessimistic); a lower PMF drops it (always optimistic). Skipped
    /// when the caller asks for no truncation at all (`tail_mass = 0`).
    pub(crate) fn fold_noise_floor(&mut self, per_entry: f64) {
        let bound = |i: usize| -> f64 {
            self.entry_errors
                .as_ref()
                .map_or(per_entry, |errors| errors[i].min(per_entry))
        };
        let first = match (0..self.probs.len()).find(|&i| self.probs[i] > 16.0 * bound(i)) {
            Some(0) | None => return,
            Some(i) => i,
        };
        let upward = self.bound == Bound::Upper;
        self.fold_prefix(first, upward);
    }

    /// Remove the first `count` entries, moving their mass onto the next entry when `upward`
    /// (else dropping it), and keep the round-off bookkeeping of the moved entries.
    fn fold_prefix(&mut self, count: usize, upward: bool) {
        if count == 0 {
            return;
        }
        let moved: f64 = self.probs[..count].iter().sum();
        if upward {
            self.probs[count] += moved;
        }
        self.probs.drain(..count);
        // Dropped entries need no round-off charge (whatever their true values, leaving them
        // out only lowers δ); moved ones keep theirs.
        if let Some(errors) = self.entry_errors.as_mut() {
            // The folded entries' errors now sit in the entry they were folded into.
            let moved_errors: f64 = errors.drain(..count).sum();
            if upward {
                errors[0] += moved_errors;
            }
        } else if upward {
            self.folded_bottom += count as u64;
        }
        self.offset += count as i64;
    }

    /// Fold the lowest losses of an upper PMF up until `Σ p e^{−l}` is back at its exact value.
    ///
    /// Composition multiplies `Σ p e^{−l}` (the Q-mass covered, ≤ 1 for a valid PMF), so its
    /// exact value after composing is known (`expected`). FFT noise in the low-loss entries,
    /// magnified by `e^{−l}`, can push the computed sum above it; moving the lowest entries'
    /// mass up, just as far as restores the sum (the last entry moved only in part), is
    /// pessimistic and fixes it.
    pub(crate) fn restore_validity(&mut self, expected: f64) {
        if self.bound != Bound::Upper || self.probs.is_empty() {
            return;
        }
        let allowed = expected * (1.0 + 1e-13);
        // Σ p e^{−l} with a margin for its rounding (see `q_mass_blocked`).
        let total = self.q_mass_blocked() * (1.0 + 1e-14);
        if total <= allowed {
            return;
        }
        // Walk up from the lowest loss (usually only a few entries, where e^{−l} magnifies
        // the FFT noise most) until folding the entries so far restores the sum.
        let mut moved_mass = 0.0;
        let mut moved_q = 0.0;
        let mut previous_weight = f64::NAN;
        let mut fold = None;
        for (i, weight) in self.exp_neg_losses().enumerate() {
            if i > 0 && total - moved_q + moved_mass * weight <= allowed {
                // Entries 0..i−1 folded onto i−1 are not enough, onto i too much: fold them
                // onto i−1 and move only the fraction of that lump needed onto i.
                let before = total - moved_q + moved_mass * previous_weight;
                let gain = moved_mass * (previous_weight - weight);
                fold = Some((
                    i,
                    ((before - allowed) / gain * (1.0 + 1e-9)).clamp(0.0, 1.0),
                ));
                break;
            }
            moved_mass += self.probs[i];
            moved_q += self.probs[i] * weight;
            previous_weight = weight;
        }
        let Some((i, fraction)) = fold else {
            return;
        };
        if fraction.is_nan() || fraction >= 1.0 {
            self.fold_prefix(i, true);
            return;
        }
        self.fold_prefix(i - 1, true);
        let moved = fraction * self.probs[0];
        self.probs[0] -= moved;
        self.probs[1] += moved;
        // The moved part carries the round-off of entry 0 into entry 1.
        match self.entry_errors.as_mut() {
            Some(errors) => errors[1] += errors[0],
            None => self.folded_top += 1,
        }
    }

    /// `Σ pᵢ e^{−lᵢ}` by blocks of [`Q_MASS_BLOCK`] entries: `e^{−l₀}·Σ_j p_{i₀+j}·e^{−j·h}`
    /// with one `exp` per block and a table of `e^{−j·h}`, each block's dot product in 8
    /// independent sums (vectorizable) and the blocks' values compensated. For non-negative
    /// entries the relative error is below about `(45 + |l|/2)·u`: the table and the anchor
    /// (1 ulp each, plus `|l₀|·u/2` from rounding the anchor's loss, as for any `exp(−lᵢ)`),
    /// the products, and 31 + 7 additions of non-negative terms per block (Higham, "Accuracy
    /// and Stability of Numerical Algorithms", §4.2: a sum of m such terms is within
    /// (m − 1)·u). For the losses of a composition (|l| ≲ 20) that is below 1e-14. Much
    /// faster than an `exp` and a compensated addition per entry (1.5 ms for 215,000 entries
    /// on DP-SGD σ 1, q 0.01, 10⁴ steps, h 1e-4; now 0.3 ms with the fold).
    fn q_mass_blocked(&self) -> f64 {
        let table: Vec<f64> = (0..Q_MASS_BLOCK)
            .map(|j| (-(j as f64) * self.step).exp())
            .collect();
        crate::numeric::summation::neumaier_sum(self.probs.chunks(Q_MASS_BLOCK).enumerate().map(
            |(b, block)| {
                let mut sums = [0.0; 8];
                let lanes = block.chunks_exact(8);
                let rest: f64 = lanes
                    .remainder()
                    .iter()
                    .zip(&table[block.len() / 8 * 8..])
                    .map(|(p, w)| p * w)
                    .sum();
                for (lane, weights) in lanes.zip(table.chunks_exact(8)) {
                    for ((s, p), w) in sums.iter_mut().zip(lane).zip(weights) {
                        *s += p * w;
                    }
                }
                (-self.loss(b * Q_MASS_BLOCK)).exp() * (sums.iter().sum::<f64>() + rest)
            },
        ))
    }

    /// A lower bound on `Σ pᵢ e^{−lᵢ}` ([`GridPmf::q_mass`]), for the target of
    /// [`GridPmf::restore_validity`] after a composition: [`GridPmf::q_mass_blocked`] less
    /// its relative error bound `(45 + L/2)·u` (L the largest |lᵢ|, u = 2⁻⁵³, counted here
    /// as 2⁻⁵²) and the
    /// absolute rounding of subnormal terms (2⁻¹⁰⁷⁴ each). A target from below only folds
    /// more (a pessimistic move, and a tiny one: the margin is about 1e-14 relative). Where
    /// an entry is negative the relative bound does not hold: the compensated
    /// [`GridPmf::q_mass`] then, as before. (One `exp` per entry took 0.09 ms of a DP-SGD
    /// power at 10³ steps, h = 1e-4; this takes a tenth of that.)
    pub(crate) fn q_mass_from_below(&self) -> f64 {
        if self.probs.is_empty() {
            return 0.0;
        }
        if self.probs.iter().any(|&p| p < 0.0) {
            return self.q_mass();
        }
        let largest = self
            .loss(0)
            .abs()
            .max(self.loss(self.probs.len() - 1).abs());
        let margin = (45.0 + 0.5 * largest) * f64::EPSILON;
        let roundoff = self.probs.len() as f64 * f64::from_bits(1);
        (self.q_mass_blocked() * (1.0 - margin) - roundoff).max(0.0)
    }

    /// `e^{−lᵢ}` for every entry, by a multiplicative recurrence re-anchored every 256 entries
    /// (relative error below 1e-13; used only to restore validity, which is a safe move).
    /// (An iterator: the usual case only sums them once, without a vector to allocate.)
    fn exp_neg_losses(&self) -> impl Iterator<Item = f64> + '_ {
        let ratio = (-self.step).exp();
        let mut w = 0.0;
        (0..self.probs.len()).map(move |i| {
            w = if i % 256 == 0 {
                (-self.loss(i)).exp()
            } else {
                w * ratio
            };
            w
        })
    }

    /// The k-fold composition when every composed loss lies beyond ±[`LOSS_LIMIT`]: all
    /// finite mass sits at the limit (upper bound, below: moved up to −LIMIT; above: +∞) or
    /// is dropped/moved down to +LIMIT (lower bound).
    fn beyond_limit(&self, k: u64, below: bool) -> GridPmf {
        let kf = k as f64;
        let (finite, infinity_mass) = match self.bound {
            // As in `self_compose_tilted`: the +∞ mass is the probability of an infinite run,
            // and whatever the stored finite total leaves short of 1 joins the finite part
            // (at −LOSS_LIMIT or +∞ below: more P-mass never lowers a δ).
            Bound::Upper => {
                let m = self.infinity_mass.min(1.0);
                let stored = power_infinity_mass(self.finite_mass(), self.infinity_mass, k);
                let infinity = stored.max(power_infinity_mass(1.0 - m, m, k));
                let finite = self.finite_mass().powf(kf).max(1.0 - infinity);
                (finite, infinity)
            }
            Bound::Lower => (
                self.finite_mass().powf(kf),
                power_infinity_mass(self.finite_mass(), self.infinity_mass, k),
            ),
        };
        let limit_index = |loss: f64| (loss / self.step).round() as i64;
        let (offset, probs, infinity_mass) = match (self.bound, below) {
            (Bound::Upper, true) => (limit_index(-LOSS_LIMIT), vec![finite], infinity_mass),
            (Bound::Upper, false) => (limit_index(LOSS_LIMIT), vec![0.0], infinity_mass + finite),
            (Bound::Lower, true) => (limit_index(-LOSS_LIMIT), vec![0.0], infinity_mass),
            (Bound::Lower, false) => (limit_index(LOSS_LIMIT) - 1, vec![finite], infinity_mass),
        };
        let mut out = GridPmf::from_parts(self.step, offset, probs, infinity_mass, self.bound);
        out.excess_mass = kf * self.excess_mass;
        out.loss_allowance = kf * self.loss_allowance;
        out.rounding_runs = kf * self.rounding_runs;
        out
    }

    /// Fold the entries whose losses lie beyond ±[`LOSS_LIMIT`] in the bound's safe direction.
    pub(crate) fn fold_outside_limit(&mut self) {
        let n = self.probs.len();
        let lo = (0..n).find(|&i| self.loss(i) >= -LOSS_LIMIT).unwrap_or(n);
        let hi = (0..n)
            .rev()
            .find(|&i| self.loss(i) <= LOSS_LIMIT)
            .map_or(0, |i| i + 1);
        if lo == 0 && hi == n {
            return;
        }
        if lo < hi {
            self.keep_range(lo, hi);
            return;
        }
        // No stored loss lies within the limits: every one is above +LIMIT (hi = 0) or below
        // −LIMIT (lo = n). Collapse onto one entry at the limit, in the bound's safe direction:
        // above, an upper PMF sends the mass to +∞ and a lower one moves it down to the
        // limit; below, an upper PMF moves it up to the limit and a lower one drops it.
        let all_above = hi == 0;
        let half = if self.half_offset { 0.5 } else { 0.0 };
        let index = if all_above {
            (LOSS_LIMIT / self.step - half).floor()
        } else {
            (-LOSS_LIMIT / self.step - half).ceil()
        } as i64;
        let mass: f64 = self.probs.iter().sum();
        let value = match (self.bound, all_above) {
            (Bound::Upper, true) => {
                self.infinity_mass += mass;
                0.0
            }
            (Bound::Upper, false) | (Bound::Lower, true) => mass,
            (Bound::Lower, false) => 0.0,
        };
        // Round-off of moved entries stays charged (to every δ); dropped ones need none.
        let moved = self.bound != Bound::Lower || all_above;
        match self.entry_errors.take() {
            Some(errors) if moved => self.folded_error += errors.iter().sum::<f64>(),
            Some(_) => {}
            None if moved => self.folded_top += n as u64 + self.folded_bottom,
            None => {}
        }
        if moved {
            self.folded_bottom = 0;
        }
        self.offset = index;
        self.probs = vec![value];
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
        }
        if lo == 0 && hi == n {
            return;
        }
        self.keep_range(lo, hi);
    }

    /// Keep entries `lo..hi` and fold the rest in the bound's safe direction: an upper PMF
    /// moves the entries below up onto the first kept one and those above to +∞; a lower PMF
    /// drops those below and moves those above down onto the last kept one. The round-off of
    /// moved entries stays charged (attached to the first kept entry, or to every δ for the
    /// top ones); dropped entries need none.
    fn keep_range(&mut self, lo: usize, hi: usize) {
        let n = self.probs.len();
        let below: f64 = self.probs[..lo].iter().sum();
        let above: f64 = self.probs[hi..].iter().sum();
        let mut kept = self.probs[lo..hi].to_vec();
        match self.bound {
            Bound::Upper => {
                kept[0] += below;
                self.infinity_mass += above;
            }
            Bound::Lower => {
                let last = kept.len() - 1;
                kept[last] += above;
            }
        }
        self.offset += lo as i64;
        self.probs = kept;
        // A lower PMF drops the entries below: leaving out mass only lowers δ, whatever the
        // round-off in them, so they are not charged.
        let moved_below = self.bound == Bound::Upper;
        match self.entry_errors.take() {
            Some(errors) => {
                let mut kept_errors = errors[lo..hi].to_vec();
                if moved_below {
                    kept_errors[0] += errors[..lo].iter().sum::<f64>();
                }
                self.folded_error += errors[hi..].iter().sum::<f64>();
                self.entry_errors = Some(kept_errors);
            }
            None => {
                if moved_below {
                    self.folded_bottom += lo as u64;
                }
                self.folded_top += (n - hi) as u64;
            }
        }
    }

    pub(super) fn check_compatible(&self, other: &GridPmf) -> Result<()> {
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

    pub(super) fn check_range(&self) -> Result<()> {
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
///
/// ```text
/// (f + m)^k − f^k = (f + m)^k · (1 − (f/(f+m))^k) = exp(k·ln t) · (−expm1(k·ln1p(−m/t))),   t = f + m
/// ```
/// Both factors lie in [0, 1] (for t ≤ 1), so nothing overflows or cancels for any k up to
/// u64::MAX: the product neither underflows to 0·∞ = NaN nor loses the 1 − tiny structure
/// (for m = 1e-6 and k = 1e9 it is 1 − e^{−1000}, not NaN). Relative error a few ulps times
/// `1 + k·|ln t|·u`-sized terms, far inside the δ allowance.
/// Entries per block of [`GridPmf::q_mass_blocked`].
const Q_MASS_BLOCK: usize = 256;

pub(super) fn power_infinity_mass(finite: f64, infinity: f64, k: u64) -> f64 {
    let kf = k as f64;
    if infinity <= 0.0 {
        return 0.0;
    }
    let total = finite.max(0.0) + infinity;
    let at_least_one = if finite <= 0.0 {
        1.0
    } else {
        -(kf * (-infinity / total).ln_1p()).exp_m1()
    };
    let all_total = if total >= 1.0 {
        // Rounding may leave t a hair above 1: t^k would then blow up for huge k, so the
        // power is capped at 1 (a probability), which is what t = 1 gives.
        1.0
    } else {
        (kf * total.ln()).exp()
    };
    (all_total * at_least_one).clamp(0.0, 1.0)
}

/// Take `mass` off the lowest entries of `probs` (all of them if they hold less).
///
/// Used on an upper PMF after a circular self-convolution whose window leaves out a mass
/// A ≤ r at the top: r is charged to +∞, and A has also wrapped around into the window. Taking
/// r off the lowest losses conserves the total mass and keeps an upper bound: at every loss x
/// the result's CDF is at most the true one (where the removal stops below x it took r ≥ A,
/// at least all of the wrapped copy; elsewhere it took everything up to x), so the result's
/// loss is stochastically larger and every δ(ε) read from it is at least the true one. (Mass
/// below the window wraps to the top: it only moves mass up.)
pub(super) fn remove_from_bottom(probs: &mut [f64], mass: f64) {
    let mut left = mass;
    for p in probs.iter_mut() {
        if left <= 0.0 {
            break;
        }
        let taken = p.max(0.0).min(left);
        *p -= taken;
        left -= taken;
    }
}

/// The index window kept by a self-composition, relative to the start of the full result.
pub(super) struct Window {
    pub(super) bottom: u64,
    pub(super) top: u64,
    /// Bound on the mass of the k-fold sum above `top`.
    pub(super) mass_above: f64,
    /// Bound on the mass of the k-fold sum below `bottom`.
    pub(super) mass_below: f64,
    /// The tilt (nats⁻¹) that gave the best bound at the top end: the saddle point there.
    pub(super) saddle_tilt: f64,
}

/// Chernoff window for the k-fold sum of the PMF `p` (index units, relative to its start).
///
/// `caps` = (lowest, highest) index the window may use (the ±LOSS_LIMIT range); the window is
/// cut there even when the Chernoff bound would reach further, and the mass beyond is bounded
/// the same way. `tail_mass = 0` asks for the full range (within the caps).
pub(super) fn chernoff_window(
    moments: &TailMoments,
    k: u64,
    tail_mass: f64,
    full_top: u64,
    caps: (u64, u64),
) -> Window {
    let kf = k as f64;
    let log_half_tail = if tail_mass > 0.0 {
        (0.5 * tail_mass).ln()
    } else {
        f64::NEG_INFINITY
    };
    let (best_top, saddle_tilt) = moments
        .upper_quantile(kf, log_half_tail, None)
        .unwrap_or((f64::INFINITY, moments.tilts[0]));
    let mut best_bottom = f64::NEG_INFINITY;
    for (&lambda, &down) in moments.lambdas.iter().zip(&moments.down) {
        if down.is_finite() {
            best_bottom = best_bottom.max((log_half_tail - kf * down) / lambda);
        }
    }
    let top = if best_top.is_finite() && best_top < full_top as f64 {
        (best_top.ceil() as u64).saturating_sub(1).min(full_top)
    } else {
        full_top
    };
    let top = top.min(caps.1);
    let bottom = if best_bottom > 0.0 {
        (best_bottom.floor() as u64) + 1
    } else {
        0
    };
    let bottom = bottom.max(caps.0).min(top);
    let bound_above = |index: f64| {
        (0..TILTS)
            .map(|t| (kf * moments.up[t] - moments.lambdas[t] * index).exp())
            .fold(f64::INFINITY, f64::min)
    };
    let bound_below = |index: f64| {
        (0..TILTS)
            .map(|t| (kf * moments.down[t] + moments.lambdas[t] * index).exp())
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
        saddle_tilt,
    }
}

/// The window of a k-fold sum (see [`chernoff_window`]); with tilts, widened to tails τ² so
/// that little of the tilted copies' mass (near the top) wraps around, the tilts still aimed
/// at the saddle point of the τ window's top end.
pub(super) fn power_window_for(
    moments: &TailMoments,
    k: u64,
    tail_mass: f64,
    full_top: u64,
    caps: (u64, u64),
    tilts: usize,
) -> Window {
    let window = chernoff_window(moments, k, tail_mass, full_top, caps);
    if tilts == 0 {
        return window;
    }
    let wide = chernoff_window(
        moments,
        k,
        (tail_mass * tail_mass).max(1e-300),
        full_top,
        caps,
    );
    Window {
        saddle_tilt: window.saddle_tilt,
        ..wide
    }
}

/// Tilts for the tail refinement besides the fractions of the window top's saddle point:
/// the saddle points of the Chernoff quantiles at levels τ^{j/tilts}. Where the window top
/// is the end of a bounded support (atoms, randomized response), its saddle point is huge
/// and its fractions all aim beyond the δ that matter.
pub(super) fn quantile_tilts(
    moments: &TailMoments,
    k: u64,
    tail_mass: f64,
    tilts: usize,
    with: Option<&TailMoments>,
) -> Vec<f64> {
    let log_half_tail = (0.5 * tail_mass).max(1e-300).ln();
    (1..=tilts)
        .filter_map(|j| {
            let level = log_half_tail * j as f64 / tilts as f64;
            moments
                .upper_quantile(k as f64, level, with)
                .map(|(_, tilt)| tilt)
        })
        .collect()
}

/// Most entries a tilted power may compute beyond the window it serves, as a multiple of
/// the window's length (see [`tilted_window_top`]).
const TILTED_REACH: u64 = 3;

/// Mass of a tilted k-fold sum left above the window a tilted power computes that is
/// negligible: below the FFT's own per-entry error, which is at least about `u` times the
/// largest entry of the normalized tilted sum.
const TILTED_LEAK: f64 = 1e-17;

/// The top index of the window a tilted k-fold power is computed on when reaching (see
/// [`GridPmf::self_compose_tilted_reaching`]): the window's own top, or higher until the
/// Chernoff bound on the tilted sum's mass above it (from its tail `moments`,
/// `min_t exp(k·up_t − λ_t·(top + 1))`) is at most [`TILTED_LEAK`], but at most
/// [`TILTED_REACH`] window lengths higher. Only time depends on it: whatever lies above the
/// computed window wraps into it and is charged to every entry (`leak_outside`).
fn tilted_window_top(moments: &TailMoments, k: u64, window: &Window, len: usize) -> u64 {
    let kf = k as f64;
    let log_leak = TILTED_LEAK.ln();
    let needed = (0..TILTS)
        .filter(|&t| moments.lambdas[t] > 0.0 && moments.up[t].is_finite())
        .map(|t| (kf * moments.up[t] - log_leak) / moments.lambdas[t] - 1.0)
        .fold(f64::INFINITY, f64::min);
    let cap = window
        .top
        .saturating_add(TILTED_REACH.saturating_mul(len as u64));
    // Without a finite bound (no usable tilt in the table) a longer window would not say
    // how much wraps either.
    if !needed.is_finite() || needed <= window.top as f64 {
        window.top
    } else if needed >= cap as f64 {
        cap
    } else {
        (needed.ceil() as u64).clamp(window.top, cap)
    }
}

/// Largest k-fold log normalizer `k·ln Σ pᵢ e^{θ lᵢ}` of a tilt θ that
/// [`GridPmf::heavy_tail_tilts`] adds: a tilted power's error is untilted by `e^{k·a − θ·l}`,
/// so a larger normalizer cannot make the entries just above the bulk accurate.
const HEAVY_TILT_NORMALIZER: f64 = 1.0;
/// Bisections of [`GridPmf::heavy_tail_tilts`] for the largest tilt within
/// [`HEAVY_TILT_NORMALIZER`]: 2⁻¹² of the interval.
const HEAVY_TILT_BISECTIONS: usize = 12;

/// The longest buffer of a double-double power (see `replace_by_double_double_power`):
/// 2^21 points (64 MiB a buffer). A power of 2^20 points takes about 0.7 s on one thread of
/// this project's 2-core test machine and 0.35 s on both (FMA products, the work in pieces;
/// 2^19 took 0.41 s on one thread before those); one of 2^21 points, by n·log n, a little
/// over twice that. The accountant's retry refines its grid only as far as this reaches
/// before going past it.
///
/// Raised from 2^19 to 2^20: of 40 random DP-SGD queries at rates 3.2e-6 to 1e-3 (σ 0.5 to
/// 1.26, up to 10⁶ steps, δ 1e-12 and 1e-15), 29 met their tolerance against 25, none with
/// a looser upper end, in the same total time (63 s); of 60 random mixes of two or three
/// sampled Gaussians, 59 against 57. Then to 2^21: σ 1.037, q 2.42e-5, 803,309 steps,
/// δ 1e-15 stopped at the 2^20 buffers' reach (2.4e-6 nats, 986,092 points) 2.22e-4 wide
/// against 1.96e-4 ("not narrowing": the next grid, past them, went back to plain powers
/// and their round-off), and meets it at 1.9e-6 nats, [0.195534, 0.195685], in about the
/// same time (3.3 s against 3.1 s; 0.43 GB). Of 160 random DP-SGD queries at rates 3.2e-6
/// to 1e-3 (σ 0.5 to 1.26, δ 1e-12 and 1e-15), 160 meet their tolerance against 158, none
/// looser, in 74.5 s against 71.2 s in all; 60 random mixes of two or three sampled
/// Gaussians: the same answers.
pub(crate) const DOUBLE_DOUBLE_MAX_PERIOD: usize = 1 << 21;

/// The relative shortfall of total mass a composition leaves unrestored (see
/// [`GridPmf::with_restored_mass`]): 1% of the reading's floating-point allowance.
pub(crate) const NEGLIGIBLE_SHORTFALL: f64 =
    0.01 * crate::pmf::hockey_stick::FLOATING_POINT_ALLOWANCE;

/// The largest shortfall of an upper PMF's total mass, relative to its finite mass, that
/// [`GridPmf::with_restored_mass`] spreads over the entries (rounding leaves about 1e-13 at
/// most); a larger one goes to +∞.
const MAX_RESTORED_SHORTFALL: f64 = 1e-6;

/// The most parts a double-double product takes (one transform each).
const DOUBLE_DOUBLE_MAX_FACTORS: usize = 8;

/// Chernoff bound on the mass of the k-fold sum of `p` (any non-negative vector, e.g. a tilted
/// PMF, whose tail moments are `moments`) that falls outside `window`: what circular
/// convolution wraps into it. None lies above a window that reaches the sum's top index,
/// `k·(len − 1)`: there the bound is 0 rather than Chernoff's (which at the top of a bounded
/// support is about the tilted mass of the top itself).
fn leak_outside(moments: &TailMoments, p: &[f64], k: u64, window: &Window) -> f64 {
    let kf = k as f64;
    let support_top = k.saturating_mul((p.len().max(1) - 1) as u64);
    let mut above = if window.top >= support_top {
        0.0
    } else {
        f64::INFINITY
    };
    let mut below = f64::INFINITY;
    for t in 0..TILTS {
        let lambda = moments.lambdas[t];
        above = above.min((kf * moments.up[t] - lambda * (window.top + 1) as f64).exp());
        if window.bottom > 0 {
            below = below.min((kf * moments.down[t] + lambda * (window.bottom - 1) as f64).exp());
        }
    }
    let total = (kf * log_total(p)).exp();
    let below = if window.bottom > 0 { below } else { 0.0 };
    (above.min(total) + below.min(total)).min(total)
}

/// [`leak_outside`] for the sum of independent draws from several vectors, `factors` =
/// (vector, count): their moments, taken at tilts relative to the sum's span, add up, and the
/// sum's top index is `Σ k·(len − 1)`.
fn product_window_leak(factors: &[(&[f64], u64)], step: f64, window: &Window) -> f64 {
    let moments = product_moments(factors, step);
    let support_top = factors
        .iter()
        .map(|&(p, k)| k.saturating_mul((p.len().max(1) - 1) as u64))
        .fold(0u64, u64::saturating_add);
    let mut above = if window.top >= support_top {
        0.0
    } else {
        f64::INFINITY
    };
    let mut below = f64::INFINITY;
    for t in 0..TILTS {
        let lambda = moments.lambdas[t];
        above = above.min((moments.up[t] - lambda * (window.top + 1) as f64).exp());
        if window.bottom > 0 {
            below = below.min((moments.down[t] + lambda * (window.bottom - 1) as f64).exp());
        }
    }
    let total = factors
        .iter()
        .map(|&(p, k)| k as f64 * log_total(p))
        .sum::<f64>()
        .exp();
    let below = if window.bottom > 0 { below } else { 0.0 };
    (above.min(total) + below.min(total)).min(total)
}

/// The tail moments of the sum of independent draws, `factors` = (vector, count), in index
/// units relative to the sum's lowest index: `Σ k·up(t)` and `Σ k·down(t)` at tilts shared
/// by every factor (the span tilts relative to the sum's span).
pub(super) fn product_moments(factors: &[(&[f64], u64)], step: f64) -> TailMoments {
    let span: f64 = factors
        .iter()
        .map(|&(p, k)| k as f64 * (p.len().max(1) - 1) as f64)
        .sum();
    let span = span.clamp(1.0, usize::MAX as f64) as usize;
    let mut total: Option<TailMoments> = None;
    for &(p, k) in factors {
        let m = TailMoments::with_span(p, step, span);
        let kf = k as f64;
        match total.as_mut() {
            None => {
                let mut first = m;
                for t in 0..TILTS {
                    first.up[t] *= kf;
                    first.down[t] *= kf;
                }
                total = Some(first);
            }
            Some(sum) => {
                for t in 0..TILTS {
                    sum.up[t] += kf * m.up[t];
                    sum.down[t] += kf * m.down[t];
                }
            }
        }
    }
    total.unwrap_or_else(|| TailMoments::of(&[1.0], step))
}

/// Chernoff bound on the mass of the k-fold sum of the PMF with `moments` at indices ≥
/// `index` (relative to the start of the full result): `min_λ exp(k ln M(λ) − λ·index)`.
pub(super) fn chernoff_mass_from(moments: &TailMoments, k: u64, index: u64) -> f64 {
    (0..TILTS)
        .map(|t| (k as f64 * moments.up[t] - moments.lambdas[t] * index as f64).exp())
        .fold(1.0, f64::min)
}

/// A wrapped-mass Chernoff bound above this many truncation masses is checked against
/// [`coarse_mass_from`].
const WRAP_RECHECK: f64 = 16.0;

/// Longest coarse power [`coarse_mass_from`] computes (its whole support, no wrap-around).
const COARSE_POWER_LEN: u64 = 1 << 16;

/// An upper bound on the mass of the k-fold sum of `p` (non-negative, indices relative to its
/// first entry) at indices ≥ `index`, from one FFT power of `p` coarsened c-fold with its
/// indices rounded up, over its whole support (nothing wraps around): with `i ≤ c·⌈i/c⌉`
/// for every step, a sum ≥ `index` has a coarse sum ≥ `⌈index/c⌉`. The coarse tail is summed
/// with every entry's round-off bound added. `None` when the coarse grid would make the
/// bound meaningless (c·k·u ≥ 1e-3), when the coarse support stays longer than twice
/// [`COARSE_POWER_LEN`] (k above it), or when the power is reported on a sub-lattice.
fn coarse_mass_from(p: &[f64], k: u64, index: u64) -> Option<f64> {
    let n = p.len() as u64;
    let full_top = k.checked_mul(n.checked_sub(1)?)?;
    let c = full_top.div_ceil(COARSE_POWER_LEN).max(1);
    let u = f64::EPSILON / 2.0;
    // Each coarse entry sums at most c non-negative terms, and the power multiplies k of
    // them per product: relative rounding within about 2·c·k·u.
    let rounding = 2.0 * c as f64 * k as f64 * u;
    if rounding >= 1e-3 {
        return None;
    }
    let coarse_len = (n - 1).div_ceil(c) + 1;
    // A vector shorter than c cannot be coarsened below two entries: k of them may still
    // span more than the limit.
    let coarse_top = k.checked_mul(coarse_len - 1)?;
    if coarse_top >= 2 * COARSE_POWER_LEN {
        return None;
    }
    let mut coarse = vec![0.0_f64; coarse_len as usize];
    for (i, &v) in p.iter().enumerate() {
        coarse[(i as u64).div_ceil(c) as usize] += v;
    }
    let len = usize::try_from(coarse_top + 1).ok()?;
    let conv = self_convolve_window(&coarse, k, 0, len);
    if conv.lattice.is_some() {
        return None;
    }
    let from = usize::try_from(index.div_ceil(c)).ok()?;
    let tail = conv.values.get(from..).unwrap_or(&[]);
    let sum = crate::numeric::summation::neumaier_sum(tail.iter().copied());
    let charged = sum * (1.0 + 2.0 * rounding) + tail.len() as f64 * conv.roundoff_floor;
    Some(charged * (1.0 + 1e-12))
}

/// An upper bound on `ln Σ vᵢ` for non-negative values (their sum's rounding, n·u relative,
/// covered by a 1e-9 inflation).
fn log_total(values: &[f64]) -> f64 {
    (values.iter().sum::<f64>() * (1.0 + 1e-9)).ln()
}

/// Compose many PMFs in a balanced tree (keeps intermediate lengths and errors small).
///
/// # Errors
/// As [`GridPmf::compose`]; [`Error::IncompatibleDistributions`] for an empty list.
pub fn compose_all(pmfs: Vec<GridPmf>, tail_mass: f64) -> Result<GridPmf> {
    compose_all_tilted(pmfs, tail_mass, 0)
}

/// [`compose_all`] with `tilts` tilted convolutions at every step (see
/// [`GridPmf::compose_tilted`]).
///
/// # Errors
/// As [`compose_all`].
pub fn compose_all_tilted(mut pmfs: Vec<GridPmf>, tail_mass: f64, tilts: usize) -> Result<GridPmf> {
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
                Some(b) => next.push(a.compose_tilted(&b, tail_mass, tilts)?),
                None => next.push(a),
            }
        }
        pmfs = next;
    }
    Ok(pmfs.pop().expect("non-empty"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A lower PMF whose nodes are shifted half a step (loss allowance h/2, as on the shifted
    /// nodes of `LumpedAtoms`), composed 2·10⁵ times: the allowance grows to 1000 nats, which
    /// the result moves into its offset in whole steps, so its stored losses stay where the
    /// true ones are (around 0, not 1000 nats up beyond the ±700 a grid may span). Against
    /// the exact δ: losses ±h/2 with probability ½ each sum to h·B − k·h/2, B binomial.
    #[test]
    fn whole_steps_of_a_loss_allowance_move_into_the_offset() {
        let (step, k) = (0.01, 200_000u64);
        let mut one = GridPmf::from_parts(step, 0, vec![0.5, 0.5], 0.0, Bound::Lower);
        one.loss_allowance = 0.5 * step;
        let composed = one.self_compose(k, 1e-15).unwrap();
        assert!(
            composed.loss_allowance < step && composed.loss(0).abs() < 100.0,
            "allowance {}, first loss {}",
            composed.loss_allowance,
            composed.loss(0)
        );
        let kf = k as f64;
        let exact = |epsilon: f64| -> f64 {
            let log_choose = |j: f64| {
                libm::lgamma(kf + 1.0) - libm::lgamma(j + 1.0) - libm::lgamma(kf - j + 1.0)
            };
            (0..=k)
                .map(|j| j as f64)
                .map(|j| (j, step * j - 0.5 * step * kf))
                .filter(|&(_, loss)| loss > epsilon)
                .map(|(j, loss)| {
                    (log_choose(j) - kf * std::f64::consts::LN_2).exp() * -(epsilon - loss).exp_m1()
                })
                .sum()
        };
        for epsilon in [0.0, 1.0, 3.0, 6.0] {
            let (lower, truth) = (composed.delta_for_epsilon(epsilon), exact(epsilon));
            assert!(
                lower <= truth * (1.0 + 1e-9) && lower >= truth * (1.0 - 1e-6),
                "δ({epsilon}) = {lower:e} against the exact {truth:e}"
            );
        }
    }

    /// The rounding runs follow the runs composed: one run's 1 becomes k after a k-fold power
    /// (by FFT, on the plain path and beyond the loss limit), the sum for two PMFs composed
    /// and for a product of powers, the largest of the parts for a mixture.
    #[test]
    fn the_rounding_runs_follow_the_runs_composed() {
        let step = 0.01;
        let one = GridPmf::from_parts(step, -2, vec![0.25, 0.5, 0.25], 0.0, Bound::Upper);
        assert_eq!(one.rounding_runs(), 1.0, "one run");
        for k in [2u64, 1000, 1_000_000_000] {
            let composed = one.self_compose(k, 1e-12).unwrap();
            assert_eq!(composed.rounding_runs(), k as f64, "{k}-fold power");
        }
        // Every loss beyond the limit (the whole mass at ±LOSS_LIMIT).
        let far = GridPmf::from_parts(1.0, 400, vec![1.0], 0.0, Bound::Upper);
        let beyond = far.self_compose(1_000_000, 1e-12).unwrap();
        assert_eq!(beyond.rounding_runs(), 1e6, "beyond the limit");
        let a = one.self_compose(1000, 1e-12).unwrap();
        let b = one.self_compose(3000, 1e-12).unwrap();
        let both = a.compose(&b, 1e-12).unwrap();
        assert_eq!(both.rounding_runs(), 4000.0, "two PMFs composed");
        let product = crate::pmf::product::compose_product(&[(&one, 1000), (&a, 3)], 1e-12, 0)
            .expect("a product")
            .unwrap();
        assert_eq!(product.rounding_runs(), 4000.0, "product of powers");
        let mixed = GridPmf::mixture(&[(0.5, &one), (0.5, &a)]).unwrap();
        assert_eq!(mixed.rounding_runs(), 1000.0, "mixture");
    }

    /// δ read from a PMF is widened for its runs' rounding on the safe side: by
    /// `run_rounding::rounding_charge` of the mass above ε, added to an upper δ and taken off
    /// a lower one, and ε moves with it; so many runs that nothing is left (10³⁰⁰) read δ = 1
    /// where any mass is above ε (0 where none is) from above and δ = 0 from below, never NaN.
    #[test]
    fn delta_is_widened_for_the_runs_rounding() {
        use crate::pmf::run_rounding::rounding_charge;
        let step = 0.1;
        let probs = vec![0.5, 0.25, 0.125, 0.125];
        let runs = 1e10;
        for bound in [Bound::Upper, Bound::Lower] {
            let plain = GridPmf::from_parts(step, 0, probs.clone(), 0.0, bound);
            let mut many = GridPmf::from_parts(step, 0, probs.clone(), 0.0, bound);
            many.rounding_runs = runs;
            for (epsilon, above) in [(0.0, 0.5), (0.05, 0.5), (0.15, 0.25)] {
                let (before, after) = (
                    plain.delta_for_epsilon(epsilon),
                    many.delta_for_epsilon(epsilon),
                );
                // The same raw δ, charged for 10¹⁰ runs instead of one: about 5e-15 per run
                // of S*, which is 1 here (the masses' relative error, 4e-9 per run on a
                // grid of 0.1, compounds past any bound, and four entries are one block,
                // below which no δ bounds S*).
                let more = rounding_charge(above, runs, step) - rounding_charge(above, 1.0, step);
                assert!(more > 4e-5 && more < 6e-5, "{more:e}");
                let want = match bound {
                    Bound::Upper => before + more,
                    Bound::Lower => before - more,
                };
                assert!(
                    (after - want).abs() <= 1e-14 * want,
                    "{bound:?} δ({epsilon}) = {after:e} against {want:e}"
                );
            }
            let (before, after) = (plain.epsilon_for_delta(0.01), many.epsilon_for_delta(0.01));
            match bound {
                Bound::Upper => assert!(after > before, "{after} against {before}"),
                Bound::Lower => assert!(after < before, "{after} against {before}"),
            }
            let mut vacuous = GridPmf::from_parts(step, 0, probs.clone(), 0.0, bound);
            vacuous.rounding_runs = 1e300;
            for epsilon in [0.0, 0.15, 0.35, 1.0] {
                let delta = vacuous.delta_for_epsilon(epsilon);
                let want = match bound {
                    Bound::Upper if epsilon < 0.3 => 1.0,
                    _ => 0.0,
                };
                assert_eq!(delta, want, "{bound:?} δ({epsilon})");
            }
            for delta in [1e-12, 0.1, 0.99] {
                let epsilon = vacuous.epsilon_for_delta(delta);
                assert!(!epsilon.is_nan(), "{bound:?} ε({delta}) is NaN");
                if bound == Bound::Lower {
                    assert_eq!(epsilon, 0.0, "{bound:?} ε({delta})");
                }
            }
        }
    }

    /// `q_mass_from_below` is at most the exact `Σ pᵢ e^{−lᵢ}` and within 1e-13 of it, on
    /// random non-negative PMFs (zeros, subnormal and huge-ratio entries, half offsets,
    /// losses up to ±60 nats, lengths across several blocks). The exact value is bracketed
    /// by the compensated per-entry sum [`GridPmf::q_mass`]: each term within an ulp of its
    /// `exp` and `|l|·u/2` of the loss's rounding, the sum within 2u (u = 2⁻⁵³). Where an
    /// entry is negative it is `q_mass` itself.
    #[test]
    fn the_q_mass_from_below_is_below_the_exact_one_and_close_to_it() {
        let mut uniform = crate::numeric::xorshift_uniform(0x51ab_00d1_e5ee_d001);
        let u = f64::EPSILON / 2.0;
        for case in 0..400 {
            let len = 1 + (uniform() * 3000.0) as usize;
            let step = 10f64.powf(-5.0 + 4.7 * uniform()).min(60.0 / len as f64);
            let start = -60.0 * uniform();
            let offset = (start / step) as i64;
            let mut probs: Vec<f64> = (0..len)
                .map(|_| match (uniform() * 10.0) as u32 {
                    0 => 0.0,
                    1 => f64::from_bits(1 + (uniform() * 1e6) as u64),
                    _ => uniform() * 10f64.powf(-30.0 * uniform()),
                })
                .collect();
            let total: f64 = probs.iter().sum();
            if total > 0.0 {
                probs.iter_mut().for_each(|p| *p /= total);
            }
            let mut pmf = GridPmf::from_parts(step, offset, probs, 0.0, Bound::Upper);
            pmf.half_offset = case % 3 == 0;
            let largest = pmf.loss(0).abs().max(pmf.loss(len - 1).abs());
            let reference = pmf.q_mass();
            let exact_at_least = reference * (1.0 - (4.0 + 0.5 * largest) * u);
            let below = pmf.q_mass_from_below();
            assert!(
                below <= exact_at_least && below >= reference * (1.0 - 1e-13),
                "case {case}: {below:e} against {reference:e} (len {len}, step {step:e}, \
                 losses from {})",
                pmf.loss(0)
            );
            pmf.probs[len / 2] = -1e-300;
            assert_eq!(
                pmf.q_mass_from_below(),
                pmf.q_mass(),
                "case {case}, a negative entry"
            );
        }
    }

    /// The upper PMF of one DP-SGD step (σ, rate q) on a grid of step `step`, and the window
    /// of its k-fold power with `tilts` tilts at truncation mass `tail_mass`.
    fn sampled_gaussian_power(
        sigma: f64,
        q: f64,
        step: f64,
        k: u64,
        tail_mass: f64,
        tilts: usize,
    ) -> (GridPmf, TailMoments, Window) {
        use crate::discretize::loss_bins::LossBins;
        use crate::mechanism::{Gaussian, PoissonSubsampled};
        let mechanism = PoissonSubsampled::new(Gaussian::new(sigma, 1.0).unwrap(), q).unwrap();
        let pmf = LossBins::from_mechanism(&mechanism, step, tail_mass)
            .unwrap()
            .connect_the_dots();
        let moments = TailMoments::of(&pmf.probs, step);
        let full_top = k * (pmf.probs.len() as u64 - 1);
        let window = power_window_for(&moments, k, tail_mass, full_top, (0, full_top), tilts);
        (pmf, moments, window)
    }

    /// A heavy upper tail (a sampled Gaussian at rate 3.6e-4, 1,797 steps) gets tilts beyond
    /// the window top's saddle point, each within the normalizer cap; a light one (rate 1:
    /// the Gaussian itself) gets none.
    #[test]
    fn heavy_tail_tilts_only_for_heavy_tails() {
        let (k, tail_mass, tilts) = (1797, 4.5e-21, 3);
        let (heavy, moments, window) =
            sampled_gaussian_power(1.0539, 3.614e-4, 1e-4, k, tail_mass, tilts);
        let chosen = quantile_tilts(&moments, k, tail_mass, tilts, None);
        let extra = heavy.heavy_tail_tilts(&moments, k, &window, tilts, &chosen);
        assert!(
            !extra.is_empty(),
            "no tilts (saddle {}, chosen {chosen:?})",
            window.saddle_tilt
        );
        // Each within the cap, and beyond every spread or chosen tilt within it.
        let largest_within = (1..=tilts)
            .map(|t| window.saddle_tilt * t as f64 / (tilts + 1) as f64)
            .chain(chosen.iter().copied())
            .filter(|&theta| {
                heavy
                    .log_normalizer(theta)
                    .is_some_and(|a| k as f64 * a <= HEAVY_TILT_NORMALIZER)
            })
            .fold(0.0, f64::max);
        for &theta in &extra {
            let a = heavy.log_normalizer(theta).unwrap();
            assert!(
                theta > largest_within && k as f64 * a <= HEAVY_TILT_NORMALIZER,
                "θ {theta}: k·a {} (largest within {largest_within}, chosen {chosen:?})",
                k as f64 * a
            );
        }
        let (light, moments, window) = sampled_gaussian_power(1.0539, 1.0, 1e-3, 50, 1e-20, tilts);
        let chosen = quantile_tilts(&moments, 50, 1e-20, tilts, None);
        assert!(light
            .heavy_tail_tilts(&moments, 50, &window, tilts, &chosen)
            .is_empty());
    }

    /// Asserts that `composed` (the k-fold power of `single`) reads δ never below the exact
    /// composition and within `relative` of it at every ε of `epsilons` whose exact δ lies in
    /// `deltas` (at least 10 of them). The exact one by direct convolution: every term
    /// non-negative, so accurate in relative terms however small.
    fn assert_reads_the_exact_power(
        single: &GridPmf,
        k: u64,
        composed: &GridPmf,
        epsilons: impl Iterator<Item = f64>,
        deltas: std::ops::RangeInclusive<f64>,
        relative: f64,
    ) {
        assert!(!single.half_offset);
        // The chance that one of the k steps has an infinite loss.
        let infinity = -(k as f64 * (-single.infinity_mass).ln_1p()).exp_m1();
        let mut exact = vec![1.0];
        for _ in 0..k {
            let mut next = vec![0.0; exact.len() + single.len() - 1];
            for (i, &a) in exact.iter().enumerate() {
                for (j, &b) in single.probs.iter().enumerate() {
                    next[i + j] += a * b;
                }
            }
            exact = next;
        }
        let offset = k as i64 * single.offset;
        let mut tiny = 0;
        for epsilon in epsilons {
            let truth = crate::pmf::hockey_stick::tests::exact_delta(
                &exact,
                single.step,
                offset,
                infinity,
                epsilon,
            );
            if !deltas.contains(&truth) {
                continue;
            }
            tiny += 1;
            let read = composed.delta_for_epsilon(epsilon);
            assert!(
                truth <= read && read <= truth * (1.0 + relative),
                "ε {epsilon}: read {read:e}, exact {truth:e}"
            );
        }
        assert!(tiny >= 10, "{tiny}");
    }

    /// Where one step's far tail and the sum of many small steps meet (DP-SGD σ 1.5, q 1e-3,
    /// δ from 1e-12 down to 1e-17), the power reaching up reads δ never below the exact
    /// composition of the same step and within 2e-4 of it. (Charging every entry's bound
    /// whole, the reading was up to 3.9e-3 above it; with weighted bounds and tilts alone,
    /// 5.4e-5.)
    #[test]
    fn tilted_power_reads_tiny_deltas_of_a_heavy_tail_closely() {
        let (k, tail_mass, tilts) = (12_u64, 1e-24, 3);
        let (single, moments, _) = sampled_gaussian_power(1.5, 1e-3, 2e-3, k, tail_mass, tilts);
        let composed = single
            .self_compose_tilted_reaching(k, tail_mass, tilts, Some(&moments), true)
            .expect("composes");
        let epsilons = (0..40).map(|step| 0.04 + step as f64 * 0.004);
        assert_reads_the_exact_power(&single, k, &composed, epsilons, 1e-17..=1e-12, 2e-4);
    }

    /// Where one step's far tail dominates even the tilted normalizer (DP-SGD σ 0.67, q
    /// 2.2e-5: every tilt past about 10 makes k·a exceed the cap), the double-double power
    /// reads δ from 1e-12 down to 1e-20 never below the exact composition and within 1e-7 of
    /// it (1.0e-9 at most when written). With tilts alone, the reading at δ 9.2e-13 was
    /// 4.3e-3 above the truth.
    #[test]
    fn double_double_power_reads_deltas_tilting_cannot_reach() {
        let (k, tail_mass, tilts) = (6_u64, 1e-26, 3);
        let (single, moments, _) =
            sampled_gaussian_power(0.668, 2.223e-5, 4e-3, k, tail_mass, tilts);
        let composed = single
            .self_compose_tilted_reaching(k, tail_mass, tilts, Some(&moments), true)
            .expect("composes");
        let epsilons = (0..60).map(|step| 0.02 + step as f64 * 0.02);
        assert_reads_the_exact_power(&single, k, &composed, epsilons, 1e-20..=1e-12, 1e-7);
    }

    /// The window a tilted power is computed on: the window itself when the tilted sum leaves
    /// little above it; else reaching up until the Chernoff bound on what it leaves is at most
    /// `TILTED_LEAK` (checked with the bound itself), or to the cap of `TILTED_REACH` window
    /// lengths.
    #[test]
    fn tilted_windows_reach_up_until_little_wraps() {
        let (k, tail_mass, tilts) = (1797, 4.5e-21, 3);
        let (pmf, _, window) = sampled_gaussian_power(1.0539, 3.614e-4, 1e-4, k, tail_mass, tilts);
        let len = (window.top - window.bottom + 1) as usize;
        let mut extended = 0;
        for theta in [1.0, 10.0, 20.0, 24.0, 27.0, 40.0] {
            let (tilted, _) = pmf.tilted(theta).unwrap();
            let moments = TailMoments::of(&tilted, pmf.step);
            let top = tilted_window_top(&moments, k, &window, len);
            let cap = window.top + TILTED_REACH * len as u64;
            assert!(top >= window.top && top <= cap, "θ {theta}: top {top}");
            let at = |top: u64| Window {
                bottom: window.bottom,
                top,
                mass_above: window.mass_above,
                mass_below: window.mass_below,
                saddle_tilt: window.saddle_tilt,
            };
            // The Chernoff bound on the mass above a top (the part of `leak_outside` above).
            let above = |top: u64| {
                (0..TILTS)
                    .filter(|&t| moments.up[t].is_finite())
                    .map(|t| {
                        (k as f64 * moments.up[t] - moments.lambdas[t] * (top + 1) as f64).exp()
                    })
                    .fold(f64::INFINITY, f64::min)
            };
            assert!(leak_outside(&moments, &tilted, k, &at(top)) >= above(top).min(1.0) * 0.99);
            if top == window.top {
                assert!(
                    above(top) <= TILTED_LEAK * 1.01,
                    "θ {theta}: {:e} left",
                    above(top)
                );
            } else {
                extended += 1;
                assert!(
                    top == cap || above(top) <= TILTED_LEAK * 1.01,
                    "θ {theta}: top {top} leaves {:e}",
                    above(top)
                );
                assert!(top == window.top + 1 || above(top - 1) > TILTED_LEAK * 0.99 || top == cap);
            }
        }
        assert!(extended >= 2, "only {extended} windows reached up");
    }

    /// What circular convolution may wrap into a window from above: nothing when the window
    /// reaches the sum's top index (0, not Chernoff's bound, which at the top of a bounded
    /// support is about the top's own tilted mass: δ 1e-15 of two Laplace runs beside 100 of
    /// randomized response had a wrapped-mass bound of 0.5 on every tilted lower power, and
    /// stopped at [100.0003, 100.5055], not narrowing); one index short of it, at least the
    /// exact mass of that index (the bound stays a bound). Below, the same for a window
    /// starting above index 0.
    #[test]
    fn nothing_wraps_from_above_a_window_reaching_the_top_of_the_support() {
        let p = [0.5, 0.0, 0.3, 0.2];
        let q = [0.6, 0.4];
        let window = |bottom: u64, top: u64| Window {
            bottom,
            top,
            mass_above: 0.0,
            mass_below: 0.0,
            saddle_tilt: 0.0,
        };
        let power = exact_power(&p, 5);
        let moments = TailMoments::of(&p, 0.1);
        assert_eq!(leak_outside(&moments, &p, 5, &window(0, 15)), 0.0);
        assert_eq!(leak_outside(&moments, &p, 5, &window(0, 40)), 0.0);
        let top_mass = power[&15];
        assert!(leak_outside(&moments, &p, 5, &window(0, 14)) >= top_mass);
        let bottom_mass = power[&0];
        let leak = leak_outside(&moments, &p, 5, &window(1, 15));
        assert!(leak >= bottom_mass && leak <= 1.0, "{leak}");

        // 3 draws from p and 2 from q: top index 3·3 + 2·1 = 11, exact masses by enumeration.
        let factors: [(&[f64], u64); 2] = [(&p, 3), (&q, 2)];
        let mut law = BTreeMap::from([(0_u64, 1.0_f64)]);
        for vector in [&p[..], &p, &p, &q, &q] {
            let mut next = BTreeMap::new();
            for (&sum, &weight) in &law {
                for (i, &v) in vector.iter().enumerate() {
                    *next.entry(sum + i as u64).or_insert(0.0) += weight * v;
                }
            }
            law = next;
        }
        assert_eq!(product_window_leak(&factors, 0.1, &window(0, 11)), 0.0);
        assert!(product_window_leak(&factors, 0.1, &window(0, 10)) >= law[&11]);
        assert!(product_window_leak(&factors, 0.1, &window(1, 11)) >= law[&0]);
    }

    /// The exact law of the k-fold sum of a sparse vector, by enumerating the sums.
    fn exact_power(p: &[f64], k: u32) -> BTreeMap<u64, f64> {
        let mut law = BTreeMap::from([(0_u64, 1.0_f64)]);
        for _ in 0..k {
            let mut next = BTreeMap::new();
            for (&s, &w) in &law {
                for (i, &v) in p.iter().enumerate().filter(|(_, &v)| v > 0.0) {
                    *next.entry(s + i as u64).or_insert(0.0) += w * v;
                }
            }
            law = next;
        }
        law
    }

    /// The coarse bound is never below the exact tail, and is close to it: exact on its own
    /// grid (c = 1), and within the coarsening's shift when the grid is coarsened (c = 2:
    /// length 30,000, 3-fold, so the full support passes `COARSE_POWER_LEN`).
    #[test]
    fn coarse_tail_bounds_the_exact_tail() {
        for (len, k, stride) in [(700_usize, 4_u32, 17_usize), (30_000, 3, 731)] {
            let mut p = vec![0.0; len];
            for (j, i) in (0..len).step_by(stride).enumerate() {
                p[i] = 1.0 + (j as f64 * 0.7).sin().abs();
            }
            p[len - 1] = 0.5;
            let total: f64 = p.iter().sum();
            p.iter_mut().for_each(|v| *v /= total);
            let law = exact_power(&p, k);
            let full_top = k as u64 * (len as u64 - 1);
            let c = full_top.div_ceil(COARSE_POWER_LEN).max(1);
            for index in (0..=full_top).step_by(997).chain([full_top]) {
                let exact: f64 = law.range(index..).map(|(_, &w)| w).sum();
                let bound = coarse_mass_from(&p, k as u64, index).unwrap();
                assert!(
                    bound >= exact,
                    "len {len}, index {index}: {bound:e} < {exact:e}"
                );
                // The coarse sum of a sum at `s` is at most (s + k(c − 1))/c.
                let shifted: f64 = law
                    .range(index.saturating_sub(k as u64 * (c - 1))..)
                    .map(|(_, &w)| w)
                    .sum();
                assert!(
                    bound <= shifted + 1e-9,
                    "len {len}, index {index}: {bound:e} > {shifted:e}"
                );
            }
        }
    }
}
