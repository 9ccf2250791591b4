//! The kernel variants every GPU backend must compile: a representative set of ops and dtypes
//! for each kernel family, encoded for the backend's [`Target`] and handed to its compiler (naga
//! for WGSL, NVRTC for CUDA C). Each backend instantiates the whole catalogue as tests with
//! [`kernel_compile_tests!`](crate::kernel_compile_tests), so a kernel one backend gains is
//! checked on the other at once.

use crate::kernels::{Kernel, Launch, Shader, StepIo, Target, encode};
use std::collections::HashSet;
use std::sync::Mutex;
use tessera_core::DType;
use tessera_core::plan::{
    BinaryOp, GridPadding, GridSampleMode, KernelOp, MatLayout, PadMode, ReduceOp, Role,
    ScatterReduction, UnaryOp, Value, ValueId, Window,
};

/// The dtypes GPU backends hold (every one a 32-bit word holds), in `DType::ALL`'s order.
pub fn held_dtypes() -> impl Iterator<Item = DType> {
    DType::ALL
        .into_iter()
        .filter(|&d| crate::repr::word(d).is_some())
}

/// Compiles one kernel variant, or says why it does not compile.
pub type Compile = dyn Fn(&Shader) -> Result<(), String> + Sync;

/// A backend's target and its compiler; each variant is compiled once.
pub struct KernelCheck {
    pub target: Target,
    compile: Box<Compile>,
    compiled: Mutex<HashSet<Shader>>,
}

impl KernelCheck {
    pub fn new(target: Target, compile: Box<Compile>) -> KernelCheck {
        KernelCheck {
            target,
            compile,
            compiled: Mutex::new(HashSet::new()),
        }
    }

    /// Encodes `op` on the target.
    pub fn encode(&self, op: &KernelOp, io: &StepIo) -> tessera_core::Result<Kernel> {
        encode(op, io, &self.target)
    }

    /// Compiles every kernel `kernel` dispatches, naming `what` on failure.
    pub fn try_compile(&self, what: &str, kernel: &Kernel) -> Result<(), String> {
        for dispatch in kernel.dispatches() {
            let new = self
                .compiled
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(dispatch.shader.clone());
            if new {
                (self.compile)(&dispatch.shader).map_err(|e| format!("{what}: {e}"))?;
            }
        }
        Ok(())
    }

    /// Encodes `op` for inputs and outputs of these shapes and dtypes, then compiles its
    /// kernels; panics naming the op when either fails.
    pub fn check(
        &self,
        op: &KernelOp,
        inputs: &[(&[usize], DType)],
        outputs: &[(&[usize], DType)],
    ) -> Kernel {
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
        let kernel = self
            .encode(op, &io)
            .unwrap_or_else(|e| panic!("{}: {e}", op.name()));
        if let Err(e) = self.try_compile(&format!("{op:?}"), &kernel) {
            panic!("{e}");
        }
        kernel
    }
}

/// An intermediate value of this shape and dtype.
pub fn value(id: usize, shape: &[usize], dtype: DType) -> Value {
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

/// The kernel names of `kernel`'s launches in order, `"gemm"` for a GEMM call.
pub fn names(kernel: &Kernel) -> Vec<&'static str> {
    kernel
        .launches
        .iter()
        .map(|l| match l {
            Launch::Kernel(d) => d.shader.name,
            Launch::Gemm(_) => "gemm",
        })
        .collect()
}

/// `#[test]`s running the whole catalogue through `$check` (a [`KernelCheck`] expression,
/// evaluated once per test).
#[macro_export]
macro_rules! kernel_compile_tests {
    ($check:expr) => {
        #[test]
        fn unary_and_binary_kernels_compile() {
            $crate::testing::unary_and_binary_shaders_validate(&$check);
        }
        #[test]
        fn select_kernels_compile() {
            $crate::testing::select_shaders_validate(&$check);
        }
        #[test]
        fn every_cast_compiles() {
            $crate::testing::every_cast_validates(&$check);
        }
        #[test]
        fn quantization_kernels_compile() {
            $crate::testing::quantization_shaders_validate(&$check);
        }
        #[test]
        fn shape_kernels_compile() {
            $crate::testing::shape_shaders_validate(&$check);
        }
        #[test]
        fn indexing_kernels_compile() {
            $crate::testing::indexing_shaders_validate(&$check);
        }
        #[test]
        fn bad_parameters_are_errors() {
            $crate::testing::bad_parameters_are_errors(&$check);
        }
        #[test]
        fn matmul_kernels_compile() {
            $crate::testing::matmul_kernels_compile(&$check);
        }
        #[test]
        fn conv_and_pool_kernels_compile() {
            $crate::testing::conv_and_pool_kernels_compile(&$check);
        }
        #[test]
        fn reduction_kernels_compile() {
            $crate::testing::reduction_kernels_compile(&$check);
        }
    };
}

pub fn unary_and_binary_shaders_validate(c: &KernelCheck) {
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
        UnaryOp::GeluTanh { square: false },
        UnaryOp::GeluTanh { square: true },
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
            if let Ok(kernel) = c.encode(&kernel_op, &io) {
                failures.extend(c.try_compile(&format!("{kernel_op:?}"), &kernel).err());
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
            if let Ok(kernel) = c.encode(&kernel_op, &io) {
                failures.extend(c.try_compile(&format!("{kernel_op:?}"), &kernel).err());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

pub fn select_shaders_validate(c: &KernelCheck) {
    for dtype in [DType::F32, DType::I64, DType::Bool] {
        let op = KernelOp::Select {
            cond_shape: vec![2, 1],
            a_shape: vec![2, 3],
            b_shape: vec![1, 3],
            out_shape: vec![2, 3],
        };
        c.check(
            &op,
            &[(&[2, 1], DType::Bool), (&[2, 3], dtype), (&[3], dtype)],
            &[(&[2, 3], dtype)],
        );
    }
}

pub fn every_cast_validates(c: &KernelCheck) {
    for from in held_dtypes() {
        for to in held_dtypes() {
            c.check(&KernelOp::Cast { from, to }, &[(&[7], from)], &[(&[7], to)]);
        }
    }
}

pub fn quantization_shaders_validate(c: &KernelCheck) {
    for to in [DType::U8, DType::I8] {
        let op = KernelOp::Quantize {
            inv_scale: 10.0,
            zero_point: 3,
            to,
        };
        c.check(&op, &[(&[4], DType::F32)], &[(&[4], to)]);
        let table: Vec<u8> = (0..=255).collect();
        for from in [DType::U8, DType::I8] {
            let op = KernelOp::LookupTable {
                table: table.clone(),
                dtype: to,
            };
            c.check(&op, &[(&[4], from)], &[(&[4], to)]);
        }
    }
    for from in [DType::U8, DType::I8, DType::I32] {
        let op = KernelOp::Dequantize {
            scale: 0.5,
            zero_point: 1,
            from,
        };
        c.check(&op, &[(&[4], from)], &[(&[4], DType::F32)]);
    }
}

pub fn shape_shaders_validate(c: &KernelCheck) {
    for dtype in [DType::F32, DType::I64, DType::U8, DType::Bool] {
        let x: &[usize] = &[2, 3, 4];
        let op = KernelOp::Transpose {
            dtype,
            input_shape: x.to_vec(),
            perm: vec![2, 0, 1],
        };
        c.check(&op, &[(x, dtype)], &[(&[4, 2, 3], dtype)]);
        let op = KernelOp::Slice {
            dtype,
            input_shape: x.to_vec(),
            axis: 1,
            start: 1,
            end: 3,
            step: 1,
        };
        c.check(&op, &[(x, dtype)], &[(&[2, 2, 4], dtype)]);
        let op = KernelOp::NonZero {
            dtype,
            input_shape: x.to_vec(),
        };
        c.check(
            &op,
            &[(x, dtype)],
            &[(&[3, 24], DType::I64), (&[], DType::I64)],
        );
        let op = KernelOp::NonMaxSuppression {
            dtype: DType::F32,
            batches: 2,
            classes: 3,
            boxes: 5,
            center_point_box: dtype == DType::F32,
            has_score_threshold: true,
        };
        c.check(
            &op,
            &[
                (&[2, 5, 4], DType::F32),
                (&[2, 3, 5], DType::F32),
                (&[3], DType::F32),
            ],
            &[
                (&[30, 3], DType::I64),
                (&[], DType::I64),
                (&[5], DType::U32),
            ],
        );
        let op = KernelOp::Concat {
            dtype,
            axis: 1,
            input_shapes: vec![x.to_vec(), vec![2, 1, 4], x.to_vec()],
        };
        c.check(
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
            c.check(
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
            c.check(&op, &[(x, dtype)], &[(&[3, 5, 6], dtype)]);
        }
        let op = KernelOp::Broadcast {
            dtype,
            input_shape: vec![1, 3, 1],
            output_shape: x.to_vec(),
        };
        c.check(&op, &[(&[3, 1], dtype)], &[(x, dtype)]);
        let op = KernelOp::Upsample {
            dtype,
            input_shape: x.to_vec(),
            scales: vec![1, 2, 3],
        };
        c.check(&op, &[(x, dtype)], &[(&[2, 6, 12], dtype)]);
        let op = KernelOp::Tile {
            dtype,
            input_shape: x.to_vec(),
            multipliers: vec![2, 1, 3],
        };
        c.check(&op, &[(x, dtype)], &[(&[4, 3, 12], dtype)]);
    }
    // Resize's taps along one axis (f32): the middle axis of [2, 3, 4] to 5 positions, two taps
    // each, the last position extrapolated.
    let x: &[usize] = &[2, 3, 4];
    let op = KernelOp::Resample {
        input_shape: x.to_vec(),
        axis: 1,
        window: 2,
        indices: vec![0, 1, 0, 1, 1, 2, 1, 2, 2, 2],
        weights: vec![1.0, 0.0, 0.5, 0.5, 0.75, 0.25, 0.0, 1.0, 0.0, 0.0],
        bias: vec![0.0, 0.0, 0.0, 0.0, -1.5],
    };
    c.check(&op, &[(x, DType::F32)], &[(&[2, 5, 4], DType::F32)]);
    // The DFT along a middle and a last-but-one axis, forward and inverse.
    for (axis, inverse) in [(1, false), (2, true)] {
        let op = KernelOp::Dft {
            input_shape: vec![2, 5, 3, 2],
            axis,
            inverse,
        };
        c.check(
            &op,
            &[(&[2, 5, 3, 2], DType::F32)],
            &[(&[2, 5, 3, 2], DType::F32)],
        );
    }
    // GridSample: every mode and padding, 2-D and (not bicubic) 3-D.
    for mode in [
        GridSampleMode::Nearest,
        GridSampleMode::Bilinear,
        GridSampleMode::Bicubic,
    ] {
        for padding in [
            GridPadding::Zeros,
            GridPadding::Border,
            GridPadding::Reflection,
        ] {
            let op = KernelOp::GridSample {
                input_shape: vec![1, 2, 4, 5],
                grid_shape: vec![1, 3, 6, 2],
                mode,
                padding,
                align_corners: mode == GridSampleMode::Bilinear,
            };
            c.check(
                &op,
                &[(&[1, 2, 4, 5], DType::F32), (&[1, 3, 6, 2], DType::F32)],
                &[(&[1, 2, 3, 6], DType::F32)],
            );
        }
    }
}

pub fn indexing_shaders_validate(c: &KernelCheck) {
    let (data, indices): (&[usize], &[usize]) = (&[2, 3, 4], &[2, 5, 3]);
    // GatherND: rows of two coordinates (no batch axis), and of one within each batch.
    for (indices_shape, batch_dims, out) in [
        (&[5usize, 2][..], 0, &[5usize, 4][..]),
        (&[2, 6, 1][..], 1, &[2, 6, 4][..]),
    ] {
        for (dtype, index_dtype) in [(DType::F32, DType::I64), (DType::U8, DType::I32)] {
            let op = KernelOp::GatherNd {
                dtype,
                data_shape: data.to_vec(),
                indices_shape: indices_shape.to_vec(),
                index_dtype,
                batch_dims,
            };
            c.check(
                &op,
                &[(data, dtype), (indices_shape, index_dtype)],
                &[(out, dtype)],
            );
        }
    }
    // ScatterND: rows of two coordinates, each updating a slice of 4.
    for reduction in [
        ScatterReduction::None,
        ScatterReduction::Add,
        ScatterReduction::Mul,
        ScatterReduction::Max,
        ScatterReduction::Min,
    ] {
        for dtype in [DType::F32, DType::I64, DType::U8] {
            let op = KernelOp::ScatterNd {
                dtype,
                data_shape: data.to_vec(),
                indices_shape: vec![5, 2],
                index_dtype: DType::I64,
                reduction,
            };
            c.check(
                &op,
                &[(data, dtype), (&[5, 2], DType::I64), (&[5, 4], dtype)],
                &[(data, dtype)],
            );
        }
    }
    for dtype in held_dtypes() {
        for index_dtype in [DType::I64, DType::I32, DType::U8] {
            let op = KernelOp::GatherElements {
                dtype,
                data_shape: data.to_vec(),
                indices_shape: indices.to_vec(),
                index_dtype,
                axis: 1,
            };
            c.check(
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
            c.check(
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
            c.check(&op, &[(data, dtype), (&[], DType::I64)], &[(data, dtype)]);
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
            c.check(&op, &[(&[2, 3], index_dtype)], &[(&[2, 4, 3], dtype)]);
        }
    }
}

pub fn bad_parameters_are_errors(c: &KernelCheck) {
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
        KernelOp::Resample {
            input_shape: vec![2, 3],
            axis: 1,
            window: 1,
            indices: vec![3],
            weights: vec![1.0],
            bias: vec![0.0],
        },
        KernelOp::Dft {
            input_shape: vec![2, 3],
            axis: 0,
            inverse: false,
        },
        KernelOp::Tile {
            dtype: DType::F32,
            input_shape: vec![2, 3],
            multipliers: vec![2],
        },
        KernelOp::GridSample {
            input_shape: vec![1, 2, 3, 4, 5],
            grid_shape: vec![1, 2, 2, 2, 3],
            mode: GridSampleMode::Bicubic,
            padding: GridPadding::Zeros,
            align_corners: false,
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
        assert!(c.encode(&op, &io).is_err(), "{op:?}");
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

/// Matrix products: with a GEMM library f32 goes to it, other words to `matvec`; without one,
/// `matmul` (tiled) or `matvec` for thin sides.
pub fn matmul_kernels_compile(c: &KernelCheck) {
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
    let kernel = c.check(
        &f32_product,
        &[(&[2, 3, 4], DType::F32), (&[4, 5], DType::F32)],
        &[(&[2, 3, 5], DType::F32)],
    );
    if c.target.gemm {
        assert!(matches!(kernel.launches.as_slice(), [Launch::Gemm(g)] if g.batch == 2));
    } else {
        // Three rows: too thin for a tile.
        assert_eq!(names(&kernel), ["matvec"]);
    }
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
        let kernel = c.check(
            &op,
            &[(&[3, 4], dtype), (&[4, 5], dtype)],
            &[(&[3, 5], dtype)],
        );
        assert_eq!(names(&kernel), ["matvec"]);
    }
    for dtype in [DType::F32, DType::I32] {
        let square = KernelOp::MatMul {
            dtype,
            out_shape: vec![8, 8],
            batch: vec![],
            m: 8,
            k: 8,
            n: 8,
            a: row_major(8, 8, vec![]),
            b: row_major(8, 8, vec![]),
            c: row_major(8, 8, vec![]),
        };
        let x = [(&[8usize, 8][..], dtype)];
        let kernel = c.check(&square, &[x[0], x[0]], &x);
        let expected = match (c.target.gemm, dtype) {
            (true, DType::F32) => "gemm",
            (true, _) => "matvec",
            (false, _) => "matmul",
        };
        assert_eq!(names(&kernel), [expected]);
    }
}

/// Convolutions (with a GEMM library: im2col + GEMM + bias, pointwise GEMM; channels-last and
/// without one: `conv`; transposed) and pools.
pub fn conv_and_pool_kernels_compile(c: &KernelCheck) {
    let conv = |window: Window, has_bias| KernelOp::Conv {
        dtype: DType::F32,
        window,
        in_channels: 4,
        out_channels: 8,
        group: 2,
        has_bias,
    };
    let w = [(&[8usize, 2, 3, 3][..], DType::F32)];
    let im2col = c.check(
        &conv(window(&[6, 6], &[6, 6], &[3, 3], false), true),
        &[(&[2, 4, 6, 6], DType::F32), w[0], (&[8], DType::F32)],
        &[(&[2, 8, 6, 6], DType::F32)],
    );
    if c.target.gemm {
        assert_eq!(names(&im2col), ["im2col", "gemm", "gemm", "bias"]);
        assert_eq!(im2col.scratch_words, 2 * 4 * 9 * 36);
    } else {
        assert_eq!(names(&im2col), ["conv"]);
    }
    let pointwise = c.check(
        &conv(window(&[6, 6], &[6, 6], &[1, 1], false), false),
        &[(&[2, 4, 6, 6], DType::F32), (&[8, 2, 1, 1], DType::F32)],
        &[(&[2, 8, 6, 6], DType::F32)],
    );
    assert_eq!(pointwise.scratch_words, 0);
    let expected: &[&str] = if c.target.gemm {
        &["gemm", "gemm"]
    } else {
        &["conv"]
    };
    assert_eq!(names(&pointwise), expected);
    let direct = c.check(
        &conv(window(&[6, 6], &[6, 6], &[3, 3], true), true),
        &[(&[2, 6, 6, 4], DType::F32), w[0], (&[8], DType::F32)],
        &[(&[2, 6, 6, 8], DType::F32)],
    );
    assert_eq!(names(&direct), ["conv"]);
    // Three output channels per group: one channel per thread (OCB 1) instead of four.
    let odd = c.check(
        &KernelOp::Conv {
            dtype: DType::F32,
            window: window(&[6, 6], &[6, 6], &[3, 3], true),
            in_channels: 4,
            out_channels: 6,
            group: 2,
            has_bias: false,
        },
        &[(&[2, 6, 6, 4], DType::F32), (&[6, 2, 3, 3], DType::F32)],
        &[(&[2, 6, 6, 6], DType::F32)],
    );
    assert!(
        matches!(odd.launches.as_slice(), [Launch::Kernel(d)] if d.shader.defines.contains(&("OCB", "1u".into())))
    );
    // The direct kernel's other blocks: 16 channels per group (8 per thread), 6 (2 per thread).
    for (out_channels, block) in [(16, "8u"), (6, "2u")] {
        let blocked = c.check(
            &KernelOp::Conv {
                dtype: DType::F32,
                window: window(&[6, 7], &[6, 7], &[3, 3], true),
                in_channels: 3,
                out_channels,
                group: 1,
                has_bias: true,
            },
            &[
                (&[2, 6, 7, 3], DType::F32),
                (&[out_channels, 3, 3, 3], DType::F32),
                (&[out_channels], DType::F32),
            ],
            &[(&[2, 6, 7, out_channels], DType::F32)],
        );
        assert!(
            matches!(blocked.launches.as_slice(), [Launch::Kernel(d)] if d.shader.defines.contains(&("OCB", block.into()))),
            "{out_channels} channels: {block} per thread"
        );
    }
    // Integer (quantized) convolutions: the direct kernel in i32 words, GEMM library or not.
    let integer = c.check(
        &KernelOp::Conv {
            dtype: DType::I32,
            window: window(&[6, 6], &[6, 6], &[3, 3], false),
            in_channels: 4,
            out_channels: 8,
            group: 2,
            has_bias: true,
        },
        &[
            (&[2, 4, 6, 6], DType::I32),
            (&[8, 2, 3, 3], DType::I32),
            (&[8], DType::I32),
        ],
        &[(&[2, 8, 6, 6], DType::I32)],
    );
    assert_eq!(names(&integer), ["conv"]);
    let mut up = window(&[3, 3], &[6, 6], &[2, 2], false);
    up.strides = vec![2, 2];
    up.pads_before = vec![0, 0];
    up.pads_after = vec![0, 0];
    c.check(
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
        c.check(
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
        c.check(
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
pub fn reduction_kernels_compile(c: &KernelCheck) {
    for dtype in [DType::F32, DType::I64, DType::U8] {
        for largest in [true, false] {
            c.check(
                &KernelOp::TopK {
                    dtype,
                    input_shape: vec![3, 7, 2],
                    axis: 1,
                    k: 3,
                    largest,
                },
                &[(&[3, 7, 2], dtype)],
                &[(&[3, 3, 2], dtype), (&[3, 3, 2], DType::I64)],
            );
        }
    }
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
            if let Ok(kernel) = c.encode(&kernel_op, &io) {
                failures.extend(c.try_compile(&format!("{kernel_op:?}"), &kernel).err());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let x = [(&[3usize, 4, 5][..], DType::F32)];
    for log in [false, true] {
        c.check(
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
    c.check(
        &KernelOp::RmsNorm {
            dtype: DType::F32,
            shape: vec![3, 4, 5],
            axis: 2,
            eps: 1e-5,
        },
        &x,
        &x,
    );
    c.check(
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
    c.check(
        &KernelOp::LstmEpilogue {
            dtype: DType::F32,
            hidden: 4,
        },
        &[(&[2, 16], DType::F32), (&[2, 4], DType::F32)],
        &[(&[2, 4], DType::F32), (&[2, 4], DType::F32)],
    );
}

/// The session suite every GPU backend runs on its device: strict placement, host fallback and
/// its counted copies, I/O binding, weights uploaded once, int64 inputs past 32 bits refused.
/// Instantiated per backend with [`gpu_session_tests!`](crate::gpu_session_tests).
pub mod sessions {
    use crate::engine::{Gpu, GpuSession, Input};
    use std::ops::Deref;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use tessera_core::error::{install_panic_counter, panics_seen_on_this_thread};
    use tessera_core::plan::{CopyCause, TransferDirection};
    use tessera_core::tensor::onnx_pb::read_pb;
    use tessera_core::{DType, Error, Model, Tensor};

    /// How a backend opens sessions, and whether its device is here.
    pub trait Backend {
        type Gpu: Gpu;
        type Session: Deref<Target = GpuSession<Self::Gpu>>;
        /// The backend's name in messages.
        const NAME: &'static str;
        fn open(model: Arc<Model>, allow_fallback: bool) -> tessera_core::Result<Self::Session>;
        /// Whether the device is usable here: `false` only where the backend's tests may skip
        /// (saying so); a backend whose device CI always has returns `true`, so a missing
        /// device fails the tests.
        fn device_here() -> bool;
    }

    fn shared() -> PathBuf {
        std::env::var_os("TESSERA_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
    }

    /// A node-suite case folder of the shared test data.
    pub fn node_case(name: &str) -> PathBuf {
        shared().join("onnx-tests/node").join(name)
    }

    fn text_orientation() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/text-orientation")
    }

    fn load<B: Backend>(dir: &Path, allow_fallback: bool) -> tessera_core::Result<B::Session> {
        let model = Arc::new(Model::load(dir.join("model.onnx"))?);
        B::open(model, allow_fallback)
    }

    fn read(dir: &Path, prefix: &str) -> Vec<Tensor> {
        (0..)
            .map(|k| dir.join(format!("test_data_set_0/{prefix}_{k}.pb")))
            .take_while(|p| p.exists())
            .map(|p| read_pb(&p).unwrap().1)
            .collect()
    }

    fn close(actual: &Tensor, expected: &Tensor) {
        assert_eq!(actual.shape(), expected.shape());
        assert_eq!(actual.dtype(), expected.dtype());
        for (a, e) in actual
            .data()
            .to_f64_vec()
            .iter()
            .zip(expected.data().to_f64_vec())
        {
            assert!((a - e).abs() <= 1e-5 + 1e-3 * e.abs(), "{a} vs {e}");
        }
    }

    pub fn strict_placement_names_every_op_without_a_kernel<B: Backend>() {
        if !B::device_here() {
            return;
        }
        // Det (a matrix determinant) has no GPU kernel.
        let dir = node_case("test_det_nd");
        let error = load::<B>(&dir, false)
            .and_then(|s| s.run(read(&dir, "input")))
            .expect_err("Det has no GPU kernel: strict placement must refuse the model");
        let Error::UnsupportedOps { backend, ops } = &error else {
            panic!("expected UnsupportedOps, got {error}");
        };
        assert_eq!(backend.as_deref(), Some(B::NAME));
        assert!(!ops.is_empty());
        let message = error.to_string();
        println!("{message}");
        assert!(
            message.contains(&format!("{} backend cannot run this model", B::NAME)),
            "{message}"
        );
        assert!(
            ops.iter()
                .all(|op| op.count >= 1 && !op.first_node.is_empty()),
            "{ops:?}"
        );
    }

    pub fn fallback_runs_on_the_host_and_counts_every_copy<B: Backend>() {
        if !B::device_here() {
            return;
        }
        let dir = node_case("test_det_nd");
        let session = load::<B>(&dir, true).unwrap();
        let inputs = read(&dir, "input");
        let report = session.report(&inputs).unwrap();
        assert!(
            report.placement.host_steps() > 0,
            "Det must be placed on the host"
        );
        let outputs = session.run(inputs).unwrap();
        for (actual, expected) in outputs.iter().zip(read(&dir, "output")) {
            close(actual, &expected);
        }
        let transfers = session.last_transfers();
        let planned: usize = report.placement.fallback_bytes();
        assert_eq!(
            transfers.fallback_bytes, planned,
            "{transfers:?} vs the placement report"
        );
        let uploads: usize = report
            .placement
            .io_transfers
            .iter()
            .filter(|t| t.direction == TransferDirection::HostToDevice)
            .map(|t| t.bytes)
            .sum();
        assert_eq!(transfers.input_bytes, uploads);
        assert!(report.render().contains("HOST"), "{}", report.render());
    }

    pub fn a_run_copies_only_its_inputs_and_outputs<B: Backend>() {
        if !B::device_here() {
            return;
        }
        let dir = text_orientation();
        let session = load::<B>(&dir, false).unwrap();
        let inputs = read(&dir, "input");
        let input_words: usize = inputs.iter().map(|t| t.len() * 4).sum();
        let outputs = session.run(inputs.clone()).unwrap();
        for (actual, expected) in outputs.iter().zip(read(&dir, "output")) {
            close(actual, &expected);
        }
        let transfers = session.last_transfers();
        assert_eq!(transfers.input_bytes, input_words);
        assert_eq!(
            transfers.output_bytes,
            outputs.iter().map(|t| t.len() * 4).sum::<usize>()
        );
        assert_eq!(transfers.fallback_bytes, 0);
        let report = session.report(&inputs).unwrap();
        assert_eq!(report.placement.host_steps(), 0);
        assert!(report.memory.arena_ratio() <= 1.5, "{:?}", report.memory);
    }

    pub fn device_tensors_chain_runs_without_host_copies<B: Backend>() {
        if !B::device_here() {
            return;
        }
        // Abs twice: the first run's output feeds the second run on the device.
        let dir = node_case("test_abs");
        let session = load::<B>(&dir, false).unwrap();
        let x = read(&dir, "input").remove(0);
        let on_device = session.upload(&x).unwrap();
        let first = session
            .run_on_device(vec![Input::Device(on_device)])
            .unwrap();
        assert_eq!(session.last_transfers().total(), 0, "device in, device out");
        let second = session
            .run_on_device(vec![Input::Device(first[0].clone())])
            .unwrap();
        assert_eq!(session.last_transfers().total(), 0);
        let expected = read(&dir, "output").remove(0);
        close(&second[0].to_host().unwrap(), &expected);
        close(&first[0].to_host().unwrap(), &expected);
        // A device input, the output read back in the run: only the output crosses.
        let read_back = session
            .run_inputs(vec![Input::Device(first[0].clone())], false)
            .unwrap();
        let output_bytes = 4 * expected.shape().iter().product::<usize>();
        let transfers = session.last_transfers();
        assert_eq!(
            (transfers.input_bytes, transfers.output_bytes),
            (0, output_bytes)
        );
        match &read_back[..] {
            [crate::engine::Output::Host(t)] => close(t, &expected),
            _ => panic!("one output, read back to the host"),
        }
    }

    pub fn weights_are_uploaded_once_per_session<B: Backend>() {
        if !B::device_here() {
            return;
        }
        // The classifier takes any batch size: two signatures, two plans, one copy of the
        // weights.
        let dir = text_orientation();
        let session = load::<B>(&dir, false).unwrap();
        let x = read(&dir, "input").remove(0);
        let mut shape = x.shape().to_vec();
        shape[0] = 2;
        let batch_of_two = Tensor::zeros(x.dtype(), shape).unwrap();
        session.run(vec![x]).unwrap();
        let after_first = session.uploaded_weight_bytes();
        assert!(after_first > 0);
        session.run(vec![batch_of_two]).unwrap();
        // The second plan adds only constants that depend on the new shapes (tract folds some
        // shape-dependent tensors into constants); the weights themselves are not uploaded
        // again.
        let added = session.uploaded_weight_bytes() - after_first;
        assert!(
            added * 20 < after_first,
            "a second plan uploaded {added} more bytes of constants than the first plan's {after_first}"
        );
    }

    /// What `nonzero_stages.onnx` gives for `x` (see its generator): doubled, positions,
    /// picked, big_positions.
    fn nonzero_stages_expected(x: &[f32]) -> Vec<Tensor> {
        let positive: Vec<usize> = (0..x.len()).filter(|&i| x[i] > 0.0).collect();
        let n = positive.len();
        let mut positions = vec![0i64; 2 * n];
        for (k, &i) in positive.iter().enumerate() {
            positions[k] = (i / 16) as i64;
            positions[n + k] = (i % 16) as i64;
        }
        let picked: Vec<f32> = positive.iter().map(|&i| x[i]).collect();
        let big: Vec<i64> = (0..n as i64)
            .filter(|&k| picked[k as usize] > 1.0)
            .collect();
        vec![
            Tensor::from_vec(vec![16, 16], x.iter().map(|v| v * 2.0).collect()).unwrap(),
            Tensor::from_vec(vec![2, n], positions).unwrap(),
            Tensor::from_vec(vec![n], picked).unwrap(),
            Tensor::from_vec(vec![1, big.len()], big).unwrap(),
        ]
    }

    pub fn shapes_that_depend_on_values_run_in_stages<B: Backend>() {
        if !B::device_here() {
            return;
        }
        // Planning later stages keeps a last net for tract's passes: it must never catch.
        install_panic_counter();
        let panics_before = panics_seen_on_this_thread();
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tessera-core/tests/data/control_flow/nonzero_stages.onnx");
        let model = Arc::new(Model::load(path).unwrap());
        // Strict placement: every stage runs on the device.
        let session = B::open(model, false).unwrap();
        let patterns: [fn(usize) -> f32; 4] = [
            |i| ((i * 7) % 11) as f32 * 0.3 - 1.2,
            |i| if i % 5 == 0 { 2.5 } else { -1.0 },
            |_| -0.5,
            // The first pattern again: its later stages come from the session's cache.
            |i| ((i * 7) % 11) as f32 * 0.3 - 1.2,
        ];
        for pattern in patterns {
            let x: Vec<f32> = (0..256).map(pattern).collect();
            let input = Tensor::from_vec(vec![16, 16], x.clone()).unwrap();
            let outputs = session.run(vec![input.clone()]).unwrap();
            let expected = nonzero_stages_expected(&x);
            assert_eq!(outputs.len(), expected.len());
            for (actual, expected) in outputs.iter().zip(&expected) {
                // Integers and copied floats: exact.
                assert_eq!(actual, expected);
            }
            // Two NonZero, one on the other's result: three stages; when the first counts
            // nothing, the second's input is empty and its count known when planning.
            let n = expected[1].shape()[1];
            let stages = if n == 0 { 2 } else { 3 };
            // Across: the input, the outputs, and a count per stage but the last (one 32-bit
            // word each).
            let transfers = session.last_transfers();
            let output_bytes: usize = outputs.iter().map(|t| t.len() * 4).sum();
            assert_eq!(
                (
                    transfers.input_bytes,
                    transfers.output_bytes,
                    transfers.fallback_bytes
                ),
                (256 * 4, output_bytes, 0)
            );
            assert_eq!(transfers.count_bytes, 4 * (stages - 1), "{transfers:?}");

            let report = session.report(std::slice::from_ref(&input)).unwrap();
            assert_eq!(report.stages().count(), stages);
            assert!(report.stages().all(|s| s.placement.host_steps() == 0));
            let rendered = report.render();
            assert!(
                rendered.contains(&format!("stage 2, planned for 'positions' (NonZero) = {n}")),
                "{rendered}"
            );
            let copies = report.copy_placements();
            let counts = copies
                .iter()
                .filter(|c| c.cause == CopyCause::Count)
                .count();
            let uploads: usize = (copies.iter())
                .filter(|c| c.direction == TransferDirection::HostToDevice)
                .map(|c| c.bytes)
                .sum();
            let read_back: usize = (copies.iter())
                .filter(|c| c.direction == TransferDirection::DeviceToHost)
                .filter(|c| c.cause == CopyCause::InputOutput)
                .map(|c| c.bytes)
                .sum();
            assert_eq!(
                (counts, uploads, read_back),
                (stages - 1, 256 * 4, output_bytes),
                "{copies:?}"
            );
        }
        let error = session
            .trace(&[Tensor::zeros(DType::F32, vec![16, 16]).unwrap()])
            .expect_err("a staged model has no single plan to trace");
        assert!(error.to_string().contains("runs in stages"), "{error}");

        // A TopK whose k is computed (the number of positive values): k read back, the TopK
        // planned for it.
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tessera-core/tests/data/control_flow/topk_stages.onnx");
        let session = B::open(Arc::new(Model::load(path).unwrap()), false).unwrap();
        for offset in [1.2f32, 0.0, 5.0] {
            let x: Vec<f32> = (0..64)
                .map(|i| ((i * 7) % 11) as f32 * 0.3 - offset)
                .collect();
            let outputs = session
                .run(vec![Tensor::from_vec(vec![64], x.clone()).unwrap()])
                .unwrap();
            let mut order: Vec<usize> = (0..64).collect();
            order.sort_by(|&a, &b| x[b].total_cmp(&x[a]));
            order.truncate(x.iter().filter(|&&v| v > 0.0).count());
            let values: Vec<f32> = order.iter().map(|&i| x[i]).collect();
            let indices: Vec<i64> = order.iter().map(|&i| i as i64).collect();
            assert_eq!(outputs[0].as_slice::<f32>().unwrap(), values.as_slice());
            assert_eq!(outputs[1].as_slice::<i64>().unwrap(), indices.as_slice());
            assert_eq!(session.last_transfers().count_bytes, 4, "k, one word");
        }
        // A computed k past the axis: an error naming the TopK, as on cpu, not a panic.
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tessera-core/tests/data/control_flow/topk_past_the_axis.onnx");
        let session = B::open(Arc::new(Model::load(path).unwrap()), false).unwrap();
        let x: Vec<f32> = (0..64).map(|i| ((i * 7) % 11) as f32 * 0.3 - 1.2).collect();
        let error = session
            .run(vec![Tensor::from_vec(vec![64], x).unwrap()])
            .expect_err("k = 95 along an axis of 64");
        let message = error.to_string();
        assert!(
            message.contains("'top'") && message.contains("at most 64"),
            "{message}"
        );
        assert_eq!(
            panics_seen_on_this_thread(),
            panics_before,
            "a panic in a staged run"
        );
    }

    pub fn int64_inputs_outside_32_bits_are_refused<B: Backend>() {
        if !B::device_here() {
            return;
        }
        // int64 tensors are held as i32 words, and values that do not fit are an error, not a
        // silent wrap.
        let dir = node_case("test_abs");
        let session = load::<B>(&dir, false).unwrap();
        let ids = Tensor::from_vec(vec![2], vec![1i64, 1 << 40]).unwrap();
        let error = session
            .upload(&ids)
            .expect_err("2^40 does not fit in 32 bits");
        assert!(
            error.to_string().contains("outside the 32-bit range"),
            "{error}"
        );
    }
}

/// `#[test]`s running the [`sessions`] suite for `$backend` (a [`sessions::Backend`]).
#[macro_export]
macro_rules! gpu_session_tests {
    ($backend:ty) => {
        #[test]
        fn strict_placement_names_every_op_without_a_kernel() {
            $crate::testing::sessions::strict_placement_names_every_op_without_a_kernel::<$backend>(
            );
        }
        #[test]
        fn fallback_runs_on_the_host_and_counts_every_copy() {
            $crate::testing::sessions::fallback_runs_on_the_host_and_counts_every_copy::<$backend>(
            );
        }
        #[test]
        fn a_run_copies_only_its_inputs_and_outputs() {
            $crate::testing::sessions::a_run_copies_only_its_inputs_and_outputs::<$backend>();
        }
        #[test]
        fn device_tensors_chain_runs_without_host_copies() {
            $crate::testing::sessions::device_tensors_chain_runs_without_host_copies::<$backend>();
        }
        #[test]
        fn weights_are_uploaded_once_per_session() {
            $crate::testing::sessions::weights_are_uploaded_once_per_session::<$backend>();
        }
        #[test]
        fn shapes_that_depend_on_values_run_in_stages() {
            $crate::testing::sessions::shapes_that_depend_on_values_run_in_stages::<$backend>();
        }
        #[test]
        fn int64_inputs_outside_32_bits_are_refused() {
            $crate::testing::sessions::int64_inputs_outside_32_bits_are_refused::<$backend>();
        }
    };
}
