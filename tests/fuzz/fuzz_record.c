/* libFuzzer harness: the calibration-record reader used by validate, check,
 * compare, report, --resume and --append. A document it accepts must survive a
 * write and a second read, and its host block the typed summary and the
 * comparison of two hosts that check and compare make. */
#include "match.h"
#include "record.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = 0;
    fc_doc d;
    fc_err e;
    if (strlen(s) == size && fc_doc_parse("fuzz.json", s, &d, &e) == 0) {
        char *text = fc_doc_to_json(&d);
        fc_doc again;
        if (fc_doc_parse("again.json", text, &again, &e) != 0) abort();
        if (again.n != d.n) abort();
        char notes[FC_MAX_NOTES][320];
        if (fc_doc_differences(&d, &again, "a", "b", notes, FC_MAX_NOTES) < 0) abort();
        fc_doc_free(&again);
        free(text);
        fc_doc_free(&d);
    }
    free(s);
    return 0;
}
