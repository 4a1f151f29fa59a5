# fdmi/ — FDMI (issue 31): consumers of the engine's record log (filters,
# next/ack, lag bounds, the trimmer).  See fdmi/README.md.
LIB_SRCS += fdmi/fdmi.c
#UT_SRCS += fdmi/ut/fdmi_ut.c
