//! Chains of element-wise Mul/Add/Sub/Min/Max whose every operand holds one value per block of
//! the f32 accumulator (a BatchNorm's per-channel scale and shift, a ReLU's 0), replacing tract's
//! `OptBinChain` in cpu plans. tract updates the accumulator in place, so when another op still
//! reads it (DenseNet's concatenations feed every later layer) it is copied first, and it takes
//! its chunked path only when the block length is a multiple of the vector width (not 14×14 or
//! 7×7 planes): DenseNet-121's BatchNorm + ReLU chains took 29.6 of its 181 ms per run
//! (onnxruntime's Add and Relu: 7). Here each block is read once and written once to a new
//! tensor, every step applied while the block is in cache, in loops LLVM vectorizes.

use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::num_integer::Integer;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::binary::OptBinChain;
use tract_linalg::BinOp;
use tract_linalg::multithread::{BShare, par_chunks_mut};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastBinChain {
    /// The operation of each step; step `i`'s operand is input `i + 1`.
    pub steps: Vec<BinOp>,
}

impl FastBinChain {
    /// The fast version of `chain` on operands of these shapes (the accumulator's first) when it
    /// applies: every step shares one operand value per block of the accumulator (no lock-step
    /// rows), and the blocks are long enough to vectorize (shorter ones stay with tract, whose
    /// short-period path repeats the operand instead). The datum type is checked by the caller.
    pub fn for_op(chain: &OptBinChain, shapes: &[Vec<usize>]) -> Option<FastBinChain> {
        const SHORTEST_BLOCK: usize = 16;
        let (a, operands) = shapes.split_first()?;
        let a_len: usize = a.iter().product();
        let mut block = a_len;
        for b in operands {
            let b_len: usize = b.iter().product();
            if b_len == 0 || !a_len.is_multiple_of(b_len) {
                return None;
            }
            block = block.gcd(&(a_len / b_len));
        }
        let per_block = chain.steps.iter().all(|s| s.share == BShare::PerBlock);
        (per_block && operands.len() == chain.steps.len() && block >= SHORTEST_BLOCK).then(|| {
            FastBinChain {
                steps: chain.steps.iter().map(|s| s.linalg_op).collect(),
            }
        })
    }

    /// `output` = `a` with each step applied in order, step `i` taking `operands[i][j]` for the
    /// `j`-th of its `operands[i].len()` equal blocks of `a`.
    pub fn compute(&self, a: &[f32], operands: &[&[f32]], output: &mut [f32]) -> TractResult<()> {
        ensure!(operands.len() == self.steps.len(), "one operand per step");
        ensure!(
            output.len() == a.len(),
            "the chain's output has its input's size"
        );
        if a.is_empty() {
            return Ok(());
        }
        let mut block = a.len();
        for b in operands {
            ensure!(
                !b.is_empty() && a.len().is_multiple_of(b.len()),
                "an operand of {} values does not divide the accumulator's {}",
                b.len(),
                a.len()
            );
            block = block.gcd(&(a.len() / b.len()));
        }
        let work = a.len() * self.steps.len();
        // Tasks are ranges of elements (a block can be the whole tensor: scalar operands), each
        // walked in pieces that stay in L1 while every step passes over them.
        par_chunks_mut(output, 1, work, |start, chunk| {
            let mut done = 0;
            while done < chunk.len() {
                let at = start + done;
                let block_end = (at / block + 1) * block;
                let len = (block_end - at).min(chunk.len() - done).min(PIECE);
                let out = &mut chunk[done..][..len];
                out.copy_from_slice(&a[at..][..len]);
                for (step, b) in self.steps.iter().zip(operands) {
                    apply(*step, out, b[at / (a.len() / b.len())]);
                }
                done += len;
            }
            Ok(())
        })
    }
}

/// Elements a chain applies its steps to at a time (16 KiB: stays in L1 across the steps).
const PIECE: usize = 4096;

/// `x = x op value` over `out`, one loop per operation so that each vectorizes. Max and Min
/// keep a NaN `x` (NaN propagates, as ONNX's Relu, Max and Min do).
#[inline]
fn apply(op: BinOp, out: &mut [f32], value: f32) {
    match op {
        BinOp::Add => out.iter_mut().for_each(|x| *x += value),
        BinOp::Mul => out.iter_mut().for_each(|x| *x *= value),
        BinOp::Sub => out.iter_mut().for_each(|x| *x -= value),
        BinOp::SubF => out.iter_mut().for_each(|x| *x = value - *x),
        BinOp::Max => out
            .iter_mut()
            .for_each(|x| *x = if *x < value { value } else { *x }),
        BinOp::Min => out
            .iter_mut()
            .for_each(|x| *x = if *x > value { value } else { *x }),
    }
}

impl Op for FastBinChain {
    fn name(&self) -> StaticName {
        let names: Vec<String> = self.steps.iter().map(|s| format!("{s:?}")).collect();
        format!("FastBinChain({})", names.join("+")).into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastBinChain {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(
            inputs.len() == self.steps.len() + 1,
            "a chain takes one operand per step"
        );
        let a = &inputs[0];
        // SAFETY: f32 has no invalid bit patterns, and `compute` writes every element (the
        // blocks tile the accumulator) or fails, dropping the tensor unread.
        let mut output = unsafe { Tensor::uninitialized::<f32>(a.shape())? };
        let operands = inputs[1..]
            .iter()
            .map(|b| b.try_as_plain_ram().and_then(|b| b.as_slice::<f32>()))
            .collect::<TractResult<Vec<&[f32]>>>()?;
        self.compute(
            a.try_as_plain_ram()?.as_slice::<f32>()?,
            &operands,
            output.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?,
        )?;
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
        Ok(tvec!(inputs[0].without_value()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_channel_scale_shift_and_relu_over_planes_of_any_length() {
        // 2 images × 3 channels of 7×7 (49: not a multiple of any vector width).
        let a: Vec<f32> = (0..2 * 3 * 49)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 8.0)
            .collect();
        let (scale, shift, zero) = ([0.5, -2.0, 1.5], [1.0, 0.25, -3.0], [0.0]);
        let chain = FastBinChain {
            steps: vec![BinOp::Mul, BinOp::Add, BinOp::Max],
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
            steps: vec![BinOp::Add, BinOp::Max, BinOp::Min],
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
            steps: vec![BinOp::Sub, BinOp::SubF, BinOp::Min],
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
            steps: vec![BinOp::Add],
        };
        let mut out = [0.0; 4];
        assert!(chain.compute(&[1.0; 4], &[&[1.0; 3]], &mut out).is_err());
        assert!(chain.compute(&[1.0; 4], &[&[]], &mut out).is_err());
    }
}
