//! Chooses, per plan, between running on the calling thread and on the session's thread pool.
//!
//! tract's multithreaded executor splits matrix products and large element-wise ops across a
//! rayon pool. On small or branchy models (shufflenet, densenet, mtcnn_pnet) the cost of waking
//! the pool for every op outweighs the split, and two threads ran slower than one. So the first
//! runs of each plan alternate single-threaded and pooled execution (the results are identical:
//! tract splits work only along whole rows and panels), and the plan keeps the faster mode.

use std::time::Duration;

/// Samples taken per mode before deciding (after the first run, which is cold and not counted).
const SAMPLES_PER_MODE: usize = 3;
/// The pool must beat one thread by this factor to be kept: on a busy or small machine a pool
/// that is only marginally faster in calibration is often slower afterwards (its idle workers
/// spin and compete with the caller), and ties go to one thread.
const POOL_ADVANTAGE: f64 = 0.90;
/// Runs after which a decision is re-examined (with 3+3 fresh samples): the load on a shared
/// machine changes, and with it which mode wins. Costs at most 3 runs in the slower mode per
/// this many.
const RECHECK_EVERY: usize = 200;

/// How a run executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    SingleThread,
    Pool,
}

/// The per-plan calibration state.
#[derive(Debug, Default)]
pub struct Calibration {
    /// Whether the cold first run has been seen.
    warmed: bool,
    single: Vec<Duration>,
    pool: Vec<Duration>,
    decided: Option<Mode>,
    /// Runs since the last decision.
    since_decision: usize,
}

impl Calibration {
    /// The mode for the next run.
    pub fn next_mode(&self) -> Mode {
        match self.decided {
            Some(mode) => mode,
            None if self.single.len() <= self.pool.len() => Mode::SingleThread,
            None => Mode::Pool,
        }
    }

    /// Records how long a run in `mode` took; decides once both modes have their samples.
    pub fn record(&mut self, mode: Mode, elapsed: Duration) {
        if self.decided.is_some() {
            self.since_decision += 1;
            if self.since_decision >= RECHECK_EVERY {
                self.decided = None;
                self.since_decision = 0;
                self.single.clear();
                self.pool.clear();
            }
            return;
        }
        if !self.warmed {
            self.warmed = true;
            return;
        }
        match mode {
            Mode::SingleThread => self.single.push(elapsed),
            Mode::Pool => self.pool.push(elapsed),
        }
        if self.single.len() >= SAMPLES_PER_MODE && self.pool.len() >= SAMPLES_PER_MODE {
            let median = |samples: &mut Vec<Duration>| {
                samples.sort();
                samples[samples.len() / 2].as_secs_f64()
            };
            let pool_wins = median(&mut self.pool) < median(&mut self.single) * POOL_ADVANTAGE;
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
    #[cfg(test)]
    pub fn decided(&self) -> Option<Mode> {
        self.decided
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn alternates_then_keeps_the_faster_mode() {
        let mut c = Calibration::default();
        let runs = [
            (Mode::SingleThread, 90), // the cold first run, not counted
            (Mode::SingleThread, 30),
            (Mode::Pool, 12),
            (Mode::SingleThread, 10),
            (Mode::Pool, 6),
            (Mode::SingleThread, 11),
            (Mode::Pool, 7),
        ];
        for (expected, took) in runs {
            assert_eq!(c.next_mode(), expected);
            c.record(expected, ms(took));
        }
        assert_eq!(c.decided(), Some(Mode::Pool));
        assert_eq!(c.next_mode(), Mode::Pool);
    }

    #[test]
    fn decisions_are_re_examined() {
        let mut c = Calibration::default();
        for _ in 0..7 {
            let mode = c.next_mode();
            c.record(mode, ms(if mode == Mode::Pool { 5 } else { 10 }));
        }
        assert_eq!(c.decided(), Some(Mode::Pool));
        for _ in 0..RECHECK_EVERY {
            c.record(Mode::Pool, ms(5));
        }
        assert_eq!(c.decided(), None, "a fresh comparison starts");
        for _ in 0..6 {
            let mode = c.next_mode();
            c.record(mode, ms(if mode == Mode::Pool { 12 } else { 10 }));
        }
        assert_eq!(
            c.decided(),
            Some(Mode::SingleThread),
            "the load changed: one thread now wins"
        );
    }

    #[test]
    fn a_pool_that_is_not_clearly_faster_loses() {
        let mut c = Calibration::default();
        for _ in 0..7 {
            let mode = c.next_mode();
            c.record(mode, ms(if mode == Mode::Pool { 95 } else { 100 }));
        }
        assert_eq!(c.decided(), Some(Mode::SingleThread));
    }
}
