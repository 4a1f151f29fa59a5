# clovis/examples — example programs, linked with the shared library only,
# which exports nothing but clovis_*: they prove the public API suffices.
EXAMPLES := hello metrics_app isc_stats isc_grep isc_wordcount
BINS += $(EXAMPLES:%=$(BUILD)/examples/%)

# The shared library's soname is libstrata.so.0; the examples find it next
# to libstrata.so through their rpath ($ORIGIN/..).
$(BUILD)/libstrata.so.0: $(BUILD)/libstrata.so
	ln -sf libstrata.so $@

$(BUILD)/examples/%: $(BUILD)/obj/clovis/examples/%.o $(BUILD)/libstrata.so \
		$(BUILD)/libstrata.so.0
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $< -L$(BUILD) -lstrata \
		-Wl,-rpath,'$$ORIGIN/..' $(PKG_LIBS)

# isc_stats computes its float64 array and figures with libm.
$(BUILD)/examples/isc_stats: PKG_LIBS += -lm
