// NonZero into a buffer sized for the largest result, in one workgroup (which keeps the
// elements' order): first the count, then the input 64 elements at a time, each non-zero
// element writing its coordinates at its rank among them (an inclusive scan of the 64 flags).
// The coordinates are laid out [rank, count] at the front of `coords` (i64 as i32 words); `counted`
// gets the count. TS_T: the element word.
// params: [n, rank, dims[rank]]
__shared__ u32 flags[64];

struct Kernel {
    const u32* params;
    TS_T* x;
    i32* coords;
    i32* counted;

    static constexpr u32 GROUP_SIZE = 64u;

    __device__ void main_body(u32 lid) {
        const auto n = params[0];
        const auto rank = params[1];
        auto mine = 0u;
        for (auto i = lid; i < n; i += GROUP_SIZE) {
            if (x[i] != (TS_T)0) { mine += 1u; }
        }
        flags[lid] = mine;
        __syncthreads();
        for (auto width = GROUP_SIZE / 2u; width > 0u; width = width / 2u) {
            if (lid < width) { flags[lid] += flags[lid + width]; }
            __syncthreads();
        }
        const auto total = flags[0];
        __syncthreads();
        if (lid == 0u) { counted[0] = (i32)total; }

        auto before = 0u;
        for (auto start = 0u; start < n; start += GROUP_SIZE) {
            const auto i = start + lid;
            auto flag = 0u;
            if (i < n && x[i] != (TS_T)0) { flag = 1u; }
            flags[lid] = flag;
            __syncthreads();
            for (auto offset = 1u; offset < GROUP_SIZE; offset = offset * 2u) {
                auto add = 0u;
                if (lid >= offset) { add = flags[lid - offset]; }
                __syncthreads();
                flags[lid] += add;
                __syncthreads();
            }
            if (flag == 1u) {
                const auto at = before + flags[lid] - 1u;
                auto rest = i;
                for (auto axis = rank; axis > 0u; axis--) {
                    const auto dim = params[1u + axis];
                    coords[(axis - 1u) * total + at] = (i32)(rest % dim);
                    rest = rest / dim;
                }
            }
            before += flags[GROUP_SIZE - 1u];
            __syncthreads();
        }
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_T* x, i32* coords, i32* counted) {
    Kernel kernel{params, x, coords, counted};
    kernel.main_body(threadIdx.x);
}
