/*
** cli.h -- the mgpu command.
*/
#ifndef MGPU_CLI_H
#define MGPU_CLI_H

#include <setjmp.h>
#include <stddef.h>

#include <lua.h>

typedef struct cli_opts {
  const char *mode;       /* NULL, "interpret" or "compile" */
  const char *emit_dir;
  const char *target;     /* --target NAME, or NULL */
  int interactive;
  int script;             /* argv index of the script, or 0 */
  int info;
  int devices;            /* -n N, or 0 */
} cli_opts;

/* main.c: a Lua state with mgpu installed, `arg` set and the options'
** configuration applied (NULL after reporting why not). */
lua_State *cli_newstate(int argc, char **argv, const cli_opts *o);
/* main.c: run argv[script] with its arguments; non-zero after reporting an error. */
int cli_run_script(lua_State *L, int argc, char **argv, int script);

/* devices.c: mgpu -n N: the script on N devices (simulated or NVSHMEM
** processes); returns the exit status. */
int cli_run_devices(int argc, char **argv, const cli_opts *o);
/* devices.c: under a launcher (torchrun, srun, mpirun: mgpu.launcher), make
** L its device of the launcher's job and prefix reports with "device R: ";
** nothing without one; *joined says whether it did.  Non-zero after
** reporting an error. */
int cli_join_launcher(lua_State *L, int *joined);
/* simio.c: a simulated device's stdout text, kept until a line is complete. */
typedef struct cli_lines { char *p; size_t n, cap; } cli_lines;
/* simio.c: in L, the state of simulated device `rank`: print, io.write and
** io.stdout:write go out through *lines in whole lines; os.exit(code) ends
** the device's script (not the process) with an error no pcall keeps, and
** sets *exit_code (-1 until then). */
void cli_sim_install(lua_State *L, int rank, cli_lines *lines, int *exit_code);
/* simio.c: write what is left in *lines (a last line without its newline) and free it. */
void cli_lines_close(cli_lines *lines);

/* report.c: this thread's reports start with prefix (e.g. "device 1: "). */
void cli_report_prefix(const char *prefix);
/* report.c: the script this thread runs (or NULL), so that a report whose
** location Lua shortened ("...tail.lua:7:") can still show the source line. */
void cli_report_script(const char *path);

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
