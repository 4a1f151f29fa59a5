# gateways/hdf5/h5map.mk — the HDF5 object view (issue 34 point 2,
# docs/hdf5.md): the mapping library (h5map.h) and the
# `strata h5` commands (h5map_cli.c) linked into the strata CLI, and the
# test-file generator h5gen (tests/integ/h5map_test.sh).
#
# Included at the top of clovis/cli/module.mk, whose link of strata names
# H5MAP_OBJS and H5MAP_LIBS; guarded, so that a second include (from
# gateways/hdf5/module.mk) adds nothing.  Only the files that call HDF5
# see its include path.
ifndef H5MAP_MK
H5MAP_MK := 1
H5MAP_CFLAGS = $(shell pkg-config --cflags hdf5-serial 2>/dev/null || echo -I/usr/include/hdf5/serial)
H5MAP_LIBS = $(shell pkg-config --libs hdf5-serial 2>/dev/null || echo -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5)
H5MAP_SRCS := $(addprefix gateways/hdf5/,h5map.c h5map_walk.c h5map_import.c \
	h5map_export.c h5map_cli.c)
H5MAP_OBJS := $(H5MAP_SRCS:%.c=$(BUILD)/obj/%.o)
$(BUILD)/obj/gateways/hdf5/h5map_import.o \
$(BUILD)/obj/gateways/hdf5/h5map_export.o: CFLAGS += $(H5MAP_CFLAGS)

# h5gen DIR: the HDF5 files of the test (HDF5 alone, no Strata).
$(BUILD)/obj/gateways/hdf5/tests/h5gen.o: CFLAGS += $(H5MAP_CFLAGS)
$(BUILD)/h5gen: $(BUILD)/obj/gateways/hdf5/tests/h5gen.o
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(H5MAP_LIBS)
TEST_BINS += $(BUILD)/h5gen
endif
