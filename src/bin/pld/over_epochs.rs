//! `pld curve --over epochs`: the ε bracket at one δ after each epoch of training, the plot
//! ML engineers ask for most.
//!
//! An epoch is one pass over the data. For a composition of one repeated event:
//! - Poisson or truncated Poisson sampling at rate q: an epoch is 1/q steps, and after E
//!   epochs ⌈E/q⌉ steps have run (a value within 1e-9 of a whole number is that number), as
//!   `--epochs` counts them;
//! - a fixed batch of B out of N: N/B steps per epoch, counted the same way;
//! - random allocation and shuffling: the event's count already is the number of epochs;
//! - no sampling: every run is a pass over the data, so an epoch is one run.
//!
//! The last point is the whole run, also when it ends inside an epoch. Runs of more than
//! [`MAX_EPOCH_POINTS`] epochs are shown at that many evenly spread epochs.

use crate::compare::subtitle;
use crate::curve::bracket_series;
use crate::input::Input;
use crate::parallel;
use crate::plot::{Axis, Marker, Plot, Scale};
use crate::render::number;
use pld_accountant::spec::steps_from_epochs;
use pld_accountant::{
    Accountant, AccountantOptions, Bracket, CompositionSpec, Error, Event, Settings,
};
use serde::Serialize;

/// Most epochs shown.
pub const MAX_EPOCH_POINTS: usize = 200;

/// ε after one number of epochs.
#[derive(Debug, Clone, Serialize)]
pub struct EpochPoint {
    /// Passes over the data so far (fractional for the last point of a run that ends
    /// inside an epoch).
    #[serde(serialize_with = "number::serialize")]
    pub epochs: f64,
    /// Runs of the event so far (steps; epochs for random allocation and shuffling).
    pub count: u64,
    /// Guaranteed bracket on ε at the report's δ.
    pub epsilon: Bracket,
    /// How it was computed.
    pub settings: Settings,
}

/// ε over the epochs of a training run.
#[derive(Debug, Clone, Serialize)]
pub struct OverEpochsReport {
    /// Always `"epochs"`.
    pub over: &'static str,
    /// The δ every point answers for.
    #[serde(serialize_with = "number::serialize")]
    pub delta: f64,
    /// What `count` counts: `"steps"` or `"epochs"`.
    pub count_unit: &'static str,
    /// One point per epoch shown, in order; the last is the whole run.
    pub points: Vec<EpochPoint>,
    /// What was accounted.
    pub source: String,
    /// The preset's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
}

/// `(epochs, count)` of every point shown, in order.
pub type Schedule = Vec<(f64, u64)>;

/// `(epochs, count)` of every point shown for the one event of `spec`, and what the count
/// counts.
///
/// # Errors
/// [`Error::Incompatible`] naming `--over` for a composition of more than one event.
pub fn schedule(spec: &CompositionSpec) -> Result<(Schedule, &'static str), Error> {
    let [event] = spec.events() else {
        return Err(Error::Incompatible {
            field: "--over".into(),
            reason: format!(
                "ε over epochs needs a training run: one event repeated (this composition has \
                 {} events, so an epoch is not defined)",
                spec.events().len()
            ),
        });
    };
    let sampling = event.sampling();
    let count = event.count();
    let rate = sampling
        .poisson_rate()
        .or_else(|| sampling.truncated_poisson_parameters().map(|p| p.0));
    let (mut points, unit): (Vec<(f64, u64)>, _) = if let Some(q) = rate {
        (by_rate(count, |e| e / q, count as f64 * q), "steps")
    } else if let Some((batch, dataset)) = sampling.batch() {
        let (b, n) = (batch as f64, dataset as f64);
        (by_rate(count, |e| e * n / b, count as f64 * b / n), "steps")
    } else {
        let unit = if sampling.counts_epochs() {
            "epochs"
        } else {
            "steps"
        };
        ((1..=count).map(|e| (e as f64, e)).collect(), unit)
    };
    thin(&mut points);
    Ok((points, unit))
}

/// Points after each whole epoch (steps = `steps_of(E)` per [`steps_from_epochs`]) and at the
/// end of the run (`total_epochs`, `count`) unless a whole epoch ends it.
fn by_rate(count: u64, steps_of: impl Fn(f64) -> f64, total_epochs: f64) -> Vec<(f64, u64)> {
    let mut points = Vec::new();
    let mut e = 1u64;
    loop {
        match steps_from_epochs(steps_of(e as f64)) {
            Some(steps) if steps < count => points.push((e as f64, steps)),
            // The run ends with this epoch.
            Some(steps) if steps == count => {
                points.push((e as f64, count));
                return points;
            }
            _ => break,
        }
        e += 1;
    }
    points.push((total_epochs, count));
    points
}

/// At most [`MAX_EPOCH_POINTS`], evenly spread, the last kept.
fn thin(points: &mut Vec<(f64, u64)>) {
    let n = points.len();
    if n <= MAX_EPOCH_POINTS {
        return;
    }
    let keep: Vec<(f64, u64)> = (1..=MAX_EPOCH_POINTS)
        .map(|k| points[(k * n).div_ceil(MAX_EPOCH_POINTS) - 1])
        .collect();
    *points = keep;
}

impl OverEpochsReport {
    /// The bracket at `delta` after each epoch of the one event of `input.spec`, computed in
    /// parallel, one accountant per point.
    ///
    /// # Errors
    /// As [`schedule`]; the accountant's errors.
    pub fn new(
        input: &Input,
        delta: f64,
        options: AccountantOptions,
        progress: &crate::progress::Progress,
    ) -> Result<OverEpochsReport, Error> {
        let (schedule, count_unit) = schedule(&input.spec)?;
        let event: &Event = &input.spec.events()[0];
        let task = progress.task("ε after each epoch", schedule.len());
        let answers = parallel::map(&schedule, |&(_, count)| {
            let answer = event
                .clone()
                .repeat(count)
                .and_then(|e| CompositionSpec::new(input.spec.neighbouring(), vec![e]))
                .and_then(|spec| Accountant::new(&spec, options))
                .and_then(|accountant| accountant.epsilon_for_delta(delta));
            task.advance();
            answer
        });
        drop(task);
        let points = schedule
            .iter()
            .zip(answers)
            .map(|(&(epochs, count), answer)| {
                answer.map(|a| EpochPoint {
                    epochs,
                    count,
                    epsilon: a.epsilon,
                    settings: a.settings,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(OverEpochsReport {
            over: "epochs",
            delta,
            count_unit,
            points,
            source: input.source.clone(),
            about: input.about.clone(),
        })
    }

    /// ε against epochs, the bracket shaded, the final ε marked.
    pub fn plot(&self) -> Plot {
        let mut plot = Plot::new(
            &format!("ε after each epoch of training (δ = {:e})", self.delta),
            &subtitle(&self.source, self.about.as_deref()),
            Axis::new("epochs", Scale::Linear).starting_at_zero(),
            Axis::new("ε", Scale::Linear).starting_at_zero(),
        );
        // Before training nothing was released: ε = 0 exactly.
        let start = (0.0, 0.0, 0.0);
        bracket_series(
            &mut plot,
            std::iter::once(start)
                .chain(
                    self.points
                        .iter()
                        .map(|p| (p.epochs, p.epsilon.lower, p.epsilon.upper)),
                )
                .collect(),
        );
        if let Some(last) = self.points.last() {
            plot.markers.push(Marker::Point {
                x: last.epochs,
                y: last.epsilon.upper,
                label: format!(
                    "ε ≤ {} after {} epochs",
                    number::upper(last.epsilon.upper),
                    number::epochs(last.epochs)
                ),
            });
        }
        plot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pld_accountant::MechanismSpec;

    fn one_event(event: Event) -> CompositionSpec {
        let neighbouring = if event.sampling().batch().is_some() {
            CompositionSpec::replace()
        } else {
            CompositionSpec::add_remove()
        };
        neighbouring.event(event).build().expect("valid")
    }

    #[test]
    fn poisson_epochs_are_counted_as_epochs_flag_counts_them() {
        // 60 epochs of 256 out of 60,000: ⌈E·60000/256⌉ steps after E epochs, 14,063 in all.
        let spec = CompositionSpec::dp_sgd(1.1, 256.0 / 60000.0, 14_063, 1.0).expect("valid");
        let (points, unit) = schedule(&spec).expect("one event");
        assert_eq!(unit, "steps");
        assert_eq!(
            points.len(),
            60,
            "one point per epoch; the 60th ends the run"
        );
        assert_eq!(points[0], (1.0, 235));
        assert_eq!(points[58], (59.0, 13_829));
        assert_eq!(points[59], (60.0, 14_063));
    }

    #[test]
    fn epoch_counted_schemes_and_long_runs() {
        let g = MechanismSpec::gaussian(1.0).expect("valid");
        let shuffled = one_event(g.clone().shuffle(100).unwrap().repeat(5).unwrap());
        let (points, unit) = schedule(&shuffled).unwrap();
        assert_eq!(unit, "epochs");
        assert_eq!(points, [(1.0, 1), (2.0, 2), (3.0, 3), (4.0, 4), (5.0, 5)]);
        // 10,000 epochs at q = 0.5: thinned to 200 points, the last the whole run.
        let long = CompositionSpec::dp_sgd(1.0, 0.5, 20_000, 1.0).unwrap();
        let (points, _) = schedule(&long).unwrap();
        assert_eq!(points.len(), MAX_EPOCH_POINTS);
        assert_eq!(points.last(), Some(&(10_000.0, 20_000)));
        assert!(points.windows(2).all(|w| w[0].1 < w[1].1));
        // Less than one epoch: one point, the run.
        let short = CompositionSpec::dp_sgd(1.0, 0.01, 30, 1.0).unwrap();
        let (points, _) = schedule(&short).unwrap();
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].1, 30);
        assert!((points[0].0 - 0.3).abs() < 1e-12);
    }

    #[test]
    fn two_events_are_refused_naming_over() {
        let g = MechanismSpec::gaussian(1.0).unwrap();
        let spec = CompositionSpec::add_remove()
            .event(g.clone().repeat(3).unwrap())
            .event(g.repeat(2).unwrap())
            .build()
            .unwrap();
        let message = schedule(&spec).unwrap_err().to_string();
        assert!(
            message.contains("--over") && message.contains("2 events"),
            "{message}"
        );
    }
}
