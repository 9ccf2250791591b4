//! Matrix products of f32 (tract's `EinSum` in a form that is a batched matrix product: ONNX
//! `MatMul`, `Gemm`, and the 1×1 convolutions tract rewrites into one) on the `gemm` crate's
//! kernels, replacing tract's in cpu plans for the reason [`conv_gemm`](super::conv_gemm) gives.
//!
//! `gemm` takes any row and column strides for each operand and the output, so every layout
//! of the einsum (transposed weights, channels-first 1×1 convolutions, broadcast batch axes) is
//! a stride, with no transposing copy: each axis of the einsum is the row (`m`), column (`n`)
//! or summed (`k`) axis of the product, or an outer loop over products.

use super::gemm_common::{self as gemm, Epilogue, ProductOp, Run, SharedOutput};
use crate::parallel;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::einsum::EinSum;

/// One axis of the product: its length and stride (in elements) in A, B and C (0 where absent
/// or broadcast).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dim {
    pub len: usize,
    pub a: usize,
    pub b: usize,
    pub c: usize,
}

impl Dim {
    const ONE: Dim = Dim {
        len: 1,
        a: 0,
        b: 0,
        c: 0,
    };
}

#[derive(Debug, Clone, PartialEq)]
pub struct FastMatMul {
    pub m: Dim,
    pub k: Dim,
    pub n: Dim,
    /// The other axes, each an outer loop over products.
    pub loops: Vec<Dim>,
    pub a_len: usize,
    pub b_len: usize,
    pub output_shape: TVec<usize>,
    /// Positions of the `m` and `n` axes in the output, where a fused addend may vary.
    pub m_position: Option<usize>,
    pub n_position: Option<usize>,
    pub epilogue: Epilogue,
}

// The epilogue's values are never NaN (see `gemm_common::step_after`): equality is an equivalence.
impl Eq for FastMatMul {}

fn natural_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

/// Merges axes that are one axis in memory in every tensor (an outer axis whose strides are
/// the inner one's times its length, as H and W of a channels-first 1×1 convolution): one
/// longer product instead of a loop of short ones.
fn merge_contiguous(mut dims: Vec<Dim>) -> Vec<Dim> {
    let merged = |outer: &Dim, inner: &Dim| {
        (outer.a == inner.a * inner.len
            && outer.b == inner.b * inner.len
            && outer.c == inner.c * inner.len)
            .then_some(Dim {
                len: outer.len * inner.len,
                ..*inner
            })
    };
    'again: loop {
        for i in 0..dims.len() {
            for j in 0..dims.len() {
                if let Some(d) = merged(&dims[i], &dims[j]).filter(|_| i != j) {
                    dims[j] = d;
                    dims.remove(i);
                    continue 'again;
                }
            }
        }
        return dims;
    }
}

impl FastMatMul {
    /// The product `op` computes on operands of shapes `a` and `b`, when it is one: f32, not
    /// quantized, each axis at most once per tensor, one summed axis longer than 1, equal or
    /// broadcast (length 1) lengths.
    pub fn for_op(op: &EinSum, a: &[usize], b: &[usize]) -> Option<FastMatMul> {
        if op.q_params.is_some() || op.operating_dt != f32::datum_type() {
            return None;
        }
        let axes = &op.axes;
        if axes.input_count() != 2 || axes.output_count() != 1 {
            return None;
        }
        let (a_strides, b_strides) = (natural_strides(a), natural_strides(b));
        let c_rank = axes.rank(InOut::Out(0));
        let mut output_shape: TVec<usize> = tvec![1; c_rank];
        let (mut ms, mut ns, mut ks, mut loops) = (vec![], vec![], vec![], vec![]);
        for axis in axes.iter_all_axes() {
            if axis.inputs[0].len() > 1 || axis.inputs[1].len() > 1 || axis.outputs[0].len() > 1 {
                return None;
            }
            let at = |positions: &TVec<usize>, shape: &[usize], strides: &[usize]| {
                positions
                    .first()
                    .map(|&p| (shape.get(p).copied(), strides.get(p).copied()))
            };
            let in_a = at(&axis.inputs[0], a, &a_strides);
            let in_b = at(&axis.inputs[1], b, &b_strides);
            let (len_a, len_b) = (
                in_a.map_or(Some(1), |(l, _)| l)?,
                in_b.map_or(Some(1), |(l, _)| l)?,
            );
            let len = len_a.max(len_b);
            // A length-1 side broadcasts: stride 0.
            let stride = |side: Option<(Option<usize>, Option<usize>)>, side_len: usize| match side
            {
                Some((_, Some(s))) if side_len == len => Some(s),
                _ if side_len == 1 => Some(0),
                _ => None,
            };
            let (sa, sb) = (stride(in_a, len_a)?, stride(in_b, len_b)?);
            let Some(&c_position) = axis.outputs[0].first() else {
                // Summed: in both operands with the same length (a summed broadcast is rare).
                if len == 1 {
                    continue;
                }
                if len_a != len_b {
                    return None;
                }
                ks.push(Dim {
                    len,
                    a: sa,
                    b: sb,
                    c: 0,
                });
                continue;
            };
            *output_shape.get_mut(c_position)? = len;
            let dim = Dim {
                len,
                a: sa,
                b: sb,
                c: c_position,
            };
            match (sa != 0, sb != 0) {
                _ if len == 1 => {}
                (true, false) => ms.push(dim),
                (false, true) => ns.push(dim),
                _ => loops.push(dim),
            }
        }
        let c_strides = natural_strides(&output_shape);
        let place = |dims: Vec<Dim>| -> Vec<Dim> {
            merge_contiguous(
                dims.into_iter()
                    .map(|d| Dim {
                        c: c_strides[d.c],
                        ..d
                    })
                    .collect(),
            )
        };
        let (ms, ns, ks) = (place(ms), place(ns), merge_contiguous(ks));
        let mut loops = place(loops);
        let &[k] = ks.as_slice() else {
            return None;
        };
        // The longest row and column axes are the product's; others become loops.
        let mut take_longest = |dims: Vec<Dim>| -> Option<Dim> {
            let longest = dims.iter().enumerate().max_by_key(|(_, d)| d.len)?.0;
            for (i, d) in dims.iter().enumerate() {
                if i != longest {
                    loops.push(*d);
                }
            }
            Some(dims[longest])
        };
        let (m, n) = (take_longest(ms), take_longest(ns));
        // Where the addend of a fused bias may vary: an output axis that alone makes up m or n.
        let position = |d: Option<Dim>| {
            let d = d?;
            (0..c_rank).find(|&p| output_shape[p] == d.len && c_strides[p] == d.c)
        };
        Some(FastMatMul {
            m_position: position(m),
            n_position: position(n),
            m: m.unwrap_or(Dim::ONE),
            k,
            n: n.unwrap_or(Dim::ONE),
            loops,
            a_len: a.iter().product(),
            b_len: b.iter().product(),
            output_shape,
            epilogue: Epilogue::default(),
        })
    }

    /// Whether the product is wide enough for `gemm` (see [`MIN_SIDE`](super::gemm_common::MIN_SIDE)):
    /// both sides, or the side of the operand that is not constant when the constant one is
    /// narrow. `gemm` packs a constant on every call, but a narrow one (a 1×1 convolution's few
    /// output channels: MTCNN's 2- and 4-channel heads over 4,125 positions) costs next to
    /// nothing, and tract packs the other operand on every call too, into 8-row tiles the few
    /// channels fill in part.
    pub fn worth_it(&self, a_constant: bool, b_constant: bool) -> bool {
        let (m, n) = (self.m.len, self.n.len);
        let wide = |side: usize| side >= super::gemm_common::MIN_SIDE;
        (wide(m) && wide(n))
            || (a_constant && m >= 2 && wide(n))
            || (b_constant && n >= 2 && wide(m))
    }

    /// `c` = the product of `a` and `b`, finished by the epilogue.
    pub fn compute(&self, a: &[f32], b: &[f32], c: &mut [f32]) -> TractResult<()> {
        ensure!(
            a.len() == self.a_len && b.len() == self.b_len,
            "matrix product operands have {} and {} values, the plan expects {} and {}",
            a.len(),
            b.len(),
            self.a_len,
            self.b_len
        );
        ensure!(c.len() == self.output_shape.iter().product::<usize>());
        if c.is_empty() {
            return Ok(());
        }
        let products: usize = self.loops.iter().map(|d| d.len).product();
        // Products are the parallel work; when they do not divide among the threads evenly, each
        // is split into blocks of rows or columns, whichever axis is longer.
        let parts = parallel::parts_for_balance(products);
        let split_rows = self.m.len >= self.n.len;
        let (block, blocks) =
            parallel::blocks(if split_rows { self.m.len } else { self.n.len }, parts, 16);
        let out = SharedOutput::new(c);
        parallel::for_each(products * blocks, 0, |_, task| {
            let (product, part) = (task / blocks, task % blocks);
            let (mut a_at, mut b_at, mut c_at, mut rest) = (0, 0, 0, product);
            for d in self.loops.iter().rev() {
                let i = rest % d.len;
                rest /= d.len;
                (a_at, b_at, c_at) = (a_at + i * d.a, b_at + i * d.b, c_at + i * d.c);
            }
            let ((rows, first_row), (columns, first_column)) = if split_rows {
                let first = part * block;
                ((block.min(self.m.len - first), first), (self.n.len, 0))
            } else {
                let first = part * block;
                ((self.m.len, 0), (block.min(self.n.len - first), first))
            };
            a_at += first_row * self.m.a;
            b_at += first_column * self.n.b;
            c_at += first_row * self.m.c + first_column * self.n.c;
            // SAFETY: offsets and strides come from the operands' shapes, checked against their
            // lengths above; every task writes its own rows or columns of its own product.
            unsafe {
                gemm::product(
                    (rows, columns, self.k.len),
                    out.at(c_at),
                    (self.n.c, self.m.c),
                    a.as_ptr().add(a_at),
                    (self.k.a, self.m.a),
                    b.as_ptr().add(b_at),
                    (self.n.b, self.k.b),
                    false,
                );
                if !self.epilogue.is_empty() {
                    self.finish(&out, c_at, (first_row, rows), (first_column, columns));
                }
            }
            Ok(())
        })
    }
}

impl FastMatMul {
    /// Applies the epilogue to the block of `rows` × `columns` of the output at `at`, along
    /// whichever of its axes is contiguous.
    ///
    /// SAFETY: the block must lie inside the output and belong to the calling task.
    unsafe fn finish(
        &self,
        out: &SharedOutput,
        at: usize,
        (first_row, rows): (usize, usize),
        (first_column, columns): (usize, usize),
    ) {
        let (m, n) = (self.m.c, self.n.c);
        // SAFETY: each run below lies in the block (the caller's condition).
        let run = |offset: usize, len: usize| unsafe {
            std::slice::from_raw_parts_mut(out.at(at + offset), len)
        };
        crate::simd::widest(
            #[inline(always)]
            || {
                if n == 1 || columns == 1 {
                    for row in 0..rows {
                        let run_at = Run::AlongRow {
                            row: first_row + row,
                            first_column,
                        };
                        self.epilogue.apply(run(row * m, columns), run_at, 0.0);
                    }
                } else if m == 1 || rows == 1 {
                    for column in 0..columns {
                        let run_at = Run::AlongColumn {
                            column: first_column + column,
                            first_row,
                        };
                        self.epilogue.apply(run(column * n, rows), run_at, 0.0);
                    }
                } else {
                    for row in 0..rows {
                        for column in 0..columns {
                            let run_at = Run::AlongRow {
                                row: first_row + row,
                                first_column: first_column + column,
                            };
                            self.epilogue
                                .apply(run(row * m + column * n, 1), run_at, 0.0);
                        }
                    }
                }
            },
        )
    }
}

impl ProductOp for FastMatMul {
    fn epilogue(&self) -> &Epilogue {
        &self.epilogue
    }

    fn with_epilogue(&self, epilogue: Epilogue) -> FastMatMul {
        FastMatMul {
            epilogue,
            ..self.clone()
        }
    }

    fn operand_axes(&self) -> (Option<usize>, Option<usize>) {
        (self.m_position, self.n_position)
    }
}

impl Op for FastMatMul {
    fn name(&self) -> StaticName {
        "FastMatMul".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "m {:?} k {:?} n {:?} loops {:?}, {:?}",
            self.m, self.k, self.n, self.loops, self.epilogue
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for FastMatMul {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        gemm::eval_product(inputs, &self.output_shape, |operands, output| {
            let [a, b] = operands else {
                bail!("a matrix product takes two operands");
            };
            self.compute(a, b, output)
        })
    }
}

impl TypedOp for FastMatMul {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 2, "a matrix product takes two operands");
        Ok(tvec!(f32::fact(&*self.output_shape)))
    }

    fn cost(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let points: usize = self.output_shape.iter().product();
        Ok(tvec!((
            Cost::FMA(f32::datum_type()),
            (points * self.k.len).into()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm_common::Operand;
    use super::*;
    use tessera_core::tract_onnx::tract_core::axes::AxesMapping;
    use tract_linalg::multithread::{Executor, multithread_tract_scope};

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| (((i + seed) * 37 % 23) as f32 - 11.0) / 7.0)
            .collect()
    }

    /// The einsum's definition: every output element sums, over the summed axes, the product
    /// of the operands' elements at the same axis indices (a length-1 operand axis broadcasts).
    fn reference(
        expr: &AxesMapping,
        a: &[usize],
        b: &[usize],
        av: &[f32],
        bv: &[f32],
    ) -> (Vec<usize>, Vec<f32>) {
        let axes: Vec<_> = expr.iter_all_axes().collect();
        let len_of = |axis: &&tessera_core::tract_onnx::tract_core::axes::Axis| {
            let in_a = axis.inputs[0].first().map_or(1, |&p| a[p]);
            let in_b = axis.inputs[1].first().map_or(1, |&p| b[p]);
            in_a.max(in_b)
        };
        let lens: Vec<usize> = axes.iter().map(len_of).collect();
        let c_rank = expr.rank(InOut::Out(0));
        let mut c_shape = vec![1; c_rank];
        for (axis, len) in axes.iter().zip(&lens) {
            if let Some(&p) = axis.outputs[0].first() {
                c_shape[p] = *len;
            }
        }
        let (sa, sb, sc) = (
            natural_strides(a),
            natural_strides(b),
            natural_strides(&c_shape),
        );
        let mut c = vec![0f32; c_shape.iter().product()];
        let total: usize = lens.iter().product();
        for flat in 0..total {
            let (mut rest, mut at_a, mut at_b, mut at_c) = (flat, 0, 0, 0);
            for (axis, len) in axes.iter().zip(&lens) {
                let i = rest % len;
                rest /= len;
                if let Some(&p) = axis.inputs[0].first() {
                    at_a += if a[p] == 1 { 0 } else { i * sa[p] };
                }
                if let Some(&p) = axis.inputs[1].first() {
                    at_b += if b[p] == 1 { 0 } else { i * sb[p] };
                }
                if let Some(&p) = axis.outputs[0].first() {
                    at_c += i * sc[p];
                }
            }
            c[at_c] += av[at_a] * bv[at_b];
        }
        (c_shape, c)
    }

    #[test]
    fn a_narrow_product_runs_on_gemm_only_against_a_narrow_constant() {
        let product = |a: &[usize], b: &[usize]| {
            let op = EinSum::new("NIHW,OI->NOHW".parse().unwrap(), f32::datum_type());
            FastMatMul::for_op(&op, a, b).unwrap()
        };
        // MTCNN PNet's 4-channel head over 55×75 positions, its weights constant.
        let head = product(&[1, 32, 55, 75], &[4, 32]);
        assert!(head.worth_it(false, true));
        assert!(!head.worth_it(false, false), "neither operand constant");
        // silero's: 4 positions against 128 channels of constant weights stay with tract.
        assert!(!product(&[1, 64, 1, 4], &[128, 64]).worth_it(false, true));
        // One output channel stays with tract.
        assert!(!product(&[1, 32, 55, 75], &[1, 32]).worth_it(false, true));
        // Both sides wide: gemm, constant or not.
        assert!(product(&[1, 32, 55, 75], &[16, 32]).worth_it(false, false));
    }

    #[test]
    fn matches_the_definition_for_every_layout_and_thread_count() {
        let cases: [(&str, &[usize], &[usize]); 9] = [
            ("mk,kn->mn", &[5, 7], &[7, 9]),
            ("mk,nk->mn", &[33, 20], &[17, 20]), // Gemm with transB
            ("km,kn->nm", &[20, 33], &[20, 17]), // transposed A and output
            ("bmk,kn->bmn", &[2, 5, 7], &[7, 3]), // batch merged into rows
            ("bmk,bkn->bmn", &[3, 4, 5], &[3, 5, 6]), // a loop of products
            ("bmk,bkn->bmn", &[1, 4, 5], &[3, 5, 6]), // broadcast batch
            ("NIHW,OI->NOHW", &[2, 8, 3, 4], &[5, 8]), // a 1×1 convolution
            ("mk,k->m", &[6, 40], &[40]),
            ("k,kn->n", &[40], &[40, 70]),
        ];
        for (expr, a, b) in cases {
            let axes: AxesMapping = expr.parse().unwrap();
            let op = EinSum::new(axes.clone(), f32::datum_type());
            let plain =
                FastMatMul::for_op(&op, a, b).unwrap_or_else(|| panic!("{expr}: not a product"));
            let (av, bv) = (values(a.iter().product(), 1), values(b.iter().product(), 5));
            let (c_shape, expected) = reference(&axes, a, b, &av, &bv);
            assert_eq!(&plain.output_shape[..], &c_shape[..], "{expr}");
            // With a fused bias along the product's columns (or rows) and a ReLU.
            let fused = {
                let (rows, columns) = (plain.m.len, plain.n.len);
                let (operand, along_rows) = if plain.n_position.is_some() {
                    (Operand::PerColumn(values(columns, 3).into()), false)
                } else {
                    (Operand::PerRow(values(rows, 3).into()), true)
                };
                let epilogue = Epilogue {
                    add: Some(operand.clone()),
                    low: Some(0.0),
                    ..Epilogue::default()
                };
                (plain.with_epilogue(epilogue), operand, along_rows)
            };
            for threads in [1, 2, 3] {
                let run = |op: &FastMatMul| {
                    let mut c = vec![f32::NAN; expected.len()];
                    multithread_tract_scope(Executor::multithread(threads), || {
                        op.compute(&av, &bv, &mut c)
                    })
                    .unwrap();
                    c
                };
                let close = |got: f32, want: f32| (got - want).abs() <= 1e-4 * want.abs().max(1.0);
                let got = run(&plain);
                for (i, (g, w)) in got.iter().zip(&expected).enumerate() {
                    assert!(
                        close(*g, *w),
                        "{expr}, {threads} thread(s): element {i} is {g}, expected {w}"
                    );
                }
                // The fused run equals the plain one finished element by element.
                let (op, operand, along_rows) = &fused;
                let got = run(op);
                let position = if *along_rows {
                    op.m_position
                } else {
                    op.n_position
                };
                let c_strides = natural_strides(&c_shape);
                for (i, (g, plain)) in got.iter().zip(&expected).enumerate() {
                    let index = position.map_or(0, |p| i / c_strides[p] % c_shape[p]);
                    let add = match operand {
                        Operand::PerRow(v) | Operand::PerColumn(v) => v[index],
                        Operand::Scalar(s) => *s,
                    };
                    let want = (plain + add).max(0.0);
                    assert!(
                        close(*g, want),
                        "{expr} fused, {threads} thread(s): element {i} is {g}, expected {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn einsums_that_are_not_one_product_stay_with_tract() {
        let f32_op = |expr: &str| EinSum::new(expr.parse().unwrap(), f32::datum_type());
        // Two summed axes longer than 1 that are not one in memory; a repeated axis (a trace).
        assert!(FastMatMul::for_op(&f32_op("mkj,jnk->mn"), &[2, 3, 4], &[4, 5, 3]).is_none());
        assert!(FastMatMul::for_op(&f32_op("mm,mn->mn"), &[3, 3], &[3, 4]).is_none());
        // Integer products are tract's.
        let int = EinSum::new("mk,kn->mn".parse().unwrap(), i32::datum_type());
        assert!(FastMatMul::for_op(&int, &[2, 3], &[3, 4]).is_none());
    }

    #[test]
    fn operands_of_the_wrong_size_are_an_error() {
        let op = EinSum::new("mk,kn->mn".parse().unwrap(), f32::datum_type());
        let product = FastMatMul::for_op(&op, &[2, 3], &[3, 4]).unwrap();
        let mut c = vec![0.0; 8];
        assert!(product.compute(&[0.0; 5], &[0.0; 12], &mut c).is_err());
        assert!(product.compute(&[0.0; 6], &[0.0; 13], &mut c).is_err());
        assert!(product.compute(&[0.0; 6], &[0.0; 12], &mut c[1..]).is_err());
    }
}
