// (Log-)softmax of f32 x over rows: y = exp(x - max) / sum(exp(x - max)), or with `log`
// x - max - ln(sum(exp(x - max))). The max ignores NaNs, as the reference does.
// A row's elements are spread over `threads_per_row` lanes (a power of two <= 64; 64 / it rows
// per workgroup), combined in workgroup memory. Workgroups loop over the rows' blocks.
// params: [rows, row_size, threads_per_row, log (0 / 1), kept_rank, reduced_rank,
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
        const auto log_softmax = params[3] != 0u;
        const auto lane = lid % lanes;
        const auto first = lid - lane;
        const auto per_group = GROUP_SIZE / lanes;
        const auto blocks = (rows + per_group - 1u) / per_group;
        for (auto block = wid.y * nwg.x + wid.x; block < blocks; block += nwg.x * nwg.y) {
            const auto g = block * per_group + lid / lanes;
            const auto live = g < rows;
            auto base = 0u;
            if (live) { base = row_base(g); }

            auto row_max = bitcast<f32>(0xff800000u);
            if (live) {
                for (auto j = lane; j < size; j += lanes) {
                    const auto v = x[base + row_offset(j)];
                    if (v > row_max) { row_max = v; }
                }
            }
            shared_value[lid] = row_max;
            __syncthreads();
            for (auto step = lanes / 2u; step > 0u; step = step / 2u) {
                if (lane < step && shared_value[lid + step] > shared_value[lid]) {
                    shared_value[lid] = shared_value[lid + step];
                }
                __syncthreads();
            }
            row_max = shared_value[first];
            __syncthreads();

            auto sum = 0.0f;
            if (live) {
                for (auto j = lane; j < size; j += lanes) {
                    sum += expf(x[base + row_offset(j)] - row_max);
                }
            }
            shared_value[lid] = sum;
            __syncthreads();
            for (auto step = lanes / 2u; step > 0u; step = step / 2u) {
                if (lane < step) {
                    shared_value[lid] += shared_value[lid + step];
                }
                __syncthreads();
            }
            sum = shared_value[first];
            __syncthreads();

            if (live) {
                const auto log_sum = logf(sum);
                for (auto j = lane; j < size; j += lanes) {
                    const auto at = base + row_offset(j);
                    const auto shifted = x[at] - row_max;
                    y[at] = select(expf(shifted) / sum, shifted - log_sum, log_softmax);
                }
            }
        }
    }
};

extern "C" __global__ void tessera_main(const u32* params, f32* x, f32* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
