build2/obj/gateways/s3/s3_auth.o: gateways/s3/s3_auth.c gateways/s3/s3.h \
 clovis/clovis.h
gateways/s3/s3.h:
clovis/clovis.h:
