//! Seeded randomized soundness suite: random specifications over the whole documented
//! parameter space, each answer checked against an independently computed truth bracket.
//!
//! Every case is drawn from its own ChaCha8 stream (seed, case index), written as a JSON
//! specification and parsed with `CompositionSpec::from_json_str`, as a user would. The
//! accountant's answer (`epsilon_for_delta` or `delta_for_epsilon`, default options) must:
//! not panic; be `Ok` or a `GridTooLarge` or `MemoryBudget` error (the grid it needs is
//! beyond the accountant's limits; any other error for a valid spec is a failure); have no NaN, `0 ≤ lower ≤ upper`, δ ≤ 1; and bracket the truth:
//! `upper ≥ truth_lo` and `lower ≤ truth_hi`.
//!
//! The truth bracket `[truth_lo, truth_hi]` combines the oracles of `soundness_oracles`
//! (which document their formulas and references):
//! * lower-truth sources, compositions the spec is at least as leaky as: every
//!   sub-composition (the unsampled Gaussians together, each event alone with its own count
//!   when that is exactly computable, or one run of it, or fewer runs: composing more never
//!   lowers δ; one run of truncated Poisson sampling as the Poisson-subsampled Gaussian at the
//!   rate π = E[min(Bin(n, q), B)]/n that some pair of datasets attains; for the
//!   guarantee-only events a member of the class: the Gaussian that attains a zCDP or RDP
//!   guarantee, randomized response with ε/2 for the exponential mechanism, and one run of
//!   the Student's t / Cauchy / Laplace-log-normal law against its shift by s, by quadrature
//!   (`soundness_oracles::ShiftedDensity`), for the smooth-sensitivity mechanisms);
//! * upper-truth sources, compositions at least as leaky as the spec: the spec itself when it
//!   is exactly computable; the unsampled Gaussian with μ² = Σ count·μᵢ² when every event is
//!   Gaussian noise (sampling is a post-processing of the unsampled pair, a mixture of shifts
//!   ≤ c_max a garbling of the shift c_max); and KOV's optimal composition of
//!   (max εᵢ, max δᵢ) over all runs when every event is (εᵢ, δᵢ)-DP (Poisson/fixed-batch
//!   amplification ε' = ln(1 + q(e^ε − 1)), δ' = qδ).
//!
//! ε truths come from the δ brackets by bisection (`soundness_oracles::invert`).
//!
//! `soundness_default` runs a few hundred cases (about a minute in `cargo test --release`);
//! `soundness_long` (ignored; `scripts/soundness_sweep.sh`) runs `SOUNDNESS_CASES` cases
//! from `SOUNDNESS_SEED`. `SOUNDNESS_ONLY=i` re-runs case i alone, printing everything.
//! `SOUNDNESS_SHOW_REFUSED=1` lists the cases refused with `GridTooLarge` or `MemoryBudget`;
//! `SOUNDNESS_TIMES=1` prints each case's accountant and truth times.
//!
//! Each case's truth has a wall-clock budget (`SOUNDNESS_ORACLE_BUDGET` seconds, default 0.5):
//! past it, running inversions stop and further sources are skipped, so the truth bracket is
//! looser but still rigorous (it can hide a failure, never invent one); its sources then read
//! "(budget)".

mod soundness_oracles;

use pld_accountant::{Accountant, AccountantOptions, CompositionSpec, Error};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use soundness_oracles as oracle;
use soundness_oracles::DeltaFn;
use std::fmt::Write as _;
use std::time::Instant;

/// Default seed of the suite.
const SEED: u64 = 0x50d_2e55_0001;
/// Cases in the default run.
const DEFAULT_CASES: u64 = 100;

// ---------------------------------------------------------------------------------------------
// Specifications.

#[derive(Clone, Debug)]
enum Mech {
    Gaussian {
        sigma: f64,
        sens: f64,
    },
    Laplace {
        scale: f64,
        sens: f64,
    },
    DiscreteLaplace {
        scale: f64,
        sens: u64,
    },
    DiscreteGaussian {
        sigma: f64,
        sens: u64,
    },
    RandomizedResponse {
        eps: f64,
        k: u64,
    },
    EpsDelta {
        eps: f64,
        delta: f64,
    },
    Mixture {
        sigma: f64,
        sens: Vec<f64>,
        probs: Vec<f64>,
    },
    /// Known only by its guarantee: the lower truth is the Gaussian with μ = √(2ρ), which
    /// has it (so the worst case over the class is at least that).
    Zcdp {
        rho: f64,
    },
    /// An RDP curve listed at a few orders from a Gaussian's own curve αμ²/2: that Gaussian has
    /// the guarantee, so it is the lower truth.
    RdpGaussian {
        mu: f64,
    },
    /// ε-bounded range: the lower truth is the two-output exponential mechanism (randomized
    /// response with ε/2), a member of the class; the upper one its ε-DP guarantee. The
    /// accounted worst case over adaptive compositions lies between.
    Exponential {
        eps: f64,
    },
    /// Smooth-sensitivity noise (Student's t with `degrees`; Cauchy is `degrees` 1, written
    /// as the `cauchy` mechanism): the lower truth is one run of the t law against its shift
    /// by s (a pair of neighbours with constant smooth sensitivity and the largest allowed
    /// change of f), by quadrature.
    StudentT {
        degrees: f64,
        s: f64,
        t: f64,
    },
    /// Laplace-log-normal smooth-sensitivity noise: the lower truth is one run of the law
    /// against its shift by s, by quadrature.
    LaplaceLogNormal {
        sigma: f64,
        s: f64,
        t: f64,
    },
    PmfPair {
        p: Vec<f64>,
        q: Vec<f64>,
    },
}

#[derive(Clone, Copy, Debug)]
enum Samp {
    None,
    Poisson(f64),
    Fixed(u64, u64),
    /// Random allocation: (steps per epoch t, participations k); the count is epochs.
    Alloc(u64, u64),
    /// Truncated Poisson sampling: (rate q, max batch size B, dataset size n).
    Trunc(f64, u64, u64),
    /// Shuffling into t batches per epoch; the count is epochs.
    Shuffle(u64),
}

#[derive(Clone, Debug)]
struct Ev {
    mech: Mech,
    samp: Samp,
    count: u64,
}

#[derive(Clone, Copy, Debug)]
enum Query {
    Delta(f64),
    Epsilon(f64),
}

#[derive(Clone, Debug)]
struct Case {
    index: u64,
    replace: bool,
    events: Vec<Ev>,
    query: Query,
}

fn log_uniform(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
    (rng.gen_range(lo.ln()..=hi.ln())).exp().clamp(lo, hi)
}

fn log_uniform_int(rng: &mut ChaCha8Rng, lo: u64, hi: u64) -> u64 {
    (log_uniform(rng, lo as f64, hi as f64 + 0.999).floor() as u64).clamp(lo, hi)
}

/// A probability vector summing to 1 (entries possibly 0).
fn probabilities(rng: &mut ChaCha8Rng, n: usize, zeros: bool) -> Vec<f64> {
    loop {
        let mut v: Vec<f64> = (0..n)
            .map(|_| {
                if zeros && rng.gen_bool(0.2) {
                    0.0
                } else {
                    log_uniform(rng, 1e-12, 1.0)
                }
            })
            .collect();
        let total: f64 = v.iter().sum();
        if total > 0.0 {
            v.iter_mut().for_each(|x| *x /= total);
            return v;
        }
    }
}

fn draw_event(rng: &mut ChaCha8Rng, replace: bool, cheap: bool) -> Ev {
    let sens_real = |rng: &mut ChaCha8Rng| {
        if rng.gen_bool(0.5) {
            1.0
        } else {
            log_uniform(rng, 0.01, 100.0)
        }
    };
    let sens_int = |rng: &mut ChaCha8Rng| {
        if rng.gen_bool(0.6) {
            1
        } else {
            log_uniform_int(rng, 1, 1000)
        }
    };
    let kinds = if replace { 7 } else { 8 };
    let mech = if rng.gen_bool(0.06) {
        Mech::Zcdp {
            rho: log_uniform(rng, 1e-6, 50.0),
        }
    } else if rng.gen_bool(0.04) {
        Mech::RdpGaussian {
            mu: log_uniform(rng, 1e-3, 10.0),
        }
    } else if rng.gen_bool(0.05) {
        Mech::Exponential {
            eps: log_uniform(rng, 1e-3, 30.0),
        }
    } else if rng.gen_bool(0.05) {
        let smoothness = |rng: &mut ChaCha8Rng| {
            if rng.gen_bool(0.3) {
                0.0
            } else {
                log_uniform(rng, 1e-4, 1.0)
            }
        };
        Mech::StudentT {
            degrees: if rng.gen_bool(0.3) {
                1.0
            } else {
                log_uniform(rng, 0.2, 100.0)
            },
            s: log_uniform(rng, 1e-3, 10.0),
            t: smoothness(rng),
        }
    } else if rng.gen_bool(0.03) {
        Mech::LaplaceLogNormal {
            sigma: log_uniform(rng, 0.05, 2.0),
            s: log_uniform(rng, 1e-3, 5.0),
            t: log_uniform(rng, 1e-4, 1.0),
        }
    } else {
        match rng.gen_range(0..kinds) {
            0 => Mech::Gaussian {
                sigma: log_uniform(rng, 0.01, 1e10),
                sens: sens_real(rng),
            },
            1 => Mech::Laplace {
                scale: log_uniform(rng, 1e-3, 1e6),
                sens: sens_real(rng),
            },
            2 => Mech::DiscreteLaplace {
                scale: log_uniform(rng, 1e-3, 1e4),
                sens: sens_int(rng),
            },
            3 => Mech::DiscreteGaussian {
                sigma: log_uniform(rng, 0.01, 1e10),
                sens: sens_int(rng),
            },
            4 => Mech::RandomizedResponse {
                eps: log_uniform(rng, 1e-4, 1000.0),
                k: if rng.gen_bool(0.6) {
                    2
                } else {
                    log_uniform_int(rng, 3, 1000)
                },
            },
            5 => Mech::EpsDelta {
                eps: if rng.gen_bool(0.05) {
                    0.0
                } else {
                    log_uniform(rng, 1e-4, 1000.0)
                },
                delta: match rng.gen_range(0..10) {
                    0..=2 => 0.0,
                    3 => 1.0,
                    _ => log_uniform(rng, 1e-300, 0.5),
                },
            },
            6 => {
                let n = rng.gen_range(2..=5);
                let p = probabilities(rng, n, true);
                let mut q = probabilities(rng, n, true);
                if rng.gen_bool(0.2) {
                    q = p.iter().rev().copied().collect();
                }
                Mech::PmfPair { p, q }
            }
            _ => {
                let n = rng.gen_range(1..=4);
                Mech::Mixture {
                    sigma: log_uniform(rng, 0.01, 1e10),
                    sens: (0..n)
                        .map(|_| {
                            if rng.gen_bool(0.2) {
                                0.0
                            } else {
                                log_uniform(rng, 0.01, 100.0)
                            }
                        })
                        .collect(),
                    probs: probabilities(rng, n, false),
                }
            }
        }
    };
    let additive = matches!(
        mech,
        Mech::Gaussian { .. }
            | Mech::Laplace { .. }
            | Mech::DiscreteLaplace { .. }
            | Mech::DiscreteGaussian { .. }
    );
    let samplable = !matches!(
        mech,
        Mech::Mixture { .. }
            | Mech::PmfPair { .. }
            | Mech::Zcdp { .. }
            | Mech::RdpGaussian { .. }
            | Mech::Exponential { .. }
            | Mech::StudentT { .. }
            | Mech::LaplaceLogNormal { .. }
    );
    let samp = if !samplable || rng.gen_bool(0.5) {
        Samp::None
    } else if matches!(mech, Mech::Gaussian { .. }) && rng.gen_bool(0.15) {
        Samp::Shuffle(log_uniform_int(rng, 1, 1_000_000))
    } else if !replace && matches!(mech, Mech::Gaussian { .. }) && rng.gen_bool(0.6) {
        if rng.gen_bool(0.35) {
            let n = log_uniform_int(rng, 1, 100_000);
            let q = if rng.gen_bool(0.05) {
                1.0
            } else {
                log_uniform(rng, 1e-6, 1.0)
            };
            let b = match rng.gen_range(0..10) {
                // Around the expected batch, where the cut matters.
                0..=5 => ((q * n as f64 * rng.gen_range(0.5..1.5)).round() as u64).max(1),
                6 => 1,
                7 => n,
                8 => n + 1,
                _ => log_uniform_int(rng, 1, n),
            };
            Samp::Trunc(q, b, n)
        } else {
            let t = log_uniform_int(rng, 1, 1_000_000);
            let k = match rng.gen_range(0..10) {
                0..=5 => 1,
                6 => t,
                _ => log_uniform_int(rng, 1, t),
            };
            Samp::Alloc(t, k)
        }
    } else if !replace {
        Samp::Poisson(if rng.gen_bool(0.05) {
            1.0
        } else {
            log_uniform(rng, 1e-15, 1.0)
        })
    } else if additive {
        let n = log_uniform_int(rng, 1, 1_000_000_000);
        Samp::Fixed(log_uniform_int(rng, 1, n), n)
    } else {
        Samp::None
    };
    let mut count = if rng.gen_bool(0.3) {
        1
    } else {
        log_uniform_int(rng, 1, 1_000_000_000_000)
    };
    // Mixtures and finite pairs with many outcomes cost seconds per huge composition.
    if cheap && matches!(mech, Mech::Mixture { .. } | Mech::PmfPair { .. }) {
        count = count.min(1000);
    }
    Ev { mech, samp, count }
}

/// Case `index` of the sweep from `seed`; `cheap` (the default run) keeps mixtures and
/// pmf pairs at ≤ 1000 runs and mostly single events.
fn draw_case(seed: u64, index: u64, cheap: bool) -> Case {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    let replace = rng.gen_bool(0.35);
    let n = if rng.gen_bool(if cheap { 0.85 } else { 0.75 }) {
        1
    } else {
        rng.gen_range(2..=3)
    };
    let events = (0..n)
        .map(|_| draw_event(&mut rng, replace, cheap))
        .collect();
    let query = if rng.gen_bool(0.5) {
        Query::Delta(match rng.gen_range(0..10) {
            0 => 0.0,
            1 => log_uniform(&mut rng, 100.0, 1000.0),
            _ => log_uniform(&mut rng, 1e-12, 100.0),
        })
    } else {
        Query::Epsilon(if rng.gen_bool(0.1) {
            log_uniform(&mut rng, 1e-300, 1e-20)
        } else {
            log_uniform(&mut rng, 1e-20, 0.5)
        })
    };
    Case {
        index,
        replace,
        events,
        query,
    }
}

fn event_json(ev: &Ev) -> Value {
    let mut v = match &ev.mech {
        Mech::Gaussian { sigma, sens } => {
            json!({"mechanism": "gaussian", "sigma": sigma, "sensitivity": sens})
        }
        Mech::Laplace { scale, sens } => {
            json!({"mechanism": "laplace", "scale": scale, "sensitivity": sens})
        }
        Mech::DiscreteLaplace { scale, sens } => {
            json!({"mechanism": "discrete_laplace", "scale": scale, "sensitivity": sens})
        }
        Mech::DiscreteGaussian { sigma, sens } => {
            json!({"mechanism": "discrete_gaussian", "sigma": sigma, "sensitivity": sens})
        }
        Mech::RandomizedResponse { eps, k } => {
            json!({"mechanism": "randomized_response", "epsilon": eps, "categories": k})
        }
        Mech::EpsDelta { eps, delta } => {
            json!({"mechanism": "eps_delta", "epsilon": eps, "delta": delta})
        }
        Mech::Mixture { sigma, sens, probs } => json!({"mechanism": "mixture_of_gaussians",
            "sigma": sigma, "sensitivities": sens, "probabilities": probs}),
        Mech::PmfPair { p, q } => json!({"mechanism": "pmf_pair", "p": p, "q": q}),
        Mech::Zcdp { rho } => json!({"mechanism": "zcdp", "rho": rho}),
        Mech::Exponential { eps } => json!({"mechanism": "exponential", "epsilon": eps}),
        Mech::StudentT { degrees, s, t } if *degrees == 1.0 => {
            json!({"mechanism": "cauchy", "s": s, "t": t})
        }
        Mech::StudentT { degrees, s, t } => {
            json!({"mechanism": "student_t", "degrees": degrees, "s": s, "t": t})
        }
        Mech::LaplaceLogNormal { sigma, s, t } => {
            json!({"mechanism": "laplace_log_normal", "sigma": sigma, "s": s, "t": t})
        }
        Mech::RdpGaussian { mu } => {
            let orders = [1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0];
            let values: Vec<f64> = orders.iter().map(|a| a * mu * mu / 2.0).collect();
            json!({"mechanism": "rdp_curve", "orders": orders, "values": values})
        }
    };
    match ev.samp {
        Samp::None => {}
        Samp::Poisson(q) => v["sampling"] = json!({"poisson": q}),
        Samp::Fixed(m, n) => {
            v["sampling"] = json!({"fixed_batch": {"batch_size": m, "dataset_size": n}})
        }
        Samp::Alloc(t, k) => {
            v["sampling"] =
                json!({"random_allocation": {"steps_per_epoch": t, "participations": k}})
        }
        Samp::Trunc(q, b, n) => {
            v["sampling"] =
                json!({"truncated_poisson": {"rate": q, "max_batch_size": b, "dataset_size": n}})
        }
        Samp::Shuffle(t) => v["sampling"] = json!({"shuffle": {"steps_per_epoch": t}}),
    }
    v["count"] = json!(ev.count);
    v
}

fn spec_json(case: &Case) -> String {
    let events: Vec<Value> = case.events.iter().map(event_json).collect();
    json!({
        "neighbouring": if case.replace { "replace" } else { "add_remove" },
        "events": events,
    })
    .to_string()
}

// ---------------------------------------------------------------------------------------------
// Truth.

/// Named δ brackets: lower sources (their `lo` is ≤ the true δ) and upper sources (their `hi`
/// is ≥ it).
#[derive(Default)]
struct Truth {
    lower: Vec<(String, DeltaFn)>,
    upper: Vec<(String, DeltaFn)>,
}

impl Truth {
    fn delta(&self, epsilon: f64) -> (f64, f64, String) {
        let mut lo = 0.0f64;
        let mut hi = 1.0f64;
        let mut names = String::new();
        for (name, f) in &self.lower {
            if oracle::past_deadline() {
                names.push_str("(budget) ");
                break;
            }
            let v = f(epsilon).0;
            if v > lo {
                lo = v;
                let _ = write!(names, "lo:{name} ");
            }
        }
        for (name, f) in &self.upper {
            if oracle::past_deadline() {
                names.push_str("(budget) ");
                break;
            }
            let v = f(epsilon).1;
            if v < hi {
                hi = v;
                let _ = write!(names, "hi:{name} ");
            }
        }
        (lo, hi, names)
    }

    /// ε truths by inversion; the lower sources only through their δ lower bounds, the upper
    /// ones only through their δ upper bounds. Past the oracle deadline the remaining sources
    /// are skipped and running inversions stop where they are (still rigorous, looser).
    fn epsilon(&self, delta: f64) -> (f64, f64, String) {
        let mut lo = 0.0f64;
        let mut hi = f64::INFINITY;
        let mut names = String::new();
        for (name, f) in &self.lower {
            if oracle::past_deadline() {
                names.push_str("(budget) ");
                break;
            }
            let v = oracle::invert_lower(&|e| f(e).0, delta);
            if v > lo {
                lo = v;
                let _ = write!(names, "lo:{name} ");
            }
        }
        for (name, f) in &self.upper {
            if oracle::past_deadline() {
                names.push_str("(budget) ");
                break;
            }
            let v = oracle::invert_upper(&|e| f(e).1, delta);
            if v < hi {
                hi = v;
                let _ = write!(names, "hi:{name} ");
            }
        }
        if oracle::past_deadline() && !names.contains("(budget)") {
            names.push_str("(budget) ");
        }
        (lo, hi, names)
    }
}

/// Wall-clock budget of the truth for one case (`SOUNDNESS_ORACLE_BUDGET` seconds, default
/// 0.5): past it the oracles return the looser brackets they hold.
fn oracle_budget() -> std::time::Duration {
    let seconds = std::env::var("SOUNDNESS_ORACLE_BUDGET")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(0.5);
    std::time::Duration::from_secs_f64(seconds)
}

/// The sampling rate the accountant uses (`None` when it is no sampling) and whether the
/// shift is the fixed batch's 2Δ.
fn rate(samp: Samp) -> Option<(f64, bool)> {
    match samp {
        Samp::None => None,
        Samp::Poisson(q) if q >= 1.0 => None,
        Samp::Poisson(q) => Some((q, false)),
        Samp::Fixed(m, n) if m >= n => None,
        Samp::Fixed(m, n) => Some((m as f64 / n as f64, true)),
        // Handled apart in `truth_for` (never as an unsampled pair).
        Samp::Alloc(..) | Samp::Trunc(..) | Samp::Shuffle(..) => None,
    }
}

/// Shift multiplier of an event's base pair: 2 under replace (unsampled or fixed batch),
/// 1 under add/remove and Poisson sampling; 2 for truncated Poisson sampling (a cut batch
/// can trade another record for the changed one: no step moves the sum by more than 2Δ).
fn factor(replace: bool, samp: Samp) -> f64 {
    if let Samp::Trunc(..) = samp {
        return 2.0;
    }
    match rate(samp) {
        None if replace => 2.0,
        None => 1.0,
        Some((_, true)) => 2.0,
        Some((_, false)) => 1.0,
    }
}

fn gaussian_fn(mu: f64) -> DeltaFn {
    if mu == 0.0 {
        Box::new(|e: f64| {
            let d = if e < 0.0 { -e.exp_m1() } else { 0.0 };
            (d, d)
        })
    } else {
        Box::new(move |e| oracle::gaussian_delta(mu, e))
    }
}

/// Wrap a symmetric base pair's δ in the event's sampling.
fn sampled(samp: Samp, base: DeltaFn) -> DeltaFn {
    match rate(samp) {
        None => base,
        Some((q, _)) => Box::new(move |e| oracle::subsampled(q, e, &*base)),
    }
}

/// The event's single-run pair (symmetric base, before sampling), if computable.
fn single_base(ev: &Ev, replace: bool) -> Option<DeltaFn> {
    let f = factor(replace, ev.samp);
    Some(match &ev.mech {
        &Mech::Gaussian { sigma, sens } => gaussian_fn(f * sens / sigma),
        &Mech::Laplace { scale, sens } => {
            let e0 = f * sens / scale;
            Box::new(move |e| oracle::laplace(e0, e))
        }
        &Mech::DiscreteLaplace { scale, sens } => {
            let atoms = oracle::discrete_laplace_atoms(scale, sens * f as u64)?;
            Box::new(move |e| atoms.delta(e))
        }
        &Mech::DiscreteGaussian { sigma, sens } => {
            let atoms = oracle::discrete_gaussian_atoms(sigma, sens * f as u64, 200_000)?;
            Box::new(move |e| atoms.delta(e))
        }
        &Mech::RandomizedResponse { eps, k } => {
            let t = oracle::ThreeAtom::randomized_response(1, eps, k);
            Box::new(move |e| t.delta(e))
        }
        &Mech::EpsDelta { eps, delta } => Box::new(move |e| oracle::eps_delta(1, eps, delta, e)),
        Mech::Mixture { .. } | Mech::Zcdp { .. } | Mech::RdpGaussian { .. } => return None,
        &Mech::Exponential { eps } => {
            let t = oracle::ThreeAtom::randomized_response(1, eps / 2.0, 2);
            Box::new(move |e| t.delta(e))
        }
        Mech::PmfPair { p, q } => return pmf_fn(p, q, 1),
        &Mech::StudentT { degrees, s, .. } => {
            let pair =
                oracle::ShiftedDensity::new(oracle::student_t_density(degrees), s, 40.0, 800);
            Box::new(move |e| pair.delta(e))
        }
        &Mech::LaplaceLogNormal { sigma, s, .. } => {
            let pair = oracle::ShiftedDensity::new(
                oracle::laplace_log_normal_density(sigma),
                s,
                30.0,
                400,
            );
            Box::new(move |e| pair.delta(e))
        }
    })
}

/// k-fold composition of a pmf_pair, both orders.
fn pmf_fn(p: &[f64], q: &[f64], k: u64) -> Option<DeltaFn> {
    let a = oracle::pmf_pair_atoms(p, q, k, 20_000)?;
    let b = oracle::pmf_pair_atoms(q, p, k, 20_000)?;
    Some(Box::new(move |e| {
        let (x, y) = (a.delta(e), b.delta(e));
        (x.0.max(y.0), x.1.max(y.1))
    }))
}

/// The outcome probabilities (P, Q) of a symmetric finite base pair whose masses are all
/// representable (ε₀ ≤ 700): `eps_delta` as leaky randomized response (+∞, −∞, +ε₀, −ε₀),
/// k-ary randomized response as (truth, one other answer, the k − 2 others merged).
fn finite_base_pair(mech: &Mech) -> Option<(Vec<f64>, Vec<f64>)> {
    match *mech {
        Mech::EpsDelta { eps, delta } if eps <= 700.0 => {
            let e = (-eps).exp();
            let (high, low) = ((1.0 - delta) / (1.0 + e), (1.0 - delta) * e / (1.0 + e));
            Some((vec![delta, 0.0, high, low], vec![0.0, delta, low, high]))
        }
        Mech::RandomizedResponse { eps, k } if eps <= 700.0 => {
            let e = (-eps).exp();
            let d = 1.0 + (k as f64 - 1.0) * e;
            let (truth, other, rest) = (1.0 / d, e / d, (k as f64 - 2.0) * e / d);
            Some((vec![truth, other, rest], vec![other, truth, rest]))
        }
        _ => None,
    }
}

/// The event composed `count` times exactly, when an oracle exists.
fn exact_event(ev: &Ev, replace: bool) -> Option<DeltaFn> {
    let k = ev.count;
    if k == 1 {
        let base = single_base(ev, replace)?;
        return Some(sampled(ev.samp, base));
    }
    if let Some((q, _)) = rate(ev.samp) {
        let (p, base_q) = finite_base_pair(&ev.mech)?;
        // The Poisson-sampled REMOVE pair ((1 − q)Q + qP, Q) and its swap (ADD), enumerated
        // k times.
        let remove = oracle::sampled_pair_atoms(&p, &base_q, q, false, k, 20_000)?;
        let add = oracle::sampled_pair_atoms(&p, &base_q, q, true, k, 20_000)?;
        return Some(Box::new(move |e| {
            let (x, y) = (remove.delta(e), add.delta(e));
            (x.0.max(y.0), x.1.max(y.1))
        }));
    }
    let f = factor(replace, ev.samp);
    match &ev.mech {
        &Mech::RandomizedResponse { eps, k: cats } => {
            let t = oracle::ThreeAtom::randomized_response(k, eps, cats);
            Some(Box::new(move |e| t.delta(e)))
        }
        &Mech::Exponential { eps } => {
            let t = oracle::ThreeAtom::randomized_response(k, eps / 2.0, 2);
            Some(Box::new(move |e| t.delta(e)))
        }
        &Mech::EpsDelta { eps, delta } => {
            Some(Box::new(move |e| oracle::eps_delta(k, eps, delta, e)))
        }
        &Mech::DiscreteLaplace { scale, sens } => {
            let a = 1.0 / scale;
            match sens * f as u64 {
                1 => {
                    let b = oracle::BinaryRr::new(k, a);
                    Some(Box::new(move |e| b.delta(e)))
                }
                2 => {
                    // Loss 0 at x = −1 with r = μ(1) = tanh(a/2)e^{−a}; ±2a otherwise.
                    let ln_r = (-(-a).exp_m1()).ln() - (-a).exp().ln_1p() - a;
                    let ln_not_r = (-2.0 * a).exp().ln_1p() - (-a).exp().ln_1p();
                    let t = oracle::ThreeAtom::new(k, 2.0 * a, ln_r, ln_not_r);
                    Some(Box::new(move |e| t.delta(e)))
                }
                _ => None,
            }
        }
        Mech::PmfPair { p, q } => pmf_fn(p, q, k),
        _ => None,
    }
}

/// A lower-truth source for the event: its exact composition, or fewer runs of it.
fn lower_event(ev: &Ev, replace: bool) -> Option<(String, DeltaFn)> {
    if let Some(f) = exact_event(ev, replace) {
        return Some((format!("exact×{}", ev.count), f));
    }
    if let Mech::PmfPair { p, q } = &ev.mech {
        // The most runs that can be enumerated.
        let mut k = ev.count.min(64);
        while k > 1 {
            if let Some(f) = pmf_fn(p, q, k) {
                return Some((format!("pmf×{k}"), f));
            }
            k /= 2;
        }
    }
    let base = single_base(ev, replace)?;
    Some(("single-run".into(), sampled(ev.samp, base)))
}

/// (ε, δ) of one run, if the event is (ε, δ)-DP for finite ε (after sampling).
fn eps_delta_of(ev: &Ev, replace: bool) -> Option<(f64, f64)> {
    let f = factor(replace, ev.samp);
    let (e0, d0) = match &ev.mech {
        &Mech::Laplace { scale, sens } => (f * sens / scale, 0.0),
        &Mech::DiscreteLaplace { scale, sens } => ((sens as f64 * f) / scale, 0.0),
        &Mech::RandomizedResponse { eps, .. } | &Mech::Exponential { eps } => (eps, 0.0),
        &Mech::EpsDelta { eps, delta } => (eps, delta),
        Mech::PmfPair { p, q } => {
            let mut e: f64 = 0.0;
            let (mut only_p, mut only_q) = (0.0, 0.0);
            for (&a, &b) in p.iter().zip(q) {
                match (a > 0.0, b > 0.0) {
                    (true, true) => e = e.max((a.ln() - b.ln()).abs()),
                    (true, false) => only_p += a,
                    (false, true) => only_q += b,
                    _ => {}
                }
            }
            // Charge the rounding of the logarithms.
            (
                e * (1.0 + 1e-14) + 1e-15,
                f64::max(only_p, only_q) * (1.0 + 1e-12),
            )
        }
        _ => return None,
    };
    Some(match rate(ev.samp) {
        None => (e0, d0),
        Some((q, _)) => ((q * e0.exp_m1()).ln_1p() * (1.0 + 1e-14), q * d0),
    })
}

fn truth_for(case: &Case) -> Truth {
    let replace = case.replace;
    let mut truth = Truth::default();
    // Unsampled Gaussians compose exactly.
    let mut mu2 = 0.0;
    let mut any_gaussian = false;
    let mut rest = Vec::new();
    // Random allocation of Gaussian steps (add/remove): k = t is every step, t·count
    // unsampled runs. For k < t the epoch is at least as leaky as the sum of its t outputs
    // (a post-processing: N(k·Δ, t·σ²) against N(0, t·σ²)) and at most as leaky as the
    // record's k steps without amplification (the dominating Gaussian below).
    let mut allocated = false;
    // Truncated Poisson sampling (add/remove, Gaussian): one run is at least as leaky as the
    // datasets where the changed record contributes Δ and the others 0, i.e. Poisson
    // sampling at π = E[min(Bin(n, q), B)]/n with shift Δ (the record is in the cut batch
    // with probability π); every run is at most as leaky as the Gaussian of shift 2Δ (the
    // family bound below).
    let mut truncated = false;
    for ev in &case.events {
        if let (&Mech::Gaussian { sigma, sens }, Samp::Trunc(q, b, n)) = (&ev.mech, ev.samp) {
            truncated = true;
            let pi = kept_probability(q, b, n) * (1.0 - 1e-9);
            if pi > 0.0 {
                let base = gaussian_fn(sens / sigma);
                truth.lower.push((
                    format!("truncated single-run π={pi:e}"),
                    Box::new(move |e| oracle::subsampled(pi, e, &*base)),
                ));
            }
        }
    }
    for ev in &case.events {
        if let (&Mech::Gaussian { sigma, sens }, Samp::Alloc(t, k)) = (&ev.mech, ev.samp) {
            if k >= t {
                mu2 += ev.count as f64 * t as f64 * (sens / sigma).powi(2);
                any_gaussian = true;
            } else {
                allocated = true;
                let mu = (ev.count as f64).sqrt() * k as f64 * sens / (sigma * (t as f64).sqrt());
                truth
                    .lower
                    .push((format!("allocation sum μ={mu:e}"), gaussian_fn(mu)));
            }
        }
    }
    // Shuffling: the sum of an epoch's t outputs moves by the relation's shift (Δ zeroed
    // out, 2Δ replaced) under noise σ√t, a post-processing (lower); one batch per epoch is
    // no sampling.
    for ev in &case.events {
        if let (&Mech::Gaussian { sigma, sens }, Samp::Shuffle(t)) = (&ev.mech, ev.samp) {
            let shift = factor(replace, ev.samp) * sens / sigma;
            if t == 1 {
                mu2 += ev.count as f64 * shift * shift;
                any_gaussian = true;
            } else {
                allocated = true;
                let mu = (ev.count as f64).sqrt() * shift / (t as f64).sqrt();
                truth
                    .lower
                    .push((format!("shuffle sum μ={mu:e}"), gaussian_fn(mu)));
            }
        }
    }
    for ev in case.events.iter().filter(|ev| {
        !matches!(
            ev.samp,
            Samp::Alloc(..) | Samp::Trunc(..) | Samp::Shuffle(..)
        )
    }) {
        match (&ev.mech, rate(ev.samp)) {
            (&Mech::Gaussian { sigma, sens }, None) => {
                let mu = factor(replace, ev.samp) * sens / sigma;
                mu2 += ev.count as f64 * mu * mu;
                any_gaussian = true;
            }
            // The Gaussian that attains the guarantee: a member of the class, so the worst
            // case is at least its composition (the only truth the class has).
            (&Mech::Zcdp { rho }, None) => {
                mu2 += ev.count as f64 * 2.0 * rho;
                any_gaussian = true;
            }
            (&Mech::RdpGaussian { mu }, None) => {
                mu2 += ev.count as f64 * mu * mu;
                any_gaussian = true;
            }
            _ => rest.push(ev),
        }
    }
    if any_gaussian {
        let mu = mu2.sqrt();
        truth
            .lower
            .push((format!("gaussian μ={mu:e}"), gaussian_fn(mu)));
        if rest.is_empty() && !allocated && !truncated {
            truth
                .upper
                .push((format!("gaussian μ={mu:e}"), gaussian_fn(mu)));
        }
    }
    for ev in &rest {
        if let Some((name, f)) = lower_event(ev, replace) {
            truth
                .lower
                .push((format!("{}:{name}", mech_name(&ev.mech)), f));
        }
    }
    // (Not for the exponential mechanism: its exact composition is of one member of the
    // class, and the accounted worst case over adaptive compositions lies above it.)
    if rest.len() == 1
        && !any_gaussian
        && !allocated
        && !truncated
        && !matches!(rest[0].mech, Mech::Exponential { .. })
    {
        if let Some(f) = exact_event(rest[0], replace) {
            truth.upper.push(("exact".into(), f));
        }
    }
    // Gaussian family: the unsampled Gaussian with μ² = Σ count·μᵢ² dominates.
    let mut family_mu2 = 0.0;
    let mut all_gaussian = true;
    for ev in &case.events {
        let f = factor(replace, ev.samp);
        // An allocation's record takes part in k steps of each epoch.
        let runs = match ev.samp {
            Samp::Alloc(_, k) => k as f64,
            _ => 1.0,
        };
        match &ev.mech {
            &Mech::Gaussian { sigma, sens } => {
                family_mu2 += ev.count as f64 * runs * (f * sens / sigma).powi(2)
            }
            Mech::Mixture { sigma, sens, .. } => {
                let c = sens.iter().copied().fold(0.0, f64::max);
                family_mu2 += ev.count as f64 * (c / sigma).powi(2);
            }
            _ => all_gaussian = false,
        }
    }
    if all_gaussian && (case.events.len() + usize::from(any_gaussian) > 1 || allocated || truncated)
    {
        let mu = family_mu2.sqrt();
        truth
            .upper
            .push((format!("dominating gaussian μ={mu:e}"), gaussian_fn(mu)));
    }
    // (ε, δ)-DP family: KOV's optimal composition of the worst (ε, δ) over all runs.
    let per_event: Option<Vec<(f64, f64)>> = case
        .events
        .iter()
        .map(|ev| eps_delta_of(ev, replace))
        .collect();
    if let Some(list) = per_event {
        let e = list.iter().map(|x| x.0).fold(0.0, f64::max);
        let d = list.iter().map(|x| x.1).fold(0.0, f64::max);
        let k: u64 = case.events.iter().map(|ev| ev.count).sum();
        truth.upper.push((
            format!("KOV ({e:e}, {d:e})×{k}"),
            Box::new(move |x| oracle::eps_delta(k, e, d, x)),
        ));
    }
    truth
}

/// `E[min(Bin(n, q), B)]/n`, the chance that a given record of n is in the cut batch, by a
/// direct sum of `lgamma` log-probabilities (n ≤ 10⁵ here; relative error ≲ 1e-10).
fn kept_probability(q: f64, b: u64, n: u64) -> f64 {
    if q >= 1.0 {
        return b.min(n) as f64 / n as f64;
    }
    let nf = n as f64;
    let ln_n_fact = libm::lgamma(nf + 1.0);
    let mean_kept: f64 = (0..=n)
        .map(|k| {
            let kf = k as f64;
            let ln_pmf = ln_n_fact - libm::lgamma(kf + 1.0) - libm::lgamma(nf - kf + 1.0)
                + kf * q.ln()
                + (nf - kf) * (-q).ln_1p();
            ln_pmf.exp() * k.min(b) as f64
        })
        .sum();
    (mean_kept / nf).min(q)
}

fn mech_name(m: &Mech) -> &'static str {
    match m {
        Mech::Gaussian { .. } => "gaussian",
        Mech::Laplace { .. } => "laplace",
        Mech::DiscreteLaplace { .. } => "discrete_laplace",
        Mech::DiscreteGaussian { .. } => "discrete_gaussian",
        Mech::RandomizedResponse { .. } => "randomized_response",
        Mech::EpsDelta { .. } => "eps_delta",
        Mech::Mixture { .. } => "mixture_of_gaussians",
        Mech::PmfPair { .. } => "pmf_pair",
        Mech::Zcdp { .. } => "zcdp",
        Mech::Exponential { .. } => "exponential",
        Mech::RdpGaussian { .. } => "rdp_curve",
        Mech::StudentT { degrees, .. } if *degrees == 1.0 => "cauchy",
        Mech::StudentT { .. } => "student_t",
        Mech::LaplaceLogNormal { .. } => "laplace_log_normal",
    }
}

// ---------------------------------------------------------------------------------------------
// Checking.

/// One failed check.
#[derive(Debug, Clone)]
struct Failure {
    class: String,
    message: String,
}

/// Whether an error is acceptable for a valid specification: only a grid that would be
/// larger than the accountant allows, in points or in memory.
fn acceptable_error(error: &Error) -> bool {
    matches!(
        error,
        Error::GridTooLarge { .. } | Error::MemoryBudget { .. }
    )
}

/// Float slack on ε comparisons (the truth brackets are already rigorous).
fn eps_slack(x: f64) -> f64 {
    1e-13 * x.abs() + 1e-13
}

/// Outcome of one case.
struct Outcome {
    failures: Vec<Failure>,
    seconds: f64,
    oracle_seconds: f64,
    answered: bool,
    /// The GridTooLarge refusal, if the accountant refused the case.
    refused: Option<String>,
}

fn run_case(seed: u64, case: &Case, verbose: bool) -> Outcome {
    let spec_text = spec_json(case);
    if verbose {
        println!(
            "case {}: {spec_text}\n    query {:?}",
            case.index, case.query
        );
    }
    let mechs: Vec<&str> = case.events.iter().map(|e| mech_name(&e.mech)).collect();
    let group = mechs.join("+");
    let describe = |class: &str, detail: String| Failure {
        class: format!("{class} [{group}]"),
        message: format!(
            "seed {seed:#x} case {}: {class}: {detail}\n    spec {spec_text}\n    query {:?}",
            case.index, case.query
        ),
    };
    let spec = match CompositionSpec::from_json_str(&spec_text) {
        Ok(spec) => spec,
        Err(e) => {
            return Outcome {
                failures: vec![describe("spec refused", e.to_string())],
                seconds: 0.0,
                oracle_seconds: 0.0,
                answered: false,
                refused: None,
            }
        }
    };
    let start = Instant::now();
    let query = case.query;
    let result = std::panic::catch_unwind(move || {
        let acc = Accountant::new(&spec, AccountantOptions::default())?;
        match query {
            Query::Delta(e) => acc
                .delta_for_epsilon(e)
                .map(|a| (a.delta.lower, a.delta.upper)),
            Query::Epsilon(d) => acc
                .epsilon_for_delta(d)
                .map(|a| (a.epsilon.lower, a.epsilon.upper)),
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    let mut failures = Vec::new();
    let (lower, upper) = match result {
        Err(payload) => {
            let text = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(describe("panic", text));
            return Outcome {
                failures,
                seconds,
                oracle_seconds: 0.0,
                answered: false,
                refused: None,
            };
        }
        Ok(Err(e)) => {
            let refused = if acceptable_error(&e) {
                Some(format!(
                    "case {} [{group}]: {e}\n    spec {spec_text}\n    query {:?}",
                    case.index, case.query
                ))
            } else {
                failures.push(describe("error", e.to_string()));
                None
            };
            return Outcome {
                failures,
                seconds,
                oracle_seconds: 0.0,
                answered: false,
                refused,
            };
        }
        Ok(Ok(pair)) => pair,
    };
    if lower.is_nan() || upper.is_nan() {
        failures.push(describe("NaN", format!("lower {lower:e} upper {upper:e}")));
    }
    if lower < 0.0 || upper < 0.0 {
        failures.push(describe(
            "negative",
            format!("lower {lower:e} upper {upper:e}"),
        ));
    }
    if lower > upper {
        failures.push(describe(
            "lower > upper",
            format!("lower {lower:e} upper {upper:e}"),
        ));
    }
    let oracle_start = Instant::now();
    oracle::set_deadline(Some(oracle_start + oracle_budget()));
    let truth = truth_for(case);
    match query {
        Query::Delta(e) => {
            if upper > 1.0 || lower > 1.0 {
                failures.push(describe(
                    "delta > 1",
                    format!("lower {lower:e} upper {upper:e}"),
                ));
            }
            let (t_lo, t_hi, sources) = truth.delta(e);
            let detail =
                format!("answer [{lower:e}, {upper:e}], truth [{t_lo:e}, {t_hi:e}] ({sources})");
            if verbose {
                println!("case {}: δ({e:e}) {detail}", case.index);
            }
            if t_lo > t_hi * (1.0 + 1e-9) + 1e-300 {
                failures.push(describe("ORACLE inconsistent", detail.clone()));
            }
            if upper < t_lo && t_lo > 1e-300 {
                failures.push(describe("delta upper < truth", detail.clone()));
            }
            if lower > t_hi && lower > 1e-300 {
                failures.push(describe("delta lower > truth", detail));
            }
        }
        Query::Epsilon(d) => {
            let (t_lo, t_hi, sources) = truth.epsilon(d);
            let detail =
                format!("answer [{lower:e}, {upper:e}], truth [{t_lo:e}, {t_hi:e}] ({sources})");
            if verbose {
                println!("case {}: ε({d:e}) {detail}", case.index);
            }
            if t_lo > t_hi + eps_slack(t_hi) {
                failures.push(describe("ORACLE inconsistent", detail.clone()));
            }
            if upper < t_lo - eps_slack(t_lo) {
                failures.push(describe("epsilon upper < truth", detail.clone()));
            }
            if lower > t_hi + eps_slack(t_hi) {
                failures.push(describe("epsilon lower > truth", detail));
            }
        }
    }
    oracle::set_deadline(None);
    if verbose {
        println!(
            "case {}: accountant {seconds:.3} s, oracle {:.3} s\n  {spec_text}",
            case.index,
            oracle_start.elapsed().as_secs_f64()
        );
    }
    Outcome {
        failures,
        seconds,
        oracle_seconds: oracle_start.elapsed().as_secs_f64(),
        answered: true,
        refused: None,
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Run `cases` cases from `seed`, report, and assert that nothing failed.
fn sweep(seed: u64, cases: u64, cheap: bool) {
    if let Some(only) = env_u64("SOUNDNESS_ONLY") {
        let case = draw_case(seed, only, cheap);
        let outcome = run_case(seed, &case, true);
        for f in &outcome.failures {
            println!("{}", f.message);
        }
        assert!(outcome.failures.is_empty());
        return;
    }
    let start = Instant::now();
    let mut failures: Vec<Failure> = Vec::new();
    let mut answered = 0;
    let mut refused: Vec<String> = Vec::new();
    let show_refused = std::env::var("SOUNDNESS_SHOW_REFUSED").is_ok();
    let mut slowest = (0.0, 0);
    let mut slowest_oracle = (0.0, 0);
    // How many events of each mechanism the sweep drew (its coverage).
    let mut drawn: Vec<(&'static str, usize)> = Vec::new();
    for index in 0..cases {
        let case = draw_case(seed, index, cheap);
        for ev in &case.events {
            let name = mech_name(&ev.mech);
            match drawn.iter_mut().find(|(n, _)| *n == name) {
                Some(entry) => entry.1 += 1,
                None => drawn.push((name, 1)),
            }
        }
        let outcome = run_case(seed, &case, false);
        if outcome.seconds > slowest.0 {
            slowest = (outcome.seconds, index);
        }
        if std::env::var("SOUNDNESS_TIMES").is_ok() {
            println!(
                "case {index}: accountant {:.3} s, oracle {:.3} s",
                outcome.seconds, outcome.oracle_seconds
            );
        }
        if outcome.oracle_seconds > slowest_oracle.0 {
            slowest_oracle = (outcome.oracle_seconds, index);
        }
        answered += usize::from(outcome.answered);
        if let Some(r) = outcome.refused {
            if show_refused {
                println!("refused (grid or memory limit): {r}");
            }
            refused.push(r);
        }
        // The long sweep reports as it goes, so a run that is stopped still tells.
        if !cheap {
            for f in &outcome.failures {
                println!("FAILED {}", f.message);
            }
            if outcome.seconds > 5.0 {
                println!("slow: case {index} took {:.1} s", outcome.seconds);
            }
            if (index + 1) % 25 == 0 {
                println!(
                    "progress: {} cases, {} failures, {:.0} s",
                    index + 1,
                    failures.len() + outcome.failures.len(),
                    start.elapsed().as_secs_f64()
                );
            }
        }
        failures.extend(outcome.failures);
    }
    println!(
        "soundness: {cases} cases checked (seed {seed:#x}; {answered} answered, {} refused \
         with GridTooLarge or MemoryBudget{}), {} failures, {:.1} s (slowest case {} at {:.2} s; slowest \
         truth case {} at {:.2} s)",
        refused.len(),
        if show_refused {
            ""
        } else {
            ", SOUNDNESS_SHOW_REFUSED=1 lists them"
        },
        failures.len(),
        start.elapsed().as_secs_f64(),
        slowest.1,
        slowest.0,
        slowest_oracle.1,
        slowest_oracle.0
    );
    drawn.sort_by_key(|entry| std::cmp::Reverse(entry.1));
    let coverage: Vec<String> = drawn.iter().map(|(n, c)| format!("{n} {c}")).collect();
    println!("soundness: events drawn: {}", coverage.join(", "));
    let mut classes: Vec<(String, usize)> = Vec::new();
    for f in &failures {
        match classes.iter_mut().find(|(c, _)| *c == f.class) {
            Some(entry) => entry.1 += 1,
            None => classes.push((f.class.clone(), 1)),
        }
    }
    classes.sort();
    let mut report = String::new();
    let _ = writeln!(
        report,
        "{} of {cases} cases failed a check (seed {seed:#x}); by class:",
        failures.len()
    );
    for (class, n) in &classes {
        let _ = writeln!(report, "  {n:4}  {class}");
    }
    let _ = writeln!(
        report,
        "first {} (re-run one with SOUNDNESS_SEED={seed:#x} SOUNDNESS_ONLY=<case>):",
        failures.len().min(30)
    );
    for f in failures.iter().take(30) {
        let _ = writeln!(report, "{}", f.message);
    }
    assert!(failures.is_empty(), "{report}");
}

#[test]
fn soundness_default() {
    sweep(
        env_u64("SOUNDNESS_SEED").unwrap_or(SEED),
        env_u64("SOUNDNESS_DEFAULT_CASES").unwrap_or(DEFAULT_CASES),
        true,
    );
}

/// The long sweep: `SOUNDNESS_CASES` (default 5000) cases from `SOUNDNESS_SEED`.
#[test]
#[ignore = "long sweep: run with scripts/soundness_sweep.sh"]
fn soundness_long() {
    sweep(
        env_u64("SOUNDNESS_SEED").unwrap_or(SEED ^ 0x1000),
        env_u64("SOUNDNESS_CASES").unwrap_or(5000),
        false,
    );
}

// ---------------------------------------------------------------------------------------------
// The oracles against each other and against known values.

#[test]
fn gaussian_quadrature_matches_the_closed_form() {
    for mu in [0.3, 0.5, 1.0, 2.0, 5.0, 10.0] {
        for eps in [0.0, 0.1, 0.5, 1.0, 2.0, 5.0] {
            let closed = oracle::gaussian_delta_closed_form(mu, eps);
            if closed < 1e-6 {
                continue;
            }
            let quad = oracle::gaussian_ln_delta(mu, eps).exp();
            assert!(
                (quad - closed).abs() <= 1e-13 * closed,
                "μ={mu} ε={eps}: quadrature {quad:e}, closed form {closed:e}"
            );
        }
    }
    // Tiny μ: δ(0) = erf(μ/(2√2)).
    for mu in [1e-12, 1e-8, 1e-4, 1e-2] {
        let exact = libm::erf(mu / (2.0 * std::f64::consts::SQRT_2));
        let quad = oracle::gaussian_ln_delta(mu, 0.0).exp();
        assert!(
            (quad - exact).abs() <= 1e-13 * exact,
            "μ={mu}: {quad:e} vs {exact:e}"
        );
    }
    // Far tail: δ ≈ φ(z₀)·μ/(z₀(z₀+μ)) asymptotically; check against the closed form in log
    // space where the closed form still has a few digits.
    let (mu, eps) = (1.0, 30.0);
    let closed = oracle::gaussian_delta_closed_form(mu, eps);
    let quad = oracle::gaussian_ln_delta(mu, eps).exp();
    assert!((quad / closed - 1.0).abs() < 1e-6, "{quad:e} vs {closed:e}");
}

#[test]
fn binomial_oracles_match_known_values() {
    // Exact binomial value (also tests/mechanism_catalogue.rs): RR(0.1)×100, δ(1).
    let (lo, hi) = oracle::BinaryRr::new(100, 0.1).delta(1.0);
    assert!(
        lo <= 0.125688390240637 && 0.125688390240637 <= hi,
        "{lo} {hi}"
    );
    assert!(hi - lo < 1e-12);
    // Exact KOV value: eps_delta (0.5, 1e-6)×10.
    for (eps, exact) in [
        (0.0, 0.557056552805855),
        (1.0, 0.331685166113793),
        (3.0, 0.041038004282216),
    ] {
        let (lo, hi) = oracle::eps_delta(10, 0.5, 1e-6, eps);
        assert!(
            lo <= exact + 1e-14 && exact - 1e-14 <= hi,
            "{eps}: {lo} {hi}"
        );
    }
    // ε(1e-6) of RR(0.1)×100 = 4.7745675881.
    let rr = oracle::BinaryRr::new(100, 0.1);
    let (lo, hi) = oracle::invert(&|e| rr.delta(e), 1e-6);
    assert!(
        lo <= 4.7745675881 + 1e-9 && 4.7745675881 - 1e-9 <= hi,
        "{lo} {hi}"
    );
    // k-ary: a direct multinomial sum for small k.
    let (eps0, cats, k) = (0.5, 4u64, 30u64);
    let t = oracle::ThreeAtom::randomized_response(k, eps0, cats);
    let denominator = eps0.exp() + cats as f64 - 1.0;
    let (pt, po, pr) = (
        eps0.exp() / denominator,
        1.0 / denominator,
        (cats as f64 - 2.0) / denominator,
    );
    let lf = |n: u64| libm::lgamma(n as f64 + 1.0);
    for eps in [0.0, 1.0, 3.0] {
        let mut exact = 0.0;
        for a in 0..=k {
            for b in 0..=(k - a) {
                let c = k - a - b;
                let loss = (a as f64 - b as f64) * eps0;
                if loss > eps {
                    let ln_p = lf(k) - lf(a) - lf(b) - lf(c)
                        + a as f64 * pt.ln()
                        + b as f64 * po.ln()
                        + c as f64 * pr.ln();
                    exact += ln_p.exp() * -(eps - loss).exp_m1();
                }
            }
        }
        let (lo, hi) = t.delta(eps);
        assert!(
            lo <= exact * (1.0 + 1e-12) && exact * (1.0 - 1e-12) <= hi,
            "{eps}: {lo} {exact} {hi}"
        );
    }
    // Huge counts: the window sum agrees with the Gaussian limit's order of magnitude and
    // the bracket is honest (lo ≤ hi).
    let big = oracle::BinaryRr::new(1_000_000_000_000, 0.001);
    let (lo, hi) = big.delta(1.0);
    assert!(lo <= hi && hi <= 1.0 && lo > 0.1, "{lo} {hi}");
}

#[test]
fn binary_rr_blocks_agree_with_the_term_by_term_sum() {
    // The block bounds (few blocks) against the exact sum of every term: honest brackets
    // that overlap, and the coarse one not absurdly wide.
    for (m, e0) in [
        (1_000_000u64, 0.01),
        (3_000_000, 0.001),
        (200_000, 0.3),
        (5_000, 1e-6),
    ] {
        let rr = oracle::BinaryRr::new(m, e0);
        for eps in [0.0, 0.5, 2.0, 10.0, 40.0] {
            let fine = rr.delta_capped(eps, 10_000_000);
            let coarse = rr.delta_capped(eps, 2_000);
            assert!(
                coarse.0 <= fine.1 && fine.0 <= coarse.1,
                "m={m} ε₀={e0} ε={eps}: fine {fine:?} coarse {coarse:?}"
            );
            assert!(
                fine.1 - fine.0 <= 1e-9 * fine.1 + 1e-300,
                "m={m} ε₀={e0} ε={eps}: fine {fine:?}"
            );
            if fine.0 > 1e-12 {
                assert!(
                    coarse.1 - coarse.0 <= 1e-3 * fine.0,
                    "m={m} ε₀={e0} ε={eps}: fine {fine:?} coarse {coarse:?}"
                );
            }
        }
    }
}

#[test]
fn subsampling_oracle_matches_the_issue_value() {
    // σ = 1, q = 1e-12: δ(0) = q·(2Φ(1/2) − 1) = 3.829249e-13.
    let (lo, hi) = oracle::subsampled(1e-12, 0.0, &|e| oracle::gaussian_delta(1.0, e));
    let exact = 1e-12 * libm::erf(0.5 / std::f64::consts::SQRT_2);
    assert!(
        lo <= exact && exact <= hi && (hi - lo) < 1e-12 * exact,
        "{lo:e} {hi:e}"
    );
    assert!((exact - 3.829249e-13).abs() < 1e-18);
}

/// The shifted-density quadrature (the smooth-sensitivity lower truths) against closed forms:
/// Laplace (δ = 1 − e^{(ε−s)/2}), Gaussian (Balle & Wang) and Cauchy, whose optimal set for
/// ε > 0 is the interval where (1 + (u − s)²)/(1 + u²) > e^ε, with the arctan CDF. It is a
/// lower bound, and within 1e-5 relative of each (1e-12 absolute; the allowance it charges is
/// 1e-9 of P(S) + e^ε·Q(S), which is relatively large when δ ≪ P(S)).
#[test]
fn shifted_density_quadrature_matches_closed_forms() {
    let check = |name: &str, got: f64, exact: f64| {
        assert!(
            got <= exact * (1.0 + 1e-12) + 1e-15 && got >= exact * (1.0 - 1e-5) - 1e-12,
            "{name}: quadrature {got:e}, exact {exact:e}"
        );
    };
    for s in [1e-3, 0.1, 1.0, 5.0] {
        let laplace = oracle::ShiftedDensity::new(|z: f64| 0.5 * (-z.abs()).exp(), s, 40.0, 800);
        let normal = oracle::ShiftedDensity::new(
            |z: f64| (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt(),
            s,
            40.0,
            800,
        );
        let cauchy = oracle::ShiftedDensity::new(oracle::student_t_density(1.0), s, 40.0, 800);
        for eps in [0.0, 1e-4, 0.01, 0.3, 1.0, 2.0] {
            let (lo, hi) = oracle::laplace(s, eps);
            check(
                &format!("laplace s {s} ε {eps}"),
                laplace.delta(eps).0,
                0.5 * (lo + hi),
            );
            check(
                &format!("gaussian s {s} ε {eps}"),
                normal.delta(eps).0,
                oracle::gaussian_delta_closed_form(s, eps),
            );
            // Cauchy: P(S) − e^ε Q(S), Q the law shifted by s; S solves (1 − c)u² − 2su + s²
            // + (1 − c) > 0 for u the P-variable (c = e^ε), an interval for c > 1.
            let c = eps.exp();
            let cdf = |x: f64| 0.5 + x.atan() / std::f64::consts::PI;
            let exact = if eps == 0.0 {
                // S = {u < s/2}: P(S) − Q(S) = 2F(s/2) − 1.
                2.0 * cdf(0.5 * s) - 1.0
            } else {
                let (a, b, k) = (1.0 - c, -2.0 * s, s * s + 1.0 - c);
                let disc = (b * b - 4.0 * a * k).max(0.0).sqrt();
                let (r1, r2) = ((-b + disc) / (2.0 * a), (-b - disc) / (2.0 * a));
                let (r1, r2) = (r1.min(r2), r1.max(r2));
                (cdf(r2) - cdf(r1)) - c * (cdf(r2 - s) - cdf(r1 - s))
            };
            check(&format!("cauchy s {s} ε {eps}"), cauchy.delta(eps).0, exact);
        }
    }
    // The Laplace-log-normal density integrates to 1 and tends to Laplace as σ → 0.
    for sigma in [0.05, 0.5, 2.0] {
        let law = oracle::laplace_log_normal_density(sigma);
        let mass = oracle::ShiftedDensity::new(law, 1.0, 30.0, 400).mass();
        assert!((mass - 1.0).abs() < 1e-6, "σ {sigma}: mass {mass}");
    }
    let h = oracle::laplace_log_normal_density(1e-4);
    for z in [0.0f64, 0.5, 3.0] {
        let laplace = 0.5 * (-z).exp();
        assert!(
            (h(z) - laplace).abs() < 1e-6,
            "z {z}: {} vs {laplace}",
            h(z)
        );
    }
}
