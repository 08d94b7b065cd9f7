//! How the process allocates and frees memory: glibc's heaps keep what is freed
//! ([`keep_freed_memory`]), and blocks of a MiB or more live on transparent huge pages
//! ([`LargeBlocks`], the CLI's global allocator).
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

/// The process's allocator: glibc's (with [`keep_freed_memory`]'s settings) for ordinary
/// requests, and for blocks of [`LARGE_BLOCK`] bytes or more (FFT buffers, grids) mappings of
/// their own on transparent huge pages, kept for reuse once freed.
///
/// Why: a fresh query touches tens of MiB that no earlier query of the process touched, and
/// with 4 KiB pages each page costs a fault: about 3,000 faults and a fifth of the CPU time of
/// a DP-SGD query at grid step 1e-4 (σ 0.8, q 0.004, 10⁵ steps: `perf stat -r 30`, 3,076
/// faults, task-clock 43.7–50.3 ms; with glibc's own huge-page tunable,
/// `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, 255 faults and 35.7–39.2 ms). A program cannot
/// set glibc's tunables for itself (they are read from the environment at start-up), so the
/// large blocks are mapped here, with `madvise(MADV_HUGEPAGE)`: the kernel then backs each
/// aligned 2 MiB of a block by one huge page on first touch, whatever the system's default
/// (`madvise` mode is the usual one). Blocks freed are kept (up to [`KEPT_BYTES`]) and handed
/// out again to requests they fit, as glibc's heaps were asked to do above.
///
/// Not done, measured: huge pages for the evaluation threads' own glibc heaps (where their
/// blocks under a MiB live). Advising each thread's heap and keeping its first 2 MiB unused
/// cut a default-tolerance run from 1,150 page faults to 263 and, run back to back, its wall
/// time by 5–11%; but after a few idle seconds it made the run 1.2–1.7× slower (σ 0.8,
/// q 0.004, 10⁵ steps, alternated runs 3 s and 8 s apart: medians 24.8 against 17.1 ms and
/// 38.0 against 21.9 ms). On a virtual machine that hands freed memory back to its host
/// (the test machine's balloon reports free pages), a fresh huge page is memory the host
/// must supply again, and each thread's heap used only part of its huge pages. The large
/// blocks fill theirs; without their advice that run took 1.08× as long back to back, 0.83
/// and 0.93× as long 3 s apart, and 1.00× 8 s apart: kept, but worth measuring again.
#[cfg(target_os = "linux")]
pub struct LargeBlocks;

/// Requests of this many bytes or more get a mapping of their own.
#[cfg(target_os = "linux")]
const LARGE_BLOCK: usize = 1 << 20;

/// Mappings are whole multiples of a huge page.
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

/// Bytes of freed large blocks kept for reuse; beyond it they are unmapped.
#[cfg(target_os = "linux")]
const KEPT_BYTES: usize = 512 << 20;

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
        let needed = layout.size().div_ceil(HUGE_PAGE) * HUGE_PAGE;
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
        // SAFETY: advice on the mapping just made; a refusal (no THP support) is harmless.
        unsafe {
            libc::madvise(address, needed, libc::MADV_HUGEPAGE);
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
            Some(index) if table.kept_bytes + length <= KEPT_BYTES => {
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
