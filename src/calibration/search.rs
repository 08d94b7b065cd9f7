//! Locating the switch of a yes/no answer along one axis, from a few costly evaluations.
//!
//! The search knows nothing about privacy. Each probe at a coordinate `z` returns a *gap*
//! `g(z)` (for calibration `ln(ε_upper(z)/ε_target)`), and the answer is "yes" (the target is
//! met) when `g(z) ≤ 0`. The axis is oriented so that `g` increases with `z`: the target is met
//! below a switch point `z*` and missed above it, and the best value is the largest `z` that
//! meets.
//!
//! The search keeps the highest probe known to meet and the lowest known to miss:
//! - with only one of them, it takes a Newton step on `g` towards the switch (a secant slope
//!   from the last two probes, or a prior), doubling the step while it keeps landing on the
//!   same side, and geometric steps (×10, ×100, ×10⁴, …) where `g` is ±∞;
//! - with both (a bracket), it interpolates `g` linearly (regula falsi), falls back to
//!   bisection when the bracket has not halved over two probes, and keeps every probe at least
//!   half a resolution inside the bracket, so an accurate estimate closes the bracket on the
//!   next probe.
//!
//! `g` may be slightly non-monotone (the accountant's upper bound moves with its grid); the
//! search only ever returns probes it evaluated, so whatever it reports as meeting did meet.

/// The searched axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Axis {
    /// Smallest coordinate searched.
    pub lowest: f64,
    /// Largest coordinate searched.
    pub highest: f64,
    /// Which coordinates exist.
    pub points: Points,
    /// The bracket is resolved when its width is at most this (continuous axes).
    pub resolution: f64,
}

/// The coordinates an axis can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Points {
    /// Every real z in range.
    Continuous,
    /// `z = ln k` for whole numbers k ≥ 1 only.
    WholeNumbers,
}

impl Axis {
    fn whole_numbers(&self) -> bool {
        self.points == Points::WholeNumbers
    }

    /// The whole number k of `z = ln k`.
    pub fn whole(z: f64) -> f64 {
        z.exp().round().max(1.0)
    }
}

/// One evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Probe {
    /// Where (axis coordinate).
    pub z: f64,
    /// `g(z)`; ±∞ allowed, NaN counts as missing the target.
    pub gap: f64,
}

impl Probe {
    /// Whether the target is met here.
    pub fn meets(&self) -> bool {
        self.gap <= 0.0
    }
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Next {
    /// Evaluate at this coordinate.
    Probe(f64),
    /// A meeting and a missing probe are within the resolution.
    Resolved,
    /// The largest coordinate meets the target: nothing better exists on the axis.
    MeetsAtHighest,
    /// The smallest coordinate misses the target: nothing on the axis meets it.
    FailsAtLowest,
}

/// Largest single step (in z) while expanding from one side: ln 100, doubled per repeat.
const MAX_STEP: f64 = 4.605_170_185_988_092;
/// A first step where the gap is infinite and nothing is known yet: ln 10 (a factor of 10).
pub(crate) const BLIND_STEP: f64 = std::f64::consts::LN_10;
/// A secant slope is trusted from the prior divided by this (flat stretches: long steps,
/// capped by [`MAX_STEP`])...
const FLATTEST_SLOPE: f64 = 1e3;
/// ... to the prior times this (steep stretches: short steps).
const STEEPEST_SLOPE: f64 = 30.0;

/// The state of one search.
#[derive(Debug, Clone)]
pub(crate) struct Switch {
    axis: Axis,
    /// First coordinate to probe.
    start: f64,
    /// Prior slope dg/dz (> 0), used until two probes give a secant.
    prior_slope: f64,
    /// First step where the gap is infinite (no slope to use).
    blind_step: f64,
    meets: Option<Probe>,
    fails: Option<Probe>,
    /// The two most recent probes (most recent last).
    recent: [Option<Probe>; 2],
    /// Consecutive probes on the same side while the other side is unknown.
    run: i32,
    /// Bracket widths after each probe made inside a bracket.
    widths: Vec<f64>,
}

impl Switch {
    /// A search starting at `start` (clamped to the axis), with a prior slope `dg/dz > 0` and
    /// a first step `blind_step` for where the gap is infinite.
    pub fn new(axis: Axis, start: f64, prior_slope: f64, blind_step: f64) -> Self {
        Switch {
            axis,
            start: start.clamp(axis.lowest, axis.highest),
            prior_slope,
            blind_step,
            meets: None,
            fails: None,
            recent: [None, None],
            run: 0,
            widths: Vec::new(),
        }
    }

    /// The highest probe known to meet the target.
    pub fn meets(&self) -> Option<Probe> {
        self.meets
    }

    /// The lowest probe known to miss the target.
    pub fn fails(&self) -> Option<Probe> {
        self.fails
    }

    /// Record an evaluation made at a coordinate from [`Switch::next`] (or any other). A probe
    /// that contradicts the far end of the bracket (a miss at or below the meeting end, e.g. a
    /// re-evaluation that disagrees) replaces it: the newest evaluation wins.
    pub fn record(&mut self, probe: Probe) {
        if probe.meets() {
            self.fails = self.fails.filter(|f| f.z > probe.z);
        } else {
            self.meets = self.meets.filter(|m| m.z < probe.z);
        }
        let bracketed = self.meets.is_some() && self.fails.is_some();
        let same_side = match self.recent[1] {
            Some(last) => last.meets() == probe.meets(),
            None => false,
        };
        if probe.meets() {
            if self.meets.is_none_or(|m| probe.z > m.z) {
                self.meets = Some(probe);
            }
        } else if self.fails.is_none_or(|f| probe.z < f.z) {
            self.fails = Some(probe);
        }
        self.run = if same_side { self.run + 1 } else { 0 };
        self.recent = [self.recent[1], Some(probe)];
        if bracketed {
            if let (Some(a), Some(b)) = (self.meets, self.fails) {
                self.widths.push(b.z - a.z);
            }
        }
    }

    /// Where to probe next, or why to stop.
    pub fn next(&self) -> Next {
        let axis = self.axis;
        match (self.meets, self.fails) {
            (None, None) => Next::Probe(self.quantize(self.start)),
            (Some(a), Some(b)) => {
                if self.resolved(a, b) {
                    return Next::Resolved;
                }
                let width = b.z - a.z;
                let middle = a.z + 0.5 * width;
                // Newton from the one finite end is trusted only well inside the bracket: a
                // jump to ±∞ (e.g. δ of an atom crossing the target) is bisected.
                let inner =
                    |z: f64| (z - a.z).abs() <= 0.75 * width && (b.z - z).abs() <= 0.75 * width;
                let estimate = if self.stalled() {
                    middle
                } else if a.gap.is_finite() && b.gap.is_finite() && b.gap > a.gap {
                    a.z + width * (-a.gap / (b.gap - a.gap))
                } else if a.gap.is_finite() && inner(a.z + self.newton(a)) {
                    a.z + self.newton(a)
                } else if b.gap.is_finite() && inner(b.z - self.newton(b)) {
                    b.z - self.newton(b)
                } else {
                    middle
                };
                let margin = (0.5 * axis.resolution).min(0.5 * width);
                let z = if estimate.is_finite() {
                    estimate.clamp(a.z + margin, b.z - margin)
                } else {
                    middle
                };
                Next::Probe(self.inside(z, a, b))
            }
            (Some(a), None) => {
                if a.z >= axis.highest {
                    return Next::MeetsAtHighest;
                }
                let z = (a.z + self.expansion(a)).min(axis.highest);
                Next::Probe(if axis.whole_numbers() {
                    let k = Axis::whole(z).max(Axis::whole(a.z) + 1.0);
                    k.ln().min(axis.highest)
                } else {
                    z
                })
            }
            (None, Some(b)) => {
                if b.z <= axis.lowest {
                    return Next::FailsAtLowest;
                }
                let z = (b.z - self.expansion(b)).max(axis.lowest);
                Next::Probe(if axis.whole_numbers() {
                    let k = Axis::whole(z).min(Axis::whole(b.z) - 1.0).max(1.0);
                    k.ln().max(axis.lowest)
                } else {
                    z
                })
            }
        }
    }

    /// The best estimate of the switch and of the slope there (for seeding a finer search).
    pub fn estimate(&self) -> (f64, f64) {
        let slope = self.slope();
        match (self.meets, self.fails) {
            (Some(a), Some(b)) if a.gap.is_finite() && b.gap.is_finite() && b.gap > a.gap => {
                let slope = ((b.gap - a.gap) / (b.z - a.z)).max(f64::MIN_POSITIVE);
                let slope = if slope.is_finite() {
                    slope
                } else {
                    self.slope()
                };
                (a.z + (b.z - a.z) * (-a.gap / (b.gap - a.gap)), slope)
            }
            (Some(a), Some(b)) => (a.z + 0.5 * (b.z - a.z), slope),
            (Some(a), None) => (a.z, slope),
            (None, Some(b)) => (b.z, slope),
            (None, None) => (self.start, slope),
        }
    }

    /// Whether a meeting probe and a missing one are close enough.
    fn resolved(&self, a: Probe, b: Probe) -> bool {
        if self.axis.whole_numbers() {
            Axis::whole(b.z) - Axis::whole(a.z) <= 1.0 || b.z - a.z <= self.axis.resolution
        } else {
            b.z - a.z <= self.axis.resolution
        }
    }

    /// Whether the bracket failed to halve over the last two probes.
    fn stalled(&self) -> bool {
        let n = self.widths.len();
        n >= 3 && self.widths[n - 1] > 0.5 * self.widths[n - 3]
    }

    /// The slope dg/dz: a secant through the last two probes when it is usable, else the
    /// prior.
    fn slope(&self) -> f64 {
        if let [Some(p), Some(q)] = self.recent {
            let secant = (q.gap - p.gap) / (q.z - p.z);
            let plausible = self.prior_slope / FLATTEST_SLOPE..=self.prior_slope * STEEPEST_SLOPE;
            if secant.is_finite() && plausible.contains(&secant) {
                return secant;
            }
        }
        self.prior_slope
    }

    /// The Newton distance `|g|/slope` from a probe to the estimated switch.
    fn newton(&self, p: Probe) -> f64 {
        p.gap.abs() / self.slope()
    }

    /// How far to step from the only known side: Newton (at least half a resolution, at most
    /// [`MAX_STEP`]) where the gap is finite, [`BLIND_STEP`] otherwise, both doubled per
    /// repeated landing on the same side.
    fn expansion(&self, p: Probe) -> f64 {
        let doubling = 2f64.powi((self.run - 1).clamp(0, 30));
        let step = if p.gap.is_finite() {
            (self.newton(p) * doubling).min(MAX_STEP * doubling)
        } else {
            self.blind_step * doubling
        };
        step.max(0.5 * self.axis.resolution)
    }

    /// A coordinate the axis can hold: `ln k` of a whole k on whole-number axes.
    fn quantize(&self, z: f64) -> f64 {
        if self.axis.whole_numbers() {
            Axis::whole(z)
                .ln()
                .clamp(self.axis.lowest, self.axis.highest)
        } else {
            z
        }
    }

    /// A probe strictly inside the bracket `(a, b)`: on whole-number axes the whole number nearest
    /// to `z` other than the bracket's ends.
    fn inside(&self, z: f64, a: Probe, b: Probe) -> f64 {
        if self.axis.whole_numbers() {
            let (ka, kb) = (Axis::whole(a.z), Axis::whole(b.z));
            Axis::whole(z).clamp(ka + 1.0, kb - 1.0).ln()
        } else {
            z
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run a search on `g(z) = slope·(z − root)` (through a given map) and return the
    /// bracket and the number of probes.
    fn run(
        axis: Axis,
        start: f64,
        g: impl Fn(f64) -> f64,
    ) -> (Next, Option<f64>, Option<f64>, u32) {
        let mut search = Switch::new(axis, start, 1.0, BLIND_STEP);
        let mut probes = 0;
        loop {
            match search.next() {
                Next::Probe(z) => {
                    probes += 1;
                    assert!(probes < 200, "no convergence");
                    search.record(Probe { z, gap: g(z) });
                }
                other => {
                    return (
                        other,
                        search.meets().map(|p| p.z),
                        search.fails().map(|p| p.z),
                        probes,
                    )
                }
            }
        }
    }

    const AXIS: Axis = Axis {
        lowest: -20.0,
        highest: 20.0,
        points: Points::Continuous,
        resolution: 1e-4,
    };

    #[test]
    fn linear_gap_resolves_in_few_probes() {
        for root in [-15.0, -1.0, 0.3, 7.0, 19.0] {
            for slope in [0.2, 1.0, 5.0] {
                let (next, a, b, probes) = run(AXIS, 0.0, |z| slope * (z - root));
                assert_eq!(next, Next::Resolved, "root {root} slope {slope}");
                let (a, b) = (a.unwrap(), b.unwrap());
                assert!(a <= root && root < b && b - a <= 1e-4, "{a} {root} {b}");
                assert!(probes <= 12, "root {root} slope {slope}: {probes} probes");
            }
        }
    }

    #[test]
    fn curved_and_infinite_gaps_resolve() {
        // ln of a quantity that is 0 far below the switch and ∞ far above it.
        let g = |z: f64| {
            if z < -5.0 {
                f64::NEG_INFINITY
            } else if z > 3.0 {
                f64::INFINITY
            } else {
                (z - 1.234).powi(3) + 0.1 * (z - 1.234)
            }
        };
        for start in [-19.0, -6.0, 0.0, 2.0, 10.0] {
            let (next, a, b, probes) = run(AXIS, start, g);
            assert_eq!(next, Next::Resolved, "start {start}");
            let (a, b) = (a.unwrap(), b.unwrap());
            assert!(a <= 1.234 && 1.234 < b && b - a <= 1e-4, "{a} {b}");
            assert!(probes <= 40, "start {start}: {probes} probes");
        }
    }

    #[test]
    fn a_contradicting_evaluation_replaces_the_bracket_end() {
        let mut search = Switch::new(AXIS, 0.0, 1.0, BLIND_STEP);
        search.record(Probe { z: 1.0, gap: -0.5 });
        search.record(Probe { z: 2.0, gap: 0.5 });
        // A re-evaluation at z = 1 misses: z = 1 is now the missing end, nothing meets.
        search.record(Probe {
            z: 1.0,
            gap: f64::INFINITY,
        });
        assert_eq!(search.meets(), None);
        assert_eq!(search.fails().map(|p| p.z), Some(1.0));
        assert!(matches!(search.next(), Next::Probe(z) if z < 1.0));
    }

    #[test]
    fn limits_are_reported() {
        assert_eq!(run(AXIS, 0.0, |_| -1.0).0, Next::MeetsAtHighest);
        assert_eq!(run(AXIS, 0.0, |_| 1.0).0, Next::FailsAtLowest);
        assert_eq!(run(AXIS, 0.0, |_| f64::NAN).0, Next::FailsAtLowest);
    }

    #[test]
    fn integer_axis_ends_on_adjacent_whole_numbers() {
        let axis = Axis {
            lowest: 0.0,
            highest: 1e12f64.ln(),
            points: Points::WholeNumbers,
            // Adjacent whole numbers only (a positive resolution also stops at that width).
            resolution: 0.0,
        };
        for last in [1.0, 2.0, 17.0, 1000.0, 123_456.0, 1e12 - 1.0] {
            let (next, a, b, probes) = run(axis, 0.0, |z| {
                let k = Axis::whole(z);
                if k <= last {
                    (k / (last + 0.5)).ln()
                } else {
                    (k / (last + 0.5)).ln().max(1e-9)
                }
            });
            assert_eq!(next, Next::Resolved, "last {last}");
            assert_eq!(Axis::whole(a.unwrap()), last);
            assert_eq!(Axis::whole(b.unwrap()), last + 1.0);
            assert!(probes <= 40, "last {last}: {probes} probes");
        }
    }
}
