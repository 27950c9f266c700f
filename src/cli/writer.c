/* writer.c — see writer.h. */
#include "writer.h"
#include "format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* After a failed save: the document where a file can still be written, named in
 * w->err. */
static void rescue(fc_writer *w, fc_doc *d)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/fusecal-rescue-%ld.json", dir && *dir ? dir : "/tmp", (long)getpid());
    char *text = fc_format_doc(d, FC_FMT_JSON);
    fc_err re;
    bool ok = fc_write_file_atomic(path, text, strlen(text), &re) == 0;
    const int err = errno;
    free(text);
    size_t l = strlen(w->err.msg);
    if (ok)
        snprintf(w->err.msg + l, sizeof w->err.msg - l, "; the document, %d record%s, is saved in '%s'", d->n,
                 d->n == 1 ? "" : "s", path);
    else
        snprintf(w->err.msg + l, sizeof w->err.msg - l, "; saving it in '%s' failed too (%s)", path, strerror(err));
}

int fc_writer_save(fc_writer *w, fc_doc *d)
{
    if (!w->path) return 0;
    d->elapsed_s = w->base + (fc_now() - w->t0);
    char *text = fc_format_doc(d, w->fmt);
    int rc = fc_write_file_atomic(w->path, text, strlen(text), &w->err);
    free(text);
    if (rc == 0) w->saved = true;
    else if (w->saved)
        rescue(w, d);
    return rc;
}

void fc_writer_calibrate_failed(fc_writer *w, fc_doc *d, const fc_err *e)
{
    bool said = w->reported;
    int rc = fc_writer_save(w, d);
    if (said) return; /* and the records closed since went where that line said, or into the file */
    fc_progress_end(w->pg);
    if (rc != 0) fprintf(stderr, "fusecal: error: %s; %s\n", e->msg, w->err.msg);
    else
        fprintf(stderr, "fusecal: error: %s\n", e->msg);
}

static void on_start(void *ctx, int i, int n, int pass, int npass, const fc_job *job)
{
    fc_writer *w = ctx;
    if (w->show.start) w->show.start(w->show.ctx, i, n, pass, npass, job);
}

static int on_record(void *ctx, int i, int n, const fc_doc *d, const fc_record *r)
{
    fc_writer *w = ctx;
    if (fc_writer_save(w, (fc_doc *)d) != 0) {
        fc_progress_end(w->pg);
        fprintf(stderr, "fusecal: error: %s\n", w->err.msg);
        w->reported = true;
        return -1;
    }
    return w->show.record ? w->show.record(w->show.ctx, i, n, d, r) : 0;
}

fc_observer fc_writer_observer(fc_writer *w) { return (fc_observer){on_start, on_record, w}; }

cJSON *fc_command_line_json(int argc, char **argv)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateString("fusecal"));
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(a, cJSON_CreateString(argv[i]));
    return a;
}
