/* builtin.h — this build's registry (see src/core/registry.h). */
#ifndef FC_BUILTIN_H
#define FC_BUILTIN_H

#include "registry.h"

extern const fc_registry fc_builtin;

#endif
