/* libkcheck/base/stack_snap.c — host stacks copied now, unwound later (see
 * stack_snap.h). */
#include "stack_snap.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <elfutils/libdwfl.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "symbolize.h"

#define PAGE 4096u
/* x86-64 DWARF numbering: 0-15 the integer registers, 16 the return address */
#define DWARF_REGS 17

struct kc_stack_snap {
  uint64_t regs[DWARF_REGS];
  uint64_t sp;
  size_t len;
  unsigned char bytes[];
};

/* unw_getcontext fills a ucontext_t on x86-64; the DWARF number of each of
 * its general registers (rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip). */
static const int greg_of_dwarf[DWARF_REGS] = {
    REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
    REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
};

__attribute__((noinline)) struct kc_stack_snap *kc_stack_snap_take(void) {
  unw_context_t ctx;
  if (unw_getcontext(&ctx)) return NULL;
  const ucontext_t *uc = (const ucontext_t *)&ctx;
  struct kc_stack_snap *s = malloc(sizeof *s + KC_STACK_SNAP_BYTES);
  if (!s) return NULL;
  for (int i = 0; i < DWARF_REGS; i++)
    s->regs[i] = (uint64_t)uc->uc_mcontext.gregs[greg_of_dwarf[i]];
  s->sp = s->regs[7];
  /* The stack's top is not known here (the main thread's bounds would
   * take a read of /proc/self/maps): the kernel copies page by page and
   * stops at the first page that is not mapped, where a plain copy would
   * fault. */
  struct iovec local = {s->bytes, KC_STACK_SNAP_BYTES};
  struct iovec remote[KC_STACK_SNAP_BYTES / PAGE + 1];
  int n = 0;
  for (uint64_t at = s->sp, end = s->sp + KC_STACK_SNAP_BYTES; at < end; n++) {
    uint64_t next = (at / PAGE + 1) * PAGE;
    if (next > end) next = end;
    remote[n].iov_base = (void *)(uintptr_t)at;
    remote[n].iov_len = next - at;
    at = next;
  }
  ssize_t got = process_vm_readv(getpid(), &local, 1, remote, (unsigned long)n, 0);
  if (got <= 0) {
    free(s);
    return NULL;
  }
  s->len = (size_t)got;
  return s;
}

static pid_t one_thread(Dwfl *dwfl, void *arg, void **thread_arg) {
  (void)dwfl;
  if (*thread_arg) return 0;
  *thread_arg = arg;
  return getpid();
}

/* Reads are of the copy: the unwinder asks for saved registers and return
 * addresses, all of them on the stack above the stack pointer. */
static bool read_copy(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *out, void *arg) {
  (void)dwfl;
  const struct kc_stack_snap *s = arg;
  if (addr < s->sp || addr - s->sp > s->len || s->len - (addr - s->sp) < sizeof *out) return false;
  memcpy(out, s->bytes + (addr - s->sp), sizeof *out);
  return true;
}

static bool initial_registers(Dwfl_Thread *thread, void *arg) {
  const struct kc_stack_snap *s = arg;
  return dwfl_thread_state_registers(thread, 0, DWARF_REGS, s->regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = one_thread,
    .memory_read = read_copy,
    .set_initial_registers = initial_registers,
};

struct pcs {
  uint64_t *pc;
  int n, max;
};

static int on_frame(Dwfl_Frame *frame, void *arg) {
  struct pcs *p = arg;
  Dwarf_Addr pc;
  if (!dwfl_frame_pc(frame, &pc, NULL) || !pc) return DWARF_CB_ABORT;
  p->pc[p->n++] = pc;
  return p->n < p->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int kc_stack_snap_pcs(const struct kc_stack_snap *s, uint64_t *pcs, int max) {
  if (!s || max <= 0) return 0;
  struct pcs p = {pcs, 0, max};
  Dwfl *dwfl = kc_process_dwfl();
  if (!dwfl) return 0;
  /* The frames end where the unwinder stops (the copy's end, a frame
   * without CFI): what was found before is kept. */
  if (dwfl_attach_state(dwfl, NULL, getpid(), &thread_callbacks, (void *)s))
    (void)dwfl_getthread_frames(dwfl, getpid(), on_frame, &p);
  dwfl_end(dwfl);
  return p.n;
}

void kc_stack_snap_free(struct kc_stack_snap *s) { free(s); }

#else

struct kc_stack_snap *kc_stack_snap_take(void) {
  return NULL;
}
int kc_stack_snap_pcs(const struct kc_stack_snap *s, uint64_t *pcs, int max) {
  (void)s, (void)pcs, (void)max;
  return 0;
}
void kc_stack_snap_free(struct kc_stack_snap *s) { (void)s; }

#endif
