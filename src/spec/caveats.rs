//! Why the bracket of a composition may be wide by nature, whatever the grid: the notes the
//! CLI prints below an answer (`note:` lines, JSON `inputs.caveats`) and the Python answers
//! carry (`caveats`).

use super::CompositionSpec;
use crate::accountant::infinite_loss::infinite_loss_floor;
use crate::mechanism::truncated_poisson::truncation_probability;
use crate::numeric::integer_search::first_holding;

impl CompositionSpec {
    /// Why this composition's bracket may stay wide however fine the grid, one sentence
    /// group per reason, in a fixed order (empty when nothing is known to widen it):
    /// - shuffled batches: no upper bound with amplification is known;
    /// - random allocation with 1 < k < t participations: no exact construction is known;
    /// - truncated Poisson sampling whose batches are expected to be cut in at least
    ///   [`NEGLIGIBLE_CUT_STEPS`] of the steps (one note per sampling, the steps of the
    ///   events sampled alike counted together);
    /// - mechanisms accounted through a guarantee (`zcdp`, `rdp_curve`,
    ///   `laplace_log_normal`, `student_t` and `cauchy`, `exponential`): the upper bound holds
    ///   for every mechanism with the guarantee, the lower bound for one of them or for none
    ///   (one note per kind present).
    ///
    /// [`CompositionSpec::caveats_at_delta`] adds the notes that matter at one δ.
    pub fn caveats(&self) -> Vec<String> {
        self.caveats_at_delta(None)
    }

    /// [`CompositionSpec::caveats`] for an answer at `delta` (the δ asked for, or the one
    /// found): truncated Poisson sampling gets its note also where the expected cut steps,
    /// fewer than [`NEGLIGIBLE_CUT_STEPS`], are at least δ/[`CUTS_AGAINST_DELTA`]. At small δ
    /// rare cuts decide the upper bound (σ 0.616, q 0.01, B 700, n 60,000, two steps with
    /// 6.8e-5 cut steps expected: ε(1e-8) in [3.98, 5.99]). `None`: the note's threshold
    /// alone. With a δ, also a note when the mass at infinite loss leaves less than
    /// 1e-15 of δ to the rest of the composition.
    pub fn caveats_at_delta(&self, delta: Option<f64>) -> Vec<String> {
        self.caveats_for_answer(delta, true)
    }

    /// [`CompositionSpec::caveats_at_delta`] for an answer that met its tolerance or not
    /// (`met`): when it did not, truncated Poisson sampling gets its note wherever any cut
    /// is expected at all. How far rare cuts move ε depends on the answer, not on δ alone:
    /// σ 1.82, q 0.01, B 700, n 60,000, one step beside sampled discrete Laplace noise,
    /// expects 3.4e-5 cut steps, under δ/10 at δ 1e-3, yet its ε(1e-3), about 0.01, was
    /// bracketed in [0.0094, 0.0110] with no note.
    pub fn caveats_for_answer(&self, delta: Option<f64>, met: bool) -> Vec<String> {
        let mut caveats = Vec::new();
        if self
            .events()
            .iter()
            .any(|event| event.sampling().name() == "shuffle")
        {
            caveats.push(SHUFFLE_CAVEAT.to_string());
        }
        let several = self.events().iter().any(|event| {
            event
                .sampling()
                .random_allocation_steps()
                .is_some_and(|(t, k)| 1 < k && k < t)
        });
        if several {
            caveats.push(SEVERAL_PARTICIPATIONS_CAVEAT.to_string());
        }
        // (Events sampled alike are one run of their steps together: one note, their counts
        // added.)
        let mut truncated: Vec<((f64, u64, u64), u64)> = Vec::new();
        for event in self.events() {
            if let Some(parameters) = event.sampling().truncated_poisson_parameters() {
                match truncated.iter_mut().find(|(p, _)| *p == parameters) {
                    Some((_, count)) => *count = count.saturating_add(event.count()),
                    None => truncated.push((parameters, event.count())),
                }
            }
        }
        caveats.extend(truncated.into_iter().filter_map(
            |((rate, max_batch_size, dataset_size), count)| {
                truncation_caveat(rate, max_batch_size, dataset_size, count, delta, !met)
            },
        ));
        if let Some(note) = delta.and_then(|delta| infinite_loss_caveat(self, delta)) {
            caveats.push(note);
        }
        caveats.extend(
            GUARANTEE_CAVEATS
                .iter()
                .filter(|(names, _)| {
                    self.events()
                        .iter()
                        .any(|event| names.contains(&event.mechanism().name()))
                })
                .map(|(_, caveat)| caveat.to_string()),
        );
        caveats
    }
}

/// Why a composition with a mechanism accounted through its guarantee has a bracket that
/// the grid cannot narrow, by the mechanisms' names in the specification: the upper bound
/// is the worst case over every mechanism with the guarantee, the lower bound that of one
/// mechanism that has it (or none, when nothing is known of the mechanism itself).
const GUARANTEE_CAVEATS: [(&[&str], &str); 4] = [
    (
        &["zcdp", "rdp_curve"],
        "zcdp and rdp_curve events are known only by their Rényi guarantee. The upper bound \
         holds for every mechanism with the guarantee; the lower bound is that of one \
         mechanism that has it (the Gaussian mechanism whose Rényi divergences stay within \
         it): it bounds the worst case, not your mechanism, which may leak less. The \
         bracket can stay wide whatever the grid: publish the upper end.",
    ),
    (
        &["laplace_log_normal"],
        "laplace_log_normal is accounted by its zCDP guarantee, ρ = ½(t/σ + e^{3σ²/2}·s)². \
         The upper bound holds for every ρ-zCDP mechanism; no lower bound is known for the \
         mechanism itself, so the lower bound counts it as releasing nothing. The bracket can \
         stay wide whatever the grid: publish the upper end.",
    ),
    (
        &["student_t", "cauchy"],
        "student_t and cauchy noise are accounted by their ε-DP guarantee (the upper bound \
         takes randomized response at that ε, the worst ε-DP mechanism); no lower bound is \
         known for the mechanisms themselves, so the lower bound counts them as releasing \
         nothing. The bracket can stay wide whatever the grid: publish the upper end.",
    ),
    (
        &["exponential"],
        "exponential selections are accounted as ε-bounded range. Selections at one ε and \
         nothing else (up to about 4000 of them) are bracketed by the optimal adaptive \
         composition, computed on a lattice of losses; otherwise each selection is accounted \
         by one pair that dominates every ε-bounded-range mechanism, and the lower bound \
         takes the exponential mechanism over two outputs (randomized response at ε/2). The \
         bracket can stay wide whatever the grid: publish the upper end.",
    ),
];

/// The part of δ left to the finite losses below which a composition with mass at infinite
/// loss gets a note: the smallest δ the accountant is built to meet its tolerance at. Ten
/// `eps_delta` events with δ₀ = 1e-9 beside sampled Laplace, discrete Laplace and Gaussian
/// noise put 1e-8 − 4.5e-17 at +∞: ε(1e-8 + 1e-15) meets the tolerance in 0.3 s, ε(1e-8)
/// itself, 4.5e-17 left, stopped in 7 s at [20.26, 20.51] (1.2% wide).
pub const SMALLEST_REST_OF_DELTA: f64 = 1e-15;

/// Why the bracket at `delta` may stay wide when the composition's P-mass at infinite loss
/// (`eps_delta` events' δ₀, one-sided `pmf_pair` outcomes: no finite ε covers it) leaves
/// less than [`SMALLEST_REST_OF_DELTA`] of δ to everything else, which must then be read at
/// that tiny δ. `None` when the mass exceeds δ (the answer is ∞, no note needed) or leaves
/// more.
fn infinite_loss_caveat(spec: &CompositionSpec, delta: f64) -> Option<String> {
    let floor = infinite_loss_floor(spec);
    let mass = floor.remove.max(floor.add);
    let rest = delta - mass;
    (mass > 0.0 && rest > 0.0 && rest < SMALLEST_REST_OF_DELTA).then(|| {
        format!(
            "the composition puts P-mass {mass:.10e} at infinite privacy loss (its eps_delta \
             events' δ, or pmf_pair outcomes one side never produces), which no ε covers: of \
             δ = {delta:e} only about {rest:.1e} is left for everything else, below the 1e-15 \
             the accountant is built to meet its tolerance at. The bracket can stay wide; a \
             slightly larger δ leaves more."
        )
    })
}

/// Why random allocation with several participations per epoch has a bracket a few
/// percent wide.
const SEVERAL_PARTICIPATIONS_CAVEAT: &str = "random allocation with 1 < k < t \
     participations per epoch: no exact construction is known. The upper bound splits each \
     epoch into k allocations of one step (Feldman & Shenfeld 2025); the lower bound is what \
     a statistic of the outputs provably leaks. Brackets of 0.1% to a few percent are \
     expected and do not narrow with the grid.";

/// Expected number of cut steps below which truncated Poisson sampling gets no caveat (on
/// MNIST-sized runs the bracket is then within 1e-4 of plain Poisson sampling's; README,
/// "Truncated Poisson sampling").
pub const NEGLIGIBLE_CUT_STEPS: f64 = 0.01;

/// At an answer's δ, expected cut steps of at least δ over this many get the truncation note
/// (see [`CompositionSpec::caveats_at_delta`]): the upper bound's cut branch, which happens
/// with about that chance, can then move δ by more than a tenth of itself (two steps with
/// 6.8e-5 cut steps expected: ε(1e-3) met its tolerance, ε(1e-5) did not).
pub const CUTS_AGAINST_DELTA: f64 = 10.0;

/// Why a truncated Poisson event's bracket is wide, when its batches are expected to be cut
/// in at least [`NEGLIGIBLE_CUT_STEPS`] of its `count` steps (or, at an answer's `delta`,
/// δ/[`CUTS_AGAINST_DELTA`] if that is fewer): how many, what the two ends assume, and the
/// smallest cap that would make cuts negligible. `None` when they already are, unless the
/// answer is `wide` (its tolerance not met) and any cut is expected: the cap named is then
/// one with a hundredth of the cuts expected.
fn truncation_caveat(
    rate: f64,
    max_batch_size: u64,
    dataset_size: u64,
    count: u64,
    delta: Option<f64>,
    wide: bool,
) -> Option<String> {
    let mut negligible_steps = delta
        .filter(|d| d.is_finite() && *d > 0.0)
        .map_or(NEGLIGIBLE_CUT_STEPS, |d| {
            (d / CUTS_AGAINST_DELTA).min(NEGLIGIBLE_CUT_STEPS)
        });
    // P(Bin(n, q) ≥ B), from above: the chance that a step's batch is cut on the larger
    // neighbour (n + 1 records; the n-record dataset's own chance is at most this).
    let larger = dataset_size.saturating_add(1);
    let cut = |cap: u64| truncation_probability(rate, cap, larger).upper;
    let steps = count as f64;
    let expected = steps * cut(max_batch_size);
    // (A NaN tail gives no note either.)
    if expected.is_nan() || expected < negligible_steps && !(wide && expected > 0.0) {
        return None;
    }
    if expected < negligible_steps {
        negligible_steps = expected / 100.0;
    }
    // The smallest cap with negligible cuts: doubling, then bisection (the tail falls with
    // the cap; a cap above n never cuts).
    let negligible = |cap: u64| cap >= larger || steps * cut(cap) < negligible_steps;
    let mut high = max_batch_size.max(1);
    while !negligible(high) {
        high = high.saturating_mul(2).min(larger);
    }
    let high = first_holding(max_batch_size, high, negligible);
    Some(format!(
        "truncated Poisson sampling (q {rate}, B {max_batch_size}, n {dataset_size}): about \
         {} of the {count} steps are expected to cut their batch (P(Bin(n, q) ≥ B) = \
         {:.2e}). The upper bound lets each cut step expose the record at twice the clipping \
         norm; the lower bound is Poisson sampling at the chance of being kept. The truth lies \
         between, and only the upper end may be published. A larger cap narrows the \
         bracket: with B ≥ {high}, fewer than {} cut steps are expected.",
        significant(expected),
        cut(max_batch_size),
        significant(negligible_steps),
    ))
}

/// A count for prose: two significant figures below 100 (as 6.8e-5 below 0.001), whole
/// numbers above.
fn significant(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x < 1e-3 {
        format!("{:e}", format!("{x:.1e}").parse::<f64>().unwrap_or(x))
    } else {
        format!("{}", format!("{x:.2e}").parse::<f64>().unwrap_or(x))
    }
}

/// Why a shuffled composition's bracket is wide.
const SHUFFLE_CAVEAT: &str = "shuffled batches: no bound with amplification is known. \
     The upper bound counts each epoch as one unamplified step; the lower bound is what two \
     neighbouring datasets provably leak (Chua et al., ICML 2024). The truth lies between. \
     Poisson accounting at rate 1/t is not a guarantee here, and can lie below the proven \
     lower bound (pld compare, row poisson_claim).";

#[cfg(test)]
mod tests {
    use super::*;

    /// The cap a truncation note names ("with B ≥ 715, …").
    fn named_cap(note: &str) -> u64 {
        note.rsplit("B ≥ ")
            .next()
            .and_then(|rest| rest.split(',').next())
            .and_then(|number| number.parse().ok())
            .expect("the note names a cap")
    }

    /// The cap named is the smallest with negligible cuts, checked against the tail itself
    /// (P(Bin(n, q) ≥ B) by the library, which the truncated Poisson tests hold against
    /// direct sums and scipy); rare cuts get no note.
    #[test]
    fn truncation_note_names_the_smallest_cap_with_negligible_cuts() {
        let (q, n, steps) = (256.0 / 60_000.0, 60_000, 14_063);
        let note = truncation_caveat(q, 300, n, steps, None, false).expect("cuts matter at B 300");
        assert!(note.contains("about 54.5 of the 14063 steps"), "{note}");
        let cap = named_cap(&note);
        let expected = |b: u64| steps as f64 * truncation_probability(q, b, n + 1).upper;
        assert!(expected(cap) < NEGLIGIBLE_CUT_STEPS, "{note}");
        assert!(expected(cap - 1) >= NEGLIGIBLE_CUT_STEPS, "{note}");
        assert_eq!(truncation_caveat(q, cap, n, steps, None, false), None);
        // A cap above the dataset never cuts.
        assert_eq!(truncation_caveat(0.5, 101, 100, 1_000, None, false), None);
        // Every batch cut (q = 1): only a cap above n makes cuts negligible.
        let all = truncation_caveat(1.0, 10, 100, 5, None, false).expect("every step cuts");
        assert!(all.contains("B ≥ 101,"), "{all}");
        // Huge datasets and counts end (doubling, then bisection, both bounded).
        let huge = truncation_caveat(1e-6, 1, 1_000_000_000_000, 1_000_000_000_000, None, false)
            .expect("cuts matter");
        assert!(huge.contains("B ≥ "), "{huge}");
    }

    /// At a small δ, rare cuts get the note too: two steps at q 0.01, B 700, n 60,000 expect
    /// 6.8e-5 cut steps, below the spec-level threshold, and at δ 1e-8 their bracket was
    /// [3.98, 5.99] with no note. The note's cap is then the smallest with fewer than δ/10
    /// cut steps expected; at δ 1e-3 (and without a δ) there is none. Two events sampled
    /// alike get one note, their steps counted together.
    #[test]
    fn rare_cuts_get_the_note_at_small_delta() -> crate::error::Result<()> {
        use crate::spec::MechanismSpec;
        let (q, b, n) = (0.01, 700, 60_000);
        let spec = CompositionSpec::add_remove()
            .event(MechanismSpec::gaussian(0.616)?.truncated_poisson(q, b, n)?)
            .event(MechanismSpec::gaussian(2.74)?.truncated_poisson(q, b, n)?)
            .build()?;
        assert!(spec.caveats().is_empty());
        assert!(spec.caveats_at_delta(Some(1e-3)).is_empty());
        let notes = spec.caveats_at_delta(Some(1e-8));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("about 6.8e-5 of the 2 steps"),
            "{notes:?}"
        );
        assert!(notes[0].contains("fewer than 1e-9 cut steps"), "{notes:?}");
        let cap = named_cap(&notes[0]);
        let expected = |cap: u64| 2.0 * truncation_probability(q, cap, n + 1).upper;
        assert!(expected(cap) < 1e-9 && expected(cap - 1) >= 1e-9, "{cap}");
        // An answer that missed its tolerance gets it at δ 1e-3 too, naming a cap with a
        // hundredth of the cuts.
        let wide = spec.caveats_for_answer(Some(1e-3), false);
        assert_eq!(wide.len(), 1, "{wide:?}");
        assert!(wide[0].contains("fewer than 6.8e-7 cut steps"), "{wide:?}");
        // (And none where no cut can happen: a cap above the dataset.)
        let never = CompositionSpec::add_remove()
            .event(MechanismSpec::gaussian(1.0)?.truncated_poisson(q, n + 1, n)?)
            .build()?;
        assert!(never.caveats_for_answer(Some(1e-3), false).is_empty());
        // The guarantee notes do not depend on δ.
        assert_eq!(
            CompositionSpec::add_remove()
                .event(MechanismSpec::zcdp(0.1)?)
                .build()?
                .caveats_at_delta(Some(1e-12)),
            [GUARANTEE_CAVEATS[0].1]
        );
        Ok(())
    }

    /// Each kind of mechanism accounted through its guarantee adds its note once, in the
    /// fixed order, however many events have it; the notes say which end to publish; a
    /// composition of exact mechanisms gets none.
    #[test]
    fn guarantee_notes_name_each_kind_once() -> crate::error::Result<()> {
        use crate::spec::MechanismSpec;
        let exact = CompositionSpec::add_remove()
            .event(MechanismSpec::gaussian(1.0)?.poisson(0.01)?.repeat(100)?)
            .event(MechanismSpec::eps_delta(0.5, 1e-7)?)
            .build()?;
        assert!(exact.caveats().is_empty(), "{:?}", exact.caveats());
        let mixed = CompositionSpec::add_remove()
            .event(MechanismSpec::exponential(1.0)?.repeat(3)?)
            .event(MechanismSpec::cauchy(0.1, 0.0)?)
            .event(MechanismSpec::zcdp(0.1)?.repeat(2)?)
            .event(MechanismSpec::student_t(3.0, 0.1, 0.0)?)
            .event(MechanismSpec::rdp_curve(vec![2.0, 8.0], vec![0.1, 0.4])?)
            .event(MechanismSpec::laplace_log_normal(0.6, 0.2, 0.2)?)
            .event(MechanismSpec::gaussian(1.0)?.poisson(0.01)?.repeat(100)?)
            .build()?;
        let notes = mixed.caveats();
        let starts: Vec<&str> = notes
            .iter()
            .map(|note| note.split_whitespace().next().unwrap_or(""))
            .collect();
        assert_eq!(
            starts,
            ["zcdp", "laplace_log_normal", "student_t", "exponential"],
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .all(|note| note.ends_with("publish the upper end.")),
            "{notes:?}"
        );
        // One kind alone: its note only.
        let zcdp_alone = CompositionSpec::add_remove()
            .event(MechanismSpec::rdp_curve(vec![2.0], vec![0.1])?)
            .build()?;
        assert_eq!(zcdp_alone.caveats(), [GUARANTEE_CAVEATS[0].1]);
        Ok(())
    }

    /// The infinite-loss note: ten eps_delta events with δ₀ = 1e-9 put 1 − (1 − 1e-9)¹⁰ =
    /// 1e-8 − 4.5e-17 at +∞. At δ 1e-8 only 4.5e-17 is left (note); at 1e-8 + 1e-14 more than
    /// 1e-15 (none); below the mass the answer is ∞ (none); without a δ, none.
    #[test]
    fn infinite_loss_note_when_almost_nothing_is_left() {
        let spec = CompositionSpec::from_json_str(
            r#"{"events":[{"mechanism":"eps_delta","epsilon":0.62,"delta":1e-9,"count":10},
            {"mechanism":"gaussian","sigma":8.0,"count":61}]}"#,
        )
        .unwrap();
        let has_note = |delta: Option<f64>| {
            spec.caveats_at_delta(delta)
                .iter()
                .any(|note| note.contains("at infinite privacy loss"))
        };
        let notes = spec.caveats_at_delta(Some(1e-8));
        assert!(
            notes.iter().any(|n| n.contains("only about 4.5e-17")),
            "{notes:?}"
        );
        assert!(!has_note(Some(1e-8 + 1e-14)));
        assert!(!has_note(Some(0.99e-8)));
        assert!(!has_note(None));
    }
}
