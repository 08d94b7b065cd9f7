//! The mechanisms a specification can name, each with its checked constructor.

use super::*;

/// The mechanisms, with validated parameters (private: built only through [`MechanismSpec`]'s
/// checked constructors).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MechanismKind {
    /// Gaussian noise N(0, σ²) on a query of L2 sensitivity Δ.
    Gaussian { sigma: f64, sensitivity: Shift<f64> },
    /// Laplace noise with density e^{−|x|/b}/(2b) on a query of L1 sensitivity Δ.
    Laplace { scale: f64, sensitivity: Shift<f64> },
    /// Integer noise with P(k) ∝ e^{−|k|/scale} on an integer query.
    DiscreteLaplace { scale: f64, sensitivity: Shift<u64> },
    /// Integer noise with P(k) ∝ e^{−k²/(2σ²)} on an integer query.
    DiscreteGaussian { sigma: f64, sensitivity: Shift<u64> },
    /// k-ary randomized response.
    RandomizedResponse { epsilon: f64, categories: u64 },
    /// Any (ε, δ)-DP mechanism.
    EpsDelta { epsilon: f64, delta: f64 },
    /// Gaussian noise on a query of random sensitivity (`probabilities` normalized;
    /// `listed` the probabilities as given, for serialization).
    MixtureOfGaussians {
        sigma: f64,
        sensitivities: Vec<f64>,
        probabilities: Vec<f64>,
        listed: Vec<f64>,
    },
    /// A finite pair (`p`, `q` normalized; `listed` as given).
    PmfPair {
        p: Vec<f64>,
        q: Vec<f64>,
        listed: Box<[Vec<f64>; 2]>,
    },
    /// Any ρ-zCDP mechanism.
    Zcdp { rho: f64 },
    /// The exponential mechanism calibrated to ε-DP (ε-bounded range).
    Exponential { epsilon: f64 },
    /// Smooth-sensitivity noise `f(x) + S(x)/s · Z`, Z = X·e^{σY} (X Laplace, Y normal),
    /// smooth sensitivity S of smoothness t: ½(t/σ + e^{3σ²/2}·s)²-zCDP.
    LaplaceLogNormal { sigma: f64, s: f64, t: f64 },
    /// Any mechanism with `D_α ≤ values[i]` at `orders[i]`.
    RdpCurve { orders: Vec<f64>, values: Vec<f64> },
    /// Smooth-sensitivity noise `f(x) + S(x)/s · Z`, Z Student's t with `degrees` degrees of
    /// freedom, S t-smooth: ε-DP (see [`crate::mechanism::smooth_sensitivity`]).
    StudentT { degrees: f64, s: f64, t: f64 },
    /// The same with Cauchy noise (Student's t with one degree of freedom).
    Cauchy { s: f64, t: f64 },
}

impl MechanismKind {
    /// ρ of the zCDP guarantee the mechanism is accounted by (`zcdp`, `laplace_log_normal`).
    pub(crate) fn zcdp_rho(&self) -> Option<f64> {
        match *self {
            MechanismKind::Zcdp { rho } => Some(rho),
            MechanismKind::LaplaceLogNormal { sigma, s, t } => {
                let epsilon = t / sigma + (1.5 * sigma * sigma).exp() * s;
                Some(0.5 * epsilon * epsilon * (1.0 + 8.0 * f64::EPSILON))
            }
            _ => None,
        }
    }

    /// ε of the pure-DP guarantee of smooth-sensitivity Student's t or Cauchy noise.
    pub(crate) fn smooth_sensitivity_epsilon(&self) -> Option<f64> {
        let (degrees, s, t) = match *self {
            MechanismKind::StudentT { degrees, s, t } => (degrees, s, t),
            MechanismKind::Cauchy { s, t } => (1.0, s, t),
            _ => return None,
        };
        Some(
            crate::mechanism::smooth_sensitivity::student_t_epsilon(degrees, s, t)
                .unwrap_or(f64::INFINITY),
        )
    }

    /// Whether the mechanism is known only by a Rényi guarantee.
    pub(crate) fn is_guarantee(&self) -> bool {
        matches!(
            self,
            MechanismKind::Zcdp { .. }
                | MechanismKind::LaplaceLogNormal { .. }
                | MechanismKind::RdpCurve { .. }
        )
    }
}

/// A mechanism with validated parameters.
///
/// Built by one constructor per mechanism ([`MechanismSpec::gaussian`],
/// [`MechanismSpec::laplace`], [`MechanismSpec::discrete_laplace`],
/// [`MechanismSpec::discrete_gaussian`], [`MechanismSpec::randomized_response`],
/// [`MechanismSpec::eps_delta`], [`MechanismSpec::mixture_of_gaussians`],
/// [`MechanismSpec::pmf_pair`]), each returning `Err` for an invalid parameter; the additive
/// mechanisms then take [`MechanismSpec::with_sensitivity`] or
/// [`MechanismSpec::with_replace_sensitivity`]. The parameters are read back with the
/// accessors ([`MechanismSpec::name`], [`MechanismSpec::sigma`], ...) or through serde, which
/// writes the mechanism's part of an event: `{"mechanism": "gaussian", "sigma": 1.0}`.
///
/// ```
/// use pld_accountant::MechanismSpec;
///
/// let m = MechanismSpec::discrete_gaussian(3.0)?.with_sensitivity(2.0)?;
/// assert_eq!((m.name(), m.sigma(), m.sensitivity()), ("discrete_gaussian", Some(3.0), Some(2.0)));
/// assert!(MechanismSpec::discrete_gaussian(3.0)?.with_sensitivity(1.5).is_err());
/// assert!(MechanismSpec::randomized_response(1.0, 0).is_err());
/// # Ok::<(), pld_accountant::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MechanismSpec {
    pub(crate) kind: MechanismKind,
}

impl From<MechanismKind> for MechanismSpec {
    fn from(kind: MechanismKind) -> Self {
        MechanismSpec { kind }
    }
}

impl MechanismSpec {
    /// Gaussian noise N(0, σ²) on a query of L2 sensitivity 1 (see
    /// [`MechanismSpec::with_sensitivity`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sigma` unless σ is finite and > 0.
    pub fn gaussian(sigma: f64) -> Result<Self> {
        Ok(MechanismKind::Gaussian {
            sigma: check_positive("sigma", sigma)?,
            sensitivity: Shift::Default,
        }
        .into())
    }

    /// Laplace noise with density e^{−|x|/b}/(2b), b = `scale`, on a query of L1 sensitivity 1.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `scale` unless it is finite and > 0.
    pub fn laplace(scale: f64) -> Result<Self> {
        Ok(MechanismKind::Laplace {
            scale: check_positive("scale", scale)?,
            sensitivity: Shift::Default,
        }
        .into())
    }

    /// Integer noise with P(k) ∝ e^{−|k|/scale} on an integer query of sensitivity 1.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `scale` unless it is finite and > 0.
    pub fn discrete_laplace(scale: f64) -> Result<Self> {
        Ok(MechanismKind::DiscreteLaplace {
            scale: check_positive("scale", scale)?,
            sensitivity: Shift::Default,
        }
        .into())
    }

    /// Integer noise with P(k) ∝ e^{−k²/(2σ²)} on an integer query of sensitivity 1.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sigma` unless σ is finite and > 0.
    pub fn discrete_gaussian(sigma: f64) -> Result<Self> {
        Ok(MechanismKind::DiscreteGaussian {
            sigma: check_positive("sigma", sigma)?,
            sensitivity: Shift::Default,
        }
        .into())
    }

    /// k-ary randomized response: the truth with probability e^ε/(k−1+e^ε), otherwise one of
    /// the other k−1 answers uniformly (k = `categories`, 2 in the JSON format's default).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `epsilon` unless it is finite and > 0, or
    /// `categories` unless it is ≥ 2.
    pub fn randomized_response(epsilon: f64, categories: u64) -> Result<Self> {
        Ok(MechanismKind::RandomizedResponse {
            epsilon: check_positive("epsilon", epsilon)?,
            categories: check_whole("categories", categories, 2, u64::MAX)?,
        }
        .into())
    }

    /// Any mechanism known only to be (ε, δ)-DP (accounted by its worst-case pair).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `epsilon` unless it is finite and ≥ 0, or `delta`
    /// unless it is in [0, 1].
    pub fn eps_delta(epsilon: f64, delta: f64) -> Result<Self> {
        Ok(MechanismKind::EpsDelta {
            epsilon: check_in_range("epsilon", epsilon, 0.0, f64::INFINITY)?,
            delta: check_in_range("delta", delta, 0.0, 1.0)?,
        }
        .into())
    }

    /// Any mechanism known only to be ρ-zCDP (`D_α ≤ ρα` for every order α > 1, between
    /// any two neighbours in either order): accounted by the worst-case pair of that
    /// guarantee above and by the Gaussian with μ = √(2ρ), which is ρ-zCDP, below.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `rho` unless it is finite and > 0.
    pub fn zcdp(rho: f64) -> Result<Self> {
        Ok(MechanismKind::Zcdp {
            rho: check_positive("rho", rho)?,
        }
        .into())
    }

    /// The exponential mechanism calibrated to ε-DP, `P(y | D) ∝ exp(ε·u(D, y)/(2Δ))` for a
    /// utility of sensitivity Δ (or report-noisy-max with Gumbel noise, the same mechanism),
    /// accounted as ε-bounded range: above, a pair that dominates every ε-BR mechanism; below,
    /// the two-output exponential mechanism it attains (randomized response with ε/2). See
    /// [`crate::mechanism::bounded_range`].
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `epsilon` unless it is finite and > 0.
    pub fn exponential(epsilon: f64) -> Result<Self> {
        Ok(MechanismKind::Exponential {
            epsilon: check_positive("epsilon", epsilon)?,
        }
        .into())
    }

    /// Smooth-sensitivity noise with Laplace-log-normal `Z = X·e^{σY}` (X standard Laplace, Y
    /// standard normal): `M(x) = f(x) + S(x)/s · Z` with S a t-smooth upper bound on the local
    /// sensitivity (`e^{−t}S(x) ≤ S(x′) ≤ e^{t}S(x)`, `|f(x) − f(x′)| ≤ S(x)` for neighbours).
    /// It is ρ-zCDP with `ρ = ε²/2`, `ε = t/σ + e^{3σ²/2}·s` (Bun & Steinke, "Average-case
    /// averages: private algorithms for smooth sensitivity and mean estimation", NeurIPS 2019,
    /// the Laplace-log-normal proposition), and accounted through that guarantee. No lower
    /// bound is known for the mechanism itself: its lower bound is no loss.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sigma`, `s` or `t` unless finite and > 0, or
    /// `sigma` when e^{3σ²/2} overflows.
    pub fn laplace_log_normal(sigma: f64, s: f64, t: f64) -> Result<Self> {
        let kind = MechanismKind::LaplaceLogNormal {
            sigma: check_positive("sigma", sigma)?,
            s: check_positive("s", s)?,
            t: check_positive("t", t)?,
        };
        match kind.zcdp_rho() {
            Some(rho) if rho.is_finite() => Ok(kind.into()),
            _ => Err(Error::invalid(
                "sigma",
                sigma,
                "a value with e^{3σ²/2}·s finite (σ below about 21)",
            )),
        }
    }

    /// Smooth-sensitivity noise with Student's t law of `degrees` degrees of freedom:
    /// `M(x) = f(x) + S(x)/s · Z` with S a t-smooth upper bound on the local sensitivity (as
    /// for [`MechanismSpec::laplace_log_normal`]). It is ε-DP with
    /// `ε = (d + 1)/2 · ln(1 + s(s + √(s² + 4d))/(2d)) + max(d, 1)·t` (derived in
    /// [`crate::mechanism::smooth_sensitivity`]) and accounted by that guarantee (randomized
    /// response with ε above); no lower bound is known for the mechanism itself: its lower
    /// bound is no loss.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `degrees` or `s` unless finite and > 0, `t` unless
    /// finite and ≥ 0.
    pub fn student_t(degrees: f64, s: f64, t: f64) -> Result<Self> {
        crate::mechanism::smooth_sensitivity::student_t_epsilon(degrees, s, t)?;
        Ok(MechanismKind::StudentT { degrees, s, t }.into())
    }

    /// [`MechanismSpec::student_t`] with one degree of freedom (Cauchy noise):
    /// ε = 2·asinh(s/2) + t.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `s` unless finite and > 0, `t` unless finite and
    /// ≥ 0.
    pub fn cauchy(s: f64, t: f64) -> Result<Self> {
        crate::mechanism::smooth_sensitivity::student_t_epsilon(1.0, s, t)?;
        Ok(MechanismKind::Cauchy { s, t }.into())
    }

    /// Any mechanism whose Rényi divergence of order `orders[i]` is at most `values[i]`
    /// (between any two neighbours in either order): accounted by the worst-case pair of
    /// those bounds above and by the largest Gaussian that meets them below.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `orders[i]` (finite, > 1) or `values[i]` (finite,
    /// ≥ 0), or `values` when the lists differ in length, are empty or longer than
    /// [`MAX_OUTCOMES`].
    pub fn rdp_curve(orders: Vec<f64>, values: Vec<f64>) -> Result<Self> {
        if orders.len() > MAX_OUTCOMES {
            return Err(Error::invalid(
                "orders",
                format!("a list of {} orders", orders.len()),
                &format!("at most {MAX_OUTCOMES} orders"),
            ));
        }
        crate::mechanism::renyi_worst_case::RenyiGuarantee::curve(&orders, &values)?;
        Ok(MechanismKind::RdpCurve { orders, values }.into())
    }

    /// Gaussian noise N(0, σ²) on a query whose sensitivity is random: `sensitivities[i]` with
    /// probability `probabilities[i]` (e.g. a record that may be sampled more than once).
    /// REMOVE pair `Σ p_i N(−c_i, σ²)` vs `N(0, σ²)`; add/remove only.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sigma`, `sensitivities[i]` or `probabilities[i]`
    /// for a value out of range (sensitivities finite ≥ 0, probabilities in [0, 1] summing to
    /// 1, at most [`MAX_OUTCOMES`] of them); [`Error::Incompatible`] naming `probabilities`
    /// when the two lists differ in length.
    pub fn mixture_of_gaussians(
        sigma: f64,
        sensitivities: Vec<f64>,
        probabilities: Vec<f64>,
    ) -> Result<Self> {
        let sigma = check_positive("sigma", sigma)?;
        check_number_list("sensitivities", &sensitivities)?;
        let normalized = check_probability_list("probabilities", &probabilities)?;
        if sensitivities.len() != probabilities.len() {
            return Err(Error::Incompatible {
                field: "probabilities".into(),
                reason: format!(
                    "{} probabilities for {} sensitivities; give one per sensitivity",
                    probabilities.len(),
                    sensitivities.len()
                ),
            });
        }
        Ok(MechanismKind::MixtureOfGaussians {
            sigma,
            sensitivities,
            probabilities: normalized,
            listed: probabilities,
        }
        .into())
    }

    /// Any mechanism with finitely many outcomes, given by its worst-case neighbouring pair:
    /// the output distributions `p = M(D)` and `q = M(D')` over the same outcomes. Both
    /// orders (p‖q and q‖p) are accounted.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `p`, `q` or an entry for a list that is not a
    /// probability distribution; [`Error::Incompatible`] naming `q` when the lengths differ.
    pub fn pmf_pair(p: Vec<f64>, q: Vec<f64>) -> Result<Self> {
        let p_normalized = check_probability_list("p", &p)?;
        let q_normalized = check_probability_list("q", &q)?;
        if p.len() != q.len() {
            return Err(Error::Incompatible {
                field: "q".into(),
                reason: format!(
                    "{} outcomes in q but {} in p; list the same outcomes in both",
                    q.len(),
                    p.len()
                ),
            });
        }
        Ok(MechanismKind::PmfPair {
            p: p_normalized,
            q: q_normalized,
            listed: Box::new([p, q]),
        }
        .into())
    }

    /// The same mechanism on a query of sensitivity Δ = `sensitivity`: one record's
    /// contribution (doubled under replace neighbouring). Real Δ > 0 for `gaussian` and
    /// `laplace`, a whole Δ ≥ 1 for `discrete_laplace` and `discrete_gaussian`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sensitivity` for a value out of range;
    /// [`Error::Incompatible`] for a mechanism without a sensitivity, or one already given a
    /// `replace_sensitivity`.
    pub fn with_sensitivity(self, sensitivity: f64) -> Result<Self> {
        self.set_sensitivity("sensitivity", sensitivity, false)
    }

    /// The same mechanism whose two outputs, under replace neighbouring, differ by exactly
    /// `replace_sensitivity` (used as given, not doubled: a count moves by 1 when a record is
    /// replaced). Only valid in a [`CompositionSpec`] with [`Neighbouring::Replace`].
    ///
    /// # Errors
    /// As [`MechanismSpec::with_sensitivity`], naming `replace_sensitivity`; and
    /// [`Error::Incompatible`] naming both when a `sensitivity` was given already.
    pub fn with_replace_sensitivity(self, replace_sensitivity: f64) -> Result<Self> {
        self.set_sensitivity("replace_sensitivity", replace_sensitivity, true)
    }

    pub(super) fn set_sensitivity(mut self, key: &str, value: f64, replace: bool) -> Result<Self> {
        match &mut self.kind {
            MechanismKind::Gaussian { sensitivity, .. }
            | MechanismKind::Laplace { sensitivity, .. } => {
                check_not_both(sensitivity, replace)?;
                let x = check_positive(key, value)?;
                *sensitivity = Shift::given(x, replace);
            }
            MechanismKind::DiscreteLaplace { sensitivity, .. }
            | MechanismKind::DiscreteGaussian { sensitivity, .. } => {
                check_not_both(sensitivity, replace)?;
                let k = check_whole_f64(key, value, 1, u64::MAX)?;
                *sensitivity = Shift::given(k, replace);
            }
            _ => return Err(no_sensitivity(self.name(), key)),
        }
        Ok(self)
    }

    /// [`MechanismSpec::with_sensitivity`] with a whole number (the JSON parser's path for
    /// integer noise, exact above 2⁵³).
    pub(super) fn set_integer_sensitivity(
        mut self,
        key: &str,
        value: u64,
        replace: bool,
    ) -> Result<Self> {
        match &mut self.kind {
            MechanismKind::DiscreteLaplace { sensitivity, .. }
            | MechanismKind::DiscreteGaussian { sensitivity, .. } => {
                check_not_both(sensitivity, replace)?;
                let k = check_whole(key, value, 1, u64::MAX)?;
                *sensitivity = Shift::given(k, replace);
                Ok(self)
            }
            _ => self.set_sensitivity(key, value as f64, replace),
        }
    }

    /// Whether a `sensitivity` was given (not the default).
    pub(super) fn sensitivity_given(&self) -> bool {
        match &self.kind {
            MechanismKind::Gaussian { sensitivity, .. }
            | MechanismKind::Laplace { sensitivity, .. } => {
                matches!(sensitivity, Shift::PerRecord(_))
            }
            MechanismKind::DiscreteLaplace { sensitivity, .. }
            | MechanismKind::DiscreteGaussian { sensitivity, .. } => {
                matches!(sensitivity, Shift::PerRecord(_))
            }
            _ => false,
        }
    }

    /// The name used in the specification, e.g. `"gaussian"`.
    pub fn name(&self) -> &'static str {
        match self.kind {
            MechanismKind::Gaussian { .. } => "gaussian",
            MechanismKind::Laplace { .. } => "laplace",
            MechanismKind::DiscreteLaplace { .. } => "discrete_laplace",
            MechanismKind::DiscreteGaussian { .. } => "discrete_gaussian",
            MechanismKind::RandomizedResponse { .. } => "randomized_response",
            MechanismKind::EpsDelta { .. } => "eps_delta",
            MechanismKind::MixtureOfGaussians { .. } => "mixture_of_gaussians",
            MechanismKind::PmfPair { .. } => "pmf_pair",
            MechanismKind::Zcdp { .. } => "zcdp",
            MechanismKind::Exponential { .. } => "exponential",
            MechanismKind::LaplaceLogNormal { .. } => "laplace_log_normal",
            MechanismKind::RdpCurve { .. } => "rdp_curve",
            MechanismKind::StudentT { .. } => "student_t",
            MechanismKind::Cauchy { .. } => "cauchy",
        }
    }

    /// ρ of `zcdp`, and the ρ that `laplace_log_normal` guarantees.
    pub fn rho(&self) -> Option<f64> {
        self.kind.zcdp_rho()
    }

    /// Whether the mechanism adds noise to a numeric query (the ones that take a
    /// sensitivity, and the ones fixed-batch sampling is accounted for).
    pub fn is_additive_noise(&self) -> bool {
        matches!(
            self.kind,
            MechanismKind::Gaussian { .. }
                | MechanismKind::Laplace { .. }
                | MechanismKind::DiscreteLaplace { .. }
                | MechanismKind::DiscreteGaussian { .. }
        )
    }

    /// σ of the Gaussian, discrete Gaussian and mixture of Gaussians.
    pub fn sigma(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::Gaussian { sigma, .. }
            | MechanismKind::DiscreteGaussian { sigma, .. }
            | MechanismKind::MixtureOfGaussians { sigma, .. } => Some(sigma),
            _ => None,
        }
    }

    /// The scale of (discrete) Laplace noise.
    pub fn scale(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::Laplace { scale, .. } | MechanismKind::DiscreteLaplace { scale, .. } => {
                Some(scale)
            }
            _ => None,
        }
    }

    /// One record's contribution Δ of an additive mechanism (1 unless given), or `None` for
    /// the other mechanisms and when a `replace_sensitivity` was given instead.
    pub fn sensitivity(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::Gaussian { sensitivity, .. }
            | MechanismKind::Laplace { sensitivity, .. } => {
                (!sensitivity.is_replace()).then(|| sensitivity.per_record())
            }
            MechanismKind::DiscreteLaplace { sensitivity, .. }
            | MechanismKind::DiscreteGaussian { sensitivity, .. } => {
                (!sensitivity.is_replace()).then(|| sensitivity.per_record() as f64)
            }
            _ => None,
        }
    }

    /// The `replace_sensitivity`, if one was given.
    pub fn replace_sensitivity(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::Gaussian {
                sensitivity: Shift::Replace(x),
                ..
            }
            | MechanismKind::Laplace {
                sensitivity: Shift::Replace(x),
                ..
            } => Some(x),
            MechanismKind::DiscreteLaplace {
                sensitivity: Shift::Replace(k),
                ..
            }
            | MechanismKind::DiscreteGaussian {
                sensitivity: Shift::Replace(k),
                ..
            } => Some(k as f64),
            _ => None,
        }
    }

    /// ε of randomized response and of `eps_delta`.
    pub fn epsilon(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::RandomizedResponse { epsilon, .. }
            | MechanismKind::EpsDelta { epsilon, .. }
            | MechanismKind::Exponential { epsilon } => Some(epsilon),
            _ => None,
        }
    }

    /// δ of `eps_delta`.
    pub fn delta(&self) -> Option<f64> {
        match self.kind {
            MechanismKind::EpsDelta { delta, .. } => Some(delta),
            _ => None,
        }
    }

    /// The number of answers of randomized response.
    pub fn categories(&self) -> Option<u64> {
        match self.kind {
            MechanismKind::RandomizedResponse { categories, .. } => Some(categories),
            _ => None,
        }
    }

    /// An event running this mechanism once, on every record.
    pub fn once(self) -> Event {
        Event::new(self)
    }

    /// An event running this mechanism on a Poisson sample at rate `rate` (see
    /// [`Event::poisson`]).
    ///
    /// # Errors
    /// As [`Event::poisson`].
    pub fn poisson(self, rate: f64) -> Result<Event> {
        Event::new(self).poisson(rate)
    }

    /// An event running this mechanism on a fixed batch (see [`Event::fixed_batch`]).
    ///
    /// # Errors
    /// As [`Event::fixed_batch`].
    pub fn fixed_batch(self, batch_size: u64, dataset_size: u64) -> Result<Event> {
        Event::new(self).fixed_batch(batch_size, dataset_size)
    }

    /// An event running this mechanism on a truncated Poisson sample (see
    /// [`Event::truncated_poisson`]).
    ///
    /// # Errors
    /// As [`Event::truncated_poisson`].
    pub fn truncated_poisson(
        self,
        rate: f64,
        max_batch_size: u64,
        dataset_size: u64,
    ) -> Result<Event> {
        Event::new(self).truncated_poisson(rate, max_batch_size, dataset_size)
    }

    /// An event running this mechanism on shuffled batches, `steps_per_epoch` per epoch (see
    /// [`Event::shuffle`]).
    ///
    /// # Errors
    /// As [`Event::shuffle`].
    pub fn shuffle(self, steps_per_epoch: u64) -> Result<Event> {
        Event::new(self).shuffle(steps_per_epoch)
    }

    /// An event running this mechanism `count` times on every record (see [`Event::repeat`]).
    ///
    /// # Errors
    /// As [`Event::repeat`].
    pub fn repeat(self, count: u64) -> Result<Event> {
        Event::new(self).repeat(count)
    }
}

/// Refuse a `sensitivity` after a `replace_sensitivity`, or the other way round.
pub(super) fn check_not_both<T: SensitivityValue>(current: &Shift<T>, replace: bool) -> Result<()> {
    match (current, replace) {
        (Shift::PerRecord(_), true) | (Shift::Replace(_), false) => Err(both_sensitivities()),
        _ => Ok(()),
    }
}

pub(super) fn both_sensitivities() -> Error {
    Error::Incompatible {
        field: "replace_sensitivity".into(),
        reason: "cannot be given together with sensitivity: give sensitivity (one record's \
                 contribution, doubled under replace) or replace_sensitivity (the shift \
                 under replace, as given), not both"
            .into(),
    }
}

pub(super) fn no_sensitivity(name: &str, key: &str) -> Error {
    Error::Incompatible {
        field: key.into(),
        reason: format!(
            "{name} takes no {key} (only gaussian, laplace, discrete_laplace and \
             discrete_gaussian do)"
        ),
    }
}
