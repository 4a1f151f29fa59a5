build2/obj/tests/integ/netns_client.o: tests/integ/netns_client.c \
 clovis/clovis.h
clovis/clovis.h:
