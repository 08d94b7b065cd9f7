//! Compensated summation.

/// Neumaier's improved Kahan summation: error about 2u·Σ|xᵢ|, independent of the count.
///
/// # References
/// Neumaier, "Rundungsfehleranalyse einiger Verfahren zur Summation endlicher Summen",
/// ZAMM 54 (1974).
pub fn neumaier_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut sum = 0.0_f64;
    let mut compensation = 0.0_f64;
    for x in values {
        let t = sum + x;
        if sum.abs() >= x.abs() {
            compensation += (sum - t) + x;
        } else {
            compensation += (x - t) + sum;
        }
        sum = t;
    }
    sum + compensation
}
