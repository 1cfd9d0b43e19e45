/* libkcheck/base/symbolize.c — host frames to file:line with elfutils' libdw
 * (DWARF line tables of every module mapped in this process), for the
 * finding block and the violation record. Only at a violation, never on the
 * per-launch path. kcheck's own frames are dropped. */
#include "symbolize.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Separate debug files are looked up on this machine only, in the
 * build-id tree of the debuginfo path. dwfl_standard_find_debuginfo falls
 * back to debuginfod: that loads libcurl and a TLS library into the
 * application, may reach the network, and those libraries' exit handlers
 * then run while kcheck's finding thread is still inside them (a crash at
 * exit, seen with libdw 0.188). */
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_build_id_find_debuginfo,
};

static const char *own_module(void) {
  static char path[4096];
  if (!path[0]) {
    Dl_info info;
    if (dladdr((void *)&own_module, &info) && info.dli_fname)
      snprintf(path, sizeof path, "%s", info.dli_fname);
  }
  return path;
}

int kc_frame_is_own(const char *module) {
  const char *own = own_module();
  return module && own[0] && !strcmp(module, own);
}

Dwfl *kc_process_dwfl(void) {
  Dwfl *dwfl = dwfl_begin(&callbacks);
  if (!dwfl) return NULL;
  dwfl_report_begin(dwfl);
  if (dwfl_linux_proc_report(dwfl, getpid())) {
    dwfl_end(dwfl);
    return NULL;
  }
  dwfl_report_end(dwfl, NULL, NULL);
  return dwfl;
}

/* Names come from the module's .symtab, else (a stripped library:
 * libtorch's, libcudart's) its .dynsym: libdwfl falls back to the dynamic
 * symbol table by itself (tested with a stripped library, test_findings). */
static json_t *symbolize_with(Dwfl *dwfl, json_t *host) {
  json_t *out = json_array();
  size_t i;
  json_t *fr;
  json_array_foreach(host, i, fr) {
    const char *module = json_string_value(json_object_get(fr, "module"));
    if (kc_frame_is_own(module)) continue;
    json_t *copy = json_deep_copy(fr);
    const char *ips = json_string_value(json_object_get(fr, "ip"));
    uint64_t ip = ips ? strtoull(ips, NULL, 16) : 0;
    /* Return addresses point after the call: look up the call itself. */
    Dwarf_Addr pc = (Dwarf_Addr)(ip - 1);
    Dwfl_Module *m = dwfl && ip ? dwfl_addrmodule(dwfl, pc) : NULL;
    const char *sym = json_string_value(json_object_get(fr, "symbol"));
    if (m && (!sym || !sym[0])) {
      /* Frames taken without names (the finding's capture takes module
       * and offset only): named from the module's symbol table here. */
      GElf_Off off = 0;
      GElf_Sym esym;
      const char *name = dwfl_module_addrinfo(m, pc, &off, &esym, NULL, NULL, NULL);
      if (name) {
        json_object_set_new(copy, "symbol", json_string(name));
        sym = json_string_value(json_object_get(copy, "symbol"));
      }
    }
    /* C++ host functions read as the user wrote them. */
    if (sym && sym[0] == '_' && sym[1] == 'Z') {
      int status = 0;
      char *d = __cxa_demangle(sym, NULL, NULL, &status);
      if (d && !status) json_object_set_new(copy, "symbol", json_string(d));
      free(d);
    }
    if (m) {
      Dwfl_Line *line = dwfl_module_getsrc(m, pc);
      int lineno = 0;
      const char *src = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
      if (src && lineno > 0) {
        json_object_set_new(copy, "file", json_string(src));
        json_object_set_new(copy, "line", json_integer(lineno));
      }
    }
    json_array_append_new(out, copy);
  }
  return out;
}

json_t *kc_symbolize_host(json_t *host) {
  Dwfl *dwfl = kc_process_dwfl();
  json_t *out = symbolize_with(dwfl, host);
  if (dwfl) dwfl_end(dwfl);
  return out;
}

void kc_symbolize_stacks(json_t *const *stacks, int n) {
  Dwfl *dwfl = NULL;
  for (int i = 0; i < n; i++) {
    json_t *host = json_object_get(stacks[i], "host");
    if (!json_is_array(host)) continue;
    /* one session for every stack of a finding: reporting the modules is
     * most of the cost */
    if (!dwfl) dwfl = kc_process_dwfl();
    json_object_set_new(stacks[i], "host", symbolize_with(dwfl, host));
  }
  if (dwfl) dwfl_end(dwfl);
}
