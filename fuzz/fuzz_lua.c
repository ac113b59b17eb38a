/*
** fuzz_lua.c -- the Lua front end through the script layer, interpreted.
** The first byte chooses how the rest is read: as a Lua script (mutated
** examples and specs from the corpus), or as choices in a grammar of mgpu
** calls (arrays, kernels with traced bodies, launches, host arrays,
** DLPack) whose every statement runs under pcall so that one error does
** not end the script.  A count hook raises an error once the script has
** run its share of instructions or time (and at every instruction after
** that, so no pcall loop outlives it); the interpreter's work limit bounds
** kernels.  Scripts may not leave the process: os.exit, files, processes,
** C modules and stdin are taken away first.  Every outcome must be OK or a
** Lua error with its message.  DLPack exports the script made and no import
** took are freed after it (mgpu.dlpack_free), as their owner would: what
** stays allocated past that is a leak.
*/
#include <stdio.h>
#include <time.h>

#include <lauxlib.h>

#include "fuzz.h"
#include "../src/interp/interp.h"
#include "lmgpu.h"

#define HOOK_EVERY 1000          /* instructions between hook calls */
#define HOOK_CALLS 20000         /* hook calls a script may take: 2e7 instructions */
#define TIME_LIMIT 2.0           /* seconds of CPU time */

static int hook_calls;
static clock_t hook_start;

static void hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  if (++hook_calls <= HOOK_CALLS && (double)(clock() - hook_start) < TIME_LIMIT * CLOCKS_PER_SEC) return;
  lua_sethook(L, hook, LUA_MASKCOUNT, 1);   /* from now on, every instruction fails */
  luaL_error(L, "fuzz: the script ran out of its instruction or time budget");
}

static const char sandbox[] =
  "do\n"   /* the exports no import took, freed by fuzz_free_exports() after the script */
  "  local mgpu, Array = require 'mgpu', require('mgpu.array').Array\n"
  "  local to, from, free, exported, taken = Array.to_dlpack, mgpu.from_dlpack, mgpu.dlpack_free, {}, {}\n"
  "  Array.to_dlpack = function(...) local t = to(...); exported[t], taken[t] = true, nil; return t end\n"
  "  mgpu.from_dlpack = function(t, ...) local a = from(t, ...); taken[t] = true; return a end\n"
  "  mgpu.dlpack_free = function(t, ...) free(t, ...); taken[t] = true end\n"
  "  local function free_exports() for t in pairs(exported) do if not taken[t] then free(t) end end end\n"
  "  package.loaded['fuzz.free_exports'] = free_exports\n"
  "end\n"
  "local function deny() error('not available to fuzzed scripts', 2) end\n"
  "os.exit, os.execute, os.remove, os.rename, os.tmpname = deny, deny, deny, deny, deny\n"
  "io.popen, io.read, io.lines, io.input, io.output, io.open = deny, deny, deny, deny, deny, deny\n"
  "io.write = function() end; io.stdin = nil\n"
  "dofile, loadfile, package.loadlib = deny, deny, deny\n"
  "package.path, package.cpath = '', ''\n"
  "debug = { getinfo = debug.getinfo, traceback = debug.traceback }\n"
  "package.loaded.debug = debug\n"
  "print = function() end\n";

/* -- The grammar ---------------------------------------------------------------------- */

static const char *const dtypes[] = { "f32", "f16", "bf16", "i32", "i8", "u8", "i16", "u32", "i64", "f64", "pred", "f8e4m3", "u64", "x" };
static const char *const sizes[] = { "1", "2", "7", "64", "128", "256", "1000", "4096", "0", "-1", "2.5", "1e9", "{64, 64}", "{2, 128}", "{3, 5, 7}", "{}" };
static const char *const numbers[] = { "0", "1", "-1", "0.5", "1e300", "0/0", "1/0", "-2^31", "2^63", "3", "nil", "'x'", "{}", "true" };
static const char *const unary[] = { "mgpu.exp", "mgpu.log", "mgpu.sqrt", "mgpu.abs", "mgpu.tanh", "mgpu.sin", "mgpu.floor", "mgpu.round",
  "mgpu.sign", "mgpu.clz", "mgpu.popcount", "mgpu.bitwise_not", "mgpu.logistic", "mgpu.erf", "mgpu.rsqrt", "mgpu.trunc", "-" };
static const char *const binary[] = { "+", "-", "*", "/", "%", "^" };
static const char *const binfn[] = { "mgpu.max", "mgpu.min", "mgpu.pow", "mgpu.rem", "mgpu.div", "mgpu.bitwise_and", "mgpu.bitwise_xor",
  "mgpu.shift_left", "mgpu.shift_right_logical" };
static const char *const cmps[] = { "mgpu.lt", "mgpu.le", "mgpu.eq", "mgpu.ne", "mgpu.gt", "mgpu.ge" };

typedef struct gen {
  fz_reader *r;
  char *s;
  size_t len, cap;
  int depth;
} gen;

static void put(gen *g, const char *text) {
  size_t n = strlen(text);
  if (g->len + n + 1 > g->cap) return;   /* a full script just stops growing */
  memcpy(g->s + g->len, text, n + 1);
  g->len += n;
}

#define PICK(g, t) FZ_PICK((g)->r, t)

/* A traced expression over the refs x (input) and o (output) of a body. */
static void expr(gen *g) {
  uint8_t b = fz_byte(g->r);
  if (g->depth > 6) b = 15;
  g->depth++;
  switch (b % 16) {   /* leaves half the time, so expressions stay small */
  case 1: put(g, PICK(g, unary)); put(g, "("); expr(g); put(g, ")"); break;
  case 2: put(g, "("); expr(g); put(g, PICK(g, binary)); expr(g); put(g, ")"); break;
  case 3: put(g, PICK(g, binfn)); put(g, "("); expr(g); put(g, ", "); expr(g); put(g, ")"); break;
  case 4: put(g, "mgpu.where("); put(g, PICK(g, cmps)); put(g, "("); expr(g); put(g, ", "); put(g, PICK(g, numbers));
          put(g, "), "); expr(g); put(g, ", "); expr(g); put(g, ")"); break;
  case 5: put(g, "("); expr(g); put(g, "):astype('"); put(g, PICK(g, dtypes)); put(g, "')"); break;
  case 6: put(g, "("); expr(g); put(g, " * "); put(g, PICK(g, numbers)); put(g, ")"); break;
  case 7: put(g, "x:at(mgpu.ds("); put(g, PICK(g, numbers)); put(g, ", "); put(g, PICK(g, sizes)); put(g, ")):load()"); break;
  case 8: put(g, "mgpu.broadcast("); put(g, PICK(g, numbers)); put(g, ", x.shape)"); break;
  case 9: put(g, "mgpu.sum("); expr(g); put(g, ", "); put(g, PICK(g, numbers)); put(g, ")"); break;
  case 10: put(g, "mgpu.program_id("); put(g, PICK(g, numbers)); put(g, ")"); break;
  case 11: put(g, "("); expr(g); put(g, "):reshape("); put(g, PICK(g, sizes)); put(g, ")"); break;
  default: put(g, "x:load()"); break;
  }
  g->depth--;
}

/* A kernel body statement. */
static void body_stmt(gen *g) {
  switch (fz_byte(g->r) % 8) {
  case 0: put(g, "o:store("); expr(g); put(g, ")\n"); break;
  case 1: put(g, "mgpu.fori(0, "); put(g, PICK(g, numbers)); put(g, ", function(i) o:store("); expr(g); put(g, ") end)\n"); break;
  case 2: put(g, "mgpu.when("); put(g, PICK(g, cmps)); put(g, "(mgpu.program_id(0), "); put(g, PICK(g, numbers));
          put(g, "), function() o:store("); expr(g); put(g, ") end)\n"); break;
  case 3: put(g, "mgpu.debug_print('v {}', mgpu.program_id(0))\n"); break;
  case 4: put(g, "mgpu.run_scoped({ s = mgpu.SMEM("); put(g, PICK(g, sizes)); put(g, ", '"); put(g, PICK(g, dtypes));
          put(g, "') }, function(s) s.s:store("); expr(g); put(g, ") ; o:store(s.s:load()) end)\n"); break;
  case 5: put(g, "o:at(mgpu.ds("); put(g, PICK(g, numbers)); put(g, ", "); put(g, PICK(g, sizes)); put(g, ")):store("); expr(g); put(g, ")\n"); break;
  case 6: put(g, "local v = "); expr(g); put(g, "; o:store(v)\n"); break;
  default: put(g, "mgpu.commit_smem()\n"); break;
  }
}

static void stmt(gen *g, int i) {
  char num[32];
  snprintf(num, sizeof num, "%d", i);
  put(g, "pcall(function()\n");
  switch (fz_byte(g->r) % 10) {
  case 0: case 1: case 2:
    put(g, "local x = mgpu."); put(g, fz_byte(g->r) & 1 ? "iota(" : "random.normal("); put(g, PICK(g, sizes)); put(g, ", '");
    put(g, PICK(g, dtypes)); put(g, "')\n");
    put(g, "local k = mgpu.kernel{ name = 'k"); put(g, num); put(g, "', grid = { "); put(g, PICK(g, sizes));
    put(g, " }, num_threads = "); put(g, PICK(g, numbers));
    put(g, ", out_shape = function(x) return mgpu.shape(x.shape, x.dtype) end, body = function(x, o)\n");
    for (int n = 1 + fz_byte(g->r) % 3; n > 0; n--) body_stmt(g);
    put(g, "end }\n");
    put(g, "A[#A + 1] = k(x)\n");
    break;
  case 3: put(g, "A[#A + 1] = mgpu.full("); put(g, PICK(g, sizes)); put(g, ", "); put(g, PICK(g, numbers)); put(g, ", '");
          put(g, PICK(g, dtypes)); put(g, "')\n"); break;
  case 4: put(g, "local a = A[#A]; A[#A + 1] = mgpu.from_dlpack(a:to_dlpack())\n"); break;
  case 5: put(g, "local a = A[#A]; local h = mgpu.host.from(a); A[#A + 1] = h + h\n"); break;
  case 6: put(g, "local a = A[#A]; a:get("); put(g, PICK(g, numbers)); put(g, "); a:tolist()\n"); break;
  case 7: put(g, "local a = A[#A]; A[#A + 1] = a:reshape("); put(g, PICK(g, sizes)); put(g, ")\n"); break;
  case 8: put(g, "mgpu.from_dlpack("); put(g, PICK(g, numbers)); put(g, ")\n"); break;
  default: put(g, "A[#A] = nil; collectgarbage()\n"); break;
  }
  put(g, "end)\n");
}

/* -- The target ----------------------------------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  setenv("MGPU_CACHE", "off", 1);
  unsetenv("MGPU_EMIT_PTX");
  unsetenv("MGPU_COMPILE_ONLY");
  interp_set_work_limit(FZ_WORK_LIMIT);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 64 * 1024) return 0;
  fz_reader r = { data, size };
  size_t live;
  mgpu_ctx *ctx = fz_ctx(&live);
  if (!ctx) abort();
  mgpu_script *s = NULL;
  mgpu_status st = mgpu_script_create(ctx, &s);
  fz_check_status(ctx, st);
  char *code = NULL;
  if (!st) {
    st = mgpu_script_run_string(s, sandbox, "=sandbox");
    if (st) abort();
    uint8_t mode = fz_byte(&r);
    size_t cap = 16384;
    code = malloc(cap);
    if (!code) abort();
    if (mode & 1) {   /* the rest is a script */
      memcpy(code, r.p, r.n < cap - 1 ? r.n : cap - 1);
      code[r.n < cap - 1 ? r.n : cap - 1] = 0;
    } else {
      gen g = { &r, code, 0, cap, 0 };
      code[0] = 0;
      put(&g, "local mgpu = require 'mgpu'\nA = {}\n");
      for (int i = 0; i < 12 && r.n; i++) stmt(&g, i);
      if (getenv("MGPU_FUZZ_VERBOSE")) fputs(code, stderr);
    }
    lua_State *L = lmgpu_script_lua(s);
    hook_calls = 0;
    hook_start = clock();
    lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_EVERY);
    st = mgpu_script_run_string(s, code, "=fuzz");
    fz_check_status(ctx, st);
    if (st && st != MGPU_ERR_SCRIPT && st != MGPU_ERR_NOMEM) abort();
    lua_sethook(L, NULL, 0, 0);
    st = mgpu_script_run_string(s, "package.loaded['fuzz.free_exports']()", "=cleanup");
    fz_check_status(ctx, st);
    if (st && st != MGPU_ERR_SCRIPT && st != MGPU_ERR_NOMEM) abort();
    mgpu_script_release(s);
  }
  free(code);
  mgpu_ctx_release(ctx);
  if (live) abort();
  return 0;
}
