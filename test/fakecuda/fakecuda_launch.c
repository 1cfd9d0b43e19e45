/* test/fakecuda/fakecuda_launch.c — code and launches in the CPU stand-in
 * driver: text module images bound to registered C kernels, modules and
 * libraries, CUfunction vs CUkernel handles, parameter packing, and the
 * block scheduler whose order depends on the perturbation knobs. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakecuda_int.h"

/* --------------------------------------------------------- param layout */

static size_t param_align(const struct fk_kernel_def *d, unsigned i) {
  if (d->align[i]) return d->align[i];
  size_t a = 8;
  while (a > 1 && d->size[i] % a)
    a /= 2;
  return a;
}

size_t fk_param_offset(const struct fk_kernel_def *d, unsigned i) {
  size_t off = 0;
  for (unsigned k = 0; k <= i && k < d->nparams; k++) {
    size_t a = param_align(d, k);
    off = (off + a - 1) / a * a;
    if (k < i) off += d->size[k];
  }
  return off;
}

size_t fk_param_total(const struct fk_kernel_def *d) {
  if (d->nparams == 0) return 0;
  return fk_param_offset(d, d->nparams - 1) + d->size[d->nparams - 1];
}

CUresult fk_pack_params(const struct fk_kernel_def *def, void **params, void **extra,
                        unsigned char **out, size_t *out_size) {
  size_t total = fk_param_total(def);
  if (params != NULL && extra != NULL) return CUDA_ERROR_INVALID_VALUE;
  unsigned char *buf = calloc(1, total ? total : 1);
  if (buf == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  if (params != NULL) {
    for (unsigned i = 0; i < def->nparams; i++) {
      if (params[i] == NULL) {
        free(buf);
        return CUDA_ERROR_INVALID_VALUE;
      }
      memcpy(buf + fk_param_offset(def, i), params[i], def->size[i]);
    }
  } else if (extra != NULL) {
    const void *p = NULL;
    size_t n = 0;
    int have_size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        p = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        n = *(const size_t *)extra[i + 1];
        have_size = 1;
      } else {
        free(buf);
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (total && (p == NULL || !have_size || n < total)) {
      free(buf);
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (total) memcpy(buf, p, total);
  } else if (def->nparams > 0) {
    free(buf);
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = buf;
  *out_size = total;
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ scheduler */

/* One lock serialises all kernel execution: the SM shared-memory buffers
 * and the occupier are device-wide, and blocks of one launch never overlap. */
static pthread_mutex_t exec_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *sm_buf[FK_MAX_SMS];
static __thread CUstream tls_launch_stream;

static struct {
  int active;
  unsigned count;
  unsigned char sm[FK_MAX_SMS];
  volatile unsigned *release;
  unsigned long long seed;
  CUstream stream;
} occ;

static CUstream norm_stream(CUstream h) { return h == CU_STREAM_LEGACY ? NULL : h; }

/* Called from the kc_occupier kernel, exec_lock held. */
void fk_occupier_take(unsigned smid, volatile unsigned *release, unsigned long long seed) {
  if (smid >= FK_MAX_SMS) return;
  occ.active = 1;
  if (!occ.sm[smid]) {
    occ.sm[smid] = 1;
    occ.count++;
  }
  occ.release = release;
  occ.seed = seed;
  occ.stream = norm_stream(tls_launch_stream);
}

static void occ_clear(void) { memset(&occ, 0, sizeof occ); }

/* exec_lock held. */
static void occ_check_locked(void) {
  if (!occ.active || occ.release == NULL) return;
  if (!fk_mem_valid((CUdeviceptr)(uintptr_t)occ.release, sizeof(unsigned))) {
    occ_clear(); /* its flag was freed: the occupier cannot still be spinning */
    return;
  }
  if (*occ.release != 0) occ_clear();
}

void fk_occupier_check(void) {
  pthread_mutex_lock(&exec_lock);
  occ_check_locked();
  pthread_mutex_unlock(&exec_lock);
}

void fk_occupier_release_stream(CUstream h) {
  pthread_mutex_lock(&exec_lock);
  if (occ.active && occ.stream == norm_stream(h)) occ_clear();
  pthread_mutex_unlock(&exec_lock);
}

void fk_occupier_release_all(void) {
  pthread_mutex_lock(&exec_lock);
  occ_clear();
  pthread_mutex_unlock(&exec_lock);
}

static unsigned long long mix(unsigned long long h, unsigned long long v) {
  /* splitmix64 over the running hash */
  unsigned long long z = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static unsigned char *sm_shared(unsigned sm) {
  if (sm_buf[sm] == NULL) sm_buf[sm] = calloc(1, FK_SM_SHARED_BYTES);
  return sm_buf[sm];
}

/* Runs one launch's blocks; the caller validated the configuration. */
static CUresult execute(const struct fk_kernel_def *def, struct fk_ctx *ctx, const unsigned g[3],
                        const unsigned b[3], unsigned dyn, const unsigned char *args,
                        int cooperative) {
  void *ptrs[FK_MAX_PARAMS];
  for (unsigned i = 0; i < def->nparams; i++)
    ptrs[i] = (void *)(args + fk_param_offset(def, i));

  pthread_mutex_lock(&exec_lock);
  occ_check_locked();

  /* Available SMs: the context's, minus those a resident occupier holds
   * (unless it holds them all: then it would have to finish first). */
  static unsigned avail[FK_MAX_SMS];
  unsigned na = 0;
  for (unsigned s = ctx->sm_first; s < ctx->sm_first + ctx->nsm && s < FK_MAX_SMS; s++)
    if (!(occ.active && occ.sm[s])) avail[na++] = s;
  if (na == 0)
    for (unsigned s = ctx->sm_first; s < ctx->sm_first + ctx->nsm && s < FK_MAX_SMS; s++)
      avail[na++] = s;

  unsigned threads = b[0] * b[1] * b[2];
  size_t smem = def->static_shared + dyn;
  size_t stride = smem ? (smem + 1023) / 1024 * 1024 : 0;
  unsigned bps = 32;
  if (2048 / threads < bps) bps = 2048 / threads;
  if (stride && FK_SM_SHARED_BYTES / stride < bps) bps = (unsigned)(FK_SM_SHARED_BYTES / stride);
  if (bps == 0) bps = 1;
  unsigned long long total = (unsigned long long)g[0] * g[1] * g[2];
  unsigned long long wave = (unsigned long long)na * bps;
  if (cooperative && total > wave) {
    pthread_mutex_unlock(&exec_lock);
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }

  unsigned long long seed = mix(fk_g.order_seed, na);
  seed = mix(seed, bps);
  seed = mix(seed, ((unsigned long long)g[0] << 32) ^ g[1] ^ ((unsigned long long)g[2] << 48));
  seed = mix(seed, ((unsigned long long)b[0] << 32) ^ b[1] ^ ((unsigned long long)b[2] << 48));
  if (occ.active) seed = mix(mix(seed, occ.seed), occ.count);
  if (fk_g.order_jitter) seed = mix(seed, atomic_fetch_add(&fk_g.launch_counter, 1));

  unsigned long long *perm = malloc((size_t)(wave < total ? wave : total) * sizeof *perm);
  if (perm == NULL) {
    pthread_mutex_unlock(&exec_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  unsigned long long seq = 0;
  for (unsigned long long w0 = 0; w0 < total; w0 += wave) {
    unsigned long long n = total - w0 < wave ? total - w0 : wave;
    unsigned long long ws = mix(seed, w0 / wave + 1);
    for (unsigned long long i = 0; i < n; i++)
      perm[i] = i;
    /* Fisher-Yates with a splitmix stream: deterministic per seed. */
    unsigned long long r = ws;
    for (unsigned long long i = n; i > 1; i--) {
      r = mix(r, i);
      unsigned long long j = r % i;
      unsigned long long t = perm[i - 1];
      perm[i - 1] = perm[j];
      perm[j] = t;
    }
    unsigned rot = (unsigned)(mix(ws, 0x5eed) % na);
    for (unsigned long long k = 0; k < n; k++) {
      unsigned long long i = perm[k], lin = w0 + i;
      unsigned sm = avail[(i + rot) % na];
      unsigned slot = (unsigned)(i / na);
      unsigned char *base = sm_shared(sm);
      if (base == NULL) {
        free(perm);
        pthread_mutex_unlock(&exec_lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      struct fk_launch_ctx lc = {
          .blockIdx = {(unsigned)(lin % g[0]), (unsigned)(lin / g[0] % g[1]),
                       (unsigned)(lin / ((unsigned long long)g[0] * g[1]))},
          .gridDim = {g[0], g[1], g[2]},
          .blockDim = {b[0], b[1], b[2]},
          .shared = base + (size_t)slot * stride,
          .static_shared = def->static_shared,
          .dynamic_shared = dyn,
          .smid = sm,
          .nsm = na,
          .seq = seq,
      };
      seq++;
      def->fn(&lc, ptrs);
    }
  }
  free(perm);
  pthread_mutex_unlock(&exec_lock);
  fk_clock_advance(2000 + 20 * total);
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- launches */

struct fk_func *fk_func_of(CUfunction f) {
  if (f == NULL) return NULL;
  unsigned magic = *(unsigned *)f;
  if (magic == FK_MAGIC_FUNC) return (struct fk_func *)f;
  if (magic == FK_MAGIC_KERNEL) return ((struct fk_kernel *)f)->func;
  return NULL;
}

static CUresult check_config(const struct fk_func *fn, const unsigned g[3], const unsigned b[3],
                             unsigned shmem) {
  if (g[0] == 0 || g[1] == 0 || g[2] == 0 || b[0] == 0 || b[1] == 0 || b[2] == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (g[0] > 2147483647u || g[1] > 65535 || g[2] > 65535) return CUDA_ERROR_INVALID_VALUE;
  if (b[0] > 1024 || b[1] > 1024 || b[2] > 64) return CUDA_ERROR_INVALID_VALUE;
  if ((unsigned long long)b[0] * b[1] * b[2] > 1024) return CUDA_ERROR_INVALID_VALUE;
  if (shmem > (unsigned)fn->max_dyn_shared) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static CUresult launch_common(CUfunction f, const unsigned g[3], const unsigned b[3],
                              unsigned shmem, CUstream h, void **params, void **extra,
                              int cooperative, const unsigned cluster[3]) {
  struct fk_func *fn = fk_func_of(f);
  if (fn == NULL || fn->magic != FK_MAGIC_FUNC) return CUDA_ERROR_INVALID_HANDLE;
  CUresult rc = check_config(fn, g, b, shmem);
  if (rc != CUDA_SUCCESS) return rc;
  if (cluster && (g[0] % cluster[0] || g[1] % cluster[1] || g[2] % cluster[2]))
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  struct fk_stream *s;
  struct fk_ctx *ctx;
  rc = fk_resolve_stream(h, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  unsigned char *args;
  size_t nargs;
  rc = fk_pack_params(fn->def, params, extra, &args, &nargs);
  if (rc != CUDA_SUCCESS) return rc;
  int rec = fk_capturing(h, s, &rc);
  if (rc != CUDA_SUCCESS) {
    free(args);
    return rc;
  }
  if (rec) {
    struct fk_node n = {.kind = FK_NODE_KERNEL,
                        .func = fn,
                        .grid = {g[0], g[1], g[2]},
                        .block = {b[0], b[1], b[2]},
                        .shmem = shmem,
                        .args = args,
                        .args_size = nargs,
                        .value = (unsigned)cooperative};
    fk_graph_add(s->cap_graph, &n);
    return CUDA_SUCCESS;
  }
  tls_launch_stream = h;
  rc = execute(fn->def, ctx, g, b, shmem, args, cooperative);
  tls_launch_stream = NULL;
  free(args);
  return rc;
}

CUresult fk_run_node(const struct fk_node *n, struct fk_ctx *ctx) {
  if (n->kind != FK_NODE_KERNEL) return fk_run_memop(n);
  if (n->func->magic != FK_MAGIC_FUNC) return CUDA_ERROR_INVALID_HANDLE;
  return execute(n->func->def, ctx, n->grid, n->block, n->shmem, n->args, (int)n->value);
}

CUresult fk_launch(struct fk_func *fn, const unsigned grid[3], const unsigned block[3],
                   unsigned shmem, CUstream hstream, void **params, void **extra) {
  return launch_common((CUfunction)fn, grid, block, shmem, hstream, params, extra, 0, NULL);
}

#define DIMS(a, b, c) ((const unsigned[3]){(a), (b), (c)})

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                        void **extra) {
  FK_ENTER("cuLaunchKernel");
  return launch_common(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), shmem, s, params, extra, 0, NULL);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                             void **extra) {
  FK_ENTER("cuLaunchKernel_ptsz");
  return launch_common(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), shmem, s ? s : CU_STREAM_PER_THREAD,
                       params, extra, 0, NULL);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shmem, CUstream s,
                                   void **params) {
  FK_ENTER("cuLaunchCooperativeKernel");
  return launch_common(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), shmem, s, params, NULL, 1, NULL);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                        CUstream s, void **params);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                        CUstream s, void **params) {
  FK_ENTER("cuLaunchCooperativeKernel_ptsz");
  return launch_common(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), shmem, s ? s : CU_STREAM_PER_THREAD,
                       params, NULL, 1, NULL);
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra,
                          int ptsz) {
  if (c == NULL || (c->numAttrs && c->attrs == NULL)) return CUDA_ERROR_INVALID_VALUE;
  int coop = 0;
  unsigned cl[3] = {1, 1, 1};
  int have_cluster = 0;
  for (unsigned i = 0; i < c->numAttrs; i++) {
    const CUlaunchAttribute *a = &c->attrs[i];
    switch (a->id) {
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: coop = a->value.cooperative != 0; break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      cl[0] = a->value.clusterDim.x;
      cl[1] = a->value.clusterDim.y;
      cl[2] = a->value.clusterDim.z;
      if (!cl[0] || !cl[1] || !cl[2] || cl[0] * cl[1] * cl[2] > 8)
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
      have_cluster = 1;
      break;
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  CUstream s = c->hStream;
  if (ptsz && s == NULL) s = CU_STREAM_PER_THREAD;
  return launch_common(f, DIMS(c->gridDimX, c->gridDimY, c->gridDimZ),
                       DIMS(c->blockDimX, c->blockDimY, c->blockDimZ), c->sharedMemBytes, s, params,
                       extra, coop, have_cluster ? cl : NULL);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  FK_ENTER("cuLaunchKernelEx");
  return launch_ex(c, f, params, extra, 0);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  FK_ENTER("cuLaunchKernelEx_ptsz");
  return launch_ex(c, f, params, extra, 1);
}

/* -------------------------------------------------------- module images */

static int name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '.';
}

/* Binds name to its registered C kernel, if it has one (else leaves it
 * out, so cuModuleGetFunction says NOT_FOUND for it). */
static CUresult add_func(struct fk_module *m, const char *name) {
  const struct fk_kernel_def *def = fakecuda_find_kernel(name);
  if (def == NULL) return CUDA_SUCCESS;
  struct fk_func **fs = realloc(m->funcs, (m->nfuncs + 1) * sizeof *fs);
  struct fk_func *f = fk_new(sizeof *f);
  if (fs) m->funcs = fs;
  if (fs == NULL || f == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *f = (struct fk_func){.magic = FK_MAGIC_FUNC,
                        .def = def,
                        .mod = m,
                        .max_dyn_shared = (int)(FK_DEFAULT_SHARED - def->static_shared),
                        .carveout = -1};
  m->funcs[m->nfuncs++] = f;
  return CUDA_SUCCESS;
}

/* A cubin stand-in: an ELF64 image whose kernels are its `.text.NAME`
 * sections, as in nvcc's and Triton's cubins (no SASS runs here: each is
 * bound to its C kernel by name). Lets tests load code that carries no
 * PTX the way Triton does (cuModuleLoadData of an ELF). */
static int is_elf64(const unsigned char *u) {
  return u[0] == 0x7f && u[1] == 'E' && u[2] == 'L' && u[3] == 'F' && u[4] == 2;
}

static CUresult module_from_elf(const unsigned char *u, struct fk_module *m) {
  Elf64_Ehdr eh;
  memcpy(&eh, u, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum)
    return CUDA_ERROR_INVALID_IMAGE;
  Elf64_Shdr strtab;
  memcpy(&strtab, u + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof strtab, sizeof strtab);
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, u + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_name >= strtab.sh_size) return CUDA_ERROR_INVALID_IMAGE;
    const char *name = (const char *)u + strtab.sh_offset + sh.sh_name;
    if (strncmp(name, ".text.", 6)) continue;
    CUresult rc = add_func(m, name + 6);
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

/* Reads every `.entry NAME` of a text image (or the `.text.NAME` sections
 * of an ELF image); a name with no registered C kernel is left out. */
CUresult fk_module_from_image(const void *image, struct fk_module **out) {
  if (image == NULL || out == NULL) return CUDA_ERROR_INVALID_VALUE;
  const unsigned char *u = image;
  /* Real cubins (they hold no .text.NAME of a C kernel) and fatbins cannot
   * run on the CPU. */
  if ((u[0] == 0x7f && u[1] == 'E' && u[2] == 'L' && u[3] == 'F' && !is_elf64(u)) ||
      (u[0] == 0x50 && u[1] == 0xed && u[2] == 0x55 && u[3] == 0xba) ||
      (u[0] == 0xb1 && u[1] == 0x43 && u[2] == 0x62 && u[3] == 0x46))
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  struct fk_module *m = fk_new(sizeof *m);
  if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  m->magic = FK_MAGIC_MODULE;
  if (is_elf64(u)) {
    CUresult rc = module_from_elf(u, m);
    if (rc == CUDA_SUCCESS && m->nfuncs == 0) rc = CUDA_ERROR_NO_BINARY_FOR_GPU;
    if (rc != CUDA_SUCCESS) {
      fk_module_free(m);
      return rc;
    }
    *out = m;
    return CUDA_SUCCESS;
  }
  const char *text = image;
  size_t len = strlen(text);
  m->image = malloc(len + 1);
  if (m->image == NULL) {
    m->magic = FK_MAGIC_DEAD;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(m->image, text, len + 1);
  m->image_size = len + 1;
  for (const char *p = strstr(m->image, ".entry"); p; p = strstr(p + 1, ".entry")) {
    const char *q = p + 6;
    if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') continue;
    while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
      q++;
    size_t n = 0;
    while (name_char(q[n]))
      n++;
    if (n == 0 || n >= 1024) continue;
    char name[1024];
    memcpy(name, q, n);
    name[n] = 0;
    if (add_func(m, name) != CUDA_SUCCESS) {
      fk_module_free(m);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  *out = m;
  return CUDA_SUCCESS;
}

/* Functions stay allocated (marked dead) so stale handles are rejected. */
void fk_module_free(struct fk_module *m) {
  for (unsigned i = 0; i < m->nfuncs; i++)
    m->funcs[i]->magic = FK_MAGIC_DEAD;
  free(m->funcs);
  free(m->image);
  for (unsigned i = 0; i < m->nglobals; i++)
    fk_mem_free(m->globals[i].ptr);
  m->nglobals = 0;
  m->funcs = NULL;
  m->image = NULL;
  m->nfuncs = 0;
  m->magic = FK_MAGIC_DEAD;
}

static char *read_file(const char *fname) {
  FILE *f = fopen(fname, "rb");
  if (f == NULL) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0) break;
    if (n + 1 == cap) {
      char *nb = realloc(buf, cap * 2);
      if (nb == NULL) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf) buf[n] = 0;
  return buf;
}

static CUresult module_load(CUmodule *pm, const void *image) {
  if (pm == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  struct fk_module *m;
  CUresult rc = fk_module_from_image(image, &m);
  if (rc == CUDA_SUCCESS) *pm = (CUmodule)m;
  return rc;
}

CUresult cuModuleLoadData(CUmodule *pm, const void *image) {
  FK_ENTER("cuModuleLoadData");
  return module_load(pm, image);
}

CUresult cuModuleLoadDataEx(CUmodule *pm, const void *image, unsigned n, CUjit_option *opts,
                            void **vals) {
  FK_ENTER("cuModuleLoadDataEx");
  if (n && (opts == NULL || vals == NULL)) return CUDA_ERROR_INVALID_VALUE;
  return module_load(pm, image);
}

CUresult cuModuleLoadFatBinary(CUmodule *pm, const void *fatbin) {
  FK_ENTER("cuModuleLoadFatBinary");
  return module_load(pm, fatbin);
}

CUresult cuModuleLoad(CUmodule *pm, const char *fname) {
  FK_ENTER("cuModuleLoad");
  if (pm == NULL || fname == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  char *text = read_file(fname);
  if (text == NULL) return CUDA_ERROR_FILE_NOT_FOUND;
  CUresult rc = module_load(pm, text);
  free(text);
  return rc;
}

static struct fk_module *module_of(CUmodule h) {
  struct fk_module *m = (struct fk_module *)h;
  return m && m->magic == FK_MAGIC_MODULE ? m : NULL;
}

CUresult cuModuleUnload(CUmodule h) {
  FK_ENTER("cuModuleUnload");
  struct fk_module *m = module_of(h);
  if (m == NULL || m->lib != NULL) return CUDA_ERROR_INVALID_HANDLE;
  fk_module_free(m);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *pf, CUmodule h, const char *name) {
  FK_ENTER("cuModuleGetFunction");
  struct fk_module *m = module_of(h);
  if (pf == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (m == NULL) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < m->nfuncs; i++) {
    if (strcmp(m->funcs[i]->def->name, name) == 0) {
      *pf = (CUfunction)m->funcs[i];
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

/* The size of module variable name as the image declares it (".global"
 * or ".const" at the start of a line, then ".u32 name[8];" or ".b8
 * name[16];"; 4 without a count), 0 when not declared. */
static size_t declared_global(const char *image, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(image, name); p; p = strstr(p + 1, name)) {
    if (p == image || p[-1] != ' ' || (p[n] != '[' && p[n] != ';')) continue;
    const char *line = p;
    while (line > image && line[-1] != '\n')
      line--;
    if (!strstr(line, ".global") || strstr(line, ".global") > p) continue;
    unsigned long count = p[n] == '[' ? strtoul(p + n + 1, NULL, 10) : 1;
    size_t elem = strstr(line, ".b8") && strstr(line, ".b8") < p ? 1 : 4;
    return count * elem;
  }
  return 0;
}

static CUresult module_global(struct fk_module *m, CUdeviceptr *dptr, size_t *bytes,
                              const char *name) {
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (m == NULL) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < m->nglobals; i++)
    if (!strcmp(m->globals[i].name, name)) {
      if (dptr) *dptr = m->globals[i].ptr;
      if (bytes) *bytes = m->globals[i].size;
      return CUDA_SUCCESS;
    }
  size_t size = m->image ? declared_global(m->image, name) : 0;
  if (!size || strlen(name) >= sizeof m->globals[0].name ||
      m->nglobals == sizeof m->globals / sizeof m->globals[0])
    return CUDA_ERROR_NOT_FOUND;
  struct fk_global *g = &m->globals[m->nglobals];
  CUresult rc = fk_mem_alloc(&g->ptr, size, FK_MEM_DEVICE);
  if (rc != CUDA_SUCCESS) return rc;
  snprintf(g->name, sizeof g->name, "%s", name);
  g->size = size;
  m->nglobals++;
  if (dptr) *dptr = g->ptr;
  if (bytes) *bytes = size;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule h, const char *name) {
  FK_ENTER("cuModuleGetGlobal_v2");
  return module_global(module_of(h), dptr, bytes, name);
}

CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode) {
  FK_ENTER("cuModuleGetLoadingMode");
  if (mode == NULL) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ libraries */

static CUresult library_load(CUlibrary *pl, const void *code) {
  if (pl == NULL || code == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct fk_module *m;
  CUresult rc = fk_module_from_image(code, &m);
  if (rc != CUDA_SUCCESS) return rc;
  struct fk_library *l = fk_new(sizeof *l);
  struct fk_kernel **ks = calloc(m->nfuncs ? m->nfuncs : 1, sizeof *ks);
  if (l == NULL || ks == NULL) {
    free(ks);
    fk_module_free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (unsigned i = 0; i < m->nfuncs; i++) {
    ks[i] = fk_new(sizeof **ks);
    if (ks[i] == NULL) {
      free(ks);
      fk_module_free(m);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ks[i] = (struct fk_kernel){.magic = FK_MAGIC_KERNEL, .lib = l, .func = m->funcs[i]};
  }
  l->magic = FK_MAGIC_LIBRARY;
  l->mod = m;
  m->lib = l;
  l->kerns = ks;
  l->nkerns = m->nfuncs;
  *pl = (CUlibrary)l;
  return CUDA_SUCCESS;
}

CUresult cuLibraryLoadData(CUlibrary *pl, const void *code, CUjit_option *jit_opts, void **jit_vals,
                           unsigned n_jit, CUlibraryOption *lib_opts, void **lib_vals,
                           unsigned n_lib) {
  FK_ENTER("cuLibraryLoadData");
  (void)jit_opts, (void)jit_vals, (void)n_jit, (void)lib_opts, (void)lib_vals, (void)n_lib;
  return library_load(pl, code);
}

CUresult cuLibraryLoadFromFile(CUlibrary *pl, const char *fname, CUjit_option *jit_opts,
                               void **jit_vals, unsigned n_jit, CUlibraryOption *lib_opts,
                               void **lib_vals, unsigned n_lib) {
  FK_ENTER("cuLibraryLoadFromFile");
  (void)jit_opts, (void)jit_vals, (void)n_jit, (void)lib_opts, (void)lib_vals, (void)n_lib;
  if (pl == NULL || fname == NULL) return CUDA_ERROR_INVALID_VALUE;
  char *text = read_file(fname);
  if (text == NULL) return CUDA_ERROR_FILE_NOT_FOUND;
  CUresult rc = library_load(pl, text);
  free(text);
  return rc;
}

static struct fk_library *library_of(CUlibrary h) {
  struct fk_library *l = (struct fk_library *)h;
  return l && l->magic == FK_MAGIC_LIBRARY ? l : NULL;
}

CUresult cuLibraryUnload(CUlibrary h) {
  FK_ENTER("cuLibraryUnload");
  struct fk_library *l = library_of(h);
  if (l == NULL) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < l->nkerns; i++)
    l->kerns[i]->magic = FK_MAGIC_DEAD;
  free(l->kerns);
  l->kerns = NULL;
  fk_module_free(l->mod);
  l->magic = FK_MAGIC_DEAD;
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary h, const char *name) {
  FK_ENTER("cuLibraryGetGlobal");
  struct fk_library *l = library_of(h);
  return module_global(l ? l->mod : NULL, dptr, bytes, name);
}

CUresult cuLibraryGetKernel(CUkernel *pk, CUlibrary h, const char *name) {
  FK_ENTER("cuLibraryGetKernel");
  struct fk_library *l = library_of(h);
  if (pk == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (l == NULL) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < l->nkerns; i++) {
    if (strcmp(l->kerns[i]->func->def->name, name) == 0) {
      *pk = (CUkernel)l->kerns[i];
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuLibraryGetModule(CUmodule *pm, CUlibrary h) {
  FK_ENTER("cuLibraryGetModule");
  struct fk_library *l = library_of(h);
  if (pm == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (l == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  *pm = (CUmodule)l->mod;
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernelCount(unsigned *count, CUlibrary h) {
  FK_ENTER("cuLibraryGetKernelCount");
  struct fk_library *l = library_of(h);
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (l == NULL) return CUDA_ERROR_INVALID_HANDLE;
  *count = l->nkerns;
  return CUDA_SUCCESS;
}

CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned n, CUlibrary h) {
  FK_ENTER("cuLibraryEnumerateKernels");
  struct fk_library *l = library_of(h);
  if (kernels == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (l == NULL) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < n && i < l->nkerns; i++)
    kernels[i] = (CUkernel)l->kerns[i];
  return CUDA_SUCCESS;
}

/* ------------------------------------------------ functions and kernels */

static struct fk_func *strict_func(CUfunction f) {
  struct fk_func *fn = (struct fk_func *)f;
  return fn && fn->magic == FK_MAGIC_FUNC ? fn : NULL;
}

static struct fk_kernel *kernel_of(CUkernel k) {
  struct fk_kernel *kn = (struct fk_kernel *)k;
  return kn && kn->magic == FK_MAGIC_KERNEL ? kn : NULL;
}

static CUresult param_info(const struct fk_kernel_def *d, size_t i, size_t *off, size_t *size) {
  if (i >= d->nparams) return CUDA_ERROR_INVALID_VALUE;
  if (off) *off = fk_param_offset(d, (unsigned)i);
  if (size) *size = d->size[i];
  return CUDA_SUCCESS;
}

/* A CUkernel is not a CUfunction: these entries reject it, as on the GPU. */
CUresult cuFuncGetName(const char **name, CUfunction f) {
  FK_ENTER("cuFuncGetName");
  struct fk_func *fn = strict_func(f);
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (fn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  *name = fn->def->name;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
  FK_ENTER("cuFuncGetParamInfo");
  struct fk_func *fn = strict_func(f);
  if (fn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  return param_info(fn->def, i, off, size);
}

CUresult cuFuncGetModule(CUmodule *pm, CUfunction f) {
  FK_ENTER("cuFuncGetModule");
  struct fk_func *fn = strict_func(f);
  if (pm == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (fn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  *pm = (CUmodule)fn->mod;
  return CUDA_SUCCESS;
}

static CUresult func_get_attr(int *pi, CUfunction_attribute a, const struct fk_func *fn) {
  if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = (int)fn->def->static_shared; break;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 90; break;
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
  case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = fn->max_dyn_shared; break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = fn->carveout; break;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *pi = fn->cluster_nonportable; break;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = 0; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

static CUresult func_set_attr(struct fk_func *fn, CUfunction_attribute a, int v) {
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    if (v < 0 || (unsigned)v + fn->def->static_shared > FK_MAX_SHARED_OPTIN)
      return CUDA_ERROR_INVALID_VALUE;
    fn->max_dyn_shared = v;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    if (v < -1 || v > 100) return CUDA_ERROR_INVALID_VALUE;
    fn->carveout = v;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    fn->cluster_nonportable = v != 0;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: return CUDA_SUCCESS;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute a, CUfunction f) {
  FK_ENTER("cuFuncGetAttribute");
  struct fk_func *fn = strict_func(f);
  if (fn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  return func_get_attr(pi, a, fn);
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  FK_ENTER("cuFuncSetAttribute");
  struct fk_func *fn = strict_func(f);
  if (fn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  return func_set_attr(fn, a, v);
}

CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache config) {
  FK_ENTER("cuFuncSetCacheConfig");
  (void)config;
  return strict_func(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuKernelGetName(const char **name, CUkernel k) {
  FK_ENTER("cuKernelGetName");
  struct fk_kernel *kn = kernel_of(k);
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (kn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  *name = kn->func->def->name;
  return CUDA_SUCCESS;
}

CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size) {
  FK_ENTER("cuKernelGetParamInfo");
  struct fk_kernel *kn = kernel_of(k);
  if (kn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  return param_info(kn->func->def, i, off, size);
}

CUresult cuKernelGetFunction(CUfunction *pf, CUkernel k) {
  FK_ENTER("cuKernelGetFunction");
  struct fk_kernel *kn = kernel_of(k);
  if (pf == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (kn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  *pf = (CUfunction)kn->func;
  return CUDA_SUCCESS;
}

CUresult cuKernelGetLibrary(CUlibrary *pl, CUkernel k) {
  FK_ENTER("cuKernelGetLibrary");
  struct fk_kernel *kn = kernel_of(k);
  if (pl == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (kn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  *pl = (CUlibrary)kn->lib;
  return CUDA_SUCCESS;
}

CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute a, CUkernel k, CUdevice dev) {
  FK_ENTER("cuKernelGetAttribute");
  struct fk_kernel *kn = kernel_of(k);
  if (kn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  return func_get_attr(pi, a, kn->func);
}

CUresult cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice dev) {
  FK_ENTER("cuKernelSetAttribute");
  struct fk_kernel *kn = kernel_of(k);
  if (kn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  return func_set_attr(kn->func, a, v);
}

CUresult cuKernelSetCacheConfig(CUkernel k, CUfunc_cache config, CUdevice dev) {
  FK_ENTER("cuKernelSetCacheConfig");
  (void)config;
  if (kernel_of(k) == NULL) return CUDA_ERROR_INVALID_HANDLE;
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t dyn) {
  FK_ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  struct fk_func *fn = fk_func_of(f);
  if (n == NULL || block <= 0 || block > 1024) return CUDA_ERROR_INVALID_VALUE;
  if (fn == NULL) return CUDA_ERROR_INVALID_HANDLE;
  size_t smem = fn->def->static_shared + dyn;
  size_t stride = smem ? (smem + 1023) / 1024 * 1024 : 0;
  int bps = 32;
  if (2048 / block < bps) bps = 2048 / block;
  if (stride && (int)(FK_SM_SHARED_BYTES / stride) < bps) bps = (int)(FK_SM_SHARED_BYTES / stride);
  *n = bps;
  return CUDA_SUCCESS;
}
