/* vocab.h — fusecal's vocabularies, one list each. Parsing, the "(valid: …)"
 * messages, `fusecal list` and the JSON Schemas' enums all come from these lists
 * (tests/test_vocab.c fails when a schema enum and a list disagree).
 */
#ifndef FC_VOCAB_H
#define FC_VOCAB_H

#include "fusecal.h"

/* Devices: id, name, what it is. */
#define FC_DEVICE_LIST(X)                                                                          \
    X(cpu, "cpu", "the host CPU: OpenMP threads, LLC flush, host memory")                          \
    X(cuda, "cuda", "NVIDIA GPUs through the CUDA runtime: events, L2 flush, graph replay")

typedef enum {
#define X(id, name, summary) FC_DEV_##id,
    FC_DEVICE_LIST(X)
#undef X
        FC_NDEVICES
} fc_device_id;

/* Backends: id, name, device id. */
#define FC_BACKEND_LIST(X)                                                                         \
    X(cpu_openblas, "cpu.openblas", cpu)                                                           \
    X(cpu_onednn, "cpu.onednn", cpu)                                                               \
    X(cuda_cublas, "cuda.cublas", cuda)                                                            \
    X(cuda_cudnn, "cuda.cudnn", cuda)                                                              \
    X(cuda_custom, "cuda.custom", cuda)

typedef enum {
#define X(id, name, dev) FC_BK_##id,
    FC_BACKEND_LIST(X)
#undef X
        FC_NBACKENDS
} fc_backend_id;

typedef struct fc_device_word {
    const char *name, *summary;
} fc_device_word;
typedef struct fc_backend_word {
    const char *name;
    fc_device_id device;
} fc_backend_word;
extern const fc_device_word fc_device_words[FC_NDEVICES];
extern const fc_backend_word fc_backend_words[FC_NBACKENDS];

int fc_device_id_parse(const char *s, fc_device_id *out);   /* 0 or -1 */
int fc_backend_id_parse(const char *s, fc_backend_id *out); /* 0 or -1 */

#endif
