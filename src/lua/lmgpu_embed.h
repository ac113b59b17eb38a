/*
** lmgpu_embed.h -- the Lua front end compiled into the mgpu executable, so
** the binary runs anywhere without lua/ beside it, and text modules (the
** API reference for mgpu.help): require returns their text.
*/
#ifndef LMGPU_EMBED_H
#define LMGPU_EMBED_H

#include <stddef.h>

typedef struct lmgpu_module {
  const char *name;       /* "mgpu", "mgpu.kernel", ... */
  const char *chunkname;  /* "=[mgpu]/mgpu/kernel.lua"; NULL for a text module */
  const char *source;
  size_t len;
} lmgpu_module;

extern const lmgpu_module lmgpu_modules[];   /* ends with a NULL name */

#endif
