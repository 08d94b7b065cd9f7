//! How the process allocates and frees memory: glibc's heaps keep what is freed
//! ([`keep_freed_memory`]), blocks of a MiB or more live on transparent huge pages
//! ([`LargeBlocks`], the CLI's global allocator), and so do the heaps glibc makes for the
//! evaluation threads ([`thread_heap_on_huge_pages`]).
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
        let ptr = unsafe { std::alloc::System.alloc(layout) };
        thread_heap_on_huge_pages(ptr);
        ptr
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
        let ptr = unsafe { std::alloc::System.alloc_zeroed(layout) };
        thread_heap_on_huge_pages(ptr);
        ptr
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

/// glibc's heaps for threads other than the main one: each is a mapping of this many bytes,
/// aligned to this many bytes (glibc's `HEAP_MAX_SIZE` on 64-bit targets; with
/// [`keep_freed_memory`]'s padding, the whole of it is made writable when the heap is made).
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
const THREAD_HEAP: usize = 64 << 20;

/// How many of a thread's first blocks are looked at for one from its own heap before
/// giving up (its first few may still come from the main heap).
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
const THREAD_HEAP_CHECKS: u32 = 64;

#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
thread_local! {
    /// Blocks of this thread looked at so far; [`THREAD_HEAP_CHECKS`] once done.
    static HEAP_CHECKS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Put the heap glibc made for this thread on transparent huge pages, once per thread, given
/// a block glibc has just returned on it (`ptr`).
///
/// Why: the evaluation threads take their grids of less than a MiB (most of a default-tolerance
/// query's memory) from heaps glibc makes for them, one per thread. With 4 KiB pages that was
/// about 850 of the 1,150 page faults of a whole `pld` run (σ 0.8, q 0.004, 10⁵ steps;
/// `perf stat`), about 10% of its wall time. glibc's own huge-page tunable
/// (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, read only at start-up) advises those heaps when
/// it makes them; a program cannot set it for itself, so this does the same from outside:
/// - a block's chunk header says whether it lies on a thread's heap (glibc's
///   `NON_MAIN_ARENA` bit) and not on a mapping of its own (`IS_MMAPPED`); that heap starts at
///   the block's address rounded down to [`THREAD_HEAP`], which is how glibc finds it too;
/// - `madvise(MADV_HUGEPAGE)` on the heap: the kernel then backs each aligned 2 MiB of it by
///   one huge page when first touched;
/// - except the first 2 MiB, which glibc has already touched (its own records sit at the
///   start): a huge page can no longer be placed there. One block filling the rest of it is
///   taken and never freed, so that the thread's blocks come from the huge pages after it. It
///   costs address space, not memory: its pages are never touched.
///
/// Advice only: if glibc's layout were ever different, the kernel would be asked to use huge
/// pages for some other anonymous memory of this process, which changes no value.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
fn thread_heap_on_huge_pages(ptr: *mut u8) {
    /// glibc's chunk header bits (`malloc/malloc.c`).
    const IS_MMAPPED: usize = 0x2;
    const NON_MAIN_ARENA: usize = 0x4;
    const HUGE_PAGE: usize = 2 << 20;
    let looked_at = HEAP_CHECKS
        .try_with(|checks| {
            let n = checks.get();
            checks.set((n + 1).min(THREAD_HEAP_CHECKS));
            n
        })
        .unwrap_or(THREAD_HEAP_CHECKS);
    if ptr.is_null() || looked_at >= THREAD_HEAP_CHECKS {
        return;
    }
    // SAFETY: the word before a block glibc returned is its chunk's size field, part of the
    // same chunk.
    // (Volatile: the compiler must not reason about memory outside the block it was given.)
    let size_field = unsafe { ptr.cast::<usize>().sub(1).read_volatile() };
    if size_field & (IS_MMAPPED | NON_MAIN_ARENA) != NON_MAIN_ARENA {
        return;
    }
    let _ = HEAP_CHECKS.try_with(|checks| checks.set(THREAD_HEAP_CHECKS));
    let heap = ptr as usize & !(THREAD_HEAP - 1);
    // SAFETY: advice on the heap's own address range (a refusal is harmless), and a block
    // from glibc that is deliberately never freed.
    unsafe {
        libc::madvise(heap as *mut libc::c_void, THREAD_HEAP, libc::MADV_HUGEPAGE);
        // From the heap's free space (which starts past `ptr`) to at least the first huge
        // page's end.
        let spacer = (heap + HUGE_PAGE).saturating_sub(ptr as usize);
        if spacer > 0 {
            // `black_box`: an unused allocation would otherwise be optimized away.
            std::hint::black_box(libc::malloc(spacer));
        }
    }
}

#[cfg(all(
    target_os = "linux",
    not(all(target_env = "gnu", target_pointer_width = "64"))
))]
fn thread_heap_on_huge_pages(_ptr: *mut u8) {}

#[cfg(all(
    test,
    target_os = "linux",
    target_env = "gnu",
    target_pointer_width = "64"
))]
mod tests {
    use super::*;

    /// The `VmFlags` line of the mapping of this process that holds `address`.
    fn vm_flags(address: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((start, end)) = range.split_once('-') {
                    if let (Ok(start), Ok(end)) = (
                        usize::from_str_radix(start, 16),
                        usize::from_str_radix(end, 16),
                    ) {
                        inside = (start..end).contains(&address);
                        continue;
                    }
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.to_string();
                }
            }
        }
        panic!("no mapping holds {address:#x}");
    }

    fn has_huge_page_advice(address: usize) -> bool {
        vm_flags(address)
            .split_whitespace()
            .any(|flag| flag == "hg")
    }

    /// Kernels without transparent huge pages refuse the advice: nothing to check there.
    fn kernel_has_huge_pages() -> bool {
        std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists()
    }

    #[test]
    fn a_new_threads_heap_is_on_huge_pages_past_its_first() {
        if !kernel_has_huge_pages() {
            eprintln!("skipped: this kernel has no transparent huge pages");
            return;
        }
        keep_freed_memory();
        let (block, size_field, advised) = std::thread::spawn(|| {
            // The thread's first blocks (through this allocator) set its heap up.
            let warm: Vec<Vec<u8>> = (0..4).map(|_| vec![1_u8; 100]).collect();
            // SAFETY: a glibc block, its header word read, then freed.
            unsafe {
                let block = std::hint::black_box(libc::malloc(200 << 10)).cast::<usize>();
                assert!(!block.is_null());
                let size_field = block.sub(1).read_volatile();
                let advised = has_huge_page_advice(block as usize);
                libc::free(block.cast());
                drop(warm);
                (block as usize, size_field, advised)
            }
        })
        .join()
        .expect("thread");
        assert_eq!(size_field & 0x6, 0x4, "a block of the thread's own heap");
        assert!(advised, "the thread's heap is advised: {}", vm_flags(block));
        let offset = block % THREAD_HEAP;
        assert!(
            offset >= 2 << 20,
            "the block lies past the heap's first huge page (offset {offset:#x})"
        );
    }

    #[test]
    fn large_blocks_are_on_huge_pages() {
        if !kernel_has_huge_pages() {
            eprintln!("skipped: this kernel has no transparent huge pages");
            return;
        }
        let block = vec![3_u8; 4 << 20];
        assert!(has_huge_page_advice(block.as_ptr() as usize));
        assert_eq!(block.as_ptr() as usize % HUGE_PAGE, 0, "whole huge pages");
        assert!(block.iter().all(|&b| b == 3));
    }
}
