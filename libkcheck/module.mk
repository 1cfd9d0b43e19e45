# libkcheck/ + contract/ + shim/ + gates/ build fragment: build/libkcheck.so (release)
# and build/san/libkcheck.so (ASan+UBSan, used by `make test`).

KC_ROOMS := base findings capture exec core
KC_SRCS := $(foreach r,$(KC_ROOMS),$(wildcard libkcheck/$(r)/*.c)) $(wildcard contract/*.c) \
           $(wildcard shim/*.c) $(wildcard gates/*.c) $(BUILD)/gen/perturb_ptx.c $(BUILD)/gen/perturb_fatbin.c \
           $(BUILD)/gen/san_patches_fatbin.c
KC_ASM  := shim/dl_trampoline.S
# The layering, enforced by include paths: each folder compiles with only
# the folders it may use (a header of any other is "not found"):
#   shim -> gates -> {contract, core}; contract -> {core, oracle};
#   oracle -> its own. The core (libkcheck/) is five rooms, each seeing
#   only itself and the rooms below it:
#     base      options, log, the driver table, the allocation map, the
#               re-entrancy guard, the world lock, PTX text, symbolisation
#     findings  the report, finding blocks, stacks, the audit, the profile
#     capture   a launch's identity, parameters, pointers; policy, serving
#     exec      shadow runs, perturbations, staging, intra-block logging
#     core      start-up and exit, the launch dispatch, graphs, streams, API
# Paths are transitive: a folder gets those its allowed headers include.
# The Sanitizer API's headers (the Sanitizer route, libkcheck/exec/san_route.c):
# the toolkit's compute-sanitizer/include, else the pip package
# nvidia-cuda-sanitizer-api (scripts/install-deps). Only its sanitizer*.h
# are put on the path (the package's folder holds CUDA headers too, which
# must not shadow the toolkit's). Absent: built without the route.
KC_SAN_INC_DIR := $(firstword $(wildcard $(CUDA_HOME)/compute-sanitizer/include/sanitizer.h) \
  $(shell $(PYTHON) -c "import nvidia, os; [print(os.path.join(p, 'cu13/include/sanitizer.h')) for p in nvidia.__path__]" 2>/dev/null))
KC_SAN_PIP_LIB := $(firstword $(shell $(PYTHON) -c "import nvidia, os; [print(os.path.join(p, 'cu13/lib')) for p in nvidia.__path__]" 2>/dev/null))
ifneq ($(KC_SAN_INC_DIR),)
KC_SAN_INC_DIR := $(dir $(KC_SAN_INC_DIR))
KC_SAN_FLAGS := -DKC_HAVE_SANITIZER -DKC_SAN_PIP_LIB='"$(KC_SAN_PIP_LIB)"' -I$(BUILD)/gen/sanitizer-include
$(BUILD)/gen/sanitizer-include/sanitizer.h: $(KC_SAN_INC_DIR)sanitizer.h
	@mkdir -p $(@D)
	ln -sf $(KC_SAN_INC_DIR)sanitizer*.h $(@D)/
else
# (said on stderr: `make -s print-carried`'s stdout is a list of files)
KC_SAN_SAID := $(shell echo "kcheck: the Sanitizer API headers were not found ($(CUDA_HOME)/compute-sanitizer/include, pip nvidia-cuda-sanitizer-api): building without the Sanitizer route" >&2)
KC_SAN_FLAGS :=
$(BUILD)/gen/sanitizer-include/sanitizer.h:
	@mkdir -p $(@D) && touch $@
endif
KC_CUDA_INC      := -I$(CUDA_HOME)/include
KC_INC_base      := -Ilibkcheck/base $(KC_CUDA_INC)
KC_INC_findings  := -Ilibkcheck/findings $(KC_INC_base)
KC_INC_capture   := -Ilibkcheck/capture $(KC_INC_findings)
KC_INC_exec      := -Ilibkcheck/exec $(KC_INC_capture)
KC_INC_core      := -Ilibkcheck/core $(KC_INC_exec)
KC_INC_libkcheck := $(KC_INC_core)
KC_INC_contract  := -Icontract -Ioracle $(KC_INC_core)
KC_INC_gates     := -Igates -Icontract -Ioracle $(KC_INC_core)
KC_INC_shim      := -Ishim -Igates -Icontract -Ioracle $(KC_INC_core)
KC_INC_oracle    := -Ioracle
# The flags of a source path: libkcheck/<room>/... by its room, any other
# by its folder (build/gen/... for generated sources: none).
kc_path_words = $(subst /, ,$(1))
kc_inc = $(if $(filter libkcheck,$(firstword $(call kc_path_words,$(1)))),$(KC_INC_$(word 2,$(call kc_path_words,$(1)))),$(KC_INC_$(firstword $(call kc_path_words,$(1)))))
# Everything, for tests (they may look at any layer).
KC_INC  := -Ishim -Igates -Icontract -Ioracle $(KC_INC_core)
# libelf is needed by name (no --as-needed) although only libdw calls it:
# the $ORIGIN runpath reaches only libkcheck's own dependencies, so libdw's
# libelf would otherwise come from the system, not the carried copy.
KC_LIBS := -lyaml -ljansson -lunwind -ldw -Wl,--push-state,--no-as-needed -lelf -Wl,--pop-state -lmpfr -lgmp -lm -ldl -lpthread -l:libstdc++.so.6
KC_LDFLAGS = -shared -Wl,--version-script=$(BUILD)/exports.map -Wl,-z,defs \
             -Wl,-rpath,'$$ORIGIN' -Wl,--no-undefined

$(BUILD)/exports.map: shim/exports.map.in libkcheck/base/driver.def
	@mkdir -p $(@D)
	$(CC) -E -P -x c -Ilibkcheck/base $< | grep -v '^\s*$$' > $@

define kc_variant
# An object without its .d (built before it had one) is rebuilt.
$(1)/obj/%.o: %.c $(1)/obj/%.d
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS_COMMON) -fvisibility=hidden $(2) $$(KC_NOSAN) $$(call kc_inc,$$*) -MMD -MP \
	  -c $$< -o $$@
$(1)/obj/%.o: %.S
	@mkdir -p $$(@D)
	$$(CC) -c $$< -o $$@
$(1)/libkcheck.so: $$(patsubst %.c,$(1)/obj/%.o,$$(KC_SRCS)) $$(patsubst %.S,$(1)/obj/%.o,$$(KC_ASM)) $(BUILD)/exports.map $(3)
	$$(CC) $(2) $$(KC_LDFLAGS) -o $$@ $$(filter %.o,$$^) $(3) $$(KC_LIBS)
endef

$(eval $(call kc_variant,$(BUILD),,$(BUILD)/liboracle.a))
# The dlsym path runs inside sanitizer runtimes' own start-up (ASan looks up
# its interceptors' targets with dlsym before its shadow memory exists), so
# it is never instrumented.
$(BUILD)/san/obj/shim/dl_hook.o $(BUILD)/san/obj/shim/real_dl.o: KC_NOSAN := -fno-sanitize=all
$(eval $(call kc_variant,$(BUILD)/san,$(SANFLAGS) $(CHECKFLAGS),$(BUILD)/san/liboracle.a))
# ThreadSanitizer build for `make test-tsan` (the oracle is plain
# arithmetic on one thread's data: its uninstrumented archive is enough).
TSANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
$(BUILD)/tsan/obj/shim/dl_hook.o $(BUILD)/tsan/obj/shim/real_dl.o: KC_NOSAN := -fno-sanitize=all
$(eval $(call kc_variant,$(BUILD)/tsan,$(TSANFLAGS) $(CHECKFLAGS),$(BUILD)/liboracle.a))

# Non-system libraries travel next to libkcheck.so (rpath $ORIGIN), so the
# build directory can be copied to a machine that lacks them.
KC_CARRY := libjansson.so.4 libunwind.so.8 libyaml-0.so.2 libdw.so.1 libelf.so.1
$(BUILD)/.carried: $(BUILD)/libkcheck.so
	for l in $(KC_CARRY); do cp -L $$(ldconfig -p | awk -v l=$$l '$$1==l {print $$NF; exit}') $(BUILD)/; done
	touch $@

all: $(BUILD)/libkcheck.so $(BUILD)/.carried

# The carried libraries' names, for the Python package's build (python/setup.py).
.PHONY: print-carried
print-carried:
	@echo $(KC_CARRY)

# Header dependencies from the compiler (-MMD -MP): an object rebuilds when
# a header it includes changes, and only then.
$(BUILD)/obj/%.d $(BUILD)/san/obj/%.d $(BUILD)/tsan/obj/%.d: ;
.PRECIOUS: $(BUILD)/obj/%.d $(BUILD)/san/obj/%.d $(BUILD)/tsan/obj/%.d
-include $(foreach v,obj san/obj tsan/obj,$(patsubst %.c,$(BUILD)/$(v)/%.d,$(KC_SRCS)))

# kcheck's own perturbation kernels, committed next to the CUDA source (so
# building needs no nvcc) and embedded: a fatbin with SASS for the common
# architectures (loading it costs no JIT: the process's first check paid
# ~80 ms JIT-compiling the PTX on the H200) and PTX text, loaded when the
# fatbin is refused (another architecture, the CPU stand-in).
$(BUILD)/gen/perturb_ptx.c: libkcheck/exec/kernels/perturb_kernels.ptx
	@mkdir -p $(@D)
	{ echo '/* generated from $< */'; echo 'extern const char kc_perturb_ptx[];'; \
	  echo 'const char kc_perturb_ptx[] ='; \
	  sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $<; echo ';'; } > $@
$(BUILD)/gen/perturb_fatbin.c: libkcheck/exec/kernels/perturb_kernels.fatbin
	@mkdir -p $(@D)
	{ echo '/* generated from $< */'; echo 'extern const unsigned char kc_perturb_fatbin[];'; \
	  echo 'extern const unsigned long kc_perturb_fatbin_size;'; \
	  echo '__attribute__((aligned(64))) const unsigned char kc_perturb_fatbin[] = {'; \
	  od -An -v -tx1 $< | sed 's/ *$$//; s/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '};'; \
	  echo 'const unsigned long kc_perturb_fatbin_size = sizeof kc_perturb_fatbin;'; } > $@
$(BUILD)/obj/$(BUILD)/gen/%.o $(BUILD)/san/obj/$(BUILD)/gen/%.o: KC_NOSAN += -Wno-overlength-strings
$(BUILD)/gen/san_patches_fatbin.c: libkcheck/exec/kernels/san_patches.fatbin
	@mkdir -p $(@D)
	{ echo '/* generated from $< */'; echo 'extern const unsigned char kc_san_patches_fatbin[];'; \
	  echo 'extern const unsigned long kc_san_patches_fatbin_size;'; \
	  echo '__attribute__((aligned(64))) const unsigned char kc_san_patches_fatbin[] = {'; \
	  od -An -v -tx1 $< | sed 's/ *$$//; s/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '};'; \
	  echo 'const unsigned long kc_san_patches_fatbin_size = sizeof kc_san_patches_fatbin;'; } > $@
# The Sanitizer route's callbacks: rebuilt with nvcc where it and the
# headers are (SASS only: patches are not JIT-compiled), else the
# committed fatbin is used as it is.
KC_NVCC := $(wildcard $(CUDA_HOME)/bin/nvcc)
ifneq ($(and $(KC_NVCC),$(KC_SAN_FLAGS)),)
libkcheck/exec/kernels/san_patches.fatbin: libkcheck/exec/kernels/san_patches.cu libkcheck/base/san_rec.h \
    $(BUILD)/gen/sanitizer-include/sanitizer.h
	$(KC_NVCC) --fatbin --compile-as-tools-patch -I$(BUILD)/gen/sanitizer-include \
	  $(foreach a,$(KC_KERNEL_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) -o $@ $<
endif
$(BUILD)/obj/libkcheck/exec/san_route.o $(BUILD)/san/obj/libkcheck/exec/san_route.o \
$(BUILD)/tsan/obj/libkcheck/exec/san_route.o: $(BUILD)/gen/sanitizer-include/sanitizer.h
$(BUILD)/obj/libkcheck/exec/san_route.o $(BUILD)/san/obj/libkcheck/exec/san_route.o \
$(BUILD)/tsan/obj/libkcheck/exec/san_route.o: KC_NOSAN += $(KC_SAN_FLAGS)

# Regenerates both with nvcc: SASS for sm_80/86/89/90/100/120, and PTX for
# compute_80 inside the fatbin (JIT-compiled on any newer architecture).
KC_KERNEL_ARCHS := 80 86 89 90 100 120
.PHONY: ptx
ptx:
	$(CUDA_HOME)/bin/nvcc -ptx -arch=compute_90 -o libkcheck/exec/kernels/perturb_kernels.ptx \
	  libkcheck/exec/kernels/perturb_kernels.cu
	$(CUDA_HOME)/bin/nvcc -fatbin $(foreach a,$(KC_KERNEL_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
	  -gencode arch=compute_80,code=compute_80 -o libkcheck/exec/kernels/perturb_kernels.fatbin \
	  libkcheck/exec/kernels/perturb_kernels.cu

# install: the library and the libraries it carries into lib/kcheck (rpath
# $ORIGIN finds them there), the Python package (front end, pytest plugin,
# report tools, shipped suppressions) into lib/kcheck/python, bin/kcheck
# running it, and the public header.
install: $(BUILD)/libkcheck.so $(BUILD)/.carried
	install -d $(DESTDIR)$(PREFIX)/lib/kcheck $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/lib/kcheck/python/kcheck/suppressions
	install -m 755 $(BUILD)/libkcheck.so $(DESTDIR)$(PREFIX)/lib/kcheck/
	for l in $(KC_CARRY); do install -m 644 $(BUILD)/$$l $(DESTDIR)$(PREFIX)/lib/kcheck/; done
	for d in $$(cd python && find kcheck -type d -not -name __pycache__); do \
	  install -d $(DESTDIR)$(PREFIX)/lib/kcheck/python/$$d; done
	for f in $$(cd python && find kcheck -name '*.py' -o -name '*.supp'); do \
	  install -m 644 python/$$f $(DESTDIR)$(PREFIX)/lib/kcheck/python/$$f; done
	printf '%s\n' '#!/usr/bin/env python3' '"""kcheck front end (installed by make install)."""' \
	  'import sys' 'sys.path.insert(0, "$(PREFIX)/lib/kcheck/python")' \
	  'from kcheck.cli import main' 'sys.exit(main())' > $(DESTDIR)$(PREFIX)/bin/kcheck
	chmod 755 $(DESTDIR)$(PREFIX)/bin/kcheck
	install -m 644 include/kcheck.h $(DESTDIR)$(PREFIX)/include/kcheck.h
