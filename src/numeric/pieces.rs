//! Work cut into pieces that idle threads may take: the passes of a long transform and the
//! recomputed bins of an FFT power.
//!
//! Why: an ε query computes its finer upper grid on one evaluation thread while the other
//! evaluates a coarser grid (`accountant::parallel`); the coarser grid is done first, and
//! the rest of the long power would leave that thread idle for milliseconds. Pieces handed
//! to the rayon pool of the calling thread are taken by whichever of its threads is free.
//!
//! Every piece does exactly the arithmetic the uncut loop would do on its own entries, and
//! the pieces are fixed by the sizes alone (never by the number of threads), so results are
//! the same bit for bit however the pieces are shared, on one thread or several.

/// Run `work` on every piece: on the calling thread and any idle thread of its rayon pool
/// when called from one (an evaluation thread), else one after the other here. The pieces
/// must not depend on each other (each writes its own part of a buffer).
pub(crate) fn spread<T: Send>(pieces: Vec<T>, work: impl Fn(T) + Sync) {
    if pieces.len() > 1 && rayon::current_thread_index().is_some() {
        let work = &work;
        rayon::scope(|scope| {
            for piece in pieces {
                scope.spawn(move |_| work(piece));
            }
        });
    } else {
        pieces.into_iter().for_each(work);
    }
}

/// `work` applied to every piece as by [`spread`], the results in the pieces' order.
pub(crate) fn spread_map<T: Send, R: Send>(pieces: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(pieces.len()).collect();
    spread(
        pieces.into_iter().zip(results.iter_mut()).collect(),
        |(piece, slot): (T, &mut Option<R>)| *slot = Some(work(piece)),
    );
    results
        .into_iter()
        .map(|result| result.expect("every piece is computed"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a pool of two threads, as on the caller's thread: every piece once, in order.
    #[test]
    fn pieces_are_computed_once_and_returned_in_order() {
        let expected: Vec<u64> = (0..40u64).map(|i| i * i + 1).collect();
        let direct = spread_map((0..40u64).collect(), |i| i * i + 1);
        assert_eq!(direct, expected);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool of two threads");
        let pooled = pool.install(|| spread_map((0..40u64).collect(), |i| i * i + 1));
        assert_eq!(pooled, expected);
        let mut written = vec![0u64; 40];
        pool.install(|| {
            spread(written.chunks_mut(7).enumerate().collect(), |(c, chunk)| {
                for (i, v) in chunk.iter_mut().enumerate() {
                    *v = (c * 7 + i) as u64 + 1;
                }
            })
        });
        assert_eq!(written, (1..=40u64).collect::<Vec<_>>());
    }
}
