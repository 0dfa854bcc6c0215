// CSR sparse matrix-vector product y = A x, one warp per row.
//
// Compiled on the client (no GPU needed):
//   assay compile spmv.cu --arch sm_90 -o spmv.cubin
// and run by the server as a `cubin` job (see spmv_job.json and run.sh).
//
// Why one warp per row (the "vector" CSR kernel) rather than one thread per
// row (scalar CSR): with one thread per row, the 32 threads of a warp walk 32
// different rows, so each load of values[] and col_idx[] touches 32 scattered
// cache lines and the warp waits for its longest row. With a warp per row, the
// lanes read consecutive elements of one row, so those loads are coalesced
// (128 bytes per warp-wide load), and the row's partial sums are combined with
// warp shuffles. It wins when rows hold tens of nonzeros or more (the example's
// matrix has 16..48 per row); for rows of a handful of nonzeros, scalar CSR or
// a few rows per warp would waste fewer lanes.
//
// Contract (spmv_job.json): rows and nnz are i32 scalars; row_ptr [rows+1] i32,
// col_idx [nnz] i32, values [nnz] f32, x [rows] f32 (the matrix is square), y
// [rows] f32 out. Launch: block 256 (8 warps, so 8 rows per block), grid
// ceil_div(rows, 8). blockDim.x must be a multiple of 32.
extern "C" __global__ void spmv_csr(int rows, int nnz, const int* __restrict__ row_ptr,
                                    const int* __restrict__ col_idx, const float* __restrict__ values,
                                    const float* __restrict__ x, float* __restrict__ y) {
  const int row = static_cast<int>((blockIdx.x * static_cast<unsigned>(blockDim.x) + threadIdx.x) / 32);
  const int lane = threadIdx.x % 32;
  // The whole warp shares `row`, so it leaves together and the shuffles below
  // always run with all 32 lanes.
  if (row >= rows) return;
  const int begin = row_ptr[row], end = row_ptr[row + 1];
  float sum = 0.f;
  for (int k = begin + lane; k < end; k += 32) sum += values[k] * x[col_idx[k]];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = sum;
  (void)nnz;  // part of the contract: it sizes col_idx and values
}
