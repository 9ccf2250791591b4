//! The CUDA device as the GPU engine sees it ([`tessera_gpu::engine::Gpu`]): allocations,
//! NVRTC-compiled kernels with their arguments resolved to device addresses, cuBLAS calls, and a
//! run enqueued on a session's stream.

use crate::context::CudaDevice;
use crate::error::{CudaError, DriverContext};
use crate::shaders::{TARGET, Target};
use cudarc::cublas::CudaBlas;
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, result};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};
use tessera_core::{Error, Result};
use tessera_gpu::engine::{Binding, Gpu};
use tessera_gpu::kernels::{BLOCK, GemmMatrix, Launch};
use tessera_gpu::repr::WORD_BYTES;

/// Most blocks along one grid axis used for 1-D kernels (the y axis takes the rest).
const MAX_GRID_X: u32 = 65535;

/// A device allocation, freed on drop.
#[derive(Debug)]
pub struct Allocation {
    pub ptr: CUdeviceptr,
    ctx: Arc<CudaContext>,
}

impl Allocation {
    fn new(ctx: &Arc<CudaContext>, bytes: usize, what: &str) -> Result<Allocation> {
        ctx.bind_to_thread()
            .doing("binding the CUDA context", false)?;
        // SAFETY: the context is current; the size is non-zero.
        let ptr = unsafe { result::malloc_sync(bytes.max(WORD_BYTES)) }
            .map_err(|e| CudaError::driver(e, format!("allocating {bytes} bytes for {what}")))
            .map_err(|e| e.into_error(false))?;
        Ok(Allocation {
            ptr,
            ctx: ctx.clone(),
        })
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by malloc_sync and freed once; work using it was synchronised
            // by the run that used it.
            let _ = unsafe { result::free_sync(self.ptr) };
        }
    }
}

/// A launch with its arguments resolved to device addresses.
pub enum Prepared {
    Kernel {
        function: CudaFunction,
        grid: (u32, u32, u32),
        /// `params`, then each tensor's address.
        args: Vec<CUdeviceptr>,
    },
    Gemm(ReadyGemm),
}

/// A column-major cuBLAS call: `C' (m' x n') = op(A') · op(B')` with `A' = B^T`, `B' = A^T`,
/// `C' = C^T` of the row-major product.
pub struct ReadyGemm {
    trans_a: cublasOperation_t,
    trans_b: cublasOperation_t,
    m: i32,
    n: i32,
    k: i32,
    a: CUdeviceptr,
    lda: i32,
    stride_a: i64,
    b: CUdeviceptr,
    ldb: i32,
    stride_b: i64,
    c: CUdeviceptr,
    ldc: i32,
    stride_c: i64,
    batch: i32,
}

/// One run: host words whose asynchronous copies may still be in flight.
pub struct Run {
    staged: Vec<Vec<u8>>,
}

/// A session's view of the device: its own stream, and cuBLAS bound to it.
pub struct CudaGpu {
    device: Arc<CudaDevice>,
    stream: Arc<CudaStream>,
    /// cuBLAS is not shareable between threads: runs take turns.
    blas: Mutex<CudaBlas>,
}

impl CudaGpu {
    pub(crate) fn new(device: Arc<CudaDevice>) -> Result<CudaGpu> {
        let stream = device.stream()?;
        let blas = CudaBlas::new(stream.clone())
            .map_err(|e| CudaError::cublas(e, "creating the cuBLAS handle").into_error(false))?;
        Ok(CudaGpu {
            device,
            stream,
            blas: Mutex::new(blas),
        })
    }

    fn address(range: &Binding<'_, Allocation>) -> CUdeviceptr {
        range.buffer.ptr + range.offset as u64
    }

    fn ready_gemm(
        gemm: &tessera_gpu::kernels::Gemm,
        operands: &[Binding<'_, Allocation>],
    ) -> Result<ReadyGemm> {
        let int = |v: usize| {
            i32::try_from(v).map_err(|_| Error::Internal(format!("{v} does not fit cuBLAS")))
        };
        let [a, b, c] = operands else {
            return Err(Error::Internal("a GEMM call binds A, B and C".into()));
        };
        let ptr = |range: &Binding<'_, Allocation>, x: &GemmMatrix| {
            Self::address(range) + (x.offset * WORD_BYTES) as u64
        };
        // A row-major matrix X with unit column stride is X^T column-major (op N); with unit
        // row stride it is X column-major, so X^T needs op T.
        let op = |x: &GemmMatrix, cols: usize| -> Result<(cublasOperation_t, i32)> {
            if x.col_stride == 1 && x.row_stride >= cols.max(1) {
                Ok((cublasOperation_t::CUBLAS_OP_N, int(x.row_stride)?))
            } else {
                Ok((cublasOperation_t::CUBLAS_OP_T, int(x.col_stride.max(1))?))
            }
        };
        let (trans_a, lda) = op(&gemm.b, gemm.n)?;
        let (trans_b, ldb) = op(&gemm.a, gemm.k)?;
        Ok(ReadyGemm {
            trans_a,
            trans_b,
            m: int(gemm.n)?,
            n: int(gemm.m)?,
            k: int(gemm.k)?,
            a: ptr(b, &gemm.b),
            lda,
            stride_a: gemm.b.batch_stride as i64,
            b: ptr(a, &gemm.a),
            ldb,
            stride_b: gemm.a.batch_stride as i64,
            c: ptr(c, &gemm.c),
            ldc: int(gemm.c.row_stride.max(1))?,
            stride_c: gemm.c.batch_stride as i64,
            batch: int(gemm.batch)?,
        })
    }

    fn launch(&self, ready: &Prepared) -> Result<()> {
        match ready {
            Prepared::Kernel {
                function,
                grid,
                args,
            } => {
                let mut args = args.clone();
                let mut pointers: Vec<*mut c_void> = args
                    .iter_mut()
                    .map(|a| a as *mut CUdeviceptr as *mut c_void)
                    .collect();
                // SAFETY: the kernel takes exactly these pointer arguments (`tessera_main`'s
                // signature is the dispatch's bindings), all of live allocations of this plan.
                unsafe {
                    result::launch_kernel(
                        function.cu_function(),
                        *grid,
                        (BLOCK, 1, 1),
                        0,
                        self.stream.cu_stream(),
                        &mut pointers,
                    )
                }
                .doing("launching a kernel", true)
            }
            Prepared::Gemm(g) => {
                let blas = self
                    .blas
                    .lock()
                    .map_err(|_| Error::Internal("the cuBLAS handle was poisoned".into()))?;
                let (alpha, beta) = (1.0f32, 0.0f32);
                // SAFETY: pointers and strides were checked against the plan's sizes when the
                // launch was prepared; alpha and beta live through the call.
                unsafe {
                    cudarc::cublas::result::sgemm_strided_batched(
                        *blas.handle(),
                        g.trans_a,
                        g.trans_b,
                        g.m,
                        g.n,
                        g.k,
                        &alpha,
                        g.a as *const f32,
                        g.lda,
                        g.stride_a,
                        g.b as *const f32,
                        g.ldb,
                        g.stride_b,
                        &beta,
                        g.c as *mut f32,
                        g.ldc,
                        g.stride_c,
                        g.batch,
                    )
                }
                .doing("a cuBLAS matrix product", true)
            }
        }
    }
}

impl Gpu for CudaGpu {
    type Buffer = Allocation;
    type Prepared = Prepared;
    type Run = Run;

    fn target(&self) -> Target {
        TARGET
    }

    fn describe(&self) -> String {
        self.device.summary.to_string()
    }

    /// Every cuda call blocks or enqueues: the engine's futures are ready when first polled.
    fn block_on<T>(&self, future: impl Future<Output = Result<T>>) -> Result<T> {
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(out) => out,
            std::task::Poll::Pending => Err(Error::Internal("a cuda run waited on nothing".into())),
        }
    }

    fn max_buffer_bytes(&self) -> usize {
        usize::MAX
    }

    fn max_binding_bytes(&self) -> usize {
        usize::MAX
    }

    fn alloc(&self, bytes: usize, what: &str) -> Result<Allocation> {
        Allocation::new(&self.device.ctx, bytes, what)
    }

    fn upload(&self, words: &[u8], what: &str) -> Result<Allocation> {
        let buffer = self.alloc(words.len(), what)?;
        if !words.is_empty() {
            // SAFETY: the allocation holds `words.len()` bytes.
            unsafe { result::memcpy_htod_sync(buffer.ptr, words) }
                .doing(&format!("uploading {what}"), false)?;
        }
        self.device.ctx.synchronize().doing("uploading", false)?;
        Ok(buffer)
    }

    fn prepare(
        &self,
        launch: &Launch,
        params: Option<Binding<'_, Allocation>>,
        operands: &[Binding<'_, Allocation>],
        what: &str,
    ) -> Result<Prepared> {
        match launch {
            Launch::Kernel(dispatch) => {
                let params = params
                    .ok_or_else(|| Error::Internal(format!("step '{what}': no parameters")))?;
                let [x, y, z] = dispatch
                    .grid
                    .blocks(MAX_GRID_X)?
                    .ok_or_else(|| Error::Internal(format!("step '{what}': an empty launch")))?;
                let function = self.device.function(&dispatch.shader)?;
                let args = std::iter::once(&params)
                    .chain(operands)
                    .map(Self::address)
                    .collect();
                Ok(Prepared::Kernel {
                    function,
                    grid: (x, y, z),
                    args,
                })
            }
            Launch::Gemm(gemm) => Ok(Prepared::Gemm(Self::ready_gemm(gemm, operands)?)),
        }
    }

    fn begin(&self) -> Result<Run> {
        self.device
            .ctx
            .bind_to_thread()
            .doing("binding the CUDA context", true)?;
        Ok(Run { staged: vec![] })
    }

    fn record(&self, _run: &mut Run, launches: &[Prepared]) -> Result<()> {
        launches.iter().try_for_each(|ready| self.launch(ready))
    }

    fn write(&self, run: &mut Run, to: Binding<'_, Allocation>, words: Vec<u8>) -> Result<()> {
        if !words.is_empty() {
            // SAFETY: the range holds `words.len()` bytes; `words` is kept in the run until
            // the stream is synchronised.
            unsafe {
                result::memcpy_htod_async(Self::address(&to), &words, self.stream.cu_stream())
            }
            .doing("uploading to the device", true)?;
            run.staged.push(words);
        }
        Ok(())
    }

    fn copy(&self, _run: &mut Run, from: Binding<'_, Allocation>, to: &Allocation) -> Result<()> {
        if from.bytes > 0 {
            // SAFETY: both hold `from.bytes` bytes.
            unsafe {
                result::memcpy_dtod_async(
                    to.ptr,
                    Self::address(&from),
                    from.bytes,
                    self.stream.cu_stream(),
                )
            }
            .doing("copying on the device", true)?;
        }
        Ok(())
    }

    async fn sync(&self, run: &mut Run) -> Result<()> {
        self.stream
            .synchronize()
            .doing("waiting for the device", true)?;
        run.staged.clear();
        Ok(())
    }

    async fn read(
        &self,
        run: &mut Run,
        ranges: &[Binding<'_, Allocation>],
    ) -> Result<Vec<Vec<u8>>> {
        self.sync(run).await?;
        ranges
            .iter()
            .map(|range| {
                let mut out = vec![0u8; range.bytes];
                if !out.is_empty() {
                    // SAFETY: the range lies in a live allocation; the stream is idle.
                    unsafe { result::memcpy_dtoh_sync(&mut out, Self::address(range)) }
                        .doing("reading back from the device", true)?;
                }
                Ok(out)
            })
            .collect()
    }

    async fn finish(&self, mut run: Run) -> Result<()> {
        self.sync(&mut run).await
    }
}
