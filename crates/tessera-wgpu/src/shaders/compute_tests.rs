//! Tests of the compute kernels (MatMul, Conv, ConvTranspose, pools, reductions and
//! normalizations): every template expands and passes naga's validator for a spread of ops and
//! types; and, where an adapter is available (lavapipe will do), each kernel runs on small
//! hand-built single-step plans (`TESSERA_FILTER` picks cases by name) and matches the core's
//! reference interpreter.
//!
//! The device runner here is minimal (one buffer per tensor, explicit layouts, every output
//! read back), separate from `device_tests.rs`'s because these kernels have several outputs
//! (LstmEpilogue) and bind a tensor twice (Conv without bias).

use super::tests::validate;
use super::{Grid, Kernel, Operand, Shader, StepIo, encode, expand};
use crate::repr;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use tessera_core::plan::shapes::{conv_output_dim, output_shapes};
use tessera_core::plan::{
    KernelOp, MatLayout, Plan, ReduceOp, Role, Step, Value, ValueId, Window, reference,
};
use tessera_core::{DType, Tensor, TensorData};

// ---------------------------------------------------------------- plan and value helpers

fn value(id: usize, shape: &[usize], dtype: DType, role: Role) -> Value {
    Value {
        id: ValueId(id),
        name: format!("v{id}"),
        shape: shape.to_vec(),
        dtype,
        role,
        alias_of: None,
        outlet: None,
    }
}

/// A one-step plan running `op` on runtime inputs of these shapes and types.
fn plan(op: &KernelOp, inputs: &[(Vec<usize>, DType)]) -> Plan {
    let shapes: Vec<(&[usize], DType)> = inputs.iter().map(|(s, d)| (s.as_slice(), *d)).collect();
    let outs = output_shapes(op, &shapes)
        .expect("output shapes")
        .expect("a lowered op");
    let mut values: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(k, (s, d))| value(k, s, *d, Role::Input(k)))
        .collect();
    let first_out = values.len();
    for (k, (s, d)) in outs.iter().enumerate() {
        values.push(value(first_out + k, s, *d, Role::Output(k)));
    }
    Plan {
        steps: vec![Step {
            node: "test".into(),
            op: op.clone(),
            inputs: (0..first_out).map(ValueId).collect(),
            outputs: (first_out..values.len()).map(ValueId).collect(),
        }],
        inputs: (0..first_out).map(ValueId).collect(),
        outputs: (first_out..values.len()).map(ValueId).collect(),
        values,
        constants: vec![],
    }
}

/// The step's kernel, with its StepIo built from the plan.
fn encode_plan(plan: &Plan) -> tessera_core::Result<Kernel> {
    let step = &plan.steps[0];
    let io = StepIo {
        inputs: step.inputs.iter().map(|id| &plan.values[id.0]).collect(),
        outputs: step.outputs.iter().map(|id| &plan.values[id.0]).collect(),
    };
    encode(&step.op, &io)
}

/// Deterministic pseudo-random numbers in [-1, 1).
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        })
        .collect()
}

fn f32_tensor(shape: &[usize], seed: u64) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(shape.to_vec(), noise(n, seed)).unwrap()
}

/// Integers in [-range, range] (or [0, 2 range] for unsigned types) as `dtype`.
fn int_tensor(shape: &[usize], dtype: DType, range: i64, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let ints: Vec<i64> = noise(n, seed)
        .iter()
        .map(|v| (v * range as f32).round() as i64)
        .collect();
    let unsigned = |v: &i64| (v + range) as u64;
    let data = match dtype {
        DType::I8 => TensorData::I8(ints.iter().map(|&v| v as i8).collect()),
        DType::I16 => TensorData::I16(ints.iter().map(|&v| v as i16).collect()),
        DType::I32 => TensorData::I32(ints.iter().map(|&v| v as i32).collect()),
        DType::I64 => TensorData::I64(ints),
        DType::U8 => TensorData::U8(ints.iter().map(|v| unsigned(v) as u8).collect()),
        DType::U16 => TensorData::U16(ints.iter().map(|v| unsigned(v) as u16).collect()),
        DType::U32 => TensorData::U32(ints.iter().map(|v| unsigned(v) as u32).collect()),
        DType::Bool => TensorData::Bool(ints.iter().map(|&v| v > 0).collect()),
        other => panic!("not an integer type: {other}"),
    };
    Tensor::new(shape.to_vec(), data).unwrap()
}

fn window(input: &[usize], kernel: &[usize]) -> Window {
    let rank = input.len();
    let mut w = Window {
        batch: 1,
        batch_axis: true,
        channels_last: false,
        input: input.to_vec(),
        output: vec![],
        kernel: kernel.to_vec(),
        strides: vec![1; rank],
        dilations: vec![1; rank],
        pads_before: vec![0; rank],
        pads_after: vec![0; rank],
    };
    conv_output(&mut w);
    w
}

/// Sets `window.output` as a convolution computes it.
fn conv_output(w: &mut Window) {
    w.output = (0..w.input.len())
        .map(|a| {
            conv_output_dim(
                w.input[a],
                w.kernel[a],
                w.strides[a],
                w.dilations[a],
                w.pads_before[a],
                w.pads_after[a],
            )
            .unwrap()
        })
        .collect();
}

/// The tensor shape of a window's input (or output) with `channels`.
fn window_shape(w: &Window, channels: usize, spatial: &[usize]) -> Vec<usize> {
    let mut shape = if w.batch_axis { vec![w.batch] } else { vec![] };
    if w.channels_last {
        shape.extend_from_slice(spatial);
        shape.push(channels);
    } else {
        shape.push(channels);
        shape.extend_from_slice(spatial);
    }
    shape
}

fn row_major(_rows: usize, cols: usize) -> MatLayout {
    MatLayout {
        offset: 0,
        batch_strides: vec![],
        row_stride: cols,
        col_stride: 1,
    }
}

// ---------------------------------------------------------------- the op catalogue

/// Ops with inputs, spread over every kernel and the variants that change its code.
fn catalogue() -> Vec<(&'static str, KernelOp, Vec<Tensor>)> {
    let mut cases = vec![];
    let matmul = |dtype, batch: Vec<usize>, (m, k, n), a, b, c, out_shape| KernelOp::MatMul {
        dtype,
        out_shape,
        batch,
        m,
        k,
        n,
        a,
        b,
        c,
    };

    // Tiled, odd sizes (partial tiles on every side, k not a multiple of 16).
    cases.push((
        "matmul f32 37x53x29",
        matmul(
            DType::F32,
            vec![],
            (37, 53, 29),
            row_major(37, 53),
            row_major(53, 29),
            row_major(37, 29),
            vec![37, 29],
        ),
        vec![f32_tensor(&[37, 53], 1), f32_tensor(&[53, 29], 2)],
    ));
    // Batched [2, 3], B broadcast over the first batch axis and stored transposed, A read at an
    // offset (a slice of a larger buffer), C written transposed.
    {
        let (m, k, n) = (20, 33, 40);
        let a = MatLayout {
            offset: 7,
            batch_strides: vec![3 * m * k, m * k],
            row_stride: k,
            col_stride: 1,
        };
        let b = MatLayout {
            offset: 0,
            batch_strides: vec![0, n * k],
            row_stride: 1,
            col_stride: k,
        };
        let c = MatLayout {
            offset: 0,
            batch_strides: vec![3 * m * n, m * n],
            row_stride: 1,
            col_stride: m,
        };
        cases.push((
            "matmul f32 batched strided",
            matmul(DType::F32, vec![2, 3], (m, k, n), a, b, c, vec![2, 3, n, m]),
            vec![
                f32_tensor(&[2 * 3 * m * k + 7], 3),
                f32_tensor(&[3, n, k], 4),
            ],
        ));
    }
    // Matrix-vector (m = 1), batched.
    cases.push((
        "matvec f32 m=1",
        matmul(
            DType::F32,
            vec![3],
            (1, 70, 45),
            MatLayout {
                batch_strides: vec![70],
                ..row_major(1, 70)
            },
            MatLayout {
                batch_strides: vec![70 * 45],
                ..row_major(70, 45)
            },
            MatLayout {
                batch_strides: vec![45],
                ..row_major(1, 45)
            },
            vec![3, 1, 45],
        ),
        vec![f32_tensor(&[3, 1, 70], 5), f32_tensor(&[3, 70, 45], 6)],
    ));
    // n = 1.
    cases.push((
        "matvec f32 n=1",
        matmul(
            DType::F32,
            vec![],
            (50, 64, 1),
            row_major(50, 64),
            row_major(64, 1),
            row_major(50, 1),
            vec![50, 1],
        ),
        vec![f32_tensor(&[50, 64], 7), f32_tensor(&[64, 1], 8)],
    ));
    // More batches than a grid axis holds.
    cases.push((
        "matmul f32 70000 batches",
        matmul(
            DType::F32,
            vec![70000],
            (4, 3, 5),
            MatLayout {
                batch_strides: vec![12],
                ..row_major(4, 3)
            },
            MatLayout {
                batch_strides: vec![15],
                ..row_major(3, 5)
            },
            MatLayout {
                batch_strides: vec![20],
                ..row_major(4, 5)
            },
            vec![70000, 4, 5],
        ),
        vec![
            f32_tensor(&[70000, 4, 3], 9),
            f32_tensor(&[70000, 3, 5], 10),
        ],
    ));
    for (dtype, range) in [
        (DType::I32, 1000),
        (DType::I64, 100),
        (DType::U8, 100),
        (DType::I8, 100),
    ] {
        cases.push((
            "matmul integers",
            matmul(
                dtype,
                vec![],
                (19, 21, 23),
                row_major(19, 21),
                row_major(21, 23),
                row_major(19, 23),
                vec![19, 23],
            ),
            vec![
                int_tensor(&[19, 21], dtype, range, 11),
                int_tensor(&[21, 23], dtype, range, 12),
            ],
        ));
    }
    cases.push((
        "matvec u32",
        matmul(
            DType::U32,
            vec![],
            (2, 9, 3),
            row_major(2, 9),
            row_major(9, 3),
            row_major(2, 3),
            vec![2, 3],
        ),
        vec![
            int_tensor(&[2, 9], DType::U32, 50, 13),
            int_tensor(&[9, 3], DType::U32, 50, 14),
        ],
    ));

    // Convolutions.
    let conv = |w: Window, cin: usize, cout: usize, group: usize, bias: Option<usize>, seed| {
        let x = f32_tensor(&window_shape(&w, cin, &w.input), seed);
        let mut wshape = vec![cout, cin / group];
        wshape.extend_from_slice(&w.kernel);
        let mut inputs = vec![x, f32_tensor(&wshape, seed + 1)];
        if let Some(b) = bias {
            inputs.push(f32_tensor(&[b], seed + 2));
        }
        (
            KernelOp::Conv {
                dtype: DType::F32,
                window: w,
                in_channels: cin,
                out_channels: cout,
                group,
                has_bias: bias.is_some(),
            },
            inputs,
        )
    };
    {
        let mut w = window(&[11, 13], &[3, 2]);
        w.batch = 2;
        w.strides = vec![2, 1];
        w.dilations = vec![1, 2];
        w.pads_before = vec![1, 2];
        w.pads_after = vec![2, 0];
        conv_output(&mut w);
        let (op, inputs) = conv(w, 4, 6, 2, Some(6), 20);
        cases.push(("conv 2d groups stride dilation pads", op, inputs));
    }
    {
        let mut w = window(&[9, 8], &[3, 3]);
        w.pads_before = vec![1, 1];
        w.pads_after = vec![1, 1];
        conv_output(&mut w);
        let (op, inputs) = conv(w, 5, 5, 5, Some(1), 30);
        cases.push(("conv depthwise scalar bias", op, inputs));
    }
    {
        let mut w = window(&[17], &[4]);
        w.strides = vec![3];
        w.pads_before = vec![2];
        conv_output(&mut w);
        let (op, inputs) = conv(w, 3, 2, 1, None, 40);
        cases.push(("conv 1d no bias", op, inputs));
    }
    {
        let mut w = window(&[5, 6, 7], &[2, 3, 2]);
        w.pads_before = vec![1, 0, 1];
        w.pads_after = vec![0, 1, 1];
        w.dilations = vec![2, 1, 1];
        conv_output(&mut w);
        let (op, inputs) = conv(w, 2, 3, 1, Some(3), 50);
        cases.push(("conv 3d", op, inputs));
    }
    {
        let mut w = window(&[7, 6], &[3, 3]);
        w.batch = 2;
        w.channels_last = true;
        w.pads_before = vec![1, 1];
        w.pads_after = vec![1, 1];
        w.strides = vec![2, 2];
        conv_output(&mut w);
        let (op, inputs) = conv(w, 4, 8, 2, Some(8), 60);
        cases.push(("conv channels last", op, inputs));
    }
    {
        // Blocks of 8 channels, a last axis not a multiple of 4, padding on both sides.
        let mut w = window(&[10, 11], &[3, 5]);
        w.batch = 2;
        w.strides = vec![1, 2];
        w.pads_before = vec![1, 2];
        w.pads_after = vec![1, 3];
        conv_output(&mut w);
        let (op, inputs) = conv(w, 6, 16, 2, Some(16), 65);
        cases.push(("conv channel blocks", op, inputs));
    }
    {
        let mut w = window(&[8, 9], &[1, 1]);
        w.batch_axis = false;
        conv_output(&mut w);
        let (op, inputs) = conv(w, 16, 7, 1, Some(7), 70);
        cases.push(("conv 1x1 no batch axis", op, inputs));
    }
    {
        // Integer (quantized) convolutions: i32 words, blocks of 4 channels, padding.
        let mut w = window(&[9, 10], &[3, 3]);
        w.batch = 2;
        w.pads_before = vec![1, 0];
        w.pads_after = vec![1, 2];
        conv_output(&mut w);
        let (op, mut inputs) = conv(w, 6, 8, 2, Some(8), 75);
        let KernelOp::Conv { window, .. } = op else {
            unreachable!("conv makes a Conv")
        };
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|t| t.shape().to_vec()).collect();
        inputs = shapes
            .iter()
            .enumerate()
            .map(|(k, shape)| int_tensor(shape, DType::I32, 255, 76 + k as u64))
            .collect();
        let op = KernelOp::Conv {
            dtype: DType::I32,
            window,
            in_channels: 6,
            out_channels: 8,
            group: 2,
            has_bias: true,
        };
        cases.push(("conv i32", op, inputs));
    }

    // Transposed convolutions: window.output set by hand (the large side).
    let deconv = |w: Window, cin: usize, cout: usize, group: usize, adj: Vec<usize>, seed| {
        let x = f32_tensor(&window_shape(&w, cin, &w.input), seed);
        let mut wshape = vec![cout, cin / group];
        wshape.extend_from_slice(&w.kernel);
        (
            KernelOp::ConvTranspose {
                dtype: DType::F32,
                window: w,
                in_channels: cin,
                out_channels: cout,
                group,
                adjustments: adj,
                has_bias: true,
            },
            vec![
                x,
                f32_tensor(&wshape, seed + 1),
                f32_tensor(&[cout], seed + 2),
            ],
        )
    };
    let deconv_output = |w: &mut Window, adj: &[usize]| {
        w.output = (0..w.input.len())
            .map(|a| {
                (w.input[a] - 1) * w.strides[a] + (w.kernel[a] - 1) * w.dilations[a] + 1
                    - w.pads_before[a]
                    - w.pads_after[a]
                    + adj[a]
            })
            .collect();
    };
    {
        let mut w = window(&[5, 4], &[3, 4]);
        w.batch = 2;
        w.strides = vec![2, 3];
        w.pads_before = vec![1, 0];
        w.pads_after = vec![1, 1];
        w.dilations = vec![1, 2];
        deconv_output(&mut w, &[1, 0]);
        let (op, inputs) = deconv(w, 4, 6, 2, vec![1, 0], 80);
        cases.push(("conv transpose 2d", op, inputs));
    }
    {
        let mut w = window(&[6], &[3]);
        w.channels_last = true;
        w.strides = vec![2];
        w.pads_before = vec![1];
        w.pads_after = vec![0];
        deconv_output(&mut w, &[1]);
        let (op, inputs) = deconv(w, 3, 2, 1, vec![1], 90);
        cases.push(("conv transpose 1d channels last", op, inputs));
    }
    {
        let mut w = window(&[3, 3, 2], &[2, 2, 2]);
        w.strides = vec![2, 2, 1];
        deconv_output(&mut w, &[0, 0, 0]);
        let (op, inputs) = deconv(w, 2, 2, 1, vec![0, 0, 0], 95);
        cases.push(("conv transpose 3d", op, inputs));
    }

    // Pools.
    {
        let mut w = window(&[9, 10], &[3, 3]);
        w.batch = 2;
        w.strides = vec![2, 2];
        w.pads_before = vec![1, 1];
        w.pads_after = vec![1, 1];
        conv_output(&mut w);
        let x = f32_tensor(&window_shape(&w, 3, &w.input), 100);
        cases.push((
            "max pool",
            KernelOp::MaxPool {
                dtype: DType::F32,
                window: w.clone(),
                channels: 3,
            },
            vec![x.clone()],
        ));
        for (normalize, count_include_pad) in [(false, false), (true, false), (true, true)] {
            cases.push((
                "sum pool",
                KernelOp::SumPool {
                    dtype: DType::F32,
                    window: w.clone(),
                    channels: 3,
                    normalize,
                    count_include_pad,
                },
                vec![x.clone()],
            ));
        }
        // A window entirely in the padding gives -inf.
        let mut w = window(&[4, 4], &[2, 2]);
        w.channels_last = true;
        w.pads_before = vec![3, 0];
        w.dilations = vec![1, 2];
        conv_output(&mut w);
        cases.push((
            "max pool channels last, padding-only window",
            KernelOp::MaxPool {
                dtype: DType::F32,
                window: w.clone(),
                channels: 2,
            },
            vec![f32_tensor(&window_shape(&w, 2, &w.input), 101)],
        ));
        let mut w = window(&[7, 6, 5], &[3, 2, 2]);
        w.batch_axis = false;
        w.pads_after = vec![1, 1, 0];
        conv_output(&mut w);
        cases.push((
            "avg pool 3d",
            KernelOp::SumPool {
                dtype: DType::F32,
                window: w.clone(),
                channels: 2,
                normalize: true,
                count_include_pad: false,
            },
            vec![f32_tensor(&window_shape(&w, 2, &w.input), 102)],
        ));
    }

    // Reductions.
    let reduce = |op, dtype, shape: &[usize], axes: Vec<usize>| KernelOp::Reduce {
        op,
        dtype,
        input_shape: shape.to_vec(),
        axes,
    };
    let float_ops = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::MeanOfSquares,
        ReduceOp::ArgMax { last: false },
        ReduceOp::ArgMin { last: true },
    ];
    for (shape, axes) in [
        (vec![3, 5, 7], vec![1]),
        (vec![3, 5, 7], vec![0, 2]),
        (vec![4, 1, 300], vec![2]),
        (vec![2, 3, 4, 5], vec![0, 1, 2, 3]),
        (vec![6, 5], vec![]),
        (vec![1000, 3], vec![0]),
    ] {
        for op in float_ops {
            let x = f32_tensor(&shape, 200);
            cases.push((
                "reduce f32",
                reduce(op, DType::F32, &shape, axes.clone()),
                vec![x],
            ));
        }
    }
    // Ties: values from a small set.
    for op in [
        ReduceOp::ArgMax { last: false },
        ReduceOp::ArgMax { last: true },
        ReduceOp::ArgMin { last: false },
        ReduceOp::ArgMin { last: true },
    ] {
        for dtype in [DType::F32, DType::I32, DType::U8, DType::I64] {
            let ints = if dtype == DType::F32 {
                DType::I32
            } else {
                dtype
            };
            let x = int_tensor(&[5, 130], ints, 2, 210);
            let x = if dtype == DType::F32 {
                let v = x.data().to_f64_vec().iter().map(|&v| v as f32).collect();
                Tensor::from_vec(vec![5, 130], v).unwrap()
            } else {
                x
            };
            cases.push((
                "reduce arg ties",
                reduce(op, dtype, &[5, 130], vec![1]),
                vec![x],
            ));
        }
    }
    for dtype in [DType::I32, DType::I8, DType::U8, DType::U32, DType::I64] {
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
            if op == ReduceOp::Prod && dtype == DType::I64 {
                continue;
            }
            let x = int_tensor(&[6, 7, 8], dtype, 60, 220);
            cases.push((
                "reduce ints",
                reduce(op, dtype, &[6, 7, 8], vec![0, 2]),
                vec![x],
            ));
        }
        // Products that stay within 32 bits: i64 words wrap at 32 bits on wgpu (crate::repr).
        let x = int_tensor(&[6, 7, 8], dtype, 3, 221);
        cases.push((
            "reduce ints",
            reduce(ReduceOp::Prod, dtype, &[6, 7, 8], vec![2]),
            vec![x],
        ));
    }
    for op in [ReduceOp::All, ReduceOp::Any] {
        let x = int_tensor(&[4, 9, 3], DType::Bool, 1, 230);
        cases.push((
            "reduce bool",
            reduce(op, DType::Bool, &[4, 9, 3], vec![1]),
            vec![x],
        ));
    }
    // Empty rows: the reference's values for nothing to reduce.
    for op in [
        ReduceOp::Sum,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::ArgMax { last: false },
    ] {
        for dtype in [DType::F32, DType::I32, DType::U8] {
            let x = Tensor::new(
                vec![3, 0],
                match dtype {
                    DType::F32 => TensorData::F32(vec![]),
                    DType::I32 => TensorData::I32(vec![]),
                    _ => TensorData::U8(vec![]),
                },
            )
            .unwrap();
            cases.push((
                "reduce empty rows",
                reduce(op, dtype, &[3, 0], vec![1]),
                vec![x],
            ));
        }
    }
    // NaNs: Max / Min / ArgMax propagate the first one.
    {
        let mut v = noise(40, 240);
        v[13] = f32::NAN;
        v[27] = f32::NAN;
        for op in [
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::ArgMax { last: true },
        ] {
            let x = Tensor::from_vec(vec![4, 10], v.clone()).unwrap();
            cases.push((
                "reduce NaN",
                reduce(op, DType::F32, &[4, 10], vec![1]),
                vec![x],
            ));
        }
    }

    // Softmax, RmsNorm, Lrn, LstmEpilogue.
    for (shape, axes) in [
        (vec![4, 10], vec![1]),
        (vec![3, 7, 5], vec![1]),
        (vec![2, 3, 5, 4], vec![1, 3]),
        (vec![2, 3000], vec![1]),
        (vec![5000, 2], vec![1]),
    ] {
        for log in [false, true] {
            let x = f32_tensor(&shape, 300);
            cases.push((
                "softmax",
                KernelOp::Softmax {
                    dtype: DType::F32,
                    shape: shape.clone(),
                    axes: axes.clone(),
                    log,
                },
                vec![x],
            ));
        }
    }
    for (shape, axis) in [(vec![4, 33], 1), (vec![3, 6, 5], 1), (vec![2, 1000], 1)] {
        let x = f32_tensor(&shape, 310);
        cases.push((
            "rms norm",
            KernelOp::RmsNorm {
                dtype: DType::F32,
                shape: shape.clone(),
                axis,
                eps: 1e-5,
            },
            vec![x],
        ));
    }
    for size in [3, 4] {
        let x = f32_tensor(&[2, 7, 3, 4], 320);
        cases.push((
            "lrn",
            KernelOp::Lrn {
                dtype: DType::F32,
                shape: vec![2, 7, 3, 4],
                alpha: 1e-2,
                beta: 0.75,
                bias: 1.0,
                size,
            },
            vec![x],
        ));
    }
    // TopK: floats, and small integers with many ties (equal values keep their order).
    for (shape, axis, k) in [
        (vec![4, 9], 1, 3),
        (vec![3, 6, 4], 1, 6),
        (vec![10, 3], 0, 4),
    ] {
        for largest in [true, false] {
            for x in [
                f32_tensor(&shape, 340),
                int_tensor(&shape, DType::I32, 3, 341),
            ] {
                cases.push((
                    "topk",
                    KernelOp::TopK {
                        dtype: x.dtype(),
                        input_shape: shape.clone(),
                        axis,
                        k,
                        largest,
                    },
                    vec![x],
                ));
            }
        }
    }
    // NonZero: many chunks of 64 (the scan carries across them), sparse and dense inputs, an
    // all-zero one; integers and bools as words.
    for (shape, seed) in [(vec![5, 7, 9], 350), (vec![200], 351), (vec![3, 1, 4], 352)] {
        let floats = f32_tensor(&shape, seed);
        let sparse = Tensor::from_vec(
            shape.clone(),
            (floats.as_slice::<f32>().unwrap().iter())
                .map(|v| if *v > 0.5 { *v } else { 0.0 })
                .collect(),
        )
        .unwrap();
        let zeros = Tensor::zeros(DType::F32, shape.clone()).unwrap();
        let bools = Tensor::from_vec(
            shape.clone(),
            (floats.as_slice::<f32>().unwrap().iter())
                .map(|v| *v < 0.0)
                .collect(),
        )
        .unwrap();
        for x in [
            floats,
            sparse,
            zeros,
            bools,
            int_tensor(&shape, DType::I64, 2, seed),
        ] {
            cases.push((
                "nonzero",
                KernelOp::NonZero {
                    dtype: x.dtype(),
                    input_shape: shape.clone(),
                },
                vec![x],
            ));
        }
    }
    // NonMaxSuppression: more boxes than lanes, several batches and classes, both box formats,
    // with and without a score threshold and a limit (0: none).
    for (batches, classes, boxes, center, threshold, limit, seed) in [
        (1, 1, 6, false, false, 3.0, 360),
        (2, 3, 70, false, true, 0.0, 361),
        (1, 2, 40, true, true, 5.0, 362),
    ] {
        let corners: Vec<f32> = noise(batches * boxes * 4, seed)
            .iter()
            .map(|v| v.abs() * 4.0)
            .collect();
        let scores: Vec<f32> = noise(batches * classes * boxes, seed + 1)
            .iter()
            .map(|v| (v + 1.0) / 2.0)
            .collect();
        cases.push((
            "nms",
            KernelOp::NonMaxSuppression {
                dtype: DType::F32,
                batches,
                classes,
                boxes,
                center_point_box: center,
                has_score_threshold: threshold,
            },
            vec![
                Tensor::from_vec(vec![batches, boxes, 4], corners).unwrap(),
                Tensor::from_vec(vec![batches, classes, boxes], scores).unwrap(),
                Tensor::from_vec(vec![3], vec![limit, 0.3f32, 0.4]).unwrap(),
            ],
        ));
    }
    cases.push((
        "lstm epilogue",
        KernelOp::LstmEpilogue {
            dtype: DType::F32,
            hidden: 5,
        },
        vec![f32_tensor(&[3, 20], 330), f32_tensor(&[3, 5], 331)],
    ));
    cases
}

fn inputs_of(tensors: &[Tensor]) -> Vec<(Vec<usize>, DType)> {
    tensors
        .iter()
        .map(|t| (t.shape().to_vec(), t.dtype()))
        .collect()
}

#[test]
fn every_template_validates() {
    let mut checked = std::collections::HashSet::new();
    let mut failures = vec![];
    for (name, op, tensors) in catalogue() {
        let kernel =
            encode_plan(&plan(&op, &inputs_of(&tensors))).unwrap_or_else(|e| panic!("{name}: {e}"));
        for dispatch in kernel.dispatches() {
            if checked.insert(dispatch.shader.clone())
                && let Err(e) = validate(&dispatch.shader)
            {
                failures.push(format!("{name}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Float variants the numeric cases do not reach.
    for dtype in [DType::F16, DType::U16, DType::I16, DType::Bool] {
        let op = KernelOp::Reduce {
            op: if dtype == DType::Bool {
                ReduceOp::Any
            } else {
                ReduceOp::Sum
            },
            dtype,
            input_shape: vec![2, 3],
            axes: vec![1],
        };
        let kernel = encode_plan(&plan(&op, &[(vec![2, 3], dtype)])).unwrap();
        validate(&kernel.dispatches().next().unwrap().shader).unwrap();
    }
}

#[test]
fn unsupported_variants_are_reported_not_run() {
    let op = KernelOp::Reduce {
        op: ReduceOp::MeanOfSquares,
        dtype: DType::I32,
        input_shape: vec![2, 3],
        axes: vec![1],
    };
    let p = plan(&op, &[(vec![2, 3], DType::I32)]);
    assert!(matches!(
        encode_plan(&p),
        Err(tessera_core::Error::UnsupportedOps { .. })
    ));
}

// ---------------------------------------------------------------- a minimal device runner

struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    name: String,
    pipelines: Mutex<HashMap<Shader, (wgpu::ComputePipeline, wgpu::BindGroupLayout)>>,
}

/// The first adapter wgpu offers (e.g. lavapipe), or `None` where there is none.
fn gpu() -> Option<&'static Gpu> {
    static GPU: OnceLock<Option<Gpu>> = OnceLock::new();
    GPU.get_or_init(|| {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        descriptor.backends &= wgpu::Backends::PRIMARY;
        let instance = wgpu::Instance::new(descriptor);
        let adapter =
            pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
                .ok()?;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .ok()?;
        Some(Gpu {
            device,
            queue,
            name: adapter.get_info().name,
            pipelines: Mutex::new(HashMap::new()),
        })
    })
    .as_ref()
}

/// A tensor as device words ([`crate::repr`]).
fn words(tensor: &Tensor) -> Vec<u32> {
    let w = repr::word(tensor.dtype()).unwrap();
    tensor
        .data()
        .to_f64_vec()
        .iter()
        .map(|&v| match w {
            "f32" => (v as f32).to_bits(),
            "i32" => v as i64 as i32 as u32,
            _ => v as u64 as u32,
        })
        .collect()
}

fn storage(gpu: &Gpu, words: &[u32]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    // Bindings cannot be empty.
    if bytes.is_empty() {
        bytes.extend([0; 4]);
    }
    gpu.device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: &bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        })
}

fn pipeline(
    gpu: &Gpu,
    shader: &Shader,
    bindings: &[Operand],
) -> (wgpu::ComputePipeline, wgpu::BindGroupLayout) {
    let mut cache = gpu.pipelines.lock().unwrap();
    if let Some(found) = cache.get(shader) {
        return found.clone();
    }
    let source = expand(shader).unwrap();
    let module = gpu
        .device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(shader.name),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
    let entry = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    // Only params is read-only: expand() compiles tensor bindings read_write.
    let mut entries = vec![entry(0, true)];
    for k in 0..bindings.len() {
        entries.push(entry(k as u32 + 1, false));
    }
    let layout = gpu
        .device
        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: None,
            entries: &entries,
        });
    let pipeline_layout = gpu
        .device
        .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: None,
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
    let pipeline = gpu
        .device
        .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(shader.name),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
    cache.insert(shader.clone(), (pipeline.clone(), layout.clone()));
    (pipeline, layout)
}

/// Runs `kernel` on `inputs`; returns each output's words.
fn run(gpu: &Gpu, kernel: &Kernel, inputs: &[Tensor], outputs: &[usize]) -> Vec<Vec<u32>> {
    let ins: Vec<wgpu::Buffer> = inputs.iter().map(|t| storage(gpu, &words(t))).collect();
    let outs: Vec<wgpu::Buffer> = outputs.iter().map(|&n| storage(gpu, &vec![0; n])).collect();
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    for dispatch in kernel.dispatches() {
        let (pipeline, layout) = pipeline(gpu, &dispatch.shader, &dispatch.bindings);
        let params = storage(gpu, &dispatch.params);
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: params.as_entire_binding(),
        }];
        for (k, operand) in dispatch.bindings.iter().enumerate() {
            let buffer = match *operand {
                Operand::Input(i) => &ins[i],
                Operand::Output(i) => &outs[i],
                Operand::InputRange { .. } | Operand::Scratch { .. } => {
                    panic!("single-step tests bind whole inputs, and wgpu has no scratch")
                }
            };
            entries.push(wgpu::BindGroupEntry {
                binding: k as u32 + 1,
                resource: buffer.as_entire_binding(),
            });
        }
        let group = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        });
        let [x, y, z] = match dispatch.grid {
            Grid::Groups(counts) => counts,
            Grid::Threads(n) => {
                let groups = n.div_ceil(64);
                let x = groups.min(65535);
                [x as u32, groups.div_ceil(x) as u32, 1]
            }
        };
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(x, y, z);
    }
    let readback: Vec<wgpu::Buffer> = outputs
        .iter()
        .zip(&outs)
        .map(|(&n, out)| {
            let size = (n.max(1) * 4) as u64;
            let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            encoder.copy_buffer_to_buffer(out, 0, &buffer, 0, size);
            buffer
        })
        .collect();
    gpu.queue.submit([encoder.finish()]);
    readback
        .iter()
        .zip(outputs)
        .map(|(buffer, &n)| {
            buffer.map_async(wgpu::MapMode::Read, .., |r| r.unwrap());
            gpu.device
                .poll(wgpu::PollType::wait_indefinitely())
                .unwrap();
            let view = buffer.get_mapped_range(..).unwrap();
            view.chunks_exact(4)
                .take(n)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
        .collect()
}

/// Device words of `dtype` as f64, for comparison.
fn from_words(words: &[u32], dtype: DType) -> Vec<f64> {
    let w = repr::word(dtype).unwrap();
    words
        .iter()
        .map(|&v| match w {
            "f32" => f32::from_bits(v) as f64,
            "i32" => v as i32 as f64,
            _ => v as f64,
        })
        .collect()
}

fn close(actual: f64, expected: f64, rtol: f64) -> bool {
    (actual.is_nan() && expected.is_nan())
        || actual == expected
        || (actual - expected).abs() <= rtol * (1.0 + expected.abs())
}

#[test]
fn kernels_match_the_reference() {
    let gpu = gpu().expect("no wgpu adapter: kernel tests need one (install mesa-vulkan-drivers for lavapipe; CI does)");
    eprintln!("running kernels on {}", gpu.name);
    let filter = std::env::var("TESSERA_FILTER").unwrap_or_default();
    let mut failures = vec![];
    let mut ran = 0;
    let cases = catalogue();
    let total = cases.len();
    for (name, op, tensors) in cases {
        if !name.contains(filter.as_str()) {
            continue;
        }
        let plan = plan(&op, &inputs_of(&tensors));
        let expected = reference::execute(&plan, &tensors)
            .unwrap_or_else(|e| panic!("{name}: reference: {e}"));
        let kernel = encode_plan(&plan).unwrap_or_else(|e| panic!("{name}: {e}"));
        let sizes: Vec<usize> = expected.iter().map(|t| t.len()).collect();
        let actual = run(gpu, &kernel, &tensors, &sizes);
        ran += 1;
        for (k, (want, got)) in expected.iter().zip(&actual).enumerate() {
            let want_values = want.data().to_f64_vec();
            let got_values = from_words(got, want.dtype());
            let bad: Vec<String> = want_values
                .iter()
                .zip(&got_values)
                .enumerate()
                .filter(|(_, (w, g))| !close(**g, **w, 1e-4))
                .take(5)
                .map(|(i, (w, g))| format!("[{i}] {g} (want {w})"))
                .collect();
            if !bad.is_empty() {
                failures.push(format!(
                    "{name} ({}), output {k}: {}",
                    op.name(),
                    bad.join(", ")
                ));
            }
        }
    }
    eprintln!("{ran} kernel cases run");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // No loop that passes having run nothing: unfiltered, every case of the catalogue ran.
    assert!(ran > 0, "no kernel case ran (filter {filter:?})");
    if filter.is_empty() {
        assert_eq!(ran, total, "kernel cases run");
    }
}

/// Runs a single-output op on the device (`None` without an adapter), after validating it.
fn run_one(op: &KernelOp, tensors: &[Tensor]) -> Option<Vec<f64>> {
    let plan = plan(op, &inputs_of(tensors));
    let kernel = encode_plan(&plan).unwrap();
    for dispatch in kernel.dispatches() {
        validate(&dispatch.shader).unwrap();
    }
    let out = &plan.values[plan.outputs[0].0];
    let gpu = gpu().expect("no wgpu adapter: kernel tests need one (install mesa-vulkan-drivers for lavapipe; CI does)");
    let words = run(gpu, &kernel, tensors, &[out.len()]).remove(0);
    Some(from_words(&words, out.dtype))
}

/// What the reference does not cover: ONNX ceil mode with count_include_pad (the last window
/// runs past pad_after, and only the taps inside the padded input count, as in tract), and max
/// pooling on integers.
#[test]
fn pooling_beyond_the_reference() {
    // x = [1, 2, 3, 4], kernel 3, stride 2, pads 1 / 1, ceil mode: windows over the padded
    // [0, 1, 2, 3, 4, 0] start at 0, 2 and 4; the last holds 2 taps inside the padding.
    let mut w = window(&[4], &[3]);
    w.strides = vec![2];
    w.pads_before = vec![1];
    w.pads_after = vec![1];
    w.output = vec![3];
    let x = Tensor::from_vec(vec![1, 1, 4], vec![1f32, 2.0, 3.0, 4.0]).unwrap();
    let avg = KernelOp::SumPool {
        dtype: DType::F32,
        window: w.clone(),
        channels: 1,
        normalize: true,
        count_include_pad: true,
    };
    if let Some(got) = run_one(&avg, std::slice::from_ref(&x)) {
        assert_eq!(got, vec![1.0, 3.0, 2.0]);
    }
    for dtype in [DType::U8, DType::I8, DType::I32] {
        let ints = Tensor::new(
            vec![1, 1, 4],
            match dtype {
                DType::U8 => TensorData::U8(vec![7, 200, 3, 9]),
                DType::I8 => TensorData::I8(vec![-7, -100, -3, 9]),
                _ => TensorData::I32(vec![-7, 100_000, -3, 9]),
            },
        )
        .unwrap();
        let max = KernelOp::MaxPool {
            dtype,
            window: w.clone(),
            channels: 1,
        };
        if let Some(got) = run_one(&max, &[ints]) {
            let want = match dtype {
                DType::U8 => vec![200.0, 200.0, 9.0],
                DType::I8 => vec![-7.0, 9.0, 9.0],
                _ => vec![100_000.0, 100_000.0, 9.0],
            };
            assert_eq!(got, want, "{dtype}");
        }
    }
}

/// Kernel timings on the adapter (`cargo test --release -- --ignored --nocapture bench`):
/// each case once to compile, then the median of a few runs, read-back included.
#[test]
#[ignore = "a benchmark"]
fn bench_compute_kernels() {
    let Some(gpu) = gpu() else {
        eprintln!("no wgpu adapter");
        return;
    };
    let conv = |cin: usize, cout: usize, group: usize, side: usize, k: usize, stride: usize| {
        let mut w = window(&[side, side], &[k, k]);
        w.pads_before = vec![k / 2; 2];
        w.pads_after = vec![k / 2; 2];
        w.strides = vec![stride; 2];
        conv_output(&mut w);
        let x = f32_tensor(&window_shape(&w, cin, &w.input), 1);
        let weights = f32_tensor(&[cout, cin / group, k, k], 2);
        let bias = f32_tensor(&[cout], 3);
        (
            format!("conv {cin}->{cout} g{group} {side}x{side} k{k} s{stride}"),
            KernelOp::Conv {
                dtype: DType::F32,
                window: w,
                in_channels: cin,
                out_channels: cout,
                group,
                has_bias: true,
            },
            vec![x, weights, bias],
        )
    };
    let matmul = |m: usize, k: usize, n: usize| {
        (
            format!("matmul {m}x{k}x{n}"),
            KernelOp::MatMul {
                dtype: DType::F32,
                out_shape: vec![m, n],
                batch: vec![],
                m,
                k,
                n,
                a: row_major(m, k),
                b: row_major(k, n),
                c: row_major(m, n),
            },
            vec![f32_tensor(&[m, k], 4), f32_tensor(&[k, n], 5)],
        )
    };
    let cases = vec![
        conv(3, 16, 1, 640, 3, 2),
        conv(16, 16, 16, 320, 3, 1),
        conv(16, 32, 1, 320, 1, 1),
        conv(64, 64, 1, 80, 3, 1),
        conv(128, 128, 1, 40, 3, 1),
        matmul(256, 256, 256),
        matmul(1024, 1024, 1024),
        matmul(1, 1024, 4096),
    ];
    let filter = std::env::var("TESSERA_FILTER").unwrap_or_default();
    for (name, op, tensors) in cases {
        if !name.contains(filter.as_str()) {
            continue;
        }
        let plan = plan(&op, &inputs_of(&tensors));
        let kernel = encode_plan(&plan).unwrap();
        let out = plan.values[plan.outputs[0].0].len();
        run(gpu, &kernel, &tensors, &[out]);
        let mut times: Vec<f64> = (0..3)
            .map(|_| {
                let start = std::time::Instant::now();
                run(gpu, &kernel, &tensors, &[out]);
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let flops = match &op {
            KernelOp::MatMul { m, k, n, .. } => 2.0 * (m * k * n) as f64,
            KernelOp::Conv {
                window,
                in_channels,
                group,
                ..
            } => 2.0 * (out * in_channels / group * window.kernel.iter().product::<usize>()) as f64,
            _ => 0.0,
        };
        eprintln!(
            "{name}: {:.2} ms ({:.2} GFLOP/s) on {}",
            times[1],
            flops / times[1] / 1e6,
            gpu.name
        );
    }
}
