//! Hot elementwise loops compiled a second time for AVX2, chosen at run time.
//!
//! The crate is built for the baseline x86-64 instruction set, whose vectors hold two
//! doubles. A few loops do the same few operations on many independent lanes (the 21 tilts
//! of [`crate::pmf::tail_moments`], the twiddle products of a four-step FFT, the four lanes
//! of a window's statistics); compiled for AVX2 they run on four doubles at a time, about
//! twice as fast (the tail moments of a 36,701-point PMF: 120 µs against 60 µs).
//!
//! The results are the same bit for bit: each lane does the same IEEE operations in the same
//! order either way (Rust never fuses a multiplication and an addition on its own, and only
//! AVX2 is enabled, not FMA), so which build runs is invisible to every bound the crate
//! computes. [`avx2`] says whether the processor has AVX2 (detected once by the standard
//! library, then a cached flag).

/// Whether the AVX2 builds of the loops may run on this processor.
#[inline]
pub(crate) fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Define `$name`, which runs the `#[inline(always)]` function `$kernel` compiled for AVX2
/// when the processor has it (see [`avx2`]) and as built otherwise: the same arguments, the
/// same result.
macro_rules! dispatch_avx2 {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? = $kernel:path;) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                unsafe fn wide($($arg: $ty),*) $(-> $ret)? {
                    $kernel($($arg),*)
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
pub(crate) use dispatch_avx2;
