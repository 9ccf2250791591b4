// RMS normalization of f32 x along one axis: y = x / sqrt(mean(x^2) + eps) per row.
// A row's elements are spread over `threads_per_row` lanes (a power of two <= 64; 64 / it rows
// per workgroup), combined in workgroup memory. Workgroups loop over the rows' blocks.
// params: [rows, row_size, threads_per_row, eps (f32 bits), kept_rank, reduced_rank,
//          kept_dims[kept_rank], kept_strides[kept_rank], reduced_dims[reduced_rank],
//          reduced_strides[reduced_rank]]
// Element j of row g is at row_base(g) + row_offset(j) in x and y, both row-major over their dims.
__shared__ f32 shared_value[64];

struct Kernel {
    const u32* params;
    f32* x;
    f32* y;


    static constexpr u32 GROUP_SIZE = 64u;


    __device__ u32 row_base(u32 g) {
        const auto rank = params[4];
        auto rest = g;
        auto offset = 0u;
        for (auto axis = rank; axis > 0u; axis--) {
            const auto d = axis - 1u;
            const auto dim = params[6u + d];
            offset += (rest % dim) * params[6u + rank + d];
            rest = rest / dim;
        }
        return offset;
    }

    __device__ u32 row_offset(u32 j) {
        const auto rank = params[5];
        const auto at = 6u + 2u * params[4];
        if (rank == 1u) { return j * params[at + 1u]; }
        auto rest = j;
        auto offset = 0u;
        for (auto axis = rank; axis > 0u; axis--) {
            const auto d = axis - 1u;
            const auto dim = params[at + d];
            offset += (rest % dim) * params[at + rank + d];
            rest = rest / dim;
        }
        return offset;
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto rows = params[0];
        const auto size = params[1];
        const auto lanes = params[2];
        const auto eps = param_f32(3u);
        const auto lane = lid % lanes;
        const auto first = lid - lane;
        const auto per_group = GROUP_SIZE / lanes;
        const auto blocks = (rows + per_group - 1u) / per_group;
        for (auto block = wid.y * nwg.x + wid.x; block < blocks; block += nwg.x * nwg.y) {
            const auto g = block * per_group + lid / lanes;
            const auto live = g < rows;
            auto base = 0u;
            if (live) { base = row_base(g); }
            auto squares = 0.0f;
            if (live) {
                for (auto j = lane; j < size; j += lanes) {
                    const auto v = x[base + row_offset(j)];
                    squares += v * v;
                }
            }
            shared_value[lid] = squares;
            __syncthreads();
            for (auto step = lanes / 2u; step > 0u; step = step / 2u) {
                if (lane < step) {
                    shared_value[lid] += shared_value[lid + step];
                }
                __syncthreads();
            }
            const auto scale = inverseSqrt(shared_value[first] / f32(size) + eps);
            __syncthreads();
            if (live) {
                for (auto j = lane; j < size; j += lanes) {
                    const auto at = base + row_offset(j);
                    y[at] = x[at] * scale;
                }
            }
        }
    }
};

extern "C" __global__ void tessera_main(const u32* params, f32* x, f32* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
