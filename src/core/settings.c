/* settings.c — see settings.h. */
#include "settings.h"

#include <limits.h>

#define FC_SETTING_ROW(id, key, in_stop, integer, min, min_excluded, max, ask_min, ask_max, def) \
    [FC_SET_##id] = {key, in_stop, integer, min, min_excluded, max, ask_min, ask_max, def},

const fc_setting fc_settings_table[FC_NSETTINGS] = {FC_SETTING_LIST(FC_SETTING_ROW)};

double fc_setting_default(fc_setting_id id) { return fc_settings_table[id].def; }

bool fc_setting_in_range(fc_setting_id id, double v)
{
    const fc_setting *s = &fc_settings_table[id];
    if (isnan(v) || v > s->max) return false;
    return s->min_excluded ? v > s->min : v >= s->min;
}

int fc_setting_read_int(const cJSON *obj, fc_setting_id id, int def)
{
    const fc_setting *s = &fc_settings_table[id];
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, s->key);
    if (!cJSON_IsNumber(item) || isnan(item->valuedouble)) return def;
    double v = item->valuedouble;
    if (v < s->min) v = s->min;
    if (v > s->max) v = s->max;
    return v >= (double)INT_MAX ? INT_MAX : v <= (double)INT_MIN ? INT_MIN : (int)v;
}
