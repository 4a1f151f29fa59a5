build2/obj/gateways/s3/s3_util.o: gateways/s3/s3_util.c gateways/s3/s3.h \
 clovis/clovis.h
gateways/s3/s3.h:
clovis/clovis.h:
