/* inputs.c — see inputs.h. */
#include "inputs.h"
#include "jsonfile.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static int load_one(fc_input *in, const char *path, fc_err *e)
{
    cJSON *root;
    const fc_kind *k;
    memset(in, 0, sizeof *in);
    in->path = path;
    fc_doc_init(&in->doc);
    if (fc_kind_read(path, &root, &k, e) != 0) return -1;
    const char *unknown = fc_kind_unknown_tag(root);
    if (!k && !unknown) {
        cJSON_Delete(root);
        return fc_errf(e, "%s: not a fusecal document (no \"schema\": \"fusecal-<kind>\" naming one of its kinds)",
                       path);
    }
    in->kind = k;
    fc_strlcpy(in->tag, k ? k->tag : unknown, sizeof in->tag);
    if (k && k->id == FC_KIND_calibration) return fc_doc_from_json(path, root, &in->doc, e); /* takes root */
    in->json = root;
    return 0;
}

int fc_inputs_load(fc_inputs *s, const char *const *paths, int n, fc_err *e)
{
    memset(s, 0, sizeof *s);
    s->in = fc_xcalloc((size_t)(n > 0 ? n : 1), sizeof *s->in);
    for (int i = 0; i < n; i++) {
        if (load_one(&s->in[i], paths[i], e) != 0) {
            s->n = i + 1; /* the failed one holds nothing to free but an empty document */
            fc_inputs_free(s);
            return -1;
        }
        s->n = i + 1;
        s->ncal += s->in[i].kind && s->in[i].kind->id == FC_KIND_calibration;
    }
    return 0;
}

void fc_inputs_free(fc_inputs *s)
{
    for (int i = 0; i < s->n; i++) {
        fc_doc_free(&s->in[i].doc);
        cJSON_Delete(s->in[i].json);
    }
    free(s->in);
    memset(s, 0, sizeof *s);
}

fc_input *fc_inputs_calibration(fc_inputs *s, int i)
{
    for (int k = 0; k < s->n; k++)
        if (s->in[k].kind && s->in[k].kind->id == FC_KIND_calibration && i-- == 0) return &s->in[k];
    return NULL;
}

void fc_input_describe(const fc_input *in, char *buf, size_t n)
{
    if (!in->kind) {
        snprintf(buf, n, "a '%s' document, a kind this fusecal does not read", in->tag);
        return;
    }
    const char *w = in->kind->what;
    bool vowel = strchr("aeiou", w[0]) != NULL;
    snprintf(buf, n, "a%s %s", vowel ? "n" : "", w);
}
