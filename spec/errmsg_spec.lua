-- mgpu.errmsg: the one table of the Lua library's error messages.  Every code in it is raised
-- somewhere and every code raised is in it; the important messages keep their exact text; and
-- errors raised through the public API come from it, at the caller's line.
local mgpu = require "mgpu"
local errmsg = require "mgpu.errmsg"
local compat = require "mgpu.compat"
local util = dofile("spec/support/util.lua")

-- The quoted codes the library's sources raise: fail("CODE", ...), fail_at(where, "CODE", ...)
-- and message("CODE", ...).
local function used_codes()
  local used = {}
  local p = io.popen("ls lua/mgpu/*.lua")
  for path in p:lines() do
    if not path:match("errmsg%.lua$") then
      local f = assert(io.open(path))
      local src = f:read("*a")
      f:close()
      for code in src:gmatch('fail%(%s*"([A-Z][A-Z0-9_]*)"') do used[code] = path end
      for code in src:gmatch('fail_at%([^,()]*,%s*"([A-Z][A-Z0-9_]*)"') do used[code] = path end
      for code in src:gmatch('message%(%s*"([A-Z][A-Z0-9_]*)"') do used[code] = path end
    end
  end
  p:close()
  return used
end

describe("mgpu.errmsg", function()
  it("holds upper-case codes and string formats", function()
    local n = 0
    for code, fmt in pairs(errmsg) do
      n = n + 1
      assert.is_truthy(code:match("^[A-Z][A-Z0-9_]*$"), code)
      assert.are.equal("string", type(fmt), code)
    end
    assert.is_true(n > 300)
  end)

  it("has no code that nothing raises, and every code raised is in it", function()
    local used = used_codes()
    for code in pairs(errmsg) do assert.is_truthy(used[code], code .. " is in mgpu.errmsg but nothing raises it") end
    for code, path in pairs(used) do assert.is_truthy(errmsg[code], path .. " raises " .. code .. ", which mgpu.errmsg lacks") end
  end)

  it("keeps the text of the important messages", function()
    local locked = {
      { "UNKNOWN_OPTION", { "copy_gmem_to_smem", "colour" }, "copy_gmem_to_smem: unknown option 'colour'" },
      { "OPTIONS_TABLE", { "emit_pipeline" }, "emit_pipeline: options must be a table" },
      { "BODY_FUNCTION", { "nd_loop" }, "nd_loop: the body must be a function" },
      { "KERNEL_MGPU_KERNEL_BODY_FUNCTION", {}, "mgpu.kernel: body must be a function" },
      { "PIPELINE_DELAY_RELEASE_LESS_MAX", { "emit_pipeline_warp_specialized", 2, 2 },
        "emit_pipeline_warp_specialized: delay_release = 2 must be less than max_concurrent_steps = 2" },
      { "BLOCKSPEC_INDEX_MAP_TAKES_ARGUMENT", { "emit_pipeline input 1", 1, "", 2 },
        "emit_pipeline input 1: index_map takes 1 argument but the grid has 2 axes" },
      { "BLOCKSPEC_INDEX_MAP_FUNCTION", {}, "BlockSpec: index_map must be a function" },
      { "TRACE_SHAPES_DO_BROADCAST", { "f32[2]", "f32[3]" }, "shapes f32[2] and f32[3] do not broadcast" },
      { "TRACE_INDEX_OUT_RANGE_DIMENSION", { 9, 0, 4 }, "at: index 9 is out of range for dimension 0 of size 4" },
      { "COPY_BARRIER_REQUIRED_COPY_ARRIVES", { "copy_gmem_to_smem" },
        "copy_gmem_to_smem: a barrier is required (the copy arrives on it)" },
      { "BARRIER_NUM_BARRIERS_BETWEEN", { "Barrier", 40 }, "Barrier: num_barriers must be between 1 and 32, got 40" },
      { "CONTEXT_MGPU_CONFIGURE_UNKNOWN_OPTION", { "colour" }, "mgpu.configure: unknown option 'colour'" },
      { "RAISED", { "anything" }, "anything" },
    }
    for _, l in ipairs(locked) do
      assert.are.equal(l[3], compat.message(l[1], (table.unpack or unpack)(l[2])), l[1])
    end
  end)

  it("says a code it lacks is an internal error", function()
    local ok, err = pcall(compat.message, "NO_SUCH_CODE")
    assert.is_false(ok)
    assert.matches("internal error: no message has the code NO_SUCH_CODE", err, 1, true)
  end)

  it("is where errors raised through the API come from, at the caller's line", function()
    local function line() return debug.getinfo(2, "l").currentline end
    local l = line(); local err = util.err_of(mgpu.kernel, { body = 1 })
    assert.are.equal("errmsg_spec.lua:" .. (l) .. ": " .. errmsg.KERNEL_MGPU_KERNEL_BODY_FUNCTION, err:match("[^/]*$"))
    l = line(); err = util.err_of(mgpu.Barrier, { num_barriers = 40 })
    assert.are.equal("errmsg_spec.lua:" .. l .. ": " .. compat.message("BARRIER_NUM_BARRIERS_BETWEEN", "Barrier", 40),
                     err:match("[^/]*$"))
    l = line(); err = util.err_of(mgpu.configure, { colour = 1 })
    assert.are.equal("errmsg_spec.lua:" .. l .. ": mgpu.configure: unknown option 'colour'", err:match("[^/]*$"))
  end)
end)
