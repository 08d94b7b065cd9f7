//! Hot elementwise loops compiled a second and a third time, for AVX2 and for AVX-512,
//! chosen at run time.
//!
//! The crate is built for the baseline x86-64 instruction set, whose vectors hold two
//! doubles. A few loops do the same few operations on many independent lanes (the 21 tilts
//! of [`crate::pmf::tail_moments`], the twiddle products of a four-step FFT, the four lanes
//! of a window's statistics, the four chains of a compensated sum); compiled for AVX2 they
//! run on four doubles at a time, about twice as fast (the tail moments of a 36,701-point
//! PMF: 120 µs against 60 µs), and for AVX-512 on eight where the lanes are that many (a
//! DP-SGD query at σ 1, q 0.01, 10³ steps, grid step 1e-4, in-process: 0.93–0.95 of its
//! time with the AVX2 builds alone, two builds' query loops alternated).
//!
//! The results are the same bit for bit: each lane does the same IEEE operations in the same
//! order in every build (Rust never fuses a multiplication and an addition on its own, even
//! where the instruction set has fused ones), so which build runs is invisible to every
//! bound the crate computes. [`avx2`] and [`avx512`] say whether the processor has the
//! instructions (detected once by the standard library, then a cached flag); the tests run
//! each build against the baseline one ([`for_each_tier`]).

#[cfg(test)]
use std::cell::Cell;

/// The instruction sets the wide builds are made for, from the baseline up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tier {
    /// x86-64's baseline (SSE2), or any other architecture (named by the tests only).
    #[cfg_attr(not(test), allow(dead_code))]
    Baseline,
    /// AVX2: vectors of four doubles.
    Avx2,
    /// AVX-512F: vectors of eight doubles.
    Avx512,
}

#[cfg(test)]
thread_local! {
    /// The highest build the dispatch may choose on this thread (tests only).
    static CEILING: Cell<Tier> = const { Cell::new(Tier::Avx512) };
}

/// Whether the dispatch may choose the build for `tier` (always, outside the tests).
#[inline]
fn allowed(tier: Tier) -> bool {
    #[cfg(test)]
    {
        CEILING.with(Cell::get) >= tier
    }
    #[cfg(not(test))]
    {
        let _ = tier;
        true
    }
}

/// Whether the AVX2 builds of the loops may run on this processor.
#[inline]
pub(crate) fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        allowed(Tier::Avx2) && std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the builds with fused multiply-adds may run on this processor (AVX2 and FMA;
/// the double-double FFT, [`crate::numeric::double_double_fft`]). They are a tier with AVX2
/// for the tests.
#[inline]
pub(crate) fn fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        avx2() && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the AVX-512F builds of the loops may run on this processor.
#[inline]
pub(crate) fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        allowed(Tier::Avx512) && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Run `check` once per build, with the dispatch on this thread limited to that tier (a
/// processor without its instructions runs the next lower one), then lift the limit: the
/// tests of the wide loops compare each build with the baseline one.
#[cfg(test)]
pub(crate) fn for_each_tier(mut check: impl FnMut(Tier)) {
    for tier in [Tier::Baseline, Tier::Avx2, Tier::Avx512] {
        CEILING.with(|ceiling| ceiling.set(tier));
        check(tier);
    }
    CEILING.with(|ceiling| ceiling.set(Tier::Avx512));
}

/// Define `$name`, which runs the `#[inline(always)]` function `$kernel` compiled for
/// AVX-512F when the processor has it (see [`avx512`]), else for AVX2 when it has that (see
/// [`avx2`]), else as built: the same arguments, the same result.
macro_rules! dispatch_wide {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? = $kernel:path;) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn wider($($arg: $ty),*) $(-> $ret)? {
                    $kernel($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                unsafe fn wide($($arg: $ty),*) $(-> $ret)? {
                    $kernel($($arg),*)
                }
                if $crate::numeric::wide_loops::avx512() {
                    // SAFETY: `wider` only needs AVX-512F, which the processor has (checked
                    // just above).
                    return unsafe { wider($($arg),*) };
                }
                if $crate::numeric::wide_loops::avx2() {
                    // SAFETY: `wide` only needs AVX2, which the processor has (checked
                    // just above).
                    return unsafe { wide($($arg),*) };
                }
            }
            $kernel($($arg),*)
        }
    };
}
pub(crate) use dispatch_wide;
