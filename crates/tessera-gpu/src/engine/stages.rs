//! Staged plans on a GPU session: models whose shapes depend on values computed at run time
//! (`NonZero`), run as the core cuts them ([`tessera_core::lower::stages`]).
//!
//! A run computes the first stage on the device, its outputs left there; reads back only the
//! counts; finds (or plans, once per count) the rest; and runs it on the first stage's outputs,
//! device to device. The counts read back are the only extra copies between host and device,
//! counted in [`Transfers::count_bytes`] and listed in the placement report (stage by stage).

use super::session::{GpuSession, PlanEntry, Signature};
use super::{DeviceBuffer, Feed, Gpu, Produced, device_bytes};
use crate::repr::{self, WORD_BYTES};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tessera_core::lower::stages::Stages;
use tessera_core::plan::{
    CountRead, NextStage, Plan, PlanReport, Role, Transfer, TransferDirection, Transfers, ValueId,
};
use tessera_core::plan_cache::PlanCache;
use tessera_core::tract_onnx::prelude::TypedModel;
use tessera_core::{DType, Error, Result, Tensor};

/// How many plans of a later stage (distinct counts) a staged plan keeps.
const STAGE_CACHE_SIZE: usize = 8;

/// A lowered graph made into one plan, or cut into stages.
pub(super) enum Built {
    Whole(Plan),
    Staged { stages: Stages, first: Plan },
}

impl Built {
    /// The plan of `typed`, or, when its shapes depend on values computed at run time, its
    /// stages (the first one planned). With `every_step_lowered`, a plan with a step no kernel
    /// runs is an error.
    pub(super) fn of(typed: &TypedModel, every_step_lowered: bool) -> Result<Built> {
        let checked = |plan: Plan| {
            if every_step_lowered {
                plan.require_lowered()?;
            }
            Ok(plan)
        };
        match Plan::build(typed) {
            Ok(plan) => Ok(Built::Whole(checked(plan)?)),
            Err(whole) => match tessera_core::lower::stages::split(typed)? {
                None => Err(whole),
                Some(stages) => {
                    let first = checked(Plan::build(&stages.first)?)?;
                    Ok(Built::Staged { stages, first })
                }
            },
        }
    }
}

/// What a session runs for one input signature.
pub(super) enum Planned<G: Gpu> {
    Whole(Arc<PlanEntry<G>>),
    Staged(Arc<Staged<G>>),
}

impl<G: Gpu> Clone for Planned<G> {
    fn clone(&self) -> Self {
        match self {
            Planned::Whole(entry) => Planned::Whole(entry.clone()),
            Planned::Staged(staged) => Planned::Staged(staged.clone()),
        }
    }
}

/// A staged plan: its first stage compiled, the rest planned per count.
pub(super) struct Staged<G: Gpu> {
    first: Arc<PlanEntry<G>>,
    stages: Stages,
    rest: Mutex<PlanCache<Planned<G>, Vec<usize>>>,
}

/// One stage a run went through, and the counts read back after it (none after the last).
pub(super) struct StageRun<G: Gpu> {
    pub(super) entry: Arc<PlanEntry<G>>,
    pub(super) counts: Vec<CountRead>,
}

/// A run's outputs, their signatures, its copies, and the stages it went through.
pub(super) type Ran<G> = (
    Vec<Produced<<G as Gpu>::Buffer>>,
    Vec<Signature>,
    Transfers,
    Vec<StageRun<G>>,
);

/// A first-stage output handed to the next stage: on the device (trimmed to the value the
/// next stage reads) or on the host (empty values, host steps).
enum Passed<B> {
    Device(DeviceBuffer<B>),
    Host(Tensor),
}

impl<G: Gpu> GpuSession<G> {
    /// Compiles what [`Built::of`] made.
    pub(super) fn planned(&self, built: Built, typed: TypedModel) -> Result<Planned<G>> {
        Ok(match built {
            Built::Whole(plan) => Planned::Whole(self.compile(plan, typed)?),
            Built::Staged { mut stages, first } => {
                let first_typed = std::mem::take(&mut stages.first);
                Planned::Staged(Arc::new(Staged {
                    first: self.compile(first, first_typed)?,
                    stages,
                    rest: Mutex::new(PlanCache::new(STAGE_CACHE_SIZE)),
                }))
            }
        })
    }

    /// The rest of a staged plan for these counts (cached).
    fn rest_for(&self, staged: &Staged<G>, counts: &[usize]) -> Result<Planned<G>> {
        let key = counts.to_vec();
        let cached = staged.rest.lock().map_err(|e| self.poisoned(e))?.get(&key);
        if let Some(planned) = cached {
            return Ok(planned);
        }
        let typed = staged.stages.rest_for(counts)?;
        let planned = self.planned(Built::of(&typed, false)?, typed)?;
        (staged.rest.lock().map_err(|e| self.poisoned(e))?).insert(key, planned.clone());
        Ok(planned)
    }

    /// Runs what was planned on `feeds` (the plan's runtime inputs, in order).
    pub(super) fn run_planned<'a>(
        &'a self,
        planned: &'a Planned<G>,
        feeds: &'a [Feed<'a, G::Buffer>],
        on_device: bool,
    ) -> Pin<Box<dyn Future<Output = Result<Ran<G>>> + 'a>> {
        Box::pin(async move {
            match planned {
                Planned::Whole(entry) => {
                    let compiled = entry.compiled.lock().map_err(|e| self.poisoned(e))?;
                    let (outputs, transfers) =
                        (compiled.run(&*self.gpu, feeds, on_device, None, None)).await?;
                    let signatures = compiled
                        .plan
                        .outputs
                        .iter()
                        .map(|&id| compiled.plan.value(id).map(|v| (v.shape.clone(), v.dtype)))
                        .collect::<Result<_>>()?;
                    let stage = StageRun {
                        entry: entry.clone(),
                        counts: vec![],
                    };
                    Ok((outputs, signatures, transfers, vec![stage]))
                }
                Planned::Staged(staged) => self.run_staged(staged, feeds, on_device).await,
            }
        })
    }

    async fn run_staged(
        &self,
        staged: &Staged<G>,
        feeds: &[Feed<'_, G::Buffer>],
        on_device: bool,
    ) -> Result<Ran<G>> {
        let (outputs, mut transfers) = {
            let first = staged.first.compiled.lock().map_err(|e| self.poisoned(e))?;
            first.run(&*self.gpu, feeds, true, None, None).await?
        };
        let counts = self.read_counts(staged, &outputs, &mut transfers).await?;
        let values: Vec<usize> = counts.iter().map(|c| c.count).collect();
        let rest = (self.gpu)
            .checked(|| self.rest_for(staged, &values))
            .await?;

        // The first stage's outputs the rest reads, in its input order, trimmed to the counts.
        if outputs.len() < staged.stages.passed {
            return Err(Error::Internal(format!(
                "the first stage made {} outputs, the rest takes {}",
                outputs.len(),
                staged.stages.passed
            )));
        }
        let mut passed = Vec::with_capacity(staged.stages.passed);
        for (at, produced) in outputs.into_iter().enumerate().take(staged.stages.passed) {
            let counted =
                (staged.stages.counts.iter().zip(&values)).find(|(c, _)| c.padded == Some(at));
            passed.push(match (produced, counted) {
                (Produced::Device(buffer), counted) => {
                    let mut buffer = Arc::try_unwrap(buffer).map_err(|_| {
                        Error::Internal("a first-stage output is held twice".into())
                    })?;
                    if let Some((count, &n)) = counted {
                        buffer.bytes = count.width * n * WORD_BYTES;
                    }
                    Passed::Device(buffer)
                }
                (Produced::Host(tensor), None) => Passed::Host(tensor),
                (Produced::Host(tensor), Some((count, &n))) => {
                    Passed::Host(trimmed(&tensor, count.width * n, count.result_shape(n))?)
                }
            });
        }
        let feeds: Vec<Feed<'_, G::Buffer>> = passed
            .iter()
            .map(|p| match p {
                Passed::Device(buffer) => Feed::Device(buffer),
                Passed::Host(tensor) => Feed::Host(tensor),
            })
            .collect();
        let (outputs, signatures, rest_transfers, rest_stages) =
            self.run_planned(&rest, &feeds, on_device).await?;
        transfers += rest_transfers;
        let mut stages = vec![StageRun {
            entry: staged.first.clone(),
            counts,
        }];
        stages.extend(rest_stages);
        Ok((outputs, signatures, transfers, stages))
    }

    /// Reads back the first stage's counts (the only words that leave the device).
    async fn read_counts(
        &self,
        staged: &Staged<G>,
        outputs: &[Produced<G::Buffer>],
        transfers: &mut Transfers,
    ) -> Result<Vec<CountRead>> {
        let missing = |what: &str| Error::Internal(format!("the first stage has no {what}"));
        let mut ranges = vec![];
        for count in &staged.stages.counts {
            match outputs.get(count.output) {
                Some(Produced::Device(buffer)) => ranges.push(buffer.binding()),
                _ => return Err(missing("count on the device")),
            }
        }
        let mut run = self.gpu.begin()?;
        let words = self.gpu.read(&mut run, &ranges).await?;
        self.gpu.finish(run).await?;
        let mut counts = Vec::with_capacity(words.len());
        for (count, words) in staged.stages.counts.iter().zip(words) {
            transfers.count_bytes += words.len();
            let value = repr::from_words(DType::I64, vec![], &words)?;
            let value =
                (value.as_slice::<i64>()?.first().copied()).ok_or_else(|| missing("i64 count"))?;
            let value = count.check(value)?;
            counts.push(CountRead {
                node: count.node.clone(),
                op: count.op.clone(),
                count: value,
                bytes: words.len(),
            });
        }
        Ok(counts)
    }

    /// The placement report of the stages a run went through, in order. Outputs a stage hands
    /// to the next stay on the device: they are not listed as read back, nor the next stage's
    /// inputs as uploaded.
    pub(super) fn stages_report(&self, stages: &[StageRun<G>]) -> Result<PlanReport> {
        let mut next: Option<Box<NextStage>> = None;
        for (k, stage) in stages.iter().enumerate().rev() {
            let compiled = stage.entry.compiled.lock().map_err(|e| self.poisoned(e))?;
            let mut placement = compiled.placement.clone();
            let fed_by_a_stage = k > 0;
            let hands_on = !stage.counts.is_empty();
            placement.io_transfers.retain(|t| match t.direction {
                TransferDirection::HostToDevice => !fed_by_a_stage,
                TransferDirection::DeviceToHost => !hands_on,
            });
            // The last stage's outputs that are its inputs come from the device, not the host.
            if fed_by_a_stage && !hands_on {
                let plan = &compiled.plan;
                let mut read: Vec<ValueId> = vec![];
                for &output in &plan.outputs {
                    let root = plan.root(output)?;
                    let value = plan.value(root)?;
                    if matches!(value.role, Role::Input(_))
                        && !value.is_empty()
                        && !read.contains(&root)
                    {
                        read.push(root);
                        placement.io_transfers.push(Transfer {
                            value: root,
                            bytes: device_bytes(value),
                            direction: TransferDirection::DeviceToHost,
                            before_step: plan.steps.len(),
                        });
                    }
                }
            }
            let report = PlanReport {
                backend: self.gpu.target().backend.into(),
                device: self.gpu.describe(),
                placement,
                memory: compiled.device_memory,
                plan: compiled.plan.clone(),
                next: next.take(),
            };
            next = Some(Box::new(NextStage {
                counts: stages
                    .get(k.wrapping_sub(1))
                    .map(|before| before.counts.clone())
                    .unwrap_or_default(),
                report,
            }));
        }
        next.map(|stage| stage.report)
            .ok_or_else(|| Error::Internal("a run through no stage".into()))
    }
}

/// The result at the front of a padded i64 result: its first `len` entries, shaped `shape`.
fn trimmed(padded: &Tensor, len: usize, shape: Vec<usize>) -> Result<Tensor> {
    let values = (padded.as_slice::<i64>()?.get(..len))
        .ok_or_else(|| Error::Internal("a padded result shorter than its count".into()))?;
    Tensor::from_vec(shape, values.to_vec())
}
