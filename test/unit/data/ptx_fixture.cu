// test/unit/data/ptx_fixture.cu — the source of ptx_fixture.fatbin (test_ptx.c):
//   nvcc -fatbin -arch=sm_90 -o ptx_fixture.fatbin ptx_fixture.cu   (nvcc 13.0)
// nvcc 13.0 puts the sm_90 ELF and the compute_90 PTX (zstd-compressed) in it.
__device__ unsigned done;
__constant__ float scale[4];
__global__ void fsum(const float *x, float *out) { atomicAdd(out, x[threadIdx.x] * scale[0]); }
__global__ void worklist(const int *x, int *out, int *n) {
  int v = x[threadIdx.x];
  if (v > 0) out[atomicAdd(n, 1)] = v;
}
__global__ void lastblock(const float *x, float *part, float *out) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    part[blockIdx.x] = x[blockIdx.x];
    __threadfence();
    last = atomicInc(&done, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) {
    float s = 0;
    for (int b = 0; b < gridDim.x; b++) s += part[b];
    *out = s;
  }
}
