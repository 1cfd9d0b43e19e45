// bench/own_kernels.cu — kcheck's own comparison kernels on the GPU, beside a
// device-to-device copy of the same bytes (events, best of 5), and the L2
// flush: how long a read of a buffer takes right after reading it (warm),
// after kc_flush_l2's writes of 2 x L2 and after lighter sweeps. Also checks
// that kc_hash_table, the fused kc_compare_table hash and the save's
// kc_copy_hash_table give the value of region_hash.h computed on the host
// (the CPU stand-in's definition), that the save copies exactly, and that
// changes a linear hash cancels (two sign-bit flips) change the hash.
// Both chunk sizes of cmp_table.h are timed. Last, a hash's host round
// trip (launch to result on the host, median of 200) with its sums copied
// back (cudaMemcpyAsync) and published by its last block into mapped host
// memory (publish_sums), beside an empty launch's and the host time of
// single calls, and that the published sums are the copied ones launch
// after launch with no memset between them (the last block leaves its
// slots zeroed).
// Usage: own_kernels [MiB ...]   (default 8 64 256)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "../libkcheck/exec/kernels/perturb_kernels.cu"

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));          \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static int sms;

static void host_hash(const unsigned *a, unsigned long long words, unsigned long long seed,
                      unsigned long long h[2]) {
  h[0] = h[1] = 0;
  kc_rh_region(a, words, seed, h);
}

static unsigned long long chunk = KC_CMP_CHUNK_SMALL; // words, for one()

static kc_cmp_table one(const void *a, const void *b, unsigned long long words) {
  kc_cmp_table t;
  memset(&t, 0, sizeof t);
  t.n = 1;
  t.a[0] = (unsigned long long)a;
  t.b[0] = (unsigned long long)b;
  t.words[0] = words;
  t.chunk = chunk;
  t.start[1] = (words + chunk - 1) / chunk;
  return t;
}

static unsigned grid_for(const kc_cmp_table &t) {
  unsigned long long c = t.start[t.n];
  return c < 8ull * sms ? (unsigned)c : 8u * sms;
}

// kind: 0 copy, 1 compare, 2 compare+hash, 3 hash, 4 copy+hash (the save)
static float time_one(int kind, unsigned *a, unsigned *b, unsigned long long words,
                      unsigned long long *slots) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  kc_cmp_table t = one(a, b, words);
  float best = 1e30f;
  for (int i = 0; i < 5; i++) {
    CK(cudaMemset(slots, 0, 64));
    CK(cudaEventRecord(e0));
    if (kind == 0) CK(cudaMemcpyAsync(b, a, 4 * words, cudaMemcpyDeviceToDevice));
    if (kind == 1) kc_compare_table<<<grid_for(t), 256>>>(t, slots, 0, nullptr);
    if (kind == 2) kc_compare_table<<<grid_for(t), 256>>>(t, slots, 7, slots + 2);
    if (kind == 3) kc_hash_table<<<grid_for(t), 256>>>(t, 7, slots, nullptr, nullptr);
    if (kind == 4) kc_copy_hash_table<<<grid_for(t), 256>>>(t, 7, slots, nullptr, nullptr);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (ms < best) best = ms;
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return best;
}

__global__ void read_sweep(const uint4 *p, unsigned long long n, unsigned *sink) {
  unsigned acc = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345679u) *sink = acc; // keeps the loads
}

static double now_us() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e6 * ts.tv_sec + 1e-3 * ts.tv_nsec;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

__global__ void empty_kernel() {}

// Host round trips of a hash of `kib` KiB: copied back, published, and an
// empty launch; 1 when a published result differs from the copied one.
static int round_trip(unsigned kib, cudaStream_t st, unsigned long long *slots, unsigned *done,
                      unsigned long long *pub_host, unsigned long long *pub_dev,
                      unsigned long long *pinned) {
  unsigned long long words = (unsigned long long)kib << 8;
  unsigned *a, *b;
  CK(cudaMalloc(&a, 4 * words));
  CK(cudaMalloc(&b, 4 * words));
  CK(cudaMemset(a, 0x5a, 4 * words));
  kc_cmp_table t = one(a, nullptr, words);
  // round trips, then the host time of single calls (the call alone)
  std::vector<double> copied, published, empty, c_hash, c_empty, c_memset, c_dtod, c_dtoh;
  int bad = 0;
  for (int i = 0; i < 200; i++) {
    unsigned long long seed = 1000 + i;
    CK(cudaMemsetAsync(slots, 0, 32, st));
    CK(cudaStreamSynchronize(st));
    double t0 = now_us();
    kc_hash_table<<<grid_for(t), 256, 0, st>>>(t, seed, slots, nullptr, nullptr);
    double t1 = now_us();
    CK(cudaMemcpyAsync(pinned, slots, 16, cudaMemcpyDeviceToHost, st));
    double t2 = now_us();
    CK(cudaStreamSynchronize(st));
    copied.push_back(now_us() - t0);
    c_hash.push_back(t1 - t0);
    c_dtoh.push_back(t2 - t1);
    t0 = now_us();
    CK(cudaMemsetAsync(slots + 4, 0, 16, st));
    c_memset.push_back(now_us() - t0);
    CK(cudaStreamSynchronize(st));
    // slots + 2 are never zeroed here but once at the start: the published
    // hash leaves them zeroed for the next
    t0 = now_us();
    kc_hash_table<<<grid_for(t), 256, 0, st>>>(t, seed, slots + 2, done, pub_dev);
    CK(cudaStreamSynchronize(st));
    published.push_back(now_us() - t0);
    bad |= pub_host[0] != pinned[0] || pub_host[1] != pinned[1];
    t0 = now_us();
    empty_kernel<<<1, 32, 0, st>>>();
    t1 = now_us();
    CK(cudaStreamSynchronize(st));
    empty.push_back(now_us() - t0);
    c_empty.push_back(t1 - t0);
    t0 = now_us();
    CK(cudaMemcpyAsync(b, a, 4 * words, cudaMemcpyDeviceToDevice, st));
    c_dtod.push_back(now_us() - t0);
    CK(cudaStreamSynchronize(st));
  }
  printf("| %u | %u | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", kib, grid_for(t),
         median(copied), median(published), median(empty), median(c_hash), median(c_empty),
         median(c_memset), median(c_dtod), median(c_dtoh));
  CK(cudaFree(a));
  CK(cudaFree(b));
  return bad;
}

static int round_trips() {
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  unsigned long long *slots, *pinned, *pub_host, *pub_dev;
  unsigned *done;
  CK(cudaMalloc(&slots, 64));
  CK(cudaMemset(slots, 0, 64));
  CK(cudaMalloc(&done, 16));
  CK(cudaMemset(done, 0, 16));
  CK(cudaHostAlloc(&pinned, 4096, cudaHostAllocDefault));
  CK(cudaHostAlloc(&pub_host, 4096, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&pub_dev, pub_host, 0));
  printf("\nRound trips (launch to result on the host) and the host time of single calls, "
         "medians of 200, us:\n\n| hash KiB | blocks | hash + copy back + wait | hash published + "
         "wait | empty launch + wait | hash launch call (2 KiB table) | empty launch call | memset "
         "call | device copy call | copy back call |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:"
         "|---:|\n");
  int bad = 0;
  for (unsigned kib : {16u, 1024u, 8192u, 65536u})
    bad |= round_trip(kib, st, slots, done, pub_host, pub_dev, pinned);
  unsigned left = 1;
  unsigned long long after[2] = {1, 1};
  CK(cudaMemcpy(&left, done, 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(after, slots + 2, 16, cudaMemcpyDeviceToHost));
  bad |= left != 0 || after[0] || after[1];
  printf("  published sums = copied sums, block counter back at 0, slots left zeroed: %s\n",
         bad ? "FAIL" : "ok");
  CK(cudaFree(slots));
  CK(cudaFree(done));
  CK(cudaFreeHost(pinned));
  CK(cudaFreeHost(pub_host));
  CK(cudaStreamDestroy(st));
  return bad;
}

int main(int argc, char **argv) {
  int dev = 0, l2 = 0;
  CK(cudaSetDevice(dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  std::vector<int> sizes;
  for (int i = 1; i < argc; i++)
    sizes.push_back(atoi(argv[i]));
  if (sizes.empty()) sizes = {8, 64, 256};
  unsigned long long *slots;
  CK(cudaMalloc(&slots, 4096));
  int bad = 0;
  printf("sms %d, L2 %d MiB\n", sms, l2 >> 20);
  for (unsigned long long ch : {KC_CMP_CHUNK_SMALL, KC_CMP_CHUNK_LARGE}) {
  chunk = ch;
  printf("\nchunks of %llu KiB\n\n", ch / 256);
  printf("| MiB | copy ms | GB/s | compare ms | x copy | compare+hash ms | x copy | hash ms | x copy "
         "| copy+hash ms | x copy |\n");
  printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int mib : sizes) {
    unsigned long long words = (unsigned long long)mib << 18;
    unsigned *a, *b;
    CK(cudaMalloc(&a, 4 * words));
    CK(cudaMalloc(&b, 4 * words));
    std::vector<unsigned> h(words);
    srand(mib);
    for (auto &x : h)
      x = (unsigned)rand() * 2654435761u;
    CK(cudaMemcpy(a, h.data(), 4 * words, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, a, 4 * words, cudaMemcpyDeviceToDevice));
    float c = time_one(0, a, b, words, slots), k = time_one(1, a, b, words, slots),
          kh = time_one(2, a, b, words, slots), hh = time_one(3, a, b, words, slots),
          ch = time_one(4, a, b, words, slots);
    printf("| %d | %.4f | %.0f | %.4f | %.2f | %.4f | %.2f | %.4f | %.2f | %.4f | %.2f |\n", mib,
           c, 2e-6 * 4 * words / c, k, k / c, kh, kh / c, hh, hh / c, ch, ch / c);
    // correctness: device hash == host definition, fused == separate
    unsigned long long dv[4], hv[2];
    kc_cmp_table t = one(a, b, words);
    CK(cudaMemset(slots, 0, 64));
    kc_hash_table<<<grid_for(t), 256>>>(t, 0xabcdefull + mib, slots, nullptr, nullptr);
    kc_compare_table<<<grid_for(t), 256>>>(t, slots + 4, 0xabcdefull + mib, slots + 2);
    CK(cudaMemcpy(dv, slots, 32, cudaMemcpyDeviceToHost));
    host_hash(h.data(), words, 0xabcdefull + mib, hv);
    int ok = dv[0] == hv[0] && dv[1] == hv[1] && dv[2] == hv[0] && dv[3] == hv[1];
    // an odd word count and an unaligned start take the word-by-word loads
    unsigned long long odd = words - 3;
    kc_cmp_table u = one(a + 1, b + 1, odd);
    CK(cudaMemset(slots, 0, 64));
    kc_hash_table<<<grid_for(u), 256>>>(u, 99, slots, nullptr, nullptr);
    CK(cudaMemcpy(dv, slots, 16, cudaMemcpyDeviceToHost));
    host_hash(h.data() + 1, odd, 99, hv);
    ok = ok && dv[0] == hv[0] && dv[1] == hv[1];
    // two sign-bit flips in odd words (what cancelled in the pair hash)
    unsigned flip[2] = {h[1] ^ 0x80000000u, h[3] ^ 0x80000000u};
    CK(cudaMemcpy(b + 1, &flip[0], 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b + 3, &flip[1], 4, cudaMemcpyHostToDevice));
    kc_cmp_table f = one(b, a, words);
    CK(cudaMemset(slots, 0, 64));
    kc_hash_table<<<grid_for(f), 256>>>(f, 5, slots, nullptr, nullptr);
    kc_hash_table<<<grid_for(t), 256>>>(t, 5, slots + 2, nullptr, nullptr);
    kc_compare_table<<<grid_for(f), 256>>>(f, slots + 4, 0, nullptr);
    unsigned long long r[6];
    CK(cudaMemcpy(r, slots, 48, cudaMemcpyDeviceToHost));
    ok = ok && (r[0] != r[2] || r[1] != r[3]) && r[4] == 2 && ~r[5] == 1;
    // the save: copy+hash of an unaligned odd-length region copies it
    // exactly (the word after it untouched) and hashes it as defined
    CK(cudaMemset(b, 0, 4 * words));
    CK(cudaMemset(slots, 0, 64));
    kc_cmp_table s = one(a + 1, b + 1, odd);
    kc_copy_hash_table<<<grid_for(s), 256>>>(s, 99, slots, nullptr, nullptr);
    std::vector<unsigned> back(words);
    CK(cudaMemcpy(back.data(), b, 4 * words, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(dv, slots, 16, cudaMemcpyDeviceToHost));
    int copied = back[0] == 0 && back[words - 1] == 0 &&
                 !memcmp(back.data() + 1, h.data() + 1, 4 * odd);
    ok = ok && copied && dv[0] == hv[0] && dv[1] == hv[1];
    printf("  %d MiB: hash = host definition, fused = separate, unaligned tail, two sign flips "
           "seen, compare count 2 first 1, copy+hash copies and hashes: %s\n",
           mib, ok ? "ok" : "FAIL");
    bad |= !ok;
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  }
  // L2: a read of X (24 MiB) right after reading it, after the flush
  // variants; best of 5 each
  unsigned long long xw = 24ull << 18, fw = 2ull * l2 / 4;
  unsigned *x, *fb, *sink;
  CK(cudaMalloc(&x, 4 * xw));
  CK(cudaMalloc(&fb, 4 * fw));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(x, 1, 4 * xw));
  CK(cudaMemset(fb, 0, 4 * fw));
  const char *names[] = {"warm (X read just before)", "kc_flush_l2, 2 x L2 written",
                         "1 x L2 written", "1 x L2 read", "1.5 x L2 read", "2 x L2 read"};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  printf("\n| before reading X (24 MiB) | X read ms | flush ms |\n|---|---:|---:|\n");
  for (int v = 0; v < 6; v++) {
    float best = 1e30f, fbest = 1e30f;
    for (int i = 0; i < 5; i++) {
      read_sweep<<<4 * sms, 512>>>((const uint4 *)x, xw / 4, sink);
      CK(cudaEventRecord(e0));
      if (v == 1) kc_flush_l2<<<4 * sms, 1024>>>(fb, fw);
      if (v == 2) kc_flush_l2<<<4 * sms, 1024>>>(fb, fw / 2);
      if (v >= 3) read_sweep<<<4 * sms, 512>>>((const uint4 *)fb, fw / 4 * (v - 1) / 4, sink);
      CK(cudaEventRecord(e1));
      read_sweep<<<4 * sms, 512>>>((const uint4 *)x, xw / 4, sink);
      cudaEvent_t e2;
      CK(cudaEventCreate(&e2));
      CK(cudaEventRecord(e2));
      CK(cudaEventSynchronize(e2));
      float fms, rms;
      CK(cudaEventElapsedTime(&fms, e0, e1));
      CK(cudaEventElapsedTime(&rms, e1, e2));
      CK(cudaEventDestroy(e2));
      if (rms < best) best = rms;
      if (fms < fbest) fbest = fms;
    }
    printf("| %s | %.4f | %.4f |\n", names[v], best, fbest);
  }
  bad |= round_trips();
  printf("%s\n", bad ? "own_kernels: FAIL" : "own_kernels: ok");
  return bad;
}
