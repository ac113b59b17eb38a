/*
** cli.h -- the mgpu command.
*/
#ifndef MGPU_CLI_H
#define MGPU_CLI_H

#include <lua.h>

/* report.c: print an error ("mgpu: file:line: message") and, when the
** message starts with a readable file's location, that source line. */
void cli_report(const char *msg);
/* report.c: run the function on the stack with `narg` arguments; on error
** report it and return non-zero. */
int cli_docall(lua_State *L, int narg, int nres);

/* repl.c: the interactive loop; returns when input ends. */
void cli_repl(lua_State *L);

#endif
