/* select.c — see select.h. */
#include "select.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void notef(fc_note_fn note, void *ctx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void notef(fc_note_fn note, void *ctx, const char *fmt, ...)
{
    if (!note) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    note(ctx, msg);
}

const char *fc_device_choices(void)
{
    static char buf[128];
    if (!buf[0]) {
        size_t off = 0;
        for (int i = 0; i < FC_NDEVICES; i++)
            off += (size_t)snprintf(buf + off, sizeof buf - off, "%s, ", fc_device_words.names[i]);
        snprintf(buf + off, sizeof buf - off, "all");
    }
    return buf;
}

/* Built and usable; else why not. */
static bool device_usable(const fc_registry *reg, fc_device_id d, char *why, size_t n)
{
    if (!reg->device[d]) {
        snprintf(why, n, "%s", reg->device_why_not[d] ? reg->device_why_not[d] : "not built");
        return false;
    }
    return reg->device[d]->available(why, n);
}

int fc_select_named_devices(const char *arg, const char *dflt, bool on[FC_NDEVICES], fc_err *e)
{
    const char *a = arg ? arg : dflt;
    fc_device_id d = FC_DEV_cpu;
    bool all = !strcmp(a, "all");
    if (!all && fc_device_id_parse(a, &d) != 0)
        return fc_errf(e, "unknown device '%s' (valid: %s)", a, fc_device_choices());
    for (int i = 0; i < FC_NDEVICES; i++) on[i] = all || i == (int)d;
    return 0;
}

int fc_select_devices(const fc_registry *reg, const char *arg, const char *dflt, bool on[FC_NDEVICES], fc_note_fn note,
                      void *note_ctx, fc_err *e)
{
    const char *a = arg ? arg : dflt;
    memset(on, 0, FC_NDEVICES * sizeof *on);
    char why[256];
    if (!strcmp(a, "all")) {
        for (int d = 0; d < FC_NDEVICES; d++) {
            why[0] = 0;
            on[d] = device_usable(reg, (fc_device_id)d, why, sizeof why);
            if (!on[d] && arg) notef(note, note_ctx, "%s: %s; left out", fc_device_words.names[d], why);
        }
        return 0;
    }
    fc_device_id d;
    if (fc_device_id_parse(a, &d) != 0) return fc_errf(e, "unknown device '%s' (valid: %s)", a, fc_device_choices());
    why[0] = 0;
    if (!device_usable(reg, d, why, sizeof why)) return fc_errf(e, "--device %s: not usable here: %s", a, why);
    on[d] = true;
    return 0;
}

bool fc_backend_usable(const fc_registry *reg, const char *name, char *why, size_t n)
{
    fc_backend_id id;
    bool known = fc_backend_id_parse(name, &id) == 0;
    const fc_backend *b = known ? reg->backend[id] : NULL;
    char w[256] = "";
    if (!b) {
        const char *because = known ? reg->backend_why_not[id] : NULL;
        snprintf(why, n, "backend '%s' is not in this build%s%s", name, because ? ": " : "", because ? because : "");
        return false;
    }
    if (!b->available(w, sizeof w)) {
        snprintf(why, n, "backend '%s' is not usable here: %s", name, w);
        return false;
    }
    fc_device_id dev = fc_backend_device(id);
    w[0] = 0;
    if (!device_usable(reg, dev, w, sizeof w)) {
        snprintf(why, n, "backend '%s' needs device '%s': %s", name, fc_device_words.names[dev], w);
        return false;
    }
    return true;
}

int fc_select_backends(const fc_registry *reg, const bool dev_on[FC_NDEVICES], bool device_given,
                       const char *const *names, int nnames, const fc_backend **out, int *nout, fc_note_fn note,
                       void *note_ctx, fc_err *e)
{
    char why[256];
    *nout = 0;
    for (int i = 0; i < nnames; i++) {
        fc_backend_id id;
        if (fc_backend_id_parse(names[i], &id) != 0) {
            return fc_errf(e, "unknown backend '%s' (valid: %s)", names[i], fc_words_valid(&fc_backend_words));
        }
        const fc_backend *b = reg->backend[id];
        fc_device_id dev = fc_backend_device(id);
        if (device_given && b && !dev_on[dev])
            return fc_errf(e, "backend '%s' runs on '%s', which --device leaves out", names[i],
                           fc_device_words.names[dev]);
        if (!fc_backend_usable(reg, names[i], why, sizeof why)) return fc_errf(e, "%s", why);
        bool dup = false;
        for (int k = 0; k < *nout; k++) dup |= out[k] == b;
        if (!dup) out[(*nout)++] = b;
    }
    if (nnames) return 0;
    for (int k = 0; k < FC_NBACKENDS; k++) {
        const fc_backend *b = reg->backend[k];
        if (!b || !dev_on[fc_backend_device(k)]) continue;
        why[0] = 0;
        if (!b->available(why, sizeof why)) {
            notef(note, note_ctx, "%s is not usable here: %s", b->name, why);
            continue;
        }
        out[(*nout)++] = b;
    }
    if (!*nout) return fc_errf(e, "no usable backend on the selected devices");
    return 0;
}
