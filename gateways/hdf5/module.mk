# gateways/hdf5 — the HDF5 virtual file driver (issue 34): an HDF5 file
# stored as one Strata object (gateways/hdf5/README.md, docs/hdf5.md).
# One driver source (h5fd_strata.c) built twice over the same store side
# (h5_store.c, h5_io.c, no HDF5 in them):
#   $(BUILD)/libstrata_h5.a, .so       against Debian's HDF5 1.10 headers
#                                      (H5Pset_fapl_strata(), strata_h5.h)
#   $(BUILD)/hdf5-plugin/libh5fd_strata.so
#                                      the plugin HDF5 >= 1.14 loads by name
#                                      (HDF5_DRIVER=strata), built against
#                                      h5fd_abi.h; it links no libhdf5 and
#                                      carries libstrata.a inside, hidden
# Only the driver's objects see the HDF5 include path.
H5_CFLAGS = $(shell pkg-config --cflags hdf5 2>/dev/null || echo -I/usr/include/hdf5/serial)
H5_LIBS = $(shell pkg-config --libs hdf5 2>/dev/null || echo -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5)
H5_STORE_OBJS := $(addprefix $(BUILD)/obj/gateways/hdf5/,h5_store.o h5_io.o)
H5_VFD_OBJS := $(BUILD)/obj/gateways/hdf5/h5fd_strata.o $(H5_STORE_OBJS)
H5_PLUGIN := $(BUILD)/hdf5-plugin/libh5fd_strata.so

$(BUILD)/obj/gateways/hdf5/h5fd_strata.o: CFLAGS += $(H5_CFLAGS)
$(BUILD)/pobj/gateways/hdf5/h5fd_strata.o: gateways/hdf5/h5fd_strata.c | $(PROTO_HS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -DSTRATA_H5_PLUGIN -MMD -MP -c $< -o $@

$(BUILD)/libstrata_h5.a: $(H5_VFD_OBJS)
	@rm -f $@; ar rcs $@ $^
# Its soname is libstrata_h5.so.0 (the link below, as libstrata.so.0 in
# clovis/examples/module.mk); it finds libstrata.so.0 beside it ($ORIGIN).
$(BUILD)/libstrata_h5.so: $(H5_VFD_OBJS) $(BUILD)/libstrata.so $(BUILD)/libstrata.so.0
	$(CC) -shared -Wl,-soname,libstrata_h5.so.0 -o $@ $(H5_VFD_OBJS) \
		$(LDFLAGS_ALL) -L$(BUILD) -lstrata -Wl,-rpath,'$$ORIGIN' \
		$(H5_LIBS) -lpthread
$(BUILD)/libstrata_h5.so.0: $(BUILD)/libstrata_h5.so
	ln -sf libstrata_h5.so $@
# -z defs: every symbol resolved here, so no HDF5 symbol can slip in.
$(H5_PLUGIN): $(BUILD)/pobj/gateways/hdf5/h5fd_strata.o $(H5_STORE_OBJS) $(BUILD)/libstrata.a
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $^ $(LDFLAGS_ALL) -Wl,--exclude-libs,ALL \
		-Wl,-z,defs $(PKG_LIBS) -lpthread -ldl
BINS += $(BUILD)/libstrata_h5.a $(BUILD)/libstrata_h5.so \
	$(BUILD)/libstrata_h5.so.0 $(H5_PLUGIN)

# Test programs: h5vfd_check (tests/integ/hdf5_vfd_test.sh) and the
# benchmark strata_bench_hdf5 (tests/bench/bench_hdf5.py).
$(BUILD)/obj/gateways/hdf5/tests/h5vfd_check.o: CFLAGS += $(H5_CFLAGS)
$(BUILD)/h5vfd_check: $(BUILD)/obj/gateways/hdf5/tests/h5vfd_check.o $(BUILD)/libstrata_h5.a $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(H5_LIBS) $(PKG_LIBS) -lpthread
$(BUILD)/obj/tests/bench/bench_hdf5.o: CFLAGS += $(H5_CFLAGS)
$(BUILD)/strata_bench_hdf5: $(BUILD)/obj/tests/bench/bench_hdf5.o $(BUILD)/libstrata_h5.a $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(H5_LIBS) $(PKG_LIBS) -lpthread
TEST_BINS += $(BUILD)/h5vfd_check $(BUILD)/strata_bench_hdf5
-include gateways/hdf5/h5map.mk
