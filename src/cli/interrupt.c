/*
** interrupt.c -- Ctrl-C for the mgpu command.  SIGINT while Lua code runs
** raises "interrupted" at the next Lua instruction (a count hook, as lua.c
** does) and asks the interpreter to stop the kernel it is running, so a long
** interpreted launch ends cleanly with its state freed.  While the REPL
** waits in libedit's readline, SIGINT abandons the line instead.
*/
#include <signal.h>
#include <string.h>

#include <lauxlib.h>
#include <mgpu.h>

#include "cli.h"

static lua_State *sig_L;
static volatile sig_atomic_t seen;        /* a SIGINT arrived since cli_sigint_take */
static volatile sig_atomic_t in_readline; /* read_jmp is live */
static int keep_handler;                  /* REPL: every Ctrl-C interrupts; scripts: a second one kills */
static sigjmp_buf *read_jmp;

/* Raise "interrupted" at the script line running now ("file:line:
** interrupted"): the innermost Lua frame outside the embedded library. */
static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  lua_Debug d;
  for (int level = 0; lua_getstack(L, level, &d); level++) {
    if (!lua_getinfo(L, "Sl", &d) || d.currentline <= 0 || strncmp(d.short_src, "[mgpu]", 6) == 0) continue;
    lua_pushfstring(L, "%s:%d: interrupted", d.short_src, d.currentline);
    lua_error(L);
  }
  lua_pushliteral(L, "interrupted");
  lua_error(L);
}

static void on_sigint(int sig) {
  seen = 1;
  if (in_readline) {
    in_readline = 0;
    siglongjmp(*read_jmp, 1);
  }
  mgpu_interrupt(1);
  if (sig_L) lua_sethook(sig_L, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  if (!keep_handler) signal(sig, SIG_DFL);
}

void cli_sigint_install(lua_State *L, int repl) {
  sig_L = L;
  keep_handler = repl;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;   /* no SA_RESTART: a plain read at the prompt returns EINTR */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
}

int cli_sigint_take(void) {
  int s = seen;
  seen = 0;
  return s;
}

void cli_sigint_clear(lua_State *L) {
  lua_sethook(L, NULL, 0, 0);
  mgpu_interrupt(0);
  seen = 0;
}

void cli_sigint_readline(sigjmp_buf *jb, int on) {
  read_jmp = jb;
  in_readline = on;
}
