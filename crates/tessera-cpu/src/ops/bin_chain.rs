//! Element-wise Mul/Add/Sub/Min/Max on f32 with operands that repeat along the accumulator:
//! one value per block of it (a BatchNorm's per-channel scale and shift, a ReLU's 0, a scalar)
//! or a row it reads in lock-step (a tensor of its own shape, or a suffix of it). Replaces, in
//! cpu plans, tract's `OptBinChain` and the single-step `OptBinByScalar` / `OptBinUnicast`.
//!
//! tract updates the accumulator in place, so when another op still reads it (DenseNet's
//! concatenations feed every later layer) it is copied first; it splits the work by blocks, so a
//! scalar operand (one block: the whole tensor) runs on one thread, each step in its own pass
//! over it; and its chunked path wants blocks a multiple of the vector width (not 14×14 or 7×7
//! planes). DenseNet-121's BatchNorm + ReLU chains took 29.6 of its 181 ms per run (onnxruntime's
//! Add and Relu: 7); ppocrv4_det's hard-swish pieces over 32×320×320 values 23 ms at 1 and 2
//! threads. Here the output is written in pieces that stay in L1 while every step passes over
//! them, pieces are the pool's tasks, and the loops are ones LLVM vectorizes.

use super::quantize_linear::Quantized;
use super::{FastDequantizeLinear, FastQuantizeDequantize, FastQuantizeLinear};
use crate::parallel::par_chunks_mut;
use crate::simd::{self, InPlace, SelectOperand};
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::num_integer::Integer;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::binary::{
    BinMiniOp, OptBinByScalar, OptBinChain, OptBinUnicast, TypedBinOp,
};
use tessera_core::tract_onnx::tract_core::ops::math;
use tract_linalg::BinOp;
use tract_linalg::multithread::BShare;

/// How a step's operand lines up with the accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Share {
    /// One value per block: `a.len() / b.len()` consecutive values of `a` take `b[i]`.
    PerBlock,
    /// A row `a` reads in lock-step, again and again: `a[j]` takes `b[j % b.len()]`.
    Row,
    /// 16 values per block (one channel block's per-channel operand, in the channels-blocked
    /// layout of `blocked_layout.rs`): the `a.len() / (b.len() / 16)` consecutive values of
    /// block `i` of `a` take `b[16 i..16 i + 16]` in lock-step, again and again.
    Lanes,
    /// The chain's own input, dequantized ([`FastBinChain::dequantize`]), at the same positions:
    /// the accumulator's first values (a QDQ hard-swish's `x · relu6(x + 3)`).
    Input,
}

/// What a step does to each accumulator value `x` with its operand value `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    Add,
    Mul,
    Sub,
    /// `b - x`.
    SubF,
    Max,
    Min,
    /// ONNX `PRelu`, `b` the slope: `x · b` where `x < 0`, else `x` (tract spells it
    /// `Iff(0 > x, x · b, x)`, three ops; see [`fuse_prelu`]).
    PRelu,
}

impl From<BinOp> for Step {
    fn from(op: BinOp) -> Step {
        match op {
            BinOp::Add => Step::Add,
            BinOp::Mul => Step::Mul,
            BinOp::Sub => Step::Sub,
            BinOp::SubF => Step::SubF,
            BinOp::Max => Step::Max,
            BinOp::Min => Step::Min,
        }
    }
}

// (Not `Hash`: nothing keys on a chain, and its folded pair holds f32 parameters.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastBinChain {
    /// The operation of each step and how its operand (input `i + 1`) repeats.
    pub steps: Vec<(Step, Share)>,
    /// Quantize → dequantize pairs each value goes through ([`fold_round_trips`],
    /// [`merge_chains`]), each after the number of steps it is paired with, in order.
    pub round_trips: Vec<(usize, FastQuantizeDequantize)>,
    /// Then each value quantized, the chain's output of that 8-bit type
    /// ([`fold_quantizations`]).
    pub quantize: Option<FastQuantizeLinear>,
    /// The accumulator is 8-bit, each piece dequantized first ([`fold_dequantizations`]).
    pub dequantize: Option<FastDequantizeLinear>,
}

/// Pieces of the accumulator shorter than this do not vectorize well: such chains stay with
/// tract.
const SHORTEST_UNIT: usize = 16;

impl FastBinChain {
    /// The fast version of tract's chain `op` (`OptBinChain`, or one step as `OptBinByScalar` /
    /// `OptBinUnicast` / a plain `TypedBinOp`) on operands of these shapes (the accumulator's first), when it applies:
    /// the operands repeat in pieces long enough to vectorize (shorter ones stay with tract,
    /// whose short-period path repeats the operand instead). The datum types are checked by
    /// the caller.
    pub fn for_op(op: &dyn Op, shapes: &[Vec<usize>]) -> Option<FastBinChain> {
        let steps: Vec<(Step, Share)> = if let Some(chain) = op.downcast_ref::<OptBinChain>() {
            let share = |s: BShare| match s {
                BShare::PerBlock => Share::PerBlock,
                BShare::Lockstep => Share::Row,
            };
            chain
                .steps
                .iter()
                .map(|s| (Step::from(s.linalg_op), share(s.share)))
                .collect()
        } else if let Some(op) = op.downcast_ref::<OptBinByScalar>() {
            vec![(Step::from(op.linalg_op), Share::PerBlock)]
        } else if let Some(op) = op.downcast_ref::<OptBinUnicast>() {
            vec![(step_of(&*op.binop)?, Share::Row)]
        } else if let Some(op) = op.downcast_ref::<TypedBinOp>() {
            // What tract left unoptimized: where its by-scalar or unicast kernel is missing
            // (wasm builds link only some of them) or its thresholds said no. The accumulator
            // must be the first input, at the output's shape.
            let [a, b] = shapes else { return None };
            let share = share_of(a, b).filter(|_| op.1.is_none())?;
            vec![(step_of(&*op.0)?, share)]
        } else {
            return None;
        };
        FastBinChain::checked(steps, shapes)
    }

    /// The chain of `steps` on operands of these shapes (the accumulator's first), when the
    /// operands repeat in pieces long enough to vectorize.
    fn checked(steps: Vec<(Step, Share)>, shapes: &[Vec<usize>]) -> Option<FastBinChain> {
        let chain = FastBinChain {
            steps,
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let (a, operands) = shapes.split_first()?;
        let a_len: usize = a.iter().product();
        let lens: Vec<usize> = operands.iter().map(|b| b.iter().product()).collect();
        (operands.len() == chain.steps.len()
            && chain.unit(a_len, &lens).is_some_and(|u| u >= SHORTEST_UNIT))
        .then_some(chain)
    }

    /// The longest run of the accumulator over which every operand is one value or one
    /// contiguous stretch: the gcd of the blocks and rows. None when an operand does not
    /// divide the accumulator.
    fn unit(&self, a_len: usize, operand_lens: &[usize]) -> Option<usize> {
        let mut unit = a_len;
        for (&(_, share), &b_len) in self.steps.iter().zip(operand_lens) {
            if b_len == 0 || !a_len.is_multiple_of(b_len) {
                return None;
            }
            if share == Share::Lanes
                && !(b_len.is_multiple_of(LANES) && (a_len / (b_len / LANES)).is_multiple_of(LANES))
            {
                return None;
            }
            unit = unit.gcd(&match share {
                Share::PerBlock => a_len / b_len,
                Share::Lanes => a_len / (b_len / LANES),
                Share::Row | Share::Input => b_len,
            });
        }
        Some(unit)
    }

    /// `output` = `a` with each step applied in order, step `i` taking `operands[i]` as its
    /// share says.
    #[cfg(test)]
    pub fn compute(&self, a: &[f32], operands: &[&[f32]], output: &mut [f32]) -> TractResult<()> {
        self.run(Source::F32(a), operands, output)
    }

    /// [`Self::compute`] with `a`'s values in `output` already (the accumulator updated in place).
    pub fn compute_in_place(&self, operands: &[&[f32]], output: &mut [f32]) -> TractResult<()> {
        self.run(Source::InPlace, operands, output)
    }

    /// `output` = the accumulator `a` (or `output` itself) with each step applied.
    fn run(&self, a: Source, operands: &[&[f32]], output: &mut [f32]) -> TractResult<()> {
        let total = output.len();
        let Some(unit) = self.checked_unit(a, operands, total)? else {
            return Ok(());
        };
        // Tasks are ranges of elements (a block can be the whole tensor: scalar operands), each
        // walked in pieces that stay in L1 while every step passes over them.
        par_chunks_mut(output, 1, self.work(total), |start, chunk| {
            crate::simd::widest(
                #[inline(always)]
                || {
                    // Inlined too: as a function of its own it was compiled for the build's
                    // baseline (SSE2), 4 values a vector (densenet121: a tenth of its run).
                    self.for_each_piece(
                        start,
                        chunk.len(),
                        unit,
                        #[inline(always)]
                        |done, len, initial| {
                            let (at, out) = (start + done, &mut chunk[done..][..len]);
                            self.load(a, at, out, initial);
                            self.apply_steps(operands, total, at, out, initial);
                        },
                    )
                },
            );
            Ok(())
        })
    }

    /// `output` = the accumulator `a` with each step applied, quantized by `quantize`: each
    /// piece computed in a buffer on the stack, then written as 8-bit values.
    fn run_quantized<T: Quantized + Send>(
        &self,
        quantize: &FastQuantizeLinear,
        a: Source,
        operands: &[&[f32]],
        output: &mut [T],
    ) -> TractResult<()> {
        let total = output.len();
        let Some(unit) = self.checked_unit(a, operands, total)? else {
            return Ok(());
        };
        ensure!(
            !matches!(a, Source::InPlace),
            "a quantizing chain reads its accumulator"
        );
        par_chunks_mut(output, 1, self.work(total), |start, chunk| {
            crate::simd::widest(
                #[inline(always)]
                || {
                    let mut piece = [0.0f32; PIECE];
                    self.for_each_piece(
                        start,
                        chunk.len(),
                        unit,
                        #[inline(always)]
                        |done, len, initial| {
                            let (at, values) = (start + done, &mut piece[..len]);
                            self.load(a, at, values, initial);
                            self.apply_steps(operands, total, at, values, initial);
                            quantize.quantize_values(values, &mut chunk[done..][..len]);
                        },
                    )
                },
            );
            Ok(())
        })
    }

    /// Walks a task's `len` values from `start` in pieces that end on `unit` boundaries and
    /// hold at most [`PIECE`] values: `piece(done, len, initial)` for each, `done` values after
    /// the task's first, with a buffer for the piece's first values (empty unless a step reads
    /// them, [`Share::Input`]).
    #[inline(always)]
    fn for_each_piece(
        &self,
        start: usize,
        len: usize,
        unit: usize,
        mut piece: impl FnMut(usize, usize, &mut [f32]),
    ) {
        let mut kept = self.reads_input().then_some([0.0f32; PIECE]);
        let initial: &mut [f32] = kept.as_mut().map_or(&mut [], |k| &mut k[..]);
        let mut done = 0;
        while done < len {
            let piece_len = piece_len(start + done, unit, len - done);
            let kept_len = piece_len.min(initial.len());
            piece(done, piece_len, &mut initial[..kept_len]);
            done += piece_len;
        }
    }

    /// The accumulator's values `at..at + out.len()` into `out` (as they are, or dequantized),
    /// and into `initial` too where a step reads them ([`Share::Input`]).
    #[inline(always)]
    fn load(&self, a: Source, at: usize, out: &mut [f32], initial: &mut [f32]) {
        let len = out.len();
        match (a, &self.dequantize) {
            (Source::InPlace, _) => {}
            (Source::F32(a), _) => out.copy_from_slice(&a[at..][..len]),
            (Source::U8(a), Some(dequantize)) => dequantize.dequantize_values(&a[at..][..len], out),
            (Source::I8(a), Some(dequantize)) => dequantize.dequantize_values(&a[at..][..len], out),
            // Refused by `checked_unit`.
            (Source::U8(_) | Source::I8(_), None) => {}
        }
        // `initial` is empty unless a step reads it.
        if !initial.is_empty() {
            initial.copy_from_slice(out);
        }
    }

    /// Whether a step reads the accumulator's first values ([`Share::Input`]).
    fn reads_input(&self) -> bool {
        self.steps.iter().any(|&(_, share)| share == Share::Input)
    }

    /// [`Self::piece_unit`] after checking that the accumulator `a` is what the chain reads: as
    /// long as the output, 8-bit exactly when the chain dequantizes it, and its own values
    /// where a step reads them.
    fn checked_unit(
        &self,
        a: Source,
        operands: &[&[f32]],
        total: usize,
    ) -> TractResult<Option<usize>> {
        let eight_bit = matches!(a, Source::U8(_) | Source::I8(_));
        ensure!(
            eight_bit == self.dequantize.is_some(),
            "a chain dequantizes exactly its 8-bit accumulator"
        );
        ensure!(
            a.len().is_none_or(|len| len == total),
            "the chain's output has its input's size"
        );
        ensure!(
            self.dequantize.is_some() || !self.reads_input(),
            "only a dequantizing chain reads its own input as an operand"
        );
        self.piece_unit(operands, total)
    }

    /// The unit pieces end on ([`Self::unit`]) for an accumulator of `total` values, checked
    /// against the operands; None when there is nothing to compute.
    fn piece_unit(&self, operands: &[&[f32]], total: usize) -> TractResult<Option<usize>> {
        ensure!(operands.len() == self.steps.len(), "one operand per step");
        if total == 0 {
            return Ok(None);
        }
        let lens: Vec<usize> = (self.steps.iter().zip(operands))
            .map(|(&(_, share), b)| {
                if share == Share::Input {
                    total
                } else {
                    b.len()
                }
            })
            .collect();
        match self.unit(total, &lens) {
            Some(unit) => Ok(Some(unit)),
            None => {
                bail!("an operand of the chain does not divide its accumulator of {total} values")
            }
        }
    }

    /// Values passed over in all: the work that decides whether the pool takes part.
    fn work(&self, total: usize) -> usize {
        total * (self.steps.len() + self.round_trips.len() + usize::from(self.quantize.is_some()))
    }

    /// Every step and pair, in order, on `out`: the accumulator's values `at..at + out.len()`,
    /// whose first values are `initial` (read where [`Share::Input`]).
    #[inline(always)]
    fn apply_steps(
        &self,
        operands: &[&[f32]],
        total: usize,
        at: usize,
        out: &mut [f32],
        initial: &[f32],
    ) {
        let len = out.len();
        for (i, (&(op, share), b)) in self.steps.iter().zip(operands).enumerate() {
            self.round_trip_after(i, out);
            match share {
                Share::PerBlock => apply(op, out, b[at / (total / b.len())]),
                Share::Row => apply_row(op, out, &b[at % b.len()..][..len]),
                Share::Lanes => {
                    let block = total / (b.len() / LANES);
                    // Whole: `unit` checked the operand is blocks of 16.
                    if let Some(lanes) = b[at / block * LANES..].first_chunk::<LANES>() {
                        apply_lanes(op, out, at % LANES, lanes);
                    }
                }
                Share::Input => apply_row(op, out, initial),
            }
        }
        self.round_trip_after(self.steps.len(), out);
    }
}

/// The length of the piece from `at`: up to the end of its unit (where an operand's block or
/// row ends), at most `left` and [`PIECE`].
#[inline(always)]
fn piece_len(at: usize, unit: usize, left: usize) -> usize {
    let unit_end = (at / unit + 1) * unit;
    (unit_end - at).min(left).min(PIECE)
}

impl FastBinChain {
    /// The pairs that follow the first `steps` steps, over `out`.
    #[inline(always)]
    fn round_trip_after(&self, steps: usize, out: &mut [f32]) {
        for (_, pair) in self.round_trips.iter().filter(|(after, _)| *after == steps) {
            pair.round_trip_values(out, pair.bounds());
        }
    }

    /// `self` then `next` as one chain (`next`'s accumulator is `self`'s output), on an
    /// accumulator of `total` values and operands of `operand_lens` (`self`'s then `next`'s),
    /// when the joined operands still repeat in pieces long enough to vectorize.
    fn then(
        &self,
        next: &FastBinChain,
        total: usize,
        operand_lens: &[usize],
    ) -> Option<FastBinChain> {
        // `next` would dequantize or read an accumulator that is no longer its input.
        if self.quantize.is_some() || next.dequantize.is_some() || next.reads_input() {
            return None;
        }
        let shift = self.steps.len();
        let joined = FastBinChain {
            steps: self.steps.iter().chain(&next.steps).copied().collect(),
            round_trips: (self.round_trips.iter().cloned())
                .chain(
                    next.round_trips
                        .iter()
                        .map(|(after, pair)| (after + shift, pair.clone())),
                )
                .collect(),
            quantize: next.quantize.clone(),
            dequantize: self.dequantize.clone(),
        };
        (operand_lens.len() == joined.steps.len()
            && joined
                .unit(total, operand_lens)
                .is_some_and(|u| u >= SHORTEST_UNIT))
        .then_some(joined)
    }
}

/// The step of one of tract's element-wise binary ops, when it is one.
fn step_of(op: &dyn BinMiniOp) -> Option<Step> {
    Some(if op.is::<math::Add>() {
        Step::Add
    } else if op.is::<math::Mul>() {
        Step::Mul
    } else if op.is::<math::Sub>() {
        Step::Sub
    } else if op.is::<math::SubF>() {
        Step::SubF
    } else if op.is::<math::Max>() {
        Step::Max
    } else if op.is::<math::Min>() {
        Step::Min
    } else {
        return None;
    })
}

/// How an operand of shape `b` broadcasts against an accumulator of shape `a` (ranks aligned
/// on the right, as ONNX broadcasts), when it repeats as a chain reads it: `a`'s leading axes
/// then ones (one value per block), or ones then `a`'s trailing axes (a row).
fn share_of(a: &[usize], b: &[usize]) -> Option<Share> {
    if b.len() > a.len() {
        return None;
    }
    let padded: Vec<usize> = std::iter::repeat_n(1, a.len() - b.len())
        .chain(b.iter().copied())
        .collect();
    if padded == a {
        // The accumulator's own shape: a row as long as it (one value per block of one would
        // be pieces of one).
        return Some(Share::Row);
    }
    let equal = padded.iter().zip(a).take_while(|(b, a)| b == a).count();
    if padded[equal..].iter().all(|&d| d == 1) {
        return Some(Share::PerBlock);
    }
    let ones = padded.iter().take_while(|&&d| d == 1).count();
    if padded[ones..] == a[ones..] {
        return Some(Share::Row);
    }
    // A per-channel operand of a channels-blocked tensor: its last axis the 16 lanes of the
    // accumulator's, the axes before it one value per block.
    let last = a.len().checked_sub(1)?;
    (a[last] == LANES
        && padded[last] == LANES
        && share_of(&a[..last], &padded[..last]) == Some(Share::PerBlock))
    .then_some(Share::Lanes)
}

/// Values of a [`Share::Lanes`] operand's block.
const LANES: usize = crate::simd::F32_LANES;

/// Values of a PReLU's input up to which a slope per block too short to vectorize is spread to
/// the input's shape (4 MiB of f32).
const MAX_SPREAD_SLOPE: usize = 1 << 20;

/// A PReLU's slope: the plan's own wire, or a constant spread to the input's shape.
enum Slope {
    Wire(OutletId),
    Spread(Tensor),
}

/// Turns each `Iff(0 > x, x · slope, x)` of an optimized plan (tract's expansion of ONNX
/// `PRelu`: a comparison, a product and a select, each a pass over `x`; tract's f32 comparison
/// alone took 76 of mtcnn_rnet's 300 µs) into one chain step. Returns how many.
pub fn fuse_prelu(model: &mut TypedModel) -> TractResult<usize> {
    use tessera_core::tract_onnx::tract_core::ops::logic::{CompGT, CompLT, Iff};
    let is_zero = |model: &TypedModel, outlet: OutletId| {
        crate::plan_graph::constant(model, outlet).is_some_and(|k| k.is_all_zero().unwrap_or(false))
    };
    let f32_shape = |model: &TypedModel, outlet: OutletId| {
        let fact = model.outlet_fact(outlet).ok()?;
        (fact.datum_type == f32::datum_type())
            .then(|| fact.shape.as_concrete().map(|s| s.to_vec()))?
    };
    let mut found = vec![];
    for node in model.nodes() {
        let (true, [cond, then, x]) = (node.op_is::<Iff>(), &*node.inputs) else {
            continue;
        };
        // `0 > x` or `x < 0`.
        let test = model.node(cond.node);
        let compares_x_to_zero = test.op_as::<TypedBinOp>().is_some_and(|op| {
            let [a, b] = &*test.inputs else { return false };
            (op.0.is::<CompGT>() && is_zero(model, *a) && b == x)
                || (op.0.is::<CompLT>() && a == x && is_zero(model, *b))
        });
        // `x · slope`, in any of tract's forms of a product.
        let product = model.node(then.node);
        let is_mul = product
            .op_as::<TypedBinOp>()
            .is_some_and(|op| op.0.is::<math::Mul>())
            || product
                .op_as::<OptBinByScalar>()
                .is_some_and(|op| op.linalg_op == BinOp::Mul)
            || product
                .op_as::<OptBinUnicast>()
                .is_some_and(|op| op.binop.is::<math::Mul>());
        let slope = match &*product.inputs {
            [a, b] if a == x => *b,
            [a, b] if b == x => *a,
            _ => continue,
        };
        if !compares_x_to_zero || !is_mul {
            continue;
        }
        let (Some(x_shape), Some(slope_shape)) = (f32_shape(model, *x), f32_shape(model, slope))
        else {
            continue;
        };
        if f32_shape(model, node.id.into()).as_ref() != Some(&x_shape) {
            continue;
        }
        let Some(share) = share_of(&x_shape, &slope_shape) else {
            continue;
        };
        if let Some(chain) =
            FastBinChain::checked(vec![(Step::PRelu, share)], &[x_shape.clone(), slope_shape])
        {
            found.push((node.id, *x, Slope::Wire(slope), chain));
            continue;
        }
        // Slopes per channel of small planes (3×3: blocks too short to vectorize) are spread
        // once, in the plan, to a constant of x's shape read as a row.
        let x_len: usize = x_shape.iter().product();
        let konst = model.outlet_fact(slope)?.konst.clone();
        if let Some(spread) = konst
            .filter(|_| x_len <= MAX_SPREAD_SLOPE)
            .and_then(|k| k.broadcast_to_shape(&x_shape).ok())
        {
            let chain =
                FastBinChain::checked(vec![(Step::PRelu, Share::Row)], &[x_shape.clone(), x_shape]);
            if let Some(chain) = chain {
                found.push((node.id, *x, Slope::Spread(spread), chain));
            }
        }
    }
    let count = found.len();
    for (select, x, slope, chain) in found {
        let mut patch = TypedModelPatch::new("prelu");
        let x = patch.tap_model(model, x)?;
        let slope = match slope {
            Slope::Wire(slope) => patch.tap_model(model, slope)?,
            Slope::Spread(values) => {
                let name = format!("{}.slope", model.node(select).name);
                patch.add_const(name, values)?
            }
        };
        let name = model.node(select).name.clone();
        let wire = patch.wire_node(name, chain, &[x, slope])?;
        patch.shunt_outside(model, OutletId::new(select, 0), wire[0])?;
        patch.apply(model)?;
    }
    if count > 0 {
        model.compact()?;
    }
    Ok(count)
}

/// Folds each quantize → dequantize pair ([`FastQuantizeDequantize`]) that is the only reader of
/// a chain into that chain, as its last step: a QDQ model puts such a pair after nearly every
/// element-wise op, and on its own each pair is one more pass over the tensor in memory, where in
/// the chain it rounds the piece still in L1 (ppocrv4_rec's QDQ variant: 4.4 ms of its pairs
/// against 3-6 ms of the chains before them). Returns how many.
pub fn fold_round_trips(model: &mut TypedModel) -> TractResult<usize> {
    fold_into_chains(
        model,
        "quantize-dequantize pair folded into a chain",
        |chain, pair: &FastQuantizeDequantize| {
            let mut folded = chain.clone();
            folded.round_trips.push((chain.steps.len(), pair.clone()));
            chain.quantize.is_none().then_some(folded)
        },
    )
}

/// Folds each quantization ([`FastQuantizeLinear`]) that is the only reader of a chain into that
/// chain, which then writes the 8-bit values: the f32 values are never written out and read
/// back (a QDQ model quantizes a chain's output before each quantized convolution: ppocrv4_rec's
/// QDQ variant ran 54 quantizations, 1.2 ms per run, as passes of their own). Returns how many.
pub fn fold_quantizations(model: &mut TypedModel) -> TractResult<usize> {
    fold_into_chains(
        model,
        "quantization folded into a chain",
        |chain, quantize: &FastQuantizeLinear| {
            chain.quantize.is_none().then(|| FastBinChain {
                quantize: Some(quantize.clone()),
                ..chain.clone()
            })
        },
    )
}

/// Folds each dequantization of 8-bit values ([`FastDequantizeLinear`]) that only one chain reads
/// — as its accumulator, and maybe as operands of its steps too — into that chain, which then
/// reads the 8-bit values and dequantizes each piece while it is in L1: the f32 tensor is never
/// written out and read back (a QDQ model dequantizes each quantized convolution's output for
/// the element-wise ops after it: ppocrv4_rec's QDQ variant ran 55 dequantizations, 2 ms per
/// run, as passes of their own). Returns how many.
pub fn fold_dequantizations(model: &mut TypedModel) -> TractResult<usize> {
    let outputs = model.output_outlets()?.to_vec();
    let mut found = vec![];
    for node in model.nodes() {
        let Some(chain) = node.op_as::<FastBinChain>() else {
            continue;
        };
        let Some(&accumulator) = node.inputs.first() else {
            continue;
        };
        let producer = model.node(accumulator.node);
        let (Some(dequantize), [source]) =
            (producer.op_as::<FastDequantizeLinear>(), &*producer.inputs)
        else {
            continue;
        };
        let eight_bit = [u8::datum_type(), i8::datum_type()];
        let [output] = &*producer.outputs else {
            continue;
        };
        if chain.dequantize.is_some()
            || !eight_bit.contains(&model.outlet_fact(*source)?.datum_type)
            || outputs.contains(&accumulator)
            || output.successors.iter().any(|inlet| inlet.node != node.id)
        {
            continue;
        }
        // The steps that read the dequantized tensor as their operand read the piece instead.
        let mut folded = FastBinChain {
            dequantize: Some(dequantize.clone()),
            ..chain.clone()
        };
        let operand_steps = output
            .successors
            .iter()
            .filter_map(|inlet| inlet.slot.checked_sub(1));
        let mut readable = true;
        for step in operand_steps {
            match folded.steps.get_mut(step) {
                Some((_, share @ Share::Row)) => *share = Share::Input,
                _ => readable = false,
            }
        }
        if readable {
            found.push((node.id, producer.id, folded));
        }
    }
    let mut count = 0;
    for (chain, dequantization, folded) in found {
        // Read now: an earlier fold may have replaced the node that made it.
        let Some(&source) = model.node(dequantization).inputs.first() else {
            continue;
        };
        let inputs: Vec<OutletId> = (model.node(chain).inputs.iter())
            .map(|&input| {
                if input.node == dequantization {
                    source
                } else {
                    input
                }
            })
            .collect();
        wire_chain_in_place_of(
            model,
            chain,
            folded,
            &inputs,
            "dequantization folded into a chain",
        )?;
        count += 1;
    }
    if count > 0 {
        model.compact()?;
    }
    Ok(count)
}

/// Replaces each node of op `R` that is the only reader of a chain, and its only input, by the
/// chain `fold` makes of the two (on the chain's inputs). Returns how many.
fn fold_into_chains<R: Op>(
    model: &mut TypedModel,
    why: &str,
    fold: impl Fn(&FastBinChain, &R) -> Option<FastBinChain>,
) -> TractResult<usize> {
    let mut found = vec![];
    for node in model.nodes() {
        let Some(reader) = node.op_as::<R>() else {
            continue;
        };
        let [input] = &*node.inputs else { continue };
        let producer = model.node(input.node);
        if let Some(chain) = producer.op_as::<FastBinChain>()
            && input.slot == 0
            && crate::plan_graph::only_reader(model, producer.id)? == Some(node.id)
            && let Some(folded) = fold(chain, reader)
        {
            found.push((producer.id, node.id, folded));
        }
    }
    let count = found.len();
    for (chain, reader, folded) in found {
        let inputs = model.node(chain).inputs.clone();
        wire_chain_in_place_of(model, reader, folded, &inputs, why)?;
    }
    if count > 0 {
        model.compact()?;
    }
    Ok(count)
}

/// Wires `chain` on `inputs` and makes every reader of `node`'s output read it instead.
fn wire_chain_in_place_of(
    model: &mut TypedModel,
    node: usize,
    chain: FastBinChain,
    inputs: &[OutletId],
    why: &str,
) -> TractResult<()> {
    let mut patch = TypedModelPatch::new(why);
    let taps = (inputs.iter())
        .map(|&outlet| patch.tap_model(model, outlet))
        .collect::<TractResult<TVec<OutletId>>>()?;
    let name = model.node(node).name.clone();
    let wire = patch.wire_node(name, chain, &taps)?;
    patch.shunt_outside(model, OutletId::new(node, 0), wire[0])?;
    patch.apply(model)
}

/// Joins each chain whose output only the next chain reads, as that chain's accumulator, with
/// it: one pass over the values where there were two, the output in between never written. A
/// QDQ model's element-wise ops come one by one, each with its quantize → dequantize pair after
/// it ([`fold_round_trips`]), so tract's own chains stop at every pair (ppocrv4_rec's QDQ
/// variant ran 200 one-step chains). Returns how many were joined.
pub fn merge_chains(model: &mut TypedModel) -> TractResult<usize> {
    let mut count = 0;
    // One pass in evaluation order: a chain joined here is the joined node when the chain
    // after it is visited.
    for id in model.eval_order()? {
        let Some(Merge {
            first,
            second,
            joined,
            via_operand,
        }) = merge_at(model, id)?
        else {
            continue;
        };
        // The second chain's other inputs: its operands, or, joined through its first
        // operand, its accumulator (now that step's operand) and the rest.
        let second_inputs = &model.node(second).inputs;
        let rest: Vec<OutletId> = if via_operand {
            (second_inputs.iter().take(1))
                .chain(second_inputs.iter().skip(2))
                .copied()
                .collect()
        } else {
            second_inputs.iter().skip(1).copied().collect()
        };
        let inputs: Vec<OutletId> = (model.node(first).inputs.iter().copied())
            .chain(rest)
            .collect();
        wire_chain_in_place_of(model, second, joined, &inputs, "element-wise chains joined")?;
        count += 1;
    }
    if count > 0 {
        model.compact()?;
    }
    Ok(count)
}

/// Two chains to join: `second` reads `first`'s output, which nothing else reads, as its
/// accumulator, or (`via_operand`) as the operand of its first step, which commutes.
struct Merge {
    first: usize,
    second: usize,
    joined: FastBinChain,
    via_operand: bool,
}

/// The first step with its accumulator and operand swapped, when that computes the same
/// values bit for bit (IEEE addition and multiplication commute; `x - b` is `SubF` of `b`).
/// Max and Min are left alone: which side's NaN they keep differs.
fn swapped(step: Step) -> Option<Step> {
    match step {
        Step::Add | Step::Mul => Some(step),
        Step::Sub => Some(Step::SubF),
        Step::SubF => Some(Step::Sub),
        Step::Max | Step::Min | Step::PRelu => None,
    }
}

/// Node `id` and the chain before it, when they can be joined ([`merge_chains`]).
fn merge_at(model: &TypedModel, id: usize) -> TractResult<Option<Merge>> {
    let lens = |inputs: &[OutletId]| -> Option<Vec<usize>> {
        inputs
            .iter()
            .map(|&outlet| {
                let fact = model.outlet_fact(outlet).ok()?;
                Some(fact.shape.as_concrete()?.iter().product())
            })
            .collect()
    };
    let node = model.node(id);
    let Some(second) = node.op_as::<FastBinChain>() else {
        return Ok(None);
    };
    let Some(total) = (node.inputs.first()).and_then(|&a| lens(&[a])?.first().copied()) else {
        return Ok(None);
    };
    // Through the accumulator; else through the first step's operand when it is a whole
    // tensor like the accumulator and the step commutes (a hard-swish's `x · (x + 3)`
    // reads the sum second): the accumulator becomes that step's operand, read in
    // lock-step.
    let through_operand = (second.steps.first().and_then(|&(step, _)| swapped(step)))
        .filter(|_| node.inputs.get(1).and_then(|&b| lens(&[b])) == Some(vec![total]))
        .map(|step| {
            let mut swapped = second.clone();
            swapped.steps[0] = (step, Share::Row);
            (1, swapped)
        });
    let candidates = [(0, second.clone())].into_iter().chain(through_operand);
    for (slot, second) in candidates {
        let Some(&read) = node.inputs.get(slot) else {
            continue;
        };
        let producer = model.node(read.node);
        let Some(first) = producer.op_as::<FastBinChain>() else {
            continue;
        };
        // Read once: read again (`x · x`), its values would be needed after the first
        // chain's steps changed them.
        let reads = node.inputs.iter().filter(|&&i| i == read).count();
        if reads != 1 || crate::plan_graph::only_reader(model, producer.id)? != Some(node.id) {
            continue;
        }
        // The joined chain's output takes the first chain's accumulator's shape (through an
        // operand, `[8, 5, 5]` may stand for `[1, 8, 5, 5]`).
        let shape = |outlet: OutletId| model.outlet_fact(outlet).map(|f| f.shape.clone());
        if shape(producer.inputs[0])? != shape(node.inputs[0])? {
            continue;
        }
        let (Some(first_lens), Some(second_lens)) =
            (lens(&producer.inputs[1..]), lens(&node.inputs[1..]))
        else {
            continue;
        };
        let operand_lens: Vec<usize> = first_lens.into_iter().chain(second_lens).collect();
        if let Some(joined) = first.then(&second, total, &operand_lens) {
            return Ok(Some(Merge {
                first: producer.id,
                second: node.id,
                joined,
                via_operand: slot == 1,
            }));
        }
    }
    Ok(None)
}

/// Where a chain's accumulator values come from.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// The output holds them already.
    InPlace,
    F32(&'a [f32]),
    U8(&'a [u8]),
    I8(&'a [i8]),
}

impl Source<'_> {
    fn len(&self) -> Option<usize> {
        match self {
            Source::InPlace => None,
            Source::F32(a) => Some(a.len()),
            Source::U8(a) => Some(a.len()),
            Source::I8(a) => Some(a.len()),
        }
    }
}

/// Elements a chain applies its steps to at a time (16 KiB: stays in L1 across the steps).
const PIECE: usize = 4096;

/// `x = x op value` over `out`, one loop per operation so that each vectorizes. Max and Min
/// keep a NaN `x` (NaN propagates, as ONNX's Relu, Max and Min do).
#[inline(always)]
fn apply(op: Step, out: &mut [f32], value: f32) {
    match op {
        Step::Add => out.iter_mut().for_each(|x| *x += value),
        Step::Mul => out.iter_mut().for_each(|x| *x *= value),
        Step::Sub => out.iter_mut().for_each(|x| *x -= value),
        Step::SubF => out.iter_mut().for_each(|x| *x = value - *x),
        Step::Max => simd::select_in_place(InPlace::Max, out, SelectOperand::Value(value)),
        Step::Min => simd::select_in_place(InPlace::Min, out, SelectOperand::Value(value)),
        Step::PRelu => simd::select_in_place(InPlace::PRelu, out, SelectOperand::Value(value)),
    }
}

/// `x = x op b` element by element over `out` and `row` (as long as `out`).
#[inline(always)]
fn apply_row(op: Step, out: &mut [f32], row: &[f32]) {
    let pairs = out.iter_mut().zip(row);
    match op {
        Step::Add => pairs.for_each(|(x, b)| *x += b),
        Step::Mul => pairs.for_each(|(x, b)| *x *= b),
        Step::Sub => pairs.for_each(|(x, b)| *x -= b),
        Step::SubF => pairs.for_each(|(x, b)| *x = b - *x),
        Step::Max => simd::select_in_place(InPlace::Max, out, SelectOperand::Each(row)),
        Step::Min => simd::select_in_place(InPlace::Min, out, SelectOperand::Each(row)),
        Step::PRelu => simd::select_in_place(InPlace::PRelu, out, SelectOperand::Each(row)),
    }
}

/// [`apply_row`] over `out` with `lanes` repeated along it, `out[0]` taking `lanes[phase]`: in
/// rows of 16 repeats, so that each [`apply_row`] is a long loop (a call into the CPU's select
/// for Max and Min) rather than one per 16 values.
#[inline(always)]
fn apply_lanes(op: Step, out: &mut [f32], phase: usize, lanes: &[f32; LANES]) {
    const REPEATS: usize = 16;
    let mut row = [0f32; LANES * REPEATS];
    for chunk in row.as_chunks_mut::<LANES>().0 {
        *chunk = *lanes;
    }
    let lead = ((LANES - phase) % LANES).min(out.len());
    let (head, rest) = out.split_at_mut(lead);
    apply_row(op, head, &lanes[phase..]);
    for chunk in rest.chunks_mut(row.len()) {
        apply_row(op, chunk, &row[..chunk.len()]);
    }
}

impl Op for FastBinChain {
    fn name(&self) -> StaticName {
        let pairs_after = |steps: usize| {
            (self.round_trips.iter())
                .filter(move |(after, _)| *after == steps)
                .map(|_| "QuantizeDequantize".to_string())
        };
        let names: Vec<String> = (self.steps.iter().enumerate())
            .flat_map(|(i, (op, _))| pairs_after(i).chain([format!("{op:?}")]))
            .chain(pairs_after(self.steps.len()))
            .chain(self.quantize.as_ref().map(|_| "Quantize".to_string()))
            .collect();
        let names = (self.dequantize.as_ref().map(|_| "Dequantize".to_string()))
            .into_iter()
            .chain(names)
            .collect::<Vec<String>>();
        format!("FastBinChain({})", names.join("+")).into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastBinChain {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, mut inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(
            inputs.len() == self.steps.len() + 1,
            "a chain takes one operand per step"
        );
        let a = inputs.remove(0);
        // A step that reads the chain's own input is given its dequantized piece instead.
        let operands = (self.steps.iter().zip(&inputs))
            .map(|(&(_, share), b)| match share {
                Share::Input => Ok(&[][..]),
                _ => b.try_as_plain_ram().and_then(|b| b.as_slice::<f32>()),
            })
            .collect::<TractResult<Vec<&[f32]>>>()?;
        let a_ram = a.try_as_plain_ram()?;
        let source = match a.datum_type() {
            DatumType::U8 => Source::U8(a_ram.as_slice::<u8>()?),
            DatumType::I8 => Source::I8(a_ram.as_slice::<i8>()?),
            _ => Source::F32(a_ram.as_slice::<f32>()?),
        };
        if let Some(quantize) = &self.quantize {
            // SAFETY: 8-bit integers have no invalid bit patterns, and `run_quantized` writes
            // every element (the pieces tile the accumulator) or fails, dropping the tensor
            // unread.
            let output = unsafe {
                if quantize.output == u8::datum_type() {
                    let mut output = Tensor::uninitialized::<u8>(a.shape())?;
                    self.run_quantized(
                        quantize,
                        source,
                        &operands,
                        output.try_as_plain_ram_mut()?.as_slice_mut::<u8>()?,
                    )?;
                    output
                } else {
                    let mut output = Tensor::uninitialized::<i8>(a.shape())?;
                    self.run_quantized(
                        quantize,
                        source,
                        &operands,
                        output.try_as_plain_ram_mut()?.as_slice_mut::<i8>()?,
                    )?;
                    output
                }
            };
            return Ok(tvec!(output.into_tvalue()));
        }
        // An f32 accumulator no other op reads (nor this one twice: each use holds a reference)
        // is updated in place: no second tensor to allocate and write beside the one read.
        let output = if matches!(source, Source::F32(_)) && a.is_exclusive() {
            let mut output = a.into_tensor();
            self.compute_in_place(
                &operands,
                output.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?,
            )?;
            output
        } else {
            // SAFETY: f32 has no invalid bit patterns, and `run` writes every element (the
            // pieces tile the accumulator) or fails, dropping the tensor unread.
            let mut output = unsafe { Tensor::uninitialized::<f32>(a.shape())? };
            self.run(
                source,
                &operands,
                output.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?,
            )?;
            output
        };
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for FastBinChain {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(
            inputs.len() == self.steps.len() + 1,
            "a chain takes one operand per step"
        );
        Ok(tvec!(match &self.quantize {
            Some(quantize) => quantize.output.fact(inputs[0].shape.clone()),
            None => f32::fact(inputs[0].shape.clone()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_block(ops: &[Step]) -> Vec<(Step, Share)> {
        ops.iter().map(|&op| (op, Share::PerBlock)).collect()
    }

    /// Asserts that the plan has a node of each op (named as `Op::name` names it).
    fn assert_has_ops(model: &TypedModel, ops: &[&str]) {
        let names: Vec<String> = (model.nodes().iter())
            .map(|n| n.op.name().to_string())
            .collect();
        for op in ops {
            assert!(names.iter().any(|name| name == op), "no {op} in {names:?}");
        }
    }

    /// `model`'s outputs on `inputs`, run as a plan.
    fn outputs_of<const N: usize>(model: &TypedModel, inputs: [Tensor; N]) -> Vec<Tensor> {
        let plan = model.clone().into_runnable().unwrap();
        let inputs = inputs.into_iter().map(TValue::from).collect();
        (plan.run(inputs).unwrap().into_iter())
            .map(|t| t.into_tensor())
            .collect()
    }

    /// A u8 quantize → dequantize pair.
    fn u8_pair(scale: f32, zero_point: i32) -> FastQuantizeDequantize {
        use super::super::{FastDequantizeLinear, FastQuantizeLinear};
        FastQuantizeDequantize {
            quantize: FastQuantizeLinear {
                multiplier: 1.0 / scale,
                zero_point,
                output: u8::datum_type(),
            },
            dequantize: FastDequantizeLinear { scale, zero_point },
        }
    }

    /// Values of `shape` from -period/2 up, in a saw-tooth `seed` apart.
    fn saw_tooth(shape: [usize; 4], seed: f32, period: f32) -> Tensor {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n)
            .map(|i| ((i as f32 * seed) % period) - period / 2.0)
            .collect();
        tract_ndarray::Array4::from_shape_vec(shape, v)
            .unwrap()
            .into_tensor()
    }

    #[test]
    fn a_quantize_dequantize_pair_reading_only_a_chain_is_folded_into_it() {
        // x · scale per channel → pair (folded); y + 1 → pair, where y + 1 is also an output
        // (kept apart: the unrounded values are read).
        let shape = [1, 8, 20, 20];
        let pair = |zero_point| u8_pair(0.05, zero_point);
        let chain = |step| FastBinChain {
            steps: vec![(step, Share::PerBlock)],
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact(shape)).unwrap();
        let y = model.add_source("y", f32::fact(shape)).unwrap();
        let scales: Vec<f32> = (0..8).map(|c| 0.5 + c as f32 * 0.3).collect();
        let scales = tract_ndarray::Array3::from_shape_vec((8, 1, 1), scales).unwrap();
        let scales = model.add_const("scales", scales.into_tensor()).unwrap();
        let one = model.add_const("one", tensor1(&[1.0f32])).unwrap();
        let scaled = model
            .wire_node("scaled", chain(Step::Mul), &[x, scales])
            .unwrap();
        let rounded = model.wire_node("rounded", pair(3), &scaled).unwrap();
        let shifted = model
            .wire_node("shifted", chain(Step::Add), &[y, one])
            .unwrap();
        let shifted_rounded = model
            .wire_node("shifted.rounded", pair(200), &shifted)
            .unwrap();
        model
            .select_output_outlets(&[rounded[0], shifted_rounded[0], shifted[0]])
            .unwrap();

        let values = |seed: f32| saw_tooth(shape, seed, 9.0);
        let run = |model: &TypedModel| -> Vec<Vec<f32>> {
            let plan = model.clone().into_runnable().unwrap();
            let outputs = plan
                .run(tvec![values(0.37).into(), values(0.71).into()])
                .unwrap();
            outputs
                .iter()
                .map(|t| {
                    t.to_plain_array_view::<f32>()
                        .unwrap()
                        .iter()
                        .copied()
                        .collect()
                })
                .collect()
        };
        let expected = run(&model);
        assert_eq!(fold_round_trips(&mut model).unwrap(), 1);
        assert_has_ops(
            &model,
            &[
                "FastBinChain(Mul+QuantizeDequantize)",
                "FastQuantizeDequantize",
            ],
        );
        assert_eq!(run(&model), expected);
    }

    #[test]
    fn chains_read_only_by_the_next_chain_are_joined_with_the_same_values() {
        // A QDQ hard-swish and a scale/shift after it: t = pair(x + 3); h = pair(x · t) (the
        // sum read as the product's operand); s = pair(h · 0.5); o = s - y (through the
        // accumulator). Beside it: u = x · 2 read twice by v = u · u (kept apart), and w = z - q,
        // q = z + 1 (through the operand, Sub becoming SubF). Every value must stay the same.
        let shape = [1, 4, 6, 10];
        let pair = u8_pair;
        let chain = |step, share| FastBinChain {
            steps: vec![(step, share)],
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let mut model = TypedModel::default();
        let sources: Vec<OutletId> = ["x", "y", "z"]
            .iter()
            .map(|name| model.add_source(*name, f32::fact(shape)).unwrap())
            .collect();
        let (x, y, z) = (sources[0], sources[1], sources[2]);
        let mut konst = |name: &str, value: f32| model.add_const(name, tensor1(&[value])).unwrap();
        let (three, half, two, one) = (
            konst("3", 3.0),
            konst("0.5", 0.5),
            konst("2", 2.0),
            konst("1", 1.0),
        );
        let mut wire = |name: &str, op: Box<dyn TypedOp>, inputs: &[OutletId]| -> OutletId {
            model.wire_node(name, op, inputs).unwrap()[0]
        };
        let sum = wire(
            "sum",
            Box::new(chain(Step::Add, Share::PerBlock)),
            &[x, three],
        );
        let t = wire("t", Box::new(pair(0.03, 0)), &[sum]);
        let product = wire("product", Box::new(chain(Step::Mul, Share::Row)), &[x, t]);
        let h = wire("h", Box::new(pair(0.05, 10)), &[product]);
        let scaled = wire(
            "scaled",
            Box::new(chain(Step::Mul, Share::PerBlock)),
            &[h, half],
        );
        let s = wire("s", Box::new(pair(0.02, 128)), &[scaled]);
        let o = wire("o", Box::new(chain(Step::Sub, Share::Row)), &[s, y]);
        let u = wire("u", Box::new(chain(Step::Mul, Share::PerBlock)), &[x, two]);
        let v = wire("v", Box::new(chain(Step::Mul, Share::Row)), &[u, u]);
        let q = wire("q", Box::new(chain(Step::Add, Share::PerBlock)), &[z, one]);
        let w = wire("w", Box::new(chain(Step::Sub, Share::Row)), &[z, q]);
        model.select_output_outlets(&[o, v, w]).unwrap();

        let values = |seed: f32| saw_tooth(shape, seed, 11.0);
        let run = |model: &TypedModel| -> Vec<Vec<u32>> {
            let plan = model.clone().into_runnable().unwrap();
            let inputs = tvec![
                values(0.37).into(),
                values(0.71).into(),
                values(1.13).into()
            ];
            (plan.run(inputs).unwrap().iter())
                .map(|t| {
                    let values = t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap();
                    values.iter().map(|v| v.to_bits()).collect()
                })
                .collect()
        };
        let expected = run(&model);
        assert_eq!(fold_round_trips(&mut model).unwrap(), 3);
        assert_eq!(merge_chains(&mut model).unwrap(), 4);
        let mut names: Vec<String> = (model.nodes().iter())
            .filter(|n| n.op_is::<FastBinChain>())
            .map(|n| n.op.name().to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "FastBinChain(Add+QuantizeDequantize+Mul+QuantizeDequantize+Mul+QuantizeDequantize+Sub)",
                "FastBinChain(Add+SubF)",
                "FastBinChain(Mul)",
                "FastBinChain(Mul)",
            ],
        );
        assert_eq!(run(&model), expected);
    }

    #[test]
    fn a_quantization_reading_only_a_chain_is_folded_into_it() {
        // q(x · 0.5 + 1) to u8 (folded once the two chains are joined), and q(y - 2) to i8
        // (saturating), where y - 2 is also an output (kept apart: its f32 values are read).
        let shape = [1, 4, 6, 10];
        let chain = |step| FastBinChain {
            steps: vec![(step, Share::PerBlock)],
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let quantize = |output, zero_point| FastQuantizeLinear {
            multiplier: 1.0 / 0.04,
            zero_point,
            output,
        };
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact(shape)).unwrap();
        let y = model.add_source("y", f32::fact(shape)).unwrap();
        let mut konst = |name: &str, value: f32| model.add_const(name, tensor1(&[value])).unwrap();
        let (half, one, two) = (konst("0.5", 0.5), konst("1", 1.0), konst("2", 2.0));
        let mut wire = |name: &str, op: Box<dyn TypedOp>, inputs: &[OutletId]| -> OutletId {
            model.wire_node(name, op, inputs).unwrap()[0]
        };
        let scaled = wire("scaled", Box::new(chain(Step::Mul)), &[x, half]);
        let shifted = wire("shifted", Box::new(chain(Step::Add)), &[scaled, one]);
        let qx = wire("qx", Box::new(quantize(u8::datum_type(), 100)), &[shifted]);
        let dy = wire("dy", Box::new(chain(Step::Sub)), &[y, two]);
        let qy = wire("qy", Box::new(quantize(i8::datum_type(), -3)), &[dy]);
        model.select_output_outlets(&[qx, qy, dy]).unwrap();

        let run = |model: &TypedModel| {
            let inputs = [saw_tooth(shape, 0.37, 11.0), saw_tooth(shape, 0.71, 11.0)];
            outputs_of(model, inputs)
        };
        let expected = run(&model);
        assert_eq!(merge_chains(&mut model).unwrap(), 1);
        assert_eq!(fold_quantizations(&mut model).unwrap(), 1);
        assert_has_ops(
            &model,
            &["FastBinChain(Mul+Add+Quantize)", "FastQuantizeLinear"],
        );
        let got = run(&model);
        assert_eq!(got[0].datum_type(), u8::datum_type());
        assert_eq!(got, expected);
        // y - 2 reaches -7.5, -190 levels below the zero point: the low end saturates.
        let qy = got[1]
            .try_as_plain_ram()
            .unwrap()
            .as_slice::<i8>()
            .unwrap()
            .to_vec();
        assert!(qy.contains(&i8::MIN), "{qy:?}");
    }

    #[test]
    fn a_dequantization_read_only_by_a_chain_is_folded_into_it() {
        use super::super::FastDequantizeLinear;
        // q((dx + 3) · dx) from u8 to u8, dx read by the chain twice (its accumulator and its
        // second step's operand); dw + 1 from i8. Kept apart: dy, also an output, and dv, read by
        // two chains.
        let shape = [1, 4, 6, 10];
        let chain = |steps: Vec<(Step, Share)>| FastBinChain {
            steps,
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let dequantize = |scale, zero_point| FastDequantizeLinear { scale, zero_point };
        let mut model = TypedModel::default();
        let xq = model.add_source("xq", u8::fact(shape)).unwrap();
        let wq = model.add_source("wq", i8::fact(shape)).unwrap();
        let yq = model.add_source("yq", u8::fact(shape)).unwrap();
        let mut konst = |name: &str, value: f32| model.add_const(name, tensor1(&[value])).unwrap();
        let (one, three) = (konst("1", 1.0), konst("3", 3.0));
        let mut wire = |name: &str, op: Box<dyn TypedOp>, inputs: &[OutletId]| -> OutletId {
            model.wire_node(name, op, inputs).unwrap()[0]
        };
        let dx = wire("dx", Box::new(dequantize(0.05, 128)), &[xq]);
        let steps = vec![(Step::Add, Share::PerBlock), (Step::Mul, Share::Row)];
        let h = wire("h", Box::new(chain(steps)), &[dx, three, dx]);
        let quantize = FastQuantizeLinear {
            multiplier: 1.0 / 0.2,
            zero_point: 10,
            output: u8::datum_type(),
        };
        let qh = wire("qh", Box::new(quantize), &[h]);
        let dw = wire("dw", Box::new(dequantize(0.1, -3)), &[wq]);
        let w1 = wire(
            "w1",
            Box::new(chain(vec![(Step::Add, Share::PerBlock)])),
            &[dw, one],
        );
        let dy = wire("dy", Box::new(dequantize(0.02, 7)), &[yq]);
        let y1 = wire(
            "y1",
            Box::new(chain(vec![(Step::Add, Share::PerBlock)])),
            &[dy, one],
        );
        let dv = wire("dv", Box::new(dequantize(0.03, 0)), &[yq]);
        let v1 = wire(
            "v1",
            Box::new(chain(vec![(Step::Add, Share::PerBlock)])),
            &[dv, one],
        );
        let v3 = wire(
            "v3",
            Box::new(chain(vec![(Step::Add, Share::PerBlock)])),
            &[dv, three],
        );
        model
            .select_output_outlets(&[qh, w1, y1, dy, v1, v3])
            .unwrap();

        let run = |model: &TypedModel| {
            let levels =
                |seed: usize, offset: i32| (0..240).map(move |i| (i * seed % 256) as i32 + offset);
            let u8s: Vec<u8> = levels(37, 0).map(|v| v as u8).collect();
            let i8s: Vec<i8> = levels(53, -128).map(|v| v as i8).collect();
            let u8s_too: Vec<u8> = levels(91, 0).map(|v| v as u8).collect();
            let inputs = [
                Tensor::from_shape(&shape, &u8s).unwrap(),
                Tensor::from_shape(&shape, &i8s).unwrap(),
                Tensor::from_shape(&shape, &u8s_too).unwrap(),
            ];
            outputs_of(model, inputs)
        };
        let expected = run(&model);
        assert_eq!(fold_quantizations(&mut model).unwrap(), 1);
        assert_eq!(fold_dequantizations(&mut model).unwrap(), 2);
        assert_has_ops(
            &model,
            &[
                "FastBinChain(Dequantize+Add+Mul+Quantize)",
                "FastBinChain(Dequantize+Add)",
                "FastDequantizeLinear",
            ],
        );
        let dequantizations = (model.nodes().iter())
            .filter(|n| n.op_is::<FastDequantizeLinear>())
            .count();
        assert_eq!(dequantizations, 2, "dy and dv stay");
        assert_eq!(run(&model), expected);
    }

    #[test]
    fn operand_shapes_map_to_blocks_or_rows() {
        let nchw = [2, 8, 5, 5];
        assert_eq!(share_of(&nchw, &[8, 1, 1]), None); // a channel per image: not one block each
        assert_eq!(share_of(&[1, 8, 5, 5], &[8, 1, 1]), Some(Share::PerBlock));
        assert_eq!(share_of(&nchw, &[2, 8, 1, 1]), Some(Share::PerBlock));
        assert_eq!(share_of(&nchw, &[5, 5]), Some(Share::Row));
        assert_eq!(share_of(&nchw, &nchw), Some(Share::Row));
        assert_eq!(share_of(&[1, 128], &[128]), Some(Share::Row));
        assert_eq!(share_of(&nchw, &[1]), Some(Share::PerBlock));
        assert_eq!(share_of(&nchw, &[8, 5, 1]), None);
        assert_eq!(share_of(&[5, 5], &nchw), None);
        // Channels blocked by 16: one value per channel; one per lane, for all blocks, is a row.
        let blocked = [1, 3, 5, 7, 16];
        assert_eq!(share_of(&blocked, &[1, 3, 1, 1, 16]), Some(Share::Lanes));
        assert_eq!(share_of(&blocked, &[1, 1, 1, 1, 16]), Some(Share::Row));
        assert_eq!(share_of(&blocked, &[1, 1, 1, 1, 1]), Some(Share::PerBlock));
        assert_eq!(share_of(&[2, 3, 5, 7, 16], &[1, 3, 1, 1, 16]), None);
    }

    #[test]
    fn per_channel_operands_of_blocked_channels_on_a_pool_match_the_definition() {
        use tract_linalg::multithread::{Executor, multithread_tract_scope};
        // 4 blocks of 16 channels of 23×29 positions (pieces and tasks start mid-block), a
        // scale and a shift per channel, a ReLU.
        let (blocks, plane) = (4, 23 * 29);
        let a: Vec<f32> = (0..blocks * plane * 16)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 8.0)
            .collect();
        let scale: Vec<f32> = (0..blocks * 16).map(|c| c as f32 / 16.0 - 1.5).collect();
        let shift: Vec<f32> = (0..blocks * 16).map(|c| 0.25 * (c % 5) as f32).collect();
        let shapes = [
            vec![1, blocks, 23, 29, 16],
            vec![1, blocks, 1, 1, 16],
            vec![1, blocks, 1, 1, 16],
            vec![1, 1, 1, 1, 1],
        ];
        let lanes = |a: &[usize], b: &[usize]| share_of(a, b).unwrap();
        let chain = FastBinChain::checked(
            vec![
                (Step::Mul, lanes(&shapes[0], &shapes[1])),
                (Step::Add, lanes(&shapes[0], &shapes[2])),
                (Step::Max, lanes(&shapes[0], &shapes[3])),
            ],
            &shapes,
        )
        .unwrap();
        for threads in [1, 2] {
            let mut out = vec![f32::NAN; a.len()];
            multithread_tract_scope(Executor::multithread(threads), || {
                chain.compute(&a, &[&scale, &shift, &[0.0]], &mut out)
            })
            .unwrap();
            for (i, (&x, &y)) in a.iter().zip(&out).enumerate() {
                let c = i / (plane * 16) * 16 + i % 16;
                assert_eq!(y, (x * scale[c] + shift[c]).max(0.0), "element {i}");
            }
        }
    }

    #[test]
    fn plain_binary_ops_tract_left_unoptimized_become_chains() {
        let mul = TypedBinOp(Box::new(math::Mul), None);
        let sub = TypedBinOp(Box::new(math::Sub), None);
        let per_channel = [vec![1, 8, 6, 6], vec![8, 1, 1]];
        let chain = FastBinChain::for_op(&mul, &per_channel).expect("per channel: one step");
        assert_eq!(chain.steps, vec![(Step::Mul, Share::PerBlock)]);
        let chain = FastBinChain::for_op(&sub, &[vec![4, 32], vec![32]]).expect("a row");
        assert_eq!(chain.steps, vec![(Step::Sub, Share::Row)]);
        // The accumulator second (output larger than input 0), pieces too short to vectorize,
        // and a changed output type stay with tract.
        assert!(FastBinChain::for_op(&mul, &[vec![8, 1, 1], vec![1, 8, 6, 6]]).is_none());
        assert!(FastBinChain::for_op(&mul, &[vec![8, 2, 2], vec![8, 1, 1]]).is_none());
        let typed = TypedBinOp(Box::new(math::Mul), Some(DatumType::F32));
        assert!(FastBinChain::for_op(&typed, &per_channel).is_none());
        // And it computes the product.
        let a: Vec<f32> = (0..288).map(|i| i as f32 * 0.5 - 40.0).collect();
        let b: Vec<f32> = (0..8).map(|c| c as f32 - 3.0).collect();
        let chain = FastBinChain::for_op(&mul, &per_channel).unwrap();
        let mut out = vec![0.0; a.len()];
        chain.compute(&a, &[&b], &mut out).unwrap();
        let expected: Vec<f32> = a.iter().enumerate().map(|(i, x)| x * b[i / 36]).collect();
        assert_eq!(out, expected);
    }

    #[test]
    fn prelu_scales_negative_values_by_their_slope() {
        // Per channel (blocks of 20) and per position (a row of 20); then NaN stays NaN.
        let a: Vec<f32> = (0..60).map(|i| i as f32 - 30.0).collect();
        let a = &a[..];
        let slopes = [0.5, 0.25, -1.0];
        let row: Vec<f32> = (0..20).map(|i| i as f32 / 10.0).collect();
        for (share, b) in [(Share::PerBlock, &slopes[..]), (Share::Row, &row[..])] {
            let chain = FastBinChain {
                steps: vec![(Step::PRelu, share)],
                round_trips: vec![],
                quantize: None,
                dequantize: None,
            };
            let mut out = vec![f32::NAN; a.len()];
            chain.compute(a, &[b], &mut out).unwrap();
            for (i, (&x, &y)) in a.iter().zip(&out).enumerate() {
                let slope = match share {
                    Share::PerBlock => slopes[i / 20],
                    _ => row[i % 20],
                };
                assert_eq!(y, if x < 0.0 { x * slope } else { x }, "element {i}");
            }
        }
        let chain = FastBinChain {
            steps: vec![(Step::PRelu, Share::PerBlock)],
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let mut out = [0.0; 16];
        chain.compute(&[f32::NAN; 16], &[&[2.0]], &mut out).unwrap();
        assert!(out.iter().all(|v| v.is_nan()));
    }

    #[test]
    fn rows_read_in_lock_step_mix_with_per_block_operands() {
        use tract_linalg::multithread::{Executor, multithread_tract_scope};
        // x · y (same shape) − per-channel shift, then max with a row of 6000 (a suffix of the
        // shape, repeated over 2 images), scale by a scalar: 2 × 3 × 2000 values, on two threads.
        let a: Vec<f32> = (0..12_000).map(|i| (i % 89) as f32 - 40.0).collect();
        let y: Vec<f32> = (0..12_000).map(|i| (i % 7) as f32 / 4.0).collect();
        let shift = [0.5, -1.0, 2.0, 0.0, 1.0, -2.0];
        let row: Vec<f32> = (0..6000).map(|i| (i % 13) as f32 - 6.0).collect();
        let chain = FastBinChain {
            steps: vec![
                (Step::Mul, Share::Row),
                (Step::Sub, Share::PerBlock),
                (Step::Max, Share::Row),
                (Step::Mul, Share::PerBlock),
            ],
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let mut out = vec![f32::NAN; a.len()];
        multithread_tract_scope(Executor::multithread(2), || {
            chain.compute(&a, &[&y, &shift, &row, &[0.5]], &mut out)
        })
        .unwrap();
        for i in 0..a.len() {
            let want = (a[i] * y[i] - shift[i / 2000]).max(row[i % 6000]) * 0.5;
            assert_eq!(out[i], want, "element {i}");
        }
    }

    #[test]
    fn per_channel_scale_shift_and_relu_over_planes_of_any_length() {
        // 2 images × 3 channels of 7×7 (49: not a multiple of any vector width).
        let a: Vec<f32> = (0..2 * 3 * 49)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 8.0)
            .collect();
        let (scale, shift, zero) = ([0.5, -2.0, 1.5], [1.0, 0.25, -3.0], [0.0]);
        let chain = FastBinChain {
            steps: per_block(&[Step::Mul, Step::Add, Step::Max]),
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let mut out = vec![f32::NAN; a.len()];
        // Per channel: the operand has one value per plane of 49, repeating over the 2 images.
        let scale6: Vec<f32> = scale.iter().chain(&scale).copied().collect();
        let shift6: Vec<f32> = shift.iter().chain(&shift).copied().collect();
        chain
            .compute(&a, &[&scale6, &shift6, &zero], &mut out)
            .unwrap();
        for (i, (&x, &y)) in a.iter().zip(&out).enumerate() {
            let c = i / 49 % 3;
            assert_eq!(y, (x * scale[c] + shift[c]).max(0.0), "element {i}");
        }
    }

    #[test]
    fn long_blocks_and_scalars_on_a_pool_match_the_definition() {
        use tract_linalg::multithread::{Executor, multithread_tract_scope};
        // 3 blocks of 5000 (longer than a piece, not a multiple of it) and a scalar operand,
        // split into tasks on two threads.
        let a: Vec<f32> = (0..15_000).map(|i| (i % 97) as f32 - 48.0).collect();
        let chain = FastBinChain {
            steps: per_block(&[Step::Add, Step::Max, Step::Min]),
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let mut out = vec![f32::NAN; a.len()];
        multithread_tract_scope(Executor::multithread(2), || {
            chain.compute(&a, &[&[1.0, 2.0, 3.0], &[0.0], &[6.0]], &mut out)
        })
        .unwrap();
        for (i, (&x, &y)) in a.iter().zip(&out).enumerate() {
            let shift = [1.0, 2.0, 3.0][i / 5000];
            assert_eq!(y, (x + shift).clamp(0.0, 6.0), "element {i}");
        }
    }

    #[test]
    fn sub_subf_min_follow_their_operand_order() {
        let a = [1.0f32, 4.0, -2.0, 8.0];
        let chain = FastBinChain {
            steps: per_block(&[Step::Sub, Step::SubF, Step::Min]),
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let mut out = [0.0; 4];
        chain
            .compute(&a, &[&[1.0, 2.0], &[10.0], &[6.0, 6.0, 6.0, 6.0]], &mut out)
            .unwrap();
        // x - b (b per half), then 10 - x, then min(x, 6): [0, 3, -4, 6] -> [10, 7, 14, 4].
        assert_eq!(out, [6.0, 6.0, 6.0, 4.0]);
    }

    #[test]
    fn an_operand_that_does_not_divide_the_accumulator_is_an_error() {
        let chain = FastBinChain {
            steps: per_block(&[Step::Add]),
            round_trips: vec![],
            quantize: None,
            dequantize: None,
        };
        let mut out = [0.0; 4];
        assert!(chain.compute(&[1.0; 4], &[&[1.0; 3]], &mut out).is_err());
        assert!(chain.compute(&[1.0; 4], &[&[]], &mut out).is_err());
    }
}
