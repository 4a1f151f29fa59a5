# gateways/s3 — strata-s3, the S3 protocol gateway (libmicrohttpd), a plain
# Clovis client linked with the release library.
S3_SRCS := $(addprefix gateways/s3/,s3_main.c s3_auth.c s3_store.c s3_store_tx.c s3_store_io.c s3_ops.c s3_ops_bucket.c s3_ops_object.c s3_ops_list.c s3_ops_multipart.c s3_acl.c s3_policy.c s3_tagging.c s3_bconf.c s3_util.c s3_sum.c s3_cksum.c s3_view.c s3_view_list.c)
# The POSIX namespace (gateways/posix/ns.h), which view buckets serve
# (s3_view.h): its sources named here, as gateways/posix/module.mk (which
# defines POSIX_NS_SRCS) is read after this file and a rule's prerequisites
# are expanded as it is read.
S3_NS_SRCS := gateways/posix/ns.c gateways/posix/ns_io.c gateways/posix/ns_xattr.c
S3_OBJS := $(S3_SRCS:%.c=$(BUILD)/obj/%.o) $(S3_NS_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/strata-s3
$(S3_OBJS): CFLAGS += $(shell pkg-config --cflags libmicrohttpd json-c 2>/dev/null)
$(BUILD)/strata-s3: $(S3_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(shell pkg-config --libs libmicrohttpd json-c 2>/dev/null) $(PKG_LIBS) -lpthread
# strata-s3-test: the same gateway with fault points (the test library, and
# the gateway's own points "s3.dtx.before" / "s3.dtx.after", which SIGKILL
# it around the commit of a change), for the kill test.
S3_TOBJS := $(S3_SRCS:%.c=$(BUILD)/tobj/%.o) $(S3_NS_SRCS:%.c=$(BUILD)/tobj/%.o)
TEST_BINS += $(BUILD)/strata-s3-test
$(S3_TOBJS): CFLAGS += $(shell pkg-config --cflags libmicrohttpd json-c 2>/dev/null)
$(BUILD)/strata-s3-test: $(S3_TOBJS) $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(shell pkg-config --libs libmicrohttpd json-c 2>/dev/null) $(PKG_LIBS) $(TEST_LIBS) -lpthread
# s3_posix_tool: the POSIX side of the view-bucket test
# (tests/s3_posix_test.sh): makes a namespace, writes and reads files
# through ns.h, on an embedded store or a cluster.
TEST_BINS += $(BUILD)/s3_posix_tool
$(BUILD)/s3_posix_tool: $(BUILD)/tobj/gateways/s3/tests/s3_posix_tool.o $(S3_NS_SRCS:%.c=$(BUILD)/tobj/%.o) $(BUILD)/libstrata-test.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
# Unit tests of the gateway's checksums (suite "s3sum", module "s3" of
# ut_main), with the two files they need.
UT_SRCS += gateways/s3/ut/s3_sum_ut.c gateways/s3/s3_sum.c gateways/s3/s3_util.c
