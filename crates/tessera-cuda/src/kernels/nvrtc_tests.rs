//! Kernel tests that need no GPU: every kernel the table produces, for a representative set of
//! ops and dtypes, must compile to PTX with NVRTC (what the device does before it loads it), and
//! every op the plan has a kernel for on wgpu must have one here.
//!
//! NVRTC (libnvrtc) needs no GPU or driver. Without it these tests only check that each op
//! encodes, and say so; with `TESSERA_REQUIRE_NVRTC=1` (set by `scripts/check-cuda-kernels.sh`
//! in CI) a missing libnvrtc is a failure, so the compile check cannot be skipped silently.

use super::{Kernel, Launch, Shader, StepIo, encode};
use std::collections::HashSet;
use std::sync::Mutex;
use tessera_core::DType;
use tessera_core::plan::{
    BinaryOp, KernelOp, MatLayout, PadMode, ReduceOp, Role, ScatterReduction, UnaryOp, Value,
    ValueId, Window,
};

/// The dtypes cuda holds.
const DTYPES: [DType; 10] = [
    DType::F32,
    DType::F16,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::Bool,
];

/// The virtual architecture the check compiles for (Ampere: the oldest this backend targets).
const CHECK_ARCH: &str = "compute_80";

pub(super) fn value(id: usize, shape: &[usize], dtype: DType) -> Value {
    Value {
        id: ValueId(id),
        name: format!("v{id}"),
        shape: shape.to_vec(),
        dtype,
        role: Role::Intermediate,
        alias_of: None,
        outlet: None,
    }
}

/// Whether NVRTC is loadable; without it and without `TESSERA_REQUIRE_NVRTC=1`, compiling is
/// skipped (with the reason printed once).
fn nvrtc_present() -> bool {
    // SAFETY: only opens the library.
    let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    let required = std::env::var("TESSERA_REQUIRE_NVRTC").is_ok_and(|v| v == "1");
    assert!(
        present || !required,
        "TESSERA_REQUIRE_NVRTC=1 but libnvrtc.so cannot be loaded: put the nvidia-cuda-nvrtc wheel's lib folder on LD_LIBRARY_PATH"
    );
    if !present {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            println!("libnvrtc not found: cuda kernels are encoded but not compiled (scripts/check-cuda-kernels.sh compiles them)")
        });
    }
    present
}

/// Kernels compiled so far by this test process (each variant once).
static COMPILED: Mutex<Option<HashSet<Shader>>> = Mutex::new(None);

/// Compiles every kernel of `kernel` to PTX, naming `what` (and NVRTC's log) on failure.
fn validate(what: &str, kernel: &Kernel) {
    if let Err(e) = try_validate(what, kernel) {
        panic!("{e}");
    }
}

fn try_validate(what: &str, kernel: &Kernel) -> Result<(), String> {
    if !nvrtc_present() {
        return Ok(());
    }
    for launch in &kernel.dispatches {
        let Launch::Kernel(dispatch) = launch else {
            continue;
        };
        {
            let mut done = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
            if !done
                .get_or_insert_with(HashSet::new)
                .insert(dispatch.shader.clone())
            {
                continue;
            }
        }
        crate::context::compile_ptx(&dispatch.shader, CHECK_ARCH)
            .map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(())
}

/// Encodes `op` for inputs and outputs of these shapes and dtypes, then compiles its kernels.
fn check(op: &KernelOp, inputs: &[(&[usize], DType)], outputs: &[(&[usize], DType)]) -> Kernel {
    let values: Vec<Value> = inputs
        .iter()
        .chain(outputs)
        .enumerate()
        .map(|(ix, (shape, dtype))| value(ix, shape, *dtype))
        .collect();
    let io = StepIo {
        inputs: values[..inputs.len()].iter().collect(),
        outputs: values[inputs.len()..].iter().collect(),
    };
    let kernel = encode(op, &io).unwrap_or_else(|e| panic!("{}: {e}", op.name()));
    validate(&format!("{op:?}"), &kernel);
    kernel
}

/// Every unary and binary op the kernel table accepts, for a dtype of each word.
#[test]
fn unary_and_binary_shaders_validate() {
    let unary = [
        UnaryOp::Abs,
        UnaryOp::Neg,
        UnaryOp::Sign,
        UnaryOp::Exp,
        UnaryOp::Ln,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Recip,
        UnaryOp::Square,
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::Erf,
        UnaryOp::Silu,
        UnaryOp::GeluExact,
        UnaryOp::HardSwish,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::RoundHalfToEven,
        UnaryOp::Not,
        UnaryOp::BitNot,
        UnaryOp::LeakyRelu { alpha: 0.1 },
        UnaryOp::PowConst { exponent: 2.0 },
        UnaryOp::IsNan,
        UnaryOp::IsInf {
            detect_positive: true,
            detect_negative: false,
        },
    ];
    let mut failures = vec![];
    for op in unary {
        for dtype in [DType::F32, DType::I8, DType::U16, DType::Bool] {
            let out_dtype = match op {
                UnaryOp::IsNan | UnaryOp::IsInf { .. } => DType::Bool,
                _ => dtype,
            };
            let kernel_op = KernelOp::Unary {
                op,
                dtype,
                out_dtype,
            };
            let values = [value(0, &[5], dtype), value(1, &[5], out_dtype)];
            let io = StepIo {
                inputs: vec![&values[0]],
                outputs: vec![&values[1]],
            };
            // Not every op has a kernel for every dtype; those that do must compile.
            if let Ok(kernel) = encode(&kernel_op, &io) {
                failures.extend(try_validate(&format!("{kernel_op:?}"), &kernel).err());
            }
        }
    }
    let binary = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
        BinaryOp::Pow,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
        BinaryOp::BitAnd,
        BinaryOp::BitOr,
        BinaryOp::BitXor,
        BinaryOp::ShiftLeft,
        BinaryOp::ShiftRight,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
    ];
    for op in binary {
        for dtype in [DType::F32, DType::I16, DType::U8, DType::Bool] {
            let kernel_op = KernelOp::Binary {
                op,
                dtype,
                a_shape: vec![2, 3],
                b_shape: vec![1, 3],
                out_shape: vec![2, 3],
            };
            let out = if op.is_comparison() {
                DType::Bool
            } else {
                dtype
            };
            let values = [
                value(0, &[2, 3], dtype),
                value(1, &[3], dtype),
                value(2, &[2, 3], out),
            ];
            let io = StepIo {
                inputs: vec![&values[0], &values[1]],
                outputs: vec![&values[2]],
            };
            if let Ok(kernel) = encode(&kernel_op, &io) {
                failures.extend(try_validate(&format!("{kernel_op:?}"), &kernel).err());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn select_shaders_validate() {
    for dtype in [DType::F32, DType::I64, DType::Bool] {
        let op = KernelOp::Select {
            cond_shape: vec![2, 1],
            a_shape: vec![2, 3],
            b_shape: vec![1, 3],
            out_shape: vec![2, 3],
        };
        check(
            &op,
            &[(&[2, 1], DType::Bool), (&[2, 3], dtype), (&[3], dtype)],
            &[(&[2, 3], dtype)],
        );
    }
}

#[test]
fn every_cast_validates() {
    for from in DTYPES {
        for to in DTYPES {
            check(&KernelOp::Cast { from, to }, &[(&[7], from)], &[(&[7], to)]);
        }
    }
}

#[test]
fn quantization_shaders_validate() {
    for to in [DType::U8, DType::I8] {
        let op = KernelOp::Quantize {
            inv_scale: 10.0,
            zero_point: 3,
            to,
        };
        check(&op, &[(&[4], DType::F32)], &[(&[4], to)]);
        let table: Vec<u8> = (0..=255).collect();
        for from in [DType::U8, DType::I8] {
            let op = KernelOp::LookupTable {
                table: table.clone(),
                dtype: to,
            };
            check(&op, &[(&[4], from)], &[(&[4], to)]);
        }
    }
    for from in [DType::U8, DType::I8, DType::I32] {
        let op = KernelOp::Dequantize {
            scale: 0.5,
            zero_point: 1,
            from,
        };
        check(&op, &[(&[4], from)], &[(&[4], DType::F32)]);
    }
}

#[test]
fn shape_shaders_validate() {
    for dtype in [DType::F32, DType::I64, DType::U8, DType::Bool] {
        let x: &[usize] = &[2, 3, 4];
        let op = KernelOp::Transpose {
            dtype,
            input_shape: x.to_vec(),
            perm: vec![2, 0, 1],
        };
        check(&op, &[(x, dtype)], &[(&[4, 2, 3], dtype)]);
        let op = KernelOp::Slice {
            dtype,
            input_shape: x.to_vec(),
            axis: 1,
            start: 1,
            end: 3,
            step: 1,
        };
        check(&op, &[(x, dtype)], &[(&[2, 2, 4], dtype)]);
        let op = KernelOp::Concat {
            dtype,
            axis: 1,
            input_shapes: vec![x.to_vec(), vec![2, 1, 4], x.to_vec()],
        };
        check(
            &op,
            &[(x, dtype), (&[2, 1, 4], dtype), (x, dtype)],
            &[(&[2, 7, 4], dtype)],
        );
        for index_dtype in [DType::I64, DType::I32, DType::U8] {
            let op = KernelOp::Gather {
                dtype,
                data_shape: x.to_vec(),
                indices_shape: vec![5],
                index_dtype,
                axis: 1,
            };
            check(
                &op,
                &[(x, dtype), (&[5], index_dtype)],
                &[(&[2, 5, 4], dtype)],
            );
        }
        for mode in [PadMode::Constant(1.5), PadMode::Reflect, PadMode::Edge] {
            let op = KernelOp::Pad {
                dtype,
                input_shape: x.to_vec(),
                pads: vec![(0, 1), (2, 0), (1, 1)],
                mode,
            };
            check(&op, &[(x, dtype)], &[(&[3, 5, 6], dtype)]);
        }
        let op = KernelOp::Broadcast {
            dtype,
            input_shape: vec![1, 3, 1],
            output_shape: x.to_vec(),
        };
        check(&op, &[(&[3, 1], dtype)], &[(x, dtype)]);
        let op = KernelOp::Upsample {
            dtype,
            input_shape: x.to_vec(),
            scales: vec![1, 2, 3],
        };
        check(&op, &[(x, dtype)], &[(&[2, 6, 12], dtype)]);
    }
}

#[test]
fn indexing_shaders_validate() {
    let (data, indices): (&[usize], &[usize]) = (&[2, 3, 4], &[2, 5, 3]);
    for dtype in DTYPES {
        for index_dtype in [DType::I64, DType::I32, DType::U8] {
            let op = KernelOp::GatherElements {
                dtype,
                data_shape: data.to_vec(),
                indices_shape: indices.to_vec(),
                index_dtype,
                axis: 1,
            };
            check(
                &op,
                &[(data, dtype), (indices, index_dtype)],
                &[(indices, dtype)],
            );
        }
        let reductions = [
            ScatterReduction::None,
            ScatterReduction::Add,
            ScatterReduction::Mul,
            ScatterReduction::Max,
            ScatterReduction::Min,
        ];
        for reduction in reductions {
            if dtype == DType::Bool && reduction != ScatterReduction::None {
                continue;
            }
            let op = KernelOp::ScatterElements {
                dtype,
                data_shape: data.to_vec(),
                indices_shape: vec![2, 5, 3],
                index_dtype: DType::I64,
                axis: 1,
                reduction,
            };
            check(
                &op,
                &[(data, dtype), (indices, DType::I64), (indices, dtype)],
                &[(data, dtype)],
            );
        }
        for upper in [false, true] {
            let op = KernelOp::Trilu {
                dtype,
                shape: data.to_vec(),
                upper,
            };
            check(&op, &[(data, dtype), (&[], DType::I64)], &[(data, dtype)]);
        }
        for index_dtype in [DType::I64, DType::U16, DType::F32] {
            let op = KernelOp::OneHot {
                dtype,
                indices_shape: vec![2, 3],
                index_dtype,
                axis: 1,
                depth: 4,
                off: 0.0,
                on: 1.0,
            };
            check(&op, &[(&[2, 3], index_dtype)], &[(&[2, 4, 3], dtype)]);
        }
    }
}

#[test]
fn bad_parameters_are_errors() {
    let values = [value(0, &[2, 3], DType::F32), value(1, &[3, 2], DType::F32)];
    let io = StepIo {
        inputs: vec![&values[0]],
        outputs: vec![&values[1]],
    };
    let bad = [
        KernelOp::Transpose {
            dtype: DType::F32,
            input_shape: vec![2, 3],
            perm: vec![1, 1],
        },
        KernelOp::Slice {
            dtype: DType::F32,
            input_shape: vec![2, 3],
            axis: 2,
            start: 0,
            end: 1,
            step: 1,
        },
        KernelOp::Upsample {
            dtype: DType::F32,
            input_shape: vec![2, 3],
            scales: vec![0, 1],
        },
        KernelOp::Cast {
            from: DType::F64,
            to: DType::F32,
        },
        KernelOp::Quantize {
            inv_scale: 1.0,
            zero_point: 0,
            to: DType::I32,
        },
        KernelOp::GatherElements {
            dtype: DType::F32,
            data_shape: vec![2, 3],
            indices_shape: vec![3, 2],
            index_dtype: DType::I64,
            axis: 1,
        },
        KernelOp::ScatterElements {
            dtype: DType::Bool,
            data_shape: vec![2, 3],
            indices_shape: vec![2, 3],
            index_dtype: DType::I64,
            axis: 1,
            reduction: ScatterReduction::Add,
        },
        KernelOp::Trilu {
            dtype: DType::F32,
            shape: vec![6],
            upper: true,
        },
        KernelOp::OneHot {
            dtype: DType::F32,
            indices_shape: vec![2, 3],
            index_dtype: DType::Bool,
            axis: 1,
            depth: 2,
            off: 0.0,
            on: 1.0,
        },
    ];
    for op in bad {
        assert!(encode(&op, &io).is_err(), "{op:?}");
    }
}

fn window(input: &[usize], output: &[usize], kernel: &[usize], channels_last: bool) -> Window {
    let rank = input.len();
    Window {
        batch: 2,
        batch_axis: true,
        channels_last,
        input: input.to_vec(),
        output: output.to_vec(),
        kernel: kernel.to_vec(),
        strides: vec![1; rank],
        dilations: vec![1; rank],
        pads_before: vec![kernel[0] / 2; rank],
        pads_after: vec![kernel[0] / 2; rank],
    }
}

fn row_major(rows: usize, cols: usize, batch_strides: Vec<usize>) -> MatLayout {
    let _ = rows;
    MatLayout {
        offset: 0,
        batch_strides,
        row_stride: cols,
        col_stride: 1,
    }
}

/// Matrix products: f32 goes to cuBLAS, other words and layouts cuBLAS cannot take to
/// `matvec.cu`.
#[test]
fn matmul_kernels_compile() {
    let f32_product = KernelOp::MatMul {
        dtype: DType::F32,
        out_shape: vec![2, 3, 5],
        batch: vec![2],
        m: 3,
        k: 4,
        n: 5,
        a: row_major(3, 4, vec![12]),
        b: row_major(4, 5, vec![0]),
        c: row_major(3, 5, vec![15]),
    };
    let kernel = check(
        &f32_product,
        &[(&[2, 3, 4], DType::F32), (&[4, 5], DType::F32)],
        &[(&[2, 3, 5], DType::F32)],
    );
    assert!(matches!(kernel.dispatches.as_slice(), [Launch::Gemm(g)] if g.batch == 2));
    for dtype in [DType::I32, DType::U8, DType::I64] {
        let op = KernelOp::MatMul {
            dtype,
            out_shape: vec![3, 5],
            batch: vec![],
            m: 3,
            k: 4,
            n: 5,
            a: row_major(3, 4, vec![]),
            b: row_major(4, 5, vec![]),
            c: row_major(3, 5, vec![]),
        };
        let kernel = check(
            &op,
            &[(&[3, 4], dtype), (&[4, 5], dtype)],
            &[(&[3, 5], dtype)],
        );
        assert!(
            matches!(kernel.dispatches.as_slice(), [Launch::Kernel(d)] if d.shader.name == "matvec.cu")
        );
    }
}

/// Convolutions (im2col + GEMM + bias, pointwise GEMM, channels-last direct, transposed) and
/// pools.
#[test]
fn conv_and_pool_kernels_compile() {
    let conv = |window: Window, has_bias| KernelOp::Conv {
        dtype: DType::F32,
        window,
        in_channels: 4,
        out_channels: 8,
        group: 2,
        has_bias,
    };
    let w = [(&[8usize, 2, 3, 3][..], DType::F32)];
    let im2col = check(
        &conv(window(&[6, 6], &[6, 6], &[3, 3], false), true),
        &[(&[2, 4, 6, 6], DType::F32), w[0], (&[8], DType::F32)],
        &[(&[2, 8, 6, 6], DType::F32)],
    );
    let names: Vec<&str> = im2col
        .dispatches
        .iter()
        .map(|l| match l {
            Launch::Kernel(d) => d.shader.name,
            Launch::Gemm(_) => "gemm",
        })
        .collect();
    assert_eq!(names, ["im2col.cu", "gemm", "gemm", "bias.cu"]);
    assert_eq!(im2col.scratch_words, 2 * 4 * 9 * 36);
    let pointwise = check(
        &conv(window(&[6, 6], &[6, 6], &[1, 1], false), false),
        &[(&[2, 4, 6, 6], DType::F32), (&[8, 2, 1, 1], DType::F32)],
        &[(&[2, 8, 6, 6], DType::F32)],
    );
    assert_eq!(pointwise.scratch_words, 0);
    assert!(
        pointwise
            .dispatches
            .iter()
            .all(|l| matches!(l, Launch::Gemm(_)))
    );
    let direct = check(
        &conv(window(&[6, 6], &[6, 6], &[3, 3], true), true),
        &[(&[2, 6, 6, 4], DType::F32), w[0], (&[8], DType::F32)],
        &[(&[2, 6, 6, 8], DType::F32)],
    );
    assert!(
        matches!(direct.dispatches.as_slice(), [Launch::Kernel(d)] if d.shader.name == "conv.cu")
    );
    let mut up = window(&[3, 3], &[6, 6], &[2, 2], false);
    up.strides = vec![2, 2];
    up.pads_before = vec![0, 0];
    up.pads_after = vec![0, 0];
    check(
        &KernelOp::ConvTranspose {
            dtype: DType::F32,
            window: up,
            in_channels: 4,
            out_channels: 8,
            group: 1,
            adjustments: vec![0, 0],
            has_bias: true,
        },
        &[
            (&[2, 4, 3, 3], DType::F32),
            (&[8, 4, 2, 2], DType::F32),
            (&[8], DType::F32),
        ],
        &[(&[2, 8, 6, 6], DType::F32)],
    );
    for dtype in [DType::F32, DType::U8, DType::I8] {
        check(
            &KernelOp::MaxPool {
                dtype,
                window: window(&[6, 6], &[6, 6], &[3, 3], false),
                channels: 4,
            },
            &[(&[2, 4, 6, 6], dtype)],
            &[(&[2, 4, 6, 6], dtype)],
        );
    }
    for count_include_pad in [false, true] {
        check(
            &KernelOp::SumPool {
                dtype: DType::F32,
                window: window(&[6, 6], &[6, 6], &[3, 3], false),
                channels: 4,
                normalize: true,
                count_include_pad,
            },
            &[(&[2, 4, 6, 6], DType::F32)],
            &[(&[2, 4, 6, 6], DType::F32)],
        );
    }
}

/// Reductions of every op and word, softmax, norms and the LSTM tail.
#[test]
fn reduction_kernels_compile() {
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::MeanOfSquares,
        ReduceOp::ArgMax { last: false },
        ReduceOp::ArgMin { last: true },
        ReduceOp::All,
        ReduceOp::Any,
    ];
    let mut failures = vec![];
    for op in ops {
        for dtype in [DType::F32, DType::I32, DType::U8, DType::Bool] {
            let kernel_op = KernelOp::Reduce {
                op,
                dtype,
                input_shape: vec![3, 4, 5],
                axes: vec![1],
            };
            let out = match op {
                ReduceOp::ArgMax { .. } | ReduceOp::ArgMin { .. } => DType::I64,
                _ => dtype,
            };
            let values = [value(0, &[3, 4, 5], dtype), value(1, &[3, 1, 5], out)];
            let io = StepIo {
                inputs: vec![&values[0]],
                outputs: vec![&values[1]],
            };
            if let Ok(kernel) = encode(&kernel_op, &io) {
                failures.extend(try_validate(&format!("{kernel_op:?}"), &kernel).err());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let x = [(&[3usize, 4, 5][..], DType::F32)];
    for log in [false, true] {
        check(
            &KernelOp::Softmax {
                dtype: DType::F32,
                shape: vec![3, 4, 5],
                axes: vec![2],
                log,
            },
            &x,
            &x,
        );
    }
    check(
        &KernelOp::RmsNorm {
            dtype: DType::F32,
            shape: vec![3, 4, 5],
            axis: 2,
            eps: 1e-5,
        },
        &x,
        &x,
    );
    check(
        &KernelOp::Lrn {
            dtype: DType::F32,
            shape: vec![3, 4, 5],
            alpha: 1e-4,
            beta: 0.75,
            bias: 1.0,
            size: 3,
        },
        &x,
        &x,
    );
    check(
        &KernelOp::LstmEpilogue {
            dtype: DType::F32,
            hidden: 4,
        },
        &[(&[2, 16], DType::F32), (&[2, 4], DType::F32)],
        &[(&[2, 4], DType::F32), (&[2, 4], DType::F32)],
    );
}

/// The plan's op table, one op of each kind the wgpu backend has kernels for: cuda must have a
/// kernel for each (the families and parameter layouts are the same).
#[test]
fn every_gpu_op_kind_has_a_cuda_kernel() {
    let f = DType::F32;
    let s: &[usize] = &[2, 3];
    let cases: Vec<(KernelOp, Vec<(&[usize], DType)>, Vec<(&[usize], DType)>)> = vec![
        (
            KernelOp::Unary {
                op: UnaryOp::Exp,
                dtype: f,
                out_dtype: f,
            },
            vec![(s, f)],
            vec![(s, f)],
        ),
        (
            KernelOp::Binary {
                op: BinaryOp::Add,
                dtype: f,
                a_shape: vec![2, 3],
                b_shape: vec![2, 3],
                out_shape: vec![2, 3],
            },
            vec![(s, f), (s, f)],
            vec![(s, f)],
        ),
        (
            KernelOp::Select {
                cond_shape: vec![2, 3],
                a_shape: vec![2, 3],
                b_shape: vec![2, 3],
                out_shape: vec![2, 3],
            },
            vec![(s, DType::Bool), (s, f), (s, f)],
            vec![(s, f)],
        ),
        (
            KernelOp::Cast {
                from: f,
                to: DType::I32,
            },
            vec![(s, f)],
            vec![(s, DType::I32)],
        ),
        (
            KernelOp::Quantize {
                inv_scale: 2.0,
                zero_point: 3,
                to: DType::U8,
            },
            vec![(s, f)],
            vec![(s, DType::U8)],
        ),
        (
            KernelOp::Dequantize {
                scale: 0.5,
                zero_point: 3,
                from: DType::U8,
            },
            vec![(s, DType::U8)],
            vec![(s, f)],
        ),
        (
            KernelOp::LookupTable {
                table: vec![7; 256],
                dtype: DType::U8,
            },
            vec![(s, DType::U8)],
            vec![(s, DType::U8)],
        ),
        (
            KernelOp::MatMul {
                dtype: f,
                out_shape: vec![2, 2],
                batch: vec![],
                m: 2,
                k: 3,
                n: 2,
                a: row_major(2, 3, vec![]),
                b: row_major(3, 2, vec![]),
                c: row_major(2, 2, vec![]),
            },
            vec![(s, f), (&[3, 2], f)],
            vec![(&[2, 2], f)],
        ),
        (
            KernelOp::Conv {
                dtype: f,
                window: window(&[4, 4], &[4, 4], &[3, 3], false),
                in_channels: 1,
                out_channels: 1,
                group: 1,
                has_bias: false,
            },
            vec![(&[2, 1, 4, 4], f), (&[1, 1, 3, 3], f)],
            vec![(&[2, 1, 4, 4], f)],
        ),
        (
            KernelOp::Reduce {
                op: ReduceOp::Sum,
                dtype: f,
                input_shape: vec![2, 3],
                axes: vec![1],
            },
            vec![(s, f)],
            vec![(&[2, 1], f)],
        ),
        (
            KernelOp::Transpose {
                dtype: f,
                input_shape: vec![2, 3],
                perm: vec![1, 0],
            },
            vec![(s, f)],
            vec![(&[3, 2], f)],
        ),
        (
            KernelOp::Slice {
                dtype: f,
                input_shape: vec![2, 3],
                axis: 1,
                start: 1,
                end: 3,
                step: 1,
            },
            vec![(s, f)],
            vec![(&[2, 2], f)],
        ),
        (
            KernelOp::Concat {
                dtype: f,
                axis: 0,
                input_shapes: vec![vec![2, 3], vec![2, 3]],
            },
            vec![(s, f), (s, f)],
            vec![(&[4, 3], f)],
        ),
        (
            KernelOp::Gather {
                dtype: f,
                data_shape: vec![2, 3],
                indices_shape: vec![2],
                index_dtype: DType::I64,
                axis: 1,
            },
            vec![(s, f), (&[2], DType::I64)],
            vec![(&[2, 2], f)],
        ),
        (
            KernelOp::Pad {
                dtype: f,
                input_shape: vec![2, 3],
                pads: vec![(1, 1), (0, 2)],
                mode: PadMode::Constant(0.0),
            },
            vec![(s, f)],
            vec![(&[4, 5], f)],
        ),
        (
            KernelOp::Broadcast {
                dtype: f,
                input_shape: vec![1, 3],
                output_shape: vec![2, 3],
            },
            vec![(&[1, 3], f)],
            vec![(s, f)],
        ),
        (
            KernelOp::Upsample {
                dtype: f,
                input_shape: vec![2, 3],
                scales: vec![2, 2],
            },
            vec![(s, f)],
            vec![(&[4, 6], f)],
        ),
        (
            KernelOp::Trilu {
                dtype: f,
                shape: vec![2, 3],
                upper: true,
            },
            vec![(s, f), (&[], DType::I64)],
            vec![(s, f)],
        ),
    ];
    for (op, inputs, outputs) in &cases {
        check(op, inputs, outputs);
    }
    // The remaining kinds are covered by the tests above (pools, softmax, norms, LSTM,
    // GatherElements, ScatterElements, OneHot, ConvTranspose); Opaque never runs on a device.
    let opaque = KernelOp::Opaque {
        tract_op: "Scan".into(),
    };
    let values = [value(0, s, f)];
    let io = StepIo {
        inputs: vec![&values[0]],
        outputs: vec![&values[0]],
    };
    assert!(encode(&opaque, &io).is_err());
}
