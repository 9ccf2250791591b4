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
//!
//! A caller may pay to reach the pool: the browser's threaded module hands a run to a pool
//! worker and awaits it (the page's thread may not block), but runs a brief one-thread run where
//! it is. That hop ([`PoolHop`]) is charged to the pool, and where even a perfect split plus the
//! hop could not beat one thread, the pool is not tried at all (MTCNN's RNet in Chromium: 0.34 ms
//! on the page's thread, 0.5 with the hop).

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
/// Runs, and run time, after which a decision is re-examined: the load on a shared machine
/// changes, and with it which mode wins. Only the other mode is timed again (the decided one's
/// latest runs stand for it); the time bound keeps the pool's warm-up a few percent of the
/// running time on tiny models. A pool whose latest runs are no faster than one thread was is
/// re-examined at once.
const RECHECK_EVERY: usize = 200;
const RECHECK_AFTER: Duration = Duration::from_secs(10);
/// A first decision for one thread is re-examined sooner: a core busy for a moment while the
/// pool's block was timed (another process starting or exiting) kept one thread on magika, where
/// two are 1.6× faster, for a whole benchmark. After 1 s and as few as 10 runs: in Chromium the
/// pool's first runs of minilm (47 ms each) are often slower than one thread's until V8 has
/// compiled their code with its optimizing tier, and 50 runs kept the wrong choice for 2.4 s.
/// A first decision for the pool is not: re-timing one thread then cost six runs at one
/// thread's speed a second in (Chromium, inception_v1: 115 ms against 61).
const FIRST_RECHECK_EVERY: usize = 10;
const FIRST_RECHECK_AFTER: Duration = Duration::from_secs(1);

/// What a run on the pool costs its caller beyond the run itself, against a one-thread run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolHop {
    /// The hand-off to a pool thread and back, as the caller measured it.
    pub cost: Duration,
    /// One-thread runs up to this long run on the caller's thread (without the hop); longer
    /// ones are handed off as well, and the hop then costs both modes alike.
    pub brief_limit: Duration,
}

impl PoolHop {
    /// What the pool pays over one thread whose runs take `one_thread`.
    fn over(hop: Option<PoolHop>, one_thread: f64) -> f64 {
        match hop {
            Some(hop) if one_thread <= hop.brief_limit.as_secs_f64() => hop.cost.as_secs_f64(),
            _ => 0.0,
        }
    }
}

/// The hop costs a caller reported, most recent last: the pool's charge is their median, since
/// a hop slowed by the machine (several ms on a busy VM) is noise, not the hop's price. The
/// median is kept as each hop is reported, so that a run reads it without sorting.
#[derive(Debug, Default)]
pub struct PoolHops {
    recent: std::collections::VecDeque<Duration>,
    median: Option<PoolHop>,
}

/// Hops kept for the median.
const HOPS_KEPT: usize = 9;

impl PoolHops {
    /// Records one hop of a run handed to the pool by a caller that runs one-thread runs of at
    /// most `brief_limit` where it is.
    pub fn record(&mut self, cost: Duration, brief_limit: Duration) {
        if self.recent.len() == HOPS_KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(cost);
        let mut costs = [Duration::ZERO; HOPS_KEPT];
        let costs = &mut costs[..self.recent.len()];
        for (slot, &cost) in costs.iter_mut().zip(&self.recent) {
            *slot = cost;
        }
        costs.sort_unstable();
        self.median = Some(PoolHop {
            cost: costs[costs.len() / 2],
            brief_limit,
        });
    }

    /// The hop a pooled run costs, once one has been reported.
    pub fn estimate(&self) -> Option<PoolHop> {
        self.median
    }
}

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
    /// One thread's second-fastest sample when the pool was chosen.
    one_thread_at_decision: f64,
    /// Runs, and their time, since the last decision.
    since_decision: usize,
    since_decision_time: Duration,
    /// The latest runs in the decided mode (at most [`SAMPLES_PER_MODE`]): that mode's samples
    /// when the decision is re-examined, so that only the other mode is timed again.
    recent: Vec<Duration>,
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

    /// Records how long a run in `mode` took on `threads`; decides once both modes have their
    /// samples, or once one thread's show that the pool cannot win even with a perfect split,
    /// its `hop` counted.
    pub fn record(&mut self, mode: Mode, elapsed: Duration, threads: usize, hop: Option<PoolHop>) {
        self.last_run = Some((mode, elapsed));
        if let Some(decided) = self.decided {
            self.since_decision += 1;
            self.since_decision_time += elapsed;
            if mode == decided {
                if self.recent.len() == SAMPLES_PER_MODE {
                    self.recent.remove(0);
                }
                self.recent.push(elapsed);
            }
            if self.re_examine_now(decided, hop) {
                self.re_examine(decided, threads, hop);
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
        self.decide_when_ready(threads, hop);
    }

    /// Whether a decision in force is due for a fresh comparison: after a while (the first
    /// decision for one thread sooner, see [`FIRST_RECHECK_AFTER`]), or at once when the pool's
    /// latest runs, with the `hop`, are no faster than one thread was.
    fn re_examine_now(&self, decided: Mode, hop: Option<PoolHop>) -> bool {
        let (every, after) = if self.comparisons == 0 && decided == Mode::SingleThread {
            (FIRST_RECHECK_EVERY, FIRST_RECHECK_AFTER)
        } else {
            (RECHECK_EVERY, RECHECK_AFTER)
        };
        let pool_slowed = decided == Mode::Pool
            && self.recent.len() == SAMPLES_PER_MODE
            && second_fastest(&self.recent) + PoolHop::over(hop, self.one_thread_at_decision)
                >= self.one_thread_at_decision;
        pool_slowed || (self.since_decision >= every && self.since_decision_time >= after)
    }

    /// Starts a fresh comparison in which the decided mode's latest runs stand as its samples
    /// (the plan is warm: no cold run, no pool warm-up), so only the other mode runs.
    fn re_examine(&mut self, decided: Mode, threads: usize, hop: Option<PoolHop>) {
        let recent = std::mem::take(&mut self.recent);
        let mut fresh = Calibration {
            comparisons: self.comparisons + 1,
            last_run: self.last_run,
            warmed_single: true,
            ..Calibration::default()
        };
        match decided {
            Mode::SingleThread => fresh.single = recent,
            Mode::Pool => {
                fresh.pool_runs = POOL_WARM_UP_RUNS + recent.len();
                fresh.pool = recent;
            }
        }
        *self = fresh;
        self.decide_when_ready(threads, hop);
    }

    /// Decides once the samples allow it (see [`Calibration::record`]).
    fn decide_when_ready(&mut self, threads: usize, hop: Option<PoolHop>) {
        if !block_done(&self.single) {
            return;
        }
        let one_thread = second_fastest(&self.single);
        let over = PoolHop::over(hop, one_thread);
        let mode = if self.pool_runs == 0 {
            // Before the pool's block: try it only if it could win.
            let best_pool = one_thread / threads.max(1) as f64 + over;
            if best_pool < one_thread * POOL_ADVANTAGE {
                return;
            }
            Mode::SingleThread
        } else if !block_done(&self.pool) {
            return;
        } else if second_fastest(&self.pool) + over < one_thread * POOL_ADVANTAGE {
            Mode::Pool
        } else {
            Mode::SingleThread
        };
        tracing::debug!(?mode, single = ?self.single, pool = ?self.pool, ?hop, "threading decided");
        self.decided = Some(mode);
        self.one_thread_at_decision = one_thread;
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

/// A mode's second-fastest sample (of at least two), in seconds.
fn second_fastest(samples: &[Duration]) -> f64 {
    let (mut fastest, mut second) = (Duration::MAX, Duration::MAX);
    for &sample in samples {
        if sample < fastest {
            (fastest, second) = (sample, fastest);
        } else if sample < second {
            second = sample;
        }
    }
    second.as_secs_f64()
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

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// Runs until a decision (at most 1000 runs); `took(mode, nth run in that mode)` in ms.
    fn calibrate(c: &mut Calibration, took: impl Fn(Mode, usize) -> u64) -> usize {
        calibrate_with_hop(c, None, |mode, nth| took(mode, nth) * 1000)
    }

    /// As [`calibrate`], on 2 threads with `hop` charged, `took` in µs.
    fn calibrate_with_hop(
        c: &mut Calibration,
        hop: Option<PoolHop>,
        took: impl Fn(Mode, usize) -> u64,
    ) -> usize {
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
            c.record(mode, us(took(mode, *nth)), 2, hop);
            *nth += 1;
        }
        panic!("no decision after 1000 runs");
    }

    /// The decision on 2 threads with `hop` charged, runs taking `single_us` and `pool_us`.
    fn decision_with_hop(hop: Option<PoolHop>, single_us: u64, pool_us: u64) -> Option<Mode> {
        let mut c = Calibration::default();
        calibrate_with_hop(&mut c, hop, |mode, _| match mode {
            Mode::SingleThread => single_us,
            Mode::Pool => pool_us,
        });
        c.decided()
    }

    /// The browser's threaded module: runs of up to 4 ms on one thread stay on the page's thread.
    fn hop(cost_us: u64) -> Option<PoolHop> {
        Some(PoolHop {
            cost: us(cost_us),
            brief_limit: ms(4),
        })
    }

    #[test]
    fn the_pool_is_not_tried_where_a_perfect_split_plus_the_hop_cannot_beat_one_thread() {
        // MTCNN's RNet in Chromium: 0.34 ms on one thread, the hop 0.17 ms; half of 0.34 plus
        // the hop is no faster than 0.34.
        let mut c = Calibration::default();
        let runs = calibrate_with_hop(&mut c, hop(170), |mode, _| match mode {
            Mode::SingleThread => 340,
            Mode::Pool => panic!("the pool was tried"),
        });
        assert_eq!(c.decided(), Some(Mode::SingleThread));
        assert_eq!(runs, 1 + SAMPLES_PER_MODE);
        // Without the hop (natively) the same runs try the pool, and keep it if faster.
        assert_eq!(decision_with_hop(None, 340, 200), Some(Mode::Pool));
    }

    #[test]
    fn the_hop_is_charged_to_the_pool_only_where_one_thread_runs_without_it() {
        // 1 ms on one thread, 0.7 on the pool, 0.25 to reach it: 0.95 is not clearly faster.
        assert_eq!(
            decision_with_hop(hop(250), 1000, 700),
            Some(Mode::SingleThread)
        );
        // 10 ms on one thread is handed off as well: the hop costs both modes, the pool wins.
        assert_eq!(decision_with_hop(hop(2000), 10_000, 6000), Some(Mode::Pool));
    }

    #[test]
    fn a_pool_chosen_for_brief_runs_is_re_examined_once_its_runs_and_hop_lose() {
        // 1 ms on one thread, 0.6 on the pool + 0.2 to reach it: the pool. Its runs slow to 0.85,
        // which with the hop no longer beat one thread: five such runs bring a fresh comparison.
        let mut c = Calibration::default();
        calibrate_with_hop(&mut c, hop(200), |mode, _| match mode {
            Mode::SingleThread => 1000,
            Mode::Pool => 600,
        });
        assert_eq!(c.decided(), Some(Mode::Pool));
        let mut runs = 0;
        while c.decided().is_some() {
            c.record(Mode::Pool, us(850), 2, hop(200));
            runs += 1;
            assert!(runs <= SAMPLES_PER_MODE, "not re-examined");
        }
        assert_eq!(runs, SAMPLES_PER_MODE);
    }

    #[test]
    fn the_hop_charged_is_the_median_of_the_recent_ones() {
        let mut hops = PoolHops::default();
        assert_eq!(hops.estimate(), None, "nothing reported yet");
        for cost in [150, 9000, 170, 160, 7000] {
            hops.record(us(cost), ms(4));
        }
        assert_eq!(hops.estimate(), hop(170));
        for _ in 0..HOPS_KEPT {
            hops.record(us(300), ms(4));
        }
        assert_eq!(hops.estimate(), hop(300), "only the last {HOPS_KEPT} count");
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
            c.record(expected, ms(took), 2, None);
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
            c.record(expected, ms(took), 2, None);
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
        c.record(Mode::SingleThread, ms(1), 2, None);
        assert!(c.brief_on_one_thread(ms(4)));
        c.record(Mode::SingleThread, ms(5), 2, None);
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
        pooled.record(Mode::Pool, ms(1), 2, None);
        assert!(!pooled.brief_on_one_thread(ms(4)), "the pool was chosen");
    }

    /// Records runs of `took_ms` in the decided `mode` until the decision is re-examined.
    fn runs_until_re_examined(c: &mut Calibration, mode: Mode, took_ms: u64) -> usize {
        let mut runs = 0;
        while c.decided().is_some() {
            c.record(mode, ms(took_ms), 2, None);
            runs += 1;
        }
        runs
    }

    #[test]
    fn a_pool_decision_stands_until_ten_seconds_have_run_or_its_runs_slow_down() {
        let mut c = Calibration::default();
        calibrate(&mut c, |mode, _| if mode == Mode::Pool { 5 } else { 10 });
        assert_eq!(c.decided(), Some(Mode::Pool));
        // As fast as when chosen: not re-examined after 1 s (200 runs of 5 ms), only after 10 s.
        let runs = runs_until_re_examined(&mut c, Mode::Pool, 5) as u128;
        assert_eq!(runs, RECHECK_AFTER.as_millis() / 5);
        // Only one thread is timed again, without a cold run: the pool's latest runs stand.
        let runs = calibrate(&mut c, |mode, _| match mode {
            Mode::SingleThread => 10,
            Mode::Pool => panic!("the pool was timed again"),
        });
        assert_eq!((runs, c.decided()), (SAMPLES_PER_MODE, Some(Mode::Pool)));
        // The other core taken: the pool's runs slow to one thread's 10 ms, and five of them
        // bring a fresh comparison, which one thread now wins.
        let runs = runs_until_re_examined(&mut c, Mode::Pool, 10);
        assert_eq!(runs, SAMPLES_PER_MODE);
        calibrate(&mut c, |mode, _| match mode {
            Mode::SingleThread => 10,
            Mode::Pool => panic!("the pool was timed again"),
        });
        assert_eq!(c.decided(), Some(Mode::SingleThread));
    }

    #[test]
    fn a_model_the_pool_cannot_speed_up_never_tries_it_also_when_re_examined() {
        let mut c = Calibration::default();
        for _ in 0..40_000 {
            let mode = c.next_mode();
            assert_eq!(mode, Mode::SingleThread, "the pool was tried");
            c.record(mode, us(340), 2, hop(170)); // 13.6 s in all
        }
        assert_eq!(c.decided(), Some(Mode::SingleThread));
        assert!(c.comparisons >= 2, "re-examined {} times", c.comparisons);
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
            c.record(Mode::SingleThread, ms(4), 2, None);
            runs += 1;
        }
        assert_eq!(runs, 250, "1 s of 4 ms runs");
        calibrate(&mut c, |mode, _| match mode {
            Mode::SingleThread => panic!("one thread was timed again"),
            Mode::Pool => 2,
        });
        assert_eq!(c.decided(), Some(Mode::Pool));
    }
}
