//! [`Ledger`]: the accountant of a running system, with its saved state.

use super::{check_grid_step, check_options, Accountant, AccountantOptions, PldCache};
use super::{DeltaAnswer, EpsilonAnswer, Settings, Tolerance};
use crate::bound::Bracket;
use crate::error::{Error, Result};
use crate::spec::{event_from_json, CompositionSpec, Event, Neighbouring};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// The format version a [`Ledger`] is saved in; other versions are refused on restore
/// ([`Error::UnsupportedVersion`]).
pub const LEDGER_FORMAT_VERSION: u32 = 1;

/// The `format` field of a saved ledger.
const FORMAT_NAME: &str = "pld-ledger";

/// Largest total count of one group (as the specification's `count`).
const MAX_GROUP_COUNT: u64 = crate::spec::MAX_COUNT;

/// A privacy budget: the composition must stay (ε, δ)-DP.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// ε ≥ 0.
    pub epsilon: f64,
    /// 0 < δ < 1.
    pub delta: f64,
}

impl Budget {
    /// A validated budget.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless ε is a finite number ≥ 0 and 0 < δ < 1.
    pub fn new(epsilon: f64, delta: f64) -> Result<Budget> {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(Error::invalid(
                "budget.epsilon",
                epsilon,
                "a finite number ≥ 0",
            ));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::invalid("budget.delta", delta, "a number in (0, 1)"));
        }
        Ok(Budget { epsilon, delta })
    }
}

/// One group of identical recorded events.
#[derive(Debug, Clone, PartialEq)]
struct Group {
    /// The event as the specification writes it, without its count.
    json: Value,
    /// The event parsed from `json`, count 1.
    event: Event,
    /// How many times it was recorded (Σ of the recorded counts).
    count: u64,
}

/// Answers at the current state, and the finest grid step they used.
#[derive(Debug, Default)]
struct Memo {
    epsilons: Vec<EpsilonAnswer>,
    deltas: Vec<DeltaAnswer>,
    finest_step: StartSteps,
}

/// First grid steps of the tolerance-driven search, for ε and for δ queries (they need
/// different grids: a δ bracket is asked to be far tighter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StartSteps {
    epsilon: Option<f64>,
    delta: Option<f64>,
}

impl StartSteps {
    /// `self` where it has a step, `other` elsewhere.
    fn or(self, other: StartSteps) -> StartSteps {
        StartSteps {
            epsilon: self.epsilon.or(other.epsilon),
            delta: self.delta.or(other.delta),
        }
    }
}

/// Which query a grid step was used by.
#[derive(Debug, Clone, Copy)]
enum Query {
    Epsilon,
    Delta,
}

/// The accountant of a running system: releases are recorded as they happen, and the ε/δ
/// bracket of everything recorded so far can be asked for at any time.
///
/// A [`Ledger`] keeps the composition as groups of identical events (a repeat adds to its
/// group's count) and, between queries, each group's discretized privacy loss distribution
/// on every grid it was used on, and the latest self-composition of each group. A query
/// then costs the FFT powers of the changed groups (one per bound, direction and grid the
/// accountant reads) and their composition, never a new discretization of the history;
/// with a fixed grid step its answer is bit for bit what a fresh [`Accountant`] gives for
/// the same events and options. With the tolerance-driven default,
/// the grid search of a query starts from the finest grid step the queries of its kind (ε
/// or δ) ended on before the last release (refining further only when the longer
/// composition needs it), so its bracket is as guaranteed as a fresh accountant's but may
/// sit on a different grid.
///
/// # Budgets: when the PLD filter is valid
///
/// [`Ledger::try_record`] refuses a release whose composition with the history would have a
/// guaranteed ε above a budget at its δ, leaving the ledger unchanged. Stopping there keeps
/// the (ε, δ) guarantee of the accepted releases when **the mechanisms and their parameters
/// are fixed in advance** (a non-adaptive sequence, possibly cut short): the accepted
/// releases are then a fixed composition, and the ledger's bracket is its PLD bracket. When
/// the next mechanism is chosen from past outputs (fully adaptive composition: e.g. the
/// noise of a step picked from the model trained so far, or the decision to refuse and try
/// a cheaper release), the stopped composition needs a privacy *filter theorem*, which the
/// PLD does not have in this crate. Use then one of the filters below, whose validity does
/// not depend on how the events were chosen:
///
/// * [`RdpFilter`](super::RdpFilter) (Feldman & Zrnic, "Individual privacy accounting via
///   a Rényi filter", NeurIPS 2021): Rényi DP of fixed orders, any mechanism with an RDP
///   curve;
/// * [`GdpFilter`](super::GdpFilter) (Smith & Thakurta, "Fully adaptive composition for
///   Gaussian differential privacy", 2022): unsampled Gaussian events only, `Σ μᵢ² ≤ μ²` of
///   the budget; tighter than the RDP filter for them.
///
/// # Saved state
///
/// A ledger serializes (serde, or [`Ledger::to_json`]) to its events, options, budget and
/// grid hint, with a format version ([`LEDGER_FORMAT_VERSION`]); restoring it
/// ([`Ledger::from_json_str`]) gives the answers the ledger would have given had it never
/// been saved. The caches are not saved: they are rebuilt on the first query.
///
/// ```
/// use pld_accountant::{AccountantOptions, Budget, Ledger, Neighbouring};
///
/// let mut ledger = Ledger::new(Neighbouring::AddRemove, AccountantOptions::default())?;
/// let step = ledger.event_from_json(
///     r#"{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01}}"#,
/// )?;
/// for _ in 0..100 {
///     ledger.record(step.clone())?;
/// }
/// let answer = ledger.epsilon_for_delta(1e-5)?;
/// assert!(answer.epsilon.lower <= answer.epsilon.upper);
/// // A budget: the release is refused (and not recorded) if ε would exceed 1 at δ = 1e-5.
/// let budget = Budget::new(1.0, 1e-5)?;
///  assert!(ledger.try_record(step, &budget).is_ok());
///  assert_eq!(ledger.total_count(), 101);
///  # Ok::<(), pld_accountant::Error>(())
///  ```
#[derive(Debug)]
pub struct Ledger {
    neighbouring: Neighbouring,
    options: AccountantOptions,
    budget: Option<Budget>,
    groups: Vec<Group>,
    /// Number of accepted `record` calls.
    releases: u64,
    /// First grid step of the tolerance-driven search (part of the state: saved).
    start_step: StartSteps,
    cache: Arc<PldCache>,
    memo: Mutex<Memo>,
}

impl Clone for Ledger {
    fn clone(&self) -> Self {
        let memo = self.memo();
        Ledger {
            neighbouring: self.neighbouring,
            options: self.options,
            budget: self.budget,
            groups: self.groups.clone(),
            releases: self.releases,
            start_step: self.start_step,
            // Keyed by content: sharing it between clones is safe.
            cache: Arc::clone(&self.cache),
            memo: Mutex::new(Memo {
                epsilons: memo.epsilons.clone(),
                deltas: memo.deltas.clone(),
                finest_step: memo.finest_step,
            }),
        }
    }
}

impl PartialEq for Ledger {
    /// Same state: events, options, budget, release count and grid hint (not the caches).
    fn eq(&self, other: &Self) -> bool {
        self.neighbouring == other.neighbouring
            && self.options == other.options
            && self.budget == other.budget
            && self.groups == other.groups
            && self.releases == other.releases
            && self.start_step == other.start_step
    }
}

impl Ledger {
    /// An empty ledger for the neighbouring relation `neighbouring`, answering with
    /// `options` (a fixed grid step makes every answer equal to a fresh [`Accountant`]'s).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for options [`Accountant::new`] refuses.
    pub fn new(neighbouring: Neighbouring, options: AccountantOptions) -> Result<Ledger> {
        check_options(&options)?;
        Ok(Ledger {
            neighbouring,
            options,
            budget: None,
            groups: Vec::new(),
            releases: 0,
            start_step: StartSteps::default(),
            cache: Arc::default(),
            memo: Mutex::default(),
        })
    }

    /// The same ledger with a budget kept in its state (used by [`Ledger::record_checked`]
    /// and saved with it).
    pub fn with_budget(mut self, budget: Budget) -> Ledger {
        self.budget = Some(budget);
        self
    }

    /// The budget kept in the state, if any.
    pub fn budget(&self) -> Option<Budget> {
        self.budget
    }

    /// Set or remove the budget kept in the state.
    pub fn set_budget(&mut self, budget: Option<Budget>) {
        self.budget = budget;
    }

    /// The neighbouring relation of every recorded event.
    pub fn neighbouring(&self) -> Neighbouring {
        self.neighbouring
    }

    /// The accountant options queries use.
    pub fn options(&self) -> AccountantOptions {
        self.options
    }

    /// Number of accepted `record` calls.
    pub fn releases(&self) -> u64 {
        self.releases
    }

    /// Total number of mechanism runs recorded (Σ of the events' counts).
    pub fn total_count(&self) -> u64 {
        self.groups.iter().map(|g| g.count).sum()
    }

    /// The recorded events, identical ones merged into one event whose `count` is their
    /// total, in the order of their first record.
    pub fn groups(&self) -> Vec<Event> {
        self.groups
            .iter()
            .map(|g| Event {
                count: g.count,
                ..g.event.clone()
            })
            .collect()
    }

    /// Everything recorded as a specification (`None` while nothing is).
    ///
    /// # Errors
    /// As [`CompositionSpec::from_json_value`] (not expected: every event was validated
    /// when recorded).
    pub fn spec(&self) -> Result<Option<CompositionSpec>> {
        if self.groups.is_empty() {
            return Ok(None);
        }
        CompositionSpec::from_json_value(&self.spec_json()).map(Some)
    }

    /// Everything recorded as the JSON of a specification.
    pub fn spec_json(&self) -> Value {
        json!({
            "neighbouring": neighbouring_name(self.neighbouring),
            "events": self.groups.iter().map(Group::json_with_count).collect::<Vec<_>>(),
        })
    }

    /// An event written as in a specification (`{"mechanism": "gaussian", "sigma": 1, …}`,
    /// `count` optional), validated under this ledger's neighbouring relation.
    ///
    /// # Errors
    /// The specification's errors, the field named `event.…`.
    pub fn event_from_json(&self, text: &str) -> Result<Event> {
        let value: Value = serde_json::from_str(text).map_err(|e| Error::MalformedSpec {
            message: format!("event: {}", crate::spec::json_error_message(text, &e)),
        })?;
        parse_event(&value, self.neighbouring)
    }

    /// Record a release (`event.count` runs of it), merging it into the group of identical
    /// events if there is one.
    ///
    /// # Errors
    /// The specification's errors for an invalid event or one the neighbouring relation does
    /// not allow; [`Error::InvalidParameter`] if a group's count would exceed 10¹².
    pub fn record(&mut self, event: Event) -> Result<()> {
        let group = self.group_of(&event)?;
        self.apply(group, event.count);
        Ok(())
    }

    /// Record a release only if the composition stays within `budget`: its guaranteed
    /// (upper-bound) ε at the budget's δ must be at most the budget's ε. Returns the new ε
    /// bracket at that δ.
    ///
    /// Valid as a privacy filter for non-adaptive sequences only (see [`Ledger`], "Budgets");
    /// use [`RdpFilter`](super::RdpFilter) or
    /// [`GdpFilter`](super::GdpFilter) when the next event depends on past outputs.
    ///
    /// # Errors
    /// [`Error::BudgetExceeded`] (the ledger unchanged) with the would-be ε upper bound;
    /// the errors of [`Ledger::record`] and [`Ledger::epsilon_for_delta`].
    pub fn try_record(&mut self, event: Event, budget: &Budget) -> Result<EpsilonAnswer> {
        Budget::new(budget.epsilon, budget.delta)?;
        let next = self.with_event(&event)?;
        let answer = next.epsilon_for_delta(budget.delta)?;
        // Decided on the guaranteed (upper) end only; NaN is refused.
        let within = answer.epsilon.upper <= budget.epsilon;
        if !within {
            return Err(Error::BudgetExceeded {
                filter: "pld".into(),
                epsilon: answer.epsilon.upper,
                delta: budget.delta,
                budget: budget.epsilon,
            });
        }
        *self = next;
        Ok(answer)
    }

    /// [`Ledger::try_record`] against the budget kept in the state, or [`Ledger::record`]
    /// if there is none (then `None` is returned).
    ///
    /// # Errors
    /// As [`Ledger::try_record`].
    pub fn record_checked(&mut self, event: Event) -> Result<Option<EpsilonAnswer>> {
        match self.budget {
            Some(budget) => self.try_record(event, &budget).map(Some),
            None => self.record(event).map(|()| None),
        }
    }

    /// Guaranteed bracket on ε(δ) of everything recorded (0 while nothing is).
    ///
    /// # Errors
    /// As [`Accountant::epsilon_for_delta`].
    pub fn epsilon_for_delta(&self, delta: f64) -> Result<EpsilonAnswer> {
        if let Some(hit) = self
            .memo()
            .epsilons
            .iter()
            .find(|a| a.delta.to_bits() == delta.to_bits())
        {
            return Ok(hit.clone());
        }
        let answer = match self.accountant(Query::Epsilon)? {
            Some(accountant) => accountant.epsilon_for_delta(delta)?,
            None => {
                if !(delta > 0.0 && delta < 1.0) {
                    return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
                }
                EpsilonAnswer {
                    delta,
                    epsilon: Bracket {
                        upper: 0.0,
                        lower: 0.0,
                    },
                    settings: self.nothing_recorded(),
                }
            }
        };
        let mut memo = self.memo();
        memo.note_step(Query::Epsilon, answer.settings.grid_step);
        memo.epsilons.push(answer.clone());
        Ok(answer)
    }

    /// Guaranteed bracket on δ(ε) of everything recorded (0 while nothing is).
    ///
    /// # Errors
    /// As [`Accountant::delta_for_epsilon`].
    pub fn delta_for_epsilon(&self, epsilon: f64) -> Result<DeltaAnswer> {
        if let Some(hit) = self
            .memo()
            .deltas
            .iter()
            .find(|a| a.epsilon.to_bits() == epsilon.to_bits())
        {
            return Ok(hit.clone());
        }
        let answer = match self.accountant(Query::Delta)? {
            Some(accountant) => accountant.delta_for_epsilon(epsilon)?,
            None => {
                if epsilon.is_nan() || epsilon < 0.0 {
                    return Err(Error::invalid("epsilon", epsilon, "a number ≥ 0"));
                }
                DeltaAnswer {
                    epsilon,
                    delta: Bracket {
                        upper: 0.0,
                        lower: 0.0,
                    },
                    settings: self.nothing_recorded(),
                }
            }
        };
        let mut memo = self.memo();
        memo.note_step(Query::Delta, answer.settings.grid_step);
        memo.deltas.push(answer.clone());
        Ok(answer)
    }

    /// The state as pretty JSON (the serde form; see [`Ledger::from_json_str`]).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.state())
            .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize: {e}\"}}"))
    }

    /// A ledger saved by [`Ledger::to_json`] (or serde).
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] for a format version other than
    /// [`LEDGER_FORMAT_VERSION`]; [`Error::MalformedSpec`] for text that is not a saved
    /// ledger; the specification's errors for an invalid event or option.
    pub fn from_json_str(text: &str) -> Result<Ledger> {
        let value: Value = serde_json::from_str(text).map_err(|e| Error::MalformedSpec {
            message: format!("ledger: {}", crate::spec::json_error_message(text, &e)),
        })?;
        Ledger::from_json_value(&value)
    }

    /// A ledger from the parsed JSON of a saved one.
    ///
    /// # Errors
    /// As [`Ledger::from_json_str`].
    pub fn from_json_value(value: &Value) -> Result<Ledger> {
        let malformed = |message: String| Error::MalformedSpec {
            message: format!("ledger: {message}"),
        };
        let object = value
            .as_object()
            .ok_or_else(|| malformed("a saved ledger is a JSON object".into()))?;
        match object.get("format") {
            Some(Value::String(name)) if name == FORMAT_NAME => {}
            other => {
                return Err(malformed(format!(
                    "\"format\" is {}, expected \"{FORMAT_NAME}\"",
                    other.map_or("missing".to_string(), Value::to_string)
                )))
            }
        }
        match object.get("version") {
            Some(v) if v.as_u64() == Some(u64::from(LEDGER_FORMAT_VERSION)) => {}
            Some(v) => {
                return Err(Error::UnsupportedVersion {
                    version: v.to_string(),
                    supported: LEDGER_FORMAT_VERSION,
                })
            }
            None => return Err(malformed("missing \"version\"".into())),
        }
        let state: State =
            serde_json::from_value(value.clone()).map_err(|e| malformed(e.to_string()))?;
        state.into_ledger()
    }

    /// A fresh copy with `event` recorded.
    fn with_event(&self, event: &Event) -> Result<Ledger> {
        let group = self.group_of(event)?;
        let mut next = self.clone();
        next.apply(group, event.count);
        Ok(next)
    }

    /// Where `event` goes: the index of its group, or its new group; validated, and the
    /// group's count checked (the state is not changed).
    fn group_of(&self, event: &Event) -> Result<std::result::Result<usize, Group>> {
        let count_error = || {
            Error::invalid(
                "event.count",
                event.count,
                "a whole number ≥ 1 that keeps the group's total at most 10^12",
            )
        };
        if !(1..=MAX_GROUP_COUNT).contains(&event.count) {
            return Err(count_error());
        }
        let single = Event {
            count: 1,
            ..event.clone()
        };
        // A repeat of a recorded (hence valid) event needs no parsing.
        let index = match self.groups.iter().position(|g| g.event == single) {
            Some(index) => index,
            None => {
                let group = Group::new(
                    &parse_event(&event_json(event), self.neighbouring)?,
                    self.neighbouring,
                )?;
                match self.groups.iter().position(|g| g.event == group.event) {
                    Some(index) => index,
                    None => return Ok(Err(group)),
                }
            }
        };
        if self.groups[index].count + event.count > MAX_GROUP_COUNT {
            return Err(count_error());
        }
        Ok(Ok(index))
    }

    /// Record `count` runs into a group (from [`Ledger::group_of`]): the state changes, so
    /// the cached answers go, and the grid they ended on becomes the next start.
    fn apply(&mut self, group: std::result::Result<usize, Group>, count: u64) {
        match group {
            Ok(index) => self.groups[index].count += count,
            Err(mut group) => {
                group.count = count;
                self.groups.push(group);
            }
        }
        self.releases += 1;
        let memo = std::mem::take(&mut *self.memo());
        self.start_step = memo.finest_step.or(self.start_step);
    }

    /// A cached accountant for the current state (`None` while nothing is recorded).
    fn accountant(&self, query: Query) -> Result<Option<Accountant>> {
        let Some(spec) = self.spec()? else {
            return Ok(None);
        };
        let accountant = Accountant::new(&spec, self.options)?;
        Ok(Some(accountant.with_cache(
            Arc::clone(&self.cache),
            self.start_step.get(query),
        )))
    }

    fn nothing_recorded(&self) -> Settings {
        Settings {
            method: "nothing_recorded".into(),
            grid_step: None,
            tail_mass: None,
            refinements: 0,
            tolerance: self.options.tolerance,
            bracket_width: 0.0,
            target_width: 0.0,
            tolerance_met: true,
            worse_direction: "both".into(),
            stopped_by: None,
            upper_method: None,
            lower_method: None,
            upper_grid_step: None,
        }
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, Memo> {
        // A panic while holding the lock leaves only cached answers behind: still valid.
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn state(&self) -> State {
        State {
            format: FORMAT_NAME.into(),
            version: LEDGER_FORMAT_VERSION,
            neighbouring: neighbouring_name(self.neighbouring).into(),
            options: StoredOptions {
                grid_step: self.options.grid_step,
                tail_mass: self.options.tail_mass,
                memory_budget: self.options.memory_budget,
                upper_grid_step: self.options.upper_grid_step,
                tolerance: StoredTolerance::from(self.options.tolerance),
            },
            budget: self.budget,
            releases: self.releases,
            start_step: self.start_step,
            next_start_step: self.memo().finest_step,
            groups: self
                .groups
                .iter()
                .map(|g| StoredGroup {
                    event: g.json.clone(),
                    count: g.count,
                })
                .collect(),
        }
    }
}

impl StartSteps {
    fn get(&self, query: Query) -> Option<f64> {
        match query {
            Query::Epsilon => self.epsilon,
            Query::Delta => self.delta,
        }
    }
}

impl Memo {
    fn note_step(&mut self, query: Query, step: Option<f64>) {
        if let Some(step) = step {
            let finest = match query {
                Query::Epsilon => &mut self.finest_step.epsilon,
                Query::Delta => &mut self.finest_step.delta,
            };
            *finest = Some(finest.map_or(step, |s| s.min(step)));
        }
    }
}

impl Group {
    /// The group of `event` (validated), its JSON canonical: re-parsing it gives `event`.
    fn new(event: &Event, neighbouring: Neighbouring) -> Result<Group> {
        let mut json = event_json(&Event {
            count: 1,
            ..event.clone()
        });
        // Parsing may normalize (probabilities divided by their total): keep what the
        // canonical text parses to, so a restored ledger has the very same events.
        let parsed = parse_event(&json, neighbouring)?;
        json = event_json(&parsed);
        if let Some(object) = json.as_object_mut() {
            object.remove("count");
        }
        let event = parse_event(&json, neighbouring)?;
        Ok(Group {
            json,
            event,
            count: parsed.count,
        })
    }

    fn json_with_count(&self) -> Value {
        let mut json = self.json.clone();
        if let Some(object) = json.as_object_mut() {
            object.insert("count".into(), json!(self.count));
        }
        json
    }
}

/// Parse one event as the specification does, its fields named `event.…`.
pub(super) fn parse_event(value: &Value, neighbouring: Neighbouring) -> Result<Event> {
    let rename = |s: String| s.replace("events[0]", "event");
    event_from_json(value, 0, neighbouring).map_err(|e| match e {
        Error::MalformedSpec { message } => Error::MalformedSpec {
            message: rename(message),
        },
        other => other.rename_fields(rename),
    })
}

/// An event as the specification writes it.
pub(super) fn event_json(event: &Event) -> Value {
    event.to_json_value()
}

fn neighbouring_name(neighbouring: Neighbouring) -> &'static str {
    match neighbouring {
        Neighbouring::AddRemove => "add_remove",
        Neighbouring::Replace => "replace",
    }
}

/// The saved form of a ledger.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct State {
    format: String,
    version: u32,
    neighbouring: String,
    options: StoredOptions,
    budget: Option<Budget>,
    releases: u64,
    start_step: StartSteps,
    next_start_step: StartSteps,
    groups: Vec<StoredGroup>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredOptions {
    grid_step: Option<f64>,
    tail_mass: Option<f64>,
    /// Absent in files written before the option existed (the default then applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_budget: Option<u64>,
    /// Absent in files written before the option existed (the default then applies); `null`
    /// when switched off.
    #[serde(default = "default_upper_grid_step")]
    upper_grid_step: Option<f64>,
    tolerance: StoredTolerance,
}

fn default_upper_grid_step() -> Option<f64> {
    AccountantOptions::default().upper_grid_step
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredTolerance {
    relative: f64,
    absolute_epsilon: f64,
    relative_delta: f64,
    absolute_delta: f64,
}

impl From<Tolerance> for StoredTolerance {
    fn from(t: Tolerance) -> Self {
        StoredTolerance {
            relative: t.relative,
            absolute_epsilon: t.absolute_epsilon,
            relative_delta: t.relative_delta,
            absolute_delta: t.absolute_delta,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredGroup {
    event: Value,
    count: u64,
}

impl State {
    fn into_ledger(self) -> Result<Ledger> {
        let neighbouring = match self.neighbouring.as_str() {
            "add_remove" => Neighbouring::AddRemove,
            "replace" => Neighbouring::Replace,
            other => {
                return Err(Error::invalid(
                    "ledger.neighbouring",
                    other,
                    "\"add_remove\" or \"replace\"",
                ))
            }
        };
        let t = self.options.tolerance;
        let options = AccountantOptions {
            tolerance: Tolerance {
                relative: t.relative,
                absolute_epsilon: t.absolute_epsilon,
                relative_delta: t.relative_delta,
                absolute_delta: t.absolute_delta,
            },
            grid_step: self.options.grid_step,
            tail_mass: self.options.tail_mass,
            memory_budget: self.options.memory_budget,
            upper_grid_step: self.options.upper_grid_step,
        };
        let mut ledger = Ledger::new(neighbouring, options)?;
        if let Some(budget) = self.budget {
            ledger.budget = Some(Budget::new(budget.epsilon, budget.delta)?);
        }
        for step in [self.start_step, self.next_start_step]
            .into_iter()
            .flat_map(|s| [s.epsilon, s.delta])
            .flatten()
        {
            check_grid_step("ledger.start_step", step)?;
        }
        for stored in self.groups {
            let event = parse_event(&stored.event, neighbouring)?;
            if !(1..=MAX_GROUP_COUNT).contains(&stored.count) {
                return Err(Error::invalid(
                    "ledger.groups[].count",
                    stored.count,
                    "a whole number ≥ 1 (at most 10^12)",
                ));
            }
            if event.count != 1 || ledger.groups.iter().any(|g| g.event == event) {
                return Err(Error::MalformedSpec {
                    message: format!(
                        "ledger: group {} has a count inside its event or repeats a group",
                        stored.event
                    ),
                });
            }
            ledger.groups.push(Group {
                json: stored.event,
                event,
                count: stored.count,
            });
        }
        ledger.releases = self.releases;
        ledger.start_step = self.start_step;
        ledger.memo().finest_step = self.next_start_step;
        Ok(ledger)
    }
}

impl Serialize for Ledger {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        self.state().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Ledger {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ledger::from_json_value(&value).map_err(serde::de::Error::custom)
    }
}
