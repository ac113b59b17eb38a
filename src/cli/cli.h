/*
** cli.h -- the mgpu command.
*/
#ifndef MGPU_CLI_H
#define MGPU_CLI_H

#include <setjmp.h>

#include <lua.h>

/* report.c: print an error ("mgpu: file:line: message") and, when the
** message starts with a readable file's location, that source line. */
void cli_report(const char *msg);
/* report.c: run the function on the stack with `narg` arguments; on error
** report it and return non-zero. */
int cli_docall(lua_State *L, int narg, int nres);

/* interrupt.c: SIGINT raises "interrupted" in the running Lua code and stops
** an interpreted launch; with repl set every Ctrl-C does so, otherwise a
** second one ends the process. */
void cli_sigint_install(lua_State *L, int repl);
/* interrupt.c: whether a SIGINT arrived since the last call (and forget it). */
int cli_sigint_take(void);
/* interrupt.c: drop a pending interrupt (hook, engine request, flag). */
void cli_sigint_clear(lua_State *L);
/* interrupt.c: while on, SIGINT jumps to *jb (around readline) instead. */
void cli_sigint_readline(sigjmp_buf *jb, int on);

/* repl.c: the interactive loop; returns when input ends. */
void cli_repl(lua_State *L);

#endif
