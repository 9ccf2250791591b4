//! The other workers of a thread's own pool ([`crate::own_pool`]) kept awake while its runs last,
//! taking the tasks of each parallel loop ([`crate::parallel::for_each`]) as soon as it starts.
//!
//! An idle rayon worker yields a few dozen times and then sleeps; the next op's tasks wake it
//! with a futex call and, on a VM, an interrupt to another vCPU. A plan runs hundreds of parallel
//! ops, most shorter than a millisecond, with serial ops between them, so the workers often slept
//! between them: Inception-v2 at 2 threads (Xeon, 2 vCPUs) ran at 0.89× its 1-thread time, its
//! caller's futex wake-ups 3.5% of the samples (0.67× with the helpers kept awake,
//! docs/benchmarks.md). onnxruntime's pool spins its idle workers by default
//! (`session.intra_op.allow_spinning`); so do these, while a run lasts. When a run starts, each
//! worker without a helper is sent one (rayon's broadcast: only that worker runs it). A helper
//! spins until the run ends and [`GRACE`] after it (back-to-back runs keep it), taking each
//! published loop's tasks and, between loops, rayon's own pending jobs (tract's parallel
//! kernels). Idle for a while, it lets other threads on its core run between its looks, so that
//! more threads than cores do not starve the caller (4 threads on these 2 cores: as fast as
//! before the helpers; spinning without yielding, 1.4× slower).
//!
//! In the browser's threaded module a run is a job on a worker of rayon's global pool (Web
//! Workers): the other workers of that pool are its helpers ([`during_global_run`]). There a
//! sleeping worker waits in `Atomics.wait` and is woken by a notify, slower still than a futex.

use crate::parallel::Shared;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
// `std::time::Instant` panics in browsers; web-time is std's natively.
use tract_linalg::multithread::{Executor, current_tract_executor};
use web_time::Instant;

/// How long helpers stay awake after a run: covers the gap between back-to-back runs, short
/// enough that an idle session soon frees its cores.
const GRACE: Duration = Duration::from_millis(2);

/// Idle rounds (each a look for work, well under a microsecond) after which a helper lets other
/// threads on its core run between looks.
const ROUNDS_BEFORE_YIELDING: u32 = 1 << 10;

/// The helpers of one thread's own pool.
#[derive(Default)]
pub struct Crew {
    /// Whether a run is in progress on the pool's thread.
    running: AtomicBool,
    /// Helpers awake now.
    awake: AtomicUsize,
    /// Bumped each time a loop is published.
    published: AtomicU64,
    current: Mutex<Option<Arc<Shared>>>,
}

thread_local! {
    /// The crew of the run in progress on this thread, while there is one.
    static ACTIVE: RefCell<Option<Arc<Crew>>> = const { RefCell::new(None) };
    /// Whether this worker is a helper already (a second helper job it picks up ends at once).
    static HELPING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `run` with the other workers of rayon's global pool awake as helpers, when this thread
/// is one of its workers and the run's executor is that pool (the browser's threaded module);
/// else just runs it. Each calling thread has its crew, so that runs on two workers at once
/// keep their loops apart.
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
pub fn during_global_run<R>(run: impl FnOnce() -> R) -> R {
    thread_local! {
        static GLOBAL_CREW: Arc<Crew> = Arc::default();
    }
    let caller = rayon::current_thread_index();
    let ours = matches!(current_tract_executor(), Executor::RayonGlobal)
        && caller.is_some()
        // Not from inside another crew's helper (a run picked up while it looked for jobs).
        && !HELPING.get()
        && rayon::current_num_threads() > 1;
    if !ours {
        return run();
    }
    GLOBAL_CREW.with(|crew| {
        crew.with_helpers(rayon::current_num_threads() - 1, run, |crew| {
            rayon::spawn_broadcast(move |context| {
                if Some(context.index()) != caller {
                    crew.help();
                }
            })
        })
    })
}

impl Crew {
    /// Runs `run` with the pool's other workers awake as helpers, when the run's executor is
    /// `pool` and this thread is its worker 0; else just runs it.
    #[cfg_attr(target_family = "wasm", allow(dead_code))]
    pub fn during_run<R>(
        self: &Arc<Self>,
        pool: &Arc<rayon::ThreadPool>,
        run: impl FnOnce() -> R,
    ) -> R {
        let ours = matches!(current_tract_executor(),
            Executor::MultiThread(current) if Arc::ptr_eq(&current, pool))
            && pool.current_thread_index() == Some(0)
            && pool.current_num_threads() > 1;
        if !ours {
            return run();
        }
        self.with_helpers(pool.current_num_threads() - 1, run, |crew| {
            pool.spawn_broadcast(move |context| {
                if context.index() != 0 {
                    crew.help();
                }
            })
        })
    }

    /// Runs `run` as this crew's run, first sending helpers (`send_helpers`: one job to each of
    /// the `others` workers) unless they are all awake still.
    fn with_helpers<R>(
        self: &Arc<Self>,
        others: usize,
        run: impl FnOnce() -> R,
        send_helpers: impl FnOnce(Arc<Crew>),
    ) -> R {
        /// Ends the run on every exit, unwinding included, so that helpers never spin forever.
        struct Ending<'a>(&'a Crew);
        impl Drop for Ending<'_> {
            fn drop(&mut self) {
                ACTIVE.set(None);
                self.0.running.store(false, Ordering::SeqCst);
            }
        }
        // SeqCst pairs with the helpers' own check on leaving (see `help`): either they see this
        // run, or this sees them gone and sends new ones.
        self.running.store(true, Ordering::SeqCst);
        if self.awake.load(Ordering::SeqCst) < others {
            send_helpers(self.clone());
        }
        ACTIVE.set(Some(self.clone()));
        let _ending = Ending(self);
        run()
    }

    /// The crew of the run in progress on this thread.
    pub fn active() -> Option<Arc<Crew>> {
        ACTIVE.with_borrow(|active| active.clone())
    }

    /// Runs `task(i)` for `i` in `0..tasks` on this thread and the helpers; returns once every
    /// task has run, with the first error.
    pub fn share(
        &self,
        tasks: usize,
        task: &(dyn Fn(usize) -> tessera_core::tract_onnx::prelude::TractResult<()> + Sync),
    ) -> tessera_core::tract_onnx::prelude::TractResult<()> {
        let outcome = Shared::hand_out(tasks, task, |shared| {
            *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(shared.clone());
            self.published.fetch_add(1, Ordering::Release);
        });
        // The loop's state is not needed any more; helpers holding it find no task left.
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
        outcome
    }

    /// A helper: spins while a run lasts and [`GRACE`] after, running the tasks of each loop
    /// published and rayon's pending jobs.
    fn help(&self) {
        if HELPING.get() {
            return;
        }
        HELPING.set(true);
        self.awake.fetch_add(1, Ordering::SeqCst);
        let mut seen = 0;
        let mut idle_since: Option<Instant> = None;
        let mut idle_rounds = 0u32;
        loop {
            let published = self.published.load(Ordering::Acquire);
            if published != seen {
                seen = published;
                let current = self
                    .current
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                if let Some(current) = current {
                    current.work();
                }
                (idle_since, idle_rounds) = (None, 0);
                continue;
            }
            if self.running.load(Ordering::SeqCst) {
                idle_since = None;
                if rayon::yield_now() == Some(rayon::Yield::Executed) {
                    idle_rounds = 0;
                    continue;
                }
            } else if idle_since.get_or_insert_with(Instant::now).elapsed() >= GRACE {
                self.awake.fetch_sub(1, Ordering::SeqCst);
                // A run that started as this helper left may have counted it awake and sent none.
                if !self.running.load(Ordering::SeqCst) {
                    break;
                }
                self.awake.fetch_add(1, Ordering::SeqCst);
            }
            idle_rounds = idle_rounds.saturating_add(1);
            if idle_rounds < ROUNDS_BEFORE_YIELDING {
                std::hint::spin_loop();
            } else {
                // Runnable still, so no wake-up is needed, but a thread sharing this core (more
                // threads asked for than there are cores) gets it.
                std::thread::yield_now();
            }
        }
        HELPING.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use tract_linalg::multithread::multithread_tract_scope;

    /// Runs `body` on a fresh thread that is worker 0 of its own 2-thread pool, with a crew.
    fn on_own_pool(body: impl FnOnce(&Arc<rayon::ThreadPool>, &Arc<Crew>) + Send + 'static) {
        std::thread::spawn(move || {
            let pool = Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(2)
                    .use_current_thread()
                    .build()
                    .unwrap(),
            );
            let crew = Arc::new(Crew::default());
            multithread_tract_scope(Executor::MultiThread(pool.clone()), || body(&pool, &crew));
        })
        .join()
        .unwrap();
    }

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(10), "{what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Three parallel loops of 32 tasks; their sums (496, 528, 560). Records the threads that
    /// ran tasks.
    fn three_loops(threads: &Mutex<HashSet<std::thread::ThreadId>>) -> Vec<usize> {
        (0..3)
            .map(|round| {
                let total = AtomicUsize::new(0);
                crate::parallel::for_each(32, 0, |_, i| {
                    // Long enough tasks that the caller alone cannot take them all.
                    std::thread::sleep(Duration::from_millis(1));
                    threads.lock().unwrap().insert(std::thread::current().id());
                    total.fetch_add(i + round, Ordering::Relaxed);
                    Ok(())
                })
                .unwrap();
                total.into_inner()
            })
            .collect()
    }

    #[test]
    fn a_run_s_loops_are_shared_with_a_helper_that_leaves_after_the_run() {
        on_own_pool(|pool, crew| {
            let threads = Mutex::new(HashSet::new());
            let sums = crew.during_run(pool, || {
                assert!(Crew::active().is_some());
                let sums = three_loops(&threads);
                assert_eq!(crew.awake.load(Ordering::SeqCst), 1, "one helper awake");
                sums
            });
            assert_eq!(sums, [496, 528, 560]);
            assert_eq!(threads.lock().unwrap().len(), 2, "the helper took tasks");
            assert!(Crew::active().is_none());
            wait_until("the helper left after the run", || {
                crew.awake.load(Ordering::SeqCst) == 0
            });
        });
    }

    #[test]
    fn rayon_jobs_and_errors_in_a_run_complete_and_back_to_back_runs_keep_one_helper() {
        use rayon::prelude::*;
        on_own_pool(|pool, crew| {
            for _ in 0..50 {
                let sum: u64 = crew.during_run(pool, || (0..10_000u64).into_par_iter().sum());
                assert_eq!(sum, 49_995_000);
                let error = crew.during_run(pool, || {
                    crate::parallel::for_each(16, 0, |_, i| {
                        if i == 7 {
                            tessera_core::tract_onnx::tract_core::internal::bail!("task {i}")
                        }
                        Ok(())
                    })
                });
                assert_eq!(error.unwrap_err().to_string(), "task 7");
                assert!(crew.awake.load(Ordering::SeqCst) <= 1);
            }
            wait_until("the helper left", || crew.awake.load(Ordering::SeqCst) == 0);
        });
    }

    #[test]
    fn a_run_on_a_worker_of_the_global_pool_has_the_others_as_helpers() {
        // As in the browser's threaded module: the run is a job on one of the global pool's
        // workers, tract's executor that pool. (A 2-worker global pool unless a test built it
        // first; every machine that runs these has at least 2 cores.)
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build_global();
        assert!(
            rayon::current_num_threads() >= 2,
            "a global pool of one worker"
        );
        let threads = Mutex::new(HashSet::new());
        let (sums, crew) = rayon::scope(|_| {
            assert!(rayon::current_thread_index().is_some());
            multithread_tract_scope(Executor::RayonGlobal, || {
                during_global_run(|| {
                    let crew = Crew::active().expect("a crew for the run");
                    (three_loops(&threads), crew)
                })
            })
        });
        assert_eq!(sums, [496, 528, 560]);
        assert!(threads.lock().unwrap().len() >= 2, "a helper took tasks");
        assert!(Crew::active().is_none());
        wait_until("the helpers left after the run", || {
            crew.awake.load(Ordering::SeqCst) == 0
        });
        // Outside the pool, or on another executor, a run has no helpers.
        assert!(during_global_run(|| Crew::active().is_none()));
        rayon::scope(|_| {
            multithread_tract_scope(Executor::SingleThread, || {
                assert!(during_global_run(|| Crew::active().is_none()))
            })
        });
    }

    #[test]
    fn runs_on_another_executor_have_no_helpers() {
        on_own_pool(|pool, crew| {
            multithread_tract_scope(Executor::SingleThread, || {
                crew.during_run(pool, || assert!(Crew::active().is_none()))
            });
            assert_eq!(crew.awake.load(Ordering::SeqCst), 0);
        });
    }
}
