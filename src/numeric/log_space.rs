//! Arithmetic on numbers held as their natural logarithms: sums and the `e^x ± 1` forms
//! that overflow or cancel when computed directly.

/// `ln(eᵃ + eᵇ)`, exact for infinite arguments (−∞ is the log of 0).
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if hi.is_infinite() {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// `ln(1 + eˣ)` without overflow or loss of precision (exact at ±∞).
pub fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// `ln(eˣ − 1)` for `x ≥ 0` (−∞ at 0), without overflow.
pub fn ln_expm1(x: f64) -> f64 {
    if x > 30.0 {
        x + (-(-x).exp()).ln_1p()
    } else {
        x.exp_m1().ln()
    }
}

/// `ln(1 − e^{−t})` for `t ≥ 0` (−∞ at 0, 0 at +∞), accurate for small and large t.
pub fn ln_neg_expm1_neg(t: f64) -> f64 {
    if t > std::f64::consts::LN_2 {
        (-(-t).exp()).ln_1p()
    } else {
        (-(-t).exp_m1()).ln()
    }
}

/// `ln Σ eˣⁱ` over the values (−∞ for none, or all −∞).
pub fn log_sum_exp(values: &[f64]) -> f64 {
    let top = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if top.is_infinite() {
        return top;
    }
    top + values.iter().map(|x| (x - top).exp()).sum::<f64>().ln()
}
