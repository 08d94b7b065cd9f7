//! How the process's allocator treats freed memory.
//!
//! One query allocates and frees FFT buffers of several MiB for every grid it computes on.
//! glibc's default gives a buffer that large its own mapping and unmaps it when freed, so
//! the next one is mapped afresh: every page is faulted in and zeroed again, and every unmap
//! interrupts the other evaluation thread to flush its TLB. On the 2-vCPU test machine that
//! was a quarter of a 20 ms query's CPU time (`perf`: `clear_page_erms`, `exc_page_fault`,
//! `smp_call_function_many_cond`). The CLI therefore asks glibc to serve such buffers from
//! its heaps and to keep freed memory for reuse: the process's peak memory is unchanged
//! (freed memory is reused, not added to), and it is returned when the process exits.
//!
//! Measured (`python3 scripts/ab_timing.py 21 <without> <with> epsilon --sigma 0.8
//! --sampling-rate 0.004 --steps 100000 --delta 1e-5 --grid-step 1e-4`): medians 19.3 →
//! 17.6 ms (B/A 0.91); with `--sigma 1 --sampling-rate 0.01 --steps 10000`, 12.0 → 11.5 ms
//! (0.95).
//!
//! The library does not do this: a process that embeds it (Python) owns its allocator.

/// Apply the settings (glibc on Linux only; elsewhere nothing to do).
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        /// Largest threshold glibc accepts for serving a request from its heaps (32 MiB on
        /// 64-bit targets): requests up to it are no longer given their own mapping.
        const MMAP_THRESHOLD: libc::c_int = 32 << 20;
        /// Free memory at the top of a heap kept before it is returned to the system.
        const TRIM_THRESHOLD: libc::c_int = 512 << 20;
        /// Extra space obtained whenever a heap grows (address space only: pages are
        /// faulted in when first used).
        const TOP_PAD: libc::c_int = 64 << 20;
        // SAFETY: `mallopt` only changes allocator parameters; it is called before any
        // other thread exists, and an out-of-range value is rejected (returns 0), leaving
        // the default in place.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
            libc::mallopt(libc::M_TOP_PAD, TOP_PAD);
        }
    }
}
