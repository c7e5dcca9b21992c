#ifndef C_PROTOBUF_C_SHIM_H
#define C_PROTOBUF_C_SHIM_H

/* System protobuf-c runtime (Debian: libprotobuf-c-dev, pkg-config libprotobuf-c). */
#include <protobuf-c/protobuf-c.h>

/* A ProtobufCBuffer with a pointer for its append callback: protobuf-c passes the buffer back to
   `append`, which finds its destination in `context` (used to pack messages straight into a file). */
typedef struct {
  ProtobufCBuffer base;
  void *context;
} mc_context_buffer;

#endif /* C_PROTOBUF_C_SHIM_H */
