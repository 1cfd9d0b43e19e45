# test/fakecuda/module.mk — builds the CPU stand-in for the CUDA driver
# ($(BUILD)/fakecuda/libcuda.so.1) and the test applications that drive it
# ($(BUILD)/test/app_*). Included from test/module.mk.
#
# For other fragments:
#   FAKECUDA_LIB      the stand-in library (a libcuda.so symlink sits next to it)
#   FAKECUDA_DIR      its folder: put it on LD_LIBRARY_PATH, or link -L it -lcuda
#   TEST_APPS         the compiled test applications
#   TEST_APP_SCRIPTS  the Python test application(s), run with $(PYTHON)
#   FAKECUDA_SELFTEST the stand-in's own test program
# Normal flags, never sanitizers: the library is loaded into python and into
# programs that libkcheck.so is preloaded into.

FAKECUDA_DIR      := $(BUILD)/fakecuda
FAKECUDA_LIB      := $(FAKECUDA_DIR)/libcuda.so.1
FAKECUDA_SRCS     := $(addprefix test/fakecuda/,fakecuda.c fakecuda_mem.c fakecuda_copy2d.c fakecuda_array.c fakecuda_launch.c \
                       fakecuda_kernels.c fakecuda_procs.c fakecuda_graph.c)
FAKECUDA_OBJS     := $(patsubst test/fakecuda/%.c,$(FAKECUDA_DIR)/obj/%.o,$(FAKECUDA_SRCS))
FAKECUDA_HDRS     := $(wildcard test/fakecuda/*.h test/fakecuda/*.inc)
FAKECUDA_CFLAGS    = $(CFLAGS_COMMON) -I$(CUDA_HOME)/include -Itest/fakecuda
TEST_APP_DIR      := $(BUILD)/test
TEST_APPS         := $(TEST_APP_DIR)/app_runtime $(TEST_APP_DIR)/app_linked
TEST_APP_SCRIPTS  := test/apps/app_ctypes.py
FAKECUDA_SELFTEST := $(TEST_APP_DIR)/fakecuda_selftest
# Apps find the stand-in without LD_LIBRARY_PATH; a later LD_LIBRARY_PATH
# still wins (RUNPATH), so a real driver can be swapped in.
TEST_APP_LDFLAGS   = -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/../fakecuda'
TEST_APP_CFLAGS    = $(CFLAGS_COMMON) -I$(CUDA_HOME)/include -Itest/fakecuda -Itest/apps

.PHONY: fakecuda fakecuda-test fakecuda-procs test-apps

fakecuda: $(FAKECUDA_LIB) $(FAKECUDA_DIR)/libcuda.so
test-apps: $(TEST_APPS)

$(FAKECUDA_DIR)/obj/%.o: test/fakecuda/%.c $(FAKECUDA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(FAKECUDA_CFLAGS) -c $< -o $@

# -Bsymbolic-functions: the library's own references (cuGetProcAddress's
# table) bind to its own entries even when an interposer exports the same
# names, as in the real driver.
$(FAKECUDA_LIB): $(FAKECUDA_OBJS) test/fakecuda/libcuda.map
	$(CC) -shared -o $@ $(FAKECUDA_OBJS) -Wl,-soname,libcuda.so.1 \
	  -Wl,--version-script=test/fakecuda/libcuda.map -Wl,-Bsymbolic-functions -Wl,-z,defs \
	  -lpthread -lm

$(FAKECUDA_DIR)/libcuda.so: $(FAKECUDA_LIB)
	ln -sf libcuda.so.1 $@

$(TEST_APP_DIR)/app_runtime: test/apps/app_runtime.c test/apps/apps.h test/fakecuda/fakecuda.h \
                             $(FAKECUDA_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_APP_CFLAGS) $< -o $@ $(TEST_APP_LDFLAGS) -ldl

$(TEST_APP_DIR)/app_linked: test/apps/app_linked.c test/apps/apps.h test/apps/apps_linked.h test/fakecuda/fakecuda.h \
                            $(FAKECUDA_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(TEST_APP_CFLAGS) $< -o $@ $(TEST_APP_LDFLAGS) -L$(FAKECUDA_DIR) -lcuda

$(FAKECUDA_SELFTEST): test/fakecuda/selftest.c test/apps/apps.h $(FAKECUDA_HDRS) \
                      $(FAKECUDA_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(TEST_APP_CFLAGS) -Ilibkcheck/base $< -o $@ $(TEST_APP_LDFLAGS) -L$(FAKECUDA_DIR) -lcuda -ldl -lm

fakecuda-test: $(FAKECUDA_LIB) $(TEST_APPS) $(FAKECUDA_SELFTEST)
	BUILD=$(BUILD) PYTHON=$(PYTHON) sh test/fakecuda/selftest.sh

# Regenerates the cuGetProcAddress table from cudaTypedefs.h and the exports.
fakecuda-procs: $(FAKECUDA_LIB)
	nm -D --defined-only $(FAKECUDA_LIB) | awk '$$3 ~ /^cu/ {print $$3}' > $(FAKECUDA_DIR)/exports.txt
	$(PYTHON) test/fakecuda/gen_procs.py $(CUDA_HOME)/include $(FAKECUDA_DIR)/exports.txt \
	  > test/fakecuda/fakecuda_procs.inc
