//! The wgpu device as the GPU engine sees it ([`tessera_gpu::engine::Gpu`]): storage buffers,
//! pipelines with their bind groups, and a run recorded into command buffers (one compute pass
//! per stretch of device steps) and submitted to the queue.

use crate::context::{GpuContext, Pipeline};
use crate::shaders::{self, Target};
use std::num::NonZeroU64;
use std::sync::Arc;
use tessera_core::{Error, Result};
use tessera_gpu::engine::{Binding, Gpu};
use tessera_gpu::kernels::Launch;
use tessera_gpu::repr::WORD_BYTES;

/// A dispatch ready to record.
pub struct Prepared {
    pipeline: Arc<Pipeline>,
    bind_group: wgpu::BindGroup,
    groups: [u32; 3],
}

/// One run: the command buffer being recorded, the open compute pass, and the error scope that
/// catches what the device rejects.
pub struct Run {
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    scope: wgpu::ErrorScopeGuard,
    /// Work was submitted since the device was last waited for.
    in_flight: bool,
}

fn run_error(message: impl Into<String>) -> Error {
    Error::Run {
        backend: "wgpu".into(),
        message: message.into(),
    }
}

impl GpuContext {
    fn storage_buffer(&self, label: &str, bytes: usize) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            // Zero-sized buffers cannot be bound.
            size: bytes.max(WORD_BYTES).next_multiple_of(WORD_BYTES) as u64,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    }

    fn encoder(&self) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None })
    }

    /// Ends the open pass and submits what `run` recorded.
    fn submit(&self, run: &mut Run) {
        drop(run.pass.take());
        if let Some(encoder) = run.encoder.take() {
            self.queue.submit([encoder.finish()]);
            run.in_flight = true;
        }
    }

    /// Waits for what `run` submitted, if anything is in flight.
    fn wait_for(&self, run: &mut Run) -> Result<()> {
        if std::mem::take(&mut run.in_flight) {
            self.wait()?;
        }
        Ok(())
    }

    /// A `MAP_READ` buffer of at least `bytes` bytes, from the pool when one is free.
    fn staging(&self, bytes: usize) -> wgpu::Buffer {
        let mut pool = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = pool.iter().position(|b| b.size() >= bytes as u64) {
            return pool.swap_remove(at);
        }
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tessera read-back"),
            size: bytes.next_multiple_of(WORD_BYTES) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// Returns a staging buffer to the pool (a few are kept: runs of different plans take
    /// turns with them).
    fn release_staging(&self, buffer: wgpu::Buffer) {
        let mut pool = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < 4 {
            pool.push(buffer);
        }
    }
}

/// Waits for submitted work, then copies a `MAP_READ` buffer's first `bytes` bytes out. Natively
/// the wait blocks; in a browser the event loop completes the mapping while this awaits.
async fn map_read(ctx: &GpuContext, staging: &wgpu::Buffer, bytes: usize) -> Result<Vec<u8>> {
    let (sender, receiver) = futures_channel::oneshot::channel();
    staging.map_async(wgpu::MapMode::Read, ..bytes as u64, move |result| {
        sender.send(result).ok();
    });
    ctx.wait()?;
    receiver
        .await
        .map_err(|_| run_error("the device never answered a read-back"))?
        .map_err(|e| run_error(format!("reading back from the device: {e}")))?;
    let data = staging
        .get_mapped_range(..bytes as u64)
        .map_err(|e| run_error(format!("reading back from the device: {e}")))?
        .to_vec();
    staging.unmap();
    Ok(data)
}

impl Gpu for GpuContext {
    type Buffer = wgpu::Buffer;
    type Prepared = Prepared;
    type Run = Run;

    fn target(&self) -> Target {
        Target {
            // A MatMul whose weights exceed one binding is split into column blocks.
            max_binding_words: Some(self.max_binding_bytes() / WORD_BYTES),
            ..shaders::TARGET
        }
    }

    fn describe(&self) -> String {
        self.adapter.to_string()
    }

    fn block_on<T>(&self, future: impl Future<Output = Result<T>>) -> Result<T> {
        crate::context::block_on(future)
    }

    /// In a browser a kernel the device rejects is only reported asynchronously, so planning is
    /// checked under one error scope there; natively each kernel is checked as it compiles.
    async fn checked<T>(&self, plan: impl FnOnce() -> Result<T>) -> Result<T> {
        #[cfg(target_arch = "wasm32")]
        {
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
            let planned = plan();
            if let Some(error) = scope.pop().await {
                return Err(Error::Prepare {
                    backend: "wgpu".into(),
                    message: format!("the device rejected a kernel or buffer: {error}"),
                });
            }
            planned
        }
        #[cfg(not(target_arch = "wasm32"))]
        plan()
    }

    fn max_buffer_bytes(&self) -> usize {
        self.limits.max_buffer_size as usize
    }

    fn max_binding_bytes(&self) -> usize {
        self.limits.max_storage_buffer_binding_size as usize
    }

    fn alloc(&self, bytes: usize, what: &str) -> Result<wgpu::Buffer> {
        let limit = self.max_buffer_bytes();
        if bytes > limit {
            return Err(Error::Prepare {
                backend: "wgpu".into(),
                message: format!(
                    "{what} needs {bytes} bytes on the device, above this adapter's largest buffer ({limit} bytes)"
                ),
            });
        }
        Ok(self.storage_buffer(what, bytes))
    }

    fn upload(&self, words: &[u8], what: &str) -> Result<wgpu::Buffer> {
        let buffer = self.alloc(words.len(), what)?;
        if !words.is_empty() {
            self.queue.write_buffer(&buffer, 0, words);
        }
        Ok(buffer)
    }

    fn prepare(
        &self,
        launch: &Launch,
        params: Option<Binding<'_, wgpu::Buffer>>,
        operands: &[Binding<'_, wgpu::Buffer>],
        what: &str,
    ) -> Result<Prepared> {
        let (Launch::Kernel(dispatch), Some(params)) = (launch, params) else {
            return Err(Error::Internal(format!(
                "step '{what}': a GEMM call, and wgpu has no GEMM library"
            )));
        };
        let groups = dispatch
            .grid
            .blocks(self.limits.max_compute_workgroups_per_dimension)?
            .ok_or_else(|| Error::Internal(format!("step '{what}': an empty dispatch")))?;
        let pipeline = self.pipeline(&dispatch.shader, operands.len())?;
        let entries: Vec<wgpu::BindGroupEntry> = std::iter::once(&params)
            .chain(operands)
            .enumerate()
            .map(|(binding, range)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: range.buffer,
                    offset: range.offset as u64,
                    size: NonZeroU64::new(range.bytes.max(WORD_BYTES) as u64),
                }),
            })
            .collect();
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(what),
            layout: &pipeline.layout,
            entries: &entries,
        });
        Ok(Prepared {
            pipeline,
            bind_group,
            groups,
        })
    }

    fn begin(&self) -> Result<Run> {
        Ok(Run {
            encoder: None,
            pass: None,
            scope: self.device.push_error_scope(wgpu::ErrorFilter::Validation),
            in_flight: false,
        })
    }

    fn record(&self, run: &mut Run, launches: &[Prepared]) -> Result<()> {
        let encoder = run.encoder.get_or_insert_with(|| self.encoder());
        let pass = run.pass.get_or_insert_with(|| {
            encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor::default())
                .forget_lifetime()
        });
        for launch in launches {
            pass.set_pipeline(&launch.pipeline.pipeline);
            pass.set_bind_group(0, &launch.bind_group, &[]);
            let [x, y, z] = launch.groups;
            pass.dispatch_workgroups(x, y, z);
        }
        Ok(())
    }

    fn write(&self, run: &mut Run, to: Binding<'_, wgpu::Buffer>, words: Vec<u8>) -> Result<()> {
        // The queue writes before the next submission's commands: what is recorded goes first.
        self.submit(run);
        if !words.is_empty() {
            self.queue.write_buffer(to.buffer, to.offset as u64, &words);
        }
        Ok(())
    }

    fn copy(
        &self,
        run: &mut Run,
        from: Binding<'_, wgpu::Buffer>,
        to: &wgpu::Buffer,
    ) -> Result<()> {
        drop(run.pass.take());
        if from.bytes > 0 {
            let encoder = run.encoder.get_or_insert_with(|| self.encoder());
            encoder.copy_buffer_to_buffer(
                from.buffer,
                from.offset as u64,
                to,
                0,
                from.bytes as u64,
            );
        }
        Ok(())
    }

    async fn sync(&self, run: &mut Run) -> Result<()> {
        self.submit(run);
        self.wait_for(run)
    }

    async fn read(
        &self,
        run: &mut Run,
        ranges: &[Binding<'_, wgpu::Buffer>],
    ) -> Result<Vec<Vec<u8>>> {
        let total: usize = ranges.iter().map(|r| r.bytes).sum();
        if total == 0 {
            self.sync(run).await?;
            return Ok(ranges.iter().map(|_| vec![]).collect());
        }
        // One staging buffer for all ranges, copied in the run's last command buffer.
        let staging = self.staging(total);
        drop(run.pass.take());
        let encoder = run.encoder.get_or_insert_with(|| self.encoder());
        let mut at = 0;
        for range in ranges {
            if range.bytes > 0 {
                encoder.copy_buffer_to_buffer(
                    range.buffer,
                    range.offset as u64,
                    &staging,
                    at as u64,
                    range.bytes as u64,
                );
            }
            at += range.bytes;
        }
        self.submit(run);
        // The mapping waits for the device.
        run.in_flight = false;
        let all = map_read(self, &staging, total).await?;
        self.release_staging(staging);
        let mut at = 0;
        Ok(ranges
            .iter()
            .map(|range| {
                at += range.bytes;
                all[at - range.bytes..at].to_vec()
            })
            .collect())
    }

    async fn finish(&self, mut run: Run) -> Result<()> {
        self.submit(&mut run);
        self.wait_for(&mut run)?;
        if let Some(error) = run.scope.pop().await {
            return Err(run_error(format!("the device rejected the run: {error}")));
        }
        Ok(())
    }
}
