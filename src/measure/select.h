/* select.h — which devices and backends a command works on, from --device and
 * --backend, shared by run, info, list and check --run. */
#ifndef FC_SELECT_H
#define FC_SELECT_H

#include "registry.h"

/* Something worth telling the user while selecting ("cuda: no GPU; measuring the
 * cpu only"); may be NULL. */
typedef void (*fc_note_fn)(void *ctx, const char *msg);

/* The devices --device names (NULL: `dflt`): a device name or "all", usable
 * here or not (`list` shows what is not). */
int fc_select_named_devices(const char *arg, const char *dflt, bool on[FC_NDEVICES], fc_err *e);

/* Parses --device (NULL: `dflt`): a device name or "all". A named device must be
 * built and usable here, else an error; "all" takes every built and usable
 * device and notes the others. */
int fc_select_devices(const fc_registry *reg, const char *arg, const char *dflt, bool on[FC_NDEVICES], fc_note_fn note,
                      void *note_ctx, fc_err *e);

/* The backends to measure: the named ones (each built, usable, on a selected
 * device when --device was given), or else every built and usable backend on
 * the selected devices (the unusable ones noted). */
int fc_select_backends(const fc_registry *reg, const bool dev_on[FC_NDEVICES], bool device_given,
                       const char *const *names, int nnames, const fc_backend **out, int *nout, fc_note_fn note,
                       void *note_ctx, fc_err *e);

/* Whether the backend called `name` is in this build and usable here, with its
 * device; else why not, naming it ("backend 'x' is not in this build"). */
bool fc_backend_usable(const fc_registry *reg, const char *name, char *why, size_t n);

/* "cpu, cuda, all" */
const char *fc_device_choices(void);

#endif
