/*
** diag.c -- error reporting: formatted messages with the Lua source
** location, status codes, and the bail-out used by deep compiler code.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef struct errdef { mgpu_status status; const char *fmt; } errdef;
#define ERRDEF(name, st, f) { st, f },
static const errdef err_table[ERR__COUNT] = {
#include "errmsg.h"
};
#undef ERRDEF

void diag_clear(diag *d) { d->status = MGPU_OK; d->msg[0] = 0; }

mgpu_status diag_vset(diag *d, err_id id, const char *loc, va_list ap) {
  size_t n = 0;
  if (loc && *loc) n = (size_t)snprintf(d->msg, sizeof d->msg, "%s: ", loc);
  if (n >= sizeof d->msg) n = sizeof d->msg - 1;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  vsnprintf(d->msg + n, sizeof d->msg - n, err_table[id].fmt, ap);
#pragma GCC diagnostic pop
  d->id = id;
  d->status = err_table[id].status;
  return d->status;
}

mgpu_status diag_set(diag *d, err_id id, const char *loc, ...) {
  va_list ap;
  va_start(ap, loc);
  mgpu_status s = diag_vset(d, id, loc, ap);
  va_end(ap);
  return s;
}

void diag_throw(diag *d, err_id id, const char *loc, ...) {
  va_list ap;
  va_start(ap, loc);
  diag_vset(d, id, loc, ap);
  va_end(ap);
  mgpu_assert(d->jmp != NULL);
  longjmp(*d->jmp, 1);
}

void diag_note(diag *d, const char *fmt, ...) {
  size_t n = strlen(d->msg);
  if (n + 4 >= sizeof d->msg) return;
  d->msg[n++] = '\n';
  d->msg[n++] = ' ';
  d->msg[n++] = ' ';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg + n, sizeof d->msg - n, fmt, ap);
  va_end(ap);
}

void mgpu_panic(const char *file, int line, const char *msg) {
  fprintf(stderr, "mgpu: internal error at %s:%d: %s\n", file, line, msg);
  abort();
}
