# fdmi/ — FDMI (issue 31): consumers of the engine's record log (filters,
# next/ack, lag bounds, the trimmer), and the cluster server's FDMI module
# (the FDMI opcode).  See fdmi/README.md.
LIB_SRCS += fdmi/fdmi.c fdmi/srv_fdmi.c
PROTOS += fdmi/fdmi.proto
