//! Inference off the async runtime: each model has a bounded queue and its own OS worker
//! threads that run the session. A full queue is refused at once (503) instead of piling up.
//! With dynamic batching on, a worker merges queued requests that differ only in their first
//! (batch) dim into one run and splits the outputs back.

use crate::error::ServerError;
use crate::metrics::Metrics;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tessera::{DType, Dim, Session, Tensor};
use tokio::sync::oneshot;

/// Named tensors in, named tensors out.
pub type Tensors = Vec<(String, Tensor)>;
type Reply = oneshot::Sender<Result<Tensors, tessera::Error>>;

/// Dynamic batching settings (off unless given).
#[derive(Debug, Clone, Copy)]
pub struct Batching {
    /// Most rows (sum of the requests' first dims) merged into one run.
    pub max_batch: usize,
    /// How long a worker waits for more requests after the first one.
    pub timeout: Duration,
}

/// One queued request.
pub struct Job {
    pub inputs: Tensors,
    pub reply: Reply,
}

/// A model's queue and worker threads.
pub struct ModelWorkers {
    name: String,
    sender: Mutex<Option<Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    metrics: Metrics,
}

struct Worker {
    name: String,
    session: Arc<Session>,
    /// Model input names in order, when every input's first dim is open (batchable).
    batch_inputs: Option<Vec<String>>,
    batching: Option<Batching>,
    metrics: Metrics,
}

impl ModelWorkers {
    /// Starts `workers` threads sharing one queue of `capacity` requests.
    pub fn start(
        name: &str,
        session: Arc<Session>,
        workers: usize,
        capacity: usize,
        batching: Option<Batching>,
        metrics: Metrics,
    ) -> Result<ModelWorkers, ServerError> {
        let info = session.info();
        let batchable = info
            .inputs
            .iter()
            .all(|i| matches!(i.dims.as_deref(), Some([Dim::Symbol(_) | Dim::Unknown, ..])));
        if batching.is_some() && !batchable {
            tracing::info!(
                model = name,
                "dynamic batching off for this model: not every input has an open first dim"
            );
        }
        let batch_inputs = batchable.then(|| info.inputs.iter().map(|i| i.name.clone()).collect());
        let (sender, receiver) = crossbeam_channel::bounded(capacity.max(1));
        let mut threads = Vec::new();
        for index in 0..workers.max(1) {
            let worker = Worker {
                name: name.into(),
                session: session.clone(),
                batch_inputs: batch_inputs.clone(),
                batching,
                metrics: metrics.clone(),
            };
            let receiver = receiver.clone();
            let thread = std::thread::Builder::new()
                .name(format!("infer-{name}-{index}"))
                .spawn(move || worker.serve(receiver))
                .map_err(|source| ServerError::Io {
                    context: format!("starting a worker thread for model '{name}'"),
                    source,
                })?;
            threads.push(thread);
        }
        Ok(ModelWorkers {
            name: name.into(),
            sender: Mutex::new(Some(sender)),
            threads: Mutex::new(threads),
            metrics,
        })
    }

    /// Queues a request, or refuses it when the queue is full or the server is stopping.
    pub fn submit(&self, job: Job) -> Result<(), ServerError> {
        let sender = self
            .sender
            .lock()
            .map_err(|_| ServerError::Internal("worker queue lock poisoned".into()))?
            .clone()
            .ok_or_else(|| ServerError::Unavailable("the server is shutting down".into()))?;
        let depth = self.metrics.queue_depth.with_label_values(&[&self.name]);
        depth.inc();
        match sender.try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                depth.dec();
                Err(ServerError::Unavailable(format!(
                    "model '{}' has {} requests queued already; retry later",
                    self.name,
                    sender.capacity().unwrap_or(0)
                )))
            }
            Err(TrySendError::Disconnected(_)) => {
                depth.dec();
                Err(ServerError::Unavailable(
                    "the model's workers have stopped".into(),
                ))
            }
        }
    }

    /// Stops taking requests, lets the workers finish what is queued, and waits for them.
    pub fn close(&self) {
        if let Ok(mut sender) = self.sender.lock() {
            sender.take();
        }
        let threads = match self.threads.lock() {
            Ok(mut threads) => std::mem::take(&mut *threads),
            Err(_) => return,
        };
        for thread in threads {
            if thread.join().is_err() {
                tracing::error!(model = %self.name, "a worker thread panicked");
            }
        }
    }
}

impl Worker {
    fn serve(self, receiver: Receiver<Job>) {
        let mut carried: Option<Job> = None;
        loop {
            let first = match carried.take() {
                Some(job) => job,
                None => match receiver.recv() {
                    Ok(job) => self.dequeued(job),
                    Err(_) => return, // queue closed and drained
                },
            };
            let mut jobs = vec![first];
            if let (Some(batching), Some(_)) = (self.batching, &self.batch_inputs) {
                let mut rows = rows(&jobs[0]);
                let deadline = Instant::now() + batching.timeout;
                while rows < batching.max_batch {
                    match receiver.recv_deadline(deadline) {
                        Ok(job) => {
                            let job = self.dequeued(job);
                            if rows + self::rows(&job) > batching.max_batch {
                                carried = Some(job);
                                break;
                            }
                            rows += self::rows(&job);
                            jobs.push(job);
                        }
                        Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                    }
                }
            }
            // A request whose client gave up (timeout, disconnect) is not worth running.
            jobs.retain(|job| !job.reply.is_closed());
            match jobs.len() {
                0 => {}
                1 => {
                    if let Some(job) = jobs.pop() {
                        self.run_alone(job);
                    }
                }
                _ => self.run_batched(jobs),
            }
        }
    }

    fn dequeued(&self, job: Job) -> Job {
        self.metrics
            .queue_depth
            .with_label_values(&[&self.name])
            .dec();
        job
    }

    fn run(&self, inputs: Tensors, rows: usize) -> Result<Tensors, tessera::Error> {
        let start = Instant::now();
        let session = &self.session;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session.run(inputs)))
            .unwrap_or_else(|_| Err(tessera::Error::Internal("inference panicked".into())));
        self.metrics
            .compute_latency
            .with_label_values(&[&self.name])
            .observe(start.elapsed().as_secs_f64());
        if self.batching.is_some() {
            self.metrics
                .batch_size
                .with_label_values(&[&self.name])
                .observe(rows as f64);
        }
        result
    }

    fn run_alone(&self, job: Job) {
        let result = self.run(job.inputs, 1);
        // The client may have gone; nothing to do then.
        let _ = job.reply.send(result);
    }

    /// Runs groups of requests whose inputs agree on everything but the first dim as one
    /// run each; anything that cannot be merged or split back runs alone.
    fn run_batched(&self, jobs: Vec<Job>) {
        let Some(names) = &self.batch_inputs else {
            jobs.into_iter().for_each(|job| self.run_alone(job));
            return;
        };
        let mut groups: Vec<(Signature, Vec<Job>)> = Vec::new();
        for job in jobs {
            match signature(names, &job.inputs) {
                None => self.run_alone(job),
                Some(key) => match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, group)) => group.push(job),
                    None => groups.push((key, vec![job])),
                },
            }
        }
        for (_, mut group) in groups {
            if group.len() == 1 {
                if let Some(job) = group.pop() {
                    self.run_alone(job);
                }
                continue;
            }
            let counts: Vec<usize> = group.iter().map(rows).collect();
            let merged = merge(names, &group);
            let parts = merged
                .and_then(|inputs| self.run(inputs, group.len()).ok())
                .and_then(|outputs| split(outputs, &counts));
            match parts {
                Some(parts) => {
                    for (job, outputs) in group.into_iter().zip(parts) {
                        let _ = job.reply.send(Ok(outputs));
                    }
                }
                // Outputs without the batch as first dim, or a failed merged run: each
                // request runs alone and gets its own result or error.
                None => group.into_iter().for_each(|job| self.run_alone(job)),
            }
        }
    }
}

/// Each input's dtype and shape without the first dim, in model order.
type Signature = Vec<(DType, Vec<usize>)>;

fn signature(names: &[String], inputs: &Tensors) -> Option<Signature> {
    if inputs.len() != names.len() {
        return None;
    }
    names
        .iter()
        .map(|name| {
            let (_, t) = inputs.iter().find(|(n, _)| n == name)?;
            let (_, rest) = t.shape().split_first()?;
            Some((t.dtype(), rest.to_vec()))
        })
        .collect()
}

fn rows(job: &Job) -> usize {
    job.inputs
        .first()
        .and_then(|(_, t)| t.shape().first().copied())
        .unwrap_or(1)
}

/// Concatenates each input along its first dim, in model order.
fn merge(names: &[String], group: &[Job]) -> Option<Tensors> {
    names
        .iter()
        .map(|name| {
            let parts: Vec<&Tensor> = group
                .iter()
                .map(|job| job.inputs.iter().find(|(n, _)| n == name).map(|(_, t)| t))
                .collect::<Option<_>>()?;
            let first = parts.first()?;
            let mut shape = first.shape().to_vec();
            shape[0] = parts.iter().map(|t| t.shape()[0]).sum();
            let bytes: Vec<u8> = parts.iter().flat_map(|t| t.data().to_le_bytes()).collect();
            let merged = Tensor::from_le_bytes(first.dtype(), shape, &bytes).ok()?;
            Some((name.clone(), merged))
        })
        .collect()
}

/// Splits every output along its first dim into one part per request (`None` when an
/// output's first dim is not the merged batch).
fn split(outputs: Tensors, counts: &[usize]) -> Option<Vec<Tensors>> {
    let total: usize = counts.iter().sum();
    let mut parts: Vec<Tensors> = vec![Vec::new(); counts.len()];
    for (name, tensor) in outputs {
        let (&first, rest) = tensor.shape().split_first()?;
        if first != total {
            return None;
        }
        let row_bytes = rest.iter().product::<usize>() * tensor.dtype().size_of();
        let bytes = tensor.data().to_le_bytes();
        let mut offset = 0;
        for (part, &count) in parts.iter_mut().zip(counts) {
            let mut shape = vec![count];
            shape.extend_from_slice(rest);
            let end = offset + count * row_bytes;
            let piece =
                Tensor::from_le_bytes(tensor.dtype(), shape, bytes.get(offset..end)?).ok()?;
            part.push((name.clone(), piece));
            offset = end;
        }
    }
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_undoes_merge() {
        let (a, _) = oneshot::channel();
        let (b, _) = oneshot::channel();
        let names = vec!["x".to_string()];
        let jobs = vec![
            Job {
                inputs: vec![(
                    "x".into(),
                    Tensor::from_vec(vec![1, 2], vec![1i64, 2]).unwrap(),
                )],
                reply: a,
            },
            Job {
                inputs: vec![(
                    "x".into(),
                    Tensor::from_vec(vec![2, 2], vec![3i64, 4, 5, 6]).unwrap(),
                )],
                reply: b,
            },
        ];
        let merged = merge(&names, &jobs).unwrap();
        assert_eq!(merged[0].1.shape(), &[3, 2]);
        let parts = split(merged, &[1, 2]).unwrap();
        assert_eq!(parts[0][0].1, jobs[0].inputs[0].1);
        assert_eq!(parts[1][0].1, jobs[1].inputs[0].1);
        // An output whose first dim is not the batch cannot be split.
        let odd = vec![(
            "y".into(),
            Tensor::from_vec(vec![2], vec![1.0f32, 2.0]).unwrap(),
        )];
        assert!(split(odd, &[1, 2]).is_none());
    }
}
