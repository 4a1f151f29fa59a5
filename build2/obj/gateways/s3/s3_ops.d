build2/obj/gateways/s3/s3_ops.o: gateways/s3/s3_ops.c gateways/s3/s3.h \
 clovis/clovis.h
gateways/s3/s3.h:
clovis/clovis.h:
