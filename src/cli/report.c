/*
** report.c -- error messages that point at the script line, and protected
** calls.  Set MGPU_TRACEBACK=1 for a Lua traceback as well.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "../lua/lmgpu.h"
#include "cli.h"

/* The source line `line` of `path`, or 0. */
static int source_line(const char *path, long line, char *out, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  long cur = 1;
  int ok = 0;
  while (fgets(out, (int)n, f)) {
    size_t len = strlen(out);
    if (cur == line) { ok = 1; break; }
    if (len && out[len - 1] == '\n') cur++;
  }
  fclose(f);
  if (ok) out[strcspn(out, "\r\n")] = 0;
  return ok;
}

static _Thread_local const char *report_prefix = "";
static _Thread_local const char *report_script;

void cli_report_prefix(const char *prefix) { report_prefix = prefix ? prefix : ""; }
void cli_report_script(const char *path) { report_script = path; }

/* The file a location names: Lua keeps the tail of a long chunk name
** ("...tail.lua"), which is the running script's when its path ends so. */
static const char *source_path(const char *loc) {
  if (strncmp(loc, "...", 3) || !report_script) return loc;
  size_t n = strlen(report_script), m = strlen(loc + 3);
  return n >= m && !strcmp(report_script + n - m, loc + 3) ? report_script : loc;
}

/* The message's first line, the source line it starts with ("path:line:
** ..."), then the message's other lines. */
void cli_report(const char *msg) {
  const char *nl = strchr(msg, '\n');
  int first = nl ? (int)(nl - msg) : (int)strlen(msg);
  fprintf(stderr, "mgpu: %s%.*s\n", report_prefix, first, msg);
  const char *c = memchr(msg, ':', (size_t)first);
  while (c) {
    char *end;
    long line = strtol(c + 1, &end, 10);
    if (end != c + 1 && *end == ':' && line > 0) {
      char path[1024], text[512];
      size_t len = (size_t)(c - msg);
      if (len < sizeof path) {
        memcpy(path, msg, len);
        path[len] = 0;
        const char *p = strrchr(path, ' ');
        if (source_line(source_path(p ? p + 1 : path), line, text, sizeof text)) {
          const char *t = text;
          while (*t == ' ' || *t == '\t') t++;
          fprintf(stderr, "%6ld | %s\n", line, t);
        }
      }
      break;
    }
    c = memchr(c + 1, ':', (size_t)(msg + first - (c + 1)));
  }
  if (nl) fprintf(stderr, "%s\n", nl + 1);
  fflush(stderr);
}

int cli_docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, lmgpu_msghandler);
  lua_insert(L, base);
  int status = lua_pcall(L, narg, nres, base);
  lua_remove(L, base);
  if (status != LUA_OK) {
    cli_report(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return status;
}
