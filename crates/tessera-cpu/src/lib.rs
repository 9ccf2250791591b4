//! Tessera's `cpu` backend: tract's optimized plan (SIMD kernels for AVX2/FMA, NEON and wasm
//! SIMD128) on the host, with Tessera's own ops where tract's kernel is the limit (`ops/`) and,
//! on x86-64 CPUs with AVX-512 or AVX2, convolutional regions in a channels-blocked layout
//! (`blocked_layout.rs`).
//!
//! Threads: a pool of `threads` workers (default: as many as `std::thread::available_parallelism`
//! reports), the calling thread one of them ([`own_pool`]), the others kept awake while a run
//! lasts ([`awake_helpers`]); `threads = 1` runs everything on the
//! calling thread alone. With a pool, the first runs of each plan compare pooled and
//! single-threaded execution and keep the faster ([`threading`]), so more threads are never
//! slower than one. In the browser's threaded module (wasm with `+atomics`) the pool is rayon's
//! global one, in Web Workers started by wasm-bindgen-rayon, its other workers kept awake while
//! a run lasts as well. Plans are built per input signature
//! (shapes plus the values of folded inputs) and kept in a small cache.

#[cfg(pooled)]
mod awake_helpers;
#[cfg(target_arch = "x86_64")]
mod blocked_layout;
mod flatten_on_activation;
mod kernel_choice;
mod natural_strides;
mod node_by_node;
#[cfg(test)]
mod onnx_test_graph;
mod ops;
#[cfg(not(target_family = "wasm"))]
mod own_pool;
mod parallel;
mod plan_graph;
mod reshape_fusion;
mod simd;
mod threading;

pub use node_by_node::{NodeTime, NonFiniteNode};

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_core::error::{catch_panic, chain_message};
use tessera_core::model::preflight;
use tessera_core::model::specialize::{Folding, Lowering, PlanKey};
use tessera_core::plan_cache::PlanCache;
use tessera_core::tract_bridge::{from_tract, into_tract};
use tessera_core::tract_onnx::prelude::*;
use tessera_core::{Backend, BackendStatus, Error, Model, QuantizedExecution, Result, Tensor};
use threading::{Calibration, Mode, PoolHops};
use tract_linalg::multithread::{Executor, multithread_tract_scope};
// `std::time::Instant` panics in browsers; web-time is std's natively.
use web_time::Instant;

/// A runnable plan and how it is best run.
#[derive(Debug)]
struct PlanEntry {
    runnable: Arc<TypedRunnableModel>,
    calibration: Mutex<Calibration>,
}

type Plan = Arc<PlanEntry>;

/// How many plans (distinct input signatures) a session keeps.
const PLAN_CACHE_SIZE: usize = 8;

/// Runs `run` on `executor`, with the pool's other workers kept awake for it where the pool is
/// this thread's own ([`own_pool::during_run`]) or, in the browser's threaded module, rayon's
/// global pool ([`awake_helpers::during_global_run`]).
fn run_on<R>(executor: Executor, run: impl FnOnce() -> R) -> R {
    multithread_tract_scope(executor, || {
        #[cfg(not(target_family = "wasm"))]
        return own_pool::during_run(run);
        #[cfg(all(pooled, target_family = "wasm"))]
        return awake_helpers::during_global_run(run);
        #[cfg(not(pooled))]
        run()
    })
}

/// Options of the cpu backend.
#[derive(Debug, Clone, Default)]
pub struct CpuOptions {
    /// Worker threads; `None` means one per available core.
    pub threads: Option<usize>,
}

/// The default thread count: one per core the OS lets this process use (in the browser's
/// threaded module: the workers of its pool).
pub fn default_threads() -> usize {
    #[cfg(all(pooled, target_family = "wasm"))]
    return rayon::current_num_threads();
    #[cfg(not(all(pooled, target_family = "wasm")))]
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How the cpu backend runs a quantized operator type: tract computes QLinearConv,
/// QLinearMatMul, MatMulInteger and ConvInteger with its integer matmul kernels (8-bit operands,
/// 32-bit sums), except depthwise convolutions, whose integer sums Tessera computes exactly in f32
/// (`ops/quantized_depthwise_conv.rs`); QDQ convolutions and matrix products with a constant
/// weight become integer ones too where they pay (`ops/qdq_products.rs`: depthwise, pointwise and
/// wide k×k convolutions; a QDQ product of two computed
/// operands, as in attention, stays float, and a QLinearMatMul of two has its integer sums
/// computed exactly in f32). The `com.microsoft` operators (rewritten by the core into standard
/// ones) and the other float operators of a QDQ pattern run dequantized. On CPUs where tract's
/// integer products do not pay (x86-64 without VNNI: [`ops::integer_products_pay`]) quantized
/// products run on the float kernels, their operands' centred integers in f32, but for
/// unit-stride convolutions and products by constant weights, on Tessera's AVX2 integer kernels.
pub fn quantized_execution(op: &str) -> QuantizedExecution {
    let integer_pays = ops::integer_products_pay();
    let tap_kernel = ops::tap_products_available();
    let matmul_kernel = ops::quantized_matmul_available();
    match op {
        "QLinearConv" | "QLinearMatMul" | "MatMulInteger" | "ConvInteger" | "MatMul"
            if integer_pays =>
        {
            QuantizedExecution::Integer
        }
        "Conv" if integer_pays || tap_kernel => QuantizedExecution::IntegerWherePaying,
        "QLinearConv" | "ConvInteger" if tap_kernel => QuantizedExecution::IntegerWherePaying,
        "QLinearMatMul" | "MatMulInteger" | "MatMul" if matmul_kernel => {
            QuantizedExecution::IntegerWherePaying
        }
        "DynamicQuantizeLinear" => QuantizedExecution::ElementWise,
        _ => QuantizedExecution::Dequantized,
    }
}

/// The cpu backend is always available; the detail names the SIMD kernels tract selected.
pub fn status() -> BackendStatus {
    let isa: Vec<&str> = tract_linalg::isa::native()
        .iter()
        .map(|isa| isa.name())
        .collect();
    let isa = isa.join(",");
    BackendStatus {
        backend: Backend::Cpu,
        compiled_in: true,
        available: true,
        detail: format!(
            "tract kernels: {isa}; {} thread(s) by default",
            default_threads()
        ),
        devices: vec![cpu_name()],
        software_only: false,
    }
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// A model prepared to run on the cpu backend.
#[derive(Debug)]
pub struct CpuSession {
    model: Arc<Model>,
    threads: usize,
    /// A pool of the session's own, for threads that cannot use theirs ([`own_pool`]).
    #[cfg(not(target_family = "wasm"))]
    pool: std::sync::OnceLock<Executor>,
    plans: Mutex<PlanCache<Plan>>,
    /// Which inputs had to be folded for the last plan built; tried first for new signatures.
    folding: Mutex<Option<Folding>>,
    /// What reaching the pool costs this session's caller ([`CpuSession::record_pool_hop`]).
    pool_hops: Mutex<PoolHops>,
}

impl CpuSession {
    /// Prepares a session; plans are built lazily, per input signature.
    pub fn new(model: Arc<Model>, options: &CpuOptions) -> Result<CpuSession> {
        kernel_choice::choose_once();
        // wasm32 without atomics has no threads: one thread, whatever was asked. With them, at
        // most the workers the page started.
        #[cfg(not(pooled))]
        let threads = {
            let _ = options;
            1
        };
        #[cfg(all(pooled, target_family = "wasm"))]
        let threads = options
            .threads
            .map_or_else(default_threads, |asked| asked.min(default_threads()))
            .max(1);
        #[cfg(not(target_family = "wasm"))]
        let threads = options.threads.unwrap_or_else(default_threads).max(1);
        Ok(CpuSession {
            model,
            threads,
            #[cfg(not(target_family = "wasm"))]
            pool: std::sync::OnceLock::new(),
            plans: Mutex::new(PlanCache::new(PLAN_CACHE_SIZE)),
            folding: Mutex::new(None),
            pool_hops: Mutex::new(PoolHops::default()),
        })
    }

    /// Worker threads this session uses.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs the model on inputs already checked and ordered as the model declares them.
    /// Inputs are copied once into tract's aligned storage, outputs once out of it (see
    /// [`into_tract`]).
    pub fn run(&self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>> {
        let (plan, folding) = self.plan_for(&inputs)?;
        let values: TVec<TValue> = inputs
            .into_iter()
            .zip(&folding)
            .filter(|(_, folded)| !**folded)
            .map(|(t, _)| into_tract(t).map(TValue::from))
            .collect::<Result<_>>()?;
        let mode = if self.threads == 1 {
            Mode::SingleThread
        } else {
            plan.calibration.lock().map_err(poisoned)?.next_mode()
        };
        let executor = match mode {
            Mode::SingleThread => Executor::SingleThread,
            Mode::Pool => self.pool()?,
        };
        // Timed only when calibrating threads.
        let start = (self.threads > 1).then(Instant::now);
        let outputs = catch_panic("running the model", || {
            run_on(executor, || plan.runnable.run(values)).map_err(|e| Error::Run {
                backend: "cpu".into(),
                message: chain_message(&e),
            })
        })?;
        if let Some(start) = start {
            let hop = self.pool_hops.lock().map_err(poisoned)?.estimate();
            plan.calibration.lock().map_err(poisoned)?.record(
                mode,
                start.elapsed(),
                self.threads,
                hop,
            );
        }
        outputs.iter().map(|t| from_tract(t)).collect()
    }

    /// The executor runs of `plan` use once its thread calibration has decided (the pool
    /// until then).
    fn executor_for(&self, plan: &Plan) -> Result<Executor> {
        let decided = plan.calibration.lock().map_err(poisoned)?.decided();
        Ok(match decided {
            Some(Mode::SingleThread) => Executor::SingleThread,
            _ if self.threads == 1 => Executor::SingleThread,
            _ => self.pool()?,
        })
    }

    /// The pool for a pooled run from this thread: the thread's own, else the session's.
    fn pool(&self) -> Result<Executor> {
        #[cfg(not(target_family = "wasm"))]
        {
            if let Some(own) = own_pool::of_this_thread(self.threads) {
                return Ok(own);
            }
            if let Some(pool) = self.pool.get() {
                return Ok(pool.clone());
            }
            let pool = own_pool::of_session(self.threads)
                .map_err(|e| Error::Internal(format!("starting the cpu thread pool: {e}")))?;
            Ok(self.pool.get_or_init(|| pool).clone())
        }
        #[cfg(all(pooled, target_family = "wasm"))]
        return Ok(Executor::RayonGlobal);
        #[cfg(not(pooled))]
        Ok(Executor::SingleThread)
    }

    /// Tells the thread calibration ([`threading`]) what a run handed to a pool thread cost the
    /// caller beyond the run (the browser's threaded module: a message to a worker and the
    /// answer back), for a caller that runs one-thread runs of at most `brief_limit` where it is.
    pub fn record_pool_hop(&self, cost: Duration, brief_limit: Duration) -> Result<()> {
        self.pool_hops
            .lock()
            .map_err(poisoned)?
            .record(cost, brief_limit);
        Ok(())
    }

    /// Builds (or fetches) the plan for these inputs without running it.
    pub fn prepare(&self, inputs: &[Tensor]) -> Result<()> {
        self.plan_for(inputs).map(drop)
    }

    /// Whether runs on these inputs still compare one thread with the pool (see [`threading`]):
    /// until then, run times mix both. False with one thread.
    pub fn choosing_threads(&self, inputs: &[Tensor]) -> Result<bool> {
        if self.threads == 1 {
            return Ok(false);
        }
        let (plan, _) = self.plan_for(inputs)?;
        let decided = plan
            .calibration
            .lock()
            .map_err(poisoned)?
            .decided()
            .is_some();
        Ok(!decided)
    }

    /// Whether a run on these inputs is short and on one thread: their plan is built, chose one
    /// thread ([`threading`]) and its last run took at most `limit`. (The browser's threaded
    /// module runs those on the calling thread: the hop to a pool worker and back costs about
    /// what a tiny model's run does.) False with one thread (runs are not timed).
    pub fn brief_on_one_thread(&self, inputs: &[&Tensor], limit: Duration) -> Result<bool> {
        let Some(folding) = self.folding.lock().map_err(poisoned)?.clone() else {
            return Ok(false);
        };
        let signatures = inputs.iter().map(|t| (t.dtype(), t.shape(), Some(*t)));
        let Some(key) = PlanKey::from_signatures(signatures, &folding) else {
            return Ok(false);
        };
        let Some(plan) = self.plans.lock().map_err(poisoned)?.get(&key) else {
            return Ok(false);
        };
        let brief = plan
            .calibration
            .lock()
            .map_err(poisoned)?
            .brief_on_one_thread(limit);
        Ok(brief)
    }

    fn plan_for(&self, inputs: &[Tensor]) -> Result<(Plan, Folding)> {
        let preferred = self.folding.lock().map_err(poisoned)?.clone();
        if let Some(folding) = &preferred {
            let key = PlanKey::new(inputs, folding);
            if let Some(plan) = self.plans.lock().map_err(poisoned)?.get(&key) {
                return Ok((plan, folding.clone()));
            }
        }
        let started = web_time::Instant::now();
        let lowering = Lowering {
            before_declutter: Some(|typed, model| {
                ops::qdq_products::integer_products(typed, model)?;
                flatten_on_activation::keep_flatten_on_activation(typed).map(|_| ())
            }),
            keep_axes: true,
            ..Lowering::default()
        };
        let lowered = self
            .model
            .lower_for(inputs, preferred.as_deref(), lowering)?;
        let mut typed = lowered.typed;
        let lowered_at = started.elapsed();
        // `lower` has decluttered the graph already: only tract's codegen passes are left.
        let runnable = catch_panic("optimizing the plan", || {
            ops::use_cpu_ops(&mut typed)
                .and_then(|()| tessera_core::model::optimizer::codegen(&mut typed))
                .and_then(|()| reshape_fusion::fuse_through_reshapes(&mut typed))
                .and_then(|_| ops::use_cpu_ops_in_plan(&mut typed))
                .and_then(|_| natural_strides::naturalize(&mut typed))
                .and_then(|_| typed.into_runnable())
                .and_then(|plan| {
                    preflight::check_run_memory(plan.model(), plan.order_without_consts())?;
                    Ok(plan)
                })
                .map_err(|e| Error::Prepare {
                    backend: "cpu".into(),
                    message: chain_message(&e),
                })
        })?;
        // Where a plan's build time goes (load → first result), for `TESSERA_LOG=debug`.
        tracing::debug!(
            lower_ms = lowered_at.as_secs_f64() * 1e3,
            codegen_ms = (started.elapsed() - lowered_at).as_secs_f64() * 1e3,
            "cpu plan built"
        );
        let plan = Arc::new(PlanEntry {
            runnable,
            calibration: Mutex::new(Calibration::default()),
        });
        let key = PlanKey::new(inputs, &lowered.folding);
        self.plans
            .lock()
            .map_err(poisoned)?
            .insert(key, plan.clone());
        *self.folding.lock().map_err(poisoned)? = Some(lowered.folding.clone());
        Ok((plan, lowered.folding))
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> Error {
    Error::Internal("a previous run panicked while holding the plan cache".into())
}

#[cfg(all(test, not(target_family = "wasm")))]
mod tests {
    use super::*;

    fn example() -> (Arc<Model>, Vec<Tensor>) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/text-orientation/model.onnx"
        );
        let model = Arc::new(Model::load(path).unwrap());
        let values = (0..3 * 48 * 192).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0);
        let input = Tensor::from_vec(vec![1, 3, 48, 192], values.collect()).unwrap();
        (model, vec![input])
    }

    /// Runs a `threads` session until its calibration has timed both modes; every run's
    /// outputs must equal `want` bit for bit (tiles and tasks split whole rows and panels).
    fn runs_match(model: &Arc<Model>, inputs: &[Tensor], threads: usize, want: &[Tensor]) {
        let session = CpuSession::new(
            model.clone(),
            &CpuOptions {
                threads: Some(threads),
            },
        )
        .unwrap();
        let mut runs = 0;
        while runs < 2 || session.choosing_threads(inputs).unwrap() {
            let outputs = session.run(inputs.to_vec()).unwrap();
            for (got, want) in outputs.iter().zip(want) {
                assert_eq!(
                    got.as_slice::<f32>().unwrap(),
                    want.as_slice::<f32>().unwrap()
                );
            }
            runs += 1;
            assert!(runs < 10_000, "the calibration never decided");
        }
    }

    #[test]
    fn a_run_is_brief_on_one_thread_only_after_its_plan_chose_one_thread() {
        let (model, inputs) = example();
        let session = CpuSession::new(model, &CpuOptions { threads: Some(2) }).unwrap();
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let brief = |limit| session.brief_on_one_thread(&refs, limit).unwrap();
        assert!(!brief(Duration::MAX), "no plan yet");
        while session.choosing_threads(&inputs).unwrap() {
            assert!(!brief(Duration::MAX), "still choosing");
            session.run(inputs.clone()).unwrap();
        }
        session.run(inputs.clone()).unwrap();
        let (plan, _) = session.plan_for(&inputs).unwrap();
        let one_thread = plan.calibration.lock().unwrap().decided() == Some(Mode::SingleThread);
        assert_eq!(brief(Duration::MAX), one_thread);
        assert!(!brief(Duration::ZERO), "no run takes no time");
        let other = Tensor::from_vec(vec![1, 3, 48, 96], vec![0.5; 3 * 48 * 96]).unwrap();
        assert!(!brief_for(&session, &other), "no plan for other shapes");
    }

    fn brief_for(session: &CpuSession, input: &Tensor) -> bool {
        session
            .brief_on_one_thread(&[input], Duration::MAX)
            .unwrap()
    }

    #[test]
    fn pooled_runs_match_one_thread_from_a_thread_s_own_pool_and_from_outside() {
        let (model, inputs) = example();
        let single = CpuSession::new(model.clone(), &CpuOptions { threads: Some(1) }).unwrap();
        let want = single.run(inputs.clone()).unwrap();
        std::thread::spawn(move || {
            // The first pooled session makes this thread worker 0 of a 2-thread pool; the
            // 3-thread session cannot use it and runs on a pool of its own, from outside.
            runs_match(&model, &inputs, 2, &want);
            // Built by the session's pooled runs (else this would build one of 3).
            assert!(own_pool::of_this_thread(3).is_none());
            runs_match(&model, &inputs, 3, &want);
        })
        .join()
        .unwrap();
    }

    /// `e{i} = Expand(x{i}, [elements])` for three inputs of one float each, all outputs.
    fn three_expands(elements: usize) -> Model {
        use crate::onnx_test_graph::*;
        let shape = initializer("shape", &[1], 7, (elements as i64).to_le_bytes().to_vec());
        let expand = |i: usize| {
            node(
                "Expand",
                &[&format!("x{i}"), "shape"],
                &format!("e{i}"),
                vec![],
            )
        };
        let bytes = model_bytes(
            (0..3).map(expand).collect(),
            vec![shape],
            (0..3).map(|i| value(&format!("x{i}"), &[1])).collect(),
            (0..3)
                .map(|i| value(&format!("e{i}"), &[elements as i64]))
                .collect(),
        );
        Model::from_bytes(&bytes).unwrap()
    }

    /// Three outputs, each under the largest tensor Tessera makes, together past the memory
    /// available: the plan is refused before it runs (each allocation would succeed and be
    /// filled until the OS killed the process).
    #[test]
    fn a_run_past_the_memory_available_is_refused_before_it_runs() {
        let limit = preflight::max_live_bytes();
        // Each 0.4 of the limit (under the per-tensor limit, half of it), 1.2 of it together.
        let elements = (limit / 10) as usize;
        assert!((elements as u64) * 4 <= preflight::max_tensor_bytes());
        let inputs: Vec<Tensor> = (0..3)
            .map(|i| Tensor::from_vec(vec![1], vec![i as f32]).unwrap())
            .collect();
        let session =
            CpuSession::new(Arc::new(three_expands(elements)), &CpuOptions::default()).unwrap();
        let error = session.run(inputs.clone()).unwrap_err().to_string();
        assert!(error.contains("a run would hold"), "{error}");
        assert!(error.contains("Tessera allows"), "{error}");
        let session = CpuSession::new(Arc::new(three_expands(5)), &CpuOptions::default()).unwrap();
        let outputs = session.run(inputs).unwrap();
        for (i, output) in outputs.iter().enumerate() {
            assert_eq!(output.as_slice::<f32>().unwrap(), [i as f32; 5]);
        }
    }
}
