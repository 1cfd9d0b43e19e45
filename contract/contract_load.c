/* contract/contract_load.c — the process's contract registry (loaded from
 * the `contracts` option at activation, or registered through the API),
 * matching kernels to contracts, and binding a contract to the parameter
 * bytes of a captured launch (scalars, pointers, shapes, domain, launch). */
#include <fnmatch.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uthash.h>

#include "contract.h"
#include "contract_options.h"
#include "kernel.h"
#include "launch.h"
#include "log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Published contracts are never freed: gates may hold them. */
static struct kc_contract **reg;
static int nreg;
static unsigned generation = 1;

struct match_node {
  const struct kc_kernel *k;
  const struct kc_contract *c;
  unsigned gen;
  UT_hash_handle hh;
};
static struct match_node *cache;

int kc_contracts_add(struct kc_contract_set *set) {
  pthread_mutex_lock(&lock);
  struct kc_contract **r = realloc(reg, (size_t)(nreg + set->n + 1) * sizeof *r);
  int added = 0;
  if (r) {
    reg = r;
    for (int i = 0; i < set->n; i++)
      reg[nreg++] = set->c[i];
    added = set->n;
    free(set->c);
    set->c = NULL;
    set->n = 0;
    generation++;
  }
  pthread_mutex_unlock(&lock);
  return added;
}

const struct kc_contract *kc_contract_at(int i) {
  pthread_mutex_lock(&lock);
  const struct kc_contract *c = i >= 0 && i < nreg ? reg[i] : NULL;
  pthread_mutex_unlock(&lock);
  return c;
}

int kc_contracts_count(void) {
  pthread_mutex_lock(&lock);
  int n = nreg;
  pthread_mutex_unlock(&lock);
  return n;
}

struct kc_contract_options kc_contract_opt;

static const struct kc_opt_row option_rows[] = {
#define KC_OPT(...) KC_OPT_ROW(kc_contract_opt, __VA_ARGS__)
#include "contract_options.def"
};

/* A constructor: the rows must be known before KCHECK_OPTIONS is parsed. */
__attribute__((constructor)) static void register_options(void) {
  if (kc_options_register(option_rows, sizeof option_rows / sizeof option_rows[0]))
    KC_INTERNAL_ERROR("the contracts' options could not be registered");
}

/* The default directory: $XDG_CONFIG_HOME/kcheck/contracts, else
 * ~/.config/kcheck/contracts. Absent is fine (no contracts). */
static int default_dir(char *buf, size_t n) {
  const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
  if (xdg && *xdg)
    snprintf(buf, n, "%s/kcheck/contracts", xdg);
  else if (home && *home)
    snprintf(buf, n, "%s/.config/kcheck/contracts", home);
  else
    return -1;
  return 0;
}

int kc_contracts_init(void) {
  const char *spec = kc_contract_opt.contracts;
  if (spec && !strcmp(spec, "none")) return 0;
  struct kc_contract_set set = {0};
  int problems = 0;
  if (!spec || !*spec) {
    char dir[PATH_MAX];
    struct stat st;
    if (default_dir(dir, sizeof dir) || stat(dir, &st)) return 0;
    problems += kc_contract_parse_path(dir, &set);
  } else {
    char *copy = strdup(spec), *save = NULL;
    if (!copy) return 1;
    for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
      if (*p) problems += kc_contract_parse_path(p, &set);
    free(copy);
  }
  kc_contract_print_diags(&set, "kcheck: ");
  int added = kc_contracts_add(&set);
  if (problems)
    kc_log_printf(KC_LOG_WARN, "%d contract problem%s; the contracts with problems are skipped",
                  problems, problems == 1 ? "" : "s");
  KC_LOG(KC_LOG_INFO, "%d contract%s loaded", added, added == 1 ? "" : "s");
  kc_contract_set_free(&set);
  return problems;
}

int kc_contract_matches(const struct kc_contract *c, const char *mangled, const char *demangled) {
  if (c->torch_op || !c->pattern) return 0; /* an op contract matches no kernel */
  switch (c->match) {
  case KC_CONTRACT_NAME:
    return (mangled && !strcmp(c->pattern, mangled)) ||
           (demangled && !strcmp(c->pattern, demangled));
  case KC_CONTRACT_GLOB: return demangled && !fnmatch(c->pattern, demangled, 0);
  case KC_CONTRACT_REGEX: return demangled && c->regex && !regexec(c->regex, demangled, 0, NULL, 0);
  }
  return 0;
}

const struct kc_contract *kc_contract_match(const struct kc_kernel *k) {
  if (!k) return NULL;
  pthread_mutex_lock(&lock);
  struct match_node *m = NULL;
  HASH_FIND_PTR(cache, &k, m);
  if (!m || m->gen != generation) {
    const struct kc_contract *found = NULL;
    for (int i = 0; i < nreg && !found; i++)
      if (kc_contract_matches(reg[i], k->name, k->demangled)) found = reg[i];
    if (!m && (m = calloc(1, sizeof *m))) {
      m->k = k;
      HASH_ADD_PTR(cache, k, m);
    }
    if (m) {
      m->c = found;
      m->gen = generation;
    }
    pthread_mutex_unlock(&lock);
    return found;
  }
  const struct kc_contract *c = m->c;
  pthread_mutex_unlock(&lock);
  return c;
}

void kc_contract_kernel_record(const struct kc_kernel *k, json_t *rec) {
  const struct kc_contract *c = kc_contract_match(k);
  json_object_set_new(rec, "contract", c ? json_string(c->where) : json_null());
}

/* ------------------------------------------------------------ binding */

/* The integer view of a float parameter: a cast of NaN or of a value out
 * of int64's range is undefined behaviour; they saturate (NaN: 0). */
static int64_t to_i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775807.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)x;
}

static int read_scalar(const struct kc_contract_value *v, const unsigned char *p, int64_t *iv,
                       double *fv) {
  switch (v->scalar) {
  case KC_SC_I32: {
    int32_t x;
    memcpy(&x, p, 4);
    *iv = x, *fv = x;
    return 4;
  }
  case KC_SC_U32: {
    uint32_t x;
    memcpy(&x, p, 4);
    *iv = x, *fv = x;
    return 4;
  }
  case KC_SC_I64: {
    int64_t x;
    memcpy(&x, p, 8);
    *iv = x, *fv = (double)x;
    return 8;
  }
  case KC_SC_U64: {
    uint64_t x;
    memcpy(&x, p, 8);
    *iv = x > INT64_MAX ? INT64_MAX : (int64_t)x, *fv = (double)x;
    return 8;
  }
  case KC_SC_F32: {
    float x;
    memcpy(&x, p, 4);
    *fv = x, *iv = to_i64(x);
    return 4;
  }
  case KC_SC_F64: {
    double x;
    memcpy(&x, p, 8);
    *fv = x, *iv = to_i64(x);
    return 8;
  }
  }
  return 0;
}

static int value_size(const struct kc_contract_value *v) {
  if (v->kind == KC_PK_TENSOR) return 8;
  static const int sz[] = {4, 8, 4, 8, 4, 8};
  return v->kind == KC_PK_SCALAR ? sz[v->scalar] : 0;
}

/* Reads one value at byte offset `at`; tensors are evaluated afterwards. */
static int bind_value(const struct kc_contract_value *v, const unsigned char *buf, size_t size,
                      size_t at, struct kc_contract_binding *b, char *err, size_t n) {
  int sz = value_size(v);
  if (at + (size_t)sz > size) {
    snprintf(err, n, "'%s' at byte %zu lies past the %zu parameter bytes", v->name, at, size);
    return -1;
  }
  if (v->kind == KC_PK_SCALAR) {
    read_scalar(v, buf + at, &b->ivals[v->scalar_index], &b->fvals[v->scalar_index]);
  } else if (v->kind == KC_PK_TENSOR) {
    if (b->ntensors >= 64) {
      snprintf(err, n, "more than 64 tensors");
      return -1;
    }
    struct kc_contract_tensor_val *t = &b->tensors[b->ntensors++];
    memset(t, 0, sizeof *t);
    t->v = v;
    memcpy(&t->ptr, buf + at, 8);
  }
  return 0;
}

int kc_contract_bind(const struct kc_contract *c, const unsigned char *param_buf, size_t param_size,
                     const uint32_t *param_offset, int nparams, struct kc_contract_binding *b,
                     char *err, size_t n) {
  return kc_contract_bind_dims(c, param_buf, param_size, param_offset, nparams, NULL, NULL, b, err,
                               n);
}

/* Reads the scalars and tensor pointers (no shapes yet). */
static int bind_values(const struct kc_contract *c, const unsigned char *param_buf,
                       size_t param_size, const uint32_t *param_offset, int nparams,
                       struct kc_contract_binding *b, char *err, size_t n);
/* Evaluates the tensors' shapes and strides from b's variables. */
static int bind_shapes(const struct kc_contract *c, struct kc_contract_binding *b, char *err,
                       size_t n);

int kc_contract_bind_dims(const struct kc_contract *c, const unsigned char *param_buf,
                          size_t param_size, const uint32_t *param_offset, int nparams,
                          const unsigned *grid, const unsigned *block,
                          struct kc_contract_binding *b, char *err, size_t n) {
  if (bind_values(c, param_buf, param_size, param_offset, nparams, b, err, n)) return -1;
  if (grid && block) {
    for (int d = 0; d < 3; d++) {
      b->ivals[KC_CONTRACT_LAUNCH_VAR0 + d] = grid[d];
      b->ivals[KC_CONTRACT_LAUNCH_VAR0 + 3 + d] = block[d];
    }
    b->has_launch_dims = 1;
  } else if (c->uses_launch_dims) {
    snprintf(err, n, "%s uses gridDim/blockDim and the launch dimensions are unknown here",
             c->where);
    return -1;
  }
  return bind_shapes(c, b, err, n);
}

static int bind_values(const struct kc_contract *c, const unsigned char *param_buf,
                       size_t param_size, const uint32_t *param_offset, int nparams,
                       struct kc_contract_binding *b, char *err, size_t n) {
  memset(b, 0, sizeof *b);
  if (c->nscalars > KC_CONTRACT_MAX_SCALARS) {
    snprintf(err, n, "more than %d scalars", KC_CONTRACT_MAX_SCALARS);
    return -1;
  }
  b->nscalars = c->nscalars;
  if (param_offset && nparams != c->nparams) {
    snprintf(err, n, "%s declares %d parameters, the kernel has %d", c->where, c->nparams, nparams);
    return -1;
  }
  size_t at = 0;
  for (int i = 0; i < c->nparams; i++) {
    const struct kc_contract_param *p = &c->params[i];
    if (param_offset) {
      at = param_offset[i];
    } else {
      int sz = value_size(&p->v);
      if (!sz) {
        snprintf(err, n, "the kernel's parameter layout is unknown and '%s' has no fixed size",
                 p->v.name);
        return -1;
      }
      at = (at + (size_t)sz - 1) / (size_t)sz * (size_t)sz; /* natural alignment */
    }
    if (p->v.kind == KC_PK_STRUCT) {
      for (int j = 0; j < p->nfields; j++)
        if (bind_value(&p->fields[j], param_buf, param_size, at + p->fields[j].offset, b, err, n))
          return -1;
    } else if (bind_value(&p->v, param_buf, param_size, at, b, err, n)) {
      return -1;
    }
    if (!param_offset) at += (size_t)value_size(&p->v);
  }
  return 0;
}

static int bind_shapes(const struct kc_contract *c, struct kc_contract_binding *b, char *err,
                       size_t n) {
  (void)c;
  /* Shapes and strides need every scalar (and the launch's dimensions). */
  for (int i = 0; i < b->ntensors; i++) {
    struct kc_contract_tensor_val *t = &b->tensors[i];
    const struct kc_contract_tensor *d = &t->v->tensor;
    t->rank = d->rank;
    for (int r = 0; r < d->rank; r++)
      if (kc_contract_expr_eval(d->shape[r], b->ivals, &t->shape[r], err, n)) return -1;
    int64_t stride = 1;
    for (int r = d->rank - 1; r >= 0; r--) {
      if (d->strides[r]) {
        if (kc_contract_expr_eval(d->strides[r], b->ivals, &t->strides[r], err, n)) return -1;
      } else {
        t->strides[r] = stride;
      }
      if (__builtin_mul_overflow(stride, t->shape[r] > 0 ? t->shape[r] : 1, &stride)) {
        snprintf(err, n, "the extent of '%s' overflows", t->v->name);
        return -1;
      }
    }
  }
  return 0;
}

/* Writes one integer scalar's value at p in its declared type. */
static void write_scalar(const struct kc_contract_value *v, unsigned char *p, int64_t x) {
  switch (v->scalar) {
  case KC_SC_I32: {
    int32_t y = (int32_t)x;
    memcpy(p, &y, 4);
    break;
  }
  case KC_SC_U32: {
    uint32_t y = (uint32_t)x;
    memcpy(p, &y, 4);
    break;
  }
  case KC_SC_I64:
  case KC_SC_U64: memcpy(p, &x, 8); break;
  case KC_SC_F32:
  case KC_SC_F64: break; /* float scalars keep their value */
  }
}

static int fits(const struct kc_contract_value *v, int64_t x) {
  switch (v->scalar) {
  case KC_SC_I32: return x >= INT32_MIN && x <= INT32_MAX;
  case KC_SC_U32: return x >= 0 && x <= UINT32_MAX;
  case KC_SC_U64: return x >= 0;
  default: return 1;
  }
}

int kc_contract_write_scalars(const struct kc_contract *c, unsigned char *param_buf,
                              size_t param_size, const uint32_t *param_offset, int nparams,
                              const int64_t *ivals, char *err, size_t n) {
  if (nparams != c->nparams) {
    snprintf(err, n, "%s declares %d parameters, the kernel has %d", c->where, c->nparams, nparams);
    return -1;
  }
  for (int i = 0; i < c->nparams; i++) {
    const struct kc_contract_param *p = &c->params[i];
    int nv = p->v.kind == KC_PK_STRUCT ? p->nfields : 1;
    for (int j = 0; j < nv; j++) {
      const struct kc_contract_value *v = p->v.kind == KC_PK_STRUCT ? &p->fields[j] : &p->v;
      if (v->kind != KC_PK_SCALAR) continue;
      size_t at = param_offset[i] + (p->v.kind == KC_PK_STRUCT ? v->offset : 0);
      if (at + (size_t)value_size(v) > param_size) {
        snprintf(err, n, "'%s' lies past the parameter bytes", v->name);
        return -1;
      }
      int64_t x = ivals[v->scalar_index];
      if (!fits(v, x)) {
        snprintf(err, n, "%lld does not fit scalar '%s'", (long long)x, v->name);
        return -1;
      }
      write_scalar(v, param_buf + at, x);
    }
  }
  return 0;
}

int kc_contract_bind_launch(const struct kc_contract *c, const struct kc_launch_info *li,
                            struct kc_contract_binding *b, char *err, size_t n) {
  const struct kc_kernel *k = li->k;
  int known = k && k->nparams >= 0;
  return kc_contract_bind_dims(c, li->param_buf, li->param_size, known ? k->param_offset : NULL,
                               known ? k->nparams : 0, li->grid, li->block, b, err, n);
}

int kc_contract_bind_at(const struct kc_contract *c, const struct kc_launch_info *li,
                        const int64_t *ivals, unsigned char *param_buf,
                        struct kc_contract_binding *b, char *err, size_t n) {
  const struct kc_kernel *k = li->k;
  if (!k || k->nparams < 0) {
    snprintf(err, n, "the kernel's parameter layout is unknown");
    return -1;
  }
  memcpy(param_buf, li->param_buf, li->param_size);
  if (kc_contract_write_scalars(c, param_buf, li->param_size, k->param_offset, k->nparams, ivals,
                                err, n) ||
      bind_values(c, param_buf, li->param_size, k->param_offset, k->nparams, b, err, n))
    return -1;
  /* At other scalars the launch is the contract's launch section at them
   * (it uses scalars only); without one, the application's own. */
  unsigned grid[3], block[3], shmem;
  if (c->has_launch) {
    if (kc_contract_launch_dims(c, b, grid, block, &shmem, err, n)) return -1;
  } else {
    for (int d = 0; d < 3; d++)
      grid[d] = li->grid[d], block[d] = li->block[d];
  }
  if (kc_contract_bind_dims(c, param_buf, li->param_size, k->param_offset, k->nparams, grid, block,
                            b, err, n))
    return -1;
  return kc_contract_check_domain(c, b, err, n) >= 0 ? 1 : 0;
}

int kc_contract_applies(const struct kc_contract *c, const struct kc_launch_info *li, char *err,
                        size_t n) {
  struct kc_contract_binding *b = malloc(sizeof *b);
  char why[256] = "";
  int ok = 0;
  if (!b) {
    snprintf(err, n, "out of host memory");
    return 0;
  }
  if (kc_contract_bind_launch(c, li, b, why, sizeof why)) {
    snprintf(err, n, "its parameters do not bind to this launch: %s", why);
  } else if (kc_contract_check_domain(c, b, why, sizeof why) >= 0) {
    snprintf(err, n, "outside its domain at this launch: %s", why);
  } else if (c->has_launch) {
    unsigned grid[3], block[3], shmem = 0;
    if (kc_contract_launch_dims(c, b, grid, block, &shmem, why, sizeof why)) {
      snprintf(err, n, "its launch section cannot be evaluated at this launch: %s", why);
    } else if (memcmp(grid, li->grid, sizeof grid) || memcmp(block, li->block, sizeof block) ||
               (c->shmem && shmem != li->shmem)) {
      char sm[32] = "";
      if (c->shmem) snprintf(sm, sizeof sm, " shmem %u", shmem);
      snprintf(err, n,
               "the launch is grid (%u,%u,%u) block (%u,%u,%u) shmem %u, its launch section "
               "says grid (%u,%u,%u) block (%u,%u,%u)%s at these parameters",
               li->grid[0], li->grid[1], li->grid[2], li->block[0], li->block[1], li->block[2],
               li->shmem, grid[0], grid[1], grid[2], block[0], block[1], block[2], sm);
    } else {
      ok = 1;
    }
  } else {
    ok = 1;
  }
  free(b);
  return ok;
}

int kc_contract_check_domain(const struct kc_contract *c, const struct kc_contract_binding *b,
                             char *err, size_t n) {
  for (int i = 0; i < c->ndomain; i++) {
    int64_t v = 0;
    if (kc_contract_expr_eval(c->domain[i], b->ivals, &v, err, n)) return i;
    if (!v) {
      snprintf(err, n, "domain constraint '%s' does not hold", kc_contract_expr_text(c->domain[i]));
      return i;
    }
  }
  return -1;
}

int kc_contract_launch_dims(const struct kc_contract *c, const struct kc_contract_binding *b,
                            unsigned grid[3], unsigned block[3], unsigned *shmem, char *err,
                            size_t n) {
  if (!c->has_launch) {
    snprintf(err, n, "%s has no launch section", c->where);
    return -1;
  }
  for (int d = 0; d < 3; d++) {
    int64_t g = 1, bl = 1;
    if (c->grid[d] && kc_contract_expr_eval(c->grid[d], b->ivals, &g, err, n)) return -1;
    if (c->block[d] && kc_contract_expr_eval(c->block[d], b->ivals, &bl, err, n)) return -1;
    if (g < 1 || bl < 1 || g > UINT_MAX || bl > UINT_MAX) {
      snprintf(err, n, "launch dimension %d out of range (grid %lld, block %lld)", d, (long long)g,
               (long long)bl);
      return -1;
    }
    grid[d] = (unsigned)g;
    block[d] = (unsigned)bl;
  }
  int64_t s = 0;
  if (c->shmem && kc_contract_expr_eval(c->shmem, b->ivals, &s, err, n)) return -1;
  if (s < 0 || s > UINT_MAX) {
    snprintf(err, n, "shmem %lld out of range", (long long)s);
    return -1;
  }
  if (shmem) *shmem = (unsigned)s;
  return 0;
}
