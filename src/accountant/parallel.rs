//! A small pool of threads, kept for the process, for the independent PMFs of one evaluation.
//!
//! Inside one PMF, the long transforms offer pieces of their work to the pool's idle threads
//! (`numeric::pieces`); [`serially`] keeps a whole evaluation on one thread beside a long
//! computation on the other, which then takes its share of that computation's pieces.

use crate::error::{Error, Result};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Most threads one evaluation uses (each holds its own FFT buffers).
pub(super) const MAX_THREADS: usize = 4;

/// The evaluation threads: one pool for the process, its threads started by [`warm_up`] (or
/// the first [`parallel_map`]) and then kept, asleep between evaluations.
///
/// Why not fresh threads per evaluation: on the 2-vCPU test machines a thread spawned at the
/// moment the work starts was mostly placed on its parent's CPU and the two time-shared it
/// for milliseconds (two 4.1 ms loops took 6.3–10.4 ms together, median ≈ 10), while a thread
/// spawned earlier and woken for the work ran beside it (4.2–4.3 ms in most runs).
static POOL: OnceLock<Option<Pool>> = OnceLock::new();

/// The pool and the process that started it.
struct Pool {
    owner: u32,
    threads: rayon::ThreadPool,
}

/// The pool, built on first use: `None` when one thread is all the machine has, when the
/// threads cannot be started, or in a process forked from the one that started them (a fork
/// copies the pool's state but not its threads: work handed to it would wait forever, e.g.
/// in Python's `multiprocessing` with the "fork" start method); the work then runs on the
/// caller's thread.
fn pool() -> Option<&'static rayon::ThreadPool> {
    let pool = POOL
        .get_or_init(|| {
            let threads = std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .clamp(1, MAX_THREADS);
            if threads <= 1 {
                return None;
            }
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("pld-eval-{i}"))
                .build()
                .ok()
                .map(|threads| Pool {
                    owner: std::process::id(),
                    threads,
                })
        })
        .as_ref()?;
    (pool.owner == std::process::id()).then_some(&pool.threads)
}

/// Start the evaluation threads now, so that they are settled (and asleep) by the time the
/// first evaluation needs them. Cheap after the first call.
pub(crate) fn warm_up() {
    let _ = pool();
}

/// `a` and `b` at once on the pool's threads (each may call [`parallel_map`] itself), or one
/// after the other on the caller's thread when there is no pool or inside [`serially`].
pub(super) fn join<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    match pool() {
        Some(pool) if !SERIAL.with(Cell::get) => pool.install(|| rayon::join(a, b)),
        _ => (a(), b()),
    }
}

/// `f` on one of the pool's threads, so that the pieces it cuts its work into
/// (`numeric::pieces`) are shared by every thread of the pool; on the caller's thread when
/// there is no pool or inside [`serially`].
pub(super) fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) if !SERIAL.with(Cell::get) => pool.install(f),
        _ => f(),
    }
}

thread_local! {
    /// Set while [`serially`] runs: [`parallel_map`] then keeps its items on this thread.
    static SERIAL: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` with every [`parallel_map`] and [`join`] inside it (on this thread) taking its
/// items one after the other here, handing none to the pool; the long transforms inside still
/// offer their pieces to idle threads (`numeric::complex_fft`).
///
/// Why: beside a long computation on the other thread (the finer upper grid, see
/// [`join`]), an item handed to the pool sits in this thread's queue, and the other thread,
/// idle for a moment while it waits for a piece of one of its transforms, would take that
/// whole item (milliseconds) before going on with its own work: the long computation
/// would wait for it.
pub(super) fn serially<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SERIAL.with(|serial| serial.set(self.0));
        }
    }
    let _restore = Restore(SERIAL.with(|serial| serial.replace(true)));
    f()
}

/// `f` applied to every item, in order, by up to [`MAX_THREADS`] threads (no more than the
/// machine's parallelism). Threads take the items in order, so putting the costliest first
/// balances the load. A panicking item becomes an error for that item instead of a panic.
pub(super) fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Vec<Result<R>> {
    let guarded = |item: &T| -> Result<R> {
        catch_unwind(AssertUnwindSafe(|| f(item))).unwrap_or_else(|_| {
            Err(Error::IncompatibleDistributions {
                reason: "a PMF computation panicked".into(),
            })
        })
    };
    let pool = match pool() {
        Some(pool) if !SERIAL.with(Cell::get) => pool,
        _ => return items.iter().map(guarded).collect(),
    };
    // One item: on a thread of the pool all the same, so that the pieces of its long
    // transforms (`numeric::pieces`) are shared by every thread rather than computed one after
    // the other on the caller's (a grid's own lower bound computed alone, see
    // `Accountant::evaluate`).
    if let [item] = items {
        return vec![pool.install(|| guarded(item))];
    }
    let threads = pool.current_num_threads().min(items.len());
    let slots: Vec<Mutex<Option<Result<R>>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(i) else { break };
        let result = guarded(item);
        if let Ok(mut slot) = slots[i].lock() {
            *slot = Some(result);
        }
    };
    pool.scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|_| work());
        }
        work();
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner().ok().flatten().unwrap_or_else(|| {
                Err(Error::IncompatibleDistributions {
                    reason: "a PMF computation did not complete".into(),
                })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order_and_panics_become_errors() {
        let items: Vec<u64> = (0..50).collect();
        let results = parallel_map(&items, |&i| {
            if i == 7 {
                panic!("item 7");
            }
            Ok(i * i)
        });
        for (i, r) in results.iter().enumerate() {
            match r {
                Ok(v) => assert_eq!(*v, (i * i) as u64),
                Err(_) => assert_eq!(i, 7),
            }
        }
        assert!(results[7].is_err());
    }

    /// A single item runs on a thread of the pool when there is one (where the pieces of its
    /// transforms reach the other threads), and on the caller's thread inside `serially`.
    #[test]
    fn a_single_item_runs_on_the_pool() {
        let on_pool = |_: &()| Ok(rayon::current_thread_index().is_some());
        let results = parallel_map(&[()], on_pool);
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].clone().ok(), Some(pool().is_some()));
        let kept = serially(|| parallel_map(&[()], on_pool));
        assert_eq!(kept[0].clone().ok(), Some(false));
        // A panic in the one item is still an error, not a panic.
        let failed = parallel_map(&[()], |_: &()| -> Result<()> { panic!("the one item") });
        assert!(failed[0].is_err());
    }
}
