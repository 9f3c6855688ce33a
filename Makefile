# tracebpf - build, test, demo, bench.
#
#   make            build build/tracebpf and everything the tests need
#   make deps       install the Debian 12 packages tracebpf needs (root)
#   make demo       record the bundled demo app -> build/demo.json
#   make test       header, unit and integration tests (root, real BPF), < 5 min
#   make test-full  the same with the big-scale cases, 10 min of chaos and fuzz
#   make bench      probe-cost and drop benchmarks
#   make clean
#   V=1             show full command lines

OUT      := build
ARCH     := x86
CLANG    ?= clang
BPFTOOL  ?= bpftool
CC       ?= cc
VERSION  := 0.1.0
LIB_SOMAJOR := $(firstword $(subst ., ,$(VERSION)))
LIB_SO      := libtracebpf.so.$(VERSION)
LIB_LDLIBS  := -ldeflate -lz -ltraceevent -pthread

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS_COMMON := -std=gnu11 -O2 -g -Wall -Wextra -Werror
USER_CFLAGS   := $(CFLAGS_COMMON) -I$(OUT) -Ibpf -Iuser -Ilib -Ilib/include \
                 -I/usr/include/traceevent -D_GNU_SOURCE -DTRACEBPF_VERSION='"$(VERSION)"' $(CFLAGS)
LIB_CFLAGS    := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -Ibpf -Ilib -Ilib/include \
                 -I/usr/include/traceevent -D_GNU_SOURCE -DTRACEBPF_VERSION='"$(VERSION)"' $(CFLAGS)
USER_LDLIBS   := -lbpf -lelf -ldeflate -lz -ltraceevent -pthread
# The host's system include dirs (asm/ comes from the multiarch dir), added
# after our own so vmlinux.h wins, as libbpf-bootstrap does.
CLANG_BPF_SYS_INCLUDES := $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS    := $(CLANG_BPF_SYS_INCLUDES) -target bpf -g -O2 -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf -Ilib -Ilib/include \
                 -Wall -Werror -Wno-unused-function

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))

# libtracebpf (lib/): the reader side (trace file, time order, model,
# Chrome JSON and ftrace text) never links libbpf.
# libtracebpf: lib/ (the reader side, lib/format/ the trace file, lib/convert/
# the converter). The trace file's writer (lib/format/tbwriter.c, the only
# user of libdeflate) and the output files' opening (outfile.c) are built
# with them but linked only into the CLI.
WRITER_SRC := lib/format/tbwriter.c lib/format/outfile.c
LIB_SRCS  := $(filter-out $(WRITER_SRC),$(wildcard lib/*.c lib/*/*.c))
# The client header and the headers it includes (the recorder shares
# site.h, cats.h and fast_ring.h): whatever is built with trace.h depends
# on all of them.
CLIENT_HDRS := $(wildcard lib/include/tracebpf/*.h)
LIB_HDRS  := $(wildcard lib/*.h lib/*/*.h) lib/include/tracebpf/site.h lib/include/tracebpf/cats.h
# What the unit tests, the fuzz target and the model bench build from source.
CORE_SRCS := $(LIB_SRCS) $(WRITER_SRC) user/report/hist.c user/report/report.c user/report/report_collect.c \
             user/report/report_aggregate.c user/report/report_text.c user/report/report_json.c user/cli/tbio.c \
             user/cli/convert_cmd.c user/cli/filter_args.c
LOAD_SRCS := user/record/record.c user/record/record_args.c user/record/record_attach.c user/record/record_session.c user/record/record_procs.c user/record/record_drain.c \
             user/record/record_output.c user/record/record_filter.c user/record/record_restart.c user/record/record_keep.c user/record/record_memdump.c user/fast/fast.c user/fast/fast_dir.c user/fast/fast_pool.c user/fast/fast_read.c user/probes/probes.c user/main.c user/kern/sched.c user/kern/rings.c \
             user/kern/gaps.c user/kern/slots.c user/cli/info.c user/cli/dump.c user/cli/pack.c user/record/serve.c user/ctl/ctl.c user/ctl/ctl_rec.c \
             user/ctl/ctl_status.c user/cli/list.c user/ctl/cats.c user/record/record_usdt.c user/probes/usdt.c
LIB_OBJS  := $(patsubst lib/%.c,$(OUT)/lib/%.o,$(LIB_SRCS))
WRITER_OBJ := $(patsubst lib/%.c,$(OUT)/lib/%.o,$(WRITER_SRC))
CLI_OBJS  := $(patsubst user/%.c,$(OUT)/user/%.o,$(filter user/%,$(CORE_SRCS)))
LOAD_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(LOAD_SRCS))

# Programs with plain <sys/sdt.h> probes (systemtap-sdt-dev), not
# tracebpf's: what record --usdt records.
SDT_PROGS  := $(OUT)/progs/sdt_app $(OUT)/progs/sdt_exec $(OUT)/progs/libsdt.so
SDT_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror
TEST_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Ilib/include -pthread
PROGS := mt_events seq_until_killed quiet_thread fork_child loop_events \
         lib_user noprobes api_events fork_ghost exec_target exec_chain \
         dlopen_user thread_churn pid_reuse pingpong writer deny_bpf_cmd phases \
         other_regs nested_loop fast_seq fast_open fast_bad numbered_nest chaos_app site_order \
         report_nest filter_events held_threads late_names fork_cats touch_mem memdump \
         leader_exits fast_window fork_churn fast_evil
PROG_BINS := $(addprefix $(OUT)/progs/,$(PROGS)) $(OUT)/progs/redzone $(OUT)/progs/phases_slow \
             $(OUT)/progs/libtbtest.so $(OUT)/progs/libtbdl.so $(OUT)/progs/libchaosdl.so \
             $(OUT)/progs/cxx_unwind \
             $(OUT)/progs/many_sites $(SDT_PROGS)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(OUT)/unit/%,$(wildcard tests/unit/test_*.c))
BENCH_BINS := $(OUT)/bench/probe_cost $(OUT)/bench/probe_cost_nop1 $(OUT)/bench/rate \
              $(OUT)/bench/model_cost \
              $(OUT)/bench/floor $(OUT)/bench/fast_floor $(OUT)/bench/burst $(OUT)/bench/forks

# libbpf >= 1.3: USDT attaches through one uprobe_multi link per binary (one
# detach synchronisation instead of one per site). tools/deps.sh installs it.
LIBBPF_MIN := 1.3
LIBBPF_VER := $(shell pkg-config --modversion libbpf 2>/dev/null)
# (test, demo and bench install the deps first, then build in a fresh make)
ifneq ($(filter-out deps clean test test-full demo bench uninstall,$(or $(MAKECMDGOALS),all)),)
ifneq ($(LIBBPF_VER),)
ifneq ($(shell printf '%s\n%s\n' $(LIBBPF_MIN) $(LIBBPF_VER) | sort -V | head -1),$(LIBBPF_MIN))
$(error tracebpf needs libbpf >= $(LIBBPF_MIN), found $(LIBBPF_VER): run 'sudo make deps' (Debian 12: libbpf-dev from bookworm-backports))
endif
endif
endif

# keep the BPF objects (bpftool can inspect them)
.SECONDARY:

.PHONY: all deps demo test test-full test-unit test-header test-integration bench clean

all: $(OUT)/tracebpf $(OUT)/libtracebpf.so $(OUT)/libtracebpf.so.$(LIB_SOMAJOR) $(OUT)/demo $(PROG_BINS) $(UNIT_TESTS) $(BENCH_BINS) $(OUT)/fuzz/fuzz_reader

deps:
	$(Q)bash tools/deps.sh

$(OUT) $(OUT)/bpf $(OUT)/user $(OUT)/lib $(OUT)/progs $(OUT)/unit $(OUT)/bench:
	$(Q)mkdir -p $@

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c bpf/*.h lib/format/tbrecords.h vmlinux/$(ARCH)/vmlinux.h | $(OUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(OUT)/user/%.o: user/%.c user/*.h user/*/*.h $(LIB_HDRS) $(CLIENT_HDRS) bpf/*.h $(SKELS) | $(OUT)/user
	$(Q)mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

# libtracebpf's objects: only the API of lib/include/tracebpf/ is visible
# outside the shared library.
$(OUT)/lib/%.o: lib/%.c $(LIB_HDRS) | $(OUT)/lib
	$(Q)mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(LIB_CFLAGS) -c $< -o $@

$(OUT)/libtracebpf.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# The shared library exports the tracebpf_ API only; it needs libc, zlib
# and libtraceevent, nothing else (tests/integration/test_library.py).
$(OUT)/$(LIB_SO): $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared -Wl,-soname,libtracebpf.so.$(LIB_SOMAJOR) -Wl,--no-undefined \
		-Wl,-z,defs -o $@ $^ $(LIB_LDLIBS)

$(OUT)/libtracebpf.so.$(LIB_SOMAJOR) $(OUT)/libtracebpf.so: $(OUT)/$(LIB_SO)
	$(Q)ln -sf $(LIB_SO) $@

$(OUT)/tracebpf: $(LOAD_OBJS) $(CLI_OBJS) $(WRITER_OBJ) $(OUT)/libtracebpf.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(USER_CFLAGS) $^ $(USER_LDLIBS) -o $@

# ---- instrumented programs ----
$(OUT)/demo: examples/demo.c $(CLIENT_HDRS) | $(OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUT)/progs/libtbtest.so: tests/progs/libtbtest.c $(CLIENT_HDRS) | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared $< -o $@

$(OUT)/progs/libtbdl.so: tests/progs/libtbdl.c $(CLIENT_HDRS) | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared $< -o $@

$(OUT)/progs/libchaosdl.so: tests/progs/libchaosdl.c $(CLIENT_HDRS) | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared $< -o $@

$(OUT)/progs/%: tests/progs/%.cc $(CLIENT_HDRS) | $(OUT)/progs
	$(call msg,CXX,$@)
	$(Q)$(CXX) -std=c++17 -O2 -g -Wall -Wextra -Werror -Ilib/include -pthread $< -o $@

$(OUT)/progs/lib_user: tests/progs/lib_user.c $(OUT)/progs/libtbtest.so
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -L$(OUT)/progs -ltbtest -Wl,-rpath,'$$ORIGIN' -o $@

# 2,000 sites in an executable and 2,000 in a library it links (generated).
# One run of the generator writes both files: a grouped target (&:), so a
# parallel make runs it once.
MANY_SITES := 2000
$(OUT)/gen/many_sites.c $(OUT)/gen/libmany_sites.c &: tests/progs/gen_many_sites.py
	$(call msg,GEN,$(OUT)/gen/many_sites.c)
	$(Q)python3 $< $(MANY_SITES) $(OUT)/gen

$(OUT)/progs/libmany_sites.so: $(OUT)/gen/libmany_sites.c $(CLIENT_HDRS) | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared $< -o $@

$(OUT)/progs/many_sites: $(OUT)/gen/many_sites.c $(OUT)/progs/libmany_sites.so
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -L$(OUT)/progs -lmany_sites -Wl,-rpath,'$$ORIGIN' -o $@

$(OUT)/progs/libsdt.so: tests/progs/libsdt.c | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(SDT_CFLAGS) -fPIC -shared $< -o $@

# sdt_app's semaphore-guarded probe is a unit of its own built from the
# same file: <sys/sdt.h>'s _SDT_HAS_SEMAPHORES gives every probe of a unit
# a semaphore, and only sdtapp:guarded is to have one.
$(OUT)/progs/sdt_app_guarded.o: tests/progs/sdt_app.c | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(SDT_CFLAGS) -DSDT_APP_GUARDED_UNIT -c $< -o $@

$(OUT)/progs/sdt_app: tests/progs/sdt_app.c $(OUT)/progs/sdt_app_guarded.o $(OUT)/progs/libsdt.so
	$(call msg,CC,$@)
	$(Q)$(CC) $(SDT_CFLAGS) $< $(OUT)/progs/sdt_app_guarded.o -L$(OUT)/progs -lsdt \
		-Wl,-rpath,'$$ORIGIN' -o $@

$(OUT)/progs/sdt_exec: tests/progs/sdt_exec.c | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(SDT_CFLAGS) $< -o $@

$(OUT)/progs/phases_slow: tests/progs/phases.c $(CLIENT_HDRS) | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -DTRACEBPF_NO_FAST_PATH $< -o $@

$(OUT)/progs/redzone: tests/progs/redzone.c $(CLIENT_HDRS) | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -O2 $< -o $@

$(OUT)/progs/%: tests/progs/%.c $(CLIENT_HDRS) tests/progs/now_ns.h | $(OUT)/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# ---- unit tests (cmocka) ----
$(OUT)/unit/%: tests/unit/%.c tests/unit/tmpdir.h tests/unit/recs.h tests/unit/rnd.h $(CORE_SRCS) $(LIB_HDRS) user/*.h user/*/*.h | $(OUT)/unit
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -Wno-unused-parameter $< $(CORE_SRCS) -lcmocka -ldeflate -lz -ltraceevent -o $@

# test_fast_read includes the recorder's ring reader and trace.h's producer
$(OUT)/unit/test_fast_read: user/fast/fast_read.c $(CLIENT_HDRS)

# test_fast_dir includes the fast path's directories (libbpf for the pins)
$(OUT)/unit/test_fast_dir: tests/unit/test_fast_dir.c tests/unit/tmpdir.h user/fast/fast_dir.c user/*/*.h | $(OUT)/unit
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -Wno-unused-parameter $< -lcmocka -lbpf -o $@

# ---- benchmarks ----
$(OUT)/bench/probe_cost: bench/probe_cost.c bench/threads.h $(CLIENT_HDRS) tests/progs/now_ns.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUT)/bench/probe_cost_nop1: bench/probe_cost.c bench/threads.h $(CLIENT_HDRS) tests/progs/now_ns.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -DTRACEBPF_PROBE_NOP1 $< -o $@

# The reference BPF program a recorded hit is measured against.
$(OUT)/bench/floor.bpf.o: bench/floor.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(OUT)/bench
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/floor.skel.h: $(OUT)/bench/floor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name floor_bpf > $@.tmp && mv $@.tmp $@

$(OUT)/bench/floor: bench/floor.c $(OUT)/floor.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -lbpf -lelf -lz -o $@

# The trace model's stages (read, merge, model), reader side only.
$(OUT)/bench/model_cost: bench/model_cost.c $(CORE_SRCS) $(LIB_HDRS) user/*.h user/*/*.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< $(CORE_SRCS) -ldeflate -lz -ltraceevent -o $@

$(OUT)/bench/rate: bench/rate.c $(CLIENT_HDRS) tests/progs/now_ns.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# The fast path's protocol alone, in a plain shared mapping (its floor).
$(OUT)/bench/fast_floor: bench/fast_floor.c bench/threads.h $(CLIENT_HDRS) tests/progs/now_ns.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# Many threads' bursts (bench/burst.sh builds its LTTng-UST twin).
$(OUT)/bench/burst: bench/burst.c $(CLIENT_HDRS) tests/progs/now_ns.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUT)/bench/forks: bench/forks.c $(CLIENT_HDRS) tests/progs/now_ns.h | $(OUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# ---- top-level jobs ----
# Each job first makes sure the dependencies are there, then builds in a
# fresh make (so flags computed from the tools see the installed ones).
demo:
	$(Q)bash tools/deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash tools/demo.sh

test:
	$(Q)bash tools/deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash tests/run.sh

test-full:
	$(Q)bash tools/deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash tests/run.sh full

test-unit: all
	$(Q)bash tests/run.sh unit

test-integration: all
	$(Q)bash tests/run.sh integration

bench:
	$(Q)bash tools/deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash bench/run.sh

clean:
	$(Q)rm -rf $(OUT)

# ---- fuzzing (libFuzzer, clang) ----
# make fuzz FUZZ_TIME=300   runs the target (reader, convert with filters and
# --split, report: tests/fuzz/fuzz_reader.c) on tests/fuzz/corpus
FUZZ_TIME ?= 60
$(OUT)/fuzz/fuzz_reader: tests/fuzz/fuzz_reader.c tests/unit/tmpdir.h $(CORE_SRCS) $(LIB_HDRS) user/*.h user/*/*.h
	$(Q)mkdir -p $(OUT)/fuzz
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-D_GNU_SOURCE -Iuser -Ilib -Ibpf -Ilib/include -I/usr/include/traceevent $< $(CORE_SRCS) -ldeflate -lz -ltraceevent -o $@

# ---- the chaos run (tests/chaos/chaos.py; tests/run.sh runs 60 s) ----
DURATION ?= 600
.PHONY: chaos
chaos:
	$(Q)bash tools/deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)/usr/bin/python3 tests/chaos/chaos.py $(DURATION)

.PHONY: fuzz
fuzz: $(OUT)/fuzz/fuzz_reader
	$(Q)mkdir -p $(OUT)/fuzz/corpus
	$(Q)$(OUT)/fuzz/fuzz_reader -max_total_time=$(FUZZ_TIME) -rss_limit_mb=512 -timeout=10 \
		-max_len=65536 $(OUT)/fuzz/corpus tests/fuzz/corpus

# ---- man pages ----
# Man pages from docs/*.md (tools/md2man.sh, lowdown): section 1 for the
# command and each docs/tracebpf-CMD.md, section 3 for the client API.
MAN1 := $(patsubst docs/%.md,$(OUT)/man/%.1,docs/tracebpf.md $(wildcard docs/tracebpf-*.md))
MAN3 := $(OUT)/man/tracebpf.3 $(OUT)/man/libtracebpf.3

.PHONY: man
all: man
man: $(MAN1) $(MAN3)

$(OUT)/man:
	$(Q)mkdir -p $@

$(OUT)/man/%.1: docs/%.md tools/md2man.sh | $(OUT)/man
	$(call msg,MAN,$@)
	$(Q)bash tools/md2man.sh $< $* 1 $(VERSION) > $@.tmp && mv $@.tmp $@

$(OUT)/man/tracebpf.3: docs/api.md tools/md2man.sh | $(OUT)/man
	$(call msg,MAN,$@)
	$(Q)bash tools/md2man.sh $< tracebpf 3 $(VERSION) > $@.tmp && mv $@.tmp $@

$(OUT)/man/libtracebpf.3: docs/libtracebpf.md tools/md2man.sh | $(OUT)/man
	$(call msg,MAN,$@)
	$(Q)bash tools/md2man.sh $< libtracebpf 3 $(VERSION) > $@.tmp && mv $@.tmp $@

# ---- install (make install PREFIX=/usr DESTDIR=/tmp/stage; uninstall alike) ----
# Everything installed is one list of MODE:FILE:DIR entries that install and
# uninstall both walk (tools/install.sh): a file added to INSTALL_FILES is
# installed and uninstalled (a symbolic link, libtracebpf.so ->
# libtracebpf.so.0.1.0, is installed as the same link).
# tracebpf.pc (the client header) and libtracebpf.pc (the reader library)
# go to LIBDIR/pkgconfig, not the architecture-independent share/pkgconfig:
# trace.h is x86_64-only (its probes name x86 registers), and the library
# is per architecture too. Both directories are on pkg-config's default
# path for /usr and /usr/local.
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
INCLUDEDIR   ?= $(PREFIX)/include
LIBDIR       ?= $(PREFIX)/lib
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR       ?= $(PREFIX)/share/man
# what install put there (files, new directories), read by uninstall
INSTALL_MANIFEST := $(PREFIX)/share/tracebpf/installed

INSTALL_FILES := 755:$(OUT)/tracebpf:$(BINDIR) \
                 $(foreach h,$(wildcard lib/include/tracebpf/*.h),644:$(h):$(INCLUDEDIR)/tracebpf) \
                 644:$(OUT)/tracebpf.pc:$(PKGCONFIGDIR) \
                 644:$(OUT)/libtracebpf.pc:$(PKGCONFIGDIR) \
                 644:$(OUT)/libtracebpf.a:$(LIBDIR) \
                 755:$(OUT)/$(LIB_SO):$(LIBDIR) \
                 777:$(OUT)/libtracebpf.so.$(LIB_SOMAJOR):$(LIBDIR) \
                 777:$(OUT)/libtracebpf.so:$(LIBDIR) \
                 $(foreach m,$(MAN1),644:$(m):$(MANDIR)/man1) \
                 $(foreach c,$(wildcard tools/usdt/*.usdt),644:$(c):$(PREFIX)/share/tracebpf/usdt) \
                 $(foreach m,$(MAN3),644:$(m):$(MANDIR)/man3)

.PHONY: install uninstall FORCE

# Rewritten only when PREFIX (or the template) changed.
$(OUT)/%.pc: lib/%.pc.in FORCE | $(OUT)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|' \
		-e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
		-e 's|@VERSION@|$(VERSION)|' $< > $@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

install: $(foreach e,$(INSTALL_FILES),$(word 2,$(subst :, ,$(e))))
	$(Q)bash tools/install.sh install '$(DESTDIR)' '$(INSTALL_MANIFEST)' $(INSTALL_FILES)

uninstall:
	$(Q)bash tools/install.sh uninstall '$(DESTDIR)' '$(INSTALL_MANIFEST)' $(INSTALL_FILES)
