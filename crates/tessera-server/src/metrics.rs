//! Prometheus metrics, per model: requests, failures, queue depth, latency.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

/// Every metric the server exports at `/metrics`.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    /// Inference requests received for a known model.
    pub requests: IntCounterVec,
    /// Of those, the ones answered with an error.
    pub failures: IntCounterVec,
    /// Requests waiting in a model's queue.
    pub queue_depth: IntGaugeVec,
    /// Time from receiving an inference request to answering it.
    pub request_latency: HistogramVec,
    /// Time a worker spent running the model (a whole batch when batching).
    pub compute_latency: HistogramVec,
    /// Requests merged into one run (dynamic batching).
    pub batch_size: HistogramVec,
}

/// Latency buckets from 100 µs to 30 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

impl Metrics {
    pub fn new() -> Result<Metrics, prometheus::Error> {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "tessera_inference_requests_total",
                "Inference requests received, per model",
            ),
            &["model"],
        )?;
        let failures = IntCounterVec::new(
            Opts::new(
                "tessera_inference_failures_total",
                "Inference requests answered with an error, per model",
            ),
            &["model"],
        )?;
        let queue_depth = IntGaugeVec::new(
            Opts::new(
                "tessera_queue_depth",
                "Inference requests waiting for a worker, per model",
            ),
            &["model"],
        )?;
        let request_latency = HistogramVec::new(
            HistogramOpts::new(
                "tessera_request_duration_seconds",
                "Time from receiving an inference request to answering it, per model",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["model"],
        )?;
        let compute_latency = HistogramVec::new(
            HistogramOpts::new(
                "tessera_compute_duration_seconds",
                "Time a worker spent running the model, per model",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["model"],
        )?;
        let batch_size = HistogramVec::new(
            HistogramOpts::new(
                "tessera_batch_size",
                "Requests merged into one run by dynamic batching, per model",
            )
            .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]),
            &["model"],
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(failures.clone()))?;
        registry.register(Box::new(queue_depth.clone()))?;
        registry.register(Box::new(request_latency.clone()))?;
        registry.register(Box::new(compute_latency.clone()))?;
        registry.register(Box::new(batch_size.clone()))?;
        Ok(Metrics {
            registry,
            requests,
            failures,
            queue_depth,
            request_latency,
            compute_latency,
            batch_size,
        })
    }

    /// Creates each model's series at zero, so a scrape lists every model from the start.
    pub fn register_model(&self, model: &str) {
        self.requests.with_label_values(&[model]);
        self.failures.with_label_values(&[model]);
        self.queue_depth.with_label_values(&[model]);
    }

    /// The text exposition format.
    pub fn render(&self) -> Result<String, String> {
        let mut buffer = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buffer)
            .map_err(|e| e.to_string())?;
        String::from_utf8(buffer).map_err(|e| e.to_string())
    }
}
