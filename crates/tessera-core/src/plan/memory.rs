//! Buffer planning: how long every intermediate value lives, and which buffer holds it.
//!
//! Liveness: a value produced by step `p` lives until the last step that reads it (or one of its
//! views); graph outputs live to the end. Buffers are reused greedily in step order: each new
//! value takes the smallest free buffer that fits, else grows the largest free one, else gets a
//! new buffer. Outputs of a step are placed before that step's inputs are released, so a kernel
//! never writes over what it reads. Views share their source's buffer and extend its lifetime.
//! Runtime inputs and constants are not planned here: a backend holds them in their own buffers.

use super::{Step, Value, ValueId};
use crate::{Error, Result};

/// Where every planned value lives, and what that costs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryPlan {
    /// Size in bytes of each buffer to allocate.
    pub buffers: Vec<usize>,
    /// Per value: the buffer that holds it (views: their source's buffer); `None` for inputs,
    /// constants and views of them.
    pub buffer_of: Vec<Option<usize>>,
    /// Per value that owns a buffer: `(first step, last step)` of its life, both inclusive;
    /// outputs end at `steps.len()`.
    pub lifetime: Vec<Option<(usize, usize)>>,
    /// The most bytes held by live values at any one step.
    pub peak_live_bytes: usize,
    /// Sum of [`MemoryPlan::buffers`].
    pub planned_bytes: usize,
    /// Bytes if every value produced by a step had its own buffer.
    pub naive_bytes: usize,
}

fn root(values: &[Value], id: ValueId) -> Result<ValueId> {
    let mut current = id;
    for _ in 0..=values.len() {
        let value = values
            .get(current.0)
            .ok_or_else(|| Error::Internal(format!("memory plan: no value {}", current.0)))?;
        match value.alias_of {
            Some(source) => current = source,
            None => return Ok(current),
        }
    }
    Err(Error::Internal(format!(
        "memory plan: alias cycle at {}",
        id.0
    )))
}

impl MemoryPlan {
    /// Plans buffers for `steps` over `values`; `outputs` live to the end.
    pub fn build(values: &[Value], steps: &[Step], outputs: &[ValueId]) -> Result<MemoryPlan> {
        let n = values.len();
        let end = steps.len();
        let mut produced: Vec<Option<usize>> = vec![None; n];
        for (ix, step) in steps.iter().enumerate() {
            for &out in &step.outputs {
                if root(values, out)? != out {
                    return Err(Error::Internal(format!("step {ix} writes a view")));
                }
                if produced[out.0].replace(ix).is_some() {
                    return Err(Error::Internal(format!("value {} written twice", out.0)));
                }
            }
        }
        let mut last: Vec<Option<usize>> = produced.clone();
        for (ix, step) in steps.iter().enumerate() {
            for &input in &step.inputs {
                let r = root(values, input)?;
                if let Some(p) = produced[r.0] {
                    if p >= ix {
                        return Err(Error::Internal(format!(
                            "step {ix} reads value {} before step {p} writes it",
                            input.0
                        )));
                    }
                    last[r.0] = last[r.0].max(Some(ix));
                }
            }
        }
        for &out in outputs {
            let r = root(values, out)?;
            if produced[r.0].is_some() {
                last[r.0] = Some(end);
            }
        }
        let mut plan = MemoryPlan {
            buffer_of: vec![None; n],
            lifetime: vec![None; n],
            ..MemoryPlan::default()
        };
        // Values to release after each step.
        let mut release: Vec<Vec<usize>> = vec![vec![]; end + 1];
        let mut free: Vec<usize> = vec![];
        let mut live = 0usize;
        for (ix, step) in steps.iter().enumerate() {
            for &out in &step.outputs {
                let size = values[out.0].bytes();
                plan.naive_bytes += size;
                let buffer = plan.take(&mut free, size);
                plan.buffer_of[out.0] = Some(buffer);
                let until = last[out.0].unwrap_or(ix);
                plan.lifetime[out.0] = Some((ix, until));
                release[until].push(out.0);
                live += size;
            }
            plan.peak_live_bytes = plan.peak_live_bytes.max(live);
            for v in std::mem::take(&mut release[ix]) {
                live -= values[v].bytes();
                if let Some(b) = plan.buffer_of[v] {
                    free.push(b);
                }
            }
        }
        for (ix, value) in values.iter().enumerate() {
            if value.alias_of.is_some() {
                plan.buffer_of[ix] = plan.buffer_of[root(values, value.id)?.0];
            }
        }
        plan.planned_bytes = plan.buffers.iter().sum();
        Ok(plan)
    }

    /// Best fit among free buffers; else grow the largest free one; else a new one.
    fn take(&mut self, free: &mut Vec<usize>, size: usize) -> usize {
        let fitting = free
            .iter()
            .enumerate()
            .filter(|&(_, &b)| self.buffers[b] >= size)
            .min_by_key(|&(_, &b)| self.buffers[b]);
        let chosen = fitting.map(|(slot, _)| slot).or_else(|| {
            free.iter()
                .enumerate()
                .max_by_key(|&(_, &b)| self.buffers[b])
                .map(|(slot, _)| slot)
        });
        match chosen {
            Some(slot) => {
                let buffer = free.swap_remove(slot);
                self.buffers[buffer] = self.buffers[buffer].max(size);
                buffer
            }
            None => {
                self.buffers.push(size);
                self.buffers.len() - 1
            }
        }
    }

    /// Checks that no two values sharing a buffer are alive at the same step, and that every
    /// buffer holds its values.
    pub fn check(&self, values: &[Value]) -> Result<()> {
        let mut by_buffer: Vec<Vec<(usize, usize)>> = vec![vec![]; self.buffers.len()];
        for (ix, lifetime) in self.lifetime.iter().enumerate() {
            if let (Some(range), Some(buffer)) = (lifetime, self.buffer_of[ix]) {
                let size = values.get(ix).map(Value::bytes).unwrap_or(0);
                if self.buffers.get(buffer).copied().unwrap_or(0) < size {
                    return Err(Error::Internal(format!(
                        "buffer {buffer} too small for value {ix}"
                    )));
                }
                by_buffer[buffer].push(*range);
            }
        }
        for (buffer, mut ranges) in by_buffer.into_iter().enumerate() {
            ranges.sort_unstable();
            for pair in ranges.windows(2) {
                if pair[1].0 <= pair[0].1 {
                    return Err(Error::Internal(format!(
                        "buffer {buffer}: lifetimes {:?} and {:?} overlap",
                        pair[0], pair[1]
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::plan::{KernelOp, Role};

    fn value(id: usize, elements: usize, role: Role, alias_of: Option<usize>) -> Value {
        Value {
            id: ValueId(id),
            name: format!("v{id}"),
            shape: vec![elements],
            dtype: DType::F32,
            role,
            alias_of: alias_of.map(ValueId),
            outlet: None,
        }
    }

    fn step(inputs: &[usize], outputs: &[usize]) -> Step {
        Step {
            node: "n".into(),
            op: KernelOp::Opaque {
                tract_op: "Test".into(),
            },
            inputs: inputs.iter().copied().map(ValueId).collect(),
            outputs: outputs.iter().copied().map(ValueId).collect(),
        }
    }

    #[test]
    fn chain_reuses_buffers() {
        // x -> a -> b -> c -> out: two buffers suffice (ping-pong), a and c share one.
        let values = vec![
            value(0, 10, Role::Input(0), None),
            value(1, 10, Role::Intermediate, None),
            value(2, 10, Role::Intermediate, None),
            value(3, 10, Role::Intermediate, None),
            value(4, 10, Role::Output(0), None),
        ];
        let steps = vec![
            step(&[0], &[1]),
            step(&[1], &[2]),
            step(&[2], &[3]),
            step(&[3], &[4]),
        ];
        let plan = MemoryPlan::build(&values, &steps, &[ValueId(4)]).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.buffers.len(), 2);
        assert_eq!(plan.buffer_of[1], plan.buffer_of[3]);
        assert_eq!(plan.naive_bytes, 160);
        assert_eq!(plan.planned_bytes, 80);
        assert_eq!(plan.peak_live_bytes, 80);
        assert_eq!(plan.buffer_of[0], None);
    }

    #[test]
    fn nothing_freed_while_still_read() {
        // a is read by the last step too, so it may not be reused by b or c.
        let values = vec![
            value(0, 4, Role::Input(0), None),
            value(1, 4, Role::Intermediate, None),
            value(2, 4, Role::Intermediate, None),
            value(3, 4, Role::Intermediate, None),
            value(4, 4, Role::Output(0), None),
        ];
        let steps = vec![
            step(&[0], &[1]),
            step(&[1], &[2]),
            step(&[2], &[3]),
            step(&[1, 3], &[4]),
        ];
        let plan = MemoryPlan::build(&values, &steps, &[ValueId(4)]).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.lifetime[1], Some((0, 3)));
        for other in [2, 3, 4] {
            assert_ne!(plan.buffer_of[1], plan.buffer_of[other]);
        }
        // v2 is released after step 2, so step 3's output takes its buffer.
        assert_eq!(plan.buffer_of[4], plan.buffer_of[2]);
    }

    #[test]
    fn aliases_extend_lifetime() {
        // v2 is a view of v1 read at step 2: v1 must live until step 2.
        let values = vec![
            value(0, 8, Role::Input(0), None),
            value(1, 8, Role::Intermediate, None),
            value(2, 8, Role::Intermediate, Some(1)),
            value(3, 8, Role::Intermediate, None),
            value(4, 8, Role::Output(0), None),
        ];
        let steps = vec![step(&[0], &[1]), step(&[0], &[3]), step(&[2, 3], &[4])];
        let plan = MemoryPlan::build(&values, &steps, &[ValueId(4)]).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.lifetime[1], Some((0, 2)));
        assert_eq!(plan.buffer_of[2], plan.buffer_of[1]);
        assert_ne!(plan.buffer_of[1], plan.buffer_of[3]);
        assert_eq!(plan.peak_live_bytes, 32 * 3);
    }

    #[test]
    fn output_views_live_to_the_end_and_best_fit_grows() {
        let values = vec![
            value(0, 4, Role::Input(0), None),
            value(1, 100, Role::Intermediate, None),
            value(2, 2, Role::Intermediate, None),
            value(3, 2, Role::Output(0), Some(2)),
            value(4, 50, Role::Intermediate, None),
            value(5, 120, Role::Output(1), None),
        ];
        let steps = vec![
            step(&[0], &[1]),
            step(&[1], &[2]),
            step(&[0], &[4]),
            step(&[4], &[5]),
        ];
        let plan = MemoryPlan::build(&values, &steps, &[ValueId(3), ValueId(5)]).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.lifetime[2], Some((1, 4)));
        // v4 (200 B) fits in v1's freed 400 B buffer; v5 (480 B) grows... no free buffer
        // remains while v4 is read, so it gets a new one.
        assert_eq!(plan.buffer_of[4], plan.buffer_of[1]);
        assert!(plan.peak_live_bytes <= plan.planned_bytes);
        assert!(plan.planned_bytes <= plan.naive_bytes);
    }

    #[test]
    fn read_before_write_is_an_error() {
        let values = vec![
            value(0, 1, Role::Intermediate, None),
            value(1, 1, Role::Output(0), None),
        ];
        let steps = vec![step(&[0], &[1]), step(&[], &[0])];
        assert!(MemoryPlan::build(&values, &steps, &[ValueId(1)]).is_err());
    }
}
