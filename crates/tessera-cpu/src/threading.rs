//! Chooses, per plan, between running on the calling thread and on the session's thread pool.
//!
//! tract's multithreaded executor splits matrix products and large element-wise ops across a
//! rayon pool. On small or branchy models (shufflenet, densenet, mtcnn_pnet) the cost of waking
//! the pool for every op outweighs the split, and two threads ran slower than one. So the first
//! runs of each plan time a block of single-threaded runs, then a block of pooled ones (the
//! results are identical: tract splits work only along whole rows and panels), and the plan keeps
//! the faster mode. Blocks, not alternation, and the pool's block is warmed for a while before it
//! is timed: on the VMs measured, pooled runs reach their speed only after ~100-200 ms of pooled
//! work (SqueezeNet: 20 ms per run at first, then 12 ms; one thread: 20 ms), so a comparison made
//! on the pool's first runs kept one thread on models where two are 40% faster.

use std::time::Duration;

/// Samples taken per mode before deciding, after the plan's cold first run and the pool's warm-up.
/// Each mode is judged by its second-fastest sample: noise on a shared machine only adds time,
/// so the fast runs carry the signal (with 3 samples and their median, two slowed runs of the
/// pool kept one thread on magika, where the pool is 1.5× faster), and not the very fastest, so
/// that one lucky run does not decide.
const SAMPLES_PER_MODE: usize = 5;
/// Two samples end a mode's block once each took this long: such runs are long enough that the
/// few ms of waking the pool for each op cannot decide, and five samples of each mode put the
/// first six of a user's VGG-19 runs at two threads on one thread (0.6 s each on a Zen 3 core),
/// the decision coming after a dozen.
const LONG_RUN: Duration = Duration::from_millis(200);
const MIN_SAMPLES_PER_MODE: usize = 2;
/// Pooled work before the pool's runs are timed (always at least its first run), or
/// [`POOL_WARM_UP_RUNS`] runs if those come first: on a model of a fraction of a millisecond
/// 150 ms are hundreds of runs, all on the pool before any decision (a page's first 300 runs of
/// MTCNN's RNet in Chromium, 0.4 ms each against 0.3 on one thread). The pool's other workers
/// spin while a run lasts (`awake_helpers`), so a short warm-up finds them awake.
const POOL_WARM_UP: Duration = Duration::from_millis(150);
const POOL_WARM_UP_RUNS: usize = 10;
/// The pool must beat one thread by this factor to be kept: on a busy or small machine a pool
/// that is only marginally faster in calibration is often slower afterwards (its idle workers
/// spin and compete with the caller), and ties go to one thread.
const POOL_ADVANTAGE: f64 = 0.90;
/// Runs, and run time, after which a decision is re-examined (two fresh blocks): the load on a
/// shared machine changes, and with it which mode wins. The time bound keeps the pool's warm-up
/// a few percent of the running time on tiny models.
const RECHECK_EVERY: usize = 200;
const RECHECK_AFTER: Duration = Duration::from_secs(10);
/// The first decision is re-examined sooner: a core busy for a moment while the pool's block was
/// timed (another process starting or exiting) kept one thread on magika, where two are 1.6×
/// faster, for a whole benchmark. After 1 s and as few as 10 runs: in Chromium the pool's
/// first runs of minilm (47 ms each) are often slower than one thread's until V8 has compiled
/// their code with its optimizing tier, and 50 runs kept the wrong choice for 2.4 s.
const FIRST_RECHECK_EVERY: usize = 10;
const FIRST_RECHECK_AFTER: Duration = Duration::from_secs(1);

/// How a run executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    SingleThread,
    Pool,
}

/// The per-plan calibration state.
#[derive(Debug, Default)]
pub struct Calibration {
    /// Whether the single-threaded block's cold first run has been seen.
    warmed_single: bool,
    /// Time the pool's block has run so far, and its runs.
    pool_block: Duration,
    pool_runs: usize,
    single: Vec<Duration>,
    pool: Vec<Duration>,
    decided: Option<Mode>,
    /// Runs, and their time, since the last decision.
    since_decision: usize,
    since_decision_time: Duration,
    /// Comparisons made before this one.
    comparisons: usize,
    /// The mode and time of the last run recorded.
    last_run: Option<(Mode, Duration)>,
}

impl Calibration {
    /// The mode for the next run.
    pub fn next_mode(&self) -> Mode {
        match self.decided {
            Some(mode) => mode,
            None if !block_done(&self.single) => Mode::SingleThread,
            None => Mode::Pool,
        }
    }

    /// Records how long a run in `mode` took; decides once both modes have their samples.
    pub fn record(&mut self, mode: Mode, elapsed: Duration) {
        self.last_run = Some((mode, elapsed));
        if self.decided.is_some() {
            self.since_decision += 1;
            self.since_decision_time += elapsed;
            let (every, after) = if self.comparisons == 0 {
                (FIRST_RECHECK_EVERY, FIRST_RECHECK_AFTER)
            } else {
                (RECHECK_EVERY, RECHECK_AFTER)
            };
            if self.since_decision >= every && self.since_decision_time >= after {
                *self = Calibration {
                    comparisons: self.comparisons + 1,
                    last_run: self.last_run,
                    ..Calibration::default()
                };
            }
            return;
        }
        match mode {
            Mode::SingleThread if !self.warmed_single => self.warmed_single = true,
            Mode::SingleThread => self.single.push(elapsed),
            Mode::Pool => {
                let (warmed_for, warm_runs) = (self.pool_block, self.pool_runs);
                self.pool_block += elapsed;
                self.pool_runs += 1;
                if warm_runs > 0 && (warmed_for >= POOL_WARM_UP || warm_runs >= POOL_WARM_UP_RUNS) {
                    self.pool.push(elapsed);
                }
            }
        }
        if block_done(&self.single) && block_done(&self.pool) {
            let second_fastest = |samples: &mut Vec<Duration>| {
                samples.sort();
                samples[1].as_secs_f64()
            };
            let pool_wins =
                second_fastest(&mut self.pool) < second_fastest(&mut self.single) * POOL_ADVANTAGE;
            let mode = if pool_wins {
                Mode::Pool
            } else {
                Mode::SingleThread
            };
            tracing::debug!(?mode, single = ?self.single, pool = ?self.pool, "threading decided");
            self.decided = Some(mode);
        }
    }

    /// The decision, once made.
    pub fn decided(&self) -> Option<Mode> {
        self.decided
    }

    /// Whether one thread was chosen and the last run, on one thread, took at most `limit`.
    pub fn brief_on_one_thread(&self, limit: Duration) -> bool {
        self.decided == Some(Mode::SingleThread)
            && matches!(self.last_run, Some((Mode::SingleThread, took)) if took <= limit)
    }
}

/// Whether a mode's samples are enough to judge it: [`SAMPLES_PER_MODE`], or fewer that each
/// took [`LONG_RUN`].
fn block_done(samples: &[Duration]) -> bool {
    samples.len() >= SAMPLES_PER_MODE
        || (samples.len() >= MIN_SAMPLES_PER_MODE && samples.iter().all(|&s| s >= LONG_RUN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Runs until a decision (at most 1000 runs); `took(mode, nth run in that mode)` in ms.
    fn calibrate(c: &mut Calibration, took: impl Fn(Mode, usize) -> u64) -> usize {
        let (mut single, mut pool) = (0, 0);
        for run in 0..1000 {
            if c.decided().is_some() {
                return run;
            }
            let mode = c.next_mode();
            let nth = match mode {
                Mode::SingleThread => &mut single,
                Mode::Pool => &mut pool,
            };
            c.record(mode, ms(took(mode, *nth)));
            *nth += 1;
        }
        panic!("no decision after 1000 runs");
    }

    #[test]
    fn a_block_of_each_mode_then_the_faster_is_kept() {
        let mut c = Calibration::default();
        let runs = [
            (Mode::SingleThread, 90), // the plan's cold first run, not counted
            (Mode::SingleThread, 10),
            (Mode::SingleThread, 11),
            (Mode::SingleThread, 10),
            (Mode::SingleThread, 12),
            (Mode::SingleThread, 10),
            (Mode::Pool, 100), // the pool warming up: not counted until 150 ms have run
            (Mode::Pool, 60),
            (Mode::Pool, 6),
            (Mode::Pool, 7),
            (Mode::Pool, 16), // slowed by the machine: does not decide
            (Mode::Pool, 15),
            (Mode::Pool, 6),
        ];
        for (expected, took) in runs {
            assert_eq!(c.next_mode(), expected);
            c.record(expected, ms(took));
        }
        assert_eq!(c.decided(), Some(Mode::Pool));
        assert_eq!(c.next_mode(), Mode::Pool);
    }

    #[test]
    fn a_model_of_a_fraction_of_a_millisecond_warms_the_pool_for_a_few_runs_only() {
        // As in Chromium on MTCNN's RNet, 0.3 ms on one thread and 0.4 on the pool (times ×10).
        let mut c = Calibration::default();
        let runs = calibrate(&mut c, |mode, _| match mode {
            Mode::SingleThread => 3,
            Mode::Pool => 4,
        });
        assert_eq!(c.decided(), Some(Mode::SingleThread));
        assert_eq!(runs, 6 + POOL_WARM_UP_RUNS + 5);
    }

    #[test]
    fn the_pool_is_judged_after_its_warm_up() {
        // As measured on SqueezeNet: pooled runs take 20 ms for their first ~150 ms, then 12.
        let mut c = Calibration::default();
        let runs = calibrate(&mut c, |mode, nth| match mode {
            Mode::SingleThread => 20,
            Mode::Pool if nth < 8 => 20,
            Mode::Pool => 12,
        });
        assert_eq!(c.decided(), Some(Mode::Pool));
        assert!(runs <= 6 + 8 + 5, "{runs} runs to decide");
    }

    #[test]
    fn long_runs_are_judged_on_two_samples_of_each_mode() {
        let mut c = Calibration::default();
        let runs = [
            (Mode::SingleThread, 900), // the plan's cold first run, not counted
            (Mode::SingleThread, 600),
            (Mode::SingleThread, 610),
            (Mode::Pool, 330), // the pool's first run warms it up
            (Mode::Pool, 310),
            (Mode::Pool, 320),
        ];
        for (expected, took) in runs {
            assert_eq!(c.next_mode(), expected);
            c.record(expected, ms(took));
        }
        assert_eq!(c.decided(), Some(Mode::Pool));
        // Short runs still take their five samples of each.
        let mut short = Calibration::default();
        let runs = calibrate(
            &mut short,
            |mode, _| if mode == Mode::Pool { 60 } else { 100 },
        );
        assert_eq!(short.decided(), Some(Mode::Pool));
        assert_eq!(runs, 1 + 5 + 3 + 5, "{runs} runs to decide");
    }

    #[test]
    fn a_pool_that_is_not_clearly_faster_loses() {
        let mut c = Calibration::default();
        calibrate(&mut c, |mode, _| if mode == Mode::Pool { 95 } else { 100 });
        assert_eq!(c.decided(), Some(Mode::SingleThread));
    }

    #[test]
    fn a_run_is_brief_on_one_thread_only_once_one_thread_is_chosen_and_its_last_run_was_short() {
        let mut c = Calibration::default();
        assert!(!c.brief_on_one_thread(ms(4)), "nothing decided yet");
        calibrate(&mut c, |mode, _| if mode == Mode::Pool { 3 } else { 1 });
        assert_eq!(c.decided(), Some(Mode::SingleThread));
        c.record(Mode::SingleThread, ms(1));
        assert!(c.brief_on_one_thread(ms(4)));
        c.record(Mode::SingleThread, ms(5));
        assert!(
            !c.brief_on_one_thread(ms(4)),
            "the last run took longer than the limit"
        );
        let mut pooled = Calibration::default();
        calibrate(
            &mut pooled,
            |mode, _| if mode == Mode::Pool { 1 } else { 3 },
        );
        assert_eq!(pooled.decided(), Some(Mode::Pool));
        pooled.record(Mode::Pool, ms(1));
        assert!(!pooled.brief_on_one_thread(ms(4)), "the pool was chosen");
    }

    /// Records runs of `took_ms` in the decided `mode` until the decision is re-examined.
    fn runs_until_re_examined(c: &mut Calibration, mode: Mode, took_ms: u64) -> usize {
        let mut runs = 0;
        while c.decided().is_some() {
            c.record(mode, ms(took_ms));
            runs += 1;
        }
        runs
    }

    #[test]
    fn decisions_are_re_examined_after_enough_runs_and_time() {
        let mut c = Calibration::default();
        calibrate(&mut c, |mode, _| if mode == Mode::Pool { 5 } else { 10 });
        assert_eq!(c.decided(), Some(Mode::Pool));
        let recheck = |c: &mut Calibration| runs_until_re_examined(c, Mode::Pool, 5) as u128;
        // The first decision: 10 runs of 5 ms are only 0.05 s, it stands until 1 s has run.
        assert_eq!(recheck(&mut c), FIRST_RECHECK_AFTER.as_millis() / 5);
        assert_eq!(c.decided(), None, "a fresh comparison starts");
        calibrate(&mut c, |mode, _| if mode == Mode::Pool { 5 } else { 10 });
        // Later ones: 200 runs of 5 ms are only 1 s, the decision stands until 10 s have run.
        assert_eq!(recheck(&mut c), RECHECK_AFTER.as_millis() / 5);
        calibrate(&mut c, |mode, _| if mode == Mode::Pool { 12 } else { 10 });
        assert_eq!(
            c.decided(),
            Some(Mode::SingleThread),
            "the load changed: one thread now wins"
        );
    }

    #[test]
    fn a_first_decision_on_long_runs_is_re_examined_after_a_second() {
        // As minilm in Chromium: the pool's first runs slow (V8's first tier), then 28 ms
        // against one thread's 47.
        let mut c = Calibration::default();
        calibrate(&mut c, |mode, _| if mode == Mode::Pool { 50 } else { 47 });
        assert_eq!(c.decided(), Some(Mode::SingleThread));
        let runs = runs_until_re_examined(&mut c, Mode::SingleThread, 47);
        assert_eq!(runs, 22, "1 s of 47 ms runs");
        calibrate(&mut c, |mode, _| if mode == Mode::Pool { 28 } else { 47 });
        assert_eq!(c.decided(), Some(Mode::Pool));
    }

    #[test]
    fn a_first_decision_made_on_a_busy_moment_is_corrected_within_a_second() {
        let mut c = Calibration::default();
        // The other core busy while the pool was timed: pooled runs as slow as one thread.
        calibrate(&mut c, |_, _| 4);
        assert_eq!(c.decided(), Some(Mode::SingleThread));
        let mut runs = 0;
        while c.decided().is_some() {
            c.record(Mode::SingleThread, ms(4));
            runs += 1;
        }
        assert_eq!(runs, 250, "1 s of 4 ms runs");
        calibrate(&mut c, |mode, _| if mode == Mode::Pool { 2 } else { 4 });
        assert_eq!(c.decided(), Some(Mode::Pool));
    }
}
