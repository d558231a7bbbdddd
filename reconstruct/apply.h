/*
 * apply.h - the record being applied, shared by the files of the model
 * (model.c, park.c): not an interface of the library.
 */
#ifndef RC_APPLY_H
#define RC_APPLY_H

#include "rc.h"

struct rc_model;

/* One record being applied. */
struct ap {
	struct rc_ctx    *c;
	struct rc_model  *m;
	struct rc_run *s;
	struct rc_thr    *th;
	struct rc_image  *im;
	const struct bt_event *ev;
	int64_t t;
	int64_t rt;              /* the record's own time (fd table) */
	int merged;              /* a READY that continues the fragment */
};

#endif /* RC_APPLY_H */
