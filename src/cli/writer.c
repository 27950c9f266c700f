/* writer.c — see writer.h. */
#include "writer.h"
#include "format.h"

#include <stdlib.h>
#include <string.h>

int fc_writer_save(fc_writer *w, fc_doc *d)
{
    if (!w->path) return 0;
    d->elapsed_s = w->base + (fc_now() - w->t0);
    char *text = fc_format_doc(d, w->fmt);
    int rc = fc_write_file_atomic(w->path, text, strlen(text), &w->err);
    free(text);
    return rc;
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
