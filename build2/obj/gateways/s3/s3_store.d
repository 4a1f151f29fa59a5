build2/obj/gateways/s3/s3_store.o: gateways/s3/s3_store.c \
 gateways/s3/s3.h clovis/clovis.h
gateways/s3/s3.h:
clovis/clovis.h:
