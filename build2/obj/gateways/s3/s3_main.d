build2/obj/gateways/s3/s3_main.o: gateways/s3/s3_main.c gateways/s3/s3.h \
 clovis/clovis.h
gateways/s3/s3.h:
clovis/clovis.h:
