# clovis/cli — the strata command-line tool, linked with the static library.
# The `strata h5` commands are the HDF5 object view's (H5MAP_OBJS, linked
# with HDF5: gateways/hdf5/h5map.mk).
include gateways/hdf5/h5map.mk
CLI_SRCS := $(wildcard clovis/cli/*.c)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/strata

# --as-needed: the libraries the program does not call are not loaded.
# libfabric is among them: core/rpc loads it on first use (dlopen,
# core/rpc/README.md "Loading libfabric"), so a command that never opens
# an endpoint starts without its libraries' constructors (libinfinipath
# and libpsm2 on Debian: about 0.2 s of usleep() loops a process).
$(BUILD)/strata: $(CLI_OBJS) $(H5MAP_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -Wl,--as-needed $(PKG_LIBS) $(H5MAP_LIBS) -lpthread
