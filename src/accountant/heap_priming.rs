//! One block of [`PRIMING_BYTES`] allocated and freed at once, the first time an accountant
//! is built, so that glibc's allocator keeps the memory a query frees for the next query
//! instead of returning it to the system.
//!
//! A query allocates and frees a few MiB of working vectors besides its FFT buffers (which
//! [`crate::numeric::fft_convolution`] keeps): the discretized single event's bins, edges and
//! atoms. glibc's `malloc` hands the pages freed at the top of a heap back to the system once
//! more than its trim threshold (initially 128 KiB) is free there, so every query faulted in
//! and zeroed the same memory again. glibc raises that threshold by itself, to twice the
//! block's size, the first time the program frees a block it had given its own mapping (any
//! block above 128 KiB, up to 32 MiB): a program that has freed a large array already runs
//! this way. Freeing one such block on purpose puts every program there from its first query.
//! The cost is memory: up to `2 · PRIMING_BYTES` free at the top of each of the process's
//! heaps may stay mapped, and blocks under [`PRIMING_BYTES`] come from the heaps.
//!
//! Measured (σ 1, q 0.01, 10³ steps at grid step 1e-4, 61 queries in one process, library
//! default allocator): 280–320 page faults per query without, about none with; median query
//! 2.9–3.5 ms without, 2.2–2.3 ms with, on the 2-vCPU test machine.
//!
//! The block goes through the program's global allocator, which is glibc's `malloc` unless
//! the program chose another: one of its own (as the `pld` binary, whose allocator keeps
//! large blocks itself, `src/bin/pld/allocator.rs`) simply serves and frees one more block.
//! Nothing happens off glibc, nor where the program fixed glibc's thresholds itself
//! (`mallopt`, `GLIBC_TUNABLES`): glibc then no longer moves them. (Freed through the
//! system allocator instead, bypassing `pld`'s, the block cost `pld` 2.5% of a whole σ 1,
//! q 0.01, 10³ step query, `scripts/ab_timing.py 61`; through its own, 1%, within noise.)

/// Bytes of the block freed: glibc's thresholds become this (largest block served from a
/// heap) and twice this (free memory kept at the top of a heap).
const PRIMING_BYTES: usize = 4 << 20;

/// Allocate and free one block of [`PRIMING_BYTES`] through the global allocator, once per
/// process (later calls do nothing).
pub(super) fn prime_heap() {
    static PRIMED: std::sync::Once = std::sync::Once::new();
    PRIMED.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        free_one_block();
    });
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn free_one_block() {
    let Ok(layout) = std::alloc::Layout::from_size_align(PRIMING_BYTES, 16) else {
        return;
    };
    // SAFETY: the layout's size is not zero; the block, if any, is freed with the same
    // layout and never read or written. (`black_box` keeps the compiler from eliding the
    // allocation, which is all this is for.)
    unsafe {
        let block = std::hint::black_box(std::alloc::alloc(layout));
        if !block.is_null() {
            std::alloc::dealloc(block, layout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's minor page faults so far (field 10 of `/proc/thread-self/stat`).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn minor_faults() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("procfs");
        let after_name = &stat[stat.rfind(')').expect("name ends") + 2..];
        after_name
            .split(' ')
            .nth(7)
            .and_then(|field| field.parse().ok())
            .expect("minflt field")
    }

    /// Once primed, a MiB allocated, written and freed over and over is the same memory each
    /// time: no page is faulted in again. (Unprimed, in a process that never freed a large
    /// block, the warm-up round's block has a mapping of its own, whose release moves the
    /// threshold up to it, and the next round's block comes from a heap, faulted in afresh:
    /// with `prime_heap` disabled, this test run alone, `cargo test --release --lib
    /// heap_priming`, counted 257 faults.)
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_freed_mebibyte_is_reused_without_page_faults() {
        prime_heap();
        let round = || {
            let mut block = vec![0_u8; 1 << 20];
            for byte in block.iter_mut().step_by(4096) {
                *byte = 1;
            }
            std::hint::black_box(&block);
        };
        round();
        let before = minor_faults();
        for _ in 0..16 {
            round();
        }
        let faults = minor_faults() - before;
        assert!(faults < 64, "{faults} page faults in 16 rounds of 1 MiB");
    }

    /// Priming again, from several threads at once, is harmless.
    #[test]
    fn priming_twice_is_harmless() {
        let threads: Vec<_> = (0..2).map(|_| std::thread::spawn(prime_heap)).collect();
        for thread in threads {
            assert!(thread.join().is_ok(), "priming does not panic");
        }
        prime_heap();
    }
}
