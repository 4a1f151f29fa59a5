# gateways/posix — the POSIX view (issue 33): the namespace library on
# Clovis indices and objects (ns.h), strata-fuse (libfuse3, low-level API)
# serving it to the kernel, and the pNFS flexfiles layout encoder
# (pnfs_ff.h).  See gateways/posix/README.md and docs/posix.md.
POSIX_NS_SRCS := gateways/posix/ns.c gateways/posix/ns_io.c gateways/posix/ns_xattr.c
FUSE3_CFLAGS = $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE3_LIBS = $(shell pkg-config --libs fuse3 2>/dev/null)
POSIX_FUSE_SRCS := gateways/posix/fuse_main.c $(POSIX_NS_SRCS)
POSIX_FUSE_OBJS := $(POSIX_FUSE_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/strata-fuse
$(POSIX_FUSE_OBJS): CFLAGS += $(FUSE3_CFLAGS)
$(BUILD)/strata-fuse: $(POSIX_FUSE_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(FUSE3_LIBS) $(PKG_LIBS) -lpthread
# Suites "posix_ns" (the namespace on an embedded store) and "pnfs" (the
# flexfiles layout and its XDR) of ut_main.
UT_SRCS += gateways/posix/ut/ns_ut.c gateways/posix/ut/pnfs_ut.c \
	$(POSIX_NS_SRCS) gateways/posix/pnfs_ff.c
