//! Bisection over integers, for monotone yes/no questions (how many runs compose exactly,
//! how large a batch cap makes cuts negligible).

/// The first integer in `(no, yes]` where the monotone predicate `holds` is true, given that
/// it fails at `no` and holds at `yes` (neither is evaluated); `yes` when `yes ≤ no + 1`.
/// About `log₂(yes − no)` evaluations.
pub fn first_holding(mut no: u64, mut yes: u64, holds: impl Fn(u64) -> bool) -> u64 {
    while yes > no && yes - no > 1 {
        let middle = no + (yes - no) / 2;
        if holds(middle) {
            yes = middle;
        } else {
            no = middle;
        }
    }
    yes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a linear scan, at every threshold of a small range and at the ends of u64.
    #[test]
    fn finds_the_first_integer_that_holds() {
        for threshold in 1..=40u64 {
            let found = first_holding(0, 41, |k| k >= threshold);
            assert_eq!(found, (1..=41).find(|&k| k >= threshold).unwrap());
        }
        assert_eq!(
            first_holding(0, u64::MAX, |k| k >= u64::MAX - 3),
            u64::MAX - 3
        );
        assert_eq!(first_holding(5, 6, |_| unreachable!()), 6);
    }
}
