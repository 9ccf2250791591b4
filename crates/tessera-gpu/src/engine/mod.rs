//! The GPU engine, written once for every GPU backend over the [`Gpu`] trait, which is all a
//! backend implements (memory, compiling and binding its kernels, recording, submitting and
//! reading back):
//!
//! - `session.rs`: [`GpuSession`], plans per input signature, weights uploaded once, device
//!   tensors, placement reports, traces and profiles;
//! - `executor.rs`: [`Compiled`], a plan made ready for the device (one memory plan, kernels
//!   encoded once, constants, host-fallback boundaries) and its runs, with transfer counters;
//! - `stages.rs`: models whose shapes depend on values computed at run time, run in stages with
//!   only the counts read back between them.

mod executor;
mod session;
mod stages;

pub use executor::{Compiled, Feed, Produced, device_bytes, encode_steps};
pub use session::{DeviceTensor, GpuOptions, GpuSession, Input, Output};

use crate::kernels::{Launch, Target};
use crate::repr::{self, Narrowing};
use tessera_core::{Result, Tensor};

/// Arena offsets and parameter blocks are multiples of this: WebGPU's largest allowed
/// `minStorageBufferOffsetAlignment` (so it suits every adapter), and what cuBLAS and vector
/// loads like.
pub const ALIGNMENT: usize = 256;

/// A range of a device buffer: where a launch operand, a value or a read-back lives.
pub struct Binding<'a, B> {
    pub buffer: &'a B,
    /// Byte offset in the buffer.
    pub offset: usize,
    pub bytes: usize,
}

impl<B> Clone for Binding<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B> Copy for Binding<'_, B> {}

/// A buffer holding one tensor's words (I/O binding, uploaded weights, outputs left on the
/// device).
#[derive(Debug)]
pub struct DeviceBuffer<B> {
    pub buffer: B,
    /// Bytes of device words (0 for an empty tensor; the allocation itself is never empty).
    pub bytes: usize,
}

impl<B> DeviceBuffer<B> {
    /// The whole tensor as a binding.
    pub fn binding(&self) -> Binding<'_, B> {
        Binding {
            buffer: &self.buffer,
            offset: 0,
            bytes: self.bytes,
        }
    }
}

/// Uploads a host tensor into a new device buffer.
pub fn upload_tensor<G: Gpu>(
    gpu: &G,
    tensor: &Tensor,
    narrowing: Narrowing,
    what: &str,
) -> Result<DeviceBuffer<G::Buffer>> {
    let words = repr::to_words(tensor.data(), narrowing, what)?;
    Ok(DeviceBuffer {
        buffer: gpu.upload(&words, what)?,
        bytes: words.len(),
    })
}

/// What a GPU backend provides to the engine. Work is recorded into a [`Gpu::Run`] in order;
/// writes and copies happen in that order with the launches around them.
#[allow(async_fn_in_trait)]
pub trait Gpu {
    /// One device allocation.
    type Buffer;
    /// A launch with its kernel compiled and its operands bound, ready to record.
    type Prepared;
    /// One run's recording state.
    type Run;

    /// How steps are encoded for this device.
    fn target(&self) -> Target;

    /// The device, for reports (adapter or device name, API, driver).
    fn describe(&self) -> String;

    /// Waits for `future` where this device can block (not in a browser: an error there).
    fn block_on<T>(&self, future: impl Future<Output = Result<T>>) -> Result<T>;

    /// Runs `plan` (which compiles kernels and uploads weights) so that what the device rejects
    /// while it runs is reported as its error (in a browser rejections arrive asynchronously).
    async fn checked<T>(&self, plan: impl FnOnce() -> Result<T>) -> Result<T> {
        plan()
    }

    /// The largest allocation, in bytes.
    fn max_buffer_bytes(&self) -> usize;

    /// The largest range one launch may bind, in bytes.
    fn max_binding_bytes(&self) -> usize;

    /// A new allocation of `bytes` bytes (at least one word), its contents undefined.
    fn alloc(&self, bytes: usize, what: &str) -> Result<Self::Buffer>;

    /// A new allocation holding `words`, written before any later run.
    fn upload(&self, words: &[u8], what: &str) -> Result<Self::Buffer>;

    /// Compiles (or finds) `launch`'s kernel and binds its operands: for a kernel dispatch,
    /// `params` then `operands` are its bindings in order; for a GEMM call, `operands` are its
    /// A, B and C (each matrix's own word offset is still to be added).
    fn prepare(
        &self,
        launch: &Launch,
        params: Option<Binding<'_, Self::Buffer>>,
        operands: &[Binding<'_, Self::Buffer>],
        what: &str,
    ) -> Result<Self::Prepared>;

    /// Starts a run.
    fn begin(&self) -> Result<Self::Run>;

    /// Records one step's launches.
    fn record(&self, run: &mut Self::Run, launches: &[Self::Prepared]) -> Result<()>;

    /// Records a write of host words at `to`.
    fn write(
        &self,
        run: &mut Self::Run,
        to: Binding<'_, Self::Buffer>,
        words: Vec<u8>,
    ) -> Result<()>;

    /// Records a copy of `from` to the start of `to`.
    fn copy(
        &self,
        run: &mut Self::Run,
        from: Binding<'_, Self::Buffer>,
        to: &Self::Buffer,
    ) -> Result<()>;

    /// Submits what is recorded and waits for it.
    async fn sync(&self, run: &mut Self::Run) -> Result<()>;

    /// Submits what is recorded, waits, and reads these ranges back, in order.
    async fn read(
        &self,
        run: &mut Self::Run,
        ranges: &[Binding<'_, Self::Buffer>],
    ) -> Result<Vec<Vec<u8>>>;

    /// Ends a run: submits what is left, waits, and reports what the device rejected.
    async fn finish(&self, run: Self::Run) -> Result<()>;
}
