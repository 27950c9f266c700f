/* custom_parts.h — cuda.custom is made of parts, one per family it runs: attention
 * (backend_custom.c: cuBLAS GEMMs and fusecal's softmax and flash kernels), the norms
 * (custom_norm.c: fusecal's row and head kernels) and the linear family's GELU prologue
 * and gated unit
 * (custom_linear.c: fusecal's GEMM with a GELU prologue or a SwiGLU epilogue). Each part is a whole fc_backend;
 * custom.c is the registered cuda.custom, answering through the part that owns the
 * problem's family. */
#ifndef FC_CUSTOM_PARTS_H
#define FC_CUSTOM_PARTS_H

#include "backend.h"

extern const fc_backend fc_custom_attention, fc_custom_norm, fc_custom_linear;

#endif
