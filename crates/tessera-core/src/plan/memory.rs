//! Memory planning: how long every intermediate value lives, and where in one arena it lives.
//!
//! Liveness: a value produced by step `p` lives from `p` until the last step that reads it (or
//! one of its views), both inclusive; graph outputs live to `steps.len()`. Because lifetimes are
//! inclusive, a step's outputs are alive at the step that reads its inputs, so the two never
//! share bytes and a kernel never writes over what it reads. Views share their source's bytes
//! and extend its lifetime. Runtime inputs and constants are not planned here: a backend holds
//! them in their own buffers.
//!
//! Placement: every planned value gets a byte offset in ONE arena, greedily by size (largest
//! first, ties by first use, then by id): a value takes the smallest gap that fits between the
//! already-placed values whose lifetimes overlap its own, else goes just above the highest of
//! them. Offsets are multiples of an alignment (and each value is padded to one, so that the
//! next offset is aligned too). Placing the large values first keeps the small ones from
//! fragmenting the space the large ones need; in step order a small long-lived value can land in
//! the middle of a hole that a later large value would have filled (see the tests).
//!
//! [`MemoryPlan::build`] uses the dtype's element size and [`MemoryPlan::DEFAULT_ALIGNMENT`]
//! (256 bytes: the `minStorageBufferOffsetAlignment` WebGPU guarantees, and what `cudaMalloc`
//! aligns to), so the default plan can be bound directly by a device that holds values in their
//! own dtype. A backend that stores elements differently (wgpu keeps every element in a 4-byte
//! word) plans again with [`MemoryPlan::build_with`] and its own sizes.

use super::{Step, Value, ValueId};
use crate::{Error, Result};

/// Where every planned value lives in the arena, and what that costs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemoryPlan {
    /// Every offset (and every planned value's reserved size) is a multiple of this.
    pub alignment: usize,
    /// Per value: its byte offset in the arena (views: their root's offset); `None` for inputs,
    /// constants and views of them.
    pub offset_of: Vec<Option<usize>>,
    /// Per value: its size in bytes as the plan was built (the size function's answer, before
    /// padding to the alignment), for views too; 0 for inputs, constants and views of them.
    pub bytes_of: Vec<usize>,
    /// Per value placed in the arena (not views): `(first step, last step)` of its life, both
    /// inclusive; outputs end at `steps.len()`.
    pub lifetime: Vec<Option<(usize, usize)>>,
    /// The most bytes held by live values at any one step (a lower bound for the arena).
    pub peak_live_bytes: usize,
    /// Size of the arena in bytes: the highest `offset + bytes` of any value.
    pub planned_bytes: usize,
    /// Bytes if every value produced by a step had its own buffer (the sum of their sizes).
    pub naive_bytes: usize,
}

impl Default for MemoryPlan {
    /// The plan of no value, with [`MemoryPlan::DEFAULT_ALIGNMENT`].
    fn default() -> Self {
        MemoryPlan {
            alignment: MemoryPlan::DEFAULT_ALIGNMENT,
            offset_of: vec![],
            bytes_of: vec![],
            lifetime: vec![],
            peak_live_bytes: 0,
            planned_bytes: 0,
            naive_bytes: 0,
        }
    }
}

/// A value placed in the arena.
#[derive(Debug, Clone, Copy)]
struct Item {
    value: usize,
    first: usize,
    last: usize,
    /// Size padded to the alignment.
    padded: usize,
}

impl Item {
    fn overlaps(&self, other: &Item) -> bool {
        self.first <= other.last && other.first <= self.last
    }
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

/// Offsets for `items`, placed in `order` (indices into `items`): each takes the smallest gap
/// that fits among the placed items whose lifetimes overlap its own, else goes above the highest
/// of them. Every `padded` size is a multiple of the alignment, so every offset is too.
fn assign_offsets(items: &[Item], order: &[usize]) -> Vec<usize> {
    let mut offsets = vec![0; items.len()];
    // Placed items as (offset, index), sorted by offset.
    let mut placed: Vec<(usize, usize)> = Vec::with_capacity(items.len());
    for &ix in order {
        let item = &items[ix];
        let mut best: Option<(usize, usize)> = None; // (gap, offset)
        let mut top = 0;
        for &(offset, other) in &placed {
            let other = &items[other];
            // An empty value holds no byte: it splits no gap.
            if other.padded == 0 || !item.overlaps(other) {
                continue;
            }
            if offset >= top {
                let gap = offset - top;
                if gap >= item.padded && best.is_none_or(|(b, _)| gap < b) {
                    best = Some((gap, top));
                }
            }
            top = top.max(offset + other.padded);
        }
        let offset = best.map_or(top, |(_, at)| at);
        offsets[ix] = offset;
        let at = placed.partition_point(|&(o, _)| o <= offset);
        placed.insert(at, (offset, ix));
    }
    offsets
}

impl MemoryPlan {
    /// The alignment [`MemoryPlan::build`] uses: 256 bytes.
    pub const DEFAULT_ALIGNMENT: usize = 256;

    /// Plans `steps` over `values` with each value's dtype size ([`Value::bytes`]) and
    /// [`MemoryPlan::DEFAULT_ALIGNMENT`]; `outputs` live to the end.
    pub fn build(values: &[Value], steps: &[Step], outputs: &[ValueId]) -> Result<MemoryPlan> {
        Self::build_with(
            values,
            steps,
            outputs,
            &Value::bytes,
            Self::DEFAULT_ALIGNMENT,
        )
    }

    /// Plans `steps` over `values` with `bytes(value)` the size in bytes a backend stores a value
    /// in, and every offset a multiple of `alignment` (not 0); `outputs` live to the end.
    pub fn build_with(
        values: &[Value],
        steps: &[Step],
        outputs: &[ValueId],
        bytes: &dyn Fn(&Value) -> usize,
        alignment: usize,
    ) -> Result<MemoryPlan> {
        if alignment == 0 {
            return Err(Error::Internal("memory plan: alignment 0".into()));
        }
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
            alignment,
            offset_of: vec![None; n],
            bytes_of: vec![0; n],
            lifetime: vec![None; n],
            ..MemoryPlan::default()
        };
        let mut items = Vec::new();
        for (ix, value) in values.iter().enumerate() {
            let Some(first) = produced[ix] else { continue };
            let size = bytes(value);
            let last = last[ix].unwrap_or(first);
            plan.bytes_of[ix] = size;
            plan.lifetime[ix] = Some((first, last));
            plan.naive_bytes += size;
            items.push(Item {
                value: ix,
                first,
                last,
                padded: size.next_multiple_of(alignment),
            });
        }

        // Peak: at step `s`, every value with `first <= s <= last` is live.
        let mut delta = vec![0isize; end + 2];
        for item in &items {
            let size = plan.bytes_of[item.value] as isize;
            delta[item.first] += size;
            delta[item.last + 1] -= size;
        }
        let mut live = 0isize;
        for d in delta {
            live += d;
            plan.peak_live_bytes = plan.peak_live_bytes.max(live as usize);
        }

        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| {
            let item = &items[i];
            (std::cmp::Reverse(item.padded), item.first, item.value)
        });
        let offsets = assign_offsets(&items, &order);
        for (item, offset) in items.iter().zip(offsets) {
            plan.offset_of[item.value] = Some(offset);
            plan.planned_bytes = plan.planned_bytes.max(offset + plan.bytes_of[item.value]);
        }
        for (ix, value) in values.iter().enumerate() {
            if value.alias_of.is_some() {
                plan.offset_of[ix] = plan.offset_of[root(values, value.id)?.0];
                if plan.offset_of[ix].is_some() {
                    plan.bytes_of[ix] = bytes(value);
                }
            }
        }
        Ok(plan)
    }

    /// The byte range `offset..offset + bytes` of a value in the arena (views: within their
    /// root's); `None` for inputs, constants and views of them.
    pub fn range_of(&self, id: ValueId) -> Option<std::ops::Range<usize>> {
        let offset = (*self.offset_of.get(id.0)?)?;
        Some(offset..offset + self.bytes_of[id.0])
    }

    /// Checks the plan against `values`: every value placed in the arena has a lifetime and an
    /// aligned offset and fits in the arena; every view sits at its root's offset and within its
    /// bytes; and no two values whose lifetimes overlap share a byte.
    pub fn check(&self, values: &[Value]) -> Result<()> {
        let n = values.len();
        if self.offset_of.len() != n || self.bytes_of.len() != n || self.lifetime.len() != n {
            return Err(Error::Internal(format!(
                "memory plan covers {} values, the plan has {n}",
                self.offset_of.len()
            )));
        }
        if self.alignment == 0 {
            return Err(Error::Internal("memory plan: alignment 0".into()));
        }
        // (first, last, start, end) of every value that owns bytes.
        let mut spans = Vec::new();
        for (ix, value) in values.iter().enumerate() {
            let offset = self.offset_of[ix];
            if value.alias_of.is_some() {
                let r = root(values, value.id)?;
                if offset != self.offset_of[r.0] {
                    return Err(Error::Internal(format!(
                        "view {ix} is at {offset:?}, its root {} at {:?}",
                        r.0, self.offset_of[r.0]
                    )));
                }
                if offset.is_some() && self.bytes_of[ix] > self.bytes_of[r.0] {
                    return Err(Error::Internal(format!(
                        "view {ix} ({} B) is larger than its root {} ({} B)",
                        self.bytes_of[ix], r.0, self.bytes_of[r.0]
                    )));
                }
                if self.lifetime[ix].is_some() {
                    return Err(Error::Internal(format!("view {ix} has a lifetime")));
                }
                continue;
            }
            match (offset, self.lifetime[ix]) {
                (None, None) => {}
                (Some(offset), Some((first, last))) => {
                    let end = offset + self.bytes_of[ix];
                    if offset % self.alignment != 0 {
                        return Err(Error::Internal(format!(
                            "value {ix} at {offset} is not aligned to {}",
                            self.alignment
                        )));
                    }
                    if end > self.planned_bytes {
                        return Err(Error::Internal(format!(
                            "value {ix} ends at {end}, past the arena ({} B)",
                            self.planned_bytes
                        )));
                    }
                    if first > last {
                        return Err(Error::Internal(format!(
                            "value {ix} lives from {first} to {last}"
                        )));
                    }
                    if end > offset {
                        spans.push((first, last, offset, end, ix));
                    }
                }
                _ => {
                    return Err(Error::Internal(format!(
                        "value {ix} has an offset or a lifetime, not both"
                    )));
                }
            }
        }
        // In order of first step: every span still alive when another starts overlaps it in
        // time, so the two must not share a byte.
        spans.sort_unstable();
        let mut active: Vec<(usize, usize, usize, usize, usize)> = Vec::new();
        for span in spans {
            let (first, last, start, end, ix) = span;
            active.retain(|a| a.1 >= first);
            for &(a_first, a_last, a_start, a_end, a_ix) in &active {
                if start < a_end && a_start < end {
                    return Err(Error::Internal(format!(
                        "values {a_ix} (steps {a_first}..={a_last}, bytes {a_start}..{a_end}) \
                         and {ix} (steps {first}..={last}, bytes {start}..{end}) overlap"
                    )));
                }
            }
            active.push(span);
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

    /// One value's byte range, for tests (`None` when it is not in the arena).
    fn range(plan: &MemoryPlan, id: usize) -> Option<std::ops::Range<usize>> {
        plan.range_of(ValueId(id))
    }

    fn disjoint(a: &std::ops::Range<usize>, b: &std::ops::Range<usize>) -> bool {
        a.is_empty() || b.is_empty() || a.end <= b.start || b.end <= a.start
    }

    #[test]
    fn chain_ping_pongs() {
        // x -> a -> b -> c -> out (256 B each): a and c share bytes, b and out share bytes.
        let values = vec![
            value(0, 64, Role::Input(0), None),
            value(1, 64, Role::Intermediate, None),
            value(2, 64, Role::Intermediate, None),
            value(3, 64, Role::Intermediate, None),
            value(4, 64, Role::Output(0), None),
        ];
        let steps = vec![
            step(&[0], &[1]),
            step(&[1], &[2]),
            step(&[2], &[3]),
            step(&[3], &[4]),
        ];
        let plan = MemoryPlan::build(&values, &steps, &[ValueId(4)]).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.alignment, 256);
        assert_eq!(
            plan.offset_of,
            vec![None, Some(0), Some(256), Some(0), Some(256)]
        );
        assert_eq!(plan.lifetime[4], Some((3, 4)));
        assert_eq!(plan.naive_bytes, 1024);
        assert_eq!(plan.planned_bytes, 512);
        assert_eq!(plan.peak_live_bytes, 512);
    }

    #[test]
    fn nothing_overwritten_while_still_read() {
        // a is read by the last step too, so b, c and out may not take its bytes.
        let values = vec![
            value(0, 64, Role::Input(0), None),
            value(1, 64, Role::Intermediate, None),
            value(2, 64, Role::Intermediate, None),
            value(3, 64, Role::Intermediate, None),
            value(4, 64, Role::Output(0), None),
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
        let a = range(&plan, 1).unwrap();
        for other in [2, 3, 4] {
            assert!(disjoint(&a, &range(&plan, other).unwrap()));
        }
        // b is dead after step 2, so step 3's output takes its bytes.
        assert_eq!(plan.offset_of[4], plan.offset_of[2]);
        assert_eq!(plan.planned_bytes, 768);
        assert_eq!(plan.peak_live_bytes, 768);
    }

    #[test]
    fn aliases_extend_lifetime() {
        // v2 is a view of v1 read at step 2: v1 must live until step 2.
        let values = vec![
            value(0, 64, Role::Input(0), None),
            value(1, 64, Role::Intermediate, None),
            value(2, 64, Role::Intermediate, Some(1)),
            value(3, 64, Role::Intermediate, None),
            value(4, 64, Role::Output(0), None),
        ];
        let steps = vec![step(&[0], &[1]), step(&[0], &[3]), step(&[2, 3], &[4])];
        let plan = MemoryPlan::build(&values, &steps, &[ValueId(4)]).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.lifetime[1], Some((0, 2)));
        assert_eq!(plan.lifetime[2], None);
        assert_eq!(plan.offset_of[2], plan.offset_of[1]);
        assert_eq!(range(&plan, 2), range(&plan, 1));
        assert!(disjoint(
            &range(&plan, 1).unwrap(),
            &range(&plan, 3).unwrap()
        ));
        assert_eq!(plan.peak_live_bytes, 256 * 3);
        assert_eq!(plan.planned_bytes, 256 * 3);
    }

    #[test]
    fn output_views_live_to_the_end() {
        let values = vec![
            value(0, 4, Role::Input(0), None),
            value(1, 100, Role::Intermediate, None),
            value(2, 2, Role::Intermediate, None),
            value(3, 2, Role::Output(0), Some(2)),
            value(4, 50, Role::Intermediate, None),
            value(5, 120, Role::Output(1), None),
            value(6, 4, Role::Output(2), Some(0)),
        ];
        let steps = vec![
            step(&[0], &[1]),
            step(&[1], &[2]),
            step(&[0], &[4]),
            step(&[4], &[5]),
        ];
        let outputs = [ValueId(3), ValueId(5), ValueId(6)];
        let plan = MemoryPlan::build_with(&values, &steps, &outputs, &Value::bytes, 1).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.lifetime[2], Some((1, 4)));
        assert_eq!(plan.offset_of[3], plan.offset_of[2]);
        // A view of an input is not in the arena.
        assert_eq!(plan.offset_of[6], None);
        // v5 (480 B, steps 3..=4) goes first, at 0; v1 (400 B, steps 0..=1) lives apart from it
        // and shares its bytes; v4 (200 B, steps 2..=3) overlaps v5 only and goes above it; v2
        // (8 B, steps 1..=4) overlaps v1, v4 and v5, and takes no gap between them.
        assert_eq!(plan.offset_of[5], Some(0));
        assert_eq!(plan.offset_of[1], Some(0));
        assert_eq!(plan.offset_of[4], Some(480));
        assert_eq!(plan.offset_of[2], Some(680));
        assert_eq!(plan.planned_bytes, 688);
        assert_eq!(plan.peak_live_bytes, 688);
        assert_eq!(plan.naive_bytes, 400 + 8 + 200 + 480);
    }

    #[test]
    fn greedy_by_size_beats_step_order() {
        // a (20 B, steps 0..=1), b (10 B, 1..=3), c (10 B, 2..=3), d (20 B, 3..=4),
        // out (5 B, 4..=5). Peak 40 B at step 3 (b, c, d).
        let values = vec![
            value(0, 1, Role::Input(0), None),
            value(1, 20, Role::Intermediate, None),
            value(2, 10, Role::Intermediate, None),
            value(3, 10, Role::Intermediate, None),
            value(4, 20, Role::Intermediate, None),
            value(5, 5, Role::Output(0), None),
        ];
        let steps = vec![
            step(&[0], &[1]),
            step(&[1], &[2]),
            step(&[2], &[3]),
            step(&[2, 3], &[4]),
            step(&[4], &[5]),
        ];
        let len = |v: &Value| v.len();
        let plan = MemoryPlan::build_with(&values, &steps, &[ValueId(5)], &len, 1).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.peak_live_bytes, 40);
        // By size: a at 0, d at 0 (they never live together), b and c above them.
        assert_eq!(plan.planned_bytes, 40);
        assert_eq!(plan.offset_of[1], Some(0));
        assert_eq!(plan.offset_of[4], Some(0));

        // In step order the same rule puts a at 0, b at 20, c in a's old hole at 0, and then d
        // fits nowhere below b: 50 B.
        let items: Vec<Item> = (1..=5)
            .map(|v| {
                let (first, last) = plan.lifetime[v].unwrap();
                Item {
                    value: v,
                    first,
                    last,
                    padded: values[v].len(),
                }
            })
            .collect();
        let step_order: Vec<usize> = (0..items.len()).collect();
        let offsets = assign_offsets(&items, &step_order);
        assert_eq!(offsets, vec![0, 20, 0, 30, 0]);
        let arena = items.iter().zip(&offsets).map(|(i, o)| o + i.padded).max();
        assert_eq!(arena, Some(50));
    }

    #[test]
    fn custom_sizes_and_alignment() {
        // A backend holding every element in a 4-byte word, whatever the dtype.
        let mut values = vec![
            value(0, 3, Role::Input(0), None),
            value(1, 3, Role::Intermediate, None),
            value(2, 3, Role::Intermediate, None),
            value(3, 3, Role::Output(0), None),
        ];
        values[1].dtype = DType::I64;
        values[2].dtype = DType::F16;
        values[3].dtype = DType::Bool;
        let steps = vec![step(&[0], &[1]), step(&[0, 1], &[2]), step(&[1, 2], &[3])];
        let words = |v: &Value| v.len() * 4;
        let plan = MemoryPlan::build_with(&values, &steps, &[ValueId(3)], &words, 256).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.bytes_of, vec![0, 12, 12, 12]);
        assert_eq!(plan.offset_of, vec![None, Some(0), Some(256), Some(512)]);
        assert_eq!(plan.planned_bytes, 524);
        assert_eq!(plan.peak_live_bytes, 36);
        assert!(MemoryPlan::build_with(&values, &steps, &[ValueId(3)], &words, 0).is_err());
        // Host sizes differ: 24 B for the i64, 6 for the f16, 3 for the bools.
        let host = MemoryPlan::build(&values, &steps, &[ValueId(3)]).unwrap();
        assert_eq!(host.bytes_of, vec![0, 24, 6, 3]);
    }

    #[test]
    fn empty_values_take_no_space() {
        let values = vec![
            value(0, 64, Role::Input(0), None),
            value(1, 0, Role::Intermediate, None),
            value(2, 64, Role::Intermediate, None),
            value(3, 64, Role::Output(0), None),
        ];
        let steps = vec![step(&[0], &[1]), step(&[0, 1], &[2]), step(&[1, 2], &[3])];
        let plan = MemoryPlan::build(&values, &steps, &[ValueId(3)]).unwrap();
        plan.check(&values).unwrap();
        assert_eq!(plan.planned_bytes, 512);
        assert_eq!(range(&plan, 1).map(|r| r.len()), Some(0));
    }

    #[test]
    fn check_finds_overlaps_and_misalignment() {
        let values = vec![
            value(0, 64, Role::Input(0), None),
            value(1, 64, Role::Intermediate, None),
            value(2, 64, Role::Intermediate, Some(1)),
            value(3, 64, Role::Output(0), None),
        ];
        let steps = vec![step(&[0], &[1]), step(&[2], &[3])];
        let plan = MemoryPlan::build(&values, &steps, &[ValueId(3)]).unwrap();
        plan.check(&values).unwrap();
        let mut bad = plan.clone();
        bad.offset_of[3] = bad.offset_of[1];
        assert!(bad.check(&values).is_err());
        let mut bad = plan.clone();
        bad.offset_of[3] = Some(128);
        bad.planned_bytes = 1024;
        assert!(bad.check(&values).is_err());
        let mut bad = plan.clone();
        bad.offset_of[2] = plan.offset_of[3];
        assert!(bad.check(&values).is_err());
        let mut bad = plan;
        bad.planned_bytes -= 1;
        assert!(bad.check(&values).is_err());
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

    /// xorshift64*: a few random plans without a dependency.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
        }
    }

    /// A random plan: steps read earlier values (inputs, outputs of earlier steps, views of
    /// either) and write one or two new ones; some values are graph outputs.
    fn random_plan(rng: &mut Rng) -> (Vec<Value>, Vec<Step>, Vec<ValueId>) {
        let mut values = vec![];
        let inputs = 1 + rng.below(2);
        for k in 0..inputs {
            values.push(value(k, 1 + rng.below(300), Role::Input(k), None));
        }
        let mut steps = vec![];
        for _ in 0..1 + rng.below(40) {
            let reads = (0..1 + rng.below(3))
                .map(|_| rng.below(values.len()))
                .collect::<Vec<_>>();
            let mut writes = vec![];
            for _ in 0..1 + rng.below(2) {
                let id = values.len();
                let elements = if rng.below(10) == 0 {
                    0
                } else {
                    1 + rng.below(300)
                };
                values.push(value(id, elements, Role::Intermediate, None));
                writes.push(id);
            }
            steps.push(step(&reads, &writes));
            if rng.below(4) == 0 {
                let source = rng.below(values.len());
                let id = values.len();
                let elements = values[source].len();
                values.push(value(id, elements, Role::Intermediate, Some(source)));
            }
        }
        let outputs = (0..1 + rng.below(3))
            .map(|_| ValueId(rng.below(values.len())))
            .collect();
        (values, steps, outputs)
    }

    #[test]
    fn random_plans_never_overlap() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..500 {
            let (values, steps, outputs) = random_plan(&mut rng);
            let alignment = [1, 4, 256][round % 3];
            let words = |v: &Value| v.len() * 4;
            let plan = if round % 2 == 0 {
                MemoryPlan::build_with(&values, &steps, &outputs, &words, alignment)
            } else {
                MemoryPlan::build_with(&values, &steps, &outputs, &Value::bytes, alignment)
            }
            .unwrap();
            plan.check(&values).unwrap();
            // Brute force, independently of `check`: values alive together share no byte...
            let owners: Vec<usize> = (0..values.len())
                .filter(|&v| plan.lifetime[v].is_some())
                .collect();
            for (i, &a) in owners.iter().enumerate() {
                let (af, al) = plan.lifetime[a].unwrap();
                let ra = range(&plan, a).unwrap();
                assert_eq!(ra.start % alignment, 0);
                assert!(ra.end <= plan.planned_bytes);
                for &b in &owners[i + 1..] {
                    let (bf, bl) = plan.lifetime[b].unwrap();
                    if af <= bl && bf <= al {
                        let rb = range(&plan, b).unwrap();
                        assert!(disjoint(&ra, &rb), "round {round}: {a} {ra:?} / {b} {rb:?}");
                    }
                }
            }
            // ...so no step writes over what it reads...
            for s in &steps {
                for &out in &s.outputs {
                    for &input in &s.inputs {
                        if let (Some(o), Some(i)) = (range(&plan, out.0), range(&plan, input.0)) {
                            assert!(disjoint(&o, &i), "round {round}");
                        }
                    }
                }
            }
            // ...and outputs stay alive to the end.
            for &out in &outputs {
                let r = root(&values, out).unwrap();
                if let Some((_, last)) = plan.lifetime[r.0] {
                    assert_eq!(last, steps.len());
                }
            }
            assert!(plan.peak_live_bytes <= plan.planned_bytes);
            if alignment == 1 {
                assert!(plan.planned_bytes <= plan.naive_bytes, "round {round}");
            }
        }
    }
}
