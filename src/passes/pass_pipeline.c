/*
** pass_pipeline.c -- the passes, in order, in one place.
*/
#include <string.h>

#include "pass.h"

mgpu_status pass_run(const ir_kernel *k, kinfo *ki, int64_t smem_limit, diag *d) {
  memset(ki, 0, sizeof *ki);
  if (!ir_verify(k, d)) return d->status;
  ki->lay = mem_calloc(k->alloc, sizeof(lay_layout) * k->vals.n);
  ki->div = mem_calloc(k->alloc, sizeof(int64_t) * k->vals.n);
  ki->smem_off = mem_calloc(k->alloc, sizeof(int64_t) * k->vals.n);
  ki->tmem_off = mem_calloc(k->alloc, sizeof(int64_t) * k->vals.n);
  if (!ki->lay || !ki->div || !ki->smem_off || !ki->tmem_off) { pass_free(k, ki); return diag_set(d, ERR_NOMEM, ""); }
  pass_divisibility(k, ki);
  mgpu_status s = pass_layout(k, ki, d);
  if (!s) s = pass_tmem(k, ki, d);
  if (!s) s = pass_smem(k, ki, smem_limit, d);
  if (s) pass_free(k, ki);
  return s;
}

void pass_free(const ir_kernel *k, kinfo *ki) {
  mem_free(k->alloc, ki->lay, sizeof(lay_layout) * k->vals.n);
  mem_free(k->alloc, ki->div, sizeof(int64_t) * k->vals.n);
  mem_free(k->alloc, ki->smem_off, sizeof(int64_t) * k->vals.n);
  mem_free(k->alloc, ki->tmem_off, sizeof(int64_t) * k->vals.n);
  memset(ki, 0, sizeof *ki);
}
