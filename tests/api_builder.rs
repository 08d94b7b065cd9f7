//! The library as the front door: checked construction of specifications.
//!
//! * Every mechanism and sampling scheme round-trips through serde in the JSON format.
//! * Invalid JSON through serde fails with the parser's own message.
//! * `replace_sensitivity`: used as the shift under replace, as given; refused under
//!   add/remove and together with `sensitivity` (library and CLI).
//! * A property test over the builder with arbitrary values (NaN, ±∞, ±0, subnormals, 1e308,
//!   huge and zero integers): never a panic; an invalid value gives an error naming the
//!   parameter, with the JSON parser's message; a valid one gives the JSON parser's
//!   specification and the same answers.

use assert_cmd::Command;
use pld_accountant::analytic::composition_theorems::CompositionTheorem;
use pld_accountant::analytic::event_bounds::approximate_dp;
use pld_accountant::spec::MAX_COUNT;
use pld_accountant::{
    Accountant, AccountantOptions, CompositionSpec, Error, Event, MechanismSpec, Neighbouring,
    Sampling,
};
use proptest::prelude::*;
use serde_json::{json, Value};

fn parse(value: &Value) -> CompositionSpec {
    CompositionSpec::from_json_value(value).unwrap_or_else(|e| panic!("{value}: {e}"))
}

/// Every mechanism with every sampling scheme it accepts, in canonical form (every event with
/// its count; sensitivities where given).
fn canonical_specs() -> Vec<Value> {
    let additive = [
        json!({"mechanism": "gaussian", "sigma": 1.5}),
        json!({"mechanism": "gaussian", "sigma": 1.5, "sensitivity": 0.25}),
        json!({"mechanism": "laplace", "scale": 2.0, "sensitivity": 3.0}),
        json!({"mechanism": "laplace", "scale": 2.0}),
        json!({"mechanism": "discrete_laplace", "scale": 2.5, "sensitivity": 2}),
        json!({"mechanism": "discrete_gaussian", "sigma": 4.0}),
        json!({"mechanism": "discrete_gaussian", "sigma": 4.0, "sensitivity": 3}),
    ];
    let replace_only = [
        json!({"mechanism": "gaussian", "sigma": 1.5, "replace_sensitivity": 0.5}),
        json!({"mechanism": "laplace", "scale": 2.0, "replace_sensitivity": 1.0}),
        json!({"mechanism": "discrete_laplace", "scale": 2.5, "replace_sensitivity": 1}),
        json!({"mechanism": "discrete_gaussian", "sigma": 4.0, "replace_sensitivity": 5}),
    ];
    let generic = [
        json!({"mechanism": "randomized_response", "epsilon": 0.5, "categories": 4}),
        json!({"mechanism": "randomized_response", "epsilon": 0.5, "categories": 2}),
        json!({"mechanism": "eps_delta", "epsilon": 0.1, "delta": 1e-6}),
        json!({"mechanism": "eps_delta", "epsilon": 0.0, "delta": 0.0}),
    ];
    let unsampled_only = [
        json!({"mechanism": "mixture_of_gaussians", "sigma": 2.0,
               "sensitivities": [0.0, 1.0, 2.0], "probabilities": [0.5, 0.3, 0.2]}),
        json!({"mechanism": "pmf_pair", "p": [0.1, 0.2, 0.7], "q": [0.2, 0.2, 0.6]}),
    ];
    let with = |mechanism: &Value, sampling: Option<Value>, count: u64| {
        let mut event = mechanism.clone();
        if let Some(sampling) = sampling {
            event["sampling"] = sampling;
        }
        event["count"] = json!(count);
        event
    };
    let poisson = || Some(json!({"poisson": 0.01}));
    let batch = || Some(json!({"fixed_batch": {"batch_size": 256, "dataset_size": 60000}}));
    let spec = |neighbouring: &str, events: Vec<Value>| json!({"neighbouring": neighbouring, "events": events});
    let mut specs = Vec::new();
    for m in &additive {
        specs.push(spec("add_remove", vec![with(m, None, 3)]));
        specs.push(spec("add_remove", vec![with(m, poisson(), 1000)]));
        specs.push(spec("replace", vec![with(m, None, 1)]));
        specs.push(spec("replace", vec![with(m, batch(), 7)]));
    }
    for m in &replace_only {
        specs.push(spec("replace", vec![with(m, None, 12)]));
        specs.push(spec("replace", vec![with(m, batch(), 100)]));
    }
    for m in &generic {
        specs.push(spec("add_remove", vec![with(m, None, 2)]));
        specs.push(spec("add_remove", vec![with(m, poisson(), 10)]));
        specs.push(spec("replace", vec![with(m, None, 5)]));
    }
    specs.push(spec("add_remove", vec![with(&unsampled_only[0], None, 4)]));
    specs.push(spec("add_remove", vec![with(&unsampled_only[1], None, 4)]));
    specs.push(spec("replace", vec![with(&unsampled_only[1], None, 4)]));
    specs.push(spec(
        "add_remove",
        vec![
            with(&additive[0], poisson(), 1000),
            with(&generic[0], None, 1),
            with(&unsampled_only[0], None, MAX_COUNT),
        ],
    ));
    specs
}

#[test]
fn every_mechanism_and_sampling_scheme_round_trips_through_serde() {
    for value in canonical_specs() {
        let spec = parse(&value);
        // Serialized: exactly the canonical JSON.
        let written = serde_json::to_value(&spec).expect("serializable");
        assert_eq!(written, value, "serialized form of {value}");
        assert_eq!(spec.to_json_value(), value);
        // Deserialized through serde (text and value): the same specification.
        let text = serde_json::to_string(&spec).expect("serializable");
        let back: CompositionSpec = serde_json::from_str(&text).expect("valid");
        assert_eq!(back, spec, "{text}");
        let back: CompositionSpec = serde_json::from_value(value.clone()).expect("valid");
        assert_eq!(back, spec);
        // Events, mechanisms and sampling schemes on their own.
        for (i, event) in spec.events().iter().enumerate() {
            let written = serde_json::to_value(event).expect("serializable");
            assert_eq!(written, value["events"][i]);
            assert_eq!(
                &serde_json::from_value::<Event>(written).expect("valid"),
                event
            );
            let m = serde_json::to_value(event.mechanism()).expect("serializable");
            assert_eq!(m["mechanism"], value["events"][i]["mechanism"]);
            assert_eq!(
                &serde_json::from_value::<MechanismSpec>(m).expect("valid"),
                event.mechanism()
            );
            let s = serde_json::to_value(event.sampling()).expect("serializable");
            let expected = value["events"][i].get("sampling").cloned();
            assert_eq!(s, expected.unwrap_or(Value::Null));
            assert_eq!(
                serde_json::from_value::<Sampling>(s).expect("valid"),
                event.sampling()
            );
        }
        let n = serde_json::to_value(spec.neighbouring()).expect("serializable");
        assert_eq!(n, value["neighbouring"]);
        assert_eq!(
            serde_json::from_value::<Neighbouring>(n).expect("valid"),
            spec.neighbouring()
        );
    }
}

#[test]
fn defaults_are_filled_in_and_left_out_keys_stay_out() {
    let spec = CompositionSpec::from_json_str(
        r#"{"events": [{"mechanism": "randomized_response", "epsilon": 1},
                       {"mechanism": "gaussian", "sigma": 2}]}"#,
    )
    .expect("valid");
    assert_eq!(spec.neighbouring(), Neighbouring::AddRemove);
    assert_eq!(spec.events()[0].mechanism().categories(), Some(2));
    assert_eq!(spec.events()[1].mechanism().sensitivity(), Some(1.0));
    assert_eq!(spec.events()[1].count(), 1);
    assert_eq!(
        spec.to_json_value(),
        json!({"neighbouring": "add_remove", "events": [
            {"mechanism": "randomized_response", "epsilon": 1.0, "categories": 2, "count": 1},
            {"mechanism": "gaussian", "sigma": 2.0, "count": 1}]})
    );
}

#[test]
fn serialized_keys_are_in_the_documented_order() {
    let spec = CompositionSpec::add_remove()
        .event(
            MechanismSpec::gaussian(1.0)
                .and_then(|m| m.with_sensitivity(2.0)?.poisson(0.01)?.repeat(1000))
                .expect("valid"),
        )
        .event(MechanismSpec::eps_delta(0.1, 1e-6).expect("valid"))
        .build()
        .expect("valid");
    assert_eq!(
        serde_json::to_string(&spec).expect("serializable"),
        r#"{"neighbouring":"add_remove","events":[{"mechanism":"gaussian","sigma":1.0,"sensitivity":2.0,"sampling":{"poisson":0.01},"count":1000},{"mechanism":"eps_delta","epsilon":0.1,"delta":1e-6,"count":1}]}"#
    );
}

#[test]
fn invalid_json_through_serde_fails_with_the_parsers_message() {
    let cases = [
        r#"{"events": [{"mechanism": "gaussian", "sigma": -1}]}"#,
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 1.5}}]}"#,
        r#"{"events": [{"mechanism": "randomized_response", "epsilon": 1, "categories": 0}]}"#,
        r#"{"events": [{"mechanism": "pmf_pair", "p": [0.5, 0.5], "q": [1.0]}]}"#,
        r#"{"neighbouring": "replace", "events": [{"mechanism": "laplace", "scale": 1,
            "sampling": {"fixed_batch": {"batch_size": 10, "dataset_size": 5}}}]}"#,
        r#"{"events": [{"mechanism": "laplace", "scale": 1, "count": 0}]}"#,
        r#"{"events": [{"mechanism": "laplace", "scale": 1, "replace_sensitivity": 1}]}"#,
        r#"{"neighbouring": "replace", "events": [{"mechanism": "laplace", "scale": 1,
            "sensitivity": 1, "replace_sensitivity": 1}]}"#,
        r#"{"events": [{"mechanism": "warp_drive"}]}"#,
        r#"{"events": []}"#,
        r#"{"neighbouring": "sideways", "events": [{"mechanism": "gaussian", "sigma": 1}]}"#,
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sensitivity": null}]}"#,
    ];
    for text in cases {
        let expected = CompositionSpec::from_json_str(text)
            .expect_err(text)
            .to_string();
        let value: Value = serde_json::from_str(text).expect("JSON");
        let from_value = serde_json::from_value::<CompositionSpec>(value).expect_err(text);
        assert_eq!(from_value.to_string(), expected, "{text}");
        // From text serde_json appends the position.
        let from_text = serde_json::from_str::<CompositionSpec>(text).expect_err(text);
        assert!(
            from_text.to_string().starts_with(&expected),
            "{from_text} vs {expected}"
        );
    }
}

#[test]
fn the_issues_silently_wrong_values_are_refused() {
    let expect = |result: pld_accountant::Result<CompositionSpec>, fragment: &str| {
        let message = result.expect_err(fragment).to_string();
        assert!(
            message.contains(fragment),
            "{message} should name {fragment}"
        );
    };
    let build =
        |event: pld_accountant::Result<Event>| CompositionSpec::add_remove().event(event?).build();
    expect(
        build(MechanismSpec::gaussian(1.0).and_then(|m| m.poisson(1.5))),
        "sampling.poisson = 1.5",
    );
    expect(
        build(MechanismSpec::randomized_response(1.0, 0).map(Event::new)),
        "categories = 0",
    );
    expect(
        build(MechanismSpec::pmf_pair(vec![0.5, 0.5], vec![1.0]).map(Event::new)),
        "q",
    );
    expect(
        build(MechanismSpec::laplace(1.0).and_then(|m| m.fixed_batch(10, 5))),
        "batch_size 10 exceeds dataset_size 5",
    );
    expect(
        build(MechanismSpec::laplace(1.0).and_then(|m| m.repeat(0))),
        "count = 0",
    );
    expect(CompositionSpec::add_remove().build(), "events");
    expect(
        build(MechanismSpec::laplace(1.0).map(Event::new)).and_then(|_| {
            CompositionSpec::add_remove()
                .event(MechanismSpec::laplace(1.0)?.fixed_batch(1, 2)?)
                .build()
        }),
        "events[0].sampling.fixed_batch",
    );
    let both = MechanismSpec::laplace(1.0)
        .and_then(|m| m.with_sensitivity(1.0))
        .and_then(|m| m.with_replace_sensitivity(1.0))
        .expect_err("both")
        .to_string();
    assert!(
        both.contains("replace_sensitivity") && both.contains("together with sensitivity"),
        "{both}"
    );
    let none = MechanismSpec::eps_delta(1.0, 0.0)
        .and_then(|m| m.with_sensitivity(2.0))
        .expect_err("no sensitivity")
        .to_string();
    assert!(none.contains("eps_delta takes no sensitivity"), "{none}");
}

/// 12 Laplace count queries, scale 2, under replace (a count moves by 1 when a record is
/// replaced).
fn counting_queries(replace_sensitivity: bool) -> CompositionSpec {
    let laplace = MechanismSpec::laplace(2.0).expect("valid");
    let (neighbouring, laplace) = if replace_sensitivity {
        (
            Neighbouring::Replace,
            laplace.with_replace_sensitivity(1.0).expect("valid"),
        )
    } else {
        (
            Neighbouring::AddRemove,
            laplace.with_sensitivity(1.0).expect("valid"),
        )
    };
    CompositionSpec::builder(neighbouring)
        .event(laplace.repeat(12).expect("valid"))
        .build()
        .expect("valid")
}

#[test]
fn replace_sensitivity_is_the_shift_as_given() {
    let replace = counting_queries(true);
    let from_json = parse(&json!({"neighbouring": "replace", "events": [
        {"mechanism": "laplace", "scale": 2, "replace_sensitivity": 1, "count": 12}]}));
    assert_eq!(replace, from_json);
    // Basic composition: 12 × 1/2.
    let events: Vec<_> = replace
        .events()
        .iter()
        .map(|e| {
            (
                approximate_dp(e, replace.neighbouring()).expect("pure"),
                e.count(),
            )
        })
        .collect();
    assert_eq!(CompositionTheorem::Basic.epsilon(&events, 0.0), 6.0);
    // The PLD bracket: that of add/remove with sensitivity 1.
    let add_remove = counting_queries(false);
    for delta in [1e-6, 1e-3] {
        let answer = |spec: &CompositionSpec| {
            Accountant::new(spec, AccountantOptions::default())
                .and_then(|a| a.epsilon_for_delta(delta))
                .expect("answer")
                .epsilon
        };
        let (a, b) = (answer(&replace), answer(&add_remove));
        assert_eq!((a.upper, a.lower), (b.upper, b.lower), "δ = {delta}");
        assert!(a.upper <= 6.0 && a.lower > 0.0);
    }
    // `sensitivity` 1 under replace is charged twice as much: ε = 12.
    let doubled = parse(&json!({"neighbouring": "replace", "events": [
        {"mechanism": "laplace", "scale": 2, "sensitivity": 1, "count": 12}]}));
    let e = approximate_dp(&doubled.events()[0], doubled.neighbouring()).expect("pure");
    assert_eq!(e.epsilon * 12.0, 12.0);
}

#[test]
fn replace_sensitivity_reaches_every_accountant_consistently() {
    // Under replace, replace_sensitivity 2Δ is the same as sensitivity Δ, for every method.
    for (mechanism, sampling) in [
        ("gaussian", None),
        (
            "gaussian",
            Some(json!({"fixed_batch": {"batch_size": 10, "dataset_size": 100}})),
        ),
        ("laplace", None),
        (
            "laplace",
            Some(json!({"fixed_batch": {"batch_size": 10, "dataset_size": 100}})),
        ),
        ("discrete_laplace", None),
        ("discrete_gaussian", None),
        (
            "discrete_gaussian",
            Some(json!({"fixed_batch": {"batch_size": 1, "dataset_size": 4}})),
        ),
    ] {
        let noise = if mechanism.contains("laplace") {
            "scale"
        } else {
            "sigma"
        };
        let event = |key: &str, value: u64| {
            let mut e = json!({"mechanism": mechanism, noise: 3.0, key: value, "count": 20});
            if let Some(s) = &sampling {
                e["sampling"] = s.clone();
            }
            parse(&json!({"neighbouring": "replace", "events": [e]}))
        };
        let (per_record, replace) = (event("sensitivity", 1), event("replace_sensitivity", 2));
        let options = AccountantOptions::default();
        let a = pld_accountant::compare(&per_record, 1e-5, options).expect("compare");
        let b = pld_accountant::compare(&replace, 1e-5, options).expect("compare");
        let rows = |c: &pld_accountant::Comparison| -> Vec<(String, f64)> {
            c.rows
                .iter()
                .map(|r| (r.method.to_string(), r.epsilon))
                .collect()
        };
        assert_eq!(rows(&a), rows(&b), "{mechanism} {sampling:?}");
    }
}

fn pld_command() -> Command {
    Command::cargo_bin("pld").expect("the pld binary is built for integration tests")
}

#[test]
fn cli_refuses_sensitivity_with_replace_sensitivity() {
    let spec = r#"{"neighbouring": "replace", "events": [{"mechanism": "laplace", "scale": 2,
        "sensitivity": 1, "replace_sensitivity": 1, "count": 12}]}"#;
    let output = pld_command()
        .args(["epsilon", "--spec", "-", "--delta", "1e-5"])
        .write_stdin(spec)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("events[0].replace_sensitivity") && stderr.contains("sensitivity"),
        "{stderr}"
    );
    let good = r#"{"neighbouring": "replace", "events": [{"mechanism": "laplace", "scale": 2,
        "replace_sensitivity": 1, "count": 12}]}"#;
    pld_command()
        .args(["epsilon", "--spec", "-", "--delta", "1e-5"])
        .write_stdin(good)
        .assert()
        .success();
}

// ---------------------------------------------------------------------------------------------
// The property test
// ---------------------------------------------------------------------------------------------

fn wild_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(0.0),
        1 => Just(-0.0),
        1 => Just(5e-324),
        1 => Just(f64::MIN_POSITIVE / 4.0),
        1 => Just(1e308),
        1 => Just(-1.0),
        1 => Just(1.0),
        1 => Just(2.0),
        1 => Just(1.5),
        12 => 0.05f64..5.0,
        2 => 0.0f64..1.0,
        1 => any::<f64>(),
    ]
}

fn wild_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        1 => Just(0u64),
        1 => Just(1),
        1 => Just(2),
        1 => Just(u64::MAX),
        1 => Just(MAX_COUNT),
        1 => Just(MAX_COUNT + 1),
        6 => 1u64..20,
        1 => any::<u64>(),
    ]
}

/// How the sensitivity is given.
#[derive(Debug, Clone, Copy)]
enum Given {
    Default,
    PerRecord(f64),
    Replace(f64),
    Both(f64, f64),
}

#[derive(Debug, Clone)]
enum Sample {
    None,
    Poisson(f64),
    Batch(u64, u64),
}

#[derive(Debug, Clone)]
struct Recipe {
    replace: bool,
    mechanism: usize,
    a: f64,
    b: f64,
    k: u64,
    list: Vec<f64>,
    other: Vec<f64>,
    given: Given,
    sampling: Sample,
    count: Option<u64>,
}

fn recipe() -> impl Strategy<Value = Recipe> {
    let given = prop_oneof![
        Just(Given::Default),
        wild_f64().prop_map(Given::PerRecord),
        wild_f64().prop_map(Given::Replace),
        (wild_f64(), wild_f64()).prop_map(|(a, b)| Given::Both(a, b)),
    ];
    let sampling = prop_oneof![
        Just(Sample::None),
        wild_f64().prop_map(Sample::Poisson),
        (wild_u64(), wild_u64()).prop_map(|(m, n)| Sample::Batch(m, n)),
        (1u64..50, 50u64..100).prop_map(|(m, n)| Sample::Batch(m, n)),
    ];
    let list = prop_oneof![
        prop::collection::vec(wild_f64(), 0..4),
        Just(vec![0.25, 0.75]),
        Just(vec![1.0]),
        Just(vec![0.5, 0.5]),
    ];
    (
        (any::<bool>(), 0usize..8, wild_f64(), wild_f64(), wild_u64()),
        (list.clone(), list, given, sampling),
        prop::option::of(wild_u64()),
    )
        .prop_map(
            |((replace, mechanism, a, b, k), (list, other, given, sampling), count)| Recipe {
                replace,
                mechanism,
                a,
                b,
                k,
                list,
                other,
                given,
                sampling,
                count,
            },
        )
}

const NAMES: [&str; 8] = [
    "gaussian",
    "laplace",
    "discrete_laplace",
    "discrete_gaussian",
    "randomized_response",
    "eps_delta",
    "mixture_of_gaussians",
    "pmf_pair",
];

impl Recipe {
    fn neighbouring(&self) -> Neighbouring {
        if self.replace {
            Neighbouring::Replace
        } else {
            Neighbouring::AddRemove
        }
    }

    fn through_builder(&self) -> pld_accountant::Result<CompositionSpec> {
        let mut m = match self.mechanism {
            0 => MechanismSpec::gaussian(self.a)?,
            1 => MechanismSpec::laplace(self.a)?,
            2 => MechanismSpec::discrete_laplace(self.a)?,
            3 => MechanismSpec::discrete_gaussian(self.a)?,
            4 => MechanismSpec::randomized_response(self.a, self.k)?,
            5 => MechanismSpec::eps_delta(self.a, self.b)?,
            6 => {
                MechanismSpec::mixture_of_gaussians(self.a, self.list.clone(), self.other.clone())?
            }
            _ => MechanismSpec::pmf_pair(self.list.clone(), self.other.clone())?,
        };
        if self.mechanism < 4 {
            m = match self.given {
                Given::Default => m,
                Given::PerRecord(x) => m.with_sensitivity(x)?,
                Given::Replace(x) => m.with_replace_sensitivity(x)?,
                Given::Both(x, y) => m.with_sensitivity(x)?.with_replace_sensitivity(y)?,
            };
        }
        let mut event = match self.sampling {
            Sample::None => Event::new(m),
            Sample::Poisson(q) => m.poisson(q)?,
            Sample::Batch(b, n) => m.fixed_batch(b, n)?,
        };
        if let Some(count) = self.count {
            event = event.repeat(count)?;
        }
        CompositionSpec::builder(self.neighbouring())
            .event(event)
            .build()
    }

    fn json(&self) -> Value {
        let mut e = json!({"mechanism": NAMES[self.mechanism]});
        match self.mechanism {
            0 | 3 | 6 => e["sigma"] = json!(self.a),
            1 | 2 => e["scale"] = json!(self.a),
            _ => {}
        }
        match self.mechanism {
            4 => {
                e["epsilon"] = json!(self.a);
                e["categories"] = json!(self.k);
            }
            5 => {
                e["epsilon"] = json!(self.a);
                e["delta"] = json!(self.b);
            }
            6 => {
                e["sensitivities"] = json!(self.list);
                e["probabilities"] = json!(self.other);
            }
            7 => {
                e["p"] = json!(self.list);
                e["q"] = json!(self.other);
            }
            _ => match self.given {
                Given::Default => {}
                Given::PerRecord(x) => e["sensitivity"] = json!(x),
                Given::Replace(x) => e["replace_sensitivity"] = json!(x),
                Given::Both(x, y) => {
                    e["sensitivity"] = json!(x);
                    e["replace_sensitivity"] = json!(y);
                }
            },
        }
        match self.sampling {
            Sample::None => {}
            Sample::Poisson(q) => e["sampling"] = json!({"poisson": q}),
            Sample::Batch(m, n) => {
                e["sampling"] = json!({"fixed_batch": {"batch_size": m, "dataset_size": n}})
            }
        }
        if let Some(count) = self.count {
            e["count"] = json!(count);
        }
        json!({"neighbouring": self.neighbouring().name(), "events": [e]})
    }

    /// Whether every number the mechanism uses can be written in JSON (NaN and ±∞ cannot).
    fn all_finite(&self) -> bool {
        let mut used = if self.mechanism == 7 {
            vec![]
        } else {
            vec![self.a]
        };
        match self.mechanism {
            5 => used.push(self.b),
            6 | 7 => used.extend(self.list.iter().chain(&self.other)),
            0..=3 => match self.given {
                Given::Default => {}
                Given::PerRecord(x) | Given::Replace(x) => used.push(x),
                Given::Both(x, y) => used.extend([x, y]),
            },
            _ => {}
        }
        if let Sample::Poisson(q) = self.sampling {
            used.push(q);
        }
        used.iter().all(|x| x.is_finite())
    }
}

/// The parameter an error names, without the `events[0].` prefix and list indices.
fn named_parameter(error: &Error) -> String {
    let name = match error {
        Error::InvalidParameter { name, .. } => name,
        Error::Incompatible { field, .. } => field,
        other => panic!("unexpected error kind: {other}"),
    };
    let name = name.strip_prefix("events[0].").unwrap_or(name);
    name.split('[').next().unwrap_or(name).to_string()
}

const PARAMETERS: [&str; 18] = [
    "sigma",
    "scale",
    "epsilon",
    "delta",
    "categories",
    "sensitivity",
    "replace_sensitivity",
    "sensitivities",
    "probabilities",
    "p",
    "q",
    "sampling",
    "sampling.poisson",
    "sampling.fixed_batch",
    "sampling.fixed_batch.batch_size",
    "sampling.fixed_batch.dataset_size",
    "count",
    "mechanism",
];

fn answers(spec: &CompositionSpec) -> (String, String) {
    let options = AccountantOptions {
        grid_step: Some(1e-2),
        ..AccountantOptions::default()
    };
    let pld = Accountant::new(spec, options)
        .and_then(|a| a.epsilon_for_delta(1e-5))
        .map(|a| (a.epsilon.upper, a.epsilon.lower));
    let basic = spec
        .events()
        .iter()
        .map(|e| approximate_dp(e, spec.neighbouring()).map(|g| (g, e.count())))
        .collect::<Result<Vec<_>, _>>()
        .map(|events| CompositionTheorem::Basic.epsilon(&events, 1e-5));
    (format!("{pld:?}"), format!("{basic:?}"))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_builder_is_the_json_parser(recipe in recipe()) {
        let built = recipe.through_builder();
        let parsed = CompositionSpec::from_json_value(&recipe.json());
        match &built {
            Err(error) => {
                let name = named_parameter(error);
                prop_assert!(PARAMETERS.contains(&name.as_str()), "{error}");
                prop_assert!(error.to_string().contains(&name), "{error}");
                prop_assert!(parsed.is_err(), "JSON accepted what the builder refused: {error}");
                if recipe.all_finite() {
                    // The same check, the same message (the parser adds the event's path).
                    let message = parsed.unwrap_err().to_string().replace("events[0].", "");
                    prop_assert_eq!(message, error.to_string().replace("events[0].", ""));
                }
            }
            Ok(spec) => {
                prop_assert!(recipe.all_finite());
                let parsed = parsed.map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&parsed, spec);
                // Through serde and back: unchanged.
                let text = serde_json::to_string(spec).expect("serializable");
                let back: CompositionSpec = serde_json::from_str(&text)
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(&back, spec);
                // The same answers (the PLD bracket on a fixed grid, basic composition).
                prop_assert_eq!(answers(spec), answers(&parsed));
            }
        }
    }
}

/// A number beyond the range of a double is rejected by serde_json's tokenizer, which only
/// knows its position: the error names the field (also inside an array, on a later line, and
/// in a ledger's event) and the number as written.
#[test]
fn out_of_range_numbers_name_their_field() {
    let cases = [
        (
            r#"{"events":[{"mechanism":"gaussian","sigma":1e400}]}"#,
            r#"field "sigma": 1e400 is out of the range"#,
        ),
        (
            r#"{"events":[{"mechanism":"pmf_pair","p":[0.5, 1e999],"q":[0.5,0.5]}]}"#,
            r#"field "p": 1e999 is out of the range"#,
        ),
        (
            "{\"events\":[\n {\"mechanism\": \"gaussian\",\n  \"sigma\" :  -1e400, \"count\": 2}]}",
            r#"field "sigma": -1e400 is out of the range"#,
        ),
    ];
    for (text, expected) in cases {
        match CompositionSpec::from_json_str(text) {
            Err(Error::MalformedSpec { message }) => {
                assert!(message.contains(expected), "{text}: {message}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    // Other syntax errors keep serde_json's own message.
    match CompositionSpec::from_json_str(r#"{"events": [}"#) {
        Err(Error::MalformedSpec { message }) => {
            assert!(message.contains("line 1 column"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let ledger = pld_accountant::accountant::Ledger::new(
        Neighbouring::AddRemove,
        AccountantOptions::default(),
    )
    .unwrap();
    match ledger.event_from_json(r#"{"mechanism": "laplace", "scale": 2e308}"#) {
        Err(Error::MalformedSpec { message }) => {
            assert!(message.contains(r#"field "scale": 2e308"#), "{message}")
        }
        other => panic!("{other:?}"),
    }
}
