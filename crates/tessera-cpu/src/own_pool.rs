//! The pool a pooled run uses: the calling thread's own, in which that thread is worker 0.
//!
//! tract's parallel ops (its matrix products, packing, element-wise ops over rows) hand their
//! tiles to the pool with rayon's `install`. From a thread outside the pool the caller sleeps
//! while the workers run, two wake-ups per op, and on two cores the idle workers, still
//! spinning, competed with the caller between ops (ppocrv4_rec QDQ at 2 threads, AMD EPYC: 22 ms
//! pooled against 21 on one thread, 13% of the time in task switching). From a worker of the
//! pool, `install` runs in place and the caller takes its share of the tiles, as onnxruntime's
//! caller does in its pool. Runs stay on the caller's thread: running them on a pool thread
//! instead (worker 0 of a session's pool) cost a thread hop per run (ppocr_mobile_cls: +60 µs)
//! and raised peak memory (ppocrv4_det 140 -> 163-181 MB: two threads' allocator arenas).
//!
//! A thread can be a worker of one pool only, so the pool belongs to the thread, not the
//! session: sessions of the same thread count share it, runs from one thread never overlap, and
//! it ends with the thread. Where a thread cannot have one (it is a worker of another pool
//! already) or has one of another size, sessions use a pool of their own, from outside
//! ([`crate::parallel`] then has the caller take tasks beside the pool's workers).

use crate::awake_helpers::Crew;
use std::cell::RefCell;
use std::sync::Arc;
use tract_linalg::multithread::Executor;

/// A thread's own pool and the helpers its runs keep awake.
struct OwnPool {
    pool: Arc<rayon::ThreadPool>,
    crew: Arc<Crew>,
}

thread_local! {
    /// This thread's pool once built (`Err`: this thread cannot have one).
    static OWN_POOL: RefCell<Option<Result<OwnPool, ()>>> = const { RefCell::new(None) };
}

/// Multiply-accumulates from which tract splits a matrix product of few panels over the pool:
/// a classifier's matrix-vector product (2048 × 1000 in ResNet-50, 1024 × 1000 in Inception).
/// tract's default (2^21) pays for rayon's wake-ups; with this pool's helpers awake a split
/// starts within a microsecond, and ResNet-50's product took 0.38 ms at 2 threads against 0.25
/// split (onnxruntime: 0.20; Xeon, docs/benchmarks.md). A process-wide setting of tract-linalg.
const FEW_PANEL_SPLIT_MACS: usize = 1 << 17;

/// This thread's own pool of `threads` workers, this thread included; built on first use.
/// `None` when this thread cannot have one or has one of another size.
pub fn of_this_thread(threads: usize) -> Option<Executor> {
    OWN_POOL.with_borrow_mut(|own| {
        let own = own.get_or_insert_with(|| {
            tract_linalg::multithread::set_threading_mac_threshold(FEW_PANEL_SPLIT_MACS);
            builder(threads)
                .use_current_thread()
                .build()
                .map(|pool| OwnPool {
                    pool: Arc::new(pool),
                    crew: Arc::default(),
                })
                .map_err(drop)
        });
        match own {
            Ok(own) if own.pool.current_num_threads() == threads => {
                Some(Executor::MultiThread(own.pool.clone()))
            }
            _ => None,
        }
    })
}

/// Runs `run` with this thread's pool's other workers kept awake for it
/// ([`crate::awake_helpers`]) when the run's executor is that pool; else just runs it.
pub fn during_run<R>(run: impl FnOnce() -> R) -> R {
    let own = OWN_POOL.with_borrow(|own| match own {
        Some(Ok(own)) => Some((own.pool.clone(), own.crew.clone())),
        _ => None,
    });
    match own {
        Some((pool, crew)) => crew.during_run(&pool, run),
        None => run(),
    }
}

/// A pool of `threads` workers of its own for a session, used from outside
/// ([`crate::parallel`]); the reason when the OS refuses its threads.
pub fn of_session(threads: usize) -> Result<Executor, String> {
    builder(threads)
        .build()
        .map(|pool| Executor::MultiThread(Arc::new(pool)))
        .map_err(|e| e.to_string())
}

fn builder(threads: usize) -> rayon::ThreadPoolBuilder {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("tessera-cpu-{i}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool_of(executor: Option<Executor>) -> Option<Arc<rayon::ThreadPool>> {
        match executor? {
            Executor::MultiThread(pool) => Some(pool),
            _ => None,
        }
    }

    #[test]
    fn a_thread_s_pool_has_it_as_worker_0_and_one_size() {
        std::thread::spawn(|| {
            let pool = pool_of(of_this_thread(2)).expect("a pool for a fresh thread");
            assert_eq!(pool.current_num_threads(), 2);
            assert_eq!(pool.current_thread_index(), Some(0));
            // `install` runs in place on this thread instead of waiting for a worker.
            let here = std::thread::current().id();
            assert_eq!(pool.install(|| std::thread::current().id()), here);
            let again = pool_of(of_this_thread(2)).expect("the same pool");
            assert!(Arc::ptr_eq(&pool, &again));
            assert!(
                of_this_thread(3).is_none(),
                "a thread has one pool, of one size"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn with_a_pool_tract_splits_a_classifier_s_matrix_vector_product() {
        std::thread::spawn(|| {
            assert!(of_this_thread(2).is_some());
            // Inception's last product, 1024 × 1000: under tract's default of 2^21.
            let threshold = tract_linalg::multithread::current_threading_mac_threshold();
            assert!(threshold <= 1024 * 1000, "{threshold}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_worker_of_another_pool_has_none() {
        let other = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert!(other.install(|| of_this_thread(2)).is_none());
    }
}
