//! The parallel loops of Tessera's cpu ops, on the run's thread pool (tract's executor), with the
//! calling thread taking its share of the tasks.
//!
//! A plan runs op after op on the calling thread, normally worker 0 of its own pool
//! ([`crate::own_pool`]): there rayon's work stealing splits the tasks (equal or faster than the
//! shared counter below at 2 threads on squeezenet, densenet121, mtcnn_pnet and shufflenet).
//! From a thread outside the pool, handing each op's tasks to the pool and sleeping until they
//! are done (rayon's `install`) costs two wake-ups per op, a worker's and then the caller's: on
//! models of hundreds of small ops the pool then barely beat one thread (densenet121 at 2
//! threads, AMD EPYC: 25.2 ms against 39 on one). There the caller takes tasks from a shared
//! counter beside helper jobs on the pool, as onnxruntime's thread pool has its caller do, and
//! never sleeps; a helper that wakes late finds the tasks taken.

use std::cell::RefCell;
use tessera_core::tract_onnx::prelude::*;
#[cfg(pooled)]
use tract_linalg::multithread::{Executor, current_tract_executor};

/// Threads of the run's pool (tract's executor): 1 when the run is single-threaded.
pub fn threads() -> usize {
    #[cfg(pooled)]
    match current_tract_executor() {
        Executor::MultiThread(pool) => return pool.current_num_threads(),
        Executor::RayonGlobal => return rayon::current_num_threads(),
        _ => {}
    }
    1
}

thread_local! {
    /// Each thread's scratch (im2col tiles), kept between runs so that no run allocates one.
    static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    SCRATCH.with_borrow_mut(|scratch| {
        if scratch.len() < len {
            scratch.resize(len, 0.0);
        }
        f(&mut scratch[..len])
    })
}

/// Runs `task(scratch, i)` for `i` in `0..tasks` on the run's pool and the calling thread, each
/// with a scratch buffer of `scratch_len` floats (contents left from earlier tasks). The first
/// error stops the handing out of tasks and is returned.
pub fn for_each(
    tasks: usize,
    scratch_len: usize,
    task: impl Fn(&mut [f32], usize) -> TractResult<()> + Sync + Send,
) -> TractResult<()> {
    for_each_dyn(tasks, &|i: usize| {
        with_scratch(scratch_len, |scratch| task(scratch, i))
    })
}

/// [`for_each`]'s loop over one task behind a reference (called once per task): rayon's
/// machinery is compiled once, not once per calling op (0.13 MB of an arm64 binary).
fn for_each_dyn(tasks: usize, one: &(dyn Fn(usize) -> TractResult<()> + Sync)) -> TractResult<()> {
    #[cfg(pooled)]
    if tasks > 1 {
        use rayon::prelude::*;
        match current_tract_executor() {
            // Already on one of the pool's workers: rayon's own splitting.
            Executor::MultiThread(pool)
                if pool.current_num_threads() > 1 && pool.current_thread_index().is_some() =>
            {
                if let Some(crew) = crate::awake_helpers::Crew::active() {
                    return crew.share(tasks, one);
                }
                return (0..tasks).into_par_iter().try_for_each(one);
            }
            Executor::MultiThread(pool) if pool.current_num_threads() > 1 => {
                return shared_with_caller(&pool, tasks, one);
            }
            Executor::RayonGlobal => {
                if let Some(crew) = crate::awake_helpers::Crew::active() {
                    return crew.share(tasks, one);
                }
                return (0..tasks).into_par_iter().try_for_each(one);
            }
            _ => {}
        }
    }
    (0..tasks).try_for_each(one)
}

/// The tasks taken from one counter by the calling thread and `threads - 1` helper jobs on the
/// pool; returns once every task has run. The caller never sleeps: it takes tasks until none are
/// left, then waits only for tasks a helper is still running. A helper that starts late finds
/// nothing left and ends without anyone waiting for it (its job holds the shared counter, not
/// the tasks).
#[cfg(pooled)]
fn shared_with_caller(
    pool: &rayon::ThreadPool,
    tasks: usize,
    one: &(dyn Fn(usize) -> TractResult<()> + Sync),
) -> TractResult<()> {
    Shared::hand_out(tasks, one, |shared| {
        let helpers = (pool.current_num_threads() - 1).min(tasks - 1);
        for _ in 0..helpers {
            let shared = shared.clone();
            pool.spawn(move || shared.work());
        }
    })
}

/// A task of a parallel loop, its borrow erased ([`Shared::hand_out`] says why that is sound).
#[cfg(pooled)]
type ErasedTask = &'static (dyn Fn(usize) -> TractResult<()> + Sync);

/// The state the caller and its helpers share for one [`for_each`].
#[cfg(pooled)]
pub struct Shared {
    task: ErasedTask,
    tasks: usize,
    next: std::sync::atomic::AtomicUsize,
    finished: std::sync::atomic::AtomicUsize,
    failed: std::sync::atomic::AtomicBool,
    error: std::sync::Mutex<Option<TractError>>,
    panic: std::sync::Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

#[cfg(pooled)]
impl Shared {
    /// Runs `task(i)` for `i` in `0..tasks` on the calling thread and on whichever helpers
    /// `hand_out` gives the shared state to; returns once every task has run, with the first
    /// error. The caller never sleeps: it takes tasks until none are left, then waits only for
    /// tasks a helper is still running. A helper may hold the state longer and then finds no
    /// task left.
    pub fn hand_out(
        tasks: usize,
        task: &(dyn Fn(usize) -> TractResult<()> + Sync),
        hand_out: impl FnOnce(&std::sync::Arc<Shared>),
    ) -> TractResult<()> {
        // SAFETY: `task` is called only for an index taken below `tasks` (`work`), and this
        // returns only once `finished` counts all `tasks` of them: no call to `task` can start
        // or still be running after the borrow it erases ends.
        let task: ErasedTask = unsafe { std::mem::transmute(task) };
        let shared = std::sync::Arc::new(Shared::new(task, tasks));
        hand_out(&shared);
        shared.work();
        shared.wait_for_all();
        shared.outcome()
    }

    fn new(task: ErasedTask, tasks: usize) -> Shared {
        Shared {
            task,
            tasks,
            next: 0.into(),
            finished: 0.into(),
            failed: false.into(),
            error: Default::default(),
            panic: Default::default(),
        }
    }

    /// Takes tasks until none are left. After a failure the remaining tasks are taken but not
    /// run, so that every task is counted as finished.
    pub fn work(&self) {
        use std::sync::PoisonError;
        use std::sync::atomic::Ordering;
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.tasks {
                return;
            }
            if !self.failed.load(Ordering::Relaxed) {
                // A last net, not error handling: tasks return errors for bad sizes and never
                // panic by design. Should one panic anyway, it is carried to the caller and
                // resumed there, as rayon's own joins do (uncaught here, rayon would abort the
                // process and the caller would wait forever); the suites count every panic and
                // fail the case. Not built for wasm, which runs tasks on one thread.
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.task)(i))) {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => {
                        self.failed.store(true, Ordering::Relaxed);
                        let mut first = self.error.lock().unwrap_or_else(PoisonError::into_inner);
                        first.get_or_insert(error);
                    }
                    Err(payload) => {
                        self.failed.store(true, Ordering::Relaxed);
                        let mut first = self.panic.lock().unwrap_or_else(PoisonError::into_inner);
                        first.get_or_insert(payload);
                    }
                }
            }
            self.finished.fetch_add(1, Ordering::Release);
        }
    }

    /// Waits, without sleeping, until every task has run (helpers may still be running some).
    fn wait_for_all(&self) {
        use std::sync::atomic::Ordering;
        let mut spins = 0u32;
        while self.finished.load(Ordering::Acquire) < self.tasks {
            if spins < 1 << 12 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }

    fn outcome(&self) -> TractResult<()> {
        use std::sync::PoisonError;
        if let Some(payload) = self
            .panic
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            std::panic::resume_unwind(payload);
        }
        match self
            .error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// `out`, viewed as rows of `row_len` elements, in blocks of whole rows handed to `f(first_row,
/// block)` as [`for_each`]'s tasks (four per thread); inline when the work (`total_elems`) is
/// under tract's threshold for splitting or the run has one thread.
pub fn par_chunks_mut<T: Send>(
    out: &mut [T],
    row_len: usize,
    total_elems: usize,
    f: impl Fn(usize, &mut [T]) -> TractResult<()> + Sync + Send,
) -> TractResult<()> {
    let rows = out.len() / row_len.max(1);
    let threads = threads();
    #[cfg(pooled)]
    let small = total_elems < tract_linalg::multithread::current_threading_element_threshold();
    #[cfg(not(pooled))]
    let small = total_elems == 0;
    if threads <= 1 || rows < 2 || small {
        return f(0, out);
    }
    let block_rows = rows.div_ceil((4 * threads).min(rows));
    let blocks = rows.div_ceil(block_rows);
    let len = out.len();
    let base = SharedSlice(out.as_mut_ptr());
    for_each(blocks, 0, |_, block| {
        let first_row = block * block_rows;
        let start = first_row * row_len;
        let end = (start + block_rows * row_len).min(len);
        // SAFETY: blocks are disjoint ranges of whole rows inside `out`, one per task.
        let block = unsafe { std::slice::from_raw_parts_mut(base.at(start), end - start) };
        f(first_row, block)
    })
}

/// A slice written by tasks at disjoint places.
struct SharedSlice<T>(*mut T);
// SAFETY: tasks write disjoint elements and the slice outlives the parallel loop.
unsafe impl<T: Send> Sync for SharedSlice<T> {}
unsafe impl<T: Send> Send for SharedSlice<T> {}

impl<T> SharedSlice<T> {
    /// SAFETY: `offset` must lie inside the slice.
    unsafe fn at(&self, offset: usize) -> *mut T {
        unsafe { self.0.add(offset) }
    }
}

/// Into how many parts to split each of `tasks` equal tasks so that the run's threads get equal
/// shares: none when the tasks divide among the threads evenly, or are so many that the last
/// round's idle time is small; else one part per thread (3 tiles on 2 threads kept one thread
/// idle a third of the time).
#[cfg_attr(target_family = "wasm", allow(dead_code))]
pub fn parts_for_balance(tasks: usize) -> usize {
    let threads = threads();
    if threads <= 1 || tasks.is_multiple_of(threads) || tasks >= 8 * threads {
        1
    } else {
        threads
    }
}

/// Splits `len` into at most `parts` blocks of at least `min` (a multiple of 16 where it can):
/// (block length, block count); the gemm ops' (not built for wasm).
#[cfg_attr(target_family = "wasm", allow(dead_code))]
pub fn blocks(len: usize, parts: usize, min: usize) -> (usize, usize) {
    let parts = parts.min(len / min.max(1)).max(1);
    let block = len.div_ceil(parts).next_multiple_of(16).min(len).max(1);
    (block, len.div_ceil(block))
}

#[cfg(all(test, not(target_family = "wasm")))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tessera_core::tract_onnx::tract_core::internal::bail;
    use tract_linalg::multithread::multithread_tract_scope;

    #[test]
    fn every_task_runs_once_and_the_first_error_is_returned() {
        for threads in [1, 2, 3] {
            multithread_tract_scope(Executor::multithread(threads), || {
                let counts: Vec<AtomicUsize> = (0..37).map(|_| AtomicUsize::new(0)).collect();
                for_each(counts.len(), 8, |scratch, i| {
                    assert_eq!(scratch.len(), 8);
                    counts[i].fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
                .unwrap();
                assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
                let error = for_each(20, 0, |_, i| {
                    if i == 5 {
                        bail!("task {i} failed")
                    } else {
                        Ok(())
                    }
                });
                assert_eq!(error.unwrap_err().to_string(), "task 5 failed");
            });
        }
    }

    #[test]
    fn a_panicking_task_panics_the_caller() {
        multithread_tract_scope(Executor::multithread(2), || {
            let caught = std::panic::catch_unwind(|| {
                for_each(64, 0, |_, i| {
                    assert!(i != 40, "task {i}");
                    Ok(())
                })
            });
            assert!(caught.is_err());
            // The pool still runs work afterwards.
            assert!(for_each(8, 0, |_, _| Ok(())).is_ok());
        });
    }

    #[test]
    fn blocks_of_rows_cover_the_slice_once() {
        for threads in [1, 2] {
            multithread_tract_scope(Executor::multithread(threads), || {
                let mut out = vec![0usize; 7 * 1000];
                par_chunks_mut(&mut out, 7, 1 << 20, |first_row, block| {
                    for (i, v) in block.iter_mut().enumerate() {
                        *v += first_row * 7 + i + 1;
                    }
                    Ok(())
                })
                .unwrap();
                assert!(out.iter().enumerate().all(|(i, v)| *v == i + 1));
            });
        }
    }
}
