/*
** strbuf.c -- growing strings for printers, emitters and messages.
*/
#include <stdio.h>
#include <string.h>

#include "core.h"

void sb_init(strbuf *sb, const mem_alloc *a) {
  sb->alloc = a; sb->s = NULL; sb->len = sb->cap = 0; sb->oom = false;
}

void sb_free(strbuf *sb) {
  mem_free(sb->alloc, sb->s, sb->cap);
  sb->s = NULL; sb->len = sb->cap = 0;
}

static bool sb_room(strbuf *sb, size_t extra) {
  if (sb->oom) return false;
  if (sb->len + extra + 1 <= sb->cap) return true;
  size_t ncap = sb->cap ? sb->cap : 256;
  while (ncap < sb->len + extra + 1) ncap *= 2;
  char *p = mem_realloc(sb->alloc, sb->s, sb->cap, ncap);
  if (!p) { sb->oom = true; return false; }
  sb->s = p; sb->cap = ncap;
  return true;
}

void sb_putn(strbuf *sb, const char *s, size_t n) {
  if (!sb_room(sb, n)) return;
  memcpy(sb->s + sb->len, s, n);
  sb->len += n;
  sb->s[sb->len] = 0;
}

void sb_putc(strbuf *sb, char c) { sb_putn(sb, &c, 1); }
void sb_puts(strbuf *sb, const char *s) { sb_putn(sb, s, strlen(s)); }

void sb_vprintf(strbuf *sb, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  if (n < 0) { va_end(ap2); return; }
  if ((size_t)n < sizeof tmp) {
    sb_putn(sb, tmp, (size_t)n);
  } else if (sb_room(sb, (size_t)n)) {
    vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap2);
    sb->len += (size_t)n;
  }
  va_end(ap2);
}

void sb_printf(strbuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(sb, fmt, ap);
  va_end(ap);
}

const char *sb_str(const strbuf *sb) { return sb->s ? sb->s : ""; }

char *sb_take(strbuf *sb, size_t *len) {
  if (!sb_room(sb, 0)) return NULL;
  char *s = sb->s;
  if (len) *len = sb->len;
  /* shrink to exact size so the caller can free with len + 1 */
  char *p = mem_realloc(sb->alloc, s, sb->cap, sb->len + 1);
  if (p) s = p; else { sb->oom = true; return NULL; }
  sb->s = NULL; sb->len = sb->cap = 0;
  return s;
}
