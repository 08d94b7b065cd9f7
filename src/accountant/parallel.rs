//! A small pool of scoped threads for the independent PMFs of one evaluation.

use crate::error::{Error, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Most threads one evaluation uses (each holds its own FFT buffers).
pub(super) const MAX_THREADS: usize = 4;

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
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS)
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(guarded).collect();
    }
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
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
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
}
