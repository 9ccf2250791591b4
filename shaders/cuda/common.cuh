// Prepended to every Tessera CUDA kernel (compiled at run time by NVRTC, no headers needed).
//
// Conventions (see crates/tessera-cuda/src/kernels/mod.rs), the same as shaders/wgsl:
// - the entry point is `extern "C" __global__ void tessera_main(params, tensors...)`: `params`
//   holds the launch's u32 parameters (shapes, strides, f32 bit patterns), then the step's
//   tensors, inputs first, then outputs; every element is one 32-bit word;
// - blocks have 64 threads; 1-D kernels run over a grid that may be 2-D: use `thread_index`
//   and return when it is past the element count.
// - a kernel's body is a struct holding `params` and the tensors, so helper functions read them
//   like the WGSL globals they mirror. Template values come as `TS_<NAME>` macros.

typedef float f32;
typedef int i32;
typedef unsigned int u32;

#define WORKGROUP 64u

#define param_f32(ix) (__uint_as_float(params[(ix)]))
#define param_i32(ix) ((i32)params[(ix)])

__device__ __forceinline__ u32 thread_index(uint3 wid, u32 lid, uint3 nwg) {
    return (wid.y * nwg.x + wid.x) * WORKGROUP + lid;
}

// WGSL's select(f, t, c).
template <class A, class B>
__device__ __forceinline__ auto select(A f, B t, bool c) {
    return c ? t : f;
}

template <class To, class From>
__device__ __forceinline__ To bitcast(From x) {
    static_assert(sizeof(To) == sizeof(From), "bitcast between types of different sizes");
    union { From from; To to; } bits;
    bits.from = x;
    return bits.to;
}

template <class T>
__device__ __forceinline__ T w_clamp(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }
__device__ __forceinline__ f32 w_clamp(f32 x, f32 lo, f32 hi) { return fminf(fmaxf(x, lo), hi); }
template <class T>
__device__ __forceinline__ T w_min(T a, T b) { return b < a ? b : a; }
__device__ __forceinline__ f32 w_min(f32 a, f32 b) { return fminf(a, b); }
template <class T>
__device__ __forceinline__ T w_max(T a, T b) { return a < b ? b : a; }
__device__ __forceinline__ f32 w_max(f32 a, f32 b) { return fmaxf(a, b); }
__device__ __forceinline__ f32 w_abs(f32 x) { return fabsf(x); }
__device__ __forceinline__ i32 w_abs(i32 x) { return x < 0 ? -x : x; }
__device__ __forceinline__ u32 w_abs(u32 x) { return x; }
__device__ __forceinline__ f32 w_sign(f32 x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }
__device__ __forceinline__ i32 w_sign(i32 x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }
__device__ __forceinline__ f32 inverseSqrt(f32 x) { return rsqrtf(x); }

// Narrow integer types live in 32-bit words; these keep results at their width.
__device__ __forceinline__ u32 wrap_u8(u32 x) { return x & 0xffu; }
__device__ __forceinline__ u32 wrap_u16(u32 x) { return x & 0xffffu; }
__device__ __forceinline__ i32 wrap_i8(i32 x) { return (i32)((u32)x << 24u) >> 24u; }
__device__ __forceinline__ i32 wrap_i16(i32 x) { return (i32)((u32)x << 16u) >> 16u; }
__device__ __forceinline__ u32 wrap_bool(u32 x) { return x != 0u ? 1u : 0u; }

// An index word along an axis of `dim` (i64 indices are i32 words): when `is_signed`, a negative
// i32 counts from the end. Anything still outside 0..dim gives `dim`.
__device__ __forceinline__ u32 resolve_index(u32 w, bool is_signed, u32 dim) {
    u32 ix = w;
    if (is_signed && (i32)w < 0) {
        ix = w + dim;
    }
    return ix < dim ? ix : dim;
}
