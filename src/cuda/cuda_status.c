/* cuda_status.c — what a library's answer at setup means for a record: the
 * library declining a problem (the record is skipped with its reason) or an error
 * (the record fails). Host logic alone, so that tests/test_cuda_host.c checks it
 * on a machine without a GPU. */
#include "cuda_common.h"

#include <stdio.h>

int fc_cublaslt_heuristic_verdict(cublasStatus_t st, int found, const char *what, fc_err *e)
{
    if (st == CUBLAS_STATUS_SUCCESS && found >= 1) return 0;
    if (st == CUBLAS_STATUS_SUCCESS || st == CUBLAS_STATUS_NOT_SUPPORTED) {
        fc_errf(e, "cuBLASLt has no algorithm for %s (cublasLtMatmulAlgoGetHeuristic: %s, %d candidates)", what,
                cublasGetStatusName(st), found);
        return FC_DECLINED;
    }
    return fc_errf(e, "cublasLtMatmulAlgoGetHeuristic failed for %s: %s (%s)", what, cublasGetStatusString(st),
                   cublasGetStatusName(st));
}

bool fc_cudnn_refuses(int status)
{
    const int category = status / 1000;
    return status > 0 && (category == 2 || category == 3);
}
