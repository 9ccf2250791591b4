//! Tessera in browsers and Node.js: the wasm-bindgen module behind the npm package (`web/`).
//!
//! The JavaScript API users see (`InferenceSession`, `Tensor`, modelled on onnxruntime-web) is
//! written in `web/src/`; this module is what it calls: a [`WasmSession`] holding a
//! [`tessera::Session`] on the `cpu` backend (tract on wasm SIMD128) or the `wgpu` backend (the
//! browser's WebGPU), tensors crossing as `{ name, type, dims, data }` objects.
//!
//! Every failure is a JS `Error` carrying the runtime's message, and the session stays usable
//! afterwards. A Rust panic (a bug) aborts: the module traps and is unusable from then on. The
//! panic is printed to the console by `console_error_panic_hook` and passed to the listener the
//! JS layer registers with [`on_panic`], which marks the instance dead. So that the trap reaches
//! the caller (rather than a microtask no one awaits), everything that does not wait for WebGPU
//! — parsing the model, planning and running on the cpu — happens inside the call that asked
//! for it (see [`settle`]).
//! The threaded module (feature `threads`, cpu only) runs each cpu run and profile on a worker
//! of rayon's pool ([`on_pool`]): the page's thread may not block, and stays free meanwhile
//! (but for runs of a few milliseconds on one thread, [`BRIEF_RUN`]; each hop is timed and
//! charged to the pool when a plan chooses between one thread and the pool). A
//! panic on a worker traps that worker; the runs waiting on the pool then panic on the page's
//! thread with its message ([`pool`]), so the instance is marked dead as for any trap.
//! Natively this crate is empty: it is built for `wasm32-unknown-unknown` by `web/build.sh`.

#![cfg(target_arch = "wasm32")]

mod tensors;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tessera::{Backend, DeviceTensor, Session};
use wasm_bindgen::prelude::*;

/// Starts the pool of `threads` Web Workers the threaded module's cpu sessions run on; resolves
/// once they are ready. Call it once, after loading the module and before creating a session.
#[cfg(feature = "threads")]
pub use wasm_bindgen_rayon::init_thread_pool;

thread_local! {
    /// The JS function told about a panic (see [`on_panic`]).
    static PANIC_LISTENER: RefCell<Option<js_sys::Function>> = const { RefCell::new(None) };
}

unsafe extern "C" {
    /// The static constructors wasm-ld collects (tract registers its kernels with `inventory`).
    fn __wasm_call_ctors();
}

#[wasm_bindgen(start)]
fn start() {
    // Run once per instance (and per worker of the threaded module) here, where the module
    // starts. When no export calls it, wasm-ld takes the module for a "command", run once, and
    // puts a call at the top of every exported function instead: each call from JS (a run, an
    // allocation for its feeds) re-ran the hundreds of constructors, ~10% of a small model's
    // run in Node.js (web/build.sh checks that no export is wrapped). They are idempotent.
    // SAFETY: the constructors only register statics (inventory's nodes are marked once).
    unsafe { __wasm_call_ctors() };
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        let message = info.to_string();
        #[cfg(feature = "threads")]
        pool::worker_panicked(&message);
        PANIC_LISTENER.with(|listener| {
            if let Ok(listener) = listener.try_borrow() {
                if let Some(listener) = listener.as_ref() {
                    let _ = listener.call1(&JsValue::NULL, &JsValue::from_str(&message));
                }
            }
        });
    }));
}

/// Registers `listener(message)`, called with the panic message (location included) when Rust
/// panics, just before the module traps. It must not call back into this module.
#[wasm_bindgen(js_name = onPanic)]
pub fn on_panic(listener: js_sys::Function) {
    PANIC_LISTENER.with(|l| *l.borrow_mut() = Some(listener));
}

/// Panics on purpose, so that the package's tests can check what its JS layer does when the
/// module traps (the panic sources in the runtime get fixed, this stays). Not part of the API.
/// With `after_await`, it panics in the futures queue after this call has returned, as a panic
/// while waiting for WebGPU would; with `on_a_worker` (threaded module), on a worker of the pool,
/// as a panic during a run would.
#[wasm_bindgen(js_name = panicForTests)]
pub fn panic_for_tests(message: String, after_await: bool, on_a_worker: bool) -> js_sys::Promise {
    #[cfg(feature = "threads")]
    if on_a_worker {
        return settle(async move {
            on_pool(move || -> () { panic!("{message}") }).await;
            Ok(JsValue::UNDEFINED)
        });
    }
    let _ = on_a_worker;
    settle(async move {
        if after_await {
            let resolved = js_sys::Promise::resolve(&JsValue::UNDEFINED);
            let _ = wasm_bindgen_futures::JsFuture::from(resolved).await;
        }
        panic_with(&message)
    })
}

fn panic_with(message: &str) -> Result<JsValue, JsValue> {
    panic!("{message}")
}

/// A runtime error as a JS `Error` with the runtime's message.
fn js_error(error: impl std::fmt::Display) -> JsError {
    JsError::new(&error.to_string())
}

/// A model bound to one backend.
#[wasm_bindgen]
pub struct WasmSession {
    session: Arc<Session>,
    /// A run in flight: a second concurrent run on one session is refused (its state is not
    /// shared between runs), as in onnxruntime-web.
    busy: Rc<Cell<bool>>,
}

#[wasm_bindgen]
impl WasmSession {
    /// Loads a model from its bytes onto `backend`: `"auto"`, `"webgpu"` (or `"wgpu"`), `"cpu"`.
    /// With `allow_fallback`, ops WebGPU lacks run on the cpu, each copy reported. Resolves to a
    /// `WasmSession`. Everything up to the first wait for WebGPU happens inside this call (see
    /// [`settle`]): on the cpu the whole load, so a panic traps here, not in a microtask.
    /// `threads` (threaded module): the most pool workers a cpu run uses (default: all).
    pub fn create(
        model: Vec<u8>,
        backend: String,
        allow_fallback: bool,
        threads: Option<u32>,
    ) -> js_sys::Promise {
        settle(async move {
            let backend = match backend.as_str() {
                // onnxruntime-web's name for its cpu backend.
                "wasm" => Backend::Cpu,
                other => other.parse::<Backend>().map_err(js_error)?,
            };
            let mut builder = Session::builder()
                .backend(backend)
                .allow_fallback(allow_fallback);
            if let Some(threads) = threads {
                builder = builder.threads(threads.max(1) as usize);
            }
            let session = builder.load_bytes_async(&model).await.map_err(js_error)?;
            Ok(WasmSession {
                session: Arc::new(session),
                busy: Rc::new(Cell::new(false)),
            }
            .into())
        })
    }

    /// The backend that runs this session: `"cpu"` or `"webgpu"`.
    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> String {
        match self.session.backend() {
            Backend::Wgpu => "webgpu".into(),
            other => other.to_string(),
        }
    }

    /// Why this backend runs the session (with `auto`: what was skipped and why).
    #[wasm_bindgen(getter, js_name = backendReason)]
    pub fn backend_reason(&self) -> String {
        self.session.backend_choice().to_string()
    }

    /// The WebGPU adapter, when the session runs on one.
    #[wasm_bindgen(getter)]
    pub fn device(&self) -> Option<String> {
        self.session.device_name()
    }

    /// The model's inputs and outputs as JSON:
    /// `{"inputs": [{"name", "type", "dims": [number | string | null] | null}], "outputs": […]}`.
    pub fn metadata(&self) -> String {
        tensors::metadata_json(self.session.info())
    }

    /// Runs on `feeds`, an array of `{ name, type, dims, data }`; resolves to the outputs in the
    /// model's order, in the same form. On the cpu the run happens inside this call (see
    /// [`settle`]).
    pub fn run(&self, feeds: js_sys::Array) -> js_sys::Promise {
        let session = self.session.clone();
        self.exclusive(async move {
            let inputs = tensors::feeds_from_js(&feeds)?;
            #[cfg(feature = "threads")]
            let outputs = if session.brief_on_one_thread(&inputs, BRIEF_RUN) {
                session.run(inputs)
            } else {
                let handed_off = web_time::Instant::now();
                let pooled = session.clone();
                let (outputs, ran) = on_pool(move || {
                    let started = web_time::Instant::now();
                    (pooled.run(inputs), started.elapsed())
                })
                .await;
                let hop = handed_off.elapsed().saturating_sub(ran);
                session.record_pool_hop(hop, BRIEF_RUN).map_err(js_error)?;
                outputs
            };
            #[cfg(not(feature = "threads"))]
            let outputs = session.run_async(inputs).await;
            let outputs = outputs.map_err(js_error)?;
            Ok(tensors::outputs_to_js(outputs)?.into())
        })
    }

    /// A promise of `work` (see [`settle`]), refused while another call on this session is in
    /// flight: a session's run state is not shared between runs, as in onnxruntime-web.
    fn exclusive(
        &self,
        work: impl Future<Output = Result<JsValue, JsError>> + 'static,
    ) -> js_sys::Promise {
        let busy = self.busy.clone();
        settle(async move {
            if busy.replace(true) {
                return Err(busy_error().into());
            }
            let result = work.await;
            busy.set(false);
            result.map_err(Into::into)
        })
    }
}

#[wasm_bindgen]
impl WasmSession {
    /// Runs on `feeds` (host tensors, as for [`WasmSession::run`]) and `device_feeds` (named by
    /// `device_names`: tensors already in this session's WebGPU memory, from an earlier run),
    /// without copying those. With `outputs_on_device` the outputs stay on the device and
    /// resolve as `{ name, device: WasmDeviceTensor }`; otherwise they are read back as `run`'s.
    #[wasm_bindgen(js_name = runOnDevice)]
    // Without WebGPU every tensor is a host one.
    #[cfg_attr(not(feature = "webgpu"), allow(unreachable_patterns))]
    pub fn run_on_device(
        &self,
        feeds: js_sys::Array,
        device_names: Vec<String>,
        device_feeds: Vec<WasmDeviceTensor>,
        outputs_on_device: bool,
    ) -> js_sys::Promise {
        let session = self.session.clone();
        self.exclusive(async move {
            let host = tensors::feeds_from_js(&feeds)?.into_iter();
            let mut inputs: Vec<(String, DeviceTensor)> =
                host.map(|(n, t)| (n, DeviceTensor::Host(t))).collect();
            let on_device = device_names.into_iter().zip(device_feeds);
            inputs.extend(on_device.map(|(n, d)| (n, d.tensor)));
            let outputs =
                (session.run_bound_async(inputs, outputs_on_device).await).map_err(js_error)?;
            let list = js_sys::Array::new();
            for (name, tensor) in outputs {
                match tensor {
                    DeviceTensor::Host(host) => list.push(&tensors::tensor_to_js(&name, host)?),
                    tensor => {
                        let device = JsValue::from(WasmDeviceTensor { tensor });
                        list.push(&tensors::named("device", &name, &device)?)
                    }
                };
            }
            Ok(list.into())
        })
    }

    /// Bytes the last run copied between host and device, as JSON (`{input_bytes, output_bytes,
    /// fallback_bytes, count_bytes}`); `undefined` on the cpu, which copies nothing.
    #[wasm_bindgen(getter, js_name = lastTransfers)]
    pub fn last_transfers(&self) -> Option<String> {
        let transfers = self.session.last_transfers()?;
        serde_json::to_string(&transfers).ok()
    }

    /// Where each step of the plan for `feeds` runs and what a run copies between host and
    /// device, as JSON (`{backend, device, steps: [{node, op, runs_on, why, outputs}], copies:
    /// [{value, bytes, direction: "HostToDevice" | "DeviceToHost", before_step, cause:
    /// "InputOutput" | "Fallback" | "Count"}]}`); nothing is run (a staged model, whose later
    /// stages are planned for counts only a run gives, is refused: a browser cannot block).
    pub fn placement(&self, feeds: js_sys::Array) -> Result<String, JsError> {
        let inputs = tensors::feeds_from_js(&feeds)?;
        let placement = self.session.placement(inputs).map_err(js_error)?;
        serde_json::to_string(&placement).map_err(js_error)
    }

    /// Where a run's time goes on the cpu: runs on `feeds` `runs` times, timing each node of the
    /// optimized plan; resolves to the profile as JSON (`tessera bench`'s: `per_op`, slowest op
    /// type first, and `per_node`, in ms per run).
    pub fn profile(&self, feeds: js_sys::Array, runs: u32) -> js_sys::Promise {
        let session = self.session.clone();
        self.exclusive(async move {
            let inputs = tensors::feeds_from_js(&feeds)?;
            let profile = move || tessera::profile::profile(&session, inputs, runs);
            #[cfg(feature = "threads")]
            let profile = on_pool(profile).await;
            #[cfg(not(feature = "threads"))]
            let profile = profile();
            let profile = profile.map_err(js_error)?;
            Ok(JsValue::from_str(
                &serde_json::to_string(&profile).map_err(js_error)?,
            ))
        })
    }
}

/// A tensor in WebGPU memory: a run's output kept on the device, to feed later runs of any
/// session of this module (they share one device) or to download.
#[wasm_bindgen]
pub struct WasmDeviceTensor {
    tensor: DeviceTensor,
}

#[wasm_bindgen]
impl WasmDeviceTensor {
    pub fn dims(&self) -> Vec<f64> {
        self.tensor.shape().iter().map(|&d| d as f64).collect()
    }

    /// onnxruntime-web's name of its element type.
    #[wasm_bindgen(js_name = typeName)]
    pub fn type_name(&self) -> String {
        tensors::type_name(self.tensor.dtype()).into()
    }

    /// Copies it to the host; resolves to `{ name: "", type, dims, data }`.
    pub fn download(&self) -> js_sys::Promise {
        let tensor = self.tensor.clone();
        settle(async move {
            let host = tensor.to_host_async().await.map_err(js_error)?;
            Ok(tensors::tensor_to_js("", host)?)
        })
    }

    /// Another handle on the same device memory: each run's feeds take their own (the memory
    /// is freed when the last handle is).
    pub fn share(&self) -> WasmDeviceTensor {
        WasmDeviceTensor {
            tensor: self.tensor.clone(),
        }
    }
}

/// A promise of `future`, polled once right here: what completes without waiting (parsing a
/// model, everything on the cpu) settles inside the caller's call, so that a panic traps there,
/// where the JS layer sees it, and not in a microtask of the futures queue, where the trap would
/// be an uncaught exception and the promise would never settle. What waits (WebGPU) goes on in
/// the queue; every future polled again picks up the queue's waker.
fn settle(future: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> js_sys::Promise {
    let mut future = Box::pin(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Ok(value)) => js_sys::Promise::resolve(&value),
        Poll::Ready(Err(error)) => js_sys::Promise::reject(&error),
        Poll::Pending => wasm_bindgen_futures::future_to_promise(future),
    }
}

#[cfg(feature = "threads")]
use pool::on_pool;

/// A run on one thread this short runs on the calling thread in the threaded module, not on a
/// pool worker: the hop there and back (a message to a Web Worker, the answer through
/// `Atomics.waitAsync`) costs about what a tiny model's run does, and blocking the page for a
/// quarter of a 60 Hz frame is less than onnxruntime-web does, which runs on the page's thread.
#[cfg(feature = "threads")]
const BRIEF_RUN: std::time::Duration = std::time::Duration::from_millis(4);

/// Work handed to the threaded module's pool, and what happens when a worker panics.
#[cfg(feature = "threads")]
mod pool {
    use std::any::Any;
    use std::collections::BTreeMap;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    use wasm_sync::Mutex;

    /// The result channels of the work on the pool, by number: a worker's panic drops them all,
    /// so that every waiting run wakes up (a trapped worker never answers).
    static IN_FLIGHT: Mutex<BTreeMap<u64, Box<dyn Any + Send>>> = Mutex::new(BTreeMap::new());
    static NEXT: AtomicU64 = AtomicU64::new(0);
    /// The first panic message of a pool worker.
    static WORKER_PANIC: OnceLock<String> = OnceLock::new();

    /// `work` on a worker of rayon's pool, its result awaited without blocking the calling
    /// thread: the page's thread may not block (rayon's own `install` would wait there), and a
    /// plan run from a pool worker splits its ops across the pool by work stealing. When a
    /// worker panics meanwhile, this panics with its message on the calling thread.
    pub async fn on_pool<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        let (done, result) = futures_channel::oneshot::channel::<T>();
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        in_flight(|all| all.insert(id, Box::new(done)));
        rayon::spawn(move || {
            let output = work();
            let done = in_flight(|all| all.remove(&id));
            if let Some(Ok(done)) =
                done.map(|d| d.downcast::<futures_channel::oneshot::Sender<T>>())
            {
                let _ = done.send(output);
            }
        });
        match result.await {
            Ok(output) => output,
            Err(_) => {
                let why = WORKER_PANIC.get().map_or("(no message)", String::as_str);
                panic!("a worker of the thread pool panicked: {why}")
            }
        }
    }

    fn in_flight<R>(f: impl FnOnce(&mut BTreeMap<u64, Box<dyn Any + Send>>) -> R) -> R {
        f(&mut IN_FLIGHT
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// From the panic hook: on a pool worker, keeps the message and wakes every waiting run.
    pub fn worker_panicked(message: &str) {
        if rayon::current_thread_index().is_some() {
            let _ = WORKER_PANIC.set(message.to_string());
            in_flight(|all| all.clear());
        }
    }
}

/// A second concurrent run on one session.
fn busy_error() -> JsError {
    JsError::new("this session is already running: await the previous run() first")
}

/// Reads a serialized ONNX `TensorProto` (the `.pb` files of ONNX test data) into
/// `{ name, type, dims, data }`.
#[wasm_bindgen(js_name = readTensorProto)]
pub fn read_tensor_proto(bytes: &[u8]) -> Result<JsValue, JsError> {
    let (name, tensor) = tessera::onnx_pb::pb_from_bytes(bytes).map_err(js_error)?;
    tensors::tensor_to_js(&name, tensor)
}

/// What this build of Tessera is: version, and the wasm features it was compiled with.
#[wasm_bindgen(js_name = buildInfo)]
pub fn build_info() -> String {
    serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "simd128": cfg!(target_feature = "simd128"),
        "threads": cfg!(feature = "threads"),
        "backends": if cfg!(feature = "webgpu") { &["cpu", "webgpu"][..] } else { &["cpu"][..] },
    })
    .to_string()
}
