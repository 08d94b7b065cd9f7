//! How the process allocates and frees memory: glibc's heaps keep what is freed
//! ([`keep_freed_memory`]), and blocks of a MiB or more get mappings of their own, kept for
//! reuse ([`LargeBlocks`], the CLI's global allocator), on the system's default page size.
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
//! One glibc arena for all threads (`mallopt(M_ARENA_MAX, 1)`, so that memory one
//! evaluation thread frees the other reuses) was measured and not kept: it cut the page
//! faults of σ 0.8, q 0.004, 10⁵ steps from 1,589 to 1,329 per run, but not the time (B/A
//! 1.017 back to back over 41 rounds, 1.006 with runs 3 s apart over 21; 0.994 on σ 1,
//! q 0.01, 10³ steps at grid step 1e-4).
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

/// The process's allocator: glibc's (with [`keep_freed_memory`]'s settings) for ordinary
/// requests, and for blocks of [`LARGE_BLOCK`] bytes or more (FFT buffers, grids) mappings of
/// their own, whole multiples of [`GRANULE`], kept for reuse once freed (up to
/// [`KEPT_BYTES`]) and handed out again to requests they fit, as glibc's heaps were asked to
/// do above.
///
/// Why no transparent huge pages (measured on the 2-vCPU test machine, σ 0.8, q 0.004, 10⁵
/// steps at the default tolerance unless said): a fresh query touches MiB that no earlier
/// query of the process touched, each 4 KiB page a fault, and `madvise(MADV_HUGEPAGE)` on
/// these blocks cut the faults (1,597 to 1,150 per run) and, with runs back to back, the
/// wall time (the advice off took 1.08× as long). But a user runs `pld` once, after
/// a pause, and then the advice cost time: with runs alternated 3 s apart, the run without
/// it took 0.83, 0.93 and 0.90× as long, 0.80× at 5 s and 1.00× at 8 s; σ 0.3, q 1e-9, 10⁶
/// steps (216 MiB) 0.89× at 3 s and 0.95× back to back. This machine's balloon reports free
/// memory to its host (virtio-balloon free page reporting), in 2 MiB pieces: a fresh huge
/// page is memory the host must supply again. Advising the evaluation threads' own glibc
/// heaps as well (their blocks under a MiB) was worse: 263 faults instead of 1,150 and 5–11%
/// faster back to back, but 1.2–1.7× slower 3 s and 8 s apart (medians 24.8 against 17.1 ms,
/// 38.0 against 21.9 ms), each heap using only part of its huge pages.
#[cfg(target_os = "linux")]
pub struct LargeBlocks;

/// Requests of this many bytes or more get a mapping of their own.
#[cfg(target_os = "linux")]
const LARGE_BLOCK: usize = 1 << 20;

/// Mappings are whole multiples of this many bytes, so that a kept block fits later
/// requests of nearby sizes.
#[cfg(target_os = "linux")]
const GRANULE: usize = 2 << 20;

/// Bytes of freed large blocks kept for reuse; beyond it they are unmapped.
#[cfg(target_os = "linux")]
const KEPT_BYTES: usize = 512 << 20;

/// Bytes of freed large blocks kept for reuse at most: [`KEPT_BYTES`], or less under a
/// memory budget ([`keep_within_budget`]).
#[cfg(target_os = "linux")]
static KEPT_LIMIT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(KEPT_BYTES);

/// Budgets below this many bytes keep no freed large block (see [`keep_within_budget`]).
pub const KEEP_FREED_FROM: u64 = 256 << 20;

/// Keep freed large blocks for reuse within a memory budget of `budget` bytes: up to a
/// quarter of it (512 MiB at the default 2 GiB), none below [`KEEP_FREED_FROM`]; blocks
/// freed beyond that are unmapped.
///
/// A kept block serves only requests between half its length and its length, so kept
/// blocks add to the process's peak, and under a small budget they are much of it. Random
/// allocation, σ 0.6, t 1000, δ 1e-5 (`pld epsilon -v`, peak resident memory, keeping up
/// to 512 MiB against keeping none): one epoch under `--memory-budget 16` 33 against
/// 27 MiB (the library's own heap peaks at 14 MB there, by `heaptrack`; the process
/// starts at 6 MiB); ten epochs under 64 MiB 54 against 34 MiB, 8 MiB kept 43 MiB. Not
/// keeping costs time in page faults: ten epochs under 64 MiB took 1.17× as long
/// (`scripts/ab_timing.py 9`, medians; 1.10× keeping 8 MiB).
pub fn keep_within_budget(budget: u64) {
    let bytes = if budget >= KEEP_FREED_FROM {
        budget / 4
    } else {
        0
    };
    #[cfg(target_os = "linux")]
    KEPT_LIMIT.store(
        usize::try_from(bytes).map_or(KEPT_BYTES, |bytes| bytes.min(KEPT_BYTES)),
        std::sync::atomic::Ordering::Relaxed,
    );
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}

/// Large blocks in use (to know their mapped lengths when freed) and kept: `(address,
/// mapped length)`, address 0 for an empty slot. Fixed tables (an allocator must not
/// allocate): when one is full, a request goes to glibc, a freed block is unmapped.
#[cfg(target_os = "linux")]
struct Blocks {
    live: [(usize, usize); 64],
    kept: [(usize, usize); 32],
    kept_bytes: usize,
}

#[cfg(target_os = "linux")]
static BLOCKS: std::sync::Mutex<Blocks> = std::sync::Mutex::new(Blocks {
    live: [(0, 0); 64],
    kept: [(0, 0); 32],
    kept_bytes: 0,
});

#[cfg(target_os = "linux")]
fn blocks() -> std::sync::MutexGuard<'static, Blocks> {
    // A panic while the lock was held cannot leave the tables half-written in a way that
    // matters (each update is a single slot): carry on with them.
    BLOCKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(target_os = "linux")]
impl LargeBlocks {
    fn is_large(layout: std::alloc::Layout) -> bool {
        layout.size() >= LARGE_BLOCK && layout.align() <= 4096
    }

    /// A large block for `layout` and whether it is fresh (all zero); null if none.
    fn take(layout: std::alloc::Layout) -> (*mut u8, bool) {
        let needed = layout.size().div_ceil(GRANULE) * GRANULE;
        let mut table = blocks();
        let Some(slot) = table.live.iter().position(|&(address, _)| address == 0) else {
            return (std::ptr::null_mut(), false);
        };
        // The smallest kept block that fits without wasting more than its request.
        let reuse = table
            .kept
            .iter()
            .enumerate()
            .filter(|(_, &(address, length))| {
                address != 0 && length >= needed && length <= 2 * needed
            })
            .min_by_key(|(_, &(_, length))| length)
            .map(|(index, _)| index);
        if let Some(index) = reuse {
            let (address, length) = table.kept[index];
            table.kept[index] = (0, 0);
            table.kept_bytes -= length;
            table.live[slot] = (address, length);
            return (address as *mut u8, false);
        }
        // SAFETY: an anonymous private mapping of `needed` bytes, no file and no fixed
        // address; the result is checked before use.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                needed,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return (std::ptr::null_mut(), false);
        }
        table.live[slot] = (address as usize, needed);
        (address.cast(), true)
    }

    /// Give back a block from [`LargeBlocks::take`]; false if `ptr` is not one.
    fn give_back(ptr: *mut u8) -> bool {
        let mut table = blocks();
        let Some(slot) = table
            .live
            .iter()
            .position(|&(address, _)| address == ptr as usize)
        else {
            return false;
        };
        let (address, length) = table.live[slot];
        table.live[slot] = (0, 0);
        let free_slot = table.kept.iter().position(|&(a, _)| a == 0);
        match free_slot {
            Some(index)
                if table.kept_bytes + length
                    <= KEPT_LIMIT.load(std::sync::atomic::Ordering::Relaxed) =>
            {
                table.kept[index] = (address, length);
                table.kept_bytes += length;
            }
            _ => {
                drop(table);
                // SAFETY: the mapping made by `take`, no longer in use by anyone.
                unsafe {
                    libc::munmap(address as *mut libc::c_void, length);
                }
            }
        }
        true
    }
}

// SAFETY: every block handed out is either glibc's (for its layout) or a private mapping of
// at least the layout's size, page aligned (alignment up to 4096 only), used by no one else
// until it is given back.
#[cfg(target_os = "linux")]
unsafe impl std::alloc::GlobalAlloc for LargeBlocks {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if Self::is_large(layout) {
            let (ptr, _) = Self::take(layout);
            if !ptr.is_null() {
                return ptr;
            }
        }
        // SAFETY: as the caller's contract.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if Self::is_large(layout) {
            let (ptr, fresh) = Self::take(layout);
            if !ptr.is_null() {
                if !fresh {
                    // SAFETY: the block holds at least `layout.size()` bytes.
                    unsafe { std::ptr::write_bytes(ptr, 0, layout.size()) };
                }
                return ptr;
            }
        }
        // SAFETY: as the caller's contract.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        if !(Self::is_large(layout) && Self::give_back(ptr)) {
            // SAFETY: not one of ours, so glibc's, for this layout.
            unsafe { std::alloc::System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees a valid layout of `new_size` with the same alignment.
        let new_layout =
            unsafe { std::alloc::Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !Self::is_large(layout) && !Self::is_large(new_layout) {
            // SAFETY: glibc's block, as the caller's contract.
            return unsafe { std::alloc::System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: a fresh block for the new layout, the common prefix copied, the old one
        // freed by the matching path.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}
